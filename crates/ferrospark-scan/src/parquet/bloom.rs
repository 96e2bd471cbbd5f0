//! Row-group pruning with split-block bloom filters, for `col = v` and `col IN (...)`.

use arrow_array::cast::AsArray;
use arrow_array::types::*;
use arrow_schema::DataType;
use ferrospark_expr::{BinaryOp, Literal, PhysicalExpr};
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use parquet::basic::Type as PhysicalType;

use super::plan::{single_leaf, FileEntry};
use super::source::FileSource;

/// `(table column, candidate values)` when `e` is an equality test against literals.
pub(crate) fn equality_values(e: &PhysicalExpr) -> Option<(usize, Vec<&Literal>)> {
    let col = |e: &PhysicalExpr| match e {
        PhysicalExpr::Column { index, .. } => Some(*index),
        _ => None,
    };
    match e {
        PhysicalExpr::Compare {
            op: BinaryOp::Eq | BinaryOp::EqNullSafe,
            left,
            right,
        } => match (col(left), right.as_ref(), col(right), left.as_ref()) {
            (Some(c), PhysicalExpr::Literal(l), _, _)
            | (_, _, Some(c), PhysicalExpr::Literal(l))
                if !l.is_null() =>
            {
                Some((c, vec![l]))
            }
            _ => None,
        },
        PhysicalExpr::InList {
            expr,
            list,
            negated: false,
        } => {
            let c = col(expr)?;
            let lits = list
                .iter()
                .map(|e| match e {
                    PhysicalExpr::Literal(l) => Some(l),
                    _ => None,
                })
                .collect::<Option<Vec<_>>>()?;
            Some((c, lits.into_iter().filter(|l| !l.is_null()).collect()))
        }
        _ => None,
    }
}

/// The bytes the writer hashed for `lit`, given the column's physical type; `None` when
/// unsure (then the row group is kept). Zero floats give both signs, as -0.0 = 0.0.
fn hashed_forms(lit: &Literal, physical: PhysicalType, type_length: i32) -> Option<Vec<Vec<u8>>> {
    let a = lit.array();
    let one = |b: Vec<u8>| Some(vec![b]);
    // Integers are hashed as the physical type's little-endian bytes; unsigned ones as the
    // bit pattern the writer stored (`as`, not a checked cast).
    let int32 = |v: i32| one(v.to_le_bytes().to_vec());
    let int64 = |v: i64| one(v.to_le_bytes().to_vec());
    match (a.data_type(), physical) {
        (
            DataType::Int8
            | DataType::Int16
            | DataType::Int32
            | DataType::UInt8
            | DataType::UInt16
            | DataType::Date32,
            PhysicalType::INT32,
        ) => int32(
            arrow_cast::cast(a, &DataType::Int32)
                .ok()?
                .as_primitive::<Int32Type>()
                .value(0),
        ),
        (DataType::UInt32, PhysicalType::INT32) => {
            int32(a.as_primitive::<UInt32Type>().value(0) as i32)
        }
        (DataType::Int64 | DataType::Timestamp(..), PhysicalType::INT64) => int64(
            arrow_cast::cast(a, &DataType::Int64)
                .ok()?
                .as_primitive::<Int64Type>()
                .value(0),
        ),
        (DataType::UInt64, PhysicalType::INT64) => {
            int64(a.as_primitive::<UInt64Type>().value(0) as i64)
        }
        (DataType::Decimal128(..), p) => {
            let v = a.as_primitive::<Decimal128Type>().value(0);
            match p {
                PhysicalType::INT32 => one(i32::try_from(v).ok()?.to_le_bytes().to_vec()),
                PhysicalType::INT64 => one(i64::try_from(v).ok()?.to_le_bytes().to_vec()),
                PhysicalType::FIXED_LEN_BYTE_ARRAY => {
                    let n = usize::try_from(type_length).ok()?;
                    if n == 0 || n > 16 {
                        return None;
                    }
                    let be = v.to_be_bytes();
                    // Must fit: the dropped leading bytes are pure sign extension.
                    let sign = if v < 0 { 0xff } else { 0 };
                    if be[..16 - n].iter().any(|&b| b != sign) {
                        return None;
                    }
                    one(be[16 - n..].to_vec())
                }
                _ => None,
            }
        }
        (DataType::Float32, PhysicalType::FLOAT) => {
            let v = a.as_primitive::<Float32Type>().value(0);
            float_forms(v.is_nan(), v == 0.0, v.to_le_bytes(), (-v).to_le_bytes())
        }
        (DataType::Float64, PhysicalType::DOUBLE) => {
            let v = a.as_primitive::<Float64Type>().value(0);
            float_forms(v.is_nan(), v == 0.0, v.to_le_bytes(), (-v).to_le_bytes())
        }
        (DataType::Utf8, PhysicalType::BYTE_ARRAY) => {
            one(a.as_string::<i32>().value(0).as_bytes().to_vec())
        }
        (DataType::Binary, PhysicalType::BYTE_ARRAY) => one(a.as_binary::<i32>().value(0).to_vec()),
        _ => None,
    }
}

