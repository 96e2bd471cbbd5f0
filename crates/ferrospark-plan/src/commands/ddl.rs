//! Commands that change the catalog: databases, tables, views, partitions, properties,
//! functions. Each validates first, then makes one catalog change, then touches files (a
//! managed table's directory), so a failure leaves the catalog as it was.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use arrow_schema::{DataType, Field, Schema, SchemaRef};
use ferrospark_catalog::names::{normalize, partition_path, quote, validate};
use ferrospark_catalog::warehouse::{location_uri, managed_table_location, resolve_location};
use ferrospark_catalog::{
    CatalogDatabase, CatalogFunction, CatalogPartition, CatalogTable, PartitionSpec, TableIdent,
    TableType,
};
use ferrospark_common::{FerroError, Result};

use super::{ColumnDef, Command, CreateTable, ViewDef, ViewKind};
use crate::engine::QueryEngine;
use crate::logical::LogicalPlan;

/// The formats a table may be stored in.
pub(crate) const PROVIDERS: &[&str] = &["parquet", "csv", "json", "avro"];

pub(super) fn run(engine: &QueryEngine, cmd: Command) -> Result<()> {
    let cat = engine.catalog();
    match cmd {
        Command::CreateDatabase {
            name,
            if_not_exists,
            comment,
            location,
            properties,
        } => {
            check_reserved(&properties)?;
            let location = match location {
                Some(l) => resolve_location(&l)?.to_string_lossy().into_owned(),
                None => String::new(),
            };
            cat.create_database(
                CatalogDatabase {
                    name,
                    description: comment.unwrap_or_default(),
                    location,
                    properties,
                },
                if_not_exists,
            )
        }
        Command::DropDatabase {
            name,
            if_exists,
            cascade,
        } => cat.drop_database(&name, if_exists, cascade),
        Command::AlterDatabaseProperties { name, properties } => {
            check_reserved(&properties)?;
            let mut db = cat.require_database(&normalize(&name))?;
            db.properties.extend(properties);
            cat.external().alter_database(&db)
        }
        Command::AlterDatabaseLocation { name, location } => {
            let mut db = cat.require_database(&normalize(&name))?;
            db.location = resolve_location(&location)?.to_string_lossy().into_owned();
            cat.external().alter_database(&db)
        }
        Command::Use { name } => cat.set_current_database(&name),
        Command::CreateTable(t) => create_table(engine, *t),
        Command::CreateView(v) => create_view(engine, *v),
        Command::DropTable {
            name,
            if_exists,
            is_view,
        } => drop_table(engine, &name, if_exists, is_view),
        Command::RenameTable { from, to } => rename(engine, &from, &to),
        Command::AddColumns { table, columns } => {
            let mut t = require_table(engine, &table)?;
            let mut data = t.data_fields();
            for c in columns {
                if t.schema
                    .fields()
                    .iter()
                    .any(|f| f.name().eq_ignore_ascii_case(&c.name))
                    || data.iter().any(|f| f.name().eq_ignore_ascii_case(&c.name))
                {
                    return Err(FerroError::Analysis(format!(
                        "[COLUMN_ALREADY_EXISTS] The column {} already exists. Choose another name or rename the existing column. SQLSTATE: 42711",
                        quote(&c.name.to_lowercase())
                    )));
                }
                data.push(Arc::new(field_of(&c)));
            }
            let parts: Vec<_> = t
                .schema
                .fields()
                .iter()
                .filter(|f| t.partition_columns.contains(f.name()))
                .cloned()
                .collect();
            data.extend(parts);
            t.schema = Arc::new(Schema::new(data));
            cat.alter_table(&t)
        }
        Command::SetTblProperties { table, properties } => {
            let mut t = require_table(engine, &table)?;
            for (k, v) in properties {
                if k.eq_ignore_ascii_case("comment") {
                    t.comment = Some(v);
                } else {
                    t.properties.insert(k, v);
                }
            }
            cat.alter_table(&t)
        }
        Command::UnsetTblProperties {
            table,
            keys,
            if_exists,
        } => {
            let mut t = require_table(engine, &table)?;
            // Spark 4 ignores keys that are not set, with or without IF EXISTS.
            let _ = if_exists;
            for k in &keys {
                if k.eq_ignore_ascii_case("comment") {
                    t.comment = None;
                }
                t.properties.remove(k);
            }
            cat.alter_table(&t)
        }
        Command::AddPartitions {
            table,
            if_not_exists,
            parts,
        } => {
            let t = require_table(engine, &table)?;
            let loc = table_location(&t)?;
            let mut made = Vec::new();
            for (spec, location) in parts {
                let spec = normalize_spec(&t, &spec, true)?;
                let dir = match location {
                    Some(l) => resolve_location(&l)?,
                    None => loc.join(partition_path(&spec)),
                };
                made.push(CatalogPartition {
                    spec,
                    location: dir.to_string_lossy().into_owned(),
                    parameters: BTreeMap::new(),
                    created_ms: ferrospark_catalog::model::now_ms(),
                });
            }
            cat.external()
                .create_partitions(&t.ident, &made, if_not_exists)?;
            cat.invalidate(&t.ident);
            for p in &made {
                std::fs::create_dir_all(&p.location)
                    .map_err(|e| FerroError::io(Path::new(&p.location), e))?;
            }
            Ok(())
        }
        Command::DropPartitions {
            table,
            if_exists,
            specs,
        } => {
            let t = require_table(engine, &table)?;
            let mut full = Vec::new();
            let mut missing = Vec::new();
            for spec in specs {
                let partial = normalize_spec(&t, &spec, false)?;
                let found = cat.external().list_partitions(&t.ident, Some(&partial))?;
                if found.is_empty() {
                    missing.push(partial);
                }
                full.extend(found.into_iter().map(|p| p.spec));
            }
            if !missing.is_empty() && !if_exists {
                return Err(ferrospark_catalog::external::partitions_not_found(
                    &t.ident, &missing,
                ));
            }
            let dropped = cat.external().drop_partitions(&t.ident, &full, true)?;
            cat.invalidate(&t.ident);
            if t.table_type == TableType::Managed {
                let loc = table_location(&t)?;
                for p in dropped {
                    remove_partition_dir(&loc, &p)?;
                }
            }
            Ok(())
        }
        Command::RecoverPartitions { table } => {
            let t = require_table(engine, &table)?;
            let loc = table_location(&t)?;
            let mut found = Vec::new();
            discover(&loc, &loc, &t.partition_columns, &mut found)?;
            let parts: Vec<CatalogPartition> = found
                .into_iter()
                .map(|(spec, dir)| CatalogPartition {
                    spec,
                    location: dir.to_string_lossy().into_owned(),
                    parameters: BTreeMap::new(),
                    created_ms: ferrospark_catalog::model::now_ms(),
                })
                .collect();
            cat.external().create_partitions(&t.ident, &parts, true)?;
            cat.invalidate(&t.ident);
            Ok(())
        }
        Command::Refresh { table } => {
            let ident = cat.qualify(&table)?;
            if cat.lookup(&table)?.is_none() {
                return Err(engine.not_found(&table));
            }
            cat.invalidate(&ident);
            Ok(())
        }
        Command::Truncate { table, spec } => {
            let t = require_table(engine, &table)?;
            if t.table_type != TableType::Managed {
                return Err(FerroError::Analysis(format!(
                    "[UNSUPPORTED_FEATURE.TABLE_OPERATION] The feature is not supported: Table {} does not support TRUNCATE TABLE on an {} table. SQLSTATE: 0A000",
                    t.ident.quoted(),
                    t.table_type.spark_name().to_lowercase()
                )));
            }
            let loc = table_location(&t)?;
            let dirs: Vec<PathBuf> = match spec {
                None => vec![loc.clone()],
                Some(s) => {
                    let partial = normalize_spec(&t, &s, false)?;
                    cat.external()
                        .list_partitions(&t.ident, Some(&partial))?
                        .into_iter()
                        .map(|p| PathBuf::from(p.location))
                        .collect()
                }
            };
            let mut t2 = t.clone();
            t2.stats = None;
            cat.alter_table(&t2)?;
            for d in dirs {
                remove_data_files(&d)?;
            }
            Ok(())
        }
        Command::CreateFunction {
            name,
            temporary,
            replace,
            if_not_exists,
            params,
            returns,
            body,
        } => {
            let (database, fname) = match (temporary, name.as_slice()) {
                (true, [n]) => ("session".to_string(), normalize(n)),
                (false, [n]) => (cat.current_database(), normalize(n)),
                (false, [d, n]) | (false, [_, d, n]) => (normalize(d), normalize(n)),
                _ => {
                    return Err(FerroError::Analysis(format!(
                        "[INVALID_SQL_SYNTAX.CREATE_TEMP_FUNC_WITH_DATABASE] Invalid SQL syntax: CREATE TEMPORARY FUNCTION with database name is not allowed: {}. SQLSTATE: 42000",
                        name.iter().map(|p| quote(p)).collect::<Vec<_>>().join(".")
                    )))
                }
            };
            // The body must plan against its parameters now, not at its first call.
            super::functions::check_body(engine, &params, returns.as_deref(), &body)?;
            let f = CatalogFunction {
                database: database.clone(),
                name: fname.clone(),
                params,
                returns,
                body,
                created_ms: ferrospark_catalog::model::now_ms(),
            };
            if temporary {
                if if_not_exists && cat.lookup_function(std::slice::from_ref(&fname))?.is_some() {
                    return Ok(());
                }
                cat.create_temp_function(f, replace)
            } else {
                cat.require_database(&database)?;
                if if_not_exists && cat.external().get_function(&database, &fname)?.is_some() {
                    return Ok(());
                }
                cat.external().create_function(&f, replace)
            }
        }
        Command::DropFunction {
            name,
            temporary,
            if_exists,
        } => {
            if temporary {
                let n = name.last().cloned().unwrap_or_default();
                if !cat.drop_temp_function(&n)? && !if_exists {
                    return Err(ferrospark_catalog::external::function_not_found(&quote(&n)));
                }
                return Ok(());
            }
            let (db, n) = match name.as_slice() {
                [n] => (cat.current_database(), normalize(n)),
                [d, n] | [_, d, n] => (normalize(d), normalize(n)),
                _ => return Err(engine.not_found(&name)),
            };
            cat.external().drop_function(&db, &n, if_exists)
        }
        other => Err(FerroError::Internal(format!(
            "{other:?} is not a catalog change"
        ))),
    }
}

