//! Spark SQL type names and the implicit type coercion Spark applies to operands.
//!
//! Spark's rules live in `cat/analysis/AnsiTypeCoercion.scala` and `DecimalPrecision.scala`;
//! this module keeps the subset expressions over Parquet data need: numeric widening, decimal
//! result types, string-to-date/timestamp promotion and date-to-timestamp promotion.

use arrow_schema::{DataType, IntervalUnit, TimeUnit};
use ferrospark_common::{FerroError, Result};

/// Largest decimal precision Spark supports.
pub const MAX_DECIMAL_PRECISION: u8 = 38;

/// Parses a Spark SQL type name (`int`, `bigint`, `decimal(10,2)`, `timestamp_ntz`, ...).
///
/// `session_tz` is the zone `TIMESTAMP` (local-time-zone timestamps) carry.
pub fn parse_data_type(name: &str, session_tz: &str) -> Result<DataType> {
    if let Some(dt) = parse_nested_type(name.trim(), session_tz)? {
        return Ok(dt);
    }
    let t = name.trim().to_ascii_lowercase();
    let t = t.replace(' ', "");
    let dt = match t.as_str() {
        "boolean" | "bool" => DataType::Boolean,
        "tinyint" | "byte" => DataType::Int8,
        "smallint" | "short" => DataType::Int16,
        "int" | "integer" => DataType::Int32,
        "bigint" | "long" => DataType::Int64,
        "float" | "real" => DataType::Float32,
        "double" | "doubleprecision" => DataType::Float64,
        "string" | "text" => DataType::Utf8,
        "binary" | "bytea" => DataType::Binary,
        "date" => DataType::Date32,
        "timestamp" | "timestamp_ltz" => {
            DataType::Timestamp(TimeUnit::Microsecond, Some(session_tz.into()))
        }
        "timestamp_ntz" => DataType::Timestamp(TimeUnit::Microsecond, None),
        // Intervals (see `interval.rs`).
        "interval" => DataType::Interval(IntervalUnit::MonthDayNano),
        "intervalyeartomonth" | "interval_year_to_month" | "intervalmonth" | "interval_month" => {
            DataType::Interval(IntervalUnit::YearMonth)
        }
        "intervalday" | "interval_day" => DataType::Interval(IntervalUnit::DayTime),
        "intervaldaytosecond" | "interval_day_to_second" | "intervalhourtosecond"
        | "interval_hour_to_second" | "intervalminutetosecond" | "interval_minute_to_second"
        | "intervalsecond" | "interval_second" => DataType::Duration(TimeUnit::Microsecond),
        t if t.starts_with("interval") => {
            return Err(FerroError::Unsupported(format!(
                "the type '{name}': an interval's start and end fields are not kept, so only INTERVAL YEAR TO MONTH, INTERVAL MONTH, INTERVAL DAY, INTERVAL DAY TO SECOND (or HOUR / MINUTE TO SECOND, SECOND) and INTERVAL are column types; use one of those"
            )))
        }
        "decimal" | "dec" | "numeric" => DataType::Decimal128(10, 0),
        _ => {
            if let Some(args) = strip_call(&t, &["decimal", "dec", "numeric"]) {
                let mut parts = args.split(',');
                let p = parts.next().and_then(|s| s.parse::<u8>().ok());
                let s = match parts.next() {
                    Some(s) => s.parse::<i8>().ok(),
                    None => Some(0),
                };
                match (p, s, parts.next()) {
                    (Some(p), Some(s), None)
                        if (1..=MAX_DECIMAL_PRECISION).contains(&p) && s >= 0 && s as u8 <= p =>
                    {
                        DataType::Decimal128(p, s)
                    }
                    _ => {
                        return Err(FerroError::Analysis(format!(
                            "invalid decimal type '{name}': precision must be 1..38 and 0 <= scale <= precision"
                        )))
                    }
                }
            } else if strip_call(&t, &["varchar", "char", "character"]).is_some() {
                DataType::Utf8
            } else {
                return Err(FerroError::Analysis(format!(
                    "[UNSUPPORTED_DATATYPE] Unsupported data type \"{}\". SQLSTATE: 0A000 (use boolean, tinyint, smallint, int, bigint, float, double, decimal(p,s), string, binary, date, timestamp or timestamp_ntz)",
                    name.to_ascii_uppercase()
                )));
            }
        }
    };
    Ok(dt)
}

