//! Bindings of the CSV reader: a planned scan (`scan_csv`) read as a stream of batches.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;

use ferrospark_common::FerroError;
use ferrospark_scan::csv::{CsvOptions, CsvScan};
use pyo3::prelude::*;
use pyo3::types::PyDict;
use pyo3_arrow::PySchema;

use crate::guard::guarded;
use crate::{config_from, Detach, IntoPyResult, PyBatchStream, PyExpr};

/// A planned CSV scan: files listed, schema known (given, from the header, or inferred).
#[pyclass(name = "CsvScan", module = "ferrospark._native", frozen)]
pub(crate) struct PyCsvScan(Arc<CsvScan>);

#[pymethods]
impl PyCsvScan {
    /// The output schema.
    fn schema<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        guarded(py, || PySchema::new(self.0.schema()).into_pyarrow(py))
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
        guarded(py, || crate::aggregate::metrics_dict(py, self.0.metrics()))
    }
    /// The files the scan reads.
    fn files(&self) -> Vec<PathBuf> {
        self.0.files()
    }
}

/// Plans a CSV scan of `paths` with Spark's `options`; `schema` the user's, `columns` the
/// output, `filter` checked while records convert.
#[pyfunction]
#[pyo3(signature = (paths, schema=None, columns=None, filter=None, options=None, conf=None))]
pub(crate) fn scan_csv(
    py: Python<'_>,
    paths: Vec<PathBuf>,
    schema: Option<PySchema>,
    columns: Option<Vec<String>>,
    filter: Option<PyExpr>,
    options: Option<HashMap<String, String>>,
    conf: Option<HashMap<String, String>>,
) -> PyResult<PyCsvScan> {
    let cfg = config_from(py, conf)?;
    let mut o = CsvOptions::from_map(&options.unwrap_or_default()).py(py)?;
    o.batch_size = cfg.batch_size().py(py)?;
    let schema = schema.map(PySchema::into_inner);
    let filter = filter.map(|f| f.0);
    let scan = py
        .run_detached(move || -> Result<CsvScan, FerroError> {
            CsvScan::try_new(&paths, schema, columns, filter, o, cfg)
        })
        .py(py)?;
    Ok(PyCsvScan(Arc::new(scan)))
}
