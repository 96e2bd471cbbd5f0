//! Aggregates computed from each group's collected values: `mode` and `listagg` /
//! `string_agg`, with their DISTINCT and `WITHIN GROUP (ORDER BY ...)` forms.
//!
//! Each is planned as `collect_list` of its input (so every aggregation path carries it: hash,
//! sort, spilling, windows) and finished by a scalar function over the list
//! ([`MODE_FN`], [`LISTAGG_FN`], evaluated in `functions::collected`). The call keeps the
//! name Spark gives it:
//!
//! ```text
//!  listagg(x, ',') WITHIN GROUP (ORDER BY y DESC)
//!    = __listagg(collect_list(named_struct('k', y, 'v', x)), ',', 2, true, false)
//!      named `listagg(x, ,) WITHIN GROUP (ORDER BY y DESC NULLS LAST)`
//!  mode(x)  = __mode(collect_list(x), false)   named `mode(x)`
//! ```

use ferrospark_common::{FerroError, Result};

use crate::expr::{Expr, Literal};

/// The scalar function finishing `mode`: `__mode(list, highest_on_tie)`.
pub const MODE_FN: &str = "__mode";
/// The scalar function finishing `listagg`: `__listagg(list, delimiter, order, descending,
/// nulls_first)`, `order` being [`LISTAGG_AS_COLLECTED`] or [`LISTAGG_BY_KEY`].
pub const LISTAGG_FN: &str = "__listagg";
/// The values joined in the order they were collected.
pub const LISTAGG_AS_COLLECTED: i64 = 0;
/// The list holds `struct<k, v>`: the values `v` sorted by the keys `k` (stable).
pub const LISTAGG_BY_KEY: i64 = 2;

/// A `WITHIN GROUP (ORDER BY key ...)` ordering.
#[derive(Debug, Clone, PartialEq)]
pub struct WithinGroup {
    /// the ordering key
    pub key: Expr,
    /// `DESC`
    pub descending: bool,
    /// `NULLS FIRST` (written, else the direction's default)
    pub nulls_first: Option<bool>,
}

/// Whether `name` is computed here.
pub fn is_collected(name: &str) -> bool {
    matches!(
        name,
        "mode"
            | "listagg"
            | "string_agg"
            | "listagg_distinct"
            | "string_agg_distinct"
            | "collect_union"
    )
}

fn collect_list(arg: Expr) -> Expr {
    Expr::Aggregate {
        name: "collect_list".into(),
        args: vec![arg],
        distinct: false,
        ignore_nulls: false,
    }
}

fn call(name: &str, args: Vec<Expr>) -> Expr {
    Expr::Function {
        name: name.into(),
        args,
    }
}

fn boolean(v: bool) -> Expr {
    Expr::Literal(Literal::boolean(v))
}

fn analysis(class: &str, what: String) -> FerroError {
    FerroError::Analysis(format!("[{class}] {what}"))
}

/// The planned form of `name(args)` (`distinct`, `order`: its DISTINCT and WITHIN GROUP), if
/// `name` is one of these aggregates.
pub fn rewrite(
    name: &str,
    args: Vec<Expr>,
    distinct: bool,
    order: Option<WithinGroup>,
) -> Result<Option<Expr>> {
    let (name, distinct) = match name {
        "listagg_distinct" => ("listagg", true),
        "string_agg_distinct" => ("string_agg", true),
        other => (other, distinct),
    };
    match name {
        "collect_union" => collect_union(args, distinct, order).map(Some),
        "mode" => mode(args, distinct, order).map(Some),
        "listagg" | "string_agg" => listagg(name, args, distinct, order).map(Some),
        _ => Ok(None),
    }
}

