//! The CSV reader against what PySpark 4.3 returns for the same text and options (each
//! expectation below was read from PySpark's `spark.read.csv`).

use std::collections::HashMap;
use std::sync::Arc;

use arrow_array::RecordBatch;
use arrow_cast::display::{ArrayFormatter, FormatOptions};
use arrow_schema::{DataType, Field, Schema};
use ferrospark_common::{Config, FerroError};
use ferrospark_expr::parse_expr;

use super::*;

fn rows(batches: &[RecordBatch]) -> Vec<String> {
    let opts = FormatOptions::default().with_null("NULL");
    let mut out = Vec::new();
    for b in batches {
        let f: Vec<ArrayFormatter> = b
            .columns()
            .iter()
            .map(|c| ArrayFormatter::try_new(c.as_ref(), &opts).expect("fmt"))
            .collect();
        for r in 0..b.num_rows() {
            out.push(
                f.iter()
                    .map(|x| x.value(r).to_string())
                    .collect::<Vec<_>>()
                    .join("|"),
            );
        }
    }
    out
}

struct Read {
    batches: Vec<RecordBatch>,
    scan: Arc<CsvScan>,
}

fn read(
    text: &str,
    opts: &[(&str, &str)],
    schema: Option<Vec<Field>>,
    filter: Option<&str>,
    cfg: Config,
) -> Result<Read, FerroError> {
    let dir = tempfile::tempdir().expect("dir");
    let path = dir.path().join("t.csv");
    std::fs::write(&path, text).expect("write");
    let map: HashMap<String, String> = opts
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    let o = CsvOptions::from_map(&map)?;
    let scan = Arc::new(CsvScan::try_new(
        &[path],
        schema.map(|f| Arc::new(Schema::new(f))),
        None,
        filter.map(|f| parse_expr(f).expect("filter")),
        o,
        cfg,
    )?);
    let batches = scan.stream()?.collect::<Result<Vec<_>, _>>()?;
    Ok(Read { batches, scan })
}

fn strings(text: &str, opts: &[(&str, &str)]) -> Vec<String> {
    rows(
        &read(text, opts, None, None, Config::default())
            .expect("reads")
            .batches,
    )
}

const QUOTES: &str = "a,\"\",b\n\"x\\\"y\",\"p\"\"q\",r\n\"a\\\\b\",c\"d,e\n \"s\" , t ,\"u\"v\n";

#[test]
fn quotes_escapes_and_nulls_as_spark_reads_them() {
    assert_eq!(
        strings(QUOTES, &[]),
        [
            "a|NULL|b",
            "x\"y|\"p\"\"q\"|r",
            "a\\b|c\"d|e",
            " \"s\" | t |\"u\"v"
        ]
    );
    assert_eq!(
        strings(QUOTES, &[("nullValue", "x")])[0],
        "a||b",
        "a quoted empty field is emptyValue unless that is nullValue"
    );
    assert_eq!(
        strings(
            QUOTES,
            &[
                ("ignoreLeadingWhiteSpace", "true"),
                ("ignoreTrailingWhiteSpace", "true")
            ]
        )[3],
        "s|t|\"u\"v"
    );
}

#[test]
fn empty_lines_comments_and_ragged_records() {
    assert_eq!(
        strings("a,b\n\n\nc,d\n,\n", &[]),
        ["a|b", "c|d", "NULL|NULL"]
    );
    assert_eq!(strings("a\na,b,c\na,b\n", &[]), ["a", "a", "a"]);
    assert_eq!(strings("#x,y\na,b\n", &[]), ["#x|y", "a|b"]);
    assert_eq!(strings("#x,y\na,b\n", &[("comment", "#")]), ["a|b"]);
}

#[test]
fn inferred_types_are_sparks() {
    let text = "i,l,d,f,b,dt,ts,ts2,s,m,e\n\
                1,3000000000,1.5,1e3,true,2020-01-02,2020-01-02T03:04:05,2020-01-02 03:04:05,x,2020-01,\n\
                -2,+4,NaN,Inf,False,2021-12-31,2021-12-31T00:00:00.123Z,2021-12-31 00:00:00,y,7,\n";
    let r = read(
        text,
        &[("header", "true"), ("inferSchema", "true")],
        None,
        None,
        Config::default(),
    )
    .expect("reads");
    let types: Vec<String> = r
        .scan
        .plan()
        .schema()
        .fields()
        .iter()
        .map(|f| format!("{}:{}", f.name(), f.data_type()))
        .collect();
    assert_eq!(
        types,
        [
            "i:Int32",
            "l:Int64",
            "d:Float64",
            "f:Float64",
            "b:Boolean",
            "dt:Date32",
            "ts:Timestamp(µs, \"UTC\")",
            "ts2:Timestamp(µs, \"UTC\")",
            "s:Utf8",
            "m:Utf8",
            "e:Utf8"
        ]
    );
    assert_eq!(
        rows(&r.batches),
        [
            "1|3000000000|1.5|1000.0|true|2020-01-02|2020-01-02T03:04:05Z|2020-01-02T03:04:05Z|x|2020-01|NULL",
            "-2|4|NaN|inf|false|2021-12-31|2021-12-31T00:00:00.123Z|2021-12-31T00:00:00Z|y|7|NULL"
        ]
    );
}

