//! `KeySet`: a fixed set of distinct values hashed (or laid out as a bitmap) once, for Spark's
//! `InSet`: membership tests over whole arrays, as a join's runtime filter runs them inside a
//! probe-side scan.
//!
//! Integers, dates and timestamps are kept as `i64`: in a bitmap over `[min, max]` when that
//! range is small (a join key such as TPC-H's order keys), else in a hash set. Strings and
//! binaries are kept as bytes. Other types have no `KeySet` (the caller does without).

use std::fmt;
use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::{
    Date32Type, Date64Type, Int16Type, Int32Type, Int64Type, Int8Type, TimestampMicrosecondType,
    TimestampMillisecondType, TimestampNanosecondType, TimestampSecondType,
};
use arrow_array::{Array, ArrayRef, BooleanArray, PrimitiveArray};
use arrow_buffer::BooleanBuffer;
use arrow_schema::{DataType, TimeUnit};
use hashbrown::HashSet;

use crate::Literal;

/// Widest `[min, max]` range kept as a bitmap (2 MiB of bits).
const MAX_BITMAP_RANGE: u64 = 1 << 24;

/// A set of distinct non-null values of one type.
pub struct KeySet {
    data_type: DataType,
    values: Values,
    len: usize,
    bounds: Option<(Literal, Literal)>,
    /// The smallest and largest value of an integer set, as `i64`.
    int_bounds: Option<(i64, i64)>,
}

enum Values {
    /// Bit `v - base` set for each member `v`.
    Bitmap {
        base: i64,
        bits: Vec<u64>,
    },
    Ints(HashSet<i64>),
    Bytes {
        set: HashSet<Box<[u8]>>,
        /// The members packed by [`pack_short`], when there are a handful of short ones.
        short: Option<Vec<(u64, u8)>>,
    },
}

impl fmt::Debug for KeySet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "KeySet({} values of {})", self.len, self.data_type)
    }
}

/// Sets compare by identity: two runtime filters are the same filter only if they are one.
impl PartialEq for KeySet {
    fn eq(&self, other: &Self) -> bool {
        std::ptr::eq(self, other)
    }
}

/// The non-null values of an integer-like array widened to `i64`, or `None` for other types.
fn ints(a: &dyn Array) -> Option<Vec<i64>> {
    fn widen<T: arrow_array::ArrowPrimitiveType>(a: &dyn Array) -> Vec<i64>
    where
        T::Native: Into<i64>,
    {
        let a = a.as_primitive::<T>();
        if a.null_count() == 0 {
            a.values().iter().map(|&v| v.into()).collect()
        } else {
            a.iter().flatten().map(Into::into).collect()
        }
    }
    Some(match a.data_type() {
        DataType::Int8 => widen::<Int8Type>(a),
        DataType::Int16 => widen::<Int16Type>(a),
        DataType::Int32 => widen::<Int32Type>(a),
        DataType::Int64 => widen::<Int64Type>(a),
        DataType::Date32 => widen::<Date32Type>(a),
        DataType::Date64 => widen::<Date64Type>(a),
        DataType::Timestamp(TimeUnit::Second, _) => widen::<TimestampSecondType>(a),
        DataType::Timestamp(TimeUnit::Millisecond, _) => widen::<TimestampMillisecondType>(a),
        DataType::Timestamp(TimeUnit::Microsecond, _) => widen::<TimestampMicrosecondType>(a),
        DataType::Timestamp(TimeUnit::Nanosecond, _) => widen::<TimestampNanosecondType>(a),
        _ => return None,
    })
}

/// A one-value literal of integer-like type `dt` holding `v`.
fn int_literal(dt: &DataType, v: i64) -> Option<Literal> {
    let a: ArrayRef = match dt {
        DataType::Int8 => Arc::new(PrimitiveArray::<Int8Type>::from(
            vec![i8::try_from(v).ok()?],
        )),
        DataType::Int16 => Arc::new(PrimitiveArray::<Int16Type>::from(vec![
            i16::try_from(v).ok()?
        ])),
        DataType::Int32 => Arc::new(PrimitiveArray::<Int32Type>::from(vec![
            i32::try_from(v).ok()?
        ])),
        DataType::Date32 => Arc::new(PrimitiveArray::<Date32Type>::from(vec![
            i32::try_from(v).ok()?
        ])),
        DataType::Int64 => Arc::new(PrimitiveArray::<Int64Type>::from(vec![v])),
        DataType::Date64 => Arc::new(PrimitiveArray::<Date64Type>::from(vec![v])),
        DataType::Timestamp(_, _) => {
            let a = PrimitiveArray::<Int64Type>::from(vec![v]);
            arrow_cast::cast(&a, dt).ok()?
        }
        _ => return None,
    };
    Some(Literal::new(a))
}

