//! The analyzer: names to attributes, types checked through binding, Spark's error classes.
//!
//! Resolution happens as a plan is built (by the SQL planner and by DataFrame calls), so an
//! unknown column fails at the call that names it, as in PySpark. A [`Scope`] is what a
//! name can see: the input's attributes and, inside a subquery, the outer query's (an outer
//! reference is recorded so the subquery can be decorrelated into a join).

use std::cell::RefCell;

use arrow_schema::DataType;
use ferrospark_common::{Config, FerroError, Result};
use ferrospark_expr::{bind, BindContext, Expr};

use crate::logical::expr_util::{map_children, transform_down};
use crate::logical::{attrs_schema, Attr};

/// Names visible to an expression.
#[derive(Debug)]
pub struct Scope<'a> {
    /// The input's attributes.
    pub attrs: Vec<Attr>,
    /// The enclosing query's scope, for correlated subqueries.
    pub outer: Option<&'a Scope<'a>>,
    /// Outer attributes this scope's expressions referenced.
    pub outer_refs: RefCell<Vec<Attr>>,
    /// `spark.sql.caseSensitive`.
    pub case_sensitive: bool,
}

impl<'a> Scope<'a> {
    /// A scope over `attrs`.
    pub fn new(attrs: Vec<Attr>, case_sensitive: bool) -> Self {
        Self {
            attrs,
            outer: None,
            outer_refs: RefCell::new(Vec::new()),
            case_sensitive,
        }
    }

    /// A scope over `attrs` nested in `outer`.
    pub fn nested(attrs: Vec<Attr>, outer: &'a Scope<'a>) -> Self {
        Self {
            attrs,
            outer: Some(outer),
            outer_refs: RefCell::new(Vec::new()),
            case_sensitive: outer.case_sensitive,
        }
    }

    fn same(&self, a: &str, b: &str) -> bool {
        if self.case_sensitive {
            a == b
        } else {
            a.eq_ignore_ascii_case(b)
        }
    }

    /// Attributes named `name`, optionally under qualifier `q`.
    fn lookup(&self, q: Option<&str>, name: &str) -> Vec<&Attr> {
        let mut out: Vec<&Attr> = Vec::new();
        for a in &self.attrs {
            let name_ok = self.same(&a.name, name) || a.key() == name;
            let q_ok = match q {
                None => !a.hidden || a.key() == name,
                Some(q) => a.qualifier.as_deref().is_some_and(|aq| self.same(aq, q)),
            };
            if name_ok && q_ok && !out.iter().any(|o| o.id == a.id) {
                out.push(a);
            }
        }
        out
    }

    /// Resolves a possibly qualified name here, then in the outer scopes.
    pub fn resolve_name(&self, q: Option<&str>, name: &str) -> Result<Option<Attr>> {
        let found = self.lookup(q, name);
        match found.as_slice() {
            [one] => return Ok(Some((*one).clone())),
            [] => {}
            many => {
                let names: Vec<String> = many
                    .iter()
                    .map(|a| match &a.qualifier {
                        Some(q) => format!("`{q}`.`{}`", a.name),
                        None => format!("`{}`", a.name),
                    })
                    .collect();
                return Err(FerroError::Analysis(format!(
                    "[AMBIGUOUS_REFERENCE] Reference `{}` is ambiguous, could be: [{}]. Qualify it with a table alias.",
                    display_name(q, name),
                    names.join(", ")
                )));
            }
        }
        if let Some(outer) = self.outer {
            if let Some(a) = outer.resolve_name(q, name)? {
                let mut refs = self.outer_refs.borrow_mut();
                if !refs.iter().any(|r| r.id == a.id) {
                    refs.push(a.clone());
                }
                return Ok(Some(a));
            }
        }
        Ok(None)
    }

    /// The attributes of the enclosing scopes (what correlated expressions may read).
    pub fn outer_attrs(&self) -> Vec<Attr> {
        let mut out = Vec::new();
        let mut o = self.outer;
        while let Some(s) = o {
            out.extend(s.attrs.iter().cloned());
            o = s.outer;
        }
        out
    }

    /// Every name visible here, for suggestions.
    fn visible_names(&self) -> Vec<String> {
        let mut out: Vec<String> = self
            .attrs
            .iter()
            .map(|a| match &a.qualifier {
                Some(q) => format!("`{q}`.`{}`", a.name),
                None => format!("`{}`", a.name),
            })
            .collect();
        if let Some(o) = self.outer {
            out.extend(o.visible_names());
        }
        out
    }

