//! Catalog objects to and from the metastore's rows. Every value goes in through a bound
//! parameter: no text of a name, comment or property is ever spliced into SQL.

use std::collections::{BTreeMap, HashMap};

use arrow_schema::Schema;
use ferrospark_common::{FerroError, Result};
use rusqlite::{params, Connection, OptionalExtension};

use crate::model::{
    CatalogDatabase, CatalogFunction, CatalogPartition, CatalogTable, ColumnStat, TableIdent,
    TableStats, TableType,
};
use crate::names::{partition_path, DEFAULT_PARTITION_NAME};
use crate::types::catalog_string;

/// Table parameters ferrospark keeps for itself (never shown as properties).
const PROVIDER: &str = "spark.sql.sources.provider";
/// The exact Arrow schema as JSON (`COLUMNS_V2` holds Hive type names, which lose detail).
const SCHEMA: &str = "ferrospark_arrow_schema";
const TOTAL_SIZE: &str = "spark.sql.statistics.totalSize";
const NUM_ROWS: &str = "spark.sql.statistics.numRows";
const COMMENT: &str = "comment";
/// The job id of the last write the metastore recorded (what decides whether a writer that
/// died mid-commit is finished or undone).
const LAST_WRITE_JOB: &str = "ferrospark_last_write_job";

fn is_reserved(key: &str) -> bool {
    key.starts_with("spark.sql.") || key == SCHEMA || key == COMMENT || key == LAST_WRITE_JOB
}

pub(super) fn sql(e: rusqlite::Error) -> FerroError {
    FerroError::Metastore(format!("metastore: {e}"))
}

fn secs(ms: i64) -> i64 {
    ms / 1000
}

/// The row id of database `name`.
pub(super) fn db_id(c: &Connection, name: &str) -> Result<Option<i64>> {
    c.query_row("SELECT DB_ID FROM DBS WHERE NAME = ?1", [name], |r| {
        r.get(0)
    })
    .optional()
    .map_err(sql)
}

pub(super) fn insert_db(c: &Connection, db: &CatalogDatabase) -> Result<()> {
    c.execute(
        "INSERT INTO DBS (\"DESC\", DB_LOCATION_URI, NAME, OWNER_NAME, OWNER_TYPE, CREATE_TIME) VALUES (?1, ?2, ?3, ?4, 'USER', ?5)",
        params![db.description, db.location, db.name, owner(), secs(crate::model::now_ms())],
    )
    .map_err(sql)?;
    let id = c.last_insert_rowid();
    write_params(c, "DATABASE_PARAMS", "DB_ID", id, &db.properties)
}

pub(super) fn update_db(c: &Connection, id: i64, db: &CatalogDatabase) -> Result<()> {
    c.execute(
        "UPDATE DBS SET \"DESC\" = ?1, DB_LOCATION_URI = ?2 WHERE DB_ID = ?3",
        params![db.description, db.location, id],
    )
    .map_err(sql)?;
    c.execute("DELETE FROM DATABASE_PARAMS WHERE DB_ID = ?1", [id])
        .map_err(sql)?;
    write_params(c, "DATABASE_PARAMS", "DB_ID", id, &db.properties)
}

pub(super) fn load_db(c: &Connection, name: &str) -> Result<Option<CatalogDatabase>> {
    let row: Option<(i64, Option<String>, String)> = c
        .query_row(
            "SELECT DB_ID, \"DESC\", DB_LOCATION_URI FROM DBS WHERE NAME = ?1",
            [name],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
        )
        .optional()
        .map_err(sql)?;
    let Some((id, desc, location)) = row else {
        return Ok(None);
    };
    Ok(Some(CatalogDatabase {
        name: name.to_string(),
        description: desc.unwrap_or_default(),
        location,
        properties: read_params(c, "DATABASE_PARAMS", "DB_ID", id)?,
    }))
}

