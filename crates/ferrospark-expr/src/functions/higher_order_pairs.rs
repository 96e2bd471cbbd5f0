//! The higher-order functions whose lambda compares or combines two values at a time:
//! `array_sort(a[, (l, r) -> int])` and `map_zip_with(m1, m2, (k, v1, v2) -> v)`.
//!
//! `array_sort`'s comparator runs once per batch like every lambda here: over all the pairs
//! of elements of a group of rows (`n²` per array), after which each array is sorted stably
//! (as Java's TimSort, so any consistent comparator orders as in Spark) by looking the pairs
//! up. Rows are taken in groups of at most [`PAIRS_PER_CALL`] pairs.

use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::Int32Type;
use arrow_array::{Array, ArrayRef, ListArray, MapArray, RecordBatch, StructArray, UInt32Array};
use arrow_buffer::{NullBuffer, OffsetBuffer};
use arrow_row::{RowConverter, SortField};

use arrow_schema::{DataType, Field, Fields, SortOptions};
use ferrospark_common::{FerroError, Result};

use super::collections::rebuild;
use super::higher_order::apply;
use crate::physical::PhysicalExpr;

/// The most element pairs one comparator call evaluates.
const PAIRS_PER_CALL: usize = 1 << 20;

/// `array_sort(a)`: ascending, NULLs last (NaN above every number), as Spark's default
/// comparator.
pub(crate) fn sort_default(list: &ListArray) -> Result<ArrayRef> {
    let options = SortOptions {
        descending: false,
        nulls_first: false,
    };
    // Spark's comparator takes -0.0 and 0.0 as equal (the sort is stable, so they keep
    // their order).
    let keys = super::collected::normalized(list.values());
    let order = super::collected::ordered_positions(list, Some((&keys, options)))?
        .into_iter()
        .map(|idx| idx.into_iter().map(Some).collect())
        .collect();
    rebuild(list, list.values(), order)
}

/// `array_sort(a, comparator)`.
pub(crate) fn sort_with(
    list: &ListArray,
    comparator: &PhysicalExpr,
    batch: &RecordBatch,
) -> Result<ArrayRef> {
    let o = list.value_offsets();
    let len = |r: usize| (o[r + 1] - o[r]) as usize;
    let mut order: Vec<Vec<Option<u32>>> = Vec::with_capacity(list.len());
    let mut r = 0;
    while r < list.len() {
        // A group of rows whose pairs fit one call (at least one row).
        let mut end = r + 1;
        let mut pairs = len(r) * len(r);
        while end < list.len() && pairs + len(end) * len(end) <= PAIRS_PER_CALL {
            pairs += len(end) * len(end);
            end += 1;
        }
        let (mut left, mut right, mut rows) = (
            Vec::with_capacity(pairs),
            Vec::with_capacity(pairs),
            Vec::with_capacity(pairs),
        );
        for row in r..end {
            if list.is_null(row) {
                continue;
            }
            for i in o[row] as u32..o[row + 1] as u32 {
                for j in o[row] as u32..o[row + 1] as u32 {
                    left.push(i);
                    right.push(j);
                    rows.push(row as u32);
                }
            }
        }
        let l = arrow_select::take::take(list.values(), &UInt32Array::from(left), None)?;
        let rt = arrow_select::take::take(list.values(), &UInt32Array::from(right), None)?;
        let cmp = apply(comparator, batch, &UInt32Array::from(rows), vec![l, rt])?;
        let cmp = cmp
            .as_primitive_opt::<Int32Type>()
            .ok_or_else(|| FerroError::Internal("a comparator that is not INT".into()))?;
        if cmp.null_count() > 0 {
            return Err(FerroError::Arithmetic(
                "[COMPARATOR_RETURNS_NULL] The comparator has returned a NULL for a comparison between elements. It should return a positive integer for \"greater than\", 0 for \"equal\" and a negative integer for \"less than\". To revert to deprecated behavior where NULL is treated as 0 (equal), you must set \"spark.sql.legacy.allowNullComparisonResultInArraySort\" to \"true\". SQLSTATE: 22004".into(),
            ));
        }
        let mut at = 0usize;
        for row in r..end {
            if list.is_null(row) {
                order.push(Vec::new());
                continue;
            }
            let n = len(row);
            let table = &cmp.values()[at..at + n * n];
            at += n * n;
            let first = list.value_offsets()[row] as u32;
            let idx = merge_sort(n, |a, b| table[a * n + b] > 0);
            order.push(idx.into_iter().map(|k| Some(first + k as u32)).collect());
        }
        r = end;
    }
    rebuild(list, list.values(), order)
}

