use std::collections::BTreeMap;
use std::sync::Arc;

use arrow_array::{ArrayRef, Float64Array, Int32Array, ListArray, RecordBatch, StringArray};
use arrow_schema::{DataType, Field, Schema};

use super::*;

fn batch() -> RecordBatch {
    let ints: ArrayRef = Arc::new(Int32Array::from(vec![Some(1), None, Some(-3)]));
    let doubles: ArrayRef = Arc::new(Float64Array::from(vec![Some(1e10), Some(f64::NAN), None]));
    let text: ArrayRef = Arc::new(StringArray::from(vec![
        Some("a,b"),
        Some(""),
        Some("  say \"hi\"\n"),
    ]));
    let list: ArrayRef = Arc::new(ListArray::from_iter_primitive::<
        arrow_array::types::Int32Type,
        _,
        _,
    >(vec![Some(vec![Some(1), None]), None, Some(vec![])]));
    let schema = Schema::new(vec![
        Field::new("i", DataType::Int32, true),
        Field::new("d", DataType::Float64, true),
        Field::new("s", DataType::Utf8, true),
        Field::new("l", list.data_type().clone(), true),
    ]);
    RecordBatch::try_new(Arc::new(schema), vec![ints, doubles, text, list]).expect("batch")
}

#[test]
fn json_lines_leave_nulls_out_and_quote_nan() {
    let mut out = Vec::new();
    let o = JsonWriteOptions::parse(&BTreeMap::new());
    json::write_rows(&batch(), &o, "UTC", &mut out).expect("json");
    assert_eq!(
        String::from_utf8(out).expect("utf8"),
        "{\"i\":1,\"d\":1.0E10,\"s\":\"a,b\",\"l\":[1,null]}\n\
         {\"d\":\"NaN\",\"s\":\"\"}\n\
         {\"i\":-3,\"s\":\"  say \\\"hi\\\"\\n\",\"l\":[]}\n"
    );
}

#[test]
fn csv_quotes_trims_and_writes_empty_strings_quoted() {
    let b = batch();
    let b = b.project(&[0, 1, 2]).expect("project");
    let mut out = Vec::new();
    let mut opts = BTreeMap::new();
    opts.insert("header".to_string(), "true".to_string());
    let o = CsvWriteOptions::parse(&opts).expect("options");
    csv::write_header(&b.schema(), &o, &mut out);
    csv::write_rows(&b, &o, "UTC", &mut out).expect("csv");
    assert_eq!(
        String::from_utf8(out).expect("utf8"),
        "i,d,s\n1,1.0E10,\"a,b\"\n,NaN,\"\"\n-3,,\"say \\\"hi\\\"\"\n"
    );
}

#[test]
fn text_takes_one_string_column() {
    let f = WriteFormat::parse("text", &BTreeMap::new()).expect("text");
    assert!(f.check_schema(&batch().schema()).is_err());
    let one = Schema::new(vec![Field::new("v", DataType::Utf8, true)]);
    assert!(f.check_schema(&one).is_ok());
    let csv = WriteFormat::parse("csv", &BTreeMap::new()).expect("csv");
    assert!(
        csv.check_schema(&batch().schema()).is_err(),
        "arrays in CSV"
    );
}
