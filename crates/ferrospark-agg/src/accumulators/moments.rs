//! `skewness` and `kurtosis`: Spark's central-moment buffer `(n, avg, m2, m3, m4)` with its
//! one-pass update and pairwise merge, each step in Spark's order of operations so the
//! results round as Spark's do.

use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::Float64Type;
use arrow_array::{Array, ArrayRef, Float64Array};
use ferrospark_common::Result;

use super::{for_each_valid, nulls_from, EmitTo, GroupsAccumulator};

/// Which higher moment to hand out (NULL without values or when they are all equal).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MomentKind {
    /// `skewness(x)`: `sqrt(n) * m3 / sqrt(m2³)`
    Skewness,
    /// `kurtosis(x)`: `n * m4 / m2² - 3`
    Kurtosis,
}

/// The moment buffers of every group.
#[derive(Debug)]
pub struct MomentAccumulator {
    n: Vec<f64>,
    avg: Vec<f64>,
    m2: Vec<f64>,
    m3: Vec<f64>,
    m4: Vec<f64>,
    kind: MomentKind,
}

impl MomentAccumulator {
    /// An accumulator handing out `kind`.
    pub fn new(kind: MomentKind) -> Self {
        Self {
            n: Vec::new(),
            avg: Vec::new(),
            m2: Vec::new(),
            m3: Vec::new(),
            m4: Vec::new(),
            kind,
        }
    }

    fn grow(&mut self, total: usize) {
        for v in [
            &mut self.n,
            &mut self.avg,
            &mut self.m2,
            &mut self.m3,
            &mut self.m4,
        ] {
            v.resize(total, 0.0);
        }
    }

    /// Spark's update with one value `x` (its `CentralMomentAgg.updateExpressions`).
    fn add(&mut self, g: usize, x: f64) {
        let new_n = self.n[g] + 1.0;
        let delta = x - self.avg[g];
        let delta_n = delta / new_n;
        let new_m2 = self.m2[g] + delta * (delta - delta_n);
        let delta2 = delta * delta;
        let delta_n2 = delta_n * delta_n;
        let new_m3 = self.m3[g] - 3.0 * delta_n * new_m2 + delta * (delta2 - delta_n2);
        let new_m4 = self.m4[g] - 4.0 * delta_n * new_m3 - 6.0 * delta_n2 * new_m2
            + delta * (delta * delta2 - delta_n * delta_n2);
        self.n[g] = new_n;
        self.avg[g] += delta_n;
        self.m2[g] = new_m2;
        self.m3[g] = new_m3;
        self.m4[g] = new_m4;
    }

    /// Spark's merge of a partial buffer into group `g`.
    fn merge(&mut self, g: usize, n2: f64, avg2: f64, m2r: f64, m3r: f64, m4r: f64) {
        let (n1, m2l, m3l, m4l) = (self.n[g], self.m2[g], self.m3[g], self.m4[g]);
        let n = n1 + n2;
        let delta = avg2 - self.avg[g];
        let delta_n = if n == 0.0 { 0.0 } else { delta / n };
        self.avg[g] += delta_n * n2;
        self.m2[g] = m2l + m2r + delta * delta_n * n1 * n2;
        self.m3[g] = m3l
            + m3r
            + delta_n * delta_n * delta * n1 * n2 * (n1 - n2)
            + 3.0 * delta_n * (n1 * m2r - n2 * m2l);
        self.m4[g] = m4l
            + m4r
            + delta_n * delta_n * delta_n * delta * n1 * n2 * (n1 * n1 - n1 * n2 + n2 * n2)
            + 6.0 * delta_n * delta_n * (n1 * n1 * m2r + n2 * n2 * m2l)
            + 4.0 * delta_n * (n1 * m3r - n2 * m3l);
        self.n[g] = n;
    }
}

impl GroupsAccumulator for MomentAccumulator {
    fn update_batch(&mut self, values: &[ArrayRef], groups: &[u32], total: usize) -> Result<()> {
        self.grow(total);
        let v = values[0].as_primitive::<Float64Type>();
        let x = v.values();
        for_each_valid(v.nulls(), groups, |r, g| self.add(g, x[r]));
        Ok(())
    }

