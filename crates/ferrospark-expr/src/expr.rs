//! The logical expression tree users build (`fs.col("a") > 5`, `fs.expr("...")`), printable
//! as Spark SQL text that [`crate::parse_expr`] reads back to the same tree.

use std::fmt;
use std::sync::Arc;

use arrow_array::{
    Array, ArrayRef, BinaryArray, BooleanArray, Date32Array, Decimal128Array, Float32Array,
    Float64Array, Int16Array, Int32Array, Int64Array, Int8Array, StringArray,
    TimestampMicrosecondArray,
};
use arrow_schema::{DataType, TimeUnit};

use crate::types::spark_type_name;

/// Binary operators, in Spark SQL spelling.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub enum BinaryOp {
    /// `AND` (three-valued)
    And,
    /// `OR` (three-valued)
    Or,
    /// `=`
    Eq,
    /// `!=` / `<>`
    NotEq,
    /// `<`
    Lt,
    /// `<=`
    LtEq,
    /// `>`
    Gt,
    /// `>=`
    GtEq,
    /// `<=>` null-safe equality
    EqNullSafe,
    /// `+`
    Plus,
    /// `-`
    Minus,
    /// `*`
    Multiply,
    /// `/` (always fractional, as in Spark)
    Divide,
    /// `%`
    Modulo,
}

impl BinaryOp {
    /// The operator's SQL text.
    pub fn sql(self) -> &'static str {
        match self {
            BinaryOp::And => "AND",
            BinaryOp::Or => "OR",
            BinaryOp::Eq => "=",
            BinaryOp::NotEq => "!=",
            BinaryOp::Lt => "<",
            BinaryOp::LtEq => "<=",
            BinaryOp::Gt => ">",
            BinaryOp::GtEq => ">=",
            BinaryOp::EqNullSafe => "<=>",
            BinaryOp::Plus => "+",
            BinaryOp::Minus => "-",
            BinaryOp::Multiply => "*",
            BinaryOp::Divide => "/",
            BinaryOp::Modulo => "%",
        }
    }

    /// Parses an operator name as the Python bindings pass it (`"+"`, `"and"`, `"<=>"`).
    pub fn from_name(name: &str) -> Option<Self> {
        Some(match name.to_ascii_lowercase().as_str() {
            "and" | "&" => BinaryOp::And,
            "or" | "|" => BinaryOp::Or,
            "=" | "==" => BinaryOp::Eq,
            "!=" | "<>" => BinaryOp::NotEq,
            "<" => BinaryOp::Lt,
            "<=" => BinaryOp::LtEq,
            ">" => BinaryOp::Gt,
            ">=" => BinaryOp::GtEq,
            "<=>" => BinaryOp::EqNullSafe,
            "+" => BinaryOp::Plus,
            "-" => BinaryOp::Minus,
            "*" => BinaryOp::Multiply,
            "/" => BinaryOp::Divide,
            "%" => BinaryOp::Modulo,
            _ => return None,
        })
    }

    /// True for `= != < <= > >= <=>`.
    pub fn is_comparison(self) -> bool {
        matches!(
            self,
            BinaryOp::Eq
                | BinaryOp::NotEq
                | BinaryOp::Lt
                | BinaryOp::LtEq
                | BinaryOp::Gt
                | BinaryOp::GtEq
                | BinaryOp::EqNullSafe
        )
    }

    /// True for `+ - * / %`.
    pub fn is_arithmetic(self) -> bool {
        matches!(
            self,
            BinaryOp::Plus
                | BinaryOp::Minus
                | BinaryOp::Multiply
                | BinaryOp::Divide
                | BinaryOp::Modulo
        )
    }

    /// `a op b` == `b swapped(op) a`, for comparisons.
    pub fn swapped(self) -> Self {
        match self {
            BinaryOp::Lt => BinaryOp::Gt,
            BinaryOp::LtEq => BinaryOp::GtEq,
            BinaryOp::Gt => BinaryOp::Lt,
            BinaryOp::GtEq => BinaryOp::LtEq,
            other => other,
        }
    }

    fn precedence(self) -> u8 {
        match self {
            BinaryOp::Or => 1,
            BinaryOp::And => 2,
            BinaryOp::Eq
            | BinaryOp::NotEq
            | BinaryOp::Lt
            | BinaryOp::LtEq
            | BinaryOp::Gt
            | BinaryOp::GtEq
            | BinaryOp::EqNullSafe => 4,
            BinaryOp::Plus | BinaryOp::Minus => 6,
            BinaryOp::Multiply | BinaryOp::Divide | BinaryOp::Modulo => 7,
        }
    }
}

/// String predicates that are not patterns.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub enum StringMatch {
    /// `startswith(s, p)`
    StartsWith,
    /// `endswith(s, p)`
    EndsWith,
    /// `contains(s, p)`
    Contains,
}

impl StringMatch {
    fn name(self) -> &'static str {
        match self {
            StringMatch::StartsWith => "startswith",
            StringMatch::EndsWith => "endswith",
            StringMatch::Contains => "contains",
        }
    }
}

/// The parts of a name written as PySpark's `col("t.a.b")` takes it: split at the dots
/// outside backquotes, each backquoted part unquoted (a doubled backquote is one). `None`
/// for a name with neither dots nor backquotes.
pub fn column_name_parts(name: &str) -> Option<Vec<String>> {
    if !name.contains(['.', '`']) {
        return None;
    }
    let mut parts = vec![String::new()];
    let mut chars = name.chars().peekable();
    let mut quoted = false;
    while let Some(c) = chars.next() {
        match c {
            '`' if quoted && chars.peek() == Some(&'`') => {
                chars.next();
                parts.last_mut()?.push('`');
            }
            '`' => quoted = !quoted,
            '.' if !quoted => parts.push(String::new()),
            c => parts.last_mut()?.push(c),
        }
    }
    (!quoted && parts.iter().all(|p| !p.is_empty())).then_some(parts)
}

/// A constant: a one-element Arrow array, so its type is exact and kernels take it directly.
#[derive(Debug, Clone)]
pub struct Literal(ArrayRef);

impl PartialEq for Literal {
    fn eq(&self, other: &Self) -> bool {
        self.0.as_ref() == other.0.as_ref()
    }
}

