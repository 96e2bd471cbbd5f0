//! JSON values to typed columns as Spark's `JacksonParser` converts them: a column takes the
//! tokens its type accepts and nothing else (an integer column takes integer literals, not
//! `"12"` nor `1e3`; a double column also takes `"NaN"` and `"Infinity"` strings; a decimal
//! column also takes numeric strings), a string column takes a string's text or any other
//! value's exact text, and structs, arrays and maps convert member by member. A value that
//! does not convert makes its record malformed and is NULL, and so is every array or map
//! holding it, up to the nearest struct field (Spark 4's partial results,
//! `spark.sql.json.enablePartialResults`: a struct keeps its other fields).

use std::sync::Arc;

use arrow_array::builder::{
    BinaryBuilder, BooleanBuilder, Decimal128Builder, PrimitiveBuilder, StringBuilder,
};
use arrow_array::types::{Float32Type, Float64Type, Int16Type, Int32Type, Int64Type, Int8Type};
use arrow_array::{Array, ArrayRef, ListArray, MapArray, StringArray, StructArray};
use arrow_buffer::{NullBuffer, OffsetBuffer};
use arrow_schema::{DataType, FieldRef, Fields};
use ferrospark_common::{Config, FerroError, Result};

use super::lexer::{decode_string, Kind, Lexer, Span};
use super::options::JsonOptions;
use crate::csv::convert::{decimal_bytes, decimal_field as decimal_text};

/// A double from a string value, as Spark reads special values spelled as strings.
fn special_double(s: &str, o: &JsonOptions) -> Option<f64> {
    if !o.allow_non_numeric_numbers {
        return None;
    }
    match s {
        "NaN" => Some(f64::NAN),
        "+INF" | "+Infinity" | "Infinity" => Some(f64::INFINITY),
        "-INF" | "-Infinity" => Some(f64::NEG_INFINITY),
        _ => None,
    }
}

fn text(b: &[u8], s: Span) -> &str {
    std::str::from_utf8(&b[s.start..s.end]).unwrap_or("")
}

/// A double from a numeric token or a special string.
fn double(b: &[u8], s: Span, o: &JsonOptions) -> Option<f64> {
    match s.kind {
        Kind::Int | Kind::Float => text(b, s).parse().ok(),
        Kind::NonNumeric => {
            let t = text(b, s);
            Some(if t == "NaN" {
                f64::NAN
            } else if t.starts_with('-') {
                f64::NEG_INFINITY
            } else {
                f64::INFINITY
            })
        }
        Kind::Str => decode_string(b, s.start, s.end).and_then(|t| special_double(&t, o)),
        _ => None,
    }
}

