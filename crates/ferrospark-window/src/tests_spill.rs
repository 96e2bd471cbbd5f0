//! The spill path against the in-memory one: the same functions over the same rows with a
//! pool far too small for the input give the same rows (metrics prove the runs were spilled
//! and merged), at batch sizes 1, 7 and 64. A partition larger than the limit goes wide (its
//! rows to a file, only the read columns in memory) and gives the same rows too; when even
//! those columns do not fit, it is a memory error naming the partition.

use std::collections::BTreeMap;

use arrow_array::{Array, Int64Array, RecordBatch};
use ferrospark_common::{FerroError, MemoryPool, Result};

use crate::tests::{cell, expr};
use crate::tests_frames::data;
use crate::{
    FrameAggregate, FrameBound, FrameOffset, FrameUnit, OrderKey, WindowCall, WindowExec,
    WindowFrame, WindowFunction, WindowSpec,
};

fn calls(b: &RecordBatch, with_lists: bool) -> Vec<WindowCall> {
    let schema = b.schema();
    let rows = |start, end| WindowFrame {
        unit: FrameUnit::Rows,
        start,
        end,
    };
    let growing = WindowFrame::default_for(true);
    let functions = vec![
        WindowFunction::RowNumber,
        WindowFunction::Rank,
        WindowFunction::DenseRank,
        WindowFunction::PercentRank,
        WindowFunction::Ntile(3),
        WindowFunction::Offset {
            lead: false,
            input: expr("v", &schema),
            offset: 2,
            default: None,
            ignore_nulls: false,
        },
        WindowFunction::Aggregate {
            agg: FrameAggregate::Sum,
            input: Some(expr("v", &schema)),
            frame: growing,
        },
        WindowFunction::Aggregate {
            agg: FrameAggregate::Avg,
            input: Some(expr("f", &schema)),
            frame: rows(
                FrameBound::Preceding(FrameOffset::Int(2)),
                FrameBound::Following(FrameOffset::Int(1)),
            ),
        },
        WindowFunction::Aggregate {
            agg: FrameAggregate::Max,
            input: Some(expr("f", &schema)),
            frame: rows(
                FrameBound::UnboundedPreceding,
                FrameBound::UnboundedFollowing,
            ),
        },
        WindowFunction::Aggregate {
            agg: FrameAggregate::CollectList,
            input: Some(expr("v", &schema)),
            frame: growing,
        },
    ];
    functions
        .into_iter()
        .filter(|f| {
            with_lists
                || !matches!(
                    f,
                    WindowFunction::Aggregate {
                        agg: FrameAggregate::CollectList,
                        ..
                    }
                )
        })
        .enumerate()
        .map(|(i, function)| WindowCall {
            name: format!("w{i}"),
            function,
        })
        .collect()
}

/// Each output row's cells by its unique `t`, and the operator's spill count.
fn run(
    b: &RecordBatch,
    partition: bool,
    limit: Option<u64>,
    batch: usize,
    with_lists: bool,
) -> Result<(BTreeMap<i64, String>, u64, u64)> {
    let schema = b.schema();
    let spec = WindowSpec {
        partition_by: if partition {
            vec![expr("k", &schema)]
        } else {
            vec![]
        },
        order_by: vec![
            OrderKey::desc(expr("o", &schema)),
            OrderKey::asc(expr("t", &schema)),
        ],
    };
    let pool = MemoryPool::new(limit);
    let mut exec = WindowExec::try_new(schema, spec, calls(b, with_lists), batch, &pool)?;
    for off in (0..b.num_rows()).step_by(batch) {
        exec.push(&b.slice(off, batch.min(b.num_rows() - off)))?;
    }
    exec.finish()?;
    let mut out = BTreeMap::new();
    while let Some(o) = exec.pull()? {
        let t = o
            .column(3)
            .as_any()
            .downcast_ref::<Int64Array>()
            .expect("t");
        for r in 0..o.num_rows() {
            let cells: Vec<String> = (0..o.num_columns()).map(|c| cell(o.column(c), r)).collect();
            out.insert(t.value(r), cells.join("|"));
        }
    }
    assert_eq!(pool.reserved(), 0, "everything reserved is given back");
    let m = exec.metrics();
    Ok((out, m.get("spill_count"), m.get("wide_partitions")))
}

#[test]
fn spilled_runs_give_the_in_memory_answer() -> Result<()> {
    let b = data(17, 700);
    let (want, spills, _) = run(&b, true, None, 8192, true)?;
    assert_eq!(spills, 0);
    assert_eq!(want.len(), 700);
    for batch in [1, 7, 64] {
        // A few batches fit; the nine partitions (NULL, NaN and -0.0 among the order keys)
        // each fit too.
        let (got, spills, wide) = run(&b, true, Some(24 * 1024), batch, true)?;
        assert!(spills >= 2, "batch {batch}: {spills} spills");
        assert_eq!(wide, 0);
        assert_eq!(got, want, "batch {batch}");
    }
    Ok(())
}

/// `b` with a wide column no window function reads, so that whole rows are far larger than
/// the columns a wide partition keeps in memory.
fn with_payload(b: &RecordBatch) -> RecordBatch {
    let payload: Vec<String> = (0..b.num_rows())
        .map(|i| format!("{i:>8}").repeat(25))
        .collect();
    let mut fields: Vec<arrow_schema::Field> = b
        .schema()
        .fields()
        .iter()
        .map(|f| f.as_ref().clone())
        .collect();
    fields.push(arrow_schema::Field::new(
        "payload",
        arrow_schema::DataType::Utf8,
        false,
    ));
    let mut columns = b.columns().to_vec();
    columns.push(std::sync::Arc::new(arrow_array::StringArray::from(payload)));
    RecordBatch::try_new(
        std::sync::Arc::new(arrow_schema::Schema::new(fields)),
        columns,
    )
    .expect("batch")
}

#[test]
fn a_partition_past_the_limit_goes_wide_and_gives_the_same_rows() -> Result<()> {
    let b = with_payload(&data(18, 700));
    for partition in [false, true] {
        let (want, _, _) = run(&b, partition, None, 8192, false)?;
        for batch in [7, 64] {
            // No keys: one 700-row partition, whose full rows do not fit but whose read
            // columns do. With keys: the nine partitions fit one by one at a tighter limit.
            let limit = if partition { 12 * 1024 } else { 64 * 1024 };
            let (got, spills, wide) = run(&b, partition, Some(limit), batch, false)?;
            assert!(spills >= 1, "{spills} spills");
            if !partition {
                assert_eq!(wide, 1, "batch {batch}");
            }
            assert_eq!(got, want, "partition {partition} batch {batch}");
        }
    }
    Ok(())
}

#[test]
fn a_partition_whose_read_columns_do_not_fit_is_a_memory_error() {
    let b = data(18, 700);
    match run(&b, false, Some(8 * 1024), 32, false) {
        Err(FerroError::MemoryLimit(m)) => assert!(m.contains("one window partition"), "{m}"),
        other => panic!("expected a memory error, got {:?}", other.map(|r| r.1)),
    }
}