impl Literal {
    /// Wraps a length-1 array.
    pub fn new(array: ArrayRef) -> Self {
        debug_assert_eq!(array.len(), 1);
        Literal(array)
    }
    /// The typed NULL.
    pub fn null(dt: &DataType) -> Self {
        Literal(arrow_array::new_null_array(dt, 1))
    }
    /// A boolean.
    pub fn boolean(v: bool) -> Self {
        Literal(Arc::new(BooleanArray::from(vec![v])))
    }
    /// An INT if it fits, else a BIGINT (Spark's integer literal typing).
    pub fn integer(v: i64) -> Self {
        match i32::try_from(v) {
            Ok(i) => Literal(Arc::new(Int32Array::from(vec![i]))),
            Err(_) => Literal(Arc::new(Int64Array::from(vec![v]))),
        }
    }
    /// A BIGINT.
    pub fn bigint(v: i64) -> Self {
        Literal(Arc::new(Int64Array::from(vec![v])))
    }
    /// A DOUBLE.
    pub fn double(v: f64) -> Self {
        Literal(Arc::new(Float64Array::from(vec![v])))
    }
    /// A STRING.
    pub fn string(v: &str) -> Self {
        Literal(Arc::new(StringArray::from(vec![v])))
    }
    /// A BINARY.
    pub fn binary(v: &[u8]) -> Self {
        Literal(Arc::new(BinaryArray::from_vec(vec![v])))
    }
    /// A DATE as days since the epoch.
    pub fn date(days: i32) -> Self {
        Literal(Arc::new(Date32Array::from(vec![days])))
    }
    /// A TIMESTAMP (`tz` = Some) or TIMESTAMP_NTZ (`tz` = None) in microseconds.
    pub fn timestamp_micros(v: i64, tz: Option<&str>) -> Self {
        let a =
            TimestampMicrosecondArray::from(vec![v]).with_timezone_opt(tz.map(Arc::<str>::from));
        Literal(Arc::new(a))
    }
    /// A DECIMAL(p, s) from its unscaled value; `None` if the value needs more than `p` digits.
    pub fn decimal(unscaled: i128, precision: u8, scale: i8) -> Option<Self> {
        let a = Decimal128Array::from(vec![unscaled])
            .with_precision_and_scale(precision, scale)
            .ok()?;
        a.validate_decimal_precision(precision).ok()?;
        Some(Literal(Arc::new(a)))
    }
    /// Parses decimal text (`-12.340`) into the narrowest DECIMAL that holds it exactly.
    pub fn decimal_from_str(text: &str) -> Option<Self> {
        let t = text.trim();
        let (neg, digits) = match t.strip_prefix('-') {
            Some(r) => (true, r),
            None => (false, t.strip_prefix('+').unwrap_or(t)),
        };
        let (int_part, frac_part) = digits.split_once('.').unwrap_or((digits, ""));
        if int_part.is_empty() && frac_part.is_empty() {
            return None;
        }
        if !int_part
            .bytes()
            .chain(frac_part.bytes())
            .all(|b| b.is_ascii_digit())
        {
            return None;
        }
        let all = format!("{int_part}{frac_part}");
        let trimmed = all.trim_start_matches('0');
        let scale = frac_part.len();
        let precision = trimmed.len().max(scale).max(1);
        if precision > 38 {
            return None;
        }
        let unscaled: i128 = if trimmed.is_empty() {
            0
        } else {
            trimmed.parse().ok()?
        };
        let unscaled = if neg { -unscaled } else { unscaled };
        Literal::decimal(unscaled, precision as u8, scale as i8)
    }

    /// The literal's type.
    pub fn data_type(&self) -> &DataType {
        self.0.data_type()
    }
    /// The one-element array.
    pub fn array(&self) -> &ArrayRef {
        &self.0
    }
    /// True for a NULL of any type.
    pub fn is_null(&self) -> bool {
        self.0.data_type() == &DataType::Null || self.0.is_null(0)
    }
}

/// Writes a Spark SQL string literal, escaping quotes and backslashes as Spark's parser expects.
pub fn quote_string(s: &str, f: &mut impl fmt::Write) -> fmt::Result {
    f.write_char('\'')?;
    for c in s.chars() {
        match c {
            '\'' => f.write_str("\\'")?,
            '\\' => f.write_str("\\\\")?,
            '\n' => f.write_str("\\n")?,
            '\r' => f.write_str("\\r")?,
            '\t' => f.write_str("\\t")?,
            '\0' => f.write_str("\\0")?,
            c => f.write_char(c)?,
        }
    }
    f.write_char('\'')
}

fn format_double(v: f64) -> String {
    if v.is_nan() {
        "CAST('NaN' AS DOUBLE)".into()
    } else if v.is_infinite() {
        if v > 0.0 {
            "CAST('Infinity' AS DOUBLE)".into()
        } else {
            "CAST('-Infinity' AS DOUBLE)".into()
        }
    } else if v == 0.0 && v.is_sign_negative() {
        "CAST('-0.0' AS DOUBLE)".into()
    } else {
        // `{:e}` is the shortest text that reads back to the same bits; E marks a double.
        format!("{v:e}").replace('e', "E")
    }
}

impl fmt::Display for Literal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let a = &self.0;
        let dt = a.data_type();
        if self.is_null() {
            return match dt {
                DataType::Null => f.write_str("NULL"),
                dt => write!(f, "CAST(NULL AS {})", spark_type_name(dt)),
            };
        }
        macro_rules! value {
            ($t:ty) => {
                a.as_any().downcast_ref::<$t>().map(|x| x.value(0))
            };
        }
        match dt {
            DataType::Boolean => match value!(BooleanArray) {
                Some(v) => write!(f, "{v}"),
                None => f.write_str("NULL"),
            },
            DataType::Int8 => write!(f, "CAST({} AS TINYINT)", value!(Int8Array).unwrap_or(0)),
            DataType::Int16 => write!(f, "CAST({} AS SMALLINT)", value!(Int16Array).unwrap_or(0)),
            DataType::Int32 => write!(f, "{}", value!(Int32Array).unwrap_or(0)),
            DataType::Int64 => {
                let v = value!(Int64Array).unwrap_or(0);
                if i32::try_from(v).is_ok() || v == i64::MIN {
                    write!(f, "CAST('{v}' AS BIGINT)")
                } else {
                    write!(f, "{v}")
                }
            }
            DataType::Float32 => {
                let v = value!(Float32Array).unwrap_or(0.0);
                let text = if v.is_nan() {
                    "NaN".to_string()
                } else if v.is_infinite() {
                    if v > 0.0 { "Infinity" } else { "-Infinity" }.to_string()
                } else {
                    format!("{v:e}")
                };
                write!(f, "CAST('{text}' AS FLOAT)")
            }
            DataType::Float64 => f.write_str(&format_double(value!(Float64Array).unwrap_or(0.0))),
            DataType::Decimal128(p, s) => {
                let v = value!(Decimal128Array).unwrap_or(0);
                let text = format_decimal(v, *s);
                // Plain `12.34` reads back as DECIMAL(4,2); other precisions need the cast.
                let natural = Literal::decimal_from_str(&text).map(|l| l.data_type().clone());
                if *s > 0 && natural.as_ref() == Some(dt) {
                    f.write_str(&text)
                } else {
                    write!(f, "CAST('{text}' AS DECIMAL({p},{s}))")
                }
            }
            DataType::Utf8 => quote_string(value!(StringArray).unwrap_or(""), f),
            DataType::Binary => {
                f.write_str("X'")?;
                for b in value!(BinaryArray).unwrap_or(&[]) {
                    write!(f, "{b:02X}")?;
                }
                f.write_str("'")
            }
            DataType::Date32 => {
                let days = value!(Date32Array).unwrap_or(0);
                match chrono::DateTime::from_timestamp(days as i64 * 86_400, 0) {
                    Some(d) => write!(f, "DATE '{}'", d.format("%Y-%m-%d")),
                    None => write!(f, "CAST({days} AS DATE)"),
                }
            }
            DataType::Timestamp(TimeUnit::Microsecond, tz) => {
                let v = value!(TimestampMicrosecondArray).unwrap_or(0);
                let secs = v.div_euclid(1_000_000);
                let micros = v.rem_euclid(1_000_000) as u32;
                match chrono::DateTime::from_timestamp(secs, micros * 1000) {
                    Some(d) => {
                        let text = d.format("%Y-%m-%d %H:%M:%S%.6f");
                        match tz {
                            Some(_) => write!(f, "TIMESTAMP '{text}+00:00'"),
                            None => write!(f, "TIMESTAMP_NTZ '{text}'"),
                        }
                    }
                    None => write!(f, "CAST(NULL AS {})", spark_type_name(dt)),
                }
            }
            DataType::Interval(arrow_schema::IntervalUnit::YearMonth) => {
                let v = a
                    .as_any()
                    .downcast_ref::<arrow_array::IntervalYearMonthArray>()
                    .map_or(0, |x| x.value(0));
                f.write_str(&crate::interval::year_month_sql(v))
            }
            DataType::Interval(arrow_schema::IntervalUnit::DayTime) => {
                let v = a
                    .as_any()
                    .downcast_ref::<arrow_array::IntervalDayTimeArray>()
                    .map_or(0, |x| x.value(0).days);
                f.write_str(&crate::interval::day_sql(v))
            }
            DataType::Interval(arrow_schema::IntervalUnit::MonthDayNano) => {
                let v = a
                    .as_any()
                    .downcast_ref::<arrow_array::IntervalMonthDayNanoArray>()
                    .map(|x| crate::interval::CalendarInterval::from_arrow(x.value(0)))
                    .unwrap_or_default();
                write!(f, "INTERVAL '{}'", v.text())
            }
            DataType::Duration(TimeUnit::Microsecond) => {
                let v = a
                    .as_any()
                    .downcast_ref::<arrow_array::DurationMicrosecondArray>()
                    .map_or(0, |x| x.value(0));
                f.write_str(&crate::interval::day_time_sql(v))
            }
            other => write!(f, "<literal of type {other}>"),
        }
    }
}