/// Database properties Spark sets itself (`owner`) or takes from clauses (`LOCATION`,
/// `COMMENT`) are refused as properties.
fn check_reserved(properties: &BTreeMap<String, String>) -> Result<()> {
    for reserved in ["owner", "location", "comment"] {
        if properties.keys().any(|k| k.eq_ignore_ascii_case(reserved)) {
            return Err(reserved_property(reserved));
        }
    }
    Ok(())
}

fn reserved_property(key: &str) -> FerroError {
    let why = match key {
        "owner" => "it will be set to the current user".to_string(),
        other => format!(
            "please use the {} clause to specify it",
            other.to_uppercase()
        ),
    };
    FerroError::Analysis(format!(
        "[UNSUPPORTED_FEATURE.SET_NAMESPACE_PROPERTY] The feature is not supported: {key} is a reserved namespace property, {why}. SQLSTATE: 0A000"
    ))
}

/// The table (not a view) `parts` names, or `[TABLE_OR_VIEW_NOT_FOUND]`.
pub(crate) fn require_table(engine: &QueryEngine, parts: &[String]) -> Result<CatalogTable> {
    let cat = engine.catalog();
    let ident = cat.qualify(parts)?;
    cat.require_database(&ident.database)?;
    match cat.external().get_table(&ident)? {
        Some(t) => Ok(t),
        None => Err(missing_table(engine, &ident)),
    }
}

