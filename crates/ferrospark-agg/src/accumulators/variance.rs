//! `stddev_samp`, `stddev_pop`, `var_samp`, `var_pop`: Spark's central-moment buffer
//! `(n, avg, m2)` with its one-pass update and pairwise merge, so results round like Spark's.

use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::Float64Type;
use arrow_array::{Array, ArrayRef, Float64Array};
use ferrospark_common::Result;

use super::{for_each_valid, nulls_from, EmitTo, GroupsAccumulator};

/// Which statistic to hand out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum VarianceKind {
    /// `var_samp` / `variance`
    VarSamp,
    /// `var_pop`
    VarPop,
    /// `stddev_samp` / `stddev` / `std`
    StddevSamp,
    /// `stddev_pop`
    StddevPop,
}

/// The `(n, avg, m2)` buffers of every group.
#[derive(Debug)]
pub struct VarianceAccumulator {
    n: Vec<f64>,
    avg: Vec<f64>,
    m2: Vec<f64>,
    kind: VarianceKind,
}

impl VarianceAccumulator {
    /// An accumulator handing out `kind`.
    pub fn new(kind: VarianceKind) -> Self {
        Self {
            n: Vec::new(),
            avg: Vec::new(),
            m2: Vec::new(),
            kind,
        }
    }

    fn grow(&mut self, total: usize) {
        self.n.resize(total, 0.0);
        self.avg.resize(total, 0.0);
        self.m2.resize(total, 0.0);
    }
}

impl GroupsAccumulator for VarianceAccumulator {
    fn update_batch(&mut self, values: &[ArrayRef], groups: &[u32], total: usize) -> Result<()> {
        self.grow(total);
        let v = values[0].as_primitive::<Float64Type>();
        let (n, avg, m2, x) = (&mut self.n, &mut self.avg, &mut self.m2, v.values());
        for_each_valid(v.nulls(), groups, |r, g| {
            let n1 = n[g] + 1.0;
            let delta = x[r] - avg[g];
            let delta_n = delta / n1;
            avg[g] += delta_n;
            m2[g] += delta * (delta - delta_n);
            n[g] = n1;
        });
        Ok(())
    }

    fn merge_batch(&mut self, states: &[ArrayRef], groups: &[u32], total: usize) -> Result<()> {
        self.grow(total);
        let n2 = states[0].as_primitive::<Float64Type>().values();
        let avg2 = states[1].as_primitive::<Float64Type>().values();
        let m22 = states[2].as_primitive::<Float64Type>().values();
        for (r, &g) in groups.iter().enumerate() {
            let g = g as usize;
            let (na, nb) = (self.n[g], n2[r]);
            let n = na + nb;
            let delta = avg2[r] - self.avg[g];
            let delta_n = if n == 0.0 { 0.0 } else { delta / n };
            self.avg[g] += delta_n * nb;
            self.m2[g] += m22[r] + delta * delta_n * na * nb;
            self.n[g] = n;
        }
        Ok(())
    }

    fn evaluate(&mut self, emit: EmitTo) -> Result<ArrayRef> {
        let n = emit.take(&mut self.n);
        emit.take(&mut self.avg);
        let m2 = emit.take(&mut self.m2);
        let (mut out, mut valid) = (Vec::with_capacity(n.len()), Vec::with_capacity(n.len()));
        for (&n, &m2) in n.iter().zip(&m2) {
            // Spark 3+: a sample statistic of one value is NULL (divide by zero), not NaN.
            let (v, ok) = match self.kind {
                VarianceKind::VarPop => (m2 / n, n > 0.0),
                VarianceKind::StddevPop => ((m2 / n).sqrt(), n > 0.0),
                VarianceKind::VarSamp => (m2 / (n - 1.0), n > 1.0),
                VarianceKind::StddevSamp => ((m2 / (n - 1.0)).sqrt(), n > 1.0),
            };
            out.push(if ok { v } else { 0.0 });
            valid.push(ok);
        }
        Ok(Arc::new(Float64Array::new(out.into(), nulls_from(&valid))))
    }

    fn state(&mut self, emit: EmitTo) -> Result<Vec<ArrayRef>> {
        Ok(vec![
            Arc::new(Float64Array::from(emit.take(&mut self.n))),
            Arc::new(Float64Array::from(emit.take(&mut self.avg))),
            Arc::new(Float64Array::from(emit.take(&mut self.m2))),
        ])
    }

    fn size(&self) -> usize {
        self.n.capacity() * 24
    }
}
