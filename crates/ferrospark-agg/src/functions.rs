//! Aggregate functions: what the user asks for ([`AggregateCall`]), bound to an input schema
//! ([`AggregateExpr`]) with Spark's result types, intermediate state fields and output names.

use std::fmt;

use arrow_schema::{DataType, Field, Schema};
use ferrospark_common::{FerroError, Result};
use ferrospark_expr::bind::cast_to;
use ferrospark_expr::types::{is_decimal, is_integral, is_numeric, is_string, spark_type_name};
use ferrospark_expr::{aggregate_call_name, bind, BindContext, Expr, PhysicalExpr};

use crate::accumulators::approx_percentile::ApproxPercentileAccumulator;
use crate::accumulators::bits::{BitAccumulator, BitOp};
use crate::accumulators::bool_ops::BoolAccumulator;
use crate::accumulators::collect::collect;
use crate::accumulators::comoment::{CoMomentAccumulator, CoMomentKind};
use crate::accumulators::count::CountAccumulator;
use crate::accumulators::distinct::DistinctSetAccumulator;
use crate::accumulators::extreme_by::{ExtremeByAccumulator, ProductAccumulator};
use crate::accumulators::first_last::FirstLastAccumulator;
use crate::accumulators::histogram::{
    histogram_input, histogram_state_type, histogram_type, HistogramAccumulator,
};
use crate::accumulators::hll_acc::HllAccumulator;
use crate::accumulators::min_max::min_max;
use crate::accumulators::moments::{MomentAccumulator, MomentKind};
use crate::accumulators::percentile::{PercentileAccumulator, PercentileKind};
use crate::accumulators::sum_avg::{DecimalSumAccumulator, FloatSumAccumulator, SumIntAccumulator};
use crate::accumulators::variance::{VarianceAccumulator, VarianceKind};
use crate::accumulators::GroupsAccumulator;

/// An aggregate function as written by the user: a Spark function name, its arguments, and the
/// `DISTINCT` / `IGNORE NULLS` modifiers.
#[derive(Debug, Clone, PartialEq)]
pub struct AggregateCall {
    /// Spark's function name (`sum`, `count`, `stddev`, `collect_set`, ...).
    pub name: String,
    /// Arguments; literal parameters (percentile's `p`, approx_count_distinct's `rsd`) included.
    pub args: Vec<Expr>,
    /// `count(DISTINCT x)`
    pub distinct: bool,
    /// `first(x, true)` / `IGNORE NULLS`
    pub ignore_nulls: bool,
    /// Output name; Spark's default when absent.
    pub alias: Option<String>,
}

impl AggregateCall {
    /// `name(args...)`.
    pub fn new(name: &str, args: Vec<Expr>) -> Self {
        Self {
            name: name.to_ascii_lowercase(),
            args,
            distinct: false,
            ignore_nulls: false,
            alias: None,
        }
    }

    /// The output column name: the alias, or Spark's default (`sum(x)`, `count(1)`,
    /// `count(DISTINCT x)`, `percentile(x, 0.5, 1)`).
    pub fn output_name(&self) -> String {
        if let Some(a) = &self.alias {
            return a.clone();
        }
        self.to_string()
    }
}

/// An argument as Spark prints it inside a function's column name.
fn arg_name(e: &Expr) -> String {
    match e {
        Expr::Alias { expr, .. } => expr.spark_name(),
        other => other.spark_name(),
    }
}

impl fmt::Display for AggregateCall {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let args = self.args.iter().map(arg_name).collect();
        f.write_str(&aggregate_call_name(&self.name, args, self.distinct))
    }
}