/// `[TABLE_OR_VIEW_NOT_FOUND]` for a command's table, named in full as Spark names it.
pub(crate) fn missing_table(engine: &QueryEngine, ident: &TableIdent) -> FerroError {
    let _ = engine;
    match ferrospark_catalog::external::table_not_found(&ident.quoted()) {
        FerroError::Analysis(m) => FerroError::Analysis(m.replacen(
            "the schema and catalog.\n",
            &format!(
                "the schema and catalog.\nSearch path: [`spark_catalog`.{}].\n",
                quote(&ident.database)
            ),
            1,
        )),
        other => other,
    }
}

/// A table's directory.
pub(crate) fn table_location(t: &CatalogTable) -> Result<PathBuf> {
    t.location.as_deref().map(PathBuf::from).ok_or_else(|| {
        FerroError::Analysis(format!(
            "{} has no location: it is a view",
            t.ident.quoted()
        ))
    })
}

pub(crate) fn field_of(c: &ColumnDef) -> Field {
    super::with_comment(
        Field::new(&c.name, c.data_type.clone(), c.nullable),
        c.comment.as_deref(),
    )
}

/// A partition spec as the table orders and names it; with `require_all`, every partition
/// column must have a value. Values of integral columns are normalized (`01` is `1`).
pub(crate) fn normalize_spec(
    t: &CatalogTable,
    spec: &[(String, Option<String>)],
    require_all: bool,
) -> Result<PartitionSpec> {
    if !t.is_partitioned() {
        return Err(not_partitioned(t));
    }
    let bad = || {
        FerroError::Analysis(format!(
            "[PARTITIONS_NOT_FOUND] Partition spec is invalid. The spec ({}) must match the partition spec ({}) defined in table '{}'. SQLSTATE: 428FT",
            spec.iter().map(|(k, _)| k.as_str()).collect::<Vec<_>>().join(", "),
            t.partition_columns.join(", "),
            t.ident.quoted()
        ))
    };
    for (k, _) in spec {
        if !t
            .partition_columns
            .iter()
            .any(|p| p.eq_ignore_ascii_case(k))
        {
            return Err(bad());
        }
    }
    let mut out = Vec::new();
    for p in &t.partition_columns {
        match spec.iter().find(|(k, _)| k.eq_ignore_ascii_case(p)) {
            Some((_, v)) => {
                let dt = t
                    .schema
                    .field_with_name(p)
                    .map(|f| f.data_type().clone())
                    .ok();
                out.push((
                    p.clone(),
                    v.as_deref().map(|v| normalize_value(v, dt.as_ref())),
                ));
            }
            None if require_all => return Err(bad()),
            None => {}
        }
    }
    Ok(out)
}

