//! Bound expressions: columns resolved to indices, types checked, Spark's implicit casts made
//! explicit. Built by [`crate::bind`], evaluated by [`crate::eval`].

use std::fmt;

use arrow_schema::DataType;

use crate::expr::{BinaryOp, Literal, StringMatch};

pub use crate::functions::ScalarFunction;

/// What a cast does with a value that does not convert.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CastMode {
    /// `spark.sql.ansi.enabled=true`: raise `CAST_INVALID_INPUT` / `CAST_OVERFLOW`.
    Ansi,
    /// `spark.sql.ansi.enabled=false`: integers wrap, doubles saturate, malformed text is
    /// NULL.
    Legacy,
    /// `try_cast`: NULL.
    Try,
}

/// How the columns holding a lambda's parameters are named while its body runs (no column
/// of a table can be named so).
pub const LAMBDA_PREFIX: &str = "\u{3bb}:";

/// A typed, resolved expression ready to run over batches of one schema.
#[derive(Debug, Clone, PartialEq)]
pub enum PhysicalExpr {
    /// Column `index` of the input batch.
    Column {
        /// position in the input schema
        index: usize,
        /// its name, for messages
        name: String,
        /// its type
        data_type: DataType,
    },
    /// Child `index` of a struct value.
    Field {
        /// the struct
        input: Box<PhysicalExpr>,
        /// position among the struct's fields
        index: usize,
        /// field name
        name: String,
        /// field type
        data_type: DataType,
    },
    /// A constant.
    Literal(Literal),
    /// Three-valued NOT.
    Not(Box<PhysicalExpr>),
    /// Checked negation.
    Negative(Box<PhysicalExpr>),
    /// Spark's `TryEval` (`try_add`, `try_to_date`, ...): the child's value, NULL on the rows
    /// where computing it raises an ANSI error.
    Try(Box<PhysicalExpr>),
    /// IS NULL
    IsNull(Box<PhysicalExpr>),
    /// IS NOT NULL
    IsNotNull(Box<PhysicalExpr>),
    /// Three-valued AND.
    And(Box<PhysicalExpr>, Box<PhysicalExpr>),
    /// Three-valued OR.
    Or(Box<PhysicalExpr>, Box<PhysicalExpr>),
    /// A comparison of two operands of the same type.
    Compare {
        /// `= != < <= > >= <=>`
        op: BinaryOp,
        /// left
        left: Box<PhysicalExpr>,
        /// right
        right: Box<PhysicalExpr>,
    },
    /// Arithmetic with ANSI overflow checks; operands already cast to compatible types.
    Arithmetic {
        /// `+ - * / %`
        op: BinaryOp,
        /// left
        left: Box<PhysicalExpr>,
        /// right
        right: Box<PhysicalExpr>,
        /// result type
        data_type: DataType,
        /// ANSI: overflow and division by zero raise; otherwise integers wrap and a zero
        /// divisor gives NULL
        fail_on_error: bool,
    },
    /// `IN` over candidates of the tested value's type.
    InList {
        /// tested value
        expr: Box<PhysicalExpr>,
        /// candidates
        list: Vec<PhysicalExpr>,
        /// NOT IN
        negated: bool,
    },
    /// `IN` over a hashed set of distinct values (Spark's `InSet`): a join's runtime filter.
    InSet {
        /// tested value
        expr: Box<PhysicalExpr>,
        /// the values
        set: std::sync::Arc<crate::in_set::KeySet>,
    },
    /// LIKE / ILIKE
    Like {
        /// tested string
        expr: Box<PhysicalExpr>,
        /// pattern
        pattern: Box<PhysicalExpr>,
        /// NOT LIKE
        negated: bool,
        /// ILIKE
        case_insensitive: bool,
    },
    /// startswith / endswith / contains
    StringMatch {
        /// which test
        op: StringMatch,
        /// tested string
        expr: Box<PhysicalExpr>,
        /// fixed text
        pattern: Box<PhysicalExpr>,
    },
    /// A cast; `mode` says what a value that does not convert becomes.
    Cast {
        /// input
        expr: Box<PhysicalExpr>,
        /// target type
        to: DataType,
        /// ANSI (raise), legacy (wrap / NULL) or try (NULL)
        mode: CastMode,
    },
    /// `CASE WHEN c THEN v ... ELSE e END`: each value evaluated only on the rows that take
    /// its branch.
    Case {
        /// (condition, value) in order
        branches: Vec<(PhysicalExpr, PhysicalExpr)>,
        /// ELSE (NULL when absent)
        otherwise: Option<Box<PhysicalExpr>>,
        /// result type
        data_type: DataType,
    },
    /// A lambda, as an argument of a higher-order function: its body runs over a batch of the
    /// elements, where the columns it reads are repeated for each element of their row and
    /// each parameter is a column named [`LAMBDA_PREFIX`] + its name.
    Lambda {
        /// the parameters: column names and types
        params: Vec<(String, DataType)>,
        /// the body
        body: Box<PhysicalExpr>,
    },
    /// A lambda's parameter: the last column of the batch so named (an inner lambda's
    /// parameter shadows an outer one of the same name).
    LambdaVariable {
        /// [`LAMBDA_PREFIX`] + the parameter's name
        name: String,
        /// its type
        data_type: DataType,
    },
    /// A scalar function.
    Function {
        /// which
        func: ScalarFunction,
        /// arguments
        args: Vec<PhysicalExpr>,
        /// result type
        data_type: DataType,
    },
    /// A user-defined function over its arguments' arrays.
    Udf {
        /// the function
        udf: crate::udf::ScalarUdf,
        /// arguments
        args: Vec<PhysicalExpr>,
        /// the session time zone it runs in
        session_tz: String,
    },
}

