//! Evaluation tests: Spark's answers on nulls, NaN, -0.0, decimals, dates and overflow.

use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::Decimal128Type;
use arrow_array::{
    Array, ArrayRef, BooleanArray, Date32Array, Decimal128Array, Float64Array, Int32Array,
    Int64Array, RecordBatch, StringArray, StructArray,
};
use arrow_schema::{DataType, Field, Fields, Schema};
use ferrospark_common::FerroError;

use crate::{bind, bind_predicate, evaluate, evaluate_predicate, parse_expr, BindContext};

fn batch() -> RecordBatch {
    let inner = Fields::from(vec![Field::new("x", DataType::Int32, true)]);
    let s = StructArray::new(
        inner.clone(),
        vec![Arc::new(Int32Array::from(vec![
            Some(1),
            Some(2),
            None,
            Some(4),
            Some(5),
        ])) as ArrayRef],
        Some(vec![true, true, true, false, true].into()),
    );
    let schema = Schema::new(vec![
        Field::new("i", DataType::Int32, true),
        Field::new("d", DataType::Float64, true),
        Field::new("s", DataType::Utf8, true),
        Field::new("q", DataType::Decimal128(15, 2), true),
        Field::new("dt", DataType::Date32, true),
        Field::new("big", DataType::Int64, true),
        Field::new("st", DataType::Struct(inner), true),
    ]);
    RecordBatch::try_new(
        Arc::new(schema),
        vec![
            Arc::new(Int32Array::from(vec![
                Some(1),
                None,
                Some(3),
                Some(-4),
                Some(5),
            ])),
            Arc::new(Float64Array::from(vec![
                Some(f64::NAN),
                Some(-0.0),
                Some(0.0),
                None,
                Some(f64::INFINITY),
            ])),
            Arc::new(StringArray::from(vec![
                Some("apple"),
                Some(""),
                None,
                Some("äpfel"),
                Some("a_c"),
            ])),
            Arc::new(
                Decimal128Array::from(vec![Some(2350), Some(2400), None, Some(-1), Some(999_999)])
                    .with_precision_and_scale(15, 2)
                    .expect("valid"),
            ),
            Arc::new(Date32Array::from(vec![
                Some(9131),
                Some(9200),
                None,
                Some(0),
                Some(9220),
            ])),
            Arc::new(Int64Array::from(vec![
                Some(i64::MAX),
                Some(1),
                None,
                Some(0),
                Some(-1),
            ])),
            Arc::new(s),
        ],
    )
    .expect("valid batch")
}

/// Rows (by position) where the predicate is true, false, and NULL.
/// The values of expression `text` over [`batch`].
fn values_of(text: &str) -> ArrayRef {
    let b = batch();
    let schema = b.schema();
    let e = bind(
        &parse_expr(text).expect("parses"),
        &BindContext::new(&schema),
    )
    .expect("binds");
    evaluate(&e, &b)
        .expect("evaluates")
        .into_array(b.num_rows())
        .expect("array")
}

fn truth(text: &str) -> (Vec<usize>, Vec<usize>, Vec<usize>) {
    let b = batch();
    let e = parse_expr(text).unwrap_or_else(|e| panic!("{text}: {e}"));
    let p = bind_predicate(&e, &BindContext::new(&b.schema()))
        .unwrap_or_else(|e| panic!("{text}: {e}"));
    let r = evaluate_predicate(&p, &b).unwrap_or_else(|e| panic!("{text}: {e}"));
    let mut t = (vec![], vec![], vec![]);
    for i in 0..r.len() {
        if r.is_null(i) {
            t.2.push(i)
        } else if r.value(i) {
            t.0.push(i)
        } else {
            t.1.push(i)
        }
    }
    t
}

fn rows(text: &str) -> Vec<usize> {
    truth(text).0
}

#[test]
fn three_valued_logic() {
    assert_eq!(truth("i > 2"), (vec![2, 4], vec![0, 3], vec![1]));
    assert_eq!(
        truth("i > 2 OR i IS NULL"),
        (vec![1, 2, 4], vec![0, 3], vec![])
    );
    assert_eq!(truth("NOT (i > 2)"), (vec![0, 3], vec![2, 4], vec![1]));
    assert_eq!(truth("i > 2 AND NULL"), (vec![], vec![0, 3], vec![1, 2, 4]));
    assert_eq!(truth("i IN (1, NULL)"), (vec![0], vec![], vec![1, 2, 3, 4]));
    assert_eq!(truth("i NOT IN (1, 3)"), (vec![3, 4], vec![0, 2], vec![1]));
    assert_eq!(rows("i <=> NULL"), vec![1]);
    assert_eq!(rows("NOT (i <=> 1)"), vec![1, 2, 3, 4]);
}

