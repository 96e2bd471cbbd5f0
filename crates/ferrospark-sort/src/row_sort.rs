//! A stable sort of rows in Arrow's row format, specialised for the keys operators usually
//! sort by (integers, dates, timestamps).
//!
//! Fixed-width rows are reduced to the bytes that differ between rows: a byte position that
//! holds the same value in every row (a validity marker where nothing is NULL, the high
//! bytes of small integers, the low bytes of whole-day timestamps) cannot change any
//! comparison. When the rest fit in 8 bytes, the keys are sorted as `u64`s by a least
//! significant digit radix sort, which skips digits every key shares; up to 32 bytes they are
//! packed into words and compared. Either way two threads sort halves that are then merged.
//! Other rows are compared as byte strings. Rows with equal keys keep their input order.

use arrow_array::cast::AsArray;
use arrow_array::types::Int64Type;
use arrow_array::{Array, ArrayRef};
use arrow_cast::cast;
use arrow_row::Rows;
use arrow_schema::{DataType, SortOptions};

/// The stable order of rows by integer-like `keys` (integers, dates, timestamps, durations)
/// when their values pack into one `u64`: each column becomes a dense code (its value less
/// the column's minimum, divided by the greatest common divisor of the differences; NULL
/// first or last; flipped when descending) in as few bits as its range needs, and the codes
/// are radix-sorted. `None` when a key is of another type or the codes need over 64 bits;
/// then sort the row format with [`sort_rows`].
pub fn sort_dense_keys(keys: &[ArrayRef], options: &[SortOptions]) -> Option<Vec<u32>> {
    let n = keys.first()?.len();
    let mut codes: Vec<(Vec<u64>, u32)> = Vec::with_capacity(keys.len());
    let mut total = 0u32;
    for (k, o) in keys.iter().zip(options) {
        let (c, bits) = dense_codes(k, *o)?;
        total += bits;
        if total > 64 {
            return None;
        }
        codes.push((c, bits));
    }
    let mut packed = vec![0u64; n];
    for (c, bits) in codes {
        for (p, v) in packed.iter_mut().zip(c) {
            // `bits` may be 64 for a single wide key: shift in two steps so it cannot overflow.
            *p = ((*p << (bits / 2)) << (bits - bits / 2)) | v;
        }
    }
    Some(if n < 2 {
        (0..n as u32).collect()
    } else {
        radix_sorted(&packed)
    })
}

/// One key column as dense order-preserving codes, and the bits they need.
fn dense_codes(key: &ArrayRef, o: SortOptions) -> Option<(Vec<u64>, u32)> {
    let as_i64 = match key.data_type() {
        DataType::Int8
        | DataType::Int16
        | DataType::Int32
        | DataType::Int64
        | DataType::Date32
        | DataType::Date64
        | DataType::Timestamp(_, _)
        | DataType::Duration(_) => cast(key, &DataType::Int64).ok()?,
        _ => return None,
    };
    let values = as_i64.as_primitive::<Int64Type>();
    let valid = |i: usize| values.is_valid(i);
    let n = values.len();
    let (mut lo, mut hi) = (i64::MAX, i64::MIN);
    for i in (0..n).filter(|&i| valid(i)) {
        let v = values.value(i);
        lo = lo.min(v);
        hi = hi.max(v);
    }
    let has_nulls = values.null_count() > 0;
    if lo > hi {
        // All NULL (or empty): one code for every row.
        return Some((vec![0; n], 0));
    }
    let mut g = 0u64;
    for i in (0..n).filter(|&i| valid(i)) {
        g = gcd(g, values.value(i).abs_diff(lo));
        if g == 1 {
            break;
        }
    }
    let g = g.max(1);
    let top = hi.abs_diff(lo) / g;
    // NULL takes 0 (first) or top + 1 (last); values shift up by one when NULL is first.
    let (shift, null_code, max_code) = match (has_nulls, o.nulls_first) {
        (false, _) => (0, 0, top),
        (true, true) => (1, 0, top.checked_add(1)?),
        (true, false) => (0, top.checked_add(1)?, top.checked_add(1)?),
    };
    let bits = 64 - max_code.leading_zeros();
    let codes = (0..n)
        .map(|i| {
            let c = if valid(i) {
                values.value(i).abs_diff(lo) / g + shift
            } else {
                null_code
            };
            if o.descending && valid(i) {
                // Descending flips the values' order but not where NULLs go.
                let (first, last) = if has_nulls && o.nulls_first {
                    (1, max_code)
                } else {
                    (0, top)
                };
                first + (last - c)
            } else {
                c
            }
        })
        .collect();
    Some((codes, bits))
}