impl PhysicalExpr {
    /// The type this expression produces.
    pub fn data_type(&self) -> DataType {
        match self {
            PhysicalExpr::Column { data_type, .. }
            | PhysicalExpr::Field { data_type, .. }
            | PhysicalExpr::Arithmetic { data_type, .. }
            | PhysicalExpr::Case { data_type, .. }
            | PhysicalExpr::Function { data_type, .. } => data_type.clone(),
            PhysicalExpr::Literal(l) => l.data_type().clone(),
            PhysicalExpr::LambdaVariable { data_type, .. } => data_type.clone(),
            PhysicalExpr::Udf { udf, .. } => udf.return_type().clone(),
            PhysicalExpr::Lambda { body, .. } => body.data_type(),
            PhysicalExpr::Negative(e) | PhysicalExpr::Try(e) => e.data_type(),
            PhysicalExpr::Cast { to, .. } => to.clone(),
            PhysicalExpr::Not(_)
            | PhysicalExpr::IsNull(_)
            | PhysicalExpr::IsNotNull(_)
            | PhysicalExpr::And(..)
            | PhysicalExpr::Or(..)
            | PhysicalExpr::Compare { .. }
            | PhysicalExpr::InList { .. }
            | PhysicalExpr::InSet { .. }
            | PhysicalExpr::Like { .. }
            | PhysicalExpr::StringMatch { .. } => DataType::Boolean,
        }
    }

    /// Indices of the input columns this expression reads.
    pub fn column_indices(&self) -> Vec<usize> {
        let mut out = Vec::new();
        self.walk(&mut |e| {
            if let PhysicalExpr::Column { index, .. } = e {
                if !out.contains(index) {
                    out.push(*index);
                }
            }
        });
        out
    }

    /// Calls `f` on every node, parents first.
    pub fn walk(&self, f: &mut impl FnMut(&PhysicalExpr)) {
        f(self);
        match self {
            PhysicalExpr::Column { .. }
            | PhysicalExpr::Literal(_)
            | PhysicalExpr::LambdaVariable { .. } => {}
            PhysicalExpr::Lambda { body: e, .. }
            | PhysicalExpr::Field { input: e, .. }
            | PhysicalExpr::Not(e)
            | PhysicalExpr::Negative(e)
            | PhysicalExpr::Try(e)
            | PhysicalExpr::IsNull(e)
            | PhysicalExpr::IsNotNull(e)
            | PhysicalExpr::InSet { expr: e, .. }
            | PhysicalExpr::Cast { expr: e, .. } => e.walk(f),
            PhysicalExpr::And(l, r)
            | PhysicalExpr::Or(l, r)
            | PhysicalExpr::Compare {
                left: l, right: r, ..
            }
            | PhysicalExpr::Arithmetic {
                left: l, right: r, ..
            }
            | PhysicalExpr::Like {
                expr: l,
                pattern: r,
                ..
            }
            | PhysicalExpr::StringMatch {
                expr: l,
                pattern: r,
                ..
            } => {
                l.walk(f);
                r.walk(f);
            }
            PhysicalExpr::InList { expr, list, .. } => {
                expr.walk(f);
                list.iter().for_each(|e| e.walk(f));
            }
            PhysicalExpr::Function { args, .. } | PhysicalExpr::Udf { args, .. } => {
                args.iter().for_each(|e| e.walk(f))
            }
            PhysicalExpr::Case {
                branches,
                otherwise,
                ..
            } => {
                for (c, v) in branches {
                    c.walk(f);
                    v.walk(f);
                }
                if let Some(o) = otherwise {
                    o.walk(f);
                }
            }
        }
    }

