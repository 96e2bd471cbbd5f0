//! `Window`: window functions of one specification (PARTITION BY, ORDER BY) over the input,
//! as Spark's `WindowExec` runs them: the input sorted by partition and order keys (spilled
//! past `ferrospark.memory.limit`), every function computed in one pass over each partition,
//! the input columns followed by one column per function.
//!
//! The mapping from a call as written (`lag(x, 2, 0)`, `sum(x)`, `ntile(4)`) to the window
//! operator's [`WindowFunction`] lives here, so SQL, DataFrames and `fs.window` share it.

use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::{Array, RecordBatch};
use arrow_schema::{DataType, Field, Schema, SchemaRef};
use ferrospark_common::{FerroError, MetricsSet, Result};
use ferrospark_expr::{bind, BindContext, Expr, PhysicalExpr};
use ferrospark_window::{
    FrameAggregate, FrameBound, FrameOffset, FrameUnit, OrderKey, WindowCall, WindowExec,
    WindowFrame, WindowFunction, WindowSpec, WINDOW_METRICS,
};

use super::{counted, metrics_with, BatchStream, ExecutionPlan, TaskContext};
use crate::logical::{
    attrs_schema, expr_text, sort_text, Attr, FrameEdge, FrameSpec, SortExpr, WindowCallExpr,
};

/// The literal value of a frame offset or a function's constant argument.
fn literal_number(e: &Expr, what: &str) -> Result<FrameOffset> {
    let bad = || {
        FerroError::Analysis(format!(
            "[DATATYPE_MISMATCH.NON_FOLDABLE_INPUT] {what} must be a constant number, got {e}"
        ))
    };
    let lit = match e {
        Expr::Literal(l) => l.clone(),
        Expr::Negative(inner) => match inner.as_ref() {
            Expr::Literal(l) => {
                let v = arrow_cast::cast(l.array(), &DataType::Float64)?;
                let v = v.as_primitive::<arrow_array::types::Float64Type>();
                if v.is_null(0) {
                    return Err(bad());
                }
                return Ok(FrameOffset::Float(-v.value(0)));
            }
            _ => return Err(bad()),
        },
        _ => return Err(bad()),
    };
    let a = lit.array();
    if a.is_null(0) {
        return Err(bad());
    }
    if matches!(
        a.data_type(),
        DataType::Int8 | DataType::Int16 | DataType::Int32 | DataType::Int64
    ) {
        let v = arrow_cast::cast(a, &DataType::Int64)?;
        return Ok(FrameOffset::Int(
            v.as_primitive::<arrow_array::types::Int64Type>().value(0),
        ));
    }
    let v = arrow_cast::cast(a, &DataType::Float64).map_err(|_| bad())?;
    Ok(FrameOffset::Float(
        v.as_primitive::<arrow_array::types::Float64Type>().value(0),
    ))
}

fn literal_i64(e: &Expr, what: &str) -> Result<i64> {
    match literal_number(e, what)? {
        FrameOffset::Int(v) => Ok(v),
        FrameOffset::Float(v) if v.fract() == 0.0 => Ok(v as i64),
        FrameOffset::Float(_) | FrameOffset::Interval { .. } => Err(FerroError::Analysis(format!(
            "{what} must be an integer, got {e}"
        ))),
    }
}

