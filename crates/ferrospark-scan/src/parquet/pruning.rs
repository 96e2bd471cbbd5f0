//! Pruning predicates: a bound filter rewritten into a predicate over column statistics
//! (min, max, null count, row count), so one evaluation over a batch of statistics answers
//! "can any row here match?" for many files, row groups or pages at once.
//!
//! The statistics batch has, for table column `i`, `min` at `3i`, `max` at `3i+1`, the null
//! count at `3i+2`, and the container's row count last. Unknown statistics are NULL, and a
//! NULL verdict keeps the container: only a definite `false` prunes.

use std::sync::Arc;

use arrow_array::{Array, ArrayRef, BooleanArray, Int64Array, RecordBatch};
use arrow_schema::{DataType, Field, Schema, SchemaRef};
use ferrospark_common::Result;
use ferrospark_expr::types::{is_decimal, is_floating, is_integral, is_string};
use ferrospark_expr::{evaluate_predicate, BinaryOp, Literal, PhysicalExpr, StringMatch};

/// The statistics-level form of a filter.
#[derive(Debug, Clone)]
pub struct PruningPredicate {
    expr: PhysicalExpr,
    stats_schema: SchemaRef,
    columns: Vec<usize>,
}

/// Statistics of one column over `n` containers.
#[derive(Debug, Clone)]
pub struct ColumnStats {
    /// Minimum per container (NULL when unknown).
    pub min: ArrayRef,
    /// Maximum per container (NULL when unknown).
    pub max: ArrayRef,
    /// NULL count per container (NULL when unknown).
    pub nulls: ArrayRef,
}

impl PruningPredicate {
    /// Rewrites `filter` (bound to `table_schema`); `None` when nothing in it can prune.
    pub fn try_new(filter: &PhysicalExpr, table_schema: &Schema) -> Option<Self> {
        let expr = rewrite(filter, table_schema)?;
        // The rewrite indexes statistics as 3 * table column + kind; keep only the columns
        // it reads, so evaluating over thousands of pages builds no unused arrays.
        let n_table = table_schema.fields().len();
        let mut columns: Vec<usize> = Vec::new();
        for index in expr.column_indices() {
            if index < n_table * 3 && !columns.contains(&(index / 3)) {
                columns.push(index / 3);
            }
        }
        let row_count_index = 3 * columns.len();
        let expr = expr.transform_columns(&|index, name, data_type| {
            let new_index = if index >= n_table * 3 {
                row_count_index
            } else {
                let pos = columns.iter().position(|&c| c == index / 3).unwrap_or(0);
                3 * pos + index % 3
            };
            PhysicalExpr::Column {
                index: new_index,
                name: name.to_string(),
                data_type: data_type.clone(),
            }
        });
        let mut fields = Vec::with_capacity(columns.len() * 3 + 1);
        for &c in &columns {
            let f = table_schema.field(c);
            fields.push(Field::new(
                format!("{}_min", f.name()),
                f.data_type().clone(),
                true,
            ));
            fields.push(Field::new(
                format!("{}_max", f.name()),
                f.data_type().clone(),
                true,
            ));
            fields.push(Field::new(
                format!("{}_nulls", f.name()),
                DataType::Int64,
                true,
            ));
        }
        fields.push(Field::new("row_count", DataType::Int64, true));
        Some(Self {
            expr,
            stats_schema: Arc::new(Schema::new(fields)),
            columns,
        })
    }

    /// Table columns whose statistics the predicate reads.
    pub fn columns(&self) -> &[usize] {
        &self.columns
    }

