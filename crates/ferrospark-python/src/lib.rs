//! `ferrospark._native`: the PyO3 bindings. Conversion, error mapping and GIL release only;
//! every decision lives in the engine crates.

use std::collections::HashMap;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::PathBuf;
use std::sync::mpsc::{sync_channel, Receiver, RecvTimeoutError};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use arrow_array::{RecordBatch, RecordBatchIterator, RecordBatchReader};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyDict;
use pyo3_arrow::{PyRecordBatch, PyRecordBatchReader, PySchema};

use ferrospark_common::{Config, FerroError};
use ferrospark_expr::types::parse_data_type;
use ferrospark_expr::{BinaryOp, Expr, Literal, StringMatch};
use ferrospark_scan::{ParquetScan, ParquetScanOptions};
use guard::{guarded, Detach};

mod aggregate;
mod catalog;
mod formats;
mod guard;
mod join;
mod plan;
mod project;
mod stages;
mod streaming;
mod udf;
mod watch;
mod window;

// glibc malloc hands large batch buffers back to the kernel after each scan, so every scan
// page-faults them in again (5-10% of a scan's time in the Python process); mimalloc keeps
// them.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Raises the `ferrospark.errors` class that matches the engine error.
fn to_py(py: Python<'_>, e: FerroError) -> PyErr {
    let class = match &e {
        FerroError::PathNotFound(_) => "PathNotFoundError",
        FerroError::Io { .. } => "FerroIOError",
        FerroError::Parquet { .. } => "ParquetError",
        FerroError::Malformed { .. } => "MalformedRecordError",
        FerroError::Schema(_) => "SchemaError",
        FerroError::Analysis(_) => "AnalysisError",
        FerroError::Arithmetic(_) => "SparkArithmeticError",
        FerroError::Config(_) => "ConfigError",
        FerroError::Unsupported(_) => "UnsupportedError",
        FerroError::MemoryLimit(_) => "MemoryLimitError",
        FerroError::Internal(_) => "InternalError",
        FerroError::Metastore(_) => "MetastoreError",
        FerroError::StateStore { .. } => "StateStoreError",
        FerroError::UserFunction(_) => "PythonException",
        FerroError::Cancelled => "FerroError",
    };
    let message = e.to_string();
    let made = py
        .import("ferrospark.errors")
        .and_then(|m| m.getattr(class))
        .and_then(|cls| cls.call1((message.clone(),)));
    match made {
        Ok(value) => PyErr::from_value(value),
        Err(_) => PyValueError::new_err(message),
    }
}

trait IntoPyResult<T> {
    fn py(self, py: Python<'_>) -> PyResult<T>;
}

impl<T> IntoPyResult<T> for Result<T, FerroError> {
    fn py(self, py: Python<'_>) -> PyResult<T> {
        self.map_err(|e| to_py(py, e))
    }
}

/// A logical expression (Spark SQL semantics); prints as Spark SQL text.
#[pyclass(name = "Expr", module = "ferrospark._native", frozen, from_py_object)]
#[derive(Clone)]
struct PyExpr(Expr);

fn boxed(e: &PyExpr) -> Box<Expr> {
    Box::new(e.0.clone())
}

/// A new expression node, refused with `AnalysisError` when it would nest deeper than
/// [`ferrospark_expr::MAX_EXPR_DEPTH`] (every recursive pass over it must fit a thread's stack).
fn node(py: Python<'_>, e: Expr) -> PyResult<PyExpr> {
    ferrospark_expr::check_expr_depth(&e).py(py)?;
    Ok(PyExpr(e))
}

/// Refuses a logical plan holding an expression deeper than
/// [`ferrospark_expr::MAX_EXPR_DEPTH`] (walked without recursion, children too).
fn check_plan_depth(plan: &ferrospark_plan::LogicalPlan) -> Result<(), FerroError> {
    let mut stack = vec![plan];
    while let Some(node) = stack.pop() {
        for e in node.expressions() {
            ferrospark_expr::check_expr_depth(e)?;
        }
        stack.extend(node.children().into_iter().map(|c| &**c));
    }
    Ok(())
}

/// Plans SQL text where deep nesting cannot overflow the stack: on a thread sized for the
/// text when it may nest deeply, refusing plans with too deep an expression (`AnalysisError`).
fn plan_sql_checked(
    engine: &ferrospark_plan::QueryEngine,
    text: &str,
) -> Result<ferrospark_plan::SqlStatement, FerroError> {
    ferrospark_expr::with_stack_for_text(text, || {
        let st = engine.sql(text)?;
        match &st {
            ferrospark_plan::SqlStatement::Query(p)
            | ferrospark_plan::SqlStatement::Explain(p, _) => check_plan_depth(p)?,
        }
        Ok(st)
    })
}

#[pymethods]
impl PyExpr {
    /// A column reference by name.
    #[staticmethod]
    fn column(name: &str) -> Self {
        PyExpr(Expr::col(name))
    }

