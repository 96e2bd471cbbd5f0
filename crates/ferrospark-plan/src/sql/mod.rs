//! Spark SQL text to resolved logical plans: `SELECT` with joins, subqueries, grouping,
//! ordering, set operations and CTEs, and `EXPLAIN`.
//!
//! Subqueries and windowed calls inside expressions are lifted out of the parsed statement
//! first (each replaced by a placeholder call naming its slot), so the expression converter
//! sees plain expressions; the planner then turns each placeholder into a join (EXISTS and IN
//! into semi / anti joins, scalar subqueries into a left outer join, correlated ones through
//! an aggregate grouped by the correlation keys, as Catalyst's `RewritePredicateSubquery`
//! and `RewriteCorrelatedScalarSubquery` do).

mod domain;
mod hints;
mod lateral;
mod outer_aggregates;
mod pivot;
mod select;
mod subquery;
pub(crate) mod view_aliases;

use std::cell::RefCell;
use std::collections::HashMap;
use std::ops::ControlFlow;
use std::path::PathBuf;
use std::sync::Arc;

use ferrospark_common::{FerroError, Result};
use ferrospark_expr::dialect::SparkDialect;
use ferrospark_expr::parser::convert_ast;
use ferrospark_expr::{Expr, Literal};
use ferrospark_join::{JoinStrategy, JoinType};
use sqlparser::ast::{self, SetExpr, SetOperator, SetQuantifier, Statement, TableFactor};
use sqlparser::parser::{Parser, ParserError};

use crate::analyzer::Scope;
use crate::builder::{JoinOn, PlanBuilder};
use crate::logical::{LogicalPlan, SetOpKind};

/// Tables a query can name: temp views and tables of the session's catalog.
pub trait TableProvider {
    /// The plan of what `parts` (a name of one to three parts, as written) names, if anything.
    fn relation(&self, parts: &[String]) -> Result<Option<Arc<LogicalPlan>>>;
    /// The error for a name that names nothing.
    fn not_found(&self, parts: &[String]) -> FerroError;
    /// The SQL function `parts` names, if one does.
    fn function(&self, parts: &[String]) -> Result<Option<ferrospark_catalog::CatalogFunction>> {
        let _ = parts;
        Ok(None)
    }
    /// The Python function registered under `name` (`spark.udf.register`), if one is.
    fn udf(&self, name: &str) -> Result<Option<ferrospark_expr::RegisteredUdf>> {
        let _ = name;
        Ok(None)
    }
    /// The session's current database (`USE db`), which `current_database()` reads.
    fn current_database(&self) -> String {
        "default".to_string()
    }
}

/// What `EXPLAIN` asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExplainMode {
    /// The physical plan only.
    Simple,
    /// Parsed, analyzed and optimized logical plans and the physical plan.
    Extended,
    /// The physical plan as an outline plus a section per operator.
    Formatted,
}

/// A planned statement.
#[derive(Debug, Clone)]
pub enum SqlStatement {
    /// A query.
    Query(Arc<LogicalPlan>),
    /// `EXPLAIN [mode] query`.
    Explain(Arc<LogicalPlan>, ExplainMode),
}

/// Plans one SQL statement.
pub fn plan_sql(
    text: &str,
    builder: &PlanBuilder,
    tables: &dyn TableProvider,
) -> Result<SqlStatement> {
    let (body, explain) = strip_explain(text);
    let dialect = SparkDialect {};
    let parse_err = |e: &dyn std::fmt::Display| {
        // A refusal the dialect raised names its own error class.
        let said = e.to_string();
        let said = said.strip_prefix("sql parser error: ").unwrap_or(&said);
        if said.starts_with('[') {
            return FerroError::Analysis(format!("{said}\n== SQL ==\n{}", text.trim()));
        }
        FerroError::Analysis(format!(
            "[PARSE_SYNTAX_ERROR] Syntax error in SQL statement: {e}\n== SQL ==\n{}",
            text.trim()
        ))
    };
    let legacy_bang = builder
        .cfg
        .get("spark.sql.legacy.bangEqualsNot")
        .is_some_and(|v| v.eq_ignore_ascii_case("true"));
    if !legacy_bang && ferrospark_expr::dialect::bang_before_predicate(body) {
        return Err(FerroError::Analysis(format!(
            "[SYNTAX_DISCONTINUED.BANG_EQUALS_NOT] Support of the clause or keyword: ! has been discontinued in this context. The '!' keyword is only supported as an alias for the prefix operator 'NOT'. Use the 'NOT' keyword instead for infix clauses such as `NOT LIKE`, `NOT IN`, `NOT BETWEEN`, etc. To re-enable the '!' keyword, set \"spark.sql.legacy.bangEqualsNot\" to \"true\". SQLSTATE: 42601\n== SQL ==\n{}",
            text.trim()
        )));
    }
    let parameterless_count = builder
        .cfg
        .get_bool("spark.sql.legacy.allowParameterlessCount", false)
        .unwrap_or(false);
    let mut statements = ferrospark_expr::dialect::tokenize(body)
        .map_err(ParserError::from)
        .map(|tokens| {
            if parameterless_count {
                count_of_nothing(tokens)
            } else {
                tokens
            }
        })
        .and_then(|tokens| {
            Parser::new(&dialect)
                .with_recursion_limit(512)
                .with_tokens_with_locations(tokens)
                .parse_statements()
        })
        .map_err(|e| parse_err(&e))?;
    if statements.len() != 1 {
        return Err(parse_err(&format!(
            "expected one statement, found {}",
            statements.len()
        )));
    }
    let statement = statements.remove(0);
    check_parsed_depth(&statement)?;
    let Statement::Query(mut query) = statement else {
        return Err(FerroError::Unsupported(format!(
            "only queries (SELECT, VALUES, WITH ...) and EXPLAIN run here, not `{}`",
            first_words(body)
        )));
    };
    inline_sql_functions(&mut query, tables)?;
    let planner = SqlPlanner::new(builder, tables, text);
    planner.lift(&mut query);
    let plan = planner.query(&query, None)?;
    Ok(match explain {
        Some(mode) => SqlStatement::Explain(plan, mode),
        None => SqlStatement::Query(plan),
    })
}