fn normalize_value(v: &str, dt: Option<&DataType>) -> String {
    match dt {
        Some(DataType::Int8 | DataType::Int16 | DataType::Int32 | DataType::Int64) => v
            .trim()
            .parse::<i64>()
            .map(|n| n.to_string())
            .unwrap_or_else(|_| v.to_string()),
        _ => v.to_string(),
    }
}

pub(crate) fn not_partitioned(t: &CatalogTable) -> FerroError {
    FerroError::Analysis(format!(
        "[INVALID_PARTITION_OPERATION.PARTITION_SCHEMA_IS_EMPTY] The partition command is invalid. Table {} is not partitioned. SQLSTATE: 42601",
        t.ident.quoted()
    ))
}

fn remove_partition_dir(table_dir: &Path, p: &CatalogPartition) -> Result<()> {
    let dir = PathBuf::from(&p.location);
    // Only a directory inside the table's own: a partition added with a LOCATION elsewhere
    // keeps its files.
    if dir.starts_with(table_dir) && dir != table_dir {
        if let Ok(m) = std::fs::symlink_metadata(&dir) {
            if m.file_type().is_symlink() {
                std::fs::remove_file(&dir).map_err(|e| FerroError::io(&dir, e))?;
            } else if m.is_dir() {
                std::fs::remove_dir_all(&dir).map_err(|e| FerroError::io(&dir, e))?;
            }
        }
    }
    Ok(())
}

/// Removes the data files under `dir` (its directories stay).
fn remove_data_files(dir: &Path) -> Result<()> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Ok(());
    };
    for e in entries.flatten() {
        let p = e.path();
        match e.file_type() {
            Ok(t) if t.is_dir() => remove_data_files(&p)?,
            Ok(_) => std::fs::remove_file(&p).map_err(|e| FerroError::io(&p, e))?,
            Err(_) => {}
        }
    }
    Ok(())
}

