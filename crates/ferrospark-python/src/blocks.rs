//! Rows hash-partitioned on key expressions into Arrow IPC blocks, for Spark's shuffle to move
//! as a few binary values per task instead of every row (the window's exchange on its
//! partition keys).

use std::collections::HashMap;
use std::sync::Mutex;

use arrow_array::{ArrayRef, RecordBatch};
use arrow_schema::SchemaRef;
use ferrospark_agg::exchange::partition_blocks_by;
use ferrospark_common::FerroError;
use ferrospark_expr::{bind, normalize_key, BindContext, PhysicalExpr};
use ferrospark_join::JoinExec;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyList};
use pyo3_arrow::{PyRecordBatch, PySchema};

use crate::aggregate::{conform, spark_input_schema};
use crate::{config_from, Detach, IntoPyResult, PyExpr};

/// Bytes of rows held before they are written as blocks: a few large blocks per partition per
/// task, with the task's memory bounded.
const FLUSH_BYTES: usize = 64 << 20;

/// Rows held until enough of them make large blocks, with their (normalised) key columns.
#[derive(Default)]
pub(crate) struct PendingBlocks {
    batches: Vec<RecordBatch>,
    key_columns: Vec<Vec<ArrayRef>>,
    bytes: usize,
}

impl PendingBlocks {
    /// Holds `batch`; once enough bytes are held, writes them all as blocks.
    pub(crate) fn add(
        &mut self,
        batch: RecordBatch,
        keys: Vec<ArrayRef>,
        partitions: usize,
    ) -> Result<Vec<(u32, Vec<u8>)>, FerroError> {
        self.bytes += batch.get_array_memory_size();
        self.batches.push(batch);
        self.key_columns.push(keys);
        if self.bytes >= FLUSH_BYTES {
            self.flush(partitions)
        } else {
            Ok(Vec::new())
        }
    }

    /// Every held row as blocks, hash-partitioned on its keys into `partitions`.
    pub(crate) fn flush(&mut self, partitions: usize) -> Result<Vec<(u32, Vec<u8>)>, FerroError> {
        let batches = std::mem::take(&mut self.batches);
        let keys = std::mem::take(&mut self.key_columns);
        self.bytes = 0;
        partition_blocks_by(&batches, &keys, partitions)
    }
}

/// Where a partitioner's keys come from.
pub(crate) enum KeySource {
    /// Expressions over the rows, normalised as Spark groups them (one NaN, -0.0 = 0.0).
    Exprs(Vec<PhysicalExpr>),
    /// One side of a join: its keys as the join compares them, so both sides agree.
    JoinSide {
        /// The join operator (only its key handling is used).
        exec: Box<JoinExec>,
        /// The left side (else the right).
        left: bool,
    },
}

impl KeySource {
    fn columns(&self, batch: &RecordBatch) -> Result<Vec<ArrayRef>, FerroError> {
        match self {
            KeySource::Exprs(keys) => keys
                .iter()
                .map(|k| {
                    let a = ferrospark_expr::evaluate(k, batch)?.into_array(batch.num_rows())?;
                    Ok(normalize_key(&a))
                })
                .collect(),
            KeySource::JoinSide { exec, left } => exec.key_columns(*left, batch),
        }
    }
}

struct State {
    keys: KeySource,
    schema: SchemaRef,
    partitions: usize,
    pending: PendingBlocks,
}

/// One task's rows hash-partitioned on their keys into `partitions` (one without keys), as
/// `(partition, bytes)` IPC blocks: on key expressions (the window's exchange), or on one
/// side's join keys (`JoinPlan.partitioner`).
#[pyclass(name = "BlockPartitioner", module = "ferrospark._native", frozen)]
pub(crate) struct PyBlockPartitioner(Mutex<State>);

impl PyBlockPartitioner {
    /// A partitioner of batches of `schema` on `keys` into `partitions` (rows without keys
    /// belong in one: pass 1).
    pub(crate) fn from_keys(keys: KeySource, schema: SchemaRef, partitions: usize) -> Self {
        Self(Mutex::new(State {
            partitions: partitions.max(1),
            keys,
            schema,
            pending: PendingBlocks::default(),
        }))
    }
}

