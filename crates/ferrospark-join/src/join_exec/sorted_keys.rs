//! One side's joinable rows in key order, and the merge that pairs equal keys of two sides
//! sorted alike: the index of the sort-merge join.

use arrow_array::ArrayRef;
use arrow_row::{RowConverter, Rows};
use ferrospark_common::{FerroError, Result};

use super::hash_table::{int_key, joinable};

/// Joinable rows of one side in key order, rows of one key in arrival order.
pub(super) enum SortedKeys {
    /// Any keys, compared in the row format.
    Rows { rows: Rows, order: Vec<u32> },
    /// One integer key compared with `=`: `(key, row)` pairs, sorted as integers.
    Int(Vec<(i64, u32)>),
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
            let mut pairs: Vec<(i64, u32)> = values?
                .values()
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
    match (probe, build) {
        (SortedKeys::Int(p), SortedKeys::Int(b)) => {
            let (mut i, mut j) = (0, 0);
            while i < p.len() && j < b.len() {
                let (pk, bk) = (p[i].0, b[j].0);
                if pk < bk {
                    i += 1;
                } else if pk > bk {
                    j += 1;
                } else {
                    let i_end = i + p[i..].iter().take_while(|x| x.0 == pk).count();
                    let j_end = j + b[j..].iter().take_while(|x| x.0 == bk).count();
                    for &(_, pr) in &p[i..i_end] {
                        for &(_, br) in &b[j..j_end] {
                            probe_idx.push(pr);
                            build_idx.push(br);
                        }
                    }
                    i = i_end;
                    j = j_end;
                }
            }
            Ok(())
        }
        (
            SortedKeys::Rows {
                rows: pr,
                order: po,
            },
            SortedKeys::Rows {
                rows: br,
                order: bo,
            },
        ) => {
            merge_pairs((pr, po), (br, bo), probe_idx, build_idx);
            Ok(())
        }
        _ => Err(FerroError::Internal(
            "the two sides of a sort-merge join were sorted differently".into(),
        )),
    }
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
            std::cmp::Ordering::Less => i += 1,
            std::cmp::Ordering::Greater => j += 1,
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
