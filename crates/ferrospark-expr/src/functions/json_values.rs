//! `from_json`, `to_json` and `schema_of_json`: JSON text to typed values and back, with the
//! JSON reader's own conversions (`crate::json`), as Spark's `JsonToStructs`,
//! `StructsToJson` and `SchemaOfJson` run its `JacksonParser`, `JacksonGenerator` and
//! `JsonInferSchema`.
//!
//! `from_json` reads each string as one record: a struct keeps the fields that convert
//! (Spark 4's partial results) and is all NULL for text that is not JSON; an array or a map
//! with a value that does not convert is NULL; NULL, empty or blank text gives NULL. A
//! string field named as `columnNameOfCorruptRecord` receives a malformed record's text.
//! `mode` is `PERMISSIVE` or `FAILFAST` (`MALFORMED_RECORD_IN_PARSING`).

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use arrow_array::builder::StringBuilder;
use arrow_array::cast::AsArray;
use arrow_array::{Array, ArrayRef, ListArray, StringArray, StructArray};
use arrow_buffer::{NullBuffer, OffsetBuffer};
use arrow_schema::{DataType, Field, Fields};
use ferrospark_common::{Config, FerroError, Result};

use super::binary::{fold_argument, foldable_text};
use super::{Args, Bound, Call, ScalarFunction};
use crate::json::convert::convert_spans;
use crate::json::infer::{JType, Untyped};
use crate::json::lexer::{Kind, Lexer, Span};
use crate::json::schema_text::parse_schema_text;
use crate::json::write::{render_values, JsonWriteOptions};
use crate::json::JsonOptions;
use crate::physical::PhysicalExpr;
use crate::text_options::ParseMode;
use crate::types::spark_type_name;

/// What `from_json` reads with: the options, the target type and the session's settings.
#[derive(Debug)]
pub struct FromJson {
    options: JsonOptions,
    /// The type asked for, with the corrupt-record field (when it names one) still in it.
    target: DataType,
    /// The position of the corrupt-record field in a struct target.
    corrupt: Option<usize>,
    /// A struct target's fields without the corrupt-record field: the ones read.
    read: Fields,
    cfg: Config,
}

/// What `to_json` writes with.
#[derive(Debug)]
pub struct ToJson {
    options: JsonWriteOptions,
    session_tz: String,
}

/// `from_json`, `to_json` (schema_of_json folds while binding: its input is a constant).
#[derive(Debug, Clone)]
pub enum JsonValueFn {
    /// JSON text to the type asked for.
    FromJson(Arc<FromJson>),
    /// A struct, array or map to JSON text.
    ToJson(Arc<ToJson>),
}

impl PartialEq for JsonValueFn {
    fn eq(&self, other: &Self) -> bool {
        match (self, other) {
            (JsonValueFn::FromJson(a), JsonValueFn::FromJson(b)) => Arc::ptr_eq(a, b),
            (JsonValueFn::ToJson(a), JsonValueFn::ToJson(b)) => Arc::ptr_eq(a, b),
            _ => false,
        }
    }
}

impl JsonValueFn {
    /// Spark's name.
    pub fn name(&self) -> &'static str {
        match self {
            JsonValueFn::FromJson(_) => "from_json",
            JsonValueFn::ToJson(_) => "to_json",
        }
    }

    pub(crate) fn evaluate(&self, args: &Args) -> Result<ArrayRef> {
        match self {
            JsonValueFn::FromJson(f) => f.read(args),
            JsonValueFn::ToJson(t) => {
                let values = args.full(0)?;
                let texts = render_values(&values, &t.options, &t.session_tz)?;
                Ok(Arc::new(texts.into_iter().collect::<StringArray>()))
            }
        }
    }
}

/// How one input string reads.
enum Root {
    /// NULL, empty or blank: the result is NULL.
    Absent,
    /// Not JSON.
    Malformed,
    /// The outermost value.
    Value(Span),
}

