//! The same checks over both external catalogs, and the SQLite catalog's own promises:
//! persistence, upgrades in place, several writers at once, hostile text stored verbatim.

use std::collections::BTreeMap;
use std::sync::Arc;

use arrow_schema::{DataType, Field, Schema};

use crate::external::ExternalCatalog;
use crate::memory::InMemoryCatalog;
use crate::model::*;
use crate::sqlite::SqliteCatalog;

fn db(name: &str) -> CatalogDatabase {
    CatalogDatabase {
        name: name.into(),
        description: format!("the {name}"),
        location: format!("/wh/{name}.db"),
        properties: BTreeMap::from([("k".to_string(), "v".to_string())]),
    }
}

fn table(dbn: &str, name: &str) -> CatalogTable {
    let mut comment = std::collections::HashMap::new();
    comment.insert("comment".to_string(), "the id".to_string());
    CatalogTable {
        ident: TableIdent::new(dbn, name),
        table_type: TableType::Managed,
        provider: Some("parquet".into()),
        location: Some(format!("/wh/{dbn}.db/{name}")),
        schema: Arc::new(Schema::new(vec![
            Field::new("id", DataType::Int32, true).with_metadata(comment),
            Field::new("price", DataType::Decimal128(10, 2), true),
            Field::new("p", DataType::Int32, true),
        ])),
        partition_columns: vec!["p".into()],
        properties: BTreeMap::from([("a".to_string(), "1".to_string())]),
        storage_options: BTreeMap::from([("compression".to_string(), "snappy".to_string())]),
        comment: Some("a table".into()),
        view_text: None,
        created_ms: 1_700_000_000_000,
        owner: "ann".into(),
        stats: None,
    }
}

fn part(v: Option<&str>) -> CatalogPartition {
    let spec = vec![("p".to_string(), v.map(str::to_string))];
    CatalogPartition {
        location: format!("/wh/s.db/t/{}", crate::names::partition_path(&spec)),
        spec,
        parameters: BTreeMap::new(),
        created_ms: 1_700_000_000_000,
    }
}

