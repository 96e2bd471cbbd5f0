//! Sort-based aggregation (Spark's `SortAggregateExec`): input arrives sorted by the grouping
//! keys, so one group is open at a time and every other group is complete as soon as a new key
//! appears. Used directly for sorted input, by the object-hash fall-back, and to merge the
//! sorted runs that hash aggregation spilled.

use arrow_array::{ArrayRef, RecordBatch, RecordBatchOptions};
use arrow_row::{OwnedRow, RowConverter};
use arrow_schema::{DataType, SchemaRef};
use ferrospark_common::Result;

use crate::accumulators::{EmitTo, GroupsAccumulator};

/// What one aggregate reads and hands out inside a sort aggregation.
pub struct SortAggSlot {
    /// The accumulator.
    pub acc: Box<dyn GroupsAccumulator>,
    /// Reads raw values (`update`) rather than states (`merge`).
    pub raw: bool,
    /// Hands out final values rather than states.
    pub emit_final: bool,
}

/// The one open group carried from a batch to the next.
struct OpenGroup {
    row: OwnedRow,
    keys: Vec<ArrayRef>,
}

/// Aggregates key-sorted input, handing out each group once its last row has been seen.
pub struct SortAggregator {
    converter: RowConverter,
    slots: Vec<SortAggSlot>,
    open: Option<OpenGroup>,
    output_schema: SchemaRef,
    groups: Vec<u32>,
}

impl SortAggregator {
    /// An aggregator over keys of `key_types` producing batches of `output_schema`
    /// (keys first, then each slot's final value or state columns).
    pub fn new(
        key_types: &[DataType],
        slots: Vec<SortAggSlot>,
        output_schema: SchemaRef,
    ) -> Result<Self> {
        let converter = ferrospark_sort::key_converter(key_types)?;
        Ok(Self {
            converter,
            slots,
            open: None,
            output_schema,
            groups: Vec::new(),
        })
    }

    /// Adds a key-sorted batch (`inputs[i]`: slot `i`'s values or states); returns the groups it
    /// completed, if any.
    pub fn push(
        &mut self,
        keys: &[ArrayRef],
        inputs: &[Vec<ArrayRef>],
    ) -> Result<Option<RecordBatch>> {
        let n = keys.first().map_or(0, |k| k.len());
        if n == 0 {
            return Ok(None);
        }
        let rows = self.converter.convert_columns(keys)?;
        self.groups.clear();
        let mut g: u32 = 0;
        let mut starts = Vec::new();
        match &self.open {
            Some(open) if open.row.row() == rows.row(0) => {}
            Some(_) => {
                g = 1;
                starts.push(0);
            }
            None => starts.push(0),
        }
        self.groups.push(g);
        for i in 1..n {
            if rows.row(i) != rows.row(i - 1) {
                g += 1;
                starts.push(i);
            }
            self.groups.push(g);
        }
        let total = g as usize + 1;
        for (slot, input) in self.slots.iter_mut().zip(inputs) {
            if slot.raw {
                slot.acc.update_batch(input, &self.groups, total)?;
            } else {
                slot.acc.merge_batch(input, &self.groups, total)?;
            }
        }
        // Every group but the last is complete.
        let done = total - 1;
        let out = if done > 0 {
            // Keys of the completed groups: the carried open group (if it is group 0), then the
            // first row of each group that started in this batch, except the last one.
            let mut key_parts: Vec<Vec<ArrayRef>> = Vec::new();
            let new_starts = if let Some(open) = self.open.take() {
                key_parts.push(open.keys);
                &starts[..starts.len() - 1]
            } else {
                &starts[..starts.len() - 1]
            };
            let idx =
                arrow_array::UInt32Array::from_iter_values(new_starts.iter().map(|&s| s as u32));
            let taken: Vec<ArrayRef> = keys
                .iter()
                .map(|k| arrow_select::take::take(k.as_ref(), &idx, None))
                .collect::<std::result::Result<_, _>>()?;
            key_parts.push(taken);
            let keys_out = concat_parts(&key_parts, keys.len())?;
            Some(self.emit(keys_out, EmitTo::First(done))?)
        } else {
            None
        };
        let last = n - 1;
        let last_start = *starts.last().unwrap_or(&0);
        if self.open.is_none() || done > 0 {
            self.open = Some(OpenGroup {
                row: rows.row(last).owned(),
                keys: keys.iter().map(|k| k.slice(last_start, 1)).collect(),
            });
        }
        Ok(out)
    }

    /// Hands out the open group, if any.
    pub fn finish(&mut self) -> Result<Option<RecordBatch>> {
        match self.open.take() {
            Some(open) => Ok(Some(self.emit(open.keys, EmitTo::All)?)),
            None => Ok(None),
        }
    }

    fn emit(&mut self, mut columns: Vec<ArrayRef>, emit: EmitTo) -> Result<RecordBatch> {
        let n = columns.first().map_or(0, |c| c.len());
        for slot in &mut self.slots {
            if slot.emit_final {
                columns.push(slot.acc.evaluate(emit)?);
            } else {
                columns.extend(slot.acc.state(emit)?);
            }
        }
        let options = RecordBatchOptions::new().with_row_count(Some(n));
        Ok(RecordBatch::try_new_with_options(
            self.output_schema.clone(),
            columns,
            &options,
        )?)
    }
}

fn concat_parts(parts: &[Vec<ArrayRef>], width: usize) -> Result<Vec<ArrayRef>> {
    (0..width)
        .map(|c| {
            let arrays: Vec<&dyn arrow_array::Array> =
                parts.iter().map(|p| p[c].as_ref()).collect();
            if arrays.len() == 1 {
                Ok(parts[0][c].clone())
            } else {
                Ok(arrow_select::concat::concat(&arrays)?)
            }
        })
        .collect()
}
