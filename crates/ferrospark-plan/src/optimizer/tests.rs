//! Each optimizer rule on its own: the plan a rule leaves, over small in-memory tables.

use std::sync::Arc;

use arrow_array::{Float64Array, Int32Array, RecordBatch, StringArray};
use arrow_schema::{DataType, Field, Schema};
use ferrospark_common::Config;

use super::*;
use crate::logical::explain_logical;
use crate::sql::SqlStatement;
use crate::QueryEngine;

fn engine() -> QueryEngine {
    let e = QueryEngine::new(Config::default());
    let t = Arc::new(Schema::new(vec![
        Field::new("a", DataType::Int32, true),
        Field::new("b", DataType::Utf8, true),
        Field::new("c", DataType::Float64, true),
    ]));
    let tb = RecordBatch::try_new(
        t.clone(),
        vec![
            Arc::new(Int32Array::from(vec![1, 2, 3])),
            Arc::new(StringArray::from(vec!["x", "y", "z"])),
            Arc::new(Float64Array::from(vec![1.0, 2.0, 3.0])),
        ],
    )
    .expect("batch");
    let u = Arc::new(Schema::new(vec![
        Field::new("a", DataType::Int32, true),
        Field::new("d", DataType::Utf8, true),
    ]));
    let ub = RecordBatch::try_new(
        u.clone(),
        vec![
            Arc::new(Int32Array::from(vec![1, 2])),
            Arc::new(StringArray::from(vec!["p", "q"])),
        ],
    )
    .expect("batch");
    for (name, schema, batch) in [("t", t, tb), ("u", u.clone(), ub.clone()), ("v", u, ub)] {
        let plan = e.builder.scan_memory(schema, vec![batch], name);
        e.register_view(name, plan, true).expect("view");
    }
    e
}

fn planned(e: &QueryEngine, sql: &str) -> Arc<LogicalPlan> {
    match e.sql(sql).expect("plans") {
        SqlStatement::Query(p) | SqlStatement::Explain(p, _) => p,
    }
}

/// The plan text after `rules` run in order.
fn after(sql: &str, rules: &[&dyn OptimizerRule]) -> String {
    let e = engine();
    let mut plan = planned(&e, sql);
    for r in rules {
        plan = r.apply(&plan, e.config()).expect("rule applies");
    }
    explain_logical(&plan)
}

#[test]
fn constant_folding_evaluates_column_free_subtrees() {
    let text = after("SELECT a + (1 + 2) * 4 AS x FROM t", &[&ConstantFolding]);
    assert!(text.contains("+ 12"), "{text}");
}

#[test]
fn eliminate_subquery_aliases_drops_alias_nodes() {
    let before = after("SELECT x.a FROM t x", &[]);
    assert!(before.contains("SubqueryAlias"), "{before}");
    let text = after("SELECT x.a FROM t x", &[&EliminateSubqueryAliases]);
    assert!(!text.contains("SubqueryAlias"), "{text}");
}

#[test]
fn push_down_predicates_reaches_the_scans_of_each_join_side() {
    let sql = "SELECT * FROM t JOIN u ON t.a = u.a WHERE t.b = 'x' AND u.d = 'p' AND t.c > u.a";
    let text = after(sql, &[&EliminateSubqueryAliases, &PushDownPredicates]);
    let scans: Vec<&str> = text.lines().filter(|l| l.contains("Relation")).collect();
    assert!(
        scans
            .iter()
            .any(|l| l.contains("PushedFilters: [b#") && l.contains("= 'x'")),
        "{text}"
    );
    assert!(scans.iter().any(|l| l.contains("= 'p'")), "{text}");
    // The condition over both sides stays with the join.
    assert!(
        text.lines()
            .any(|l| l.contains("Join Inner") && l.contains("> a#")),
        "{text}"
    );
}

#[test]
fn push_down_predicates_passes_projections_and_aggregates() {
    let sql = "SELECT * FROM (SELECT a, count(*) AS n FROM t GROUP BY a) s WHERE a > 1 AND n > 0";
    let text = after(sql, &[&EliminateSubqueryAliases, &PushDownPredicates]);
    // The key predicate reaches the scan; the one on the aggregate stays above it.
    assert!(
        text.lines()
            .any(|l| l.contains("Relation t") && l.contains("> 1")),
        "{text}"
    );
    assert!(
        text.lines()
            .any(|l| l.contains("Filter") && l.contains("> CAST(0")
                || l.contains("Filter") && l.contains("> 0")),
        "{text}"
    );
}

