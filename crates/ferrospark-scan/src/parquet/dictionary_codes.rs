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

use arrow_array::{Array, ArrayRef, BooleanArray, UInt32Array};
use arrow_buffer::{BooleanBuffer, BooleanBufferBuilder};
use arrow_schema::Field;
use ferrospark_common::Result;
use ferrospark_expr::{pack_bits, PhysicalExpr};
use parquet::basic::{Encoding, Type as PhysicalType};
use parquet::column::page::{Page, PageReader};
use parquet::file::metadata::ColumnChunkMetaData;
use parquet::file::reader::ChunkReader;

use super::dictionary::{
    decode_plain, plain_fixed, read_dictionary, read_dictionary_page, value_verdicts,
};

/// Dictionaries larger than this are evaluated row by row instead.
const MAX_CODES: usize = 1 << 16;

/// The verdict of `predicate` (over column 0 of type `field`) for every row of a column
/// chunk, or `None` when the chunk cannot be decided from its codes (including when the
/// predicate fails on some dictionary value: the row filter then decides, and raises the
/// error only if a row really holds that value). With `keep_codes`, also the chunk's
/// dictionary and every row's code, so the rows kept can be output without decoding the
/// column again.
pub(crate) fn row_verdicts<R: ChunkReader + 'static>(
    reader: Arc<R>,
    col: &ColumnChunkMetaData,
    rows: usize,
    field: &Field,
    predicate: &PhysicalExpr,
    keep_codes: bool,
) -> Option<(BooleanBuffer, Option<ChunkCodes>)> {
    decide(reader, col, rows, field, predicate, keep_codes)
        .ok()
        .flatten()
}

/// Whether a column's values all take the same bytes (numbers; not booleans or byte
/// arrays).
fn fixed_width(col: &ColumnChunkMetaData) -> bool {
    match col.column_type() {
        PhysicalType::BOOLEAN | PhysicalType::BYTE_ARRAY => false,
        PhysicalType::INT32
        | PhysicalType::FLOAT
        | PhysicalType::INT64
        | PhysicalType::DOUBLE
        | PhysicalType::INT96 => true,
        PhysicalType::FIXED_LEN_BYTE_ARRAY => col.column_descr().type_length() > 0,
    }
}

/// A column chunk as its dictionary and a code per row: what deciding a filter on its codes
/// already decoded.
pub(crate) struct ChunkCodes {
    values: ArrayRef,
    /// One code per row (0 for a NULL row).
    codes: Vec<u32>,
    /// Which rows hold a value; `None` when every row does.
    valid: Option<Vec<u8>>,
}

impl ChunkCodes {
    /// The column's values at the rows set in `kept`, in order (NULL where the row is).
    pub(crate) fn take(&self, kept: &BooleanBuffer) -> Result<ArrayRef> {
        let indices: UInt32Array = match &self.valid {
            None => kept.set_indices().map(|r| self.codes[r]).collect(),
            Some(valid) => kept
                .set_indices()
                .map(|r| (valid[r] == 1).then_some(self.codes[r]))
                .collect(),
        };
        Ok(arrow_select::take::take(&self.values, &indices, None)?)
    }
}