/// Renders an unscaled decimal with `scale` fractional digits.
pub fn format_decimal(unscaled: i128, scale: i8) -> String {
    let neg = unscaled < 0;
    let digits = unscaled.unsigned_abs().to_string();
    let scale = scale.max(0) as usize;
    let body = if scale == 0 {
        digits
    } else if digits.len() > scale {
        format!(
            "{}.{}",
            &digits[..digits.len() - scale],
            &digits[digits.len() - scale..]
        )
    } else {
        format!("0.{}{}", "0".repeat(scale - digits.len()), digits)
    };
    if neg {
        format!("-{body}")
    } else {
        body
    }
}

/// A window frame as written: `ROWS` / `RANGE BETWEEN start AND end`.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct FrameSpec {
    /// `ROWS` (true) or `RANGE` (false).
    pub rows: bool,
    /// Start bound.
    pub start: FrameEdge,
    /// End bound.
    pub end: FrameEdge,
}

/// One edge of a frame.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub enum FrameEdge {
    /// `UNBOUNDED PRECEDING`
    UnboundedPreceding,
    /// `n PRECEDING` (n as written: a literal)
    Preceding(Expr),
    /// `CURRENT ROW`
    CurrentRow,
    /// `n FOLLOWING`
    Following(Expr),
    /// `UNBOUNDED FOLLOWING`
    UnboundedFollowing,
}

impl fmt::Display for FrameEdge {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FrameEdge::UnboundedPreceding => f.write_str("UNBOUNDED PRECEDING"),
            FrameEdge::Preceding(e) => write!(f, "{e} PRECEDING"),
            FrameEdge::CurrentRow => f.write_str("CURRENT ROW"),
            FrameEdge::Following(e) => write!(f, "{e} FOLLOWING"),
            FrameEdge::UnboundedFollowing => f.write_str("UNBOUNDED FOLLOWING"),
        }
    }
}

impl fmt::Display for FrameSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} BETWEEN {} AND {}",
            if self.rows { "ROWS" } else { "RANGE" },
            self.start,
            self.end
        )
    }
}

/// Strips the plan's `#id` suffixes (and backquotes), for names derived from resolved
/// expressions.
pub fn strip_ids(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '#' && chars.peek().is_some_and(|d| d.is_ascii_digit()) {
            while chars.peek().is_some_and(|d| d.is_ascii_digit()) {
                chars.next();
            }
        } else if c != '`' {
            out.push(c);
        }
    }
    out
}

/// Spark's column name of aggregate call `name` over arguments shown as `args`: `count(1)`
/// for `count(*)`, percentile's frequency shown, approx_count_distinct's relative error and
/// IGNORE NULLS left out.
pub fn aggregate_call_name(name: &str, mut args: Vec<String>, distinct: bool) -> String {
    match name {
        "percentile_cont" | "percentile_disc" if args.len() == 3 => {
            let desc = if args[2] == "true" { " DESC" } else { "" };
            return format!(
                "{name}({}) WITHIN GROUP (ORDER BY {}{desc})",
                args[1], args[0]
            );
        }
        "count" if args.is_empty() => args.push("1".into()),
        "percentile" if args.len() == 2 => args.push("1".into()),
        "percentile_approx" | "approx_percentile" if args.len() == 2 => args.push("10000".into()),
        "approx_count_distinct" => args.truncate(1),
        _ => {}
    }
    let d = if distinct { "DISTINCT " } else { "" };
    format!("{name}({d}{})", args.join(", "))
}

/// Spark's column name of a scalar call: the defaults Spark's analyzer fills in shown
/// (`substring(s, 2, 2147483647)`, `split(s, ,, -1)`), its operator-like calls in their
/// operator form (`(IF(c, a, b))`, `(a div b)`, `(+ x)`), the names Spark's expressions print
/// in capitals (`CEIL(x)`, `SIGNUM(x)`).
fn scalar_call_name(name: &str, mut args: Vec<String>) -> String {
    let n = args.len();
    match (name, n) {
        ("if", 3) => return format!("(IF({}))", args.join(", ")),
        ("div", 2) => return format!("({} div {})", args[0], args[1]),
        ("positive", 1) => return format!("(+ {})", args[0]),
        ("sort_array", 1) => args.push("true".into()),
        ("replace", 2) => args.push(String::new()),
        ("position" | "locate", 2) => args.push("1".into()),
        ("split", 2) => args.push("-1".into()),
        ("regexp_extract" | "regexp_extract_all", 2) => args.push("1".into()),
        ("regexp_replace", 3) => args.push("1".into()),
        ("regexp_instr", 2) => args.push("0".into()),
        ("substring" | "substr", 2) => args.push(i32::MAX.to_string()),
        ("make_interval", 1..=6) => {
            args.resize(6, "0".into());
            args.push("0.000000".into());
        }
        ("make_dt_interval", 1..=3) => {
            args.resize(3, "0".into());
            args.push("0.000000".into());
        }
        ("make_ym_interval", 1) => args.push("0".into()),
        ("hmac", 2) => args.push("SHA-256".into()),
        // Spark fills the locale's missing language and country with empty strings.
        ("sentences", 1 | 2) => args.resize(3, String::new()),
        // Spark names `array_sort(a)` with its default comparator written out.
        ("array_sort", 1) => args.push(
            "lambdafunction((IF(((namedlambdavariable() IS NULL) AND (namedlambdavariable() IS NULL)), 0, (IF((namedlambdavariable() IS NULL), 1, (IF((namedlambdavariable() IS NULL), -1, (IF((namedlambdavariable() < namedlambdavariable()), -1, (IF((namedlambdavariable() > namedlambdavariable()), 1, 0)))))))))), namedlambdavariable(), namedlambdavariable())".into(),
        ),
        ("percentile_approx" | "approx_percentile", 2) => args.push("10000".into()),
        ("listagg" | "string_agg", 1) => args.push("NULL".into()),
        ("str_to_map", 1) => {
            args.push(",".into());
            args.push(":".into());
        }
        ("str_to_map", 2) => args.push(":".into()),
        ("aggregate" | "reduce", 3) => {
            args.push("lambdafunction(namedlambdavariable(), namedlambdavariable())".into())
        }
        ("convert_timezone", 2) => args.insert(0, "current_timezone()".into()),
        // Spark's name leaves the time zone out.
        ("try_make_timestamp", 7) => args.truncate(6),
        ("sec" | "csc" | "cot" | "signum", 1)
        | ("sinh" | "cosh" | "tanh" | "asinh" | "acosh" | "atanh", 1)
        | ("hypot", 2)
        | ("spark_partition_id", 0)
        | ("ceil" | "floor", 1)
        | ("rlike" | "regexp_like" | "regexp", 2) => {
            return format!("{}({})", name.to_ascii_uppercase(), args.join(", "))
        }
        _ => {}
    }
    format!("{name}({})", args.join(", "))
}

