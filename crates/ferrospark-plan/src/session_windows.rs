//! `SessionWindowing`: a `session_window(time, gap)` grouping key planned as Spark plans it
//! (its analyzer rule of that name, then `MergingSessionsExec`):
//!
//! ```text
//! Aggregate [session_start, session_end, keys...]     session_window = named_struct(start, end)
//! +- Window [session_start(s, e), session_end(s, e)], [keys...], [s ASC NULLS FIRST]
//!    +- Filter e > s                                  drops NULL times, NULL or non-positive gaps
//!       +- Project [input..., s = time, e = time + gap]
//! ```
//!
//! Each row opens the span `[time, time + gap)`; the `Window` merges the spans of one key,
//! sorted by start, into sessions (a span starting at most at the open session's end joins
//! it); the aggregate then groups by each row's session and the other keys.

use std::sync::Arc;

use arrow_array::Array;
use arrow_schema::DataType;
use ferrospark_common::{FerroError, Result};
use ferrospark_expr::expr::{BinaryOp, Literal};
use ferrospark_expr::Expr;

use crate::analyzer::expr_type;
use crate::builder::{strip_ids, PlanBuilder};
use crate::logical::expr_util::transform_down;
use crate::logical::{Attr, LogicalPlan, SortExpr, WindowCallExpr};
use crate::physical::window::window_call_field;

/// What an aggregation becomes once its session window is planned.
pub(crate) struct SessionWindowed {
    /// The input with each row's session bounds computed.
    pub input: Arc<LogicalPlan>,
    /// The grouping items as written, the session window's replaced by its bounds.
    pub group_items: Vec<Expr>,
    /// The resolved grouping keys, likewise.
    pub group: Vec<Expr>,
    /// The results, the session window read as a struct of its bounds.
    pub results: Vec<Expr>,
}

/// A constant interval's length in microseconds.
fn literal_micros(e: &Expr) -> Option<i64> {
    let Expr::Literal(l) = e else { return None };
    let a = l.array();
    let d = a
        .as_any()
        .downcast_ref::<arrow_array::DurationMicrosecondArray>()?;
    d.is_valid(0).then(|| d.value(0))
}

/// Where the one time or session window among grouping keys `group` is (`is` tells one), if
/// any; two are refused, as Spark refuses them.
pub(crate) fn window_key(group: &[Expr], is: fn(&Expr) -> bool) -> Result<Option<usize>> {
    let mut at = group
        .iter()
        .enumerate()
        .filter(|(_, g)| is(g))
        .map(|(i, _)| i);
    match (at.next(), at.next()) {
        (None, _) => Ok(None),
        (Some(i), None) => Ok(Some(i)),
        _ => Err(FerroError::Analysis(
            "Multiple time/session window expressions would result in a cartesian product of rows, therefore they are currently not supported.".into(),
        )),
    }
}

fn is_session_window(e: &Expr) -> bool {
    matches!(e, Expr::Function { name, .. } if name.eq_ignore_ascii_case("session_window"))
}

