//! Logical plans printed as Spark prints them (`Project [a#1, b#2]`, `+- Filter ...`).

use std::fmt::Write;

use ferrospark_expr::Expr;

use super::{Attr, FrameEdge, LogicalPlan, ScanSource, SetOpKind, SortExpr};

/// Spark-style text of an expression over `name#id` columns: keys print bare, not quoted.
pub fn expr_text(e: &Expr) -> String {
    let s = e.to_string();
    // Display quotes names with `#`; Spark prints attribute keys as they are.
    let mut out = String::with_capacity(s.len());
    let mut rest = s.as_str();
    while let Some(start) = rest.find('`') {
        out.push_str(&rest[..start]);
        let after = &rest[start + 1..];
        match after.find('`') {
            Some(end) if after[..end].contains('#') => {
                out.push_str(&after[..end]);
                rest = &after[end + 1..];
            }
            Some(end) => {
                out.push('`');
                out.push_str(&after[..=end]);
                rest = &after[end + 1..];
            }
            None => {
                out.push('`');
                rest = after;
            }
        }
    }
    out.push_str(rest);
    out
}

fn attrs_text(attrs: &[Attr]) -> String {
    attrs.iter().map(Attr::key).collect::<Vec<_>>().join(", ")
}

/// One sort key as Spark prints it.
pub fn sort_text(k: &SortExpr) -> String {
    format!(
        "{} {} NULLS {}",
        expr_text(&k.expr),
        if k.ascending { "ASC" } else { "DESC" },
        if k.nulls_first { "FIRST" } else { "LAST" }
    )
}

fn edge_text(e: &FrameEdge) -> String {
    match e {
        FrameEdge::UnboundedPreceding => "UNBOUNDED PRECEDING".into(),
        FrameEdge::Preceding(x) => format!("{} PRECEDING", expr_text(x)),
        FrameEdge::CurrentRow => "CURRENT ROW".into(),
        FrameEdge::Following(x) => format!("{} FOLLOWING", expr_text(x)),
        FrameEdge::UnboundedFollowing => "UNBOUNDED FOLLOWING".into(),
    }
}

