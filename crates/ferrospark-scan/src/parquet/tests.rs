//! Reader tests: answers equal a plain filter over the whole table at every batch size and
//! with pruning on or off; metrics prove each pruning level fires; bad files are errors.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use arrow_array::{
    Array, ArrayRef, Date32Array, Decimal128Array, Float64Array, Int32Array, Int64Array,
    RecordBatch, StringArray,
};
use arrow_schema::{DataType, Field, Schema};
use ferrospark_common::FerroError;
use ferrospark_expr::{bind_predicate, filter_batch, parse_expr, BindContext};
use parquet::arrow::ArrowWriter;
use parquet::file::properties::{EnabledStatistics, WriterProperties};

use super::{ParquetScan, ParquetScanOptions};

const ROWS: usize = 10_000;

fn table() -> RecordBatch {
    let id: Vec<i64> = (0..ROWS as i64).collect();
    let k: Vec<Option<i32>> = (0..ROWS)
        .map(|i| {
            if i % 97 == 0 {
                None
            } else {
                Some((i / 100) as i32)
            }
        })
        .collect();
    let f: Vec<Option<f64>> = (0..ROWS)
        .map(|i| match i % 50 {
            0 => Some(f64::NAN),
            1 => Some(-0.0),
            2 => None,
            _ => Some(i as f64 / 10.0),
        })
        .collect();
    let colors = ["red", "green", "blue", "ünïcode", ""];
    let s: Vec<Option<&str>> = (0..ROWS)
        .map(|i| {
            if i % 13 == 0 {
                None
            } else {
                Some(colors[i % colors.len()])
            }
        })
        .collect();
    let d: Vec<i32> = (0..ROWS).map(|i| 9000 + (i as i32 % 400)).collect();
    let q: Vec<i128> = (0..ROWS).map(|i| (i as i128 % 5000) * 7).collect();
    let schema = Schema::new(vec![
        Field::new("id", DataType::Int64, false),
        Field::new("k", DataType::Int32, true),
        Field::new("f", DataType::Float64, true),
        Field::new("s", DataType::Utf8, true),
        Field::new("d", DataType::Date32, false),
        Field::new("q", DataType::Decimal128(15, 2), false),
    ]);
    let cols: Vec<ArrayRef> = vec![
        Arc::new(Int64Array::from(id)),
        Arc::new(Int32Array::from(k)),
        Arc::new(Float64Array::from(f)),
        Arc::new(StringArray::from(s)),
        Arc::new(Date32Array::from(d)),
        Arc::new(
            Decimal128Array::from(q)
                .with_precision_and_scale(15, 2)
                .expect("valid"),
        ),
    ];
    RecordBatch::try_new(Arc::new(schema), cols).expect("valid")
}

fn write(path: &Path, batch: &RecordBatch, props: WriterProperties) {
    let file = std::fs::File::create(path).expect("create");
    let mut w = ArrowWriter::try_new(file, batch.schema(), Some(props)).expect("writer");
    w.write(batch).expect("write");
    w.close().expect("close");
}

fn props() -> WriterProperties {
    WriterProperties::builder()
        .set_max_row_group_row_count(Some(1000))
        .set_data_page_row_count_limit(100)
        .set_write_batch_size(100)
        .set_statistics_enabled(EnabledStatistics::Page)
        .set_column_bloom_filter_enabled("id".into(), true)
        .build()
}

fn fixture() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().expect("tempdir");
    let p = dir.path().join("t.parquet");
    write(&p, &table(), props());
    (dir, p)
}

/// `columns` written as one Parquet file (with [`props`]) in a new temporary directory.
fn write_columns(columns: Vec<(&str, ArrayRef)>) -> (tempfile::TempDir, PathBuf) {
    let batch = RecordBatch::try_from_iter(columns).expect("batch");
    let dir = tempfile::tempdir().expect("tempdir");
    let p = dir.path().join("t.parquet");
    write(&p, &batch, props());
    (dir, p)
}

fn read(path: &Path, filter: Option<&str>, opts: ParquetScanOptions) -> (RecordBatch, ParquetScan) {
    let mut opts = opts;
    opts.filter = filter.map(|f| parse_expr(f).expect("parses"));
    let scan = ParquetScan::try_new(&[path.to_path_buf()], opts).expect("plans");
    let batches: Vec<RecordBatch> = scan.execute().collect::<Result<_, _>>().expect("reads");
    let out = arrow_select::concat::concat_batches(&scan.schema(), &batches).expect("concat");
    (out, scan)
}

fn expected(filter: &str) -> RecordBatch {
    let t = table();
    let schema = t.schema();
    let p = bind_predicate(
        &parse_expr(filter).expect("parses"),
        &BindContext::new(&schema),
    )
    .expect("binds");
    filter_batch(&t, &p).expect("filters")
}

const FILTERS: &[&str] = &[
    "id < 1500",
    "id BETWEEN 4321 AND 4330",
    "id = 777 OR id = 9999",
    "id IN (5, 500, 5000, 50000)",
    "k = 42",
    "k IS NULL",
    "k IS NOT NULL AND k > 95",
    "NOT (k < 98)",
    "f > 900",
    "f = CAST('NaN' AS DOUBLE)",
    "f = 0.0",
    "f < 1",
    "s = 'ünïcode'",
    "s LIKE 'gr%'",
    "s = ''",
    "s IS NULL AND id > 9000",
    "d BETWEEN DATE '1994-08-01' AND DATE '1994-08-10' AND q < 24",
    "q = 70.00",
    "id + 1 = 10",
    "k NOT IN (1, NULL)",
    "s = 'absent'",
];

