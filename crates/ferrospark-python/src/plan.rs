//! Bindings of the query layer: a session's `QueryEngine` and lazy `LogicalPlan`s that the
//! Python `DataFrame` wraps. Planning and execution live in `ferrospark-plan`.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use arrow_array::{RecordBatch, RecordBatchIterator, RecordBatchReader};
use ferrospark_plan::user_form::{user_batch, user_schema};
use pyo3::prelude::*;
use pyo3_arrow::{PyRecordBatchReader, PySchema, PyTable};

use ferrospark_common::FerroError;
use ferrospark_expr::Expr;
use ferrospark_join::{JoinStrategy, JoinType};
use ferrospark_plan::logical::{Attr, LogicalPlan, SetOpKind};
use ferrospark_plan::{ExecutionPlan, ExplainMode, JoinOn, PlanBuilder, QueryEngine, SqlStatement};

use crate::{config_from, Detach, IntoPyResult, PyExpr};

/// A session's query engine: temp views, SQL, DataFrame plans.
#[pyclass(name = "QueryEngine", module = "ferrospark._native", frozen)]
pub(crate) struct PyQueryEngine(Arc<QueryEngine>);

/// A resolved, lazy query plan (what a DataFrame holds).
#[pyclass(name = "LogicalPlan", module = "ferrospark._native", frozen)]
pub(crate) struct PyPlan {
    engine: Arc<QueryEngine>,
    plan: Arc<LogicalPlan>,
    last_run: Mutex<Option<Arc<dyn ExecutionPlan>>>,
}

impl PyPlan {
    fn of(&self, plan: Arc<LogicalPlan>) -> PyPlan {
        PyPlan::new(self.engine.clone(), plan)
    }
    fn new(engine: Arc<QueryEngine>, plan: Arc<LogicalPlan>) -> PyPlan {
        PyPlan {
            engine,
            plan,
            last_run: Mutex::new(None),
        }
    }
    fn builder(&self) -> &PlanBuilder {
        &self.engine.builder
    }
    /// The engine and the plan, for a write.
    pub(crate) fn parts(&self) -> (Arc<QueryEngine>, Arc<LogicalPlan>) {
        (self.engine.clone(), self.plan.clone())
    }
}

impl PyPlan {
    /// The expressions, with calls of the session's registered Python functions bound.
    fn exprs(&self, py: Python<'_>, v: &[PyExpr]) -> PyResult<Vec<Expr>> {
        v.iter().map(|e| self.expr(py, e)).collect()
    }

    fn expr(&self, py: Python<'_>, e: &PyExpr) -> PyResult<Expr> {
        self.engine.with_udfs(e.0.clone()).py(py)
    }
}

fn explain_mode(mode: &str) -> Result<ExplainMode, FerroError> {
    Ok(match mode.to_ascii_lowercase().as_str() {
        "simple" | "physical" => ExplainMode::Simple,
        "extended" => ExplainMode::Extended,
        "formatted" => ExplainMode::Formatted,
        other => {
            return Err(FerroError::Config(format!(
                "explain mode `{other}`: use simple, extended or formatted"
            )))
        }
    })
}

#[pymethods]
impl PyQueryEngine {
    /// An engine under `conf` over `catalog` (an in-memory catalog of its own without one).
    #[new]
    #[pyo3(signature = (conf=None, catalog=None))]
    fn new(
        py: Python<'_>,
        conf: Option<HashMap<String, String>>,
        catalog: Option<&crate::catalog::PyCatalog>,
    ) -> PyResult<Self> {
        let cfg = config_from(py, conf)?;
        Ok(Self(Arc::new(match catalog {
            Some(c) => QueryEngine::with_catalog(cfg, c.0.clone()),
            None => QueryEngine::new(cfg),
        })))
    }

