//! `bit_and`, `bit_or`, `bit_xor`: the bitwise AND / OR / XOR of a group's non-NULL
//! integers, in the input's own type; NULL for a group without values.

use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::{Int16Type, Int32Type, Int64Type, Int8Type};
use arrow_array::{Array, ArrayRef, Int64Array};
use arrow_schema::DataType;
use ferrospark_common::{FerroError, Result};

use super::{for_each_valid, nulls_from, EmitTo, GroupsAccumulator};

/// Which bitwise fold.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BitOp {
    /// `bit_and(x)`
    And,
    /// `bit_or(x)`
    Or,
    /// `bit_xor(x)`
    Xor,
}

impl BitOp {
    /// The function's name.
    pub fn name(self) -> &'static str {
        match self {
            BitOp::And => "bit_and",
            BitOp::Or => "bit_or",
            BitOp::Xor => "bit_xor",
        }
    }

    fn fold(self, acc: i64, v: i64) -> i64 {
        match self {
            BitOp::And => acc & v,
            BitOp::Or => acc | v,
            BitOp::Xor => acc ^ v,
        }
    }
}

/// Every group's folded bits (sign-extended to 64) and whether it saw a value.
pub struct BitAccumulator {
    op: BitOp,
    input: DataType,
    bits: Vec<i64>,
    seen: Vec<bool>,
}

impl BitAccumulator {
    /// `op` over integers of type `input`.
    pub fn new(op: BitOp, input: DataType) -> Self {
        Self {
            op,
            input,
            bits: Vec::new(),
            seen: Vec::new(),
        }
    }

    fn grow(&mut self, total: usize) {
        self.bits.resize(total, 0);
        self.seen.resize(total, false);
    }

    fn add(&mut self, g: usize, v: i64) {
        self.bits[g] = if self.seen[g] {
            self.op.fold(self.bits[g], v)
        } else {
            v
        };
        self.seen[g] = true;
    }

    /// The values of an integer column, widened to 64 bits.
    fn widened(a: &ArrayRef) -> Result<Int64Array> {
        Ok(match a.data_type() {
            DataType::Int8 => a.as_primitive::<Int8Type>().unary(i64::from),
            DataType::Int16 => a.as_primitive::<Int16Type>().unary(i64::from),
            DataType::Int32 => a.as_primitive::<Int32Type>().unary(i64::from),
            DataType::Int64 => a.as_primitive::<Int64Type>().clone(),
            other => {
                return Err(FerroError::Internal(format!(
                    "bitwise aggregate of {other}"
                )))
            }
        })
    }
}

impl GroupsAccumulator for BitAccumulator {
    fn update_batch(&mut self, values: &[ArrayRef], groups: &[u32], total: usize) -> Result<()> {
        self.grow(total);
        let v = Self::widened(&values[0])?;
        for_each_valid(v.nulls(), groups, |r, g| self.add(g, v.value(r)));
        Ok(())
    }

    fn merge_batch(&mut self, states: &[ArrayRef], groups: &[u32], total: usize) -> Result<()> {
        self.grow(total);
        let v = states[0].as_primitive::<Int64Type>();
        for (r, &g) in groups.iter().enumerate() {
            if v.is_valid(r) {
                self.add(g as usize, v.value(r));
            }
        }
        Ok(())
    }

    fn evaluate(&mut self, emit: EmitTo) -> Result<ArrayRef> {
        let bits = emit.take(&mut self.bits);
        let seen = emit.take(&mut self.seen);
        let out: ArrayRef = Arc::new(Int64Array::new(bits.into(), nulls_from(&seen)));
        // Back to the input's width: the folded bits of narrower integers fit it.
        Ok(arrow_cast::cast(&out, &self.input)?)
    }

    fn state(&mut self, emit: EmitTo) -> Result<Vec<ArrayRef>> {
        let bits = emit.take(&mut self.bits);
        let seen = emit.take(&mut self.seen);
        Ok(vec![Arc::new(Int64Array::new(
            bits.into(),
            nulls_from(&seen),
        ))])
    }

    fn size(&self) -> usize {
        self.bits.capacity() * 9
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn folds_per_group_in_the_input_type() {
        let mut acc = BitAccumulator::new(BitOp::Xor, DataType::Int8);
        let v: ArrayRef = Arc::new(arrow_array::Int8Array::from(vec![
            Some(3),
            None,
            Some(5),
            Some(-1),
        ]));
        acc.update_batch(&[v], &[0, 0, 0, 1], 3).expect("update");
        let out = acc.evaluate(EmitTo::All).expect("evaluate");
        let out = out.as_primitive::<Int8Type>();
        assert_eq!(out.value(0), 6);
        assert_eq!(out.value(1), -1);
        assert!(out.is_null(2));
    }
}
