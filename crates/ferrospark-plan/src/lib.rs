//! ferrospark's query layer: a query from Spark SQL text or DataFrame calls to batches.
//!
//! ```text
//!  SQL text ──sqlparser──▶ [sql] ──┐
//!  DataFrame calls ──────▶ [builder] ──▶ resolved LogicalPlan   (analyzer: names, types, errors)
//!        ──[optimizer]──▶ Catalyst's rules (pushdown, pruning, join order, folding)
//!        ──[physical::planner]──▶ ExecutionPlan tree (JoinSelection, fused scans)
//!        ──execute──▶ a stream of RecordBatches, one memory pool per query
//! ```
//!
//! [`QueryEngine`] ties them together for a session: its catalog, `sql` (queries, and the
//! catalog commands of [`commands`], run eagerly), `explain`, `execute`.

pub mod analyzer;
pub mod builder;
pub mod commands;
pub mod conform;
pub mod distributed;
pub mod engine;
mod generators;
pub mod grouping_sets;
pub mod logical;
pub mod optimizer;
pub mod physical;
mod session_windows;
pub mod setops;
pub mod sql;
mod time_windows;
pub mod udfs;
pub mod user_form;
pub mod values;
mod windows;

pub use builder::{JoinOn, PlanBuilder};
pub use engine::{QueryEngine, QueryResult};
pub use logical::{Attr, LogicalPlan};
pub use physical::{BatchStream, ExecutionPlan, TaskContext};
pub use sql::{ExplainMode, SqlStatement};

#[cfg(test)]
pub(crate) mod test_files {
    //! Parquet files the crate's tests write.

    use std::sync::Arc;

    use arrow_array::RecordBatch;
    use arrow_schema::Schema;

    /// Writes `batches` of `schema` as one Parquet file of row groups of `rows_per_group`.
    pub(crate) fn write_parquet(
        path: &std::path::Path,
        schema: Arc<Schema>,
        batches: &[RecordBatch],
        rows_per_group: usize,
    ) {
        let file = std::fs::File::create(path).expect("create");
        let props = parquet::file::properties::WriterProperties::builder()
            .set_max_row_group_row_count(Some(rows_per_group))
            .build();
        let mut w =
            parquet::arrow::ArrowWriter::try_new(file, schema, Some(props)).expect("writer");
        for b in batches {
            w.write(b).expect("write");
        }
        w.close().expect("close");
    }
}