    /// Plans a SQL statement: `(plan, explain_mode or None)`.
    fn sql(&self, py: Python<'_>, text: &str) -> PyResult<(PyPlan, Option<String>)> {
        let engine = self.0.clone();
        let st = py
            .run_detached(|| crate::plan_sql_checked(&engine, text))
            .py(py)?;
        Ok(match st {
            SqlStatement::Query(p) => (PyPlan::new(self.0.clone(), p), None),
            SqlStatement::Explain(p, mode) => {
                let m = match mode {
                    ExplainMode::Simple => "simple",
                    ExplainMode::Extended => "extended",
                    ExplainMode::Formatted => "formatted",
                };
                (PyPlan::new(self.0.clone(), p), Some(m.to_string()))
            }
        })
    }

    /// A relation over Parquet files (footers read now, rows when an action runs).
    fn read_parquet(&self, py: Python<'_>, paths: Vec<String>) -> PyResult<PyPlan> {
        let (paths, name) = relation_paths(paths);
        let engine = self.0.clone();
        let plan = py
            .run_detached(|| engine.builder.scan_parquet(&paths, &name))
            .py(py)?;
        Ok(PyPlan::new(self.0.clone(), plan))
    }

    /// A relation over files of a row format (`csv`, `json`, `avro`) with Spark's `options` (the schema settled
    /// now: the user's, a CSV header's, or inferred; rows when an action runs).
    #[pyo3(signature = (format, paths, schema=None, options=None))]
    fn read_format(
        &self,
        py: Python<'_>,
        format: &str,
        paths: Vec<String>,
        schema: Option<PySchema>,
        options: Option<std::collections::BTreeMap<String, String>>,
    ) -> PyResult<PyPlan> {
        let (paths, name) = relation_paths(paths);
        let engine = self.0.clone();
        let schema = schema.map(PySchema::into_inner);
        let options = options.unwrap_or_default();
        let format = ferrospark_scan::FileFormat::parse(format).py(py)?;
        let plan = py
            .run_detached(|| {
                engine
                    .builder
                    .scan_format(format, &paths, schema, options, &name)
            })
            .py(py)?;
        Ok(PyPlan::new(self.0.clone(), plan))
    }

    /// A relation over Arrow data (read fully now).
    #[pyo3(name = "from_arrow")]
    fn relation_from_arrow(&self, py: Python<'_>, data: PyRecordBatchReader) -> PyResult<PyPlan> {
        let reader = data.into_reader()?;
        let schema = reader.schema();
        let batches = reader
            .collect::<Result<Vec<RecordBatch>, _>>()
            .map_err(FerroError::from)
            .py(py)?;
        let plan = self.0.builder.scan_memory(schema, batches, "LocalRelation");
        Ok(PyPlan::new(self.0.clone(), plan))
    }

    /// A relation over the rows of a PySpark DataFrame of Arrow schema `schema` (read by a
    /// stage on Spark), `size_bytes` by Spark's estimate.
    #[pyo3(name = "from_spark")]
    fn relation_from_spark(&self, schema: PySchema, size_bytes: u64, name: &str) -> PyPlan {
        let plan = self
            .0
            .builder
            .scan_external(schema.into_inner(), size_bytes, name);
        PyPlan::new(self.0.clone(), plan)
    }

    /// A plan of another engine (another session), made this engine's: every attribute it
    /// defines gets an id of this engine, so none collides with one this engine hands out.
    fn adopt(&self, py: Python<'_>, plan: &PyPlan) -> PyResult<PyPlan> {
        let p = self.0.builder.fresh_ids(&plan.plan).py(py)?;
        Ok(PyPlan::new(self.0.clone(), p))
    }

    /// A table or view by name (`t`, `db.t`, `global_temp.v`).
    fn table(&self, py: Python<'_>, name: &str) -> PyResult<PyPlan> {
        let engine = self.0.clone();
        let plan = py.run_detached(|| engine.table(name)).py(py)?;
        Ok(PyPlan::new(self.0.clone(), plan))
    }

    /// Registers a temp view.
    fn register_view(
        &self,
        py: Python<'_>,
        name: &str,
        plan: &PyPlan,
        replace: bool,
    ) -> PyResult<()> {
        self.0
            .register_view(name, plan.plan.clone(), replace)
            .py(py)
    }

