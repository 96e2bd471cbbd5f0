//! Bindings of the session catalog (`Session.catalog`, `Session(catalog=...)`) and of the
//! DataFrame writer (`df.write.saveAsTable / insertInto / parquet`). The catalog lives in
//! `ferrospark-catalog`, commands and writes in `ferrospark-plan`.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use ferrospark_catalog::names::parse_multipart;
use ferrospark_catalog::warehouse::location_uri;
use ferrospark_catalog::Relation;
use ferrospark_plan::commands::write::{self, SaveMode};
use ferrospark_plan::engine::{open_catalog, Catalog};
use pyo3::prelude::*;

use crate::plan::PyPlan;
use crate::{config_from, Detach, IntoPyResult};

/// A session catalog: databases, tables, views, functions; shared by a session's engines.
#[pyclass(name = "Catalog", module = "ferrospark._native", frozen)]
pub(crate) struct PyCatalog(pub(crate) Arc<Catalog>);

/// (name, namespace, description, tableType, isTemporary) as `pyspark.sql.catalog.Table`.
type TableRow = (String, Option<String>, Option<String>, String, bool);

/// (name, description, dataType, nullable, isPartition) as `pyspark.sql.catalog.Column`.
type ColumnRow = (String, Option<String>, String, bool, bool);

#[pymethods]
impl PyCatalog {
    /// Opens the catalog `url` names (`memory`, `sqlite:///path`) under `conf`.
    #[new]
    #[pyo3(signature = (conf=None, url=None))]
    fn new(
        py: Python<'_>,
        conf: Option<HashMap<String, String>>,
        url: Option<String>,
    ) -> PyResult<Self> {
        let cfg = config_from(py, conf)?;
        let cat = py
            .run_detached(|| open_catalog(&cfg, url.as_deref()))
            .py(py)?;
        Ok(Self(cat))
    }

    /// A catalog for a new session: same databases and global temp views, its own
    /// current database, temp views and temp functions.
    fn new_session(&self, py: Python<'_>) -> PyResult<Self> {
        Ok(Self(Arc::new(self.0.new_session().py(py)?)))
    }

    fn current_database(&self) -> String {
        self.0.current_database()
    }

    fn set_current_database(&self, py: Python<'_>, name: &str) -> PyResult<()> {
        self.0.set_current_database(name).py(py)
    }

    /// `(name, description, locationUri)` of each database.
    fn list_databases(
        &self,
        py: Python<'_>,
        pattern: Option<String>,
    ) -> PyResult<Vec<(String, String, String)>> {
        let cat = self.0.clone();
        py.run_detached(move || {
            let names =
                ferrospark_catalog::names::filter_names(cat.list_databases()?, pattern.as_deref());
            names
                .into_iter()
                .map(|n| {
                    let db = cat.require_database(&n)?;
                    Ok((db.name, db.description, location_uri(&db.location)))
                })
                .collect::<ferrospark_common::Result<Vec<_>>>()
        })
        .py(py)
    }

    fn get_database(&self, py: Python<'_>, name: &str) -> PyResult<(String, String, String)> {
        let db = self
            .0
            .require_database(&ferrospark_catalog::names::normalize(name))
            .py(py)?;
        Ok((db.name, db.description, location_uri(&db.location)))
    }

    fn database_exists(&self, py: Python<'_>, name: &str) -> PyResult<bool> {
        Ok(self
            .0
            .external()
            .get_database(&ferrospark_catalog::names::normalize(name))
            .py(py)?
            .is_some())
    }

    /// Tables and views of `db` (the current database by default), then temp views.
    #[pyo3(signature = (db=None, pattern=None))]
    fn list_tables(
        &self,
        py: Python<'_>,
        db: Option<String>,
        pattern: Option<String>,
    ) -> PyResult<Vec<TableRow>> {
        let cat = self.0.clone();
        py.run_detached(move || {
            let db =
                ferrospark_catalog::names::normalize(&db.unwrap_or_else(|| cat.current_database()));
            let mut out = Vec::new();
            for n in
                ferrospark_catalog::names::filter_names(cat.list_tables(&db)?, pattern.as_deref())
            {
                let t = cat.require_table(&ferrospark_catalog::TableIdent::new(&db, &n))?;
                out.push((
                    n,
                    Some(db.clone()),
                    t.comment.clone(),
                    t.table_type.spark_name().to_string(),
                    false,
                ));
            }
            for n in
                ferrospark_catalog::names::filter_names(cat.temp_view_names()?, pattern.as_deref())
            {
                out.push((n, None, None, "TEMPORARY".to_string(), true));
            }
            Ok(out)
        })
        .py(py)
    }

    /// The `Table` row of a name, or `TABLE_OR_VIEW_NOT_FOUND`.
    fn get_table(&self, py: Python<'_>, name: &str) -> PyResult<TableRow> {
        let parts = parse_multipart(name).py(py)?;
        match self.0.lookup(&parts).py(py)? {
            Some(Relation::TempView(_)) => Ok((
                parts[0].to_lowercase(),
                None,
                None,
                "TEMPORARY".into(),
                true,
            )),
            Some(Relation::GlobalTempView(_)) => Ok((
                parts[1].to_lowercase(),
                Some("global_temp".into()),
                None,
                "TEMPORARY".into(),
                true,
            )),
            Some(Relation::Table(t)) => Ok((
                t.ident.table.clone(),
                Some(t.ident.database.clone()),
                t.comment.clone(),
                t.table_type.spark_name().into(),
                false,
            )),
            None => Err(crate::to_py(py, self.0.not_found(&parts))),
        }
    }

