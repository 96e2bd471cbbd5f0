//! Binding of expression evaluation over Arrow batches (`project`): a column per expression.

use std::collections::HashMap;

use arrow_array::RecordBatch;
use ferrospark_common::FerroError;
use ferrospark_expr::{bind, BindContext};
use pyo3::prelude::*;

use crate::aggregate::{conform, spark_input_schema};
use crate::{config_from, Detach, IntoPyResult, PyExpr};

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
