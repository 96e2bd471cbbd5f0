//! Planning an aggregation the way Spark's `AggUtils` does: a partial step where the input
//! is, an exchange on the keys, a final step; and for distinct aggregates four steps (partial
//! and partial-merge grouped by keys + distinct values, then partial and final grouped by the
//! keys).

use std::sync::Arc;

use arrow_array::RecordBatch;
use arrow_schema::{Schema, SchemaRef};
use ferrospark_common::workers::try_run_each;
use ferrospark_common::{Config, FerroError, MetricsSet, Result};
use ferrospark_expr::{bind, BindContext, Expr, PhysicalExpr};

use crate::exchange::hash_partition;
use crate::exec::{AggregateOptions, GroupKey, HashAggregateExec};
use crate::functions::{AggregateCall, AggregateExpr, AggregateMode};

/// One aggregation step: keys and aggregates bound to the step's input.
#[derive(Debug, Clone)]
pub struct AggregateStage {
    /// The schema the step reads.
    pub input_schema: SchemaRef,
    /// Grouping keys.
    pub keys: Vec<GroupKey>,
    /// Aggregates with their modes.
    pub aggs: Vec<AggregateExpr>,
    /// When the output must be hash-partitioned before the next step: on its first this-many
    /// columns (Spark's `Exchange hashpartitioning`).
    pub exchange_keys: Option<usize>,
}

impl AggregateStage {
    /// The operator for this step.
    pub fn exec(&self, options: AggregateOptions) -> Result<HashAggregateExec> {
        HashAggregateExec::try_new(
            &self.input_schema,
            self.keys.clone(),
            self.aggs.clone(),
            options,
        )
    }

    fn output_schema(&self) -> Result<SchemaRef> {
        Ok(self.exec(AggregateOptions::default())?.output_schema())
    }

    /// A one-line summary in the style of Spark's physical plan.
    pub fn describe(&self) -> String {
        let modes: Vec<String> = self
            .aggs
            .iter()
            .map(|a| {
                let m = match a.mode {
                    AggregateMode::Partial => "partial_",
                    AggregateMode::PartialMerge => "merge_",
                    AggregateMode::Final | AggregateMode::Complete => "",
                };
                format!("{m}{}", a.name)
            })
            .collect();
        let keys: Vec<&str> = self.keys.iter().map(|k| k.name.as_str()).collect();
        format!(
            "HashAggregate(keys=[{}], functions=[{}])",
            keys.join(", "),
            modes.join(", ")
        )
    }
}

/// The steps of one aggregation, first to last.
#[derive(Debug, Clone)]
pub struct AggregatePlan {
    /// The steps.
    pub stages: Vec<AggregateStage>,
    /// A distinct aggregation's last two steps as one complete step, for runs where no
    /// exchange separates them: in one process, over rows already distinct by keys and
    /// distinct values, the partial step by keys and its final merge are one step.
    pub complete_tail: Option<AggregateStage>,
}

/// Whether two schemas have the same column types, in order.
fn same_types(a: &Schema, b: &Schema) -> bool {
    a.fields().len() == b.fields().len()
        && a.fields()
            .iter()
            .zip(b.fields())
            .all(|(f, g)| f.data_type() == g.data_type())
}

fn column_key(schema: &Schema, i: usize) -> GroupKey {
    let f = schema.field(i);
    GroupKey {
        expr: PhysicalExpr::Column {
            index: i,
            name: f.name().clone(),
            data_type: f.data_type().clone(),
        },
        name: f.name().clone(),
    }
}

/// `agg` in `mode`, reading its states from `schema` starting at column `*at`.
fn merging(agg: &AggregateExpr, mode: AggregateMode, at: &mut usize) -> AggregateExpr {
    let mut a = agg.with_mode(mode);
    let w = agg.state_fields().len();
    a.state_columns = (*at..*at + w).collect();
    *at += w;
    a
}

impl AggregatePlan {
    /// Plans `GROUP BY by` computing `calls` over batches of `schema`.
    pub fn new(
        schema: &Schema,
        by: &[Expr],
        calls: &[AggregateCall],
        cfg: &Config,
    ) -> Result<Self> {
        let ansi = cfg.ansi_enabled()?;
        let tz = cfg.session_time_zone();
        let ctx = BindContext {
            schema,
            session_tz: tz,
            ansi,
            legacy_coding: false,
            legacy_charsets: false,
            decimal_precision_loss: true,
        };
        let keys = by
            .iter()
            .map(|e| {
                Ok(GroupKey {
                    expr: bind(e, &ctx)?,
                    name: e.output_name(),
                })
            })
            .collect::<Result<Vec<_>>>()?;
        let aggs = calls
            .iter()
            .map(|c| AggregateExpr::bind(c, schema, ansi, tz))
            .collect::<Result<Vec<_>>>()?;
        let input = Arc::new(schema.clone());
        let distinct: Vec<bool> = calls.iter().map(|c| c.distinct).collect();
        if !distinct.iter().any(|&d| d) {
            return Self::two_steps(input, keys, aggs);
        }
        Self::distinct_steps(input, keys, aggs, &distinct)
    }