/// A frame bound's offset: a number literal, or an interval literal (RANGE frames over DATE
/// and TIMESTAMP keys). Spark refuses a bound that is not a literal at parse time
/// (`_LEGACY_ERROR_TEMP_0064`) and one of another type in the analyzer; ROWS bounds must be
/// INT.
fn frame_offset(e: &Expr, rows: bool) -> Result<FrameOffset> {
    use arrow_schema::IntervalUnit;
    // An interval literal keeps its text as written (`INTERVAL '1' MONTH`) for its name.
    let e = &e.without_written();
    let (lit, negate) = match e {
        Expr::Literal(l) => (l, false),
        Expr::Negative(inner) => match inner.as_ref() {
            Expr::Literal(l) => (l, true),
            _ => return literal_number(e, "a window frame bound"),
        },
        _ => {
            return Err(FerroError::Analysis(format!(
                "[_LEGACY_ERROR_TEMP_0064] Frame bound value must be a literal, got {e}"
            )))
        }
    };
    let a = lit.array();
    let unaccepted = || {
        FerroError::Analysis(format!(
            "[DATATYPE_MISMATCH.SPECIFIED_WINDOW_FRAME_UNACCEPTED_TYPE] Cannot resolve the window frame bound {e}: a {} frame bound must be {}, got {}",
            if rows { "ROWS" } else { "RANGE" },
            if rows { "an INT" } else { "a number or an interval" },
            ferrospark_expr::types::spark_type_name(a.data_type())
        ))
    };
    let offset = match a.data_type() {
        DataType::Int8 | DataType::Int16 | DataType::Int32 => {
            literal_number(e, "a window frame bound")?
        }
        // The DataFrame API's `rowsBetween` passes Python ints; Spark takes those that fit
        // an INT, and SQL's BIGINT literals past it are refused.
        DataType::Int64 if rows => match literal_number(e, "a window frame bound")? {
            FrameOffset::Int(v) if i32::try_from(v).is_ok() => FrameOffset::Int(v),
            _ => return Err(unaccepted()),
        },
        DataType::Int64 | DataType::Float32 | DataType::Float64 | DataType::Decimal128(..)
            if !rows =>
        {
            literal_number(e, "a window frame bound")?
        }
        DataType::Interval(IntervalUnit::YearMonth) if !rows && a.is_valid(0) => {
            FrameOffset::Interval {
                months: a
                    .as_primitive::<arrow_array::types::IntervalYearMonthType>()
                    .value(0),
                days: 0,
                micros: 0,
            }
        }
        DataType::Interval(IntervalUnit::DayTime) if !rows && a.is_valid(0) => {
            let v = a
                .as_primitive::<arrow_array::types::IntervalDayTimeType>()
                .value(0);
            FrameOffset::Interval {
                months: 0,
                days: v.days,
                micros: i64::from(v.milliseconds) * 1000,
            }
        }
        DataType::Duration(arrow_schema::TimeUnit::Microsecond) if !rows && a.is_valid(0) => {
            FrameOffset::Interval {
                months: 0,
                days: 0,
                micros: a
                    .as_primitive::<arrow_array::types::DurationMicrosecondType>()
                    .value(0),
            }
        }
        _ => return Err(unaccepted()),
    };
    Ok(match offset {
        FrameOffset::Interval { .. } if negate => offset.negated(),
        _ => offset,
    })
}

/// A frame edge as the window operator's bound. Offsets are signed as written: the
/// DataFrame API's `rowsBetween(-1, 1)` arrives as `-1 FOLLOWING`, which is `1 PRECEDING`.
fn bound_of(edge: &FrameEdge, rows: bool) -> Result<FrameBound> {
    // The offset as a signed distance after the current row.
    let after = |e: &Expr, preceding: bool| -> Result<FrameBound> {
        let offset = frame_offset(e, rows)?;
        let (before, offset) = match offset {
            FrameOffset::Int(v) => (preceding != (v < 0), FrameOffset::Int(v.abs())),
            FrameOffset::Float(v) => (preceding != (v < 0.0), FrameOffset::Float(v.abs())),
            // Intervals keep their sign: only numbers are compared against zero.
            interval => (preceding, interval),
        };
        Ok(match offset {
            FrameOffset::Int(0) | FrameOffset::Float(0.0) => FrameBound::CurrentRow,
            o if before => FrameBound::Preceding(o),
            o => FrameBound::Following(o),
        })
    };
    Ok(match edge {
        FrameEdge::UnboundedPreceding => FrameBound::UnboundedPreceding,
        FrameEdge::UnboundedFollowing => FrameBound::UnboundedFollowing,
        FrameEdge::CurrentRow => FrameBound::CurrentRow,
        FrameEdge::Preceding(e) => after(e, true)?,
        FrameEdge::Following(e) => after(e, false)?,
    })
}