/// `ARRAY<t>`, `MAP<k, v>`, `STRUCT<a: t, b t>` (field names keep their case), or `None`
/// for a type that is not nested.
fn parse_nested_type(t: &str, session_tz: &str) -> Result<Option<DataType>> {
    let Some(open) = t.find('<') else {
        return Ok(None);
    };
    let head = t[..open].trim().to_ascii_lowercase();
    if !matches!(head.as_str(), "array" | "map" | "struct") {
        return Ok(None);
    }
    let bad = || FerroError::Analysis(format!("[PARSE_SYNTAX_ERROR] invalid data type '{t}'"));
    let inner = t[open + 1..].trim_end().strip_suffix('>').ok_or_else(bad)?;
    let parts = split_top_level(inner);
    let element = |s: &str| parse_data_type(s, session_tz);
    Ok(Some(match head.as_str() {
        "array" => match parts.as_slice() {
            [e] => DataType::List(std::sync::Arc::new(arrow_schema::Field::new(
                "element",
                element(e)?,
                true,
            ))),
            _ => return Err(bad()),
        },
        "map" => match parts.as_slice() {
            [k, v] => DataType::Map(
                std::sync::Arc::new(arrow_schema::Field::new(
                    "entries",
                    DataType::Struct(arrow_schema::Fields::from(vec![
                        arrow_schema::Field::new("key", element(k)?, false),
                        arrow_schema::Field::new("value", element(v)?, true),
                    ])),
                    false,
                )),
                false,
            ),
            _ => return Err(bad()),
        },
        _ => {
            let mut fields = Vec::new();
            for p in parts.iter().filter(|p| !p.trim().is_empty()) {
                let p = p.trim();
                let (name, rest) = if let Some(quoted) = p.strip_prefix('`') {
                    let end = quoted.find('`').ok_or_else(bad)?;
                    (quoted[..end].to_string(), &quoted[end + 1..])
                } else {
                    let end = p.find([':', ' ']).ok_or_else(bad)?;
                    (p[..end].to_string(), &p[end..])
                };
                let ty = rest.trim_start().strip_prefix(':').unwrap_or(rest).trim();
                fields.push(arrow_schema::Field::new(name, element(ty)?, true));
            }
            DataType::Struct(arrow_schema::Fields::from(fields))
        }
    }))
}