fn bytes_literal(dt: &DataType, v: &[u8]) -> Option<Literal> {
    let a: ArrayRef = match dt {
        DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View => {
            Arc::new(arrow_array::StringArray::from(vec![
                std::str::from_utf8(v).ok()?
            ]))
        }
        _ => Arc::new(arrow_array::BinaryArray::from(vec![v])),
    };
    Some(Literal::new(arrow_cast::cast(&a, dt).ok()?))
}

impl KeySet {
    /// The distinct non-null values of `arrays` (all of one type), or `None` for a type
    /// without a `KeySet`.
    pub fn try_new(arrays: &[ArrayRef]) -> Option<KeySet> {
        Self::build(arrays, MAX_BITMAP_RANGE)
    }

    /// [`KeySet::try_new`] for a few values built often (an `IN` list's constants, once per
    /// batch): a bitmap only when it is small.
    pub fn for_constants(arrays: &[ArrayRef]) -> Option<KeySet> {
        let n: usize = arrays.iter().map(|a| a.len()).sum();
        Self::build(
            arrays,
            (n as u64).saturating_mul(64).clamp(1024, MAX_BITMAP_RANGE),
        )
    }

    fn build(arrays: &[ArrayRef], max_bitmap_range: u64) -> Option<KeySet> {
        let data_type = arrays.first()?.data_type().clone();
        if let Some(mut all) = ints(arrays[0].as_ref()) {
            for a in &arrays[1..] {
                all.extend(ints(a.as_ref())?);
            }
            let (Some(&lo), Some(&hi)) = (all.iter().min(), all.iter().max()) else {
                return Some(KeySet {
                    data_type,
                    values: Values::Ints(HashSet::new()),
                    len: 0,
                    bounds: None,
                    int_bounds: None,
                });
            };
            let bounds = int_literal(&data_type, lo).zip(int_literal(&data_type, hi));
            let range = (hi as i128 - lo as i128) as u64;
            let (values, len) = if range < max_bitmap_range {
                let mut bits = vec![0u64; (range as usize) / 64 + 1];
                for v in all {
                    let i = (v - lo) as usize;
                    bits[i / 64] |= 1 << (i % 64);
                }
                let len = bits.iter().map(|w| w.count_ones() as usize).sum();
                (Values::Bitmap { base: lo, bits }, len)
            } else {
                let set: HashSet<i64> = all.into_iter().collect();
                let len = set.len();
                (Values::Ints(set), len)
            };
            return Some(KeySet {
                data_type,
                values,
                len,
                bounds,
                int_bounds: Some((lo, hi)),
            });
        }
        let mut set: HashSet<Box<[u8]>> = HashSet::new();
        for a in arrays {
            let nulls = a.logical_nulls();
            byte_hits(a.as_ref(), |i, v| {
                if nulls.as_ref().is_none_or(|n| n.is_valid(i)) && !set.contains(v) {
                    set.insert(v.into());
                }
                false
            })?;
        }
        let bounds = match (set.iter().min(), set.iter().max()) {
            (Some(lo), Some(hi)) => {
                bytes_literal(&data_type, lo).zip(bytes_literal(&data_type, hi))
            }
            _ => None,
        };
        Some(KeySet {
            data_type,
            len: set.len(),
            values: Values::Bytes {
                short: short_keys(&set),
                set,
            },
            bounds,
            int_bounds: None,
        })
    }

    /// How many values.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the set is empty (nothing passes).
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The values' type.
    pub fn data_type(&self) -> &DataType {
        &self.data_type
    }

    /// `Some((lo, hi))` when the set holds every integer from `lo` to `hi` (a runtime filter
    /// of every key of a dimension table): then membership is the range test alone.
    pub fn dense_range(&self) -> Option<(i64, i64)> {
        match &self.values {
            Values::Bitmap { base, bits } => {
                let (word, w) = bits.iter().enumerate().rev().find(|(_, w)| **w != 0)?;
                let top = (word * 64 + 63 - w.leading_zeros() as usize) as i64;
                (self.len as i64 == top + 1).then_some((*base, base + top))
            }
            _ => None,
        }
    }

    /// The smallest and largest value of a set of integers (dates and timestamps included),
    /// as `i64`.
    pub fn int_bounds(&self) -> Option<(i64, i64)> {
        self.int_bounds
    }