/// The aggregate functions ferrospark runs natively.
#[derive(Debug, Clone, PartialEq)]
pub enum AggregateFunction {
    /// `count(*)` / `count(x, ...)`
    Count,
    /// `sum(x)`
    Sum,
    /// `avg(x)` / `mean(x)`
    Avg,
    /// `min(x)`
    Min,
    /// `max(x)`
    Max,
    /// `first(x)` / `first_value(x)`
    First {
        /// skip NULLs
        ignore_nulls: bool,
    },
    /// `last(x)` / `last_value(x)`
    Last {
        /// skip NULLs
        ignore_nulls: bool,
    },
    /// stddev / variance family
    Variance(VarianceKind),
    /// `corr`, `covar_pop`, `covar_samp`, `regr_sxx`, `regr_syy`, `regr_slope`
    CoMoment(CoMomentKind),
    /// `bool_and(x)` / `every(x)`
    BoolAnd,
    /// `bool_or(x)` / `some(x)` / `any(x)`
    BoolOr,
    /// `collect_list(x)`
    CollectList,
    /// `collect_set(x)`
    CollectSet,
    /// `percentile(x, p)` exact
    Percentile {
        /// percentages in [0, 1]
        percentages: Vec<f64>,
        /// result is `array<double>`
        as_array: bool,
        /// `percentile_cont` / `percentile_disc` and their ordering
        kind: PercentileKind,
    },
    /// `skewness(x)`, `kurtosis(x)`
    Moment(MomentKind),
    /// `bit_and(x)`, `bit_or(x)`, `bit_xor(x)`
    Bits(BitOp),
    /// `histogram_numeric(x, nb)`
    HistogramNumeric {
        /// the number of bins, at least 2
        bins: usize,
    },
    /// `approx_count_distinct(x, rsd)`
    ApproxCountDistinct {
        /// relative standard deviation
        relative_sd: f64,
    },
    /// `max_by(x, ord)` / `min_by(x, ord)`
    ExtremeBy {
        /// `max_by`
        max: bool,
        /// the ordering's type
        ord: DataType,
    },
    /// `product(x)` over doubles
    Product,
    /// `percentile_approx(x, p, accuracy)` / `approx_percentile`: Spark's GK summary
    ApproxPercentile {
        /// percentages in [0, 1]
        percentages: Vec<f64>,
        /// result is an array
        as_array: bool,
        /// `accuracy`: the relative error is its inverse
        accuracy: i64,
        /// the input's type, which the result takes
        out: DataType,
    },
    /// `try_sum(x)` of integral input: NULL where the bigint sum overflows
    TrySumInt,
}

impl AggregateFunction {
    /// Whether the buffer is an object (Spark's TypedImperativeAggregate): such functions run in
    /// ObjectHashAggregate and fall back to sort-based aggregation past the key threshold.
    pub fn has_object_buffer(&self) -> bool {
        matches!(
            self,
            AggregateFunction::CollectList
                | AggregateFunction::CollectSet
                | AggregateFunction::Percentile { .. }
                | AggregateFunction::HistogramNumeric { .. }
                | AggregateFunction::ApproxCountDistinct { .. }
                | AggregateFunction::ApproxPercentile { .. }
        )
    }
}

/// How an aggregate reads its input and what it hands out (Spark's `AggregateMode`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AggregateMode {
    /// raw rows in, intermediate state out
    Partial,
    /// state in, state out
    PartialMerge,
    /// state in, final value out
    Final,
    /// raw rows in, final value out
    Complete,
}

impl AggregateMode {
    /// Reads raw rows (as opposed to intermediate states).
    pub fn reads_raw(self) -> bool {
        matches!(self, AggregateMode::Partial | AggregateMode::Complete)
    }

    /// Hands out final values (as opposed to intermediate states).
    pub fn emits_final(self) -> bool {
        matches!(self, AggregateMode::Final | AggregateMode::Complete)
    }
}

/// An aggregate bound to an input: its function, typed arguments and mode.
#[derive(Debug, Clone)]
pub struct AggregateExpr {
    /// The function.
    pub func: AggregateFunction,
    /// Arguments over raw input rows, already cast to what the accumulator reads.
    pub args: Vec<PhysicalExpr>,
    /// Type of the (first) argument as the accumulator sees it.
    pub input_type: DataType,
    /// Output name (also the prefix of its state columns).
    pub name: String,
    /// The mode.
    pub mode: AggregateMode,
    /// Where its state columns are in the input, for merge modes (set by the operator).
    pub state_columns: Vec<usize>,
    /// `f(DISTINCT x)` computed over a per-group set of distinct values (see
    /// [`crate::accumulators::distinct`]).
    pub distinct_set: bool,
    ansi: bool,
}

/// A constant argument (`what` names it in errors) as a double.
pub fn literal_f64(e: &Expr, what: &str) -> Result<f64> {
    let lit = match e {
        Expr::Literal(l) => l,
        Expr::Negative(inner) => return literal_f64(inner, what).map(|v| -v),
        _ => {
            return Err(FerroError::Analysis(format!(
                "{what} must be a constant, got {e}"
            )))
        }
    };
    let a = arrow_cast::cast(lit.array(), &DataType::Float64)?;
    use arrow_array::cast::AsArray;
    let a = a.as_primitive::<arrow_array::types::Float64Type>();
    if a.is_empty() || arrow_array::Array::is_null(a, 0) {
        return Err(FerroError::Analysis(format!("{what} must not be NULL")));
    }
    Ok(a.value(0))
}

