//! A filter column decided on its dictionary codes: when every data page of the column chunk
//! is dictionary-encoded, the predicate runs once per distinct value and each row's verdict is
//! looked up by its code, without materialising the column (as DuckDB and Velox do).
//!
//! ```text
//!  dictionary page ──decode──▶ values ──predicate──▶ verdict per code (+ one for NULL)
//!  data pages ──def levels + RLE/bit-packed codes──▶ verdict per row ──▶ RowSelection
//! ```
//!
//! Anything unexpected (another encoding, repeated columns, a page that does not add up)
//! returns `None` and the ordinary row filter decides, so this path can only be faster, never
//! different.

use std::sync::Arc;

use arrow_array::{Array, ArrayRef, BooleanArray, RecordBatch};
use arrow_buffer::BooleanBuffer;
use arrow_schema::{Field, Schema};
use ferrospark_common::Result;
use ferrospark_expr::{evaluate_predicate, PhysicalExpr};
use parquet::basic::Encoding;
use parquet::column::page::{Page, PageReader};
use parquet::file::metadata::ColumnChunkMetaData;
use parquet::file::reader::ChunkReader;

use super::dictionary::read_dictionary;

/// Dictionaries larger than this are evaluated row by row instead.
const MAX_CODES: usize = 1 << 16;

/// The verdict of `predicate` (over column 0 of type `field`) for every row of a column
/// chunk, or `None` when the chunk cannot be decided from its codes (including when the
/// predicate fails on some dictionary value: the row filter then decides, and raises the
/// error only if a row really holds that value).
pub(crate) fn row_verdicts<R: ChunkReader + 'static>(
    reader: Arc<R>,
    col: &ColumnChunkMetaData,
    rows: usize,
    field: &Field,
    predicate: &PhysicalExpr,
) -> Option<BooleanBuffer> {
    decide(reader, col, rows, field, predicate).ok().flatten()
}

fn decide<R: ChunkReader + 'static>(
    reader: Arc<R>,
    col: &ColumnChunkMetaData,
    rows: usize,
    field: &Field,
    predicate: &PhysicalExpr,
) -> Result<Option<BooleanBuffer>> {
    let descr = col.column_descr();
    if descr.max_rep_level() > 0 || descr.max_def_level() > 1 {
        return Ok(None);
    }
    let max_codes = MAX_CODES.min(rows / 2);
    let Some((values, mut pages)) =
        read_dictionary(reader, col, rows, field.data_type(), max_codes)
    else {
        return Ok(None);
    };
    let table = code_verdicts(values, field, predicate)?;
    let nullable = descr.max_def_level() == 1;
    // The footer's row count is only a claim until the pages add up to it.
    let mut out: Vec<u8> = Vec::with_capacity(rows.min(1 << 20));
    let mut levels: Vec<u8> = Vec::new();
    let mut codes: Vec<u8> = Vec::new();
    loop {
        let page = match pages.get_next_page() {
            Ok(Some(p)) => p,
            Ok(None) => break,
            Err(_) => return Ok(None),
        };
        let decoded = match page {
            Page::DataPage {
                buf,
                num_values,
                encoding,
                def_level_encoding,
                ..
            } => {
                let n = num_values as usize;
                if n > rows - out.len() {
                    return Ok(None);
                }
                let (def, values) = if nullable {
                    if def_level_encoding != Encoding::RLE {
                        return Ok(None);
                    }
                    let Some(len) = buf.get(..4).and_then(|b| b.try_into().ok()) else {
                        return Ok(None);
                    };
                    let len = u32::from_le_bytes(len) as usize;
                    let Some(def) = buf.get(4..4 + len) else {
                        return Ok(None);
                    };
                    (Some(def), &buf[4 + len..])
                } else {
                    (None, &buf[..])
                };
                page_verdicts(
                    n,
                    def,
                    values,
                    encoding,
                    &table,
                    &mut levels,
                    &mut codes,
                    &mut out,
                )
            }
            Page::DataPageV2 {
                buf,
                num_values,
                encoding,
                def_levels_byte_len,
                rep_levels_byte_len,
                ..
            } => {
                let n = num_values as usize;
                if n > rows - out.len() {
                    return Ok(None);
                }
                let start = rep_levels_byte_len as usize;
                let end = start + def_levels_byte_len as usize;
                let Some(def) = buf.get(start..end) else {
                    return Ok(None);
                };
                let def = nullable.then_some(def);
                page_verdicts(
                    n,
                    def,
                    &buf[end..],
                    encoding,
                    &table,
                    &mut levels,
                    &mut codes,
                    &mut out,
                )
            }
            Page::DictionaryPage { .. } => None,
        };
        if decoded.is_none() {
            return Ok(None);
        }
    }
    if out.len() != rows {
        return Ok(None);
    }
    Ok(Some(bytes_to_bits(&out)))
}