    /// The smallest and largest value, for pruning by statistics.
    pub fn bounds(&self) -> Option<&(Literal, Literal)> {
        self.bounds.as_ref()
    }

    /// Whether `i` is a member of an integer set.
    fn has_int(&self, i: i64) -> bool {
        match &self.values {
            Values::Bitmap { base, bits } => bitmap_has(*base, bits, i),
            Values::Ints(set) => set.contains(&i),
            Values::Bytes { .. } => false,
        }
    }

    /// Whether every value of this set is in `other` (of the same type): rows a scan kept
    /// under `other` then hold every row it would keep under this set.
    pub fn is_subset_of(&self, other: &KeySet) -> bool {
        if self.data_type != other.data_type || self.len > other.len {
            return false;
        }
        match &self.values {
            Values::Bitmap { base, bits } => bits.iter().enumerate().all(|(w, &word)| {
                let mut rest = word;
                while rest != 0 {
                    let bit = rest.trailing_zeros() as i64;
                    if !other.has_int(base + w as i64 * 64 + bit) {
                        return false;
                    }
                    rest &= rest - 1;
                }
                true
            }),
            Values::Ints(set) => set.iter().all(|&i| other.has_int(i)),
            Values::Bytes { set, .. } => match &other.values {
                Values::Bytes { set: theirs, .. } => set.iter().all(|v| theirs.contains(v)),
                _ => false,
            },
        }
    }

    /// `value IN set` for each value: NULL where the value is NULL.
    pub fn contains(&self, values: &dyn Array) -> BooleanArray {
        let n = values.len();
        let hits = match &self.values {
            Values::Bitmap { base, bits } => int_hits(values, |x| bitmap_has(*base, bits, x)),
            Values::Ints(set) => int_hits(values, |x| set.contains(&x)),
            Values::Bytes { set, short } => match short {
                // A handful of short values (`substring(c_phone, 1, 2) IN ('13', ...)`):
                // comparing machine words beats hashing each row.
                Some(keys) => byte_hits(values, |_, x| {
                    pack_short(x).is_some_and(|k| keys.contains(&k))
                }),
                None => byte_hits(values, |_, x| set.contains(x)),
            },
        };
        BooleanArray::new(
            hits.unwrap_or_else(|| BooleanBuffer::new_unset(n)),
            values.logical_nulls().filter(|n| n.null_count() > 0),
        )
    }
}

/// Sets this small or smaller are tested by comparing packed words.
const MAX_SHORT_KEYS: usize = 16;

/// The members of a small set of values of at most 8 bytes, packed by [`pack_short`].
fn short_keys(set: &HashSet<Box<[u8]>>) -> Option<Vec<(u64, u8)>> {
    if set.len() > MAX_SHORT_KEYS {
        return None;
    }
    set.iter().map(|v| pack_short(v)).collect()
}

/// A value of at most 8 bytes as a word and its length (so `"a"` and `"a\0"` differ).
#[inline]
fn pack_short(x: &[u8]) -> Option<(u64, u8)> {
    if x.len() > 8 {
        return None;
    }
    let mut word = [0u8; 8];
    word[..x.len()].copy_from_slice(x);
    Some((u64::from_le_bytes(word), x.len() as u8))
}

/// `test` on every slot of a string or binary array, with its index (whatever it gives
/// under a NULL is the caller's to mask), or `None` for other types. The one place the
/// string and binary layouts are told apart, for sets and for LIKE.
pub(crate) fn byte_hits(
    a: &dyn Array,
    mut test: impl FnMut(usize, &[u8]) -> bool,
) -> Option<BooleanBuffer> {
    let n = a.len();
    Some(match a.data_type() {
        DataType::Utf8 => {
            let a = a.as_string::<i32>();
            BooleanBuffer::collect_bool(n, |i| test(i, a.value(i).as_bytes()))
        }
        DataType::LargeUtf8 => {
            let a = a.as_string::<i64>();
            BooleanBuffer::collect_bool(n, |i| test(i, a.value(i).as_bytes()))
        }
        DataType::Utf8View => {
            let a = a.as_string_view();
            BooleanBuffer::collect_bool(n, |i| test(i, a.value(i).as_bytes()))
        }
        DataType::Binary => {
            let a = a.as_binary::<i32>();
            BooleanBuffer::collect_bool(n, |i| test(i, a.value(i)))
        }
        DataType::LargeBinary => {
            let a = a.as_binary::<i64>();
            BooleanBuffer::collect_bool(n, |i| test(i, a.value(i)))
        }
        DataType::BinaryView => {
            let a = a.as_binary_view();
            BooleanBuffer::collect_bool(n, |i| test(i, a.value(i)))
        }
        _ => return None,
    })
}

