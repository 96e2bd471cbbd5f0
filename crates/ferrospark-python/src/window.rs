//! Bindings of the window operator: `window` evaluates window functions of one specification
//! over an Arrow stream in this process.

use std::collections::HashMap;

use arrow_array::RecordBatch;
use arrow_schema::SchemaRef;
use ferrospark_common::{FerroError, MemoryPool};
use ferrospark_expr::{bind, BindContext, Expr};
use ferrospark_window::{
    FrameAggregate, FrameBound, FrameOffset, FrameUnit, OrderKey, WindowCall, WindowExec,
    WindowFrame, WindowFunction, WindowSpec,
};
use pyo3::prelude::*;
use pyo3_arrow::{PyRecordBatchReader, PyTable};

use crate::aggregate::{conform, metrics_list, spark_input_schema};
use crate::{config_from, Detach, IntoPyResult, PyExpr};

/// One window function as Python describes it: `(name, args, n, ignore_nulls, alias, frame)`;
/// `n` is ntile's bucket count or lag / lead's offset, `args` the value (and lag / lead's
/// default); an aggregate is named `agg:<name>` and may have a frame `(unit, start, end)`, each
/// bound `unbounded_preceding`, `unbounded_following` or a signed offset (0: current row).
type CallSpec = (
    String,
    Vec<PyExpr>,
    Option<i64>,
    bool,
    Option<String>,
    Option<(String, String, String)>,
);

/// A frame bound from its Python text.
fn frame_bound(text: &str) -> Result<FrameBound, FerroError> {
    Ok(match text {
        "unbounded_preceding" => FrameBound::UnboundedPreceding,
        "unbounded_following" => FrameBound::UnboundedFollowing,
        t => {
            let offset = match t.parse::<i64>() {
                Ok(v) => FrameOffset::Int(v.abs()),
                Err(_) => FrameOffset::Float(
                    t.parse::<f64>()
                        .map_err(|_| {
                            FerroError::Config(format!("`{t}` is not a window frame bound"))
                        })?
                        .abs(),
                ),
            };
            let negative = t.starts_with('-');
            match offset {
                FrameOffset::Int(0) => FrameBound::CurrentRow,
                FrameOffset::Float(0.0) => FrameBound::CurrentRow,
                o if negative => FrameBound::Preceding(o),
                o => FrameBound::Following(o),
            }
        }
    })
}

fn frame_of(
    spec: &Option<(String, String, String)>,
    ordered: bool,
) -> Result<WindowFrame, FerroError> {
    let Some((unit, start, end)) = spec else {
        return Ok(WindowFrame::default_for(ordered));
    };
    Ok(WindowFrame {
        unit: match unit.as_str() {
            "rows" => FrameUnit::Rows,
            "range" => FrameUnit::Range,
            other => {
                return Err(FerroError::Config(format!(
                    "`{other}` is not a frame unit; use rows or range"
                )))
            }
        },
        start: frame_bound(start)?,
        end: frame_bound(end)?,
    })
}

/// Spark's text of a window specification inside `OVER (...)`, without the frame.
fn spec_text(partition_by: &[PyExpr], order_by: &[PyExpr]) -> String {
    let mut parts = Vec::new();
    if !partition_by.is_empty() {
        let keys: Vec<String> = partition_by.iter().map(|e| e.0.spark_name()).collect();
        parts.push(format!("PARTITION BY {}", keys.join(", ")));
    }
    if !order_by.is_empty() {
        let keys: Vec<String> = order_by
            .iter()
            .map(|e| match &e.0 {
                Expr::SortKey {
                    expr,
                    ascending,
                    nulls_first,
                } => format!(
                    "{} {} NULLS {}",
                    expr.spark_name(),
                    if *ascending { "ASC" } else { "DESC" },
                    if *nulls_first { "FIRST" } else { "LAST" }
                ),
                other => format!("{} ASC NULLS FIRST", other.spark_name()),
            })
            .collect();
        parts.push(format!("ORDER BY {}", keys.join(", ")));
    }
    parts.join(" ")
}