fn decide<R: ChunkReader + 'static>(
    reader: Arc<R>,
    col: &ColumnChunkMetaData,
    rows: usize,
    field: &Field,
    predicate: &PhysicalExpr,
    keep_codes: bool,
) -> Result<Option<(BooleanBuffer, Option<ChunkCodes>)>> {
    let descr = col.column_descr();
    if descr.max_rep_level() > 0 || descr.max_def_level() > 1 {
        return Ok(None);
    }
    // Deciding on codes saves decoding the values: a string dictionary pays even when nearly
    // every row has its own value (TPC-H's `c_phone`); a number dictionary must repeat values
    // (`o_custkey`, 60k values in 94k rows, is faster decoded and filtered).
    // A dictionary with more values is dropped from its page header, before it is
    // decompressed (`read_dictionary`).
    let max_codes = if fixed_width(col) {
        MAX_CODES.min(rows / 2)
    } else {
        MAX_CODES.min(rows)
    };
    let Some((values, mut pages)) =
        read_dictionary(reader, col, rows, field.data_type(), max_codes)
    else {
        return Ok(None);
    };
    let mut decoder = CodeDecoder::new(&value_verdicts(&values, field, predicate)?, rows);
    let nullable = descr.max_def_level() == 1;
    if keep_codes {
        decoder.keep = Some(KeptCodes {
            codes: Vec::with_capacity(rows.min(1 << 20)),
            valid: nullable.then(Vec::new),
        });
    }
    loop {
        let page = match pages.get_next_page() {
            Ok(Some(p)) => p,
            Ok(None) => break,
            Err(_) => return Ok(None),
        };
        let decoded = page_parts(&page, nullable)
            .and_then(|p| decoder.page(p.rows, p.def, p.values, p.encoding));
        if decoded.is_none() {
            return Ok(None);
        }
    }
    let dictionary_size = values.len();
    let Some((verdicts, kept)) = decoder.finish() else {
        return Ok(None);
    };
    let codes = match kept {
        Some(k)
            if k.codes
                .iter()
                .all(|&c| (c as usize) < dictionary_size.max(1)) =>
        {
            Some(ChunkCodes {
                values,
                codes: k.codes,
                valid: k.valid,
            })
        }
        _ => None,
    };
    Ok(Some((verdicts, codes)))
}

/// The parts of a data page the codes path reads.
struct PageParts<'a> {
    rows: u32,
    /// Definition levels, when the column is nullable.
    def: Option<&'a [u8]>,
    values: &'a [u8],
    encoding: Encoding,
}

/// A data page's parts; `None` for a dictionary page or levels this path does not read.
fn page_parts(page: &Page, nullable: bool) -> Option<PageParts<'_>> {
    match page {
        Page::DataPage {
            buf,
            num_values,
            encoding,
            def_level_encoding,
            ..
        } => {
            if !nullable {
                return Some(PageParts {
                    rows: *num_values,
                    def: None,
                    values: &buf[..],
                    encoding: *encoding,
                });
            }
            // V1 pages prefix their definition levels with their length.
            if *def_level_encoding != Encoding::RLE {
                return None;
            }
            let len = u32::from_le_bytes(buf.get(..4)?.try_into().ok()?) as usize;
            let end = 4usize.checked_add(len)?;
            Some(PageParts {
                rows: *num_values,
                def: Some(buf.get(4..end)?),
                values: buf.get(end..)?,
                encoding: *encoding,
            })
        }
        Page::DataPageV2 {
            buf,
            num_values,
            encoding,
            def_levels_byte_len,
            rep_levels_byte_len,
            ..
        } => {
            let start = *rep_levels_byte_len as usize;
            let end = start.checked_add(*def_levels_byte_len as usize)?;
            let def = buf.get(start..end)?;
            Some(PageParts {
                rows: *num_values,
                def: nullable.then_some(def),
                values: buf.get(end..)?,
                encoding: *encoding,
            })
        }
        Page::DictionaryPage { .. } => None,
    }
}

/// A dictionary-encoded page of `rows` rows: its definition levels (when it has them)
/// decoded into `levels`, then how many rows hold a value, the codes' bit width (at most 20:
/// a dictionary this path reads is smaller) and the codes themselves.
fn page_codes<'a>(
    def: Option<&[u8]>,
    rows: usize,
    values: &'a [u8],
    levels: &mut Vec<u8>,
) -> Option<(usize, u8, &'a [u8])> {
    let present = match def {
        Some(def) => {
            levels.clear();
            decode_hybrid(def, 1, rows, &[0, 1], levels)?;
            levels.iter().filter(|&&l| l == 1).count()
        }
        None => rows,
    };
    let (&width, codes) = values.split_first()?;
    (width <= 20).then_some((present, width, codes))
}

