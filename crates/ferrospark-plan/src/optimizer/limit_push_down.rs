//! `LimitPushDown`: a LIMIT copies itself below a `UNION ALL` (into every input) and below an
//! outer join (into its preserved side), as Catalyst's rule pushes a `LocalLimit`, so those
//! inputs stop after `offset + limit` rows and join selection sees a small side. The original
//! LIMIT stays on top: a pushed copy only bounds what reaches it.
//!
//! A LEFT JOIN keeps at least one output row per left row, so `offset + limit` left rows are
//! enough; a join with no condition (a cross product) keeps every pair, so each side may stop
//! at that many rows too. Projections in between are looked through.

use std::sync::Arc;

use ferrospark_common::{Config, Result};
use ferrospark_join::JoinType;

use super::OptimizerRule;
use crate::logical::LogicalPlan;

/// Pushes limits into union inputs and outer joins' preserved sides.
pub struct LimitPushDown;

/// `plan` under a limit of `k` rows, unless a limit as tight is already there.
fn limited(plan: &Arc<LogicalPlan>, k: usize) -> Arc<LogicalPlan> {
    if let LogicalPlan::Limit {
        skip: 0,
        fetch: Some(m),
        ..
    } = plan.as_ref()
    {
        if *m <= k {
            return plan.clone();
        }
    }
    Arc::new(LogicalPlan::Limit {
        input: plan.clone(),
        skip: 0,
        fetch: Some(k),
    })
}

/// `plan` with the limit of `k` rows pushed into it where that is safe; `None` if nothing moved.
fn push(plan: &Arc<LogicalPlan>, k: usize) -> Option<Arc<LogicalPlan>> {
    let children = match plan.as_ref() {
        LogicalPlan::Project { input, .. } => vec![push(input, k)?],
        LogicalPlan::Union { inputs, .. } => inputs.iter().map(|i| limited(i, k)).collect(),
        LogicalPlan::Join {
            left,
            right,
            join_type,
            condition,
            ..
        } => match (join_type, condition) {
            (JoinType::LeftOuter, _) => vec![limited(left, k), right.clone()],
            (JoinType::RightOuter, _) => vec![left.clone(), limited(right, k)],
            (JoinType::Inner, None) => vec![limited(left, k), limited(right, k)],
            _ => return None,
        },
        _ => return None,
    };
    Some(Arc::new(plan.with_children(children)))
}

impl OptimizerRule for LimitPushDown {
    fn name(&self) -> &'static str {
        "LimitPushDown"
    }
    fn apply(&self, plan: &Arc<LogicalPlan>, _cfg: &Config) -> Result<Arc<LogicalPlan>> {
        plan.transform_up(&mut |node| {
            let LogicalPlan::Limit {
                input,
                skip,
                fetch: Some(n),
            } = node.as_ref()
            else {
                return Ok(node);
            };
            Ok(match push(input, skip.saturating_add(*n)) {
                Some(input) => Arc::new(LogicalPlan::Limit {
                    input,
                    skip: *skip,
                    fetch: Some(*n),
                }),
                None => node,
            })
        })
    }
}
