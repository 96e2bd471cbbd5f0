//! `approx_count_distinct`: one HyperLogLog++ register set per group, estimated as Spark does.

use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::{Array, ArrayRef, BinaryArray, Int64Array};
use ferrospark_common::{FerroError, Result};

use super::hll::{spark_xxhash64, HyperLogLogPlusPlus, SPARK_HASH_SEED};
use super::{EmitTo, GroupsAccumulator};

/// The registers of every group, `m` bytes each, back to back.
pub struct HllAccumulator {
    hll: HyperLogLogPlusPlus,
    registers: Vec<u8>,
}

impl HllAccumulator {
    /// `approx_count_distinct(x, relative_sd)`.
    pub fn new(relative_sd: f64) -> Result<Self> {
        let hll = HyperLogLogPlusPlus::new(relative_sd).map_err(FerroError::Analysis)?;
        Ok(Self {
            hll,
            registers: Vec::new(),
        })
    }

    fn m(&self) -> usize {
        self.hll.num_registers()
    }

    fn grow(&mut self, total: usize) {
        let m = self.m();
        self.registers.resize(total * m, 0);
    }

    fn take(&mut self, emit: EmitTo) -> Vec<u8> {
        let m = self.m();
        match emit {
            EmitTo::All => std::mem::take(&mut self.registers),
            EmitTo::First(n) => {
                let rest = self.registers.split_off((n * m).min(self.registers.len()));
                std::mem::replace(&mut self.registers, rest)
            }
        }
    }
}

impl GroupsAccumulator for HllAccumulator {
    fn update_batch(&mut self, values: &[ArrayRef], groups: &[u32], total: usize) -> Result<()> {
        self.grow(total);
        let m = self.m();
        let v = &values[0];
        for (r, &g) in groups.iter().enumerate() {
            let hash = spark_xxhash64(v.as_ref(), r, SPARK_HASH_SEED)
                .map_err(|e| FerroError::Unsupported(format!("approx_count_distinct: {e}")))?;
            if let Some(h) = hash {
                let g = g as usize;
                self.hll.update(&mut self.registers[g * m..(g + 1) * m], h);
            }
        }
        Ok(())
    }

    fn merge_batch(&mut self, states: &[ArrayRef], groups: &[u32], total: usize) -> Result<()> {
        self.grow(total);
        let m = self.m();
        let regs = states[0].as_binary::<i32>();
        for (r, &g) in groups.iter().enumerate() {
            let other = regs.value(r);
            if other.len() != m {
                return Err(FerroError::Internal(
                    "approx_count_distinct state of another precision".into(),
                ));
            }
            let g = g as usize;
            self.hll
                .merge(&mut self.registers[g * m..(g + 1) * m], other);
        }
        Ok(())
    }

    fn evaluate(&mut self, emit: EmitTo) -> Result<ArrayRef> {
        let m = self.m();
        let regs = self.take(emit);
        Ok(Arc::new(Int64Array::from_iter_values(
            regs.chunks_exact(m).map(|r| self.hll.estimate(r)),
        )))
    }

    fn state(&mut self, emit: EmitTo) -> Result<Vec<ArrayRef>> {
        let m = self.m();
        let regs = self.take(emit);
        let array: BinaryArray = regs.chunks_exact(m).map(Some).collect();
        debug_assert!(array.null_count() == 0);
        Ok(vec![Arc::new(array)])
    }

    fn size(&self) -> usize {
        self.registers.capacity()
    }
}