/// The values of a dictionary-encoded column chunk of `kept.len()` rows at the rows set in
/// `kept`, in order (NULL where the row is), gathered by their codes: a page without a kept
/// row is skipped before it is decompressed, the others have only the kept rows' codes read
/// and their values taken. The reader would decode every row and mask, or seek run by
/// run, both far dearer when a few scattered rows are kept (TPC-H Q9's lineitem after its
/// runtime filter: 5% of the rows, a kept row in every page). `None` when the chunk is not
/// read this way (not wholly dictionary-encoded, nested, a page that does not add up): the
/// reader decodes it then.
pub(crate) fn take_kept<R: ChunkReader + 'static>(
    reader: Arc<R>,
    col: &ColumnChunkMetaData,
    kept: &BooleanBuffer,
    field: &Field,
) -> Option<ArrayRef> {
    let descr = col.column_descr();
    if descr.max_rep_level() > 0 || descr.max_def_level() > 1 {
        return None;
    }
    let rows = kept.len();
    let (page, dictionary_len, mut pages) = read_dictionary_page(reader, col, rows, rows.max(1))?;
    let nullable = descr.max_def_level() == 1;
    let wanted = kept.count_set_bits();
    let mut indices: Vec<u32> = Vec::with_capacity(wanted);
    let mut valid = nullable.then(|| BooleanBufferBuilder::new(wanted));
    let (mut levels, mut codes, mut ranks): (Vec<u8>, Vec<u32>, Vec<Option<usize>>) =
        (Vec::new(), Vec::new(), Vec::new());
    let mut at = 0usize;
    while let Some(meta) = pages.peek_next_page().ok()? {
        // Flat columns: a value (or NULL) per row.
        let n = meta
            .num_rows
            .or(meta.num_levels)
            .filter(|_| !meta.is_dict)?;
        let end = at.checked_add(n).filter(|&e| e <= rows)?;
        let here = kept.slice(at, n);
        if here.count_set_bits() == 0 {
            pages.skip_next_page().ok()?;
            at = end;
            continue;
        }
        let page = pages.get_next_page().ok()??;
        let PageParts {
            rows: num_values,
            def,
            values: data,
            encoding,
        } = page_parts(&page, nullable)?;
        if num_values as usize != n
            || !matches!(
                encoding,
                Encoding::RLE_DICTIONARY | Encoding::PLAIN_DICTIONARY
            )
        {
            return None;
        }
        let (present, width, data) = page_codes(def, n, data, &mut levels)?;
        match &mut valid {
            None => codes_at(data, width, present, here.set_indices(), &mut indices)?,
            Some(valid) => {
                // Codes are stored for present rows only: a kept row's code is at its rank
                // among them.
                ranks.clear();
                let (mut row, mut rank) = (0usize, 0usize);
                for r in here.set_indices() {
                    rank += levels[row..r].iter().filter(|&&l| l == 1).count();
                    row = r;
                    let present = levels[r] == 1;
                    valid.append(present);
                    ranks.push(present.then_some(rank));
                }
                codes.clear();
                codes_at(
                    data,
                    width,
                    present,
                    ranks.iter().flatten().copied(),
                    &mut codes,
                )?;
                let mut next = codes.iter();
                for r in &ranks {
                    indices.push(match r {
                        Some(_) => *next.next()?,
                        None => 0,
                    });
                }
            }
        }
        at = end;
    }
    if at != rows {
        return None;
    }
    let nulls = valid.map(|mut v| arrow_buffer::NullBuffer::new(v.finish()));
    // Numbers are read at their codes straight from the page; other values are decoded and
    // taken.
    let physical = col.column_type();
    if let Some(fixed) = plain_fixed(
        &page,
        dictionary_len,
        physical,
        field.data_type(),
        Some((&indices, nulls.clone())),
    ) {
        return Some(fixed);
    }
    let values = decode_plain(&page, dictionary_len, physical, field.data_type())?;
    let in_dictionary = |i: usize| (indices[i] as usize) < values.len();
    let ok = match &nulls {
        None => (0..indices.len()).all(in_dictionary),
        Some(n) => (0..indices.len()).all(|i| n.is_null(i) || in_dictionary(i)),
    };
    if !ok {
        return None;
    }
    let indices = UInt32Array::new(indices.into(), nulls);
    arrow_select::take::take(&values, &indices, None).ok()
}