#[test]
fn every_filter_matches_a_plain_filter_at_every_batch_size() {
    let (_dir, p) = fixture();
    for f in FILTERS {
        let want = expected(f);
        for batch_size in [1, 7, 8192] {
            for pushdown in [true, false] {
                for threads in [1, 2] {
                    let opts = ParquetScanOptions {
                        batch_size,
                        filter_pushdown: pushdown,
                        threads,
                        ..Default::default()
                    };
                    if batch_size == 1 && !(pushdown && threads == 2) {
                        continue;
                    }
                    let (got, _) = read(&p, Some(f), opts);
                    assert_eq!(
                        got, want,
                        "filter {f}, batch {batch_size}, pushdown {pushdown}, threads {threads}"
                    );
                }
            }
        }
    }
}

#[test]
fn sorted_keys_prune_row_groups_and_pages() {
    let (_dir, p) = fixture();
    let (got, scan) = read(
        &p,
        Some("id BETWEEN 4321 AND 4330"),
        ParquetScanOptions::default(),
    );
    assert_eq!(got.num_rows(), 10);
    let m = scan.metrics();
    assert_eq!(m.get("row_groups_total"), 10);
    assert_eq!(m.get("row_groups_read"), 1, "{}", scan.explain());
    assert!(m.get("pages_pruned") > 0, "{}", scan.explain());
    assert_eq!(m.get("rows_read"), 100, "one page of 100 rows is decoded");
    assert_eq!(m.get("rows_output"), 10);
}

#[test]
fn pushdown_off_reads_everything() {
    let (_dir, p) = fixture();
    let opts = ParquetScanOptions {
        filter_pushdown: false,
        ..Default::default()
    };
    let (got, scan) = read(&p, Some("id < 10"), opts);
    assert_eq!(got.num_rows(), 10);
    assert_eq!(scan.metrics().get("row_groups_read"), 10);
}

#[test]
fn nan_rows_survive_upper_bound_filters() {
    let (_dir, p) = fixture();
    let (got, _) = read(&p, Some("f > 999"), ParquetScanOptions::default());
    // NaN is above every number in Spark: the 200 NaN rows plus 999.1..999.9.
    assert_eq!(got.num_rows(), expected("f > 999").num_rows());
    assert!(got.num_rows() >= 200);
}

#[test]
fn bloom_filters_prune_absent_values_inside_min_max() {
    let dir = tempfile::tempdir().expect("tempdir");
    let p = dir.path().join("b.parquet");
    // Even ids only: an odd id is inside every row group's range but in no bloom filter.
    let t = table();
    let even: Vec<i64> = (0..ROWS as i64).map(|i| i * 2).collect();
    let mut cols = t.columns().to_vec();
    cols[0] = Arc::new(Int64Array::from(even));
    let t = RecordBatch::try_new(t.schema(), cols).expect("valid");
    write(&p, &t, props());
    let (got, scan) = read(&p, Some("id = 4321"), ParquetScanOptions::default());
    assert_eq!(got.num_rows(), 0);
    assert_eq!(
        scan.metrics().get("row_groups_pruned_bloom_filter"),
        1,
        "{}",
        scan.explain()
    );
    let (got, _) = read(
        &p,
        Some("id IN (4320, 4321)"),
        ParquetScanOptions::default(),
    );
    assert_eq!(got.num_rows(), 1);
}

#[test]
fn dictionaries_prune_values_between_min_and_max() {
    let (_dir, p) = fixture();
    // "green" < "orange" < "red": min/max cannot rule it out, the dictionary can.
    let (got, scan) = read(&p, Some("s = 'orange'"), ParquetScanOptions::default());
    assert_eq!(got.num_rows(), 0);
    assert_eq!(
        scan.metrics().get("row_groups_pruned_dictionary"),
        10,
        "{}",
        scan.explain()
    );
    let opts = ParquetScanOptions {
        dictionary_filter: false,
        ..Default::default()
    };
    let (_, scan) = read(&p, Some("s = 'orange'"), opts);
    assert_eq!(scan.metrics().get("row_groups_pruned_dictionary"), 0);
}

#[test]
fn nearly_unique_dictionaries_are_read_for_point_lookups_only() {
    let dir = tempfile::tempdir().expect("tempdir");
    let p = dir.path().join("u.parquet");
    let u: Vec<String> = (0..ROWS)
        .map(|i| format!("{:06}-{}", i * 2, "x".repeat(i % 7)))
        .collect();
    let schema = Arc::new(Schema::new(vec![Field::new("u", DataType::Utf8, false)]));
    let batch = RecordBatch::try_new(schema, vec![Arc::new(StringArray::from(u))]).expect("valid");
    write(&p, &batch, props());
    // An absent value between its row group's min and max: only the dictionary rules that
    // row group out (the statistics rule out the nine others).
    let (got, scan) = read(&p, Some("u = '000101-'"), ParquetScanOptions::default());
    assert_eq!(got.num_rows(), 0);
    assert_eq!(scan.metrics().get("row_groups_pruned_dictionary"), 1);
    // A function of a nearly unique value: its dictionary is not worth reading.
    let (got, scan) = read(
        &p,
        Some("substring(u, 1, 6) = '000101'"),
        ParquetScanOptions::default(),
    );
    assert_eq!(got.num_rows(), 0);
    assert_eq!(scan.metrics().get("row_groups_pruned_dictionary"), 0);
    let (got, _) = read(
        &p,
        Some("substring(u, 1, 6) IN ('000100', '009998')"),
        ParquetScanOptions::default(),
    );
    assert_eq!(got.num_rows(), 2);
}