/// The one-line description of a node.
pub fn node_text(plan: &LogicalPlan) -> String {
    match plan {
        LogicalPlan::Scan {
            source,
            attrs,
            projection,
            filters,
            name,
        } => {
            let out = match projection {
                Some(p) => p.iter().map(|&i| attrs[i].clone()).collect::<Vec<_>>(),
                None => attrs.clone(),
            };
            let kind = match source {
                ScanSource::Parquet { .. } => "parquet",
                ScanSource::Files { format, .. } => format.name(),
                ScanSource::Memory { .. } => "memory",
                ScanSource::External { .. } => "spark",
            };
            let mut s = format!("Relation {name}[{}] {kind}", attrs_text(&out));
            if !filters.is_empty() {
                let f: Vec<String> = filters.iter().map(expr_text).collect();
                let _ = write!(s, ", PushedFilters: [{}]", f.join(", "));
            }
            s
        }
        LogicalPlan::OneRow => "OneRowRelation".into(),
        LogicalPlan::Empty { attrs } => format!("LocalRelation <empty>, [{}]", attrs_text(attrs)),
        LogicalPlan::Project { exprs, .. } => {
            let items: Vec<String> = exprs
                .iter()
                .map(|(e, a)| match e {
                    Expr::Column(c) if *c == a.key() => c.clone(),
                    other => format!("{} AS {}", expr_text(other), a.key()),
                })
                .collect();
            format!("Project [{}]", items.join(", "))
        }
        LogicalPlan::Filter { predicate, .. } => format!("Filter {}", expr_text(predicate)),
        LogicalPlan::Aggregate { group, aggs, .. } => {
            let g: Vec<String> = group.iter().map(|(e, _)| expr_text(e)).collect();
            let mut items: Vec<String> = group.iter().map(|(_, a)| a.key()).collect();
            items.extend(aggs.iter().map(|(c, a)| {
                let args: Vec<String> = c.args.iter().map(expr_text).collect();
                format!(
                    "{}({}{}){} AS {}",
                    c.name,
                    if c.distinct { "DISTINCT " } else { "" },
                    args.join(", "),
                    if c.ignore_nulls { " IGNORE NULLS" } else { "" },
                    a.key()
                )
            }));
            format!("Aggregate [{}], [{}]", g.join(", "), items.join(", "))
        }
        LogicalPlan::Join {
            join_type,
            condition,
            hint,
            ..
        } => {
            let mut s = format!("Join {}", join_type.name());
            if let Some(c) = condition {
                let _ = write!(s, ", {}", expr_text(c));
            }
            if let Some(h) = hint {
                let _ = write!(s, ", hint={}", h.name());
            }
            s
        }
        LogicalPlan::Window { exprs, .. } => {
            let items: Vec<String> = exprs
                .iter()
                .map(|(w, a)| {
                    let mut spec = Vec::new();
                    if !w.partition_by.is_empty() {
                        let p: Vec<String> = w.partition_by.iter().map(expr_text).collect();
                        spec.push(format!("PARTITION BY {}", p.join(", ")));
                    }
                    if !w.order_by.is_empty() {
                        let o: Vec<String> = w.order_by.iter().map(sort_text).collect();
                        spec.push(format!("ORDER BY {}", o.join(", ")));
                    }
                    if let Some(f) = &w.frame {
                        spec.push(format!(
                            "{} BETWEEN {} AND {}",
                            if f.rows { "ROWS" } else { "RANGE" },
                            edge_text(&f.start),
                            edge_text(&f.end)
                        ));
                    }
                    format!(
                        "{} OVER ({}) AS {}",
                        expr_text(&w.func),
                        spec.join(" "),
                        a.key()
                    )
                })
                .collect();
            format!("Window [{}]", items.join(", "))
        }
        LogicalPlan::Sort { keys, .. } => {
            let k: Vec<String> = keys.iter().map(sort_text).collect();
            format!("Sort [{}], true", k.join(", "))
        }
        LogicalPlan::Limit { skip, fetch, .. } => match (skip, fetch) {
            (0, Some(n)) => format!("GlobalLimit {n}"),
            (s, Some(n)) => format!("GlobalLimit {n}, offset {s}"),
            (s, None) => format!("Offset {s}"),
        },
        LogicalPlan::Union { .. } => "Union".into(),
        LogicalPlan::SetOp { kind, all, .. } => format!(
            "{}{}",
            match kind {
                SetOpKind::Intersect => "Intersect",
                SetOpKind::Except => "Except",
            },
            if *all { " All" } else { "" }
        ),
        LogicalPlan::SubqueryAlias { alias, .. } => format!("SubqueryAlias {alias}"),
        LogicalPlan::Generate {
            kind,
            args,
            outer,
            attrs,
            ..
        } => format!(
            "Generate {}({}), {outer}, [{}]",
            kind.name(),
            args.iter()
                .map(|a| a.to_string())
                .collect::<Vec<_>>()
                .join(", "),
            attrs.iter().map(Attr::key).collect::<Vec<_>>().join(", ")
        ),
        LogicalPlan::Expand {
            projections, attrs, ..
        } => format!(
            "Expand {}",
            expand_text(
                projections,
                &attrs.iter().map(Attr::key).collect::<Vec<_>>()
            )
        ),
    }
}

/// Spark's text of an Expand: `[[a#1, null, 1], [a#1, b#2, 0]], [a#5, b#6, spark_grouping_id#7]`.
pub fn expand_text(projections: &[Vec<Expr>], out_keys: &[String]) -> String {
    let sets: Vec<String> = projections
        .iter()
        .map(|p| {
            let items: Vec<String> = p
                .iter()
                .map(|e| match e {
                    // Spark prints the NULLs and ids of an Expand bare.
                    Expr::Literal(l) if l.is_null() => "null".into(),
                    Expr::Literal(l) => match crate::sql::literal_i64(l) {
                        Some(v) => v.to_string(),
                        None => expr_text(e),
                    },
                    other => expr_text(other),
                })
                .collect();
            format!("[{}]", items.join(", "))
        })
        .collect();
    format!("[{}], [{}]", sets.join(", "), out_keys.join(", "))
}

/// The whole tree, root first, children indented under `+- ` / `:- ` as Spark draws them.
pub fn explain_logical(plan: &LogicalPlan) -> String {
    let mut out = String::new();
    walk(plan, "", "", &mut out);
    out
}

fn walk(plan: &LogicalPlan, first: &str, rest: &str, out: &mut String) {
    let _ = writeln!(out, "{first}{}", node_text(plan));
    let kids = plan.children();
    let n = kids.len();
    for (i, k) in kids.into_iter().enumerate() {
        if i + 1 < n {
            walk(k, &format!("{rest}:- "), &format!("{rest}:  "), out);
        } else {
            walk(k, &format!("{rest}+- "), &format!("{rest}   "), out);
        }
    }
}
