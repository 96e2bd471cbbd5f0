//! A catalog table or persistent view as a relation: its files scanned (hive partitions
//! discovered under its location) and shaped to the catalog's schema, or its view text
//! planned in the view's database. Plans are cached per table until a command changes it.

use std::path::PathBuf;
use std::sync::Arc;

use arrow_schema::{DataType, Schema};
use ferrospark_catalog::{CatalogTable, Relation, TableType};
use ferrospark_common::{FerroError, Result};
use ferrospark_expr::{Expr, Literal};
use ferrospark_scan::ColumnStatistics;

use crate::builder::PlanBuilder;
use crate::engine::QueryEngine;
use crate::logical::{LogicalPlan, ScanSource};
use crate::sql::TableProvider;

/// Whether `location` holds a data file a reader would see.
pub(crate) fn has_data_files(location: &std::path::Path) -> bool {
    fn walk(dir: &std::path::Path) -> bool {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return false;
        };
        entries.flatten().any(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            if name.starts_with('_') || name.starts_with('.') {
                return false;
            }
            match e.file_type() {
                Ok(t) if t.is_dir() => walk(&e.path()),
                Ok(_) => e.metadata().map(|m| m.len() > 0).unwrap_or(false),
                Err(_) => false,
            }
        })
    }
    walk(location)
}

/// The plan reading table `t` (a view's plan for a view).
pub fn table_plan(engine: &QueryEngine, t: &CatalogTable) -> Result<Arc<LogicalPlan>> {
    let catalog = engine.catalog();
    if let Some(p) = catalog.cached(&t.ident) {
        return Ok(p);
    }
    let plan = match t.table_type {
        TableType::View => view_plan(engine, t)?,
        _ => files_plan(engine, t)?,
    };
    catalog.cache(&t.ident, plan.clone());
    Ok(plan)
}

fn view_plan(engine: &QueryEngine, t: &CatalogTable) -> Result<Arc<LogicalPlan>> {
    let text = t.view_text.as_deref().unwrap_or_default();
    let scope = InDatabase {
        engine,
        database: t.ident.database.clone(),
    };
    let plan = match crate::sql::plan_sql(text, &engine.builder, &scope)? {
        crate::sql::SqlStatement::Query(p) => p,
        crate::sql::SqlStatement::Explain(..) => {
            return Err(FerroError::Internal(format!(
                "view {} holds an EXPLAIN",
                t.ident
            )))
        }
    };
    // A view created with a column list (`CREATE VIEW v(a, b) AS ...`) names its query's
    // columns by position; its text still gives the query's own names.
    let out = plan.output();
    let by_name = t
        .schema
        .fields()
        .iter()
        .all(|f| out.iter().any(|a| a.name.eq_ignore_ascii_case(f.name())));
    let plan = if !by_name && out.len() == t.schema.fields().len() {
        let names: Vec<String> = t.schema.fields().iter().map(|f| f.name().clone()).collect();
        super::ddl::rename_view_columns(engine, plan, &names)?
    } else {
        plan
    };
    conform(&engine.builder, plan, &t.schema)
}

fn files_plan(engine: &QueryEngine, t: &CatalogTable) -> Result<Arc<LogicalPlan>> {
    let location = PathBuf::from(t.location.as_deref().unwrap_or_default());
    let name = t.ident.table.clone();
    let b = &engine.builder;
    let provider = t.provider.as_deref().unwrap_or("parquet");
    super::write::recover_writes(engine, &location, Some(&t.ident))?;
    if provider == "parquet" && t.is_partitioned() {
        return catalog_partitions_plan(engine, t, location);
    }
    // One walk of the location: whether there is anything to read, the Parquet scan's files,
    // and (for a partitioned table of another format) which partition directories hold files.
    let listing = match ferrospark_scan::list_files(std::slice::from_ref(&location)) {
        Ok(l) => Some(l),
        Err(FerroError::PathNotFound(_)) => None,
        Err(e) => return Err(e),
    };
    let Some(listing) = listing.filter(|l| l.files.iter().any(|f| f.size > 0)) else {
        return Ok(b.scan_memory(t.schema.clone(), Vec::new(), &name));
    };
    let plan = if provider == "parquet" {
        b.scan_parquet_listed(std::slice::from_ref(&location), listing.clone(), &name)?
    } else {
        let format = ferrospark_scan::FileFormat::parse(provider)?;
        let data = Arc::new(Schema::new(t.data_fields()));
        b.scan_format(
            format,
            std::slice::from_ref(&location),
            Some(data),
            t.storage_options.clone(),
            &name,
        )?
    };
    let plan = match &t.stats {
        Some(s) => with_statistics(&plan, s),
        None => plan,
    };
    let plan = conform(b, plan, &t.schema)?;
    registered_only(engine, t, &listing, plan)
}