#[test]
fn a_filter_on_exactly_the_output_columns_decodes_them_once() {
    let (_dir, p) = fixture();
    for filter in [
        "k IN (3, 40, 41, 99)",
        "k IS NOT NULL AND k > 95",
        "k IS NOT NULL",
    ] {
        let opts = ParquetScanOptions {
            columns: Some(vec!["k".into()]),
            dictionary_codes: false,
            ..Default::default()
        };
        let (got, scan) = read(&p, Some(filter), opts);
        let want = expected(filter);
        assert_eq!(got.column(0), want.column(1), "{filter}");
        assert!(
            scan.metrics().get("row_groups_filtered_after_decode") > 0,
            "{}",
            scan.explain()
        );
        // With another column to decode, the filter decides first on its own column, which
        // is kept for the rows it keeps; the other column is read for those rows only.
        for batch_size in [1, 7, 8192] {
            let opts = ParquetScanOptions {
                columns: Some(vec!["k".into(), "id".into()]),
                dictionary_codes: false,
                batch_size,
                filter_batch_size: batch_size,
                ..Default::default()
            };
            let (got, scan) = read(&p, Some(filter), opts);
            assert_eq!(got.column(0), want.column(1), "{filter}");
            assert_eq!(got.column(1), want.column(0), "{filter}");
            assert_eq!(scan.metrics().get("row_groups_filtered_after_decode"), 0);
            assert!(scan.metrics().get("row_groups_decided_first") > 0);
            // Keeping all but every 97th row, the other column is decoded whole and
            // masked rather than skipped row by row; the runs of 100 rows are skipped.
            assert_eq!(
                scan.metrics().get("row_groups_masked_after_deciding") > 0,
                filter == "k IS NOT NULL",
                "{filter}"
            );
        }
    }
}

#[test]
fn projection_orders_columns_and_partitions_are_typed_and_pruned() {
    let dir = tempfile::tempdir().expect("tempdir");
    let t = table();
    for (year, part) in [(2020, 0usize), (2021, 1)] {
        let d = dir.path().join(format!("year={year}")).join("region=eu");
        std::fs::create_dir_all(&d).expect("mkdir");
        write(
            &d.join("part-0.parquet"),
            &t.slice(part * 5000, 5000),
            props(),
        );
    }
    let opts = ParquetScanOptions {
        columns: Some(vec!["year".into(), "id".into()]),
        ..Default::default()
    };
    let (got, scan) = read(dir.path(), Some("year = 2021 AND id < 5010"), opts);
    assert_eq!(got.num_rows(), 10);
    assert_eq!(got.schema().field(0).data_type(), &DataType::Int32);
    assert_eq!(got.schema().field(1).name(), "id");
    assert_eq!(scan.metrics().get("files_pruned"), 1);
    let (all, _) = read(dir.path(), None, ParquetScanOptions::default());
    assert_eq!(all.num_rows(), ROWS);
    assert_eq!(all.num_columns(), 8);
}

#[test]
fn large_row_groups_split_across_threads_keep_order() {
    let dir = tempfile::tempdir().expect("tempdir");
    let p = dir.path().join("one.parquet");
    let props = WriterProperties::builder()
        .set_max_row_group_row_count(Some(ROWS))
        .set_data_page_row_count_limit(100)
        .set_write_batch_size(100)
        .build();
    write(&p, &table(), props);
    let opts = ParquetScanOptions {
        threads: 3,
        batch_size: 1000,
        ..Default::default()
    };
    let (got, scan) = read(&p, None, opts);
    assert!(scan.tasks.len() > 1);
    assert_eq!(got, table());
}

#[test]
fn bad_input_is_a_clear_error() {
    let (dir, p) = fixture();
    // unknown column, in columns and in the filter
    let opts = ParquetScanOptions {
        columns: Some(vec!["nope".into()]),
        ..Default::default()
    };
    assert!(
        matches!(ParquetScan::try_new(std::slice::from_ref(&p), opts), Err(FerroError::Analysis(m)) if m.contains("nope"))
    );
    let opts = ParquetScanOptions {
        filter: Some(parse_expr("zz > 1").expect("parses")),
        ..Default::default()
    };
    assert!(
        matches!(ParquetScan::try_new(std::slice::from_ref(&p), opts), Err(FerroError::Analysis(m)) if m.contains("zz"))
    );
    // not Parquet
    let junk = dir.path().join("junk.parquet");
    std::fs::write(&junk, b"this is not a parquet file at all").expect("write");
    match ParquetScan::try_new(std::slice::from_ref(&junk), ParquetScanOptions::default()) {
        Err(FerroError::Parquet { path, .. }) => assert_eq!(path, junk),
        other => panic!("{other:?}"),
    }
    // truncated
    let bytes = std::fs::read(&p).expect("read");
    let cut = dir.path().join("cut.parquet");
    std::fs::write(&cut, &bytes[..bytes.len() / 2]).expect("write");
    assert!(matches!(
        ParquetScan::try_new(&[cut], ParquetScanOptions::default()),
        Err(FerroError::Parquet { .. })
    ));
    // schemas that differ across files
    let other_dir = tempfile::tempdir().expect("tempdir");
    write(&other_dir.path().join("a.parquet"), &table(), props());
    let t = table();
    let narrow = t.project(&[0, 1]).expect("project");
    write(&other_dir.path().join("b.parquet"), &narrow, props());
    match ParquetScan::try_new(
        &[other_dir.path().to_path_buf()],
        ParquetScanOptions::default(),
    ) {
        Err(FerroError::Schema(m)) => assert!(m.contains("b.parquet"), "{m}"),
        other => panic!("{other:?}"),
    }
}