fn write_params(
    c: &Connection,
    table: &str,
    key: &str,
    id: i64,
    params: &BTreeMap<String, String>,
) -> Result<()> {
    // `table` and `key` are this module's constants, never user text.
    let mut st = c
        .prepare_cached(&format!(
            "INSERT OR REPLACE INTO {table} ({key}, PARAM_KEY, PARAM_VALUE) VALUES (?1, ?2, ?3)"
        ))
        .map_err(sql)?;
    for (k, v) in params {
        st.execute(params![id, k, v]).map_err(sql)?;
    }
    Ok(())
}

fn read_params(
    c: &Connection,
    table: &str,
    key: &str,
    id: i64,
) -> Result<BTreeMap<String, String>> {
    let mut st = c
        .prepare_cached(&format!(
            "SELECT PARAM_KEY, PARAM_VALUE FROM {table} WHERE {key} = ?1"
        ))
        .map_err(sql)?;
    let rows = st
        .query_map([id], |r| {
            Ok((r.get::<_, String>(0)?, r.get::<_, Option<String>>(1)?))
        })
        .map_err(sql)?;
    rows.map(|r| r.map(|(k, v)| (k, v.unwrap_or_default())).map_err(sql))
        .collect()
}

fn owner() -> String {
    std::env::var("USER").unwrap_or_default()
}

/// Hive's input format, output format and serde of a provider, so Hive tools can read it.
fn hive_formats(
    provider: Option<&str>,
) -> (
    Option<&'static str>,
    Option<&'static str>,
    Option<&'static str>,
) {
    match provider {
        Some("parquet") => (
            Some("org.apache.hadoop.hive.ql.io.parquet.MapredParquetInputFormat"),
            Some("org.apache.hadoop.hive.ql.io.parquet.MapredParquetOutputFormat"),
            Some("org.apache.hadoop.hive.ql.io.parquet.serde.ParquetHiveSerDe"),
        ),
        Some(_) => (
            Some("org.apache.hadoop.mapred.SequenceFileInputFormat"),
            Some("org.apache.hadoop.hive.ql.io.HiveSequenceFileOutputFormat"),
            Some("org.apache.hadoop.hive.serde2.lazy.LazySimpleSerDe"),
        ),
        None => (None, None, None),
    }
}

/// Writes a storage descriptor (serde, columns) and returns `(SD_ID, CD_ID)`.
fn insert_sd(
    c: &Connection,
    t: &CatalogTable,
    location: Option<&str>,
    cd: Option<i64>,
) -> Result<(i64, i64)> {
    let (input, output, serde) = hive_formats(t.provider.as_deref());
    c.execute("INSERT INTO SERDES (NAME, SLIB) VALUES (NULL, ?1)", [serde])
        .map_err(sql)?;
    let serde_id = c.last_insert_rowid();
    let cd_id = match cd {
        Some(cd) => cd,
        None => {
            c.execute("INSERT INTO CDS DEFAULT VALUES", [])
                .map_err(sql)?;
            let cd_id = c.last_insert_rowid();
            write_columns(c, cd_id, t)?;
            cd_id
        }
    };
    if cd.is_none() {
        write_params(c, "SERDE_PARAMS", "SERDE_ID", serde_id, &t.storage_options)?;
    }
    c.execute(
        "INSERT INTO SDS (CD_ID, INPUT_FORMAT, LOCATION, OUTPUT_FORMAT, SERDE_ID) VALUES (?1, ?2, ?3, ?4, ?5)",
        params![cd_id, input, location, output, serde_id],
    )
    .map_err(sql)?;
    Ok((c.last_insert_rowid(), cd_id))
}

fn write_columns(c: &Connection, cd_id: i64, t: &CatalogTable) -> Result<()> {
    let mut st = c
        .prepare_cached(
            "INSERT INTO COLUMNS_V2 (CD_ID, COMMENT, COLUMN_NAME, TYPE_NAME, INTEGER_IDX) VALUES (?1, ?2, ?3, ?4, ?5)",
        )
        .map_err(sql)?;
    for (i, f) in t.data_fields().iter().enumerate() {
        st.execute(params![
            cd_id,
            f.metadata().get(COMMENT),
            f.name().to_lowercase(),
            catalog_string(f.data_type()),
            i as i64
        ])
        .map_err(sql)?;
    }
    Ok(())
}

