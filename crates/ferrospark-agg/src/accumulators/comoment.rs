//! `corr`, `covar_pop`, `covar_samp`, `regr_sxx`, `regr_syy` and `regr_slope` over pairs: Spark's
//! `PearsonCorrelation` / `Covariance` buffer `(n, xAvg, yAvg, ck, xMk, yMk)` with its one-pass
//! update and pairwise merge, so results round like Spark's. A pair counts only when both
//! values are non-NULL.

use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::Float64Type;
use arrow_array::{Array, ArrayRef, Float64Array};
use arrow_buffer::NullBuffer;
use ferrospark_common::Result;

use super::{for_each_valid, nulls_from, EmitTo, GroupsAccumulator};

/// Which statistic of the pairs to hand out. The buffer's pairs are the arguments in order:
/// `(x, y)` for `corr` and `covar_*`, `(y, x)` for `regr_*` (the dependent variable first), so
/// the co-moment rounds as the covariance inside Spark's `regr_slope` does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CoMomentKind {
    /// `corr(x, y)`
    Corr,
    /// `covar_pop(x, y)`
    CovarPop,
    /// `covar_samp(x, y)`
    CovarSamp,
    /// `regr_sxx(y, x)`
    RegrSxx,
    /// `regr_syy(y, x)`
    RegrSyy,
    /// `regr_slope(y, x)`
    RegrSlope,
    /// `regr_intercept(y, x)`
    RegrIntercept,
    /// `regr_sxy(y, x)`
    RegrSxy,
    /// `regr_r2(y, x)`
    RegrR2,
}

impl CoMomentKind {
    /// The statistic a function name asks for.
    pub fn from_name(name: &str) -> Option<Self> {
        Some(match name {
            "corr" => CoMomentKind::Corr,
            "covar_pop" => CoMomentKind::CovarPop,
            "covar_samp" => CoMomentKind::CovarSamp,
            "regr_sxx" => CoMomentKind::RegrSxx,
            "regr_syy" => CoMomentKind::RegrSyy,
            "regr_slope" => CoMomentKind::RegrSlope,
            "regr_intercept" => CoMomentKind::RegrIntercept,
            "regr_sxy" => CoMomentKind::RegrSxy,
            "regr_r2" => CoMomentKind::RegrR2,
            _ => return None,
        })
    }
}

/// The co-moment buffers of every group, over `(x, y)`.
#[derive(Debug)]
pub struct CoMomentAccumulator {
    n: Vec<f64>,
    x_avg: Vec<f64>,
    y_avg: Vec<f64>,
    ck: Vec<f64>,
    x_mk: Vec<f64>,
    y_mk: Vec<f64>,
    // `m2` as Spark's central-moment aggregates compute it (`delta * (delta - delta / n)`),
    // which rounds differently from `xMk`: `regr_sxx`, `regr_syy` and `regr_slope` use it.
    x_m2: Vec<f64>,
    y_m2: Vec<f64>,
    kind: CoMomentKind,
}

impl CoMomentAccumulator {
    /// An accumulator handing out `kind`.
    pub fn new(kind: CoMomentKind) -> Self {
        Self {
            n: Vec::new(),
            x_avg: Vec::new(),
            y_avg: Vec::new(),
            ck: Vec::new(),
            x_mk: Vec::new(),
            y_mk: Vec::new(),
            x_m2: Vec::new(),
            y_m2: Vec::new(),
            kind,
        }
    }

    /// Every buffer, in the state's field order.
    fn buffers(&mut self) -> [&mut Vec<f64>; 8] {
        [
            &mut self.n,
            &mut self.x_avg,
            &mut self.y_avg,
            &mut self.ck,
            &mut self.x_mk,
            &mut self.y_mk,
            &mut self.x_m2,
            &mut self.y_m2,
        ]
    }

    fn grow(&mut self, total: usize) {
        for v in self.buffers() {
            v.resize(total, 0.0);
        }
    }
}