#[test]
fn in_lists_of_constants_answer_as_their_comparisons_do() {
    // Lists of non-NULL constants are tested as one hashed set; each must give what the chain
    // of equalities gives, NULL rows and NOT IN included.
    for (list, ors) in [
        ("i IN (1, 5, 7)", "i = 1 OR i = 5 OR i = 7"),
        ("i NOT IN (1, -4)", "NOT (i = 1 OR i = -4)"),
        (
            "big IN (9223372036854775807, -1)",
            "big = 9223372036854775807 OR big = -1",
        ),
        (
            "s IN ('apple', 'äpfel', 'x')",
            "s = 'apple' OR s = 'äpfel' OR s = 'x'",
        ),
        ("s NOT IN ('', 'a_c')", "NOT (s = '' OR s = 'a_c')"),
        (
            "s IN ('apple', 'a longer word than eight')",
            "s = 'apple' OR s = 'a longer word than eight'",
        ),
        (
            "substring(s, 1, 2) IN ('ap', 'äp', '')",
            "substring(s, 1, 2) = 'ap' OR substring(s, 1, 2) = 'äp' OR substring(s, 1, 2) = ''",
        ),
        (
            "dt IN (DATE '1995-01-01', DATE '1970-01-01')",
            "dt = DATE '1995-01-01' OR dt = DATE '1970-01-01'",
        ),
        ("q IN (23.50, 24)", "q = 23.50 OR q = 24"),
        ("i IN (1, 3, NULL)", "i = 1 OR i = 3 OR NULL"),
    ] {
        assert_eq!(truth(list), truth(ors), "{list}");
    }
    assert_eq!(rows("s IN ('apple', 'a_c')"), vec![0, 4]);
}

#[test]
fn nan_and_negative_zero_follow_spark() {
    // NaN = NaN and NaN is above every value, infinity included; -0.0 = 0.0.
    assert_eq!(rows("d = CAST('NaN' AS DOUBLE)"), vec![0]);
    assert_eq!(rows("d > CAST('Infinity' AS DOUBLE)"), vec![0]);
    assert_eq!(rows("d = 0.0"), vec![1, 2]);
    assert_eq!(rows("d = -0.0"), vec![1, 2]);
    assert_eq!(rows("d > 5"), vec![0, 4]);
    assert_eq!(rows("d < 5"), vec![1, 2]);
    assert_eq!(rows("isnan(d)"), vec![0]);
    assert_eq!(rows("d IN (0.0, CAST('NaN' AS DOUBLE))"), vec![0, 1, 2]);
}

#[test]
fn decimals_compare_with_integer_literals_exactly() {
    assert_eq!(rows("q < 24"), vec![0, 3]);
    assert_eq!(rows("q = 24"), vec![1]);
    assert_eq!(rows("q = 24.00"), vec![1]);
    assert_eq!(rows("q BETWEEN 23.5 AND 24"), vec![0, 1]);
    assert_eq!(rows("q * 2 = 47"), vec![0]);
    assert_eq!(rows("q + 0.005 > 23.504"), vec![0, 1, 4]);
}

#[test]
fn decimal_arithmetic_types_and_rounding_follow_spark() {
    let b = batch();
    let schema = b.schema();
    let ctx = BindContext::new(&schema);
    let p = bind(&parse_expr("q / 3").expect("parses"), &ctx).expect("binds");
    // The literal 3 is DECIMAL(1,0) (Spark's literalPickMinimumPrecision), so
    // decimal(15,2) / decimal(1,0) -> scale max(6, 2+1+1) = 6, precision 15-2+0+6 = 19.
    assert_eq!(p.data_type(), DataType::Decimal128(19, 6));
    let v = evaluate(&p, &b)
        .expect("evaluates")
        .into_array(5)
        .expect("array");
    let v = v.as_primitive::<Decimal128Type>();
    // 23.50 / 3 = 7.833333 (HALF_UP at 6 digits); 9999.99 / 3 = 3333.33; -0.01 / 3 = -0.003333
    assert_eq!(v.value(0), 7_833_333);
    assert_eq!(v.value(4), 3_333_330_000);
    assert_eq!(v.value(3), -3_333);
    let p = bind(&parse_expr("q / i").expect("parses"), &ctx).expect("binds");
    // with a column the INT is DECIMAL(10,0): scale max(6, 2+10+1) = 13, precision 26
    assert_eq!(p.data_type(), DataType::Decimal128(26, 13));
    let v = evaluate(&p, &b)
        .expect("evaluates")
        .into_array(5)
        .expect("array");
    // 23.50 / 1 and 9999.99 / 5 = 1999.998
    assert_eq!(
        v.as_primitive::<Decimal128Type>().value(0),
        235_000_000_000_000
    );
    assert_eq!(
        v.as_primitive::<Decimal128Type>().value(4),
        19_999_980_000_000_000
    );
}

