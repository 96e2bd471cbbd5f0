//! Comparisons of STRUCT and ARRAY values, as Spark orders them: field by field (element by
//! element, a shorter prefix first), a NULL field or element before any value, NaN after
//! every number and equal to NaN, -0.0 equal to 0.0. Arrow's comparison kernels take no
//! nested types, so both sides go through one row encoding (`arrow-row`, whose byte order is
//! exactly that order once floats are normalised) and the rows' bytes are compared.

use std::sync::Arc;

use arrow_array::{Array, ArrayRef, BooleanArray};
use arrow_row::{RowConverter, SortField};
use arrow_schema::{DataType, SortOptions};
use ferrospark_common::{FerroError, Result};

use crate::expr::BinaryOp;

/// Whether `dt` needs this module to be compared.
pub(crate) fn is_nested(dt: &DataType) -> bool {
    matches!(
        dt,
        DataType::Struct(_) | DataType::List(_) | DataType::LargeList(_)
    )
}

/// `l op r` row by row over two nested columns of one type and one length. A NULL value on
/// either side gives NULL (`<=>` gives whether both are NULL).
pub(crate) fn compare_nested(op: BinaryOp, l: &ArrayRef, r: &ArrayRef) -> Result<ArrayRef> {
    let (l, r) = (
        crate::normalize::normalize_key(l),
        crate::normalize::normalize_key(r),
    );
    let options = SortOptions {
        descending: false,
        nulls_first: true,
    };
    let converter = RowConverter::new(vec![SortField::new_with_options(
        l.data_type().clone(),
        options,
    )])?;
    let lr = converter.convert_columns(std::slice::from_ref(&l))?;
    let rr = converter.convert_columns(std::slice::from_ref(&r))?;
    let out: BooleanArray = (0..l.len())
        .map(|i| {
            let (ln, rn) = (l.is_null(i), r.is_null(i));
            if op == BinaryOp::EqNullSafe {
                return Ok(Some(if ln || rn {
                    ln && rn
                } else {
                    lr.row(i) == rr.row(i)
                }));
            }
            if ln || rn {
                return Ok(None);
            }
            let ord = lr.row(i).cmp(&rr.row(i));
            Ok(Some(match op {
                BinaryOp::Eq => ord.is_eq(),
                BinaryOp::NotEq => ord.is_ne(),
                BinaryOp::Lt => ord.is_lt(),
                BinaryOp::LtEq => ord.is_le(),
                BinaryOp::Gt => ord.is_gt(),
                BinaryOp::GtEq => ord.is_ge(),
                other => {
                    return Err(FerroError::Internal(format!(
                        "{} is not a comparison",
                        other.sql()
                    )))
                }
            }))
        })
        .collect::<Result<_>>()?;
    Ok(Arc::new(out))
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_array::{Float64Array, Int32Array, StructArray};
    use arrow_schema::{Field, Fields};

    fn pairs(a: Vec<Option<i32>>, b: Vec<Option<f64>>) -> ArrayRef {
        let fields = Fields::from(vec![
            Field::new("a", DataType::Int32, true),
            Field::new("b", DataType::Float64, true),
        ]);
        Arc::new(StructArray::new(
            fields,
            vec![
                Arc::new(Int32Array::from(a)),
                Arc::new(Float64Array::from(b)),
            ],
            None,
        ))
    }

    #[test]
    fn struct_fields_compare_in_order_with_nulls_first_and_nan_last() {
        let l = pairs(
            vec![None, Some(2), Some(1), Some(1)],
            vec![Some(1.0), Some(3.0), Some(f64::NAN), Some(-0.0)],
        );
        let r = pairs(
            vec![Some(2), Some(2), Some(1), Some(1)],
            vec![Some(3.0), Some(3.0), Some(f64::NAN), Some(0.0)],
        );
        let eq = compare_nested(BinaryOp::Eq, &l, &r).expect("structs compare");
        let eq = eq
            .as_any()
            .downcast_ref::<BooleanArray>()
            .expect("booleans");
        assert_eq!(
            eq.iter().collect::<Vec<_>>(),
            vec![Some(false), Some(true), Some(true), Some(true)]
        );
        let lt = compare_nested(BinaryOp::Lt, &l, &r).expect("structs compare");
        let lt = lt
            .as_any()
            .downcast_ref::<BooleanArray>()
            .expect("booleans");
        assert!(lt.value(0), "a NULL field sorts before a value");
    }
}