fn gcd(mut a: u64, mut b: u64) -> u64 {
    while b != 0 {
        (a, b) = (b, a % b);
    }
    a
}

/// The permutation that sorts `rows`, stable.
pub fn sort_rows(rows: &Rows) -> Vec<u32> {
    let n = rows.num_rows();
    let width = if n > 0 { rows.row(0).as_ref().len() } else { 0 };
    let fixed = (1..n).all(|i| rows.row(i).as_ref().len() == width);
    if !fixed || n < 2 {
        let mut order: Vec<u32> = (0..n as u32).collect();
        order.sort_by(|&a, &b| rows.row(a as usize).cmp(&rows.row(b as usize)));
        return order;
    }
    let varying = varying_bytes(rows, width);
    match varying.len().div_ceil(8) {
        0 => (0..n as u32).collect(),
        1 => radix_sorted(&pack_u64(rows, &varying)),
        2 => packed::<2>(rows, &varying),
        3 => packed::<3>(rows, &varying),
        4 => packed::<4>(rows, &varying),
        _ => {
            let mut order: Vec<u32> = (0..n as u32).collect();
            order.sort_by(|&a, &b| rows.row(a as usize).cmp(&rows.row(b as usize)));
            order
        }
    }
}

/// The byte positions whose value is not the same in every row.
fn varying_bytes(rows: &Rows, width: usize) -> Vec<usize> {
    let first: Vec<u8> = rows.row(0).as_ref().to_vec();
    let mut differs = vec![0u8; width];
    for i in 1..rows.num_rows() {
        for ((d, b), f) in differs.iter_mut().zip(rows.row(i).as_ref()).zip(&first) {
            *d |= b ^ f;
        }
    }
    (0..width).filter(|&j| differs[j] != 0).collect()
}

/// Each row's varying bytes as one big-endian `u64`.
fn pack_u64(rows: &Rows, varying: &[usize]) -> Vec<u64> {
    (0..rows.num_rows())
        .map(|i| {
            let bytes = rows.row(i);
            let bytes = bytes.as_ref();
            varying
                .iter()
                .fold(0u64, |acc, &j| (acc << 8) | u64::from(bytes[j]))
        })
        .collect()
}

/// Bits per radix digit: 2048 counters stay in the first-level cache.
const DIGIT_BITS: u32 = 11;

/// The stable order of `keys`: each half radix-sorted on its own thread, then merged.
fn radix_sorted(keys: &[u64]) -> Vec<u32> {
    let n = keys.len();
    let mid = n / 2;
    let (right, left) =
        ferrospark_common::workers::join(|| radix_sort(keys, mid, n), || radix_sort(keys, 0, mid));
    let mut order = Vec::with_capacity(n);
    let (mut i, mut j) = (0, 0);
    while i < left.len() && j < right.len() {
        // Ties go to the left half, whose rows came first.
        if keys[right[j] as usize] < keys[left[i] as usize] {
            order.push(right[j]);
            j += 1;
        } else {
            order.push(left[i]);
            i += 1;
        }
    }
    order.extend_from_slice(&left[i..]);
    order.extend_from_slice(&right[j..]);
    order
}

