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
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyList};
use pyo3_arrow::{PyRecordBatch, PySchema};

use crate::aggregate::{conform, spark_input_schema};
use crate::{config_from, IntoPyResult, PyExpr};

/// Bytes of rows held before they are written as blocks: a few large blocks per partition per
/// task, with the task's memory bounded.
const FLUSH_BYTES: usize = 64 << 20;

struct State {
    keys: Vec<PhysicalExpr>,
    schema: SchemaRef,
    partitions: usize,
    batches: Vec<RecordBatch>,
    key_columns: Vec<Vec<ArrayRef>>,
    bytes: usize,
}

impl State {
    fn flush(&mut self) -> Result<Vec<(u32, Vec<u8>)>, FerroError> {
        let batches = std::mem::take(&mut self.batches);
        let keys = std::mem::take(&mut self.key_columns);
        self.bytes = 0;
        partition_blocks_by(&batches, &keys, self.partitions)
    }
}

/// One task's rows hash-partitioned on `keys` (normalised as Spark groups them: one NaN,
/// -0.0 = 0.0) into `partitions` (one without keys), as `(partition, bytes)` IPC blocks.
#[pyclass(name = "BlockPartitioner", module = "ferrospark._native", frozen)]
pub(crate) struct PyBlockPartitioner(Mutex<State>);

fn block_list<'py>(py: Python<'py>, blocks: Vec<(u32, Vec<u8>)>) -> PyResult<Bound<'py, PyList>> {
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
        let ctx = BindContext {
            schema: &schema,
            session_tz: cfg.session_time_zone(),
        };
        let keys = keys
            .iter()
            .map(|k| bind(&k.0, &ctx))
            .collect::<Result<Vec<_>, _>>()
            .py(py)?;
        Ok(Self(Mutex::new(State {
            partitions: if keys.is_empty() {
                1
            } else {
                partitions.max(1)
            },
            keys,
            schema,
            batches: Vec::new(),
            key_columns: Vec::new(),
            bytes: 0,
        })))
    }

    /// Adds a batch; returns blocks when enough rows are held to write them.
    fn push<'py>(&self, py: Python<'py>, batch: PyRecordBatch) -> PyResult<Bound<'py, PyList>> {
        let batch = batch.into_inner();
        let blocks = py
            .detach(|| -> Result<_, FerroError> {
                let mut s = self.0.lock().unwrap_or_else(|p| p.into_inner());
                let batch = conform(batch, &s.schema)?;
                let keys = s
                    .keys
                    .iter()
                    .map(|k| {
                        let a =
                            ferrospark_expr::evaluate(k, &batch)?.into_array(batch.num_rows())?;
                        Ok(normalize_key(&a))
                    })
                    .collect::<Result<Vec<_>, FerroError>>()?;
                s.bytes += batch.get_array_memory_size();
                s.batches.push(batch);
                s.key_columns.push(keys);
                if s.bytes >= FLUSH_BYTES {
                    s.flush()
                } else {
                    Ok(Vec::new())
                }
            })
            .py(py)?;
        block_list(py, blocks)
    }

    /// The blocks of the rows still held.
    fn finish<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        let blocks = py
            .detach(|| self.0.lock().unwrap_or_else(|p| p.into_inner()).flush())
            .py(py)?;
        block_list(py, blocks)
    }
}
