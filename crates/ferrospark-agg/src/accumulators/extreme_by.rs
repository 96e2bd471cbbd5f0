//! `max_by(x, ord)` / `min_by(x, ord)`: the `x` of the row with the greatest (least) `ord`,
//! as Spark's `MaxBy` / `MinBy` keep it: rows whose `ord` is NULL are skipped, a tie takes the
//! row seen last, and the `x` kept may itself be NULL. `product(x)`: the product of the
//! non-NULL values as a DOUBLE (NULL when there are none), Spark's `Product`.

use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::Float64Type;
use arrow_array::{Array, ArrayRef, Float64Array};
use arrow_schema::DataType;
use ferrospark_common::Result;

use super::min_max::RowValues;
use super::{EmitTo, GroupsAccumulator};

/// The value at the extreme ordering of each group; the buffer is `(value, ord)`.
pub struct ExtremeByAccumulator {
    values: RowValues,
    ords: RowValues,
    is_max: bool,
}

impl ExtremeByAccumulator {
    /// `max_by` (`is_max`) or `min_by` over values of `value_type` ordered by `ord_type`.
    pub fn new(value_type: &DataType, ord_type: &DataType, is_max: bool) -> Result<Self> {
        Ok(Self {
            values: RowValues::new(value_type)?,
            ords: RowValues::new(ord_type)?,
            is_max,
        })
    }

    fn add(
        &mut self,
        value: &ArrayRef,
        ord: &ArrayRef,
        groups: &[u32],
        total: usize,
    ) -> Result<()> {
        self.values.resize(total);
        self.ords.resize(total);
        let value_rows = self.values.rows(value)?;
        // Spark's comparison holds -0.0 = 0.0 and NaN = NaN; the row encoding orders them
        // apart unless normalised first.
        let ord_rows = self.ords.rows(&ferrospark_expr::normalize_key(ord))?;
        let nulls = ord.logical_nulls();
        for (r, &g) in groups.iter().enumerate() {
            if nulls.as_ref().is_some_and(|n| n.is_null(r)) {
                continue;
            }
            let g = g as usize;
            let candidate = ord_rows.row(r);
            let better = match &self.ords.values[g] {
                None => true,
                Some(cur) => {
                    let c = candidate.as_ref();
                    if self.is_max {
                        c >= cur.as_slice()
                    } else {
                        c <= cur.as_slice()
                    }
                }
            };
            if better {
                self.ords.set(g, candidate.as_ref());
                self.values.set(g, value_rows.row(r).as_ref());
            }
        }
        Ok(())
    }
}

impl GroupsAccumulator for ExtremeByAccumulator {
    fn update_batch(&mut self, values: &[ArrayRef], groups: &[u32], total: usize) -> Result<()> {
        self.add(&values[0], &values[1], groups, total)
    }

    fn merge_batch(&mut self, states: &[ArrayRef], groups: &[u32], total: usize) -> Result<()> {
        self.add(&states[0], &states[1], groups, total)
    }

    fn evaluate(&mut self, emit: EmitTo) -> Result<ArrayRef> {
        self.ords.emit(emit)?;
        self.values.emit(emit)
    }

    fn state(&mut self, emit: EmitTo) -> Result<Vec<ArrayRef>> {
        Ok(vec![self.values.emit(emit)?, self.ords.emit(emit)?])
    }

    fn size(&self) -> usize {
        self.values.size() + self.ords.size()
    }
}

/// `product(x)` per group.
#[derive(Default)]
pub struct ProductAccumulator {
    products: Vec<Option<f64>>,
}

impl ProductAccumulator {
    fn add(&mut self, values: &ArrayRef, groups: &[u32], total: usize) {
        self.products.resize(total, None);
        let v = values.as_primitive::<Float64Type>();
        for (r, &g) in groups.iter().enumerate() {
            if v.is_valid(r) {
                let p = &mut self.products[g as usize];
                *p = Some(p.unwrap_or(1.0) * v.value(r));
            }
        }
    }
}

impl GroupsAccumulator for ProductAccumulator {
    fn update_batch(&mut self, values: &[ArrayRef], groups: &[u32], total: usize) -> Result<()> {
        self.add(&values[0], groups, total);
        Ok(())
    }

    fn merge_batch(&mut self, states: &[ArrayRef], groups: &[u32], total: usize) -> Result<()> {
        self.add(&states[0], groups, total);
        Ok(())
    }

    fn evaluate(&mut self, emit: EmitTo) -> Result<ArrayRef> {
        Ok(Arc::new(Float64Array::from(emit.take(&mut self.products))))
    }

    fn state(&mut self, emit: EmitTo) -> Result<Vec<ArrayRef>> {
        Ok(vec![self.evaluate(emit)?])
    }

    fn size(&self) -> usize {
        self.products.capacity() * 16
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_array::{Int32Array, StringArray};

    #[test]
    fn max_by_takes_the_last_of_ties_and_skips_null_orderings() {
        let mut acc =
            ExtremeByAccumulator::new(&DataType::Utf8, &DataType::Int32, true).expect("test");
        let v: ArrayRef = Arc::new(StringArray::from(vec![
            Some("a"),
            Some("b"),
            None,
            Some("d"),
        ]));
        let o: ArrayRef = Arc::new(Int32Array::from(vec![Some(1), Some(3), Some(3), None]));
        acc.update_batch(&[v, o], &[0, 0, 0, 1], 2).expect("test");
        let out = acc.evaluate(EmitTo::All).expect("test");
        let out = out.as_string::<i32>();
        assert!(
            out.is_null(0),
            "the value of the last row with ord 3 is NULL"
        );
        assert!(out.is_null(1), "a group whose orderings are all NULL");
    }

    #[test]
    fn product_of_no_values_is_null() {
        let mut acc = ProductAccumulator::default();
        let v: ArrayRef = Arc::new(Float64Array::from(vec![Some(2.0), None, Some(-1.5), None]));
        acc.update_batch(&[v], &[0, 0, 0, 1], 2).expect("test");
        let out = acc.evaluate(EmitTo::All).expect("test");
        let out = out.as_primitive::<Float64Type>();
        assert_eq!(out.value(0), -3.0);
        assert!(out.is_null(1));
    }
}