/// Whether bit `x - base` is set in `bits` (false outside them).
#[inline]
fn bitmap_has(base: i64, bits: &[u64], x: i64) -> bool {
    let off = x.wrapping_sub(base) as u64;
    let w = (off / 64) as usize;
    w < bits.len() && bits[w] & (1 << (off % 64)) != 0
}

/// `test` on every value of an integer-like array (whatever it gives under a NULL is masked
/// by the caller), or `None` for other types.
fn int_hits(a: &dyn Array, test: impl Fn(i64) -> bool) -> Option<BooleanBuffer> {
    fn go<T: arrow_array::ArrowPrimitiveType>(
        a: &dyn Array,
        test: impl Fn(i64) -> bool,
    ) -> BooleanBuffer
    where
        T::Native: Into<i64>,
    {
        let v = a.as_primitive::<T>().values();
        BooleanBuffer::collect_bool(v.len(), |i| test(v[i].into()))
    }
    Some(match a.data_type() {
        DataType::Int8 => go::<Int8Type>(a, test),
        DataType::Int16 => go::<Int16Type>(a, test),
        DataType::Int32 => go::<Int32Type>(a, test),
        DataType::Int64 => go::<Int64Type>(a, test),
        DataType::Date32 => go::<Date32Type>(a, test),
        DataType::Date64 => go::<Date64Type>(a, test),
        DataType::Timestamp(TimeUnit::Second, _) => go::<TimestampSecondType>(a, test),
        DataType::Timestamp(TimeUnit::Millisecond, _) => go::<TimestampMillisecondType>(a, test),
        DataType::Timestamp(TimeUnit::Microsecond, _) => go::<TimestampMicrosecondType>(a, test),
        DataType::Timestamp(TimeUnit::Nanosecond, _) => go::<TimestampNanosecondType>(a, test),
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_array::{Int32Array, Int64Array, StringArray};

    fn bools(a: &BooleanArray) -> Vec<Option<bool>> {
        a.iter().collect()
    }

    #[test]
    fn bitmap_hash_and_bytes_sets_answer_membership_with_nulls() {
        let small: ArrayRef = Arc::new(Int64Array::from(vec![Some(5), None, Some(9), Some(5)]));
        let s = KeySet::try_new(&[small]).expect("a set");
        assert_eq!(s.len(), 2);
        assert!(matches!(s.values, Values::Bitmap { .. }));
        let probe = Int64Array::from(vec![Some(5), Some(6), None, Some(-3), Some(1 << 40)]);
        assert_eq!(
            bools(&s.contains(&probe)),
            vec![Some(true), Some(false), None, Some(false), Some(false)]
        );
        let (lo, hi) = s.bounds().expect("bounds");
        assert_eq!(lo.array().as_primitive::<Int64Type>().value(0), 5);
        assert_eq!(hi.array().as_primitive::<Int64Type>().value(0), 9);

        let wide: ArrayRef = Arc::new(Int32Array::from(vec![i32::MIN, 0, i32::MAX]));
        let s = KeySet::try_new(&[wide]).expect("a set");
        assert!(matches!(s.values, Values::Ints(_)));
        let probe = Int32Array::from(vec![i32::MIN, 1, i32::MAX]);
        assert_eq!(
            bools(&s.contains(&probe)),
            vec![Some(true), Some(false), Some(true)]
        );

        let strs: ArrayRef = Arc::new(StringArray::from(vec!["é", "a"]));
        let s = KeySet::try_new(&[strs]).expect("a set");
        let probe = StringArray::from(vec![Some("a"), Some("b"), None, Some("é")]);
        assert_eq!(
            bools(&s.contains(&probe)),
            vec![Some(true), Some(false), None, Some(true)]
        );
        let (lo, hi) = s.bounds().expect("bounds");
        assert_eq!(lo.array().as_string::<i32>().value(0), "a");
        assert_eq!(hi.array().as_string::<i32>().value(0), "é");
    }

    #[test]
    fn short_byte_sets_compare_words_and_lengths() {
        use arrow_array::{BinaryArray, LargeStringArray, StringViewArray};
        let keys: ArrayRef = Arc::new(StringArray::from(vec!["a", "13", "", "éé", "12345678"]));
        let s = KeySet::try_new(&[keys]).expect("a set");
        let values = [
            Some("a"),
            Some("a\0"),
            Some(""),
            None,
            Some("13"),
            Some("31"),
            Some("éé"),
            Some("12345678"),
            Some("123456789"),
            Some("a long value past twelve bytes"),
        ];
        let want = vec![
            Some(true),
            Some(false),
            Some(true),
            None,
            Some(true),
            Some(false),
            Some(true),
            Some(true),
            Some(false),
            Some(false),
        ];
        assert_eq!(
            bools(&s.contains(&StringArray::from(values.to_vec()))),
            want
        );
        assert_eq!(
            bools(&s.contains(&LargeStringArray::from(values.to_vec()))),
            want
        );
        assert_eq!(
            bools(&s.contains(&StringViewArray::from(values.to_vec()))),
            want
        );
        let bytes: Vec<Option<&[u8]>> = values.iter().map(|v| v.map(str::as_bytes)).collect();
        let bin: ArrayRef = Arc::new(BinaryArray::from(bytes.clone()));
        let s = KeySet::try_new(std::slice::from_ref(&bin)).expect("a set");
        let got = bools(&s.contains(bin.as_ref()));
        let all: Vec<Option<bool>> = bytes.iter().map(|v| v.map(|_| true)).collect();
        assert_eq!(got, all);
        // Past the short-set size, the hashed set answers the same.
        let many: Vec<String> = (0..100).map(|i| format!("{i}")).collect();
        let many: ArrayRef = Arc::new(StringArray::from(many));
        let s = KeySet::try_new(&[many]).expect("a set");
        let probe = StringViewArray::from(vec![Some("13"), Some("100"), None, Some("99")]);
        assert_eq!(
            bools(&s.contains(&probe)),
            vec![Some(true), Some(false), None, Some(true)]
        );
    }

    #[test]
    fn a_set_of_every_integer_in_its_range_is_dense() {
        let keys = |v: Vec<i64>| {
            let a: ArrayRef = Arc::new(Int64Array::from(v));
            KeySet::try_new(&[a]).expect("a set")
        };
        assert_eq!(
            keys((-3..=70).rev().collect()).dense_range(),
            Some((-3, 70))
        );
        assert_eq!(keys(vec![4, 4, 5]).dense_range(), Some((4, 5)));
        assert_eq!(keys(vec![1, 2, 4]).dense_range(), None);
        assert_eq!(keys(vec![i64::MIN, i64::MAX]).dense_range(), None);
        assert_eq!(keys(vec![]).dense_range(), None);
    }

    #[test]
    fn a_set_is_a_subset_of_another_holding_all_its_values_of_its_type() {
        let ints = |v: Vec<i64>| {
            let a: ArrayRef = Arc::new(Int64Array::from(v));
            KeySet::try_new(&[a]).expect("a set")
        };
        let small = ints(vec![3, 70, 64, 65]);
        let wide = ints(vec![i64::MIN, 3, 64, 65, 70, i64::MAX]);
        assert!(matches!(small.values, Values::Bitmap { .. }));
        assert!(matches!(wide.values, Values::Ints(_)));
        assert!(small.is_subset_of(&wide) && small.is_subset_of(&small));
        assert!(!wide.is_subset_of(&small));
        assert!(!small.is_subset_of(&ints(vec![3, 70, 64, 66, 100])));
        assert!(ints(vec![]).is_subset_of(&small));
        assert!(ints(vec![3, i64::MAX]).is_subset_of(&wide));
        let i32s: ArrayRef = Arc::new(Int32Array::from(vec![3]));
        assert!(!KeySet::try_new(&[i32s])
            .expect("a set")
            .is_subset_of(&small));
        let strs = |v: Vec<&str>| {
            let a: ArrayRef = Arc::new(StringArray::from(v));
            KeySet::try_new(&[a]).expect("a set")
        };
        assert!(strs(vec!["é"]).is_subset_of(&strs(vec!["a", "é"])));
        assert!(!strs(vec!["é", "b"]).is_subset_of(&strs(vec!["a", "é", "c"])));
    }

    #[test]
    fn no_set_for_other_types_and_empty_sets_pass_nothing() {
        let f: ArrayRef = Arc::new(arrow_array::Float64Array::from(vec![1.0]));
        assert!(KeySet::try_new(&[f]).is_none());
        let none: ArrayRef = Arc::new(Int64Array::from(vec![None::<i64>]));
        let s = KeySet::try_new(&[none]).expect("a set");
        assert!(s.is_empty() && s.bounds().is_none());
        assert_eq!(
            bools(&s.contains(&Int64Array::from(vec![1]))),
            vec![Some(false)]
        );
    }
}
