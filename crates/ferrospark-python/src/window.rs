//! Bindings of the window operator: `window` evaluates window functions of one specification
//! over an Arrow stream in this process.

use std::collections::HashMap;

use arrow_array::RecordBatch;
use arrow_schema::SchemaRef;
use ferrospark_common::{FerroError, MemoryPool};
use ferrospark_expr::expr::{FrameEdge, FrameSpec};
use ferrospark_expr::{bind, BindContext, Expr, Literal};
use ferrospark_window::{
    FrameAggregate, OrderKey, WindowCall, WindowExec, WindowFrame, WindowFunction, WindowSpec,
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

/// A frame bound from its Python text (`unbounded_preceding`, `unbounded_following`, or a
/// signed offset), as PySpark's `rowsBetween` / `rangeBetween` build it: zero is CURRENT ROW,
/// any other offset a signed literal FOLLOWING (`-1 FOLLOWING`), which Spark's column name
/// shows.
pub(crate) fn frame_edge(t: &str) -> Result<FrameEdge, FerroError> {
    Ok(match t {
        "unbounded_preceding" => FrameEdge::UnboundedPreceding,
        "unbounded_following" => FrameEdge::UnboundedFollowing,
        t => {
            let not_a_bound = || FerroError::Config(format!("`{t}` is not a window frame bound"));
            let value = t.parse::<f64>().map_err(|_| not_a_bound())?;
            if value == 0.0 {
                FrameEdge::CurrentRow
            } else {
                FrameEdge::Following(Expr::Literal(match t.parse::<i64>() {
                    Ok(v) => Literal::integer(v),
                    Err(_) => Literal::double(value),
                }))
            }
        }
    })
}

/// A call's frame `(unit, start, end)` as written.
fn frame_spec(spec: &Option<(String, String, String)>) -> Result<Option<FrameSpec>, FerroError> {
    let Some((unit, start, end)) = spec else {
        return Ok(None);
    };
    let rows = match unit.as_str() {
        "rows" => true,
        "range" => false,
        other => {
            return Err(FerroError::Config(format!(
                "`{other}` is not a frame unit; use rows or range"
            )))
        }
    };
    Ok(Some(FrameSpec {
        rows,
        start: frame_edge(start)?,
        end: frame_edge(end)?,
    }))
}

fn frame_of(
    spec: &Option<(String, String, String)>,
    ordered: bool,
) -> Result<WindowFrame, FerroError> {
    ferrospark_plan::physical::window::frame_of(frame_spec(spec)?.as_ref(), ordered)
}

/// Spark's column name of a call: the name its `f(...) OVER (...)` expression has.
fn default_name(
    spec: &CallSpec,
    partition_by: &[PyExpr],
    order_by: &[PyExpr],
) -> Result<String, FerroError> {
    let (name, args, n, ignore_nulls, _, frame) = spec;
    let mut args: Vec<Expr> = args.iter().map(|a| a.0.clone()).collect();
    let literal_n = |v: i64| Expr::Literal(Literal::integer(v));
    let func = match name.strip_prefix("agg:") {
        Some(agg) => {
            if agg == "nth_value" {
                args.push(literal_n(n.unwrap_or(1)));
            }
            Expr::Aggregate {
                name: agg.to_string(),
                args,
                distinct: false,
                ignore_nulls: *ignore_nulls,
            }
        }
        None => {
            match name.as_str() {
                "ntile" => args = vec![literal_n(n.unwrap_or(0))],
                "lag" | "lead" => args.insert(1.min(args.len()), literal_n(n.unwrap_or(1))),
                _ => {}
            }
            Expr::Function {
                name: name.clone(),
                args,
            }
        }
    };
    let window = Expr::Window {
        func: Box::new(func),
        partition_by: partition_by.iter().map(|e| e.0.clone()).collect(),
        order_by: order_by.iter().map(|e| e.0.clone()).collect(),
        frame: frame_spec(frame)?.map(Box::new),
    };
    Ok(window.spark_name())
}

fn window_call(
    spec: &CallSpec,
    ctx: &BindContext<'_>,
    partition_by: &[PyExpr],
    order_by: &[PyExpr],
) -> Result<WindowCall, FerroError> {
    let ordered = !order_by.is_empty();
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
                kind: Default::default(),
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
        "counter_diff" => WindowFunction::CounterDiff {
            input: arg(0)?,
            start: if args.len() > 1 { Some(arg(1)?) } else { None },
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
                "`{other}` is not a window function ferrospark runs yet; use row_number, rank, dense_rank, percent_rank, cume_dist, ntile, lag, lead or counter_diff"
            )))
        }
    }
    };
    let name = match alias {
        Some(a) => a.clone(),
        None => default_name(spec, partition_by, order_by)?,
    };
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
        let calls = calls
            .iter()
            .map(|c| window_call(c, &ctx, &partition_by, &order_by))
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