/// A partitioned Parquet table: a scan of the partitions its catalog holds, pruned by the
/// optimizer before any directory is listed (`PruneFileSourcePartitions`).
fn catalog_partitions_plan(
    engine: &QueryEngine,
    t: &CatalogTable,
    location: PathBuf,
) -> Result<Arc<LogicalPlan>> {
    let registered = engine
        .catalog()
        .external()
        .list_partition_locations(&t.ident)?;
    let fields: Vec<arrow_schema::Field> = t
        .partition_columns
        .iter()
        .filter_map(|c| t.schema.field_with_name(c).ok().cloned())
        .collect();
    let dirs = registered
        .into_iter()
        .map(|(spec, location)| {
            let values = t
                .partition_columns
                .iter()
                .map(|c| {
                    spec.iter()
                        .find(|(k, _)| k.eq_ignore_ascii_case(c))
                        .and_then(|(_, v)| v.clone())
                })
                .collect();
            ferrospark_scan::PartitionDir {
                path: PathBuf::from(location),
                values,
            }
        })
        .collect();
    let partitions = ferrospark_scan::PartitionDirs { fields, dirs };
    let plan = engine.builder.scan_catalog_partitions(
        &t.schema,
        partitions,
        location,
        t.stats.as_ref().map(|s| s.size_in_bytes),
        &t.ident.table,
    );
    conform(&engine.builder, plan, &t.schema)
}

/// A partitioned table reads the partitions its catalog holds (Spark's partition provider
/// `Catalog`): directories nobody added (`ALTER TABLE ... RECOVER PARTITIONS` adds them) are
/// filtered out. Usually every directory with files is registered and the plan is left
/// alone.
fn registered_only(
    engine: &QueryEngine,
    t: &CatalogTable,
    listing: &ferrospark_scan::Listing,
    plan: Arc<LogicalPlan>,
) -> Result<Arc<LogicalPlan>> {
    if !t.is_partitioned() {
        return Ok(plan);
    }
    // One metastore read: what is registered, and the filter keeping it.
    let registered = engine
        .catalog()
        .external()
        .list_partition_locations(&t.ident)?;
    let known: std::collections::HashSet<String> = registered
        .iter()
        .map(|(spec, _)| ferrospark_catalog::names::partition_path(spec))
        .collect();
    let all_known = listing.files.iter().all(|f| {
        let spec: Vec<(String, Option<String>)> = t
            .partition_columns
            .iter()
            .cloned()
            .zip(f.partition_values.iter().cloned())
            .collect();
        known.contains(&ferrospark_catalog::names::partition_path(&spec))
    });
    if all_known {
        return Ok(plan);
    }
    if registered.is_empty() {
        return Ok(engine
            .builder
            .scan_memory(t.schema.clone(), Vec::new(), &t.ident.table));
    }
    let as_text = |c: &str| cast(Expr::Column(c.to_string()), &DataType::Utf8);
    let keep = registered
        .iter()
        .map(|(spec, _)| {
            spec.iter()
                .map(|(k, v)| match v {
                    Some(v) => as_text(k).eq(Expr::Literal(Literal::string(v))),
                    None => Expr::IsNull(Box::new(Expr::Column(k.clone()))),
                })
                .reduce(Expr::and)
                .unwrap_or(Expr::Literal(Literal::boolean(true)))
        })
        .reduce(Expr::or)
        .unwrap_or(Expr::Literal(Literal::boolean(false)));
    engine.builder.filter(plan, &keep)
}

