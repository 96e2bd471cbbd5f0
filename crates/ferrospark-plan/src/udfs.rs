//! Calls of a session's registered Python functions (`spark.udf.register`): a call written
//! by name, in SQL or through `F.call_udf` / `F.expr`, bound to the function.

use std::collections::HashMap;

use ferrospark_common::Result;
use ferrospark_expr::{Expr, RegisteredUdf};

/// `e` with each call of a function `lookup` finds bound to it; such a name shadows a
/// built-in one, as in Spark.
pub fn bind_registered(
    e: Expr,
    lookup: &dyn Fn(&str) -> Result<Option<RegisteredUdf>>,
) -> Result<Expr> {
    let mut names = Vec::new();
    e.visit(&mut |x| {
        if let Expr::Function { name, .. } | Expr::Aggregate { name, .. } = x {
            names.push(name.clone());
        }
    });
    let mut found = HashMap::new();
    for n in names {
        if let Some(f) = lookup(&n)? {
            found.insert(n, f);
        }
    }
    if found.is_empty() {
        return Ok(e);
    }
    ferrospark_expr::transform::transform_up(&e, &mut |x| {
        Ok(match x {
            Expr::Function { name, args } | Expr::Aggregate { name, args, .. }
                if found.contains_key(&name) =>
            {
                found[&name].call(args)
            }
            other => other,
        })
    })
}

/// `e` with the calls that read the session's current database (`current_database()`,
/// `current_schema()`, `current_path()`) replaced by their values, `db` being the current
/// database, and named as Spark names them (`current_database()` is `current_schema()`).
pub fn bind_session_names(e: Expr, db: &str) -> Result<Expr> {
    let mut found = false;
    e.visit(&mut |x| {
        found |= matches!(x, Expr::Function { name, args } if args.is_empty() && matches!(name.as_str(), "current_database" | "current_schema" | "current_path"));
    });
    if !found {
        return Ok(e);
    }
    ferrospark_expr::transform::transform_up(&e, &mut |x| {
        Ok(match x {
            Expr::Function { name, args } if args.is_empty() => {
                let (value, written) = match name.as_str() {
                    "current_database" | "current_schema" => (db.to_string(), "current_schema()"),
                    "current_path" => (
                        format!("system.builtin,system.session,spark_catalog.{db}"),
                        "current_path()",
                    ),
                    _ => return Ok(Expr::Function { name, args }),
                };
                Expr::Written {
                    expr: Box::new(Expr::Literal(ferrospark_expr::Literal::string(&value))),
                    name: written.to_string(),
                }
            }
            other => other,
        })
    })
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use arrow_array::ArrayRef;
    use arrow_schema::DataType;
    use ferrospark_expr::{parse_expr, ScalarUdf, ScalarUdfImpl};

    use super::*;

    struct Echo;

    impl ScalarUdfImpl for Echo {
        fn name(&self) -> &str {
            "upper"
        }
        fn return_type(&self) -> &DataType {
            &DataType::Utf8
        }
        fn deterministic(&self) -> bool {
            true
        }
        fn invoke(&self, args: &[ArrayRef], _: usize, _: &str) -> Result<ArrayRef> {
            Ok(args[0].clone())
        }
    }

    #[test]
    fn a_registered_name_binds_its_calls_and_shadows_the_builtin() {
        let f = RegisteredUdf {
            udf: ScalarUdf::new(Arc::new(Echo)),
            aggregate: false,
        };
        let lookup = |name: &str| Ok((name == "upper").then(|| f.clone()));
        let e = bind_registered(
            parse_expr("lower(upper(s)) || upper('x')").expect("works"),
            &lookup,
        )
        .expect("works");
        let mut calls = 0;
        e.visit(&mut |x| calls += matches!(x, Expr::Udf { .. }) as usize);
        assert_eq!(calls, 2);
        assert_eq!(e.spark_name(), "concat(lower(upper(s)), upper(x))");
        let untouched = parse_expr("lower(s)").expect("works");
        assert_eq!(
            bind_registered(untouched.clone(), &lookup).expect("works"),
            untouched
        );
    }
}
