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
//! [`QueryEngine`] ties them together for a session: temp views, `sql`, `explain`, `execute`.

pub mod analyzer;
pub mod builder;
pub mod conform;
pub mod distributed;
pub mod engine;
pub mod grouping_sets;
pub mod logical;
pub mod optimizer;
pub mod physical;
mod session_windows;
pub mod setops;
pub mod sql;
pub mod values;
mod windows;

pub use builder::{JoinOn, PlanBuilder};
pub use engine::{QueryEngine, QueryResult};
pub use logical::{Attr, LogicalPlan};
pub use physical::{BatchStream, ExecutionPlan, TaskContext};
pub use sql::{ExplainMode, SqlStatement};
