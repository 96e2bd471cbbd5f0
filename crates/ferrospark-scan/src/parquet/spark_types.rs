//! The Arrow types Spark accepts from Python workers, and conversion of batches to them:
//! signed integers only, Decimal128, Date32, microsecond timestamps, no dictionaries, no
//! views, no large offsets.

use std::sync::Arc;

use arrow_array::{ArrayRef, RecordBatch};
use arrow_schema::{DataType, Field, Fields, Schema, SchemaRef, TimeUnit};
use ferrospark_common::{FerroError, Result};
use ferrospark_expr::types::spark_equivalent;

/// The Spark-compatible type for `dt`; `int96` marks legacy INT96 timestamps, which Spark
/// reads as TIMESTAMP (local time zone), not TIMESTAMP_NTZ.
pub fn spark_data_type(name: &str, dt: &DataType, int96: bool) -> Result<DataType> {
    use DataType as D;
    let nested = |f: &Arc<Field>| -> Result<Arc<Field>> {
        Ok(Arc::new(Field::new(
            f.name(),
            spark_data_type(name, f.data_type(), false)?,
            f.is_nullable(),
        )))
    };
    Ok(match dt {
        D::Dictionary(_, v) => spark_data_type(name, v, int96)?,
        D::Decimal256(p, s) if *p <= 38 => D::Decimal128(*p, *s),
        D::Timestamp(_, tz) => D::Timestamp(
            TimeUnit::Microsecond,
            if tz.is_some() || int96 { Some("UTC".into()) } else { None },
        ),
        D::List(f) | D::LargeList(f) | D::FixedSizeList(f, _) => D::List(nested(f)?),
        D::Struct(fields) => D::Struct(fields.iter().map(nested).collect::<Result<Fields>>()?),
        D::Map(entries, sorted) => D::Map(nested(entries)?, *sorted),
        _ => match spark_equivalent(dt) {
            e @ (D::Null
            | D::Boolean
            | D::Int8
            | D::Int16
            | D::Int32
            | D::Int64
            | D::Float32
            | D::Float64
            | D::Decimal128(..)
            | D::Utf8
            | D::Binary
            | D::Date32) => e,
            _ => {
                return Err(FerroError::Unsupported(format!(
                    "column `{name}` has type {dt}, which Spark cannot represent; cast it or leave it out of `columns`"
                )))
            }
        },
    })
}

/// The Spark-compatible version of `schema`; `int96` lists top-level INT96 columns.
pub fn spark_schema(schema: &Schema, int96: &[bool]) -> Result<SchemaRef> {
    let fields = schema
        .fields()
        .iter()
        .enumerate()
        .map(|(i, f)| {
            Ok(Field::new(
                f.name(),
                spark_data_type(
                    f.name(),
                    f.data_type(),
                    int96.get(i).copied().unwrap_or(false),
                )?,
                f.is_nullable(),
            ))
        })
        .collect::<Result<Vec<_>>>()?;
    Ok(Arc::new(Schema::new(fields)))
}

/// A batch of `target`'s schema from `columns` of `rows` rows, casting the columns whose type
/// differs (a no-op for those already right).
pub fn to_spark_batch(
    columns: Vec<ArrayRef>,
    rows: usize,
    target: &SchemaRef,
) -> Result<RecordBatch> {
    let columns = columns
        .into_iter()
        .zip(target.fields())
        .map(|(c, f)| -> Result<ArrayRef> {
            if c.data_type() == f.data_type() {
                Ok(c)
            } else {
                Ok(arrow_cast::cast(&c, f.data_type())?)
            }
        })
        .collect::<Result<Vec<_>>>()?;
    let options = arrow_array::RecordBatchOptions::new().with_row_count(Some(rows));
    Ok(RecordBatch::try_new_with_options(
        target.clone(),
        columns,
        &options,
    )?)
}