/// Spark's name of a constant where it differs from Arrow's text: doubles as Java prints
/// them (`1.0E10`), bytes as `X'0A1B'`, dates as `DATE '2020-01-01'`.
fn literal_spark_name(l: &Literal) -> Option<String> {
    use arrow_array::cast::AsArray;
    let a = l.array();
    Some(match a.data_type() {
        DataType::Float64 => crate::cast::java_double_string(
            a.as_primitive::<arrow_array::types::Float64Type>().value(0),
        ),
        // The literal's SQL text is Spark's name for these (`X'0A1B'`, `DATE '2020-01-01'`).
        DataType::Binary | DataType::Date32 => l.to_string(),
        _ => return None,
    })
}

/// The text of a typed literal as Spark prints it back: `DATE '2019-01-01\t'` as
/// `DATE '2019-01-01'`, `TIMESTAMP '2016-03-11 20:54:00.000'` as `TIMESTAMP '2016-03-11 20:54:00'`
/// (text with its own zone is left as written).
fn typed_literal_text(type_name: &str, value: &str) -> String {
    let t = type_name.to_ascii_lowercase();
    if t == "date" {
        if let Some(days) = crate::cast::parse_spark_date(value) {
            if let Some(d) = crate::functions::datetime::date_of(days) {
                return d.format("%Y-%m-%d").to_string();
            }
        }
    } else if t.starts_with("timestamp") {
        if let Some(ts) = crate::timestamp_text::read_timestamp_text(value) {
            if ts.zone.is_none() && !ts.just_time {
                if let Some(local) = ts.local(|| chrono::NaiveDate::MIN) {
                    let mut out = local.format("%Y-%m-%d %H:%M:%S").to_string();
                    let us = local.and_utc().timestamp_subsec_micros();
                    if us > 0 {
                        let f = format!(".{us:06}");
                        out.push_str(f.trim_end_matches('0'));
                    }
                    return out;
                }
            }
        }
    }
    value.to_string()
}

/// A cast's target type as Spark prints it in a name: `LONG` as `BIGINT`, `decimal` as
/// `DECIMAL(10,0)`, an interval's fields spelled out.
fn sql_type_name(type_name: &str) -> String {
    let upper = type_name.to_ascii_uppercase();
    if upper.starts_with("INTERVAL") {
        return upper.replace('_', " ");
    }
    if upper.contains("CHAR") {
        return upper;
    }
    crate::types::parse_data_type(type_name, "UTC")
        .map(|dt| spark_type_name(&dt).to_ascii_uppercase())
        .unwrap_or(upper)
}

/// Spark's column name of a window call, as Spark names it once it has resolved the frame:
/// each sort key's direction and the frame the call runs over spelled out, `RANK()` in
/// capitals, lag's offset and default shown (`RANK() OVER (PARTITION BY k ORDER BY ts ASC
/// NULLS FIRST ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW)`).
fn window_spark_name(
    func: &Expr,
    partition_by: &[Expr],
    order_by: &[Expr],
    frame: Option<&FrameSpec>,
) -> String {
    let (name, args) = match func {
        Expr::Function { name, args } | Expr::Aggregate { name, args, .. } => {
            (name.to_ascii_lowercase(), args.as_slice())
        }
        other => return other.spark_name(),
    };
    let shown = |i: usize, otherwise: &str| {
        args.get(i)
            .map_or_else(|| otherwise.to_string(), Expr::spark_name)
    };
    const TO_CURRENT: &str = "UNBOUNDED PRECEDING AND CURRENT ROW";
    let (text, default_frame) = match name.as_str() {
        "rank" | "dense_rank" | "percent_rank" => (
            format!("{}()", name.to_ascii_uppercase()),
            format!("ROWS BETWEEN {TO_CURRENT}"),
        ),
        "row_number" | "ntile" | "counter_diff" => {
            (func.spark_name(), format!("ROWS BETWEEN {TO_CURRENT}"))
        }
        "cume_dist" => (func.spark_name(), format!("RANGE BETWEEN {TO_CURRENT}")),
        "lag" | "lead" => {
            let offset = shown(1, "1");
            let delta = match (name.as_str(), offset.strip_prefix('-')) {
                ("lead", _) => offset.clone(),
                (_, Some(positive)) => positive.to_string(),
                _ => format!("-{offset}"),
            };
            (
                format!("{name}({}, {offset}, {})", shown(0, ""), shown(2, "NULL")),
                format!("ROWS BETWEEN {delta} FOLLOWING AND {delta} FOLLOWING"),
            )
        }
        _ if order_by.is_empty() => (
            func.spark_name(),
            "ROWS BETWEEN UNBOUNDED PRECEDING AND UNBOUNDED FOLLOWING".to_string(),
        ),
        _ => (func.spark_name(), format!("RANGE BETWEEN {TO_CURRENT}")),
    };
    // A written frame replaces the default, except for lag and lead, whose frame is fixed.
    let frame = match frame {
        Some(f) if !matches!(name.as_str(), "lag" | "lead") => {
            let edge = |e: &FrameEdge| match e {
                FrameEdge::Preceding(v) => format!("{} PRECEDING", v.spark_name()),
                FrameEdge::Following(v) => format!("{} FOLLOWING", v.spark_name()),
                other => other.to_string(),
            };
            format!(
                "{} BETWEEN {} AND {}",
                if f.rows { "ROWS" } else { "RANGE" },
                edge(&f.start),
                edge(&f.end)
            )
        }
        _ => default_frame,
    };
    let sort_key = |o: &Expr| match o {
        Expr::SortKey {
            expr,
            ascending,
            nulls_first,
        } => format!(
            "{} {} NULLS {}",
            expr.spark_name(),
            if *ascending { "ASC" } else { "DESC" },
            if *nulls_first { "FIRST" } else { "LAST" }
        ),
        plain => format!("{} ASC NULLS FIRST", plain.spark_name()),
    };
    let mut over = Vec::new();
    if !partition_by.is_empty() {
        let keys: Vec<String> = partition_by.iter().map(Expr::spark_name).collect();
        over.push(format!("PARTITION BY {}", keys.join(", ")));
    }
    if !order_by.is_empty() {
        let keys: Vec<String> = order_by.iter().map(sort_key).collect();
        over.push(format!("ORDER BY {}", keys.join(", ")));
    }
    over.push(frame);
    format!("{text} OVER ({})", over.join(" "))
}

