//! Criterion benches of the Parquet reader: a full scan, a selective scan+filter with late
//! materialisation, and a scan that prunes by statistics. Data is generated once into a temp
//! directory (sorted keys, page index) so the bench needs nothing from outside.
//!
//! `FERROSPARK_BENCH_LINEITEM=/path/to/lineitem` adds the TPC-H scan+filter workload of
//! `benches/compare.py` on real files.

// `criterion_group!` generates an undocumented public function.
#![allow(missing_docs)]

use std::path::PathBuf;
use std::sync::Arc;

use arrow_array::{ArrayRef, Date32Array, Decimal128Array, Int64Array, RecordBatch};
use arrow_schema::{DataType, Field, Schema};
use criterion::{criterion_group, criterion_main, Criterion};
use ferrospark_expr::parse_expr;
use ferrospark_scan::{ParquetScan, ParquetScanOptions};
use parquet::arrow::ArrowWriter;
use parquet::file::properties::WriterProperties;
use rand::{Rng, SeedableRng};

const ROWS: usize = 2_000_000;

fn write_data(dir: &std::path::Path) -> PathBuf {
    let mut rng = rand::rngs::StdRng::seed_from_u64(7);
    let id: Vec<i64> = (0..ROWS as i64).collect();
    let date: Vec<i32> = (0..ROWS).map(|_| rng.random_range(8000..10500)).collect();
    let qty: Vec<i128> = (0..ROWS).map(|_| rng.random_range(1..=50) * 100).collect();
    let price: Vec<i128> = (0..ROWS)
        .map(|_| rng.random_range(90_000..10_000_000))
        .collect();
    let schema = Arc::new(Schema::new(vec![
        Field::new("id", DataType::Int64, false),
        Field::new("shipdate", DataType::Date32, false),
        Field::new("quantity", DataType::Decimal128(15, 2), false),
        Field::new("price", DataType::Decimal128(15, 2), false),
    ]));
    let dec = |v: Vec<i128>| -> ArrayRef {
        Arc::new(
            Decimal128Array::from(v)
                .with_precision_and_scale(15, 2)
                .expect("valid decimal"),
        )
    };
    let batch = RecordBatch::try_new(
        schema.clone(),
        vec![
            Arc::new(Int64Array::from(id)),
            Arc::new(Date32Array::from(date)),
            dec(qty),
            dec(price),
        ],
    )
    .expect("valid batch");
    let path = dir.join("bench.parquet");
    let props = WriterProperties::builder()
        .set_max_row_group_row_count(Some(125_000))
        .build();
    let file = std::fs::File::create(&path).expect("create");
    let mut w = ArrowWriter::try_new(file, schema, Some(props)).expect("writer");
    w.write(&batch).expect("write");
    w.close().expect("close");
    path
}

fn run(path: &PathBuf, columns: &[&str], filter: Option<&str>) -> usize {
    let opts = ParquetScanOptions {
        columns: Some(columns.iter().map(|c| c.to_string()).collect()),
        filter: filter.map(|f| parse_expr(f).expect("parses")),
        ..Default::default()
    };
    let scan = ParquetScan::try_new(std::slice::from_ref(path), opts).expect("plans");
    scan.execute().map(|b| b.expect("reads").num_rows()).sum()
}

fn bench(c: &mut Criterion) {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = write_data(dir.path());
    let mut g = c.benchmark_group("parquet_scan");
    g.sample_size(10);
    g.bench_function("full_scan_4_columns", |b| {
        b.iter(|| run(&path, &["id", "shipdate", "quantity", "price"], None))
    });
    g.bench_function("scan_filter_late_materialisation", |b| {
        b.iter(|| {
            run(
                &path,
                &["price"],
                Some("shipdate BETWEEN DATE '1995-01-01' AND DATE '1995-03-31' AND quantity < 24"),
            )
        })
    });
    g.bench_function("scan_pruned_by_statistics", |b| {
        b.iter(|| run(&path, &["price"], Some("id BETWEEN 1000000 AND 1010000")))
    });
    if let Ok(lineitem) = std::env::var("FERROSPARK_BENCH_LINEITEM") {
        let p = PathBuf::from(lineitem);
        g.bench_function("tpch_lineitem_scan_filter", |b| {
            b.iter(|| {
                run(
                    &p,
                    &["l_extendedprice"],
                    Some("l_shipdate BETWEEN DATE '1995-01-01' AND DATE '1995-03-31' AND l_quantity < 24"),
                )
            })
        });
    }
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