/// Refuses a statement holding an expression deeper than [`ferrospark_expr::MAX_EXPR_DEPTH`]
/// as soon as it is parsed, in one walk that stops at the limit: planning a tree that deep
/// (a 50,000-term `1 + 1 + ...`) costs time with the square of its depth before the plan's
/// own check could refuse it.
fn check_parsed_depth(statement: &Statement) -> Result<()> {
    use sqlparser::ast::{Visit, Visitor};
    struct Depth(usize);
    impl Visitor for Depth {
        type Break = ();
        fn pre_visit_expr(&mut self, e: &ast::Expr) -> ControlFlow<()> {
            if !matches!(e, ast::Expr::Nested(_)) {
                self.0 += 1;
                if self.0 > ferrospark_expr::MAX_EXPR_DEPTH {
                    return ControlFlow::Break(());
                }
            }
            ControlFlow::Continue(())
        }
        fn post_visit_expr(&mut self, e: &ast::Expr) -> ControlFlow<()> {
            if !matches!(e, ast::Expr::Nested(_)) {
                self.0 -= 1;
            }
            ControlFlow::Continue(())
        }
    }
    match statement.visit(&mut Depth(0)) {
        ControlFlow::Break(()) => Err(ferrospark_expr::too_deep_error("deeper than")),
        ControlFlow::Continue(()) => Ok(()),
    }
}

/// Replaces calls of SQL functions (`CREATE FUNCTION`) by their bodies; a select item that
/// is such a call keeps Spark's name for it (`f(41)`, `spark_catalog.db.f(41)`).
fn inline_sql_functions(query: &mut ast::Query, tables: &dyn TableProvider) -> Result<()> {
    let name_of = |f: &ast::Function| -> Vec<String> {
        f.name
            .0
            .iter()
            .map(|p| p.to_string().trim_matches('`').to_string())
            .collect()
    };
    let args_of = |f: &ast::Function| -> Vec<ast::Expr> {
        match &f.args {
            ast::FunctionArguments::List(l) => l
                .args
                .iter()
                .filter_map(|a| match a {
                    ast::FunctionArg::Unnamed(ast::FunctionArgExpr::Expr(e)) => Some(e.clone()),
                    _ => None,
                })
                .collect(),
            _ => Vec::new(),
        }
    };
    // Names first, while the calls are still there.
    if let SetExpr::Select(sel) = query.body.as_mut() {
        for item in sel.projection.iter_mut() {
            if let ast::SelectItem::UnnamedExpr(ast::Expr::Function(f)) = item {
                if let Some(udf) = tables.function(&name_of(f))? {
                    let shown = if udf.database == "session" {
                        udf.name.clone()
                    } else {
                        format!("spark_catalog.{}.{}", udf.database, udf.name)
                    };
                    let args: Vec<String> = args_of(f).iter().map(|a| a.to_string()).collect();
                    let alias =
                        ast::Ident::with_quote('`', format!("{shown}({})", args.join(", ")));
                    *item = ast::SelectItem::ExprWithAlias {
                        expr: ast::Expr::Function(f.clone()),
                        alias,
                    };
                }
            }
        }
    }
    for _ in 0..16 {
        let mut failure = None;
        let mut changed = false;
        let _ = ast::visit_expressions_mut(query, |e: &mut ast::Expr| {
            if let ast::Expr::Function(f) = e {
                if f.over.is_none() {
                    match tables.function(&name_of(f)) {
                        Ok(Some(udf)) => {
                            match crate::commands::functions::expand(&udf, &args_of(f)) {
                                Ok(body) => {
                                    *e = body;
                                    changed = true;
                                }
                                Err(err) => {
                                    failure = Some(err);
                                    return ControlFlow::Break(());
                                }
                            }
                        }
                        Ok(None) => {}
                        Err(err) => {
                            failure = Some(err);
                            return ControlFlow::Break(());
                        }
                    }
                }
            }
            ControlFlow::Continue(())
        });
        if let Some(e) = failure {
            return Err(e);
        }
        if !changed {
            return Ok(());
        }
    }
    Err(FerroError::Analysis(
        "[RECURSIVE_VIEW] SQL functions call each other more than 16 deep".into(),
    ))
}

fn first_words(s: &str) -> String {
    s.split_whitespace().take(3).collect::<Vec<_>>().join(" ")
}

/// Splits a leading `EXPLAIN [EXTENDED | FORMATTED | ...]` off the statement.
fn strip_explain(text: &str) -> (&str, Option<ExplainMode>) {
    let t = text.trim_start();
    let word = |s: &str| -> (String, usize) {
        let end = s
            .find(|c: char| c.is_whitespace() || c == '(')
            .unwrap_or(s.len());
        (s[..end].to_ascii_uppercase(), end)
    };
    let (w, n) = word(t);
    if w != "EXPLAIN" {
        return (text, None);
    }
    let rest = t[n..].trim_start();
    let (w2, n2) = word(rest);
    match w2.as_str() {
        "EXTENDED" => (&rest[n2..], Some(ExplainMode::Extended)),
        "FORMATTED" => (&rest[n2..], Some(ExplainMode::Formatted)),
        "CODEGEN" | "COST" => (&rest[n2..], Some(ExplainMode::Simple)),
        _ => (rest, Some(ExplainMode::Simple)),
    }
}