/// Codes kept while deciding (see [`ChunkCodes`]).
struct KeptCodes {
    codes: Vec<u32>,
    valid: Option<Vec<u8>>,
}

/// A code that is not in the dictionary: the page is corrupt, and the row filter decides.
const BAD_CODE: u8 = 2;

/// Turns the data pages of one column chunk into a verdict byte per row.
struct CodeDecoder {
    /// The verdict of each dictionary value (NULL verdicts count as false, as a filter drops
    /// them).
    verdicts: Vec<u8>,
    null_verdict: u8,
    /// `verdicts` padded with `BAD_CODE` to every code of `padded_width` bits.
    padded: Vec<u8>,
    padded_width: Option<u8>,
    rows: usize,
    levels: Vec<u8>,
    codes: Vec<u8>,
    out: Vec<u8>,
    /// Every row's code too, when asked for.
    keep: Option<KeptCodes>,
    present_codes: Vec<u32>,
}

impl CodeDecoder {
    /// From the verdicts of the dictionary values followed by NULL's, for a chunk of `rows`.
    fn new(value_verdicts: &BooleanArray, rows: usize) -> Self {
        let mut verdicts: Vec<u8> = (0..value_verdicts.len())
            .map(|i| u8::from(value_verdicts.is_valid(i) && value_verdicts.value(i)))
            .collect();
        let null_verdict = verdicts.pop().unwrap_or(0);
        Self {
            verdicts,
            null_verdict,
            padded: Vec::new(),
            padded_width: None,
            rows,
            levels: Vec::new(),
            codes: Vec::new(),
            // The footer's row count is only a claim until the pages add up to it.
            out: Vec::with_capacity(rows.min(1 << 20)),
            keep: None,
            present_codes: Vec::new(),
        }
    }

    /// Appends the verdicts of one data page of `num_values` rows; `None` when the page is
    /// not dictionary-encoded or its data does not add up.
    fn page(
        &mut self,
        num_values: u32,
        def: Option<&[u8]>,
        values: &[u8],
        encoding: Encoding,
    ) -> Option<()> {
        if !matches!(
            encoding,
            Encoding::RLE_DICTIONARY | Encoding::PLAIN_DICTIONARY
        ) {
            return None;
        }
        let rows = usize::try_from(num_values).ok()?;
        if rows > self.rows - self.out.len() {
            return None;
        }
        let (present, width, data) = page_codes(def, rows, values, &mut self.levels)?;
        if self.padded_width != Some(width) {
            // One verdict for every code the width can hold (writers size a page's width by
            // the dictionary so far, so it may hold fewer codes than the dictionary); codes
            // past the dictionary read BAD_CODE and send the row group back to the row filter.
            let codes_in_width = 1usize << width;
            self.padded.clear();
            self.padded
                .extend_from_slice(&self.verdicts[..self.verdicts.len().min(codes_in_width)]);
            self.padded.resize(codes_in_width, BAD_CODE);
            self.padded_width = Some(width);
        }
        self.codes.clear();
        decode_hybrid(data, width, present, &self.padded, &mut self.codes)?;
        if self.codes.contains(&BAD_CODE) {
            return None;
        }
        if let Some(keep) = &mut self.keep {
            self.present_codes.clear();
            decode_hybrid(data, width, present, &[], &mut self.present_codes)?;
            match (def, &mut keep.valid) {
                (Some(_), Some(valid)) => {
                    let mut next = self.present_codes.iter();
                    for &l in &self.levels {
                        keep.codes.push(if l == 1 { *next.next()? } else { 0 });
                        valid.push(l);
                    }
                }
                (None, None) => keep.codes.extend_from_slice(&self.present_codes),
                _ => return None,
            }
        }
        match def {
            None => self.out.extend_from_slice(&self.codes),
            Some(_) => {
                let mut next = self.codes.iter();
                for &l in &self.levels {
                    self.out.push(if l == 1 {
                        *next.next()?
                    } else {
                        self.null_verdict
                    });
                }
            }
        }
        Some(())
    }

