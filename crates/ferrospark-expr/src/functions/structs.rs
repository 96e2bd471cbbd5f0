//! Struct constructors: `named_struct('a', x, 'b', y)` and `struct(x, y)`, as Spark builds
//! them (`struct` names a field after the column it reads, else `col1`, `col2`, ...).

use std::sync::Arc;

use arrow_array::{Array, ArrayRef, StructArray};
use arrow_schema::{DataType, Field, Fields};
use ferrospark_common::{FerroError, Result};

use super::{Args, Bound, Call, ScalarFunction};
use crate::expr::Expr;
use crate::physical::PhysicalExpr;

/// The struct type of fields `names` over `args`.
fn struct_type(names: &[String], args: &[PhysicalExpr]) -> DataType {
    DataType::Struct(
        names
            .iter()
            .zip(args)
            .map(|(n, a)| Field::new(n, a.data_type(), true))
            .collect::<Fields>(),
    )
}

/// A column's name as written, without the plan's `#id`.
fn written_name(e: &Expr) -> Option<String> {
    match e {
        Expr::Column(name) | Expr::Field(_, name) | Expr::Alias { name, .. } => {
            Some(crate::expr::strip_ids(name))
        }
        _ => None,
    }
}

/// Binds `named_struct` and `struct`; other names are not this family's.
pub(crate) fn bind(call: &Call<'_, '_>, args: Vec<PhysicalExpr>) -> Result<Bound> {
    let written: &[Expr] = match call.expr {
        Expr::Function { args, .. } => args,
        _ => &[],
    };
    match call.name {
        "struct" => {
            call.arity(&args, 1, usize::MAX)?;
            let names: Vec<String> = (0..args.len())
                .map(|i| {
                    written
                        .get(i)
                        .and_then(written_name)
                        .unwrap_or_else(|| format!("col{}", i + 1))
                })
                .collect();
            let data_type = struct_type(&names, &args);
            Ok(Bound::Done(call.function(
                ScalarFunction::Struct(names),
                args,
                data_type,
            )))
        }
        "named_struct" => {
            if args.is_empty() || args.len() % 2 == 1 {
                return Err(FerroError::Analysis(format!(
                    "[WRONG_NUM_ARGS.WITHOUT_SUGGESTION] The `named_struct` requires an even number of parameters (names and values), but the actual number is {} in \"{}\".",
                    args.len(),
                    call.expr
                )));
            }
            let mut names = Vec::with_capacity(args.len() / 2);
            let mut values = Vec::with_capacity(args.len() / 2);
            for pair in args.chunks(2) {
                let name = match &pair[0] {
                    PhysicalExpr::Literal(l) if !l.is_null() => l
                        .array()
                        .as_any()
                        .downcast_ref::<arrow_array::StringArray>()
                        .map(|s| s.value(0).to_string()),
                    _ => None,
                };
                let Some(name) = name else {
                    return Err(FerroError::Analysis(format!(
                        "[DATATYPE_MISMATCH.CREATE_NAMED_STRUCT_WITHOUT_FOLDABLE_STRING] Cannot resolve \"{}\" due to data type mismatch: only foldable STRING expressions are allowed to appear at odd position, got \"{}\".",
                        call.expr,
                        pair[0]
                    )));
                };
                names.push(name);
                values.push(pair[1].clone());
            }
            let data_type = struct_type(&names, &values);
            Ok(Bound::Done(call.function(
                ScalarFunction::Struct(names),
                values,
                data_type,
            )))
        }
        _ => Ok(Bound::NotMine(args)),
    }
}

/// Evaluates a struct of fields `names` over `args`.
pub(crate) fn evaluate(names: &[String], args: &Args) -> Result<ArrayRef> {
    let arrays: Vec<ArrayRef> = (0..args.len())
        .map(|i| args.full(i))
        .collect::<Result<_>>()?;
    let fields: Fields = names
        .iter()
        .zip(&arrays)
        .map(|(n, a)| Field::new(n, a.data_type().clone(), true))
        .collect();
    let len = arrays.first().map_or(0, |a| a.len());
    Ok(Arc::new(StructArray::try_new_with_length(
        fields, arrays, None, len,
    )?))
}
