//! The optimizer: Catalyst's rules, each a small named file, run in order as Spark's batches
//! run them. A rule can be switched off by name (`ferrospark.optimizer.excludedRules`, as
//! Spark's `spark.sql.optimizer.excludedRules`), which the tests use to compare plans with
//! and without each rule.

mod boolean_simplification;
mod column_pruning;
mod compute_current_time;
pub(crate) mod constant_folding;
mod eliminate_outer_join;
mod eliminate_subquery_aliases;
mod infer_filters_from_constraints;
mod limit_push_down;
mod prune_file_source_partitions;
pub(crate) mod push_down_predicates;
mod push_extra_predicate_through_join;
mod reorder_join;
#[cfg(test)]
mod tests;

use std::sync::Arc;

use ferrospark_common::{Config, FerroError, Result};

pub use boolean_simplification::BooleanSimplification;
pub use column_pruning::ColumnPruning;
pub use compute_current_time::ComputeCurrentTime;
pub(crate) use compute_current_time::QueryClock;
pub use constant_folding::ConstantFolding;
pub(crate) use constant_folding::{fold, one_row};
pub use eliminate_outer_join::EliminateOuterJoin;
pub use eliminate_subquery_aliases::EliminateSubqueryAliases;
pub use infer_filters_from_constraints::InferFiltersFromConstraints;
pub use limit_push_down::LimitPushDown;
pub(crate) use prune_file_source_partitions::list_catalog_scans;
pub use prune_file_source_partitions::PruneFileSourcePartitions;
pub(crate) use push_down_predicates::same_by_text;
pub use push_down_predicates::PushDownPredicates;
pub use push_extra_predicate_through_join::PushExtraPredicateThroughJoin;
pub use reorder_join::ReorderJoin;

use crate::logical::LogicalPlan;

/// One rewrite of a logical plan that keeps its result.
pub trait OptimizerRule {
    /// Catalyst's name for the rule.
    fn name(&self) -> &'static str;
    /// The rewritten plan.
    fn apply(&self, plan: &Arc<LogicalPlan>, cfg: &Config) -> Result<Arc<LogicalPlan>>;
}

/// Spark's config key listing rules to skip (comma-separated names).
pub const EXCLUDED_RULES: &str = "spark.sql.optimizer.excludedRules";

/// Every rule, in the order they run.
pub fn rules() -> Vec<Box<dyn OptimizerRule>> {
    vec![
        Box::new(ComputeCurrentTime),
        Box::new(EliminateSubqueryAliases),
        Box::new(ConstantFolding),
        Box::new(BooleanSimplification),
        Box::new(EliminateOuterJoin),
        Box::new(PushDownPredicates),
        Box::new(PushExtraPredicateThroughJoin),
        Box::new(PruneFileSourcePartitions),
        Box::new(ReorderJoin),
        Box::new(InferFiltersFromConstraints),
        Box::new(PushDownPredicates),
        Box::new(PruneFileSourcePartitions),
        Box::new(LimitPushDown),
        Box::new(ColumnPruning),
    ]
}

/// Runs every rule not excluded by `spark.sql.optimizer.excludedRules`; returns the plan and
/// the names of the rules that changed it.
pub fn optimize(
    plan: &Arc<LogicalPlan>,
    cfg: &Config,
) -> Result<(Arc<LogicalPlan>, Vec<&'static str>)> {
    let excluded: Vec<String> = cfg
        .get(EXCLUDED_RULES)
        .unwrap_or("")
        .split(',')
        .map(|s| s.trim().rsplit('.').next().unwrap_or("").to_string())
        .filter(|s| !s.is_empty())
        .collect();
    let all = rules();
    for e in &excluded {
        if !all.iter().any(|r| r.name() == e) {
            let names: Vec<&str> = all.iter().map(|r| r.name()).collect();
            return Err(FerroError::Config(format!(
                "{EXCLUDED_RULES}: unknown rule `{e}`; the rules are {}",
                names.join(", ")
            )));
        }
    }
    let mut plan = plan.clone();
    let mut applied = Vec::new();
    for rule in all {
        if excluded.iter().any(|e| e == rule.name()) {
            continue;
        }
        let before = crate::logical::explain_logical(&plan);
        plan = rule.apply(&plan, cfg)?;
        if crate::logical::explain_logical(&plan) != before && !applied.contains(&rule.name()) {
            applied.push(rule.name());
        }
    }
    // A catalog scan no rule pruned still lists its partitions before physical planning.
    let plan = list_catalog_scans(&plan, cfg)?;
    Ok((plan, applied))
}
