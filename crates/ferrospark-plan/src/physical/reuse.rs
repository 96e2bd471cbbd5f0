//! Reusing a result a query computes twice: Spark's `ReuseExchangeAndSubquery`. TPC-H Q15
//! reads its `revenue` view twice, once to join suppliers and once for the top revenue, and
//! each read aggregates three months of lineitem; the second read should cost nothing.
//!
//! Before planning, [`find_reusable`] looks for aggregations that occur more than once in
//! the optimized plan: equal but for attribute ids, over the same Parquet files, with only
//! deterministic expressions. Each occurrence becomes a [`ReuseExec`] over the physical plan
//! of the first one. Whichever occurrence runs first computes the result and keeps it (in the
//! query's [`ReusedResults`], reserved from its memory pool) for the others; when the pool
//! refuses the memory, every occurrence computes its own.
//!
//! A runtime filter never passes into a reused result: it would narrow the rows every other
//! occurrence reads.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::{Arc, Mutex};

use arrow_array::RecordBatch;
use arrow_schema::SchemaRef;
use ferrospark_common::{FerroError, MemoryReservation, MetricValue, MetricsSet, Result};

use super::{collect_parallel, counted, metrics_with, BatchStream, ExecutionPlan, TaskContext};
use crate::logical::{explain_logical, LogicalPlan, ScanSource};
use crate::optimizer::same_by_text;

/// A result kept for the occurrences that run after the first, with its memory.
#[derive(Debug)]
pub struct Kept {
    batches: Arc<Vec<RecordBatch>>,
    _memory: MemoryReservation,
}

/// One reusable result's state in a run.
#[derive(Debug, Default)]
pub enum Slot {
    /// No occurrence has run yet.
    #[default]
    Pending,
    /// Computed and kept.
    Kept(Kept),
    /// The pool refused to keep it: each occurrence computes its own.
    Declined,
}

/// One run's state of each thing a query computes once for several operators, by id: a
/// reused result here, a shared read in [`super::shared_scan`].
#[derive(Debug)]
pub struct Slots<S>(Mutex<HashMap<usize, Arc<Mutex<S>>>>);

impl<S> Default for Slots<S> {
    fn default() -> Self {
        Self(Mutex::new(HashMap::new()))
    }
}

impl<S: Default> Slots<S> {
    /// The state of `id`, created on first use.
    pub(crate) fn slot(&self, id: usize) -> Result<Arc<Mutex<S>>> {
        let mut m = self
            .0
            .lock()
            .map_err(|_| FerroError::Internal("reuse slots poisoned".into()))?;
        Ok(m.entry(id).or_default().clone())
    }
}

/// The results a query run keeps for reuse, by reuse id.
pub type ReusedResults = Slots<Slot>;

/// The text of `plan` with attribute ids numbered by first appearance, so two occurrences
/// of one view print alike; `None` when `plan` reads anything but Parquet files or holds
/// a nondeterministic expression.
fn canonical_text(plan: &LogicalPlan) -> Option<String> {
    let mut sources = Vec::new();
    let mut ok = true;
    let mut stack = vec![plan];
    while let Some(p) = stack.pop() {
        ok &= p.expressions().into_iter().all(same_by_text);
        if let LogicalPlan::Scan { source, .. } = p {
            match source {
                ScanSource::Parquet { paths, .. } => sources.push(format!("{paths:?}")),
                ScanSource::Memory { .. }
                | ScanSource::External { .. }
                | ScanSource::Files { .. } => ok = false,
            }
        }
        stack.extend(p.children().into_iter().map(|c| c.as_ref()));
    }
    if !ok {
        return None;
    }
    let text = explain_logical(plan);
    let mut out = String::with_capacity(text.len());
    let mut ids: HashMap<&str, usize> = HashMap::new();
    let mut rest = text.as_str();
    while let Some(at) = rest.find('#') {
        out.push_str(&rest[..=at]);
        let digits = rest[at + 1..]
            .find(|c: char| !c.is_ascii_digit())
            .unwrap_or(rest.len() - at - 1);
        // A `#` without digits (inside a literal) is text, not an attribute id.
        if digits > 0 {
            let id = &rest[at + 1..at + 1 + digits];
            let next = ids.len();
            out.push_str(&ids.entry(id).or_insert(next).to_string());
        }
        rest = &rest[at + 1 + digits..];
    }
    out.push_str(rest);
    out.push_str(&sources.join(";"));
    Some(out)
}

/// The reuse key of an aggregation worth reusing, if `plan` is one.
fn reuse_key(plan: &LogicalPlan) -> Option<String> {
    matches!(plan, LogicalPlan::Aggregate { .. })
        .then(|| canonical_text(plan))
        .flatten()
}

/// The aggregations a plan repeats: each occurrence, by the address of its node in that
/// plan, with the reuse id of its result.
#[derive(Debug, Default)]
pub struct Reusable {
    occurrences: HashMap<*const LogicalPlan, usize>,
}