/// The percentage and ordering of `percentile_cont` / `percentile_disc(p) WITHIN GROUP
/// (ORDER BY x [DESC])` (arguments `[x, p, descending]`) and `median(x)` (0.5).
pub fn ordered_percentile(name: &str, args: &[Expr]) -> Result<(Vec<f64>, PercentileKind)> {
    if name == "median" {
        return Ok((vec![0.5], PercentileKind::default()));
    }
    let (Some(p), Some(desc)) = (args.get(1), args.get(2)) else {
        return Err(FerroError::Analysis(format!(
            "[INVALID_WITHIN_GROUP_EXPRESSION.WITHIN_GROUP_MISSING] The function `{name}` requires the WITHIN GROUP (ORDER BY ...) clause"
        )));
    };
    let (percentages, as_array) = percentages(p)?;
    if as_array {
        return Err(FerroError::Analysis(format!(
            "[DATATYPE_MISMATCH.UNEXPECTED_INPUT_TYPE] {name}'s percentage must be one number"
        )));
    }
    let descending = matches!(desc, Expr::Literal(l) if l.to_string() == "true");
    Ok((
        percentages,
        PercentileKind {
            discrete: name == "percentile_disc",
            descending,
        },
    ))
}

/// The percentages of `percentile(x, p)` / `percentile(x, array(p1, ...))`, each checked to lie
/// in `[0, 1]`, and whether they came as an array.
pub fn percentages(e: &Expr) -> Result<(Vec<f64>, bool)> {
    let (values, as_array) = match e {
        Expr::Function { name, args } if name == "array" => (
            args.iter()
                .map(|a| literal_f64(a, "percentile's percentage"))
                .collect::<Result<Vec<_>>>()?,
            true,
        ),
        // `array(...)` of constants folded into one list literal.
        Expr::Literal(l) if matches!(l.data_type(), DataType::List(_)) => {
            use arrow_array::cast::AsArray;
            let list = l.array().as_list::<i32>();
            if arrow_array::Array::is_null(list, 0) {
                return Err(FerroError::Analysis(
                    "percentile's percentage must not be NULL".into(),
                ));
            }
            let values = arrow_cast::cast(&list.value(0), &DataType::Float64)?;
            let values = values.as_primitive::<arrow_array::types::Float64Type>();
            if arrow_array::Array::null_count(values) > 0 {
                return Err(FerroError::Analysis(
                    "percentile's percentage must not be NULL".into(),
                ));
            }
            (values.values().to_vec(), true)
        }
        other => (vec![literal_f64(other, "percentile's percentage")?], false),
    };
    if let Some(bad) = values.iter().find(|p| !(0.0..=1.0).contains(*p)) {
        return Err(FerroError::Analysis(format!(
            "percentile's percentage must be between 0.0 and 1.0, got {bad}"
        )));
    }
    Ok((values, as_array))
}

/// Types Spark 4 implicitly casts to double for sum and avg (strings, parsed with ANSI
/// errors, and timestamps as seconds).
fn casts_to_double(dt: &DataType) -> bool {
    is_string(dt) || matches!(dt, DataType::Timestamp(_, _))
}

/// Whether a percentile reads `dt` as an interval: YEAR-MONTH months or DAY-TIME
/// microseconds, its result an interval of the same type.
fn percentile_interval(dt: &DataType) -> bool {
    matches!(
        dt,
        DataType::Interval(
            arrow_schema::IntervalUnit::YearMonth | arrow_schema::IntervalUnit::DayTime
        ) | DataType::Duration(arrow_schema::TimeUnit::Microsecond)
    )
}

/// A percentile's input: intervals as they are (the accumulator counts their units), anything
/// else as a DOUBLE.
fn percentile_input(e: PhysicalExpr) -> PhysicalExpr {
    if percentile_interval(&e.data_type()) {
        e
    } else {
        cast_to(e, &DataType::Float64)
    }
}

fn orderable(dt: &DataType) -> bool {
    !matches!(
        dt,
        DataType::Map(_, _) | DataType::Null | DataType::Union(_, _)
    )
}

