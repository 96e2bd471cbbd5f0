//! Building resolved logical plans: the operations a DataFrame call or a SQL clause performs,
//! each resolving its names against its input as it goes.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;

use arrow_array::RecordBatch;
use arrow_schema::{DataType, SchemaRef};
use ferrospark_common::{Config, FerroError, Result};
use ferrospark_expr::types::wider_numeric;
use ferrospark_expr::Expr;
use ferrospark_join::{JoinStrategy, JoinType};
use ferrospark_scan::{list_files, ParquetScan, ParquetScanOptions};

use crate::analyzer::{expr_nullable, expr_type, resolve_expr, strip_inner_aliases, Scope};
use crate::logical::expr_util::{
    conjoin, contains_aggregate, contains_window, is_aggregate_call, replace_columns,
    transform_down, transform_down_outside_windows,
};
use crate::logical::{AggCall, Attr, IdGen, LogicalPlan, ScanSource, SortExpr};

/// Builds resolved plans for one session: its attribute ids and its configuration.
#[derive(Debug, Clone)]
pub struct PlanBuilder {
    /// Attribute ids.
    pub ids: IdGen,
    /// Session configuration.
    pub cfg: Config,
}

/// How a DataFrame join names its keys.
#[derive(Debug, Clone)]
pub enum JoinOn {
    /// No condition (a cross join, or a condition added later by a filter).
    None,
    /// `USING (k1, k2)`: equal columns of these names, output once.
    Using(Vec<String>),
    /// SQL's `USING (k1, k2)` / `NATURAL`: as `Using`, and the keys not output stay reachable
    /// by their qualified names (`t2.k`) as hidden attributes.
    UsingKeepingKeys(Vec<String>),
    /// An ON condition over both sides.
    Condition(Expr),
}

pub(crate) use ferrospark_expr::strip_ids;

impl PlanBuilder {
    /// A builder with fresh ids.
    pub fn new(cfg: Config) -> Self {
        Self {
            ids: IdGen::default(),
            cfg,
        }
    }

    /// `spark.sql.caseSensitive`.
    pub fn case_sensitive(&self) -> bool {
        self.cfg
            .get_bool("spark.sql.caseSensitive", false)
            .unwrap_or(false)
    }

