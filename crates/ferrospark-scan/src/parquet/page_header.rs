//! The number of values in a column chunk's dictionary page, read from the page's Thrift
//! header without decompressing the page.
//!
//! The parquet crate decompresses a page before it tells its header, and its Thrift decoder is
//! private. A dictionary too large to be worth testing (TPC-H's `l_partkey`: 100,000 values,
//! 800 KB a row group) was therefore decompressed only to be dropped. This reads the few
//! header bytes itself (Thrift's compact protocol, only the fields a page header starts with)
//! and gives up, leaving the decision to the full read, on anything it does not expect.

use parquet::file::metadata::ColumnChunkMetaData;
use parquet::file::reader::ChunkReader;

/// Bytes read for a header: a dictionary page header takes about 15.
const HEADER_BYTES: u64 = 64;

/// Thrift compact types used by a page header's leading fields.
const I32: u8 = 5;
const STRUCT: u8 = 12;

/// `PageHeader.dictionary_page_header` and `DictionaryPageHeader.num_values`.
const DICTIONARY_HEADER_FIELD: i16 = 7;
const NUM_VALUES_FIELD: i16 = 1;

/// The values in the dictionary page of `col`, or `None` when the chunk has no dictionary page
/// or its header is not what is expected.
pub(crate) fn dictionary_values<R: ChunkReader>(
    reader: &R,
    col: &ColumnChunkMetaData,
) -> Option<usize> {
    let start = u64::try_from(col.dictionary_page_offset()?).ok()?;
    let (chunk_start, chunk_len) = col.byte_range();
    let chunk_end = chunk_start.checked_add(chunk_len)?;
    let len = HEADER_BYTES.min(chunk_end.checked_sub(start)?);
    let bytes = reader.get_bytes(start, len as usize).ok()?;
    parse_dictionary_values(&bytes)
}

/// `num_values` of a dictionary page header in Thrift's compact protocol.
fn parse_dictionary_values(bytes: &[u8]) -> Option<usize> {
    let mut r = Compact { bytes, at: 0 };
    let mut field = 0i16;
    loop {
        let (id, ty) = r.field_header(&mut field)?;
        match (id, ty) {
            // type, uncompressed_page_size, compressed_page_size, crc
            (1..=4, I32) => {
                r.varint()?;
            }
            (DICTIONARY_HEADER_FIELD, STRUCT) => {
                let mut inner = 0i16;
                let (id, ty) = r.field_header(&mut inner)?;
                if (id, ty) != (NUM_VALUES_FIELD, I32) {
                    return None;
                }
                let n = zigzag(r.varint()?);
                return usize::try_from(n).ok();
            }
            // A data page's header (5, 8) or anything unexpected.
            _ => return None,
        }
    }
}

/// A cursor over compact-protocol bytes.
struct Compact<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl Compact<'_> {
    fn byte(&mut self) -> Option<u8> {
        let b = *self.bytes.get(self.at)?;
        self.at += 1;
        Some(b)
    }

    fn varint(&mut self) -> Option<u64> {
        let mut v = 0u64;
        for shift in (0..64).step_by(7) {
            let b = self.byte()?;
            v |= u64::from(b & 0x7f) << shift;
            if b & 0x80 == 0 {
                return Some(v);
            }
        }
        None
    }

    /// The next field's id and type; `None` at the struct's end or on a malformed header.
    fn field_header(&mut self, last: &mut i16) -> Option<(i16, u8)> {
        let b = self.byte()?;
        if b == 0 {
            return None;
        }
        let delta = i16::from(b >> 4);
        let id = if delta == 0 {
            i16::try_from(zigzag(self.varint()?)).ok()?
        } else {
            last.checked_add(delta)?
        };
        *last = id;
        Some((id, b & 0x0f))
    }
}

fn zigzag(v: u64) -> i64 {
    ((v >> 1) as i64) ^ -((v & 1) as i64)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn varint(mut v: u64, out: &mut Vec<u8>) {
        loop {
            let b = (v & 0x7f) as u8;
            v >>= 7;
            if v == 0 {
                out.push(b);
                return;
            }
            out.push(b | 0x80);
        }
    }

    fn i32_field(delta: u8, v: i64, out: &mut Vec<u8>) {
        out.push(delta << 4 | I32);
        varint(((v << 1) ^ (v >> 63)) as u64, out);
    }

    #[test]
    fn reads_num_values_of_a_dictionary_page_header() {
        let mut h = Vec::new();
        i32_field(1, 2, &mut h); // DICTIONARY_PAGE
        i32_field(1, 800_000, &mut h);
        i32_field(1, 392_000, &mut h);
        h.push(4 << 4 | STRUCT); // field 7
        i32_field(1, 100_000, &mut h);
        i32_field(1, 0, &mut h); // encoding PLAIN
        h.extend([0, 0]);
        assert_eq!(parse_dictionary_values(&h), Some(100_000));
        // With a crc (field 4) before the dictionary header.
        let mut c = Vec::new();
        i32_field(1, 2, &mut c);
        i32_field(1, 8, &mut c);
        i32_field(1, 8, &mut c);
        i32_field(1, -5, &mut c);
        c.push(3 << 4 | STRUCT);
        i32_field(1, 3, &mut c);
        assert_eq!(parse_dictionary_values(&c), Some(3));
    }

    #[test]
    fn agrees_with_the_pages_of_written_files() {
        use std::sync::Arc;

        use arrow_array::{ArrayRef, Int64Array, RecordBatch, StringArray};
        use parquet::arrow::ArrowWriter;
        use parquet::basic::Compression;
        use parquet::file::properties::WriterProperties;
        use parquet::file::reader::{FileReader, SerializedFileReader};

        let ints: ArrayRef = Arc::new(Int64Array::from_iter_values((0..5000).map(|i| i % 777)));
        let strs: ArrayRef = Arc::new(StringArray::from_iter_values(
            (0..5000).map(|i| format!("v{}", i % 31)),
        ));
        let batch = RecordBatch::try_from_iter([("i", ints), ("s", strs)]).expect("batch");
        for codec in [Compression::UNCOMPRESSED, Compression::SNAPPY] {
            let mut out = Vec::new();
            let props = WriterProperties::builder().set_compression(codec).build();
            let mut w = ArrowWriter::try_new(&mut out, batch.schema(), Some(props)).expect("w");
            w.write(&batch).expect("write");
            w.close().expect("close");
            let bytes = bytes::Bytes::from(out);
            let reader = SerializedFileReader::new(bytes.clone()).expect("reads");
            let rg = reader.metadata().row_group(0);
            assert_eq!(dictionary_values(&bytes, rg.column(0)), Some(777));
            assert_eq!(dictionary_values(&bytes, rg.column(1)), Some(31));
        }
    }

    #[test]
    fn anything_else_is_no_answer() {
        let mut d = Vec::new();
        i32_field(1, 0, &mut d); // DATA_PAGE
        i32_field(1, 10, &mut d);
        i32_field(1, 10, &mut d);
        d.push(2 << 4 | STRUCT); // field 5: a data page header
        i32_field(1, 3, &mut d);
        assert_eq!(parse_dictionary_values(&d), None);
        assert_eq!(parse_dictionary_values(&[]), None);
        assert_eq!(parse_dictionary_values(&[0x15]), None);
        assert_eq!(parse_dictionary_values(&[0x15, 0xff, 0xff, 0xff]), None);
        assert_eq!(parse_dictionary_values(&[0x00]), None);
    }
}