    /// For `n` containers, given statistics of some columns (others unknown) and row counts,
    /// returns one flag per container: `false` = no row can match.
    pub fn keep(
        &self,
        n: usize,
        stats: &[(usize, ColumnStats)],
        row_counts: &Int64Array,
    ) -> Result<Vec<bool>> {
        let mut arrays: Vec<ArrayRef> = Vec::with_capacity(self.stats_schema.fields().len());
        for (pos, c) in self.columns.iter().enumerate() {
            match stats.iter().find(|(i, _)| i == c) {
                Some((_, s)) => {
                    arrays.push(s.min.clone());
                    arrays.push(s.max.clone());
                    arrays.push(s.nulls.clone());
                }
                None => {
                    for k in 0..3 {
                        let f = self.stats_schema.field(3 * pos + k);
                        arrays.push(arrow_array::new_null_array(f.data_type(), n));
                    }
                }
            }
        }
        arrays.push(Arc::new(row_counts.clone()));
        // Statistics may come back in a slightly different physical type (e.g. a dictionary);
        // cast to the declared one so the predicate's types hold.
        for (a, f) in arrays.iter_mut().zip(self.stats_schema.fields()) {
            if a.data_type() != f.data_type() {
                *a = match arrow_cast::cast(a, f.data_type()) {
                    Ok(c) => c,
                    Err(_) => arrow_array::new_null_array(f.data_type(), n),
                };
            }
        }
        let batch = RecordBatch::try_new(self.stats_schema.clone(), arrays)?;
        let verdict: BooleanArray = evaluate_predicate(&self.expr, &batch)?;
        Ok((0..n)
            .map(|i| verdict.is_null(i) || verdict.value(i))
            .collect())
    }
}

impl std::fmt::Display for PruningPredicate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.expr)
    }
}

/// A column reference, possibly through an order-preserving cast Spark's coercion added.
fn column_ref(e: &PhysicalExpr) -> Option<(usize, Option<DataType>)> {
    match e {
        PhysicalExpr::Column { index, .. } => Some((*index, None)),
        PhysicalExpr::Cast { expr, to, .. } => match expr.as_ref() {
            PhysicalExpr::Column {
                index, data_type, ..
            } if order_preserving(data_type, to) => Some((*index, Some(to.clone()))),
            _ => None,
        },
        _ => None,
    }
}

/// Casts under which `a <= b` implies `cast(a) <= cast(b)`, so min/max stay min/max.
fn order_preserving(from: &DataType, to: &DataType) -> bool {
    use DataType as D;
    match (from, to) {
        _ if is_integral(from) && (is_integral(to) || is_decimal(to) || is_floating(to)) => true,
        (D::Float16 | D::Float32, D::Float64) => true,
        (D::Decimal128(..), D::Decimal128(..)) => true,
        (D::Date32, D::Timestamp(..)) => true,
        (D::Timestamp(..), D::Timestamp(..)) => true,
        _ if is_string(from) && is_string(to) => true,
        (D::Dictionary(_, v), t) => v.as_ref() == t,
        _ => false,
    }
}

fn stat(kind: usize, col: usize, cast: &Option<DataType>, schema: &Schema) -> PhysicalExpr {
    let f = schema.field(col);
    let suffix = ["min", "max", "nulls"][kind];
    let base = PhysicalExpr::Column {
        index: 3 * col + kind,
        name: format!("{}_{suffix}", f.name()),
        data_type: if kind == 2 {
            DataType::Int64
        } else {
            f.data_type().clone()
        },
    };
    match cast {
        Some(to) if kind != 2 => PhysicalExpr::Cast {
            expr: Box::new(base),
            to: to.clone(),
            mode: ferrospark_expr::physical::CastMode::Ansi,
        },
        _ => base,
    }
}

fn row_count(schema: &Schema) -> PhysicalExpr {
    PhysicalExpr::Column {
        index: schema.fields().len() * 3,
        name: "row_count".into(),
        data_type: DataType::Int64,
    }
}

fn cmp(op: BinaryOp, l: PhysicalExpr, r: PhysicalExpr) -> PhysicalExpr {
    PhysicalExpr::Compare {
        op,
        left: Box::new(l),
        right: Box::new(r),
    }
}

fn and(a: PhysicalExpr, b: PhysicalExpr) -> PhysicalExpr {
    PhysicalExpr::And(Box::new(a), Box::new(b))
}

fn or(a: PhysicalExpr, b: PhysicalExpr) -> PhysicalExpr {
    PhysicalExpr::Or(Box::new(a), Box::new(b))
}

fn bool_lit(v: bool) -> PhysicalExpr {
    PhysicalExpr::Literal(Literal::boolean(v))
}

