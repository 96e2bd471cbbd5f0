//! A session's query engine: its catalog, planning SQL (queries and commands), optimizing,
//! executing, explaining.

use std::sync::{Arc, Mutex};

use arrow_schema::{Field, Schema, SchemaRef};
use ferrospark_common::workers::WorkerPool;
use ferrospark_common::{Config, FerroError, QueryProgress, Result};

use ferrospark_expr::Expr;

use crate::builder::PlanBuilder;
use crate::logical::{explain_logical, LogicalPlan};
use crate::optimizer::optimize;
use crate::physical::planner::PhysicalPlanner;
use crate::physical::scan::rename;
use crate::physical::{explain_physical, BatchStream, ExecutionPlan, TaskContext};
use crate::sql::{plan_sql, ExplainMode, SqlStatement, TableProvider};

/// A session's catalog as the query layer holds it: views and cached relations are plans.
pub type Catalog = ferrospark_catalog::SessionCatalog<Arc<LogicalPlan>>;

/// The catalog, the plan builder and the configuration of one session.
#[derive(Debug)]
pub struct QueryEngine {
    /// Builds resolved plans.
    pub builder: PlanBuilder,
    catalog: Arc<Catalog>,
    /// The session's worker threads, started by its first query, with the process that
    /// started them.
    workers: Mutex<Option<(u32, WorkerPool)>>,
}

/// A running query: its output stream and the operators producing it.
pub struct QueryResult {
    /// Batches with the user's column names.
    pub stream: BatchStream,
    /// The output schema.
    pub schema: SchemaRef,
    /// The physical plan (metrics fill in as the stream is read).
    pub physical: Arc<dyn ExecutionPlan>,
}

impl TableProvider for QueryEngine {
    fn relation(&self, parts: &[String]) -> Result<Option<Arc<LogicalPlan>>> {
        crate::commands::relation::lookup(self, parts)
    }
    fn not_found(&self, parts: &[String]) -> FerroError {
        self.catalog.not_found(parts)
    }
    fn function(&self, parts: &[String]) -> Result<Option<ferrospark_catalog::CatalogFunction>> {
        if parts.len() == 1
            && ferrospark_expr::functions::FUNCTION_NAMES
                .contains(&parts[0].to_lowercase().as_str())
        {
            return Ok(None);
        }
        self.catalog.lookup_function(parts)
    }
    fn udf(&self, name: &str) -> Result<Option<ferrospark_expr::RegisteredUdf>> {
        self.catalog.udf(name)
    }
    fn current_database(&self) -> String {
        self.catalog.current_database()
    }
}

/// The warehouse `cfg` names (`spark.sql.warehouse.dir`, Spark's `spark-warehouse` in the
/// current directory by default).
pub fn warehouse_of(cfg: &Config) -> Result<ferrospark_catalog::Warehouse> {
    ferrospark_catalog::Warehouse::new(
        cfg.get("spark.sql.warehouse.dir")
            .unwrap_or("spark-warehouse"),
    )
}

/// A session catalog under `cfg` over the external catalog `url` names (`memory` by
/// default, or `sqlite:///path`).
pub fn open_catalog(cfg: &Config, url: Option<&str>) -> Result<Arc<Catalog>> {
    let external = ferrospark_catalog::open_external(url)?;
    Ok(Arc::new(Catalog::new(
        external,
        warehouse_of(cfg)?,
        Arc::new(ferrospark_catalog::GlobalTempViews::default()),
    )?))
}

impl QueryEngine {
    /// An engine under `cfg` with an in-memory catalog of its own.
    pub fn new(cfg: Config) -> Self {
        let catalog = Arc::new(Catalog::in_memory(warehouse_of(&cfg).unwrap_or_else(
            |_| ferrospark_catalog::Warehouse::at("spark-warehouse".into()),
        )));
        Self::with_catalog(cfg, catalog)
    }

    /// An engine under `cfg` over a session catalog (which outlives engines: a session
    /// makes a new engine when its configuration changes, and keeps its catalog).
    pub fn with_catalog(cfg: Config, catalog: Arc<Catalog>) -> Self {
        Self {
            builder: PlanBuilder::new(cfg),
            catalog,
            workers: Mutex::new(None),
        }
    }