impl FromJson {
    fn read(&self, args: &Args) -> Result<ArrayRef> {
        let input = args.full(0)?;
        let text = input.as_string::<i32>();
        let n = text.len();
        let bytes = text.values().as_slice();
        let offsets = text.value_offsets();
        let o = &self.options;
        let roots: Vec<Root> = (0..n)
            .map(|i| {
                let (s, e) = (offsets[i] as usize, offsets[i + 1] as usize);
                if text.is_null(i) || bytes[s..e].iter().all(u8::is_ascii_whitespace) {
                    return Root::Absent;
                }
                match Lexer::new(&bytes[..e], s, o).value(0) {
                    Ok(span) => Root::Value(span),
                    Err(_) => Root::Malformed,
                }
            })
            .collect();
        let (out, bad) = match &self.target {
            DataType::Struct(fields) => self.structs(bytes, text, &roots, fields)?,
            DataType::List(item) => self.lists(bytes, &roots, item)?,
            t => {
                let spans: Vec<Option<Span>> = roots
                    .iter()
                    .map(|r| match r {
                        Root::Value(s) => Some(*s),
                        _ => None,
                    })
                    .collect();
                let (v, mut bad) = convert_spans(bytes, &spans, t, o, &self.cfg)?;
                for (b, r) in bad.iter_mut().zip(&roots) {
                    *b |= matches!(r, Root::Malformed);
                }
                (v, bad)
            }
        };
        if o.mode == ParseMode::FailFast {
            if let Some(i) = bad.iter().position(|b| *b) {
                return Err(malformed_record(text.value(i)));
            }
        }
        Ok(out)
    }

    /// A struct per record: all NULL fields for text that is not a JSON object.
    fn structs(
        &self,
        b: &[u8],
        text: &StringArray,
        roots: &[Root],
        fields: &Fields,
    ) -> Result<(ArrayRef, Vec<bool>)> {
        let n = roots.len();
        let read = &self.read;
        let mut bad = vec![false; n];
        let spans: Vec<Option<Span>> = roots
            .iter()
            .zip(bad.iter_mut())
            .map(|(r, bad)| match r {
                Root::Value(s) if s.kind == Kind::Object => Some(*s),
                Root::Absent => None,
                _ => {
                    *bad = true;
                    None
                }
            })
            .collect();
        let (converted, field_bad) = convert_spans(
            b,
            &spans,
            &DataType::Struct(read.clone()),
            &self.options,
            &self.cfg,
        )?;
        for (b, fb) in bad.iter_mut().zip(field_bad) {
            *b |= fb;
        }
        let converted = converted.as_struct();
        let mut columns: Vec<ArrayRef> = converted.columns().to_vec();
        if let Some(at) = self.corrupt {
            let mut record = StringBuilder::with_capacity(n, 0);
            for (i, r) in roots.iter().enumerate() {
                match r {
                    Root::Absent => record.append_null(),
                    _ if bad[i] => record.append_value(text.value(i)),
                    _ => record.append_null(),
                }
            }
            columns.insert(at, Arc::new(record.finish()));
        }
        let valid: Vec<bool> = roots.iter().map(|r| !matches!(r, Root::Absent)).collect();
        let out = StructArray::try_new_with_length(
            fields.clone(),
            columns,
            Some(NullBuffer::from(valid)),
            n,
        )?;
        Ok((Arc::new(out), bad))
    }