fn zero() -> PhysicalExpr {
    PhysicalExpr::Literal(Literal::new(Arc::new(Int64Array::from(vec![0i64]))))
}

fn has_non_null(col: usize, schema: &Schema) -> PhysicalExpr {
    cmp(BinaryOp::Lt, stat(2, col, &None, schema), row_count(schema))
}

fn literal_of(e: &PhysicalExpr) -> Option<&Literal> {
    match e {
        PhysicalExpr::Literal(l) => Some(l),
        _ => None,
    }
}

fn is_nan_literal(l: &Literal) -> bool {
    use arrow_array::cast::AsArray;
    use arrow_array::types::{Float32Type, Float64Type};
    let a = l.array();
    match a.data_type() {
        DataType::Float64 => a.as_primitive::<Float64Type>().value(0).is_nan(),
        DataType::Float32 => a.as_primitive::<Float32Type>().value(0).is_nan(),
        _ => false,
    }
}

/// `col op lit` at the statistics level.
fn compare_stats(
    op: BinaryOp,
    col: usize,
    cast: &Option<DataType>,
    lit: &Literal,
    schema: &Schema,
) -> Option<PhysicalExpr> {
    let value_type = cast
        .clone()
        .unwrap_or_else(|| schema.field(col).data_type().clone());
    // Writers leave NaN out of min/max, and NaN sorts above everything in Spark: a predicate
    // that NaN can satisfy must not be decided by max.
    let float = is_floating(&value_type) || is_floating(schema.field(col).data_type());
    if lit.is_null() {
        return match op {
            BinaryOp::EqNullSafe => Some(cmp(BinaryOp::Gt, stat(2, col, &None, schema), zero())),
            _ => Some(bool_lit(false)),
        };
    }
    if float && is_nan_literal(lit) && !matches!(op, BinaryOp::Lt | BinaryOp::LtEq) {
        return None;
    }
    let v = || PhysicalExpr::Literal(lit.clone());
    let (min, max) = (stat(0, col, cast, schema), stat(1, col, cast, schema));
    let test = match op {
        BinaryOp::Eq | BinaryOp::EqNullSafe => {
            and(cmp(BinaryOp::LtEq, min, v()), cmp(BinaryOp::GtEq, max, v()))
        }
        BinaryOp::Lt => cmp(BinaryOp::Lt, min, v()),
        BinaryOp::LtEq => cmp(BinaryOp::LtEq, min, v()),
        BinaryOp::Gt if !float => cmp(BinaryOp::Gt, max, v()),
        BinaryOp::GtEq if !float => cmp(BinaryOp::GtEq, max, v()),
        BinaryOp::NotEq if !float => or(
            cmp(BinaryOp::NotEq, min, v()),
            cmp(BinaryOp::NotEq, max, v()),
        ),
        _ => return None,
    };
    Some(and(test, has_non_null(col, schema)))
}

