//! Generators (`explode`, `posexplode`, `inline`, `stack`, `json_tuple` and the `_outer` forms) in a
//! select list, in `LATERAL VIEW` and in FROM, planned as Spark's `ExtractGenerator`: a
//! `Generate` node below the projection, the generator's item replaced by the columns it makes.

use std::sync::Arc;

use arrow_schema::DataType;
use ferrospark_common::{FerroError, Result};
use ferrospark_expr::Expr;

use crate::analyzer::expr_type;
use crate::builder::PlanBuilder;
use crate::logical::{Attr, GeneratorKind, LogicalPlan};

/// A plan with its select list's generator below it: the plan, the items, and where the
/// generator's item was with how many columns replaced it.
pub(crate) type WithGenerator = (Arc<LogicalPlan>, Vec<Expr>, Option<(usize, usize)>);

/// A generator call: which, whether outer, its arguments, the alias it was given.
pub(crate) struct GeneratorCall<'e> {
    pub kind: GeneratorKind,
    pub outer: bool,
    pub args: &'e [Expr],
    pub alias: Option<&'e str>,
}

/// The generator `e` calls at its top (under an alias), if any.
pub(crate) fn generator_call(e: &Expr) -> Option<GeneratorCall<'_>> {
    let (inner, alias) = match e {
        Expr::Alias { expr, name } => (expr.as_ref(), Some(name.as_str())),
        other => (other, None),
    };
    match inner {
        Expr::Function { name, args } => {
            GeneratorKind::from_name(name).map(|(kind, outer)| GeneratorCall {
                kind,
                outer,
                args,
                alias,
            })
        }
        _ => None,
    }
}

/// Whether a generator is called anywhere inside `e`.
pub(crate) fn contains_generator(e: &Expr) -> bool {
    let mut found = false;
    e.visit(&mut |x| {
        if let Expr::Function { name, .. } = x {
            found |= GeneratorKind::from_name(name).is_some();
        }
    });
    found
}