    /// An array per record; a single object reads as an array of one struct.
    fn lists(&self, b: &[u8], roots: &[Root], item: &Arc<Field>) -> Result<(ArrayRef, Vec<bool>)> {
        let wrap_object = matches!(item.data_type(), DataType::Struct(_));
        let mut bad: Vec<bool> = roots.iter().map(|r| matches!(r, Root::Malformed)).collect();
        let arrays: Vec<Option<Span>> = roots
            .iter()
            .map(|r| match r {
                Root::Value(s) if !(wrap_object && s.kind == Kind::Object) => Some(*s),
                _ => None,
            })
            .collect();
        let (lists, list_bad) = convert_spans(
            b,
            &arrays,
            &DataType::List(item.clone()),
            &self.options,
            &self.cfg,
        )?;
        for (b, lb) in bad.iter_mut().zip(list_bad) {
            *b |= lb;
        }
        if !wrap_object
            || !roots
                .iter()
                .any(|r| matches!(r, Root::Value(s) if s.kind == Kind::Object))
        {
            return Ok((lists, bad));
        }
        let objects: Vec<Option<Span>> = roots
            .iter()
            .map(|r| match r {
                Root::Value(s) if s.kind == Kind::Object => Some(*s),
                _ => None,
            })
            .collect();
        let (structs, object_bad) =
            convert_spans(b, &objects, item.data_type(), &self.options, &self.cfg)?;
        // Each row takes its array's elements, or its one object.
        let lists = lists.as_list::<i32>();
        let mut take: Vec<(usize, usize, bool)> = Vec::with_capacity(roots.len());
        let mut offsets = vec![0i32];
        let mut valid = Vec::with_capacity(roots.len());
        for (i, o) in objects.iter().enumerate() {
            if o.is_some() {
                bad[i] |= object_bad[i];
                take.push((i, 1, true));
                valid.push(true);
            } else {
                let r = lists.value_offsets();
                let len = (r[i + 1] - r[i]) as usize;
                take.push((r[i] as usize, len, false));
                valid.push(lists.is_valid(i));
            }
            let last = *offsets.last().unwrap_or(&0);
            offsets.push(last + take[i].1 as i32);
        }
        let from_lists = lists.values().to_data();
        let from_structs = structs.to_data();
        let mut data = arrow_data::transform::MutableArrayData::new(
            vec![&from_lists, &from_structs],
            false,
            offsets.last().copied().unwrap_or(0) as usize,
        );
        for (start, len, object) in take {
            data.try_extend(usize::from(object), start, start + len)?;
        }
        let values = arrow_array::make_array(data.freeze());
        let out = ListArray::try_new(
            item.clone(),
            OffsetBuffer::new(offsets.into()),
            values,
            Some(NullBuffer::from(valid)),
        )?;
        Ok((Arc::new(out), bad))
    }
}

/// Where a struct's corrupt-record field is (a STRING field named `column`), and the other
/// fields: the ones a record's text converts to.
pub(super) fn corrupt_field(fields: &Fields, column: &str) -> (Option<usize>, Fields) {
    let at = fields
        .iter()
        .position(|f| f.name() == column && f.data_type() == &DataType::Utf8);
    let read = fields
        .iter()
        .enumerate()
        .filter(|(i, _)| Some(*i) != at)
        .map(|(_, f)| f.clone())
        .collect();
    (at, read)
}

/// `from_json` / `from_csv` refuse `DROPMALFORMED`: a function gives one row per row.
pub(super) fn drop_malformed_unsupported(name: &str) -> FerroError {
    FerroError::Analysis(format!(
        "[PARSE_MODE_UNSUPPORTED] The function `{name}` doesn't support the DROPMALFORMED mode. Acceptable modes are PERMISSIVE and FAILFAST. SQLSTATE: 42601"
    ))
}

/// `FAILFAST`'s error for the record `text`.
pub(super) fn malformed_record(text: &str) -> FerroError {
    FerroError::Arithmetic(format!(
        "[MALFORMED_RECORD_IN_PARSING.WITHOUT_SUGGESTION] Malformed records are detected in record parsing: {text:?}. Parse Mode: FAILFAST. To process malformed records as null result, try setting the option 'mode' as 'PERMISSIVE'. SQLSTATE: 22023"
    ))
}

/// The settings a text conversion reads (the session time zone and ANSI mode) as a
/// configuration, for the readers' conversions.
pub(super) fn session_config(call: &Call<'_, '_>) -> Result<Config> {
    Config::from_pairs([
        (
            "spark.sql.session.timeZone",
            call.ctx.session_tz.to_string(),
        ),
        ("spark.sql.ansi.enabled", call.ctx.ansi.to_string()),
    ])
}

