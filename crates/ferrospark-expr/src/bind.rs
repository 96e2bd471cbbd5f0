//! Binding: resolves names against a schema, checks types and inserts Spark's implicit casts,
//! turning an [`Expr`] into a [`PhysicalExpr`]. Constant subtrees are folded here, once.

use std::sync::Arc;

use arrow_array::RecordBatch;
use arrow_schema::{DataType, Field, Schema, TimeUnit};

use ferrospark_common::{FerroError, Result};

use crate::expr::{BinaryOp, Expr, Literal};
use crate::physical::PhysicalExpr;
use crate::types::{
    adjust_precision_scale, bounded_decimal, comparison_type, is_decimal, is_floating, is_numeric,
    is_string, parse_data_type, spark_equivalent, spark_type_name, wider_numeric,
};

/// What binding needs besides the expression: the input schema and the session time zone.
#[derive(Debug, Clone, Copy)]
pub struct BindContext<'a> {
    /// The schema of the batches the expression will see.
    pub schema: &'a Schema,
    /// `spark.sql.session.timeZone`, for TIMESTAMP literals.
    pub session_tz: &'a str,
    /// `spark.sql.ansi.enabled`: overflow, division by zero and bad casts raise (true) or
    /// give NULL / wrap (false).
    pub ansi: bool,
    /// `spark.sql.legacy.codingErrorAction`: `encode` / `decode` replace a character their
    /// charset cannot hold (`?`, U+FFFD) rather than raise.
    pub legacy_coding: bool,
    /// `spark.sql.legacy.javaCharsets`: `encode` / `decode` accept Java's charset names
    /// beyond the seven Spark 4 lists.
    pub legacy_charsets: bool,
    /// `spark.sql.decimalOperations.allowPrecisionLoss`: a decimal result wider than 38
    /// digits gives up scale (true, keeping at least 6) or is capped at 38 digits and scale
    /// as it is (false: Spark's older rule, where more results overflow).
    pub decimal_precision_loss: bool,
}

impl<'a> BindContext<'a> {
    /// A context over `schema` in the UTC session time zone.
    pub fn new(schema: &'a Schema) -> Self {
        Self {
            schema,
            session_tz: "UTC",
            ansi: true,
            legacy_coding: false,
            legacy_charsets: false,
            decimal_precision_loss: true,
        }
    }

    /// A context over `schema` under a session's configuration (`spark.sql.session.timeZone`,
    /// `spark.sql.ansi.enabled`; an unreadable ANSI setting counts as on, Spark's default).
    pub fn for_session(schema: &'a Schema, cfg: &'a ferrospark_common::Config) -> Self {
        Self {
            schema,
            session_tz: cfg.session_time_zone(),
            ansi: cfg.ansi_enabled().unwrap_or(true),
            legacy_coding: cfg
                .get_bool("spark.sql.legacy.codingErrorAction", false)
                .unwrap_or(false),
            legacy_charsets: cfg
                .get_bool("spark.sql.legacy.javaCharsets", false)
                .unwrap_or(false),
            decimal_precision_loss: cfg
                .get_bool("spark.sql.decimalOperations.allowPrecisionLoss", true)
                .unwrap_or(true),
        }
    }

    /// The same context in another session time zone.
    pub fn with_tz(self, session_tz: &'a str) -> Self {
        Self { session_tz, ..self }
    }

    /// The same context with `spark.sql.ansi.enabled` set to `ansi`.
    pub fn with_ansi(self, ansi: bool) -> Self {
        Self { ansi, ..self }
    }
}

/// Binds `expr` to `ctx.schema`.
pub fn bind(expr: &Expr, ctx: &BindContext<'_>) -> Result<PhysicalExpr> {
    let bound = bind_inner(expr, ctx)?;
    fold_constants(bound)
}

/// Binds a filter: like [`bind`], and the result must be a boolean.
pub fn bind_predicate(expr: &Expr, ctx: &BindContext<'_>) -> Result<PhysicalExpr> {
    let bound = bind(expr, ctx)?;
    match bound.data_type() {
        DataType::Boolean => Ok(bound),
        DataType::Null => Ok(PhysicalExpr::Literal(Literal::null(&DataType::Boolean))),
        other => Err(FerroError::Analysis(format!(
            "[DATATYPE_MISMATCH.FILTER_NOT_BOOLEAN] filter expression \"{expr}\" of type {} is not a boolean",
            spark_type_name(&other)
        ))),
    }
}

/// What a column name refers to in a schema ([`resolve_column_or_path`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ColumnRef<'n> {
    /// A column, by index.
    Column(usize),
    /// A field of a struct column, as Spark reads `col("a.b.c")` when no column is named
    /// so: the column `a` (its index) and the field names after it.
    FieldPath(usize, Vec<&'n str>),
}