    fn two_steps(input: SchemaRef, keys: Vec<GroupKey>, aggs: Vec<AggregateExpr>) -> Result<Self> {
        let nk = keys.len();
        let partial = AggregateStage {
            input_schema: input,
            keys,
            aggs: aggs
                .iter()
                .map(|a| a.with_mode(AggregateMode::Partial))
                .collect(),
            exchange_keys: Some(nk),
        };
        let mid = partial.output_schema()?;
        let mut at = nk;
        let last = AggregateStage {
            keys: (0..nk).map(|i| column_key(&mid, i)).collect(),
            aggs: aggs
                .iter()
                .map(|a| merging(a, AggregateMode::Final, &mut at))
                .collect(),
            input_schema: mid,
            exchange_keys: None,
        };
        Ok(Self {
            stages: vec![partial, last],
            complete_tail: None,
        })
    }

    fn distinct_steps(
        input: SchemaRef,
        keys: Vec<GroupKey>,
        aggs: Vec<AggregateExpr>,
        distinct: &[bool],
    ) -> Result<Self> {
        let nk = keys.len();
        // Spark plans one set of distinct arguments this way; several need an Expand.
        let mut dargs: Option<&Vec<PhysicalExpr>> = None;
        for (a, &d) in aggs.iter().zip(distinct) {
            if !d {
                continue;
            }
            match dargs {
                None => dargs = Some(&a.args),
                Some(prev) if prev == &a.args => {}
                Some(_) => {
                    // Several distinct argument sets: each distinct aggregate keeps its own
                    // set of values per group, in the ordinary two steps.
                    let aggs = aggs
                        .iter()
                        .zip(distinct)
                        .map(|(a, &d)| {
                            if d {
                                a.over_distinct_set()
                            } else {
                                Ok(a.clone())
                            }
                        })
                        .collect::<Result<Vec<_>>>()?;
                    return Self::two_steps(input, keys, aggs);
                }
            }
        }
        let dargs = dargs.cloned().unwrap_or_default();
        let nd = dargs.len();
        let plain: Vec<&AggregateExpr> = aggs
            .iter()
            .zip(distinct)
            .filter(|(_, &d)| !d)
            .map(|(a, _)| a)
            .collect();
        let mut keys0 = keys.clone();
        keys0.extend(dargs.iter().enumerate().map(|(i, e)| GroupKey {
            expr: e.clone(),
            name: format!("_distinct_{i}"),
        }));
        let s0 = AggregateStage {
            input_schema: input,
            keys: keys0,
            aggs: plain
                .iter()
                .map(|a| a.with_mode(AggregateMode::Partial))
                .collect(),
            exchange_keys: Some(nk + nd),
        };
        let o0 = s0.output_schema()?;
        let mut at = nk + nd;
        let s1 = AggregateStage {
            keys: (0..nk + nd).map(|i| column_key(&o0, i)).collect(),
            aggs: plain
                .iter()
                .map(|a| merging(a, AggregateMode::PartialMerge, &mut at))
                .collect(),
            input_schema: o0.clone(),
            exchange_keys: None,
        };
        let o1 = s1.output_schema()?;
        let mut at = nk + nd;
        let aggs2 = aggs
            .iter()
            .zip(distinct)
            .map(|(a, &d)| {
                if d {
                    let mut p = a.with_mode(AggregateMode::Partial);
                    p.args = (0..nd)
                        .map(|j| {
                            let f = o1.field(nk + j);
                            PhysicalExpr::Column {
                                index: nk + j,
                                name: f.name().clone(),
                                data_type: f.data_type().clone(),
                            }
                        })
                        .collect();
                    p
                } else {
                    merging(a, AggregateMode::PartialMerge, &mut at)
                }
            })
            .collect();
        let s2 = AggregateStage {
            keys: (0..nk).map(|i| column_key(&o1, i)).collect(),
            aggs: aggs2,
            input_schema: o1.clone(),
            exchange_keys: Some(nk),
        };
        let o2 = s2.output_schema()?;
        let mut at = nk;
        let s3 = AggregateStage {
            keys: (0..nk).map(|i| column_key(&o2, i)).collect(),
            aggs: aggs
                .iter()
                .map(|a| merging(a, AggregateMode::Final, &mut at))
                .collect(),
            input_schema: o2,
            exchange_keys: None,
        };
        let mut at = nk + nd;
        let tail = AggregateStage {
            keys: (0..nk).map(|i| column_key(&o1, i)).collect(),
            aggs: aggs
                .iter()
                .zip(distinct)
                .map(|(a, &d)| {
                    if d {
                        let mut c = a.with_mode(AggregateMode::Complete);
                        c.args = (0..nd).map(|j| column_key(&o1, nk + j).expr).collect();
                        c
                    } else {
                        merging(a, AggregateMode::Final, &mut at)
                    }
                })
                .collect(),
            input_schema: o1.clone(),
            exchange_keys: None,
        };
        // The tail reads the first step's output where a merge step is not needed (it must
        // have the merge step's layout) and stands for the last two steps.
        let fits =
            same_types(&o0, &o1) && same_types(&*tail.output_schema()?, &*s3.output_schema()?);
        let complete_tail = fits.then_some(tail);
        Ok(Self {
            stages: vec![s0, s1, s2, s3],
            complete_tail,
        })
    }

