//! The join operator: one side built (collected, and indexed or sorted by key), the other
//! streamed through it. Spark's broadcast hash, shuffled hash, sort-merge, broadcast nested
//! loop and cartesian joins share it; they differ in how a probe row finds its build rows
//! ([`JoinAlgorithm`]) and in where the sides come from, not in how joined rows are formed.

mod exec;
mod hash_table;
mod sort_merge;
mod sorted_keys;
#[cfg(test)]
mod tests;

pub use exec::{JoinAlgorithm, JoinExec, JOIN_METRICS};