/// A subquery or windowed call lifted out of an expression.
#[derive(Debug, Clone)]
pub(crate) enum Lifted {
    /// `(SELECT ...)` used as a value.
    Scalar(ast::Query),
    /// `[NOT] EXISTS (SELECT ...)`.
    Exists(ast::Query, bool),
    /// `x [NOT] IN (SELECT ...)`.
    In(ast::Query, bool),
}

/// Placeholder function names the lifted parts leave behind.
pub(crate) const SUBQUERY_FN: &str = "__subquery";
/// The values of `(a, b) IN (SELECT ...)`, as the placeholder's argument.
pub(crate) const TUPLE_FN: &str = "__tuple";

pub(crate) struct SqlPlanner<'a> {
    pub(crate) builder: &'a PlanBuilder,
    tables: &'a dyn TableProvider,
    pub(crate) text: &'a str,
    pub(crate) lifted: RefCell<Vec<Lifted>>,
    ctes: RefCell<Vec<HashMap<String, Arc<LogicalPlan>>>>,
    /// Join hints of the text: (relation, strategy).
    hints: Vec<(String, JoinStrategy)>,
}

fn placeholder(name: &str, slot: usize, extra: Option<ast::Expr>) -> ast::Expr {
    let mut args = vec![ast::FunctionArg::Unnamed(ast::FunctionArgExpr::Expr(
        ast::Expr::value(ast::Value::Number(slot.to_string(), false)),
    ))];
    if let Some(e) = extra {
        args.push(ast::FunctionArg::Unnamed(ast::FunctionArgExpr::Expr(e)));
    }
    ast::Expr::Function(ast::Function {
        name: ast::ObjectName::from(vec![ast::Ident::new(name)]),
        uses_odbc_syntax: false,
        parameters: ast::FunctionArguments::None,
        args: ast::FunctionArguments::List(ast::FunctionArgumentList {
            duplicate_treatment: None,
            args,
            clauses: vec![],
        }),
        filter: None,
        null_treatment: None,
        over: None,
        within_group: vec![],
    })
}

impl<'a> SqlPlanner<'a> {
    fn new(builder: &'a PlanBuilder, tables: &'a dyn TableProvider, text: &'a str) -> Self {
        Self {
            builder,
            tables,
            text,
            lifted: RefCell::new(Vec::new()),
            ctes: RefCell::new(Vec::new()),
            hints: hints::join_hints(text).unwrap_or_default(),
        }
    }

    /// Replaces every subquery in `query`'s expressions (nested queries included) by a
    /// placeholder.
    fn lift(&self, query: &mut ast::Query) {
        let _ = ast::visit_expressions_mut(query, |e: &mut ast::Expr| {
            let taken = std::mem::replace(e, ast::Expr::value(ast::Value::Null));
            let mut lifted = self.lifted.borrow_mut();
            let slot = lifted.len();
            *e = match taken {
                ast::Expr::Subquery(q) => {
                    lifted.push(Lifted::Scalar(*q));
                    placeholder(SUBQUERY_FN, slot, None)
                }
                ast::Expr::Exists { subquery, negated } => {
                    lifted.push(Lifted::Exists(*subquery, negated));
                    placeholder(SUBQUERY_FN, slot, None)
                }
                ast::Expr::InSubquery {
                    expr,
                    subquery,
                    negated,
                } => {
                    lifted.push(Lifted::In(*subquery, negated));
                    // `(a, b) IN (SELECT x, y ...)`: the tuple travels as a call of its own,
                    // taken apart where the subquery is planned.
                    let value = match *expr {
                        ast::Expr::Tuple(items) => {
                            let mut call = placeholder(TUPLE_FN, 0, None);
                            if let ast::Expr::Function(f) = &mut call {
                                f.args = ast::FunctionArguments::List(ast::FunctionArgumentList {
                                    duplicate_treatment: None,
                                    args: items
                                        .into_iter()
                                        .map(|e| {
                                            ast::FunctionArg::Unnamed(ast::FunctionArgExpr::Expr(e))
                                        })
                                        .collect(),
                                    clauses: vec![],
                                });
                            }
                            call
                        }
                        other => other,
                    };
                    placeholder(SUBQUERY_FN, slot, Some(value))
                }
                other => other,
            };
            ControlFlow::<()>::Continue(())
        });
    }

    /// Converts an expression of the statement.
    pub(crate) fn expr(&self, e: &ast::Expr) -> Result<Expr> {
        self.with_udfs(convert_ast(e, self.text)?)
    }

    /// `e` with each call of a registered Python function (`spark.udf.register`) bound to
    /// the function; such a name shadows a built-in one, as in Spark.
    pub(crate) fn with_udfs(&self, e: Expr) -> Result<Expr> {
        self.check_count_of_relation_star(&e)?;
        let e = crate::udfs::bind_session_names(e, &self.tables.current_database())?;
        crate::udfs::bind_registered(e, &|name| self.tables.udf(name))
    }

