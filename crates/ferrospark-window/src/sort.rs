//! Sorting rows by their keys in Arrow's row format. Fixed-width keys (numbers, dates: the
//! usual window keys) are packed into machine words and sorted as integers on two threads;
//! other keys are compared as byte strings. Rows with equal keys keep their input order.

use arrow_row::Rows;

/// The permutation that sorts `rows`.
pub(crate) fn sort_rows(rows: &Rows) -> Vec<u32> {
    let n = rows.num_rows();
    let width = if n > 0 { rows.row(0).as_ref().len() } else { 0 };
    let fixed = (1..n).all(|i| rows.row(i).as_ref().len() == width);
    if fixed && width <= 32 {
        return match width.div_ceil(8) {
            0 | 1 => packed::<1>(rows),
            2 => packed::<2>(rows),
            3 => packed::<3>(rows),
            _ => packed::<4>(rows),
        };
    }
    let mut order: Vec<u32> = (0..n as u32).collect();
    order.sort_unstable_by(|&a, &b| {
        rows.row(a as usize)
            .cmp(&rows.row(b as usize))
            .then(a.cmp(&b))
    });
    order
}

/// Each row's bytes as `K` big-endian words (zero-padded), with its row number.
fn packed<const K: usize>(rows: &Rows) -> Vec<u32> {
    let n = rows.num_rows();
    let mut keys: Vec<([u64; K], u32)> = Vec::with_capacity(n);
    for i in 0..n {
        let bytes = rows.row(i);
        let bytes = bytes.as_ref();
        let mut words = [0u64; K];
        for (w, chunk) in words.iter_mut().zip(bytes.chunks(8)) {
            let mut b = [0u8; 8];
            b[..chunk.len()].copy_from_slice(chunk);
            *w = u64::from_be_bytes(b);
        }
        keys.push((words, i as u32));
    }
    // Two sorted halves, merged: the machine's two cores share the work.
    let mid = n / 2;
    let (left, right) = keys.split_at_mut(mid);
    std::thread::scope(|s| {
        s.spawn(|| left.sort_unstable());
        right.sort_unstable();
    });
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