    /// The session catalog.
    pub fn catalog(&self) -> &Arc<Catalog> {
        &self.catalog
    }

    /// `e` with calls of this session's registered Python functions bound to them (the
    /// DataFrame API's `F.call_udf` / `F.expr`; SQL binds them while planning).
    pub fn with_udfs(&self, e: Expr) -> Result<Expr> {
        let e = crate::udfs::bind_session_names(e, &self.catalog.current_database())?;
        crate::udfs::bind_registered(e, &|name| self.catalog.udf(name))
    }

    /// What `parts` names (a temp view, a global temp view, a table or view), if anything.
    pub fn relation(&self, parts: &[String]) -> Result<Option<Arc<LogicalPlan>>> {
        TableProvider::relation(self, parts)
    }

    /// `[TABLE_OR_VIEW_NOT_FOUND]` for `parts`.
    pub fn not_found(&self, parts: &[String]) -> FerroError {
        TableProvider::not_found(self, parts)
    }

    /// Plans a query's text (a command's `AS SELECT ...`).
    pub fn query_plan(&self, text: &str) -> Result<Arc<LogicalPlan>> {
        match plan_sql(text, &self.builder, self)? {
            SqlStatement::Query(p) => Ok(p),
            SqlStatement::Explain(..) => Err(FerroError::Analysis(format!(
                "[PARSE_SYNTAX_ERROR] Syntax error at or near 'EXPLAIN': a query is expected here. SQLSTATE: 42601\n== SQL ==\n{text}"
            ))),
        }
    }

    /// The session's worker threads (`ferrospark.scan.threads` of them), each with a
    /// `stack`-byte stack, started on first use: queries run on them, and so do the steps
    /// they split (see [`ferrospark_common::workers`]). A process forked after they started
    /// (`multiprocessing`, a Spark Python worker) has none of those threads: it starts its own.
    pub fn workers(&self, stack: usize) -> Result<WorkerPool> {
        let pid = std::process::id();
        let mut slot = self
            .workers
            .lock()
            .map_err(|_| FerroError::Internal("worker pool poisoned".into()))?;
        if let Some((owner, pool)) = slot.as_ref() {
            if *owner == pid {
                return Ok(pool.clone());
            }
        }
        let pool = WorkerPool::new(self.config().scan_threads()?, stack)?;
        if let Some((_, inherited)) = slot.replace((pid, pool.clone())) {
            // Its threads live only in the parent: dropping it here would signal threads
            // this process does not have.
            std::mem::forget(inherited);
        }
        Ok(pool)
    }

    /// The configuration.
    pub fn config(&self) -> &Config {
        &self.builder.cfg
    }

    /// Registers `plan` as temp view `name` (`createOrReplaceTempView`; with `replace` false,
    /// an existing name is an error as `createTempView` raises). A name under `global_temp.`
    /// is a global temp view.
    pub fn register_view(&self, name: &str, plan: Arc<LogicalPlan>, replace: bool) -> Result<()> {
        let global = ferrospark_catalog::session::GLOBAL_TEMP_DATABASE;
        match name.split_once('.') {
            Some((db, v)) if db.eq_ignore_ascii_case(global) => {
                self.catalog.create_global_temp_view(v, plan, replace)
            }
            _ => self.catalog.create_temp_view(name, plan, replace),
        }
    }

    /// Drops a temp view; whether it existed.
    pub fn drop_view(&self, name: &str) -> bool {
        self.catalog.drop_temp_view(name).unwrap_or(false)
    }

    /// Names of the temp views, sorted.
    pub fn view_names(&self) -> Vec<String> {
        self.catalog.temp_view_names().unwrap_or_default()
    }

    /// Plans one SQL statement. A command (`CREATE TABLE`, `INSERT`, `SHOW ...`) runs now, as
    /// Spark runs commands eagerly; its output rows are the relation returned.
    pub fn sql(&self, text: &str) -> Result<SqlStatement> {
        if crate::commands::is_command(text) {
            let cmd = crate::commands::parse_command(text, self.config().session_time_zone())?;
            let out = crate::commands::run(self, cmd)?;
            let plan = self
                .builder
                .scan_memory(out.schema(), vec![out], "CommandResult");
            return Ok(SqlStatement::Query(plan));
        }
        plan_sql(text, &self.builder, self)
    }

