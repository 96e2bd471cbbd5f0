//! ferrospark's catalog: what a session's SQL names refer to, and where it is kept.
//!
//! ```text
//!  SessionCatalog ── current database, temp views, global temp views, temp functions,
//!        │           relation cache, Spark's name rules
//!        ▼
//!  dyn ExternalCatalog ──▶ InMemoryCatalog            (catalog="memory", the default)
//!                     └──▶ SqliteCatalog              (catalog="sqlite:///path/metastore.db",
//!                                                      the Hive metastore's tables)
//!  warehouse ── database and managed table directories, staged writes committed by rename
//! ```
//!
//! The commands that use it (`CREATE TABLE`, `INSERT`, `SHOW ...`) are planned and run by
//! `ferrospark-plan`: this crate knows metadata and directories, not queries.

pub mod commit;
pub mod external;
pub mod memory;
pub mod model;
pub mod names;
pub mod session;
pub mod sqlite;
pub mod types;
pub mod warehouse;

use std::sync::Arc;

pub use external::ExternalCatalog;
pub use memory::InMemoryCatalog;
pub use model::{
    CatalogDatabase, CatalogFunction, CatalogPartition, CatalogTable, ColumnStat, PartitionSpec,
    TableIdent, TableStats, TableType,
};
pub use session::{GlobalTempViews, Relation, SessionCatalog};
pub use sqlite::SqliteCatalog;
pub use warehouse::Warehouse;

use ferrospark_common::{FerroError, Result};

/// The external catalog a session's `catalog=` names: `memory` (or nothing), or
/// `sqlite:///absolute/path.db` / `sqlite://relative/path.db`.
pub fn open_external(url: Option<&str>) -> Result<Arc<dyn ExternalCatalog>> {
    match url.map(str::trim) {
        None | Some("") | Some("memory") | Some("in-memory") => {
            Ok(Arc::new(InMemoryCatalog::new()))
        }
        Some(u) => match u.strip_prefix("sqlite://") {
            Some(path) if !path.is_empty() => {
                Ok(Arc::new(SqliteCatalog::open(std::path::Path::new(path))?))
            }
            _ => Err(FerroError::Config(format!(
                "catalog '{u}': use \"memory\" or \"sqlite:///path/to/metastore.db\""
            ))),
        },
    }
}

#[cfg(test)]
mod tests;
