//! `TimeWindowing`: a `window(time, duration[, slide[, start]])` grouping key planned as
//! Spark's analyzer rule of that name plans it.
//!
//! ```text
//! tumbling (slide = duration):
//!   Aggregate [window, keys...]
//!   +- Project [input..., window = named_struct(start, end)]
//!      +- Filter time IS NOT NULL
//! sliding (k = ceil(duration / slide) windows hold each time):
//!   Aggregate [window, keys...]
//!   +- Filter time >= window.start AND time < window.end
//!      +- Generate explode(array(w_0, ..., w_{k-1})) AS window
//! ```
//!
//! With `t` the time in microseconds, the last window to start at or before it starts at
//! `t - pmod(t - start, slide)`; window `i` starts `i` slides earlier and lasts `duration`.
//! Durations are constant intervals of days and smaller units, as Spark requires.

use std::sync::Arc;

use arrow_array::Array;
use arrow_schema::{DataType, Field, Fields, TimeUnit};
use ferrospark_common::{FerroError, Result};
use ferrospark_expr::expr::{BinaryOp, Literal};
use ferrospark_expr::Expr;

use crate::analyzer::expr_type;
use crate::builder::{strip_ids, PlanBuilder};
use crate::logical::expr_util::transform_down;
use crate::logical::{Attr, GeneratorKind, LogicalPlan};
use crate::session_windows::SessionWindowed;

fn is_time_window(e: &Expr) -> bool {
    matches!(e, Expr::Function { name, .. } if name.eq_ignore_ascii_case("window"))
}

fn call(name: &str, args: Vec<Expr>) -> Expr {
    Expr::Function {
        name: name.into(),
        args,
    }
}

fn binary(left: Expr, op: BinaryOp, right: Expr) -> Expr {
    Expr::Binary {
        left: Box::new(left),
        op,
        right: Box::new(right),
    }
}

fn micros(v: i64) -> Expr {
    Expr::Literal(Literal::bigint(v))
}

/// The struct type of a window.
pub(crate) fn window_type(tz: &str) -> DataType {
    let t = DataType::Timestamp(TimeUnit::Microsecond, Some(tz.into()));
    DataType::Struct(Fields::from(vec![
        Field::new("start", t.clone(), true),
        Field::new("end", t, true),
    ]))
}

impl PlanBuilder {
    /// Plans the `window(...)` among `group`, if there is one (see the module doc).
    pub(crate) fn time_windowing(
        &self,
        input: &Arc<LogicalPlan>,
        group_items: &[Expr],
        group: &[Expr],
        results: &[Expr],
    ) -> Result<Option<SessionWindowed>> {
        let Some(at) = crate::session_windows::window_key(group, is_time_window)? else {
            return Ok(None);
        };
        let window_call = &group[at];
        let Expr::Function { args, .. } = window_call else {
            return Err(FerroError::Internal("window is not a call".into()));
        };
        let shown = strip_ids(&window_call.to_string());
        let (time, duration, slide, start) = match args.as_slice() {
            [t, d] => (t, d, None, None),
            [t, d, s] => (t, d, Some(s), None),
            [t, d, s, o] => (t, d, Some(s), Some(o)),
            _ => {
                return Err(FerroError::Analysis(format!(
                    "[WRONG_NUM_ARGS.WITHOUT_SUGGESTION] The `window` requires 2 to 4 parameters (time, windowDuration[, slideDuration[, startTime]]) but the actual number is {} in \"{shown}\".",
                    args.len()
                )))
            }
        };
        let in_attrs = input.output();
        let time = match expr_type(time, &in_attrs, &self.cfg)? {
            DataType::Timestamp(_, Some(_)) => time.clone(),
            DataType::Date32 | DataType::Utf8 => Expr::Cast {
                expr: Box::new(time.clone()),
                type_name: "timestamp".into(),
            },
            other => {
                return Err(FerroError::Analysis(format!(
                    "[DATATYPE_MISMATCH.UNEXPECTED_INPUT_TYPE] Cannot resolve \"{shown}\" due to data type mismatch: the first parameter requires the \"TIMESTAMP\" type, however \"{}\" has the type {}.",
                    strip_ids(&time.to_string()),
                    ferrospark_expr::types::spark_type_name(&other)
                )))
            }
        };
        let duration = constant_micros(duration, "windowDuration", &shown)?;
        let slide = match slide {
            Some(s) => constant_micros(s, "slideDuration", &shown)?,
            None => duration,
        };
        let start = match start {
            Some(o) => constant_micros(o, "startTime", &shown)?,
            None => 0,
        };
        for (what, v) in [("window duration", duration), ("slide duration", slide)] {
            if v <= 0 {
                return Err(FerroError::Analysis(format!(
                    "[DATATYPE_MISMATCH.VALUE_OUT_OF_RANGE] Cannot resolve \"{shown}\": the {what} ({v} µs) must be greater than 0."
                )));
            }
        }
        if slide > duration {
            return Err(FerroError::Analysis(format!(
                "[DATATYPE_MISMATCH.PARAMETER_CONSTRAINT_VIOLATION] Cannot resolve \"{shown}\": the slide duration ({slide} µs) must be less than or equal to the windowDuration ({duration} µs)."
            )));
        }
        if start.abs() >= slide {
            return Err(FerroError::Analysis(format!(
                "[DATATYPE_MISMATCH.PARAMETER_CONSTRAINT_VIOLATION] Cannot resolve \"{shown}\": the absolute value of the start time ({start} µs) must be less than the slideDuration ({slide} µs)."
            )));
        }
        let t = call("unix_micros", vec![time.clone()]);
        let last_start = binary(
            t.clone(),
            BinaryOp::Minus,
            call(
                "pmod",
                vec![binary(t, BinaryOp::Minus, micros(start)), micros(slide)],
            ),
        );
        let window_i = |i: i64| {
            let s = binary(last_start.clone(), BinaryOp::Minus, micros(i * slide));
            call(
                "named_struct",
                vec![
                    Expr::Literal(Literal::string("start")),
                    call("timestamp_micros", vec![s.clone()]),
                    Expr::Literal(Literal::string("end")),
                    call(
                        "timestamp_micros",
                        vec![binary(s, BinaryOp::Plus, micros(duration))],
                    ),
                ],
            )
        };
        let not_null = Expr::IsNotNull(Box::new(time.clone()));
        let (windowed, window) = if slide == duration {
            let kept = Arc::new(LogicalPlan::Filter {
                input: input.clone(),
                predicate: not_null,
            });
            let window = self.attr("window", window_type(self.cfg.session_time_zone()), true);
            let mut projected: Vec<(Expr, Attr)> =
                in_attrs.iter().map(|a| (a.column(), a.clone())).collect();
            projected.push((window_i(0), window.clone()));
            (PlanBuilder::project_resolved(kept, projected), window)
        } else {
            let k = (duration + slide - 1) / slide;
            let all = call("array", (0..k).map(window_i).collect());
            let (generated, attrs) = self.generate(
                input.clone(),
                GeneratorKind::Explode,
                false,
                vec![all],
                &["window".to_string()],
                None,
            )?;
            let window = attrs
                .into_iter()
                .next()
                .ok_or_else(|| FerroError::Internal("explode made no column".into()))?;
            let field = |f: &str| Expr::Field(Box::new(window.column()), f.into());
            let inside = Expr::Binary {
                left: Box::new(binary(time.clone(), BinaryOp::GtEq, field("start"))),
                op: BinaryOp::And,
                right: Box::new(binary(time, BinaryOp::Lt, field("end"))),
            };
            let kept = Arc::new(LogicalPlan::Filter {
                input: generated,
                predicate: inside,
            });
            (kept, window)
        };
        let mut new_items = Vec::with_capacity(group.len());
        let mut new_group = Vec::with_capacity(group.len());
        for (i, (item, g)) in group_items.iter().zip(group).enumerate() {
            if i == at {
                new_items.push(window.column());
                new_group.push(window.column());
            } else {
                new_items.push(item.clone());
                new_group.push(g.clone());
            }
        }
        let results = results
            .iter()
            .map(|r| transform_down(r, &mut |x| Ok((x == window_call).then(|| window.column()))))
            .collect::<Result<Vec<_>>>()?;
        Ok(Some(SessionWindowed {
            input: windowed,
            group_items: new_items,
            group: new_group,
            results,
        }))
    }
}