fn table_params(t: &CatalogTable) -> Result<BTreeMap<String, String>> {
    let mut p: BTreeMap<String, String> = t
        .properties
        .iter()
        .filter(|(k, _)| !is_reserved(k))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    if let Some(provider) = &t.provider {
        p.insert(PROVIDER.into(), provider.clone());
    }
    let schema = serde_json::to_string(t.schema.as_ref())
        .map_err(|e| FerroError::Internal(format!("a schema as JSON: {e}")))?;
    p.insert(SCHEMA.into(), schema);
    if let Some(c) = &t.comment {
        p.insert(COMMENT.into(), c.clone());
    }
    if let Some(s) = &t.stats {
        p.insert(TOTAL_SIZE.into(), s.size_in_bytes.to_string());
        if let Some(n) = s.row_count {
            p.insert(NUM_ROWS.into(), n.to_string());
        }
    }
    Ok(p)
}

fn write_table_details(c: &Connection, id: i64, t: &CatalogTable) -> Result<()> {
    write_params(c, "TABLE_PARAMS", "TBL_ID", id, &table_params(t)?)?;
    let mut st = c
        .prepare_cached(
            "INSERT INTO PARTITION_KEYS (TBL_ID, PKEY_COMMENT, PKEY_NAME, PKEY_TYPE, INTEGER_IDX) VALUES (?1, ?2, ?3, ?4, ?5)",
        )
        .map_err(sql)?;
    for (i, name) in t.partition_columns.iter().enumerate() {
        let f = t
            .schema
            .field_with_name(name)
            .map_err(|e| FerroError::Internal(format!("partition column {name}: {e}")))?;
        st.execute(params![
            id,
            f.metadata().get(COMMENT),
            name,
            catalog_string(f.data_type()),
            i as i64
        ])
        .map_err(sql)?;
    }
    if let Some(stats) = &t.stats {
        let mut st = c
            .prepare_cached(
                "INSERT INTO TAB_COL_STATS (DB_NAME, TABLE_NAME, COLUMN_NAME, COLUMN_TYPE, TBL_ID, LOW_VALUE, HIGH_VALUE, NUM_NULLS, NUM_DISTINCTS, AVG_COL_LEN, MAX_COL_LEN, LAST_ANALYZED) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)",
            )
            .map_err(sql)?;
        for (col, s) in &stats.columns {
            let ty = t
                .schema
                .field_with_name(col)
                .map(|f| catalog_string(f.data_type()))
                .unwrap_or_default();
            st.execute(params![
                t.ident.database,
                t.ident.table,
                col,
                ty,
                id,
                s.min,
                s.max,
                s.null_count.map(|v| v as i64),
                s.distinct_count.map(|v| v as i64),
                s.avg_len.map(|v| v as i64),
                s.max_len.map(|v| v as i64),
                secs(crate::model::now_ms())
            ])
            .map_err(sql)?;
        }
    }
    Ok(())
}

pub(super) fn insert_table(c: &Connection, db: i64, t: &CatalogTable) -> Result<i64> {
    let (sd, _) = insert_sd(c, t, t.location.as_deref(), None)?;
    c.execute(
        "INSERT INTO TBLS (CREATE_TIME, DB_ID, OWNER, SD_ID, TBL_NAME, TBL_TYPE, VIEW_EXPANDED_TEXT, VIEW_ORIGINAL_TEXT) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?7)",
        params![
            secs(t.created_ms),
            db,
            t.owner,
            sd,
            t.ident.table,
            t.table_type.hive_name(),
            t.view_text
        ],
    )
    .map_err(sql)?;
    let id = c.last_insert_rowid();
    write_table_details(c, id, t)?;
    Ok(id)
}

/// `(TBL_ID, SD_ID)` of a table.
pub(super) fn table_id(c: &Connection, ident: &TableIdent) -> Result<Option<(i64, i64)>> {
    c.query_row(
        "SELECT T.TBL_ID, T.SD_ID FROM TBLS T JOIN DBS D ON D.DB_ID = T.DB_ID WHERE D.NAME = ?1 AND T.TBL_NAME = ?2",
        params![ident.database, ident.table],
        |r| Ok((r.get(0)?, r.get(1)?)),
    )
    .optional()
    .map_err(sql)
}

