//! Bindings of the join operators: `hash_join` joins two Arrow streams in this process.

use std::collections::HashMap;

use arrow_array::RecordBatch;
use arrow_schema::{Schema, SchemaRef};
use ferrospark_common::{FerroError, MemoryPool, SpillDir};
use ferrospark_expr::types::{comparison_type, spark_type_name};
use ferrospark_expr::BinaryOp;
use ferrospark_expr::{bind, resolve_column, BindContext, PhysicalExpr};
use ferrospark_join::{
    join_schema, select_join, split_condition, BuildSide, JoinAlgorithm, JoinExec,
    JoinSelectionInput, JoinStrategy, JoinType,
};
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
        let (at, bt) = (a.data_type(), b.data_type());
        // Both sides compare in the type Spark compares them in (int with bigint as bigint).
        let common = comparison_type(&at, &bt).ok_or_else(|| {
            FerroError::Analysis(format!(
                "join key `{name}` is {} on the left and {} on the right, which Spark cannot compare; cast one side",
                spark_type_name(&at),
                spark_type_name(&bt)
            ))
        })?;
        let cast = |e: PhysicalExpr, t: &arrow_schema::DataType| {
            if &e.data_type() == t {
                e
            } else {
                PhysicalExpr::Cast {
                    expr: Box::new(e),
                    to: t.clone(),
                }
            }
        };
        l.push(cast(a, &common));
        r.push(cast(b, &common));
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

/// Joins `left` and `right` as Spark's `strategy` operator would (`auto`: Spark's
/// `JoinSelection` from sizes and `conf`); `using` names keys on both sides, `condition` (over
/// the columns of both) adds equi-keys and a residual condition. Returns
/// `(pyarrow.Table, metrics, plan)`, the plan naming the operator and its build side.
#[pyfunction]
#[pyo3(signature = (left, right, how, using=None, condition=None, strategy="auto", conf=None))]
#[allow(clippy::too_many_arguments)]
pub(crate) fn join<'py>(
    py: Python<'py>,
    left: PyRecordBatchReader,
    right: PyRecordBatchReader,
    how: &str,
    using: Option<Vec<String>>,
    condition: Option<PyExpr>,
    strategy: &str,
    conf: Option<HashMap<String, String>>,
) -> PyResult<Bound<'py, PyAny>> {
    let cfg = config_from(py, conf)?;
    let join_type = JoinType::parse(how).py(py)?;
    let hint = match strategy {
        "auto" => None,
        other => Some(JoinStrategy::parse(other).py(py)?),
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
        let read = |r: Reader, schema: &SchemaRef| -> Result<Vec<RecordBatch>, FerroError> {
            r.map(|b| conform(b?, schema)).collect()
        };
        let (lb, rb) = (read(left, &ls)?, read(right, &rs)?);
        let bytes = |bs: &[RecordBatch]| bs.iter().map(|b| b.get_array_memory_size() as u64).sum();
        let input = JoinSelectionInput {
            join_type,
            has_equi_keys: !lk.is_empty(),
            keys_orderable: true,
            left_bytes: bytes(&lb),
            right_bytes: bytes(&rb),
            broadcast_threshold: cfg.auto_broadcast_threshold()?,
            prefer_sort_merge: cfg.prefer_sort_merge_join()?,
            shuffle_partitions: cfg.shuffle_partitions()? as u64,
            hint,
        };
        let (chosen, mut build) = select_join(&input)?;
        let (algorithm, note) = match chosen {
            JoinStrategy::BroadcastHash | JoinStrategy::ShuffledHash => {
                (JoinAlgorithm::Hash, chosen.name().to_string())
            }
            JoinStrategy::BroadcastNestedLoop | JoinStrategy::Cartesian => {
                if chosen == JoinStrategy::Cartesian {
                    build = if input.left_bytes < input.right_bytes {
                        BuildSide::Left
                    } else {
                        BuildSide::Right
                    };
                }
                (JoinAlgorithm::NestedLoop, chosen.name().to_string())
            }
            JoinStrategy::SortMerge => (JoinAlgorithm::SortMerge, chosen.name().to_string()),
        };
        if algorithm == JoinAlgorithm::NestedLoop {
            // Every condition part, equalities included, is checked on each pair.
            residual = keys_as_condition(&lk, &rk, &null_safe, ls.fields().len(), residual);
            lk.clear();
            rk.clear();
            null_safe.clear();
        }
        let pool = MemoryPool::new(cfg.memory_limit()?);
        let mut exec = JoinExec::try_new(
            ls.clone(),
            rs.clone(),
            lk,
            rk,
            null_safe,
            residual,
            join_type,
            algorithm,
            build,
            cfg.batch_size()?,
            &pool,
        )?
        .with_spill_dir(SpillDir::new(cfg.spill_dir()))
        .with_sort_merge_fallback(chosen == JoinStrategy::ShuffledHash);
        let (build_batches, probe_batches) = match build {
            BuildSide::Left => (lb, rb),
            BuildSide::Right => (rb, lb),
        };
        let out = run(&mut exec, build_batches, probe_batches, cfg.scan_threads()?)?;
        let plan = format!("{note}: {}", exec.explain());
        Ok((out, exec.output_schema(), exec.metrics().clone(), plan))
    });
    let (batches, schema, metrics, plan) = result.py(py)?;
    let table = PyTable::try_new(batches, schema)?.into_pyarrow(py)?;
    let metrics = metrics_list(py, &[metrics])?;
    (table, metrics.get_item(0)?, plan)
        .into_pyobject(py)
        .map(|t| t.into_any())
}

