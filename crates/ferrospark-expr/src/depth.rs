//! How deeply an expression nests, measured without recursion, and the limit ferrospark puts
//! on it.
//!
//! Binding, evaluating, printing, cloning and dropping an [`Expr`] all recurse once per level,
//! so a tree built from a long operator chain (`a + 1 + 1 + ...`, 50,000 terms) would overflow
//! the stack and kill the process. Spark has no explicit limit: its JVM stack overflows, which
//! it reports as `FAILED_TO_PARSE_TOO_COMPLEX` for SQL text. ferrospark refuses such trees where
//! they are made, with an [`FerroError::Analysis`] that says how to restructure them:
//! [`check_expr_depth`] for trees built in code, [`parse_expr_checked`] for SQL text, which
//! `sqlparser` turns into a left-deep tree of any depth without hitting its recursion limit
//! (operator chains are parsed in a loop).

use crate::dialect::SparkDialect;
use sqlparser::tokenizer::{Token, Tokenizer};

use ferrospark_common::{FerroError, Result};

use crate::expr::Expr;

/// The deepest expression ferrospark accepts, in levels from the root to the deepest leaf.
///
/// Every recursive pass over a tree this deep fits comfortably in a 2 MB thread stack (the
/// default of the scan's worker threads), while real queries stay far below it: a conjunction of
/// a thousand predicates built left to right is about a thousand levels.
pub const MAX_EXPR_DEPTH: usize = 1000;

/// Texts whose nesting bound is at most this are parsed on the calling thread.
const INLINE_BOUND: usize = 200;
/// Stack given to a parse per level of the text's nesting bound: the expression parser was
/// measured at under 1 KB per level of an operator chain (two tokens) in release builds and
/// 16 KB in debug builds; the SQL planner, which makes several recursive passes, gets 4x that.
const STACK_PER_LEVEL: usize = if cfg!(debug_assertions) { 32768 } else { 4096 };
/// Largest stack a parse may ask for (address space only: pages are touched as used).
const MAX_PARSE_STACK: usize = 1 << 30;
/// Texts that might nest deeper than this are refused without parsing.
const MAX_BOUND: usize = MAX_PARSE_STACK / STACK_PER_LEVEL;

/// Appends the direct children of `e` to `out`.
fn push_children<'a>(e: &'a Expr, out: &mut Vec<(&'a Expr, usize)>, depth: usize) {
    let d = depth + 1;
    match e {
        Expr::Column(_) | Expr::Literal(_) | Expr::TypedString { .. } | Expr::LambdaVariable(_) => {
        }
        Expr::Lambda { body, .. } => out.push((body, d)),
        Expr::Field(c, _)
        | Expr::Not(c)
        | Expr::Negative(c)
        | Expr::IsNull(c)
        | Expr::IsNotNull(c)
        | Expr::Cast { expr: c, .. }
        | Expr::TryCast { expr: c, .. }
        | Expr::Alias { expr: c, .. }
        | Expr::Written { expr: c, .. }
        | Expr::SortKey { expr: c, .. } => out.push((c, d)),
        Expr::Window {
            func,
            partition_by,
            order_by,
            ..
        } => {
            out.push((func, d));
            out.extend(partition_by.iter().map(|c| (c, d)));
            out.extend(order_by.iter().map(|c| (c, d)));
        }
        Expr::Case {
            branches,
            otherwise,
        } => {
            for (c, v) in branches {
                out.push((c, d));
                out.push((v, d));
            }
            if let Some(o) = otherwise {
                out.push((o, d));
            }
        }
        Expr::Binary { left, right, .. } => {
            out.push((left, d));
            out.push((right, d));
        }
        Expr::InList { expr, list, .. } => {
            out.push((expr, d));
            out.extend(list.iter().map(|c| (c, d)));
        }
        Expr::Between {
            expr, low, high, ..
        } => {
            out.push((expr, d));
            out.push((low, d));
            out.push((high, d));
        }
        Expr::Like { expr, pattern, .. } | Expr::StringMatch { expr, pattern, .. } => {
            out.push((expr, d));
            out.push((pattern, d));
        }
        Expr::Function { args, .. } | Expr::Aggregate { args, .. } | Expr::Udf { args, .. } => {
            out.extend(args.iter().map(|c| (c, d)));
        }
    }
}

/// The depth of `expr` (1 for a leaf), or `None` as soon as it is known to exceed `limit`.
fn depth_up_to(expr: &Expr, limit: usize) -> Option<usize> {
    let mut stack = vec![(expr, 1usize)];
    let mut deepest = 0;
    while let Some((e, d)) = stack.pop() {
        if d > limit {
            return None;
        }
        deepest = deepest.max(d);
        push_children(e, &mut stack, d);
    }
    Some(deepest)
}