/// Replaces a table's metadata in place (its partitions stay, pointing at it).
pub(super) fn update_table(c: &Connection, id: i64, sd: i64, t: &CatalogTable) -> Result<()> {
    c.execute(
        "UPDATE TBLS SET TBL_TYPE = ?1, VIEW_EXPANDED_TEXT = ?2, VIEW_ORIGINAL_TEXT = ?2 WHERE TBL_ID = ?3",
        params![t.table_type.hive_name(), t.view_text, id],
    )
    .map_err(sql)?;
    let (cd, serde): (i64, i64) = c
        .query_row(
            "SELECT CD_ID, SERDE_ID FROM SDS WHERE SD_ID = ?1",
            [sd],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .map_err(sql)?;
    c.execute(
        "UPDATE SDS SET LOCATION = ?1 WHERE SD_ID = ?2",
        params![t.location, sd],
    )
    .map_err(sql)?;
    c.execute("DELETE FROM COLUMNS_V2 WHERE CD_ID = ?1", [cd])
        .map_err(sql)?;
    write_columns(c, cd, t)?;
    c.execute("DELETE FROM SERDE_PARAMS WHERE SERDE_ID = ?1", [serde])
        .map_err(sql)?;
    write_params(c, "SERDE_PARAMS", "SERDE_ID", serde, &t.storage_options)?;
    // A table's redefinition keeps the record of its last write.
    c.execute(
        "DELETE FROM TABLE_PARAMS WHERE TBL_ID = ?1 AND PARAM_KEY <> ?2",
        params![id, LAST_WRITE_JOB],
    )
    .map_err(sql)?;
    for table in ["PARTITION_KEYS", "TAB_COL_STATS"] {
        c.execute(&format!("DELETE FROM {table} WHERE TBL_ID = ?1"), [id])
            .map_err(sql)?;
    }
    write_table_details(c, id, t)
}

/// Deletes a table with its partitions, storage descriptors, columns and serdes.
pub(super) fn delete_table(c: &Connection, id: i64) -> Result<()> {
    let sds: Vec<i64> = {
        let mut st = c
            .prepare_cached(
                "SELECT SD_ID FROM TBLS WHERE TBL_ID = ?1 UNION SELECT SD_ID FROM PARTITIONS WHERE TBL_ID = ?1",
            )
            .map_err(sql)?;
        let rows = st.query_map([id], |r| r.get(0)).map_err(sql)?;
        rows.collect::<rusqlite::Result<_>>().map_err(sql)?
    };
    c.execute("DELETE FROM TBLS WHERE TBL_ID = ?1", [id])
        .map_err(sql)?;
    delete_sds(c, &sds)
}

fn delete_sds(c: &Connection, sds: &[i64]) -> Result<()> {
    let mut cds = Vec::new();
    for sd in sds {
        let row: Option<(Option<i64>, Option<i64>)> = c
            .query_row(
                "SELECT CD_ID, SERDE_ID FROM SDS WHERE SD_ID = ?1",
                [sd],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .optional()
            .map_err(sql)?;
        let Some((cd, serde)) = row else { continue };
        c.execute("DELETE FROM SDS WHERE SD_ID = ?1", [sd])
            .map_err(sql)?;
        if let Some(serde) = serde {
            c.execute("DELETE FROM SERDES WHERE SERDE_ID = ?1", [serde])
                .map_err(sql)?;
        }
        cds.extend(cd);
    }
    cds.sort_unstable();
    cds.dedup();
    for cd in cds {
        let used: i64 = c
            .query_row("SELECT count(*) FROM SDS WHERE CD_ID = ?1", [cd], |r| {
                r.get(0)
            })
            .map_err(sql)?;
        if used == 0 {
            c.execute("DELETE FROM CDS WHERE CD_ID = ?1", [cd])
                .map_err(sql)?;
        }
    }
    Ok(())
}

pub(super) fn load_table(c: &Connection, ident: &TableIdent) -> Result<Option<CatalogTable>> {
    type Row = (
        i64,
        i64,
        String,
        Option<String>,
        Option<String>,
        Option<String>,
    );
    let row: Option<Row> = c
        .query_row(
            "SELECT T.TBL_ID, T.CREATE_TIME, T.TBL_TYPE, T.OWNER, T.VIEW_ORIGINAL_TEXT, S.LOCATION FROM TBLS T JOIN DBS D ON D.DB_ID = T.DB_ID LEFT JOIN SDS S ON S.SD_ID = T.SD_ID WHERE D.NAME = ?1 AND T.TBL_NAME = ?2",
            params![ident.database, ident.table],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?, r.get(5)?)),
        )
        .optional()
        .map_err(sql)?;
    let Some((id, created, ty, owner, view_text, location)) = row else {
        return Ok(None);
    };
    let table_type = TableType::from_hive(&ty)
        .ok_or_else(|| FerroError::Metastore(format!("table {ident} has an unknown type {ty}")))?;
    let mut params = read_params(c, "TABLE_PARAMS", "TBL_ID", id)?;
    let schema_text = params.remove(SCHEMA).ok_or_else(|| {
        FerroError::Metastore(format!(
            "table {ident} has no `{SCHEMA}` parameter: it was not written by ferrospark; recreate it with CREATE TABLE"
        ))
    })?;
    let schema: Schema = serde_json::from_str(&schema_text).map_err(|e| {
        FerroError::Metastore(format!("table {ident}: its schema does not parse: {e}"))
    })?;
    let partition_columns: Vec<String> = {
        let mut st = c
            .prepare_cached(
                "SELECT PKEY_NAME FROM PARTITION_KEYS WHERE TBL_ID = ?1 ORDER BY INTEGER_IDX",
            )
            .map_err(sql)?;
        let rows = st.query_map([id], |r| r.get(0)).map_err(sql)?;
        rows.collect::<rusqlite::Result<_>>().map_err(sql)?
    };
    let storage_options = {
        let serde: Option<i64> = c
            .query_row(
                "SELECT S.SERDE_ID FROM SDS S JOIN TBLS T ON T.SD_ID = S.SD_ID WHERE T.TBL_ID = ?1",
                [id],
                |r| r.get(0),
            )
            .optional()
            .map_err(sql)?
            .flatten();
        match serde {
            Some(s) => read_params(c, "SERDE_PARAMS", "SERDE_ID", s)?,
            None => BTreeMap::new(),
        }
    };
    let provider = params.remove(PROVIDER);
    let comment = params.remove(COMMENT);
    let size = params.remove(TOTAL_SIZE);
    let rows = params.remove(NUM_ROWS);
    let mut stats = size.map(|s| TableStats {
        size_in_bytes: s.parse().unwrap_or(0),
        row_count: rows.and_then(|r| r.parse().ok()),
        columns: BTreeMap::new(),
    });
    if let Some(stats) = stats.as_mut() {
        let mut st = c
            .prepare_cached(
                "SELECT COLUMN_NAME, LOW_VALUE, HIGH_VALUE, NUM_NULLS, NUM_DISTINCTS, AVG_COL_LEN, MAX_COL_LEN FROM TAB_COL_STATS WHERE TBL_ID = ?1",
            )
            .map_err(sql)?;
        let rows = st
            .query_map([id], |r| {
                let u = |i: usize| r.get::<_, Option<i64>>(i).map(|v| v.map(|v| v as u64));
                Ok((
                    r.get::<_, String>(0)?,
                    ColumnStat {
                        min: r.get(1)?,
                        max: r.get(2)?,
                        null_count: u(3)?,
                        distinct_count: u(4)?,
                        avg_len: u(5)?,
                        max_len: u(6)?,
                    },
                ))
            })
            .map_err(sql)?;
        for r in rows {
            let (k, v) = r.map_err(sql)?;
            stats.columns.insert(k, v);
        }
    }
    params.retain(|k, _| !is_reserved(k));
    Ok(Some(CatalogTable {
        ident: ident.clone(),
        table_type,
        provider,
        location,
        schema: std::sync::Arc::new(schema),
        partition_columns,
        properties: params,
        storage_options,
        comment,
        view_text,
        created_ms: created * 1000,
        owner: owner.unwrap_or_default(),
        stats,
    }))
}