/// Key pairs as comparisons over the left columns followed by the right ones, ANDed with
/// `rest`.
fn keys_as_condition(
    left: &[PhysicalExpr],
    right: &[PhysicalExpr],
    null_safe: &[bool],
    left_width: usize,
    rest: Option<PhysicalExpr>,
) -> Option<PhysicalExpr> {
    left.iter()
        .zip(right)
        .zip(null_safe)
        .map(|((l, r), safe)| PhysicalExpr::Compare {
            op: if *safe {
                BinaryOp::EqNullSafe
            } else {
                BinaryOp::Eq
            },
            left: Box::new(l.clone()),
            right: Box::new(r.remap_columns(&|i| i + left_width)),
        })
        .chain(rest)
        .reduce(|a, b| PhysicalExpr::And(Box::new(a), Box::new(b)))
}

/// Builds, then probes: on `threads` threads when the join keeps no build rows unmatched
/// (each thread a fork of the built join taking every `threads`-th probe batch), else on
/// this one. Metrics of the forks are added to `exec`'s.
fn run(
    exec: &mut JoinExec,
    build: Vec<RecordBatch>,
    probe: Vec<RecordBatch>,
    threads: usize,
) -> Result<Vec<RecordBatch>, FerroError> {
    for b in &build {
        exec.push_build(b)?;
    }
    drop(build);
    exec.finish_build()?;
    let drain = |e: &mut JoinExec, out: &mut Vec<RecordBatch>| -> Result<(), FerroError> {
        while let Some(o) = e.pull()? {
            out.push(o);
        }
        Ok(())
    };
    let mut out = Vec::new();
    if threads > 1 && probe.len() > 1 && exec.can_fork_probe() {
        let forks = (1..threads.min(probe.len()))
            .map(|_| exec.fork_probe())
            .collect::<Result<Vec<_>, _>>()?;
        let n = forks.len() + 1;
        let probe = &probe;
        let results: Vec<Result<(Vec<RecordBatch>, JoinExec), FerroError>> =
            std::thread::scope(|s| {
                let handles: Vec<_> = forks
                    .into_iter()
                    .enumerate()
                    .map(|(i, mut fork)| {
                        s.spawn(move || {
                            let mut out = Vec::new();
                            for b in probe.iter().skip(i + 1).step_by(n) {
                                fork.push_probe(b)?;
                                drain(&mut fork, &mut out)?;
                            }
                            Ok((out, fork))
                        })
                    })
                    .collect();
                let mine = (|| {
                    for b in probe.iter().step_by(n) {
                        exec.push_probe(b)?;
                        drain(exec, &mut out)?;
                    }
                    Ok::<_, FerroError>(())
                })();
                let mut results: Vec<_> = handles
                    .into_iter()
                    .map(|h| {
                        h.join().unwrap_or_else(|_| {
                            Err(FerroError::Internal("a join thread panicked".into()))
                        })
                    })
                    .collect();
                if let Err(e) = mine {
                    results.push(Err(e));
                }
                results
            });
        for r in results {
            let (batches, fork) = r?;
            for (name, v) in fork.metrics().snapshot() {
                exec.metrics().add(name, v);
            }
            out.extend(batches);
        }
    } else {
        for b in &probe {
            exec.push_probe(b)?;
            drain(exec, &mut out)?;
        }
    }
    exec.finish()?;
    drain(exec, &mut out)?;
    Ok(out)
}