#[test]
fn flipped_bytes_never_crash_or_hang() {
    use rand::{Rng, SeedableRng};
    let dir = tempfile::tempdir().expect("tempdir");
    let small = table().slice(0, 300);
    let p = dir.path().join("small.parquet");
    write(&p, &small, props());
    let clean = std::fs::read(&p).expect("read");
    let mut rng = rand::rngs::StdRng::seed_from_u64(42);
    let mut errors = 0;
    for i in 0..300 {
        let mut bytes = clean.clone();
        let at = rng.random_range(0..bytes.len());
        bytes[at] ^= 1 << rng.random_range(0..8);
        let f = dir.path().join(format!("flip{i}.parquet"));
        std::fs::write(&f, &bytes).expect("write");
        let opts = ParquetScanOptions {
            filter: Some(parse_expr("id > 5").expect("parses")),
            ..Default::default()
        };
        let result = ParquetScan::try_new(std::slice::from_ref(&f), opts)
            .and_then(|s| s.execute().collect::<Result<Vec<_>, _>>());
        if result.is_err() {
            errors += 1;
        }
        std::fs::remove_file(&f).expect("remove");
    }
    assert!(errors > 0, "some flips must be detected");
}

#[test]
fn splits_cover_the_surviving_row_groups() {
    let (_dir, p) = fixture();
    let opts = ParquetScanOptions {
        filter: Some(parse_expr("id >= 2500").expect("parses")),
        ..Default::default()
    };
    let scan = ParquetScan::try_new(std::slice::from_ref(&p), opts.clone()).expect("plans");
    let splits = scan.splits(1);
    assert_eq!(splits.iter().map(|s| s.row_groups.len()).sum::<usize>(), 8);
    let mut total = 0;
    for s in &splits {
        let one = ParquetScan::for_split(s, vec![], opts.clone()).expect("plans split");
        total += one
            .execute()
            .map(|b| b.expect("reads").num_rows())
            .sum::<usize>();
    }
    assert_eq!(total, ROWS - 2500);
    assert_eq!(scan.splits(u64::MAX).len(), 1);
}

#[test]
fn spark_types_convert_decimals_and_timestamps() {
    let (_dir, p) = fixture();
    let opts = ParquetScanOptions {
        spark_types: true,
        ..Default::default()
    };
    let (got, _) = read(&p, Some("id < 3"), opts);
    assert_eq!(got.num_rows(), 3);
    assert_eq!(
        got.schema().field(5).data_type(),
        &DataType::Decimal128(15, 2)
    );
    assert!(got.column(3).as_any().is::<StringArray>());
}

#[test]
fn ansi_errors_in_filters_keep_their_kind() {
    let (_dir, p) = fixture();
    let opts = ParquetScanOptions {
        filter: Some(parse_expr("k / 0 > 1").expect("parses")),
        ..Default::default()
    };
    let scan = ParquetScan::try_new(&[p], opts).expect("plans");
    match scan.execute().collect::<Result<Vec<_>, _>>() {
        Err(FerroError::Arithmetic(m)) => assert!(m.contains("DIVIDE_BY_ZERO"), "{m}"),
        other => panic!("{other:?}"),
    }
}

#[test]
fn constant_conjuncts_are_decided_per_file_with_or_without_pushdown() {
    let (_dir, p) = fixture();
    for pushdown in [true, false] {
        let opts = ParquetScanOptions {
            filter_pushdown: pushdown,
            ..Default::default()
        };
        let (got, scan) = read(&p, Some("id > 3 AND 1 = 0"), opts.clone());
        assert_eq!(got.num_rows(), 0);
        assert_eq!(scan.metrics().get("files_pruned"), 1);
        let (got, _) = read(&p, Some("id < 3 AND 1 = 1"), opts);
        assert_eq!(got.num_rows(), 3);
    }
}

fn age(path: &Path, by: std::time::Duration) {
    let f = std::fs::File::options()
        .write(true)
        .open(path)
        .expect("open");
    f.set_modified(std::time::SystemTime::now() - by)
        .expect("set mtime");
}

#[test]
fn footers_are_cached_until_the_file_changes() {
    let (_dir, p) = fixture();
    let hour = std::time::Duration::from_secs(3600);
    let filter = Some("id BETWEEN 4321 AND 4330");
    let cached = |scan: &ParquetScan| scan.metrics().get("footers_cached");

    // A file written a moment ago is never cached: its timestamps may not tell it apart yet.
    let (first, scan) = read(&p, filter, ParquetScanOptions::default());
    assert_eq!(cached(&scan), 0);
    let (_, scan) = read(&p, filter, ParquetScanOptions::default());
    assert_eq!(cached(&scan), 0);

    // Rewind only the mtime: the inode's change time still says "just now".
    age(&p, hour);
    let (_, scan) = read(&p, filter, ParquetScanOptions::default());
    assert_eq!(cached(&scan), 0);

    // A budget of 0 turns the cache off.
    let off = ParquetScanOptions {
        metadata_cache_bytes: 0,
        ..ParquetScanOptions::default()
    };
    let (again, scan) = read(&p, filter, off);
    assert_eq!(cached(&scan), 0);
    assert_eq!(first, again);
}