/// Partition directories under `dir`, `key=value` per level, for `keys`.
pub(crate) fn discover(
    root: &Path,
    dir: &Path,
    keys: &[String],
    out: &mut Vec<(PartitionSpec, PathBuf)>,
) -> Result<()> {
    let depth = dir
        .strip_prefix(root)
        .map(|r| r.components().count())
        .unwrap_or(0);
    if depth == keys.len() {
        let rel = dir
            .strip_prefix(root)
            .unwrap_or(dir)
            .to_string_lossy()
            .into_owned();
        if let Some(spec) = ferrospark_catalog::names::parse_partition_path(&rel) {
            let names_match = spec.len() == keys.len()
                && spec
                    .iter()
                    .zip(keys)
                    .all(|((k, _), want)| k.eq_ignore_ascii_case(want));
            if names_match {
                let spec = spec
                    .into_iter()
                    .zip(keys)
                    .map(|((_, v), k)| (k.clone(), v))
                    .collect();
                out.push((spec, dir.to_path_buf()));
            }
        }
        return Ok(());
    }
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Ok(());
    };
    let mut subdirs: Vec<PathBuf> = entries
        .flatten()
        .filter(|e| e.file_type().map(|t| t.is_dir()).unwrap_or(false))
        .filter(|e| {
            let n = e.file_name().to_string_lossy().into_owned();
            !n.starts_with('_') && !n.starts_with('.') && n.contains('=')
        })
        .map(|e| e.path())
        .collect();
    subdirs.sort();
    for d in subdirs {
        discover(root, &d, keys, out)?;
    }
    Ok(())
}

/// The schema of a new table: declared columns with partition columns moved to the end.
pub(crate) fn table_schema(
    ident: &TableIdent,
    fields: Vec<Field>,
    partition_by: &[String],
) -> Result<(SchemaRef, Vec<String>)> {
    let mut data = Vec::new();
    let mut parts = Vec::new();
    for name in partition_by {
        if !fields.iter().any(|f| f.name().eq_ignore_ascii_case(name)) {
            return Err(FerroError::Analysis(format!(
                "[COLUMN_NOT_DEFINED_IN_TABLE] partition column {} is not defined in table {}, defined table columns are: {}. SQLSTATE: 42703",
                quote(name),
                ident.quoted(),
                fields.iter().map(|f| quote(f.name())).collect::<Vec<_>>().join(", ")
            )));
        }
    }
    let mut seen = std::collections::HashSet::new();
    for f in &fields {
        if !seen.insert(f.name().to_lowercase()) {
            return Err(FerroError::Analysis(format!(
                "[COLUMN_ALREADY_EXISTS] The column {} already exists. Choose another name or rename the existing column. SQLSTATE: 42711",
                quote(&f.name().to_lowercase())
            )));
        }
    }
    for f in fields {
        if partition_by
            .iter()
            .any(|p| p.eq_ignore_ascii_case(f.name()))
        {
            parts.push(f);
        } else {
            data.push(f);
        }
    }
    // Partition columns in PARTITIONED BY's order.
    parts.sort_by_key(|f| {
        partition_by
            .iter()
            .position(|p| p.eq_ignore_ascii_case(f.name()))
            .unwrap_or(usize::MAX)
    });
    let names = parts.iter().map(|f| f.name().clone()).collect();
    data.extend(parts);
    Ok((Arc::new(Schema::new(data)), names))
}

/// The provider of a new table, checked.
pub(crate) fn provider_of(engine: &QueryEngine, given: Option<&str>) -> Result<String> {
    let p = given
        .map(str::to_ascii_lowercase)
        .or_else(|| {
            engine
                .config()
                .get("spark.sql.sources.default")
                .map(str::to_ascii_lowercase)
        })
        .unwrap_or_else(|| "parquet".into());
    let p = match p.as_str() {
        "org.apache.spark.sql.parquet" | "org.apache.spark.sql.execution.datasources.parquet" => {
            "parquet".to_string()
        }
        other => other.to_string(),
    };
    if PROVIDERS.contains(&p.as_str()) {
        Ok(p)
    } else {
        Err(FerroError::Analysis(format!(
            "[DATA_SOURCE_NOT_FOUND] Failed to find the data source: {p}. Use one of {}. SQLSTATE: 42K02",
            PROVIDERS.join(", ")
        )))
    }
}