    /// `count(t.*)` alone is refused unless
    /// `spark.sql.legacy.allowStarWithSingleTableIdentifierInCount` is set, as in Spark (it
    /// reads as `count(*)` but counts the rows with no NULL column).
    fn check_count_of_relation_star(&self, e: &Expr) -> Result<()> {
        let star = ferrospark_expr::parser::STAR_FN;
        let mut found = None;
        e.visit(&mut |x| {
            if let Expr::Function { name, args } | Expr::Aggregate { name, args, .. } = x {
                if name == "count" {
                    if let [Expr::Function { name: s, args: p }] = args.as_slice() {
                        if s == star {
                            if let [Expr::Column(prefix)] = p.as_slice() {
                                if prefix != "*" && !prefix.contains('.') {
                                    found = Some(prefix.clone());
                                }
                            }
                        }
                    }
                }
            }
        });
        let Some(prefix) = found else {
            return Ok(());
        };
        let legacy = self
            .builder
            .cfg
            .get_bool(
                "spark.sql.legacy.allowStarWithSingleTableIdentifierInCount",
                false,
            )
            .unwrap_or(false);
        if legacy {
            return Ok(());
        }
        Err(FerroError::Analysis(format!(
            "[_LEGACY_ERROR_TEMP_1021] count({prefix}.*) is not allowed. Please use count(*) or expand the columns manually, e.g. count(col1, col2)."
        )))
    }

    pub(crate) fn query(
        &self,
        q: &ast::Query,
        outer: Option<&Scope<'_>>,
    ) -> Result<Arc<LogicalPlan>> {
        let pushed_ctes = if let Some(with) = &q.with {
            if with.recursive {
                return Err(FerroError::Unsupported("WITH RECURSIVE".into()));
            }
            let mut seen = std::collections::HashSet::new();
            for cte in &with.cte_tables {
                if !seen.insert(cte.alias.name.value.to_ascii_lowercase()) {
                    return Err(FerroError::Analysis(format!(
                        "[DUPLICATED_CTE_NAMES] CTE definition can't have duplicate names: `{}`. SQLSTATE: 42602",
                        cte.alias.name.value
                    )));
                }
            }
            self.ctes.borrow_mut().push(HashMap::new());
            for cte in &with.cte_tables {
                let plan = self.query(&cte.query, outer)?;
                let plan = self.rename_columns(plan, &cte.alias)?;
                let name = cte.alias.name.value.to_ascii_lowercase();
                if let Some(top) = self.ctes.borrow_mut().last_mut() {
                    top.insert(name, plan);
                }
            }
            true
        } else {
            false
        };
        let result = self.query_body(q, outer);
        if pushed_ctes {
            self.ctes.borrow_mut().pop();
        }
        result
    }

    fn query_body(&self, q: &ast::Query, outer: Option<&Scope<'_>>) -> Result<Arc<LogicalPlan>> {
        let order_by: Vec<ast::OrderByExpr> = match &q.order_by {
            None => Vec::new(),
            Some(ob) => match &ob.kind {
                ast::OrderByKind::Expressions(list) => list.clone(),
                ast::OrderByKind::All(_) => {
                    return Err(FerroError::Unsupported("ORDER BY ALL".into()))
                }
            },
        };
        let mut plan = match q.body.as_ref() {
            SetExpr::Select(s) => self.select(s, &order_by, outer)?,
            other => {
                let plan = self.set_expr(other, outer)?;
                if order_by.is_empty() {
                    plan
                } else {
                    self.order_by_output(plan, &order_by)?
                }
            }
        };
        if let Some(limit) = &q.limit_clause {
            let (limit, offset) = match limit {
                ast::LimitClause::LimitOffset { limit, offset, .. } => {
                    (limit.clone(), offset.as_ref().map(|o| o.value.clone()))
                }
                ast::LimitClause::OffsetCommaLimit { offset, limit } => {
                    (Some(limit.clone()), Some(offset.clone()))
                }
            };
            let fetch = limit.map(|l| self.count_literal(&l, "LIMIT")).transpose()?;
            let skip = offset
                .map(|o| self.count_literal(&o, "OFFSET"))
                .transpose()?
                .unwrap_or(0);
            plan = PlanBuilder::limit(plan, skip, fetch);
        }
        Ok(plan)
    }

    /// A LIMIT / OFFSET count: a constant integer expression (`2 + 1`), checked as Spark's
    /// `CheckAnalysis` checks it.
    fn count_literal(&self, e: &ast::Expr, what: &str) -> Result<usize> {
        let refuse = |sub: &str, why: &str| {
            FerroError::Analysis(format!(
                "[INVALID_LIMIT_LIKE_EXPRESSION.{sub}] The {what} expression \"{e}\" {why}"
            ))
        };
        let v = self.expr(e)?;
        let mut reads_column = false;
        v.visit(&mut |x| reads_column |= matches!(x, Expr::Column(_)));
        if reads_column {
            return Err(refuse("IS_UNFOLDABLE", "must evaluate to a constant value"));
        }
        let folded = crate::optimizer::fold(&v, &self.builder.cfg)?;
        let Expr::Literal(l) = &folded else {
            return Err(refuse("IS_UNFOLDABLE", "must evaluate to a constant value"));
        };
        use arrow_schema::DataType as T;
        if !matches!(
            l.array().data_type(),
            T::Int8 | T::Int16 | T::Int32 | T::Int64 | T::Null
        ) {
            return Err(refuse("DATA_TYPE", "must be integer type"));
        }
        let a = arrow_cast::cast(l.array().as_ref(), &T::Int64)?;
        let a = arrow_array::cast::AsArray::as_primitive::<arrow_array::types::Int64Type>(&a);
        if arrow_array::Array::is_null(a, 0) {
            return Err(refuse("IS_NULL", "evaluates to NULL"));
        }
        let n = a.value(0);
        if n < 0 {
            return Err(refuse(
                "IS_NEGATIVE",
                &format!("must be equal to or greater than 0, but got {n}"),
            ));
        }
        Ok(n as usize)
    }