#[test]
fn dates_and_strings() {
    assert_eq!(
        rows("dt BETWEEN DATE '1995-01-01' AND DATE '1995-03-31'"),
        vec![0, 1, 4]
    );
    assert_eq!(rows("dt < DATE '1995-03-31'"), vec![0, 1, 3]);
    assert_eq!(rows("dt = '1970-01-01'"), vec![3]);
    assert_eq!(rows("s LIKE 'a%'"), vec![0, 4]);
    assert_eq!(rows("s LIKE 'a\\\\_c'"), vec![4]);
    assert_eq!(rows("s LIKE '_pfel'"), vec![3]);
    assert_eq!(rows("s = ''"), vec![1]);
    assert_eq!(rows("s > 'b'"), vec![3]);
    assert_eq!(rows("startswith(s, 'ap')"), vec![0]);
    assert_eq!(rows("length(s) = 5"), vec![0, 3]);
    assert_eq!(rows("s ILIKE 'APP%'"), vec![0]);
}

#[test]
fn struct_fields_inherit_parent_nulls() {
    assert_eq!(truth("st.x > 1"), (vec![1, 4], vec![0], vec![2, 3]));
    assert_eq!(rows("st.x IS NULL"), vec![2, 3]);
    assert_eq!(
        rows("`st.x` > 1"),
        vec![1, 4],
        "a dotted name resolves as a path"
    );
}

#[test]
fn ansi_overflow_and_division_by_zero_raise() {
    let b = batch();
    let schema = b.schema();
    let ctx = BindContext::new(&schema);
    for (text, code) in [
        ("big + 1 > 0", "ARITHMETIC_OVERFLOW"),
        ("i / 0 > 1", "DIVIDE_BY_ZERO"),
        ("q / 0 > 1", "DIVIDE_BY_ZERO"),
        ("CAST(s AS INT) > 1", "CAST_INVALID_INPUT"),
    ] {
        let p = bind_predicate(&parse_expr(text).expect("parses"), &ctx).expect("binds");
        match evaluate_predicate(&p, &b) {
            Err(FerroError::Arithmetic(m)) => assert!(m.contains(code), "{text}: {m}"),
            other => panic!("{text}: expected {code}, got {other:?}"),
        }
    }
}

#[test]
fn integer_division_is_fractional() {
    assert_eq!(rows("i / 2 = 0.5"), vec![0]);
    assert_eq!(rows("i % 2 = 1"), vec![0, 2, 4]);
    assert_eq!(rows("-i = -3"), vec![2]);
}

#[test]
fn analysis_errors_name_the_culprit() {
    let b = batch();
    let schema = b.schema();
    let ctx = BindContext::new(&schema);
    let err = |t: &str| match bind_predicate(&parse_expr(t).expect("parses"), &ctx) {
        Err(FerroError::Analysis(m)) => m,
        other => panic!("{t}: expected an analysis error, got {other:?}"),
    };
    assert!(err("nope > 1").contains("`nope`"));
    assert!(err("ii > 1").contains("`i`"), "suggests the near name");
    assert!(err("i AND d").contains("BOOLEAN"));
    // Spark reads numbers, booleans and bytes as text for LIKE; an array it refuses.
    assert!(err("array(i) LIKE 'a%'").contains("STRING"));
    assert_eq!(rows("i LIKE '3%'"), vec![2]);
    assert!(err("i + 1").contains("not a boolean"));
    assert!(err("st > 1").contains("STRUCT"));
    assert!(err("frob(i) > 1").contains("frob"));
    assert!(err("i = true").contains("incompatible"));
}

#[test]
fn case_insensitive_resolution_like_spark() {
    assert_eq!(rows("I > 2"), vec![2, 4]);
}