    /// A scope over a plan's output.
    pub fn scope(&self, plan: &LogicalPlan) -> Scope<'static> {
        Scope::new(plan.output(), self.case_sensitive())
    }

    /// A new attribute.
    pub fn attr(&self, name: &str, data_type: DataType, nullable: bool) -> Attr {
        Attr {
            id: self.ids.next(),
            name: name.to_string(),
            qualifier: None,
            data_type,
            nullable,
            hidden: false,
        }
    }

    /// A new attribute reachable by no name (a column the planner adds for its own use).
    pub fn hidden_attr(&self, name: &str, data_type: DataType, nullable: bool) -> Attr {
        Attr {
            hidden: true,
            ..self.attr(name, data_type, nullable)
        }
    }

    fn schema_attrs(&self, schema: &SchemaRef, qualifier: Option<&str>) -> Vec<Attr> {
        schema
            .fields()
            .iter()
            .map(|f| Attr {
                qualifier: qualifier.map(str::to_string),
                ..self.attr(f.name(), f.data_type().clone(), f.is_nullable())
            })
            .collect()
    }

    /// A relation over Parquet files.
    pub fn scan_parquet(&self, paths: &[PathBuf], name: &str) -> Result<Arc<LogicalPlan>> {
        self.scan_parquet_listed(paths, list_files(paths)?, name)
    }

    /// A relation over Parquet files `paths` already listed as `listing`.
    pub fn scan_parquet_listed(
        &self,
        paths: &[PathBuf],
        listing: ferrospark_scan::Listing,
        name: &str,
    ) -> Result<Arc<LogicalPlan>> {
        let options = ParquetScanOptions::from_config(&self.cfg)?;
        let size_bytes = listing.files.iter().map(|f| f.size).sum();
        let scan = ParquetScan::from_listing(paths.to_vec(), listing, options)?;
        // Columns carry Spark's types: the reader's string views become plain strings.
        let attrs = self.schema_attrs(&crate::conform::spark_input_schema(&scan.schema()), None);
        Ok(Arc::new(LogicalPlan::Scan {
            source: ScanSource::Parquet {
                paths: paths.to_vec(),
                size_bytes,
                stats: Arc::new(scan.table_statistics()),
                partitions: None,
            },
            attrs,
            projection: None,
            filters: Vec::new(),
            name: name.to_string(),
        }))
    }

    /// A relation over a catalog table's Parquet partitions: its columns are the catalog's
    /// (`schema`, partition columns last), its files are listed once the optimizer has pruned
    /// the partitions, and until then its size is the catalog's statistic or Spark's
    /// `spark.sql.defaultSizeInBytes`.
    pub fn scan_catalog_partitions(
        &self,
        schema: &SchemaRef,
        partitions: ferrospark_scan::PartitionDirs,
        location: PathBuf,
        size_bytes: Option<u64>,
        name: &str,
    ) -> Arc<LogicalPlan> {
        Arc::new(LogicalPlan::Scan {
            source: ScanSource::Parquet {
                paths: vec![location],
                size_bytes: size_bytes.unwrap_or(i64::MAX as u64),
                stats: Arc::new(ferrospark_scan::TableStatistics::default()),
                partitions: Some(crate::logical::CatalogPartitions {
                    dirs: Arc::new(partitions),
                    listed: false,
                    missing: Vec::new(),
                }),
            },
            attrs: self.schema_attrs(&crate::conform::spark_input_schema(schema), None),
            projection: None,
            filters: Vec::new(),
            name: name.to_string(),
        })
    }

    /// A relation over files of a row format (CSV, JSON, Avro) read with Spark's `options`; `schema` is the
    /// user's, else the columns come from the files (a CSV header, or inference).
    pub fn scan_format(
        &self,
        format: ferrospark_scan::FileFormat,
        paths: &[PathBuf],
        schema: Option<SchemaRef>,
        options: std::collections::BTreeMap<String, String>,
        name: &str,
    ) -> Result<Arc<LogicalPlan>> {
        let map: HashMap<String, String> = options.clone().into_iter().collect();
        let scan = ferrospark_scan::FileScan::try_new(
            format,
            paths,
            schema,
            None,
            None,
            &map,
            self.cfg.batch_size()?,
            self.cfg.clone(),
        )?;
        let plan = scan.plan();
        let attrs = self.schema_attrs(&plan.schema(), None);
        Ok(Arc::new(LogicalPlan::Scan {
            source: ScanSource::Files {
                format,
                paths: paths.to_vec(),
                size_bytes: plan.size_bytes(),
                options,
                schema: plan.table_schema(),
            },
            attrs,
            projection: None,
            filters: Vec::new(),
            name: name.to_string(),
        }))
    }

    /// A relation over Arrow batches of `schema`.
    pub fn scan_memory(
        &self,
        schema: SchemaRef,
        batches: Vec<RecordBatch>,
        name: &str,
    ) -> Arc<LogicalPlan> {
        let attrs = self.schema_attrs(&crate::conform::spark_input_schema(&schema), None);
        Arc::new(LogicalPlan::Scan {
            source: ScanSource::Memory {
                batches: Arc::new(batches),
            },
            attrs,
            projection: None,
            filters: Vec::new(),
            name: name.to_string(),
        })
    }

    /// A relation over rows of `schema` that the engine running the query hands over (a
    /// PySpark DataFrame), `size_bytes` by that engine's estimate.
    pub fn scan_external(
        &self,
        schema: SchemaRef,
        size_bytes: u64,
        name: &str,
    ) -> Arc<LogicalPlan> {
        let attrs = self.schema_attrs(&crate::conform::spark_input_schema(&schema), None);
        Arc::new(LogicalPlan::Scan {
            source: ScanSource::External { size_bytes },
            attrs,
            projection: None,
            filters: Vec::new(),
            name: name.to_string(),
        })
    }

    /// Expands `*` / `t.*` and resolves the other items in `scope`: the projection list.
    pub fn project_items(&self, items: &[Expr], scope: &Scope<'_>) -> Result<Vec<(Expr, Attr)>> {
        let mut out = Vec::new();
        for item in items {
            match item {
                Expr::Column(c) if c == "*" => {
                    out.extend(scope.attrs.iter().map(|a| (a.column(), a.clone())));
                }
                Expr::Field(q, star) if star == "*" => {
                    let Expr::Column(q) = q.as_ref() else {
                        return Err(FerroError::Analysis(format!(
                            "[INVALID_USAGE_OF_STAR_OR_REGEX] cannot expand {item}"
                        )));
                    };
                    let matching: Vec<&Attr> = scope
                        .attrs
                        .iter()
                        .filter(|a| {
                            a.qualifier
                                .as_deref()
                                .is_some_and(|aq| aq.eq_ignore_ascii_case(q))
                        })
                        .collect();
                    if matching.is_empty() {
                        return Err(FerroError::Analysis(format!(
                            "[CANNOT_RESOLVE_STAR_EXPAND] Cannot resolve `{q}`.* given input columns {}",
                            scope.attrs.iter().map(|a| format!("`{}`", a.name)).collect::<Vec<_>>().join(", ")
                        )));
                    }
                    out.extend(matching.into_iter().map(|a| (a.column(), a.clone())));
                }
                _ => {
                    let resolved = resolve_expr(item, scope)?;
                    out.push(self.named(item, resolved, &scope.attrs)?);
                }
            }
        }
        Ok(out)
    }

    /// `items` with each `*` / `t.*` replaced by the columns it stands for in `scope`, the
    /// other items through `each`.
    fn stars_expanded(
        &self,
        items: &[Expr],
        scope: &Scope<'_>,
        each: impl Fn(&Expr) -> Result<Expr>,
    ) -> Result<Vec<Expr>> {
        let mut out = Vec::with_capacity(items.len());
        for i in items {
            if matches!(i, Expr::Column(c) | Expr::Field(_, c) if c == "*") {
                let columns = self.project_items(std::slice::from_ref(i), scope)?;
                out.extend(columns.into_iter().map(|(e, _)| e));
            } else {
                out.push(each(i)?);
            }
        }
        Ok(out)
    }

    /// The output attribute of a resolved projection item (`item` as written names it).
    pub fn named(&self, item: &Expr, resolved: Expr, input: &[Attr]) -> Result<(Expr, Attr)> {
        let aliased = matches!(item, Expr::Alias { .. });
        let body = match &resolved {
            Expr::Alias { expr, .. } => strip_inner_aliases(expr)?,
            other => strip_inner_aliases(other)?,
        };
        let name = strip_ids(&item.output_name());
        // An item that reads an input column as it is keeps that column's attribute, unless
        // it was written under another name (`grouping_id()` reading `spark_grouping_id`).
        if !aliased {
            if let Expr::Column(k) = &body {
                if let Some(a) = input.iter().find(|a| a.key() == *k) {
                    if matches!(item, Expr::Column(_)) || a.name == name {
                        // A column named on purpose is a column of the result, also one a
                        // USING join hid (`SELECT nt2.k FROM nt1 JOIN nt2 USING (k)`).
                        let mut a = a.clone();
                        a.hidden = false;
                        return Ok((body, a));
                    }
                }
            }
        }
        let dt = expr_type(&body, input, &self.cfg)?;
        let nullable = expr_nullable(&body, input);
        Ok((body, self.attr(&name, dt, nullable)))
    }

    /// `SELECT items FROM input` (no aggregates; window calls are computed in `Window` nodes
    /// below the projection).
    pub fn project(&self, input: Arc<LogicalPlan>, items: &[Expr]) -> Result<Arc<LogicalPlan>> {
        if items.iter().any(crate::generators::contains_generator) {
            let scope = self.scope(&input);
            let resolved = self.stars_expanded(items, &scope, |i| resolve_expr(i, &scope))?;
            let (input, items, _) = self.extract_generator(input, resolved)?;
            return self.project(input, &items);
        }
        let (input, items) = if items.iter().any(contains_window) {
            let scope = self.scope(&input);
            // `*` is the input's columns, not the window columns computed below it.
            let expanded = self.stars_expanded(items, &scope, |i| Ok(i.clone()))?;
            let resolved = expanded
                .iter()
                .map(|i| {
                    transform_down(i, &mut |x| {
                        Ok(match x {
                            Expr::Window { .. } => Some(resolve_expr(x, &scope)?),
                            _ => None,
                        })
                    })
                })
                .collect::<Result<Vec<_>>>()?;
            self.extract_windows(input, resolved)?
        } else {
            (input, items.to_vec())
        };
        let items = &items[..];
        let scope = self.scope(&input);
        let exprs = self.project_items(items, &scope)?;
        if let Some((e, _)) = exprs.iter().find(|(e, _)| contains_aggregate(e)) {
            return Err(FerroError::Analysis(format!(
                "[MISSING_GROUP_BY] aggregate {} in a projection without GROUP BY: use groupBy().agg() or agg()",
                strip_ids(&e.to_string())
            )));
        }
        Ok(Arc::new(LogicalPlan::Project { input, exprs }))
    }

    /// A projection of already resolved expressions with their attributes.
    pub fn project_resolved(input: Arc<LogicalPlan>, exprs: Vec<(Expr, Attr)>) -> Arc<LogicalPlan> {
        Arc::new(LogicalPlan::Project { input, exprs })
    }

    /// `WHERE predicate`.
    pub fn filter(&self, input: Arc<LogicalPlan>, predicate: &Expr) -> Result<Arc<LogicalPlan>> {
        let scope = self.scope(&input);
        let p = resolve_expr(predicate, &scope)?;
        self.filter_resolved(input, p, &[])
    }

    /// A filter on a resolved predicate, type-checked as a boolean; `outer` are the attributes
    /// of enclosing queries a correlated predicate may read.
    pub fn filter_resolved(
        &self,
        input: Arc<LogicalPlan>,
        predicate: Expr,
        outer: &[Attr],
    ) -> Result<Arc<LogicalPlan>> {
        if contains_aggregate(&predicate) {
            return Err(FerroError::Analysis(format!(
                "[INVALID_WHERE_CONDITION] The WHERE condition {} contains an aggregate; use HAVING",
                strip_ids(&predicate.to_string())
            )));
        }
        let mut visible = input.output();
        visible.extend(outer.iter().cloned());
        let dt = expr_type(&predicate, &visible, &self.cfg)?;
        if !matches!(dt, DataType::Boolean | DataType::Null) {
            return Err(FerroError::Analysis(format!(
                "[DATATYPE_MISMATCH.FILTER_NOT_BOOLEAN] Cannot resolve filter {}: it is {dt}, not BOOLEAN",
                strip_ids(&predicate.to_string())
            )));
        }
        Ok(Arc::new(LogicalPlan::Filter { input, predicate }))
    }

    /// An Aggregate node grouping by resolved `group` exprs (their names as written in
    /// `group_items`) and computing the aggregate calls found in the resolved `results`; returns
    /// the node and the results rewritten over its output.
    pub fn aggregate(
        &self,
        input: Arc<LogicalPlan>,
        group_items: &[Expr],
        group: Vec<Expr>,
        results: &[Expr],
    ) -> Result<(Arc<LogicalPlan>, Vec<Expr>)> {
        if let Some(w) = self.session_windowing(&input, group_items, &group, results)? {
            return self.aggregate(w.input, &w.group_items, w.group, &w.results);
        }
        if let Some(w) = self.time_windowing(&input, group_items, &group, results)? {
            return self.aggregate(w.input, &w.group_items, w.group, &w.results);
        }
        let in_attrs = input.output();
        if let Some(g) = results
            .iter()
            .find_map(crate::grouping_sets::find_grouping_call)
        {
            return Err(crate::grouping_sets::grouping_outside_analytics(&g));
        }
        let group_udfs = check_group_udf_placement(results)?;
        let mut group_out: Vec<(Expr, Attr)> = Vec::new();
        let global = group.is_empty();
        for (item, g) in group_items.iter().zip(group) {
            let g = grouping_expr(&g)?;
            if group_out.iter().any(|(e, _)| *e == g) {
                continue;
            }
            let named = self.named(&strip_alias_item(item), g, &in_attrs)?;
            group_out.push(named);
        }
        if group_out.is_empty() && group_udfs {
            // Spark runs grouped-aggregate pandas UDFs as a grouped Python aggregation even
            // without keys: no input rows, no output row (not one row of empty groups).
            let key = Expr::Literal(ferrospark_expr::Literal::boolean(true));
            group_out.push(self.named(&key, key.clone(), &in_attrs)?);
        }
        let mut aggs: Vec<(AggCall, Attr, Expr)> = Vec::new();
        for r in results {
            let mut err = None;
            let _ = transform_down_outside_windows(r, &mut |x| {
                if !is_aggregate_call(x) {
                    return Ok(None);
                }
                if !aggs.iter().any(|(_, _, e)| e == x) {
                    match self.agg_call(x, &in_attrs) {
                        Ok((call, attr)) => aggs.push((call, attr, x.clone())),
                        Err(e) => err = Some(e),
                    }
                }
                Ok(Some(x.clone()))
            });
            if let Some(e) = err {
                return Err(e);
            }
        }
        let mut pairs: Vec<(Expr, Expr)> = group_out
            .iter()
            .map(|(e, a)| (e.clone(), a.column()))
            .collect();
        pairs.extend(aggs.iter().map(|(_, a, e)| (e.clone(), a.column())));
        let out_keys: Vec<String> = pairs.iter().map(|(_, c)| c.to_string()).collect();
        let out_keys: Vec<String> = group_out
            .iter()
            .map(|(_, a)| a.key())
            .chain(aggs.iter().map(|(_, a, _)| a.key()))
            .chain(out_keys)
            .collect();
        let rewritten = results
            .iter()
            .map(|r| {
                let e = transform_down_outside_windows(r, &mut |x| {
                    Ok(pairs.iter().find(|(f, _)| f == x).map(|(_, t)| t.clone()))
                })?;
                // Anything still reading an input column is neither grouped nor aggregated.
                let mut missing = None;
                e.visit(&mut |x| {
                    if let Expr::Column(k) = x {
                        if !out_keys.contains(k) && in_attrs.iter().any(|a| a.key() == *k) {
                            missing.get_or_insert_with(|| k.clone());
                        }
                    }
                });
                if let Some(k) = missing {
                    if global {
                        return Err(FerroError::Analysis(format!(
                            "[MISSING_GROUP_BY] The query does not include a GROUP BY clause, but reads `{}` outside an aggregate. Add GROUP BY or turn it into the window functions using OVER clauses. SQLSTATE: 42803",
                            strip_ids(&k)
                        )));
                    }
                    return Err(FerroError::Analysis(format!(
                        "[MISSING_AGGREGATION] The non-aggregating expression `{}` is based on columns which are not participating in the GROUP BY clause. Add the columns or the expression to the GROUP BY, aggregate the expression, or use `any_value({})`",
                        strip_ids(&k),
                        strip_ids(&k)
                    )));
                }
                Ok(e)
            })
            .collect::<Result<Vec<_>>>()?;
        let node = LogicalPlan::Aggregate {
            input,
            group: group_out,
            aggs: aggs.into_iter().map(|(c, a, _)| (c, a)).collect(),
        };
        Ok((Arc::new(node), rewritten))
    }

    fn agg_call(&self, e: &Expr, input: &[Attr]) -> Result<(AggCall, Attr)> {
        let call = match e {
            Expr::Aggregate {
                name,
                args,
                distinct,
                ignore_nulls,
            } => AggCall {
                name: name.clone(),
                args: args.clone(),
                distinct: *distinct,
                ignore_nulls: *ignore_nulls,
            },
            Expr::Function { name, args } => {
                let (name, distinct) = match name.as_str() {
                    "count_distinct" => ("count".to_string(), true),
                    "sum_distinct" => ("sum".to_string(), true),
                    n => (n.to_string(), false),
                };
                AggCall {
                    name,
                    args: args.clone(),
                    distinct,
                    ignore_nulls: false,
                }
            }
            other => {
                return Err(FerroError::Internal(format!("not an aggregate: {other}")));
            }
        };
        for a in &call.args {
            if contains_aggregate(a) {
                return Err(FerroError::Analysis(format!(
                    "[NESTED_AGGREGATE_FUNCTION] It is not allowed to use an aggregate function in the argument of another aggregate function: {}",
                    strip_ids(&e.to_string())
                )));
            }
        }
        let dt = crate::physical::aggregate::agg_result_type(&call, input, &self.cfg)?;
        let nullable = call.name != "count";
        let name = strip_ids(&e.spark_name());
        Ok((call, self.attr(&name, dt, nullable)))
    }

    /// The type of join condition `cond` over `attrs`; a type mismatch is Spark's
    /// DATATYPE_MISMATCH naming the columns as the user wrote them.
    fn join_condition_type(&self, cond: &Expr, attrs: &[Attr]) -> Result<DataType> {
        expr_type(cond, attrs, &self.cfg).map_err(|e| match e {
            FerroError::Analysis(m) => FerroError::Analysis(strip_ids(&m)),
            other => other,
        })
    }

    /// A join; `on` resolved over both sides. USING joins output each key once.
    pub fn join(
        &self,
        left: Arc<LogicalPlan>,
        right: Arc<LogicalPlan>,
        on: JoinOn,
        join_type: JoinType,
        hint: Option<JoinStrategy>,
    ) -> Result<Arc<LogicalPlan>> {
        // A relation joined with itself (or with a plan of another session, whose ids were
        // handed out apart) gets new ids on its right side, as Spark's DeduplicateRelations
        // does: one id must name one column.
        let right = if shares_ids(&left, &right) {
            self.fresh_ids(&right)?
        } else {
            right
        };
        let (la, ra) = (left.output(), right.output());
        let keep_keys = matches!(on, JoinOn::UsingKeepingKeys(_));
        match on {
            JoinOn::None => Ok(Arc::new(LogicalPlan::Join {
                left,
                right,
                join_type,
                condition: None,
                hint,
            })),
            JoinOn::Condition(c) => {
                let mut both = la.clone();
                both.extend(ra);
                let scope = Scope::new(both.clone(), self.case_sensitive());
                let cond = resolve_expr(&c, &scope)?;
                let dt = self.join_condition_type(&cond, &both)?;
                if !matches!(dt, DataType::Boolean | DataType::Null) {
                    return Err(FerroError::Analysis(format!(
                        "[DATATYPE_MISMATCH] the join condition {} is {dt}, not BOOLEAN",
                        strip_ids(&cond.to_string())
                    )));
                }
                Ok(Arc::new(LogicalPlan::Join {
                    left,
                    right,
                    join_type,
                    condition: Some(cond),
                    hint,
                }))
            }
            JoinOn::Using(names) | JoinOn::UsingKeepingKeys(names) => {
                let ls = Scope::new(la.clone(), self.case_sensitive());
                let rs = Scope::new(ra.clone(), self.case_sensitive());
                let mut keys = Vec::new();
                let mut conds = Vec::new();
                for n in &names {
                    let l = ls.resolve_name(None, n)?.ok_or_else(|| {
                        FerroError::Analysis(format!(
                            "[UNRESOLVED_USING_COLUMN_FOR_JOIN] USING column `{n}` cannot be resolved on the left side of the join. The left-side columns: [{}]",
                            la.iter().map(|a| format!("`{}`", a.name)).collect::<Vec<_>>().join(", ")
                        ))
                    })?;
                    let r = rs.resolve_name(None, n)?.ok_or_else(|| {
                        FerroError::Analysis(format!(
                            "[UNRESOLVED_USING_COLUMN_FOR_JOIN] USING column `{n}` cannot be resolved on the right side of the join. The right-side columns: [{}]",
                            ra.iter().map(|a| format!("`{}`", a.name)).collect::<Vec<_>>().join(", ")
                        ))
                    })?;
                    let both = [l.clone(), r.clone()];
                    let cond = l.column().eq(r.column());
                    self.join_condition_type(&cond, &both)?;
                    conds.push(cond);
                    keys.push((l, r));
                }
                let join = Arc::new(LogicalPlan::Join {
                    left,
                    right,
                    join_type,
                    condition: conjoin(conds),
                    hint,
                });
                // Spark's USING output: the keys (coalesced for a full join), then the other
                // left columns, then the other right columns; a semi or anti join's keys
                // first too, then its other left columns.
                let out = join.output();
                // Each key as the join outputs it (nullable on an outer side).
                let joined = |a: &Attr| out.iter().find(|o| o.id == a.id).cloned();
                let mut exprs: Vec<(Expr, Attr)> = Vec::new();
                let mut hidden: Vec<(Expr, Attr)> = Vec::new();
                let mut hide = |a: Option<Attr>| {
                    if let Some(a) = a {
                        let h = Attr {
                            hidden: true,
                            ..a.clone()
                        };
                        hidden.push((a.column(), h));
                    }
                };
                for (l, r) in &keys {
                    match join_type {
                        JoinType::RightOuter => {
                            exprs.push((r.column(), joined(r).unwrap_or_else(|| r.clone())));
                            hide(joined(l));
                        }
                        JoinType::FullOuter => {
                            let e = Expr::Function {
                                name: "coalesce".into(),
                                args: vec![l.column(), r.column()],
                            };
                            let dt = expr_type(&e, &out, &self.cfg)?;
                            exprs.push((e, self.attr(&l.name, dt, true)));
                            hide(joined(l));
                            hide(joined(r));
                        }
                        _ => {
                            exprs.push((l.column(), l.clone()));
                            hide(joined(r));
                        }
                    }
                }
                // Spark expands `t2.*` with t2's key first: the hidden keys come next.
                if keep_keys {
                    exprs.extend(hidden);
                }
                for a in out.iter() {
                    if keys.iter().any(|(l, r)| l.id == a.id || r.id == a.id) {
                        continue;
                    }
                    exprs.push((a.column(), a.clone()));
                }
                Ok(Arc::new(LogicalPlan::Project { input: join, exprs }))
            }
        }
    }

    /// `ORDER BY keys` (`Expr::SortKey`s or plain expressions, ascending) resolved in `scope`.
    pub fn sort_keys(&self, keys: &[Expr], scope: &Scope<'_>) -> Result<Vec<SortExpr>> {
        keys.iter()
            .map(|k| {
                let (e, ascending, nulls_first) = match k {
                    Expr::SortKey {
                        expr,
                        ascending,
                        nulls_first,
                    } => (expr.as_ref(), *ascending, *nulls_first),
                    other => (other, true, true),
                };
                Ok(SortExpr {
                    expr: strip_inner_aliases(&resolve_expr(e, scope)?)?,
                    ascending,
                    nulls_first,
                })
            })
            .collect()
    }

    /// `ORDER BY`.
    pub fn sort(&self, input: Arc<LogicalPlan>, keys: &[Expr]) -> Result<Arc<LogicalPlan>> {
        let scope = self.scope(&input);
        let keys = self.sort_keys(keys, &scope)?;
        Ok(Arc::new(LogicalPlan::Sort { input, keys }))
    }

    /// `LIMIT fetch OFFSET skip`.
    pub fn limit(input: Arc<LogicalPlan>, skip: usize, fetch: Option<usize>) -> Arc<LogicalPlan> {
        Arc::new(LogicalPlan::Limit { input, skip, fetch })
    }

    /// `AS alias`: the same attributes, qualified by `alias`.
    pub fn alias(input: Arc<LogicalPlan>, alias: &str) -> Arc<LogicalPlan> {
        let attrs = input
            .output()
            .into_iter()
            .map(|a| a.with_qualifier(Some(alias.to_string())))
            .collect();
        Arc::new(LogicalPlan::SubqueryAlias {
            input,
            alias: alias.to_string(),
            attrs,
        })
    }

    /// `SELECT DISTINCT`: an aggregate grouping by every column.
    pub fn distinct(&self, input: Arc<LogicalPlan>) -> Result<Arc<LogicalPlan>> {
        let attrs = input.output();
        let group = attrs.iter().map(|a| (a.column(), a.clone())).collect();
        Ok(Arc::new(LogicalPlan::Aggregate {
            input,
            group,
            aggs: Vec::new(),
        }))
    }

    /// `UNION ALL` by position, types widened as Spark widens them.
    pub fn union(&self, inputs: Vec<Arc<LogicalPlan>>) -> Result<Arc<LogicalPlan>> {
        let outs: Vec<Vec<Attr>> = inputs.iter().map(|p| p.output()).collect();
        let n = outs[0].len();
        if let Some(bad) = outs.iter().find(|o| o.len() != n) {
            return Err(FerroError::Analysis(format!(
                "[NUM_COLUMNS_MISMATCH] UNION can only be performed on inputs with the same number of columns, but the first input has {n} columns and another has {}",
                bad.len()
            )));
        }
        let mut types: Vec<DataType> = outs[0].iter().map(|a| a.data_type.clone()).collect();
        for o in &outs[1..] {
            for (t, a) in types.iter_mut().zip(o) {
                if *t == a.data_type {
                    continue;
                }
                *t = common_type(t, &a.data_type).ok_or_else(|| {
                    FerroError::Analysis(format!(
                        "[INCOMPATIBLE_COLUMN_TYPE] UNION can only be performed on inputs with compatible column types: column `{}` is {} in one input and {} in another",
                        a.name, t, a.data_type
                    ))
                })?;
            }
        }
        // Each input cast to the common types where needed.
        let inputs = inputs
            .into_iter()
            .map(|p| {
                let out = p.output();
                if out.iter().zip(&types).all(|(a, t)| a.data_type == *t) {
                    return p;
                }
                let exprs = out
                    .iter()
                    .zip(&types)
                    .map(|(a, t)| {
                        if a.data_type == *t {
                            (a.column(), a.clone())
                        } else {
                            let e = Expr::Cast {
                                expr: Box::new(a.column()),
                                type_name: ferrospark_expr::types::spark_type_name(t),
                            };
                            (e, self.attr(&a.name, t.clone(), a.nullable))
                        }
                    })
                    .collect();
                Arc::new(LogicalPlan::Project { input: p, exprs })
            })
            .collect::<Vec<_>>();
        let attrs = outs[0]
            .iter()
            .enumerate()
            .map(|(i, a)| {
                let nullable = outs.iter().any(|o| o[i].nullable);
                self.attr(&a.name, types[i].clone(), nullable)
            })
            .collect();
        Ok(Arc::new(LogicalPlan::Union { inputs, attrs }))
    }

    /// The same plan with every attribute it defines given a new id (a relation referenced
    /// twice, as in a self-join, must not share ids between its two uses).
    pub fn fresh_ids(&self, plan: &Arc<LogicalPlan>) -> Result<Arc<LogicalPlan>> {
        let mut map: HashMap<String, Attr> = HashMap::new();
        let renew = |a: &Attr, map: &mut HashMap<String, Attr>| -> Attr {
            let fresh = Attr {
                id: self.ids.next(),
                ..a.clone()
            };
            map.insert(a.key(), fresh.clone());
            fresh
        };
        plan.transform_up(&mut |node| {
            let re = |e: &Expr, map: &HashMap<String, Attr>| {
                replace_columns(e, &|k| map.get(k).map(Attr::column))
            };
            let new = match node.as_ref() {
                LogicalPlan::Scan {
                    source,
                    attrs,
                    projection,
                    filters,
                    name,
                } => {
                    let attrs = attrs.iter().map(|a| renew(a, &mut map)).collect();
                    LogicalPlan::Scan {
                        source: source.clone(),
                        attrs,
                        projection: projection.clone(),
                        filters: filters.iter().map(|f| re(f, &map)).collect(),
                        name: name.clone(),
                    }
                }
                LogicalPlan::Empty { attrs } => LogicalPlan::Empty {
                    attrs: attrs.iter().map(|a| renew(a, &mut map)).collect(),
                },
                LogicalPlan::Project { input, exprs } => {
                    let exprs = exprs
                        .iter()
                        .map(|(e, a)| {
                            let e2 = re(e, &map);
                            let a2 = if map.contains_key(&a.key()) && *e == a.column() {
                                map[&a.key()].clone()
                            } else {
                                renew(a, &mut map)
                            };
                            (e2, a2)
                        })
                        .collect();
                    LogicalPlan::Project {
                        input: input.clone(),
                        exprs,
                    }
                }
                LogicalPlan::Aggregate { input, group, aggs } => {
                    let group = group
                        .iter()
                        .map(|(e, a)| {
                            let e2 = re(e, &map);
                            let a2 = if map.contains_key(&a.key()) && *e == a.column() {
                                map[&a.key()].clone()
                            } else {
                                renew(a, &mut map)
                            };
                            (e2, a2)
                        })
                        .collect();
                    let aggs = aggs
                        .iter()
                        .map(|(c, a)| {
                            let c2 = AggCall {
                                args: c.args.iter().map(|x| re(x, &map)).collect(),
                                ..c.clone()
                            };
                            (c2, renew(a, &mut map))
                        })
                        .collect();
                    LogicalPlan::Aggregate {
                        input: input.clone(),
                        group,
                        aggs,
                    }
                }
                LogicalPlan::Window { input, exprs } => {
                    let exprs = exprs
                        .iter()
                        .map(|(w, a)| {
                            let w2 = crate::logical::WindowCallExpr {
                                func: re(&w.func, &map),
                                partition_by: w.partition_by.iter().map(|x| re(x, &map)).collect(),
                                order_by: w
                                    .order_by
                                    .iter()
                                    .map(|s| SortExpr {
                                        expr: re(&s.expr, &map),
                                        ..s.clone()
                                    })
                                    .collect(),
                                frame: w.frame.clone(),
                            };
                            (w2, renew(a, &mut map))
                        })
                        .collect();
                    LogicalPlan::Window {
                        input: input.clone(),
                        exprs,
                    }
                }
                LogicalPlan::Expand {
                    input,
                    projections,
                    attrs,
                } => {
                    // Input columns pass through under their (already renewed) ids.
                    let passed: Vec<bool> = (0..attrs.len())
                        .map(|i| {
                            projections.iter().all(|p| {
                                p[i] == attrs[i].column() && map.contains_key(&attrs[i].key())
                            })
                        })
                        .collect();
                    let projections = projections
                        .iter()
                        .map(|p| p.iter().map(|e| re(e, &map)).collect())
                        .collect();
                    let attrs = attrs
                        .iter()
                        .zip(passed)
                        .map(|(a, p)| {
                            if p {
                                map[&a.key()].clone()
                            } else {
                                renew(a, &mut map)
                            }
                        })
                        .collect();
                    LogicalPlan::Expand {
                        input: input.clone(),
                        projections,
                        attrs,
                    }
                }
                LogicalPlan::Union { inputs, attrs } => LogicalPlan::Union {
                    inputs: inputs.clone(),
                    attrs: attrs.iter().map(|a| renew(a, &mut map)).collect(),
                },
                LogicalPlan::SubqueryAlias {
                    input,
                    alias,
                    attrs,
                } => LogicalPlan::SubqueryAlias {
                    input: input.clone(),
                    alias: alias.clone(),
                    attrs: attrs
                        .iter()
                        .map(|a| {
                            map.get(&a.key())
                                .map(|m| m.with_qualifier(a.qualifier.clone()))
                                .unwrap_or_else(|| a.clone())
                        })
                        .collect(),
                },
                LogicalPlan::Filter { input, predicate } => LogicalPlan::Filter {
                    input: input.clone(),
                    predicate: re(predicate, &map),
                },
                LogicalPlan::Join {
                    left,
                    right,
                    join_type,
                    condition,
                    hint,
                } => LogicalPlan::Join {
                    left: left.clone(),
                    right: right.clone(),
                    join_type: *join_type,
                    condition: condition.as_ref().map(|c| re(c, &map)),
                    hint: *hint,
                },
                LogicalPlan::Sort { input, keys } => LogicalPlan::Sort {
                    input: input.clone(),
                    keys: keys
                        .iter()
                        .map(|k| SortExpr {
                            expr: re(&k.expr, &map),
                            ..k.clone()
                        })
                        .collect(),
                },
                other => other.clone(),
            };
            Ok(Arc::new(new))
        })
    }
}