    /// Parses Spark SQL expression text.
    #[staticmethod]
    fn parse(py: Python<'_>, text: &str) -> PyResult<Self> {
        py.run_detached(|| ferrospark_expr::parse_expr_checked(text))
            .map(PyExpr)
            .py(py)
    }

    /// An aggregate call (`sum(x)`, `count(DISTINCT x)`, `first(x) IGNORE NULLS`).
    #[staticmethod]
    fn aggregate(
        py: Python<'_>,
        name: &str,
        args: Vec<PyExpr>,
        distinct: bool,
        ignore_nulls: bool,
    ) -> PyResult<Self> {
        node(
            py,
            Expr::Aggregate {
                name: name.to_ascii_lowercase(),
                args: args.into_iter().map(|a| a.0).collect(),
                distinct,
                ignore_nulls,
            },
        )
    }

    /// `func OVER (PARTITION BY partition_by ORDER BY order_by frame)`; `frame` is
    /// `(rows, start, end)` with each bound `unbounded_preceding`, `unbounded_following` or a
    /// signed offset (0: the current row).
    #[staticmethod]
    #[pyo3(signature = (func, partition_by, order_by, frame=None))]
    fn window(
        py: Python<'_>,
        func: PyExpr,
        partition_by: Vec<PyExpr>,
        order_by: Vec<PyExpr>,
        frame: Option<(bool, String, String)>,
    ) -> PyResult<Self> {
        use ferrospark_expr::expr::FrameSpec;
        let edge = window::frame_edge;
        let frame = match frame {
            Some((rows, start, end)) => Some(Box::new(FrameSpec {
                rows,
                start: edge(&start).map_err(|e| to_py(py, e))?,
                end: edge(&end).map_err(|e| to_py(py, e))?,
            })),
            None => None,
        };
        node(
            py,
            ferrospark_expr::collected::over(
                func.0,
                partition_by.into_iter().map(|a| a.0).collect(),
                order_by.into_iter().map(|a| a.0).collect(),
                frame,
            ),
        )
    }

