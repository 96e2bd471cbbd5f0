//! A batch of records to a batch of the scan's output: fields converted one at a time with
//! the pushed conjuncts checked as soon as their fields are converted, then the parse mode,
//! the corrupt-record column, partition columns, the whole filter and the output's shape.
//!
//! ```text
//!   records --field order[0] converted--> conjuncts placed at step 0 drop rows
//!           --field order[1] converted (surviving rows only)--> conjuncts at step 1 ...
//!           --> mode (malformed rows kept / dropped / an error), corrupt-record column
//!           --> partition columns, the whole filter again, the requested columns
//! ```
//!
//! CSV converts in file order, so a conjunct sits at the position of its last field, as
//! Spark's `OrderedFilters` places it. A JSON record's fields come in any order, and Spark
//! checks a predicate once all its fields are converted (`JsonFilters`); converting the
//! filters' fields first gives each predicate its earliest place.

use std::sync::Arc;

use arrow_array::{new_null_array, Array, ArrayRef, BooleanArray, RecordBatch, StringArray};
use arrow_schema::{DataType, Field, Schema, SchemaRef};
use ferrospark_common::{FerroError, Result};
use ferrospark_expr::{bind_predicate, evaluate_predicate, BindContext, Expr, PhysicalExpr};

use super::stream::RawRows;
use super::{FileScanPlan, ParseMode};

/// How a scan's records become its output, decided once per stream.
#[derive(Debug)]
pub(crate) struct Assembler {
    /// Data fields converted, in file order: those the output or the filter reads.
    pub needed: Vec<usize>,
    /// Positions in `needed`, in the order fields convert.
    order: Vec<usize>,
    /// Conjuncts checked after step `.0` of `order`.
    pushed: Vec<(usize, PhysicalExpr)>,
    /// The whole filter over `needed` fields then partition columns.
    post: Option<PhysicalExpr>,
    /// With the filter's fields converted first: the step after which every pushed conjunct
    /// has been checked, when the rows read the rest of their records; and those fields.
    finish_after: Option<usize>,
    early: Vec<usize>,
    /// Schema of the converted fields then partition columns.
    work: SchemaRef,
}

impl Assembler {
    /// Plans the conversion of `plan`'s records; `filter_first` converts the filter's fields
    /// before the others.
    pub fn new(plan: &FileScanPlan, filter_first: bool) -> Result<Self> {
        let data = &plan.data;
        let refs: Vec<String> = plan
            .filter
            .as_ref()
            .map(|f| f.column_refs())
            .unwrap_or_default();
        let wanted = |name: &str| {
            plan.output.fields().iter().any(|f| f.name() == name)
                || refs.iter().any(|r| r.eq_ignore_ascii_case(name))
        };
        let needed: Vec<usize> = (0..data.fields().len())
            .filter(|&i| wanted(data.field(i).name()))
            .collect();
        let mut fields: Vec<Field> = needed.iter().map(|&i| data.field(i).clone()).collect();
        fields.extend(plan.listing.partition_fields.iter().cloned());
        let work = Arc::new(Schema::new(fields));
        let bctx = BindContext::for_session(&work, &plan.cfg);
        let post = plan
            .filter
            .as_ref()
            .map(|f| bind_predicate(f, &bctx))
            .transpose()?;
        let position = |name: &str| {
            needed
                .iter()
                .position(|&i| data.field(i).name().eq_ignore_ascii_case(name))
        };
        let parts: Vec<&Expr> = match (&plan.filter, plan.pushdown) {
            (Some(f), true) => f.conjuncts(),
            _ => Vec::new(),
        };
        // Conjuncts over partition columns (or none) wait for the whole filter.
        let placed: Vec<(Vec<usize>, &Expr)> = parts
            .into_iter()
            .filter_map(|c| {
                let cols: Option<Vec<usize>> =
                    c.column_refs().iter().map(|n| position(n)).collect();
                cols.filter(|p| !p.is_empty()).map(|p| (p, c))
            })
            .collect();
        let mut order: Vec<usize> = Vec::with_capacity(needed.len());
        if filter_first {
            for (cols, _) in &placed {
                for &p in cols {
                    if !order.contains(&p) {
                        order.push(p);
                    }
                }
            }
        }
        for p in 0..needed.len() {
            if !order.contains(&p) {
                order.push(p);
            }
        }
        let pushed = placed
            .into_iter()
            .map(|(cols, c)| {
                let step = cols
                    .iter()
                    .filter_map(|p| order.iter().position(|o| o == p))
                    .max()
                    .unwrap_or(0);
                Ok((step, bind_predicate(c, &bctx)?))
            })
            .collect::<Result<Vec<_>>>()?;
        let finish_after = if filter_first {
            pushed.iter().map(|(s, _)| *s).max()
        } else {
            None
        };
        let early = finish_after.map_or(Vec::new(), |f| order[..=f].to_vec());
        Ok(Self {
            needed,
            order,
            pushed,
            post,
            finish_after,
            early,
            work,
        })
    }