    /// The plan a table name refers to (`t`, `db.t`, `` `my db`.t ``, `global_temp.v`).
    pub fn table(&self, name: &str) -> Result<Arc<LogicalPlan>> {
        let parts = ferrospark_catalog::names::parse_multipart(name)?;
        match self.relation(&parts)? {
            Some(p) => self.builder.fresh_ids(&p),
            None => Err(self.not_found(&parts)),
        }
    }

    /// The optimized plan and the rules that changed it.
    pub fn optimize(
        &self,
        plan: &Arc<LogicalPlan>,
    ) -> Result<(Arc<LogicalPlan>, Vec<&'static str>)> {
        optimize(plan, self.config())
    }

    /// The physical plan of an optimized plan.
    pub fn physical(&self, optimized: &Arc<LogicalPlan>) -> Result<Arc<dyn ExecutionPlan>> {
        PhysicalPlanner::new(self.config())
            .reusing_results_of(optimized)?
            .create(optimized)
    }

    /// The user-facing schema of a plan (names without ids).
    pub fn output_schema(plan: &LogicalPlan) -> SchemaRef {
        Arc::new(Schema::new(
            plan.output()
                .iter()
                .map(|a| Field::new(&a.name, a.data_type.clone(), a.nullable))
                .collect::<Vec<_>>(),
        ))
    }

    /// Optimizes, plans and starts `plan`.
    pub fn execute(&self, plan: &Arc<LogicalPlan>) -> Result<QueryResult> {
        self.execute_watched(plan, Arc::new(QueryProgress::new()))
    }

    /// [`QueryEngine::execute`] reporting into `progress`, which another thread may read
    /// (a progress bar) or cancel (Ctrl-C) while this one runs.
    pub fn execute_watched(
        &self,
        plan: &Arc<LogicalPlan>,
        progress: Arc<QueryProgress>,
    ) -> Result<QueryResult> {
        self.start(plan, progress, true)
    }

    /// Optimizes, plans and starts `plan` as a stream that never holds all its rows: a
    /// write's input, which goes to files batch by batch (a plan that would run in the scan
    /// threads and collect there streams from its operators instead).
    pub fn execute_streaming(&self, plan: &Arc<LogicalPlan>) -> Result<QueryResult> {
        self.start(plan, Arc::new(QueryProgress::new()), false)
    }

    fn start(
        &self,
        plan: &Arc<LogicalPlan>,
        progress: Arc<QueryProgress>,
        collect_pipelines: bool,
    ) -> Result<QueryResult> {
        let (optimized, _) = self.optimize(plan)?;
        let physical = self.physical(&optimized)?;
        let ctx = Arc::new(TaskContext::with_progress(self.config(), progress)?);
        let schema = Self::output_schema(plan);
        let out = schema.clone();
        // A plan that streams inside a scan runs on every scan thread and is collected there;
        // others stream.
        let pipeline = if collect_pipelines {
            physical.pipeline(&ctx)?
        } else {
            None
        };
        let stream: BatchStream = match pipeline {
            Some(p) => Box::new(p.collect()?.into_iter().map(Ok)),
            None => physical.execute(&ctx)?,
        };
        let stream = stream.map(move |b| rename(b?, &out));
        Ok(QueryResult {
            stream: Box::new(stream),
            schema,
            physical,
        })
    }

    /// Spark's EXPLAIN text of `plan` in `mode`.
    pub fn explain(&self, plan: &Arc<LogicalPlan>, mode: ExplainMode) -> Result<String> {
        let (optimized, rules) = self.optimize(plan)?;
        let physical = self.physical(&optimized)?;
        let phys = explain_physical(&physical, false);
        Ok(match mode {
            ExplainMode::Simple => format!("== Physical Plan ==\n{phys}"),
            ExplainMode::Extended => format!(
                "== Analyzed Logical Plan ==\n{}\n== Optimized Logical Plan ==\n{}\n== Physical Plan ==\n{phys}\nRules applied: {}\n",
                explain_logical(plan),
                explain_logical(&optimized),
                rules.join(", ")
            ),
            ExplainMode::Formatted => {
                let mut s = format!("== Physical Plan ==\n{phys}\n");
                let mut n = 0;
                formatted(&physical, &mut n, &mut s);
                s
            }
        })
    }
}

