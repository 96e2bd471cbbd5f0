//! Size estimates for join selection, as Spark's `SizeInBytesOnlyStatsPlanVisitor` makes
//! them without cost-based statistics: a file relation's bytes scaled to the columns read,
//! a projection scaled to its row width, an inner join the product of its sides.

use arrow_schema::DataType;

use super::selectivity::scan_share;
use crate::logical::{Attr, LogicalPlan, ScanSource};

/// Spark's `defaultSize` of a column type.
fn default_size(t: &DataType) -> u64 {
    match t {
        DataType::Boolean | DataType::Int8 | DataType::UInt8 => 1,
        DataType::Int16 | DataType::UInt16 => 2,
        DataType::Int32 | DataType::UInt32 | DataType::Float32 | DataType::Date32 => 4,
        DataType::Decimal128(p, _) if *p <= 18 => 8,
        DataType::Decimal128(..) => 16,
        DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View => 20,
        DataType::Binary | DataType::LargeBinary | DataType::BinaryView => 100,
        DataType::Null => 1,
        _ => 8,
    }
}

/// Bytes of one row of `attrs`, with Spark's 8-byte row overhead.
pub fn row_size(attrs: &[Attr]) -> u64 {
    8 + attrs
        .iter()
        .map(|a| default_size(&a.data_type))
        .sum::<u64>()
}

/// Estimated output bytes of `plan`, as Spark estimates them (for Spark's join selection).
pub fn size_in_bytes(plan: &LogicalPlan) -> u64 {
    estimate(plan, false)
}

/// A finer estimate for choosing which side of an in-process hash join to build: filters
/// keep half their input per conjunct (at most four halvings, as a planner without column
/// statistics guesses), and an equi-join keeps as many rows of its larger side as the
/// smaller side's filters leave keys for (a key / foreign-key join: `lineitem` joined to
/// the parts of one brand keeps that brand's share of `lineitem`), rather than the product
/// Spark assumes. A semi join keeps the share of its left side its right side's filters
/// leave.
pub fn local_size_in_bytes(plan: &LogicalPlan) -> u64 {
    estimate(plan, true)
}

fn selectivity(conjuncts: usize, size: u64) -> u64 {
    size >> conjuncts.min(4)
}

fn estimate(plan: &LogicalPlan, local: bool) -> u64 {
    let size_in_bytes = |p: &LogicalPlan| estimate(p, local);
    let scaled = |child: u64, child_attrs: &[Attr], out: &[Attr]| -> u64 {
        let cw = row_size(child_attrs).max(1);
        ((child as u128 * row_size(out) as u128) / cw as u128).min(u64::MAX as u128) as u64
    };
    match plan {
        LogicalPlan::Scan {
            source,
            attrs,
            projection,
            filters,
            ..
        } => {
            let full = match source {
                ScanSource::Parquet { size_bytes, .. }
                | ScanSource::Files { size_bytes, .. }
                | ScanSource::External { size_bytes } => *size_bytes,
                ScanSource::Memory { batches } => batches
                    .iter()
                    .map(|b| ferrospark_common::batch_bytes(b) as u64)
                    .sum(),
            };
            let read = match projection {
                Some(_) => scaled(full, attrs, &plan.output()),
                None => full,
            };
            if local {
                let share = scan_share(filters, attrs, parquet_stats(source));
                ((read as f64 * share) as u64).max(1)
            } else {
                read
            }
        }
        LogicalPlan::Filter { input, predicate } if local => {
            selectivity(predicate.conjuncts().len(), size_in_bytes(input)).max(1)
        }
        LogicalPlan::OneRow => 1,
        LogicalPlan::Empty { .. } => 1,
        LogicalPlan::Project { input, .. } | LogicalPlan::Window { input, .. } => {
            scaled(size_in_bytes(input), &input.output(), &plan.output())
        }
        LogicalPlan::Filter { input, .. }
        | LogicalPlan::Sort { input, .. }
        | LogicalPlan::SubqueryAlias { input, .. } => size_in_bytes(input),
        LogicalPlan::Aggregate { input, group, .. } => {
            if group.is_empty() {
                row_size(&plan.output())
            } else {
                let all = scaled(size_in_bytes(input), &input.output(), &plan.output());
                // No more groups than the grouping columns' ranges hold values (the
                // parts of Q2's `min(ps_supplycost)` by `ps_partkey`: 200,000, not 800,000).
                match local.then(|| group_bound(input, group)).flatten() {
                    Some(groups) => all.min(
                        (groups * row_size(&plan.output()) as f64).min(u64::MAX as f64) as u64,
                    ),
                    None => all,
                }
            }
        }
        LogicalPlan::Limit { input, fetch, .. } => match fetch {
            Some(n) => (*n as u64)
                .saturating_mul(row_size(&plan.output()))
                .min(size_in_bytes(input)),
            None => size_in_bytes(input),
        },
        LogicalPlan::Join {
            left,
            right,
            join_type,
            ..
        } => {
            use ferrospark_join::JoinType;
            match join_type {
                JoinType::LeftSemi if local && has_equi_condition(plan) => {
                    share(size_in_bytes(left), kept_share(right))
                }
                JoinType::LeftSemi | JoinType::LeftAnti | JoinType::NullAwareAnti => {
                    size_in_bytes(left)
                }
                JoinType::Inner if local && has_equi_condition(plan) => {
                    let (l, r) = (size_in_bytes(left), size_in_bytes(right));
                    let (wider, narrower) = if l >= r { (left, right) } else { (right, left) };
                    let kept = share(l.max(r), kept_share(narrower));
                    scaled(kept, &wider.output(), &plan.output())
                }
                _ if local && has_equi_condition(plan) => {
                    let (l, r) = (size_in_bytes(left), size_in_bytes(right));
                    let wider = if l >= r { left } else { right };
                    scaled(l.max(r), &wider.output(), &plan.output())
                }
                _ => size_in_bytes(left)
                    .saturating_mul(size_in_bytes(right))
                    .max(1),
            }
        }
        LogicalPlan::Union { inputs, .. } => inputs
            .iter()
            .map(|i| size_in_bytes(i))
            .fold(0u64, u64::saturating_add),
        LogicalPlan::SetOp { left, .. } => size_in_bytes(left),
        // A guess: each row makes a few.
        LogicalPlan::Generate { input, .. } => {
            scaled(size_in_bytes(input), &input.output(), &plan.output()).saturating_mul(4)
        }
        LogicalPlan::Expand {
            input, projections, ..
        } => scaled(size_in_bytes(input), &input.output(), &plan.output())
            .saturating_mul(projections.len() as u64),
    }
}