/// The frame a call runs over: as written, or Spark's default.
pub fn frame_of(spec: Option<&FrameSpec>, ordered: bool) -> Result<WindowFrame> {
    let Some(f) = spec else {
        return Ok(WindowFrame::default_for(ordered));
    };
    Ok(WindowFrame {
        unit: if f.rows {
            FrameUnit::Rows
        } else {
            FrameUnit::Range
        },
        start: bound_of(&f.start, f.rows)?,
        end: bound_of(&f.end, f.rows)?,
    })
}

/// Whether Spark runs a ranking function or `counter_diff` over `ROWS` (`Some(true)`) or
/// `RANGE` (`Some(false)`) `BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW` only; `None` for
/// functions that take any frame.
fn required_frame(name: &str) -> Option<bool> {
    match name {
        "row_number" | "rank" | "dense_rank" | "percent_rank" | "ntile" | "counter_diff" => {
            Some(true)
        }
        "cume_dist" => Some(false),
        _ => None,
    }
}

/// Refuses a written frame other than `ROWS` (`RANGE` when `!rows`) `BETWEEN UNBOUNDED
/// PRECEDING AND CURRENT ROW`, with Spark's message (it has no error class).
fn check_required_frame(written: &FrameSpec, rows: bool) -> Result<()> {
    let edge = |e: &FrameEdge| -> String {
        match e {
            FrameEdge::UnboundedPreceding => "unboundedpreceding$()".into(),
            FrameEdge::UnboundedFollowing => "unboundedfollowing$()".into(),
            FrameEdge::CurrentRow => "currentrow$()".into(),
            FrameEdge::Preceding(v) => format!("-{}", v.spark_name()),
            FrameEdge::Following(v) => v.spark_name(),
        }
    };
    let unit = |rows: bool| if rows { "RowFrame" } else { "RangeFrame" };
    let matches = written.rows == rows
        && written.start == FrameEdge::UnboundedPreceding
        && written.end == FrameEdge::CurrentRow;
    if matches {
        return Ok(());
    }
    Err(FerroError::Analysis(format!(
        "Window Frame specifiedwindowframe({}, {}, {}) must match the required frame specifiedwindowframe({}, unboundedpreceding$(), currentrow$()).",
        unit(written.rows),
        edge(&written.start),
        edge(&written.end),
        unit(rows)
    )))
}