/// Finds `name` as Spark's `col(name)` does: a column ([`resolve_column`]), else, for a
/// dotted name whose head is a column, a field path; else the column's error.
pub fn resolve_column_or_path<'n>(schema: &Schema, name: &'n str) -> Result<ColumnRef<'n>> {
    match resolve_column(schema, name) {
        Ok(i) => Ok(ColumnRef::Column(i)),
        Err(e) => match name.split_once('.') {
            Some((head, rest)) => match resolve_column(schema, head) {
                Ok(i) => Ok(ColumnRef::FieldPath(i, rest.split('.').collect())),
                Err(_) => Err(e),
            },
            None => Err(e),
        },
    }
}

/// Finds a column the way Spark does with `spark.sql.caseSensitive=false`: an exact match
/// wins, otherwise a unique case-insensitive match.
pub fn resolve_column(schema: &Schema, name: &str) -> Result<usize> {
    if let Some(i) = schema.fields().iter().position(|f| f.name() == name) {
        return Ok(i);
    }
    let matches: Vec<usize> = schema
        .fields()
        .iter()
        .enumerate()
        .filter(|(_, f)| f.name().eq_ignore_ascii_case(name))
        .map(|(i, _)| i)
        .collect();
    match matches.as_slice() {
        [i] => Ok(*i),
        [] => Err(unresolved(name, schema.fields().iter().map(|f| f.name().as_str()))),
        _ => Err(FerroError::Analysis(format!(
            "[AMBIGUOUS_REFERENCE] column `{name}` is ambiguous: it matches {} columns that differ only in case",
            matches.len()
        ))),
    }
}

fn unresolved<'a>(name: &str, available: impl Iterator<Item = &'a str>) -> FerroError {
    let mut names: Vec<&str> = available.collect();
    let lower = name.to_ascii_lowercase();
    names.sort_by_key(|n| edit_distance(&lower, &n.to_ascii_lowercase()));
    let shown: Vec<String> = names.iter().take(5).map(|n| format!("`{n}`")).collect();
    FerroError::Analysis(format!(
        "[UNRESOLVED_COLUMN.WITH_SUGGESTION] A column or field with name `{name}` cannot be resolved. Did you mean one of the following? [{}]",
        shown.join(", ")
    ))
}

pub(crate) fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut cur = vec![i + 1; b.len() + 1];
        for (j, cb) in b.iter().enumerate() {
            let cost = usize::from(ca != *cb);
            cur[j + 1] = (prev[j] + cost).min(prev[j + 1] + 1).min(cur[j] + 1);
        }
        prev = cur;
    }
    prev[b.len()]
}

fn mismatch(expr: &Expr, detail: String) -> FerroError {
    FerroError::Analysis(format!(
        "[DATATYPE_MISMATCH] Cannot resolve \"{expr}\" due to data type mismatch: {detail}"
    ))
}

/// `e` cast to `to`, or `e` itself when it already has that type.
pub fn cast_to(e: PhysicalExpr, to: &DataType) -> PhysicalExpr {
    if &e.data_type() == to {
        e
    } else {
        PhysicalExpr::Cast {
            expr: Box::new(e),
            to: to.clone(),
            mode: crate::physical::CastMode::Ansi,
        }
    }
}

/// `e` cast to `to` with the session's cast mode (legacy casts without ANSI).
pub(crate) fn cast_in(e: PhysicalExpr, to: &DataType, ctx: &BindContext<'_>) -> PhysicalExpr {
    if &e.data_type() == to {
        return e;
    }
    PhysicalExpr::Cast {
        expr: Box::new(e),
        to: to.clone(),
        mode: if ctx.ansi {
            crate::physical::CastMode::Ansi
        } else {
            crate::physical::CastMode::Legacy
        },
    }
}

/// `e` as a BOOLEAN condition (NULL literals typed as BOOLEAN).
pub(crate) fn cast_boolean(expr: &Expr, e: PhysicalExpr) -> Result<PhysicalExpr> {
    require_boolean(expr, e, "a condition")
}

/// The exact decimal type of an integer literal (`DecimalType.fromLiteral`), so `q < 24`
/// on a DECIMAL(15,2) column stays DECIMAL(15,2) instead of widening for an INT.
fn literal_aware_type(e: &PhysicalExpr) -> DataType {
    if let PhysicalExpr::Literal(l) = e {
        if !l.is_null() {
            use arrow_array::cast::AsArray;
            use arrow_array::types::{Int32Type, Int64Type};
            let v = match l.data_type() {
                DataType::Int32 => Some(l.array().as_primitive::<Int32Type>().value(0) as i64),
                DataType::Int64 => Some(l.array().as_primitive::<Int64Type>().value(0)),
                _ => None,
            };
            if let Some(v) = v {
                let digits = v.unsigned_abs().to_string().len().max(1) as u8;
                return DataType::Decimal128(digits, 0);
            }
        }
    }
    e.data_type()
}