    /// Rewrites column indices through `map` (old index -> new index), for running the same
    /// predicate over a projected batch.
    pub fn remap_columns(&self, map: &dyn Fn(usize) -> usize) -> PhysicalExpr {
        self.transform_columns(&|index, name, data_type| PhysicalExpr::Column {
            index: map(index),
            name: name.to_string(),
            data_type: data_type.clone(),
        })
    }

    /// Replaces every column reference by `f(index, name, type)` (another column, or a
    /// literal such as a file's partition value).
    pub fn transform_columns(
        &self,
        f: &dyn Fn(usize, &str, &DataType) -> PhysicalExpr,
    ) -> PhysicalExpr {
        self.transform(&|e| match e {
            PhysicalExpr::Column {
                index,
                name,
                data_type,
            } => Some(f(*index, name, data_type)),
            _ => None,
        })
    }

    /// Rebuilds the tree top-down: where `f` returns a replacement for a node, the node (and
    /// everything under it) is replaced; elsewhere the children are transformed.
    pub fn transform(&self, f: &dyn Fn(&PhysicalExpr) -> Option<PhysicalExpr>) -> PhysicalExpr {
        if let Some(replaced) = f(self) {
            return replaced;
        }
        let r = |e: &PhysicalExpr| Box::new(e.transform(f));
        match self {
            PhysicalExpr::Column { .. } | PhysicalExpr::LambdaVariable { .. } => self.clone(),
            PhysicalExpr::Literal(l) => PhysicalExpr::Literal(l.clone()),
            PhysicalExpr::Lambda { params, body } => PhysicalExpr::Lambda {
                params: params.clone(),
                body: r(body),
            },
            PhysicalExpr::Field {
                input,
                index,
                name,
                data_type,
            } => PhysicalExpr::Field {
                input: r(input),
                index: *index,
                name: name.clone(),
                data_type: data_type.clone(),
            },
            PhysicalExpr::Not(e) => PhysicalExpr::Not(r(e)),
            PhysicalExpr::Negative(e) => PhysicalExpr::Negative(r(e)),
            PhysicalExpr::Try(e) => PhysicalExpr::Try(r(e)),
            PhysicalExpr::IsNull(e) => PhysicalExpr::IsNull(r(e)),
            PhysicalExpr::IsNotNull(e) => PhysicalExpr::IsNotNull(r(e)),
            PhysicalExpr::And(a, b) => PhysicalExpr::And(r(a), r(b)),
            PhysicalExpr::Or(a, b) => PhysicalExpr::Or(r(a), r(b)),
            PhysicalExpr::Compare { op, left, right } => PhysicalExpr::Compare {
                op: *op,
                left: r(left),
                right: r(right),
            },
            PhysicalExpr::Arithmetic {
                op,
                left,
                right,
                data_type,
                fail_on_error,
            } => PhysicalExpr::Arithmetic {
                op: *op,
                left: r(left),
                right: r(right),
                data_type: data_type.clone(),
                fail_on_error: *fail_on_error,
            },
            PhysicalExpr::Case {
                branches,
                otherwise,
                data_type,
            } => PhysicalExpr::Case {
                branches: branches
                    .iter()
                    .map(|(c, v)| (c.transform(f), v.transform(f)))
                    .collect(),
                otherwise: otherwise.as_ref().map(|o| r(o)),
                data_type: data_type.clone(),
            },
            PhysicalExpr::InList {
                expr,
                list,
                negated,
            } => PhysicalExpr::InList {
                expr: r(expr),
                list: list.iter().map(|e| e.transform(f)).collect(),
                negated: *negated,
            },
            PhysicalExpr::InSet { expr, set } => PhysicalExpr::InSet {
                expr: r(expr),
                set: set.clone(),
            },
            PhysicalExpr::Like {
                expr,
                pattern,
                negated,
                case_insensitive,
            } => PhysicalExpr::Like {
                expr: r(expr),
                pattern: r(pattern),
                negated: *negated,
                case_insensitive: *case_insensitive,
            },
            PhysicalExpr::StringMatch { op, expr, pattern } => PhysicalExpr::StringMatch {
                op: *op,
                expr: r(expr),
                pattern: r(pattern),
            },
            PhysicalExpr::Cast { expr, to, mode } => PhysicalExpr::Cast {
                mode: *mode,
                expr: r(expr),
                to: to.clone(),
            },
            PhysicalExpr::Function {
                func,
                args,
                data_type,
            } => PhysicalExpr::Function {
                func: func.clone(),
                args: args.iter().map(|e| e.transform(f)).collect(),
                data_type: data_type.clone(),
            },
            PhysicalExpr::Udf {
                udf,
                args,
                session_tz,
            } => PhysicalExpr::Udf {
                udf: udf.clone(),
                args: args.iter().map(|e| e.transform(f)).collect(),
                session_tz: session_tz.clone(),
            },
        }
    }