#[test]
fn constant_subtrees_fold_once() {
    let b = batch();
    let p = bind(
        &parse_expr("i > 1 + 2").expect("parses"),
        &BindContext::new(&b.schema()),
    )
    .expect("binds");
    let mut literals = 0;
    p.walk(&mut |e| literals += usize::from(matches!(e, crate::PhysicalExpr::Literal(_))));
    assert_eq!(literals, 1, "{p}");
    let t = BooleanArray::from(vec![false, false, false, false, true]);
    let got = evaluate_predicate(&p, &b).expect("evaluates");
    assert_eq!(
        got.iter().map(|v| v.unwrap_or(false)).collect::<Vec<_>>(),
        t.iter().map(|v| v.unwrap_or(false)).collect::<Vec<_>>()
    );
}

#[test]
fn fused_ranges_agree_with_the_general_path() {
    // Upper bound first never takes the fused path, so each pair compares the two paths.
    for (fused, general) in [
        (
            "dt BETWEEN DATE '1995-01-01' AND DATE '1995-03-31'",
            "dt <= DATE '1995-03-31' AND dt >= DATE '1995-01-01'",
        ),
        (
            "dt > DATE '1995-01-01' AND dt < DATE '1995-03-31'",
            "dt < DATE '1995-03-31' AND dt > DATE '1995-01-01'",
        ),
        ("i >= -4 AND i <= 3", "i <= 3 AND i >= -4"),
        ("q >= 23.50 AND q <= 24", "q <= 24 AND q >= 23.50"),
        ("big >= 0 AND big <= 1", "big <= 1 AND big >= 0"),
    ] {
        assert_eq!(truth(fused), truth(general), "{fused}");
    }
    assert_eq!(rows("i >= -4 AND i <= 3"), vec![0, 2, 3]);
}

#[test]
fn fused_ranges_agree_at_type_limits_and_word_edges() {
    let extremes = [i64::MIN, i64::MIN + 1, -1, 0, 1, i64::MAX - 1, i64::MAX];
    for len in [1usize, 63, 64, 65, 130] {
        let values: Vec<Option<i64>> = (0..len)
            .map(|k| match k % 11 {
                10 => None,
                m if m < extremes.len() => Some(extremes[m]),
                m => Some(m as i64 * 7 - 30),
            })
            .collect();
        let schema = Arc::new(Schema::new(vec![Field::new("v", DataType::Int64, true)]));
        let data =
            RecordBatch::try_new(schema, vec![Arc::new(Int64Array::from(values))]).expect("batch");
        let eval = |text: &str| {
            let e = parse_expr(text).expect("parse");
            let schema = data.schema();
            let ctx = BindContext::new(&schema);
            let p = bind(&e, &ctx).expect("bind");
            let v = evaluate(&p, &data).expect("eval");
            v.into_array(data.num_rows())
                .expect("array")
                .as_boolean()
                .clone()
        };
        let bounds = [
            "-30",
            "-1",
            "0",
            "5",
            "9223372036854775807",
            "9223372036854775806",
        ];
        for lo in bounds {
            for hi in bounds {
                for (gt, lt) in [(">=", "<="), (">", "<"), (">=", "<"), (">", "<=")] {
                    let fused = format!("v {gt} {lo} AND v {lt} {hi}");
                    let general = format!("v {lt} {hi} AND v {gt} {lo}");
                    assert_eq!(eval(&fused), eval(&general), "{fused} over {len} rows");
                }
            }
        }
    }
}

#[test]
fn interval_text_reads_as_sparks_cast_to_an_interval() {
    use crate::interval::interval_text_micros;
    let minute = 60_000_000;
    assert_eq!(
        interval_text_micros("10 minutes").expect("not months"),
        Some(10 * minute)
    );
    assert_eq!(
        interval_text_micros("INTERVAL 1 hour 30 minutes").expect("not months"),
        Some(90 * minute)
    );
    assert_eq!(
        interval_text_micros(" -5 minutes ").expect("not months"),
        Some(-5 * minute)
    );
    assert_eq!(
        interval_text_micros("1.5 seconds").expect("not months"),
        Some(1_500_000)
    );
    assert_eq!(interval_text_micros("soon").expect("not months"), None);
    assert_eq!(
        interval_text_micros("10 parsecs").expect("not months"),
        None
    );
    assert!(interval_text_micros("1 month").is_err());
}