    /// ORDER BY over a set operation's output (names and ordinals only).
    fn order_by_output(
        &self,
        plan: Arc<LogicalPlan>,
        order: &[ast::OrderByExpr],
    ) -> Result<Arc<LogicalPlan>> {
        let out = plan.output();
        let mut keys = Vec::new();
        for o in order {
            let e = self.expr(&o.expr)?;
            let e = match &e {
                Expr::Literal(l) => match literal_i64(l) {
                    Some(i) if i >= 1 && (i as usize) <= out.len() => out[i as usize - 1].column(),
                    _ => return Err(ordinal_error(l, out.len())),
                },
                other => other.clone(),
            };
            keys.push(sort_key(e, &o.options));
        }
        self.builder.sort(plan, &keys)
    }

    fn set_expr(&self, s: &SetExpr, outer: Option<&Scope<'_>>) -> Result<Arc<LogicalPlan>> {
        match s {
            SetExpr::Select(sel) => self.select(sel, &[], outer),
            SetExpr::Query(q) => self.query(q, outer),
            SetExpr::Values(v) => self.values(v),
            SetExpr::SetOperation {
                left,
                op,
                set_quantifier,
                right,
            } => {
                let l = self.set_expr(left, outer)?;
                let r = self.set_expr(right, outer)?;
                let all = matches!(set_quantifier, SetQuantifier::All);
                let by_name = matches!(
                    set_quantifier,
                    SetQuantifier::ByName
                        | SetQuantifier::AllByName
                        | SetQuantifier::DistinctByName
                );
                let r = if by_name {
                    self.reorder_by_name(&l, r)?
                } else {
                    r
                };
                match op {
                    SetOperator::Union => {
                        let u = self.builder.union(vec![l, r])?;
                        if all {
                            Ok(u)
                        } else {
                            self.builder.distinct(u)
                        }
                    }
                    SetOperator::Intersect | SetOperator::Except | SetOperator::Minus => {
                        let kind = if matches!(op, SetOperator::Intersect) {
                            SetOpKind::Intersect
                        } else {
                            SetOpKind::Except
                        };
                        crate::setops::set_op(self.builder, l, r, kind, all)
                    }
                }
            }
            other => Err(FerroError::Unsupported(format!("`{other}` as a query"))),
        }
    }

    fn reorder_by_name(
        &self,
        left: &Arc<LogicalPlan>,
        right: Arc<LogicalPlan>,
    ) -> Result<Arc<LogicalPlan>> {
        let items: Vec<Expr> = left
            .output()
            .iter()
            .map(|a| Expr::Column(a.name.clone()))
            .collect();
        self.builder.project(right, &items)
    }

    /// `VALUES (...), (...)`: an in-memory relation of constant rows.
    fn values(&self, v: &ast::Values) -> Result<Arc<LogicalPlan>> {
        let rows: Vec<Vec<Expr>> = v
            .rows
            .iter()
            .map(|r| {
                r.content
                    .iter()
                    .map(|e| self.expr(e))
                    .collect::<Result<Vec<_>>>()
            })
            .collect::<Result<_>>()?;
        crate::values::values_plan(self.builder, &rows)
    }

    /// Renames a plan's output columns (`AS t(a, b)`, `WITH t(a, b) AS ...`).
    pub(crate) fn rename_columns(
        &self,
        plan: Arc<LogicalPlan>,
        alias: &ast::TableAlias,
    ) -> Result<Arc<LogicalPlan>> {
        let plan = if alias.columns.is_empty() {
            plan
        } else {
            let out = plan.output();
            if out.len() != alias.columns.len() {
                return Err(FerroError::Analysis(format!(
                    "[ASSIGNMENT_ARITY_MISMATCH] `{}` names {} columns but its query has {}",
                    alias.name.value,
                    alias.columns.len(),
                    out.len()
                )));
            }
            let exprs = out
                .iter()
                .zip(&alias.columns)
                .map(|(a, c)| {
                    let na = self
                        .builder
                        .attr(&c.name.value, a.data_type.clone(), a.nullable);
                    (a.column(), na)
                })
                .collect();
            PlanBuilder::project_resolved(plan, exprs)
        };
        Ok(PlanBuilder::alias(plan, &alias.name.value))
    }

    pub(crate) fn from(
        &self,
        from: &[ast::TableWithJoins],
        outer: Option<&Scope<'_>>,
    ) -> Result<Arc<LogicalPlan>> {
        let mut plan: Option<Arc<LogicalPlan>> = None;
        for twj in from {
            if let (
                Some(left),
                TableFactor::Derived {
                    lateral: true,
                    subquery,
                    alias,
                    ..
                },
            ) = (&plan, &twj.relation)
            {
                // `FROM a, LATERAL (...) s`: the subquery reads the items before it.
                let joined = self.lateral_join(
                    left.clone(),
                    subquery,
                    alias.as_ref(),
                    JoinType::Inner,
                    None,
                    outer,
                )?;
                plan = Some(self.joins_onto(joined, twj, outer)?);
                continue;
            }
            let item = self.table_with_joins(twj, outer)?;
            plan = Some(match plan {
                None => item,
                // Comma joins are inner joins without a condition; the optimizer pulls the
                // WHERE conditions into them and orders them (ReorderJoin).
                Some(p) => self
                    .builder
                    .join(p, item, JoinOn::None, JoinType::Inner, None)?,
            });
        }
        Ok(plan.unwrap_or_else(|| Arc::new(LogicalPlan::OneRow)))
    }