/// A code that is not in the dictionary: the page is corrupt, and the row filter decides.
const BAD_CODE: u8 = 2;

/// The predicate's verdict for each dictionary value, then for NULL (last entry); NULL
/// verdicts count as false, as a filter drops them.
fn code_verdicts(values: ArrayRef, field: &Field, predicate: &PhysicalExpr) -> Result<Vec<u8>> {
    let null = arrow_array::new_null_array(field.data_type(), 1);
    let all = arrow_select::concat::concat(&[values.as_ref(), null.as_ref()])?;
    let schema = Arc::new(Schema::new(vec![Field::new(
        field.name(),
        field.data_type().clone(),
        true,
    )]));
    let batch = RecordBatch::try_new(schema, vec![all])?;
    let verdict: BooleanArray = evaluate_predicate(predicate, &batch)?;
    Ok((0..verdict.len())
        .map(|i| u8::from(verdict.is_valid(i) && verdict.value(i)))
        .collect())
}

/// Appends one verdict byte per row of a data page to `out`; `None` when the page is not
/// dictionary-encoded or its data does not add up.
#[allow(clippy::too_many_arguments)]
fn page_verdicts(
    rows: usize,
    def: Option<&[u8]>,
    values: &[u8],
    encoding: Encoding,
    table: &[u8],
    levels: &mut Vec<u8>,
    codes: &mut Vec<u8>,
    out: &mut Vec<u8>,
) -> Option<()> {
    if !matches!(
        encoding,
        Encoding::RLE_DICTIONARY | Encoding::PLAIN_DICTIONARY
    ) {
        return None;
    }
    let (&null_verdict, verdicts) = table.split_last()?;
    let present = match def {
        Some(def) => {
            levels.clear();
            decode_hybrid(def, 1, rows, &[0, 1], levels)?;
            levels.iter().filter(|&&l| l == 1).count()
        }
        None => rows,
    };
    let (&width, data) = values.split_first()?;
    if width > 20 {
        return None;
    }
    // One verdict for every code the width can hold (writers size a page's width by the
    // dictionary so far, so it may hold fewer codes than the dictionary); codes past the
    // dictionary read BAD_CODE and send the row group back to the row filter.
    let codes_in_width = 1usize << width;
    let mut padded = verdicts[..verdicts.len().min(codes_in_width)].to_vec();
    padded.resize(codes_in_width, BAD_CODE);
    codes.clear();
    decode_hybrid(data, width, present, &padded, codes)?;
    if codes.contains(&BAD_CODE) {
        return None;
    }
    match def {
        None => out.extend_from_slice(codes),
        Some(_) => {
            let mut next = codes.iter();
            for &l in levels.iter() {
                out.push(if l == 1 { *next.next()? } else { null_verdict });
            }
        }
    }
    Some(())
}

/// Decodes `n` values of Parquet's RLE / bit-packed hybrid encoding with `width` bits each,
/// appending `table[value]` for each; `None` on truncated data or a value outside `table`.
fn decode_hybrid(data: &[u8], width: u8, n: usize, table: &[u8], out: &mut Vec<u8>) -> Option<()> {
    let target = out.len() + n;
    let width = usize::from(width);
    let mut pos = 0usize;
    while out.len() < target {
        let (header, used) = uleb128(data.get(pos..)?)?;
        pos += used;
        let left = target - out.len();
        if header & 1 == 0 {
            // A run of one value, stored in ceil(width / 8) little-endian bytes.
            let count = usize::try_from(header >> 1).ok()?;
            let bytes = width.div_ceil(8);
            let mut v = [0u8; 8];
            v[..bytes].copy_from_slice(data.get(pos..pos + bytes)?);
            pos += bytes;
            let verdict = *table.get(usize::try_from(u64::from_le_bytes(v)).ok()?)?;
            let take = count.min(left);
            out.resize(out.len() + take, verdict);
        } else {
            // Groups of eight values packed LSB first, `width` bytes per group.
            let groups = usize::try_from(header >> 1).ok()?;
            let len = groups.checked_mul(width)?;
            let packed = data.get(pos..pos.checked_add(len)?)?;
            pos += len;
            let take = groups.checked_mul(8)?.min(left);
            unpack_lookup(packed, width, take, table, out)?;
        }
    }
    Some(())
}