impl AggregateExpr {
    /// Binds `call` to `schema`, checking argument types as Spark does.
    pub fn bind(call: &AggregateCall, schema: &Schema, ansi: bool, tz: &str) -> Result<Self> {
        let ctx = BindContext {
            schema,
            session_tz: tz,
            ansi: true,
            legacy_coding: false,
            legacy_charsets: false,
            decimal_precision_loss: true,
        };
        let name = call.output_name();
        let wrong_args = |n: &str| {
            FerroError::Analysis(format!(
                "{}: wrong number of arguments ({} given, {n} expected)",
                call.name,
                call.args.len()
            ))
        };
        let one = || -> Result<PhysicalExpr> {
            match call.args.first() {
                Some(a) => bind(a, &ctx),
                None => Err(wrong_args("1")),
            }
        };
        let type_error = |e: &PhysicalExpr, expected: &str| {
            FerroError::Analysis(format!(
                "[DATATYPE_MISMATCH.UNEXPECTED_INPUT_TYPE] cannot resolve {call}: the argument {} is {}, but {} expects {expected}",
                e,
                spark_type_name(&e.data_type()),
                call.name
            ))
        };
        let (func, args) = match call.name.as_str() {
            "count" => {
                let args = call
                    .args
                    .iter()
                    .filter(|a| !matches!(a, Expr::Column(c) if c == "*"))
                    .map(|a| bind(a, &ctx))
                    .collect::<Result<Vec<_>>>()?;
                (AggregateFunction::Count, args)
            }
            "sum" | "avg" | "mean" | "try_sum" | "try_avg" => {
                let e = one()?;
                let dt = e.data_type();
                let is_avg = !matches!(call.name.as_str(), "sum" | "try_sum");
                let target = if is_decimal(&dt) {
                    dt.clone()
                } else if is_integral(&dt) && !is_avg {
                    DataType::Int64
                } else if is_numeric(&dt) || dt == DataType::Null || casts_to_double(&dt) {
                    DataType::Float64
                } else {
                    return Err(type_error(&e, "a numeric argument"));
                };
                let target = if dt == DataType::Null && !is_avg {
                    DataType::Float64
                } else {
                    target
                };
                let f = if is_avg {
                    AggregateFunction::Avg
                } else if call.name == "try_sum" && target == DataType::Int64 {
                    AggregateFunction::TrySumInt
                } else {
                    AggregateFunction::Sum
                };
                (f, vec![cast_to(e, &target)])
            }
            "min" | "max" => {
                let e = one()?;
                if !orderable(&e.data_type()) {
                    return Err(type_error(&e, "an orderable argument"));
                }
                let f = if call.name == "min" {
                    AggregateFunction::Min
                } else {
                    AggregateFunction::Max
                };
                (f, vec![e])
            }
            "first" | "first_value" | "last" | "last_value" | "any_value" => {
                let e = one()?;
                let ignore_nulls = call.ignore_nulls
                    || match call.args.get(1) {
                        Some(Expr::Literal(l)) => {
                            use arrow_array::cast::AsArray;
                            l.data_type() == &DataType::Boolean
                                && l.array().as_boolean().value(0)
                        }
                        Some(other) => {
                            return Err(FerroError::Analysis(format!(
                                "{}: ignoreNulls must be a boolean constant, got {other}",
                                call.name
                            )))
                        }
                        None => false,
                    };
                let f = if call.name.starts_with("last") {
                    AggregateFunction::Last { ignore_nulls }
                } else {
                    AggregateFunction::First { ignore_nulls }
                };
                (f, vec![e])
            }
            "stddev" | "std" | "stddev_samp" | "stddev_pop" | "variance" | "var_samp"
            | "var_pop" => {
                let e = one()?;
                let dt = e.data_type();
                if !(is_numeric(&dt) || dt == DataType::Null || is_string(&dt)) {
                    return Err(type_error(&e, "a numeric argument"));
                }
                let kind = match call.name.as_str() {
                    "stddev_pop" => VarianceKind::StddevPop,
                    "var_pop" => VarianceKind::VarPop,
                    "variance" | "var_samp" => VarianceKind::VarSamp,
                    _ => VarianceKind::StddevSamp,
                };
                (
                    AggregateFunction::Variance(kind),
                    vec![cast_to(e, &DataType::Float64)],
                )
            }
            "corr" | "covar_pop" | "covar_samp" | "regr_sxx" | "regr_syy" | "regr_slope"
            | "regr_intercept" | "regr_sxy" | "regr_r2" => {
                let kind = CoMomentKind::from_name(&call.name)
                    .ok_or_else(|| FerroError::Internal(format!("no statistic {}", call.name)))?;
                let [a, b] = call.args.as_slice() else {
                    return Err(FerroError::Analysis(format!(
                        "[WRONG_NUM_ARGS.WITHOUT_SUGGESTION] The `{}` requires 2 parameters but the actual number is {}. SQLSTATE: 42605",
                        call.name,
                        call.args.len()
                    )));
                };
                let mut both = Vec::with_capacity(2);
                for e in [a, b] {
                    let e = bind(e, &ctx)?;
                    let dt = e.data_type();
                    if !(is_numeric(&dt) || dt == DataType::Null || is_string(&dt)) {
                        return Err(type_error(&e, "a numeric argument"));
                    }
                    both.push(cast_to(e, &DataType::Float64));
                }
                (AggregateFunction::CoMoment(kind), both)
            }
            "bool_and" | "every" | "bool_or" | "some" | "any" => {
                let e = one()?;
                if !(matches!(e.data_type(), DataType::Boolean | DataType::Null)
                    || is_string(&e.data_type()))
                {
                    return Err(type_error(&e, "a boolean argument"));
                }
                let f = if matches!(call.name.as_str(), "bool_and" | "every") {
                    AggregateFunction::BoolAnd
                } else {
                    AggregateFunction::BoolOr
                };
                (f, vec![cast_to(e, &DataType::Boolean)])
            }
            "collect_list" | "array_agg" => (AggregateFunction::CollectList, vec![one()?]),
            "collect_set" => (AggregateFunction::CollectSet, vec![one()?]),
            "percentile" => {
                let e = one()?;
                if !(is_numeric(&e.data_type())
                    || is_string(&e.data_type())
                    || percentile_interval(&e.data_type()))
                {
                    return Err(type_error(&e, "a numeric argument"));
                }
                let p = call.args.get(1).ok_or_else(|| wrong_args("2"))?;
                let (percentages, as_array) = percentages(p)?;
                (
                    AggregateFunction::Percentile {
                        percentages,
                        as_array,
                        kind: PercentileKind::default(),
                    },
                    vec![percentile_input(e)],
                )
            }
            "percentile_cont" | "percentile_disc" | "median" => {
                let e = one()?;
                if !(is_numeric(&e.data_type()) || percentile_interval(&e.data_type())) {
                    return Err(type_error(&e, "a numeric argument"));
                }
                let (percentages, kind) = ordered_percentile(&call.name, &call.args)?;
                (
                    AggregateFunction::Percentile {
                        percentages,
                        as_array: false,
                        kind,
                    },
                    vec![percentile_input(e)],
                )
            }
            "bit_and" | "bit_or" | "bit_xor" => {
                let e = one()?;
                if !is_integral(&e.data_type()) {
                    return Err(type_error(&e, "an integral argument"));
                }
                let op = match call.name.as_str() {
                    "bit_and" => BitOp::And,
                    "bit_or" => BitOp::Or,
                    _ => BitOp::Xor,
                };
                (AggregateFunction::Bits(op), vec![e])
            }
            "skewness" | "kurtosis" => {
                let e = one()?;
                if !(is_numeric(&e.data_type())
                    || is_string(&e.data_type())
                    || e.data_type() == DataType::Null)
                {
                    return Err(type_error(&e, "a numeric argument"));
                }
                let kind = if call.name == "skewness" {
                    MomentKind::Skewness
                } else {
                    MomentKind::Kurtosis
                };
                (
                    AggregateFunction::Moment(kind),
                    vec![cast_to(e, &DataType::Float64)],
                )
            }
            "histogram_numeric" => {
                // A string reads as a DOUBLE (Spark's implicit cast, refusing text that is no
                // number).
                let e = match one()? {
                    e if is_string(&e.data_type()) => cast_to(e, &DataType::Float64),
                    e => e,
                };
                if !histogram_input(&e.data_type()) {
                    return Err(FerroError::Analysis(format!(
                        "[DATATYPE_MISMATCH.UNEXPECTED_INPUT_TYPE] Cannot resolve \"{call}\" due to data type mismatch: the first parameter requires a numeric, date, timestamp or interval type, however {e} has the type {}",
                        spark_type_name(&e.data_type())
                    )));
                }
                let nb = call.args.get(1).ok_or_else(|| wrong_args("2"))?;
                let bins = literal_f64(nb, "histogram_numeric's number of bins")?;
                if bins < 2.0 || bins.fract() != 0.0 {
                    return Err(FerroError::Analysis(format!(
                        "[DATATYPE_MISMATCH.VALUE_OUT_OF_RANGE] Cannot resolve \"{call}\" due to data type mismatch: histogram_numeric needs nBins to be at least 2, but you supplied {bins}"
                    )));
                }
                (
                    AggregateFunction::HistogramNumeric {
                        bins: bins as usize,
                    },
                    vec![e],
                )
            }
            "max_by" | "min_by" => {
                let [v, o] = call.args.as_slice() else {
                    return Err(wrong_args("2"));
                };
                let (v, o) = (bind(v, &ctx)?, bind(o, &ctx)?);
                if !orderable(&o.data_type()) {
                    return Err(type_error(&o, "an orderable argument"));
                }
                let ord = o.data_type();
                (
                    AggregateFunction::ExtremeBy {
                        max: call.name == "max_by",
                        ord,
                    },
                    vec![v, o],
                )
            }
            "product" => {
                let e = one()?;
                let dt = e.data_type();
                if !(is_numeric(&dt) || dt == DataType::Null || is_string(&dt)) {
                    return Err(type_error(&e, "a numeric argument"));
                }
                (AggregateFunction::Product, vec![cast_to(e, &DataType::Float64)])
            }
            "percentile_approx" | "approx_percentile" => {
                // Text reads as a DOUBLE (Spark's implicit cast, refusing text that is no
                // number).
                let e = match one()? {
                    e if is_string(&e.data_type()) => cast_to(e, &DataType::Float64),
                    e => e,
                };
                let out = e.data_type();
                let numeric_like = is_numeric(&out)
                    || matches!(out, DataType::Date32 | DataType::Timestamp(..))
                    || percentile_interval(&out);
                if !numeric_like {
                    return Err(type_error(
                        &e,
                        "a numeric, date, timestamp or interval argument",
                    ));
                }
                let p = call.args.get(1).ok_or_else(|| wrong_args("2 or 3"))?;
                let (percentages, as_array) = percentages(p)?;
                let accuracy = match call.args.get(2) {
                    Some(a) => literal_f64(a, "percentile_approx's accuracy")?,
                    None => 10_000.0,
                };
                if !(accuracy > 0.0 && accuracy <= f64::from(i32::MAX)) || accuracy.fract() != 0.0 {
                    return Err(FerroError::Analysis(format!(
                        "[DATATYPE_MISMATCH.VALUE_OUT_OF_RANGE] Cannot resolve \"{call}\" due to data type mismatch: The accuracy must be between (0, 2147483647] (current value = {accuracy}). SQLSTATE: 42K09"
                    )));
                }
                (
                    AggregateFunction::ApproxPercentile {
                        percentages,
                        as_array,
                        accuracy: accuracy as i64,
                        out,
                    },
                    vec![e],
                )
            }
            "approx_count_distinct" => {
                let e = one()?;
                let relative_sd = match call.args.get(1) {
                    Some(a) => literal_f64(a, "approx_count_distinct's relativeSD")?,
                    None => 0.05,
                };
                (AggregateFunction::ApproxCountDistinct { relative_sd }, vec![e])
            }
            other => {
                return Err(FerroError::Analysis(format!(
                    "[UNRESOLVED_ROUTINE] unknown aggregate function `{other}`; supported: count, sum, avg, min, max, first, last, stddev, stddev_pop, variance, var_pop, bool_and, bool_or, collect_list, collect_set, percentile, histogram_numeric, skewness, kurtosis, bit_and, bit_or, bit_xor, approx_count_distinct"
                )))
            }
        };
        // `try_sum` / `try_avg` give NULL where `sum` / `avg` raise (decimal overflow).
        let ansi = ansi && !matches!(call.name.as_str(), "try_sum" | "try_avg");
        let input_type = args.first().map_or(DataType::Null, PhysicalExpr::data_type);
        let input_type = if input_type == DataType::Null
            && !matches!(func, AggregateFunction::HistogramNumeric { .. })
        {
            DataType::Float64
        } else {
            input_type
        };
        Ok(Self {
            func,
            args,
            input_type,
            name,
            mode: AggregateMode::Complete,
            state_columns: Vec::new(),
            distinct_set: false,
            ansi,
        })
    }