/// `plan` with its scan's estimates replaced by the catalog's statistics, as Spark's
/// relation of an analyzed table reports them: the size (what join selection reads), the
/// row count, and each analyzed column's NULLs, distinct values and numeric range (what
/// the planner's filter estimates, and through them join order and build sides, read).
fn with_statistics(
    plan: &Arc<LogicalPlan>,
    s: &ferrospark_catalog::TableStats,
) -> Arc<LogicalPlan> {
    match plan.as_ref() {
        LogicalPlan::Scan {
            source: ScanSource::Parquet { paths, stats, .. },
            attrs,
            projection,
            filters,
            name,
        } => {
            let mut merged = stats.as_ref().clone();
            if let Some(rows) = s.row_count {
                merged.rows = rows;
            }
            for (column, c) in &s.columns {
                let key = merged
                    .columns
                    .keys()
                    .find(|k| k.eq_ignore_ascii_case(column))
                    .cloned()
                    .unwrap_or_else(|| column.clone());
                let entry = merged.columns.entry(key).or_insert(ColumnStatistics {
                    range: None,
                    nulls: 0,
                    distinct_bound: None,
                });
                if let Some(n) = c.null_count {
                    entry.nulls = n;
                }
                if let Some(d) = c.distinct_count {
                    entry.distinct_bound = Some(d as f64);
                }
                let number = |v: &Option<String>| v.as_deref().and_then(|t| t.parse::<f64>().ok());
                if let (Some(lo), Some(hi)) = (number(&c.min), number(&c.max)) {
                    entry.range = Some((lo, hi));
                }
            }
            Arc::new(LogicalPlan::Scan {
                source: ScanSource::Parquet {
                    paths: paths.clone(),
                    size_bytes: s.size_in_bytes,
                    stats: Arc::new(merged),
                    partitions: None,
                },
                attrs: attrs.clone(),
                projection: projection.clone(),
                filters: filters.clone(),
                name: name.clone(),
            })
        }
        _ => plan.clone(),
    }
}

/// Projects `plan` onto `schema`: columns by name (case-insensitive), cast where the files'
/// types differ, NULL for a column the files lack (added later by `ALTER TABLE ADD COLUMNS`).
pub(crate) fn conform(
    b: &PlanBuilder,
    plan: Arc<LogicalPlan>,
    schema: &Schema,
) -> Result<Arc<LogicalPlan>> {
    let out = plan.output();
    let same = out.len() == schema.fields().len()
        && out
            .iter()
            .zip(schema.fields())
            .all(|(a, f)| a.name == *f.name() && a.data_type.equals_datatype(f.data_type()));
    if same {
        return Ok(plan);
    }
    let items: Vec<Expr> = schema
        .fields()
        .iter()
        .map(|f| {
            let value = match out.iter().find(|a| a.name.eq_ignore_ascii_case(f.name())) {
                Some(a) if a.data_type.equals_datatype(f.data_type()) => {
                    Expr::Column(a.name.clone())
                }
                Some(a) => cast(Expr::Column(a.name.clone()), f.data_type()),
                None => cast(Expr::Literal(Literal::null(&DataType::Null)), f.data_type()),
            };
            Expr::Alias {
                expr: Box::new(value),
                name: f.name().clone(),
            }
        })
        .collect();
    b.project(plan, &items)
}

pub(crate) fn cast(e: Expr, to: &DataType) -> Expr {
    Expr::Cast {
        expr: Box::new(e),
        type_name: ferrospark_expr::types::spark_type_name(to),
    }
}

/// Names resolved as a view's text was written: unqualified tables in the view's database.
struct InDatabase<'a> {
    engine: &'a QueryEngine,
    database: String,
}

impl TableProvider for InDatabase<'_> {
    fn relation(&self, parts: &[String]) -> Result<Option<Arc<LogicalPlan>>> {
        match parts {
            [t] => self.engine.relation(&[self.database.clone(), t.clone()]),
            _ => self.engine.relation(parts),
        }
    }

    fn not_found(&self, parts: &[String]) -> FerroError {
        self.engine.not_found(parts)
    }

    fn function(&self, parts: &[String]) -> Result<Option<ferrospark_catalog::CatalogFunction>> {
        TableProvider::function(self.engine, parts)
    }
}

/// The plan of whatever `parts` names in `engine`'s catalog.
pub(crate) fn lookup(engine: &QueryEngine, parts: &[String]) -> Result<Option<Arc<LogicalPlan>>> {
    Ok(match engine.catalog().lookup(parts)? {
        None => None,
        Some(Relation::TempView(p)) | Some(Relation::GlobalTempView(p)) => Some(p),
        Some(Relation::Table(t)) => Some(table_plan(engine, &t)?),
    })
}