/// Where a new table's files go: its `LOCATION` (external) or its database's directory
/// (managed, which must not hold files already).
pub(crate) fn new_table_location(
    engine: &QueryEngine,
    ident: &TableIdent,
    location: Option<&str>,
) -> Result<(PathBuf, TableType)> {
    match location {
        Some(l) => Ok((resolve_location(l)?, TableType::External)),
        None => {
            let db = engine.catalog().require_database(&ident.database)?;
            let dir = managed_table_location(&db.location, &ident.table)?;
            if super::relation::has_data_files(&dir) {
                return Err(FerroError::Analysis(format!(
                    "[LOCATION_ALREADY_EXISTS] Cannot name the managed table as {}, as its associated location '{}' already exists. Please pick a different table name, or remove the existing location first. SQLSTATE: 42710",
                    ident.quoted(),
                    location_uri(&dir.to_string_lossy())
                )));
            }
            Ok((dir, TableType::Managed))
        }
    }
}

fn create_table(engine: &QueryEngine, c: CreateTable) -> Result<()> {
    let cat = engine.catalog();
    let ident = cat.qualify(&c.name)?;
    validate(&ident.table, "table")?;
    cat.require_database(&ident.database)?;
    if let Some(query) = &c.query {
        let plan = engine.query_plan(query)?;
        return super::write::create_table_as(engine, &c, &ident, plan);
    }
    if cat.external().get_table(&ident)?.is_some() {
        if c.if_not_exists {
            return Ok(());
        }
        if c.replace {
            drop_table(engine, &c.name, true, false)?;
        } else {
            return Err(ferrospark_catalog::external::table_exists(&ident));
        }
    }
    let provider = provider_of(engine, c.provider.as_deref())?;
    let (location, table_type) = new_table_location(engine, &ident, c.location.as_deref())?;
    let (fields, partition_by) = match &c.columns {
        Some(cols) => (cols.iter().map(field_of).collect(), c.partition_by.clone()),
        None => {
            let (fields, found) = inferred_fields(engine, &provider, &location, &c.options)?;
            // Partition directories found under the location partition the table.
            (
                fields,
                if c.partition_by.is_empty() {
                    found
                } else {
                    c.partition_by.clone()
                },
            )
        }
    };
    let (schema, partition_columns) = table_schema(&ident, fields, &partition_by)?;
    let table = CatalogTable {
        ident: ident.clone(),
        table_type,
        provider: Some(provider),
        location: Some(location.to_string_lossy().into_owned()),
        schema,
        partition_columns,
        properties: c.properties.clone(),
        storage_options: c.options.clone(),
        comment: c.comment.clone(),
        view_text: None,
        created_ms: ferrospark_catalog::model::now_ms(),
        owner: owner(),
        stats: None,
    };
    cat.create_table(&table, c.if_not_exists)?;
    if table_type == TableType::Managed {
        std::fs::create_dir_all(&location).map_err(|e| FerroError::io(&location, e))?;
    }
    Ok(())
}

/// Columns of existing files at a new external table's location, and the partition
/// columns their directories name.
fn inferred_fields(
    engine: &QueryEngine,
    provider: &str,
    location: &Path,
    options: &BTreeMap<String, String>,
) -> Result<(Vec<Field>, Vec<String>)> {
    if !super::relation::has_data_files(location) {
        return Err(FerroError::Analysis(format!(
            "[UNABLE_TO_INFER_SCHEMA] Unable to infer schema for {}. It must be specified manually. SQLSTATE: 42KD9",
            provider.to_uppercase()
        )));
    }
    let b = &engine.builder;
    let paths = [location.to_path_buf()];
    let plan = if provider == "parquet" {
        b.scan_parquet(&paths, "t")?
    } else {
        b.scan_format(
            ferrospark_scan::FileFormat::parse(provider)?,
            &paths,
            None,
            options.clone(),
            "t",
        )?
    };
    let partitions = ferrospark_scan::list_files(&paths)?
        .partition_fields
        .iter()
        .map(|f| f.name().clone())
        .collect();
    Ok((nullable_fields(&plan), partitions))
}