fn formatted(plan: &Arc<dyn ExecutionPlan>, n: &mut usize, out: &mut String) {
    *n += 1;
    let fields: Vec<String> = plan
        .schema()
        .fields()
        .iter()
        .map(|f| f.name().clone())
        .collect();
    out.push_str(&format!(
        "({n}) {}\nOutput [{}]: [{}]\nArguments: {}\n\n",
        plan.name(),
        fields.len(),
        fields.join(", "),
        plan.describe()
    ));
    for c in plan.children() {
        formatted(&c, n, out);
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use arrow_array::{ArrayRef, Int64Array, RecordBatch, StringArray};
    use arrow_schema::{DataType, Field, Schema};
    use ferrospark_common::Config;

    use super::*;

    /// A query on the session's workers (scan, partial and final aggregation steps, sort)
    /// gives what the same query gives on threads of its own.
    #[test]
    fn a_query_on_the_session_workers_equals_one_off_them() {
        let dir = tempfile::tempdir().expect("tempdir");
        let schema = Arc::new(Schema::new(vec![
            Field::new("k", DataType::Int64, true),
            Field::new("s", DataType::Utf8, true),
            Field::new("v", DataType::Int64, true),
        ]));
        for f in 0..3i64 {
            let n = 5_000;
            let cols: Vec<ArrayRef> = vec![
                Arc::new(Int64Array::from_iter(
                    (0..n).map(|i| (i % 11 != 0).then_some((i * 7 + f) % 1_500)),
                )),
                Arc::new(StringArray::from_iter(
                    (0..n).map(|i| (i % 13 != 0).then(|| format!("s{}", (i + f) % 40))),
                )),
                Arc::new(Int64Array::from_iter_values((0..n).map(|i| i * f))),
            ];
            let b = RecordBatch::try_new(schema.clone(), cols).expect("batch");
            let path = dir.path().join(format!("part-{f}.parquet"));
            write_parquet(&path, schema.clone(), &[b], 1_000);
        }
        let e = QueryEngine::new(Config::default());
        let t = format!("parquet.`{}`", dir.path().display());
        let run = |sql: &str| -> Vec<RecordBatch> {
            let SqlStatement::Query(p) = e.sql(sql).expect("plans") else {
                panic!("not a query")
            };
            let r = e.execute(&p).expect("runs");
            r.stream.collect::<Result<_>>().expect("streams")
        };
        let workers = e.workers(8 << 20).expect("workers");
        for sql in [
            format!("SELECT s, k, count(DISTINCT v), sum(v) FROM {t} GROUP BY s, k ORDER BY s, k"),
            format!("SELECT k, count(*) c FROM {t} GROUP BY k ORDER BY c DESC, k LIMIT 50"),
            format!("SELECT s, v, row_number() OVER (PARTITION BY s ORDER BY v) r FROM {t} ORDER BY s, v, r"),
        ] {
            let off = run(&sql);
            let on = workers.install(|| run(&sql));
            let concat = |b: &[RecordBatch]| {
                arrow_select::concat::concat_batches(&b[0].schema(), b).expect("concat")
            };
            assert_eq!(concat(&off), concat(&on), "{sql}");
            assert!(concat(&on).num_rows() > 40, "{sql}");
        }
    }

    use crate::test_files::write_parquet;

    /// A relation joined with itself, and plans of two engines (whose ids were handed out
    /// apart), join as two relations: each side's columns keep their own values.
    #[test]
    fn a_relation_joined_with_itself_keeps_its_sides_apart() {
        let schema = Arc::new(Schema::new(vec![
            Field::new("k", DataType::Int64, true),
            Field::new("v", DataType::Int64, true),
        ]));
        let batch = RecordBatch::try_new(
            schema.clone(),
            vec![
                Arc::new(Int64Array::from(vec![Some(1), Some(2), None])),
                Arc::new(Int64Array::from(vec![10, 20, 30])),
            ],
        )
        .expect("batch");
        let e = QueryEngine::new(Config::default());
        let other = QueryEngine::new(Config::default());
        let t = e
            .builder
            .scan_memory(schema.clone(), vec![batch.clone()], "t");
        let u = other.builder.scan_memory(schema, vec![batch], "u");
        for right in [t.clone(), u] {
            let joined = e
                .builder
                .join(
                    t.clone(),
                    right,
                    crate::builder::JoinOn::Using(vec!["k".into()]),
                    ferrospark_join::JoinType::Inner,
                    None,
                )
                .expect("joins");
            let r = e.execute(&joined).expect("runs");
            let out: Vec<RecordBatch> = r.stream.collect::<Result<_>>().expect("streams");
            let rows: usize = out.iter().map(RecordBatch::num_rows).sum();
            assert_eq!(rows, 2, "NULL keys never match, each key once");
        }
    }

    /// Outer joins that keep their build side, probed on every scan thread (each thread
    /// notes its own matches, the build rows kept come out once all are done), equal the same
    /// joins as a sort-merge join, which never forks.
    #[test]
    fn outer_joins_keeping_their_build_side_probed_on_every_thread_equal_a_merge_join() {
        let dir = tempfile::tempdir().expect("tempdir");
        let schema = Arc::new(Schema::new(vec![
            Field::new("k", DataType::Int64, true),
            Field::new("v", DataType::Int64, true),
        ]));
        // A small side of 300 keys (some NULL, some duplicated) and a large one whose keys
        // miss a third of them.
        let small = RecordBatch::try_new(
            schema.clone(),
            vec![
                Arc::new(Int64Array::from_iter(
                    (0..320i64).map(|i| (i % 50 != 7).then_some(i % 300)),
                )),
                Arc::new(Int64Array::from_iter_values(0..320)),
            ],
        )
        .expect("batch");
        let big = RecordBatch::try_new(
            schema.clone(),
            vec![
                Arc::new(Int64Array::from_iter(
                    (0..9_000i64).map(|i| (i % 97 != 0).then_some((i * 7) % 450 + 100)),
                )),
                Arc::new(Int64Array::from_iter_values((0..9_000).map(|i| i % 13))),
            ],
        )
        .expect("batch");
        write_parquet(
            &dir.path().join("small.parquet"),
            schema.clone(),
            &[small],
            700,
        );
        write_parquet(&dir.path().join("big.parquet"), schema, &[big], 700);
        let e = QueryEngine::new(Config::default());
        let s = format!("parquet.`{}`", dir.path().join("small.parquet").display());
        let b = format!("parquet.`{}`", dir.path().join("big.parquet").display());
        let run = |sql: &str| -> RecordBatch {
            let SqlStatement::Query(p) = e.sql(sql).expect("plans") else {
                panic!("not a query")
            };
            let r = e.execute(&p).expect("runs");
            let batches: Vec<RecordBatch> = r.stream.collect::<Result<_>>().expect("streams");
            arrow_select::concat::concat_batches(&r.schema, &batches).expect("concat")
        };
        let workers = e.workers(8 << 20).expect("workers");
        for (from, select, group, build) in [
            (
                format!("{s} s LEFT JOIN {b} o ON s.k = o.k"),
                "s.k, s.v, count(o.v), sum(o.v)",
                "s.k, s.v",
                "BuildLeft",
            ),
            (
                format!("{s} s FULL JOIN {b} o ON s.k = o.k"),
                "s.k, o.k, count(*), sum(o.v)",
                "s.k, o.k",
                "BuildLeft",
            ),
            (
                format!("{b} o RIGHT JOIN {s} s ON s.k = o.k AND o.v < 9"),
                "s.k, s.v, count(o.v), sum(o.v)",
                "s.k, s.v",
                "BuildRight",
            ),
        ] {
            let query = |hint: &str| {
                format!("SELECT {hint} {select} FROM {from} GROUP BY {group} ORDER BY 1, 2")
            };
            let forked = workers.install(|| run(&query("/*+ SHUFFLE_HASH(s) */")));
            let merged = run(&query("/*+ MERGE(s) */"));
            assert_eq!(forked, merged, "{from}");
            assert!(forked.num_rows() > 10, "{from}");
            let SqlStatement::Query(p) = e.sql(&query("/*+ SHUFFLE_HASH(s) */")).expect("plans")
            else {
                panic!("not a query")
            };
            let text = e.explain(&p, ExplainMode::Simple).expect("explains");
            assert!(text.contains(build), "{from}: {text}");
            assert!(
                text.contains("partial steps run in the scan threads"),
                "{from}: {text}"
            );
        }
    }
}