impl Reusable {
    /// How many results are reused.
    pub fn len(&self) -> usize {
        self.occurrences.values().collect::<HashSet<_>>().len()
    }

    /// Whether nothing is reused.
    pub fn is_empty(&self) -> bool {
        self.occurrences.is_empty()
    }

    /// The reuse id of `node`, when it is an occurrence of a reused result.
    pub fn id_of(&self, node: &LogicalPlan) -> Option<usize> {
        self.occurrences.get(&(node as *const LogicalPlan)).copied()
    }
}

/// The aggregations occurring more than once in `plan`. The inside of a repeated aggregation
/// counts once: only its first occurrence is planned.
pub fn find_reusable(plan: &LogicalPlan) -> Reusable {
    fn walk<'a>(p: &'a LogicalPlan, seen: &mut BTreeMap<String, Vec<&'a LogicalPlan>>) {
        if let Some(key) = reuse_key(p) {
            let nodes = seen.entry(key).or_default();
            nodes.push(p);
            if nodes.len() > 1 {
                return;
            }
        }
        for c in p.children() {
            walk(c, seen);
        }
    }
    // Ordered by key, so the ids are the same from run to run.
    let mut seen = BTreeMap::new();
    walk(plan, &mut seen);
    let mut out = Reusable::default();
    let repeated = seen.into_values().filter(|n| n.len() > 1);
    for (id, nodes) in repeated.enumerate() {
        for n in nodes {
            out.occurrences.insert(n as *const LogicalPlan, id);
        }
    }
    out
}

/// One occurrence of a reused result.
#[derive(Debug)]
pub struct ReuseExec {
    /// The physical plan of the first occurrence, shared by all.
    input: Arc<dyn ExecutionPlan>,
    /// The reuse id.
    id: usize,
    /// This occurrence's output schema (its own attribute ids).
    schema: SchemaRef,
    /// Whether this is the first occurrence planned (it shows the plan; others refer to it).
    first: bool,
    metrics: MetricsSet,
}

impl ReuseExec {
    /// Occurrence `first` or a later one of reused result `id` computed by `input`.
    pub fn new(input: Arc<dyn ExecutionPlan>, id: usize, schema: SchemaRef, first: bool) -> Self {
        Self {
            input,
            id,
            schema,
            first,
            metrics: metrics_with(&[
                ("results_kept", MetricValue::Count),
                ("results_recomputed", MetricValue::Count),
            ]),
        }
    }

    fn renamed(&self, b: &RecordBatch) -> Result<RecordBatch> {
        Ok(RecordBatch::try_new(
            self.schema.clone(),
            b.columns().to_vec(),
        )?)
    }
}

