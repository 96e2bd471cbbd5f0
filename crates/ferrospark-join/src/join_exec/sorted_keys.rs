//! One side's joinable rows in key order, and the merge that pairs equal keys of two sides
//! sorted alike: the index of the sort-merge join.

use arrow_array::ArrayRef;
use arrow_buffer::ScalarBuffer;
use arrow_row::{RowConverter, Rows};
use ferrospark_common::{FerroError, Result};

use super::hash_table::{int_key, joinable};

/// Joinable rows of one side in key order, rows of one key in arrival order.
pub(super) enum SortedKeys {
    /// Any keys, compared in the row format.
    Rows { rows: Rows, order: Vec<u32> },
    /// One integer key compared with `=`: `(key, row)` pairs, sorted as integers.
    Int(Vec<(i64, u32)>),
    /// One integer key that arrived sorted, every row joinable: row `i` has key `keys[i]`
    /// (the key column itself, nothing copied or sorted).
    IntInOrder(ScalarBuffer<i64>),
}

impl SortedKeys {
    /// Sorts the joinable rows of `keys`.
    pub(super) fn new(
        converter: &RowConverter,
        keys: &[ArrayRef],
        null_safe: &[bool],
    ) -> Result<Self> {
        let n = keys.first().map_or(0, |k| k.len());
        let valid = joinable(keys, null_safe, n);
        let keep = |r: usize| valid.as_ref().is_none_or(|v| v.is_valid(r));
        if let Some(values) = int_key(keys, null_safe) {
            let values = values?;
            let raw = values.values();
            if valid.is_none() && raw.windows(2).all(|w| w[0] <= w[1]) {
                return Ok(SortedKeys::IntInOrder(raw.clone()));
            }
            let mut pairs: Vec<(i64, u32)> = raw
                .iter()
                .copied()
                .enumerate()
                .filter(|(r, _)| keep(*r))
                .map(|(r, k)| (k, r as u32))
                .collect();
            // Row numbers are distinct, so an unstable sort of the pairs keeps arrival order
            // within a key.
            pairs.sort_unstable();
            return Ok(SortedKeys::Int(pairs));
        }
        let rows = converter.convert_columns(keys)?;
        let mut order: Vec<u32> = (0..n as u32).filter(|&r| keep(r as usize)).collect();
        order.sort_by(|&a, &b| rows.row(a as usize).cmp(&rows.row(b as usize)));
        Ok(SortedKeys::Rows { rows, order })
    }

    pub(super) fn size(&self) -> usize {
        match self {
            SortedKeys::Rows { rows, order } => rows.size() + order.capacity() * 4,
            SortedKeys::Int(pairs) => pairs.capacity() * 16,
            // The key column is shared with the batch, already counted there.
            SortedKeys::IntInOrder(_) => 0,
        }
    }
}

/// One integer-keyed sorted side, read as `(key, row)` at each position.
trait IntSide {
    fn len(&self) -> usize;
    fn at(&self, i: usize) -> (i64, u32);
}

impl IntSide for [(i64, u32)] {
    fn len(&self) -> usize {
        <[(i64, u32)]>::len(self)
    }
    #[inline]
    fn at(&self, i: usize) -> (i64, u32) {
        self[i]
    }
}

impl IntSide for ScalarBuffer<i64> {
    fn len(&self) -> usize {
        <[i64]>::len(self)
    }
    #[inline]
    fn at(&self, i: usize) -> (i64, u32) {
        (self[i], i as u32)
    }
}