/// `0..n` sorted stably by `greater(a, b)` (a before b unless a is greater). Written out
/// rather than `sort_by`, which may panic when a user's comparator is not a total order; here
/// such a comparator gives some order.
fn merge_sort(n: usize, greater: impl Fn(usize, usize) -> bool) -> Vec<usize> {
    let mut a: Vec<usize> = (0..n).collect();
    let mut b = vec![0usize; n];
    let mut width = 1;
    while width < n {
        let mut start = 0;
        while start < n {
            let mid = (start + width).min(n);
            let end = (start + 2 * width).min(n);
            let (mut i, mut j, mut k) = (start, mid, start);
            while i < mid && j < end {
                if greater(a[i], a[j]) {
                    b[k] = a[j];
                    j += 1;
                } else {
                    b[k] = a[i];
                    i += 1;
                }
                k += 1;
            }
            b[k..k + (mid - i)].copy_from_slice(&a[i..mid]);
            k += mid - i;
            b[k..k + (end - j)].copy_from_slice(&a[j..end]);
            start = end;
        }
        std::mem::swap(&mut a, &mut b);
        width *= 2;
    }
    a
}

/// `map_zip_with(m1, m2, (k, v1, v2) -> v)`: every key of either map (those of `m1` first, in
/// its order, then those only `m2` has), its values from each (NULL where absent).
pub(crate) fn map_zip_with(
    m1: &MapArray,
    m2: &MapArray,
    lambda: &PhysicalExpr,
    batch: &RecordBatch,
) -> Result<ArrayRef> {
    let converter = RowConverter::new(vec![SortField::new(m1.keys().data_type().clone())])?;
    let k1 = converter.convert_columns(std::slice::from_ref(m1.keys()))?;
    let k2 = converter.convert_columns(std::slice::from_ref(m2.keys()))?;
    let (o1, o2) = (m1.value_offsets(), m2.value_offsets());
    // Per key of the result: where its key comes from, and its value in each map.
    let (mut from, mut i1, mut i2, mut rows) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    let mut offsets = vec![0i32];
    for r in 0..m1.len() {
        if m1.is_valid(r) && m2.is_valid(r) {
            let seen: hashbrown::HashMap<arrow_row::Row<'_>, usize> = (o2[r] as usize
                ..o2[r + 1] as usize)
                .map(|j| (k2.row(j), j))
                .collect();
            let mut matched = std::collections::HashSet::new();
            for i in o1[r] as usize..o1[r + 1] as usize {
                let j = seen.get(&k1.row(i)).copied();
                if let Some(j) = j {
                    matched.insert(j);
                }
                from.push((0usize, i));
                i1.push(Some(i as u32));
                i2.push(j.map(|j| j as u32));
                rows.push(r as u32);
            }
            for j in o2[r] as usize..o2[r + 1] as usize {
                if !matched.contains(&j) {
                    from.push((1usize, j));
                    i1.push(None);
                    i2.push(Some(j as u32));
                    rows.push(r as u32);
                }
            }
        }
        offsets.push(rows.len() as i32);
    }
    let keys =
        arrow_select::interleave::interleave(&[m1.keys().as_ref(), m2.keys().as_ref()], &from)?;
    let v1 = arrow_select::take::take(m1.values(), &UInt32Array::from(i1), None)?;
    let v2 = arrow_select::take::take(m2.values(), &UInt32Array::from(i2), None)?;
    let values = apply(
        lambda,
        batch,
        &UInt32Array::from(rows),
        vec![keys.clone(), v1, v2],
    )?;
    let entries = StructArray::try_new(
        Fields::from(vec![
            Field::new("key", keys.data_type().clone(), false),
            Field::new("value", values.data_type().clone(), true),
        ]),
        vec![keys, values],
        None,
    )?;
    Ok(Arc::new(MapArray::try_new(
        Arc::new(Field::new("entries", entries.data_type().clone(), false)),
        OffsetBuffer::new(offsets.into()),
        entries,
        NullBuffer::union(m1.nulls(), m2.nulls()),
        false,
    )?))
}

/// The key type two maps are zipped over, if they share one.
pub(crate) fn zip_key_type(a: &DataType, b: &DataType) -> Option<DataType> {
    if a == b {
        Some(a.clone())
    } else {
        crate::types::comparison_type(a, b)
    }
}