    /// The verdicts as a bitmap (and the codes kept), if the pages added up to the chunk's
    /// rows.
    fn finish(self) -> Option<(BooleanBuffer, Option<KeptCodes>)> {
        (self.out.len() == self.rows).then(|| (pack_bits(&self.out, |v| v != 0), self.keep))
    }
}

/// What a code decodes to: its verdict from a table, or the code itself.
trait Decoded: Copy + Default {
    /// Whether `table` has an entry for every code of `width` bits.
    fn covers(table: &[u8], width: usize) -> bool;
    /// The value of `code`, which [`Decoded::covers`] vouched for.
    fn of_code(code: usize, table: &[u8]) -> Self;
    /// The value of a run's `code`, which nothing vouched for.
    fn of_run(code: usize, table: &[u8]) -> Option<Self>;
}

/// A verdict byte looked up in the table of the dictionary's verdicts.
impl Decoded for u8 {
    fn covers(table: &[u8], width: usize) -> bool {
        table.len() == 1 << width
    }
    fn of_code(code: usize, table: &[u8]) -> Self {
        table[code]
    }
    fn of_run(code: usize, table: &[u8]) -> Option<Self> {
        table.get(code).copied()
    }
}

/// The code itself (checked against the dictionary once the chunk is read).
impl Decoded for u32 {
    fn covers(_: &[u8], _: usize) -> bool {
        true
    }
    fn of_code(code: usize, _: &[u8]) -> Self {
        code as u32
    }
    fn of_run(code: usize, _: &[u8]) -> Option<Self> {
        u32::try_from(code).ok()
    }
}

/// Decodes `n` values of Parquet's RLE / bit-packed hybrid encoding with `width` bits each,
/// appending `table[value]` for each; `None` on truncated data or a value outside `table`.
fn decode_hybrid<T: Decoded>(
    data: &[u8],
    width: u8,
    n: usize,
    table: &[u8],
    out: &mut Vec<T>,
) -> Option<()> {
    let target = out.len() + n;
    let width = usize::from(width);
    let mut pos = 0usize;
    while out.len() < target {
        let left = target - out.len();
        match next_run(data, &mut pos, width)? {
            Run::Repeated { value, count } => {
                let verdict = T::of_run(usize::try_from(value).ok()?, table)?;
                out.resize(out.len() + count.min(left), verdict);
            }
            Run::Packed { start, len, count } => {
                unpack_lookup(
                    &data[start..start + len],
                    width,
                    count.min(left),
                    table,
                    out,
                )?;
            }
        }
    }
    Some(())
}

/// One run of Parquet's RLE / bit-packed hybrid encoding.
enum Run {
    /// `count` copies of one value.
    Repeated { value: u64, count: usize },
    /// `count` values packed LSB first in `data[start..start + len]` (groups of eight,
    /// `width` bytes each).
    Packed {
        start: usize,
        len: usize,
        count: usize,
    },
}