/// The values at `spans` (`None`: the field is absent) of text `b` as `to`: the column, and
/// which rows held a value that did not convert.
pub fn convert_spans(
    b: &[u8],
    spans: &[Option<Span>],
    to: &DataType,
    o: &JsonOptions,
    cfg: &Config,
) -> Result<(ArrayRef, Vec<bool>)> {
    let n = spans.len();
    let mut bad = vec![false; n];
    let present = |s: &Option<Span>| s.filter(|s| s.kind != Kind::Null);
    macro_rules! each {
        ($builder:expr, $f:expr) => {{
            let mut builder = $builder;
            for (i, s) in spans.iter().enumerate() {
                match present(s) {
                    None => builder.append_null(),
                    Some(s) => match $f(s) {
                        Some(v) => builder.append_value(v),
                        None => {
                            bad[i] = true;
                            builder.append_null();
                        }
                    },
                }
            }
            Arc::new(builder.finish()) as ArrayRef
        }};
    }
    macro_rules! ints {
        ($t:ty, $native:ty) => {
            each!(PrimitiveBuilder::<$t>::with_capacity(n), |s: Span| {
                (s.kind == Kind::Int)
                    .then(|| text(b, s).parse::<$native>().ok())
                    .flatten()
            })
        };
    }
    let out: ArrayRef = match to {
        // Another value's text as written, or as Jackson copies it (`[4,5]`, `1500.0` for
        // `1.5e3`) when strings are not exact (and the text uses no leniency of the options).
        DataType::Utf8 => each!(StringBuilder::with_capacity(n, n * 8), |s: Span| {
            match s.kind {
                Kind::Str => decode_string(b, s.start, s.end),
                Kind::Int | Kind::Float | Kind::NonNumeric | Kind::Array | Kind::Object
                    if !o.exact_strings =>
                {
                    let raw = &b[s.start..s.end];
                    match crate::functions::json_path::jackson_copy(raw) {
                        Some(copy) => Some(std::borrow::Cow::Owned(copy)),
                        None => std::str::from_utf8(raw)
                            .ok()
                            .map(std::borrow::Cow::Borrowed),
                    }
                }
                _ => std::str::from_utf8(&b[s.start..s.end])
                    .ok()
                    .map(std::borrow::Cow::Borrowed),
            }
        }),
        // Base64 text, padded, as Jackson's `getBinaryValue` reads it for Spark.
        DataType::Binary => each!(BinaryBuilder::with_capacity(n, n * 8), |s: Span| {
            use base64::Engine;
            (s.kind == Kind::Str)
                .then(|| decode_string(b, s.start, s.end))
                .flatten()
                .and_then(|t| {
                    base64::engine::general_purpose::STANDARD
                        .decode(t.as_bytes())
                        .ok()
                })
        }),
        DataType::Int8 => ints!(Int8Type, i8),
        DataType::Int16 => ints!(Int16Type, i16),
        DataType::Int32 => ints!(Int32Type, i32),
        DataType::Int64 => ints!(Int64Type, i64),
        DataType::Float64 => each!(
            PrimitiveBuilder::<Float64Type>::with_capacity(n),
            |s: Span| double(b, s, o)
        ),
        DataType::Float32 => each!(
            PrimitiveBuilder::<Float32Type>::with_capacity(n),
            |s: Span| double(b, s, o).map(|v| v as f32)
        ),
        DataType::Boolean => each!(BooleanBuilder::with_capacity(n), |s: Span| match s.kind {
            Kind::True => Some(true),
            Kind::False => Some(false),
            _ => None,
        }),
        DataType::Decimal128(p, sc) => {
            let a = each!(
                Decimal128Builder::with_capacity(n),
                |s: Span| match s.kind {
                    Kind::Int | Kind::Float => decimal_bytes(&b[s.start..s.end], *p, *sc),
                    Kind::Str => decode_string(b, s.start, s.end)
                        .filter(|t| !t.is_empty())
                        .and_then(|t| decimal_text(&t, *p, *sc)),
                    _ => None,
                }
            );
            Arc::new(
                a.as_any()
                    .downcast_ref::<arrow_array::Decimal128Array>()
                    .ok_or_else(|| FerroError::Internal("a decimal column".into()))?
                    .clone()
                    .with_precision_and_scale(*p, *sc)?,
            )
        }
        DataType::Date32 | DataType::Timestamp(..) => {
            // Strings parse as Spark parses them (the cast's rules, the session's zone); a
            // timestamp (not a TIMESTAMP_NTZ) also takes an integer, seconds since the epoch.
            let strings: StringArray = spans
                .iter()
                .map(|s| {
                    present(s).and_then(|s| match s.kind {
                        Kind::Str => decode_string(b, s.start, s.end).map(|t| t.into_owned()),
                        _ => None,
                    })
                })
                .collect();
            let parsed = o.formats.read(&strings, to, cfg)?;
            let seconds: Option<Vec<Option<i64>>> = matches!(to, DataType::Timestamp(_, Some(_)))
                .then(|| {
                    spans
                        .iter()
                        .map(|s| {
                            present(s)
                                .filter(|s| s.kind == Kind::Int)
                                .and_then(|s| text(b, s).parse::<i64>().ok())
                                .and_then(|v| v.checked_mul(1_000_000))
                        })
                        .collect()
                });
            let out: ArrayRef = match seconds {
                Some(secs) if secs.iter().any(Option::is_some) => {
                    let base = parsed
                        .as_any()
                        .downcast_ref::<arrow_array::TimestampMicrosecondArray>()
                        .ok_or_else(|| FerroError::Internal("a timestamp column".into()))?;
                    let merged: arrow_array::TimestampMicrosecondArray =
                        base.iter().zip(secs).map(|(p, s)| p.or(s)).collect();
                    Arc::new(merged.with_data_type(to.clone()))
                }
                _ => parsed,
            };
            for (i, s) in spans.iter().enumerate() {
                bad[i] = present(s).is_some() && out.is_null(i);
            }
            out
        }
        DataType::Struct(fields) => structs(b, spans, fields, o, cfg, &mut bad)?,
        DataType::List(item) => lists(b, spans, item, o, cfg, &mut bad)?,
        DataType::Map(entries, sorted) => maps(b, spans, entries, *sorted, o, cfg, &mut bad)?,
        other => {
            return Err(FerroError::Config(format!(
                "the JSON reader does not read {other} columns"
            )))
        }
    };
    Ok((out, bad))
}

/// The members of each object span, by field.
fn structs(
    b: &[u8],
    spans: &[Option<Span>],
    fields: &Fields,
    o: &JsonOptions,
    cfg: &Config,
    bad: &mut [bool],
) -> Result<ArrayRef> {
    let n = spans.len();
    let mut children: Vec<Vec<Option<Span>>> = vec![vec![None; n]; fields.len()];
    let mut valid = vec![false; n];
    for (i, s) in spans.iter().enumerate() {
        let Some(s) = s.filter(|s| s.kind != Kind::Null) else {
            continue;
        };
        if s.kind != Kind::Object {
            bad[i] = true;
            continue;
        }
        valid[i] = true;
        let mut lx = Lexer::new(b, s.start, o);
        let scanned = lx.object(0, |lx, (ns, ne), v| {
            if let Some(name) = decode_string(lx.b, ns, ne) {
                if let Some(f) = fields.iter().position(|f| f.name() == name.as_ref()) {
                    children[f][i] = Some(v);
                }
            }
        });
        if scanned.is_err() {
            bad[i] = true;
            valid[i] = false;
            for c in children.iter_mut() {
                c[i] = None;
            }
        }
    }
    let mut columns = Vec::with_capacity(fields.len());
    for (f, spans) in fields.iter().zip(&children) {
        let (c, child_bad) = convert_spans(b, spans, f.data_type(), o, cfg)?;
        for (i, cb) in child_bad.into_iter().enumerate() {
            bad[i] |= cb;
        }
        columns.push(c);
    }
    let nulls = NullBuffer::from(valid);
    Ok(Arc::new(StructArray::try_new_with_length(
        fields.clone(),
        columns,
        Some(nulls),
        n,
    )?))
}