#[test]
fn settled_footers_are_reused_and_rewrites_are_seen() {
    let (_dir, p) = fixture();
    let filter = Some("id < 1500");
    let cached = |scan: &ParquetScan| scan.metrics().get("footers_cached");
    // Wait out the settle time once so the cache may hold this file.
    std::thread::sleep(std::time::Duration::from_millis(2100));
    let (first, scan) = read(&p, filter, ParquetScanOptions::default());
    assert_eq!(cached(&scan), 0, "first read parses");
    let (second, scan) = read(&p, filter, ParquetScanOptions::default());
    assert_eq!(cached(&scan), 1, "second read reuses the footer");
    assert_eq!(first, second);
    assert_eq!(first, expected("id < 1500"));
    assert!(super::footer_cache_stats().hits >= 1);

    // Rewrite in place with other rows but the same length class and an old mtime: the
    // change time differs, so the footer is parsed again and the new rows are read.
    let t = table();
    let fewer = t.slice(0, 5000);
    write(&p, &fewer, props());
    age(&p, std::time::Duration::from_secs(3600));
    let (third, scan) = read(&p, filter, ParquetScanOptions::default());
    assert_eq!(cached(&scan), 0);
    assert_eq!(third.num_rows(), 1500);
    let (all, _) = read(&p, None, ParquetScanOptions::default());
    assert_eq!(all.num_rows(), 5000);
}

#[test]
fn dictionary_codes_decide_filters_exactly_on_v1_and_v2_pages() {
    use parquet::file::properties::WriterVersion;
    let dir = tempfile::tempdir().expect("tempdir");
    for (name, version) in [
        ("v1.parquet", WriterVersion::PARQUET_1_0),
        ("v2.parquet", WriterVersion::PARQUET_2_0),
    ] {
        let p = dir.path().join(name);
        let props = WriterProperties::builder()
            .set_writer_version(version)
            .set_max_row_group_row_count(Some(3000))
            .set_data_page_row_count_limit(700)
            .set_write_batch_size(100)
            .build();
        write(&p, &table(), props);
        for filter in [
            "k = 42",
            "k IS NULL",
            "k IS NOT NULL AND k > 95",
            "k NOT IN (1, NULL)",
            "coalesce(k, -1) < 3",
            "d BETWEEN DATE '1994-08-01' AND DATE '1994-08-10' AND q < 24",
            "s = 'ünïcode'",
            "s IS NULL AND id > 9000",
            "f = CAST('NaN' AS DOUBLE)",
            "f > 900",
            // Dense: most rows kept, the misses scattered (decoded whole, then masked).
            "k <> 42",
            "k IS NOT NULL",
        ] {
            let off = ParquetScanOptions {
                dictionary_codes: false,
                ..ParquetScanOptions::default()
            };
            let (plain, scan_off) = read(&p, Some(filter), off);
            assert_eq!(scan_off.metrics().get("row_groups_filtered_by_codes"), 0);
            for (batch_size, pushdown) in [(1, false), (7, true), (8192, false), (8192, true)] {
                // Without pushdown no page is pruned, so no task has a selection and every
                // dictionary-encoded first filter column is decided on its codes.
                let opts = ParquetScanOptions {
                    batch_size,
                    filter_batch_size: batch_size,
                    filter_pushdown: pushdown,
                    ..ParquetScanOptions::default()
                };
                let (coded, scan) = read(&p, Some(filter), opts);
                assert_eq!(coded, plain, "{name}: {filter} at batch size {batch_size}");
                assert_eq!(coded, expected(filter), "{name}: {filter}");
                if !pushdown
                    && ["k = 42", "k IS NULL", "k IS NOT NULL AND k > 95"].contains(&filter)
                {
                    // The filter column is output too: made from its codes, not decoded again.
                    assert!(
                        scan.metrics().get("columns_from_codes") > 0,
                        "{name}: {filter} decoded its filter column twice"
                    );
                }
                if !pushdown && filter == "k <> 42" {
                    assert!(
                        scan.metrics().get("row_groups_masked_by_codes") > 0,
                        "{name}: {filter} was not masked"
                    );
                }
                if !pushdown && !filter.starts_with("f ") {
                    // Doubles of this table are mostly distinct: too many codes to pay off.
                    assert!(
                        scan.metrics().get("row_groups_filtered_by_codes") > 0,
                        "{name}: {filter} never used the codes"
                    );
                }
            }
        }
    }
}

#[test]
fn dictionary_codes_step_aside_for_plain_fallback_pages() {
    // A dictionary page limit this small makes the writer fall back to PLAIN mid-chunk.
    let dir = tempfile::tempdir().expect("tempdir");
    let p = dir.path().join("fallback.parquet");
    let props = WriterProperties::builder()
        .set_max_row_group_row_count(Some(5000))
        .set_dictionary_page_size_limit(64)
        .set_data_page_row_count_limit(500)
        .set_write_batch_size(100)
        .build();
    write(&p, &table(), props);
    let filter = "id BETWEEN 10 AND 4000";
    let (got, scan) = read(&p, Some(filter), ParquetScanOptions::default());
    assert_eq!(got, expected(filter));
    assert_eq!(scan.metrics().get("row_groups_filtered_by_codes"), 0);
}