    fn table_exists(&self, py: Python<'_>, name: &str) -> PyResult<bool> {
        let parts = parse_multipart(name).py(py)?;
        Ok(matches!(self.0.lookup(&parts), Ok(Some(_))))
    }

    /// `(name, description, dataType, nullable, isPartition)` per column.
    fn list_columns(&self, py: Python<'_>, name: &str) -> PyResult<Vec<ColumnRow>> {
        let parts = parse_multipart(name).py(py)?;
        let cat = &self.0;
        match cat.lookup(&parts).py(py)? {
            Some(Relation::TempView(p)) | Some(Relation::GlobalTempView(p)) => Ok(p
                .output()
                .iter()
                .map(|a| {
                    (
                        a.name.clone(),
                        None,
                        ferrospark_catalog::types::catalog_string(&a.data_type),
                        a.nullable,
                        false,
                    )
                })
                .collect()),
            Some(Relation::Table(t)) => Ok(t
                .schema
                .fields()
                .iter()
                .map(|f| {
                    (
                        f.name().clone(),
                        f.metadata().get("comment").cloned(),
                        ferrospark_catalog::types::catalog_string(f.data_type()),
                        f.is_nullable(),
                        t.partition_columns.contains(f.name()),
                    )
                })
                .collect()),
            None => Err(crate::to_py(py, cat.not_found(&parts))),
        }
    }

    /// `(name, qualified name or None, isTemporary)` of user functions.
    fn list_user_functions(&self, py: Python<'_>) -> PyResult<Vec<(String, Option<String>, bool)>> {
        let mut out: Vec<(String, Option<String>, bool)> = self
            .0
            .temp_function_names()
            .py(py)?
            .into_iter()
            .map(|n| (n, None, true))
            .collect();
        let db = self.0.current_database();
        for f in self.0.external().list_functions(&db).py(py)? {
            out.push((f, Some(db.clone()), false));
        }
        Ok(out)
    }

    fn function_exists(&self, py: Python<'_>, name: &str) -> PyResult<bool> {
        let parts = parse_multipart(name).py(py)?;
        if let [one] = parts.as_slice() {
            if self.0.udf(one).py(py)?.is_some() {
                return Ok(true);
            }
        }
        Ok(self.0.lookup_function(&parts).py(py)?.is_some())
    }

    /// Registers the Python function `func` (batch of arguments in, `pyarrow.Array` out)
    /// for SQL under `name` (`spark.udf.register`); with `aggregate`, called once per group.
    #[pyo3(signature = (name, func, return_type, deterministic, aggregate))]
    fn register_udf(
        &self,
        py: Python<'_>,
        name: String,
        func: Py<PyAny>,
        return_type: pyo3_arrow::PyDataType,
        deterministic: bool,
        aggregate: bool,
    ) -> PyResult<()> {
        let udf = crate::udf::python_udf(name.clone(), func, return_type.into(), deterministic);
        self.0
            .register_udf(&name, ferrospark_expr::RegisteredUdf { udf, aggregate })
            .py(py)
    }

    fn drop_temp_view(&self, py: Python<'_>, name: &str) -> PyResult<bool> {
        self.0.drop_temp_view(name).py(py)
    }

    fn drop_global_temp_view(&self, py: Python<'_>, name: &str) -> PyResult<bool> {
        self.0.drop_global_temp_view(name).py(py)
    }

    /// Forgets a table's cached relation (its files are listed again).
    fn refresh_table(&self, py: Python<'_>, name: &str) -> PyResult<()> {
        let parts = parse_multipart(name).py(py)?;
        let ident = self.0.qualify(&parts).py(py)?;
        self.0.invalidate(&ident);
        Ok(())
    }
}

/// `df.write.mode(mode).format(format).partitionBy(...).options(...).saveAsTable(name)`.
#[pyfunction]
#[pyo3(signature = (plan, name, mode, format=None, partition_by=Vec::new(), options=BTreeMap::new()))]
pub(crate) fn save_as_table(
    py: Python<'_>,
    plan: &PyPlan,
    name: &str,
    mode: &str,
    format: Option<String>,
    partition_by: Vec<String>,
    options: BTreeMap<String, String>,
) -> PyResult<()> {
    let mode = SaveMode::parse(mode).py(py)?;
    let (engine, p) = plan.parts();
    py.run_detached(|| {
        write::save_as_table(
            &engine,
            p,
            name,
            mode,
            format.as_deref(),
            partition_by,
            options,
        )
    })
    .py(py)
}

/// `df.write.insertInto(name, overwrite)`.
#[pyfunction]
pub(crate) fn insert_into(
    py: Python<'_>,
    plan: &PyPlan,
    name: &str,
    overwrite: bool,
) -> PyResult<()> {
    let (engine, p) = plan.parts();
    py.run_detached(|| write::insert_into(&engine, p, name, overwrite))
        .py(py)
}

/// `df.write.mode(mode).partitionBy(...).format(format).options(...).save(path)`.
#[pyfunction]
#[pyo3(signature = (plan, path, mode, format="parquet", partition_by=Vec::new(), options=BTreeMap::new()))]
pub(crate) fn write_path(
    py: Python<'_>,
    plan: &PyPlan,
    path: &str,
    mode: &str,
    format: &str,
    partition_by: Vec<String>,
    options: BTreeMap<String, String>,
) -> PyResult<()> {
    let mode = SaveMode::parse(mode).py(py)?;
    let (engine, p) = plan.parts();
    py.run_detached(|| write::write_path(&engine, p, path, mode, partition_by, format, &options))
        .py(py)
}