impl PlanBuilder {
    /// The columns `kind(args)` makes over `input` (names and types as Spark's), `aliases`
    /// naming them where given.
    pub(crate) fn generator_attrs(
        &self,
        input: &LogicalPlan,
        kind: GeneratorKind,
        outer: bool,
        args: &[Expr],
        aliases: &[String],
    ) -> Result<Vec<Attr>> {
        let attrs = input.output();
        let type_of = |e: &Expr| expr_type(e, &attrs, &self.cfg);
        let wrong = |what: &str, dt: &DataType| {
            FerroError::Analysis(format!(
                "[DATATYPE_MISMATCH.UNEXPECTED_INPUT_TYPE] Cannot resolve \"{}({})\" due to data type mismatch: the input of {} requires {what}, however it has the type \"{}\". SQLSTATE: 42K09",
                kind.name(),
                args.iter().map(|a| ferrospark_expr::strip_ids(&a.to_string())).collect::<Vec<_>>().join(", "),
                kind.name(),
                ferrospark_expr::types::spark_type_name(dt).to_uppercase()
            ))
        };
        let mut cols: Vec<(String, DataType, bool)> = Vec::new();
        if kind == GeneratorKind::JsonTuple {
            if args.len() < 2 {
                return Err(FerroError::Analysis(format!(
                    "[WRONG_NUM_ARGS.WITHOUT_SUGGESTION] The `json_tuple` requires > 1 parameters but the actual number is {}. SQLSTATE: 42605",
                    args.len()
                )));
            }
            for a in args {
                let t = type_of(a)?;
                if !matches!(t, DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View) {
                    return Err(FerroError::Analysis(format!(
                        "[DATATYPE_MISMATCH.NON_STRING_TYPE] Cannot resolve \"json_tuple({})\" due to data type mismatch: all arguments of the function `json_tuple` must be strings. SQLSTATE: 42K09",
                        args.iter().map(|a| a.spark_name()).collect::<Vec<_>>().join(", ")
                    )));
                }
            }
            for i in 0..args.len() - 1 {
                cols.push((format!("c{i}"), DataType::Utf8, true));
            }
        } else if kind == GeneratorKind::Stack {
            let n = match args.first() {
                Some(Expr::Literal(l)) => crate::sql::literal_i64(l).filter(|n| *n > 0),
                _ => None,
            }
            .ok_or_else(|| {
                FerroError::Analysis(
                    "[DATATYPE_MISMATCH.NON_FOLDABLE_INPUT] stack's first argument, the number of rows, must be a positive integer constant".into(),
                )
            })? as usize;
            let values = &args[1..];
            let width = values.len().div_ceil(n);
            for j in 0..width {
                let mut dt = DataType::Null;
                for i in 0..n {
                    if let Some(v) = values.get(i * width + j) {
                        let t = type_of(v)?;
                        if dt == DataType::Null {
                            dt = t;
                        }
                    }
                }
                cols.push((format!("col{j}"), dt, true));
            }
        } else {
            if args.len() != 1 {
                return Err(FerroError::Analysis(format!(
                    "[WRONG_NUM_ARGS.WITHOUT_SUGGESTION] The `{}` requires 1 parameters but the actual number is {}. SQLSTATE: 42605",
                    kind.name(),
                    args.len()
                )));
            }
            if kind.has_position() {
                cols.push(("pos".into(), DataType::Int32, outer));
            }
            let dt = type_of(&args[0])?;
            match (&dt, kind) {
                (DataType::List(f), GeneratorKind::Inline) => match f.data_type() {
                    DataType::Struct(fields) => {
                        for f in fields {
                            cols.push((f.name().clone(), f.data_type().clone(), true));
                        }
                    }
                    other => return Err(wrong("\"ARRAY<STRUCT>\"", other)),
                },
                (DataType::List(f), _) => cols.push(("col".into(), f.data_type().clone(), true)),
                (DataType::Map(f, _), GeneratorKind::Explode | GeneratorKind::PosExplode) => {
                    if let DataType::Struct(kv) = f.data_type() {
                        cols.push(("key".into(), kv[0].data_type().clone(), outer));
                        cols.push(("value".into(), kv[1].data_type().clone(), true));
                    }
                }
                (DataType::Null, _) => cols.push(("col".into(), DataType::Null, true)),
                (other, GeneratorKind::Inline) => return Err(wrong("\"ARRAY<STRUCT>\"", other)),
                (other, _) => return Err(wrong("(\"ARRAY\" or \"MAP\")", other)),
            }
        }
        if !aliases.is_empty() && aliases.len() != cols.len() {
            return Err(FerroError::Analysis(format!(
                "[UDTF_ALIAS_NUMBER_MISMATCH] The number of aliases supplied in the AS clause does not match the number of columns output by the UDTF. Expected {} aliases, but got {}. SQLSTATE: 42802",
                cols.len(),
                aliases.len()
            )));
        }
        Ok(cols
            .into_iter()
            .enumerate()
            .map(|(i, (name, dt, nullable))| {
                let name = aliases.get(i).cloned().unwrap_or(name);
                self.attr(&name, dt, nullable)
            })
            .collect())
    }

    /// `input` with a `Generate` of `kind(args)`: the plan and the generated attributes
    /// (under `qualifier`, a `LATERAL VIEW`'s name).
    pub(crate) fn generate(
        &self,
        input: Arc<LogicalPlan>,
        kind: GeneratorKind,
        outer: bool,
        args: Vec<Expr>,
        aliases: &[String],
        qualifier: Option<&str>,
    ) -> Result<(Arc<LogicalPlan>, Vec<Attr>)> {
        let mut attrs = self.generator_attrs(&input, kind, outer, &args, aliases)?;
        for a in &mut attrs {
            a.qualifier = qualifier.map(str::to_string);
        }
        Ok((
            Arc::new(LogicalPlan::Generate {
                input,
                kind,
                args,
                outer,
                attrs: attrs.clone(),
            }),
            attrs,
        ))
    }

