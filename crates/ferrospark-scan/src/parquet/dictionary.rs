//! Row-group pruning with dictionary pages: when every data page of a column chunk is
//! dictionary-encoded, the dictionary lists every value, so a selective predicate that no
//! dictionary value satisfies rules the whole row group out.

use std::sync::Arc;

use arrow_array::builder::BinaryViewBuilder;
use arrow_array::{
    ArrayRef, BinaryArray, BooleanArray, Date32Array, Decimal128Array, Float32Array, Float64Array,
    Int32Array, Int64Array, RecordBatch, StringArray,
};
use arrow_buffer::{Buffer, NullBuffer, ScalarBuffer};
use arrow_schema::{DataType, Field, Schema};
use bytes::Bytes;
use ferrospark_common::Result;
use ferrospark_expr::{evaluate_predicate, BinaryOp, PhysicalExpr};
use parquet::basic::{Encoding, Type as PhysicalType};
use parquet::column::page::{Page, PageReader};
use parquet::file::metadata::ColumnChunkMetaData;
use parquet::file::reader::ChunkReader;
use parquet::file::serialized_reader::SerializedPageReader;

use super::plan::{single_leaf, FileEntry};

/// Dictionaries beyond this many values are not worth testing.
const MAX_DICTIONARY_VALUES: usize = 1 << 16;

/// Predicates selective enough that reading a dictionary page pays off.
fn is_selective(e: &PhysicalExpr) -> bool {
    match e {
        PhysicalExpr::Compare { op, .. } => matches!(op, BinaryOp::Eq | BinaryOp::EqNullSafe),
        PhysicalExpr::InList { negated, .. } => !negated,
        PhysicalExpr::Like { negated, .. } => !negated,
        PhysicalExpr::StringMatch { .. } => true,
        PhysicalExpr::Or(a, b) => is_selective(a) && is_selective(b),
        _ => false,
    }
}

/// Decodes `n` PLAIN-encoded values of `physical` type as an array of `target` type, or `None`
/// for a pairing this does not handle or a buffer too short.
pub(crate) fn decode_plain(
    buf: &Bytes,
    n: usize,
    physical: PhysicalType,
    target: &DataType,
) -> Option<ArrayRef> {
    if let Some(fixed) = plain_fixed(buf, n, physical, target, None) {
        return Some(fixed);
    }
    Some(match (physical, target) {
        (PhysicalType::BYTE_ARRAY, DataType::Utf8View | DataType::BinaryView) => {
            views_over_page(buf, n, matches!(target, DataType::Utf8View))?
        }
        (
            PhysicalType::BYTE_ARRAY,
            DataType::Utf8 | DataType::Binary | DataType::LargeUtf8 | DataType::LargeBinary,
        ) => {
            let values: Vec<&[u8]> = byte_array_ranges(buf, n)?
                .into_iter()
                .map(|(at, len)| &buf[at..at + len])
                .collect();
            // Decoded as the plain types, then cast to the file's.
            let plain: ArrayRef = if matches!(target, DataType::Utf8 | DataType::LargeUtf8) {
                let strings: Option<Vec<&str>> =
                    values.iter().map(|v| std::str::from_utf8(v).ok()).collect();
                Arc::new(StringArray::from(strings?))
            } else {
                Arc::new(BinaryArray::from_vec(values))
            };
            if plain.data_type() == target {
                plain
            } else {
                arrow_cast::cast(&plain, target).ok()?
            }
        }
        _ => return None,
    })
}