    /// The schema of the final output: keys, then one column per aggregate.
    pub fn output_schema(&self) -> Result<SchemaRef> {
        match self.stages.last() {
            Some(s) => s.output_schema(),
            None => Err(FerroError::Internal("empty aggregation plan".into())),
        }
    }

    /// Spark-style plan text, last step first.
    pub fn explain(&self) -> String {
        let mut out = String::new();
        for (depth, s) in self.stages.iter().rev().enumerate() {
            let pad = "   ".repeat(depth);
            out.push_str(&format!("{pad}+- {}\n", s.describe()));
            if let Some(k) = s.exchange_keys {
                let names: Vec<&str> = s.keys[..k.min(s.keys.len())]
                    .iter()
                    .map(|g| g.name.as_str())
                    .collect();
                out.push_str(&format!(
                    "{pad}   Exchange hashpartitioning({})\n",
                    names.join(", ")
                ));
            }
        }
        out
    }

    /// Runs the aggregation in this process over one stream of batches: non-distinct
    /// aggregations in one complete step, distinct ones through their steps in turn.
    pub fn run_complete(
        &self,
        input: impl IntoIterator<Item = Result<RecordBatch>>,
        cfg: &Config,
    ) -> Result<(Vec<RecordBatch>, Vec<MetricsSet>)> {
        self.run_complete_with(input, options_for(cfg)?)
    }

    /// [`AggregatePlan::run_complete`] with given operator options (a query's shared pool).
    pub fn run_complete_with(
        &self,
        input: impl IntoIterator<Item = Result<RecordBatch>>,
        options: AggregateOptions,
    ) -> Result<(Vec<RecordBatch>, Vec<MetricsSet>)> {
        if let [first, _] = self.stages.as_slice() {
            let complete = AggregateStage {
                aggs: first
                    .aggs
                    .iter()
                    .map(|a| a.with_mode(AggregateMode::Complete))
                    .collect(),
                exchange_keys: None,
                ..first.clone()
            };
            let (out, m) = complete.exec(options)?.run(input)?;
            return Ok((out, vec![m]));
        }
        let mut metrics = Vec::new();
        let first = self.first_stage()?.exec(options.clone())?;
        let (out, m) = first.run(input)?;
        metrics.push(m);
        if let Some(tail) = &self.complete_tail {
            // One producer: its output is already distinct by keys and distinct values.
            let (out, m) = tail.exec(options)?.run(out.into_iter().map(Ok))?;
            metrics.push(m);
            return Ok((out, metrics));
        }
        let (out, more) = self.run_after_first(out, &options)?;
        metrics.extend(more);
        Ok((out, metrics))
    }

    /// Runs the first step once per producer, in parallel (`produce` gets a factory of
    /// first-step operators and returns the operators it fed), then merges their outputs
    /// through the remaining steps. Metrics of the first step are summed over producers.
    pub fn run_parallel<P>(
        &self,
        cfg: &Config,
        produce: P,
    ) -> Result<(Vec<RecordBatch>, Vec<MetricsSet>)>
    where
        P: FnOnce(
            &(dyn Fn() -> Result<HashAggregateExec> + Sync),
        ) -> Result<Vec<HashAggregateExec>>,
    {
        self.run_parallel_with(options_for(cfg)?, cfg.scan_threads()?, produce)
    }

