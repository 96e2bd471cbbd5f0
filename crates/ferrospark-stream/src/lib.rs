//! Structured Streaming's stateful side, rebuilt: the state store every stateful operator
//! keeps its rows in between micro-batches ([`state`]), the stream-stream join ([`join`]),
//! streaming session windows ([`session`]), the event-time watermark ([`watermark`]) and an
//! operator's state partitions run side by side on threads ([`partitioned`]).
//!
//! A stateful operator's state is split by key into partitions (Spark's
//! `spark.sql.shuffle.partitions`); each (operator, partition) has its own store, versioned
//! by micro-batch: batch `b` loads version `b` and commits version `b + 1`, as Spark's
//! `StateStoreProvider.getStore(version)` does. Keys and values are bytes (operators encode
//! Arrow rows with `arrow-row`, whose encoding of a key's leading columns is a prefix of the
//! whole key's, which is what [`state::StateStore::scan`] with a prefix relies on).
//!
//! ```no_run
//! use ferrospark_stream::state::{open_provider, StateStoreConf, StateStoreId};
//! # fn main() -> ferrospark_common::Result<()> {
//! let id = StateStoreId::new("ckpt", 0, 0);
//! let mut provider = open_provider(&id, &StateStoreConf::default())?;
//! let mut store = provider.get_store(0)?; // batch 0 reads version 0 (empty)
//! store.put(b"user-1", b"3")?;
//! assert_eq!(store.commit()?, 1); // and commits version 1
//! # Ok(()) }
//! ```

pub mod join;
pub mod partitioned;
mod row_format;
pub mod session;
pub mod spark_routing;
pub mod state;
pub mod watermark;