/// `s` split at its commas outside `<...>` and `(...)`.
fn split_top_level(s: &str) -> Vec<&str> {
    let (mut depth, mut start, mut out) = (0i32, 0usize, Vec::new());
    for (i, c) in s.char_indices() {
        match c {
            '<' | '(' => depth += 1,
            '>' | ')' => depth -= 1,
            ',' if depth == 0 => {
                out.push(&s[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    out.push(&s[start..]);
    out
}

fn strip_call<'a>(t: &'a str, names: &[&str]) -> Option<&'a str> {
    names.iter().find_map(|n| {
        t.strip_prefix(n)
            .and_then(|r| r.strip_prefix('('))
            .and_then(|r| r.strip_suffix(')'))
    })
}

/// The Spark SQL name of an Arrow type, as Spark prints it in messages (`INT`, `DECIMAL(15,2)`).
pub fn spark_type_name(dt: &DataType) -> String {
    /// A field name as Spark's `quoteIfNeeded` writes it: bare when it is letters, digits and
    /// underscores (not digits alone), else in backquotes.
    fn quote_if_needed(name: &str) -> String {
        let plain = !name.is_empty()
            && name.bytes().all(|c| c.is_ascii_alphanumeric() || c == b'_')
            && !name.bytes().all(|c| c.is_ascii_digit());
        if plain {
            name.to_string()
        } else {
            format!("`{}`", name.replace('`', "``"))
        }
    }

    match dt {
        DataType::Null => "VOID".into(),
        DataType::Boolean => "BOOLEAN".into(),
        DataType::Int8 => "TINYINT".into(),
        DataType::Int16 | DataType::UInt8 => "SMALLINT".into(),
        DataType::Int32 | DataType::UInt16 => "INT".into(),
        DataType::Int64 | DataType::UInt32 => "BIGINT".into(),
        DataType::UInt64 => "DECIMAL(20,0)".into(),
        DataType::Float16 | DataType::Float32 => "FLOAT".into(),
        DataType::Float64 => "DOUBLE".into(),
        DataType::Decimal32(p, s)
        | DataType::Decimal64(p, s)
        | DataType::Decimal128(p, s)
        | DataType::Decimal256(p, s) => format!("DECIMAL({p},{s})"),
        DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View => "STRING".into(),
        DataType::Binary
        | DataType::LargeBinary
        | DataType::BinaryView
        | DataType::FixedSizeBinary(_) => "BINARY".into(),
        DataType::Date32 | DataType::Date64 => "DATE".into(),
        DataType::Timestamp(_, Some(_)) => "TIMESTAMP".into(),
        DataType::Timestamp(_, None) => "TIMESTAMP_NTZ".into(),
        DataType::Duration(_) => "INTERVAL DAY TO SECOND".into(),
        DataType::Interval(IntervalUnit::YearMonth) => "INTERVAL YEAR TO MONTH".into(),
        DataType::Interval(IntervalUnit::DayTime) => "INTERVAL DAY".into(),
        DataType::Interval(IntervalUnit::MonthDayNano) => "INTERVAL".into(),
        DataType::List(f) | DataType::LargeList(f) | DataType::FixedSizeList(f, _) => {
            format!("ARRAY<{}>", spark_type_name(f.data_type()))
        }
        DataType::Struct(fields) => {
            let inner: Vec<String> = fields
                .iter()
                .map(|f| {
                    format!(
                        "{}: {}",
                        quote_if_needed(f.name()),
                        spark_type_name(f.data_type())
                    )
                })
                .collect();
            format!("STRUCT<{}>", inner.join(", "))
        }
        DataType::Map(f, _) => match f.data_type() {
            DataType::Struct(kv) if kv.len() == 2 => format!(
                "MAP<{}, {}>",
                spark_type_name(kv[0].data_type()),
                spark_type_name(kv[1].data_type())
            ),
            _ => "MAP".into(),
        },
        DataType::Dictionary(_, v) => spark_type_name(v),
        other => other.to_string().to_ascii_uppercase(),
    }
}

/// Spark's `catalogString` of a type, as `typeof` prints it (`int`, `decimal(2,1)`,
/// `array<int>`, `struct<a:int,b:string>`, `interval day`).
pub fn catalog_string(dt: &DataType) -> String {
    match spark_equivalent(dt) {
        DataType::List(f) | DataType::LargeList(f) | DataType::FixedSizeList(f, _) => {
            format!("array<{}>", catalog_string(f.data_type()))
        }
        DataType::Struct(fields) => format!(
            "struct<{}>",
            fields
                .iter()
                .map(|f| format!("{}:{}", f.name(), catalog_string(f.data_type())))
                .collect::<Vec<_>>()
                .join(",")
        ),
        DataType::Map(f, _) => match f.data_type() {
            DataType::Struct(kv) if kv.len() == 2 => format!(
                "map<{},{}>",
                catalog_string(kv[0].data_type()),
                catalog_string(kv[1].data_type())
            ),
            _ => "map".into(),
        },
        other => spark_type_name(&other).to_ascii_lowercase(),
    }
}

/// True for the integral types (signed or unsigned).
pub fn is_integral(dt: &DataType) -> bool {
    matches!(
        dt,
        DataType::Int8
            | DataType::Int16
            | DataType::Int32
            | DataType::Int64
            | DataType::UInt8
            | DataType::UInt16
            | DataType::UInt32
            | DataType::UInt64
    )
}

/// True for Spark's ANSI interval types (year-month, day, day-time).
pub fn is_ansi_interval(dt: &DataType) -> bool {
    matches!(
        dt,
        DataType::Interval(IntervalUnit::YearMonth | IntervalUnit::DayTime) | DataType::Duration(_)
    )
}

/// True for floating point types.
pub fn is_floating(dt: &DataType) -> bool {
    matches!(
        dt,
        DataType::Float16 | DataType::Float32 | DataType::Float64
    )
}

/// True for decimal types.
pub fn is_decimal(dt: &DataType) -> bool {
    matches!(
        dt,
        DataType::Decimal32(..)
            | DataType::Decimal64(..)
            | DataType::Decimal128(..)
            | DataType::Decimal256(..)
    )
}

/// True for every numeric type.
pub fn is_numeric(dt: &DataType) -> bool {
    is_integral(dt) || is_floating(dt) || is_decimal(dt)
}

/// True for string types.
pub fn is_string(dt: &DataType) -> bool {
    matches!(
        dt,
        DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View
    )
}

/// True for binary types.
pub fn is_binary(dt: &DataType) -> bool {
    matches!(
        dt,
        DataType::Binary
            | DataType::LargeBinary
            | DataType::BinaryView
            | DataType::FixedSizeBinary(_)
    )
}

/// The type Spark computes with for an Arrow type Spark itself does not have
/// (unsigned integers widen; dictionaries decode; large strings become strings).
pub fn spark_equivalent(dt: &DataType) -> DataType {
    match dt {
        DataType::UInt8 => DataType::Int16,
        DataType::UInt16 => DataType::Int32,
        DataType::UInt32 => DataType::Int64,
        DataType::UInt64 => DataType::Decimal128(20, 0),
        DataType::Float16 => DataType::Float32,
        DataType::Decimal32(p, s) | DataType::Decimal64(p, s) => DataType::Decimal128(*p, *s),
        DataType::LargeUtf8 | DataType::Utf8View => DataType::Utf8,
        DataType::LargeBinary | DataType::BinaryView | DataType::FixedSizeBinary(_) => {
            DataType::Binary
        }
        DataType::Date64 => DataType::Date32,
        DataType::Timestamp(_, tz) => DataType::Timestamp(TimeUnit::Microsecond, tz.clone()),
        DataType::Dictionary(_, v) => spark_equivalent(v),
        other => other.clone(),
    }
}

/// The decimal type that holds every value of an integral type (`DecimalType.forType`).
fn integral_as_decimal(dt: &DataType) -> Option<(u8, i8)> {
    match dt {
        DataType::Int8 => Some((3, 0)),
        DataType::Int16 => Some((5, 0)),
        DataType::Int32 => Some((10, 0)),
        DataType::Int64 => Some((20, 0)),
        DataType::Decimal128(p, s) => Some((*p, *s)),
        _ => None,
    }
}

fn integral_rank(dt: &DataType) -> u8 {
    match dt {
        DataType::Int8 => 1,
        DataType::Int16 => 2,
        DataType::Int32 => 3,
        DataType::Int64 => 4,
        _ => 0,
    }
}

/// Spark's `DecimalPrecision.widerDecimalType`: enough integral digits and scale for both.
pub fn wider_decimal(p1: u8, s1: i8, p2: u8, s2: i8) -> DataType {
    let scale = s1.max(s2);
    let range = (p1 as i16 - s1 as i16).max(p2 as i16 - s2 as i16);
    bounded_decimal(range + scale as i16, scale as i16)
}

/// A decimal type capped at precision 38 (Spark's `DecimalType.bounded`).
pub fn bounded_decimal(precision: i16, scale: i16) -> DataType {
    let p = precision.clamp(1, MAX_DECIMAL_PRECISION as i16) as u8;
    let s = scale.clamp(0, p as i16) as i8;
    DataType::Decimal128(p, s)
}

/// Spark's precision-loss adjustment when a decimal result exceeds 38 digits
/// (`DecimalType.adjustPrecisionScale` with `spark.sql.decimalOperations.allowPrecisionLoss`).
pub fn adjust_precision_scale(precision: i32, scale: i32) -> DataType {
    let max = MAX_DECIMAL_PRECISION as i32;
    if precision <= max {
        return DataType::Decimal128(precision as u8, scale as i8);
    }
    let int_digits = precision - scale;
    let min_scale = scale.min(6);
    let adjusted_scale = (max - int_digits).max(min_scale);
    DataType::Decimal128(max as u8, adjusted_scale as i8)
}

/// The common type two numeric operands are widened to (`findWiderTypeForTwo`).
pub fn wider_numeric(l: &DataType, r: &DataType) -> Option<DataType> {
    let l = spark_equivalent(l);
    let r = spark_equivalent(r);
    if l == r {
        return Some(l);
    }
    if is_floating(&l) || is_floating(&r) {
        // FLOAT op FLOAT stays float; anything with a double or a decimal and a float is double.
        let only_float = |d: &DataType| matches!(d, DataType::Float32) || is_integral(d);
        return Some(if only_float(&l) && only_float(&r) {
            DataType::Float32
        } else {
            DataType::Float64
        });
    }
    if is_integral(&l) && is_integral(&r) {
        return Some(if integral_rank(&l) >= integral_rank(&r) {
            l
        } else {
            r
        });
    }
    let (p1, s1) = integral_as_decimal(&l)?;
    let (p2, s2) = integral_as_decimal(&r)?;
    Some(wider_decimal(p1, s1, p2, s2))
}

/// The type both sides of a comparison are cast to, or `None` when Spark rejects the pair.
pub fn comparison_type(l: &DataType, r: &DataType) -> Option<DataType> {
    use DataType as D;
    let (ls, rs) = (spark_equivalent(l), spark_equivalent(r));
    if ls == rs {
        return Some(ls);
    }
    match (&ls, &rs) {
        (D::Null, other) | (other, D::Null) => Some(other.clone()),
        _ if is_numeric(&ls) && is_numeric(&rs) => wider_numeric(&ls, &rs),
        (D::Timestamp(_, a), D::Timestamp(_, b)) => Some(D::Timestamp(
            TimeUnit::Microsecond,
            a.clone().or_else(|| b.clone()),
        )),
        (D::Date32, t @ D::Timestamp(..)) | (t @ D::Timestamp(..), D::Date32) => Some(t.clone()),
        // A string beside a decimal compares as a DOUBLE (`1.5 = '1.51'` is false, and
        // `'1.5' > 0.5` needs no DECIMAL(1,1) to hold 1.5), as Spark coerces it.
        (D::Utf8, D::Decimal128(..)) | (D::Decimal128(..), D::Utf8) => Some(D::Float64),
        (D::Utf8, other) | (other, D::Utf8)
            if matches!(other, D::Date32 | D::Timestamp(..) | D::Boolean) || is_numeric(other) =>
        {
            Some(other.clone())
        }
        (D::Utf8, D::Binary) | (D::Binary, D::Utf8) => Some(D::Binary),
        (D::Interval(IntervalUnit::DayTime), d @ D::Duration(_))
        | (d @ D::Duration(_), D::Interval(IntervalUnit::DayTime)) => Some(d.clone()),
        // Structs of the same field names (in any case) compare field by field; arrays
        // element by element.
        (D::Struct(a), D::Struct(b))
            if a.len() == b.len()
                && a.iter()
                    .zip(b.iter())
                    .all(|(x, y)| x.name().eq_ignore_ascii_case(y.name())) =>
        {
            let fields = a
                .iter()
                .zip(b.iter())
                .map(|(x, y)| {
                    comparison_type(x.data_type(), y.data_type())
                        .map(|t| arrow_schema::Field::new(x.name(), t, true))
                })
                .collect::<Option<Vec<_>>>()?;
            Some(D::Struct(fields.into()))
        }
        (D::List(a), D::List(b)) => {
            let t = comparison_type(a.data_type(), b.data_type())?;
            Some(D::List(std::sync::Arc::new(arrow_schema::Field::new(
                a.name(),
                t,
                true,
            ))))
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn type_names_parse() {
        assert_eq!(parse_data_type("INT", "UTC").ok(), Some(DataType::Int32));
        assert_eq!(
            parse_data_type("decimal(15, 2)", "UTC").ok(),
            Some(DataType::Decimal128(15, 2))
        );
        assert_eq!(
            parse_data_type("timestamp", "UTC").ok(),
            Some(DataType::Timestamp(
                TimeUnit::Microsecond,
                Some("UTC".into())
            ))
        );
        assert!(parse_data_type("decimal(40,2)", "UTC").is_err());
        assert!(parse_data_type("frobnicate", "UTC").is_err());
    }

    #[test]
    fn numeric_widening_follows_spark() {
        use DataType as D;
        assert_eq!(wider_numeric(&D::Int32, &D::Int64), Some(D::Int64));
        assert_eq!(wider_numeric(&D::Int32, &D::Float32), Some(D::Float32));
        assert_eq!(wider_numeric(&D::Int64, &D::Float64), Some(D::Float64));
        assert_eq!(
            wider_numeric(&D::Decimal128(15, 2), &D::Int32),
            Some(D::Decimal128(15, 2))
        );
        assert_eq!(
            wider_numeric(&D::Decimal128(5, 2), &D::Int64),
            Some(D::Decimal128(22, 2))
        );
        assert_eq!(
            wider_numeric(&D::Decimal128(5, 2), &D::Float32),
            Some(D::Float64)
        );
    }

    #[test]
    fn comparisons_reject_what_spark_rejects() {
        use DataType as D;
        assert_eq!(comparison_type(&D::Int32, &D::Boolean), None);
        assert_eq!(comparison_type(&D::Utf8, &D::Date32), Some(D::Date32));
        assert_eq!(comparison_type(&D::Binary, &D::Int32), None);
    }

    #[test]
    fn precision_loss_matches_spark() {
        // decimal(38,10) * decimal(38,10): p = 77, s = 20 -> (38, 6)
        assert_eq!(adjust_precision_scale(77, 20), DataType::Decimal128(38, 6));
        assert_eq!(adjust_precision_scale(20, 4), DataType::Decimal128(20, 4));
    }
}