/// The line of plan `text` that reads relation `t`.
fn scan_of_t(text: &str) -> &str {
    text.lines()
        .find(|l| l.contains("Relation t"))
        .expect("scan")
}

#[test]
fn column_pruning_reads_only_what_the_query_uses() {
    let text = after(
        "SELECT a FROM t WHERE c > 1.0",
        &[&PushDownPredicates, &ColumnPruning],
    );
    let scan = scan_of_t(&text);
    assert!(scan.contains("[a#") && !scan.contains("b#"), "{text}");
}

#[test]
fn column_pruning_reads_a_reordering_projection_in_its_order() {
    let text = after(
        "SELECT c, a FROM t",
        &[&EliminateSubqueryAliases, &ColumnPruning],
    );
    assert!(!text.contains("Project"), "{text}");
    let scan = scan_of_t(&text);
    let (c, a) = (scan.find("c#").expect("c"), scan.find("a#").expect("a"));
    assert!(c < a && !scan.contains("b#"), "{text}");
    // Renaming is more than a reorder: the projection stays.
    let renamed = after(
        "SELECT c AS x, a FROM t",
        &[&EliminateSubqueryAliases, &ColumnPruning],
    );
    assert!(renamed.contains("Project"), "{renamed}");
}

#[test]
fn column_pruning_reads_below_a_window_only_what_is_used() {
    // The window buffers only the columns read above it and by its calls; a call nothing
    // reads is dropped, and with it the Window node.
    let text = after(
        "SELECT a, rn FROM (SELECT a, b, c, row_number() OVER (PARTITION BY a ORDER BY b) AS rn, sum(c) OVER (PARTITION BY a) AS s FROM t)",
        &[&EliminateSubqueryAliases, &ColumnPruning],
    );
    let scan = scan_of_t(&text);
    assert!(
        scan.contains("a#") && scan.contains("b#") && !scan.contains("c#"),
        "{text}"
    );
    assert_eq!(text.matches("Window").count(), 1, "{text}");
    let none = after(
        "SELECT a FROM (SELECT a, row_number() OVER (ORDER BY b) AS rn FROM t)",
        &[&EliminateSubqueryAliases, &ColumnPruning],
    );
    assert!(!none.contains("Window"), "{none}");
}

#[test]
fn reorder_join_avoids_cross_products() {
    let sql = "SELECT * FROM t, u, v WHERE t.a = v.a AND v.a = u.a";
    let text = after(
        sql,
        &[
            &EliminateSubqueryAliases,
            &PushDownPredicates,
            &ReorderJoin,
            &PushDownPredicates,
        ],
    );
    for l in text.lines().filter(|l| l.contains("Join ")) {
        assert!(l.contains(" = "), "a join without a condition: {l}\n{text}");
    }
}

/// The rules that place joins, and the pushdown that follows them.
const REORDER_JOIN: &[&dyn OptimizerRule] = &[
    &EliminateSubqueryAliases,
    &PushDownPredicates,
    &ReorderJoin,
    &PushDownPredicates,
];

/// The line of `text` showing the relation `name`, and its position.
fn relation(text: &str, name: &str) -> (usize, String) {
    text.lines()
        .enumerate()
        .find(|(_, l)| l.contains(&format!("Relation {name}")))
        .map(|(i, l)| (i, l.to_string()))
        .unwrap_or_else(|| panic!("no {name}:\n{text}"))
}