    /// Positions in `needed` of the fields to read before a record's row can be dropped
    /// (empty: read whole records).
    pub fn early(&self) -> &[usize] {
        &self.early
    }

    /// Keeps the rows of `mask` in every converted column.
    fn retain_columns(converted: &mut [Option<ArrayRef>], mask: &BooleanArray) -> Result<()> {
        for c in converted.iter_mut().flatten() {
            *c = arrow_select::filter::filter(c.as_ref(), mask)?;
        }
        Ok(())
    }

    /// Checks the conjuncts placed at `step`, dropping the rows that fail them from `rows`,
    /// the columns converted so far and `malformed`.
    fn check_pushed<R: RawRows>(
        &self,
        step: usize,
        plan: &FileScanPlan,
        rows: &mut R,
        converted: &mut [Option<ArrayRef>],
        malformed: &mut Vec<bool>,
    ) -> Result<()> {
        let here: Vec<&PhysicalExpr> = self
            .pushed
            .iter()
            .filter(|(s, _)| *s == step)
            .map(|(_, p)| p)
            .collect();
        if here.is_empty() {
            return Ok(());
        }
        let n = rows.len();
        let probe: Vec<ArrayRef> = self
            .work
            .fields()
            .iter()
            .enumerate()
            .map(|(i, f)| match converted.get(i) {
                Some(Some(c)) => c.clone(),
                _ => new_null_array(f.data_type(), n),
            })
            .collect();
        let batch = RecordBatch::try_new_with_options(
            self.work.clone(),
            probe,
            &arrow_array::RecordBatchOptions::new().with_row_count(Some(n)),
        )?;
        let mut pass = vec![true; n];
        for p in here {
            let ok = evaluate_predicate(p, &batch)?;
            for (r, v) in pass.iter_mut().enumerate() {
                *v &= ok.is_valid(r) && ok.value(r);
            }
        }
        let dropped = pass.iter().filter(|v| !**v).count();
        if dropped == 0 {
            return Ok(());
        }
        plan.metrics.add("rows_skipped_early", dropped as u64);
        plan.metrics.add(
            "fields_not_converted",
            (dropped * (self.order.len() - step - 1)) as u64,
        );
        Self::retain_columns(converted, &BooleanArray::from(pass.clone()))?;
        rows.retain(&pass);
        let mut it = pass.iter();
        malformed.retain(|_| *it.next().unwrap_or(&false));
        Ok(())
    }

