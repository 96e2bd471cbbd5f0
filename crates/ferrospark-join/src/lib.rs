//! Spark's join operators over Arrow batches.
//!
//! A join reads two inputs, `left` and `right`, and writes the left columns followed by the
//! right ones (semi and anti joins write the left columns only). [`JoinType`] names Spark's
//! join types. Equi-keys are pairs of expressions, one over each side, each pair compared
//! with `=` (NULL never matches) or `<=>` (NULL matches NULL); an optional residual condition
//! is evaluated on the joined row.
//!
//! [`JoinExec`] builds one side and streams the other through it: with an index of the build
//! side's keys (Spark's broadcast and shuffled hash joins), against the build side sorted by
//! key (Spark's sort-merge join, which sorts both sides in runs spilled to disk when they do
//! not fit `ferrospark.memory.limit`), or against every build row (broadcast nested loop and
//! cartesian joins). [`select_join`] is Spark's `JoinSelection`.

mod condition;
mod join_exec;
mod join_type;
mod selection;

pub use condition::{split_condition, JoinCondition};
pub use join_exec::{JoinAlgorithm, JoinExec, JOIN_METRICS};
pub use join_type::{join_schema, BuildSide, JoinType};
pub use selection::{
    broadcast_buildable, select_join, select_join_in_process, JoinSelectionInput, JoinStrategy,
};
