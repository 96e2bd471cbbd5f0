//! JSON Lines as Spark's `JacksonGenerator` writes them: one object per row, fields in
//! column order, NULL fields left out (`ignoreNullFields`), NaN and the infinities as strings,
//! bytes as base64, dates and timestamps as text in the session time zone.

use std::collections::BTreeMap;

use arrow_array::cast::AsArray;
use arrow_array::{Array, ArrayRef, RecordBatch};
use arrow_schema::DataType;
use base64::Engine;
use ferrospark_common::Result;

/// Spark's JSON writer options.
#[derive(Debug, Clone, PartialEq)]
pub struct JsonWriteOptions {
    /// `ignoreNullFields` (true): NULL fields are not written
    pub ignore_null_fields: bool,
    /// `dateFormat`
    pub date_format: String,
    /// `timestampFormat`
    pub timestamp_format: String,
    /// `timestampNTZFormat`
    pub timestamp_ntz_format: String,
    /// `lineSep`
    pub line_sep: String,
}

impl JsonWriteOptions {
    /// The options of a write (keys lower-cased).
    pub fn parse(o: &BTreeMap<String, String>) -> Self {
        Self {
            ignore_null_fields: o
                .get("ignorenullfields")
                .is_none_or(|v| !v.eq_ignore_ascii_case("false")),
            date_format: o
                .get("dateformat")
                .cloned()
                .unwrap_or_else(|| "yyyy-MM-dd".into()),
            timestamp_format: o
                .get("timestampformat")
                .cloned()
                .unwrap_or_else(|| "yyyy-MM-dd'T'HH:mm:ss.SSSXXX".into()),
            timestamp_ntz_format: o
                .get("timestampntzformat")
                .cloned()
                .unwrap_or_else(|| "yyyy-MM-dd'T'HH:mm:ss[.SSS]".into()),
            line_sep: o.get("linesep").cloned().unwrap_or_else(|| "\n".into()),
        }
    }
}

/// Appends the rows of `batch` to `out`.
pub fn write_rows(
    batch: &RecordBatch,
    o: &JsonWriteOptions,
    tz: &str,
    out: &mut Vec<u8>,
) -> Result<()> {
    let names: Vec<String> = batch
        .schema()
        .fields()
        .iter()
        .map(|f| quoted(f.name()))
        .collect();
    let columns = batch
        .columns()
        .iter()
        .map(|c| render_values(c, o, tz))
        .collect::<Result<Vec<_>>>()?;
    for r in 0..batch.num_rows() {
        object(&names, &columns, r, o.ignore_null_fields, out);
        out.extend_from_slice(o.line_sep.as_bytes());
    }
    Ok(())
}

fn object(
    names: &[String],
    columns: &[Vec<Option<String>>],
    r: usize,
    skip_nulls: bool,
    out: &mut Vec<u8>,
) {
    out.push(b'{');
    let mut first = true;
    for (name, col) in names.iter().zip(columns) {
        let v = col[r].as_deref();
        if v.is_none() && skip_nulls {
            continue;
        }
        if !first {
            out.push(b',');
        }
        first = false;
        out.extend_from_slice(name.as_bytes());
        out.push(b':');
        out.extend_from_slice(v.unwrap_or("null").as_bytes());
    }
    out.push(b'}');
}

/// The JSON text of every value of `a` (`None` for NULL).
pub fn render_values(a: &ArrayRef, o: &JsonWriteOptions, tz: &str) -> Result<Vec<Option<String>>> {
    let n = a.len();
    let nulls = a.logical_nulls();
    let valid = |i: usize| nulls.as_ref().is_none_or(|b| b.is_valid(i));
    Ok(match a.data_type() {
        DataType::Null => vec![None; n],
        DataType::Struct(fields) => {
            let s = a.as_struct();
            let names: Vec<String> = fields.iter().map(|f| quoted(f.name())).collect();
            let cols = s
                .columns()
                .iter()
                .map(|c| render_values(c, o, tz))
                .collect::<Result<Vec<_>>>()?;
            (0..n)
                .map(|i| {
                    valid(i).then(|| {
                        let mut buf = Vec::new();
                        object(&names, &cols, i, o.ignore_null_fields, &mut buf);
                        String::from_utf8_lossy(&buf).into_owned()
                    })
                })
                .collect()
        }
        DataType::List(_) => {
            let l = a.as_list::<i32>();
            let items = render_values(l.values(), o, tz)?;
            let offsets = l.value_offsets();
            (0..n)
                .map(|i| {
                    valid(i).then(|| {
                        let parts: Vec<&str> = (offsets[i] as usize..offsets[i + 1] as usize)
                            .map(|k| items[k].as_deref().unwrap_or("null"))
                            .collect();
                        format!("[{}]", parts.join(","))
                    })
                })
                .collect()
        }
        DataType::Map(..) => {
            let m = a.as_map();
            let keys = crate::text_options::value_texts(
                m.keys(),
                &o.date_format,
                &o.timestamp_format,
                &o.timestamp_ntz_format,
                tz,
            )?;
            let keys = keys.as_string::<i32>();
            let values = render_values(m.values(), o, tz)?;
            let offsets = m.value_offsets();
            (0..n)
                .map(|i| {
                    valid(i).then(|| {
                        let parts: Vec<String> = (offsets[i] as usize..offsets[i + 1] as usize)
                            .map(|k| {
                                let v = values[k].as_deref().unwrap_or("null");
                                format!("{}:{v}", quoted(keys.value(k)))
                            })
                            .collect();
                        format!("{{{}}}", parts.join(","))
                    })
                })
                .collect()
        }
        DataType::Binary => {
            let b = a.as_binary::<i32>();
            (0..n)
                .map(|i| {
                    valid(i).then(|| {
                        quoted(&base64::engine::general_purpose::STANDARD.encode(b.value(i)))
                    })
                })
                .collect()
        }
        t => {
            let texts = crate::text_options::value_texts(
                a,
                &o.date_format,
                &o.timestamp_format,
                &o.timestamp_ntz_format,
                tz,
            )?;
            let texts = texts.as_string::<i32>();
            let bare = matches!(
                t,
                DataType::Boolean
                    | DataType::Int8
                    | DataType::Int16
                    | DataType::Int32
                    | DataType::Int64
                    | DataType::Decimal128(..)
                    | DataType::Float32
                    | DataType::Float64
            );
            (0..n)
                .map(|i| {
                    (valid(i) && texts.is_valid(i)).then(|| {
                        let v = texts.value(i);
                        // Jackson writes NaN and the infinities as strings.
                        if bare && !matches!(v, "NaN" | "Infinity" | "-Infinity") {
                            v.to_string()
                        } else {
                            quoted(v)
                        }
                    })
                })
                .collect()
        }
    })
}

/// `s` as a JSON string, escaped as Jackson escapes it.
pub fn quoted(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    quote_into(s, false, &mut out);
    out
}

/// `s` as a JSON string appended to `out`: `"` and `\` escaped, control characters as
/// `\n`-style or `\u00XX` escapes, everything else as is, except that a character beyond the
/// BMP is written as its two surrogate escapes when `escape_beyond_bmp` (Jackson's UTF-8
/// generator does that; its writer over characters, which `to_json` uses, does not).
pub fn quote_into(s: &str, escape_beyond_bmp: bool, out: &mut String) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04X}", c as u32)),
            c if escape_beyond_bmp && (c as u32) > 0xFFFF => {
                let mut units = [0u16; 2];
                for u in c.encode_utf16(&mut units) {
                    out.push_str(&format!("\\u{u:04X}"));
                }
            }
            c => out.push(c),
        }
    }
    out.push('"');
}
