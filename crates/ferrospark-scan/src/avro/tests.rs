//! The Avro reader on files `arrow-avro` writes: every codec, Spark's types, a projection, a
//! filter, a reader schema for schema evolution, hive partitions, and bytes that are not Avro.

use std::path::Path;
use std::sync::Arc;

use arrow_array::{
    Array, ArrayRef, Date32Array, Decimal128Array, Float64Array, Int32Array, Int64Array,
    RecordBatch, StringArray,
};
use arrow_avro::compression::CompressionCodec;
use arrow_avro::writer::WriterBuilder;
use arrow_schema::{DataType, Field, Schema};
use ferrospark_common::Config;
use ferrospark_expr::parse_expr;

use super::{AvroOptions, AvroScan};

fn batch(n: i64) -> RecordBatch {
    let schema = Arc::new(Schema::new(vec![
        Field::new("id", DataType::Int64, false),
        Field::new("name", DataType::Utf8, true),
        Field::new("x", DataType::Float64, true),
        Field::new("price", DataType::Decimal128(9, 2), true),
        Field::new("day", DataType::Date32, true),
        Field::new("n", DataType::Int32, true),
    ]));
    let ids: Vec<i64> = (0..n).collect();
    let columns: Vec<ArrayRef> = vec![
        Arc::new(Int64Array::from(ids.clone())),
        Arc::new(StringArray::from_iter(
            ids.iter().map(|i| (i % 5 != 0).then(|| format!("név {i}"))),
        )),
        Arc::new(Float64Array::from_iter(ids.iter().map(|i| match i % 4 {
            0 => Some(f64::NAN),
            1 => Some(-0.0),
            2 => None,
            _ => Some(*i as f64 / 3.0),
        }))),
        Arc::new(
            Decimal128Array::from_iter(ids.iter().map(|i| Some(i128::from(*i) * 101 - 5000)))
                .with_precision_and_scale(9, 2)
                .expect("decimal"),
        ),
        Arc::new(Date32Array::from_iter(ids.iter().map(|i| Some(*i as i32)))),
        Arc::new(Int32Array::from_iter(
            ids.iter().map(|i| Some(*i as i32 % 7)),
        )),
    ];
    RecordBatch::try_new(schema, columns).expect("batch")
}

fn write(path: &Path, b: &RecordBatch, codec: Option<CompressionCodec>) {
    let file = std::fs::File::create(path).expect("create");
    let mut w = WriterBuilder::new(b.schema().as_ref().clone())
        .with_compression(codec)
        .build::<_, arrow_avro::writer::format::AvroOcfFormat>(file)
        .expect("writer");
    w.write(b).expect("write");
    w.finish().expect("finish");
}

fn read(
    paths: &[&Path],
    columns: Option<Vec<&str>>,
    filter: Option<&str>,
    options: AvroOptions,
) -> (Arc<AvroScan>, Vec<RecordBatch>) {
    let paths: Vec<_> = paths.iter().map(|p| p.to_path_buf()).collect();
    let scan = AvroScan::try_new(
        &paths,
        None,
        columns.map(|c| c.iter().map(|s| s.to_string()).collect()),
        filter.map(|f| parse_expr(f).expect("filter")),
        AvroOptions {
            batch_size: 100,
            ..options
        },
        Config::default(),
    )
    .expect("scan");
    let scan = Arc::new(scan);
    let out = scan
        .stream()
        .expect("stream")
        .collect::<ferrospark_common::Result<Vec<_>>>()
        .expect("batches");
    (scan, out)
}

#[test]
fn every_codec_reads_the_same_rows_in_spark_types() {
    let dir = tempfile::tempdir().expect("dir");
    let b = batch(1000);
    for codec in [
        None,
        Some(CompressionCodec::Deflate),
        Some(CompressionCodec::Snappy),
        Some(CompressionCodec::ZStandard),
    ] {
        let p = dir.path().join(format!("t{codec:?}.avro"));
        write(&p, &b, codec);
        let (scan, out) = read(&[&p], None, None, AvroOptions::default());
        let schema = scan.plan().schema();
        let types: Vec<&DataType> = schema.fields().iter().map(|f| f.data_type()).collect();
        assert_eq!(
            types,
            [
                &DataType::Int64,
                &DataType::Utf8,
                &DataType::Float64,
                &DataType::Decimal128(9, 2),
                &DataType::Date32,
                &DataType::Int32
            ]
        );
        let all = arrow_select::concat::concat_batches(&schema, &out).expect("concat");
        assert_eq!(all.num_rows(), 1000);
        for c in 0..6 {
            assert_eq!(
                all.column(c).to_data(),
                b.column(c).to_data(),
                "{codec:?} column {c}"
            );
        }
    }
}