/// The window operator's function for `func` (an [`Expr::Function`] or [`Expr::Aggregate`]
/// with resolved arguments) bound to `ctx`.
pub fn window_function(
    func: &Expr,
    frame: Option<&FrameSpec>,
    ordered: bool,
    ctx: &BindContext<'_>,
) -> Result<WindowFunction> {
    // Spark refuses these before asking whether a window function takes DISTINCT at all.
    if let Expr::Aggregate {
        name,
        distinct,
        ignore_nulls,
        ..
    } = func
    {
        if name == "counter_diff" && (*distinct || *ignore_nulls) {
            let what = if *distinct {
                "DISTINCT"
            } else {
                "IGNORE NULLS"
            };
            return Err(FerroError::Analysis(format!(
                "[INVALID_SQL_SYNTAX.FUNCTION_WITH_UNSUPPORTED_SYNTAX] Invalid SQL syntax: The function `counter_diff` does not support {what}. SQLSTATE: 42000"
            )));
        }
    }
    let (name, args, ignore_nulls) = match func {
        Expr::Function { name, args } => (name.as_str(), args.as_slice(), false),
        Expr::Aggregate {
            name,
            args,
            distinct,
            ignore_nulls,
        } => {
            if *distinct {
                return Err(FerroError::Analysis(format!(
                    "[DISTINCT_WINDOW_FUNCTION_UNSUPPORTED] Distinct window functions are not supported: {func}"
                )));
            }
            (name.as_str(), args.as_slice(), *ignore_nulls)
        }
        other => {
            return Err(FerroError::Analysis(format!(
                "[UNSUPPORTED_EXPR_FOR_WINDOW] Expression \"{other}\" not supported within a window function"
            )))
        }
    };
    let arg = |i: usize| -> Result<PhysicalExpr> {
        let e = args.get(i).ok_or_else(|| {
            FerroError::Analysis(format!(
                "[WRONG_NUM_ARGS] {name} needs an argument {} in \"{func}\"",
                i + 1
            ))
        })?;
        bind(e, ctx)
    };
    if let (Some(required), Some(written)) = (required_frame(name), frame) {
        check_required_frame(written, required)?;
    }
    let explicit_frame = frame.is_some();
    let frame = || frame_of(frame, ordered);
    let ignore_arg = |i: usize| -> Result<bool> {
        Ok(match args.get(i) {
            Some(Expr::Literal(l)) => {
                let a = l.array();
                a.as_boolean_opt()
                    .is_some_and(|b| b.is_valid(0) && b.value(0))
            }
            Some(other) => {
                return Err(FerroError::Analysis(format!(
                    "{name}'s ignoreNulls must be a constant boolean, got {other}"
                )))
            }
            None => false,
        } || ignore_nulls)
    };
    // Spark runs these over the whole partition only.
    if matches!(name, "percentile_cont" | "percentile_disc" | "median")
        && (ordered || explicit_frame)
    {
        return Err(FerroError::Analysis(format!(
            "[INVALID_WINDOW_SPEC_FOR_AGGREGATION_FUNC] Cannot specify ORDER BY or a window frame for {name}"
        )));
    }
    if name == "counter_diff" {
        match args.len() {
            0 => return Err(FerroError::Analysis(
                "[REQUIRED_PARAMETER_NOT_FOUND] Cannot invoke routine `counter_diff` because the parameter named `value` is required, but the routine call did not supply a value. Please update the routine call to supply an argument value (either positionally at index 0 or by name) and retry the query again. SQLSTATE: 4274K".into(),
            )),
            1 | 2 => {}
            n => return Err(FerroError::Analysis(format!(
                "[WRONG_NUM_ARGS.WITHOUT_SUGGESTION] The `counter_diff` requires [1, 2] parameters but the actual number is {n}. Please, refer to 'https://spark.apache.org/docs/latest/sql-ref-functions.html' for a fix. SQLSTATE: 42605"
            ))),
        }
    }
    Ok(match name {
        "row_number" => WindowFunction::RowNumber,
        "counter_diff" => WindowFunction::CounterDiff {
            // `counter_diff(NULL)` is over a DOUBLE, as Spark casts an untyped NULL.
            input: match arg(0)? {
                e if e.data_type() == DataType::Null => {
                    ferrospark_expr::bind::cast_to(e, &DataType::Float64)
                }
                e => e,
            },
            start: if args.len() > 1 { Some(arg(1)?) } else { None },
        },
        // Planned by `SessionWindowing` only: spans (start, end) merged into sessions.
        "session_start" | "session_end" => WindowFunction::Session {
            start: arg(0)?,
            stop: arg(1)?,
            end: name == "session_end",
        },
        "rank" => WindowFunction::Rank,
        "dense_rank" => WindowFunction::DenseRank,
        "percent_rank" => WindowFunction::PercentRank,
        "cume_dist" => WindowFunction::CumeDist,
        "ntile" => WindowFunction::Ntile(literal_i64(
            args.first().ok_or_else(|| FerroError::Analysis("ntile needs a bucket count".into()))?,
            "ntile's bucket count",
        )?),
        "lag" | "lead" => WindowFunction::Offset {
            lead: name == "lead",
            input: arg(0)?,
            offset: match args.get(1) {
                Some(e) => literal_i64(e, "the offset of lag / lead")?,
                None => 1,
            },
            default: if args.len() > 2 { Some(arg(2)?) } else { None },
            ignore_nulls,
        },
        "nth_value" => WindowFunction::Nth {
            input: arg(0)?,
            n: literal_i64(
                args.get(1)
                    .ok_or_else(|| FerroError::Analysis("nth_value needs n".into()))?,
                "nth_value's n",
            )?,
            from_end: false,
            ignore_nulls: ignore_arg(2)?,
            frame: frame()?,
        },
        // Spark's `any_value` is `first`: the frame's first value (first non-NULL with
        // IGNORE NULLS or a true second argument).
        "first_value" | "first" | "any_value" | "last_value" | "last" => WindowFunction::Nth {
            input: arg(0)?,
            n: 1,
            from_end: name.starts_with("last"),
            ignore_nulls: ignore_arg(1)?,
            frame: frame()?,
        },
        "percentile" => {
            let p = args.get(1).ok_or_else(|| {
                FerroError::Analysis("percentile needs a percentage argument".into())
            })?;
            let (percentages, as_array) = ferrospark_agg::functions::percentages(p)?;
            WindowFunction::Percentile {
                input: arg(0)?,
                percentages,
                as_array,
                kind: Default::default(),
                frame: frame()?,
            }
        }
        "percentile_cont" | "percentile_disc" | "median" => {
            let (percentages, kind) = ferrospark_agg::functions::ordered_percentile(name, args)?;
            WindowFunction::Percentile {
                input: arg(0)?,
                percentages,
                as_array: false,
                kind,
                frame: frame()?,
            }
        }
        "approx_count_distinct" => WindowFunction::ApproxCountDistinct {
            input: arg(0)?,
            relative_sd: match args.get(1) {
                Some(e) => ferrospark_agg::functions::literal_f64(
                    e,
                    "approx_count_distinct's relativeSD",
                )?,
                None => 0.05,
            },
            frame: frame()?,
        },
        other => match FrameAggregate::from_name(other) {
            Some(agg) => WindowFunction::Aggregate {
                agg,
                input: if args.is_empty() {
                    None
                } else {
                    Some(numeric_input(agg, arg(0)?))
                },
                frame: frame()?,
            },
            None => {
                return Err(FerroError::Analysis(format!(
                    "[UNSUPPORTED_EXPR_FOR_WINDOW] `{other}` is not a window function: use a ranking function (row_number, rank, dense_rank, percent_rank, cume_dist, ntile), lag / lead, nth_value / first_value / last_value, or an aggregate"
                )))
            }
        },
    })
}

