//! Window specifications: the partition keys and the ordering within a partition.

use ferrospark_expr::PhysicalExpr;

/// One ORDER BY key of a window: Spark's defaults are ASC NULLS FIRST and DESC NULLS LAST.
#[derive(Debug, Clone)]
pub struct OrderKey {
    /// The key.
    pub expr: PhysicalExpr,
    /// Descending?
    pub descending: bool,
    /// NULLs before the other values?
    pub nulls_first: bool,
}

impl OrderKey {
    /// `expr ASC NULLS FIRST`.
    pub fn asc(expr: PhysicalExpr) -> Self {
        Self {
            expr,
            descending: false,
            nulls_first: true,
        }
    }

    /// `expr DESC NULLS LAST`.
    pub fn desc(expr: PhysicalExpr) -> Self {
        Self {
            expr,
            descending: true,
            nulls_first: false,
        }
    }
}

/// `PARTITION BY ... ORDER BY ...`.
#[derive(Debug, Clone, Default)]
pub struct WindowSpec {
    /// Rows with equal partition keys (NULL with NULL, NaN with NaN, -0.0 with 0.0) share a
    /// partition.
    pub partition_by: Vec<PhysicalExpr>,
    /// The order within a partition; rows equal on every key are peers.
    pub order_by: Vec<OrderKey>,
}

impl std::fmt::Display for WindowSpec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let parts: Vec<String> = self.partition_by.iter().map(|e| e.to_string()).collect();
        let order: Vec<String> = self
            .order_by
            .iter()
            .map(|k| {
                format!(
                    "{} {} NULLS {}",
                    k.expr,
                    if k.descending { "DESC" } else { "ASC" },
                    if k.nulls_first { "FIRST" } else { "LAST" }
                )
            })
            .collect();
        write!(
            f,
            "PARTITION BY [{}] ORDER BY [{}]",
            parts.join(", "),
            order.join(", ")
        )
    }
}