fn exercise(c: &dyn ExternalCatalog) {
    c.create_database(&db("s"), false).expect("create db");
    assert!(c.create_database(&db("s"), false).is_err());
    c.create_database(&db("s"), true).expect("if not exists");
    assert_eq!(c.get_database("s").expect("get"), Some(db("s")));
    let mut d = db("s");
    d.properties.insert("k2".into(), "v2".into());
    c.alter_database(&d).expect("alter");
    assert_eq!(c.get_database("s").expect("get"), Some(d));

    let t = table("s", "t");
    assert!(c.create_table(&t, false).expect("create"));
    assert!(!c.create_table(&t, true).expect("if not exists"));
    let e = c.create_table(&t, false).expect_err("exists").to_string();
    assert!(
        e.contains("TABLE_OR_VIEW_ALREADY_EXISTS") && e.contains("`spark_catalog`.`s`.`t`"),
        "{e}"
    );
    assert_eq!(c.get_table(&t.ident).expect("get"), Some(t.clone()));
    assert!(c.create_table(&table("nodb", "t"), false).is_err());

    c.create_partitions(&t.ident, &[part(Some("1")), part(None)], false)
        .expect("partitions");
    let e = c
        .create_partitions(&t.ident, &[part(Some("1"))], false)
        .expect_err("exists")
        .to_string();
    assert!(e.contains("PARTITIONS_ALREADY_EXIST"), "{e}");
    c.create_partitions(&t.ident, &[part(Some("1")), part(Some("2"))], true)
        .expect("ignore");
    let names: Vec<String> = c
        .list_partitions(&t.ident, None)
        .expect("list")
        .iter()
        .map(|p| crate::names::partition_path(&p.spec))
        .collect();
    assert_eq!(names, ["p=1", "p=2", "p=__HIVE_DEFAULT_PARTITION__"]);
    assert_eq!(
        c.list_partition_names(&t.ident, None).expect("names"),
        names
    );
    assert_eq!(
        c.list_partition_names(&t.ident, Some(&vec![("p".into(), Some("2".into()))]))
            .expect("names"),
        ["p=2"]
    );
    let only = c
        .list_partitions(&t.ident, Some(&vec![("p".into(), Some("2".into()))]))
        .expect("list");
    assert_eq!(only, vec![part(Some("2"))]);
    let gone = c
        .drop_partitions(&t.ident, &[vec![("p".into(), Some("2".into()))]], false)
        .expect("drop");
    assert_eq!(gone, vec![part(Some("2"))]);
    let e = c
        .drop_partitions(&t.ident, &[vec![("p".into(), Some("7".into()))]], false)
        .expect_err("missing")
        .to_string();
    assert!(e.contains("PARTITIONS_NOT_FOUND"), "{e}");

    let stats = TableStats {
        size_in_bytes: 3671,
        row_count: Some(4),
        columns: BTreeMap::from([(
            "id".to_string(),
            ColumnStat {
                distinct_count: Some(4),
                min: Some("1".into()),
                max: Some("4".into()),
                null_count: Some(0),
                avg_len: Some(4),
                max_len: Some(4),
            },
        )]),
    };
    let mut with_stats = t.clone();
    with_stats.stats = Some(stats);
    with_stats.properties.insert("b".into(), "2".into());
    c.alter_table(&with_stats).expect("alter");
    assert_eq!(
        c.get_table(&t.ident).expect("get"),
        Some(with_stats.clone())
    );
    assert_eq!(
        c.list_partitions(&t.ident, None).expect("list").len(),
        2,
        "kept"
    );
    c.commit_write(
        &t.ident,
        &[vec![("p".into(), Some("1".into()))]],
        &[part(Some("9"))],
        None,
        Some("job-9"),
    )
    .expect("commit");
    let after = c.get_table(&t.ident).expect("get").expect("there");
    assert_eq!(after.stats, None, "a write drops stale statistics");
    assert_eq!(
        c.last_write_job(&t.ident).expect("job").as_deref(),
        Some("job-9")
    );
    assert!(
        !after.properties.keys().any(|k| k.contains("job")),
        "the record of the last write is not a property"
    );
    c.alter_table(&after).expect("alter");
    assert_eq!(
        c.last_write_job(&t.ident).expect("job").as_deref(),
        Some("job-9"),
        "a redefinition keeps it"
    );
    let names: Vec<String> = c
        .list_partitions(&t.ident, None)
        .expect("list")
        .iter()
        .map(|p| crate::names::partition_path(&p.spec))
        .collect();
    assert_eq!(names, ["p=9", "p=__HIVE_DEFAULT_PARTITION__"]);

    let made = table("s", "made");
    c.create_table_with_partitions(&made, &[part(Some("1")), part(None)], false)
        .expect("with partitions");
    assert_eq!(c.list_partitions(&made.ident, None).expect("list").len(), 2);
    assert!(c.create_table_with_partitions(&made, &[], false).is_err());
    c.drop_table(&made.ident, false).expect("drop");

    c.rename_table(&t.ident, "t2", Some("/wh/s.db/t2".into()))
        .expect("rename");
    assert!(c.get_table(&t.ident).expect("get").is_none());
    let moved = c
        .get_table(&TableIdent::new("s", "t2"))
        .expect("get")
        .expect("there");
    assert_eq!(moved.location.as_deref(), Some("/wh/s.db/t2"));
    let locs: Vec<String> = c
        .list_partitions(&moved.ident, None)
        .expect("list")
        .into_iter()
        .map(|p| p.location)
        .collect();
    assert!(
        locs.iter().all(|l| l.starts_with("/wh/s.db/t2/p=")),
        "{locs:?}"
    );

    let f = CatalogFunction {
        database: "s".into(),
        name: "twice".into(),
        params: vec![("x".into(), "INT".into())],
        returns: Some("INT".into()),
        body: "x * 2".into(),
        created_ms: 1_700_000_000_000,
    };
    c.create_function(&f, false).expect("function");
    assert!(c.create_function(&f, false).is_err());
    assert_eq!(c.get_function("s", "twice").expect("get"), Some(f.clone()));
    assert_eq!(c.list_functions("s").expect("list"), ["twice"]);

    let e = c
        .drop_database("s", false, false)
        .expect_err("not empty")
        .to_string();
    assert!(e.contains("SCHEMA_NOT_EMPTY"), "{e}");
    let dropped = c.drop_database("s", false, true).expect("cascade");
    assert_eq!(dropped.len(), 1);
    assert!(c.get_database("s").expect("get").is_none());
    assert!(c.list_tables("s").is_err());
    c.drop_database("s", true, false).expect("if exists");
}

#[test]
fn the_in_memory_catalog_keeps_what_it_is_given() {
    exercise(&InMemoryCatalog::new());
}

