//! Bindings of the row-format readers (CSV, JSON, Avro): a planned scan (`scan_format`) read
//! as a stream of batches.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;

use ferrospark_common::FerroError;
use ferrospark_scan::{FileFormat, FileScan};
use pyo3::prelude::*;
use pyo3::types::PyDict;
use pyo3_arrow::PySchema;

use crate::guard::guarded;
use crate::{config_from, Detach, IntoPyResult, PyBatchStream, PyExpr};

/// A planned text scan: files listed, schema known (given, from a CSV header, or inferred).
#[pyclass(name = "FileScan", module = "ferrospark._native", frozen)]
pub(crate) struct PyFileScan(Arc<FileScan>);

#[pymethods]
impl PyFileScan {
    /// The output schema.
    fn schema<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        guarded(py, || {
            PySchema::new(self.0.plan().schema()).into_pyarrow(py)
        })
    }
    /// Starts reading; batches come from the returned stream's `next_batch()`.
    fn stream(&self, py: Python<'_>) -> PyResult<PyBatchStream> {
        guarded(py, || {
            let stream = self.0.stream().py(py)?;
            PyBatchStream::start(stream).py(py)
        })
    }
    /// Files and bytes read, rows read, rows skipped by pushed filters, fields not
    /// converted, malformed rows, rows returned.
    fn metrics<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        guarded(py, || {
            crate::aggregate::metrics_dict(py, self.0.plan().metrics())
        })
    }
    /// The files the scan reads.
    fn files(&self) -> Vec<PathBuf> {
        self.0.plan().files()
    }
}

/// Plans a scan of `paths` in `format` (`csv`, `json`) with Spark's `options`; `schema` the
/// user's, `columns` the output, `filter` checked while records convert.
#[pyfunction]
#[pyo3(signature = (format, paths, schema=None, columns=None, filter=None, options=None, conf=None))]
#[allow(clippy::too_many_arguments)]
pub(crate) fn scan_format(
    py: Python<'_>,
    format: &str,
    paths: Vec<PathBuf>,
    schema: Option<PySchema>,
    columns: Option<Vec<String>>,
    filter: Option<PyExpr>,
    options: Option<HashMap<String, String>>,
    conf: Option<HashMap<String, String>>,
) -> PyResult<PyFileScan> {
    let cfg = config_from(py, conf)?;
    let format = FileFormat::parse(format).py(py)?;
    let batch_size = cfg.batch_size().py(py)?;
    let options = options.unwrap_or_default();
    let schema = schema.map(PySchema::into_inner);
    let filter = filter.map(|f| f.0);
    let scan = py
        .run_detached(move || -> Result<FileScan, FerroError> {
            FileScan::try_new(
                format, &paths, schema, columns, filter, &options, batch_size, cfg,
            )
        })
        .py(py)?;
    Ok(PyFileScan(Arc::new(scan)))
}