impl GroupsAccumulator for CoMomentAccumulator {
    fn update_batch(&mut self, values: &[ArrayRef], groups: &[u32], total: usize) -> Result<()> {
        self.grow(total);
        let (x, y) = (
            values[0].as_primitive::<Float64Type>(),
            values[1].as_primitive::<Float64Type>(),
        );
        let nulls = NullBuffer::union(x.nulls(), y.nulls());
        let (xs, ys) = (x.values(), y.values());
        for_each_valid(nulls.as_ref(), groups, |r, g| {
            let n = self.n[g] + 1.0;
            let dx = xs[r] - self.x_avg[g];
            let dy = ys[r] - self.y_avg[g];
            self.x_avg[g] += dx / n;
            self.y_avg[g] += dy / n;
            self.ck[g] += dx * (ys[r] - self.y_avg[g]);
            self.x_mk[g] += dx * (xs[r] - self.x_avg[g]);
            self.y_mk[g] += dy * (ys[r] - self.y_avg[g]);
            self.x_m2[g] += dx * (dx - dx / n);
            self.y_m2[g] += dy * (dy - dy / n);
            self.n[g] = n;
        });
        Ok(())
    }

    fn merge_batch(&mut self, states: &[ArrayRef], groups: &[u32], total: usize) -> Result<()> {
        self.grow(total);
        let s: Vec<&[f64]> = states
            .iter()
            .map(|a| a.as_primitive::<Float64Type>().values().as_ref())
            .collect();
        for (r, &g) in groups.iter().enumerate() {
            let g = g as usize;
            let (n1, n2) = (self.n[g], s[0][r]);
            let n = n1 + n2;
            if n2 == 0.0 {
                continue;
            }
            let dx = s[1][r] - self.x_avg[g];
            let dy = s[2][r] - self.y_avg[g];
            let (dxn, dyn_) = (dx / n, dy / n);
            self.x_avg[g] += dxn * n2;
            self.y_avg[g] += dyn_ * n2;
            self.ck[g] += s[3][r] + dx * dyn_ * n1 * n2;
            self.x_mk[g] += s[4][r] + dx * dxn * n1 * n2;
            self.y_mk[g] += s[5][r] + dy * dyn_ * n1 * n2;
            self.x_m2[g] += s[6][r] + dx * dxn * n1 * n2;
            self.y_m2[g] += s[7][r] + dy * dyn_ * n1 * n2;
            self.n[g] = n;
        }
        Ok(())
    }

    fn evaluate(&mut self, emit: EmitTo) -> Result<ArrayRef> {
        let n = emit.take(&mut self.n);
        let x_avg = emit.take(&mut self.x_avg);
        let y_avg = emit.take(&mut self.y_avg);
        let ck = emit.take(&mut self.ck);
        let x_mk = emit.take(&mut self.x_mk);
        let y_mk = emit.take(&mut self.y_mk);
        let x_m2 = emit.take(&mut self.x_m2);
        let y_m2 = emit.take(&mut self.y_m2);
        let mut out = Vec::with_capacity(n.len());
        let mut valid = Vec::with_capacity(n.len());
        for i in 0..n.len() {
            let v = if n[i] == 0.0 {
                None
            } else {
                match self.kind {
                    // Spark 3+: a sample statistic of one pair is NULL, not NaN.
                    // One pair, or a side that does not vary: NULL, as Spark 4 answers.
                    CoMomentKind::Corr if n[i] == 1.0 || x_mk[i] * y_mk[i] == 0.0 => None,
                    CoMomentKind::Corr => Some(ck[i] / (x_mk[i] * y_mk[i]).sqrt()),
                    CoMomentKind::CovarPop => Some(ck[i] / n[i]),
                    CoMomentKind::CovarSamp if n[i] == 1.0 => None,
                    CoMomentKind::CovarSamp => Some(ck[i] / (n[i] - 1.0)),
                    // `regr_*(y, x)`: the buffer's first value is `y`, its second `x`.
                    CoMomentKind::RegrSxx => Some(y_m2[i]),
                    CoMomentKind::RegrSyy => Some(x_m2[i]),
                    // Spark's `covar_pop / var_pop`, each divided by `n` first.
                    CoMomentKind::RegrSlope if y_m2[i] / n[i] == 0.0 => None,
                    CoMomentKind::RegrSlope => Some((ck[i] / n[i]) / (y_m2[i] / n[i])),
                    // Spark's `covarPop.yAvg - covarPop / varPop * covarPop.xAvg`, the
                    // averages of `y` (first) and `x` (second).
                    CoMomentKind::RegrIntercept if y_m2[i] / n[i] == 0.0 => None,
                    CoMomentKind::RegrIntercept => {
                        Some(x_avg[i] - (ck[i] / n[i]) / (y_m2[i] / n[i]) * y_avg[i])
                    }
                    CoMomentKind::RegrSxy => Some(ck[i]),
                    // As Spark answers: NULL when `x` (the second) does not vary, 1 when `y`
                    // does not.
                    CoMomentKind::RegrR2 if y_mk[i] == 0.0 => None,
                    CoMomentKind::RegrR2 if x_mk[i] == 0.0 => Some(1.0),
                    CoMomentKind::RegrR2 => {
                        let corr = ck[i] / (x_mk[i] * y_mk[i]).sqrt();
                        Some(corr * corr)
                    }
                }
            };
            out.push(v.unwrap_or(0.0));
            valid.push(v.is_some());
        }
        Ok(Arc::new(Float64Array::new(out.into(), nulls_from(&valid))))
    }