pub(super) fn names(c: &Connection, query: &str, key: &dyn rusqlite::ToSql) -> Result<Vec<String>> {
    let mut st = c.prepare_cached(query).map_err(sql)?;
    let rows = st.query_map([key], |r| r.get(0)).map_err(sql)?;
    rows.collect::<rusqlite::Result<_>>().map_err(sql)
}

/// `PART_ID` of a partition.
pub(super) fn partition_id(c: &Connection, table: i64, name: &str) -> Result<Option<i64>> {
    c.prepare_cached("SELECT PART_ID FROM PARTITIONS WHERE TBL_ID = ?1 AND PART_NAME = ?2")
        .and_then(|mut st| st.query_row(params![table, name], |r| r.get(0)).optional())
        .map_err(sql)
}

/// What a table's partitions share of its storage descriptor: columns and formats.
pub(super) struct PartitionStorage {
    cd: i64,
    input: Option<String>,
    output: Option<String>,
}

pub(super) fn partition_storage(c: &Connection, table_sd: i64) -> Result<PartitionStorage> {
    c.query_row(
        "SELECT CD_ID, INPUT_FORMAT, OUTPUT_FORMAT FROM SDS WHERE SD_ID = ?1",
        [table_sd],
        |r| {
            Ok(PartitionStorage {
                cd: r.get(0)?,
                input: r.get(1)?,
                output: r.get(2)?,
            })
        },
    )
    .map_err(sql)
}