/// A plan's columns as a new table's: every one nullable (Spark's `asNullable`).
pub(crate) fn nullable_fields(plan: &LogicalPlan) -> Vec<Field> {
    plan.output()
        .iter()
        .map(|a| Field::new(&a.name, a.data_type.clone(), true))
        .collect()
}

pub(crate) fn owner() -> String {
    std::env::var("USER").unwrap_or_else(|_| "root".into())
}

fn create_view(engine: &QueryEngine, v: ViewDef) -> Result<()> {
    let cat = engine.catalog();
    let plan = engine.query_plan(&v.query)?;
    if v.kind == ViewKind::Persistent
        && !engine
            .builder
            .cfg
            .get_bool("spark.sql.legacy.allowAutoGeneratedAliasForView", false)
            .unwrap_or(false)
    {
        refuse_generated_names(engine, &v, &plan)?;
    }
    let plan = rename_view_columns(engine, plan, &v.columns)?;
    let view_name = v.name.last().cloned().unwrap_or_default();
    match v.kind {
        ViewKind::Temp | ViewKind::GlobalTemp => {
            let global = v.kind == ViewKind::GlobalTemp;
            let exists = if global {
                cat.global_temp_view(&view_name)?.is_some()
            } else {
                cat.temp_view(&view_name)?.is_some()
            };
            if exists && v.if_not_exists {
                return Ok(());
            }
            if global {
                cat.create_global_temp_view(&view_name, plan, v.replace)
            } else {
                cat.create_temp_view(&view_name, plan, v.replace)
            }
        }
        ViewKind::Persistent => {
            let ident = cat.qualify(&v.name)?;
            validate(&ident.table, "view")?;
            let schema = crate::engine::QueryEngine::output_schema(&plan);
            let fields: Vec<Field> = schema
                .fields()
                .iter()
                .map(|f| f.as_ref().clone().with_nullable(true))
                .collect();
            let table = CatalogTable {
                ident: ident.clone(),
                table_type: TableType::View,
                provider: None,
                location: None,
                schema: Arc::new(Schema::new(fields)),
                partition_columns: Vec::new(),
                properties: v.properties,
                storage_options: BTreeMap::new(),
                comment: v.comment,
                view_text: Some(v.query),
                created_ms: ferrospark_catalog::model::now_ms(),
                owner: owner(),
                stats: None,
            };
            match cat.external().get_table(&ident)? {
                Some(_) if v.if_not_exists => Ok(()),
                Some(old) if v.replace => {
                    if old.table_type != TableType::View {
                        return Err(FerroError::Analysis(format!(
                            "[EXPECT_VIEW_NOT_TABLE.NO_ALTERNATIVE] The table {} does not support CREATE OR REPLACE VIEW. SQLSTATE: 42809",
                            ident.quoted()
                        )));
                    }
                    cat.alter_table(&table)
                }
                _ => cat.create_table(&table, false).map(|_| ()),
            }
        }
    }
}

/// A permanent view keeps no column name Spark generated for an expression (`upper(p)`):
/// such a name may change between versions, so Spark asks for an alias.
fn refuse_generated_names(engine: &QueryEngine, v: &ViewDef, plan: &LogicalPlan) -> Result<()> {
    let flags = crate::sql::view_aliases::generated_names(&v.query)?;
    let out = plan.output();
    if let Some(a) = out
        .iter()
        .zip(&flags)
        .find_map(|(a, f)| (*f == Some(true)).then_some(a))
    {
        let ident = engine.catalog().qualify(&v.name)?;
        return Err(FerroError::Analysis(format!(
            "[CREATE_PERMANENT_VIEW_WITHOUT_ALIAS] Not allowed to create the permanent view {} without explicitly assigning an alias for the expression \"{}\". SQLSTATE: 0A000",
            ident.quoted(),
            a.name
        )));
    }
    Ok(())
}

