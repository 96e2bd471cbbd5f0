//! Higher-order functions: `transform`, `filter`, `exists`, `forall`, `aggregate` / `reduce`,
//! `zip_with`, `map_filter`, `transform_keys`, `transform_values`, as Spark's
//! `higherOrderFunctions.scala` defines them.
//!
//! A lambda runs once per batch, not once per element: its body is evaluated over a batch of
//! all the elements of all the rows, in which each parameter is a column and each column the
//! body reads from outside is repeated for every element of its row.
//!
//! ```text
//!  row  ys        c        element batch       body `y * c`      result
//!  0    [1, 2]    10   ->  y=1 c=10  (row 0)   10             ->  [10, 20]
//!                          y=2 c=10  (row 0)   20
//!  1    [3]       5        y=3 c=5   (row 1)   15                 [15]
//! ```
//!
//! `aggregate` folds: step `k` evaluates the merge lambda over the rows that have a `k`-th
//! element, all of them at once.

use std::sync::Arc;

use arrow_array::builder::BooleanBuilder;
use arrow_array::cast::AsArray;
use arrow_array::{
    new_empty_array, Array, ArrayRef, BooleanArray, GenericListArray, Int32Array, MapArray,
    RecordBatch, RecordBatchOptions, StructArray, UInt32Array,
};
use arrow_buffer::{NullBuffer, OffsetBuffer};
use arrow_schema::{DataType, Field, Fields, Schema};
use ferrospark_common::{FerroError, Result};

use crate::bind::BindContext;
use crate::eval::{evaluate, ColumnarValue};
use crate::expr::Expr;
use crate::physical::{PhysicalExpr, LAMBDA_PREFIX};

use super::collections::{element_type, list_of, map_type, map_types};
use super::{Call, ScalarFunction};

/// A higher-order function.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HigherOrderFn {
    /// `transform(array, (x[, i]) -> y)`
    Transform,
    /// `filter(array, (x[, i]) -> bool)`
    Filter,
    /// `exists(array, x -> bool)`: three-valued, as Spark's default.
    Exists,
    /// `forall(array, x -> bool)`: three-valued.
    Forall,
    /// `aggregate(array, zero, (acc, x) -> acc[, acc -> out])`, also `reduce`.
    Aggregate,
    /// `zip_with(a, b, (x, y) -> z)`: the shorter padded with NULLs.
    ZipWith,
    /// `map_filter(map, (k, v) -> bool)`
    MapFilter,
    /// `transform_keys(map, (k, v) -> k2)`
    TransformKeys,
    /// `transform_values(map, (k, v) -> v2)`
    TransformValues,
    /// `array_sort(array[, (l, r) -> int])`: NULLs last by default
    ArraySort,
    /// `map_zip_with(m1, m2, (k, v1, v2) -> v)`
    MapZipWith,
}

impl HigherOrderFn {
    /// The function's Spark name.
    pub fn name(&self) -> &'static str {
        match self {
            HigherOrderFn::Transform => "transform",
            HigherOrderFn::Filter => "filter",
            HigherOrderFn::Exists => "exists",
            HigherOrderFn::Forall => "forall",
            HigherOrderFn::Aggregate => "aggregate",
            HigherOrderFn::ZipWith => "zip_with",
            HigherOrderFn::MapFilter => "map_filter",
            HigherOrderFn::TransformKeys => "transform_keys",
            HigherOrderFn::TransformValues => "transform_values",
            HigherOrderFn::ArraySort => "array_sort",
            HigherOrderFn::MapZipWith => "map_zip_with",
        }
    }

    /// The function a name calls, if it is a higher-order one.
    pub fn from_name(name: &str) -> Option<Self> {
        Some(match name {
            "transform" => HigherOrderFn::Transform,
            "filter" => HigherOrderFn::Filter,
            "exists" => HigherOrderFn::Exists,
            "forall" => HigherOrderFn::Forall,
            "aggregate" | "reduce" => HigherOrderFn::Aggregate,
            "zip_with" => HigherOrderFn::ZipWith,
            "map_filter" => HigherOrderFn::MapFilter,
            "transform_keys" => HigherOrderFn::TransformKeys,
            "transform_values" => HigherOrderFn::TransformValues,
            "array_sort" => HigherOrderFn::ArraySort,
            "map_zip_with" => HigherOrderFn::MapZipWith,
            _ => return None,
        })
    }
}