#[test]
fn string_columns_asked_for_as_dictionaries_hold_the_same_values() {
    let (_dir, path) = fixture();
    let read_with = |filter: Option<&str>, dictionary: &[usize]| {
        let opts = ParquetScanOptions {
            filter: filter.map(|f| parse_expr(f).expect("parses")),
            ..Default::default()
        };
        let scan = ParquetScan::try_new(std::slice::from_ref(&path), opts)
            .expect("plans")
            .with_dictionary_output(dictionary)
            .expect("dictionary");
        let batches: Vec<RecordBatch> = scan.execute().collect::<Result<_, _>>().expect("reads");
        let out = arrow_select::concat::concat_batches(&scan.schema(), &batches).expect("concat");
        (out, scan)
    };
    // `s` (column 3) becomes codes; `id` (not a string) is left alone.
    let (out, scan) = read_with(Some("id % 3 = 0"), &[0, 3]);
    let dict = DataType::Dictionary(Box::new(DataType::Int32), Box::new(DataType::Utf8));
    assert_eq!(scan.schema().field(3).data_type(), &dict);
    assert_eq!(scan.schema().field(0).data_type(), &DataType::Int64);
    assert_eq!(scan.metrics().get("columns_as_dictionary"), 1);
    let want = expected("id % 3 = 0");
    let decoded = arrow_cast::cast(out.column(3), &DataType::Utf8).expect("cast");
    assert_eq!(decoded.as_ref(), want.column(3).as_ref());
    assert_eq!(out.column(0).as_ref(), want.column(0).as_ref());
    // A column the filter reads stays plain strings.
    let (out, scan) = read_with(Some("s = 'red'"), &[3]);
    assert_eq!(scan.schema().field(3).data_type(), &DataType::Utf8);
    assert_eq!(
        out.column(3).as_ref(),
        expected("s = 'red'").column(3).as_ref()
    );
}

#[test]
fn string_view_columns_are_decided_on_their_codes() {
    use arrow_array::StringViewArray;
    // `tpchgen` writes TPC-H's strings as `string_view`: their dictionaries must decode too.
    let words = ["MAIL", "SHIP", "ünïcode", "", "AIR"];
    let n = 5000;
    let s: StringViewArray = (0..n)
        .map(|i| (i % 13 != 0).then(|| words[i % words.len()]))
        .collect();
    let id = Int64Array::from((0..n as i64).collect::<Vec<_>>());
    // A value per row, like TPC-H's `c_phone` (long ones past a view's 12 inline bytes).
    let phone: StringViewArray = (0..n)
        .map(|i| match i % 11 {
            0 => None,
            1 => Some(format!("1{}-ü-{i}", i % 4)),
            2 => Some(format!("{}", i % 100)),
            _ => Some(format!(
                "{}-{:03}-{:03}-{:04}",
                10 + i % 25,
                i % 997,
                i % 991,
                i
            )),
        })
        .collect();
    let (_dir, p) = write_columns(vec![
        ("id", Arc::new(id) as ArrayRef),
        ("sv", Arc::new(s) as ArrayRef),
        ("ph", Arc::new(phone) as ArrayRef),
    ]);
    for filter in [
        "sv IN ('MAIL', 'SHIP')",
        "sv = 'ünïcode'",
        "sv IS NULL OR sv = ''",
        "substring(ph, 1, 2) IN ('13', '31', '23', '12', '1', '11')",
        "substring(ph, 1, 2) NOT IN ('13', '31', '23', '29', '30', '18', '17')",
        "ph LIKE '1%ü%'",
    ] {
        let off = ParquetScanOptions {
            dictionary_codes: false,
            ..ParquetScanOptions::default()
        };
        let (plain, _) = read(&p, Some(filter), off);
        let opts = ParquetScanOptions {
            filter_pushdown: false,
            ..ParquetScanOptions::default()
        };
        let (coded, scan) = read(&p, Some(filter), opts);
        assert_eq!(coded, plain, "{filter}");
        assert!(plain.num_rows() > 0, "{filter}");
        assert!(
            scan.metrics().get("row_groups_filtered_by_codes") > 0,
            "{filter} never used the codes"
        );
        if filter.contains("ph") && !filter.contains("NOT IN") {
            // A string dictionary of distinct values still pays: the kept rows' strings are
            // views into its page, not decoded a second time (a filter keeping most rows
            // decodes them and masks instead).
            assert!(
                scan.metrics().get("columns_from_codes") > 0,
                "{filter} decoded its filter column twice"
            );
        }
    }
}

#[test]
fn footers_give_rows_ranges_nulls_and_small_dictionaries() {
    let (_dir, p) = fixture();
    let scan = ParquetScan::try_new(&[p], ParquetScanOptions::default()).expect("plans");
    let stats = scan.table_statistics();
    assert_eq!(stats.rows, ROWS as u64);
    let col = |n: &str| stats.columns.get(n).cloned();
    let id = col("id").expect("id");
    assert_eq!(
        (id.range, id.nulls, id.distinct_bound),
        (Some((0.0, 9999.0)), 0, Some(10000.0))
    );
    let k = col("k").expect("k");
    let k_nulls = (0..ROWS).filter(|i| i % 97 == 0).count() as u64;
    assert_eq!(
        (k.range, k.nulls, k.distinct_bound),
        (Some((0.0, 99.0)), k_nulls, Some(100.0))
    );
    let d = col("d").expect("d");
    assert_eq!(
        (d.range, d.distinct_bound),
        (Some((9000.0, 9399.0)), Some(400.0))
    );
    // A decimal counts its values in hundredths: 0.00 ..= 349.93.
    let q = col("q").expect("q");
    assert_eq!(q.distinct_bound, Some(34994.0));
    // Floats have a range but no distinct bound.
    assert_eq!(col("f").map(|f| f.distinct_bound), Some(None));
    // Strings: the five values of the dictionary, no range.
    let s = col("s").expect("s");
    assert_eq!((s.range, s.distinct_bound), (None, Some(5.0)));
}