#[test]
fn the_sqlite_catalog_keeps_what_it_is_given() {
    let dir = tempfile::tempdir().expect("tempdir");
    exercise(&SqliteCatalog::open(&dir.path().join("m.db")).expect("open"));
}

#[test]
fn a_metastore_outlives_its_process_and_is_upgraded_in_place() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("m.db");
    {
        // A file as version 1 wrote it: no column statistics tables yet.
        let old = SqliteCatalog::open_at_version(&path, 1).expect("open v1");
        assert_eq!(old.version().expect("version"), 1);
        old.create_database(&db("s"), false).expect("db");
    }
    let c = SqliteCatalog::open(&path).expect("open");
    assert_eq!(
        c.version().expect("version"),
        crate::sqlite::schema::CURRENT_VERSION
    );
    assert_eq!(c.get_database("s").expect("get"), Some(db("s")));
    let mut t = table("s", "t");
    t.stats = Some(TableStats {
        size_in_bytes: 1,
        row_count: Some(1),
        columns: BTreeMap::from([("id".to_string(), ColumnStat::default())]),
    });
    c.create_table(&t, false).expect("table with column stats");
    drop(c);
    let again = SqliteCatalog::open(&path).expect("reopen");
    assert_eq!(again.get_table(&t.ident).expect("get"), Some(t));
}

#[test]
fn a_metastore_from_a_newer_build_is_refused() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("m.db");
    drop(SqliteCatalog::open(&path).expect("open"));
    let conn = rusqlite::Connection::open(&path).expect("raw");
    conn.execute("UPDATE VERSION SET SCHEMA_VERSION = '99'", [])
        .expect("bump");
    drop(conn);
    let e = SqliteCatalog::open(&path).expect_err("newer").to_string();
    assert!(e.contains("schema version 99"), "{e}");
    std::fs::write(dir.path().join("junk.db"), b"not a database at all, no").expect("write");
    let e = SqliteCatalog::open(&dir.path().join("junk.db"))
        .expect_err("junk")
        .to_string();
    assert!(e.contains("junk.db"), "{e}");
}

#[test]
fn writers_on_several_connections_lose_nothing() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("m.db");
    SqliteCatalog::open(&path)
        .expect("open")
        .create_database(&db("s"), false)
        .expect("db");
    let handles: Vec<_> = (0..4)
        .map(|w| {
            let path = path.clone();
            std::thread::spawn(move || {
                let c = SqliteCatalog::open(&path).expect("open");
                for i in 0..40 {
                    c.create_table(&table("s", &format!("t{w}_{i}")), false)
                        .expect("create");
                    c.create_partitions(
                        &TableIdent::new("s", format!("t{w}_{i}")),
                        &[part(Some(&i.to_string()))],
                        false,
                    )
                    .expect("partition");
                }
            })
        })
        .collect();
    for h in handles {
        h.join().expect("writer");
    }
    let c = SqliteCatalog::open(&path).expect("open");
    assert_eq!(c.list_tables("s").expect("list").len(), 160);
    assert_eq!(
        c.list_partitions(&TableIdent::new("s", "t3_39"), None)
            .expect("parts")
            .len(),
        1
    );
}

#[test]
fn hostile_text_is_stored_verbatim() {
    let dir = tempfile::tempdir().expect("tempdir");
    let c = SqliteCatalog::open(&dir.path().join("m.db")).expect("open");
    let evil = "x'); DROP TABLE TBLS; --";
    let mut d = db("s");
    d.description = evil.into();
    d.properties.insert(evil.into(), evil.into());
    c.create_database(&d, false).expect("db");
    let mut t = table("s", "t");
    t.comment = Some(evil.into());
    t.properties.insert("q\"uote".into(), evil.into());
    t.storage_options.insert(evil.into(), "\u{0}nul".into());
    c.create_table(&t, false).expect("table");
    let p = part(Some(evil));
    c.create_partitions(&t.ident, std::slice::from_ref(&p), false)
        .expect("partition");
    assert_eq!(c.get_database("s").expect("get"), Some(d));
    assert_eq!(c.get_table(&t.ident).expect("get"), Some(t.clone()));
    assert_eq!(c.list_partitions(&t.ident, None).expect("list"), vec![p]);
    // The lookup of a name holding SQL finds nothing and breaks nothing.
    assert!(c
        .get_table(&TableIdent::new("s", "t' OR '1'='1"))
        .expect("get")
        .is_none());
    assert_eq!(c.list_tables("s").expect("list"), ["t"]);
}
