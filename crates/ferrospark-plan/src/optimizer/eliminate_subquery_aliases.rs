//! `EliminateSubqueryAliases`: aliases only serve name resolution; the optimizer removes them.

use std::sync::Arc;

use ferrospark_common::{Config, Result};

use super::OptimizerRule;
use crate::logical::LogicalPlan;

/// Removes `SubqueryAlias` nodes.
pub struct EliminateSubqueryAliases;

impl OptimizerRule for EliminateSubqueryAliases {
    fn name(&self) -> &'static str {
        "EliminateSubqueryAliases"
    }
    fn apply(&self, plan: &Arc<LogicalPlan>, _cfg: &Config) -> Result<Arc<LogicalPlan>> {
        plan.transform_up(&mut |node| {
            Ok(match node.as_ref() {
                LogicalPlan::SubqueryAlias { input, .. } => input.clone(),
                _ => node,
            })
        })
    }
}