    /// [`AggregatePlan::run_parallel`] with given operator options and final-step threads.
    pub fn run_parallel_with<P>(
        &self,
        options: AggregateOptions,
        threads: usize,
        produce: P,
    ) -> Result<(Vec<RecordBatch>, Vec<MetricsSet>)>
    where
        P: FnOnce(
            &(dyn Fn() -> Result<HashAggregateExec> + Sync),
        ) -> Result<Vec<HashAggregateExec>>,
    {
        let first = self.first_stage()?;
        // Every producer's output is grouped again by the next step.
        let then_grouped = self.stages.len() > 1;
        let make = || {
            let exec = first.exec(options.clone())?;
            Ok(if then_grouped {
                exec.pass_through_when_unreduced()
            } else {
                exec
            })
        };
        let execs = produce(&make)?;
        let summed = MetricsSet::new(crate::exec::AGG_METRICS);
        let last_keys = self.stages.last().map_or(0, |s| s.keys.len());
        let parallel_rest = threads > 1 && last_keys > 0 && self.stages.len() > 1;
        // Each producer's first step is finished, and its output cut by the final keys, on
        // its own thread: a serial cut of every partial row took a sixth of TPC-H Q16.
        let parts_of = if parallel_rest { threads } else { 1 };
        let finished = try_run_each(execs, "an aggregation thread", |e: HashAggregateExec| {
            let (out, m) = e.run(std::iter::empty())?;
            let parts = if parts_of > 1 {
                hash_partition(&out, last_keys, parts_of)?
            } else {
                vec![out]
            };
            Ok((parts, m))
        })?;
        let mut parts: Vec<Vec<RecordBatch>> = vec![Vec::new(); parts_of];
        for (cut, m) in finished {
            for (name, v) in m.snapshot() {
                summed.add(name, v);
            }
            for (to, from) in parts.iter_mut().zip(cut) {
                to.extend(from);
            }
        }
        let (out, mut metrics) = if parallel_rest {
            // The steps after the first run on every thread, each owning some keys: the
            // final keys lead every step's output, so a group never spans two threads.
            let results = try_run_each(parts, "an aggregation thread", |part| {
                self.run_after_first(part, &options)
            })?;
            let summed_rest: Vec<MetricsSet> = (0..self.steps_after_first().len())
                .map(|_| MetricsSet::new(crate::exec::AGG_METRICS))
                .collect();
            let mut out = Vec::new();
            for (batches, ms) in results {
                for (to, m) in summed_rest.iter().zip(&ms) {
                    for (name, v) in m.snapshot() {
                        to.add(name, v);
                    }
                }
                out.extend(batches);
            }
            (out, summed_rest)
        } else {
            let partials = parts.into_iter().flatten().collect();
            self.run_after_first(partials, &options)?
        };
        metrics.insert(0, summed);
        Ok((out, metrics))
    }

    /// The first step.
    pub fn first_stage(&self) -> Result<&AggregateStage> {
        self.stages
            .first()
            .ok_or_else(|| FerroError::Internal("empty aggregation plan".into()))
    }

    /// The steps that run after the first in this process: the rest of the plan, or the
    /// merge step then the complete tail.
    fn steps_after_first(&self) -> Vec<&AggregateStage> {
        match &self.complete_tail {
            Some(tail) => self.stages.get(1).into_iter().chain([tail]).collect(),
            None => self.stages.iter().skip(1).collect(),
        }
    }

    /// Runs the steps after the first over the first step's output (of one producer or
    /// several).
    pub fn run_after_first(
        &self,
        input: Vec<RecordBatch>,
        options: &AggregateOptions,
    ) -> Result<(Vec<RecordBatch>, Vec<MetricsSet>)> {
        let mut metrics = Vec::new();
        let mut batches = input;
        for (i, stage) in self.steps_after_first().into_iter().enumerate() {
            let mut exec = stage.exec(options.clone())?;
            if i == 0 {
                // Merging the first step's partial states: each state row is at most one
                // group.
                exec.expect_groups(batches.iter().map(|b| b.num_rows()).sum())?;
            }
            let (out, m) = exec.run(batches.into_iter().map(Ok))?;
            metrics.push(m);
            batches = out;
        }
        Ok((batches, metrics))
    }
}

/// Operator options from a session configuration, with a pool of its memory limit.
pub fn options_for(cfg: &Config) -> Result<AggregateOptions> {
    let pool = ferrospark_common::MemoryPool::new(cfg.memory_limit()?);
    AggregateOptions::from_config(cfg, pool)
}
