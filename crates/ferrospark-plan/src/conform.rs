//! Batches conformed to the types Spark and the engine plan with: string views and large
//! strings as plain strings, names and Arrow spellings aligned to a planned schema.

use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::{Array, ArrayRef, RecordBatch};
use arrow_schema::{DataType, Field, Schema, SchemaRef};
use ferrospark_common::{FerroError, Result};
use ferrospark_expr::types::spark_equivalent;

/// The schema with every top-level column in the type Spark computes with (dictionaries
/// decoded, views and large types made plain, unsigned widened).
pub fn spark_input_schema(schema: &Schema) -> SchemaRef {
    Arc::new(Schema::new(
        schema
            .fields()
            .iter()
            .map(|f| Field::new(f.name(), spark_equivalent(f.data_type()), f.is_nullable()))
            .collect::<Vec<_>>(),
    ))
}

/// `target` with the columns a scan delivers dictionary-encoded (of the planned value type)
/// left as dictionaries, for an aggregation that groups string keys on their codes.
pub fn with_dictionary_columns(scan_schema: &Schema, target: &SchemaRef) -> SchemaRef {
    let fields: Vec<Field> = scan_schema
        .fields()
        .iter()
        .zip(target.fields())
        .map(|(from, planned)| match from.data_type() {
            DataType::Dictionary(_, v) if v.as_ref() == planned.data_type() => planned
                .as_ref()
                .clone()
                .with_data_type(from.data_type().clone()),
            _ => planned.as_ref().clone(),
        })
        .collect();
    Arc::new(Schema::new(fields))
}

/// Casts a batch to `target` (same columns) where types differ.
pub fn conform(batch: RecordBatch, target: &SchemaRef) -> Result<RecordBatch> {
    if batch.schema().fields() == target.fields() {
        return Ok(batch);
    }
    let columns = batch
        .columns()
        .iter()
        .zip(target.fields())
        .map(|(c, f)| {
            if c.data_type() == f.data_type() {
                Ok(c.clone())
            } else if matches!(
                (c.data_type(), f.data_type()),
                (DataType::Utf8View, DataType::Utf8)
            ) {
                views_to_utf8(c.as_string_view())
            } else {
                Ok(arrow_cast::cast(c.as_ref(), f.data_type())?)
            }
        })
        .collect::<Result<Vec<ArrayRef>>>()?;
    let options = arrow_array::RecordBatchOptions::new().with_row_count(Some(batch.num_rows()));
    Ok(RecordBatch::try_new_with_options(
        target.clone(),
        columns,
        &options,
    )?)
}

/// The scan's string views as a plain string array: one pass sizing the buffers, one copying
/// the bytes (arrow's cast appends value by value through a builder).
fn views_to_utf8(a: &arrow_array::StringViewArray) -> Result<ArrayRef> {
    let views = a.views();
    let nulls = a.nulls().filter(|n| n.null_count() > 0);
    let len_of = |i: usize| {
        if nulls.is_some_and(|n| n.is_null(i)) {
            0
        } else {
            views[i] as u32 as usize
        }
    };
    let total: usize = (0..views.len()).map(len_of).sum();
    let too_big = || {
        FerroError::Unsupported(
            "a batch holds more than 2 GiB of strings; use a smaller ferrospark.batch.size".into(),
        )
    };
    i32::try_from(total).map_err(|_| too_big())?;
    let buffers = a.data_buffers();
    let mut bytes: Vec<u8> = Vec::with_capacity(total);
    let mut offsets: Vec<i32> = Vec::with_capacity(views.len() + 1);
    offsets.push(0);
    for (i, &v) in views.iter().enumerate() {
        let n = len_of(i);
        if n <= 12 {
            // Short values (flags, codes) byte by byte: cheaper than a copy call each.
            let inline = v.to_le_bytes();
            for &b in &inline[4..4 + n] {
                bytes.push(b);
            }
        } else {
            let buffer = (v >> 64) as u32 as usize;
            let start = (v >> 96) as u32 as usize;
            let data = buffers
                .get(buffer)
                .and_then(|b| b.as_slice().get(start..start + n))
                .ok_or_else(|| {
                    FerroError::Internal("a string view points past its buffers".into())
                })?;
            bytes.extend_from_slice(data);
        }
        offsets.push(bytes.len() as i32);
    }
    Ok(Arc::new(arrow_array::StringArray::try_new(
        arrow_buffer::OffsetBuffer::new(offsets.into()),
        bytes.into(),
        a.nulls().cloned(),
    )?))
}
