//! Streaming session windows: `groupBy(session_window(time, gap), keys...)` over
//! micro-batches, the sessions kept in a state store between them.

pub mod exec;
pub mod state;
#[cfg(test)]
mod tests;

pub use exec::{OutputMode, SessionGap, SessionWindowAggregation, SessionWindowSpec};