    /// The same aggregate in another mode.
    pub fn with_mode(&self, mode: AggregateMode) -> Self {
        Self {
            mode,
            ..self.clone()
        }
    }

    /// Spark's result type.
    pub fn result_type(&self) -> DataType {
        let t = &self.input_type;
        match &self.func {
            AggregateFunction::Count | AggregateFunction::ApproxCountDistinct { .. } => {
                DataType::Int64
            }
            AggregateFunction::Sum => match t {
                DataType::Decimal128(p, s) => DataType::Decimal128((p + 10).min(38), *s),
                DataType::Int64 => DataType::Int64,
                _ => DataType::Float64,
            },
            AggregateFunction::Avg => match t {
                DataType::Decimal128(p, s) => {
                    DataType::Decimal128((p + 4).min(38), (s + 4).min(38))
                }
                _ => DataType::Float64,
            },
            AggregateFunction::Min
            | AggregateFunction::Max
            | AggregateFunction::First { .. }
            | AggregateFunction::Last { .. }
            | AggregateFunction::ExtremeBy { .. }
            | AggregateFunction::Bits(_) => t.clone(),
            AggregateFunction::Product => DataType::Float64,
            AggregateFunction::TrySumInt => DataType::Int64,
            AggregateFunction::ApproxPercentile { as_array, out, .. } => {
                if *as_array {
                    // Spark's `array<t>` without NULL elements.
                    DataType::List(std::sync::Arc::new(Field::new(
                        "element",
                        out.clone(),
                        false,
                    )))
                } else {
                    out.clone()
                }
            }
            AggregateFunction::Variance(_)
            | AggregateFunction::CoMoment(_)
            | AggregateFunction::Moment(_) => DataType::Float64,
            AggregateFunction::BoolAnd | AggregateFunction::BoolOr => DataType::Boolean,
            AggregateFunction::CollectList | AggregateFunction::CollectSet => {
                DataType::List(std::sync::Arc::new(Field::new_list_field(t.clone(), true)))
            }
            AggregateFunction::HistogramNumeric { .. } => histogram_type(t),
            AggregateFunction::Percentile { as_array, .. } => {
                // An interval's percentile is an interval of its type (Spark truncates).
                let one = if percentile_interval(t) {
                    t.clone()
                } else {
                    DataType::Float64
                };
                if *as_array {
                    DataType::List(std::sync::Arc::new(Field::new_list_field(one, true)))
                } else {
                    one
                }
            }
        }
    }

