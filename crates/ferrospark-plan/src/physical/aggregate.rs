//! `HashAggregate`: the aggregation engine of `ferrospark-agg` behind the operator trait.
//! Over a Parquet scan it runs fused: one partial aggregation per scan thread, then the final
//! step on every thread (Spark's partial / final split without an exchange in between).

use std::sync::{Arc, Mutex};

use arrow_array::RecordBatch;
use arrow_schema::{DataType, SchemaRef};
use ferrospark_agg::{AggregateCall, AggregateExpr, AggregateOptions, AggregatePlan, AGG_METRICS};
use ferrospark_common::{Config, MetricsSet, Result};
use ferrospark_expr::Expr;

use super::basic::passthrough_column;
use super::pipeline::{FnOp, Pipeline, PipelineSource};
use super::runtime_filter::Target;
use super::scan::rename;
use super::{counted, metrics_with, BatchStream, ExecutionPlan, TaskContext};
use crate::logical::{attrs_schema, expr_text, AggCall, Attr};

/// The engine's call for a logical aggregate call, output named `key`.
pub fn engine_call(call: &AggCall, key: Option<&str>) -> AggregateCall {
    AggregateCall {
        name: call.name.clone(),
        args: call.args.clone(),
        distinct: call.distinct,
        ignore_nulls: call.ignore_nulls,
        alias: key.map(str::to_string),
    }
}

/// Spark's result type of `call` over `input`.
pub fn agg_result_type(call: &AggCall, input: &[Attr], cfg: &Config) -> Result<DataType> {
    let schema = attrs_schema(input);
    let e = AggregateExpr::bind(
        &engine_call(call, None),
        &schema,
        cfg.ansi_enabled()?,
        cfg.session_time_zone(),
    )?;
    Ok(e.result_type())
}

/// When the aggregation reads a bare scan, the string keys it can group on dictionary codes
/// come out of the scan dictionary-encoded (Parquet's dictionary pages become the arrays'
/// dictionaries), so no key string is materialised per row.
pub(crate) fn dictionary_keys(
    p: &mut Pipeline,
    first: &ferrospark_agg::HashAggregateExec,
    in_schema: &SchemaRef,
) -> Result<()> {
    let columns = first.dictionary_input_columns();
    let (PipelineSource::Parquet(reader), Some(metrics)) = (&p.source, &mut p.scan_metrics) else {
        return Ok(());
    };
    if columns.is_empty() || !p.bare {
        return Ok(());
    }
    let scan = reader.with_dictionary_output(&columns)?;
    let target = crate::conform::with_dictionary_columns(&scan.schema(), in_schema);
    metrics.0 = scan.metrics().clone();
    let m = metrics.1.clone();
    p.source = PipelineSource::Parquet(scan);
    p.ops = vec![Arc::new(move || {
        let target = target.clone();
        Ok(FnOp::boxed(
            move |b, out| {
                out.push(crate::conform::conform(b, &target)?);
                Ok(())
            },
            m.clone(),
        ))
    })];
    Ok(())
}

/// `HashAggregate(keys, functions)` in complete mode (or partial + final fused into a scan).
#[derive(Debug)]
pub struct HashAggregateExec {
    /// Input.
    pub input: Arc<dyn ExecutionPlan>,
    /// Grouping expressions, each aliased to its output key.
    pub group: Vec<Expr>,
    /// Aggregate calls, each aliased to its output key.
    pub calls: Vec<AggregateCall>,
    /// Output schema.
    pub schema: SchemaRef,
    metrics: MetricsSet,
    steps: Mutex<String>,
}

impl HashAggregateExec {
    /// An aggregation of `input`.
    pub fn new(
        input: Arc<dyn ExecutionPlan>,
        group: Vec<Expr>,
        calls: Vec<AggregateCall>,
        schema: SchemaRef,
    ) -> Self {
        Self {
            input,
            group,
            calls,
            schema,
            metrics: metrics_with(AGG_METRICS),
            steps: Mutex::new(String::new()),
        }
    }