    /// Splits a conjunction into its parts.
    pub fn conjuncts(&self) -> Vec<&PhysicalExpr> {
        match self {
            PhysicalExpr::And(a, b) => {
                let mut v = a.conjuncts();
                v.extend(b.conjuncts());
                v
            }
            other => vec![other],
        }
    }
}

impl fmt::Display for PhysicalExpr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PhysicalExpr::Column { name, index, .. } => write!(f, "{name}#{index}"),
            PhysicalExpr::Field { input, name, .. } => write!(f, "{input}.{name}"),
            PhysicalExpr::Literal(l) => write!(f, "{l}"),
            PhysicalExpr::LambdaVariable { name, .. } => {
                f.write_str(name.strip_prefix(LAMBDA_PREFIX).unwrap_or(name))
            }
            PhysicalExpr::Lambda { params, body } => {
                let names: Vec<&str> = params
                    .iter()
                    .map(|(n, _)| n.strip_prefix(LAMBDA_PREFIX).unwrap_or(n))
                    .collect();
                write!(f, "lambdafunction({body}, {})", names.join(", "))
            }
            PhysicalExpr::Not(e) => write!(f, "NOT ({e})"),
            PhysicalExpr::Negative(e) => write!(f, "-({e})"),
            PhysicalExpr::Try(e) => write!(f, "try({e})"),
            PhysicalExpr::IsNull(e) => write!(f, "isnull({e})"),
            PhysicalExpr::IsNotNull(e) => write!(f, "isnotnull({e})"),
            PhysicalExpr::And(a, b) => write!(f, "({a} AND {b})"),
            PhysicalExpr::Or(a, b) => write!(f, "({a} OR {b})"),
            PhysicalExpr::Compare { op, left, right }
            | PhysicalExpr::Arithmetic {
                op, left, right, ..
            } => write!(f, "({left} {} {right})", op.sql()),
            PhysicalExpr::InList {
                expr,
                list,
                negated,
            } => {
                write!(f, "{}({expr} IN (", if *negated { "NOT " } else { "" })?;
                for (i, e) in list.iter().enumerate() {
                    if i > 0 {
                        f.write_str(", ")?;
                    }
                    write!(f, "{e}")?;
                }
                f.write_str("))")
            }
            PhysicalExpr::InSet { expr, set } => {
                write!(f, "({expr} INSET {} values)", set.len())
            }
            PhysicalExpr::Like {
                expr,
                pattern,
                negated,
                case_insensitive,
            } => write!(
                f,
                "{}({expr} {} {pattern})",
                if *negated { "NOT " } else { "" },
                if *case_insensitive { "ILIKE" } else { "LIKE" }
            ),
            PhysicalExpr::StringMatch { op, expr, pattern } => {
                write!(f, "{op:?}({expr}, {pattern})")
            }
            PhysicalExpr::Cast { expr, to, mode } => {
                let name = if *mode == CastMode::Try {
                    "try_cast"
                } else {
                    "cast"
                };
                write!(f, "{name}({expr} as {})", crate::types::spark_type_name(to))
            }
            PhysicalExpr::Case {
                branches,
                otherwise,
                ..
            } => crate::expr::write_case(f, branches, otherwise.as_deref()),
            PhysicalExpr::Function { func, args, .. } => {
                crate::expr::write_call(f, func.name(), args)
            }
            PhysicalExpr::Udf { udf, args, .. } => crate::expr::write_call(f, udf.name(), args),
        }
    }
}