fn parquet_stats(source: &ScanSource) -> Option<&ferrospark_scan::TableStatistics> {
    match source {
        ScanSource::Parquet { stats, .. } => Some(stats),
        ScanSource::Memory { .. } | ScanSource::External { .. } | ScanSource::Files { .. } => None,
    }
}

/// The most groups `group` can make over `input`: the product of each grouping column's
/// distinct-value bound from its table's footers (`None` when a key has none).
fn group_bound(input: &LogicalPlan, group: &[(ferrospark_expr::Expr, Attr)]) -> Option<f64> {
    let mut product = 1.0f64;
    for (g, _) in group {
        let ferrospark_expr::Expr::Column(key) = g else {
            return None;
        };
        product *= column_statistics(input, key)?.distinct_bound?;
    }
    Some(product)
}

/// The footer statistics of the scan column `key` comes from, found below `plan`.
fn column_statistics<'a>(
    plan: &'a LogicalPlan,
    key: &str,
) -> Option<&'a ferrospark_scan::ColumnStatistics> {
    if let LogicalPlan::Scan { source, attrs, .. } = plan {
        let attr = attrs.iter().find(|a| a.key() == key)?;
        return parquet_stats(source)?.columns.get(&attr.name);
    }
    plan.children()
        .into_iter()
        .find_map(|c| column_statistics(c, key))
}

fn has_equi_condition(plan: &LogicalPlan) -> bool {
    let LogicalPlan::Join {
        left,
        right,
        condition,
        ..
    } = plan
    else {
        return false;
    };
    let keys =
        super::planner::extract_equi_keys(condition.as_ref(), &left.output(), &right.output());
    !keys.left.is_empty()
}

fn share(size: u64, kept: f64) -> u64 {
    ((size as f64 * kept) as u64).max(1)
}

/// Whether `plan` keeps only some of its tables' rows (a filter beyond `IS NOT NULL` on some
/// relation it reads through inner joins, projections, aggregations, sorts, or a limit), so its
/// join keys are a selective runtime filter. Spark's `InjectRuntimeFilter` asks the same of the
/// side it builds a filter from: keys of a whole table let every probe row through.
pub fn filters_rows(plan: &LogicalPlan) -> bool {
    kept_share(plan) < 1.0
}

