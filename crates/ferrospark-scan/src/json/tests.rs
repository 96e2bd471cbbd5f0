//! The JSON reader against Spark's answers (taken from PySpark 4 on the same text).

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use arrow_array::RecordBatch;
use arrow_schema::{DataType, Field, Schema, SchemaRef};
use ferrospark_common::Config;
use ferrospark_expr::parse_expr;

use super::{JsonOptions, JsonScan};

/// Spark's probe file: every line an edge of Jackson's parsing or Spark's conversion.
const PROBE: &str = r#"{"a": 1, "b": "x", "c": 1.50, "d": true, "e": {"z": 1, "y": [1, 2]}, "f": null}
{"b": "ü\u00e9\n", "a": 9223372036854775807, "c": 2, "g": [1, 2.5]}
{"a": 99999999999999999999, "c": "NaN", "d": "true"}
{'a': 3, b: 'single'}
{"a": 01, "c": NaN, "h": -Infinity}

   
[{"a": 5}, {"a": 6}]
[]
[1, 2]
42
{"a": 7} trailing
{"a": 1e3, "c": -0.0}
{"a": "12", "b": 13, "c": "1.5"}
{"a": 1 /* c */, "b": "q"}
{"a": 
{"e": {"y": "str"}}
{"e": 5}
"#;

fn file(text: &str) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().expect("test input");
    let p = dir.path().join("t.json");
    std::fs::File::create(&p)
        .expect("test input")
        .write_all(text.as_bytes())
        .expect("test input");
    (dir, p)
}

fn read(
    path: &Path,
    schema: Option<SchemaRef>,
    options: &[(&str, &str)],
) -> (SchemaRef, Vec<RecordBatch>) {
    try_read(path, schema, options).expect("test input")
}

fn try_read(
    path: &Path,
    schema: Option<SchemaRef>,
    options: &[(&str, &str)],
) -> ferrospark_common::Result<(SchemaRef, Vec<RecordBatch>)> {
    let map = options
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    let o = JsonOptions::from_map(&map)?;
    let scan = JsonScan::try_new(
        &[path.to_path_buf()],
        schema,
        None,
        None,
        o,
        Config::default(),
    )?;
    let batches = scan
        .stream()?
        .collect::<ferrospark_common::Result<Vec<_>>>()?;
    Ok((scan.plan().schema(), batches))
}

fn rows(batches: &[RecordBatch]) -> Vec<String> {
    let mut out = Vec::new();
    for b in batches {
        for r in 0..b.num_rows() {
            let cells: Vec<String> = b
                .columns()
                .iter()
                .map(|c| {
                    if c.is_null(r) {
                        "None".to_string()
                    } else {
                        arrow_cast::display::ArrayFormatter::try_new(
                            c.as_ref(),
                            &Default::default(),
                        )
                        .expect("test input")
                        .value(r)
                        .to_string()
                    }
                })
                .collect();
            out.push(cells.join("|"));
        }
    }
    out
}

use arrow_array::Array;

#[test]
fn inference_and_rows_match_spark() {
    let (_d, p) = file(PROBE);
    let (schema, batches) = read(&p, None, &[]);
    let names: Vec<&str> = schema.fields().iter().map(|f| f.name().as_str()).collect();
    assert_eq!(
        names,
        ["_corrupt_record", "a", "b", "c", "d", "e", "f", "g"]
    );
    assert_eq!(
        schema.field(7).data_type(),
        &DataType::List(Arc::new(Field::new_list_field(DataType::Float64, true)))
    );
    assert!(schema.fields()[..7]
        .iter()
        .all(|f| f.data_type() == &DataType::Utf8));
    let got = rows(&batches);
    let want = [
        r#"None|1|x|1.50|true|{"z": 1, "y": [1, 2]}|None|None"#,
        "None|9223372036854775807|üé\n|2|None|None|None|[1.0, 2.5]",
        "None|99999999999999999999|None|NaN|true|None|None|None",
        "{'a': 3, b: 'single'}|None|None|None|None|None|None|None",
        r#"{"a": 01, "c": NaN, "h": -Infinity}|None|None|None|None|None|None|None"#,
        "None|5|None|None|None|None|None|None",
        "None|6|None|None|None|None|None|None",
        "[1, 2]|None|None|None|None|None|None|None",
        "42|None|None|None|None|None|None|None",
        "None|7|None|None|None|None|None|None",
        "None|1e3|None|-0.0|None|None|None|None",
        "None|12|13|1.5|None|None|None|None",
        r#"{"a": 1 /* c */, "b": "q"}|None|None|None|None|None|None|None"#,
        r#"{"a": |None|None|None|None|None|None|None"#,
        r#"None|None|None|None|None|{"y": "str"}|None|None"#,
        "None|None|None|None|None|5|None|None",
    ];
    assert_eq!(got, want);
}