    /// The output batch of `rows`, records of file `file` of `plan` whose text is `text`.
    pub fn batch<R: RawRows>(
        &self,
        plan: &FileScanPlan,
        file: usize,
        text: &[u8],
        mut rows: R,
    ) -> Result<RecordBatch> {
        let m = &plan.metrics;
        m.add("rows_read", rows.len() as u64);
        let mut malformed = rows.malformed();
        let mut converted: Vec<Option<ArrayRef>> = vec![None; self.needed.len()];
        for (step, &k) in self.order.iter().enumerate() {
            let to = plan.data.field(self.needed[k]).data_type();
            let (array, bad) = rows.convert(text, k, to, &plan.cfg)?;
            for (row, b) in bad.into_iter().enumerate() {
                malformed[row] |= b;
            }
            converted[k] = Some(array);
            self.check_pushed(step, plan, &mut rows, &mut converted, &mut malformed)?;
            if Some(step) == self.finish_after {
                rows.finish(text);
                for (m, r) in malformed.iter_mut().zip(rows.malformed()) {
                    *m |= r;
                }
            }
        }
        let n = rows.len();
        let lost = rows.values_lost();
        if lost.iter().any(|l| *l) {
            let mask: BooleanArray = lost.iter().map(|l| Some(*l)).collect();
            for c in converted.iter_mut().flatten() {
                *c = arrow_select::nullif::nullif(c.as_ref(), &mask)?;
            }
        }
        for r in 1..n {
            if rows.record(r) == rows.record(r - 1) && (malformed[r] || malformed[r - 1]) {
                let rec = rows.record(r);
                let mut k = r;
                while k > 0 && rows.record(k - 1) == rec {
                    k -= 1;
                }
                while k < n && rows.record(k) == rec {
                    malformed[k] = true;
                    k += 1;
                }
            }
        }
        let bad_rows = malformed.iter().filter(|b| **b).count();
        m.add("malformed_rows", bad_rows as u64);
        if plan.mode == ParseMode::FailFast && bad_rows > 0 {
            let at = malformed.iter().position(|b| *b).unwrap_or(0);
            return Err(FerroError::Malformed {
                path: plan.listing.files[file].path.clone(),
                line: rows.line(at),
                message: format!(
                    "[MALFORMED_RECORD_IN_PARSING.WITHOUT_SUGGESTION] Malformed records are detected in record parsing: [{}]. Parse Mode: FAILFAST. To process malformed records as null result, try setting the option 'mode' as 'PERMISSIVE'.",
                    rows.text(text, at)
                ),
            });
        }
        let mut corrupt: Option<ArrayRef> = plan.corrupt.map(|_| {
            Arc::new(
                (0..n)
                    .map(|r| malformed[r].then(|| rows.text(text, r)))
                    .collect::<StringArray>(),
            ) as ArrayRef
        });
        let mut work_cols: Vec<ArrayRef> = converted
            .into_iter()
            .zip(self.work.fields().iter())
            .map(|(c, f)| c.unwrap_or_else(|| new_null_array(f.data_type(), n)))
            .collect();
        for s in &plan.listing.partition_scalars(file)? {
            let idx = arrow_array::UInt32Array::from(vec![0u32; n]);
            work_cols.push(arrow_select::take::take(s.as_ref(), &idx, None)?);
        }
        let mut batch = RecordBatch::try_new_with_options(
            self.work.clone(),
            work_cols,
            &arrow_array::RecordBatchOptions::new().with_row_count(Some(n)),
        )?;
        let mut keep = |batch: &mut RecordBatch, mask: &BooleanArray| -> Result<()> {
            *batch = arrow_select::filter::filter_record_batch(batch, mask)?;
            if let Some(c) = corrupt.as_mut() {
                *c = arrow_select::filter::filter(c.as_ref(), mask)?;
            }
            Ok(())
        };
        if plan.mode == ParseMode::DropMalformed && bad_rows > 0 {
            let mask: BooleanArray = malformed.iter().map(|b| Some(!b)).collect();
            keep(&mut batch, &mask)?;
        }
        if let Some(post) = &self.post {
            let ok = evaluate_predicate(post, &batch)?;
            let mask: BooleanArray = (0..ok.len())
                .map(|r| Some(ok.is_valid(r) && ok.value(r)))
                .collect();
            keep(&mut batch, &mask)?;
        }
        let columns: Vec<ArrayRef> = plan
            .output
            .fields()
            .iter()
            .enumerate()
            .map(|(i, f)| {
                if Some(i) == plan.corrupt {
                    return Ok(corrupt
                        .clone()
                        .unwrap_or_else(|| new_null_array(&DataType::Utf8, batch.num_rows())));
                }
                let at = self
                    .work
                    .fields()
                    .iter()
                    .position(|w| w.name() == f.name())
                    .ok_or_else(|| FerroError::Internal(format!("no column {}", f.name())))?;
                Ok(batch.column(at).clone())
            })
            .collect::<Result<Vec<_>>>()?;
        let out = RecordBatch::try_new_with_options(
            plan.output.clone(),
            columns,
            &arrow_array::RecordBatchOptions::new().with_row_count(Some(batch.num_rows())),
        )?;
        m.add("output_rows", out.num_rows() as u64);
        Ok(out)
    }
}
