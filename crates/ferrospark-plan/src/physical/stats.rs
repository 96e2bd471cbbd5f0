//! Size estimates for join selection, as Spark's `SizeInBytesOnlyStatsPlanVisitor` makes
//! them without cost-based statistics: a file relation's bytes scaled to the columns read,
//! a projection scaled to its row width, an inner join the product of its sides.

use arrow_schema::DataType;

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

/// Estimated output bytes of `plan`.
pub fn size_in_bytes(plan: &LogicalPlan) -> u64 {
    let scaled = |child: u64, child_attrs: &[Attr], out: &[Attr]| -> u64 {
        let cw = row_size(child_attrs).max(1);
        ((child as u128 * row_size(out) as u128) / cw as u128).min(u64::MAX as u128) as u64
    };
    match plan {
        LogicalPlan::Scan {
            source,
            attrs,
            projection,
            ..
        } => {
            let full = match source {
                ScanSource::Parquet { size_bytes, .. } => *size_bytes,
                ScanSource::Memory { batches } => batches
                    .iter()
                    .map(|b| b.get_array_memory_size() as u64)
                    .sum(),
            };
            match projection {
                Some(_) => scaled(full, attrs, &plan.output()),
                None => full,
            }
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
                scaled(size_in_bytes(input), &input.output(), &plan.output())
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
                JoinType::LeftSemi | JoinType::LeftAnti | JoinType::NullAwareAnti => {
                    size_in_bytes(left)
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
    }
}