/// `(partition, bytes)` blocks as a Python list of `(int, bytes)`.
pub(crate) fn block_list<'py>(
    py: Python<'py>,
    blocks: Vec<(u32, Vec<u8>)>,
) -> PyResult<Bound<'py, PyList>> {
    let list = PyList::empty(py);
    for (p, bytes) in blocks {
        list.append((p, PyBytes::new(py, &bytes)))?;
    }
    Ok(list)
}

#[pymethods]
impl PyBlockPartitioner {
    /// Partitions batches of `schema` on `keys` into `partitions`.
    #[new]
    #[pyo3(signature = (schema, keys, partitions, conf=None))]
    fn new(
        py: Python<'_>,
        schema: PySchema,
        keys: Vec<PyExpr>,
        partitions: usize,
        conf: Option<HashMap<String, String>>,
    ) -> PyResult<Self> {
        let cfg = config_from(py, conf)?;
        let schema = spark_input_schema(&schema.into_inner());
        let ctx = BindContext::for_session(&schema, &cfg);
        let keys = keys
            .iter()
            .map(|k| bind(&k.0, &ctx))
            .collect::<Result<Vec<_>, _>>()
            .py(py)?;
        let partitions = if keys.is_empty() { 1 } else { partitions };
        Ok(Self::from_keys(KeySource::Exprs(keys), schema, partitions))
    }

    /// Adds a batch; returns blocks when enough rows are held to write them.
    fn push<'py>(&self, py: Python<'py>, batch: PyRecordBatch) -> PyResult<Bound<'py, PyList>> {
        let batch = batch.into_inner();
        let blocks = py
            .run_detached(|| -> Result<_, FerroError> {
                let mut s = self.0.lock().unwrap_or_else(|p| p.into_inner());
                let batch = conform(batch, &s.schema)?;
                let keys = s.keys.columns(&batch)?;
                let partitions = s.partitions;
                s.pending.add(batch, keys, partitions)
            })
            .py(py)?;
        block_list(py, blocks)
    }

    /// The blocks of the rows still held.
    fn finish<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        let blocks = py
            .run_detached(|| {
                let mut s = self.0.lock().unwrap_or_else(|p| p.into_inner());
                let partitions = s.partitions;
                s.pending.flush(partitions)
            })
            .py(py)?;
        block_list(py, blocks)
    }
}

/// Evaluates `exprs` over every batch of `data` (the session time zone from `conf`); returns
/// a `pyarrow.Table` with one column per expression, named by its output name.
#[pyfunction]
#[pyo3(signature = (data, exprs, conf=None))]
pub(crate) fn project<'py>(
    py: Python<'py>,
    data: pyo3_arrow::PyRecordBatchReader,
    exprs: Vec<PyExpr>,
    conf: Option<HashMap<String, String>>,
) -> PyResult<Bound<'py, PyAny>> {
    let cfg = config_from(py, conf)?;
    let reader = data.into_reader()?;
    let (batches, schema) = py
        .run_detached(move || -> Result<_, FerroError> {
            let input = spark_input_schema(&reader.schema());
            let ctx = BindContext::for_session(&input, &cfg);
            let bound = exprs
                .iter()
                .map(|e| bind(&e.0, &ctx))
                .collect::<Result<Vec<_>, _>>()?;
            let fields: Vec<arrow_schema::Field> = exprs
                .iter()
                .zip(&bound)
                .map(|(e, b)| arrow_schema::Field::new(e.0.output_name(), b.data_type(), true))
                .collect();
            let schema = std::sync::Arc::new(arrow_schema::Schema::new(fields));
            let mut out = Vec::new();
            for batch in reader {
                let batch = conform(batch?, &input)?;
                let columns = bound
                    .iter()
                    .map(|b| ferrospark_expr::evaluate(b, &batch)?.into_array(batch.num_rows()))
                    .collect::<Result<Vec<_>, FerroError>>()?;
                out.push(RecordBatch::try_new(schema.clone(), columns)?);
            }
            Ok((out, schema))
        })
        .py(py)?;
    pyo3_arrow::PyTable::try_new(batches, schema)?.into_pyarrow(py)
}