/// Row numbers `from..to` in the stable order of their keys (least significant digit first;
/// a digit every key shares is skipped).
fn radix_sort(keys: &[u64], from: usize, to: usize) -> Vec<u32> {
    let (lo, hi) = keys[from..to]
        .iter()
        .fold((u64::MAX, 0u64), |(lo, hi), &k| (lo.min(k), hi.max(k)));
    let bits = 64 - (lo ^ hi).leading_zeros();
    let mut src: Vec<(u64, u32)> = (from..to).map(|i| (keys[i], i as u32)).collect();
    let mut dst = vec![(0u64, 0u32); src.len()];
    let buckets = 1usize << DIGIT_BITS;
    let mask = (buckets - 1) as u64;
    let mut shift = 0;
    while shift < bits {
        let mut counts = vec![0usize; buckets];
        for &(k, _) in &src {
            counts[((k >> shift) & mask) as usize] += 1;
        }
        if counts.contains(&src.len()) {
            shift += DIGIT_BITS;
            continue;
        }
        let mut at = 0;
        for c in counts.iter_mut() {
            let here = *c;
            *c = at;
            at += here;
        }
        for &(k, i) in &src {
            let d = ((k >> shift) & mask) as usize;
            dst[counts[d]] = (k, i);
            counts[d] += 1;
        }
        std::mem::swap(&mut src, &mut dst);
        shift += DIGIT_BITS;
    }
    src.into_iter().map(|(_, i)| i).collect()
}