const TYPED: &str = "1,a,1.5\nx,b,2\n3,c\n4,d,5,6\n 5,e, 7.5\n+6,f,1e2\n";

fn typed_schema(corrupt: bool) -> Vec<Field> {
    let mut f = vec![
        Field::new("i", DataType::Int32, true),
        Field::new("s", DataType::Utf8, true),
        Field::new("d", DataType::Float64, true),
    ];
    if corrupt {
        f.push(Field::new("_corrupt_record", DataType::Utf8, true));
    }
    f
}

#[test]
fn malformed_records_in_every_mode() {
    let permissive = read(
        TYPED,
        &[],
        Some(typed_schema(true)),
        None,
        Config::default(),
    )
    .expect("reads");
    assert_eq!(
        rows(&permissive.batches),
        [
            "1|a|1.5|NULL",
            "NULL|b|2.0|x,b,2",
            "3|c|NULL|3,c",
            "4|d|5.0|4,d,5,6",
            "NULL|e|7.5| 5,e, 7.5",
            "6|f|100.0|NULL"
        ]
    );
    assert_eq!(permissive.scan.plan().metrics().get("malformed_rows"), 4);
    let dropped = read(
        TYPED,
        &[("mode", "DROPMALFORMED")],
        Some(typed_schema(true)),
        None,
        Config::default(),
    )
    .expect("reads");
    assert_eq!(rows(&dropped.batches), ["1|a|1.5|NULL", "6|f|100.0|NULL"]);
    let plain = read(
        TYPED,
        &[],
        Some(typed_schema(false)),
        None,
        Config::default(),
    )
    .expect("reads");
    assert_eq!(
        rows(&plain.batches),
        [
            "1|a|1.5",
            "NULL|b|2.0",
            "3|c|NULL",
            "4|d|5.0",
            "NULL|e|7.5",
            "6|f|100.0"
        ]
    );
    let err = read(
        TYPED,
        &[("mode", "FAILFAST")],
        Some(typed_schema(false)),
        None,
        Config::default(),
    )
    .err()
    .expect("fails");
    let text = err.to_string();
    assert!(
        text.contains("MALFORMED_RECORD_IN_PARSING") && text.contains("line 2"),
        "{text}"
    );
}

#[test]
fn a_filter_stops_conversion_early_with_the_same_rows() {
    let want = ["3|c|NULL|3,c", "4|d|5.0|4,d,5,6", "6|f|100.0|NULL"];
    let on = read(
        TYPED,
        &[],
        Some(typed_schema(true)),
        Some("i > 2"),
        Config::default(),
    )
    .expect("reads");
    assert_eq!(rows(&on.batches), want);
    // Rows 1, x and 5 fail at field 0: their two other fields are never converted.
    assert_eq!(on.scan.plan().metrics().get("rows_skipped_early"), 3);
    assert_eq!(on.scan.plan().metrics().get("fields_not_converted"), 6);
    let mut off = Config::default();
    off.set("spark.sql.csv.filterPushdown.enabled", "false")
        .expect("conf");
    let off = read(TYPED, &[], Some(typed_schema(true)), Some("i > 2"), off).expect("reads");
    assert_eq!(rows(&off.batches), want);
    assert_eq!(off.scan.plan().metrics().get("rows_skipped_early"), 0);
}

#[test]
fn odd_batch_sizes_give_the_same_rows() {
    let text: String = (0..100).map(|i| format!("{i},\"v{i}\"\n")).collect();
    let want = strings(&text, &[]);
    for size in [1usize, 2, 7, 8192] {
        let dir = tempfile::tempdir().expect("dir");
        let path = dir.path().join("t.csv");
        std::fs::write(&path, &text).expect("write");
        let o = CsvOptions {
            batch_size: size,
            ..CsvOptions::default()
        };
        let scan = Arc::new(
            CsvScan::try_new(&[path], None, None, None, o, Config::default()).expect("plans"),
        );
        let got: Vec<RecordBatch> = scan
            .stream()
            .expect("stream")
            .collect::<Result<_, _>>()
            .expect("reads");
        assert_eq!(rows(&got), want, "batch size {size}");
        assert!(got.iter().all(|b| b.num_rows() <= size));
    }
}

#[test]
fn multi_line_values_and_compressed_files() {
    let text = "1,\"two\nlines\"\n2,x\n";
    assert_eq!(
        strings(text, &[("multiLine", "true")]),
        ["1|two\nlines", "2|x"]
    );
    let dir = tempfile::tempdir().expect("dir");
    let path = dir.path().join("t.csv.gz");
    let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    std::io::Write::write_all(&mut enc, b"a,b\n1,2\n").expect("gzip");
    std::fs::write(&path, enc.finish().expect("gzip")).expect("write");
    let o =
        CsvOptions::from_map(&HashMap::from([("header".into(), "true".into())])).expect("options");
    let scan =
        Arc::new(CsvScan::try_new(&[path], None, None, None, o, Config::default()).expect("plans"));
    let got: Vec<RecordBatch> = scan
        .stream()
        .expect("stream")
        .collect::<Result<_, _>>()
        .expect("reads");
    assert_eq!(rows(&got), ["1|2"]);
    assert_eq!(got[0].schema().field(0).name(), "a");
}