fn common_comparison_type(expr: &Expr, l: &PhysicalExpr, r: &PhysicalExpr) -> Result<DataType> {
    let (lt, rt) = (l.data_type(), r.data_type());
    let (la, ra) = (literal_aware_type(l), literal_aware_type(r));
    // A literal's exact decimal type only matters against a decimal.
    let (lt2, rt2) = if is_decimal(&rt) && la != lt {
        (la, rt.clone())
    } else if is_decimal(&lt) && ra != rt {
        (lt.clone(), ra)
    } else {
        (lt.clone(), rt.clone())
    };
    if !is_orderable(&lt2) || !is_orderable(&rt2) {
        return Err(mismatch(
            expr,
            format!(
                "comparison of {} with {} is not supported",
                spark_type_name(&lt),
                spark_type_name(&rt)
            ),
        ));
    }
    comparison_type(&lt2, &rt2).ok_or_else(|| {
        FerroError::Analysis(format!(
            "[DATATYPE_MISMATCH.BINARY_OP_DIFF_TYPES] Cannot resolve \"{expr}\" due to data type mismatch: the left and right operands of the binary operator have incompatible types (\"{}\" and \"{}\").",
            spark_type_name(&lt),
            spark_type_name(&rt)
        ))
    })
}

fn is_orderable(dt: &DataType) -> bool {
    match dt {
        DataType::Struct(fields) => fields.iter().all(|f| is_orderable(f.data_type())),
        DataType::List(f) => is_orderable(f.data_type()),
        DataType::LargeList(_) | DataType::FixedSizeList(..) | DataType::Map(..) => false,
        _ => true,
    }
}

/// `item` as a struct of `value`'s field names when both are structs of one width: `IN`
/// compares structs by position whatever their names (Spark's `equalsStructurally`), so
/// `(a, b) IN ((2, 3.0))` reads `(2, 3.0)` as a struct of `a` and `b`.
fn in_item_named_as(value: &DataType, item: PhysicalExpr) -> PhysicalExpr {
    match (value, item.data_type()) {
        (DataType::Struct(names), DataType::Struct(fields))
            if names.len() == fields.len()
                && names
                    .iter()
                    .zip(fields.iter())
                    .any(|(n, f)| n.name() != f.name()) =>
        {
            let renamed: arrow_schema::Fields = names
                .iter()
                .zip(fields.iter())
                .map(|(n, f)| f.as_ref().clone().with_name(n.name()))
                .collect();
            cast_to(item, &DataType::Struct(renamed))
        }
        _ => item,
    }
}

fn require_boolean(expr: &Expr, e: PhysicalExpr, what: &str) -> Result<PhysicalExpr> {
    match e.data_type() {
        DataType::Boolean => Ok(e),
        DataType::Null => Ok(cast_to(e, &DataType::Boolean)),
        other => Err(mismatch(
            expr,
            format!(
                "{what} requires a BOOLEAN operand, got {}",
                spark_type_name(&other)
            ),
        )),
    }
}

fn require_string(expr: &Expr, e: PhysicalExpr, what: &str) -> Result<PhysicalExpr> {
    let dt = spark_equivalent(&e.data_type());
    // Spark casts bytes, numbers and booleans to text for `contains` / `startswith` / ...
    if is_string(&dt)
        || dt == DataType::Null
        || dt == DataType::Binary
        || dt == DataType::Boolean
        || is_numeric(&dt)
    {
        Ok(cast_to(e, &DataType::Utf8))
    } else {
        Err(mismatch(
            expr,
            format!(
                "{what} requires a STRING operand, got {}",
                spark_type_name(&dt)
            ),
        ))
    }
}