    fn table_with_joins(
        &self,
        twj: &ast::TableWithJoins,
        outer: Option<&Scope<'_>>,
    ) -> Result<Arc<LogicalPlan>> {
        let plan = self.table_factor(&twj.relation, outer)?;
        self.joins_onto(plan, twj, outer)
    }

    /// `plan` (the relation of `twj`, planned) with `twj`'s joins applied in order.
    fn joins_onto(
        &self,
        mut plan: Arc<LogicalPlan>,
        twj: &ast::TableWithJoins,
        outer: Option<&Scope<'_>>,
    ) -> Result<Arc<LogicalPlan>> {
        for j in &twj.joins {
            use ast::JoinOperator as J;
            if let TableFactor::Derived {
                lateral: true,
                subquery,
                alias,
                ..
            } = &j.relation
            {
                let (jt, c) = match &j.join_operator {
                    J::Join(c) | J::Inner(c) => (JoinType::Inner, Some(c)),
                    J::Left(c) | J::LeftOuter(c) => (JoinType::LeftOuter, Some(c)),
                    J::CrossJoin(c) => (JoinType::Cross, Some(c)),
                    J::Right(c) | J::RightOuter(c) => (JoinType::RightOuter, Some(c)),
                    J::FullOuter(c) => (JoinType::FullOuter, Some(c)),
                    _ => (JoinType::LeftSemi, None),
                };
                let on = match c {
                    Some(ast::JoinConstraint::On(e)) => Some(self.expr(e)?),
                    Some(ast::JoinConstraint::None) => None,
                    _ => {
                        return Err(FerroError::Unsupported(format!(
                            "a LATERAL subquery joined with `{:?}`: write the condition with ON",
                            j.join_operator
                        )))
                    }
                };
                plan = self.lateral_join(plan, subquery, alias.as_ref(), jt, on, outer)?;
                continue;
            }
            let right = self.table_factor(&j.relation, outer)?;
            let (jt, c) = match &j.join_operator {
                J::Join(c) | J::Inner(c) => (JoinType::Inner, c),
                J::Left(c) | J::LeftOuter(c) => (JoinType::LeftOuter, c),
                J::Right(c) | J::RightOuter(c) => (JoinType::RightOuter, c),
                J::FullOuter(c) => (JoinType::FullOuter, c),
                J::CrossJoin(c) => (JoinType::Inner, c),
                J::Semi(c) | J::LeftSemi(c) => (JoinType::LeftSemi, c),
                J::Anti(c) | J::LeftAnti(c) => (JoinType::LeftAnti, c),
                other => {
                    return Err(FerroError::Unsupported(format!("join `{other:?}`")));
                }
            };
            // An inner join's ON conjuncts with subqueries filter the joined rows, as WHERE;
            // another join's become columns of the side they read (EXISTS / IN as values),
            // dropped again after the join.
            let mut after_join: Option<Expr> = None;
            let mut right = right;
            let mut kept: Option<Vec<u64>> = None;
            let on = match c {
                ast::JoinConstraint::On(e) => {
                    let cond = self.expr(e)?;
                    let has_subquery = |x: &Expr| x.to_string().contains(SUBQUERY_FN);
                    if !has_subquery(&cond) {
                        JoinOn::Condition(cond)
                    } else {
                        let (with, mut conds): (Vec<Expr>, Vec<Expr>) =
                            crate::logical::expr_util::split_conjuncts(&cond)
                                .into_iter()
                                .partition(|x| has_subquery(x));
                        if jt == JoinType::Inner {
                            after_join = crate::logical::expr_util::conjoin(with);
                        } else {
                            let mut visible = plan.output();
                            if !matches!(jt, JoinType::LeftSemi | JoinType::LeftAnti) {
                                visible.extend(right.output());
                            }
                            kept = Some(visible.iter().map(|a| a.id).collect());
                            for c in with {
                                // Each subquery becomes a column of the side it reads; the
                                // rest of the conjunct (`x1 = y1 OR EXISTS (...)`) stays a
                                // condition over both sides.
                                let mut slots = Vec::new();
                                c.visit(&mut |x| {
                                    if matches!(x, Expr::Function { name, .. } if name == SUBQUERY_FN)
                                        && !slots.contains(x)
                                    {
                                        slots.push(x.clone());
                                    }
                                });
                                let mut cond = c.clone();
                                for slot in slots {
                                    let on_side = |side: &Arc<LogicalPlan>| {
                                        let scope = self.scope_over(side, outer);
                                        let resolved =
                                            crate::analyzer::resolve_expr(&slot, &scope)?;
                                        self.scalar_subqueries(side.clone(), resolved, &scope)
                                    };
                                    let value = match on_side(&plan) {
                                        Ok((p, e)) => {
                                            plan = p;
                                            e
                                        }
                                        Err(left_err) => match on_side(&right) {
                                            Ok((p, e)) => {
                                                right = p;
                                                e
                                            }
                                            Err(_) => return Err(left_err),
                                        },
                                    };
                                    cond = crate::logical::expr_util::transform_down(
                                        &cond,
                                        &mut |x| Ok((x == &slot).then(|| value.clone())),
                                    )?;
                                }
                                conds.push(cond);
                            }
                        }
                        match crate::logical::expr_util::conjoin(conds) {
                            Some(all) => JoinOn::Condition(all),
                            None => JoinOn::None,
                        }
                    }
                }
                ast::JoinConstraint::Using(names) => JoinOn::UsingKeepingKeys(
                    names
                        .iter()
                        .map(|n| n.to_string().trim_matches('`').to_string())
                        .collect(),
                ),
                ast::JoinConstraint::Natural => {
                    let l = plan.output();
                    let r = right.output();
                    let common: Vec<String> = l
                        .iter()
                        .filter(|a| {
                            !a.hidden
                                && r.iter()
                                    .any(|b| !b.hidden && b.name.eq_ignore_ascii_case(&a.name))
                        })
                        .map(|a| a.name.clone())
                        .collect();
                    if common.is_empty() {
                        JoinOn::None
                    } else {
                        JoinOn::UsingKeepingKeys(common)
                    }
                }
                ast::JoinConstraint::None => JoinOn::None,
            };
            let hint = self.hint_for(&right).or_else(|| self.hint_for(&plan));
            plan = self.builder.join(plan, right, on, jt, hint)?;
            if let Some(visible) = kept {
                let exprs = plan
                    .output()
                    .into_iter()
                    .filter(|a| visible.contains(&a.id))
                    .map(|a| (a.column(), a))
                    .collect();
                plan = crate::builder::PlanBuilder::project_resolved(plan, exprs);
            }
            if let Some(pred) = after_join {
                plan = self.filter_with_subqueries(plan, &pred, outer)?;
            }
        }
        Ok(plan)
    }

