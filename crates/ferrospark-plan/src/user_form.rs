//! The Arrow form a query's result takes when it leaves for Python: every type pyarrow and
//! pandas read. Spark's interval types are the ones that need it:
//!
//! | Spark type | inside | for users |
//! | --- | --- | --- |
//! | `INTERVAL YEAR TO MONTH` | `interval[year_month]` | `month_day_nano_interval` (months only) |
//! | `INTERVAL DAY` | `interval[day_time]` | `duration[us]` |
//! | `INTERVAL DAY TO SECOND` | `duration[us]` | `duration[us]` |
//! | `INTERVAL` | `month_day_nano_interval` | `month_day_nano_interval` |
//!
//! pyarrow has no year-month or day-time interval type, and Spark's own `toArrow()` refuses
//! year-month intervals; the Spark type travels as the field's `ferrospark:spark_type` metadata, so
//! `dtypes` and `schema` still say which interval a column is.

use std::collections::HashMap;
use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::{IntervalDayTimeType, IntervalYearMonthType};
use arrow_array::{make_array, Array, ArrayRef, IntervalMonthDayNanoArray, RecordBatch};
use arrow_buffer::IntervalMonthDayNano;
use arrow_schema::{DataType, Field, FieldRef, IntervalUnit, Schema, SchemaRef, TimeUnit};
use ferrospark_common::Result;

/// The metadata key naming a field's Spark type where Arrow's does not say it.
pub const SPARK_TYPE_KEY: &str = "ferrospark:spark_type";

fn user_type(t: &DataType) -> DataType {
    match t {
        DataType::Interval(IntervalUnit::YearMonth) => {
            DataType::Interval(IntervalUnit::MonthDayNano)
        }
        DataType::Interval(IntervalUnit::DayTime) => DataType::Duration(TimeUnit::Microsecond),
        DataType::List(f) => DataType::List(user_field(f)),
        DataType::LargeList(f) => DataType::LargeList(user_field(f)),
        DataType::Map(f, sorted) => DataType::Map(user_field(f), *sorted),
        DataType::Struct(fs) => DataType::Struct(fs.iter().map(user_field).collect()),
        other => other.clone(),
    }
}

fn spark_name(t: &DataType) -> Option<&'static str> {
    match t {
        DataType::Interval(IntervalUnit::YearMonth) => Some("interval year to month"),
        DataType::Interval(IntervalUnit::DayTime) => Some("interval day"),
        DataType::Duration(_) => Some("interval day to second"),
        DataType::Interval(IntervalUnit::MonthDayNano) => Some("interval"),
        _ => None,
    }
}

fn user_field(f: &FieldRef) -> FieldRef {
    let t = user_type(f.data_type());
    let mut field = Field::new(f.name(), t, f.is_nullable()).with_metadata(f.metadata().clone());
    if let Some(name) = spark_name(f.data_type()) {
        let mut md: HashMap<String, String> = f.metadata().clone();
        md.insert(SPARK_TYPE_KEY.into(), name.into());
        field = field.with_metadata(md);
    }
    Arc::new(field)
}

/// Whether any column needs a different form for users.
fn needs(t: &DataType) -> bool {
    match t {
        DataType::Interval(_) | DataType::Duration(_) => true,
        DataType::List(f) | DataType::LargeList(f) | DataType::Map(f, _) => needs(f.data_type()),
        DataType::Struct(fs) => fs.iter().any(|f| needs(f.data_type())),
        _ => false,
    }
}

/// The schema users see for `schema`.
pub fn user_schema(schema: &SchemaRef) -> SchemaRef {
    if !schema.fields().iter().any(|f| needs(f.data_type())) {
        return schema.clone();
    }
    Arc::new(Schema::new_with_metadata(
        schema.fields().iter().map(user_field).collect::<Vec<_>>(),
        schema.metadata().clone(),
    ))
}

fn user_array(a: &ArrayRef) -> Result<ArrayRef> {
    Ok(match a.data_type() {
        DataType::Interval(IntervalUnit::YearMonth) => {
            let out: IntervalMonthDayNanoArray = a
                .as_primitive::<IntervalYearMonthType>()
                .iter()
                .map(|v| v.map(|m| IntervalMonthDayNano::new(m, 0, 0)))
                .collect();
            Arc::new(out)
        }
        DataType::Interval(IntervalUnit::DayTime) => {
            Arc::new(ferrospark_expr::interval::day_time_as_duration(
                a.as_primitive::<IntervalDayTimeType>(),
            ))
        }
        t @ (DataType::List(_)
        | DataType::LargeList(_)
        | DataType::Map(..)
        | DataType::Struct(_))
            if needs(t) =>
        {
            let data = a.to_data();
            let children = data
                .child_data()
                .iter()
                .map(|c| user_array(&make_array(c.clone())).map(|c| c.to_data()))
                .collect::<Result<Vec<_>>>()?;
            let out = data
                .into_builder()
                .data_type(user_type(t))
                .child_data(children)
                .build()?;
            make_array(out)
        }
        _ => a.clone(),
    })
}

/// `batch` in the form users see, under `schema` (from [`user_schema`]).
pub fn user_batch(batch: RecordBatch, schema: &SchemaRef) -> Result<RecordBatch> {
    if Arc::ptr_eq(&batch.schema(), schema) || batch.schema().fields() == schema.fields() {
        return Ok(batch);
    }
    let cols = batch
        .columns()
        .iter()
        .map(user_array)
        .collect::<Result<Vec<_>>>()?;
    Ok(RecordBatch::try_new_with_options(
        schema.clone(),
        cols,
        &arrow_array::RecordBatchOptions::new().with_row_count(Some(batch.num_rows())),
    )?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_array::{IntervalDayTimeArray, IntervalYearMonthArray, ListArray};
    use arrow_buffer::IntervalDayTime;

    #[test]
    fn intervals_leave_in_forms_pyarrow_reads() {
        let ym: ArrayRef = Arc::new(IntervalYearMonthArray::from(vec![Some(14), None]));
        let day: ArrayRef = Arc::new(IntervalDayTimeArray::from(vec![
            Some(IntervalDayTime::new(2, 0)),
            None,
        ]));
        let list: ArrayRef = Arc::new(ListArray::new(
            Arc::new(Field::new("item", day.data_type().clone(), true)),
            arrow_buffer::OffsetBuffer::from_lengths([2]),
            day.clone(),
            None,
        ));
        let schema = Arc::new(Schema::new(vec![
            Field::new("ym", ym.data_type().clone(), true),
            Field::new("d", day.data_type().clone(), true),
        ]));
        let batch = RecordBatch::try_new(schema.clone(), vec![ym, day]).expect("batch");
        let out_schema = user_schema(&schema);
        let out = user_batch(batch, &out_schema).expect("converted");
        assert_eq!(
            out.column(0).data_type(),
            &DataType::Interval(IntervalUnit::MonthDayNano)
        );
        assert_eq!(
            out_schema
                .field(0)
                .metadata()
                .get(SPARK_TYPE_KEY)
                .map(String::as_str),
            Some("interval year to month")
        );
        let d = out
            .column(1)
            .as_primitive::<arrow_array::types::DurationMicrosecondType>();
        assert_eq!(d.value(0), 2 * 86_400_000_000);
        assert!(d.is_null(1));
        let l = user_array(&list).expect("list");
        assert_eq!(
            l.as_list::<i32>().values().data_type(),
            &DataType::Duration(TimeUnit::Microsecond)
        );
    }
}