/// The run whose header starts at `data[*pos]`, moving `pos` past it; `None` on truncated
/// data.
fn next_run(data: &[u8], pos: &mut usize, width: usize) -> Option<Run> {
    let (header, used) = uleb128(data.get(*pos..)?)?;
    *pos += used;
    let count = usize::try_from(header >> 1).ok()?;
    if header & 1 == 0 {
        // One value, stored in ceil(width / 8) little-endian bytes.
        let bytes = width.div_ceil(8);
        let mut v = [0u8; 8];
        v[..bytes].copy_from_slice(data.get(*pos..pos.checked_add(bytes)?)?);
        *pos += bytes;
        Some(Run::Repeated {
            value: u64::from_le_bytes(v),
            count,
        })
    } else {
        let len = count.checked_mul(width)?;
        data.get(*pos..pos.checked_add(len)?)?;
        let start = *pos;
        *pos += len;
        Some(Run::Packed {
            start,
            len,
            count: count.checked_mul(8)?,
        })
    }
}

/// Appends `table[code]` for the first `n` codes of `width` bits packed LSB first in `packed`
/// (whole groups of eight codes, `width` bytes each).
fn unpack_lookup<T: Decoded>(
    packed: &[u8],
    width: usize,
    n: usize,
    table: &[u8],
    out: &mut Vec<T>,
) -> Option<()> {
    macro_rules! widths {
        ($($w:literal)*) => {
            match width {
                0 => {
                    out.resize(out.len() + n, T::of_run(0, table)?);
                    Some(())
                }
                $($w => unpack_width::<$w, T>(packed, n, table, out),)*
                _ => None,
            }
        };
    }
    widths!(1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20)
}

/// [`unpack_lookup`] for one width, known at compile time so every shift is a constant.
fn unpack_width<const W: usize, T: Decoded>(
    packed: &[u8],
    n: usize,
    table: &[u8],
    out: &mut Vec<T>,
) -> Option<()> {
    // A table covers every `W`-bit code, so lookups never miss.
    if !T::covers(table, W) {
        return None;
    }
    let mask = (1u64 << W) - 1;
    let start = out.len();
    out.resize(start + n.div_ceil(8) * 8, T::default());
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
            *o = T::of_code(code as usize & ((1 << W) - 1), table);
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
            *o = T::of_code(code as usize & ((1 << W) - 1), table);
        }
    }
    if groups < n.div_ceil(8) {
        return None;
    }
    out.truncate(start + n);
    Some(())
}