/// The share of its tables' rows `plan` keeps by its filters (half per conjunct other than
/// `IS NOT NULL`, at most four halvings per filter, as [`local_size_in_bytes`] guesses).
fn kept_share(plan: &LogicalPlan) -> f64 {
    use crate::logical::expr_util::split_conjuncts;
    use ferrospark_join::JoinType;
    let halvings = |filters: &[ferrospark_expr::Expr]| {
        let n = filters
            .iter()
            .flat_map(split_conjuncts)
            .filter(|c| !matches!(c, ferrospark_expr::Expr::IsNotNull(_)))
            .count();
        0.5f64.powi(n.min(4) as i32)
    };
    match plan {
        LogicalPlan::Scan {
            filters,
            attrs,
            source,
            ..
        } => scan_share(filters, attrs, parquet_stats(source)),
        // A limit keeps some rows; its own size estimate says how many.
        LogicalPlan::Limit { .. } | LogicalPlan::Empty { .. } => 0.5,
        LogicalPlan::Filter { input, predicate } => {
            halvings(std::slice::from_ref(predicate)) * kept_share(input)
        }
        LogicalPlan::Project { input, .. }
        | LogicalPlan::SubqueryAlias { input, .. }
        | LogicalPlan::Sort { input, .. }
        | LogicalPlan::Window { input, .. }
        | LogicalPlan::Aggregate { input, .. } => kept_share(input),
        LogicalPlan::Join {
            left,
            right,
            join_type,
            ..
        } => match join_type {
            JoinType::Inner | JoinType::Cross | JoinType::LeftSemi => {
                kept_share(left) * kept_share(right)
            }
            JoinType::LeftOuter | JoinType::LeftAnti | JoinType::NullAwareAnti => kept_share(left),
            JoinType::RightOuter => kept_share(right),
            JoinType::FullOuter => 1.0,
        },
        _ => 1.0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_schema::DataType;
    use ferrospark_expr::{BinaryOp, Expr, Literal};
    use ferrospark_scan::{ColumnStatistics, TableStatistics};
    use std::sync::Arc;

    fn attr(id: u64, name: &str) -> Attr {
        Attr {
            id,
            name: name.into(),
            qualifier: None,
            data_type: DataType::Int64,
            nullable: false,
            hidden: false,
        }
    }

    /// A 1,000-row table of `pk` in 0..=999 and `v`, 80 MB on disk.
    fn scan(filters: Vec<Expr>) -> Arc<LogicalPlan> {
        let mut columns = std::collections::HashMap::new();
        columns.insert(
            "pk".to_string(),
            ColumnStatistics {
                range: Some((0.0, 999.0)),
                nulls: 0,
                distinct_bound: Some(1000.0),
            },
        );
        Arc::new(LogicalPlan::Scan {
            source: ScanSource::Parquet {
                paths: vec![],
                size_bytes: 80_000_000,
                stats: Arc::new(TableStatistics {
                    rows: 4_000_000,
                    columns,
                }),
                partitions: None,
            },
            attrs: vec![attr(1, "pk"), attr(2, "v")],
            projection: None,
            filters,
            name: "t".into(),
        })
    }

    #[test]
    fn footer_ranges_estimate_filters_and_groups() {
        let all = local_size_in_bytes(&scan(vec![]));
        let pk_below_100 = Expr::Binary {
            left: Box::new(Expr::Column("pk#1".into())),
            op: BinaryOp::Lt,
            right: Box::new(Expr::Literal(Literal::bigint(100))),
        };
        let some = local_size_in_bytes(&scan(vec![pk_below_100]));
        assert!(
            (some as f64 / all as f64 - 0.1).abs() < 0.01,
            "{some} of {all}"
        );
        // Spark's own estimate ignores filters.
        assert_eq!(size_in_bytes(&scan(vec![])), all);
        // Grouping by pk makes at most its 1,000 values.
        let agg = LogicalPlan::Aggregate {
            input: scan(vec![]),
            group: vec![(Expr::Column("pk#1".into()), attr(1, "pk"))],
            aggs: vec![],
        };
        assert_eq!(local_size_in_bytes(&agg), 1000 * row_size(&[attr(1, "pk")]));
        // By v (no statistics), as many groups as rows.
        let by_v = LogicalPlan::Aggregate {
            input: scan(vec![]),
            group: vec![(Expr::Column("v#2".into()), attr(2, "v"))],
            aggs: vec![],
        };
        assert!(local_size_in_bytes(&by_v) > 1_000_000);
    }
}