#[test]
fn structs_are_built_with_sparks_field_names() {
    let b = batch();
    let schema = b.schema();
    let ctx = BindContext::new(&schema);
    let v = values_of("named_struct('n', i, 'text', s)");
    let v = v.as_struct();
    assert_eq!(v.column_names(), vec!["n", "text"]);
    assert_eq!(
        v.column(0)
            .as_primitive::<arrow_array::types::Int32Type>()
            .value(4),
        5
    );
    assert!(v.column(1).is_null(2));
    // `struct` names a field after the column it reads, else colN.
    let plain = bind(&parse_expr("struct(i, i + 1)").expect("parses"), &ctx).expect("binds");
    match plain.data_type() {
        DataType::Struct(f) => {
            let names: Vec<&str> = f.iter().map(|f| f.name().as_str()).collect();
            assert_eq!(names, ["i", "col2"]);
        }
        other => panic!("not a struct: {other}"),
    }
    let odd = parse_expr("named_struct('n', i, 'text')").expect("parses");
    assert!(bind(&odd, &ctx).is_err());
    let unnamed = parse_expr("named_struct(s, i)").expect("parses");
    assert!(matches!(bind(&unnamed, &ctx), Err(FerroError::Analysis(m)) if m.contains("FOLDABLE")));
}

#[test]
fn interval_text_casts_to_an_interval_or_null() {
    let v = values_of(
        "CAST(CASE WHEN i > 2 THEN '0 00:10:00' ELSE NULL END AS INTERVAL DAY TO SECOND)",
    );
    let v = v.as_primitive::<arrow_array::types::DurationMicrosecondType>();
    assert_eq!(v.value(2), 600_000_000);
    assert!(v.is_null(0) && v.is_null(3));
    // Without fields, Spark's calendar interval: months, days and microseconds apart.
    let v =
        values_of("CAST(CASE WHEN i > 2 THEN '1 month 10 minutes' ELSE 'soon' END AS INTERVAL)");
    let v = v.as_primitive::<arrow_array::types::IntervalMonthDayNanoType>();
    assert_eq!(
        crate::interval::CalendarInterval::from_arrow(v.value(2)).text(),
        "1 months 10 minutes"
    );
    assert!(v.is_null(0));
}

/// Spark's interval literal spellings, their types, and their refusals.
#[test]
fn interval_literals_take_every_spark_spelling() {
    use crate::parser::parse_expr;
    let lit = |sql: &str| match parse_expr(sql).expect(sql) {
        crate::Expr::Literal(l) => l.to_string(),
        other => panic!("{sql}: {other:?}"),
    };
    assert_eq!(
        lit("INTERVAL 2 years 4 months"),
        "INTERVAL '2-4' YEAR TO MONTH"
    );
    assert_eq!(
        lit("interval -'-1-1' year to month"),
        "INTERVAL '1-1' YEAR TO MONTH"
    );
    assert_eq!(lit("interval 3 week"), "INTERVAL '21' DAY");
    assert_eq!(
        lit("interval '-100' day '40' hour '80' minute '299.889987299' second"),
        "INTERVAL '-98 06:35:00.110013' DAY TO SECOND"
    );
    assert_eq!(lit("interval 'interval 1 day'"), "INTERVAL '1' DAY");
    let class = |sql: &str| parse_expr(sql).expect_err(sql).to_string();
    assert!(class("interval 1 month 1 day").contains("_LEGACY_ERROR_TEMP_0029"));
    assert!(class("interval '1 day 2' day").contains("_LEGACY_ERROR_TEMP_0026"));
    assert!(class("interval '10-9' year to month '2-1' year to month")
        .contains("_LEGACY_ERROR_TEMP_0024"));
    assert!(class("interval '1' year to second").contains("UNSUPPORTED_FROM_TO_EXPRESSION"));
    assert!(class("interval '1.2'").contains("INVALID_TYPED_LITERAL"));
    assert!(class("interval 1 fake_unit").contains("PARSE_SYNTAX_ERROR"));
}

/// Names resolve as Spark's `col(name)` does: a column (exactly, else equal but for case), a
/// column literally named with a dot before a field path, a field path under a column
/// found whatever its case, and an unknown head as the whole name's error.
#[test]
fn a_name_is_a_column_or_a_field_path() {
    use crate::{resolve_column_or_path, ColumnRef};
    let s = DataType::Struct(Fields::from(vec![Field::new("x", DataType::Int64, true)]));
    let schema = Schema::new(vec![
        Field::new("Id", DataType::Int64, true),
        Field::new("a.b", DataType::Int64, true),
        Field::new("s", s, true),
    ]);
    let r = |n| resolve_column_or_path(&schema, n);
    assert_eq!(r("id").expect("id"), ColumnRef::Column(0));
    assert_eq!(r("a.b").expect("a.b"), ColumnRef::Column(1));
    assert_eq!(r("S.x").expect("S.x"), ColumnRef::FieldPath(2, vec!["x"]));
    assert_eq!(
        r("s.x.y").expect("s.x.y"),
        ColumnRef::FieldPath(2, vec!["x", "y"])
    );
    let e = r("t.x").expect_err("t.x");
    assert!(e.to_string().contains("`t.x`"), "{e}");
    assert!(r("nope").is_err());
}