    fn run(&self, ctx: &Arc<TaskContext>) -> Result<Vec<RecordBatch>> {
        let in_schema = self.input.schema();
        let plan = AggregatePlan::new(&in_schema, &self.group, &self.calls, &ctx.cfg)?;
        let options = AggregateOptions::from_config(&ctx.cfg, ctx.pool.clone())?;
        let (out, metrics) = match self.input.pipeline(ctx)? {
            // Each scan thread runs the streaming operators below and its own partial step.
            Some(mut p) => {
                let first = plan.first_stage()?.exec(options.clone())?;
                dictionary_keys(&mut p, &first, &in_schema)?;
                plan.run_parallel_with(options, ctx.cfg.scan_threads()?, |make| {
                    p.run(make, |exec, b| exec.push(&b))
                })?
            }
            None => {
                let input = self.input.execute(ctx)?;
                plan.run_complete_with(input, options)?
            }
        };
        self.record_steps(&metrics);
        if let Ok(mut s) = self.steps.lock() {
            *s = format!("{} step(s)", metrics.len());
        }
        out.into_iter().map(|b| rename(b, &self.schema)).collect()
    }
}

impl HashAggregateExec {
    /// The steps' metrics as one operator's: rows in are the first step's, groups the last
    /// step's, peak memory the highest step's; spills, fallbacks and time add up.
    fn record_steps(&self, steps: &[MetricsSet]) {
        let last = steps.len().saturating_sub(1);
        for (i, m) in steps.iter().enumerate() {
            for (name, v) in m.snapshot() {
                match name {
                    "output_rows" | "output_batches" => {}
                    "input_rows" | "input_batches" if i > 0 => {}
                    "groups" if i < last => {}
                    "peak_memory" => self.metrics.raise_to(name, v),
                    _ => self.metrics.add(name, v),
                }
            }
        }
    }
}

impl ExecutionPlan for HashAggregateExec {
    fn name(&self) -> String {
        "HashAggregate".into()
    }
    fn describe(&self) -> String {
        let keys: Vec<String> = self
            .group
            .iter()
            .map(|g| match g {
                Expr::Alias { expr, .. } => expr_text(expr),
                other => expr_text(other),
            })
            .collect();
        let funcs: Vec<String> = self
            .calls
            .iter()
            .map(|c| {
                let args: Vec<String> = c.args.iter().map(expr_text).collect();
                format!(
                    "{}({}{})",
                    c.name,
                    if c.distinct { "distinct " } else { "" },
                    args.join(", ")
                )
            })
            .collect();
        let mut s = format!(
            "(keys=[{}], functions=[{}])",
            keys.join(", "),
            funcs.join(", ")
        );
        if self.input.streams_in_scan() {
            s.push_str(" [partial steps run in the scan threads]");
        }
        s
    }
    fn schema(&self) -> SchemaRef {
        self.schema.clone()
    }
    fn children(&self) -> Vec<Arc<dyn ExecutionPlan>> {
        vec![self.input.clone()]
    }
    fn execute(&self, ctx: &Arc<TaskContext>) -> Result<BatchStream> {
        let me = ExecHandle::start(self, ctx)?;
        Ok(counted(me, self.metrics.clone()))
    }
    fn accept_runtime_filter(&self, column: &str, filter: &Target) -> bool {
        // A grouping column: dropping its rows drops whole groups the join would drop.
        self.group.iter().any(|g| match g {
            Expr::Alias { expr, name } if name == column => match passthrough_column(expr) {
                Some(c) => self.input.accept_runtime_filter(c, filter),
                None => false,
            },
            _ => false,
        })
    }
    fn metrics(&self) -> &MetricsSet {
        &self.metrics
    }
}

/// Runs the aggregation on the first pull.
struct ExecHandle;

impl ExecHandle {
    fn start(agg: &HashAggregateExec, ctx: &Arc<TaskContext>) -> Result<BatchStream> {
        // The operator is shared behind an Arc by the planner; running eagerly on first
        // pull needs the result, not the borrow, so compute here lazily through a closure
        // over what the run needs.
        let out = agg.run(ctx);
        Ok(match out {
            Ok(batches) => Box::new(batches.into_iter().map(Ok)),
            Err(e) => Box::new(std::iter::once(Err(e))),
        })
    }
}