/// The text inside `OVER (...)`.
fn over_text(partition_by: &[Expr], order_by: &[Expr], frame: Option<&FrameSpec>) -> String {
    let name = |e: &Expr| e.to_string();
    let mut parts = Vec::new();
    if !partition_by.is_empty() {
        let keys: Vec<String> = partition_by.iter().map(name).collect();
        parts.push(format!("PARTITION BY {}", keys.join(", ")));
    }
    if !order_by.is_empty() {
        let keys: Vec<String> = order_by.iter().map(name).collect();
        parts.push(format!("ORDER BY {}", keys.join(", ")));
    }
    if let Some(fr) = frame {
        parts.push(fr.to_string());
    }
    parts.join(" ")
}

/// A logical expression, as the user wrote it: names not yet resolved, types not yet checked.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub enum Expr {
    /// A top-level column by name.
    Column(String),
    /// A field of a struct expression (`s.a`).
    Field(Box<Expr>, String),
    /// A constant.
    Literal(Literal),
    /// A typed string literal resolved at binding time against the session time zone
    /// (`DATE '2020-01-01'`, `TIMESTAMP '2020-01-01 10:00:00'`).
    TypedString {
        /// Spark type name: `DATE`, `TIMESTAMP`, `TIMESTAMP_NTZ`.
        type_name: String,
        /// The literal text.
        value: String,
    },
    /// `NOT e`
    Not(Box<Expr>),
    /// `-e`
    Negative(Box<Expr>),
    /// `e IS NULL`
    IsNull(Box<Expr>),
    /// `e IS NOT NULL`
    IsNotNull(Box<Expr>),
    /// `l op r`
    Binary {
        /// left operand
        left: Box<Expr>,
        /// operator
        op: BinaryOp,
        /// right operand
        right: Box<Expr>,
    },
    /// `e [NOT] IN (list)`
    InList {
        /// tested value
        expr: Box<Expr>,
        /// candidates
        list: Vec<Expr>,
        /// NOT IN
        negated: bool,
    },
    /// `e [NOT] BETWEEN low AND high`
    Between {
        /// tested value
        expr: Box<Expr>,
        /// lower bound (inclusive)
        low: Box<Expr>,
        /// upper bound (inclusive)
        high: Box<Expr>,
        /// NOT BETWEEN
        negated: bool,
    },
    /// `e [NOT] LIKE pattern` / `ILIKE`
    Like {
        /// tested string
        expr: Box<Expr>,
        /// SQL pattern with `%` and `_`, `\` escapes
        pattern: Box<Expr>,
        /// NOT LIKE
        negated: bool,
        /// ILIKE
        case_insensitive: bool,
    },
    /// `startswith(e, p)`, `endswith(e, p)`, `contains(e, p)`
    StringMatch {
        /// which test
        op: StringMatch,
        /// tested string
        expr: Box<Expr>,
        /// the fixed text
        pattern: Box<Expr>,
    },
    /// `CAST(e AS type)`
    Cast {
        /// converted value
        expr: Box<Expr>,
        /// Spark type name of the target
        type_name: String,
    },
    /// `try_cast(e AS type)`: NULL where the cast fails.
    TryCast {
        /// converted value
        expr: Box<Expr>,
        /// Spark type name of the target
        type_name: String,
    },
    /// `CASE WHEN c1 THEN v1 ... [ELSE e] END` (a simple `CASE x WHEN a ...` parses into
    /// this searched form with `x = a` conditions).
    Case {
        /// (condition, value) in order
        branches: Vec<(Expr, Expr)>,
        /// the ELSE value (NULL when absent)
        otherwise: Option<Box<Expr>>,
    },
    /// `f(...) OVER (PARTITION BY ... ORDER BY ... frame)`: a window function call. Valid in
    /// a SELECT list (or `select` / `withColumn`), where the planner computes it in a
    /// `Window` node below the projection.
    Window {
        /// the function call ([`Expr::Function`] or [`Expr::Aggregate`])
        func: Box<Expr>,
        /// PARTITION BY keys
        partition_by: Vec<Expr>,
        /// ORDER BY keys ([`Expr::SortKey`]s)
        order_by: Vec<Expr>,
        /// the frame, if written
        frame: Option<Box<FrameSpec>>,
    },
    /// `x -> body` / `(x, i) -> body`: a lambda, valid only as an argument of a higher-order
    /// function (`transform`, `filter`, `aggregate`, ...).
    Lambda {
        /// parameter names, as written
        params: Vec<String>,
        /// the body, its parameters as [`Expr::LambdaVariable`]s
        body: Box<Expr>,
    },
    /// A lambda's parameter inside its body.
    LambdaVariable(String),
    /// A rewritten expression Spark names as the user wrote it: `count(x) FILTER (WHERE c)`
    /// is computed as `count(CASE WHEN c THEN x END)`, `CAST(NULL AS INT)` as a typed NULL,
    /// `+x` as `x`. The SQL parser adds it so that a generated column name is Spark's; the
    /// query planner removes it ([`Expr::without_written`]) once the name is taken.
    Written {
        /// what is computed
        expr: Box<Expr>,
        /// Spark's name for what was written
        name: String,
    },
    /// `e AS name`
    Alias {
        /// the value
        expr: Box<Expr>,
        /// output name
        name: String,
    },
    /// A sort key (`e ASC NULLS FIRST`); meaningful only where an ordering is expected.
    SortKey {
        /// the key
        expr: Box<Expr>,
        /// ascending?
        ascending: bool,
        /// nulls first?
        nulls_first: bool,
    },
    /// A scalar function call by name (`isnan(x)`, `abs(x)`, `lower(s)`, `coalesce(a, b)`).
    Function {
        /// lower-case function name
        name: String,
        /// arguments
        args: Vec<Expr>,
    },
    /// A call of a user-defined function (a Python UDF): never folded, moved or evaluated
    /// twice unless the function is deterministic.
    Udf {
        /// the function
        udf: crate::udf::ScalarUdf,
        /// arguments
        args: Vec<Expr>,
    },
    /// An aggregate call with Spark's modifiers (`count(DISTINCT x)`, `first(x) IGNORE NULLS`).
    /// Plain aggregate calls from SQL text parse as [`Expr::Function`]; the query planner
    /// treats both as aggregates. Not valid inside a scalar expression.
    Aggregate {
        /// lower-case function name
        name: String,
        /// arguments
        args: Vec<Expr>,
        /// `DISTINCT`
        distinct: bool,
        /// `IGNORE NULLS`
        ignore_nulls: bool,
    },
}