fn typed_string(type_name: &str, value: &str, tz: &str) -> Result<Literal> {
    let bad = |why: &str| {
        FerroError::Analysis(format!(
            "[INVALID_TYPED_LITERAL] The value of the typed literal {type_name} '{value}' is invalid: {why}"
        ))
    };
    match type_name {
        // The text rule of a cast to DATE (a year of 4 to 7 digits: `DATE '015'` is refused).
        "DATE" => crate::cast::parse_spark_date(value)
            .map(Literal::date)
            .ok_or_else(|| bad("expected yyyy-MM-dd")),
        "TIMESTAMP" | "TIMESTAMP_LTZ" => {
            let tzv: arrow_array::timezone::Tz = tz.parse().map_err(|e| {
                FerroError::Config(format!("spark.sql.session.timeZone '{tz}': {e}"))
            })?;
            let us = crate::cast::timestamp_text_micros(value, Some(&tzv))
                .ok_or_else(|| bad("not a timestamp"))?;
            Ok(Literal::timestamp_micros(us, Some(tz)))
        }
        "TIMESTAMP_NTZ" => {
            let us = crate::cast::timestamp_text_micros(value, None)
                .ok_or_else(|| bad("not a timestamp"))?;
            Ok(Literal::timestamp_micros(us, None))
        }
        other => Err(bad(&format!("unknown literal type {other}"))),
    }
}

/// Binds `l op r` for `+ - * / %` with Spark's result types; `fail_on_error` is ANSI mode.
pub(crate) fn arithmetic(
    expr: &Expr,
    op: BinaryOp,
    l: PhysicalExpr,
    r: PhysicalExpr,
    ctx: &BindContext<'_>,
    fail_on_error: bool,
) -> Result<PhysicalExpr> {
    if let Some(e) =
        crate::functions::datetime::bind_datetime_arithmetic(expr, op, l.clone(), r.clone(), ctx)?
    {
        return Ok(e);
    }
    // Spark's ANSI coercion reads a string operand of arithmetic as a DOUBLE.
    let as_number = |e: PhysicalExpr| {
        if is_string(&e.data_type()) {
            cast_to(e, &DataType::Float64)
        } else {
            e
        }
    };
    let (l, r) = (as_number(l), as_number(r));
    let (lt, rt) = (
        spark_equivalent(&l.data_type()),
        spark_equivalent(&r.data_type()),
    );
    let lt = if lt == DataType::Null { rt.clone() } else { lt };
    let rt = if rt == DataType::Null { lt.clone() } else { rt };
    if !is_numeric(&lt) || !is_numeric(&rt) {
        return Err(mismatch(
            expr,
            format!(
                "'{}' requires numeric operands, got {} and {}",
                op.sql(),
                spark_type_name(&lt),
                spark_type_name(&rt)
            ),
        ));
    }
    let float = is_floating(&lt) || is_floating(&rt);
    let decimal = is_decimal(&lt) || is_decimal(&rt);
    let (operand_type_l, operand_type_r, result) = if op == BinaryOp::Divide && !decimal {
        (DataType::Float64, DataType::Float64, DataType::Float64)
    } else if float || !decimal {
        let w = wider_numeric(&lt, &rt).ok_or_else(|| mismatch(expr, "no common type".into()))?;
        (w.clone(), w.clone(), w)
    } else {
        let as_dec = |e: &PhysicalExpr, t: &DataType| -> (u8, i8) {
            match literal_aware_type(e) {
                DataType::Decimal128(p, s) => (p, s),
                _ => match t {
                    DataType::Int8 => (3, 0),
                    DataType::Int16 => (5, 0),
                    DataType::Int32 => (10, 0),
                    _ => (20, 0),
                },
            }
        };
        let (p1, s1) = as_dec(&l, &lt);
        let (p2, s2) = as_dec(&r, &rt);
        let (p1, s1, p2, s2) = (p1 as i32, s1 as i32, p2 as i32, s2 as i32);
        let fit = |p: i32, s: i32| {
            if ctx.decimal_precision_loss {
                adjust_precision_scale(p, s)
            } else {
                bounded_decimal(p as i16, s as i16)
            }
        };
        let result = match op {
            BinaryOp::Plus | BinaryOp::Minus => {
                let s = s1.max(s2);
                fit((p1 - s1).max(p2 - s2) + s + 1, s)
            }
            BinaryOp::Multiply => fit(p1 + p2 + 1, s1 + s2),
            BinaryOp::Divide if !ctx.decimal_precision_loss => {
                // Spark's rule without precision loss: the integral and fractional digits
                // each capped at 38, then both cut back evenly to fit 38 together.
                let max = crate::types::MAX_DECIMAL_PRECISION as i32;
                let mut int_digits = max.min(p1 - s1 + s2);
                let mut dec_digits = max.min(6.max(s1 + p2 + 1));
                let diff = int_digits + dec_digits - max;
                if diff > 0 {
                    dec_digits -= diff / 2 + 1;
                    int_digits = max - dec_digits;
                }
                bounded_decimal((int_digits + dec_digits) as i16, dec_digits as i16)
            }
            BinaryOp::Divide => {
                let s = 6.max(s1 + p2 + 1);
                fit(p1 - s1 + s2 + s, s)
            }
            _ => {
                let s = s1.max(s2);
                fit((p1 - s1).min(p2 - s2) + s, s)
            }
        };
        (
            DataType::Decimal128(p1 as u8, s1 as i8),
            DataType::Decimal128(p2 as u8, s2 as i8),
            result,
        )
    };
    Ok(PhysicalExpr::Arithmetic {
        op,
        left: Box::new(cast_to(l, &operand_type_l)),
        right: Box::new(cast_to(r, &operand_type_r)),
        data_type: result,
        fail_on_error,
    })
}