    /// The hinted strategy of a join side: its alias or table name named by a hint.
    fn hint_for(&self, plan: &Arc<LogicalPlan>) -> Option<JoinStrategy> {
        if self.hints.is_empty() {
            return None;
        }
        let name = match plan.as_ref() {
            LogicalPlan::SubqueryAlias { alias, .. } => alias.to_ascii_lowercase(),
            LogicalPlan::Scan { name, .. } => name.to_ascii_lowercase(),
            _ => return None,
        };
        self.hints
            .iter()
            .find(|(rel, _)| *rel == name || name.ends_with(&format!("/{rel}")))
            .map(|(_, s)| *s)
    }

    /// `range(end)`, `range(start, end[, step[, partitions]])`: BIGINT `id`s from `start`
    /// (inclusive) to `end` (exclusive), made in memory when the query is planned.
    fn range_table(&self, args: &[ast::FunctionArg]) -> Result<Arc<LogicalPlan>> {
        const MAX_ROWS: i128 = 1 << 26;
        let mut values = Vec::new();
        for a in args {
            let ast::FunctionArg::Unnamed(ast::FunctionArgExpr::Expr(e)) = a else {
                return Err(FerroError::Analysis(format!(
                    "[TABLE_VALUED_FUNCTION_FAILED_TO_ANALYZE_IN_PYTHON] range takes constant integers, not `{a}`"
                )));
            };
            let v = constant_i64(&convert_ast(e, self.text)?).ok_or_else(|| {
                FerroError::Analysis(format!(
                    "[DATATYPE_MISMATCH.UNEXPECTED_INPUT_TYPE] range takes constant integer arguments, not `{e}`"
                ))
            })?;
            values.push(v);
        }
        let (start, end, step) = match values[..] {
            [end] => (0, end, 1),
            [start, end] => (start, end, 1),
            [start, end, step] | [start, end, step, _] => (start, end, step),
            _ => {
                return Err(FerroError::Analysis(format!(
                    "[WRONG_NUM_ARGS.WITHOUT_SUGGESTION] The `range` requires [1, 2, 3, 4] parameters but the actual number is {}. SQLSTATE: 42605",
                    values.len()
                )))
            }
        };
        if step == 0 {
            return Err(FerroError::Analysis(
                "[FAILED_FUNCTION_CALL] range's step must not be 0".into(),
            ));
        }
        let count = ((end as i128 - start as i128) + (step as i128 - step.signum() as i128))
            .checked_div(step as i128)
            .unwrap_or(0)
            .max(0);
        if count > MAX_ROWS {
            return Err(FerroError::Unsupported(format!(
                "range of {count} rows: ferrospark makes range() in memory, up to {MAX_ROWS} rows"
            )));
        }
        let ids: Vec<i64> = (0..count as i64).map(|i| start + i * step).collect();
        let schema = Arc::new(arrow_schema::Schema::new(vec![arrow_schema::Field::new(
            "id",
            arrow_schema::DataType::Int64,
            false,
        )]));
        let batches = ids
            .chunks(8192)
            .map(|c| {
                arrow_array::RecordBatch::try_new(
                    schema.clone(),
                    vec![Arc::new(arrow_array::Int64Array::from(c.to_vec()))],
                )
                .map_err(|e| FerroError::Internal(e.to_string()))
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(self.builder.scan_memory(schema, batches, "range"))
    }

    fn table_factor(&self, t: &TableFactor, outer: Option<&Scope<'_>>) -> Result<Arc<LogicalPlan>> {
        match t {
            TableFactor::Table {
                name,
                alias,
                args: Some(args),
                ..
            } => {
                let fname = name.to_string().trim_matches('`').to_ascii_lowercase();
                if let Some(plan) = self.generator_table(&fname, &args.args)? {
                    return match alias {
                        Some(a) => self.rename_columns(plan, a),
                        None => Ok(plan),
                    };
                }
                if fname != "range" {
                    return Err(FerroError::Analysis(format!(
                        "[UNRESOLVABLE_TABLE_VALUED_FUNCTION] Could not resolve `{fname}` to a table-valued function. Please make sure that `{fname}` is defined as a table-valued function and that all required parameters are provided correctly. SQLSTATE: 42883"
                    )));
                }
                let plan = self.range_table(&args.args)?;
                match alias {
                    Some(a) => self.rename_columns(plan, a),
                    None => Ok(PlanBuilder::alias(plan, "range")),
                }
            }
            TableFactor::Table { name, alias, .. } => {
                let parts: Vec<String> = name
                    .0
                    .iter()
                    .map(|p| p.to_string().trim_matches('`').to_string())
                    .collect();
                let plan = self.named_table(&parts)?;
                let default_alias = parts.last().cloned().unwrap_or_default();
                match alias {
                    Some(a) => self.rename_columns(plan, a),
                    None => Ok(PlanBuilder::alias(plan, &default_alias)),
                }
            }
            TableFactor::Derived {
                subquery, alias, ..
            } => {
                let plan = self.query(subquery, outer)?;
                match alias {
                    Some(a) => self.rename_columns(plan, a),
                    None => Ok(plan),
                }
            }
            TableFactor::NestedJoin {
                table_with_joins,
                alias,
            } => {
                let plan = self.table_with_joins(table_with_joins, outer)?;
                match alias {
                    Some(a) => self.rename_columns(plan, a),
                    None => Ok(plan),
                }
            }
            TableFactor::Pivot {
                table,
                aggregate_functions,
                value_column,
                value_source,
                default_on_null: None,
                alias,
            } => {
                let input = self.table_factor(table, outer)?;
                self.pivot(
                    input,
                    aggregate_functions,
                    value_column,
                    value_source,
                    alias.as_ref(),
                )
            }
            other => Err(FerroError::Unsupported(format!("`{other}` in FROM"))),
        }
    }

    /// A table by name: a CTE, a temp view or catalog table, or files as Spark's SQL reads
    /// them directly (``parquet.`path` ``, ``csv.`path` ``, ``json.`path` ``, ``avro.`path` ``,
    /// with each format's default options).
    fn named_table(&self, parts: &[String]) -> Result<Arc<LogicalPlan>> {
        if let [format, path] = parts {
            if path.contains('/') || path.contains('.') {
                let paths = [PathBuf::from(path)];
                if format.eq_ignore_ascii_case("parquet") {
                    return self.builder.scan_parquet(&paths, path);
                }
                if let Ok(f) = ferrospark_scan::FileFormat::parse(format) {
                    return self
                        .builder
                        .scan_format(f, &paths, None, Default::default(), path);
                }
            }
        }
        let name = parts.join(".").to_ascii_lowercase();
        for scope in self.ctes.borrow().iter().rev() {
            if let Some(p) = scope.get(&name) {
                return self.builder.fresh_ids(p);
            }
        }
        if let Some(p) = self.tables.relation(parts)? {
            return self.builder.fresh_ids(&p);
        }
        Err(self.tables.not_found(parts))
    }
}

/// An integer constant (`5`, `-5`, `5L`) as written in SQL.
fn constant_i64(e: &Expr) -> Option<i64> {
    match e {
        Expr::Literal(l) => literal_i64(l),
        Expr::Negative(inner) => constant_i64(inner).and_then(i64::checked_neg),
        _ => None,
    }
}

pub(crate) fn literal_i64(l: &Literal) -> Option<i64> {
    use arrow_array::cast::AsArray;
    use arrow_array::types::{Int32Type, Int64Type};
    use arrow_array::Array;
    let a = l.array();
    if a.is_null(0) {
        return None;
    }
    match a.data_type() {
        arrow_schema::DataType::Int32 => Some(a.as_primitive::<Int32Type>().value(0) as i64),
        arrow_schema::DataType::Int64 => Some(a.as_primitive::<Int64Type>().value(0)),
        _ => None,
    }
}

pub(crate) fn ordinal_error(l: &Literal, n: usize) -> FerroError {
    FerroError::Analysis(format!(
        "[ORDER_BY_POS_OUT_OF_RANGE] ORDER BY position {l} is not in select list (valid range is [1, {n}])"
    ))
}

/// An ORDER BY item as a sort key with Spark's defaults (ASC NULLS FIRST, DESC NULLS LAST).
pub(crate) fn sort_key(e: Expr, o: &ast::OrderByOptions) -> Expr {
    let ascending = !matches!(o.sort, Some(ast::OrderBySort::Desc));
    Expr::SortKey {
        expr: Box::new(e),
        ascending,
        nulls_first: o.nulls_first.unwrap_or(ascending),
    }
}

/// Spark's `spark.sql.legacy.allowParameterlessCount`: `count()` counts no expression, so
/// every row is skipped (0), read as `count(NULL)`.
fn count_of_nothing(
    tokens: Vec<sqlparser::tokenizer::TokenWithSpan>,
) -> Vec<sqlparser::tokenizer::TokenWithSpan> {
    use sqlparser::tokenizer::Token;
    let mut out = Vec::with_capacity(tokens.len());
    let significant = |t: &Token| !matches!(t, Token::Whitespace(_));
    for t in tokens {
        if t.token == Token::RParen {
            let mut seen = out
                .iter()
                .rev()
                .filter(|x: &&sqlparser::tokenizer::TokenWithSpan| significant(&x.token));
            let paren = seen.next().is_some_and(|x| x.token == Token::LParen);
            let count = seen.next().is_some_and(|x| {
                matches!(&x.token, Token::Word(w) if w.quote_style.is_none() && w.value.eq_ignore_ascii_case("count"))
            });
            if paren && count {
                out.push(sqlparser::tokenizer::TokenWithSpan::new(
                    Token::make_keyword("NULL"),
                    t.span,
                ));
            }
        }
        out.push(t);
    }
    out
}