    #[staticmethod]
    fn lit_null() -> Self {
        PyExpr(Expr::lit(Literal::null(&arrow_schema::DataType::Null)))
    }
    #[staticmethod]
    fn lit_bool(v: bool) -> Self {
        PyExpr(Expr::lit(Literal::boolean(v)))
    }
    #[staticmethod]
    fn lit_int(v: i64) -> Self {
        PyExpr(Expr::lit(Literal::integer(v)))
    }
    #[staticmethod]
    fn lit_float(v: f64) -> Self {
        PyExpr(Expr::lit(Literal::double(v)))
    }
    #[staticmethod]
    fn lit_str(v: &str) -> Self {
        PyExpr(Expr::lit(Literal::string(v)))
    }
    #[staticmethod]
    fn lit_bytes(v: &[u8]) -> Self {
        PyExpr(Expr::lit(Literal::binary(v)))
    }
    #[staticmethod]
    fn lit_date(days: i32) -> Self {
        PyExpr(Expr::lit(Literal::date(days)))
    }
    #[staticmethod]
    #[pyo3(signature = (micros, tz=None))]
    fn lit_timestamp(micros: i64, tz: Option<&str>) -> Self {
        PyExpr(Expr::lit(Literal::timestamp_micros(micros, tz)))
    }
    #[staticmethod]
    fn lit_decimal(py: Python<'_>, text: &str) -> PyResult<Self> {
        Literal::decimal_from_str(text)
            .map(|l| PyExpr(Expr::lit(l)))
            .ok_or_else(|| {
                to_py(
                    py,
                    FerroError::Analysis(format!("'{text}' is not a decimal of at most 38 digits")),
                )
            })
    }
    /// A typed string literal (`DATE`, `TIMESTAMP`, `TIMESTAMP_NTZ`), resolved at binding.
    #[staticmethod]
    fn typed_string(type_name: &str, value: &str) -> Self {
        PyExpr(Expr::TypedString {
            type_name: type_name.to_ascii_uppercase(),
            value: value.to_string(),
        })
    }
    /// The lambda `(params) -> body` (columns of `body` named as a parameter read it).
    #[staticmethod]
    fn lambda_function(py: Python<'_>, params: Vec<String>, body: PyExpr) -> PyResult<Self> {
        node(py, Expr::lambda(params, body.0).map_err(|e| to_py(py, e))?)
    }
    /// A call of the Python function `func` (batch of arguments in, `pyarrow.Array` out)
    /// named `name`, returning `return_type`; with `aggregate`, called once per group.
    #[staticmethod]
    #[pyo3(signature = (name, func, return_type, deterministic, aggregate, args))]
    fn udf(
        py: Python<'_>,
        name: String,
        func: Py<PyAny>,
        return_type: pyo3_arrow::PyDataType,
        deterministic: bool,
        aggregate: bool,
        args: Vec<PyExpr>,
    ) -> PyResult<Self> {
        let f = udf::python_udf(name, func, return_type.into(), deterministic);
        node(
            py,
            ferrospark_expr::udf::udf_call(&f, aggregate, args.into_iter().map(|a| a.0).collect()),
        )
    }
    /// A function call by Spark name.
    #[staticmethod]
    fn function(py: Python<'_>, name: &str, args: Vec<PyExpr>) -> PyResult<Self> {
        let name = name.to_ascii_lowercase();
        let args: Vec<Expr> = args.into_iter().map(|a| a.0).collect();
        let call = match ferrospark_expr::collected::rewrite(&name, args.clone(), false, None)
            .map_err(|e| to_py(py, e))?
        {
            Some(e) => e,
            None => Expr::Function { name, args },
        };
        node(py, call)
    }