#[test]
fn a_runtime_filter_holding_every_key_of_the_columns_range_tests_nothing() {
    let (_dir, p) = fixture();
    let keys = |lo: i64, hi: i64| {
        let a: ArrayRef = Arc::new(Int64Array::from((lo..=hi).collect::<Vec<_>>()));
        Arc::new(ferrospark_expr::KeySet::try_new(&[a]).expect("a set"))
    };
    let scan_with = |set| {
        let opts = ParquetScanOptions {
            columns: Some(vec!["id".into(), "k".into()]),
            key_filters: vec![super::KeyFilter {
                column: "id".into(),
                set,
            }],
            ..Default::default()
        };
        read(&p, None, opts)
    };
    // Every id the file holds: no filter at all.
    let (got, scan) = scan_with(keys(-5, ROWS as i64 + 5));
    assert_eq!(got.num_rows(), ROWS);
    assert!(!scan.explain().contains("Filter:"), "{}", scan.explain());
    // Every key of a narrower range: the range test alone, which prunes row groups.
    let (got, scan) = scan_with(keys(2500, 3499));
    assert_eq!(got.num_rows(), 1000);
    let ids =
        arrow_array::cast::AsArray::as_primitive::<arrow_array::types::Int64Type>(got.column(0));
    assert_eq!((ids.value(0), ids.value(999)), (2500, 3499));
    let plan = scan.explain();
    assert!(
        plan.contains("Filter:") && !plan.contains("INSET"),
        "{plan}"
    );
    assert!(scan.metrics().get("row_groups_read") <= 2, "{plan}");
}

#[test]
fn a_runtime_filter_keeping_most_rows_tests_its_range_and_the_most_selective_runs_first() {
    let (_dir, p) = fixture();
    let keys = |a: ArrayRef| Arc::new(ferrospark_expr::KeySet::try_new(&[a]).expect("a set"));
    let ids = |v: Vec<i64>| keys(Arc::new(Int64Array::from(v)));
    let scan_with = |filters: Vec<(&str, Arc<ferrospark_expr::KeySet>)>| {
        let opts = ParquetScanOptions {
            columns: Some(vec!["id".into(), "k".into()]),
            key_filters: filters
                .into_iter()
                .map(|(column, set)| super::KeyFilter {
                    column: column.into(),
                    set,
                })
                .collect(),
            ..Default::default()
        };
        read(&p, None, opts)
    };
    // Nine ids in ten of 1001..=1999: a membership test would keep most rows, so only the
    // range is tested (the join drops the rest).
    let most: Vec<i64> = (1000..2000).filter(|i| i % 10 != 0).collect();
    let (got, scan) = scan_with(vec![("id", ids(most))]);
    assert_eq!(got.num_rows(), 999);
    let plan = scan.explain();
    assert!(
        plan.contains("Filter:") && !plan.contains("INSET"),
        "{plan}"
    );
    // A third of k's values and one id in twenty: both are tested, the ids (fewer rows kept)
    // first, though given second.
    let some_k: Vec<i32> = (0..100).filter(|k| k % 3 == 0).collect();
    let some_ids: Vec<i64> = (0..ROWS as i64).filter(|i| i % 20 == 0).collect();
    let (got, scan) = scan_with(vec![
        ("k", keys(Arc::new(Int32Array::from(some_k)))),
        ("id", ids(some_ids)),
    ]);
    let plan = scan.explain();
    let (id_at, k_at) = (plan.find("(id#0 INSET"), plan.find("(k#1 INSET"));
    assert!(id_at.is_some() && k_at.is_some() && id_at < k_at, "{plan}");
    use arrow_array::cast::AsArray;
    let id = got
        .column(0)
        .as_primitive::<arrow_array::types::Int64Type>();
    let k = got
        .column(1)
        .as_primitive::<arrow_array::types::Int32Type>();
    assert!(got.num_rows() > 0);
    for r in 0..got.num_rows() {
        assert!(id.value(r) % 20 == 0 && k.is_valid(r) && k.value(r) % 3 == 0);
    }
}

#[test]
fn scattered_code_verdicts_mask_the_rest_of_the_filter_and_the_output() {
    // `c` repeats every 7 rows (a small dictionary, decided on codes, its kept rows
    // scattered); `id` is distinct (no codes: decided by reading it).
    let n = 12_000;
    let id = Int64Array::from((0..n as i64).collect::<Vec<_>>());
    let c = Int32Array::from(
        (0..n)
            .map(|i| (i % 11 != 0).then_some(i % 7))
            .collect::<Vec<_>>(),
    );
    let v = Float64Array::from(
        (0..n)
            .map(|i| match i % 13 {
                0 => f64::NAN,
                1 => -0.0,
                _ => i as f64 / 4.0,
            })
            .collect::<Vec<_>>(),
    );
    let (_dir, p) = write_columns(vec![
        ("id", Arc::new(id) as ArrayRef),
        ("c", Arc::new(c) as ArrayRef),
        ("v", Arc::new(v) as ArrayRef),
    ]);
    let cases: &[(&str, &[&str], &[&str])] = &[
        // Codes keep 3/7 scattered; `id` is decided first under that mask, and the rows it
        // keeps are scattered too: `v` decoded whole and masked, `c` taken from its codes.
        (
            "c IN (1, 2, 4) AND id % 3 <> 1",
            &["c", "id", "v"],
            &[
                "row_groups_decided_first",
                "columns_from_codes",
                "row_groups_masked_after_deciding",
            ],
        ),
        // Only `id` is output: decoded whole, masked by the codes, then filtered.
        (
            "c IN (1, 2, 4) AND id % 3 <> 1",
            &["id"],
            &["row_groups_filtered_after_decode"],
        ),
        // The second conjunct never sees the rows the first rejected, masked or not: no
        // division by zero under ANSI.
        (
            "c <> 0 AND id / c > 1",
            &["c", "id", "v"],
            &["row_groups_decided_first"],
        ),
        // Two groups after the codes, both over output columns: each decided in turn on
        // the rows the one before kept, the first's column narrowed to the second's rows.
        (
            "c IN (1, 2, 4) AND id % 3 <> 1 AND v > 100",
            &["v", "c", "id"],
            &["row_groups_decided_first"],
        ),
        // Every output column decided first: the reader decodes none.
        (
            "id % 5 <> 1 AND v > 100",
            &["id", "v"],
            &["row_groups_decided_first"],
        ),
        (
            "id % 97 = 0 AND v > 100 AND c = 3",
            &["id", "c", "v"],
            &["row_groups_decided_first"],
        ),
        // Sparse at the end: the rows left are skipped to.
        (
            "c = 3 AND id % 97 = 0",
            &["c", "id", "v"],
            &["row_groups_decided_first"],
        ),
        (
            "c IS NULL AND v > 100",
            &["v", "id"],
            &["row_groups_filtered_by_codes"],
        ),
    ];
    for (filter, columns, metrics) in cases {
        against_plain_read(&p, filter, columns, |scan| {
            for m in *metrics {
                assert!(
                    scan.metrics().get(m) > 0,
                    "{filter} {columns:?}: no {m}\n{}",
                    scan.explain()
                );
            }
        });
    }
}

