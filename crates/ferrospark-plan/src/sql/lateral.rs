//! `LATERAL VIEW [OUTER] generator(args) name [AS col, ...]` and generators in FROM
//! (`SELECT * FROM explode(array(1, 2))`), both planned as a `Generate` node; and lateral
//! subqueries (`FROM a, LATERAL (SELECT .. WHERE x = a.k) s`, `a LEFT JOIN LATERAL (..) s
//! ON ..`), decorrelated as Spark's `LateralJoin` is:
//!
//! ```text
//!  a JOIN LATERAL (sub reading a.k) s ON c   ->  a JOIN sub' ON a.k <=> d AND c
//!                                               (sub' = sub over the domain D of a.k: its
//!                                                columns, then d; see `domain`)
//! ```

use std::sync::Arc;

use ferrospark_common::{FerroError, Result};
use sqlparser::ast;

use super::SqlPlanner;
use crate::analyzer::{resolve_expr, Scope};
use crate::builder::JoinOn;
use crate::builder::PlanBuilder;
use crate::generators::generator_call;
use crate::logical::{GeneratorKind, LogicalPlan};
use ferrospark_expr::Expr;
use ferrospark_join::JoinType;

impl SqlPlanner<'_> {
    /// `plan` with a `LATERAL VIEW`'s rows beside each of its rows.
    pub(crate) fn lateral_view(
        &self,
        plan: Arc<LogicalPlan>,
        lv: &ast::LateralView,
        outer: Option<&Scope<'_>>,
    ) -> Result<Arc<LogicalPlan>> {
        let call = self.expr(&lv.lateral_view)?;
        let Some(g) = generator_call(&call) else {
            return Err(FerroError::Analysis(format!(
                "[UNSUPPORTED_GENERATOR.NOT_GENERATOR] The generator is not supported: {} is expected to be a generator. However, its class is not one. SQLSTATE: 42K0E",
                lv.lateral_view
            )));
        };
        let scope = self.scope_over(&plan, outer);
        let args = g
            .args
            .iter()
            .map(|a| resolve_expr(a, &scope))
            .collect::<Result<Vec<_>>>()?;
        let aliases: Vec<String> = lv
            .lateral_col_alias
            .iter()
            .map(|i| i.value.clone())
            .collect();
        let name = lv.lateral_view_name.to_string();
        let qualifier = name.rsplit('.').next().map(|q| q.trim_matches('`'));
        let (plan, _) =
            self.builder
                .generate(plan, g.kind, g.outer || lv.outer, args, &aliases, qualifier)?;
        Ok(plan)
    }

    /// `FROM explode(...)` (and the other generators): the rows it makes from constants.
    pub(crate) fn generator_table(
        &self,
        fname: &str,
        args: &[ast::FunctionArg],
    ) -> Result<Option<Arc<LogicalPlan>>> {
        let Some((kind, outer)) = GeneratorKind::from_name(fname) else {
            return Ok(None);
        };
        let one = Arc::new(LogicalPlan::OneRow);
        let scope = self.scope_over(&one, None);
        let args = args
            .iter()
            .map(|a| match a {
                ast::FunctionArg::Unnamed(ast::FunctionArgExpr::Expr(e)) => {
                    resolve_expr(&self.expr(e)?, &scope)
                }
                other => Err(FerroError::Unsupported(format!(
                    "the argument {other} of {fname}"
                ))),
            })
            .collect::<Result<Vec<_>>>()?;
        let (plan, attrs) = self.builder.generate(one, kind, outer, args, &[], None)?;
        let exprs = attrs.iter().map(|a| (a.column(), a.clone())).collect();
        Ok(Some(PlanBuilder::project_resolved(plan, exprs)))
    }

    /// `left` joined (`join_type`, ON `on`) with a lateral subquery that may read `left`'s
    /// columns: each left row with the subquery's rows for it.
    pub(crate) fn lateral_join(
        &self,
        left: Arc<LogicalPlan>,
        subquery: &ast::Query,
        alias: Option<&ast::TableAlias>,
        join_type: JoinType,
        on: Option<Expr>,
        outer: Option<&Scope<'_>>,
    ) -> Result<Arc<LogicalPlan>> {
        if !matches!(
            join_type,
            JoinType::Inner | JoinType::LeftOuter | JoinType::Cross
        ) {
            return Err(FerroError::Analysis(format!(
                "[INVALID_LATERAL_JOIN_TYPE] The {join_type:?} JOIN with LATERAL correlation is not allowed because an OUTER subquery cannot correlate to its join partner. Remove the LATERAL correlation or use an INNER JOIN, or LEFT OUTER JOIN instead. SQLSTATE: 42613"
            )));
        }
        let scope = self.scope_over(&left, outer);
        let mut sub = self.query(subquery, Some(&scope))?;
        // `LATERAL (SELECT a.x)` outputs the outer column itself: under a name of its own,
        // so that the join's two sides share no column.
        let left_ids: std::collections::HashSet<u64> = left.output().iter().map(|a| a.id).collect();
        if sub.output().iter().any(|a| left_ids.contains(&a.id)) {
            let exprs = sub
                .output()
                .iter()
                .map(|a| {
                    let fresh = self.builder.attr(&a.name, a.data_type.clone(), a.nullable);
                    (a.column(), fresh)
                })
                .collect();
            sub = PlanBuilder::project_resolved(sub, exprs);
        }
        let sub = match alias {
            Some(a) => self.rename_columns(sub, a)?,
            None => sub,
        };
        let own = sub.output();
        let keys = super::subquery::scope_keys(&scope);
        let outer_keys: std::collections::HashSet<String> = left
            .output()
            .iter()
            .map(|a| a.key())
            .filter(|k| keys.contains(k))
            .collect();
        let (right, mut conds) = if super::domain::reads_outer(&sub, &outer_keys) {
            super::domain::decorrelate(self.builder, &sub, &left, &outer_keys, false)?
        } else {
            (sub, Vec::new())
        };
        conds.extend(on);
        let join_type = if join_type == JoinType::Cross {
            JoinType::Inner
        } else {
            join_type
        };
        let on = match crate::logical::expr_util::conjoin(conds) {
            Some(c) => JoinOn::Condition(c),
            None => JoinOn::None,
        };
        let mut visible = left.output();
        let joined = self.builder.join(left, right, on, join_type, None)?;
        visible.extend(own);
        let out = joined.output();
        let exprs = visible
            .iter()
            .filter_map(|a| out.iter().find(|o| o.id == a.id))
            .map(|a| (a.column(), a.clone()))
            .collect();
        Ok(PlanBuilder::project_resolved(joined, exprs))
    }
}