/// A resolved GROUP BY expression without its aliases; an aggregate in it is Spark's
/// GROUP_BY_AGGREGATE error.
pub(crate) fn grouping_expr(g: &Expr) -> Result<Expr> {
    let g = match strip_inner_aliases(g)? {
        Expr::Alias { expr, .. } => *expr,
        other => other,
    };
    if contains_aggregate(&g) {
        return Err(FerroError::Analysis(format!(
            "[GROUP_BY_AGGREGATE] Aggregate functions are not allowed in GROUP BY, but found {}",
            strip_ids(&g.to_string())
        )));
    }
    Ok(g)
}

fn strip_alias_item(e: &Expr) -> Expr {
    e.clone()
}

/// Spark's wider common type of two column types (numbers widen, NULL takes the other).
pub fn common_type(a: &DataType, b: &DataType) -> Option<DataType> {
    if a == b {
        return Some(a.clone());
    }
    match (a, b) {
        (DataType::Null, t) | (t, DataType::Null) => Some(t.clone()),
        _ => wider_numeric(a, b).or_else(|| match (a, b) {
            (DataType::Date32, DataType::Timestamp(u, z))
            | (DataType::Timestamp(u, z), DataType::Date32) => {
                Some(DataType::Timestamp(*u, z.clone()))
            }
            (DataType::Utf8, _) | (_, DataType::Utf8) => Some(DataType::Utf8),
            _ => None,
        }),
    }
}

