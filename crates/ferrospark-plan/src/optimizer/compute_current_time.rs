//! `ComputeCurrentTime`: `current_timestamp()`, `now()`, `localtimestamp()` and
//! `current_date()` read the clock once per query, as Catalyst's rule of that name makes them:
//! every call in the plan becomes the same literal, so `current_timestamp() =
//! current_timestamp()` is true and every row of every operator sees one instant.

use std::cell::RefCell;
use std::collections::HashMap;
use std::sync::Arc;

use ferrospark_common::{Config, Result};
use ferrospark_expr::{bind, evaluate, BindContext, Expr, Literal};

use super::OptimizerRule;
use crate::logical::expr_util::transform_down;
use crate::logical::rewrite_expressions;
use crate::logical::LogicalPlan;

/// Replaces the current-time functions by one literal each per query.
pub struct ComputeCurrentTime;

/// The functions that read the clock.
const CLOCK_FUNCTIONS: &[&str] = &[
    "current_timestamp",
    "now",
    "localtimestamp",
    "current_date",
    "curdate",
];

/// One reading of the clock per current-time function, shared by every call rewritten
/// through it.
#[derive(Default)]
pub(crate) struct QueryClock {
    values: HashMap<String, Expr>,
}

impl QueryClock {
    /// `e` with its current-time calls replaced by this clock's literals.
    pub(crate) fn fix(&mut self, e: &Expr, cfg: &Config) -> Result<Expr> {
        let values = RefCell::new(&mut self.values);
        // current_timestamp and now read the clock once between them; current_date is then
        // read right after, in the same query.
        let value_of = |name: &str| -> Result<Expr> {
            let key = match name {
                "now" => "current_timestamp",
                "curdate" => "current_date",
                other => other,
            };
            if let Some(v) = values.borrow().get(key) {
                return Ok(v.clone());
            }
            let (empty, one) = super::constant_folding::one_row()?;
            let ctx = BindContext::for_session(&empty, cfg);
            let call = Expr::Function {
                name: key.to_string(),
                args: vec![],
            };
            let v = evaluate(&bind(&call, &ctx)?, &one)?.into_array(1)?;
            let lit = Expr::Literal(Literal::new(v));
            values.borrow_mut().insert(key.to_string(), lit.clone());
            Ok(lit)
        };
        transform_down(e, &mut |x| match x {
            Expr::Function { name, args }
                if args.is_empty() && CLOCK_FUNCTIONS.contains(&name.as_str()) =>
            {
                value_of(name).map(Some)
            }
            _ => Ok(None),
        })
    }
}

impl OptimizerRule for ComputeCurrentTime {
    fn name(&self) -> &'static str {
        "ComputeCurrentTime"
    }
    fn apply(&self, plan: &Arc<LogicalPlan>, cfg: &Config) -> Result<Arc<LogicalPlan>> {
        let clock = RefCell::new(QueryClock::default());
        plan.transform_up(&mut |node| {
            rewrite_expressions(&node, &mut |e| clock.borrow_mut().fix(e, cfg))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_array::{RecordBatch, RecordBatchOptions};
    use arrow_schema::Schema;

    fn scan_with(exprs: Vec<Expr>) -> Arc<LogicalPlan> {
        let b = crate::builder::PlanBuilder::new(Config::default());
        let schema = Arc::new(Schema::empty());
        let batch = RecordBatch::try_new_with_options(
            schema.clone(),
            vec![],
            &RecordBatchOptions::new().with_row_count(Some(1)),
        )
        .expect("an empty batch of one row");
        let scan = b.scan_memory(schema, vec![batch], "one");
        b.project(scan, &exprs).expect("projects")
    }

    #[test]
    fn every_clock_call_in_a_query_reads_one_instant() {
        let call = |n: &str| Expr::Function {
            name: n.into(),
            args: vec![],
        };
        let plan = scan_with(vec![
            Expr::Alias {
                expr: Box::new(call("current_timestamp")),
                name: "a".into(),
            },
            Expr::Alias {
                expr: Box::new(call("now")),
                name: "b".into(),
            },
        ]);
        let out = ComputeCurrentTime
            .apply(&plan, &Config::default())
            .expect("rewrites");
        let LogicalPlan::Project { exprs, .. } = out.as_ref() else {
            panic!("a projection, got {out:?}")
        };
        let lits: Vec<&Expr> = exprs.iter().map(|(e, _)| e).collect();
        assert!(matches!(lits[0], Expr::Literal(_)), "{lits:?}");
        assert_eq!(lits[0], lits[1]);
    }
}