#[test]
fn reorder_join_joins_a_filtered_dimension_to_its_one_neighbour_first() {
    // v (filtered) joins only u, and u is not the largest input (t is): u joins v first.
    let sql = "SELECT * FROM u, t, v WHERE u.a = t.a AND u.d = v.d AND v.d = 'p'";
    let text = after(sql, REORDER_JOIN);
    let depth = |needle: &str| {
        text.lines()
            .find(|l| l.contains("Join Inner") && l.contains(needle))
            .map(|l| l.len() - l.trim_start_matches(|c: char| !c.is_alphabetic()).len())
            .unwrap_or_else(|| panic!("no join on {needle}:\n{text}"))
    };
    assert!(depth("d#") > depth("a#"), "{text}");
    // Without a filter on v, the order is the written one: u, t, then v.
    let text = after(
        "SELECT * FROM u, t, v WHERE u.a = t.a AND u.d = v.d",
        REORDER_JOIN,
    );
    let joins: Vec<&str> = text.lines().filter(|l| l.contains("Join Inner")).collect();
    assert!(joins[0].contains("d#") && joins[1].contains("a#"), "{text}");
}

#[test]
fn reorder_join_follows_implied_equalities_past_the_largest_input() {
    // v (filtered) joins only t, the largest input, but u.a = t.a = v.a: v joins u first.
    let sql = "SELECT * FROM u, t, v WHERE u.a = t.a AND v.a = t.a AND v.d = 'p'";
    let text = after(sql, REORDER_JOIN);
    let at = |name: &str| relation(&text, name).0;
    assert!(at("u") < at("v") && at("v") < at("t"), "{text}");
    // Unfiltered, v keeps its written place after t.
    let text = after(
        "SELECT * FROM u, t, v WHERE u.a = t.a AND v.a = t.a",
        REORDER_JOIN,
    );
    let at = |name: &str| relation(&text, name).0;
    assert!(at("t") < at("v"), "{text}");
}

#[test]
fn push_extra_predicate_through_join_filters_each_side_by_what_the_condition_implies() {
    let cond = "(t.b = 'x' AND u.d = 'p') OR (t.b = 'y' AND u.d = 'q')";
    let rules: [&dyn OptimizerRule; 4] = [
        &EliminateSubqueryAliases,
        &PushDownPredicates,
        &PushExtraPredicateThroughJoin,
        &PushDownPredicates,
    ];
    let scan = |text: &str, name: &str| relation(text, name).1;
    let text = after(
        &format!("SELECT * FROM t JOIN u ON t.a = u.a AND ({cond})"),
        &rules,
    );
    assert!(scan(&text, "t").contains("= 'x' OR b#"), "{text}");
    assert!(scan(&text, "u").contains("= 'p' OR d#"), "{text}");
    // The condition itself stays with the join.
    assert!(
        text.lines()
            .any(|l| l.contains("Join Inner") && l.contains("= 'q'")),
        "{text}"
    );
    // A left join keeps every left row: only the right side is filtered.
    let text = after(
        &format!("SELECT * FROM t LEFT JOIN u ON t.a = u.a AND ({cond})"),
        &rules,
    );
    assert!(!scan(&text, "t").contains("'x'"), "{text}");
    assert!(scan(&text, "u").contains("= 'p' OR d#"), "{text}");
    // A branch that says nothing of a side leaves that side alone.
    let text = after(
        "SELECT * FROM t JOIN u ON t.a = u.a AND (t.b = 'x' OR u.d = 'p')",
        &rules,
    );
    assert!(!scan(&text, "t").contains("'x'"), "{text}");
}

#[test]
fn boolean_simplification_factors_join_keys_out_of_disjunctions() {
    let sql = "SELECT * FROM t, u WHERE (t.a = u.a AND t.b = 'x') OR (t.a = u.a AND u.d = 'p')";
    let text = after(
        sql,
        &[
            &EliminateSubqueryAliases,
            &BooleanSimplification,
            &PushDownPredicates,
        ],
    );
    assert!(
        text.lines()
            .any(|l| l.contains("Join Inner") && l.contains("a#") && l.contains(" = a#")),
        "{text}"
    );
}

#[test]
fn excluded_rules_are_skipped_and_unknown_names_refused() {
    let e = engine();
    let plan = planned(&e, "SELECT x.a FROM t x");
    let mut cfg = Config::default();
    cfg.set(EXCLUDED_RULES, "EliminateSubqueryAliases")
        .expect("set");
    let (_, applied) = optimize(&plan, &cfg).expect("optimizes");
    assert!(
        !applied.contains(&"EliminateSubqueryAliases"),
        "{applied:?}"
    );
    let mut bad = Config::default();
    bad.set(EXCLUDED_RULES, "NoSuchRule").expect("set");
    assert!(optimize(&plan, &bad).is_err());
}