/// Reads `columns` of `p` under `filter` at batch sizes 1, 7 and 8192 with every scan path
/// on, checks each read equals the plain one (no dictionary codes, no pushdown, which must
/// keep rows), then hands each scan to `check`.
fn against_plain_read(p: &Path, filter: &str, columns: &[&str], check: impl Fn(&ParquetScan)) {
    let cols = || Some(columns.iter().map(|c| c.to_string()).collect::<Vec<_>>());
    let plain = ParquetScanOptions {
        columns: cols(),
        dictionary_codes: false,
        filter_pushdown: false,
        ..Default::default()
    };
    let (want, _) = read(p, Some(filter), plain);
    assert!(want.num_rows() > 0, "{filter}");
    for batch_size in [1, 7, 8192] {
        let opts = ParquetScanOptions {
            columns: cols(),
            filter_pushdown: false,
            batch_size,
            filter_batch_size: batch_size,
            ..Default::default()
        };
        let (got, scan) = read(p, Some(filter), opts);
        assert_eq!(got, want, "{filter} {columns:?} at batch size {batch_size}");
        check(&scan);
    }
}

#[test]
fn columns_of_a_few_kept_rows_are_taken_by_their_codes() {
    // `k` repeats every 50 rows (decided on codes); the other columns are dictionary-encoded
    // too, with NULLs, NaN, -0.0, decimals, dates and unicode, over pages of 100 rows.
    let n = 12_000usize;
    let nth = |i: usize, m: usize| i.is_multiple_of(m);
    let k = Int32Array::from((0..n).map(|i| (i % 50) as i32).collect::<Vec<_>>());
    let id = Int64Array::from((0..n as i64).map(|i| i % 3000).collect::<Vec<_>>());
    let d = Decimal128Array::from(
        (0..n)
            .map(|i| (!nth(i, 11)).then_some((i as i128 * 37) % 1000 - 500))
            .collect::<Vec<_>>(),
    )
    .with_precision_and_scale(15, 2)
    .expect("decimal");
    let dt = Date32Array::from(
        (0..n)
            .map(|i| (!nth(i, 13)).then_some((i % 400) as i32 - 200))
            .collect::<Vec<_>>(),
    );
    let f = Float64Array::from(
        (0..n)
            .map(|i| match i % 9 {
                0 => None,
                1 => Some(f64::NAN),
                2 => Some(-0.0),
                3 => Some(0.0),
                r => Some((i % 300) as f64 / r as f64),
            })
            .collect::<Vec<_>>(),
    );
    let s = StringArray::from(
        (0..n)
            .map(|i| (!nth(i, 7)).then(|| format!("ü{}—日本", i % 250)))
            .collect::<Vec<_>>(),
    );
    let (_dir, p) = write_columns(vec![
        ("k", Arc::new(k) as ArrayRef),
        ("id", Arc::new(id) as ArrayRef),
        ("d", Arc::new(d) as ArrayRef),
        ("dt", Arc::new(dt) as ArrayRef),
        ("f", Arc::new(f) as ArrayRef),
        ("s", Arc::new(s) as ArrayRef),
    ]);
    let all = ["k", "id", "d", "dt", "f", "s"];
    let cases: &[(&str, &[&str])] = &[
        // The whole filter decided on codes, 2% kept: every other column taken.
        ("k = 7", &all),
        ("k IN (3, 7) AND id % 4 <> 1", &all),
        // Decided first after the codes; the kept rows in a few pages only.
        ("k = 7 AND id < 400", &["d", "f", "s", "id"]),
        ("k = 49 AND id % 3 = 0", &["dt", "id"]),
    ];
    for (filter, columns) in cases {
        against_plain_read(&p, filter, columns, |scan| {
            // Taken by codes; with the whole filter on `k`'s codes, every other column of
            // every row group.
            let taken = scan.metrics().get("columns_taken_by_codes");
            let groups = scan.metrics().get("row_groups_read");
            assert!(taken > 0, "{filter}\n{}", scan.explain());
            if !filter.contains("id") {
                assert_eq!(taken, groups * (columns.len() as u64 - 1), "{filter}");
            }
        });
    }
    // Every output column decided on codes and held by its filter: none is read again.
    against_plain_read(&p, "k = 7 AND dt IS NOT NULL", &["k", "dt"], |scan| {
        assert!(scan.metrics().get("row_groups_filtered_by_codes") > 0);
        assert_eq!(scan.metrics().get("columns_taken_by_codes"), 0);
    });
}