    /// `[UNRESOLVED_COLUMN]` for `name`, suggesting the closest visible names.
    pub fn unresolved(&self, q: Option<&str>, name: &str) -> FerroError {
        let wanted = display_name(q, name).to_ascii_lowercase();
        let mut names = self.visible_names();
        names.sort_by_key(|n| edit_distance(&n.replace('`', "").to_ascii_lowercase(), &wanted));
        names.dedup();
        names.truncate(5);
        if names.is_empty() {
            // Nothing to suggest (a relation without columns): Spark's other sub-class.
            return FerroError::Analysis(format!(
                "[UNRESOLVED_COLUMN.WITHOUT_SUGGESTION] A column, variable, or function parameter with name `{}` cannot be resolved. SQLSTATE: 42703",
                display_name(q, name)
            ));
        }
        FerroError::Analysis(format!(
            "[UNRESOLVED_COLUMN.WITH_SUGGESTION] A column, variable, or function parameter with name `{}` cannot be resolved. Did you mean one of the following? [{}].",
            display_name(q, name),
            names.join(", ")
        ))
    }
}

fn display_name(q: Option<&str>, name: &str) -> String {
    match q {
        Some(q) => format!("{q}`.`{name}"),
        None => name.to_string(),
    }
}

fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut cur = vec![i + 1; b.len() + 1];
        for (j, cb) in b.iter().enumerate() {
            cur[j + 1] = (prev[j] + usize::from(ca != *cb))
                .min(prev[j + 1] + 1)
                .min(cur[j] + 1);
        }
        prev = cur;
    }
    prev[b.len()]
}

/// Resolves every column reference of `e` in `scope` to an attribute key.
pub fn resolve_expr(e: &Expr, scope: &Scope<'_>) -> Result<Expr> {
    transform_down(e, &mut |x| {
        Ok(match x {
            Expr::Column(name) => {
                if name == "*" {
                    return Err(FerroError::Analysis(
                        "[INVALID_USAGE_OF_STAR_OR_REGEX] `*` is only allowed in a SELECT list or count(*)"
                            .into(),
                    ));
                }
                match scope.resolve_name(None, name)? {
                    Some(a) => Some(a.column()),
                    None => match resolve_parts(name, scope)? {
                        Some(e) => Some(e),
                        None => return Err(scope.unresolved(None, name)),
                    },
                }
            }
            Expr::Function { name, args } if args.iter().any(|a| star_prefix(a).is_some()) => {
                Some(resolve_expr(
                    &Expr::Function {
                        name: name.clone(),
                        args: spread_stars(args, scope)?,
                    },
                    scope,
                )?)
            }
            Expr::Aggregate {
                name,
                args,
                distinct,
                ignore_nulls,
            } if args.iter().any(|a| star_prefix(a).is_some()) => Some(resolve_expr(
                &Expr::Aggregate {
                    name: name.clone(),
                    args: spread_stars(args, scope)?,
                    distinct: *distinct,
                    ignore_nulls: *ignore_nulls,
                },
                scope,
            )?),
            Expr::Field(inner, field) => match inner.as_ref() {
                // `t.col`: a qualified column first, a struct field otherwise.
                Expr::Column(q) => match scope.resolve_name(Some(q), field)? {
                    Some(a) => Some(a.column()),
                    None => match scope.resolve_name(None, q)? {
                        Some(a) => Some(Expr::Field(Box::new(a.column()), field.clone())),
                        None => return Err(scope.unresolved(Some(q), field)),
                    },
                },
                // `db.t.col`: the table qualifier is the last part.
                Expr::Field(db, t) if matches!(db.as_ref(), Expr::Column(_)) => {
                    scope.resolve_name(Some(t), field)?.map(|a| a.column())
                }
                _ => None,
            },
            _ => None,
        })
    })
}

/// A dotted name (`p.dept`, `t.a.b`, `` `a.b`.c ``) the way Spark's analyzer resolves a
/// multi-part attribute: a qualified column first, then a column's struct fields; `None`
/// when neither is here.
fn resolve_parts(name: &str, scope: &Scope<'_>) -> Result<Option<Expr>> {
    let Some(parts) = ferrospark_expr::expr::column_name_parts(name) else {
        return Ok(None);
    };
    let fields = |base: Expr, rest: &[String]| {
        rest.iter()
            .fold(base, |e, f| Expr::Field(Box::new(e), f.clone()))
    };
    if parts.len() >= 2 {
        if let Some(a) = scope.resolve_name(Some(&parts[0]), &parts[1])? {
            return Ok(Some(fields(a.column(), &parts[2..])));
        }
    }
    Ok(scope
        .resolve_name(None, &parts[0])?
        .map(|a| fields(a.column(), &parts[1..])))
}

/// The prefix of `prefix.*` inside `struct(...)`.
fn star_prefix(e: &Expr) -> Option<&str> {
    match e {
        Expr::Function { name, args } if name == ferrospark_expr::parser::STAR_FN => {
            match args.as_slice() {
                [Expr::Column(p)] => Some(p),
                _ => None,
            }
        }
        _ => None,
    }
}