/// Spark's column name of a window function call: the call, then `OVER (spec frame)` with the
/// frame the function runs over.
fn default_name(spec: &CallSpec, function: &WindowFunction, over: &str) -> String {
    let (name, args, ..) = spec;
    let (call, frame) = match function {
        WindowFunction::Aggregate { frame, .. }
        | WindowFunction::Nth { frame, .. }
        | WindowFunction::Percentile { frame, .. }
        | WindowFunction::ApproxCountDistinct { frame, .. } => {
            let mut args: Vec<String> = args.iter().map(|a| a.0.spark_name()).collect();
            if let WindowFunction::Nth { n, .. } = function {
                if name == "agg:nth_value" {
                    args.push(n.to_string());
                }
            }
            let args = if args.is_empty() {
                "1".to_string()
            } else {
                args.join(", ")
            };
            let fname = name.trim_start_matches("agg:");
            let text = match &spec.5 {
                // As Spark prints a frame built by `rowsBetween` / `rangeBetween`: literal
                // offsets, signed, as FOLLOWING.
                Some((unit, start, end)) => {
                    let bound = |t: &str| match t {
                        "unbounded_preceding" => "UNBOUNDED PRECEDING".to_string(),
                        "unbounded_following" => "UNBOUNDED FOLLOWING".to_string(),
                        "0" | "0.0" | "-0.0" => "CURRENT ROW".to_string(),
                        v => format!("{v} FOLLOWING"),
                    };
                    format!(
                        "{} BETWEEN {} AND {}",
                        unit.to_uppercase(),
                        bound(start),
                        bound(end)
                    )
                }
                None => frame.text(),
            };
            (format!("{fname}({args})"), text)
        }
        WindowFunction::Offset { lead, offset, .. } => {
            let delta = if *lead { *offset } else { -*offset };
            let arg = |i: usize| args.get(i).map_or("NULL".to_string(), |e| e.0.spark_name());
            (
                format!("{name}({}, {offset}, {})", arg(0), arg(1)),
                format!("ROWS BETWEEN {delta} FOLLOWING AND {delta} FOLLOWING"),
            )
        }
        WindowFunction::CumeDist => (
            function.spark_name(),
            "RANGE BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW".to_string(),
        ),
        _ => (
            function.spark_name(),
            "ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW".to_string(),
        ),
    };
    let inside: Vec<&str> = [over, frame.as_str()]
        .into_iter()
        .filter(|s| !s.is_empty())
        .collect();
    format!("{call} OVER ({})", inside.join(" "))
}

fn window_call(
    spec: &CallSpec,
    ctx: &BindContext<'_>,
    over: &str,
    ordered: bool,
) -> Result<WindowCall, FerroError> {
    let (name, args, n, ignore_nulls, alias, frame) = spec;
    let arg = |i: usize| -> Result<ferrospark_expr::PhysicalExpr, FerroError> {
        let e = args
            .get(i)
            .ok_or_else(|| FerroError::Analysis(format!("{name} needs an argument {}", i + 1)))?;
        bind(&e.0, ctx)
    };
    let frame_agg = name
        .strip_prefix("agg:")
        .and_then(FrameAggregate::from_name);
    let function = if let Some(agg) = frame_agg {
        WindowFunction::Aggregate {
            agg,
            input: if args.is_empty() { None } else { Some(arg(0)?) },
            frame: frame_of(frame, ordered)?,
        }
    } else {
        match name.as_str() {
        "row_number" => WindowFunction::RowNumber,
        "rank" => WindowFunction::Rank,
        "dense_rank" => WindowFunction::DenseRank,
        "percent_rank" => WindowFunction::PercentRank,
        "cume_dist" => WindowFunction::CumeDist,
        "ntile" => WindowFunction::Ntile(n.unwrap_or(0)),
        "agg:approx_count_distinct" => WindowFunction::ApproxCountDistinct {
            input: arg(0)?,
            relative_sd: match args.get(1) {
                Some(e) => ferrospark_agg::functions::literal_f64(
                    &e.0,
                    "approx_count_distinct's relativeSD",
                )?,
                None => 0.05,
            },
            frame: frame_of(frame, ordered)?,
        },
        "agg:percentile" => {
            let p = args.get(1).ok_or_else(|| {
                FerroError::Analysis("percentile needs a percentage argument".into())
            })?;
            let (percentages, as_array) = ferrospark_agg::functions::percentages(&p.0)?;
            WindowFunction::Percentile {
                input: arg(0)?,
                percentages,
                as_array,
                frame: frame_of(frame, ordered)?,
            }
        }
        "agg:nth_value" | "agg:first_value" | "agg:last_value" | "agg:first" | "agg:last" => {
            WindowFunction::Nth {
                input: arg(0)?,
                n: if name == "agg:nth_value" {
                    n.unwrap_or(1)
                } else {
                    1
                },
                from_end: name.ends_with("last_value") || name == "agg:last",
                ignore_nulls: *ignore_nulls,
                frame: frame_of(frame, ordered)?,
            }
        }
        "session_start" | "session_end" => WindowFunction::Session {
            start: arg(0)?,
            stop: arg(1)?,
            end: name == "session_end",
        },
        "lag" | "lead" => WindowFunction::Offset {
            lead: name == "lead",
            input: arg(0)?,
            offset: n.unwrap_or(1),
            default: if args.len() > 1 { Some(arg(1)?) } else { None },
            ignore_nulls: *ignore_nulls,
        },
        other => {
            return Err(FerroError::Analysis(format!(
                "`{other}` is not a window function ferrospark runs yet; use row_number, rank, dense_rank, percent_rank, cume_dist, ntile, lag or lead"
            )))
        }
    }
    };
    let name = alias
        .clone()
        .unwrap_or_else(|| default_name(spec, &function, over));
    Ok(WindowCall { function, name })
}