/// Appends `table[code]` for the first `n` codes of `width` bits packed LSB first in `packed`
/// (whole groups of eight codes, `width` bytes each).
fn unpack_lookup(
    packed: &[u8],
    width: usize,
    n: usize,
    table: &[u8],
    out: &mut Vec<u8>,
) -> Option<()> {
    macro_rules! widths {
        ($($w:literal)*) => {
            match width {
                0 => {
                    out.resize(out.len() + n, *table.first()?);
                    Some(())
                }
                $($w => unpack_width::<$w>(packed, n, table, out),)*
                _ => None,
            }
        };
    }
    widths!(1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20)
}

/// [`unpack_lookup`] for one width, known at compile time so every shift is a constant.
fn unpack_width<const W: usize>(
    packed: &[u8],
    n: usize,
    table: &[u8],
    out: &mut Vec<u8>,
) -> Option<()> {
    // The table covers every `W`-bit code, so lookups never miss.
    if table.len() != 1 << W {
        return None;
    }
    let mask = (1u64 << W) - 1;
    let start = out.len();
    out.resize(start + n.div_ceil(8) * 8, 0);
    let dst = &mut out[start..];
    let groups = n.div_ceil(8).min(packed.len() / W);
    // Groups with 16 readable bytes from their start are read as one u128 (W <= 16: all
    // eight codes inside); the rest, and wider codes, from a zero-padded copy.
    let direct = if W <= 16 && packed.len() >= 16 {
        ((packed.len() - 16) / W + 1).min(groups)
    } else {
        0
    };
    for (g, codes) in dst.chunks_exact_mut(8).enumerate().take(direct) {
        let mut b = [0u8; 16];
        b.copy_from_slice(&packed[g * W..g * W + 16]);
        let x = u128::from_le_bytes(b);
        for (j, o) in codes.iter_mut().enumerate() {
            let code = (x >> (j * W)) as u64 & mask;
            *o = table[code as usize & ((1 << W) - 1)];
        }
    }
    for (g, codes) in dst
        .chunks_exact_mut(8)
        .enumerate()
        .take(groups)
        .skip(direct)
    {
        // Eight codes of W <= 20 bits span at most 20 bytes: read them from a padded copy.
        let mut buf = [0u8; 32];
        buf[..W].copy_from_slice(&packed[g * W..g * W + W]);
        for (j, o) in codes.iter_mut().enumerate() {
            let bit = j * W;
            let mut word = [0u8; 8];
            word.copy_from_slice(&buf[bit / 8..bit / 8 + 8]);
            let code = (u64::from_le_bytes(word) >> (bit % 8)) & mask;
            *o = table[code as usize & ((1 << W) - 1)];
        }
    }
    if groups < n.div_ceil(8) {
        return None;
    }
    out.truncate(start + n);
    Some(())
}

/// Packs 0/1 bytes into a bitmap, eight at a time: byte i of a little-endian word moves to
/// bit 56 + i of its product with `GATHER`, without carries.
fn bytes_to_bits(bytes: &[u8]) -> BooleanBuffer {
    const GATHER: u64 = 0x0102_0408_1020_4080;
    let mut packed = Vec::with_capacity(bytes.len().div_ceil(8));
    let chunks = bytes.chunks_exact(8);
    let tail = chunks.remainder();
    for c in chunks {
        let mut w = [0u8; 8];
        w.copy_from_slice(c);
        packed.push((u64::from_le_bytes(w).wrapping_mul(GATHER) >> 56) as u8);
    }
    if !tail.is_empty() {
        let mut w = [0u8; 8];
        w[..tail.len()].copy_from_slice(tail);
        packed.push((u64::from_le_bytes(w).wrapping_mul(GATHER) >> 56) as u8);
    }
    BooleanBuffer::new(arrow_buffer::Buffer::from_vec(packed), 0, bytes.len())
}