pub(super) fn insert_partition(
    c: &Connection,
    table: i64,
    storage: &PartitionStorage,
    p: &CatalogPartition,
) -> Result<()> {
    let (cd, input, output) = (storage.cd, &storage.input, &storage.output);
    c.prepare_cached(
        "INSERT INTO SDS (CD_ID, INPUT_FORMAT, LOCATION, OUTPUT_FORMAT) VALUES (?1, ?2, ?3, ?4)",
    )
    .and_then(|mut st| st.execute(params![cd, input, p.location, output]))
    .map_err(sql)?;
    let sd = c.last_insert_rowid();
    c.prepare_cached(
        "INSERT INTO PARTITIONS (CREATE_TIME, PART_NAME, SD_ID, TBL_ID) VALUES (?1, ?2, ?3, ?4)",
    )
    .and_then(|mut st| {
        st.execute(params![
            secs(p.created_ms),
            partition_path(&p.spec),
            sd,
            table
        ])
    })
    .map_err(sql)?;
    let part = c.last_insert_rowid();
    let mut st = c
        .prepare_cached(
            "INSERT INTO PARTITION_KEY_VALS (PART_ID, PART_KEY_VAL, INTEGER_IDX) VALUES (?1, ?2, ?3)",
        )
        .map_err(sql)?;
    for (i, (_, v)) in p.spec.iter().enumerate() {
        st.execute(params![
            part,
            v.as_deref().unwrap_or(DEFAULT_PARTITION_NAME),
            i as i64
        ])
        .map_err(sql)?;
    }
    write_params(c, "PARTITION_PARAMS", "PART_ID", part, &p.parameters)
}

pub(super) fn delete_partition(c: &Connection, part: i64) -> Result<()> {
    let sd: Option<i64> = c
        .query_row(
            "SELECT SD_ID FROM PARTITIONS WHERE PART_ID = ?1",
            [part],
            |r| r.get(0),
        )
        .map_err(sql)?;
    c.execute("DELETE FROM PARTITIONS WHERE PART_ID = ?1", [part])
        .map_err(sql)?;
    if let Some(sd) = sd {
        c.execute("DELETE FROM SDS WHERE SD_ID = ?1", [sd])
            .map_err(sql)?;
    }
    Ok(())
}