    fn binary(&self, py: Python<'_>, op: &str, other: &PyExpr) -> PyResult<Self> {
        let op = BinaryOp::from_name(op)
            .ok_or_else(|| to_py(py, FerroError::Analysis(format!("unknown operator '{op}'"))))?;
        node(py, self.0.clone().binary(op, other.0.clone()))
    }
    fn not_(&self, py: Python<'_>) -> PyResult<Self> {
        node(py, Expr::Not(boxed(self)))
    }
    fn negative(&self, py: Python<'_>) -> PyResult<Self> {
        node(py, Expr::Negative(boxed(self)))
    }
    fn is_null(&self, py: Python<'_>) -> PyResult<Self> {
        node(py, Expr::IsNull(boxed(self)))
    }
    fn is_not_null(&self, py: Python<'_>) -> PyResult<Self> {
        node(py, Expr::IsNotNull(boxed(self)))
    }
    #[pyo3(signature = (values, negated=false))]
    fn isin(&self, py: Python<'_>, values: Vec<PyExpr>, negated: bool) -> PyResult<Self> {
        node(
            py,
            Expr::InList {
                expr: boxed(self),
                list: values.into_iter().map(|v| v.0).collect(),
                negated,
            },
        )
    }
    #[pyo3(signature = (low, high, negated=false))]
    fn between(
        &self,
        py: Python<'_>,
        low: &PyExpr,
        high: &PyExpr,
        negated: bool,
    ) -> PyResult<Self> {
        node(
            py,
            Expr::Between {
                expr: boxed(self),
                low: boxed(low),
                high: boxed(high),
                negated,
            },
        )
    }
    #[pyo3(signature = (pattern, negated=false, case_insensitive=false))]
    fn like(
        &self,
        py: Python<'_>,
        pattern: &PyExpr,
        negated: bool,
        case_insensitive: bool,
    ) -> PyResult<Self> {
        node(
            py,
            Expr::Like {
                expr: boxed(self),
                pattern: boxed(pattern),
                negated,
                case_insensitive,
            },
        )
    }
    fn string_match(&self, py: Python<'_>, op: &str, pattern: &PyExpr) -> PyResult<Self> {
        let op = match op {
            "startswith" => StringMatch::StartsWith,
            "endswith" => StringMatch::EndsWith,
            "contains" => StringMatch::Contains,
            other => {
                return Err(to_py(
                    py,
                    FerroError::Analysis(format!("unknown string test '{other}'")),
                ))
            }
        };
        node(
            py,
            Expr::StringMatch {
                op,
                expr: boxed(self),
                pattern: boxed(pattern),
            },
        )
    }
    fn cast(&self, py: Python<'_>, type_name: &str) -> PyResult<Self> {
        // Validate now so a typo fails where it is written.
        parse_data_type(type_name, "UTC").py(py)?;
        node(
            py,
            Expr::Cast {
                expr: boxed(self),
                type_name: type_name.to_ascii_uppercase(),
            },
        )
    }
    fn alias(&self, py: Python<'_>, name: &str) -> PyResult<Self> {
        node(
            py,
            Expr::Alias {
                expr: boxed(self),
                name: name.to_string(),
            },
        )
    }
    fn field(&self, py: Python<'_>, name: &str) -> PyResult<Self> {
        node(py, Expr::Field(boxed(self), name.to_string()))
    }
    fn sort(&self, py: Python<'_>, ascending: bool, nulls_first: bool) -> PyResult<Self> {
        node(
            py,
            Expr::SortKey {
                expr: boxed(self),
                ascending,
                nulls_first,
            },
        )
    }
    fn output_name(&self) -> String {
        self.0.output_name()
    }
    fn column_refs(&self) -> Vec<String> {
        self.0.column_refs()
    }
    fn __str__(&self) -> String {
        self.0.to_string()
    }
    fn __repr__(&self) -> String {
        format!("Column<'{}'>", self.0)
    }
    fn __eq__(&self, other: &PyExpr) -> bool {
        self.0 == other.0
    }
}

fn config_from(py: Python<'_>, conf: Option<HashMap<String, String>>) -> PyResult<Config> {
    Config::from_pairs(conf.unwrap_or_default()).py(py)
}

fn options(
    py: Python<'_>,
    columns: Option<Vec<String>>,
    filter: Option<PyExpr>,
    conf: Option<HashMap<String, String>>,
    batch_size: Option<usize>,
    spark_types: bool,
) -> PyResult<ParquetScanOptions> {
    let cfg = config_from(py, conf)?;
    let mut o = ParquetScanOptions::from_config(&cfg).py(py)?;
    o.columns = columns;
    o.filter = filter.map(|f| f.0);
    if let Some(b) = batch_size {
        if b == 0 {
            return Err(to_py(
                py,
                FerroError::Config("batch_size must be positive".into()),
            ));
        }
        o.batch_size = b;
    }
    o.spark_types = spark_types;
    Ok(o)
}

/// A planned Parquet scan.
#[pyclass(name = "ParquetScan", module = "ferrospark._native", frozen)]
struct PyParquetScan(Arc<ParquetScan>);

/// How often a Python thread waiting for a batch wakes up to run Python's signal handlers.
const SIGNAL_POLL: Duration = Duration::from_millis(50);

/// Batches of a running scan, pulled one at a time.
///
/// A pump thread owns the scan's stream and hands its batches over a one-slot channel; the
/// caller waits with the GIL released and wakes every [`SIGNAL_POLL`] to run Python's signal
/// handlers, so Ctrl-C (`KeyboardInterrupt`) stops a read even while one batch takes long to
/// come (a filter that rejects most rows). Closing, or dropping, the stream drops the channel:
/// the pump then stops at its next batch and the scan's workers with it.
#[pyclass(name = "BatchStream", module = "ferrospark._native", frozen)]
pub(crate) struct PyBatchStream(Mutex<Option<Receiver<Result<RecordBatch, FerroError>>>>);

/// What one wait for a batch gave.
enum Waited {
    Batch(RecordBatch),
    End,
    Pending,
}

impl PyBatchStream {
    pub(crate) fn start(
        mut stream: impl Iterator<Item = Result<RecordBatch, FerroError>> + Send + 'static,
    ) -> Result<Self, FerroError> {
        let (tx, rx) = sync_channel(1);
        std::thread::Builder::new()
            .name("ferrospark-stream".into())
            .spawn(move || loop {
                let next = catch_unwind(AssertUnwindSafe(|| stream.next()))
                    .unwrap_or_else(|p| Some(Err(guard::panic_error(p))));
                let Some(item) = next else { break };
                let failed = item.is_err();
                if tx.send(item).is_err() || failed {
                    break;
                }
            })
            .map_err(|e| FerroError::Internal(format!("cannot start a scan reader thread: {e}")))?;
        Ok(PyBatchStream(Mutex::new(Some(rx))))
    }
}

#[pymethods]
impl PyBatchStream {
    /// The next batch as a `pyarrow.RecordBatch`, or `None` at the end. Signals (Ctrl-C) are
    /// handled while waiting; an exception from a handler closes the stream.
    fn next_batch<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyAny>>> {
        loop {
            let waited = py
                .run_detached(|| {
                    let guard = self.0.lock().unwrap_or_else(|p| p.into_inner());
                    let Some(rx) = guard.as_ref() else {
                        return Ok(Waited::End);
                    };
                    match rx.recv_timeout(SIGNAL_POLL) {
                        Ok(item) => item.map(Waited::Batch),
                        Err(RecvTimeoutError::Timeout) => Ok(Waited::Pending),
                        Err(RecvTimeoutError::Disconnected) => Ok(Waited::End),
                    }
                })
                .py(py)?;
            match waited {
                Waited::Batch(b) => return PyRecordBatch::new(b).into_pyarrow(py).map(Some),
                Waited::End => return Ok(None),
                Waited::Pending => {
                    if let Err(e) = py.check_signals() {
                        self.close();
                        return Err(e);
                    }
                }
            }
        }
    }

