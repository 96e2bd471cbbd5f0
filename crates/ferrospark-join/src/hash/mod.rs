//! Hash join: the build side in one hash table, the probe side streamed through it. Spark's
//! broadcast hash join and shuffled hash join share this core; they differ in where the
//! sides come from, not in how rows are matched.

mod exec;
mod table;
#[cfg(test)]
mod tests;

pub use exec::{HashJoinExec, JOIN_METRICS};