/// `name(a, b, ...)`, each argument as it displays.
pub(crate) fn write_call<T: fmt::Display>(
    f: &mut fmt::Formatter<'_>,
    name: &str,
    args: &[T],
) -> fmt::Result {
    write!(f, "{name}(")?;
    for (i, a) in args.iter().enumerate() {
        if i > 0 {
            f.write_str(", ")?;
        }
        write!(f, "{a}")?;
    }
    f.write_str(")")
}

/// Builders, so Rust callers read like the Python API.
impl Expr {
    /// A column reference.
    pub fn col(name: impl Into<String>) -> Expr {
        Expr::Column(name.into())
    }
    /// A literal.
    pub fn lit(l: Literal) -> Expr {
        Expr::Literal(l)
    }
    fn bin(self, op: BinaryOp, other: Expr) -> Expr {
        Expr::Binary {
            left: Box::new(self),
            op,
            right: Box::new(other),
        }
    }
    /// `self AND other`
    pub fn and(self, other: Expr) -> Expr {
        self.bin(BinaryOp::And, other)
    }
    /// `self OR other`
    pub fn or(self, other: Expr) -> Expr {
        self.bin(BinaryOp::Or, other)
    }
    /// `self = other`
    pub fn eq(self, other: Expr) -> Expr {
        self.bin(BinaryOp::Eq, other)
    }
    /// `self <=> other`
    pub fn eq_null_safe(self, other: Expr) -> Expr {
        self.bin(BinaryOp::EqNullSafe, other)
    }
    /// `self <= other`
    pub fn lt_eq(self, other: Expr) -> Expr {
        self.bin(BinaryOp::LtEq, other)
    }
    /// `self < other`
    pub fn lt(self, other: Expr) -> Expr {
        self.bin(BinaryOp::Lt, other)
    }
    /// `self > other`
    pub fn gt(self, other: Expr) -> Expr {
        self.bin(BinaryOp::Gt, other)
    }
    /// `self op other` for any binary operator.
    pub fn binary(self, op: BinaryOp, other: Expr) -> Expr {
        self.bin(op, other)
    }