/// A numeric aggregate's input as Spark coerces it: NULL as DOUBLE, and a timestamp's mean
/// over its seconds (`avg(ts)` is a DOUBLE, as in a grouped aggregate).
fn numeric_input(agg: FrameAggregate, input: PhysicalExpr) -> PhysicalExpr {
    let numeric = matches!(
        agg,
        FrameAggregate::Sum
            | FrameAggregate::Avg
            | FrameAggregate::VarSamp
            | FrameAggregate::VarPop
            | FrameAggregate::StddevSamp
            | FrameAggregate::StddevPop
    );
    match input.data_type() {
        DataType::Null if numeric => ferrospark_expr::bind::cast_to(input, &DataType::Float64),
        DataType::Timestamp(..) if agg == FrameAggregate::Avg => {
            ferrospark_expr::bind::cast_to(input, &DataType::Float64)
        }
        _ => input,
    }
}

/// The output field (type, nullability) of a window call over `input`, for the analyzer.
pub fn window_call_field(
    call: &WindowCallExpr,
    input: &[Attr],
    cfg: &ferrospark_common::Config,
) -> Result<Field> {
    let schema = attrs_schema(input);
    let ctx = BindContext::for_session(&schema, cfg).with_ansi(cfg.ansi_enabled()?);
    let f = window_function(
        &call.func,
        call.frame.as_ref(),
        !call.order_by.is_empty(),
        &ctx,
    )?;
    let order_types = call
        .order_by
        .iter()
        .map(|o| Ok(bind(&o.expr, &ctx)?.data_type()))
        .collect::<Result<Vec<_>>>()?;
    f.validate(&order_types)?;
    Ok(f.field("w"))
}

/// `Window [calls], [partition keys], [order keys]`.
#[derive(Debug)]
pub struct WindowPlanExec {
    input: Arc<dyn ExecutionPlan>,
    partition_by: Vec<Expr>,
    order_by: Vec<SortExpr>,
    calls: Vec<(WindowCallExpr, Attr)>,
    schema: SchemaRef,
    metrics: MetricsSet,
}