    fn state(&mut self, emit: EmitTo) -> Result<Vec<ArrayRef>> {
        Ok(self
            .buffers()
            .into_iter()
            .map(|v| Arc::new(Float64Array::from(emit.take(v))) as ArrayRef)
            .collect())
    }

    fn size(&self) -> usize {
        self.n.capacity() * 64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn column(v: &[Option<f64>]) -> ArrayRef {
        Arc::new(Float64Array::from(v.to_vec()))
    }

    /// `kind` over the pairs, fed in two batches into two groups' buffers merged into one,
    /// and in one batch: the same doubles either way as PySpark gave for these rows.
    fn statistic(kind: CoMomentKind, a: &[Option<f64>], b: &[Option<f64>]) -> Option<f64> {
        let mut acc = CoMomentAccumulator::new(kind);
        acc.update_batch(&[column(a), column(b)], &vec![0; a.len()], 1)
            .expect("update");
        let out = acc.evaluate(EmitTo::All).expect("evaluate");
        let out = out.as_primitive::<Float64Type>();
        out.is_valid(0).then(|| out.value(0))
    }

    #[test]
    fn pairs_give_sparks_doubles() {
        // emp's (id, dept) pairs, one with a NULL dept.
        let id: Vec<Option<f64>> = (1..=8).map(|i| Some(i as f64)).collect();
        let dept = [10.0, 10.0, 20.0, 20.0, f64::NAN, 30.0, 10.0, 40.0]
            .map(|d| (!d.is_nan()).then_some(d))
            .to_vec();
        assert_eq!(
            statistic(CoMomentKind::Corr, &id, &dept),
            Some(0.6568918094443471)
        );
        assert_eq!(statistic(CoMomentKind::CovarSamp, &dept, &id), Some(20.0));
        assert_eq!(
            statistic(CoMomentKind::RegrSlope, &dept, &id),
            Some(2.8767123287671232)
        );
        assert_eq!(
            statistic(CoMomentKind::RegrSxx, &dept, &id),
            Some(41.71428571428571)
        );
        // One pair, or a side that does not vary: NULL.
        assert_eq!(
            statistic(CoMomentKind::Corr, &[Some(1.0)], &[Some(2.0)]),
            None
        );
        assert_eq!(
            statistic(
                CoMomentKind::Corr,
                &[Some(1.0), Some(2.0)],
                &[Some(3.0), Some(3.0)]
            ),
            None
        );
        assert_eq!(
            statistic(CoMomentKind::CovarPop, &[None], &[Some(1.0)]),
            None
        );
    }

    #[test]
    fn merged_states_equal_one_pass_on_these_pairs() {
        let a = [Some(1.0), Some(2.0), Some(4.0), Some(8.0)];
        let b = [Some(3.0), Some(1.0), Some(4.0), Some(1.5)];
        let whole = statistic(CoMomentKind::CovarPop, &a, &b);
        let mut left = CoMomentAccumulator::new(CoMomentKind::CovarPop);
        left.update_batch(&[column(&a[..2]), column(&b[..2])], &[0, 0], 1)
            .expect("update");
        let mut right = CoMomentAccumulator::new(CoMomentKind::CovarPop);
        right
            .update_batch(&[column(&a[2..]), column(&b[2..])], &[0, 0], 1)
            .expect("update");
        left.merge_batch(&right.state(EmitTo::All).expect("state"), &[0], 1)
            .expect("merge");
        let merged = left.evaluate(EmitTo::All).expect("evaluate");
        let merged = merged.as_primitive::<Float64Type>().value(0);
        assert!((merged - whole.expect("a value")).abs() < 1e-12);
    }
}