/// The error of `text` over [`batch`], raised when it is bound (constant) or evaluated.
fn run_error(text: &str) -> String {
    let b = batch();
    let e = parse_expr(text).expect("parses");
    match bind(&e, &BindContext::new(&b.schema())).and_then(|p| evaluate(&p, &b)) {
        Ok(_) => panic!("{text} gave no error"),
        Err(e) => e.to_string(),
    }
}

/// The first row of `text`'s values, printed by Arrow.
fn first_shown(text: &str) -> String {
    let v = values_of(text);
    let shown = arrow_cast::display::ArrayFormatter::try_new(v.as_ref(), &Default::default())
        .expect("formats")
        .value(0)
        .to_string();
    shown
}

#[test]
fn bitwise_operators_follow_java() {
    assert_eq!(first_shown("5 & 3"), "1");
    assert_eq!(first_shown("5 | 3"), "7");
    assert_eq!(first_shown("5 ^ 3"), "6");
    assert_eq!(first_shown("~5"), "-6");
    // Shifts bind under `+` and over `&`, left to right; counts modulo the width.
    assert_eq!(first_shown("1 << 1 + 2"), "8");
    assert_eq!(first_shown("2 >> 1 << 1"), "2");
    assert_eq!(first_shown("1 & 2 >> 1"), "1");
    assert_eq!(first_shown("1 << 33"), "2");
    assert_eq!(first_shown("-8 >> 1"), "-4");
    assert_eq!(first_shown("-8 >>> 28"), "15");
    assert_eq!(first_shown("shiftrightunsigned(-8L, 60)"), "15");
    assert_eq!(first_shown("bit_count(-1)"), "64");
    assert_eq!(first_shown("bit_count(true)"), "1");
    assert_eq!(first_shown("getbit(11, 3)"), "1");
    assert_eq!(first_shown("getbit(11, 2)"), "0");
    assert_eq!(values_of("5 & i").data_type(), &DataType::Int32);
    let err = run_error("getbit(11, 32)");
    assert!(err.contains("BIT_POSITION_RANGE"), "{err}");
}

#[test]
fn arrays_and_maps_follow_spark() {
    assert_eq!(first_shown("array(1, 2, 3)"), "[1, 2, 3]");
    assert_eq!(first_shown("array(1, 2, 3)[0]"), "1");
    assert_eq!(first_shown("element_at(array(1, 2, 3), -1)"), "3");
    assert_eq!(first_shown("get(array(1, 2, 3), 3)"), "");
    assert_eq!(first_shown("size(array(1, NULL))"), "2");
    assert_eq!(first_shown("array_contains(array(1, NULL), 2)"), "");
    assert_eq!(first_shown("array_contains(array(1, NULL), 1)"), "true");
    assert_eq!(first_shown("sort_array(array(3, NULL, 1))"), "[, 1, 3]");
    assert_eq!(
        first_shown("sort_array(array(3, NULL, 1), false)"),
        "[3, 1, ]"
    );
    assert_eq!(first_shown("array_compact(array(1, NULL, 2))"), "[1, 2]");
    assert_eq!(first_shown("array_append(array(1), 2)"), "[1, 2]");
    assert_eq!(first_shown("array_prepend(array(1), 2)"), "[2, 1]");
    assert_eq!(first_shown("map(1, 'a', 2, 'b')[2]"), "b");
    assert_eq!(first_shown("map_keys(map(1, 'a', 2, 'b'))"), "[1, 2]");
    assert_eq!(first_shown("element_at(map('k', 1.5), 'x')"), "");
    // Element types widen as Spark's: an INT and a DOUBLE make an array of DOUBLE.
    assert_eq!(
        values_of("array(1, 2.5D)").data_type(),
        &DataType::List(Arc::new(Field::new("element", DataType::Float64, true)))
    );
    for (text, class) in [
        ("array(1, 2)[2]", "INVALID_ARRAY_INDEX"),
        ("element_at(array(1, 2), 0)", "INVALID_INDEX_OF_ZERO"),
        ("map(1, 'a', 1, 'b')", "DUPLICATED_MAP_KEY"),
    ] {
        let err = run_error(text);
        assert!(err.contains(class), "{text}: {err}");
    }
}