    /// Resolved select-list `items` over `input` with their generator computed below: the
    /// plan, the items (the generator's replaced by the columns it makes, aliased to their
    /// names), and where the generator was with how many columns it made.
    pub(crate) fn extract_generator(
        &self,
        input: Arc<LogicalPlan>,
        items: Vec<Expr>,
    ) -> Result<WithGenerator> {
        let found: Vec<usize> = (0..items.len())
            .filter(|&i| contains_generator(&items[i]))
            .collect();
        let Some(&at) = found.first() else {
            return Ok((input, items, None));
        };
        if found.len() > 1 {
            return Err(FerroError::Analysis(format!(
                "[UNSUPPORTED_GENERATOR.MULTI_GENERATOR] The generator is not supported: only one generator allowed per SELECT clause but found {}: {}. SQLSTATE: 42K0E",
                found.len(),
                found
                    .iter()
                    .map(|&i| format!("\"{}\"", ferrospark_expr::strip_ids(&items[i].to_string())))
                    .collect::<Vec<_>>()
                    .join(", ")
            )));
        }
        let Some(call) = generator_call(&items[at]) else {
            return Err(FerroError::Analysis(format!(
                "[UNSUPPORTED_GENERATOR.NESTED_IN_EXPRESSIONS] The generator is not supported: nested in expressions \"{}\". SQLSTATE: 42K0E",
                ferrospark_expr::strip_ids(&items[at].to_string())
            )));
        };
        let aliases: Vec<String> = call.alias.map(|a| vec![a.to_string()]).unwrap_or_default();
        let (kind, outer, args) = (call.kind, call.outer, call.args.to_vec());
        let (plan, attrs) = self.generate(input, kind, outer, args, &aliases, None)?;
        let made = attrs.len();
        let mut out = items;
        out.splice(
            at..at + 1,
            attrs.iter().map(|a| Expr::Alias {
                expr: Box::new(a.column()),
                name: a.name.clone(),
            }),
        );
        Ok((plan, out, Some((at, made))))
    }
}

#[cfg(test)]
mod tests {
    use arrow_array::RecordBatch;
    use ferrospark_common::Config;

    use crate::physical::collect;
    use crate::sql::SqlStatement;
    use crate::QueryEngine;

    /// Every row of `sql`'s result, printed, in order, at batch size `batch`.
    fn rows(sql: &str, batch: usize) -> Vec<String> {
        let mut cfg = Config::default();
        cfg.set("ferrospark.batch.size", batch.to_string())
            .expect("a batch size");
        let e = QueryEngine::new(cfg);
        let SqlStatement::Query(p) = e.sql(sql).expect("plans") else {
            panic!("not a query")
        };
        let batches: Vec<RecordBatch> =
            collect(e.execute(&p).expect("runs").stream).expect("collects");
        let mut out = Vec::new();
        for b in &batches {
            let shown: Vec<_> = b
                .columns()
                .iter()
                .map(|c| {
                    arrow_cast::display::ArrayFormatter::try_new(c.as_ref(), &Default::default())
                        .expect("formats")
                })
                .collect();
            for r in 0..b.num_rows() {
                let cells: Vec<String> = shown.iter().map(|f| f.value(r).to_string()).collect();
                out.push(cells.join(","));
            }
        }
        out
    }

    #[test]
    fn each_row_repeats_once_per_element_at_any_batch_size() {
        for batch in [1, 2, 7, 8192] {
            assert_eq!(
                rows(
                    "SELECT id, explode(array(id, id * 10)) AS x FROM range(3) ORDER BY id, x",
                    batch
                ),
                ["0,0", "0,0", "1,1", "1,10", "2,2", "2,20"],
                "batch size {batch}"
            );
            assert_eq!(
                rows(
                    "SELECT id, p, x FROM range(3) LATERAL VIEW OUTER posexplode(CASE WHEN id > 0 THEN array('a', 'b') END) t AS p, x ORDER BY id, p",
                    batch
                ),
                ["0,,", "1,0,a", "1,1,b", "2,0,a", "2,1,b"],
                "batch size {batch}"
            );
        }
        assert_eq!(
            rows("SELECT * FROM stack(2, 1, 'a', 2)", 8192),
            ["1,a", "2,"]
        );
        assert_eq!(
            rows(
                "SELECT key, value FROM (SELECT explode(map(1, 'x', 2, 'y')))",
                8192
            ),
            ["1,x", "2,y"]
        );
    }
}