    /// Splits a conjunction into its parts (`a AND (b AND c)` -> `[a, b, c]`).
    pub fn conjuncts(&self) -> Vec<&Expr> {
        let mut out = Vec::new();
        fn walk<'a>(e: &'a Expr, out: &mut Vec<&'a Expr>) {
            match e {
                Expr::Binary {
                    left,
                    op: BinaryOp::And,
                    right,
                } => {
                    walk(left, out);
                    walk(right, out);
                }
                other => out.push(other),
            }
        }
        walk(self, &mut out);
        out
    }

    /// The lambda `(params) -> body`: in `body`, columns named as a parameter read it.
    pub fn lambda(params: Vec<String>, body: Expr) -> ferrospark_common::Result<Expr> {
        let body = crate::parser::lambda_body(body, &params)?;
        Ok(Expr::Lambda {
            params,
            body: Box::new(body),
        })
    }

    /// The expression with every [`Expr::Written`] replaced by what it computes.
    pub fn without_written(&self) -> Expr {
        let mut has = false;
        self.visit(&mut |e| has |= matches!(e, Expr::Written { .. }));
        if !has {
            return self.clone();
        }
        crate::transform::transform_up(self, &mut |e| match e {
            Expr::Written { expr, .. } => Ok(*expr),
            other => Ok(other),
        })
        .unwrap_or_else(|_| self.clone())
    }

    /// Names of the top-level columns the expression reads, in first-use order.
    pub fn column_refs(&self) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        self.visit(&mut |e| {
            if let Expr::Column(c) = e {
                if !out.iter().any(|o| o == c) {
                    out.push(c.clone());
                }
            }
        });
        out
    }

    /// Calls `f` on every node, parents before children.
    pub fn visit(&self, f: &mut impl FnMut(&Expr)) {
        f(self);
        match self {
            Expr::Column(_)
            | Expr::Literal(_)
            | Expr::TypedString { .. }
            | Expr::LambdaVariable(_) => {}
            Expr::Lambda { body, .. } => body.visit(f),
            Expr::Field(e, _)
            | Expr::Not(e)
            | Expr::Negative(e)
            | Expr::IsNull(e)
            | Expr::IsNotNull(e)
            | Expr::Cast { expr: e, .. }
            | Expr::TryCast { expr: e, .. }
            | Expr::Alias { expr: e, .. }
            | Expr::Written { expr: e, .. }
            | Expr::SortKey { expr: e, .. } => e.visit(f),
            Expr::Window {
                func,
                partition_by,
                order_by,
                ..
            } => {
                func.visit(f);
                partition_by.iter().for_each(|e| e.visit(f));
                order_by.iter().for_each(|e| e.visit(f));
            }
            Expr::Case {
                branches,
                otherwise,
            } => {
                for (c, v) in branches {
                    c.visit(f);
                    v.visit(f);
                }
                if let Some(o) = otherwise {
                    o.visit(f);
                }
            }
            Expr::Binary { left, right, .. } => {
                left.visit(f);
                right.visit(f);
            }
            Expr::InList { expr, list, .. } => {
                expr.visit(f);
                list.iter().for_each(|e| e.visit(f));
            }
            Expr::Between {
                expr, low, high, ..
            } => {
                expr.visit(f);
                low.visit(f);
                high.visit(f);
            }
            Expr::Like { expr, pattern, .. } | Expr::StringMatch { expr, pattern, .. } => {
                expr.visit(f);
                pattern.visit(f);
            }
            Expr::Function { args, .. } | Expr::Aggregate { args, .. } | Expr::Udf { args, .. } => {
                args.iter().for_each(|e| e.visit(f))
            }
        }
    }

    /// The output name Spark would give this expression (its alias, the column name, or the SQL).
    pub fn output_name(&self) -> String {
        match self {
            Expr::Alias { name, .. } => name.clone(),
            // `col("p.dept")` is named `dept`, as Spark names a multi-part attribute.
            Expr::Column(c) => column_name_parts(c)
                .and_then(|mut parts| parts.pop())
                .unwrap_or_else(|| c.clone()),
            Expr::Field(_, name) => name.clone(),
            // Spark's ResolveAliases names a cast of a column after the column.
            Expr::Cast { expr, .. } | Expr::TryCast { expr, .. }
                if matches!(**expr, Expr::Column(_) | Expr::Field(..)) =>
            {
                expr.output_name()
            }
            // Spark names the grouping column of a session or time window so, whatever its
            // arguments.
            Expr::Function { name, .. } if name.eq_ignore_ascii_case("session_window") => {
                "session_window".into()
            }
            Expr::Function { name, .. } if name.eq_ignore_ascii_case("window") => "window".into(),
            other => other.spark_name(),
        }
    }

    /// The text Spark shows for this expression in generated column names: identifiers as
    /// they are, every operator in parentheses (`(p * (1 - d))`), literals by value.
    pub fn spark_name(&self) -> String {
        let list = |items: &[Expr]| {
            items
                .iter()
                .map(Expr::spark_name)
                .collect::<Vec<_>>()
                .join(", ")
        };
        match self {
            Expr::Column(c) => c.clone(),
            Expr::Field(e, name) => format!("{}.{name}", e.spark_name()),
            Expr::Literal(l) => {
                if l.is_null() {
                    return "NULL".into();
                }
                if let Some(name) = literal_spark_name(l) {
                    return name;
                }
                let opts = arrow_cast::display::FormatOptions::default();
                arrow_cast::display::ArrayFormatter::try_new(l.array().as_ref(), &opts)
                    .map(|f| f.value(0).to_string())
                    .unwrap_or_else(|_| l.to_string())
            }
            Expr::TypedString { type_name, value } => {
                format!(
                    "{} '{}'",
                    type_name.to_ascii_uppercase(),
                    typed_literal_text(type_name, value)
                )
            }
            Expr::Not(e) => format!("(NOT {})", e.spark_name()),
            Expr::Negative(e) => format!("(- {})", e.spark_name()),
            Expr::IsNull(e) => format!("({} IS NULL)", e.spark_name()),
            Expr::IsNotNull(e) => format!("({} IS NOT NULL)", e.spark_name()),
            // Spark's parser reads `a != b` as `NOT (a = b)`.
            Expr::Binary {
                left,
                op: BinaryOp::NotEq,
                right,
            } => format!("(NOT ({} = {}))", left.spark_name(), right.spark_name()),
            Expr::Binary { left, op, right } => {
                format!(
                    "({} {} {})",
                    left.spark_name(),
                    op.sql(),
                    right.spark_name()
                )
            }
            Expr::InList {
                expr,
                list: items,
                negated,
            } => {
                let inner = format!("({} IN ({}))", expr.spark_name(), list(items));
                if *negated {
                    format!("(NOT {inner})")
                } else {
                    inner
                }
            }
            Expr::Between {
                expr,
                low,
                high,
                negated,
            } => {
                let call = format!(
                    "between({}, {}, {})",
                    expr.spark_name(),
                    low.spark_name(),
                    high.spark_name()
                );
                if *negated {
                    format!("(NOT {call})")
                } else {
                    call
                }
            }
            Expr::Like {
                expr,
                pattern,
                negated,
                case_insensitive,
            } => format!(
                "{}{} {} {}",
                if *negated { "NOT " } else { "" },
                expr.spark_name(),
                if *case_insensitive { "ilike" } else { "LIKE" },
                pattern.spark_name()
            ),
            Expr::StringMatch { op, expr, pattern } => {
                format!(
                    "{}({}, {})",
                    op.name(),
                    expr.spark_name(),
                    pattern.spark_name()
                )
            }
            Expr::Cast { expr, type_name } => {
                format!(
                    "CAST({} AS {})",
                    expr.spark_name(),
                    sql_type_name(type_name)
                )
            }
            Expr::TryCast { expr, type_name } => {
                format!(
                    "TRY_CAST({} AS {})",
                    expr.spark_name(),
                    sql_type_name(type_name)
                )
            }
            Expr::Case {
                branches,
                otherwise,
            } => {
                let mut out = String::from("CASE");
                for (c, v) in branches {
                    out.push_str(&format!(" WHEN {} THEN {}", c.spark_name(), v.spark_name()));
                }
                if let Some(o) = otherwise {
                    out.push_str(&format!(" ELSE {}", o.spark_name()));
                }
                out.push_str(" END");
                out
            }
            Expr::Window {
                func,
                partition_by,
                order_by,
                frame,
            } => window_spark_name(func, partition_by, order_by, frame.as_deref()),
            Expr::Alias { name, .. } | Expr::Written { name, .. } => name.clone(),
            Expr::SortKey { expr, .. } => expr.spark_name(),
            Expr::LambdaVariable(_) => "namedlambdavariable()".into(),
            Expr::Lambda { params, body } => format!(
                "lambdafunction({}{})",
                body.spark_name(),
                ", namedlambdavariable()".repeat(params.len())
            ),
            Expr::Function { name, args }
                if name == crate::functions::collections::SUBSCRIPT_FN && args.len() == 2 =>
            {
                format!("{}[{}]", args[0].spark_name(), args[1].spark_name())
            }
            Expr::Function { name, args } if name == "grouping__id" && args.is_empty() => {
                name.clone()
            }
            // Spark keeps `shuffle`'s seed out of its children, so out of its name.
            Expr::Function { name, args } if name == "shuffle" && args.len() == 2 => {
                format!("shuffle({})", args[0].spark_name())
            }
            // The JSON and CSV converters keep their schema and options out of their children.
            Expr::Function { name, args }
                if !args.is_empty()
                    && matches!(
                        name.as_str(),
                        "from_json"
                            | "to_json"
                            | "schema_of_json"
                            | "from_csv"
                            | "to_csv"
                            | "schema_of_csv"
                    ) =>
            {
                // Spark 4 names a `from_json` to a map `entries`, after the map's own field.
                let to_map = name == "from_json"
                    && matches!(args.get(1), Some(Expr::Literal(l))
                        if crate::eval::single_str(l.array().as_ref())
                            .and_then(|s| crate::json::schema_text::parse_schema_text(s, "UTC").ok())
                            .is_some_and(|t| matches!(t, arrow_schema::DataType::Map(..))));
                if to_map {
                    return "entries".into();
                }
                format!("{name}({})", args[0].spark_name())
            }
            Expr::Function { name, args } if name == "~" && args.len() == 1 => {
                format!("~{}", args[0].spark_name())
            }
            Expr::Function { name, args }
                if args.len() == 2
                    && matches!(name.as_str(), "&" | "|" | "^" | "<<" | ">>" | ">>>") =>
            {
                format!("({} {name} {})", args[0].spark_name(), args[1].spark_name())
            }
            // Spark's analyzer turns a datetime's `to_char` into `date_format` (a number's
            // `to_char` is not supported here).
            Expr::Function { name, args }
                if name.eq_ignore_ascii_case("to_char")
                    || name.eq_ignore_ascii_case("to_varchar") =>
            {
                format!("date_format({})", list(args))
            }
            Expr::Function { name, args }
                if matches!(name.as_str(), "percentile_cont" | "percentile_disc") =>
            {
                aggregate_call_name(name, args.iter().map(Expr::spark_name).collect(), false)
            }
            // `struct(k AS a)`: an alias inside a struct names its field, and Spark shows it.
            Expr::Function { name, args } if name == "struct" => format!(
                "struct({})",
                args.iter()
                    .map(|a| match a {
                        Expr::Alias { expr, name } => format!("{} AS {name}", expr.spark_name()),
                        other => other.spark_name(),
                    })
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            Expr::Function { name, args } => {
                scalar_call_name(name, args.iter().map(Expr::spark_name).collect())
            }
            Expr::Udf { udf, args } => format!("{}({})", udf.name(), list(args)),
            Expr::Aggregate {
                name,
                args,
                distinct,
                ..
            } => aggregate_call_name(name, args.iter().map(Expr::spark_name).collect(), *distinct),
        }
    }

    fn precedence(&self) -> u8 {
        match self {
            Expr::Written { expr, .. } => expr.precedence(),
            Expr::Binary { op, .. } => op.precedence(),
            Expr::Not(_) => 3,
            Expr::InList { .. } | Expr::Between { .. } | Expr::Like { .. } => 4,
            Expr::IsNull(_) | Expr::IsNotNull(_) => 5,
            Expr::Alias { .. } | Expr::SortKey { .. } | Expr::Lambda { .. } => 0,
            _ => 10,
        }
    }
}