/// `plan` with its columns named `columns`, by position (a view's column list).
pub(super) fn rename_view_columns(
    engine: &QueryEngine,
    plan: Arc<LogicalPlan>,
    columns: &[String],
) -> Result<Arc<LogicalPlan>> {
    if columns.is_empty() {
        return Ok(plan);
    }
    let out = plan.output();
    if out.len() != columns.len() {
        return Err(FerroError::Analysis(format!(
            "[CREATE_VIEW_COLUMN_ARITY_MISMATCH] Cannot create view: the view names {} columns but its query has {}. SQLSTATE: 21S01",
            columns.len(),
            out.len()
        )));
    }
    let exprs = out
        .iter()
        .zip(columns)
        .map(|(a, n)| {
            (
                a.column(),
                engine.builder.attr(n, a.data_type.clone(), a.nullable),
            )
        })
        .collect();
    Ok(crate::builder::PlanBuilder::project_resolved(plan, exprs))
}

fn drop_table(engine: &QueryEngine, name: &[String], if_exists: bool, is_view: bool) -> Result<()> {
    let cat = engine.catalog();
    if let [v] = name {
        if cat.drop_temp_view(v)? {
            return Ok(());
        }
    }
    if let [db, v] = name {
        if db.eq_ignore_ascii_case(ferrospark_catalog::session::GLOBAL_TEMP_DATABASE) {
            if cat.drop_global_temp_view(v)? || if_exists {
                return Ok(());
            }
            return Err(engine.not_found(name));
        }
    }
    let ident = cat.qualify(name)?;
    cat.require_database(&ident.database)?;
    match cat.external().get_table(&ident)? {
        None if if_exists => Ok(()),
        None => Err(missing_table(engine, &ident)),
        Some(t) => {
            if is_view && t.table_type != TableType::View {
                return Err(FerroError::Analysis(format!(
                    "[WRONG_COMMAND_FOR_OBJECT_TYPE] The operation DROP VIEW requires a VIEW. But {} is a TABLE. Use DROP TABLE instead. SQLSTATE: 42809",
                    ident.quoted()
                )));
            }
            cat.drop_table(&ident, if_exists).map(|_| ())
        }
    }
}

fn rename(engine: &QueryEngine, from: &[String], to: &[String]) -> Result<()> {
    let cat = engine.catalog();
    let t = require_table(engine, from)?;
    let target = match to {
        [n] => normalize(n),
        [db, n] | [_, db, n] => {
            if normalize(db) != t.ident.database {
                return Err(FerroError::Analysis(format!(
                    "[CANNOT_RENAME_ACROSS_SCHEMA] Renaming a table across schemas is not allowed. SQLSTATE: 0AKD0; from {} to {}",
                    quote(&t.ident.database),
                    quote(db)
                )));
            }
            normalize(n)
        }
        _ => return Err(engine.not_found(to)),
    };
    validate(&target, "table")?;
    let moved = match (&t.table_type, &t.location) {
        (TableType::Managed, Some(old)) => {
            let db = cat.require_database(&t.ident.database)?;
            let new = managed_table_location(&db.location, &target)?;
            if new.exists() {
                return Err(FerroError::Analysis(format!(
                    "[LOCATION_ALREADY_EXISTS] Cannot name the managed table as {}, as its associated location '{}' already exists. Please pick a different table name, or remove the existing location first. SQLSTATE: 42710",
                    TableIdent::new(&t.ident.database, &target).quoted(),
                    location_uri(&new.to_string_lossy())
                )));
            }
            Some((PathBuf::from(old), new))
        }
        _ => None,
    };
    // The directory moves first: a failed catalog change moves it back.
    if let Some((old, new)) = &moved {
        if old.exists() {
            std::fs::rename(old, new).map_err(|e| FerroError::io(old, e))?;
        }
    }
    let result = cat.external().rename_table(
        &t.ident,
        &target,
        moved
            .as_ref()
            .map(|(_, n)| n.to_string_lossy().into_owned()),
    );
    if result.is_err() {
        if let Some((old, new)) = &moved {
            let _ = std::fs::rename(new, old);
        }
    }
    cat.invalidate(&t.ident);
    result
}