/// `collect_union(arrays)`: the distinct non-NULL elements of a group's arrays, in the order
/// they first appear (Spark's order is its hash set's).
fn collect_union(args: Vec<Expr>, distinct: bool, order: Option<WithinGroup>) -> Result<Expr> {
    let [x] = args.as_slice() else {
        return Err(analysis(
            "WRONG_NUM_ARGS.WITHOUT_SUGGESTION",
            format!(
                "The `collect_union` requires 1 parameters but the actual number is {}",
                args.len()
            ),
        ));
    };
    if order.is_some() {
        return Err(analysis(
            "INVALID_SQL_SYNTAX.FUNCTION_WITH_UNSUPPORTED_SYNTAX",
            "The function `collect_union` does not support WITHIN GROUP".into(),
        ));
    }
    let d = if distinct { "DISTINCT " } else { "" };
    Ok(Expr::Written {
        expr: Box::new(call(
            "array_distinct",
            vec![call(
                "array_compact",
                vec![call("flatten", vec![collect_list(x.clone())])],
            )],
        )),
        name: format!("collect_union({d}{})", x.spark_name()),
    })
}

fn mode(args: Vec<Expr>, distinct: bool, order: Option<WithinGroup>) -> Result<Expr> {
    if distinct {
        return Err(analysis(
            "INVALID_WITHIN_GROUP_EXPRESSION.DISTINCT_UNSUPPORTED",
            "The function `mode` does not support DISTINCT".into(),
        ));
    }
    let (value, highest, name) = match (order, args.as_slice()) {
        (Some(o), []) => {
            let shown = o.key.spark_name();
            // Spark prints the direction it sorts the candidates in, the opposite of the one
            // written.
            let name = if o.descending {
                format!("mode() WITHIN GROUP (ORDER BY {shown})")
            } else {
                format!("mode() WITHIN GROUP (ORDER BY {shown} DESC)")
            };
            (o.key, o.descending, name)
        }
        (Some(_), _) => {
            return Err(analysis(
                "WRONG_NUM_ARGS.WITHOUT_SUGGESTION",
                "The `mode` with WITHIN GROUP requires 0 parameters".into(),
            ))
        }
        (None, [x]) => (x.clone(), false, format!("mode({})", x.spark_name())),
        (None, [x, d]) => {
            let deterministic = match d.without_written() {
                Expr::Literal(l) if l.data_type() == &arrow_schema::DataType::Boolean => {
                    l.to_string() == "true"
                }
                _ => {
                    return Err(analysis(
                        "DATATYPE_MISMATCH.UNEXPECTED_INPUT_TYPE",
                        format!(
                            "the second parameter of `mode` must be a BOOLEAN constant, got {d}"
                        ),
                    ))
                }
            };
            let name = if deterministic {
                format!("mode() WITHIN GROUP (ORDER BY {} DESC)", x.spark_name())
            } else {
                format!("mode({})", x.spark_name())
            };
            (x.clone(), false, name)
        }
        (None, _) => {
            return Err(analysis(
                "WRONG_NUM_ARGS.WITHOUT_SUGGESTION",
                format!(
                    "The `mode` requires 1 or 2 parameters but the actual number is {}",
                    args.len()
                ),
            ))
        }
    };
    Ok(Expr::Written {
        expr: Box::new(call(MODE_FN, vec![collect_list(value), boolean(highest)])),
        name,
    })
}