/// A call's arguments with each `prefix.*` replaced by what it stands for.
fn spread_stars(args: &[Expr], scope: &Scope<'_>) -> Result<Vec<Expr>> {
    let mut spread = Vec::with_capacity(args.len());
    for a in args {
        match star_prefix(a) {
            Some(prefix) => spread.extend(expand_star(prefix, scope)?),
            None => spread.push(a.clone()),
        }
    }
    Ok(spread)
}

/// `prefix.*` spread: a relation's columns when `prefix` qualifies some, else a struct
/// column's fields, each named as it is.
fn expand_star(prefix: &str, scope: &Scope<'_>) -> Result<Vec<Expr>> {
    if prefix == "*" {
        return Ok(scope
            .attrs
            .iter()
            .filter(|a| !a.hidden)
            .map(|a| a.column())
            .collect());
    }
    let parts: Vec<&str> = prefix.split('.').collect();
    if parts.len() == 1 {
        let of_relation: Vec<Expr> = scope
            .attrs
            .iter()
            .filter(|a| {
                !a.hidden
                    && a.qualifier
                        .as_deref()
                        .is_some_and(|q| q.eq_ignore_ascii_case(parts[0]))
            })
            .map(|a| a.column())
            .collect();
        if !of_relation.is_empty() {
            return Ok(of_relation);
        }
    }
    let unresolvable = || {
        FerroError::Analysis(format!(
            "[CANNOT_RESOLVE_STAR_EXPAND] Cannot resolve `{prefix}`.* given input columns {}",
            scope
                .attrs
                .iter()
                .filter(|a| !a.hidden)
                .map(|a| format!("`{}`", a.name))
                .collect::<Vec<_>>()
                .join(", ")
        ))
    };
    let (mut expr, mut data_type, rest) = match scope.resolve_name(None, parts[0])? {
        Some(a) => (a.column(), a.data_type.clone(), &parts[1..]),
        None if parts.len() > 1 => match scope.resolve_name(Some(parts[0]), parts[1])? {
            Some(a) => (a.column(), a.data_type.clone(), &parts[2..]),
            None => return Err(unresolvable()),
        },
        None => return Err(unresolvable()),
    };
    for part in rest {
        let DataType::Struct(fields) = &data_type else {
            return Err(unresolvable());
        };
        let Some(f) = fields.iter().find(|f| f.name().eq_ignore_ascii_case(part)) else {
            return Err(unresolvable());
        };
        expr = Expr::Field(Box::new(expr), f.name().clone());
        data_type = f.data_type().clone();
    }
    let DataType::Struct(fields) = &data_type else {
        return Err(unresolvable());
    };
    Ok(fields
        .iter()
        .map(|f| Expr::Alias {
            expr: Box::new(Expr::Field(Box::new(expr.clone()), f.name().clone())),
            name: f.name().clone(),
        })
        .collect())
}

/// Type and nullability of a resolved expression over `attrs`.
pub fn expr_type(e: &Expr, attrs: &[Attr], cfg: &Config) -> Result<DataType> {
    let schema = attrs_schema(attrs);
    let ctx = BindContext::for_session(&schema, cfg);
    Ok(bind(e, &ctx)?.data_type())
}

/// Whether a resolved expression can be NULL (conservative: true unless obviously not).
pub fn expr_nullable(e: &Expr, attrs: &[Attr]) -> bool {
    match e {
        Expr::Column(k) => attrs
            .iter()
            .find(|a| a.key() == *k)
            .is_none_or(|a| a.nullable),
        Expr::Literal(l) => l.is_null(),
        Expr::Alias { expr, .. } | Expr::Written { expr, .. } => expr_nullable(expr, attrs),
        Expr::IsNull(_) | Expr::IsNotNull(_) => false,
        _ => true,
    }
}

/// Replaces every occurrence of a subtree equal to one of `from` by the matching `to`.
pub fn substitute(e: &Expr, pairs: &[(Expr, Expr)]) -> Result<Expr> {
    transform_down(e, &mut |x| {
        Ok(pairs.iter().find(|(f, _)| f == x).map(|(_, t)| t.clone()))
    })
}

/// Strips aliases nested below the top of an expression (Spark's `CleanupAliases`).
pub fn strip_inner_aliases(e: &Expr) -> Result<Expr> {
    // `struct(x AS name)`: the alias names the field.
    if matches!(e, Expr::Function { name, .. } if name.eq_ignore_ascii_case("struct")) {
        return map_children(e, &mut |c| match c {
            Expr::Alias { expr, name } => Ok(Expr::Alias {
                expr: Box::new(strip_inner_aliases(expr)?),
                name: name.clone(),
            }),
            other => strip_inner_aliases(other),
        });
    }
    map_children(e, &mut |c| {
        let inner = match c {
            Expr::Alias { expr, .. } => expr.as_ref(),
            other => other,
        };
        strip_inner_aliases(inner)
    })
}