/// The first position at or after `from` whose key is not less than `key` (`side` sorted):
/// doubling steps, then a binary search, so skipping far ahead costs a logarithm.
fn gallop(side: &(impl IntSide + ?Sized), from: usize, key: i64) -> usize {
    let n = side.len();
    let (mut lo, mut step) = (from, 1);
    while lo + step < n && side.at(lo + step).0 < key {
        lo += step;
        step *= 2;
    }
    let mut hi = (lo + step).min(n);
    // side[lo] < key unless lo == from; the answer is in (lo, hi].
    if lo < n && side.at(lo).0 >= key {
        return lo;
    }
    while lo + 1 < hi {
        let mid = lo + (hi - lo) / 2;
        if side.at(mid).0 < key {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    hi
}

fn merge_int(
    p: &(impl IntSide + ?Sized),
    b: &(impl IntSide + ?Sized),
    probe_idx: &mut Vec<u32>,
    build_idx: &mut Vec<u32>,
) {
    let (pn, bn) = (p.len(), b.len());
    let (mut i, mut j) = (0, 0);
    while i < pn && j < bn {
        let (pk, bk) = (p.at(i).0, b.at(j).0);
        if pk < bk {
            i = gallop(p, i, bk);
        } else if pk > bk {
            j = gallop(b, j, pk);
        } else {
            let mut i_end = i + 1;
            while i_end < pn && p.at(i_end).0 == pk {
                i_end += 1;
            }
            let mut j_end = j + 1;
            while j_end < bn && b.at(j_end).0 == bk {
                j_end += 1;
            }
            for x in i..i_end {
                let pr = p.at(x).1;
                for y in j..j_end {
                    probe_idx.push(pr);
                    build_idx.push(b.at(y).1);
                }
            }
            i = i_end;
            j = j_end;
        }
    }
}

/// Every pair of equal keys of two sides sorted alike (from the same key types), as
/// `(probe row, build row)`, in key order.
pub(super) fn merge_sorted(
    probe: &SortedKeys,
    build: &SortedKeys,
    probe_idx: &mut Vec<u32>,
    build_idx: &mut Vec<u32>,
) -> Result<()> {
    use SortedKeys::{Int, IntInOrder};
    match (probe, build) {
        (Int(p), Int(b)) => merge_int(p.as_slice(), b.as_slice(), probe_idx, build_idx),
        (Int(p), IntInOrder(b)) => merge_int(p.as_slice(), b, probe_idx, build_idx),
        (IntInOrder(p), Int(b)) => merge_int(p, b.as_slice(), probe_idx, build_idx),
        (IntInOrder(p), IntInOrder(b)) => merge_int(p, b, probe_idx, build_idx),
        (
            SortedKeys::Rows {
                rows: pr,
                order: po,
            },
            SortedKeys::Rows {
                rows: br,
                order: bo,
            },
        ) => merge_pairs((pr, po), (br, bo), probe_idx, build_idx),
        _ => {
            return Err(FerroError::Internal(
                "the two sides of a sort-merge join were sorted differently".into(),
            ))
        }
    }
    Ok(())
}

/// The first position at or after `from` of `order` whose row is not below `key`.
fn gallop_rows(rows: &Rows, order: &[u32], from: usize, key: arrow_row::Row<'_>) -> usize {
    let below = |i: usize| rows.row(order[i] as usize) < key;
    let n = order.len();
    let (mut lo, mut step) = (from, 1);
    if lo >= n || !below(lo) {
        return lo;
    }
    while lo + step < n && below(lo + step) {
        lo += step;
        step *= 2;
    }
    let mut hi = (lo + step).min(n);
    while lo + 1 < hi {
        let mid = lo + (hi - lo) / 2;
        if below(mid) {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    hi
}

/// Every pair of equal keys of two sorted sides, as `(probe row, build row)`, in key order.
fn merge_pairs(
    probe: (&Rows, &[u32]),
    build: (&Rows, &[u32]),
    probe_idx: &mut Vec<u32>,
    build_idx: &mut Vec<u32>,
) {
    let (prows, porder) = probe;
    let (brows, border) = build;
    let (mut i, mut j) = (0, 0);
    while i < porder.len() && j < border.len() {
        let (pk, bk) = (prows.row(porder[i] as usize), brows.row(border[j] as usize));
        match pk.cmp(&bk) {
            std::cmp::Ordering::Less => i = gallop_rows(prows, porder, i, bk),
            std::cmp::Ordering::Greater => j = gallop_rows(brows, border, j, pk),
            std::cmp::Ordering::Equal => {
                let i_end = i + porder[i..]
                    .iter()
                    .take_while(|&&p| prows.row(p as usize) == pk)
                    .count();
                let j_end = j + border[j..]
                    .iter()
                    .take_while(|&&b| brows.row(b as usize) == bk)
                    .count();
                for &p in &porder[i..i_end] {
                    for &b in &border[j..j_end] {
                        probe_idx.push(p);
                        build_idx.push(b);
                    }
                }
                i = i_end;
                j = j_end;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gallop_finds_the_first_key_not_below() {
        let side: Vec<(i64, u32)> = [1, 3, 3, 5, 8, 8, 8, 13, 21]
            .iter()
            .enumerate()
            .map(|(i, &k)| (k, i as u32))
            .collect();
        let s = side.as_slice();
        for from in 0..side.len() {
            for key in -1..25 {
                let want = (from..side.len())
                    .find(|&i| side[i].0 >= key)
                    .unwrap_or(side.len());
                let want = if from < side.len() && side[from].0 >= key {
                    from
                } else {
                    want
                };
                assert_eq!(gallop(s, from, key), want, "from {from} key {key}");
            }
        }
    }
}