    /// Drops a temp view; whether it existed.
    fn drop_view(&self, name: &str) -> bool {
        self.0.drop_view(name)
    }

    /// Names of the temp views.
    fn view_names(&self) -> Vec<String> {
        self.0.view_names()
    }
}

/// Paths as given, and the relation's name (its first path).
fn relation_paths(paths: Vec<String>) -> (Vec<std::path::PathBuf>, String) {
    let name = paths.first().cloned().unwrap_or_default();
    (paths.into_iter().map(Into::into).collect(), name)
}

fn parse_how(how: &str) -> Result<JoinType, FerroError> {
    JoinType::parse(how)
}

#[pymethods]
impl PyPlan {
    /// The output schema (user names) as a `pyarrow.Schema`.
    fn schema<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        PySchema::new(user_schema(&QueryEngine::output_schema(&self.plan))).into_pyarrow(py)
    }

    /// Output column names.
    fn columns(&self) -> Vec<String> {
        self.plan.output().into_iter().map(|a| a.name).collect()
    }

    /// The unambiguous key (`name#id`) of output column `name`, for `df["name"]`.
    fn column_key(&self, py: Python<'_>, name: &str) -> PyResult<String> {
        let scope = self.builder().scope(&self.plan);
        match scope.resolve_name(None, name).py(py)? {
            Some(a) => Ok(a.key()),
            None => Err(crate::to_py(py, scope.unresolved(None, name))),
        }
    }

    fn select(&self, py: Python<'_>, items: Vec<PyExpr>) -> PyResult<PyPlan> {
        let p = self
            .builder()
            .project(self.plan.clone(), &self.exprs(py, &items)?)
            .py(py)?;
        Ok(self.of(p))
    }

    fn filter(&self, py: Python<'_>, predicate: PyExpr) -> PyResult<PyPlan> {
        let p = self
            .builder()
            .filter(self.plan.clone(), &self.expr(py, &predicate)?)
            .py(py)?;
        Ok(self.of(p))
    }

    /// `groupBy(group).agg(aggs)`: the group columns then one column per aggregate expression.
    /// With `sets` (indices into `group`), GROUPING SETS: `rollup`, `cube`, `groupingSets`.
    #[pyo3(signature = (group, aggs, sets=None))]
    fn aggregate(
        &self,
        py: Python<'_>,
        group: Vec<PyExpr>,
        aggs: Vec<PyExpr>,
        sets: Option<Vec<Vec<usize>>>,
    ) -> PyResult<PyPlan> {
        let b = self.builder();
        let scope = b.scope(&self.plan);
        let (group, aggs) = (self.exprs(py, &group)?, self.exprs(py, &aggs)?);
        let run = || -> Result<Arc<LogicalPlan>, FerroError> {
            let group_written = group.clone();
            let group_resolved = group_written
                .iter()
                .map(|g| ferrospark_plan::analyzer::resolve_expr(g, &scope))
                .collect::<Result<Vec<_>, _>>()?;
            let agg_written = aggs.clone();
            let agg_resolved = agg_written
                .iter()
                .map(|a| ferrospark_plan::analyzer::resolve_expr(a, &scope))
                .collect::<Result<Vec<_>, _>>()?;
            let mut results = group_resolved.clone();
            results.extend(agg_resolved);
            let (node, rewritten) = match &sets {
                Some(sets) => b.grouping_sets_aggregate(
                    self.plan.clone(),
                    &group_written,
                    group_resolved,
                    sets,
                    &results,
                )?,
                None => b.aggregate(self.plan.clone(), &group_written, group_resolved, &results)?,
            };
            let input = node.output();
            let written: Vec<Expr> = group_written
                .iter()
                .chain(agg_written.iter())
                .cloned()
                .collect();
            let items = written
                .iter()
                .zip(rewritten)
                .map(|(w, r)| b.named(w, r, &input))
                .collect::<Result<Vec<_>, _>>()?;
            Ok(PlanBuilder::project_resolved(node, items))
        };
        Ok(self.of(run().py(py)?))
    }

    #[pyo3(signature = (other, how, on=None, condition=None, hint=None))]
    fn join(
        &self,
        py: Python<'_>,
        other: &PyPlan,
        how: &str,
        on: Option<Vec<String>>,
        condition: Option<PyExpr>,
        hint: Option<&str>,
    ) -> PyResult<PyPlan> {
        let jt = parse_how(how).py(py)?;
        let hint = hint.map(JoinStrategy::parse).transpose().py(py)?;
        let on = match (on, condition) {
            (Some(names), _) => JoinOn::Using(names),
            (None, Some(c)) => JoinOn::Condition(self.expr(py, &c)?),
            (None, None) => JoinOn::None,
        };
        let p = self
            .builder()
            .join(self.plan.clone(), other.plan.clone(), on, jt, hint)
            .py(py)?;
        Ok(self.of(p))
    }

    fn sort(&self, py: Python<'_>, keys: Vec<PyExpr>) -> PyResult<PyPlan> {
        let p = self
            .builder()
            .sort(self.plan.clone(), &self.exprs(py, &keys)?)
            .py(py)?;
        Ok(self.of(p))
    }

    #[pyo3(signature = (fetch, skip=0))]
    fn limit(&self, fetch: Option<usize>, skip: usize) -> PyPlan {
        self.of(PlanBuilder::limit(self.plan.clone(), skip, fetch))
    }

    fn distinct(&self, py: Python<'_>) -> PyResult<PyPlan> {
        let p = self.builder().distinct(self.plan.clone()).py(py)?;
        Ok(self.of(p))
    }

    /// `DISTINCT` on some columns: the first row of each (Spark's `dropDuplicates(subset)`).
    fn drop_duplicates(&self, py: Python<'_>, subset: Vec<String>) -> PyResult<PyPlan> {
        let b = self.builder();
        let run = || -> Result<Arc<LogicalPlan>, FerroError> {
            let out = self.plan.output();
            let scope = b.scope(&self.plan);
            let mut keys: Vec<Attr> = Vec::new();
            for n in &subset {
                match scope.resolve_name(None, n)? {
                    Some(a) => keys.push(a),
                    None => return Err(scope.unresolved(None, n)),
                }
            }
            let group_written: Vec<Expr> = keys.iter().map(Attr::column).collect();
            let results: Vec<Expr> = out
                .iter()
                .map(|a| {
                    if keys.iter().any(|k| k.id == a.id) {
                        a.column()
                    } else {
                        Expr::Aggregate {
                            name: "first".into(),
                            args: vec![a.column()],
                            distinct: false,
                            ignore_nulls: false,
                        }
                    }
                })
                .collect();
            let (node, rewritten) = b.aggregate(
                self.plan.clone(),
                &group_written,
                group_written.clone(),
                &results,
            )?;
            let input = node.output();
            let items = out
                .iter()
                .zip(rewritten)
                .map(|(a, r)| {
                    let (e, na) = b.named(
                        &Expr::Alias {
                            expr: Box::new(a.column()),
                            name: a.name.clone(),
                        },
                        r,
                        &input,
                    )?;
                    Ok((e, na))
                })
                .collect::<Result<Vec<_>, FerroError>>()?;
            Ok(PlanBuilder::project_resolved(node, items))
        };
        Ok(self.of(run().py(py)?))
    }

    #[pyo3(signature = (other, by_name=false, allow_missing=false))]
    fn union(
        &self,
        py: Python<'_>,
        other: &PyPlan,
        by_name: bool,
        allow_missing: bool,
    ) -> PyResult<PyPlan> {
        let b = self.builder();
        let run = || -> Result<Arc<LogicalPlan>, FerroError> {
            let right = if by_name {
                let rscope = b.scope(&other.plan);
                let mut items = Vec::new();
                for a in self.plan.output() {
                    match rscope.resolve_name(None, &a.name)? {
                        Some(r) => items.push(r.column()),
                        None if allow_missing => items.push(Expr::Alias {
                            expr: Box::new(Expr::Cast {
                                expr: Box::new(Expr::Literal(ferrospark_expr::Literal::null(&arrow_schema::DataType::Null))),
                                type_name: ferrospark_expr::types::spark_type_name(&a.data_type),
                            }),
                            name: a.name.clone(),
                        }),
                        None => {
                            return Err(FerroError::Analysis(format!(
                                "[UNRESOLVED_COLUMN] unionByName: column `{}` is missing from the other DataFrame; pass allowMissingColumns=True to fill it with NULLs",
                                a.name
                            )))
                        }
                    }
                }
                b.project(other.plan.clone(), &items)?
            } else {
                other.plan.clone()
            };
            b.union(vec![self.plan.clone(), right])
        };
        Ok(self.of(run().py(py)?))
    }

    fn set_op(&self, py: Python<'_>, other: &PyPlan, kind: &str, all: bool) -> PyResult<PyPlan> {
        let kind = if kind == "intersect" {
            SetOpKind::Intersect
        } else {
            SetOpKind::Except
        };
        let p = ferrospark_plan::setops::set_op(
            self.builder(),
            self.plan.clone(),
            other.plan.clone(),
            kind,
            all,
        )
        .py(py)?;
        Ok(self.of(p))
    }

    fn alias(&self, name: &str) -> PyPlan {
        self.of(PlanBuilder::alias(self.plan.clone(), name))
    }

    /// `withColumns`: replaces columns of the same name in place, appends the others.
    fn with_columns(
        &self,
        py: Python<'_>,
        names: Vec<String>,
        values: Vec<PyExpr>,
    ) -> PyResult<PyPlan> {
        let out = self.plan.output();
        let mut items: Vec<Expr> = Vec::new();
        let mut used = vec![false; names.len()];
        for a in &out {
            match names.iter().position(|n| n.eq_ignore_ascii_case(&a.name)) {
                Some(i) => {
                    used[i] = true;
                    items.push(Expr::Alias {
                        expr: Box::new(values[i].0.clone()),
                        name: names[i].clone(),
                    });
                }
                None => items.push(a.column()),
            }
        }
        for (i, n) in names.iter().enumerate() {
            if !used[i] {
                items.push(Expr::Alias {
                    expr: Box::new(values[i].0.clone()),
                    name: n.clone(),
                });
            }
        }
        self.select(py, items.into_iter().map(PyExpr).collect())
    }

    /// Drops columns by name (unknown names are ignored, as in PySpark).
    fn drop_columns(&self, py: Python<'_>, names: Vec<String>) -> PyResult<PyPlan> {
        let items: Vec<PyExpr> = self
            .plan
            .output()
            .iter()
            .filter(|a| {
                !names
                    .iter()
                    .any(|n| n.eq_ignore_ascii_case(&a.name) || *n == a.key())
            })
            .map(|a| PyExpr(a.column()))
            .collect();
        self.select(py, items)
    }

    /// Renames a column (a no-op when it does not exist, as in PySpark).
    fn rename_column(&self, py: Python<'_>, old: &str, new: &str) -> PyResult<PyPlan> {
        let items: Vec<PyExpr> = self
            .plan
            .output()
            .iter()
            .map(|a| {
                if a.name.eq_ignore_ascii_case(old) {
                    PyExpr(Expr::Alias {
                        expr: Box::new(a.column()),
                        name: new.to_string(),
                    })
                } else {
                    PyExpr(a.column())
                }
            })
            .collect();
        self.select(py, items)
    }

    /// EXPLAIN text in `mode` (`simple`, `extended`, `formatted`).
    #[pyo3(signature = (mode="simple"))]
    fn explain(&self, py: Python<'_>, mode: &str) -> PyResult<String> {
        let m = explain_mode(mode).py(py)?;
        let engine = self.engine.clone();
        let plan = self.plan.clone();
        py.run_detached(|| engine.explain(&plan, m)).py(py)
    }

    /// The physical plan of the last run, with each operator's metrics.
    fn executed_plan(&self) -> Option<String> {
        let last = self.last_run.lock().ok()?.clone()?;
        Some(format!(
            "== Physical Plan (executed) ==\n{}",
            ferrospark_plan::physical::explain_physical(&last, true)
        ))
    }

    /// Each operator of the last run's physical plan, parents before children:
    /// `(name, description, metrics)`. Empty before a run.
    fn executed_operators(&self) -> Vec<(String, String, HashMap<&'static str, u64>)> {
        fn walk(
            p: &Arc<dyn ExecutionPlan>,
            out: &mut Vec<(String, String, HashMap<&'static str, u64>)>,
        ) {
            let metrics = p.metrics().snapshot().into_iter().collect();
            out.push((p.name(), p.describe(), metrics));
            for c in p.children() {
                walk(&c, out);
            }
        }
        let mut out = Vec::new();
        if let Some(last) = self.last_run.lock().ok().and_then(|l| l.clone()) {
            walk(&last, &mut out);
        }
        out
    }

    /// Runs the query; a `pyarrow.Table`.
    fn collect<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let engine = self.engine.clone();
        let plan = self.plan.clone();
        let cfg = engine.config().clone();
        let workers = engine.workers(crate::watch::QUERY_STACK).py(py)?;
        let (batches, schema, physical) =
            crate::watch::run_watched(py, &cfg, &workers, move |progress| {
                let r = engine.execute_watched(&plan, progress)?;
                let batches: Vec<RecordBatch> = r.stream.collect::<Result<_, _>>()?;
                Ok((batches, r.schema, r.physical))
            })?;
        if let Ok(mut l) = self.last_run.lock() {
            *l = Some(physical);
        }
        let schema = user_schema(&schema);
        let batches = batches
            .into_iter()
            .map(|b| user_batch(b, &schema))
            .collect::<Result<Vec<_>, _>>()
            .py(py)?;
        PyTable::try_new(batches, schema)?.into_pyarrow(py)
    }

    /// Arrow C stream export: batches stream out as the query produces them.
    #[pyo3(signature = (requested_schema=None))]
    fn __arrow_c_stream__<'py>(
        &self,
        py: Python<'py>,
        requested_schema: Option<Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let engine = self.engine.clone();
        let plan = self.plan.clone();
        let r = py.run_detached(move || engine.execute(&plan)).py(py)?;
        if let Ok(mut l) = self.last_run.lock() {
            *l = Some(r.physical.clone());
        }
        let schema = user_schema(&r.schema);
        let out = schema.clone();
        let it = r.stream.map(move |b| {
            b.and_then(|b| user_batch(b, &out))
                .map_err(arrow_schema::ArrowError::from)
        });
        let reader: Box<dyn RecordBatchReader + Send> =
            Box::new(RecordBatchIterator::new(it, schema));
        let obj = PyRecordBatchReader::new(reader).into_pyobject(py)?;
        obj.call_method1("__arrow_c_stream__", (requested_schema,))
    }

    /// The query cut into Spark stages for `parallelism` cores, planned under the session's
    /// configuration with `overrides` (the Spark session's settings).
    #[pyo3(signature = (parallelism, overrides=None, decided=None))]
    fn spark_stages(
        &self,
        py: Python<'_>,
        parallelism: usize,
        overrides: Option<HashMap<String, String>>,
        decided: Option<HashMap<usize, bool>>,
    ) -> PyResult<crate::stages::PyStagePlan> {
        crate::stages::PyStagePlan::cut(
            py,
            &self.engine,
            &self.plan,
            parallelism,
            overrides.unwrap_or_default(),
            decided.unwrap_or_default(),
        )
    }

    /// The analyzed logical plan, Spark-style.
    fn logical(&self) -> String {
        ferrospark_plan::logical::explain_logical(&self.plan)
    }
}