/// A window's duration, slide or start in microseconds: interval text (`'10 minutes'`) or an
/// integer count of microseconds, as Spark takes them (an interval literal is refused, and so
/// are months).
fn constant_micros(e: &Expr, what: &str, shown: &str) -> Result<i64> {
    let bad = || {
        FerroError::Analysis(format!(
            "The duration and time inputs to window must be an integer, long or string literal: the {what} of \"{shown}\" is {} (write interval text such as '10 minutes', or microseconds).",
            strip_ids(&e.to_string())
        ))
    };
    let Expr::Literal(l) = e.without_written() else {
        return Err(bad());
    };
    let a = l.array();
    if let Some(s) = a.as_any().downcast_ref::<arrow_array::StringArray>() {
        if s.is_null(0) {
            return Err(bad());
        }
        let text = s.value(0);
        if let Ok((cal, _)) = ferrospark_expr::interval::parse_calendar(text) {
            if cal.months != 0 {
                return Err(FerroError::Analysis(format!(
                    "Intervals greater than a month is not supported ({text}) in \"{shown}\"."
                )));
            }
            return Ok(i64::from(cal.days) * 86_400_000_000 + cal.micros);
        }
        let text = format!("interval {text}");
        return ferrospark_expr::interval::parse_calendar(&text)
            .ok()
            .filter(|(cal, _)| cal.months == 0)
            .map(|(cal, _)| i64::from(cal.days) * 86_400_000_000 + cal.micros)
            .ok_or_else(bad);
    }
    // An integer is a count of microseconds, as in Spark.
    if let Some(v) = a.as_any().downcast_ref::<arrow_array::Int32Array>() {
        return v.is_valid(0).then(|| i64::from(v.value(0))).ok_or_else(bad);
    }
    if let Some(v) = a.as_any().downcast_ref::<arrow_array::Int64Array>() {
        return v.is_valid(0).then(|| v.value(0)).ok_or_else(bad);
    }
    Err(bad())
}

/// `expr` with the name `window` (SQL's `window.start`) read as the `window(...)` call among
/// `group`, unless `has_column` says the input has such a column.
pub(crate) fn time_window_references(
    expr: &Expr,
    group: &[Expr],
    has_column: impl Fn(&str) -> bool,
) -> Result<Expr> {
    let Some(call) = group.iter().find(|g| is_time_window(g)) else {
        return Ok(expr.clone());
    };
    if has_column("window") {
        return Ok(expr.clone());
    }
    transform_down(expr, &mut |x| {
        Ok(match x {
            Expr::Column(n) if n.eq_ignore_ascii_case("window") => Some(call.clone()),
            _ => None,
        })
    })
}