fn rewrite(e: &PhysicalExpr, schema: &Schema) -> Option<PhysicalExpr> {
    match e {
        PhysicalExpr::And(a, b) => match (rewrite(a, schema), rewrite(b, schema)) {
            (Some(x), Some(y)) => Some(and(x, y)),
            (Some(x), None) | (None, Some(x)) => Some(x),
            (None, None) => None,
        },
        PhysicalExpr::Or(a, b) => Some(or(rewrite(a, schema)?, rewrite(b, schema)?)),
        PhysicalExpr::Not(x) => rewrite(&negate(x)?, schema),
        PhysicalExpr::Literal(l) => {
            use arrow_array::cast::AsArray;
            if l.is_null() {
                Some(bool_lit(false))
            } else if l.data_type() == &DataType::Boolean {
                Some(bool_lit(l.array().as_boolean().value(0)))
            } else {
                None
            }
        }
        PhysicalExpr::Compare { op, left, right } => {
            if let (Some((c, cast)), Some(l)) = (column_ref(left), literal_of(right)) {
                compare_stats(*op, c, &cast, l, schema)
            } else if let (Some(l), Some((c, cast))) = (literal_of(left), column_ref(right)) {
                compare_stats(op.swapped(), c, &cast, l, schema)
            } else {
                None
            }
        }
        PhysicalExpr::IsNull(x) => {
            let (c, _) = column_ref(x)?;
            Some(cmp(BinaryOp::Gt, stat(2, c, &None, schema), zero()))
        }
        PhysicalExpr::IsNotNull(x) => {
            let (c, _) = column_ref(x)?;
            Some(has_non_null(c, schema))
        }
        PhysicalExpr::InList {
            expr,
            list,
            negated,
        } => {
            let (c, cast) = column_ref(expr)?;
            let lits: Vec<&Literal> = list.iter().map(literal_of).collect::<Option<_>>()?;
            if *negated {
                if lits.iter().any(|l| l.is_null()) {
                    // `x NOT IN (.., NULL)` is never true.
                    return Some(bool_lit(false));
                }
                let mut acc: Option<PhysicalExpr> = None;
                for l in lits {
                    let t = compare_stats(BinaryOp::NotEq, c, &cast, l, schema)?;
                    acc = Some(match acc {
                        None => t,
                        Some(a) => and(a, t),
                    });
                }
                acc
            } else {
                let mut acc = bool_lit(false);
                for l in lits.into_iter().filter(|l| !l.is_null()) {
                    acc = or(acc, compare_stats(BinaryOp::Eq, c, &cast, l, schema)?);
                }
                Some(acc)
            }
        }
        PhysicalExpr::StringMatch {
            op: StringMatch::StartsWith,
            expr,
            pattern,
        } => prefix_stats(expr, literal_of(pattern).and_then(string_value)?, schema),
        PhysicalExpr::Like {
            expr,
            pattern,
            negated: false,
            case_insensitive: false,
        } => {
            let p = literal_of(pattern).and_then(string_value)?;
            let prefix = p.strip_suffix('%')?;
            if prefix.contains(['%', '_', '\\']) {
                return None;
            }
            prefix_stats(expr, prefix.to_string(), schema)
        }
        _ => None,
    }
}

fn string_value(l: &Literal) -> Option<String> {
    use arrow_array::cast::AsArray;
    if l.is_null() || l.data_type() != &DataType::Utf8 {
        return None;
    }
    Some(l.array().as_string::<i32>().value(0).to_string())
}

/// Strings starting with `prefix` lie in `[prefix, successor(prefix))`.
fn prefix_stats(expr: &PhysicalExpr, prefix: String, schema: &Schema) -> Option<PhysicalExpr> {
    let (c, cast) = column_ref(expr)?;
    if prefix.is_empty() {
        return None;
    }
    let lo = PhysicalExpr::Literal(Literal::string(&prefix));
    let mut test = cmp(BinaryOp::GtEq, stat(1, c, &cast, schema), lo);
    let last = prefix.chars().last()?;
    if last.is_ascii() && (last as u8) < 0x7f {
        let mut succ = prefix[..prefix.len() - 1].to_string();
        succ.push((last as u8 + 1) as char);
        let hi = PhysicalExpr::Literal(Literal::string(&succ));
        test = and(test, cmp(BinaryOp::Lt, stat(0, c, &cast, schema), hi));
    }
    Some(and(test, has_non_null(c, schema)))
}