/// Evaluates `calls` over `PARTITION BY partition_by ORDER BY order_by` (sort keys, or plain
/// expressions meaning ASC NULLS FIRST). Returns `(pyarrow.Table, metrics, plan)`: the input
/// columns and one column per call, in partition order.
#[pyfunction]
#[pyo3(signature = (data, partition_by, order_by, calls, conf=None))]
pub(crate) fn window<'py>(
    py: Python<'py>,
    data: PyRecordBatchReader,
    partition_by: Vec<PyExpr>,
    order_by: Vec<PyExpr>,
    calls: Vec<CallSpec>,
    conf: Option<HashMap<String, String>>,
) -> PyResult<Bound<'py, PyAny>> {
    let cfg = config_from(py, conf)?;
    let reader = data.into_reader()?;
    let result = py.run_detached(move || -> Result<_, FerroError> {
        let schema = spark_input_schema(&reader.schema());
        let ctx = BindContext::new(&schema);
        let spec = WindowSpec {
            partition_by: partition_by
                .iter()
                .map(|e| bind(&e.0, &ctx))
                .collect::<Result<_, _>>()?,
            order_by: order_by
                .iter()
                .map(|e| {
                    Ok(match &e.0 {
                        Expr::SortKey {
                            expr,
                            ascending,
                            nulls_first,
                        } => OrderKey {
                            expr: bind(expr, &ctx)?,
                            descending: !ascending,
                            nulls_first: *nulls_first,
                        },
                        other => OrderKey::asc(bind(other, &ctx)?),
                    })
                })
                .collect::<Result<_, FerroError>>()?,
        };
        let over = spec_text(&partition_by, &order_by);
        let calls = calls
            .iter()
            .map(|c| window_call(c, &ctx, &over, !order_by.is_empty()))
            .collect::<Result<Vec<_>, _>>()?;
        let pool = MemoryPool::new(cfg.memory_limit()?);
        let mut exec = WindowExec::try_new(schema.clone(), spec, calls, cfg.batch_size()?, &pool)?
            .with_ansi(cfg.ansi_enabled()?)
            .with_exact_float_frames(cfg.window_exact_float_frames()?)
            .with_spill_dir(ferrospark_common::SpillDir::new(cfg.spill_dir()));
        for b in reader {
            exec.push(&conform(b?, &schema)?)?;
        }
        exec.finish()?;
        let mut out: Vec<RecordBatch> = Vec::new();
        while let Some(b) = exec.pull()? {
            out.push(b);
        }
        Ok((
            out,
            exec.output_schema(),
            exec.metrics().clone(),
            exec.explain(),
        ))
    });
    let (batches, schema, metrics, plan) = result.py(py)?;
    table_metrics_plan(py, batches, schema, metrics, plan)
}

/// `(pyarrow.Table, metrics, plan)`: what an in-process operator call returns.
fn table_metrics_plan<'py>(
    py: Python<'py>,
    batches: Vec<RecordBatch>,
    schema: SchemaRef,
    metrics: ferrospark_common::MetricsSet,
    plan: String,
) -> PyResult<Bound<'py, PyAny>> {
    let table = PyTable::try_new(batches, schema)?.into_pyarrow(py)?;
    let metrics = metrics_list(py, &[metrics])?;
    (table, metrics.get_item(0)?, plan)
        .into_pyobject(py)
        .map(|t| t.into_any())
}
