//! Python functions as the engine's user-defined functions (`F.udf`, `pandas_udf`,
//! `spark.udf.register`). Each call hands the Python side (`ferrospark.udf`) the argument
//! columns of one batch as a `pyarrow.RecordBatch` and takes back a `pyarrow.Array`; the
//! conversions PySpark makes (rows to Python values, Series, Arrow) happen there. The GIL is
//! taken for the call only: the engine's threads run detached and queue for it here. The
//! batch's schema metadata names the session time zone (`session_tz`).

use std::sync::{Arc, Mutex};

use arrow_array::{ArrayRef, RecordBatch, RecordBatchOptions};
use arrow_schema::{DataType, Field, Schema};
use ferrospark_common::{FerroError, Result};
use ferrospark_expr::{ScalarUdf, ScalarUdfImpl};
use pyo3::prelude::*;
use pyo3_arrow::{PyArray, PyRecordBatch};

/// A Python callable over batches: `func(pyarrow.RecordBatch) -> pyarrow.Array`.
struct PythonUdf {
    name: String,
    return_type: DataType,
    deterministic: bool,
    func: Py<PyAny>,
    /// One engine thread in the function at a time: pandas and pyarrow release the GIL
    /// inside a call, and two threads trading it back and forth wait out Python's switch
    /// interval each time; queueing here, before the GIL, avoids that convoy.
    turn: Mutex<()>,
}

/// The engine's function for the Python callable `func` (which takes the argument columns
/// as one record batch and returns one value per row).
pub(crate) fn python_udf(
    name: String,
    func: Py<PyAny>,
    return_type: DataType,
    deterministic: bool,
) -> ScalarUdf {
    ScalarUdf::new(Arc::new(PythonUdf {
        name,
        return_type,
        deterministic,
        func,
        turn: Mutex::new(()),
    }))
}

/// Spark's report of an exception raised in a Python function: the function, the exception
/// and its traceback. An error ferrospark raised itself (a result of the wrong type) keeps
/// its own message.
fn raised(py: Python<'_>, name: &str, e: PyErr) -> FerroError {
    let ours = py
        .import("ferrospark.errors")
        .and_then(|m| m.getattr("FerroError"))
        .is_ok_and(|cls| e.is_instance(py, &cls));
    if ours {
        return FerroError::UserFunction(e.value(py).to_string());
    }
    let traceback = py
        .import("traceback")
        .and_then(|tb| tb.call_method1("format_exception", (e.value(py),)))
        .and_then(|lines| lines.extract::<Vec<String>>())
        .map(|lines| lines.concat())
        .unwrap_or_else(|_| e.to_string());
    FerroError::UserFunction(format!(
        "[PYTHON_EXCEPTION] An exception was thrown from the Python function {name}: {e}\n{}",
        traceback.trim_end()
    ))
}

impl ScalarUdfImpl for PythonUdf {
    fn name(&self) -> &str {
        &self.name
    }

    fn return_type(&self) -> &DataType {
        &self.return_type
    }

    fn deterministic(&self) -> bool {
        self.deterministic
    }

    fn invoke(&self, args: &[ArrayRef], num_rows: usize, session_tz: &str) -> Result<ArrayRef> {
        let fields: Vec<Field> = args
            .iter()
            .enumerate()
            .map(|(i, a)| Field::new(format!("a{i}"), a.data_type().clone(), true))
            .collect();
        let batch = RecordBatch::try_new_with_options(
            Arc::new(Schema::new_with_metadata(
                fields,
                [("session_tz".to_string(), session_tz.to_string())].into(),
            )),
            args.to_vec(),
            &RecordBatchOptions::new().with_row_count(Some(num_rows)),
        )?;
        let _turn = self.turn.lock().unwrap_or_else(|p| p.into_inner());
        Python::attach(|py| {
            let arg = PyRecordBatch::new(batch)
                .into_pyarrow(py)
                .map_err(|e| raised(py, &self.name, e))?;
            let out = self
                .func
                .call1(py, (arg,))
                .map_err(|e| raised(py, &self.name, e))?;
            let array: PyArray = out.extract(py).map_err(|e| {
                FerroError::UserFunction(format!(
                    "the Python function {} did not give an Arrow array: {e}",
                    self.name
                ))
            })?;
            Ok(array.into_inner().0)
        })
    }
}