/// Binds a lambda argument whose parameters take `types` (a lambda may name fewer than
/// `types.len()` of them, never more than `max`): its body over `ctx`'s schema and one
/// column per parameter. A value where a lambda was expected is a lambda of no parameter.
pub(crate) fn bind_lambda(
    call: &Call<'_, '_>,
    arg: &Expr,
    types: &[DataType],
    min: usize,
    bind: &dyn Fn(&Expr, &BindContext<'_>) -> Result<PhysicalExpr>,
) -> Result<PhysicalExpr> {
    let arg = match arg {
        Expr::Written { expr, .. } | Expr::Alias { expr, .. } => expr.as_ref(),
        other => other,
    };
    let (params, body) = match arg {
        Expr::Lambda { params, body } => (params.as_slice(), body.as_ref()),
        other => (&[][..], other),
    };
    if matches!(arg, Expr::Lambda { .. }) && !(min..=types.len()).contains(&params.len()) {
        return Err(FerroError::Analysis(format!(
            "[INVALID_LAMBDA_FUNCTION_CALL.NUM_ARGS_MISMATCH] Invalid lambda function call. A higher order function expects {} arguments, but got {}. SQLSTATE: 42K0D in \"{}\".",
            types.len(),
            params.len(),
            call.expr
        )));
    }
    for (i, p) in params.iter().enumerate() {
        if params[..i].iter().any(|q| q.eq_ignore_ascii_case(p)) {
            return Err(FerroError::Analysis(format!(
                "[INVALID_LAMBDA_FUNCTION_CALL.DUPLICATE_ARG_NAMES] Invalid lambda function call. The lambda function has duplicate arguments `{p}`. SQLSTATE: 42K0D in \"{}\".",
                call.expr
            )));
        }
    }
    let named: Vec<(String, DataType)> = params
        .iter()
        .zip(types)
        .map(|(p, t)| (format!("{LAMBDA_PREFIX}{p}"), t.clone()))
        .collect();
    let mut fields: Vec<Arc<Field>> = call.ctx.schema.fields().iter().cloned().collect();
    fields.extend(
        named
            .iter()
            .map(|(n, t)| Arc::new(Field::new(n, t.clone(), true))),
    );
    let schema = Schema::new(fields);
    let ctx = BindContext {
        schema: &schema,
        ..*call.ctx
    };
    Ok(PhysicalExpr::Lambda {
        params: named,
        body: Box::new(bind(body, &ctx)?),
    })
}

/// Binds `name(args)` when `name` is a higher-order function.
pub(crate) fn bind(
    call: &Call<'_, '_>,
    args: &[Expr],
    bind_expr: &dyn Fn(&Expr, &BindContext<'_>) -> Result<PhysicalExpr>,
) -> Result<Option<PhysicalExpr>> {
    let Some(f) = HigherOrderFn::from_name(call.name) else {
        return Ok(None);
    };
    let (lo, hi) = match f {
        HigherOrderFn::Aggregate => (3, 4),
        HigherOrderFn::ZipWith | HigherOrderFn::MapZipWith => (3, 3),
        HigherOrderFn::ArraySort => (1, 2),
        _ => (2, 2),
    };
    if !(lo..=hi).contains(&args.len()) {
        let want = if lo == hi {
            lo.to_string()
        } else {
            format!("{lo} or {hi}")
        };
        return Err(FerroError::Analysis(format!(
            "[WRONG_NUM_ARGS.WITHOUT_SUGGESTION] The `{}` requires {want} parameters but the actual number is {} in \"{}\".",
            call.name,
            args.len(),
            call.expr
        )));
    }
    let ctx = call.ctx;
    let first = bind_expr(&args[0], ctx)?;
    let array_of = |e: &PhysicalExpr, i: usize| -> Result<DataType> {
        element_type(&e.data_type())
            .cloned()
            .ok_or_else(|| call.wrong_type(i, e, "\"ARRAY\""))
    };
    let lambda =
        |arg: &Expr, types: &[DataType], min: usize| bind_lambda(call, arg, types, min, bind_expr);
    let boolean = |l: &PhysicalExpr, i: usize| -> Result<()> {
        match l.data_type() {
            DataType::Boolean | DataType::Null => Ok(()),
            _ => Err(call.wrong_type(i, l, "\"BOOLEAN\"")),
        }
    };
    let func = ScalarFunction::HigherOrder(f);
    let int = DataType::Int32;
    Ok(Some(match f {
        HigherOrderFn::Transform => {
            let t = array_of(&first, 0)?;
            let l = lambda(&args[1], &[t, int], 1)?;
            let out = list_of(&l.data_type());
            call.function(func, vec![first, l], out)
        }
        HigherOrderFn::Filter => {
            let t = array_of(&first, 0)?;
            let l = lambda(&args[1], &[t, int], 1)?;
            boolean(&l, 1)?;
            let out = first.data_type();
            call.function(func, vec![first, l], out)
        }
        HigherOrderFn::Exists | HigherOrderFn::Forall => {
            let t = array_of(&first, 0)?;
            let l = lambda(&args[1], &[t], 1)?;
            boolean(&l, 1)?;
            call.function(func, vec![first, l], DataType::Boolean)
        }
        HigherOrderFn::Aggregate => {
            let t = array_of(&first, 0)?;
            let zero = bind_expr(&args[1], ctx)?;
            let acc = zero.data_type();
            let merge = lambda(&args[2], &[acc.clone(), t], 2)?;
            if !structurally_equal(&merge.data_type(), &acc) {
                return Err(FerroError::Analysis(format!(
                    "[DATATYPE_MISMATCH.UNEXPECTED_INPUT_TYPE] Cannot resolve \"{}\" due to data type mismatch: parameter 3 requires the \"{}\" type, however \"{}\" has the type \"{}\".",
                    call.expr,
                    crate::types::spark_type_name(&acc).to_uppercase(),
                    args[2],
                    crate::types::spark_type_name(&merge.data_type()).to_uppercase()
                )));
            }
            let finish = match args.get(3) {
                Some(a) => lambda(a, std::slice::from_ref(&acc), 1)?,
                None => PhysicalExpr::Lambda {
                    params: vec![(format!("{LAMBDA_PREFIX}acc"), acc.clone())],
                    body: Box::new(PhysicalExpr::LambdaVariable {
                        name: format!("{LAMBDA_PREFIX}acc"),
                        data_type: acc,
                    }),
                },
            };
            let out = finish.data_type();
            call.function(func, vec![first, zero, merge, finish], out)
        }
        HigherOrderFn::ZipWith => {
            let a = array_of(&first, 0)?;
            let second = bind_expr(&args[1], ctx)?;
            let b = array_of(&second, 1)?;
            let l = lambda(&args[2], &[a, b], 2)?;
            let out = list_of(&l.data_type());
            call.function(func, vec![first, second, l], out)
        }
        HigherOrderFn::ArraySort => {
            let t = array_of(&first, 0)?;
            let out = first.data_type();
            let Some(cmp) = args.get(1) else {
                return Ok(Some(call.function(func, vec![first], out)));
            };
            let l = lambda(cmp, &[t.clone(), t], 2)?;
            if l.data_type() != DataType::Int32 {
                return Err(FerroError::Analysis(format!(
                    "[DATATYPE_MISMATCH.UNEXPECTED_RETURN_TYPE] Cannot resolve \"{}\" due to data type mismatch: The `lambdafunction` requires return \"INT\" type, but the actual is \"{}\" type. SQLSTATE: 42K09",
                    call.expr,
                    crate::types::spark_type_name(&l.data_type()).to_uppercase()
                )));
            }
            call.function(func, vec![first, l], out)
        }
        HigherOrderFn::MapZipWith => {
            let (k1, v1) = map_types(&first.data_type())
                .ok_or_else(|| call.wrong_type(0, &first, "\"MAP\""))?;
            let second = bind_expr(&args[1], ctx)?;
            let (k2, v2) = map_types(&second.data_type())
                .ok_or_else(|| call.wrong_type(1, &second, "\"MAP\""))?;
            let k = super::higher_order_pairs::zip_key_type(&k1, &k2).ok_or_else(|| {
                FerroError::Analysis(format!(
                    "[DATATYPE_MISMATCH.MAP_ZIP_WITH_DIFF_TYPES] Cannot resolve \"{}\" due to data type mismatch: Input to the `map_zip_with` should have been two maps with compatible key types, but it's [\"{}\", \"{}\"]. SQLSTATE: 42K09",
                    call.expr,
                    crate::types::spark_type_name(&k1).to_uppercase(),
                    crate::types::spark_type_name(&k2).to_uppercase()
                ))
            })?;
            let l = lambda(&args[2], &[k.clone(), v1.clone(), v2.clone()], 3)?;
            let (a, b) = (
                crate::bind::cast_to(first, &map_type(&k, &v1)),
                crate::bind::cast_to(second, &map_type(&k, &v2)),
            );
            let out = map_type(&k, &l.data_type());
            call.function(func, vec![a, b, l], out)
        }
        HigherOrderFn::MapFilter
        | HigherOrderFn::TransformKeys
        | HigherOrderFn::TransformValues => {
            let (k, v) = map_types(&first.data_type())
                .ok_or_else(|| call.wrong_type(0, &first, "\"MAP\""))?;
            let l = lambda(&args[1], &[k.clone(), v.clone()], 2)?;
            let out = match f {
                HigherOrderFn::MapFilter => {
                    boolean(&l, 1)?;
                    first.data_type()
                }
                HigherOrderFn::TransformKeys => map_type(&l.data_type(), &v),
                _ => map_type(&k, &l.data_type()),
            };
            call.function(func, vec![first, l], out)
        }
    }))
}

/// The same type up to the names of struct fields and nullability (Spark's
/// `DataType.equalsStructurally`).
fn structurally_equal(a: &DataType, b: &DataType) -> bool {
    match (a, b) {
        (DataType::Struct(x), DataType::Struct(y)) => {
            x.len() == y.len()
                && x.iter()
                    .zip(y.iter())
                    .all(|(f, g)| structurally_equal(f.data_type(), g.data_type()))
        }
        (DataType::List(x), DataType::List(y)) => structurally_equal(x.data_type(), y.data_type()),
        (DataType::Map(x, _), DataType::Map(y, _)) => {
            structurally_equal(x.data_type(), y.data_type())
        }
        _ => a == b,
    }
}

/// `a` under the field names of `to`, a structurally equal type.
fn relabel(a: &ArrayRef, to: &DataType) -> Result<ArrayRef> {
    if a.data_type() == to {
        return Ok(a.clone());
    }
    match (a.data_type(), to) {
        (DataType::Struct(_), DataType::Struct(fields)) => {
            let s = a.as_struct();
            let columns = s
                .columns()
                .iter()
                .zip(fields.iter())
                .map(|(c, f)| relabel(c, f.data_type()))
                .collect::<Result<Vec<_>>>()?;
            let fields: Fields = fields
                .iter()
                .map(|f| Arc::new(f.as_ref().clone().with_nullable(true)))
                .collect();
            Ok(Arc::new(StructArray::try_new(
                fields,
                columns,
                s.nulls().cloned(),
            )?))
        }
        _ => Ok(arrow_cast::cast(a, to)?),
    }
}

/// Evaluates a higher-order function over `batch`.
pub(crate) fn evaluate_call(
    f: HigherOrderFn,
    args: &[PhysicalExpr],
    batch: &RecordBatch,
) -> Result<ColumnarValue> {
    let n = batch.num_rows();
    let value = |i: usize| -> Result<ArrayRef> { evaluate(&args[i], batch)?.into_array(n) };
    let out: ArrayRef = match f {
        HigherOrderFn::Transform => {
            let list = value(0)?;
            let list = list.as_list::<i32>();
            let (rows, values, offsets) = elements(list);
            let mut vars = vec![values];
            if lambda_arity(&args[1]) > 1 {
                vars.push(positions(list));
            }
            let out = apply(&args[1], batch, &rows, vars)?;
            Arc::new(GenericListArray::<i32>::try_new(
                Arc::new(Field::new("element", out.data_type().clone(), true)),
                offsets,
                out,
                list.nulls().cloned(),
            )?)
        }
        HigherOrderFn::Filter => {
            let list = value(0)?;
            let list = list.as_list::<i32>();
            let (rows, values, _) = elements(list);
            let mut vars = vec![values.clone()];
            if lambda_arity(&args[1]) > 1 {
                vars.push(positions(list));
            }
            let tests = apply(&args[1], batch, &rows, vars)?;
            let tests = tests.as_boolean();
            let keep: BooleanArray = (0..tests.len())
                .map(|i| Some(tests.is_valid(i) && tests.value(i)))
                .collect();
            let kept = arrow_select::filter::filter(&values, &keep)?;
            let mut offsets = Vec::with_capacity(n + 1);
            offsets.push(0i32);
            let mut count = 0i32;
            let mut at = 0usize;
            for r in 0..n {
                let len = list.value_length(r) as usize;
                count += (at..at + len).filter(|&i| keep.value(i)).count() as i32;
                at += len;
                offsets.push(count);
            }
            let field = match list.data_type() {
                DataType::List(f) => f.clone(),
                _ => Arc::new(Field::new("element", kept.data_type().clone(), true)),
            };
            Arc::new(GenericListArray::<i32>::try_new(
                field,
                OffsetBuffer::new(offsets.into()),
                kept,
                list.nulls().cloned(),
            )?)
        }
        HigherOrderFn::Exists | HigherOrderFn::Forall => {
            let list = value(0)?;
            let list = list.as_list::<i32>();
            let (rows, values, _) = elements(list);
            let tests = apply(&args[1], batch, &rows, vec![values])?;
            let tests = tests.as_boolean();
            let decisive = f == HigherOrderFn::Exists;
            let mut out = BooleanBuilder::with_capacity(n);
            let mut at = 0usize;
            for r in 0..n {
                let len = list.value_length(r) as usize;
                if list.is_null(r) {
                    out.append_null();
                } else {
                    let (mut hit, mut unknown) = (false, false);
                    for i in at..at + len {
                        if tests.is_null(i) {
                            unknown = true;
                        } else if tests.value(i) == decisive {
                            hit = true;
                            break;
                        }
                    }
                    if hit {
                        out.append_value(decisive);
                    } else if unknown {
                        out.append_null();
                    } else {
                        out.append_value(!decisive);
                    }
                }
                at += len;
            }
            Arc::new(out.finish())
        }
        HigherOrderFn::Aggregate => aggregate(args, batch)?,
        HigherOrderFn::ZipWith => {
            let (a, b) = (value(0)?, value(1)?);
            let (a, b) = (a.as_list::<i32>(), b.as_list::<i32>());
            let (mut ia, mut ib, mut rows) = (Vec::new(), Vec::new(), Vec::new());
            let mut offsets = vec![0i32];
            let oa = a.value_offsets();
            let ob = b.value_offsets();
            for r in 0..n {
                if a.is_valid(r) && b.is_valid(r) {
                    let (la, lb) = (a.value_length(r), b.value_length(r));
                    for k in 0..la.max(lb) {
                        ia.push((k < la).then(|| (oa[r] + k) as u32));
                        ib.push((k < lb).then(|| (ob[r] + k) as u32));
                        rows.push(r as u32);
                    }
                }
                offsets.push(rows.len() as i32);
            }
            let xa = arrow_select::take::take(a.values(), &UInt32Array::from(ia), None)?;
            let xb = arrow_select::take::take(b.values(), &UInt32Array::from(ib), None)?;
            let out = apply(&args[2], batch, &UInt32Array::from(rows), vec![xa, xb])?;
            Arc::new(GenericListArray::<i32>::try_new(
                Arc::new(Field::new("element", out.data_type().clone(), true)),
                OffsetBuffer::new(offsets.into()),
                out,
                NullBuffer::union(a.nulls(), b.nulls()),
            )?)
        }
        HigherOrderFn::MapFilter
        | HigherOrderFn::TransformKeys
        | HigherOrderFn::TransformValues => map_call(f, &value(0)?, &args[1], batch)?,
        HigherOrderFn::ArraySort => {
            let list = value(0)?;
            let list = list.as_list::<i32>();
            match args.get(1) {
                None => super::higher_order_pairs::sort_default(list)?,
                Some(cmp) => super::higher_order_pairs::sort_with(list, cmp, batch)?,
            }
        }
        HigherOrderFn::MapZipWith => {
            let (a, b) = (value(0)?, value(1)?);
            super::higher_order_pairs::map_zip_with(a.as_map(), b.as_map(), &args[2], batch)?
        }
    };
    Ok(ColumnarValue::Array(out))
}

fn lambda_arity(l: &PhysicalExpr) -> usize {
    match l {
        PhysicalExpr::Lambda { params, .. } => params.len(),
        _ => 0,
    }
}

/// The elements of `list` (those of its rows, from the first row's offset), the row of each,
/// and the offsets rebased to start at 0.
fn elements(list: &GenericListArray<i32>) -> (UInt32Array, ArrayRef, OffsetBuffer<i32>) {
    let offsets = list.value_offsets();
    let (start, end) = (offsets[0] as usize, offsets[list.len()] as usize);
    let values = list.values().slice(start, end - start);
    let mut rows = Vec::with_capacity(end - start);
    for r in 0..list.len() {
        let len = (offsets[r + 1] - offsets[r]) as usize;
        rows.extend(std::iter::repeat_n(r as u32, len));
    }
    let rebased: Vec<i32> = offsets.iter().map(|o| o - offsets[0]).collect();
    (
        UInt32Array::from(rows),
        values,
        OffsetBuffer::new(rebased.into()),
    )
}

/// Each element's position within its array (the `i` of `(x, i) -> ...`).
fn positions(list: &GenericListArray<i32>) -> ArrayRef {
    let mut out = Vec::new();
    for r in 0..list.len() {
        out.extend(0..list.value_length(r));
    }
    Arc::new(Int32Array::from(out))
}

/// Runs `lambda` once over the elements: `vars` hold its parameters' values (one per element,
/// as many as it names), `rows` the batch row of each element.
pub(crate) fn apply(
    lambda: &PhysicalExpr,
    batch: &RecordBatch,
    rows: &UInt32Array,
    vars: Vec<ArrayRef>,
) -> Result<ArrayRef> {
    let (params, body) = match lambda {
        PhysicalExpr::Lambda { params, body } => (params.as_slice(), body.as_ref()),
        other => (&[][..], other),
    };
    let m = rows.len();
    if m == 0 {
        return Ok(new_empty_array(&body.data_type()));
    }
    let schema = batch.schema();
    let mut read = body.column_indices();
    read.sort_unstable();
    let mut fields: Vec<Arc<Field>> = Vec::new();
    let mut columns: Vec<ArrayRef> = Vec::new();
    for &i in &read {
        fields.push(Arc::new(schema.field(i).clone().with_nullable(true)));
        columns.push(arrow_select::take::take(batch.column(i), rows, None)?);
    }
    // The parameters of the lambdas around this one, for an inner body that reads them.
    for (i, f) in schema.fields().iter().enumerate() {
        if f.name().starts_with(LAMBDA_PREFIX) {
            fields.push(f.clone());
            columns.push(arrow_select::take::take(batch.column(i), rows, None)?);
        }
    }
    for ((name, _), v) in params.iter().zip(vars) {
        fields.push(Arc::new(Field::new(name, v.data_type().clone(), true)));
        columns.push(v);
    }
    let elements = RecordBatch::try_new_with_options(
        Arc::new(Schema::new(fields)),
        columns,
        &RecordBatchOptions::new().with_row_count(Some(m)),
    )?;
    let body = body.remap_columns(&|i| read.binary_search(&i).unwrap_or(i));
    evaluate(&body, &elements)?.into_array(m)
}

/// `aggregate(array, zero, merge, finish)`: step `k` merges the `k`-th element of every row
/// that has one.
fn aggregate(args: &[PhysicalExpr], batch: &RecordBatch) -> Result<ArrayRef> {
    let n = batch.num_rows();
    let list = evaluate(&args[0], batch)?.into_array(n)?;
    let list = list.as_list::<i32>();
    let zero = evaluate(&args[1], batch)?.into_array(n)?;
    let acc_type = zero.data_type().clone();
    let mut acc = zero;
    let offsets = list.value_offsets();
    let longest = (0..n)
        .filter(|&r| list.is_valid(r))
        .map(|r| list.value_length(r))
        .max()
        .unwrap_or(0);
    for k in 0..longest {
        let active: Vec<u32> = (0..n)
            .filter(|&r| list.is_valid(r) && list.value_length(r) > k)
            .map(|r| r as u32)
            .collect();
        let rows = UInt32Array::from(active.clone());
        let element: UInt32Array = active
            .iter()
            .map(|&r| (offsets[r as usize] + k) as u32)
            .collect();
        let x = arrow_select::take::take(list.values(), &element, None)?;
        let before = arrow_select::take::take(&acc, &rows, None)?;
        let merged = apply(&args[2], batch, &rows, vec![before, x])?;
        let merged = relabel(&merged, &acc_type)?;
        let mut pick: Vec<(usize, usize)> = (0..n).map(|r| (0, r)).collect();
        for (i, &r) in active.iter().enumerate() {
            pick[r as usize] = (1, i);
        }
        acc = arrow_select::interleave::interleave(&[acc.as_ref(), merged.as_ref()], &pick)?;
    }
    let all = UInt32Array::from((0..n as u32).collect::<Vec<_>>());
    let out = apply(&args[3], batch, &all, vec![acc])?;
    // A NULL array aggregates to NULL.
    let nulls = NullBuffer::union(out.nulls(), list.nulls());
    Ok(arrow_array::make_array(
        out.into_data().into_builder().nulls(nulls).build()?,
    ))
}

/// `map_filter`, `transform_keys`, `transform_values`.
fn map_call(
    f: HigherOrderFn,
    map: &ArrayRef,
    lambda: &PhysicalExpr,
    batch: &RecordBatch,
) -> Result<ArrayRef> {
    let map = map.as_map();
    let offsets = map.value_offsets();
    let (start, end) = (offsets[0] as usize, offsets[map.len()] as usize);
    let keys = map.keys().slice(start, end - start);
    let values = map.values().slice(start, end - start);
    let mut rows = Vec::with_capacity(end - start);
    for r in 0..map.len() {
        rows.extend(std::iter::repeat_n(
            r as u32,
            (offsets[r + 1] - offsets[r]) as usize,
        ));
    }
    let rows = UInt32Array::from(rows);
    let out = apply(lambda, batch, &rows, vec![keys.clone(), values.clone()])?;
    let rebased: Vec<i32> = offsets.iter().map(|o| o - offsets[0]).collect();
    let (keys, values, rebased) = match f {
        HigherOrderFn::MapFilter => {
            let test = out.as_boolean();
            let keep: BooleanArray = (0..test.len())
                .map(|i| Some(test.is_valid(i) && test.value(i)))
                .collect();
            let mut counts = vec![0i32];
            for r in 0..map.len() {
                let (a, b) = (rebased[r] as usize, rebased[r + 1] as usize);
                let kept = (a..b).filter(|&i| keep.value(i)).count() as i32;
                counts.push(counts[r] + kept);
            }
            (
                arrow_select::filter::filter(&keys, &keep)?,
                arrow_select::filter::filter(&values, &keep)?,
                counts,
            )
        }
        HigherOrderFn::TransformKeys => {
            if out.null_count() > 0 {
                return Err(FerroError::Arithmetic(
                    "[NULL_MAP_KEY] Cannot use null as map key. SQLSTATE: 2200E".into(),
                ));
            }
            super::maps::check_unique_keys(&out, &rebased)?;
            (out, values, rebased)
        }
        _ => (keys, out, rebased),
    };
    let entries = StructArray::try_new(
        Fields::from(vec![
            Field::new("key", keys.data_type().clone(), false),
            Field::new("value", values.data_type().clone(), true),
        ]),
        vec![keys, values],
        None,
    )?;
    let field = Arc::new(Field::new("entries", entries.data_type().clone(), false));
    Ok(Arc::new(MapArray::try_new(
        field,
        OffsetBuffer::new(rebased.into()),
        entries,
        map.nulls().cloned(),
        false,
    )?))
}