/// The elements of each array span.
fn lists(
    b: &[u8],
    spans: &[Option<Span>],
    item: &FieldRef,
    o: &JsonOptions,
    cfg: &Config,
    bad: &mut [bool],
) -> Result<ArrayRef> {
    let (offsets, valid, elements, owner) = members(b, spans, o, Kind::Array, bad);
    let (values, elem_bad) = convert_spans(b, &elements, item.data_type(), o, cfg)?;
    // An element that does not convert makes the whole array NULL (Spark keeps no partial
    // arrays; a struct keeps its other fields).
    let mut valid = valid;
    for (e, eb) in elem_bad.into_iter().enumerate() {
        if eb {
            bad[owner[e]] = true;
            valid[owner[e]] = false;
        }
    }
    Ok(Arc::new(ListArray::try_new(
        item.clone(),
        OffsetBuffer::new(offsets.into()),
        values,
        Some(NullBuffer::from(valid)),
    )?))
}

/// Each span's members (array elements, or object values with their names as key spans).
#[allow(clippy::type_complexity)]
fn members(
    b: &[u8],
    spans: &[Option<Span>],
    o: &JsonOptions,
    want: Kind,
    bad: &mut [bool],
) -> (Vec<i32>, Vec<bool>, Vec<Option<Span>>, Vec<usize>) {
    let mut offsets = vec![0i32];
    let mut valid = vec![false; spans.len()];
    let mut values: Vec<Option<Span>> = Vec::new();
    let mut owner: Vec<usize> = Vec::new();
    for (i, s) in spans.iter().enumerate() {
        if let Some(s) = s.filter(|s| s.kind != Kind::Null) {
            if s.kind != want {
                bad[i] = true;
            } else {
                valid[i] = true;
                let mut lx = Lexer::new(b, s.start, o);
                let before = values.len();
                let scanned = if want == Kind::Array {
                    lx.array(0, |_, v| values.push(Some(v)))
                } else {
                    lx.object(0, |_, (ns, ne), v| {
                        values.push(Some(Span {
                            kind: Kind::Str,
                            start: ns,
                            end: ne,
                        }));
                        values.push(Some(v));
                    })
                };
                if scanned.is_err() {
                    values.truncate(before);
                    bad[i] = true;
                    valid[i] = false;
                }
                owner.resize(values.len(), i);
            }
        }
        let count = if want == Kind::Array {
            values.len()
        } else {
            values.len() / 2
        };
        offsets.push(count as i32);
    }
    (offsets, valid, values, owner)
}

/// The members of each object span as map entries (names as string keys).
fn maps(
    b: &[u8],
    spans: &[Option<Span>],
    entries: &FieldRef,
    sorted: bool,
    o: &JsonOptions,
    cfg: &Config,
    bad: &mut [bool],
) -> Result<ArrayRef> {
    let DataType::Struct(kv) = entries.data_type() else {
        return Err(FerroError::Internal("map entries are a struct".into()));
    };
    if kv.len() != 2 || kv[0].data_type() != &DataType::Utf8 {
        return Err(FerroError::Config(
            "the JSON reader reads maps with string keys only".into(),
        ));
    }
    let (offsets, valid, pairs, owner) = members(b, spans, o, Kind::Object, bad);
    let keys: Vec<Option<Span>> = pairs.iter().step_by(2).copied().collect();
    let values: Vec<Option<Span>> = pairs.iter().skip(1).step_by(2).copied().collect();
    let (k, _) = convert_spans(b, &keys, &DataType::Utf8, o, cfg)?;
    let (v, vbad) = convert_spans(b, &values, kv[1].data_type(), o, cfg)?;
    // A value that does not convert makes the whole map NULL (Spark keeps no partial maps).
    let mut valid = valid;
    for (e, eb) in vbad.into_iter().enumerate() {
        if eb {
            bad[owner[2 * e]] = true;
            valid[owner[2 * e]] = false;
        }
    }
    let entries_array = StructArray::try_new(kv.clone(), vec![k, v], None)?;
    Ok(Arc::new(MapArray::try_new(
        entries.clone(),
        OffsetBuffer::new(offsets.into()),
        entries_array,
        Some(NullBuffer::from(valid)),
        sorted,
    )?))
}