/// The ids of the attributes `plan` and its inputs output.
fn defined_ids(plan: &LogicalPlan, out: &mut std::collections::HashSet<u64>) {
    out.extend(plan.output().iter().map(|a| a.id));
    for c in plan.children() {
        defined_ids(c, out);
    }
}

/// Whether `right` defines an attribute id `left` does too.
fn shares_ids(left: &LogicalPlan, right: &LogicalPlan) -> bool {
    let (mut l, mut r) = (Default::default(), Default::default());
    defined_ids(left, &mut l);
    defined_ids(right, &mut r);
    !l.is_disjoint(&r)
}

/// Spark's rule for grouped-aggregate `pandas_udf`s: they are evaluated apart from the other
/// aggregates of a query (in Python, over each group's rows), so one query may not mix them.
///
/// Whether `results` call any grouped-aggregate `pandas_udf`.
pub(crate) fn check_group_udf_placement(results: &[Expr]) -> Result<bool> {
    let mut pandas: Vec<String> = Vec::new();
    let (mut calls, mut aggregates) = (0, 0);
    for r in results {
        r.visit(&mut |e| {
            if let Some(udf) = ferrospark_expr::udf::group_call(e) {
                calls += 1;
                if !pandas.iter().any(|n| n == udf.name()) {
                    pandas.push(udf.name().to_string());
                }
            }
            aggregates += crate::logical::expr_util::is_aggregate_call(e) as usize;
        });
    }
    // each grouped-aggregate call holds one aggregate of its own (its rows' collect_list)
    if pandas.is_empty() || aggregates == calls {
        return Ok(!pandas.is_empty());
    }
    let names: Vec<String> = pandas.iter().map(|n| format!("`{n}`")).collect();
    Err(FerroError::Analysis(format!(
        "[INVALID_PANDAS_UDF_PLACEMENT] The group aggregate pandas UDF {} cannot be invoked together with as other, non-pandas aggregate functions. SQLSTATE: 0A000",
        names.join(", ")
    )))
}