const RESERVED: &[&str] = &[
    "all",
    "and",
    "any",
    "as",
    "asc",
    "between",
    "both",
    "by",
    "case",
    "cast",
    "date",
    "desc",
    "distinct",
    "else",
    "end",
    "false",
    "from",
    "group",
    "ilike",
    "in",
    "interval",
    "is",
    "like",
    "limit",
    "not",
    "null",
    "nulls",
    "or",
    "order",
    "rlike",
    "select",
    "then",
    "timestamp",
    "timestamp_ntz",
    "true",
    "when",
    "where",
    "with",
    "x",
    "div",
];

/// Writes an identifier, backquoting it when it is not a plain lower-risk name.
pub fn quote_ident(name: &str, f: &mut impl fmt::Write) -> fmt::Result {
    let plain = !name.is_empty()
        && name
            .chars()
            .next()
            .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        && !RESERVED.contains(&name.to_ascii_lowercase().as_str());
    if plain {
        f.write_str(name)
    } else {
        write!(f, "`{}`", name.replace('`', "``"))
    }
}

struct Child<'a>(&'a Expr, u8);

impl fmt::Display for Child<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.0.precedence() < self.1 {
            write!(f, "({})", self.0)
        } else {
            write!(f, "{}", self.0)
        }
    }
}

impl fmt::Display for Expr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let p = self.precedence();
        match self {
            // `col("a.b")` is a field path in Spark; print it as one.
            Expr::Column(c) => {
                for (i, part) in c.split('.').enumerate() {
                    if i > 0 {
                        f.write_str(".")?;
                    }
                    quote_ident(part, f)?;
                }
                Ok(())
            }
            Expr::Field(e, name) => {
                write!(f, "{}.", Child(e, 10))?;
                quote_ident(name, f)
            }
            Expr::Literal(l) => write!(f, "{l}"),
            Expr::TypedString { type_name, value } => {
                write!(f, "{} ", type_name.to_ascii_uppercase())?;
                quote_string(value, f)
            }
            Expr::Not(e) => write!(f, "NOT {}", Child(e, 4)),
            Expr::Negative(e) => write!(f, "-{}", Child(e, 10)),
            Expr::IsNull(e) => write!(f, "{} IS NULL", Child(e, 6)),
            Expr::IsNotNull(e) => write!(f, "{} IS NOT NULL", Child(e, 6)),
            Expr::Binary { left, op, right } => {
                // Left-associative: the right child needs parentheses at equal precedence.
                write!(f, "{} {} {}", Child(left, p), op.sql(), Child(right, p + 1))
            }
            Expr::InList {
                expr,
                list,
                negated,
            } => {
                write!(
                    f,
                    "{} {}IN (",
                    Child(expr, 5),
                    if *negated { "NOT " } else { "" }
                )?;
                for (i, e) in list.iter().enumerate() {
                    if i > 0 {
                        f.write_str(", ")?;
                    }
                    write!(f, "{e}")?;
                }
                f.write_str(")")
            }
            Expr::Between {
                expr,
                low,
                high,
                negated,
            } => write!(
                f,
                "{} {}BETWEEN {} AND {}",
                Child(expr, 5),
                if *negated { "NOT " } else { "" },
                Child(low, 5),
                Child(high, 5)
            ),
            Expr::Like {
                expr,
                pattern,
                negated,
                case_insensitive,
            } => write!(
                f,
                "{} {}{} {}",
                Child(expr, 5),
                if *negated { "NOT " } else { "" },
                if *case_insensitive { "ILIKE" } else { "LIKE" },
                Child(pattern, 5)
            ),
            Expr::StringMatch { op, expr, pattern } => {
                write!(f, "{}({expr}, {pattern})", op.name())
            }
            Expr::Cast { expr, type_name } => {
                write!(f, "CAST({expr} AS {})", type_name.to_ascii_uppercase())
            }
            Expr::TryCast { expr, type_name } => {
                write!(f, "TRY_CAST({expr} AS {})", type_name.to_ascii_uppercase())
            }
            Expr::Window {
                func,
                partition_by,
                order_by,
                frame,
            } => write!(
                f,
                "{func} OVER ({})",
                over_text(partition_by, order_by, frame.as_deref())
            ),
            Expr::Case {
                branches,
                otherwise,
            } => write_case(f, branches, otherwise.as_deref()),
            Expr::Written { expr, .. } => write!(f, "{expr}"),
            Expr::LambdaVariable(name) => quote_ident(name, f),
            Expr::Lambda { params, body } => {
                if params.len() == 1 {
                    quote_ident(&params[0], f)?;
                } else {
                    f.write_str("(")?;
                    for (i, p) in params.iter().enumerate() {
                        if i > 0 {
                            f.write_str(", ")?;
                        }
                        quote_ident(p, f)?;
                    }
                    f.write_str(")")?;
                }
                write!(f, " -> {body}")
            }
            Expr::Alias { expr, name } => {
                write!(f, "{} AS ", Child(expr, 1))?;
                quote_ident(name, f)
            }
            Expr::SortKey {
                expr,
                ascending,
                nulls_first,
            } => write!(
                f,
                "{} {} NULLS {}",
                Child(expr, 1),
                if *ascending { "ASC" } else { "DESC" },
                if *nulls_first { "FIRST" } else { "LAST" }
            ),
            // Operators bound as functions print as SQL that parses back to them.
            Expr::Function { name, args } if name == "~" && args.len() == 1 => {
                write!(f, "(~ ({}))", args[0])
            }
            Expr::Function { name, args }
                if args.len() == 2
                    && matches!(name.as_str(), "&" | "|" | "^" | "<<" | ">>" | ">>>") =>
            {
                write!(f, "(({}) {name} ({}))", args[0], args[1])
            }
            Expr::Function { name, args }
                if name == crate::functions::collections::SUBSCRIPT_FN && args.len() == 2 =>
            {
                write!(f, "({})[{}]", args[0], args[1])
            }
            Expr::Udf { udf, args } => write_call(f, udf.name(), args),
            Expr::Function { name, args } => write_call(f, name, args),
            Expr::Aggregate {
                name,
                args,
                distinct,
                ignore_nulls,
            } => {
                write!(f, "{name}(")?;
                if *distinct {
                    f.write_str("DISTINCT ")?;
                }
                for (i, a) in args.iter().enumerate() {
                    if i > 0 {
                        f.write_str(", ")?;
                    }
                    write!(f, "{a}")?;
                }
                f.write_str(")")?;
                if *ignore_nulls {
                    f.write_str(" IGNORE NULLS")?;
                }
                Ok(())
            }
        }
    }
}

/// `CASE WHEN c THEN v ... [ELSE o] END`, for logical and physical expressions alike.
pub(crate) fn write_case<T: fmt::Display>(
    f: &mut fmt::Formatter<'_>,
    branches: &[(T, T)],
    otherwise: Option<&T>,
) -> fmt::Result {
    f.write_str("CASE")?;
    for (c, v) in branches {
        write!(f, " WHEN {c} THEN {v}")?;
    }
    if let Some(o) = otherwise {
        write!(f, " ELSE {o}")?;
    }
    f.write_str(" END")
}