/// The options of a call from its third argument (a constant map of strings), lower-case keys.
pub(super) fn options_of(
    call: &Call<'_, '_>,
    arg: Option<&PhysicalExpr>,
) -> Result<BTreeMap<String, String>> {
    let mut out = BTreeMap::new();
    let Some(a) = arg else {
        return Ok(out);
    };
    let wrong = || {
        FerroError::Analysis(format!(
            "[INVALID_OPTIONS.NON_MAP_FUNCTION] Invalid options: Must use the `map()` function for options. SQLSTATE: 42K06 in \"{}\"",
            call.expr
        ))
    };
    let value = fold_argument(a)?.ok_or_else(wrong)?;
    let DataType::Map(..) = value.data_type() else {
        return Err(wrong());
    };
    let m = value.as_map();
    if m.is_null(0) {
        return Ok(out);
    }
    let keys = arrow_cast::cast(m.keys(), &DataType::Utf8)?;
    let values = arrow_cast::cast(m.values(), &DataType::Utf8)?;
    let (keys, values) = (keys.as_string::<i32>(), values.as_string::<i32>());
    for k in 0..keys.len() {
        if keys.is_valid(k) && values.is_valid(k) {
            out.insert(
                keys.value(k).to_ascii_lowercase(),
                values.value(k).to_string(),
            );
        }
    }
    Ok(out)
}

fn invalid_schema(call: &Call<'_, '_>, t: &DataType) -> FerroError {
    FerroError::Analysis(format!(
        "[DATATYPE_MISMATCH.INVALID_JSON_SCHEMA] Cannot resolve \"{}\" due to data type mismatch: Input schema \"{}\" must be a struct, an array, a map or a variant. SQLSTATE: 42K09",
        call.expr,
        spark_type_name(t)
    ))
}

/// Binds `from_json`, `to_json` and `schema_of_json`; other names are not this family's.
pub(crate) fn bind(call: &Call<'_, '_>, args: Vec<PhysicalExpr>) -> Result<Bound> {
    match call.name {
        "from_json" => bind_from_json(call, args),
        "to_json" => bind_to_json(call, args),
        "schema_of_json" => bind_schema_of_json(call, args),
        _ => Ok(Bound::NotMine(args)),
    }
}

fn bind_from_json(call: &Call<'_, '_>, args: Vec<PhysicalExpr>) -> Result<Bound> {
    call.arity(&args, 2, 3)?;
    let options = options_of(call, args.get(2))?;
    let not_literal = || {
        FerroError::Analysis(format!(
            "[INVALID_SCHEMA.NON_STRING_LITERAL] The input schema \"{}\" is not a valid schema string. The input expression must be string literal and not null. SQLSTATE: 42K07",
            args[1]
        ))
    };
    if fold_argument(&args[1])?.is_none() {
        return Err(not_literal());
    }
    let Some(schema) = foldable_text(call, &args[1], "schema")? else {
        return Err(FerroError::Analysis(format!(
            "[INVALID_SCHEMA.NON_STRING_LITERAL] The input schema \"NULL\" is not a valid schema string. SQLSTATE: 42K07 in \"{}\"",
            call.expr
        )));
    };
    let target = parse_schema_text(&schema, call.ctx.session_tz)?;
    if !matches!(
        target,
        DataType::Struct(_) | DataType::List(_) | DataType::Map(..)
    ) {
        return Err(invalid_schema(call, &target));
    }
    let map: HashMap<String, String> = options.into_iter().collect();
    let mut json = JsonOptions::from_map(&map)?;
    json.exact_strings = false;
    if json.mode == ParseMode::DropMalformed {
        return Err(drop_malformed_unsupported("from_json"));
    }
    let (corrupt, read) = match &target {
        DataType::Struct(fields) => corrupt_field(fields, &json.corrupt_column),
        _ => (None, Fields::empty()),
    };
    let cfg = session_config(call)?;
    let text = call.string_arg(0, args.into_iter().next().expect("arity checked"))?;
    let f = FromJson {
        options: json,
        target: target.clone(),
        corrupt,
        read,
        cfg,
    };
    Ok(Bound::Done(call.function(
        ScalarFunction::JsonValue(JsonValueFn::FromJson(Arc::new(f))),
        vec![text],
        target,
    )))
}

fn bind_to_json(call: &Call<'_, '_>, args: Vec<PhysicalExpr>) -> Result<Bound> {
    call.arity(&args, 1, 2)?;
    let options = options_of(call, args.get(1))?;
    let t = crate::types::spark_equivalent(&args[0].data_type());
    if !matches!(
        t,
        DataType::Struct(_) | DataType::List(_) | DataType::Map(..)
    ) {
        return Err(invalid_schema(call, &t));
    }
    if options
        .get("pretty")
        .is_some_and(|v| v.eq_ignore_ascii_case("true"))
    {
        return Err(FerroError::Unsupported(format!(
            "to_json option pretty=true in \"{}\": write compact JSON (leave out the option)",
            call.expr
        )));
    }
    let f = ToJson {
        options: JsonWriteOptions::parse(&options),
        session_tz: call.ctx.session_tz.to_string(),
    };
    let value = args.into_iter().next().expect("arity checked");
    Ok(Bound::Done(call.function(
        ScalarFunction::JsonValue(JsonValueFn::ToJson(Arc::new(f))),
        vec![value],
        DataType::Utf8,
    )))
}

