//! Bindings of Spark's join names: join types, hints and the operators' strategies.

use ferrospark_join::{JoinStrategy, JoinType};
use pyo3::prelude::*;

use crate::IntoPyResult;

/// The canonical short name of Spark's join type `how` (`left_outer` -> `left`, ...); a
/// `ConfigError` for an unknown one.
#[pyfunction]
pub(crate) fn join_type_name(py: Python<'_>, how: &str) -> PyResult<&'static str> {
    JoinType::parse(how).map(JoinType::how).py(py)
}

/// The strategy (`broadcast_hash`, ...) Spark's join hint `name` asks for; `None` for hints
/// that are not join hints.
#[pyfunction]
pub(crate) fn join_hint_strategy(name: &str) -> Option<&'static str> {
    JoinStrategy::from_hint(name).map(JoinStrategy::name)
}

/// The strategy (`broadcast_hash`, ...) of Spark's join operator `name`
/// (`BroadcastHashJoin`, ...); `None` for other operators.
#[pyfunction]
pub(crate) fn join_strategy_of_operator(name: &str) -> Option<&'static str> {
    JoinStrategy::of_operator(name).map(JoinStrategy::name)
}

/// Of two hinted strategies, the one Spark honours.
#[pyfunction]
pub(crate) fn stronger_join_hint(py: Python<'_>, a: &str, b: &str) -> PyResult<&'static str> {
    let (a, b) = (
        JoinStrategy::parse(a).py(py)?,
        JoinStrategy::parse(b).py(py)?,
    );
    Ok(a.stronger_hint(b).name())
}