fn listagg(
    name: &str,
    args: Vec<Expr>,
    distinct: bool,
    order: Option<WithinGroup>,
) -> Result<Expr> {
    let (value, delimiter) = match args.as_slice() {
        [x] => (x.clone(), None),
        [x, d] => (x.clone(), Some(d.clone())),
        _ => {
            return Err(analysis(
                "WRONG_NUM_ARGS.WITHOUT_SUGGESTION",
                format!(
                    "The `{name}` requires 1 or 2 parameters but the actual number is {}",
                    args.len()
                ),
            ))
        }
    };
    if let Some(d) = &delimiter {
        let mut reads_column = false;
        d.visit(&mut |e| reads_column |= matches!(e, Expr::Column(_)));
        if reads_column {
            return Err(analysis(
                "DATATYPE_MISMATCH.NON_FOLDABLE_INPUT",
                format!(
                    "Cannot resolve \"{name}({value}, {d})\" due to data type mismatch: the input `delimiter` should be a foldable \"STRING\" expression; however, got \"{d}\"."
                ),
            ));
        }
    }
    let shown_delimiter = delimiter
        .as_ref()
        .map_or_else(|| "NULL".to_string(), Expr::spark_name);
    let d = if distinct { "DISTINCT " } else { "" };
    let delimiter =
        delimiter.unwrap_or(Expr::Literal(Literal::null(&arrow_schema::DataType::Null)));
    let (list, how, descending, nulls_first, written) = match order {
        None => {
            let list = if distinct {
                call("array_distinct", vec![collect_list(value.clone())])
            } else {
                collect_list(value.clone())
            };
            let written = format!("{name}({d}{}, {shown_delimiter})", value.spark_name());
            (list, LISTAGG_AS_COLLECTED, false, true, written)
        }
        Some(o) => {
            let nulls_first = o.nulls_first.unwrap_or(!o.descending);
            let written = format!(
                "listagg({d}{}, {shown_delimiter}) WITHIN GROUP (ORDER BY {} {} NULLS {})",
                value.spark_name(),
                o.key.spark_name(),
                if o.descending { "DESC" } else { "ASC" },
                if nulls_first { "FIRST" } else { "LAST" }
            );
            if distinct && o.key.without_written() != value.without_written() {
                return Err(analysis(
                    "INVALID_WITHIN_GROUP_EXPRESSION.MISMATCH_WITH_DISTINCT_INPUT",
                    format!(
                        "Invalid function `listagg` with WITHIN GROUP. The function is invoked with DISTINCT and WITHIN GROUP but expressions \"{}\" and \"{}\" do not match. The WITHIN GROUP ordering expression must be picked from the function inputs.",
                        value.spark_name(),
                        o.key.spark_name()
                    ),
                ));
            }
            let entry = call(
                "named_struct",
                vec![
                    Expr::Literal(Literal::string("k")),
                    o.key,
                    Expr::Literal(Literal::string("v")),
                    value,
                ],
            );
            let list = if distinct {
                call("array_distinct", vec![collect_list(entry)])
            } else {
                collect_list(entry)
            };
            (list, LISTAGG_BY_KEY, o.descending, nulls_first, written)
        }
    };
    Ok(Expr::Written {
        expr: Box::new(call(
            LISTAGG_FN,
            vec![
                list,
                delimiter,
                Expr::Literal(Literal::bigint(how)),
                boolean(descending),
                boolean(nulls_first),
            ],
        )),
        name: written,
    })
}

/// `func OVER (...)`, with a collected aggregate's window moved onto the `collect_list`
/// inside it (the finishing steps then run over the window's list).
pub fn over(
    func: Expr,
    partition_by: Vec<Expr>,
    order_by: Vec<Expr>,
    frame: Option<Box<crate::expr::FrameSpec>>,
) -> Expr {
    let window = Expr::Window {
        func: Box::new(func),
        partition_by,
        order_by,
        frame,
    };
    let Expr::Window {
        func,
        partition_by,
        order_by,
        frame,
    } = &window
    else {
        return window;
    };
    let Expr::Written { expr, .. } = func.as_ref() else {
        return window;
    };
    if matches!(expr.as_ref(), Expr::Aggregate { .. }) {
        return window;
    }
    let mut collects = false;
    expr.visit(&mut |e| {
        collects |= matches!(e, Expr::Aggregate { name, .. } if name == "collect_list");
    });
    if !collects {
        return window;
    }
    let written = window.spark_name();
    let moved = crate::transform::transform_up(expr, &mut |e| {
        Ok(match e {
            Expr::Aggregate { .. } => Expr::Window {
                func: Box::new(e),
                partition_by: partition_by.clone(),
                order_by: order_by.clone(),
                frame: frame.clone(),
            },
            other => other,
        })
    });
    match moved {
        Ok(moved) => Expr::Written {
            expr: Box::new(moved),
            name: written,
        },
        Err(_) => window,
    }
}