fn bind_inner(expr: &Expr, ctx: &BindContext<'_>) -> Result<PhysicalExpr> {
    let b = |e: &Expr| bind_inner(e, ctx);
    Ok(match expr {
        Expr::Column(name) => {
            let index = match resolve_column_or_path(ctx.schema, name)? {
                ColumnRef::Column(i) => i,
                ColumnRef::FieldPath(head, fields) => {
                    let head = Expr::Column(ctx.schema.field(head).name().clone());
                    let path = fields.into_iter().fold(head, |acc, f| {
                        Expr::Field(Box::new(acc), f.to_string())
                    });
                    return bind_inner(&path, ctx);
                }
            };
            let field = ctx.schema.field(index);
            PhysicalExpr::Column {
                index,
                name: field.name().clone(),
                data_type: field.data_type().clone(),
            }
        }
        Expr::Field(inner, name) => {
            // `a.b` may name a top-level column literally called "a.b".
            if let Expr::Column(head) = inner.as_ref() {
                let dotted = format!("{head}.{name}");
                if resolve_column(ctx.schema, head).is_err()
                    && resolve_column(ctx.schema, &dotted).is_ok()
                {
                    return bind_inner(&Expr::Column(dotted), ctx);
                }
            }
            let input = b(inner)?;
            match input.data_type() {
                DataType::Struct(fields) => {
                    let idx = fields
                        .iter()
                        .position(|f| f.name() == name)
                        .or_else(|| {
                            fields
                                .iter()
                                .position(|f| f.name().eq_ignore_ascii_case(name))
                        })
                        .ok_or_else(|| {
                            unresolved(name, fields.iter().map(|f| f.name().as_str()))
                        })?;
                    PhysicalExpr::Field {
                        input: Box::new(input),
                        index: idx,
                        name: fields[idx].name().clone(),
                        data_type: fields[idx].data_type().clone(),
                    }
                }
                other => {
                    return Err(mismatch(
                        expr,
                        format!(
                            "field access `.{name}` needs a STRUCT, got {}",
                            spark_type_name(&other)
                        ),
                    ))
                }
            }
        }
        Expr::Literal(l) => PhysicalExpr::Literal(l.clone()),
        Expr::TypedString { type_name, value } => PhysicalExpr::Literal(typed_string(
            &type_name.to_ascii_uppercase(),
            value,
            ctx.session_tz,
        )?),
        Expr::Not(e) => PhysicalExpr::Not(Box::new(require_boolean(expr, b(e)?, "NOT")?)),
        Expr::Negative(e) => {
            let inner = b(e)?;
            let dt = spark_equivalent(&inner.data_type());
            if crate::types::is_ansi_interval(&dt) {
                return Ok(crate::functions::interval::node(
                    crate::functions::IntervalFn::Negate,
                    vec![inner],
                    dt,
                ));
            }
            if !is_numeric(&dt) {
                return Err(mismatch(
                    expr,
                    format!(
                        "unary minus requires a numeric operand, got {}",
                        spark_type_name(&dt)
                    ),
                ));
            }
            PhysicalExpr::Negative(Box::new(cast_to(inner, &dt)))
        }
        Expr::IsNull(e) => PhysicalExpr::IsNull(Box::new(b(e)?)),
        Expr::IsNotNull(e) => PhysicalExpr::IsNotNull(Box::new(b(e)?)),
        Expr::Binary { left, op, right } => {
            let (l, r) = (b(left)?, b(right)?);
            match op {
                BinaryOp::And => PhysicalExpr::And(
                    Box::new(require_boolean(expr, l, "AND")?),
                    Box::new(require_boolean(expr, r, "AND")?),
                ),
                BinaryOp::Or => PhysicalExpr::Or(
                    Box::new(require_boolean(expr, l, "OR")?),
                    Box::new(require_boolean(expr, r, "OR")?),
                ),
                op if op.is_comparison() => {
                    let t = common_comparison_type(expr, &l, &r)?;
                    PhysicalExpr::Compare {
                        op: *op,
                        left: Box::new(cast_to(l, &t)),
                        right: Box::new(cast_to(r, &t)),
                    }
                }
                op => arithmetic(expr, *op, l, r, ctx, ctx.ansi)?,
            }
        }
        Expr::InList {
            expr: e,
            list,
            negated,
        } => {
            let value = b(e)?;
            let items: Vec<PhysicalExpr> = list
                .iter()
                .map(|i| Ok(in_item_named_as(&value.data_type(), b(i)?)))
                .collect::<Result<_>>()?;
            let mut t = spark_equivalent(&value.data_type());
            for item in &items {
                let probe = PhysicalExpr::Literal(Literal::null(&t));
                t = common_comparison_type(expr, &probe, item)?;
            }
            PhysicalExpr::InList {
                expr: Box::new(cast_to(value, &t)),
                list: items.into_iter().map(|i| cast_to(i, &t)).collect(),
                negated: *negated,
            }
        }
        Expr::Between {
            expr: e,
            low,
            high,
            negated,
        } => {
            let ge = Expr::Binary {
                left: e.clone(),
                op: BinaryOp::GtEq,
                right: low.clone(),
            };
            let le = Expr::Binary {
                left: e.clone(),
                op: BinaryOp::LtEq,
                right: high.clone(),
            };
            let both = PhysicalExpr::And(Box::new(b(&ge)?), Box::new(b(&le)?));
            if *negated {
                PhysicalExpr::Not(Box::new(both))
            } else {
                both
            }
        }
        Expr::Like {
            expr: e,
            pattern,
            negated,
            case_insensitive,
        } => PhysicalExpr::Like {
            expr: Box::new(require_string(expr, b(e)?, "LIKE")?),
            pattern: Box::new(require_string(expr, b(pattern)?, "LIKE")?),
            negated: *negated,
            case_insensitive: *case_insensitive,
        },
        Expr::StringMatch {
            op,
            expr: e,
            pattern,
        } => PhysicalExpr::StringMatch {
            op: *op,
            expr: Box::new(require_string(expr, b(e)?, "string match")?),
            pattern: Box::new(require_string(expr, b(pattern)?, "string match")?),
        },
        Expr::Cast {
            expr: e,
            type_name,
        }
        | Expr::TryCast {
            expr: e,
            type_name,
        } => {
            let to = parse_data_type(type_name, ctx.session_tz)?;
            let inner = b(e)?;
            let from = inner.data_type();
            if !crate::eval::can_cast(&from, &to) || !crate::cast::spark_allows(&from, &to) {
                return Err(mismatch(
                    expr,
                    format!(
                        "cannot cast {} to {}",
                        spark_type_name(&from),
                        spark_type_name(&to)
                    ),
                ));
            }
            // Spark's ANSI mode refuses integers as bytes (their legacy big-endian form).
            if ctx.ansi
                && !matches!(expr, Expr::TryCast { .. })
                && crate::types::is_integral(&from)
                && matches!(to, DataType::Binary)
            {
                return Err(FerroError::Analysis(format!(
                    "[DATATYPE_MISMATCH.CAST_WITH_CONF_SUGGESTION] Cannot resolve \"{expr}\" due to data type mismatch: cannot cast \"{}\" to \"BINARY\" with ANSI mode on. If you have to cast {} to BINARY, you can set \"spark.sql.ansi.enabled\" as 'false'.",
                    spark_type_name(&from),
                    spark_type_name(&from)
                )));
            }
            // A TIMESTAMP becomes a TIMESTAMP_NTZ on the session zone's clock, whatever zone
            // its column carries.
            let inner = match (&from, &to) {
                (DataType::Timestamp(_, Some(_)), DataType::Timestamp(_, None)) => cast_to(
                    inner,
                    &crate::functions::datetime::timestamp_type(ctx.session_tz),
                ),
                _ => inner,
            };
            if from == to {
                inner
            } else {
                PhysicalExpr::Cast {
                    expr: Box::new(inner),
                    to,
                    mode: if matches!(expr, Expr::TryCast { .. }) {
                        crate::physical::CastMode::Try
                    } else if ctx.ansi {
                        crate::physical::CastMode::Ansi
                    } else {
                        crate::physical::CastMode::Legacy
                    },
                }
            }
        }
        Expr::Case { branches, otherwise } => {
            let call = crate::functions::Call {
                expr,
                name: "CASE",
                ctx,
            };
            let branches = branches
                .iter()
                .map(|(c, v)| {
                    let c = b(c)?;
                    // An untyped NULL is not a condition (Spark: CASE WHEN NULL is a type error).
                    if c.data_type() == DataType::Null {
                        return Err(mismatch(
                            expr,
                            "[DATATYPE_MISMATCH.UNEXPECTED_INPUT_TYPE] CASE WHEN requires a BOOLEAN condition, got VOID".into(),
                        ));
                    }
                    Ok((require_boolean(expr, c, "CASE WHEN")?, b(v)?))
                })
                .collect::<Result<Vec<_>>>()?;
            let otherwise = otherwise.as_deref().map(b).transpose()?;
            crate::functions::case(&call, branches, otherwise)?
        }
        Expr::Alias { expr: e, .. } | Expr::Written { expr: e, .. } => b(e)?,
        Expr::Window { .. } => {
            return Err(FerroError::Analysis(format!(
                "[UNSUPPORTED_EXPR_FOR_WINDOW] window function \"{expr}\" is only allowed in a SELECT list, select() or withColumn()"
            )))
        }
        Expr::SortKey { .. } => {
            return Err(FerroError::Analysis(format!(
                "a sort key (\"{expr}\") is only allowed where an ordering is expected"
            )))
        }
        Expr::LambdaVariable(name) => {
            let wanted = format!("{}{name}", crate::physical::LAMBDA_PREFIX);
            let field = ctx
                .schema
                .fields()
                .iter()
                .rev()
                .find(|f| f.name().eq_ignore_ascii_case(&wanted))
                .ok_or_else(|| {
                    FerroError::Internal(format!("lambda variable {name} outside its lambda"))
                })?;
            PhysicalExpr::LambdaVariable {
                name: field.name().clone(),
                data_type: field.data_type().clone(),
            }
        }
        Expr::Lambda { .. } => {
            return Err(FerroError::Analysis(format!(
                "[INVALID_LAMBDA_FUNCTION_CALL.NON_HIGHER_ORDER_FUNCTION] Invalid lambda function call. A lambda function should only be used in a higher order function. However, its class is \"{expr}\", which is not a higher order function. SQLSTATE: 42K0D"
            )))
        }
        Expr::Function { name, args } => {
            let name = name.to_ascii_lowercase();
            let call = crate::functions::Call {
                expr,
                name: &name,
                ctx,
            };
            if let Some(bound) = crate::functions::higher_order::bind(&call, args, &bind_inner)? {
                return Ok(bound);
            }
            if args.iter().any(|a| matches!(a, Expr::Lambda { .. })) {
                return Err(FerroError::Analysis(format!(
                    "[INVALID_LAMBDA_FUNCTION_CALL.NON_HIGHER_ORDER_FUNCTION] Invalid lambda function call. A lambda function should only be used in a higher order function. However, its class is \"{name}\", which is not a higher order function. SQLSTATE: 42K0D in \"{expr}\""
                )));
            }
            if let Some(inner) = try_form(&name, args, expr)? {
                // Spark's `TryEval` over the operation in its ANSI form: NULL where a row's
                // value raises. The arguments keep the session's mode.
                let ansi = ctx.with_ansi(true);
                let bound = match &inner {
                    Expr::Binary { left, op, right } => {
                        arithmetic(&inner, *op, b(left)?, b(right)?, &ansi, true)?
                    }
                    Expr::Function { name, args } => {
                        let args: Vec<PhysicalExpr> = args.iter().map(b).collect::<Result<_>>()?;
                        crate::functions::bind_call(&inner, name, args, &ansi)?
                    }
                    other => bind_inner(other, &ansi)?,
                };
                return Ok(PhysicalExpr::Try(Box::new(bound)));
            }
            if matches!(name.as_str(), "date_part" | "datepart" | "extract") && args.len() == 2 {
                if let Expr::Literal(l) = &args[0] {
                    if let Some(field) = l.array().as_any().downcast_ref::<arrow_array::StringArray>() {
                        let field = field.value(0).to_string();
                        let call = crate::functions::Call {
                            expr,
                            name: &name,
                            ctx,
                        };
                        return crate::functions::datetime::bind_extract(&call, &field, b(&args[1])?);
                    }
                }
            }
            let args: Vec<PhysicalExpr> = args.iter().map(b).collect::<Result<_>>()?;
            crate::functions::bind_call(expr, &name, args, ctx)?
        }
        Expr::Udf { udf, args } => PhysicalExpr::Udf {
            udf: udf.clone(),
            args: args.iter().map(b).collect::<Result<_>>()?,
            session_tz: ctx.session_tz.to_string(),
        },
        Expr::Aggregate { name, .. } => {
            return Err(FerroError::Analysis(format!(
                "aggregate function {name} is not allowed in \"{expr}\": aggregates belong in a SELECT list, HAVING or agg()"
            )))
        }
    })
}

