//! How many of a Parquet table's rows its pushed filters keep, estimated from the footers'
//! column ranges as Spark's `FilterEstimation` estimates from ANALYZE's column statistics:
//! `c = v` keeps one value of the `(max - min)` a discrete column can hold, `c < v` the
//! share of the range below `v`, `IN` one share per value, `IS NULL` the NULLs' share.
//! A conjunct the statistics cannot judge (a `LIKE`, a string equality, two columns) halves
//! the rows, at most four times, as the planner guesses without statistics.

use ferrospark_expr::{BinaryOp, Expr, Literal};
use ferrospark_scan::{ColumnStatistics, TableStatistics};

use crate::logical::expr_util::split_conjuncts;
use crate::logical::Attr;

/// The share of a scan's rows that `filters` (conjuncts over `attrs`) keep; at least one row.
pub fn scan_share(filters: &[Expr], attrs: &[Attr], stats: Option<&TableStatistics>) -> f64 {
    let column = |key: &str| -> Option<&ColumnStatistics> {
        let attr = attrs.iter().find(|a| a.key() == key)?;
        stats?.columns.get(&attr.name)
    };
    let rows = stats.map_or(0, |s| s.rows) as f64;
    let est = Estimator {
        column: &column,
        rows,
    };
    let mut share = 1.0;
    let mut unknown = 0;
    for c in filters.iter().flat_map(split_conjuncts) {
        if matches!(c, Expr::IsNotNull(_)) {
            continue;
        }
        match est.share(&c) {
            Some(s) => share *= s,
            None => unknown += 1,
        }
    }
    share *= 0.5f64.powi(unknown.min(4));
    if rows >= 1.0 {
        share.max(1.0 / rows)
    } else {
        share
    }
}

struct Estimator<'a> {
    column: &'a dyn Fn(&str) -> Option<&'a ColumnStatistics>,
    rows: f64,
}

/// A literal's value on the scale of [`ColumnStatistics`] (days for a date).
fn number(e: &Expr) -> Option<f64> {
    match e {
        Expr::Literal(l) => literal_number(l),
        Expr::TypedString { type_name, value } if type_name.eq_ignore_ascii_case("DATE") => {
            let text: arrow_array::ArrayRef =
                std::sync::Arc::new(arrow_array::StringArray::from(vec![value.trim()]));
            let day = arrow_cast::cast(&text, &arrow_schema::DataType::Date32).ok()?;
            literal_number(&Literal::new(day))
        }
        _ => None,
    }
}

fn literal_number(l: &Literal) -> Option<f64> {
    use arrow_array::cast::AsArray;
    use arrow_schema::DataType;
    if l.is_null() {
        return None;
    }
    let a = l.array();
    let a = match a.data_type() {
        DataType::Date32 => arrow_cast::cast(a, &DataType::Int32).ok()?,
        DataType::Date64 | DataType::Timestamp(..) => arrow_cast::cast(a, &DataType::Int64).ok()?,
        t if t.is_numeric() => a.clone(),
        _ => return None,
    };
    let f = arrow_cast::cast(&a, &DataType::Float64).ok()?;
    let v = f.as_primitive::<arrow_array::types::Float64Type>().value(0);
    v.is_finite().then_some(v)
}