/// An unsigned LEB128 number and the bytes it took.
fn uleb128(data: &[u8]) -> Option<(u64, usize)> {
    let mut v = 0u64;
    for (i, &b) in data.iter().enumerate().take(10) {
        v |= u64::from(b & 0x7f) << (7 * i);
        if b & 0x80 == 0 {
            return Some((v, i + 1));
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pack(codes: &[u64], width: usize) -> Vec<u8> {
        let mut out = vec![0u8; (codes.len() * width).div_ceil(8) + 8];
        for (i, &c) in codes.iter().enumerate() {
            for b in 0..width {
                if c >> b & 1 == 1 {
                    let bit = i * width + b;
                    out[bit / 8] |= 1 << (bit % 8);
                }
            }
        }
        out.truncate(codes.len().div_ceil(8) * width);
        out
    }

    #[test]
    fn hybrid_runs_and_packed_groups_decode_at_every_width() {
        for width in [0usize, 1, 3, 7, 8, 12, 17, 20] {
            let table: Vec<u8> = (0..1u64 << width).map(|c| (c % 3 == 0) as u8).collect();
            let cap = table.len() as u64 - 1;
            let mut seed = 12345u64;
            let mut next = || {
                seed = seed
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                (seed >> 33) % (cap + 1)
            };
            // 40 packed groups of 8 + an RLE run of 13 + 1 packed group holding 5 real codes.
            let first: Vec<u64> = (0..320).map(|_| next()).collect();
            let run_value = next();
            let last: Vec<u64> = (0..5).map(|_| next()).collect();
            let mut data = vec![(40u8 << 1) | 1];
            data.extend(pack(&first, width));
            data.push(13 << 1);
            let mut v = run_value.to_le_bytes().to_vec();
            v.truncate(width.div_ceil(8));
            data.extend(v);
            data.push((1 << 1) | 1);
            let mut padded = last.clone();
            padded.resize(8, 0);
            data.extend(pack(&padded, width));
            let n = 320 + 13 + 5;
            let mut out = Vec::new();
            decode_hybrid(&data, width as u8, n, &table, &mut out).expect("decodes");
            let expect: Vec<u8> = first
                .iter()
                .chain(std::iter::repeat_n(&run_value, 13))
                .chain(last.iter())
                .map(|&c| table[c as usize])
                .collect();
            assert_eq!(out, expect, "width {width}");
        }
    }

    #[test]
    fn truncated_or_out_of_range_codes_are_refused() {
        let table = [1u8, 0];
        let mut out = Vec::new();
        // A packed group promised but missing.
        assert!(decode_hybrid(&[0b11], 1, 8, &table, &mut out).is_none());
        // An RLE run of code 5 with a table of 2.
        assert!(decode_hybrid(&[4 << 1, 5], 3, 4, &table, &mut out).is_none());
        // An unterminated LEB128 header.
        assert!(decode_hybrid(&[0x80, 0x80], 3, 4, &table, &mut out).is_none());
        // A page whose codes point past a 3-value dictionary (verdicts + NULL's).
        let verdicts = [1u8, 0, 1, 0];
        let page = [2u8, 4 << 1, 3];
        let (mut levels, mut codes, mut rows) = (Vec::new(), Vec::new(), Vec::new());
        let decided = page_verdicts(
            4,
            None,
            &page,
            Encoding::RLE_DICTIONARY,
            &verdicts,
            &mut levels,
            &mut codes,
            &mut rows,
        );
        assert!(decided.is_none());
        // The same page with code 2 is fine.
        let page = [2u8, 4 << 1, 2];
        let decided = page_verdicts(
            4,
            None,
            &page,
            Encoding::RLE_DICTIONARY,
            &verdicts,
            &mut levels,
            &mut codes,
            &mut rows,
        );
        assert!(decided.is_some());
        assert_eq!(rows, vec![1, 1, 1, 1]);
    }
}
