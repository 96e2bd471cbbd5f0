//! Row-group pruning with split-block bloom filters, for `col = v` and `col IN (...)`.

use arrow_array::cast::AsArray;
use arrow_array::types::*;
use arrow_schema::DataType;
use ferrospark_common::Result;
use ferrospark_expr::{BinaryOp, Literal, PhysicalExpr};
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use parquet::basic::Type as PhysicalType;

use super::plan::{single_leaf, FileEntry};

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
    match (a.data_type(), physical) {
        (DataType::Int8, PhysicalType::INT32) => one((a.as_primitive::<Int8Type>().value(0)
            as i32)
            .to_le_bytes()
            .to_vec()),
        (DataType::Int16, PhysicalType::INT32) => one((a.as_primitive::<Int16Type>().value(0)
            as i32)
            .to_le_bytes()
            .to_vec()),
        (DataType::Int32, PhysicalType::INT32) => one(a
            .as_primitive::<Int32Type>()
            .value(0)
            .to_le_bytes()
            .to_vec()),
        (DataType::UInt8, PhysicalType::INT32) => one((a.as_primitive::<UInt8Type>().value(0)
            as i32)
            .to_le_bytes()
            .to_vec()),
        (DataType::UInt16, PhysicalType::INT32) => one((a.as_primitive::<UInt16Type>().value(0)
            as i32)
            .to_le_bytes()
            .to_vec()),
        (DataType::UInt32, PhysicalType::INT32) => one((a.as_primitive::<UInt32Type>().value(0)
            as i32)
            .to_le_bytes()
            .to_vec()),
        (DataType::Date32, PhysicalType::INT32) => one(a
            .as_primitive::<Date32Type>()
            .value(0)
            .to_le_bytes()
            .to_vec()),
        (DataType::Int64, PhysicalType::INT64) => one(a
            .as_primitive::<Int64Type>()
            .value(0)
            .to_le_bytes()
            .to_vec()),
        (DataType::UInt64, PhysicalType::INT64) => one((a.as_primitive::<UInt64Type>().value(0)
            as i64)
            .to_le_bytes()
            .to_vec()),
        (DataType::Timestamp(..), PhysicalType::INT64) => {
            let v = arrow_cast::cast(a, &DataType::Int64).ok()?;
            one(v
                .as_primitive::<Int64Type>()
                .value(0)
                .to_le_bytes()
                .to_vec())
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
            if v.is_nan() {
                None
            } else if v == 0.0 {
                Some(vec![
                    0.0f32.to_le_bytes().to_vec(),
                    (-0.0f32).to_le_bytes().to_vec(),
                ])
            } else {
                one(v.to_le_bytes().to_vec())
            }
        }
        (DataType::Float64, PhysicalType::DOUBLE) => {
            let v = a.as_primitive::<Float64Type>().value(0);
            if v.is_nan() {
                None
            } else if v == 0.0 {
                Some(vec![
                    0.0f64.to_le_bytes().to_vec(),
                    (-0.0f64).to_le_bytes().to_vec(),
                ])
            } else {
                one(v.to_le_bytes().to_vec())
            }
        }
        (DataType::Utf8, PhysicalType::BYTE_ARRAY) => {
            one(a.as_string::<i32>().value(0).as_bytes().to_vec())
        }
        (DataType::Binary, PhysicalType::BYTE_ARRAY) => one(a.as_binary::<i32>().value(0).to_vec()),
        _ => None,
    }
}

/// True when some equality conjunct's values are all absent from row group `g`'s bloom
/// filter for that column.
pub(crate) fn prunes(
    file: &FileEntry,
    g: usize,
    conjuncts: &[&PhysicalExpr],
    data_columns: usize,
) -> Result<bool> {
    let schema = file.meta.parquet_schema();
    let md = file.meta.metadata();
    let mut builder: Option<ParquetRecordBatchReaderBuilder<super::source::FileSource>> = None;
    for c in conjuncts {
        let Some((col, values)) = equality_values(c) else {
            continue;
        };
        if col >= data_columns {
            continue;
        }
        let Some(leaf) = single_leaf(schema, col) else {
            continue;
        };
        if md.row_group(g).column(leaf).bloom_filter_offset().is_none() {
            continue;
        }
        let descr = schema.column(leaf);
        let forms: Option<Vec<Vec<Vec<u8>>>> = values
            .iter()
            .map(|l| hashed_forms(l, descr.physical_type(), descr.type_length()))
            .collect();
        let Some(forms) = forms else { continue };
        if builder.is_none() {
            builder = Some(ParquetRecordBatchReaderBuilder::new_with_metadata(
                file.source.clone(),
                file.meta.clone(),
            ));
        }
        let Some(b) = &builder else { continue };
        let sbbf = match b.get_row_group_column_bloom_filter(g, leaf) {
            Ok(Some(s)) => s,
            // A missing or unreadable filter cannot prune; the data pages still decide.
            _ => continue,
        };
        let any_present = forms
            .iter()
            .flatten()
            .any(|bytes| sbbf.check(bytes.as_slice()));
        if !any_present {
            return Ok(true);
        }
    }
    Ok(false)
}
