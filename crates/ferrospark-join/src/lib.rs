//! Spark's join operators over Arrow batches.
//!
//! A join reads two inputs, `left` and `right`, and writes the left columns followed by the
//! right ones (semi and anti joins write the left columns only). [`JoinType`] names Spark's
//! join types. Equi-keys are pairs of expressions, one over each side, each pair compared
//! with `=` (NULL never matches) or `<=>` (NULL matches NULL); an optional residual condition
//! is evaluated on the joined row.
//!
//! [`HashJoinExec`] builds a hash table of one side and streams the other through it: the core
//! shared by Spark's broadcast hash join and shuffled hash join.

mod condition;
mod hash;
mod join_type;

pub use condition::{split_condition, JoinCondition};
pub use hash::{HashJoinExec, JOIN_METRICS};
pub use join_type::{join_schema, BuildSide, JoinType};