/// Table `id`'s partitions as (values, directory), by path: one query, the values read
/// back from each partition's name (the path its values make).
pub(super) fn partition_locations(
    c: &Connection,
    id: i64,
) -> Result<Vec<(crate::model::PartitionSpec, String)>> {
    let mut st = c
        .prepare_cached(
            "SELECT P.PART_NAME, S.LOCATION FROM PARTITIONS P LEFT JOIN SDS S ON S.SD_ID = P.SD_ID WHERE P.TBL_ID = ?1",
        )
        .map_err(sql)?;
    let rows = st
        .query_map([id], |r| {
            Ok((r.get::<_, String>(0)?, r.get::<_, Option<String>>(1)?))
        })
        .map_err(sql)?;
    let mut out = Vec::new();
    for r in rows {
        let (name, location) = r.map_err(sql)?;
        let spec = crate::names::parse_partition_path(&name).ok_or_else(|| {
            FerroError::Metastore(format!(
                "partition name `{name}` of table id {id} is not a partition path"
            ))
        })?;
        out.push((name, spec, location.unwrap_or_default()));
    }
    // Sorted here rather than by SQLite's ORDER BY (no index on the names): the two
    // measured alike, within run-to-run noise, on a table's first query.
    out.sort_by(|a, b| a.0.cmp(&b.0));
    Ok(out.into_iter().map(|(_, s, l)| (s, l)).collect())
}

/// Every partition of table `id` with keys `keys`, ordered by name.
pub(super) fn load_partitions(
    c: &Connection,
    id: i64,
    keys: &[String],
) -> Result<Vec<CatalogPartition>> {
    let mut values: HashMap<i64, Vec<(i64, String)>> = HashMap::new();
    {
        let mut st = c
            .prepare_cached(
                "SELECT V.PART_ID, V.INTEGER_IDX, V.PART_KEY_VAL FROM PARTITION_KEY_VALS V JOIN PARTITIONS P ON P.PART_ID = V.PART_ID WHERE P.TBL_ID = ?1",
            )
            .map_err(sql)?;
        let rows = st
            .query_map([id], |r| {
                Ok((
                    r.get::<_, i64>(0)?,
                    r.get::<_, i64>(1)?,
                    r.get::<_, String>(2)?,
                ))
            })
            .map_err(sql)?;
        for r in rows {
            let (p, i, v) = r.map_err(sql)?;
            values.entry(p).or_default().push((i, v));
        }
    }
    let mut params: HashMap<i64, BTreeMap<String, String>> = HashMap::new();
    {
        let mut st = c
            .prepare_cached(
                "SELECT Q.PART_ID, Q.PARAM_KEY, Q.PARAM_VALUE FROM PARTITION_PARAMS Q JOIN PARTITIONS P ON P.PART_ID = Q.PART_ID WHERE P.TBL_ID = ?1",
            )
            .map_err(sql)?;
        let rows = st
            .query_map([id], |r| {
                Ok((
                    r.get::<_, i64>(0)?,
                    r.get::<_, String>(1)?,
                    r.get::<_, Option<String>>(2)?,
                ))
            })
            .map_err(sql)?;
        for r in rows {
            let (p, k, v) = r.map_err(sql)?;
            params
                .entry(p)
                .or_default()
                .insert(k, v.unwrap_or_default());
        }
    }
    let mut st = c
        .prepare_cached(
            "SELECT P.PART_ID, P.CREATE_TIME, S.LOCATION FROM PARTITIONS P LEFT JOIN SDS S ON S.SD_ID = P.SD_ID WHERE P.TBL_ID = ?1 ORDER BY P.PART_NAME",
        )
        .map_err(sql)?;
    let rows = st
        .query_map([id], |r| {
            Ok((
                r.get::<_, i64>(0)?,
                r.get::<_, i64>(1)?,
                r.get::<_, Option<String>>(2)?,
            ))
        })
        .map_err(sql)?;
    let mut out = Vec::new();
    for r in rows {
        let (p, created, location) = r.map_err(sql)?;
        let mut vals = values.remove(&p).unwrap_or_default();
        vals.sort_by_key(|(i, _)| *i);
        let spec = keys
            .iter()
            .zip(vals)
            .map(|(k, (_, v))| (k.clone(), (v != DEFAULT_PARTITION_NAME).then_some(v)))
            .collect();
        out.push(CatalogPartition {
            spec,
            location: location.unwrap_or_default(),
            parameters: params.remove(&p).unwrap_or_default(),
            created_ms: created * 1000,
        });
    }
    Ok(out)
}