impl<'a> Estimator<'a> {
    fn stats_of(&self, e: &Expr) -> Option<&'a ColumnStatistics> {
        match e {
            Expr::Column(k) => (self.column)(k),
            _ => None,
        }
    }

    /// A comparison as `(column, op, value)` with the column on the left; the value is
    /// `None` for a literal that is not a number (a string).
    fn comparison(
        &self,
        l: &Expr,
        op: BinaryOp,
        r: &Expr,
    ) -> Option<(&'a ColumnStatistics, BinaryOp, Option<f64>)> {
        let constant = |e: &Expr| matches!(e, Expr::Literal(_) | Expr::TypedString { .. });
        if let (Some(c), true) = (self.stats_of(l), constant(r)) {
            return Some((c, op, number(r)));
        }
        let flipped = match op {
            BinaryOp::Lt => BinaryOp::Gt,
            BinaryOp::LtEq => BinaryOp::GtEq,
            BinaryOp::Gt => BinaryOp::Lt,
            BinaryOp::GtEq => BinaryOp::LtEq,
            o => o,
        };
        let c = self.stats_of(r)?;
        constant(l).then(|| (c, flipped, number(l)))
    }

    /// The share of non-NULL rows holding one given value of `c` (`None`: a value only
    /// the column's distinct count can judge).
    fn one_value(&self, c: &ColumnStatistics, v: Option<f64>) -> Option<f64> {
        if let (Some(v), Some((min, max))) = (v, c.range) {
            if v < min || v > max {
                return Some(0.0);
            }
        }
        let distinct = c.distinct_bound?;
        let non_null = (self.rows - c.nulls as f64).max(1.0);
        Some(1.0 / distinct.min(non_null).max(1.0))
    }

    /// The share of `c`'s range at or below `v` (`inclusive`) or strictly below.
    fn below(&self, c: &ColumnStatistics, v: Option<f64>, inclusive: bool) -> Option<f64> {
        let ((min, max), v) = (c.range?, v?);
        if max <= min {
            let all = v > min || (inclusive && v >= min);
            return Some(if all { 1.0 } else { 0.0 });
        }
        let step = c.distinct_bound.map_or(0.0, |d| 1.0 / d.max(1.0));
        let frac = (v - min) / (max - min) + if inclusive { step } else { 0.0 };
        Some(frac.clamp(0.0, 1.0))
    }

    fn non_null(&self, c: &ColumnStatistics) -> f64 {
        if self.rows < 1.0 {
            return 1.0;
        }
        (1.0 - c.nulls as f64 / self.rows).clamp(0.0, 1.0)
    }

    fn share(&self, e: &Expr) -> Option<f64> {
        match e {
            Expr::Binary {
                left,
                op: BinaryOp::And,
                right,
            } => Some(self.share(left)? * self.share(right)?),
            Expr::Binary {
                left,
                op: BinaryOp::Or,
                right,
            } => {
                let (a, b) = (self.share(left)?, self.share(right)?);
                Some((a + b - a * b).min(1.0))
            }
            Expr::Not(inner) => Some(1.0 - self.share(inner)?),
            Expr::IsNull(inner) => {
                let c = self.stats_of(inner)?;
                Some(1.0 - self.non_null(c))
            }
            Expr::Binary { left, op, right } => {
                let (c, op, v) = self.comparison(left, *op, right)?;
                let nn = self.non_null(c);
                let s = match op {
                    BinaryOp::Eq => self.one_value(c, v)?,
                    BinaryOp::NotEq => 1.0 - self.one_value(c, v)?,
                    BinaryOp::Lt => self.below(c, v, false)?,
                    BinaryOp::LtEq => self.below(c, v, true)?,
                    BinaryOp::Gt => 1.0 - self.below(c, v, true)?,
                    BinaryOp::GtEq => 1.0 - self.below(c, v, false)?,
                    _ => return None,
                };
                Some(s * nn)
            }
            Expr::Between {
                expr,
                low,
                high,
                negated,
            } => {
                let c = self.stats_of(expr)?;
                let (lo, hi) = (number(low), number(high));
                let s = (self.below(c, hi, true)? - self.below(c, lo, false)?).max(0.0);
                let s = if *negated { 1.0 - s } else { s };
                Some(s * self.non_null(c))
            }
            Expr::InList {
                expr,
                list,
                negated,
            } => {
                let c = self.stats_of(expr)?;
                let mut s = 0.0;
                for v in list {
                    if !matches!(v, Expr::Literal(_) | Expr::TypedString { .. }) {
                        return None;
                    }
                    s += self.one_value(c, number(v))?;
                }
                let s = s.min(1.0);
                let s = if *negated { 1.0 - s } else { s };
                Some(s * self.non_null(c))
            }
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_schema::DataType;
    use std::collections::HashMap;

    fn table() -> (Vec<Attr>, TableStatistics) {
        let attr = |id: u64, name: &str, t: DataType| Attr {
            id,
            name: name.into(),
            qualifier: None,
            data_type: t,
            nullable: true,
            hidden: false,
        };
        let attrs = vec![
            attr(1, "size", DataType::Int32),
            attr(2, "day", DataType::Date32),
            attr(3, "name", DataType::Utf8),
            attr(4, "brand", DataType::Utf8),
        ];
        let mut columns = HashMap::new();
        columns.insert(
            "size".into(),
            ColumnStatistics {
                range: Some((1.0, 50.0)),
                nulls: 0,
                distinct_bound: Some(50.0),
            },
        );
        columns.insert(
            "day".into(),
            ColumnStatistics {
                range: Some((0.0, 999.0)),
                nulls: 100,
                distinct_bound: Some(1000.0),
            },
        );
        columns.insert(
            "brand".into(),
            ColumnStatistics {
                range: None,
                nulls: 0,
                distinct_bound: Some(25.0),
            },
        );
        (
            attrs,
            TableStatistics {
                rows: 1000,
                columns,
            },
        )
    }

    fn share(sql: &str) -> f64 {
        let (attrs, stats) = table();
        let e = ferrospark_expr::parse_expr(sql).expect("parses");
        let e = crate::logical::expr_util::replace_columns(&e, &|c| {
            attrs.iter().find(|a| a.name == c).map(Attr::column)
        });
        scan_share(&[e], &attrs, Some(&stats))
    }

    #[test]
    fn equalities_ranges_and_lists_use_the_column_ranges() {
        assert!((share("size = 15") - 1.0 / 50.0).abs() < 1e-9);
        assert!((share("size IN (1, 2, 3)") - 3.0 / 50.0).abs() < 1e-9);
        assert_eq!(share("size = 99"), 1.0 / 1000.0);
        assert!((share("size != 15") - 49.0 / 50.0).abs() < 1e-9);
        // Below half the range of days, NULLs never match.
        let half = share("day < 499.5");
        assert!((half - 0.5 * 0.9).abs() < 0.01, "{half}");
        assert!((share("day BETWEEN 0 AND 99") - 0.1 * 0.9).abs() < 0.01);
        assert!((share("day IS NULL") - 0.1).abs() < 1e-9);
        assert!((share("size = 1 OR size = 2") - (0.04 - 0.0004)).abs() < 1e-9);
        // A string column with a small dictionary: one value of its 25.
        assert!((share("brand = 'Brand#23'") - 0.04).abs() < 1e-9);
        assert!((share("brand IN ('a', 'b')") - 0.08).abs() < 1e-9);
        assert_eq!(share("brand < 'b'"), 0.5);
    }

    #[test]
    fn what_statistics_cannot_judge_halves_at_most_four_times() {
        assert_eq!(share("name = 'x'"), 0.5);
        assert_eq!(share("name = 'x' AND name LIKE 'a%'"), 0.25);
        let many = "name = 'a' AND name = 'b' AND name = 'c' AND name = 'd' AND name = 'e'";
        assert_eq!(share(many), 1.0 / 16.0);
        assert_eq!(share("size > day"), 0.5);
        assert_eq!(share("name IS NOT NULL"), 1.0);
        assert!((share("size = 15 AND name LIKE '%x'") - 0.01).abs() < 1e-9);
    }
}