/// `schema_of_json` of a constant: the type Spark's inference gives its one value, as DDL.
fn bind_schema_of_json(call: &Call<'_, '_>, args: Vec<PhysicalExpr>) -> Result<Bound> {
    call.arity(&args, 1, 2)?;
    let options = options_of(call, args.get(1))?;
    let map: HashMap<String, String> = options.into_iter().collect();
    let o = JsonOptions::from_map(&map)?;
    let Some(text) = foldable_text(call, &args[0], "json")? else {
        return Err(FerroError::Analysis(format!(
            "[DATATYPE_MISMATCH.UNEXPECTED_NULL] Cannot resolve \"{}\" due to data type mismatch: The json must not be null. SQLSTATE: 42K09",
            call.expr
        )));
    };
    let ddl = schema_of(&text, &o)?;
    Ok(Bound::Done(PhysicalExpr::Literal(
        crate::expr::Literal::string(&ddl),
    )))
}

/// The DDL type of the one JSON value in `text`.
pub fn schema_of(text: &str, o: &JsonOptions) -> Result<String> {
    let b = text.as_bytes();
    let malformed = || {
        FerroError::Arithmetic(format!(
            "[MALFORMED_RECORD_IN_PARSING.WITHOUT_SUGGESTION] Malformed records are detected in schema inference: {text:?} is not JSON. Parse Mode: FAILFAST. SQLSTATE: 22023"
        ))
    };
    let root = Lexer::new(b, 0, o).value(0).map_err(|_| malformed())?;
    let t = match JType::of(b, root, o) {
        Ok(t) => t,
        Err(Untyped::Malformed) => return Err(malformed()),
        Err(Untyped::Duplicate(name)) => return Err(Untyped::duplicate_error(&name)),
    };
    let dt = t.canonical(o)?.unwrap_or_else(|| match t {
        JType::Struct(_) => DataType::Struct(Fields::empty()),
        _ => DataType::Utf8,
    });
    Ok(spark_type_name(&dt))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The expectations are PySpark 4.3's.
    #[test]
    fn inferred_schemas_print_as_spark_prints_them() {
        let o = JsonOptions::default();
        let s = |t: &str| schema_of(t, &o).expect(t);
        assert_eq!(
            s(r#"{"a":1, "b":[1.5, null], "c":{"d":"x"}, "e":null}"#),
            "STRUCT<a: BIGINT, b: ARRAY<DOUBLE>, c: STRUCT<d: STRING>, e: STRING>"
        );
        assert_eq!(s("[1,2]"), "ARRAY<BIGINT>");
        assert_eq!(s("1.5"), "DOUBLE");
        assert_eq!(s("\"s\""), "STRING");
        assert_eq!(s(r#"{"a":{}}"#), "STRUCT<>");
        assert_eq!(s(r#"{"a":[]}"#), "STRUCT<a: ARRAY<STRING>>");
        assert_eq!(s(r#"{"a":1, "A":2}"#), "STRUCT<A: BIGINT, a: BIGINT>");
        assert_eq!(
            s(r#"{"b":1e40, "a":"2020-01-01", "c":true, "d":12345678901234567890}"#),
            "STRUCT<a: STRING, b: DOUBLE, c: BOOLEAN, d: DECIMAL(20,0)>"
        );
        assert_eq!(
            s(r#"[{"a":1},{"b":"x"}]"#),
            "ARRAY<STRUCT<a: BIGINT, b: STRING>>"
        );
        assert_eq!(s(r#"[1, "x"]"#), "ARRAY<STRING>");
        assert_eq!(s("[1, 1.5]"), "ARRAY<DOUBLE>");
        assert!(schema_of("xx", &o).is_err());
    }
}