    /// Stops the scan and frees its workers.
    fn close(&self) {
        let mut guard = self.0.lock().unwrap_or_else(|p| p.into_inner());
        guard.take();
    }
}

#[pymethods]
impl PyParquetScan {
    /// The output schema as a `pyarrow.Schema`.
    fn schema<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        PySchema::new(self.0.schema()).into_pyarrow(py)
    }
    /// Starts reading; batches come from the returned stream's `next_batch()`.
    fn stream(&self, py: Python<'_>) -> PyResult<PyBatchStream> {
        guarded(py, || PyBatchStream::start(self.0.execute()).py(py))
    }
    /// Arrow C stream export: zero-copy for pyarrow, polars, duckdb.
    #[pyo3(signature = (requested_schema=None))]
    fn __arrow_c_stream__<'py>(
        &self,
        py: Python<'py>,
        requested_schema: Option<Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        guarded(py, || {
            let schema = self.0.schema();
            let reader: Box<dyn RecordBatchReader + Send> =
                Box::new(self.0.execute().into_reader());
            let reader = RecordBatchIterator::new(reader, schema);
            let obj = PyRecordBatchReader::new(Box::new(reader)).into_pyobject(py)?;
            obj.call_method1("__arrow_c_stream__", (requested_schema,))
        })
    }
    /// Counters as a dict (plan counts now, the rest as batches are read).
    fn metrics<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        guarded(py, || aggregate::metrics_dict(py, self.0.metrics()))
    }
    /// A readable plan summary.
    fn explain(&self, py: Python<'_>) -> PyResult<String> {
        guarded(py, || Ok(self.0.explain()))
    }
}

/// Plans a scan of files or directories.
#[pyfunction]
#[pyo3(signature = (paths, columns=None, filter=None, conf=None, batch_size=None, spark_types=false))]
fn scan_parquet(
    py: Python<'_>,
    paths: Vec<PathBuf>,
    columns: Option<Vec<String>>,
    filter: Option<PyExpr>,
    conf: Option<HashMap<String, String>>,
    batch_size: Option<usize>,
    spark_types: bool,
) -> PyResult<PyParquetScan> {
    let o = options(py, columns, filter, conf, batch_size, spark_types)?;
    let scan = py.run_detached(|| ParquetScan::try_new(&paths, o)).py(py)?;
    Ok(PyParquetScan(Arc::new(scan)))
}