#[test]
fn typed_fields_convert_as_spark_converts_them() {
    let (_d, p) = file(PROBE);
    let typed = Arc::new(Schema::new(vec![
        Field::new("a", DataType::Int32, true),
        Field::new("b", DataType::Int32, true),
        Field::new("c", DataType::Float64, true),
        Field::new("d", DataType::Boolean, true),
        Field::new("c2", DataType::Decimal128(5, 2), true),
        Field::new("_corrupt_record", DataType::Utf8, true),
    ]));
    let (_, batches) = read(&p, Some(typed), &[]);
    let got = rows(&batches);
    let lines: Vec<&str> = PROBE.lines().collect();
    let want = [
        format!("1|None|1.5|true|None|{}", lines[0]),
        format!("None|None|2.0|None|None|{}", lines[1]),
        format!("None|None|NaN|None|None|{}", lines[2]),
        format!("None|None|None|None|None|{}", lines[3]),
        format!("None|None|None|None|None|{}", lines[4]),
        "5|None|None|None|None|None".into(),
        "6|None|None|None|None|None".into(),
        "None|None|None|None|None|[1, 2]".into(),
        "None|None|None|None|None|42".into(),
        "7|None|None|None|None|None".into(),
        format!("None|None|-0.0|None|None|{}", lines[12]),
        format!("None|13|None|None|None|{}", lines[13]),
        format!("None|None|None|None|None|{}", lines[14]),
        format!("None|None|None|None|None|{}", lines[15]),
        "None|None|None|None|None|None".into(),
        "None|None|None|None|None|None".into(),
    ];
    assert_eq!(got, want);
    // Without the corrupt-record column, DROPMALFORMED keeps only records that converted.
    let two = Arc::new(Schema::new(vec![
        Field::new("a", DataType::Int64, true),
        Field::new("b", DataType::Utf8, true),
    ]));
    let (_, batches) = read(&p, Some(two), &[("mode", "DROPMALFORMED")]);
    assert_eq!(
        rows(&batches),
        [
            "1|x",
            "9223372036854775807|üé\n",
            "5|None",
            "6|None",
            "7|None",
            "None|None",
            "None|None"
        ]
    );
}

#[test]
fn leniency_options() {
    let (_d, p) = file(PROBE);
    let (schema, batches) = read(
        &p,
        None,
        &[
            ("allowNumericLeadingZeros", "true"),
            ("allowUnquotedFieldNames", "true"),
        ],
    );
    assert_eq!(schema.field(8).name(), "h");
    assert_eq!(schema.field(8).data_type(), &DataType::Float64);
    let got = rows(&batches);
    assert_eq!(got[3], "None|3|single|None|None|None|None|None|None");
    assert_eq!(got[4], "None|01|None|NaN|None|None|None|None|-inf");
    let (_, batches) = read(&p, None, &[("allowComments", "true")]);
    assert_eq!(rows(&batches)[12], "None|1|q|None|None|None|None|None");
}

#[test]
fn filters_skip_rows_early_with_the_same_answer() {
    let mut text = String::new();
    for i in 0..100 {
        text.push_str(&format!(
            "{{\"s\": \"row {i}\", \"x\": {i}, \"y\": {}.5}}\n",
            i * 2
        ));
    }
    let (_d, p) = file(&text);
    let filter = parse_expr("x < 3").expect("test input");
    let run = |pushdown: bool| {
        let mut cfg = Config::default();
        cfg.set(
            "spark.sql.json.filterPushdown.enabled",
            pushdown.to_string(),
        )
        .expect("test input");
        let scan = JsonScan::try_new(
            std::slice::from_ref(&p),
            None,
            Some(vec!["s".into(), "y".into()]),
            Some(filter.clone()),
            JsonOptions::default(),
            cfg,
        )
        .expect("test input");
        let b = scan
            .stream()
            .expect("test input")
            .collect::<ferrospark_common::Result<Vec<_>>>()
            .expect("test input");
        (
            rows(&b),
            scan.plan().metrics().get("rows_skipped_early"),
            scan.plan().metrics().get("fields_not_converted"),
        )
    };
    let (on, skipped, unconverted) = run(true);
    assert_eq!(on, ["row 0|0.5", "row 1|2.5", "row 2|4.5"]);
    assert_eq!(skipped, 97);
    assert_eq!(unconverted, 97 * 2);
    let (off, skipped, _) = run(false);
    assert_eq!(off, on);
    assert_eq!(skipped, 0);
}