/// The depth of `expr`: 1 for a leaf, one more per level above it. Iterative, so it measures
/// trees of any depth.
pub fn expr_depth(expr: &Expr) -> usize {
    depth_up_to(expr, usize::MAX).unwrap_or(usize::MAX)
}

/// The error for an expression nesting deeper than [`MAX_EXPR_DEPTH`]; `what` says how deep,
/// as in "it nests {what} ferrospark's limit" ("deeper than").
pub fn too_deep_error(what: &str) -> FerroError {
    FerroError::Analysis(format!(
        "[FAILED_TO_PARSE_TOO_COMPLEX] The expression is too complex: it nests {what} \
         ferrospark's limit of {MAX_EXPR_DEPTH} levels (each operator of a chain such as \
         a + b + c + ... adds a level). To mitigate this, restructure it: combine many terms \
         pairwise into a balanced tree (reduce the list in halves), use isin(...) / IN (...) \
         instead of a chain of OR-ed equalities, or compute the parts in separate \
         select()/withColumn() steps."
    ))
}

/// `Ok` when `expr` nests at most [`MAX_EXPR_DEPTH`] levels, else the
/// `FAILED_TO_PARSE_TOO_COMPLEX` analysis error. Stops walking as soon as the limit is passed.
pub fn check_expr_depth(expr: &Expr) -> Result<()> {
    match depth_up_to(expr, MAX_EXPR_DEPTH) {
        Some(_) => Ok(()),
        None => Err(too_deep_error("deeper than")),
    }
}

/// An upper bound of how deeply the expression parsed from `text` can nest, from its tokens
/// alone: within each parenthesised group, each comma-separated part nests at most one level
/// per token it holds directly, plus the deepest group inside it. `None` when the text does
/// not tokenize (the parser then reports the error).
pub fn text_depth_bound(text: &str) -> Option<usize> {
    let tokens = Tokenizer::new(&SparkDialect {}, text).tokenize().ok()?;
    // Per open group: (direct tokens of the current part, deepest group in the current part,
    // deepest finished part).
    let mut groups: Vec<(usize, usize, usize)> = vec![(0, 0, 0)];
    let part = |g: &(usize, usize, usize)| g.0 + g.1;
    for t in &tokens {
        match t {
            Token::Whitespace(_) => {}
            Token::LParen | Token::LBracket | Token::LBrace => {
                if let Some(g) = groups.last_mut() {
                    g.0 += 1;
                }
                groups.push((0, 0, 0));
            }
            Token::RParen | Token::RBracket | Token::RBrace if groups.len() > 1 => {
                let g = groups.pop().unwrap_or_default();
                let inner = part(&g).max(g.2) + 1;
                if let Some(parent) = groups.last_mut() {
                    parent.0 += 1;
                    parent.1 = parent.1.max(inner);
                }
            }
            Token::Comma => {
                if let Some(g) = groups.last_mut() {
                    g.2 = g.2.max(part(g));
                    g.0 = 0;
                    g.1 = 0;
                }
            }
            _ => {
                if let Some(g) = groups.last_mut() {
                    g.0 += 1;
                }
            }
        }
    }
    // Unclosed groups (a syntax error the parser will report) still count.
    let mut bound = 0;
    while let Some(g) = groups.pop() {
        bound = part(&g).max(g.2).max(bound) + 1;
        if let Some(parent) = groups.last_mut() {
            parent.1 = parent.1.max(bound);
            bound = 0;
        }
    }
    Some(bound)
}

/// [`crate::parse_expr`] that cannot overflow the stack: texts that might nest deeply are
/// parsed on a thread whose stack fits their nesting bound ([`with_stack_for_text`]), and a
/// result deeper than [`MAX_EXPR_DEPTH`] is refused (and dropped on that thread) with the
/// `FAILED_TO_PARSE_TOO_COMPLEX` error.
pub fn parse_expr_checked(text: &str) -> Result<Expr> {
    with_stack_for_text(text, || {
        let e = crate::parse_expr(text).map_err(|e| match &e {
            FerroError::Analysis(m) if m.contains("recursion limit exceeded") => {
                too_deep_error("deeper than")
            }
            _ => e,
        })?;
        check_expr_depth(&e)?;
        Ok(e)
    })
}