#[test]
fn projection_and_filter() {
    let dir = tempfile::tempdir().expect("dir");
    let p = dir.path().join("t.avro");
    write(&p, &batch(1000), Some(CompressionCodec::Deflate));
    let (scan, out) = read(
        &[&p],
        Some(vec!["name", "price"]),
        Some("id < 30 AND n = 3"),
        AvroOptions::default(),
    );
    let rows: usize = out.iter().map(|b| b.num_rows()).sum();
    // ids 3, 10, 17, 24 (id % 7 == 3, id < 30).
    assert_eq!(rows, 4);
    assert_eq!(out[0].schema().field(0).name(), "name");
    let names = out[0]
        .column(0)
        .as_any()
        .downcast_ref::<StringArray>()
        .expect("names");
    assert_eq!(names.value(0), "név 3");
    assert!(names.is_null(1));
    assert_eq!(scan.plan().metrics().get("output_rows"), 4);
}

#[test]
fn a_reader_schema_evolves_the_records() {
    let dir = tempfile::tempdir().expect("dir");
    let p = dir.path().join("t.avro");
    write(&p, &batch(10), None);
    // `n` promoted from int to long, `x` dropped, `extra` added with its default, fields
    // reordered.
    let reader_schema = r#"{"type": "record", "name": "topLevelRecord", "fields": [
        {"name": "n", "type": ["long", "null"]},
        {"name": "id", "type": "long"},
        {"name": "extra", "type": "string", "default": "none"}
    ]}"#;
    let (scan, out) = read(
        &[&p],
        None,
        None,
        AvroOptions {
            avro_schema: Some(reader_schema.into()),
            ..Default::default()
        },
    );
    let names: Vec<String> = scan
        .plan()
        .schema()
        .fields()
        .iter()
        .map(|f| f.name().clone())
        .collect();
    assert_eq!(names, ["n", "id", "extra"]);
    let b = &out[0];
    assert_eq!(b.column(0).data_type(), &DataType::Int64);
    let extra = b
        .column(2)
        .as_any()
        .downcast_ref::<StringArray>()
        .expect("extra");
    assert_eq!(extra.value(9), "none");
}

#[test]
fn bytes_that_are_not_avro_are_an_error_naming_the_file() {
    let dir = tempfile::tempdir().expect("dir");
    let p = dir.path().join("bad.avro");
    std::fs::write(&p, b"Obj\x01garbage garbage garbage").expect("write");
    let err = AvroScan::try_new(
        std::slice::from_ref(&p),
        None,
        None,
        None,
        AvroOptions::default(),
        Config::default(),
    )
    .expect_err("not avro");
    assert!(err.to_string().contains("bad.avro"), "{err}");
    // A good header then a truncated block.
    let good = dir.path().join("good.avro");
    write(&good, &batch(1000), Some(CompressionCodec::Deflate));
    let bytes = std::fs::read(&good).expect("read");
    std::fs::write(&p, &bytes[..bytes.len() - 40]).expect("write");
    let scan = AvroScan::try_new(
        std::slice::from_ref(&p),
        None,
        None,
        None,
        AvroOptions::default(),
        Config::default(),
    )
    .expect("header reads");
    let got: ferrospark_common::Result<Vec<_>> = scan.stream().expect("stream").collect();
    let err = got.expect_err("truncated");
    assert!(err.to_string().contains("bad.avro"), "{err}");
    // Read in splits (a Spark task each), the split holding the file's end finds the cut.
    let len = std::fs::metadata(&p).expect("size").len();
    let mut errors = 0;
    for (start, end) in [(0, len / 3), (len / 3, 2 * len / 3), (2 * len / 3, len)] {
        let only: crate::text::FileRanges = [(p.clone(), vec![(start, end)])].into();
        let got: ferrospark_common::Result<Vec<_>> =
            scan.stream_only(Some(&only)).expect("stream").collect();
        if let Err(e) = got {
            assert!(e.to_string().contains("cut short"), "{e}");
            errors += 1;
        }
    }
    assert_eq!(errors, 1);
}

#[test]
fn a_file_of_many_blocks_reads_in_order_across_pieces() {
    // More than 16 MB of blocks: several pieces, decoded in parallel, handed out in file order.
    let dir = tempfile::tempdir().expect("dir");
    let p = dir.path().join("big.avro");
    let file = std::fs::File::create(&p).expect("create");
    let one = batch(20_000);
    let mut w = WriterBuilder::new(one.schema().as_ref().clone())
        .build::<_, arrow_avro::writer::format::AvroOcfFormat>(file)
        .expect("writer");
    for _ in 0..60 {
        w.write(&one).expect("write");
    }
    w.finish().expect("finish");
    assert!(std::fs::metadata(&p).expect("size").len() > 16 << 20);
    let (scan, out) = read(&[&p], Some(vec!["id"]), None, AvroOptions::default());
    let ids: Vec<i64> = out
        .iter()
        .flat_map(|b| {
            b.column(0)
                .as_any()
                .downcast_ref::<Int64Array>()
                .expect("ids")
                .values()
                .to_vec()
        })
        .collect();
    let want: Vec<i64> = (0..60).flat_map(|_| 0..20_000).collect();
    assert_eq!(ids, want);
    assert_eq!(scan.plan().metrics().get("rows_read"), 1_200_000);
}