/// Appends the values at `positions` (ascending, each under `n`) of `n` values in Parquet's
/// RLE / bit-packed hybrid encoding with `width` (at most 20) bits each, reading only the bits
/// of those values: a few rows kept of many cost a few reads, not an unpacked page. `None` on
/// truncated data or a position past `n`.
fn codes_at(
    data: &[u8],
    width: u8,
    n: usize,
    positions: impl Iterator<Item = usize>,
    out: &mut Vec<u32>,
) -> Option<()> {
    let width = usize::from(width);
    if width > 20 {
        return None;
    }
    let mask = (1u64 << width) - 1;
    let (mut pos, mut base) = (0usize, 0usize);
    let mut run = Run::Repeated { value: 0, count: 0 };
    for p in positions {
        if p >= n {
            return None;
        }
        // Counts come from the file: a corrupt one must not overflow the run's end.
        loop {
            let count = match run {
                Run::Repeated { count, .. } | Run::Packed { count, .. } => count,
            };
            if p < base.checked_add(count)? {
                break;
            }
            base += count;
            run = next_run(data, &mut pos, width)?;
        }
        out.push(match run {
            Run::Repeated { value, .. } => u32::try_from(value).ok()?,
            Run::Packed { start, len, .. } => {
                // `p - base` is inside the run, so its first byte is too.
                let bit = (p - base) * width;
                let at = bit / 8;
                let take = (len - at).min(8);
                let mut w = [0u8; 8];
                w[..take].copy_from_slice(&data[start + at..start + at + take]);
                ((u64::from_le_bytes(w) >> (bit % 8)) & mask) as u32
            }
        });
    }
    Some(())
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
            let mut out: Vec<u8> = Vec::new();
            decode_hybrid(&data, width as u8, n, &table, &mut out).expect("decodes");
            let expect: Vec<u8> = first
                .iter()
                .chain(std::iter::repeat_n(&run_value, 13))
                .chain(last.iter())
                .map(|&c| table[c as usize])
                .collect();
            assert_eq!(out, expect, "width {width}");
            let mut codes: Vec<u32> = Vec::new();
            decode_hybrid(&data, width as u8, n, &[], &mut codes).expect("decodes");
            let want: Vec<u32> = first
                .iter()
                .chain(std::iter::repeat_n(&run_value, 13))
                .chain(last.iter())
                .map(|&c| c as u32)
                .collect();
            assert_eq!(codes, want, "width {width}");
            // Reading single values agrees: every position, every seventh, and the last
            // run's few, across packed groups and the RLE run.
            for step in [1usize, 7, 331] {
                let at: Vec<usize> = (0..n).step_by(step).collect();
                let mut picked: Vec<u32> = Vec::new();
                codes_at(&data, width as u8, n, at.iter().copied(), &mut picked).expect("reads");
                let expect: Vec<u32> = at.iter().map(|&i| want[i]).collect();
                assert_eq!(picked, expect, "width {width}, step {step}");
            }
        }
    }

    #[test]
    fn single_codes_past_the_data_or_the_values_are_refused() {
        let mut out: Vec<u32> = Vec::new();
        // A packed group promised but missing, a position past `n`, a bad header.
        assert!(codes_at(&[0b11], 3, 8, [2usize].into_iter(), &mut out).is_none());
        assert!(codes_at(&[4 << 1, 5], 3, 4, [4usize].into_iter(), &mut out).is_none());
        assert!(codes_at(&[0x80, 0x80], 3, 4, [0usize].into_iter(), &mut out).is_none());
        // Wider codes than a dictionary page can need.
        assert!(codes_at(&[4 << 1, 5, 0, 0], 21, 4, [0usize].into_iter(), &mut out).is_none());
        // Zero-width codes: a run of 8, then a packed run claiming 2^64 - 8 values.
        let mut huge = vec![8 << 1];
        huge.extend([0xFF; 8]);
        huge.push(0x3F);
        assert!(codes_at(&huge, 0, 16, [8usize].into_iter(), &mut out).is_none());
        // A run of four 5s: positions 1 and 3.
        codes_at(&[4 << 1, 5], 3, 4, [1usize, 3].into_iter(), &mut out).expect("reads");
        assert_eq!(out, [5, 5]);
    }

    #[test]
    fn truncated_or_out_of_range_codes_are_refused() {
        let table = [1u8, 0];
        let mut out: Vec<u8> = Vec::new();
        // A packed group promised but missing.
        assert!(decode_hybrid(&[0b11], 1, 8, &table, &mut out).is_none());
        // An RLE run of code 5 with a table of 2.
        assert!(decode_hybrid(&[4 << 1, 5], 3, 4, &table, &mut out).is_none());
        // An unterminated LEB128 header.
        assert!(decode_hybrid(&[0x80, 0x80], 3, 4, &table, &mut out).is_none());
        // A page whose codes point past a 3-value dictionary (verdicts + NULL's).
        let verdicts = BooleanArray::from(vec![true, false, true, false]);
        let decide = |page: &[u8]| {
            let mut decoder = CodeDecoder::new(&verdicts, 4);
            let decided = decoder.page(4, None, page, Encoding::RLE_DICTIONARY);
            (decided, decoder.out)
        };
        let (decided, _) = decide(&[2u8, 4 << 1, 3]);
        assert!(decided.is_none());
        // The same page with code 2 is fine.
        let (decided, rows) = decide(&[2u8, 4 << 1, 2]);
        assert!(decided.is_some());
        assert_eq!(rows, vec![1, 1, 1, 1]);
    }
}