/// Every row of `text`'s values, printed by Arrow.
fn all_shown(text: &str) -> Vec<String> {
    let v = values_of(text);
    let f = arrow_cast::display::ArrayFormatter::try_new(v.as_ref(), &Default::default())
        .expect("formats");
    (0..v.len()).map(|i| f.value(i).to_string()).collect()
}

#[test]
fn lambdas_run_over_every_element_with_the_columns_of_their_row() {
    // `i` is 1, NULL, 3, -4, 5: each row's lambda sees its own row's value.
    assert_eq!(
        all_shown("transform(array(1, 2), x -> x * i)"),
        ["[1, 2]", "[, ]", "[3, 6]", "[-4, -8]", "[5, 10]"]
    );
    assert_eq!(
        first_shown("transform(array(10, 20), (x, k) -> x + k)"),
        "[10, 21]"
    );
    assert_eq!(first_shown("transform(array(1, 2), 0)"), "[0, 0]");
    // An inner lambda reads the outer one's parameter and shadows a name it reuses.
    assert_eq!(
        first_shown("transform(array(array(1, 2), array(3)), a -> transform(a, x -> x + size(a)))"),
        "[[3, 4], [4]]"
    );
    assert_eq!(
        first_shown("transform(array(1), x -> transform(array(5), x -> x))"),
        "[[5]]"
    );
    assert_eq!(
        first_shown("filter(array(1, NULL, 3, 4), x -> x > 2)"),
        "[3, 4]"
    );
    assert_eq!(
        first_shown("filter(array(5, 6, 7), (x, k) -> k != 1)"),
        "[5, 7]"
    );
    // exists / forall are three-valued.
    assert_eq!(first_shown("exists(array(1, NULL), x -> x > 1)"), "");
    assert_eq!(first_shown("exists(array(1, NULL, 3), x -> x > 1)"), "true");
    assert_eq!(first_shown("forall(array(1, NULL), x -> x > 1)"), "false");
    assert_eq!(first_shown("forall(array(2, NULL), x -> x > 1)"), "");
    assert_eq!(first_shown("forall(array(2, 3), x -> x > 1)"), "true");
    assert_eq!(
        all_shown("aggregate(array(1, 2, 3), 0, (acc, x) -> acc + x + i)"),
        ["9", "", "15", "-6", "21"]
    );
    assert_eq!(
        first_shown("aggregate(array(1, 2, 3), 0, (acc, x) -> acc + x, acc -> acc * 10)"),
        "60"
    );
    assert_eq!(
        first_shown("aggregate(CAST(NULL AS ARRAY<INT>), 0, (acc, x) -> acc + x)"),
        ""
    );
    assert_eq!(first_shown("aggregate(array(), 5, (acc, x) -> acc)"), "5");
    assert_eq!(
        first_shown("zip_with(array(1, 2, 3), array('a'), (x, y) -> concat(y, x))"),
        "[a1, , ]"
    );
    assert_eq!(
        first_shown("transform_values(map(1, 10, 2, 20), (k, v) -> k + v)"),
        "{1: 11, 2: 22}"
    );
    assert_eq!(
        first_shown("transform_keys(map(1, 10, 2, 20), (k, v) -> k * 3)"),
        "{3: 10, 6: 20}"
    );
    assert_eq!(
        first_shown("map_filter(map(1, 10, 2, 20), (k, v) -> v > 15)"),
        "{2: 20}"
    );
    for (text, class) in [
        (
            "upper(x -> x)",
            "INVALID_LAMBDA_FUNCTION_CALL.NON_HIGHER_ORDER_FUNCTION",
        ),
        ("transform(array(1), (a, b, c) -> a)", "NUM_ARGS_MISMATCH"),
        (
            "transform_keys(map(1, 1, 2, 2), (k, v) -> 0)",
            "DUPLICATED_MAP_KEY",
        ),
        ("filter(array(1), x -> x)", "UNEXPECTED_INPUT_TYPE"),
        (
            "aggregate(array(1), 0, (acc, x) -> acc + 1.5)",
            "UNEXPECTED_INPUT_TYPE",
        ),
    ] {
        let err = run_error(text);
        assert!(err.contains(class), "{text}: {err}");
    }
}

