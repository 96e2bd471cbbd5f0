//! Bindings of the join operators: `hash_join` joins two Arrow streams in this process.

use std::collections::HashMap;

use arrow_array::RecordBatch;
use arrow_schema::{Schema, SchemaRef};
use ferrospark_common::{FerroError, MemoryPool};
use ferrospark_expr::{bind, resolve_column, BindContext, PhysicalExpr};
use ferrospark_join::{join_schema, split_condition, BuildSide, HashJoinExec, JoinType};
use pyo3::prelude::*;
use pyo3_arrow::{PyRecordBatchReader, PyTable};

use crate::aggregate::{conform, metrics_list, spark_input_schema};
use crate::{config_from, IntoPyResult, PyExpr};

type Reader = Box<dyn arrow_array::RecordBatchReader + Send>;

/// Keys named by `using` (one name, found on each side), as Spark's `join(other, "k")`.
fn using_keys(
    using: &[String],
    left: &Schema,
    right: &Schema,
) -> Result<(Vec<PhysicalExpr>, Vec<PhysicalExpr>), FerroError> {
    let column = |schema: &Schema, name: &str, side: &str| -> Result<PhysicalExpr, FerroError> {
        let index = resolve_column(schema, name).map_err(|e| {
            FerroError::Analysis(format!(
                "join key `{name}` is not a column of the {side} side: {e}"
            ))
        })?;
        let f = schema.field(index);
        Ok(PhysicalExpr::Column {
            index,
            name: f.name().clone(),
            data_type: f.data_type().clone(),
        })
    };
    let mut l = Vec::new();
    let mut r = Vec::new();
    for name in using {
        let (a, b) = (column(left, name, "left")?, column(right, name, "right")?);
        if a.data_type() != b.data_type() {
            return Err(FerroError::Analysis(format!(
                "join key `{name}` is {} on the left and {} on the right; cast one side so both match",
                a.data_type(),
                b.data_type()
            )));
        }
        l.push(a);
        r.push(b);
    }
    Ok((l, r))
}

/// The condition bound to the left columns followed by the right ones; a name found on both
/// sides is refused rather than silently taken from one.
fn bind_condition(
    condition: &ferrospark_expr::Expr,
    left: &Schema,
    right: &Schema,
) -> Result<PhysicalExpr, FerroError> {
    for name in condition.column_refs() {
        let on_left = resolve_column(left, &name).is_ok();
        let on_right = resolve_column(right, &name).is_ok();
        if on_left && on_right {
            return Err(FerroError::Analysis(format!(
                "[AMBIGUOUS_REFERENCE] column `{name}` is on both sides of the join; rename it on one side, or join on it by name (on=\"{name}\")"
            )));
        }
    }
    let joined = join_schema(left, right, JoinType::Inner);
    bind(condition, &BindContext::new(&joined))
}

/// Joins `left` and `right` with a hash join building `build_side`; `using` names keys on
/// both sides, `condition` (over the columns of both) adds equi-keys and a residual
/// condition. Returns `(pyarrow.Table, metrics, explain)`.
#[pyfunction]
#[pyo3(signature = (left, right, how, using=None, condition=None, build_side="right", conf=None))]
#[allow(clippy::too_many_arguments)]
pub(crate) fn hash_join<'py>(
    py: Python<'py>,
    left: PyRecordBatchReader,
    right: PyRecordBatchReader,
    how: &str,
    using: Option<Vec<String>>,
    condition: Option<PyExpr>,
    build_side: &str,
    conf: Option<HashMap<String, String>>,
) -> PyResult<Bound<'py, PyAny>> {
    let cfg = config_from(py, conf)?;
    let join_type = JoinType::parse(how).py(py)?;
    let build = match build_side {
        "left" => BuildSide::Left,
        "right" => BuildSide::Right,
        other => {
            return Err(FerroError::Config(format!(
                "build side must be \"left\" or \"right\", got {other:?}"
            )))
            .py(py)
        }
    };
    let (left, right) = (left.into_reader()?, right.into_reader()?);
    let result = py.detach(move || -> Result<_, FerroError> {
        let ls = spark_input_schema(&left.schema());
        let rs = spark_input_schema(&right.schema());
        let (mut lk, mut rk) = using_keys(using.as_deref().unwrap_or_default(), &ls, &rs)?;
        let mut null_safe = vec![false; lk.len()];
        let mut residual = None;
        if let Some(c) = condition {
            let bound = bind_condition(&c.0, &ls, &rs)?;
            let split = split_condition(&bound, ls.fields().len());
            lk.extend(split.left_keys);
            rk.extend(split.right_keys);
            null_safe.extend(split.null_safe);
            residual = split.residual;
        }
        let pool = MemoryPool::new(cfg.memory_limit()?);
        let mut exec = HashJoinExec::try_new(
            ls.clone(),
            rs.clone(),
            lk,
            rk,
            null_safe,
            residual,
            join_type,
            build,
            cfg.batch_size()?,
            &pool,
        )?;
        let explain = exec.explain();
        let (build_reader, probe_reader, build_schema, probe_schema) = match build {
            BuildSide::Left => (left, right, ls, rs),
            BuildSide::Right => (right, left, rs, ls),
        };
        run(
            &mut exec,
            build_reader,
            probe_reader,
            &build_schema,
            &probe_schema,
        )
        .map(|out| (out, exec.output_schema(), exec.metrics().clone(), explain))
    });
    let (batches, schema, metrics, explain) = result.py(py)?;
    let table = PyTable::try_new(batches, schema)?.into_pyarrow(py)?;
    let metrics = metrics_list(py, &[metrics])?;
    (table, metrics.get_item(0)?, explain)
        .into_pyobject(py)
        .map(|t| t.into_any())
}

fn run(
    exec: &mut HashJoinExec,
    build: Reader,
    probe: Reader,
    build_schema: &SchemaRef,
    probe_schema: &SchemaRef,
) -> Result<Vec<RecordBatch>, FerroError> {
    for b in build {
        exec.push_build(&conform(b?, build_schema)?)?;
    }
    exec.finish_build()?;
    let mut out = Vec::new();
    for b in probe {
        exec.push_probe(&conform(b?, probe_schema)?)?;
        while let Some(o) = exec.pull() {
            out.push(o);
        }
    }
    exec.finish()?;
    while let Some(o) = exec.pull() {
        out.push(o);
    }
    Ok(out)
}