/// Evaluates column-free subtrees once, replacing them by literals.
fn fold_constants(e: PhysicalExpr) -> Result<PhysicalExpr> {
    let has_column = {
        let mut found = false;
        e.walk(&mut |n| {
            found |= matches!(
                n,
                PhysicalExpr::Column { .. }
                    | PhysicalExpr::LambdaVariable { .. }
                    | PhysicalExpr::Lambda { .. }
                    // a user's function runs where the rows are, never while planning
                    | PhysicalExpr::Udf { .. }
            ) || matches!(n, PhysicalExpr::Function { func, .. } if !func.deterministic())
        });
        found
    };
    if !has_column && !matches!(e, PhysicalExpr::Literal(_)) {
        let schema = Arc::new(Schema::new(Vec::<Field>::new()));
        let options = arrow_array::RecordBatchOptions::new().with_row_count(Some(1));
        let batch = RecordBatch::try_new_with_options(schema, vec![], &options)?;
        let value = crate::eval::evaluate(&e, &batch)?.into_array(1)?;
        return Ok(PhysicalExpr::Literal(Literal::new(value)));
    }
    Ok(match e {
        PhysicalExpr::And(a, b) => {
            PhysicalExpr::And(Box::new(fold_constants(*a)?), Box::new(fold_constants(*b)?))
        }
        PhysicalExpr::Or(a, b) => {
            PhysicalExpr::Or(Box::new(fold_constants(*a)?), Box::new(fold_constants(*b)?))
        }
        PhysicalExpr::Compare { op, left, right } => PhysicalExpr::Compare {
            op,
            left: Box::new(fold_constants(*left)?),
            right: Box::new(fold_constants(*right)?),
        },
        PhysicalExpr::Arithmetic {
            op,
            left,
            right,
            data_type,
            fail_on_error,
        } => PhysicalExpr::Arithmetic {
            op,
            left: Box::new(fold_constants(*left)?),
            right: Box::new(fold_constants(*right)?),
            data_type,
            fail_on_error,
        },
        PhysicalExpr::InList {
            expr,
            list,
            negated,
        } => PhysicalExpr::InList {
            expr: Box::new(fold_constants(*expr)?),
            list: list
                .into_iter()
                .map(fold_constants)
                .collect::<Result<_>>()?,
            negated,
        },
        PhysicalExpr::Not(x) => PhysicalExpr::Not(Box::new(fold_constants(*x)?)),
        PhysicalExpr::Like {
            expr,
            pattern,
            negated,
            case_insensitive,
        } => PhysicalExpr::Like {
            expr: Box::new(fold_constants(*expr)?),
            pattern: Box::new(fold_constants(*pattern)?),
            negated,
            case_insensitive,
        },
        PhysicalExpr::StringMatch { op, expr, pattern } => PhysicalExpr::StringMatch {
            op,
            expr: Box::new(fold_constants(*expr)?),
            pattern: Box::new(fold_constants(*pattern)?),
        },
        other => other,
    })
}

