//! Bindings of the aggregation engine's names: an aggregate's output column name, and the
//! metrics and input conformance the other bindings share.

use ferrospark_agg::AggregateCall;
use ferrospark_common::MetricsSet;
pub(crate) use ferrospark_plan::conform::{conform, spark_input_schema};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};

use crate::PyExpr;

/// `(name, args, distinct, ignore_nulls, alias)` as the Python layer sends an aggregate.
pub(crate) type CallSpec = (String, Vec<PyExpr>, bool, bool, Option<String>);

pub(crate) fn calls_from(specs: Vec<CallSpec>) -> Vec<AggregateCall> {
    specs
        .into_iter()
        .map(|(name, args, distinct, ignore_nulls, alias)| {
            let mut c = AggregateCall::new(&name, args.into_iter().map(|a| a.0).collect());
            c.distinct = distinct;
            c.ignore_nulls = ignore_nulls;
            c.alias = alias;
            c
        })
        .collect()
}

/// A metrics set as a dict of its counters.
pub(crate) fn metrics_dict<'py>(py: Python<'py>, m: &MetricsSet) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    for (k, v) in m.snapshot() {
        d.set_item(k, v)?;
    }
    Ok(d)
}

pub(crate) fn metrics_list<'py>(
    py: Python<'py>,
    metrics: &[MetricsSet],
) -> PyResult<Bound<'py, PyList>> {
    let out = PyList::empty(py);
    for m in metrics {
        out.append(metrics_dict(py, m)?)?;
    }
    Ok(out)
}

/// The output column name of one aggregate (its alias, or Spark's default name).
#[pyfunction]
pub(crate) fn aggregate_name(spec: CallSpec) -> String {
    calls_from(vec![spec])
        .first()
        .map(AggregateCall::output_name)
        .unwrap_or_default()
}