    /// Whether the result can be NULL (count and approx_count_distinct never are).
    pub fn result_nullable(&self) -> bool {
        !matches!(
            self.func,
            AggregateFunction::Count | AggregateFunction::ApproxCountDistinct { .. }
        )
    }

    /// The same aggregate computed over a set of distinct values per group.
    pub fn over_distinct_set(&self) -> Result<Self> {
        // count(DISTINCT a, b) keeps (a, b) tuples: one struct value per row.
        let input_type = if self.args.len() > 1 {
            let fields: Vec<Field> = self
                .args
                .iter()
                .enumerate()
                .map(|(i, a)| Field::new(format!("_{i}"), a.data_type(), true))
                .collect();
            DataType::Struct(fields.into())
        } else {
            self.input_type.clone()
        };
        Ok(Self {
            distinct_set: true,
            input_type,
            ..self.clone()
        })
    }

    /// The intermediate state columns, named `<name>.<field>`.
    pub fn state_fields(&self) -> Vec<Field> {
        let t = &self.input_type;
        let f =
            |suffix: &str, dt: DataType| Field::new(format!("{}.{suffix}", self.name), dt, true);
        if self.distinct_set {
            let list = DataType::List(std::sync::Arc::new(Field::new_list_field(t.clone(), true)));
            return vec![f("distinct", list)];
        }
        match &self.func {
            AggregateFunction::Count => vec![f("count", DataType::Int64)],
            AggregateFunction::Sum => match t {
                DataType::Decimal128(p, s) => vec![
                    f("sum", DataType::Decimal128((p + 10).min(38), *s)),
                    f("isEmpty", DataType::Boolean),
                ],
                _ => vec![f("sum", self.result_type())],
            },
            AggregateFunction::Avg => match t {
                DataType::Decimal128(p, s) => vec![
                    f("sum", DataType::Decimal128((p + 10).min(38), *s)),
                    f("count", DataType::Int64),
                ],
                _ => vec![f("sum", DataType::Float64), f("count", DataType::Int64)],
            },
            AggregateFunction::Min | AggregateFunction::Max => vec![f("value", t.clone())],
            AggregateFunction::First { .. } | AggregateFunction::Last { .. } => {
                vec![f("value", t.clone()), f("valueSet", DataType::Boolean)]
            }
            AggregateFunction::Variance(_) => vec![
                f("n", DataType::Float64),
                f("avg", DataType::Float64),
                f("m2", DataType::Float64),
            ],
            AggregateFunction::Bits(_) => vec![f("bits", DataType::Int64)],
            AggregateFunction::Moment(_) => ["n", "avg", "m2", "m3", "m4"]
                .iter()
                .map(|n| f(n, DataType::Float64))
                .collect(),
            AggregateFunction::CoMoment(_) => {
                ["n", "xAvg", "yAvg", "ck", "xMk", "yMk", "xM2", "yM2"]
                    .iter()
                    .map(|n| f(n, DataType::Float64))
                    .collect()
            }
            AggregateFunction::BoolAnd | AggregateFunction::BoolOr => {
                vec![f("value", DataType::Boolean)]
            }
            AggregateFunction::CollectList | AggregateFunction::CollectSet => {
                vec![f("buffer", self.result_type())]
            }
            AggregateFunction::Percentile { .. } => vec![f(
                "buffer",
                DataType::List(std::sync::Arc::new(Field::new_list_field(
                    DataType::Float64,
                    true,
                ))),
            )],
            AggregateFunction::ApproxCountDistinct { .. } => {
                vec![f("registers", DataType::Binary)]
            }
            AggregateFunction::HistogramNumeric { .. } => vec![f("bins", histogram_state_type())],
            AggregateFunction::ExtremeBy { ord, .. } => {
                vec![f("value", t.clone()), f("ord", ord.clone())]
            }
            AggregateFunction::Product => vec![f("product", DataType::Float64)],
            AggregateFunction::TrySumInt => vec![
                f("sum", DataType::Int64),
                f("overflowed", DataType::Boolean),
            ],
            AggregateFunction::ApproxPercentile { .. } => vec![f("summary", DataType::Binary)],
        }
    }