impl WindowPlanExec {
    /// Window calls sharing one specification (the first call's keys) over `input`.
    pub fn new(input: Arc<dyn ExecutionPlan>, calls: Vec<(WindowCallExpr, Attr)>) -> Self {
        let (partition_by, order_by) = calls
            .first()
            .map(|(c, _)| (c.partition_by.clone(), c.order_by.clone()))
            .unwrap_or_default();
        let mut fields: Vec<Field> = input
            .schema()
            .fields()
            .iter()
            .map(|f| f.as_ref().clone())
            .collect();
        fields.extend(calls.iter().map(|(_, a)| a.field()));
        Self {
            schema: Arc::new(Schema::new(fields)),
            input,
            partition_by,
            order_by,
            calls,
            metrics: metrics_with(WINDOW_METRICS),
        }
    }

    fn operator(&self, ctx: &Arc<TaskContext>) -> Result<WindowExec> {
        let schema = self.input.schema();
        let bctx = BindContext::for_session(&schema, &ctx.cfg).with_ansi(ctx.cfg.ansi_enabled()?);
        let spec = WindowSpec {
            partition_by: self
                .partition_by
                .iter()
                .map(|e| bind(e, &bctx))
                .collect::<Result<_>>()?,
            order_by: self
                .order_by
                .iter()
                .map(|o| {
                    Ok(OrderKey {
                        expr: bind(&o.expr, &bctx)?,
                        descending: !o.ascending,
                        nulls_first: o.nulls_first,
                    })
                })
                .collect::<Result<_>>()?,
        };
        let ordered = !self.order_by.is_empty();
        let calls = self
            .calls
            .iter()
            .map(|(c, a)| {
                Ok(WindowCall {
                    function: window_function(&c.func, c.frame.as_ref(), ordered, &bctx)?,
                    name: a.key(),
                })
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(
            WindowExec::try_new(schema.clone(), spec, calls, ctx.batch_size, &ctx.pool)?
                .with_ansi(ctx.cfg.ansi_enabled()?)
                .with_exact_float_frames(ctx.cfg.window_exact_float_frames()?)
                .with_spill_dir(ctx.spill_dir.clone()),
        )
    }
}

impl ExecutionPlan for WindowPlanExec {
    fn name(&self) -> String {
        "Window".into()
    }
    fn describe(&self) -> String {
        let calls: Vec<String> = self
            .calls
            .iter()
            .map(|(c, a)| format!("{} AS {}", expr_text(&c.func), a.key()))
            .collect();
        let parts: Vec<String> = self.partition_by.iter().map(expr_text).collect();
        let orders: Vec<String> = self.order_by.iter().map(sort_text).collect();
        format!(
            "[{}], [{}], [{}]",
            calls.join(", "),
            parts.join(", "),
            orders.join(", ")
        )
    }
    fn schema(&self) -> SchemaRef {
        self.schema.clone()
    }
    fn children(&self) -> Vec<Arc<dyn ExecutionPlan>> {
        vec![self.input.clone()]
    }
    fn execute(&self, ctx: &Arc<TaskContext>) -> Result<BatchStream> {
        let mut exec = self.operator(ctx)?;
        // Streamed in, so the operator's reservations (and spills) bound what is held.
        for b in self.input.execute(ctx)? {
            exec.push(&b?)?;
        }
        exec.finish()?;
        let schema = self.schema.clone();
        let own = self.metrics.clone();
        let mut done = false;
        let stream = std::iter::from_fn(move || {
            if done {
                return None;
            }
            match exec.pull() {
                Ok(Some(b)) => Some(
                    RecordBatch::try_new(schema.clone(), b.columns().to_vec()).map_err(Into::into),
                ),
                Ok(None) => {
                    done = true;
                    for (name, v) in exec.metrics().snapshot() {
                        if name != "output_rows" && name != "output_batches" {
                            own.add(name, v);
                        }
                    }
                    None
                }
                Err(e) => {
                    done = true;
                    Some(Err(e))
                }
            }
        });
        Ok(counted(Box::new(stream), self.metrics.clone()))
    }
    fn metrics(&self) -> &MetricsSet {
        &self.metrics
    }
}