/// `NOT e` pushed inward, exact under three-valued logic.
fn negate(e: &PhysicalExpr) -> Option<PhysicalExpr> {
    Some(match e {
        PhysicalExpr::Not(x) => (**x).clone(),
        PhysicalExpr::And(a, b) => or(negate(a)?, negate(b)?),
        PhysicalExpr::Or(a, b) => and(negate(a)?, negate(b)?),
        PhysicalExpr::IsNull(x) => PhysicalExpr::IsNotNull(x.clone()),
        PhysicalExpr::IsNotNull(x) => PhysicalExpr::IsNull(x.clone()),
        PhysicalExpr::Compare { op, left, right } => {
            let flipped = match op {
                BinaryOp::Eq => BinaryOp::NotEq,
                BinaryOp::NotEq => BinaryOp::Eq,
                BinaryOp::Lt => BinaryOp::GtEq,
                BinaryOp::LtEq => BinaryOp::Gt,
                BinaryOp::Gt => BinaryOp::LtEq,
                BinaryOp::GtEq => BinaryOp::Lt,
                _ => return None,
            };
            cmp(flipped, (**left).clone(), (**right).clone())
        }
        PhysicalExpr::InList {
            expr,
            list,
            negated,
        } => PhysicalExpr::InList {
            expr: expr.clone(),
            list: list.clone(),
            negated: !negated,
        },
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_array::{Float64Array, Int32Array, UInt64Array};
    use ferrospark_expr::{bind_predicate, parse_expr, BindContext};

    fn schema() -> Schema {
        Schema::new(vec![
            Field::new("a", DataType::Int32, true),
            Field::new("f", DataType::Float64, true),
        ])
    }

    /// Three containers: a in [0,9], [10,19] (all null), [20,29]; f in [0,1] each.
    fn verdict(text: &str) -> Option<Vec<bool>> {
        let s = schema();
        let pred = bind_predicate(&parse_expr(text).expect("parses"), &BindContext::new(&s))
            .expect("binds");
        let p = PruningPredicate::try_new(&pred, &s)?;
        let a = ColumnStats {
            min: Arc::new(Int32Array::from(vec![Some(0), None, Some(20)])),
            max: Arc::new(Int32Array::from(vec![Some(9), None, Some(29)])),
            nulls: Arc::new(UInt64Array::from(vec![0, 10, 1])),
        };
        let f = ColumnStats {
            min: Arc::new(Float64Array::from(vec![0.0, 0.0, -0.0])),
            max: Arc::new(Float64Array::from(vec![1.0, 1.0, 1.0])),
            nulls: Arc::new(UInt64Array::from(vec![0, 0, 0])),
        };
        Some(
            p.keep(3, &[(0, a), (1, f)], &Int64Array::from(vec![10, 10, 10]))
                .expect("evaluates"),
        )
    }

    #[test]
    fn comparisons_prune_by_min_and_max() {
        assert_eq!(verdict("a = 5"), Some(vec![true, false, false]));
        assert_eq!(verdict("a > 25"), Some(vec![false, false, true]));
        assert_eq!(verdict("25 < a"), Some(vec![false, false, true]));
        assert_eq!(verdict("a < 0"), Some(vec![false, false, false]));
        assert_eq!(verdict("a IN (15, 21)"), Some(vec![false, false, true]));
        assert_eq!(verdict("a BETWEEN 8 AND 9"), Some(vec![true, false, false]));
        assert_eq!(verdict("NOT (a >= 10)"), Some(vec![true, false, false]));
        assert_eq!(
            verdict("CAST(a AS BIGINT) > 25"),
            Some(vec![false, false, true])
        );
    }

    #[test]
    fn nulls_are_pruned_by_counts() {
        assert_eq!(verdict("a IS NULL"), Some(vec![false, true, true]));
        assert_eq!(verdict("a IS NOT NULL"), Some(vec![true, false, true]));
        assert_eq!(
            verdict("a NOT IN (1, NULL)"),
            Some(vec![false, false, false])
        );
        assert_eq!(verdict("a = NULL"), Some(vec![false, false, false]));
    }

    #[test]
    fn or_needs_both_sides_and_and_needs_one() {
        assert_eq!(verdict("a = 5 OR a = 25"), Some(vec![true, false, true]));
        assert_eq!(verdict("a = 5 OR a + 1 = 3"), None);
        assert_eq!(
            verdict("a = 5 AND a + 1 = 3"),
            Some(vec![true, false, false])
        );
    }

    #[test]
    fn nan_can_satisfy_upper_bounds_so_they_never_prune_floats() {
        assert_eq!(verdict("f > 5"), None);
        assert_eq!(verdict("f != 0.5"), None);
        assert_eq!(verdict("f = CAST('NaN' AS DOUBLE)"), None);
        assert_eq!(verdict("f < -1"), Some(vec![false, false, false]));
        // -0.0 and 0.0 are equal: a min of -0.0 still admits 0.0
        assert_eq!(verdict("f = 0.0"), Some(vec![true, true, true]));
    }
}