#[test]
fn nested_values_multiline_and_deep_nesting() {
    let text = r#"[
  {"id": 1, "m": {"k": 1.5, "j": null}, "l": [[1], [2, 3]], "s": {"p": "x", "q": [true]}},
  {"id": 2, "m": {"k": "bad"}, "l": [], "s": null}
]"#;
    let (_d, p) = file(text);
    let (schema, batches) = read(&p, None, &[("multiLine", "true")]);
    let names: Vec<&str> = schema.fields().iter().map(|f| f.name().as_str()).collect();
    assert_eq!(names, ["id", "l", "m", "s"]);
    // `m.k` saw a double and a string: string.
    let got = rows(&batches);
    assert_eq!(got[0], "1|[[1], [2, 3]]|{j: , k: 1.5}|{p: x, q: [true]}");
    assert_eq!(got[1], "2|[]|{j: , k: bad}|None");
    let map_schema = Arc::new(Schema::new(vec![
        Field::new("id", DataType::Int64, true),
        Field::new_map(
            "m",
            "entries",
            Field::new("key", DataType::Utf8, false),
            Field::new("value", DataType::Float64, true),
            false,
            true,
        ),
        Field::new("_corrupt_record", DataType::Utf8, true),
    ]));
    let (_, batches) = read(&p, Some(map_schema), &[("multiLine", "true")]);
    let got = rows(&batches);
    // A value inside a map that does not convert nulls the whole map and marks the record,
    // with every row the record holds (Spark fails the whole record).
    assert!(got[0].starts_with("1|{k: 1.5, j: }|[\n"), "{}", got[0]);
    assert!(got[1].starts_with("2|None|[\n"), "{}", got[1]);
    let deep = "{\"a\": ".repeat(100_000);
    let (_d2, p2) = file(&format!("{deep}\n{{\"a\": 1}}\n"));
    let (_, batches) = read(&p2, None, &[]);
    let got = rows(&batches);
    assert_eq!(got.len(), 2);
    assert!(got[0].starts_with("{\"a\": {\"a\""));
    assert!(got[1].ends_with("|1"));
}

#[test]
fn lines_across_blocks_and_lines_longer_than_a_block() {
    // The stream reads about 4 MB per thread at a time: lines cross block ends, and one line
    // is longer than a whole block.
    let mut text = String::new();
    for i in 0..150_000 {
        text.push_str(&format!(
            "{{\"i\": {i}, \"s\": \"{}\"}}\n",
            "x".repeat(i % 50)
        ));
    }
    let long = "y".repeat(20 << 20);
    text.push_str(&format!("{{\"i\": -1, \"s\": \"{long}\"}}\n{{\"i\": -2}}"));
    let (_d, p) = file(&text);
    let schema = Arc::new(Schema::new(vec![
        Field::new("i", DataType::Int64, true),
        Field::new("s", DataType::Utf8, true),
    ]));
    let (_, batches) = read(&p, Some(schema), &[]);
    let mut ids = Vec::new();
    let mut long_len = 0;
    for b in &batches {
        let i = b
            .column(0)
            .as_any()
            .downcast_ref::<arrow_array::Int64Array>()
            .expect("ids");
        let s = b
            .column(1)
            .as_any()
            .downcast_ref::<arrow_array::StringArray>()
            .expect("strings");
        for r in 0..b.num_rows() {
            ids.push(i.value(r));
            if i.value(r) == -1 {
                long_len = s.value(r).len();
            } else if i.value(r) >= 0 {
                assert_eq!(s.value(r).len(), (i.value(r) % 50) as usize);
            }
        }
    }
    let want: Vec<i64> = (0..150_000).chain([-1, -2]).collect();
    assert_eq!(ids, want);
    assert_eq!(long_len, 20 << 20);
}

/// A member name is compared as written only when it is a `"`-quoted name without escapes;
/// an escaped name is decoded first, whatever names its value's objects hold.
#[test]
fn escaped_names_match_their_decoded_text() {
    let (_d, p) = file(
        "{\"\\u0069d\": {\"x\": 1}, \"n\": 2}\n{\"id\": {\"x\\u0031\": 3, \"x\": 4}, \"\\u006e\": 5}\n",
    );
    let schema = Arc::new(Schema::new(vec![
        Field::new(
            "id",
            DataType::Struct(vec![Field::new("x", DataType::Int64, true)].into()),
            true,
        ),
        Field::new("n", DataType::Int64, true),
    ]));
    let (_, batches) = read(&p, Some(schema), &[]);
    assert_eq!(rows(&batches), ["{x: 1}|2", "{x: 4}|5"]);
}

/// A FAILFAST error in a piece past the file's first names the file's line, counted across
/// the pieces before it.
#[test]
fn an_error_deep_in_the_file_names_its_line() {
    let bad = 90_000;
    let mut text = String::new();
    for i in 0..100_000 {
        if i == bad {
            text.push_str("{\"i\": oops}\n");
        } else {
            text.push_str(&format!("{{\"i\": {i}}}\n"));
        }
    }
    let (_d, p) = file(&text);
    let schema = Arc::new(Schema::new(vec![Field::new("i", DataType::Int64, true)]));
    let err = try_read(&p, Some(schema), &[("mode", "FAILFAST")]).expect_err("fails");
    assert!(
        err.to_string().contains(&format!("line {}", bad + 1)),
        "{err}"
    );
}