/// A float's hashed forms: none for NaN (writers differ), both signs for zero (-0.0 = 0.0).
fn float_forms<const N: usize>(
    nan: bool,
    zero: bool,
    bytes: [u8; N],
    negated: [u8; N],
) -> Option<Vec<Vec<u8>>> {
    if nan {
        None
    } else if zero {
        Some(vec![bytes.to_vec(), negated.to_vec()])
    } else {
        Some(vec![bytes.to_vec()])
    }
}

/// An equality conjunct a bloom filter may decide: the column's leaf and, for each candidate
/// value, the byte forms the writer may have hashed.
pub(crate) struct BloomProbe {
    leaf: usize,
    forms: Vec<Vec<Vec<u8>>>,
}

/// The equality conjuncts of `conjuncts` that bloom filters of file `file` may decide (built
/// once per file; [`prunes`] then checks each row group).
pub(crate) fn probes(
    file: &FileEntry,
    conjuncts: &[&PhysicalExpr],
    data_columns: usize,
) -> Vec<BloomProbe> {
    let schema = file.meta.parquet_schema();
    conjuncts
        .iter()
        .filter_map(|c| {
            let (col, values) = equality_values(c)?;
            if col >= data_columns {
                return None;
            }
            let leaf = single_leaf(schema, col)?;
            let descr = schema.column(leaf);
            let forms = values
                .iter()
                .map(|l| hashed_forms(l, descr.physical_type(), descr.type_length()))
                .collect::<Option<Vec<_>>>()?;
            Some(BloomProbe { leaf, forms })
        })
        .collect()
}

/// True when some probe's values are all absent from row group `g`'s bloom filter for that
/// column.
pub(crate) fn prunes(file: &FileEntry, g: usize, probes: &[BloomProbe]) -> bool {
    let rg = file.meta.metadata().row_group(g);
    let mut builder: Option<ParquetRecordBatchReaderBuilder<FileSource>> = None;
    for probe in probes {
        if rg.column(probe.leaf).bloom_filter_offset().is_none() {
            continue;
        }
        let b = builder.get_or_insert_with(|| {
            ParquetRecordBatchReaderBuilder::new_with_metadata(
                file.source.clone(),
                file.meta.clone(),
            )
        });
        let sbbf = match b.get_row_group_column_bloom_filter(g, probe.leaf) {
            Ok(Some(s)) => s,
            // A missing or unreadable filter cannot prune; the data pages still decide.
            _ => continue,
        };
        let any_present = probe
            .forms
            .iter()
            .flatten()
            .any(|bytes| sbbf.check(bytes.as_slice()));
        if !any_present {
            return true;
        }
    }
    false
}
