//! The join operator: one side built (collected, and indexed by key for a hash join), the
//! other streamed through it. Spark's broadcast hash, shuffled hash, broadcast nested loop and
//! cartesian joins share it; they differ in how a probe row finds its build rows
//! ([`JoinAlgorithm`]) and in where the sides come from, not in how joined rows are formed.

mod exec;
mod hash_table;
mod sort_merge;
mod sorted_keys;
#[cfg(test)]
mod tests;

pub use exec::{JoinAlgorithm, JoinExec, JOIN_METRICS};