/// `n` PLAIN-encoded fixed-width values of `physical` type as an array of `target` type: all
/// of them, or with `pick` only those at the positions given (NULL where its nulls say), read
/// straight from the page without decoding the rest. `None` for a pairing this does not
/// handle, a buffer too short or a position past `n`.
pub(crate) fn plain_fixed(
    buf: &[u8],
    n: usize,
    physical: PhysicalType,
    target: &DataType,
    pick: Option<(&[u32], Option<NullBuffer>)>,
) -> Option<ArrayRef> {
    let (at, nulls) = match pick {
        Some((at, nulls)) => (Some(at), nulls),
        None => (None, None),
    };
    /// The little-endian values of `W` bytes each, at `at` or all `n` of them.
    fn le<const W: usize, T>(
        buf: &[u8],
        n: usize,
        at: Option<&[u32]>,
        from: impl Fn([u8; W]) -> T,
    ) -> Option<ScalarBuffer<T>>
    where
        T: arrow_buffer::ArrowNativeType,
    {
        let bytes = buf.get(..n.checked_mul(W)?)?;
        let value = |i: usize| {
            let mut b = [0u8; W];
            b.copy_from_slice(&bytes[i * W..i * W + W]);
            from(b)
        };
        Some(match at {
            None => (0..n).map(value).collect::<Vec<T>>().into(),
            Some(at) => {
                if at.iter().any(|&i| i as usize >= n) {
                    return None;
                }
                at.iter()
                    .map(|&i| value(i as usize))
                    .collect::<Vec<T>>()
                    .into()
            }
        })
    }
    let decimal = |v: ScalarBuffer<i128>, p: u8, s: i8| -> Option<ArrayRef> {
        Some(Arc::new(
            Decimal128Array::new(v, nulls.clone())
                .with_precision_and_scale(p, s)
                .ok()?,
        ))
    };
    Some(match (physical, target) {
        (PhysicalType::INT32, DataType::Int32) => {
            Arc::new(Int32Array::new(le(buf, n, at, i32::from_le_bytes)?, nulls))
        }
        (PhysicalType::INT32, DataType::Date32) => {
            Arc::new(Date32Array::new(le(buf, n, at, i32::from_le_bytes)?, nulls))
        }
        (PhysicalType::INT64, DataType::Int64) => {
            Arc::new(Int64Array::new(le(buf, n, at, i64::from_le_bytes)?, nulls))
        }
        (PhysicalType::INT32, DataType::Decimal128(p, sc)) => decimal(
            le(buf, n, at, |b| i128::from(i32::from_le_bytes(b)))?,
            *p,
            *sc,
        )?,
        (PhysicalType::INT64, DataType::Decimal128(p, sc)) => decimal(
            le(buf, n, at, |b| i128::from(i64::from_le_bytes(b)))?,
            *p,
            *sc,
        )?,
        (PhysicalType::FLOAT, DataType::Float32) => Arc::new(Float32Array::new(
            le(buf, n, at, f32::from_le_bytes)?,
            nulls,
        )),
        (PhysicalType::DOUBLE, DataType::Float64) => Arc::new(Float64Array::new(
            le(buf, n, at, f64::from_le_bytes)?,
            nulls,
        )),
        _ => return None,
    })
}

/// Where each of `n` PLAIN-encoded byte arrays (a 4-byte length, then the bytes) lies in
/// `buf`, as (offset, length); `None` when the buffer is too short for them.
fn byte_array_ranges(buf: &[u8], n: usize) -> Option<Vec<(usize, usize)>> {
    let mut ranges = Vec::with_capacity(n);
    let mut pos = 0usize;
    for _ in 0..n {
        let len_bytes: [u8; 4] = buf.get(pos..pos.checked_add(4)?)?.try_into().ok()?;
        let len = u32::from_le_bytes(len_bytes) as usize;
        pos += 4;
        buf.get(pos..pos.checked_add(len)?)?;
        ranges.push((pos, len));
        pos += len;
    }
    Some(ranges)
}

/// `n` PLAIN-encoded byte arrays as views into the page buffer itself: no value is copied,
/// and the array keeps the (decompressed) page alive. Strings must be UTF-8.
fn views_over_page(buf: &Bytes, n: usize, utf8: bool) -> Option<ArrayRef> {
    let mut builder = BinaryViewBuilder::with_capacity(n);
    let block = builder.append_block(Buffer::from(buf.clone()));
    for (at, len) in byte_array_ranges(buf, n)? {
        builder
            .try_append_view(block, u32::try_from(at).ok()?, u32::try_from(len).ok()?)
            .ok()?;
    }
    let binary = builder.finish();
    Some(if utf8 {
        Arc::new(binary.to_string_view().ok()?)
    } else {
        Arc::new(binary)
    })
}

/// True when every data page of the chunk is dictionary-encoded (by its encoding stats), so
/// the dictionary lists every value the chunk holds.
pub(crate) fn all_dictionary_encoded(col: &ColumnChunkMetaData) -> bool {
    col.dictionary_page_offset().is_some()
        && col.page_encoding_stats_mask().is_some_and(|m| {
            m.is_only(Encoding::PLAIN_DICTIONARY) || m.is_only(Encoding::RLE_DICTIONARY)
        })
}

/// The dictionary of a column chunk as an array of the table type, when every data page is
/// dictionary-encoded and the dictionary has at most `max_values` values; with the page
/// reader positioned on the first data page.
pub(crate) fn read_dictionary<R: ChunkReader + 'static>(
    reader: Arc<R>,
    col: &ColumnChunkMetaData,
    rows: usize,
    target: &DataType,
    max_values: usize,
) -> Option<(ArrayRef, SerializedPageReader<R>)> {
    let (buf, n, pages) = read_dictionary_page(reader, col, rows, max_values)?;
    Some((decode_plain(&buf, n, col.column_type(), target)?, pages))
}