/// Writes table `id`'s statistics parameters (and removes them for `None`).
pub(super) fn set_stats(c: &Connection, id: i64, stats: Option<&TableStats>) -> Result<()> {
    c.execute(
        "DELETE FROM TABLE_PARAMS WHERE TBL_ID = ?1 AND PARAM_KEY IN (?2, ?3)",
        params![id, TOTAL_SIZE, NUM_ROWS],
    )
    .map_err(sql)?;
    c.execute("DELETE FROM TAB_COL_STATS WHERE TBL_ID = ?1", [id])
        .map_err(sql)?;
    if let Some(s) = stats {
        let mut p = BTreeMap::new();
        p.insert(TOTAL_SIZE.to_string(), s.size_in_bytes.to_string());
        if let Some(n) = s.row_count {
            p.insert(NUM_ROWS.to_string(), n.to_string());
        }
        write_params(c, "TABLE_PARAMS", "TBL_ID", id, &p)?;
    }
    Ok(())
}

/// Records `job` as table `id`'s last write.
pub(super) fn set_last_write_job(c: &Connection, id: i64, job: &str) -> Result<()> {
    let p = BTreeMap::from([(LAST_WRITE_JOB.to_string(), job.to_string())]);
    write_params(c, "TABLE_PARAMS", "TBL_ID", id, &p)
}

/// Table `id`'s last recorded write.
pub(super) fn last_write_job(c: &Connection, id: i64) -> Result<Option<String>> {
    c.query_row(
        "SELECT PARAM_VALUE FROM TABLE_PARAMS WHERE TBL_ID = ?1 AND PARAM_KEY = ?2",
        params![id, LAST_WRITE_JOB],
        |r| r.get(0),
    )
    .optional()
    .map_err(sql)
}

pub(super) fn insert_function(c: &Connection, db: i64, f: &CatalogFunction) -> Result<()> {
    let params_text = serde_json::to_string(&f.params)
        .map_err(|e| FerroError::Internal(format!("function parameters as JSON: {e}")))?;
    c.execute(
        "INSERT INTO FUNCS (CLASS_NAME, CREATE_TIME, DB_ID, FUNC_NAME, FUNC_TYPE, OWNER_NAME, OWNER_TYPE, FUNC_PARAMS, FUNC_RETURNS) VALUES (?1, ?2, ?3, ?4, 2, ?5, 'USER', ?6, ?7)",
        params![f.body, secs(f.created_ms), db, f.name, owner(), params_text, f.returns],
    )
    .map_err(sql)?;
    Ok(())
}

pub(super) fn load_function(
    c: &Connection,
    database: &str,
    name: &str,
) -> Result<Option<CatalogFunction>> {
    let row: Option<(String, i64, Option<String>, Option<String>)> = c
        .query_row(
            "SELECT F.CLASS_NAME, F.CREATE_TIME, F.FUNC_PARAMS, F.FUNC_RETURNS FROM FUNCS F JOIN DBS D ON D.DB_ID = F.DB_ID WHERE D.NAME = ?1 AND F.FUNC_NAME = ?2",
            params![database, name],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)),
        )
        .optional()
        .map_err(sql)?;
    let Some((body, created, params_text, returns)) = row else {
        return Ok(None);
    };
    let params = match params_text {
        Some(t) => serde_json::from_str(&t)
            .map_err(|e| FerroError::Metastore(format!("function {database}.{name}: {e}")))?,
        None => Vec::new(),
    };
    Ok(Some(CatalogFunction {
        database: database.to_string(),
        name: name.to_string(),
        params,
        returns,
        body,
        created_ms: created * 1000,
    }))
}