#[test]
fn inner_join_keys_are_inferred_not_null_and_pushed_into_scans() {
    let sql = "SELECT * FROM t JOIN u ON t.a = u.a";
    let text = after(
        sql,
        &[
            &EliminateSubqueryAliases,
            &InferFiltersFromConstraints,
            &PushDownPredicates,
        ],
    );
    let scans: Vec<&str> = text.lines().filter(|l| l.contains("Relation")).collect();
    assert!(
        scans
            .iter()
            .all(|l| l.contains("PushedFilters: [a#") && l.contains("IS NOT NULL")),
        "{text}"
    );
    // Outer and null-safe joins keep their NULL keys.
    for sql in [
        "SELECT * FROM t LEFT JOIN u ON t.a = u.a",
        "SELECT * FROM t JOIN u ON t.a <=> u.a",
    ] {
        let text = after(
            sql,
            &[&EliminateSubqueryAliases, &InferFiltersFromConstraints],
        );
        assert!(!text.contains("IS NOT NULL"), "{sql}: {text}");
    }
}

#[test]
fn eliminate_outer_join_under_null_rejecting_filters() {
    let cases = [
        (
            "SELECT * FROM t LEFT JOIN u ON t.a = u.a WHERE u.d = 'p'",
            "Join Inner",
        ),
        (
            "SELECT * FROM t RIGHT JOIN u ON t.a = u.a WHERE t.c > 1.0",
            "Join Inner",
        ),
        (
            "SELECT * FROM t FULL JOIN u ON t.a = u.a WHERE t.b LIKE 'x%'",
            "Join LeftOuter",
        ),
        (
            "SELECT * FROM t FULL JOIN u ON t.a = u.a WHERE u.a IS NOT NULL",
            "Join RightOuter",
        ),
        // Kept: the filter can be true on padded rows, or reads the preserved side only.
        (
            "SELECT * FROM t LEFT JOIN u ON t.a = u.a WHERE u.d IS NULL",
            "Join LeftOuter",
        ),
        (
            "SELECT * FROM t LEFT JOIN u ON t.a = u.a WHERE coalesce(u.d, 'p') = 'p'",
            "Join LeftOuter",
        ),
        (
            "SELECT * FROM t LEFT JOIN u ON t.a = u.a WHERE t.b = 'x' OR u.d = 'p'",
            "Join LeftOuter",
        ),
        (
            "SELECT * FROM t LEFT JOIN u ON t.a = u.a WHERE t.b = 'x'",
            "Join LeftOuter",
        ),
    ];
    for (sql, want) in cases {
        let text = after(sql, &[&EliminateSubqueryAliases, &EliminateOuterJoin]);
        assert!(text.contains(want), "{sql}: {text}");
    }
}

#[test]
fn limit_push_down_copies_the_limit_into_union_inputs_and_the_preserved_side() {
    let text = after(
        "SELECT a FROM t UNION ALL SELECT a FROM u LIMIT 2 OFFSET 1",
        &[&LimitPushDown],
    );
    // The top limit stays; each input stops after offset + limit = 3 rows.
    assert_eq!(text.matches("GlobalLimit 3\n").count(), 2, "{text}");
    assert!(text.starts_with("GlobalLimit 2, offset 1"), "{text}");

    let text = after(
        "SELECT * FROM t LEFT JOIN u ON t.a = u.a LIMIT 2",
        &[&EliminateSubqueryAliases, &LimitPushDown],
    );
    let join = text.find("Join LeftOuter").expect("join");
    let pushed = text.rfind("GlobalLimit 2").expect("pushed");
    assert!(pushed > join, "the left side is limited: {text}");
    let right = text.find("Relation u").expect("u");
    assert!(pushed < right, "the right side is not: {text}");

    // An inner join with a condition can drop rows: nothing moves.
    let text = after(
        "SELECT * FROM t JOIN u ON t.a = u.a LIMIT 2",
        &[&EliminateSubqueryAliases, &LimitPushDown],
    );
    assert_eq!(text.matches("GlobalLimit").count(), 1, "{text}");
}