    fn merge_batch(&mut self, states: &[ArrayRef], groups: &[u32], total: usize) -> Result<()> {
        self.grow(total);
        let col = |k: usize| states[k].as_primitive::<Float64Type>().values();
        let (n, avg, m2, m3, m4) = (col(0), col(1), col(2), col(3), col(4));
        for (r, &g) in groups.iter().enumerate() {
            self.merge(g as usize, n[r], avg[r], m2[r], m3[r], m4[r]);
        }
        Ok(())
    }

    fn evaluate(&mut self, emit: EmitTo) -> Result<ArrayRef> {
        let n = emit.take(&mut self.n);
        emit.take(&mut self.avg);
        let m2 = emit.take(&mut self.m2);
        let m3 = emit.take(&mut self.m3);
        let m4 = emit.take(&mut self.m4);
        let mut out = Vec::with_capacity(n.len());
        let mut valid = Vec::with_capacity(n.len());
        for g in 0..n.len() {
            let v = if m2[g] == 0.0 {
                f64::NAN
            } else {
                match self.kind {
                    MomentKind::Skewness => n[g].sqrt() * m3[g] / (m2[g] * m2[g] * m2[g]).sqrt(),
                    MomentKind::Kurtosis => n[g] * m4[g] / (m2[g] * m2[g]) - 3.0,
                }
            };
            out.push(v);
            // Spark 3+ (`spark.sql.legacy.statisticalAggregate` off): NULL, not NaN, when
            // m2 is 0 (one value, or all equal).
            valid.push(n[g] > 0.0 && m2[g] != 0.0);
        }
        Ok(Arc::new(Float64Array::new(out.into(), nulls_from(&valid))))
    }

    fn state(&mut self, emit: EmitTo) -> Result<Vec<ArrayRef>> {
        Ok([
            &mut self.n,
            &mut self.avg,
            &mut self.m2,
            &mut self.m3,
            &mut self.m4,
        ]
        .into_iter()
        .map(|v| Arc::new(Float64Array::from(emit.take(v))) as ArrayRef)
        .collect())
    }

    fn size(&self) -> usize {
        self.n.capacity() * 40
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(kind: MomentKind, xs: &[f64], split: usize) -> f64 {
        // Two partial buffers merged, as a two-step aggregation does.
        let mut a = MomentAccumulator::new(kind);
        let mut b = MomentAccumulator::new(kind);
        let part = |acc: &mut MomentAccumulator, v: &[f64]| {
            let arr: ArrayRef = Arc::new(Float64Array::from(v.to_vec()));
            acc.update_batch(&[arr], &vec![0; v.len()], 1)
                .expect("update");
        };
        part(&mut a, &xs[..split]);
        part(&mut b, &xs[split..]);
        let state = b.state(EmitTo::All).expect("state");
        a.merge_batch(&state, &[0], 1).expect("merge");
        a.evaluate(EmitTo::All)
            .expect("evaluate")
            .as_primitive::<Float64Type>()
            .value(0)
    }

    /// The examples of Spark's own docs for these functions.
    #[test]
    fn skewness_and_kurtosis_are_sparks() {
        let xs = [-10.0, -20.0, 100.0, 1000.0];
        for split in [0, 2, 4] {
            assert!((run(MomentKind::Skewness, &xs, split) - 1.1135657469022013).abs() < 1e-12);
            assert!((run(MomentKind::Kurtosis, &xs, split) + 0.7014368047529618).abs() < 1e-12);
        }
        assert_eq!(
            run(MomentKind::Kurtosis, &[1.0, 10.0, 100.0, 10.0, 1.0], 5),
            0.19432323191698986
        );
        let mut same = MomentAccumulator::new(MomentKind::Skewness);
        let arr: ArrayRef = Arc::new(Float64Array::from(vec![3.0, 3.0]));
        same.update_batch(&[arr], &[0, 0], 1).expect("update");
        assert!(same.evaluate(EmitTo::All).expect("evaluate").is_null(0));
    }
}