/// Runs `f`, which parses or plans `text` recursively, where the stack is sure to be deep
/// enough: on the calling thread when the text cannot nest more than a couple of hundred
/// levels, else on a thread whose stack fits the text's nesting bound (address space only:
/// pages are touched as used). `f` should check the depth of what it builds and drop a tree
/// that is too deep before returning, so that only trees within [`MAX_EXPR_DEPTH`] leave that
/// thread. Texts whose bound passes a million-odd levels are refused without running `f`.
pub fn with_stack_for_text<T, F>(text: &str, f: F) -> Result<T>
where
    T: Send,
    F: FnOnce() -> Result<T> + Send,
{
    let bound = text_depth_bound(text).unwrap_or(0);
    if bound <= INLINE_BOUND {
        return f();
    }
    if bound > MAX_BOUND {
        return Err(too_deep_error(&format!(
            "up to {bound} levels (counting its tokens), past"
        )));
    }
    let stack = 16 * 1024 * 1024 + bound * STACK_PER_LEVEL;
    std::thread::scope(|s| {
        let handle = std::thread::Builder::new()
            .name("ferrospark-parse".into())
            .stack_size(stack)
            .spawn_scoped(s, f)
            .map_err(|e| {
                FerroError::Internal(format!(
                    "cannot start a thread to parse a deeply nested text: {e}"
                ))
            })?;
        handle.join().unwrap_or_else(|p| {
            let msg = ferrospark_common::workers::panic_message(&p);
            Err(FerroError::Internal(format!("the parser panicked: {msg}")))
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chain(n: usize) -> String {
        let mut s = String::from("a");
        for _ in 0..n {
            s.push_str(" + 1");
        }
        s
    }

    #[test]
    fn depth_counts_levels() {
        let e = crate::parse_expr("a + 1").expect("parses");
        assert_eq!(expr_depth(&e), 2);
        let e = crate::parse_expr("f(a, g(b, -c)) IN (1, 2)").expect("parses");
        assert_eq!(expr_depth(&e), 5);
        assert_eq!(expr_depth(&Expr::col("x")), 1);
    }

    #[test]
    fn the_bound_is_above_the_depth() {
        for text in [
            "a + 1",
            "a IN (1, 2, 3, 4, 5, 6)",
            "f(a, g(b, -c)) IN (1, 2)",
            "((((a))))",
            "CAST(a AS INT) BETWEEN 1 AND (2 * b)",
            "NOT (a IS NULL) AND b LIKE 'x%'",
        ] {
            let e = crate::parse_expr(text).expect("parses");
            let bound = text_depth_bound(text).expect("tokenizes");
            assert!(
                bound >= expr_depth(&e),
                "{text}: {bound} < {}",
                expr_depth(&e)
            );
        }
        // A long list is wide, not deep.
        let list = (0..10_000).map(|i| i.to_string()).collect::<Vec<_>>();
        let text = format!("a IN ({})", list.join(", "));
        assert!(text_depth_bound(&text).expect("tokenizes") < 10);
        assert!(parse_expr_checked(&text).is_ok());
    }

    #[test]
    fn a_chain_at_the_limit_parses_and_one_past_it_does_not() {
        let e = parse_expr_checked(&chain(MAX_EXPR_DEPTH - 1)).expect("at the limit");
        assert_eq!(expr_depth(&e), MAX_EXPR_DEPTH);
        let err = parse_expr_checked(&chain(MAX_EXPR_DEPTH)).expect_err("past the limit");
        assert!(matches!(err, FerroError::Analysis(_)), "{err}");
        assert!(err.to_string().contains("limit of 1000 levels"), "{err}");
    }

    #[test]
    fn deep_text_is_an_error_not_a_crash() {
        // Parsed on a thread with a normal 2 MB stack, as a scan's worker thread has.
        let out = std::thread::Builder::new()
            .stack_size(2 * 1024 * 1024)
            .spawn(|| {
                let chained = parse_expr_checked(&chain(50_000)).map(|_| ());
                let nested = format!("{}a{}", "(".repeat(50_000), ")".repeat(50_000));
                let nested = parse_expr_checked(&nested).map(|_| ());
                let negated = format!("{}a", "- ".repeat(50_000));
                let negated = parse_expr_checked(&negated).map(|_| ());
                (chained, nested, negated)
            })
            .expect("spawns")
            .join()
            .expect("no overflow");
        for r in [out.0, out.1, out.2] {
            let err = r.expect_err("too deep").to_string();
            assert!(
                err.starts_with("[FAILED_TO_PARSE_TOO_COMPLEX]"),
                "{}",
                &err[..err.len().min(300)]
            );
        }
    }

    #[test]
    fn check_stops_early_on_deep_trees() {
        let mut e = Expr::col("a");
        for _ in 0..MAX_EXPR_DEPTH - 1 {
            e = Expr::Not(Box::new(e));
        }
        assert!(check_expr_depth(&e).is_ok());
        let e = Expr::Negative(Box::new(e));
        assert!(check_expr_depth(&e).is_err());
        assert_eq!(expr_depth(&e), MAX_EXPR_DEPTH + 1);
    }
}
