//! A schema written as text, in the three forms `from_json` / `from_csv` take: a type
//! (`array<int>`, `struct<a:int>`), DDL columns (`a INT, b STRING NOT NULL COMMENT 'x'`), or
//! the JSON form PySpark's `StructType.json()` writes.

use std::sync::Arc;

use arrow_schema::{DataType, Field, Fields};
use ferrospark_common::{FerroError, Result};

use crate::types::parse_data_type;

/// The type `text` describes; every field is nullable, as Spark reads it.
pub fn parse_schema_text(text: &str, session_tz: &str) -> Result<DataType> {
    let t = text.trim();
    let parsed = if t.starts_with('{') {
        let v: serde_json::Value = serde_json::from_str(t).map_err(|e| {
            FerroError::Analysis(format!(
                "[PARSE_SYNTAX_ERROR] the schema {text:?} is not valid JSON: {e}"
            ))
        })?;
        json_type(&v, session_tz)?
    } else {
        match parse_data_type(t, session_tz) {
            Ok(dt) => dt,
            Err(type_error) => ddl_columns(t, session_tz).map_err(|_| type_error)?,
        }
    };
    Ok(nullable(&parsed))
}

/// DDL columns as a struct: `name type [NOT NULL] [COMMENT '...']`, separated by commas.
fn ddl_columns(t: &str, session_tz: &str) -> Result<DataType> {
    let mut fields = Vec::new();
    for part in split_columns(t) {
        let part = part.trim();
        if part.is_empty() {
            continue;
        }
        let (name, rest) = if let Some(q) = part.strip_prefix('`') {
            let end = q.find('`').ok_or_else(|| bad(t))?;
            (q[..end].to_string(), &q[end + 1..])
        } else {
            let end = part.find([' ', ':']).ok_or_else(|| bad(t))?;
            (part[..end].to_string(), &part[end..])
        };
        let mut ty = rest.trim_start().strip_prefix(':').unwrap_or(rest).trim();
        if let Some(at) = find_keyword(ty, "COMMENT") {
            ty = ty[..at].trim_end();
        }
        if let Some(at) = find_keyword(ty, "NOT NULL") {
            ty = ty[..at].trim_end();
        }
        fields.push(Field::new(name, parse_data_type(ty, session_tz)?, true));
    }
    if fields.is_empty() {
        return Err(bad(t));
    }
    Ok(DataType::Struct(fields.into()))
}

fn bad(t: &str) -> FerroError {
    FerroError::Analysis(format!(
        "[PARSE_SYNTAX_ERROR] Syntax error in the schema {t:?}: expected a type or columns such as 'a INT, b STRING'. SQLSTATE: 42601"
    ))
}

/// Where `word` starts in `ty` outside `<...>` / `(...)` (case-insensitive), if anywhere.
fn find_keyword(ty: &str, word: &str) -> Option<usize> {
    let upper = ty.to_ascii_uppercase();
    let mut depth = 0i32;
    for (i, c) in upper.char_indices() {
        match c {
            '<' | '(' => depth += 1,
            '>' | ')' => depth -= 1,
            ' ' if depth == 0 && upper[i + 1..].starts_with(word) => return Some(i + 1),
            _ => {}
        }
    }
    None
}