/// The error of parsing and binding `text` over [`batch`].
fn bind_error(text: &str) -> String {
    let b = batch();
    match parse_expr(text) {
        Err(e) => e.to_string(),
        Ok(e) => bind(&e, &BindContext::new(&b.schema()))
            .map(|_| ())
            .expect_err(text)
            .to_string(),
    }
}

#[test]
fn datetime_literals_and_operands_follow_spark() {
    let all: Vec<usize> = (0..batch().num_rows()).collect();
    for text in [
        "timestamp_ltz'2011-11-11 12:12:12' = TIMESTAMP '2011-11-11 12:12:12'",
        "timestamp_ltz \"2015-07-23 12:12:12\" = TIMESTAMP '2015-07-23 12:12:12'",
        "date '2001-10-01' - '2001-09-28' = INTERVAL '3' DAY",
        "'2001-10-01' - date '2001-09-28' = INTERVAL '3' DAY",
        "(date '2001-09-28' - null) IS NULL",
        "(null + date '2001-09-28') IS NULL",
        // Spark 4.3: a NULL timestamp, no longer BINARY_OP_DIFF_TYPES.
        "(null + timestamp '2011-11-11 11:11:11') IS NULL",
        "(timestamp '2011-11-11 11:11:11' + null) IS NULL",
        "timestamp '2011-11-11 11:11:11' - '2011-11-11 11:11:10' = INTERVAL '1' SECOND",
        "timestampdiff(MONTH, TIMESTAMP '2022-01-31 10:00:00', TIMESTAMP '2022-02-28 09:59:59') = 0",
        "datediff(QUARTER, DATE '2022-02-25', DATE '2023-05-25') = 5",
        "timediff(HOUR, TIMESTAMP '2022-02-14 01:02:03', TIMESTAMP '2022-02-14 12:00:03') = 10",
        "timestamp_millis(1230219000123) = TIMESTAMP '2008-12-25 15:30:00.123'",
        "timestamp_seconds(1.23) = TIMESTAMP '1970-01-01 00:00:01.23'",
    ] {
        assert_eq!(rows(text), all, "{text}");
    }
    for (text, class) in [
        ("date'015'", "[INVALID_TYPED_LITERAL]"),
        ("date '2011-11-11' + '1'", "[DATATYPE_MISMATCH.UNEXPECTED_INPUT_TYPE]"),
        ("date '2011-11-11' + 1L", "[DATATYPE_MISMATCH.UNEXPECTED_INPUT_TYPE]"),
        (
            "timestamp '2011-11-11 11:11:11' + '1'",
            "[DATATYPE_MISMATCH.BINARY_OP_WRONG_TYPE]",
        ),
        (
            "timestampdiff('MINUTE', TIMESTAMP '2022-02-14 01:02:03', TIMESTAMP '2022-02-14 02:00:03')",
            "[INVALID_PARAMETER_VALUE.DATETIME_UNIT]",
        ),
        (
            "date_add('QUARTER', 5, DATE '2022-02-25')",
            "[INVALID_PARAMETER_VALUE.DATETIME_UNIT]",
        ),
        ("timestamp_millis(1.5)", "[DATATYPE_MISMATCH.UNEXPECTED_INPUT_TYPE]"),
        (
            "CAST(null AS INT) + timestamp '2011-11-11 11:11:11'",
            "[DATATYPE_MISMATCH.BINARY_OP_DIFF_TYPES]",
        ),
        (
            "timestamp '2011-11-11 11:11:11' + true",
            "[DATATYPE_MISMATCH.BINARY_OP_DIFF_TYPES]",
        ),

    ] {
        let e = bind_error(text);
        assert!(e.contains(class), "{text}: {e}");
    }
}

/// `timestampdiff` keeps its unit as written in the name (`F.timestamp_diff("second", ...)`
/// reaches the parser without the SQL text's name), and binds it in any case.
#[test]
fn timestampdiff_is_named_with_the_unit_as_written() {
    let e = parse_expr("timestampdiff(second, ts_a, ts_b)").expect("parses");
    assert_eq!(e.output_name(), "timestampdiff(second, ts_a, ts_b)");
    let all: Vec<usize> = (0..batch().num_rows()).collect();
    assert_eq!(
        rows("timestampdiff(second, TIMESTAMP '2022-01-01 00:00:00', TIMESTAMP '2022-01-01 00:01:00') = 60"),
        all
    );
}
