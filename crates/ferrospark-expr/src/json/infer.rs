//! JSON schema inference as Spark's `JsonInferSchema` does it: every value's type, merged
//! across records (`compatibleType`), then made canonical.
//!
//! - integers are `bigint`, wider ones `decimal(p, 0)` (a double past 38 digits); other
//!   numbers and `NaN` / `Infinity` are `double` (`decimal` with `prefersDecimal` when it
//!   fits); strings are `string`; objects are structs with fields sorted by name;
//! - merging: NULL gives way to anything; `bigint` and `decimal` widen to a decimal that holds
//!   both (`double` past 38 digits); any number with `double` is `double`; structs merge by
//!   field name, arrays by element; anything else is `string`;
//! - at the end a field still NULL-typed is a `string` (dropped with `dropFieldIfAllNull`),
//!   and a struct with no fields left is dropped;
//! - a malformed record adds the corrupt-record column (PERMISSIVE), is skipped
//!   (DROPMALFORMED) or is an error (FAILFAST).

use std::collections::BTreeMap;
use std::sync::Arc;

use arrow_schema::{DataType, Field, Fields};
use ferrospark_common::{FerroError, Result};

use super::lexer::{decode_string, Kind, Lexer, Malformed, Span};
use super::options::JsonOptions;

/// Why a value has no type.
#[derive(Debug, Clone, PartialEq)]
pub enum Untyped {
    /// The text is not JSON: the record is malformed.
    Malformed,
    /// An object names a field twice: Spark's `COLUMN_ALREADY_EXISTS`.
    Duplicate(String),
}

impl From<Malformed> for Untyped {
    fn from(_: Malformed) -> Self {
        Untyped::Malformed
    }
}

impl Untyped {
    /// The error a duplicate field is.
    pub fn duplicate_error(name: &str) -> FerroError {
        FerroError::Analysis(format!(
            "[COLUMN_ALREADY_EXISTS] The column `{}` already exists. Choose another name or rename the existing column.",
            name.to_lowercase()
        ))
    }
}

/// A type as inference sees it.
#[derive(Debug, Clone, PartialEq)]
pub enum JType {
    /// Only NULLs seen.
    Null,
    /// BOOLEAN.
    Boolean,
    /// BIGINT.
    Long,
    /// DECIMAL(precision, scale).
    Decimal(u8, i8),
    /// DOUBLE.
    Double,
    /// STRING.
    String,
    /// Fields sorted by name.
    Struct(BTreeMap<String, JType>),
    /// An array of the element type.
    Array(Box<JType>),
}

/// The decimal type of a number's text: `(precision, scale)`.
fn decimal_of(t: &str) -> Option<(u32, i32)> {
    let t = t.trim_start_matches(['-', '+']);
    let (mantissa, exp) = match t.find(['e', 'E']) {
        Some(i) => (&t[..i], t[i + 1..].parse::<i32>().ok()?),
        None => (t, 0),
    };
    let (int, frac) = mantissa.split_once('.').unwrap_or((mantissa, ""));
    let digits: String = format!("{int}{frac}");
    let significant = digits.trim_start_matches('0');
    let precision = significant.len().max(1) as u32;
    let scale = frac.len() as i32 - exp;
    Some((precision, scale))
}