    /// The output fields this aggregate contributes in its mode.
    pub fn output_fields(&self) -> Vec<Field> {
        if self.mode.emits_final() {
            vec![Field::new(
                self.name.clone(),
                self.result_type(),
                self.result_nullable(),
            )]
        } else {
            self.state_fields()
        }
    }

    /// A fresh accumulator for every group's buffer.
    pub fn create_accumulator(&self) -> Result<Box<dyn GroupsAccumulator>> {
        let t = &self.input_type;
        if self.distinct_set {
            let inner = Self {
                distinct_set: false,
                ..self.clone()
            };
            return Ok(Box::new(DistinctSetAccumulator::new(
                collect(t, true)?,
                inner,
            )));
        }
        Ok(match &self.func {
            AggregateFunction::Count => Box::new(CountAccumulator::default()),
            AggregateFunction::Sum => match t {
                DataType::Decimal128(p, s) => {
                    Box::new(DecimalSumAccumulator::sum(*p, *s, self.ansi))
                }
                DataType::Int64 => Box::new(SumIntAccumulator::new(self.ansi)),
                _ => Box::new(FloatSumAccumulator::sum()),
            },
            AggregateFunction::Avg => match t {
                DataType::Decimal128(p, s) => {
                    Box::new(DecimalSumAccumulator::avg(*p, *s, self.ansi))
                }
                _ => Box::new(FloatSumAccumulator::avg()),
            },
            AggregateFunction::Min => min_max(t, false)?,
            AggregateFunction::Max => min_max(t, true)?,
            AggregateFunction::First { ignore_nulls } => {
                Box::new(FirstLastAccumulator::new(t, false, *ignore_nulls)?)
            }
            AggregateFunction::Last { ignore_nulls } => {
                Box::new(FirstLastAccumulator::new(t, true, *ignore_nulls)?)
            }
            AggregateFunction::Variance(k) => Box::new(VarianceAccumulator::new(*k)),
            AggregateFunction::Moment(k) => Box::new(MomentAccumulator::new(*k)),
            AggregateFunction::Bits(op) => Box::new(BitAccumulator::new(*op, t.clone())),
            AggregateFunction::CoMoment(k) => Box::new(CoMomentAccumulator::new(*k)),
            AggregateFunction::BoolAnd => Box::new(BoolAccumulator::new(false)),
            AggregateFunction::BoolOr => Box::new(BoolAccumulator::new(true)),
            AggregateFunction::CollectList => collect(t, false)?,
            AggregateFunction::CollectSet => collect(t, true)?,
            AggregateFunction::Percentile {
                percentages,
                as_array,
                kind,
            } => Box::new(
                PercentileAccumulator::new(percentages.clone(), *as_array, *kind)
                    .of_intervals(percentile_interval(t).then(|| t.clone())),
            ),
            AggregateFunction::ApproxCountDistinct { relative_sd } => {
                Box::new(HllAccumulator::new(*relative_sd)?)
            }
            AggregateFunction::HistogramNumeric { bins } => {
                Box::new(HistogramAccumulator::new(*bins, t.clone()))
            }
            AggregateFunction::ExtremeBy { max, ord } => {
                Box::new(ExtremeByAccumulator::new(t, ord, *max)?)
            }
            AggregateFunction::Product => Box::new(ProductAccumulator::default()),
            AggregateFunction::TrySumInt => Box::new(SumIntAccumulator::try_sum()),
            AggregateFunction::ApproxPercentile {
                percentages,
                as_array,
                accuracy,
                out,
            } => Box::new(ApproxPercentileAccumulator::new(
                percentages.clone(),
                *as_array,
                *accuracy,
                out.clone(),
            )),
        })
    }
}
