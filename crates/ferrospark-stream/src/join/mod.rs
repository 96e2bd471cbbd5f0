//! The stream-stream join (Spark's `StreamingSymmetricHashJoinExec`): each side's rows are
//! buffered in state ([`state::JoinStateManager`]) so rows of later micro-batches of the other
//! side can find them, until the watermark says no partner can arrive.

pub mod exec;
pub mod predicates;
pub mod state;
#[cfg(test)]
mod tests;