impl JType {
    /// The type of the value at `s`.
    pub fn of(b: &[u8], s: Span, o: &JsonOptions) -> std::result::Result<JType, Untyped> {
        let text = || std::str::from_utf8(&b[s.start..s.end]).unwrap_or("");
        let primitive = |t: JType| {
            if o.primitives_as_string {
                JType::String
            } else {
                t
            }
        };
        Ok(match s.kind {
            Kind::Null => JType::Null,
            Kind::True | Kind::False => primitive(JType::Boolean),
            Kind::Str => JType::String,
            Kind::NonNumeric => primitive(JType::Double),
            Kind::Int => primitive(match text().parse::<i64>() {
                Ok(_) => JType::Long,
                Err(_) => match decimal_of(text()) {
                    Some((p, s)) if p.max(s as u32) <= 38 => {
                        JType::Decimal(p.max(s.max(0) as u32) as u8, s.max(0) as i8)
                    }
                    _ => JType::Double,
                },
            }),
            Kind::Float => primitive(match (o.prefers_decimal, decimal_of(text())) {
                (true, Some((p, sc))) if sc >= 0 && p.max(sc as u32) <= 38 => {
                    JType::Decimal(p.max(sc as u32) as u8, sc as i8)
                }
                _ => JType::Double,
            }),
            Kind::Object => {
                let mut fields: BTreeMap<String, JType> = BTreeMap::new();
                let mut err: Option<Untyped> = None;
                let mut lx = Lexer::new(b, s.start, o);
                lx.object(0, |lx, (ns, ne), v| {
                    let name = decode_string(lx.b, ns, ne).map(|n| n.into_owned());
                    match (name, JType::of(lx.b, v, o)) {
                        (Some(name), Ok(t)) => {
                            if fields.contains_key(&name) {
                                err.get_or_insert(Untyped::Duplicate(name.clone()));
                            }
                            fields.insert(name, t);
                        }
                        (None, _) => {
                            err.get_or_insert(Untyped::Malformed);
                        }
                        (_, Err(e)) => {
                            err.get_or_insert(e);
                        }
                    }
                })?;
                match err {
                    Some(e) => return Err(e),
                    None => JType::Struct(fields),
                }
            }
            Kind::Array => {
                let mut t = JType::Null;
                let mut err: Option<Untyped> = None;
                let mut lx = Lexer::new(b, s.start, o);
                lx.array(0, |lx, v| match JType::of(lx.b, v, o) {
                    Ok(e) => t = std::mem::replace(&mut t, JType::Null).merge(e),
                    Err(e) => {
                        err.get_or_insert(e);
                    }
                })?;
                if let Some(e) = err {
                    return Err(e);
                }
                JType::Array(Box::new(t))
            }
        })
    }

    /// Spark's `compatibleType`.
    pub fn merge(self, other: JType) -> JType {
        use JType::*;
        match (self, other) {
            (a, b) if a == b => a,
            (Null, t) | (t, Null) => t,
            (Long, Double) | (Double, Long) => Double,
            (Decimal(..), Double) | (Double, Decimal(..)) => Double,
            (Long, Decimal(p, s)) | (Decimal(p, s), Long) => wider_decimal((20, 0), (p, s)),
            (Decimal(p1, s1), Decimal(p2, s2)) => wider_decimal((p1, s1), (p2, s2)),
            (Struct(mut a), Struct(b)) => {
                for (k, v) in b {
                    let merged = match a.remove(&k) {
                        Some(x) => x.merge(v),
                        None => v,
                    };
                    a.insert(k, merged);
                }
                Struct(a)
            }
            (Array(a), Array(b)) => Array(Box::new(a.merge(*b))),
            _ => String,
        }
    }

    /// The Arrow type after Spark's `canonicalizeType`; `None` drops the field.
    pub fn canonical(&self, o: &JsonOptions) -> Result<Option<DataType>> {
        Ok(match self {
            JType::Null if o.drop_field_if_all_null => None,
            JType::Null | JType::String => Some(DataType::Utf8),
            JType::Boolean => Some(DataType::Boolean),
            JType::Long => Some(DataType::Int64),
            JType::Double => Some(DataType::Float64),
            JType::Decimal(p, s) => Some(DataType::Decimal128(*p, *s)),
            JType::Array(e) => e
                .canonical(o)?
                .map(|t| DataType::List(Arc::new(Field::new_list_field(t, true)))),
            JType::Struct(fields) => {
                let fields = struct_fields(fields, o)?;
                (!fields.is_empty()).then_some(DataType::Struct(fields))
            }
        })
    }
}

fn wider_decimal((p1, s1): (u8, i8), (p2, s2): (u8, i8)) -> JType {
    let scale = s1.max(s2) as i32;
    let range = (p1 as i32 - s1 as i32).max(p2 as i32 - s2 as i32);
    if range + scale > 38 {
        JType::Double
    } else {
        JType::Decimal((range + scale) as u8, scale as i8)
    }
}

/// The canonical fields of an inferred struct (names sorted, blank names dropped).
pub fn struct_fields(fields: &BTreeMap<String, JType>, o: &JsonOptions) -> Result<Fields> {
    let mut out = Vec::new();
    for (name, t) in fields {
        if name.trim().is_empty() {
            continue;
        }
        if let Some(dt) = t.canonical(o)? {
            out.push(Field::new(name, dt, true));
        }
    }
    Ok(out.into())
}