/// Each row's varying bytes as `K` big-endian words (zero-padded), sorted with the row
/// number as the last key (which makes the order stable) on two threads, then merged.
fn packed<const K: usize>(rows: &Rows, varying: &[usize]) -> Vec<u32> {
    let n = rows.num_rows();
    let mut keys: Vec<([u64; K], u32)> = Vec::with_capacity(n);
    for i in 0..n {
        let bytes = rows.row(i);
        let bytes = bytes.as_ref();
        let mut words = [0u64; K];
        for (w, chunk) in words.iter_mut().zip(varying.chunks(8)) {
            let mut b = [0u8; 8];
            for (slot, &j) in b.iter_mut().zip(chunk) {
                *slot = bytes[j];
            }
            *w = u64::from_be_bytes(b);
        }
        keys.push((words, i as u32));
    }
    let mid = n / 2;
    let (left, right) = keys.split_at_mut(mid);
    ferrospark_common::workers::join(|| right.sort_unstable(), || left.sort_unstable());
    let (left, right) = keys.split_at(mid);
    let mut order = Vec::with_capacity(n);
    let (mut i, mut j) = (0, 0);
    while i < left.len() && j < right.len() {
        if left[i] <= right[j] {
            order.push(left[i].1);
            i += 1;
        } else {
            order.push(right[j].1);
            j += 1;
        }
    }
    order.extend(left[i..].iter().map(|k| k.1));
    order.extend(right[j..].iter().map(|k| k.1));
    order
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use arrow_array::{ArrayRef, Int32Array, Int64Array, StringArray};
    use arrow_row::{RowConverter, SortField};
    use arrow_schema::SortOptions;
    use rand::rngs::StdRng;
    use rand::{Rng, SeedableRng};

    use super::{sort_dense_keys, sort_rows};

    /// The stable order by comparing whole rows, the reference every path must match.
    fn reference(rows: &arrow_row::Rows) -> Vec<u32> {
        let mut order: Vec<u32> = (0..rows.num_rows() as u32).collect();
        order.sort_by(|&a, &b| rows.row(a as usize).cmp(&rows.row(b as usize)));
        order
    }

    fn rows_of(columns: Vec<ArrayRef>, descending: &[bool]) -> arrow_row::Rows {
        let fields = columns
            .iter()
            .zip(descending)
            .map(|(c, &d)| {
                SortField::new_with_options(
                    c.data_type().clone(),
                    SortOptions {
                        descending: d,
                        nulls_first: !d,
                    },
                )
            })
            .collect();
        RowConverter::new(fields)
            .and_then(|c| c.convert_columns(&columns))
            .expect("rows")
    }

    #[test]
    fn every_path_is_the_stable_reference_order() {
        let mut rng = StdRng::seed_from_u64(5);
        for n in [0usize, 1, 2, 7, 100, 5000] {
            // Few distinct small keys (the radix path), with NULLs.
            let small: Int32Array = (0..n)
                .map(|_| (rng.random_range(0..10) > 0).then(|| rng.random_range(-3..40)))
                .collect();
            // Wide keys (packed words).
            let wide: Int64Array = (0..n).map(|_| Some(rng.random::<i64>())).collect();
            let text: StringArray = (0..n)
                .map(|_| Some(["a", "bb", "", "日本"][rng.random_range(0..4)]))
                .collect();
            let small: ArrayRef = Arc::new(small);
            let wide: ArrayRef = Arc::new(wide);
            let text: ArrayRef = Arc::new(text);
            let day: arrow_array::TimestampMicrosecondArray = (0..n)
                .map(|_| {
                    (rng.random_range(0..8) > 0).then(|| rng.random_range(-50..50) * 86_400_000_000)
                })
                .collect();
            let day: ArrayRef = Arc::new(day);
            for (cols, desc) in [
                (vec![day.clone(), small.clone()], vec![false, true]),
                (vec![small.clone(), day.clone()], vec![true, false]),
                (vec![small.clone()], vec![false]),
                (vec![small.clone()], vec![true]),
                (vec![small.clone(), small.clone()], vec![false, true]),
                (vec![wide.clone(), small.clone()], vec![false, false]),
                (
                    vec![small.clone(), wide.clone(), wide.clone()],
                    vec![true, false, true],
                ),
                (vec![text.clone(), small.clone()], vec![false, false]),
            ] {
                let rows = rows_of(cols.clone(), &desc);
                let want = reference(&rows);
                assert_eq!(sort_rows(&rows), want, "n {n} desc {desc:?}");
                let options: Vec<SortOptions> = desc
                    .iter()
                    .map(|&d| SortOptions {
                        descending: d,
                        nulls_first: !d,
                    })
                    .collect();
                if let Some(dense) = sort_dense_keys(&cols, &options) {
                    assert_eq!(dense, want, "dense: n {n} desc {desc:?}");
                }
            }
        }
    }

    #[test]
    fn dense_keys_cover_nulls_either_end_and_fall_back_when_wide() {
        let a: ArrayRef = Arc::new(Int32Array::from(vec![
            Some(3),
            None,
            Some(-7),
            Some(3),
            None,
            Some(11),
        ]));
        for (descending, nulls_first) in
            [(false, true), (false, false), (true, true), (true, false)]
        {
            let o = SortOptions {
                descending,
                nulls_first,
            };
            let rows =
                RowConverter::new(vec![SortField::new_with_options(a.data_type().clone(), o)])
                    .and_then(|c| c.convert_columns(std::slice::from_ref(&a)))
                    .expect("rows");
            assert_eq!(
                sort_dense_keys(std::slice::from_ref(&a), &[o]),
                Some(reference(&rows))
            );
        }
        let wide: ArrayRef = Arc::new(Int64Array::from(vec![i64::MIN, 0, i64::MAX]));
        let o = SortOptions::default();
        assert_eq!(
            sort_dense_keys(std::slice::from_ref(&wide), &[o]),
            Some(vec![0, 1, 2])
        );
        assert_eq!(sort_dense_keys(&[wide.clone(), wide], &[o, o]), None);
    }

    #[test]
    fn constant_keys_keep_the_input_order() {
        let c: ArrayRef = Arc::new(Int32Array::from(vec![7; 50]));
        let rows = rows_of(vec![c], &[false]);
        assert_eq!(sort_rows(&rows), (0..50).collect::<Vec<u32>>());
    }
}
