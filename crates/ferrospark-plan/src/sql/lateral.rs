//! `LATERAL VIEW [OUTER] generator(args) name [AS col, ...]` and generators in FROM
//! (`SELECT * FROM explode(array(1, 2))`), both planned as a `Generate` node.

use std::sync::Arc;

use ferrospark_common::{FerroError, Result};
use sqlparser::ast;

use super::SqlPlanner;
use crate::analyzer::{resolve_expr, Scope};
use crate::builder::PlanBuilder;
use crate::generators::generator_call;
use crate::logical::{GeneratorKind, LogicalPlan};

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
}