impl PlanBuilder {
    /// Plans the `session_window(time, gap)` among `group`, if there is one (see the module
    /// doc); `None` when there is none.
    pub(crate) fn session_windowing(
        &self,
        input: &Arc<LogicalPlan>,
        group_items: &[Expr],
        group: &[Expr],
        results: &[Expr],
    ) -> Result<Option<SessionWindowed>> {
        let Some(at) = window_key(group, is_session_window)? else {
            return Ok(None);
        };
        let window_call = &group[at];
        let Expr::Function { args, .. } = window_call else {
            return Err(FerroError::Internal("session_window is not a call".into()));
        };
        let [time, gap] = args.as_slice() else {
            return Err(FerroError::Analysis(format!(
                "[WRONG_NUM_ARGS.WITHOUT_SUGGESTION] The `session_window` requires 2 parameters (time, gap) but the actual number is {} in \"{}\".",
                args.len(),
                strip_ids(&window_call.to_string())
            )));
        };
        let in_attrs = input.output();
        let start = self.session_time(time, &in_attrs)?;
        let gap = self.session_gap(gap, &in_attrs)?;
        let span_type = expr_type(&start, &in_attrs, &self.cfg)?;
        let s = self.attr("__session_start", span_type.clone(), true);
        let e = self.attr("__session_end", span_type, true);
        // The end reads the start's column, so a cast time is converted once.
        let mut projected: Vec<(Expr, Attr)> =
            in_attrs.iter().map(|a| (a.column(), a.clone())).collect();
        projected.push((start, s.clone()));
        let starts = PlanBuilder::project_resolved(input.clone(), projected);
        let mut projected: Vec<(Expr, Attr)> = starts
            .output()
            .iter()
            .map(|a| (a.column(), a.clone()))
            .collect();
        projected.push((
            Expr::Binary {
                left: Box::new(s.column()),
                op: BinaryOp::Plus,
                right: Box::new(gap.clone()),
            },
            e.clone(),
        ));
        let spans = PlanBuilder::project_resolved(starts, projected);
        // Spark keeps the spans with end > start. With a constant gap that is "time is not
        // NULL" (or nothing at all), which the scan can check without computing a span.
        let predicate = match literal_micros(&gap) {
            Some(g) if g > 0 => Expr::IsNotNull(Box::new(time.clone())),
            Some(_) => Expr::Literal(Literal::boolean(false)),
            None => Expr::Binary {
                left: Box::new(e.column()),
                op: BinaryOp::Gt,
                right: Box::new(s.column()),
            },
        };
        let spans = Arc::new(LogicalPlan::Filter {
            input: spans,
            predicate,
        });

        let keys: Vec<Expr> = group
            .iter()
            .enumerate()
            .filter(|(i, _)| *i != at)
            .map(|(_, g)| g.clone())
            .collect();
        let span_attrs = spans.output();
        let mut calls = Vec::with_capacity(2);
        for fname in ["session_start", "session_end"] {
            let call = WindowCallExpr {
                func: Expr::Function {
                    name: fname.into(),
                    args: vec![s.column(), e.column()],
                },
                partition_by: keys.clone(),
                order_by: vec![SortExpr {
                    expr: s.column(),
                    ascending: true,
                    nulls_first: true,
                }],
                frame: None,
            };
            let field = window_call_field(&call, &span_attrs, &self.cfg)?;
            let attr = self.attr(fname, field.data_type().clone(), field.is_nullable());
            calls.push((call, attr));
        }
        let (merged_start, merged_end) = (calls[0].1.clone(), calls[1].1.clone());
        let sessions = Arc::new(LogicalPlan::Window {
            input: spans,
            exprs: calls,
        });

        let mut new_items = Vec::with_capacity(group.len() + 1);
        let mut new_group = Vec::with_capacity(group.len() + 1);
        for (i, (item, g)) in group_items.iter().zip(group).enumerate() {
            if i == at {
                for a in [&merged_start, &merged_end] {
                    new_items.push(a.column());
                    new_group.push(a.column());
                }
            } else {
                new_items.push(item.clone());
                new_group.push(g.clone());
            }
        }
        let as_struct = Expr::Function {
            name: "named_struct".into(),
            args: vec![
                Expr::Literal(Literal::string("start")),
                merged_start.column(),
                Expr::Literal(Literal::string("end")),
                merged_end.column(),
            ],
        };
        let results = results
            .iter()
            .map(|r| {
                transform_down(
                    r,
                    &mut |x| Ok((x == window_call).then(|| as_struct.clone())),
                )
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(Some(SessionWindowed {
            input: sessions,
            group_items: new_items,
            group: new_group,
            results,
        }))
    }

    /// A session window's time as a timestamp (a date is its midnight in the session zone).
    fn session_time(&self, time: &Expr, attrs: &[Attr]) -> Result<Expr> {
        match expr_type(time, attrs, &self.cfg)? {
            DataType::Timestamp(..) => Ok(time.clone()),
            DataType::Date32 => Ok(Expr::Cast {
                expr: Box::new(time.clone()),
                type_name: "timestamp".into(),
            }),
            other => Err(FerroError::Analysis(format!(
                "[DATATYPE_MISMATCH.UNEXPECTED_INPUT_TYPE] Cannot resolve \"session_window({})\" due to data type mismatch: the time requires the \"TIMESTAMP\" type, however it has the type {}. Cast it to a timestamp.",
                strip_ids(&time.to_string()),
                ferrospark_expr::types::spark_type_name(&other)
            ))),
        }
    }

    /// A session window's gap as an interval: a literal text read now (so a bad one is an
    /// error at analysis), per-row text cast as Spark casts it (NULL where it is not an
    /// interval), an interval as it is.
    fn session_gap(&self, gap: &Expr, attrs: &[Attr]) -> Result<Expr> {
        let dt = expr_type(gap, attrs, &self.cfg)?;
        if let Expr::Literal(l) = gap {
            if let Some(text) = l
                .array()
                .as_any()
                .downcast_ref::<arrow_array::StringArray>()
                .filter(|a| a.is_valid(0))
                .map(|a| a.value(0).to_string())
            {
                let micros = ferrospark_expr::interval::interval_text_micros(&text)?
                    .ok_or_else(|| {
                        FerroError::Analysis(format!(
                            "[INVALID_INTERVAL_FORMAT] The session window's gap '{text}' is not an interval; write it as '10 minutes' or '1 hour 30 minutes'."
                        ))
                    })?;
                return Ok(Expr::Literal(Literal::new(Arc::new(
                    arrow_array::DurationMicrosecondArray::from(vec![micros]),
                ))));
            }
        }
        match dt {
            // Per-row text: a day-time interval, NULL (the row dropped) where it is not one.
            DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View => Ok(Expr::TryCast {
                expr: Box::new(gap.clone()),
                type_name: "interval day to second".into(),
            }),
            DataType::Duration(_) | DataType::Interval(_) | DataType::Null => Ok(gap.clone()),
            other => Err(FerroError::Analysis(format!(
                "[DATATYPE_MISMATCH.UNEXPECTED_INPUT_TYPE] Cannot resolve the session window's gap \"{}\" due to data type mismatch: it requires interval text ('10 minutes') or an interval, however it has the type {}.",
                strip_ids(&gap.to_string()),
                ferrospark_expr::types::spark_type_name(&other)
            ))),
        }
    }
}

/// `expr` with the name `session_window` (SQL's `session_window.start`) read as the
/// `session_window(...)` call among `group`, as Spark resolves it; unchanged when the
/// grouping has no session window or `has_column` says the input has such a column.
pub(crate) fn session_window_references(
    expr: &Expr,
    group: &[Expr],
    has_column: impl Fn(&str) -> bool,
) -> Result<Expr> {
    let Some(call) = group.iter().find(|g| is_session_window(g)) else {
        return Ok(expr.clone());
    };
    if has_column("session_window") {
        return Ok(expr.clone());
    }
    transform_down(expr, &mut |x| {
        Ok(match x {
            Expr::Column(n) if n.eq_ignore_ascii_case("session_window") => Some(call.clone()),
            _ => None,
        })
    })
}