impl ExecutionPlan for ReuseExec {
    fn name(&self) -> String {
        if self.first {
            "ReusableResult"
        } else {
            "ReusedExchange"
        }
        .into()
    }
    fn describe(&self) -> String {
        if self.first {
            format!("id={}", self.id)
        } else {
            let cols = super::field_names(&self.schema);
            format!(
                "[{}], id={} (the result of ReusableResult id={})",
                cols.join(", "),
                self.id,
                self.id
            )
        }
    }
    fn schema(&self) -> SchemaRef {
        self.schema.clone()
    }
    fn children(&self) -> Vec<Arc<dyn ExecutionPlan>> {
        if self.first {
            vec![self.input.clone()]
        } else {
            vec![]
        }
    }
    fn execute(&self, ctx: &Arc<TaskContext>) -> Result<BatchStream> {
        let slot = ctx.reused.slot(self.id)?;
        let mut state = slot
            .lock()
            .map_err(|_| FerroError::Internal("reused result poisoned".into()))?;
        let batches = match &*state {
            Slot::Kept(k) => k.batches.clone(),
            Slot::Declined => {
                // Nothing to share: compute this occurrence without holding the slot.
                drop(state);
                self.metrics.add("results_recomputed", 1);
                Arc::new(collect_parallel(&self.input, ctx)?)
            }
            // The first occurrence computes with the slot held, so the others wait for it.
            Slot::Pending => {
                let batches = Arc::new(collect_parallel(&self.input, ctx)?);
                let bytes: usize = batches.iter().map(ferrospark_common::batch_bytes).sum();
                let mut memory = ctx
                    .pool
                    .reservation(format!("ReusableResult id={}", self.id));
                *state = if memory.try_grow(bytes as u64) {
                    self.metrics.add("results_kept", 1);
                    Slot::Kept(Kept {
                        batches: batches.clone(),
                        _memory: memory,
                    })
                } else {
                    Slot::Declined
                };
                batches
            }
        };
        let out: Vec<Result<RecordBatch>> = batches.iter().map(|b| self.renamed(b)).collect();
        Ok(counted(Box::new(out.into_iter()), self.metrics.clone()))
    }
    fn metrics(&self) -> &MetricsSet {
        &self.metrics
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use arrow_array::{Int64Array, RecordBatch, StringArray};
    use arrow_schema::{DataType, Field, Schema};
    use ferrospark_common::Config;

    use super::*;
    use crate::physical::explain_physical;
    use crate::physical::scan::MemoryScanExec;
    use crate::sql::SqlStatement;
    use crate::QueryEngine;

    fn parquet_dir() -> tempfile::TempDir {
        let dir = tempfile::tempdir().expect("tempdir");
        let schema = Arc::new(Schema::new(vec![
            Field::new("k", DataType::Utf8, true),
            Field::new("v", DataType::Int64, true),
        ]));
        let batch = RecordBatch::try_new(
            schema.clone(),
            vec![
                Arc::new(StringArray::from(vec![
                    Some("a"),
                    None,
                    Some("é"),
                    Some("a"),
                ])),
                Arc::new(Int64Array::from(vec![Some(1), Some(2), None, Some(4)])),
            ],
        )
        .expect("batch");
        let file = std::fs::File::create(dir.path().join("t.parquet")).expect("create");
        let mut w = parquet::arrow::ArrowWriter::try_new(file, schema, None).expect("writer");
        w.write(&batch).expect("write");
        w.close().expect("close");
        dir
    }

    fn optimized(e: &QueryEngine, sql: &str) -> Arc<LogicalPlan> {
        let SqlStatement::Query(p) = e.sql(sql).expect("plans") else {
            panic!("not a query")
        };
        e.optimize(&p).expect("optimizes").0
    }

    #[test]
    fn an_aggregation_repeated_but_for_ids_is_found_once() {
        let dir = parquet_dir();
        let path = dir.path().join("t.parquet");
        let e = QueryEngine::new(Config::default());
        let view = format!(
            "SELECT k, sum(v) AS s FROM parquet.`{}` GROUP BY k",
            path.display()
        );
        let twice = format!(
            "WITH r AS ({view}) SELECT a.k, a.s, b.top FROM r a JOIN (SELECT max(s) AS top FROM r) b ON a.s = b.top"
        );
        let plan = optimized(&e, &twice);
        assert_eq!(find_reusable(&plan).len(), 1, "{}", explain_logical(&plan));
        let result = e.execute(&plan).expect("runs");
        let rows: usize = result.stream.map(|b| b.expect("batch").num_rows()).sum();
        assert_eq!(rows, 1);
        let text = explain_physical(&result.physical, true);
        assert!(
            text.contains("ReusedExchange") && text.contains("results_kept=1"),
            "{text}"
        );
        assert_eq!(text.matches("FileScan parquet").count(), 1, "{text}");
        // Different filters are not the same result.
        let differing = format!(
            "SELECT * FROM ({view}) a JOIN (SELECT k, sum(v) AS s FROM parquet.`{}` WHERE v > 1 GROUP BY k) b ON a.k = b.k",
            path.display()
        );
        assert!(find_reusable(&optimized(&e, &differing)).is_empty());
    }

    #[test]
    fn a_result_the_pool_cannot_hold_is_computed_by_each_occurrence() {
        let schema = Arc::new(Schema::new(vec![Field::new("x#1", DataType::Int64, false)]));
        let batch = RecordBatch::try_new(
            schema.clone(),
            vec![Arc::new(Int64Array::from((0..1000).collect::<Vec<i64>>()))],
        )
        .expect("batch");
        let scan: Arc<dyn ExecutionPlan> = Arc::new(MemoryScanExec::new(
            Arc::new(vec![batch]),
            vec![0],
            None,
            schema.clone(),
            schema.clone(),
        ));
        let other = Arc::new(Schema::new(vec![Field::new("x#2", DataType::Int64, false)]));
        for (limit, kept) in [(None, true), (Some("1k"), false)] {
            let mut cfg = Config::default();
            if let Some(l) = limit {
                cfg.set(ferrospark_common::config::MEMORY_LIMIT, l)
                    .expect("set");
            }
            let ctx = Arc::new(TaskContext::new(&cfg).expect("context"));
            let first = ReuseExec::new(scan.clone(), 0, schema.clone(), true);
            let second = ReuseExec::new(scan.clone(), 0, other.clone(), false);
            for occurrence in [&first, &second] {
                let batches: Vec<RecordBatch> = occurrence
                    .execute(&ctx)
                    .expect("runs")
                    .collect::<Result<_>>()
                    .expect("batches");
                assert_eq!(batches.iter().map(|b| b.num_rows()).sum::<usize>(), 1000);
                assert_eq!(batches[0].schema(), occurrence.schema());
            }
            assert_eq!(first.metrics().get("results_kept"), u64::from(kept));
            assert_eq!(second.metrics().get("results_recomputed"), u64::from(!kept));
        }
    }
}