/// The unit Spark computes timestamps in.
pub const SPARK_TIME_UNIT: TimeUnit = TimeUnit::Microsecond;

/// The ANSI expression a `try_` function evaluates under Spark's `TryEval`: `try_add(a, b)`
/// is `a + b`, `try_to_timestamp(s)` is `to_timestamp(s)`, ...; `None` for other names.
fn try_form(name: &str, args: &[Expr], expr: &Expr) -> Result<Option<Expr>> {
    let op = match name {
        "try_add" => Some(BinaryOp::Plus),
        "try_subtract" => Some(BinaryOp::Minus),
        "try_multiply" => Some(BinaryOp::Multiply),
        "try_mod" => Some(BinaryOp::Modulo),
        _ => None,
    };
    if let Some(op) = op {
        if args.len() != 2 {
            return Err(FerroError::Analysis(format!(
                "[WRONG_NUM_ARGS.WITHOUT_SUGGESTION] The `{name}` requires 2 parameters but the actual number is {} in \"{expr}\".",
                args.len()
            )));
        }
        return Ok(Some(Expr::Binary {
            left: Box::new(args[0].clone()),
            op,
            right: Box::new(args[1].clone()),
        }));
    }
    let inner = match name {
        "try_to_timestamp" => "to_timestamp",
        "try_to_date" => "to_date",
        "try_make_timestamp" => "make_timestamp",
        "try_make_timestamp_ltz" => "make_timestamp",
        "try_make_timestamp_ntz" => "make_timestamp_ntz",
        "try_make_interval" => "make_interval",
        _ => return Ok(None),
    };
    Ok(Some(Expr::Function {
        name: inner.into(),
        args: args.to_vec(),
    }))
}