#[test]
fn bad_options_and_garbage_are_clear_errors() {
    let err = CsvOptions::from_map(&HashMap::from([("mode".into(), "LENIENT".into())]))
        .expect_err("refused");
    assert!(err.to_string().contains("mode"), "{err}");
    // Bytes that are not text read as (replacement) characters, never a crash.
    let garbage: Vec<u8> = (0..4096u32).map(|i| (i * 7919 % 251) as u8).collect();
    let text = String::from_utf8_lossy(&garbage).into_owned();
    let r = read(&text, &[], None, None, Config::default()).expect("reads");
    assert!(r.batches.iter().all(|b| b.num_columns() > 0));
    let deep = "{".repeat(100_000);
    assert_eq!(strings(&deep, &[]).len(), 1);
}

/// A file of many pieces, each reading its own text: every row once and in order, and a
/// FAILFAST error deep in the file names the line it is on (the lines of the pieces before it
/// counted only then), with a header and without.
#[test]
fn pieces_read_their_own_text_and_errors_name_the_file_line() {
    let rows_wanted = 300_000;
    for header in [false, true] {
        let mut text = String::from(if header { "a,b\n" } else { "" });
        for i in 0..rows_wanted {
            text.push_str(&format!("{i},x{i}\n"));
        }
        let opts: &[(&str, &str)] = if header { &[("header", "true")] } else { &[] };
        let schema = || {
            Some(vec![
                Field::new("a", DataType::Int64, true),
                Field::new("b", DataType::Utf8, true),
            ])
        };
        let got = read(&text, opts, schema(), None, Config::default()).expect("read");
        let got = rows(&got.batches);
        assert_eq!(got.len(), rows_wanted);
        assert!(got
            .iter()
            .enumerate()
            .all(|(i, r)| *r == format!("{i}|x{i}")));
        // Past the first 512 KB piece (rows are about 14 bytes).
        let bad = 250_000;
        let broken = text.replacen(&format!("\n{bad},x{bad}\n"), "\nnot a number,x\n", 1);
        let failfast: Vec<(&str, &str)> =
            opts.iter().copied().chain([("mode", "FAILFAST")]).collect();
        let err = read(&broken, &failfast, schema(), None, Config::default())
            .err()
            .expect("fails");
        let line = bad + 1 + usize::from(header);
        assert!(err.to_string().contains(&format!("line {line}")), "{err}");
    }
}

/// A record read only through the filter's fields, then whole once it passes, gives what
/// reading every record whole and filtering after gives: random ragged lines with quotes,
/// escapes, empty fields, bad numbers, CRLF and empty lines, filters on the first, a middle
/// and two fields, in PERMISSIVE (with the corrupt-record column) and DROPMALFORMED mode.
#[test]
fn records_read_through_the_filter_first_give_the_same_rows() {
    use rand::{Rng, SeedableRng};
    let mut rng = rand::rngs::StdRng::seed_from_u64(17);
    let pieces = [
        "1",
        "7",
        "9",
        "2",
        "",
        "x",
        "\"5\"",
        "\"a,b\"",
        "\"q\\\"r\"",
        "\"\"",
        "-3",
        "08",
    ];
    let schema = || {
        vec![
            Field::new("a", DataType::Int32, true),
            Field::new("b", DataType::Utf8, true),
            Field::new("c", DataType::Int32, true),
            Field::new("d", DataType::Utf8, true),
            Field::new("_corrupt_record", DataType::Utf8, true),
        ]
    };
    let mut off = Config::default();
    off.set("spark.sql.csv.filterPushdown.enabled", "false")
        .expect("conf");
    for round in 0..40 {
        let mut text = String::new();
        for _ in 0..rng.random_range(1..60) {
            let n = rng.random_range(1..7);
            let line: Vec<&str> = (0..n)
                .map(|_| pieces[rng.random_range(0..pieces.len())])
                .collect();
            text.push_str(&line.join(","));
            text.push_str(match rng.random_range(0..6) {
                0 => "\r\n",
                1 => "\n\n",
                _ => "\n",
            });
        }
        for filter in ["a > 4", "c < 3", "a > 4 AND c < 3", "c IS NULL"] {
            for (mode, with_corrupt) in [("PERMISSIVE", true), ("DROPMALFORMED", false)] {
                let mut fields = schema();
                if !with_corrupt {
                    fields.pop();
                }
                let opts = [("mode", mode)];
                let on = read(
                    &text,
                    &opts,
                    Some(fields.clone()),
                    Some(filter),
                    Config::default(),
                )
                .expect("reads");
                let whole =
                    read(&text, &opts, Some(fields), Some(filter), off.clone()).expect("reads");
                assert_eq!(
                    rows(&on.batches),
                    rows(&whole.batches),
                    "round {round} {mode} {filter}: {text:?}"
                );
            }
        }
    }
}