/// Validates a configuration dict, raising `ConfigError` for bad values.
#[pyfunction]
fn validate_conf(py: Python<'_>, conf: HashMap<String, String>) -> PyResult<()> {
    config_from(py, Some(conf)).map(|_| ())
}

/// Parses a Spark-style size (`512`, `64k`, `128MB`, `1.5g`) into bytes.
#[pyfunction]
fn parse_byte_size(py: Python<'_>, text: &str) -> PyResult<u64> {
    ferrospark_common::parse_byte_size(text).map_err(|e| to_py(py, FerroError::Config(e)))
}

/// The process-wide Parquet footer cache: entries, bytes, hits, misses.
#[pyfunction]
fn parquet_metadata_cache_stats(py: Python<'_>) -> PyResult<Bound<'_, PyDict>> {
    let s = ferrospark_scan::parquet::footer_cache_stats();
    let d = PyDict::new(py);
    d.set_item("entries", s.entries)?;
    d.set_item("bytes", s.bytes)?;
    d.set_item("hits", s.hits)?;
    d.set_item("misses", s.misses)?;
    Ok(d)
}

/// Empties the process-wide Parquet footer cache.
#[pyfunction]
fn clear_parquet_metadata_cache() {
    ferrospark_scan::parquet::clear_footer_cache();
}

/// True when this extension was compiled with optimisations.
#[pyfunction]
fn is_release_build() -> bool {
    !cfg!(debug_assertions)
}

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    guard::install_panic_hook();
    m.add_class::<PyExpr>()?;
    m.add_class::<plan::PyQueryEngine>()?;
    m.add_class::<catalog::PyCatalog>()?;
    m.add_class::<streaming::PyStateStore>()?;
    m.add_class::<streaming::PyStreamStreamJoin>()?;
    m.add_class::<streaming::PySessionWindowAggregation>()?;
    m.add_class::<streaming::PyWatermarks>()?;
    m.add_function(wrap_pyfunction!(streaming::spark_hash_split, m)?)?;
    m.add_function(wrap_pyfunction!(streaming::write_file_atomic, m)?)?;
    m.add_function(wrap_pyfunction!(catalog::save_as_table, m)?)?;
    m.add_function(wrap_pyfunction!(catalog::insert_into, m)?)?;
    m.add_function(wrap_pyfunction!(catalog::write_path, m)?)?;
    m.add_class::<plan::PyPlan>()?;
    m.add_class::<stages::PyStagePlan>()?;
    m.add_class::<stages::PyStageTask>()?;
    m.add_class::<stages::PyBroadcastRows>()?;
    m.add_class::<PyParquetScan>()?;
    m.add_class::<formats::PyFileScan>()?;
    m.add_function(wrap_pyfunction!(formats::scan_format, m)?)?;
    m.add_class::<PyBatchStream>()?;
    m.add_function(wrap_pyfunction!(aggregate::aggregate_name, m)?)?;
    m.add_function(wrap_pyfunction!(join::join_type_name, m)?)?;
    m.add_function(wrap_pyfunction!(join::join_hint_strategy, m)?)?;
    m.add_function(wrap_pyfunction!(join::stronger_join_hint, m)?)?;
    m.add_function(wrap_pyfunction!(join::join_strategy_of_operator, m)?)?;
    m.add_function(wrap_pyfunction!(window::window, m)?)?;
    m.add_function(wrap_pyfunction!(project::project, m)?)?;
    m.add_function(wrap_pyfunction!(scan_parquet, m)?)?;
    m.add_function(wrap_pyfunction!(validate_conf, m)?)?;
    m.add_function(wrap_pyfunction!(is_release_build, m)?)?;
    m.add_function(wrap_pyfunction!(parse_byte_size, m)?)?;
    m.add_function(wrap_pyfunction!(parquet_metadata_cache_stats, m)?)?;
    m.add_function(wrap_pyfunction!(clear_parquet_metadata_cache, m)?)?;
    m.add_function(wrap_pyfunction!(guard::panic_for_test, m)?)?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
