//! Bindings of the streaming state store (`ferrospark.streaming.StateStore`). The store lives
//! in `ferrospark-stream`.

use std::collections::HashMap;
use std::sync::Mutex;

use ferrospark_common::FerroError;
use ferrospark_stream::state::{
    collect, open_provider, StateStoreConf, StateStoreId, StateStoreMetrics, StateStoreProvider,
};
use pyo3::prelude::*;

use crate::{config_from, Detach, IntoPyResult};

/// One (operator, partition)'s versioned state store.
#[pyclass(name = "StateStore", module = "ferrospark._native", frozen)]
pub(crate) struct PyStateStore(Mutex<Box<dyn StateStoreProvider>>);

fn locked<'a>(
    m: &'a Mutex<Box<dyn StateStoreProvider>>,
) -> Result<std::sync::MutexGuard<'a, Box<dyn StateStoreProvider>>, FerroError> {
    m.lock()
        .map_err(|_| FerroError::Internal("a state store's lock is poisoned".into()))
}

fn metrics_dict(m: &StateStoreMetrics) -> HashMap<&'static str, f64> {
    HashMap::from([
        ("numRowsTotal", m.num_keys as f64),
        ("numRowsUpdated", m.rows_updated as f64),
        ("numRowsRemoved", m.rows_removed as f64),
        ("memoryUsedBytes", m.memory_bytes as f64),
        ("diskBytes", m.disk_bytes as f64),
        ("commitTimeMs", m.commit_ms),
        ("snapshotsWritten", m.snapshots_written as f64),
        ("deltasWritten", m.deltas_written as f64),
        ("loadedFromFiles", m.loads_from_files as f64),
    ])
}

#[pymethods]
impl PyStateStore {
    /// Opens store `store_name` of (`operator_id`, `partition_id`) under `checkpoint`, its
    /// provider chosen by `conf` (Spark's state store keys).
    #[new]
    #[pyo3(signature = (checkpoint, operator_id=0, partition_id=0, store_name="default", conf=None))]
    fn new(
        py: Python<'_>,
        checkpoint: String,
        operator_id: u64,
        partition_id: u32,
        store_name: &str,
        conf: Option<HashMap<String, String>>,
    ) -> PyResult<Self> {
        let cfg = config_from(py, conf)?;
        let conf = StateStoreConf::from_config(&cfg).py(py)?;
        let id = StateStoreId::new(checkpoint, operator_id, partition_id).named(store_name);
        let provider = py.run_detached(|| open_provider(&id, &conf)).py(py)?;
        Ok(Self(Mutex::new(provider)))
    }

    /// The latest committed version.
    fn latest_version(&self, py: Python<'_>) -> PyResult<u64> {
        py.run_detached(|| locked(&self.0)?.latest_version()).py(py)
    }

    /// Applies `puts` then `removes` to `version` and commits: the new version.
    fn commit(
        &self,
        py: Python<'_>,
        version: u64,
        puts: Vec<(Vec<u8>, Vec<u8>)>,
        removes: Vec<Vec<u8>>,
    ) -> PyResult<u64> {
        py.run_detached(|| {
            let mut p = locked(&self.0)?;
            let mut store = p.get_store(version)?;
            for (k, v) in &puts {
                store.put(k, v)?;
            }
            for k in &removes {
                store.remove(k)?;
            }
            store.commit()
        })
        .py(py)
    }

    /// `key`'s value at `version`.
    fn get(&self, py: Python<'_>, version: u64, key: Vec<u8>) -> PyResult<Option<Vec<u8>>> {
        py.run_detached(|| {
            let mut p = locked(&self.0)?;
            let store = p.get_store(version)?;
            store.get(&key)
        })
        .py(py)
    }

    /// The keys starting with `prefix` at `version` and their values, in key order.
    #[pyo3(signature = (version, prefix=Vec::new()))]
    fn scan(
        &self,
        py: Python<'_>,
        version: u64,
        prefix: Vec<u8>,
    ) -> PyResult<Vec<(Vec<u8>, Vec<u8>)>> {
        py.run_detached(|| {
            let mut p = locked(&self.0)?;
            let store = p.get_store(version)?;
            collect(store.as_ref(), &prefix)
        })
        .py(py)
    }

    /// The counters of the last commit, by Spark's names.
    fn metrics(&self, py: Python<'_>) -> PyResult<HashMap<&'static str, f64>> {
        let m = py.run_detached(|| Ok(locked(&self.0)?.metrics())).py(py)?;
        Ok(metrics_dict(&m))
    }
}