/// `s` split at its commas outside `<...>`, `(...)`, quotes and backquotes.
fn split_columns(s: &str) -> Vec<&str> {
    let (mut depth, mut start, mut out) = (0i32, 0usize, Vec::new());
    let mut quote: Option<char> = None;
    for (i, c) in s.char_indices() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), _) => {}
            (None, '\'' | '"' | '`') => quote = Some(c),
            (None, '<' | '(') => depth += 1,
            (None, '>' | ')') => depth -= 1,
            (None, ',') if depth == 0 => {
                out.push(&s[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    out.push(&s[start..]);
    out
}

/// A type in Spark's JSON form (`DataType.json`).
fn json_type(v: &serde_json::Value, session_tz: &str) -> Result<DataType> {
    use serde_json::Value;
    let wrong = || {
        FerroError::Analysis(format!(
            "[INVALID_JSON_DATA_TYPE] Failed to convert the JSON string '{v}' to a data type. SQLSTATE: 2203G"
        ))
    };
    match v {
        Value::String(name) => parse_data_type(&spark_json_name(name), session_tz),
        Value::Object(o) => match o.get("type").and_then(Value::as_str) {
            Some("struct") => {
                let fields = o
                    .get("fields")
                    .and_then(Value::as_array)
                    .ok_or_else(wrong)?;
                let mut out = Vec::with_capacity(fields.len());
                for f in fields {
                    let name = f.get("name").and_then(Value::as_str).ok_or_else(wrong)?;
                    let t = json_type(f.get("type").ok_or_else(wrong)?, session_tz)?;
                    out.push(Field::new(name, t, true));
                }
                Ok(DataType::Struct(out.into()))
            }
            Some("array") => {
                let e = json_type(o.get("elementType").ok_or_else(wrong)?, session_tz)?;
                Ok(DataType::List(Arc::new(Field::new("element", e, true))))
            }
            Some("map") => {
                let k = json_type(o.get("keyType").ok_or_else(wrong)?, session_tz)?;
                let v = json_type(o.get("valueType").ok_or_else(wrong)?, session_tz)?;
                Ok(map_of(k, v))
            }
            _ => Err(wrong()),
        },
        _ => Err(wrong()),
    }
}

/// A type name as Spark's JSON form writes it (`integer`, `long`, ...) in SQL's words.
fn spark_json_name(name: &str) -> String {
    match name {
        "integer" => "int".into(),
        "long" => "bigint".into(),
        "short" => "smallint".into(),
        "byte" => "tinyint".into(),
        "null" | "void" => "string".into(),
        other => other.into(),
    }
}

fn map_of(k: DataType, v: DataType) -> DataType {
    DataType::Map(
        Arc::new(Field::new(
            "entries",
            DataType::Struct(Fields::from(vec![
                Field::new("key", k, false),
                Field::new("value", v, true),
            ])),
            false,
        )),
        false,
    )
}

/// `t` with every field, element and value nullable (a map's keys stay non-null).
fn nullable(t: &DataType) -> DataType {
    match t {
        DataType::Struct(fields) => DataType::Struct(
            fields
                .iter()
                .map(|f| Field::new(f.name(), nullable(f.data_type()), true))
                .collect::<Vec<_>>()
                .into(),
        ),
        DataType::List(e) => DataType::List(Arc::new(Field::new(
            e.name(),
            nullable(e.data_type()),
            true,
        ))),
        DataType::Map(entries, sorted) => match entries.data_type() {
            DataType::Struct(kv) if kv.len() == 2 => {
                let m = map_of(nullable(kv[0].data_type()), nullable(kv[1].data_type()));
                match m {
                    DataType::Map(e, _) => DataType::Map(e, *sorted),
                    other => other,
                }
            }
            _ => t.clone(),
        },
        other => other.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(t: &DataType) -> String {
        crate::types::spark_type_name(t)
    }

    #[test]
    fn the_three_forms_read_as_spark_reads_them() {
        let tz = "UTC";
        let s = |t: &str| names(&parse_schema_text(t, tz).expect(t));
        assert_eq!(s("a INT, b STRING"), "STRUCT<a: INT, b: STRING>");
        assert_eq!(
            s("a INT NOT NULL, `y z` STRING COMMENT 'x, y'"),
            "STRUCT<a: INT, `y z`: STRING>"
        );
        assert_eq!(
            s("a struct<b:int, c:array<string>>"),
            "STRUCT<a: STRUCT<b: INT, c: ARRAY<STRING>>>"
        );
        assert_eq!(s("array<struct<a:int>>"), "ARRAY<STRUCT<a: INT>>");
        assert_eq!(s("map<string,int>"), "MAP<STRING, INT>");
        assert_eq!(
            s(
                r#"{"type":"struct","fields":[{"name":"a","type":"integer","nullable":false,"metadata":{}},{"name":"b","type":{"type":"array","elementType":"long","containsNull":true},"nullable":true,"metadata":{}}]}"#
            ),
            "STRUCT<a: INT, b: ARRAY<BIGINT>>"
        );
        assert!(parse_schema_text("a INT,, b", tz).is_err());
        assert!(parse_schema_text("not a schema at all", tz).is_err());
    }
}