/// The PLAIN-encoded dictionary page of a column chunk and its number of values, under the
/// conditions of [`read_dictionary`], with the page reader positioned on the first data page.
pub(crate) fn read_dictionary_page<R: ChunkReader + 'static>(
    reader: Arc<R>,
    col: &ColumnChunkMetaData,
    rows: usize,
    max_values: usize,
) -> Option<(Bytes, usize, SerializedPageReader<R>)> {
    if !all_dictionary_encoded(col) {
        return None;
    }
    // Known from the header, a dictionary too large is dropped before it is decompressed.
    if super::page_header::dictionary_values(reader.as_ref(), col).is_some_and(|n| n > max_values) {
        return None;
    }
    let mut pages = SerializedPageReader::new(reader, col, rows, None).ok()?;
    match pages.get_next_page() {
        Ok(Some(Page::DictionaryPage {
            buf, num_values, ..
        })) => {
            let n = num_values as usize;
            if n > max_values {
                return None;
            }
            // An uncompressed page is a slice of the whole column chunk: views into it would
            // keep the chunk alive downstream, so the page is copied out first.
            let buf = if col.compression() == parquet::basic::Compression::UNCOMPRESSED {
                Bytes::copy_from_slice(&buf)
            } else {
                buf
            };
            Some((buf, n, pages))
        }
        _ => None,
    }
}

/// The verdict of `predicate` (over column 0, of `field`'s type) for each dictionary value,
/// then for NULL as the last entry.
pub(crate) fn value_verdicts(
    values: &ArrayRef,
    field: &Field,
    predicate: &PhysicalExpr,
) -> Result<BooleanArray> {
    let null = arrow_array::new_null_array(field.data_type(), 1);
    let all = arrow_select::concat::concat(&[values.as_ref(), null.as_ref()])?;
    let one = Arc::new(Schema::new(vec![Field::new(
        field.name(),
        field.data_type().clone(),
        true,
    )]));
    let batch = RecordBatch::try_new(one, vec![all])?;
    evaluate_predicate(predicate, &batch)
}

/// A selective single-column conjunct a row group's dictionary can rule out.
pub(crate) struct DictionaryProbe {
    leaf: usize,
    field: Field,
    /// The conjunct over column 0 (its one column).
    predicate: PhysicalExpr,
    /// Compares the column itself with constants (`= v`, `IN (...)`): worth testing on a
    /// dictionary of nearly unique values too.
    point_lookup: bool,
}

/// A dictionary page taking most of its chunk lists nearly as many values as the chunk has
/// rows (TPC-H's `c_phone`): reading and testing it costs about what decoding the column
/// does, and a pattern or a function of the value (`substring(c_phone, 1, 2) IN (...)`)
/// almost never rules such a row group out.
fn nearly_unique(col: &ColumnChunkMetaData) -> bool {
    dictionary_stored_bytes(col).is_some_and(|b| b.saturating_mul(2) > col.compressed_size())
}

/// The bytes a chunk's dictionary page (header included) takes in the file, known from the
/// footer without reading it.
pub(crate) fn dictionary_stored_bytes(col: &ColumnChunkMetaData) -> Option<i64> {
    let start = col.dictionary_page_offset()?;
    Some(col.data_page_offset().saturating_sub(start).max(0))
}

/// The conjuncts of `conjuncts` that dictionaries of file `file` may decide (built once per
/// file; [`prunes`] then checks each row group).
pub(crate) fn probes(
    file: &FileEntry,
    conjuncts: &[&PhysicalExpr],
    data_columns: usize,
    table_schema: &Schema,
) -> Vec<DictionaryProbe> {
    let schema = file.meta.parquet_schema();
    conjuncts
        .iter()
        .filter(|c| is_selective(c))
        .filter_map(|c| {
            let cols = c.column_indices();
            let [col] = cols.as_slice() else { return None };
            if *col >= data_columns {
                return None;
            }
            Some(DictionaryProbe {
                leaf: single_leaf(schema, *col)?,
                field: table_schema.field(*col).clone(),
                predicate: c.remap_columns(&|_| 0),
                point_lookup: super::bloom::equality_values(c).is_some(),
            })
        })
        .collect()
}

/// True when some probe holds for no dictionary value (nor for NULL, when the chunk may hold
/// NULLs) of row group `g`.
pub(crate) fn prunes(file: &FileEntry, g: usize, probes: &[DictionaryProbe]) -> Result<bool> {
    let rg = file.meta.metadata().row_group(g);
    for probe in probes {
        let col = rg.column(probe.leaf);
        if !probe.point_lookup && nearly_unique(col) {
            continue;
        }
        let Some((values, _)) = read_dictionary(
            Arc::new(file.source.clone()),
            col,
            rg.num_rows().max(0) as usize,
            probe.field.data_type(),
            MAX_DICTIONARY_VALUES,
        ) else {
            continue;
        };
        let may_have_nulls = col
            .statistics()
            .and_then(|s| s.null_count_opt())
            .is_none_or(|n| n > 0);
        let verdict = value_verdicts(&values, &probe.field, &probe.predicate)?;
        // The last verdict is NULL's, which counts only when the chunk may hold NULLs.
        let considered = if may_have_nulls {
            verdict.len()
        } else {
            verdict.len() - 1
        };
        if verdict.slice(0, considered).true_count() == 0 {
            return Ok(true);
        }
    }
    Ok(false)
}
