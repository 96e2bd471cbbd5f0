//! Grouping keys to dense group indices: the hash tables of hash aggregation.
//!
//! Three layouts, chosen by the key types: one primitive key ([`PrimitiveGroupValues`]), one
//! string or binary key ([`BytesGroupValues`]), and anything else on Arrow's row format
//! ([`RowGroupValues`]). Keys arrive already normalised (NaN and -0.0, see
//! [`normalize_key`]); NULL is a group of its own.

use arrow_array::ArrayRef;
use arrow_schema::{DataType, TimeUnit};
use ferrospark_common::Result;

mod bytes;
mod composed;
pub(crate) mod primitive;
mod row;

pub use bytes::BytesGroupValues;
pub use composed::ComposedGroupValues;
pub use primitive::PrimitiveGroupValues;
pub use row::RowGroupValues;

/// Maps key tuples to group indices `0..len()`, in first-seen order.
pub trait GroupValues: Send {
    /// Appends the group index of every row of `keys` to `groups` (cleared first), creating
    /// groups for keys not seen before.
    fn intern(&mut self, keys: &[ArrayRef], num_rows: usize, groups: &mut Vec<u32>) -> Result<()>;
    /// Number of groups.
    fn len(&self) -> usize;
    /// Whether there are no groups.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// Bytes held.
    fn size(&self) -> usize;
    /// The key columns of every group, in group order; the table is empty afterwards.
    fn emit(&mut self) -> Result<Vec<ArrayRef>>;
    /// A hint that about `groups` groups are coming, so the table can be sized once instead
    /// of growing (and copying) step by step.
    fn reserve(&mut self, _groups: usize) {}
}

/// Murmur3's 64-bit finaliser: spreads every input bit over the whole word, so both the
/// bucket index (low bits) and the control byte (high bits) of the table are well mixed.
#[inline]
pub(crate) fn mix64(mut h: u64) -> u64 {
    h ^= h >> 33;
    h = h.wrapping_mul(0xff51afd7ed558ccd);
    h ^= h >> 33;
    h = h.wrapping_mul(0xc4ceb9fe1a85ec53);
    h ^ (h >> 33)
}

pub use ferrospark_expr::normalize_key;

/// The table for keys of these types.
pub fn new_group_values(types: &[DataType]) -> Result<Box<dyn GroupValues>> {
    if types.is_empty() {
        return Ok(Box::new(GlobalGroup::default()));
    }
    use arrow_array::types::*;
    macro_rules! prim {
        ($t:ty) => {
            Box::new(PrimitiveGroupValues::<$t>::new(types[0].clone()))
        };
    }
    if let [one] = types {
        return Ok(match one {
            DataType::Int8 => prim!(Int8Type),
            DataType::Int16 => prim!(Int16Type),
            DataType::Int32 => prim!(Int32Type),
            DataType::Int64 => prim!(Int64Type),
            DataType::UInt8 => prim!(UInt8Type),
            DataType::UInt16 => prim!(UInt16Type),
            DataType::UInt32 => prim!(UInt32Type),
            DataType::UInt64 => prim!(UInt64Type),
            DataType::Float32 => prim!(Float32Type),
            DataType::Float64 => prim!(Float64Type),
            DataType::Date32 => prim!(Date32Type),
            DataType::Timestamp(TimeUnit::Microsecond, _) => prim!(TimestampMicrosecondType),
            DataType::Timestamp(TimeUnit::Nanosecond, _) => prim!(TimestampNanosecondType),
            DataType::Timestamp(TimeUnit::Millisecond, _) => prim!(TimestampMillisecondType),
            DataType::Timestamp(TimeUnit::Second, _) => prim!(TimestampSecondType),
            DataType::Decimal128(_, _) => prim!(Decimal128Type),
            DataType::Utf8 | DataType::LargeUtf8 | DataType::Binary | DataType::LargeBinary => {
                Box::new(BytesGroupValues::new(one.clone()))
            }
            _ => Box::new(RowGroupValues::new(types)?),
        });
    }
    if ComposedGroupValues::supports(types) {
        return Ok(Box::new(ComposedGroupValues::new(types)?));
    }
    Ok(Box::new(RowGroupValues::new(types)?))
}

/// No keys: every row is in the one group of a global aggregate.
#[derive(Debug, Default)]
struct GlobalGroup {
    exists: bool,
}

impl GroupValues for GlobalGroup {
    fn intern(&mut self, _: &[ArrayRef], num_rows: usize, groups: &mut Vec<u32>) -> Result<()> {
        self.exists = true;
        groups.clear();
        groups.resize(num_rows, 0);
        Ok(())
    }

    fn len(&self) -> usize {
        self.exists as usize
    }

    fn size(&self) -> usize {
        0
    }

    fn emit(&mut self) -> Result<Vec<ArrayRef>> {
        self.exists = false;
        Ok(Vec::new())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_array::cast::AsArray;
    use arrow_array::{Array, StructArray};
    use arrow_array::{Float64Array, Int32Array, StringArray};
    use std::sync::Arc;

    fn intern_all(gv: &mut dyn GroupValues, keys: &[ArrayRef]) -> Vec<u32> {
        let mut g = Vec::new();
        gv.intern(keys, keys[0].len(), &mut g).expect("intern");
        g
    }

    #[test]
    fn every_layout_numbers_groups_in_first_seen_order() {
        let ints: ArrayRef = Arc::new(Int32Array::from(vec![
            Some(5),
            None,
            Some(5),
            Some(-1),
            None,
        ]));
        let strs: ArrayRef = Arc::new(StringArray::from(vec![
            Some("é"),
            None,
            Some("é"),
            Some(""),
            None,
        ]));
        for keys in [
            vec![ints.clone()],
            vec![strs.clone()],
            vec![ints.clone(), strs.clone()],
        ] {
            let types: Vec<DataType> = keys.iter().map(|k| k.data_type().clone()).collect();
            let mut gv = new_group_values(&types).expect("table");
            assert_eq!(intern_all(gv.as_mut(), &keys), vec![0, 1, 0, 2, 1]);
            assert_eq!(intern_all(gv.as_mut(), &keys), vec![0, 1, 0, 2, 1]);
            assert_eq!(gv.len(), 3);
            let out = gv.emit().expect("emit");
            assert_eq!(out[0].len(), 3);
            assert!(out[0].is_null(1));
            assert_eq!(gv.len(), 0);
        }
        // the general row layout, which nested keys use
        let mut gv = RowGroupValues::new(&[DataType::Int32, DataType::Utf8]).expect("rows");
        assert_eq!(intern_all(&mut gv, &[ints, strs]), vec![0, 1, 0, 2, 1]);
        assert_eq!(gv.emit().expect("emit")[1].len(), 3);
    }

    #[test]
    fn short_and_long_strings_group_by_their_bytes() {
        // 15 bytes is the longest packed form; "a" and "a\0" differ only by length.
        let values = [
            "",
            "a",
            "a\0",
            "a",
            "",
            "123456789012345",
            "1234567890123456",
            "123456789012345",
            "1234567890123456",
            "a\0",
            "é",
            "b",
        ];
        let want = vec![0, 1, 2, 1, 0, 3, 4, 3, 4, 2, 5, 6];
        let a = StringArray::from(values.to_vec());
        let mut gv = new_group_values(&[DataType::Utf8]).expect("table");
        assert_eq!(intern_all(gv.as_mut(), &[Arc::new(a.clone())]), want);
        // A slice ending at the buffer's end takes the copying path for its last values.
        let tail: ArrayRef = Arc::new(a.slice(8, 4));
        assert_eq!(intern_all(gv.as_mut(), &[tail]), vec![4, 2, 5, 6]);
        let out = gv.emit().expect("emit");
        let got: Vec<&str> = out[0]
            .as_string::<i32>()
            .iter()
            .map(|v| v.unwrap_or("?"))
            .collect();
        assert_eq!(
            got,
            vec![
                "",
                "a",
                "a\0",
                "123456789012345",
                "1234567890123456",
                "é",
                "b"
            ]
        );
    }

    #[test]
    fn sorted_keys_then_unsorted_ones_find_the_same_groups() {
        let sorted: ArrayRef = Arc::new(Int32Array::from(vec![
            Some(1),
            Some(1),
            None,
            Some(3),
            Some(7),
        ]));
        let after: ArrayRef = Arc::new(Int32Array::from(vec![
            Some(3),
            None,
            Some(2),
            Some(7),
            Some(9),
            Some(1),
        ]));
        let mut gv = new_group_values(&[DataType::Int32]).expect("table");
        assert_eq!(intern_all(gv.as_mut(), &[sorted]), vec![0, 0, 1, 2, 3]);
        assert_eq!(intern_all(gv.as_mut(), &[after]), vec![2, 1, 4, 3, 5, 0]);
        assert_eq!(gv.len(), 6);
    }

    #[test]
    fn doubles_inside_structs_are_normalised_too() {
        let f: ArrayRef = Arc::new(Float64Array::from(vec![0.0, -0.0, f64::NAN, -f64::NAN]));
        let i: ArrayRef = Arc::new(Int32Array::from(vec![1, 1, 2, 2]));
        let fields = vec![
            arrow_schema::Field::new("f", DataType::Float64, true),
            arrow_schema::Field::new("i", DataType::Int32, true),
        ];
        let s: ArrayRef = Arc::new(StructArray::new(fields.clone().into(), vec![f, i], None));
        let mut gv = new_group_values(&[DataType::Struct(fields.into())]).expect("table");
        assert_eq!(
            intern_all(gv.as_mut(), &[normalize_key(&s)]),
            vec![0, 0, 1, 1]
        );
    }

    #[test]
    fn nan_and_negative_zero_group_together_after_normalising() {
        let f: ArrayRef = Arc::new(Float64Array::from(vec![
            0.0,
            -0.0,
            f64::NAN,
            -f64::NAN,
            1.0,
        ]));
        let mut gv = new_group_values(&[DataType::Float64]).expect("table");
        assert_eq!(
            intern_all(gv.as_mut(), &[normalize_key(&f)]),
            vec![0, 0, 1, 1, 2]
        );
    }

    /// The same rows as plain strings and dictionary-encoded (shared dictionaries, a NULL in
    /// the dictionary, NULL codes, a dictionary in another order): same groups, same keys out.
    #[test]
    fn dictionary_encoded_keys_group_like_their_values() {
        use arrow_array::types::Int32Type;
        use arrow_array::DictionaryArray;
        let dict_a: ArrayRef = Arc::new(StringArray::from(vec![
            Some("x"),
            None,
            Some("é"),
            Some("a long value past sixteen bytes"),
        ]));
        let dict_b: ArrayRef = Arc::new(StringArray::from(vec![Some("é"), Some("new"), Some("x")]));
        let encoded = |dict: &ArrayRef, codes: Vec<Option<i32>>| -> ArrayRef {
            Arc::new(
                DictionaryArray::<Int32Type>::try_new(Int32Array::from(codes), dict.clone())
                    .expect("dictionary"),
            )
        };
        let batches = [
            encoded(&dict_a, vec![Some(0), Some(1), None, Some(2), Some(0)]),
            encoded(&dict_a, vec![Some(3), Some(2), Some(1)]),
            encoded(&dict_b, vec![Some(1), Some(0), Some(2), None]),
        ];
        let plain: Vec<ArrayRef> = batches
            .iter()
            .map(|b| arrow_cast::cast(b, &DataType::Utf8).expect("cast"))
            .collect();
        // One string key, and the same with an integer key beside it (composed).
        let ints = |n: usize| -> ArrayRef { Arc::new(Int32Array::from(vec![7; n])) };
        for with_int in [false, true] {
            let types = if with_int {
                vec![DataType::Int32, DataType::Utf8]
            } else {
                vec![DataType::Utf8]
            };
            let mut on_codes = new_group_values(&types).expect("table");
            let mut on_values = new_group_values(&types).expect("table");
            for (d, p) in batches.iter().zip(&plain) {
                let (kd, kp) = if with_int {
                    (
                        vec![ints(d.len()), d.clone()],
                        vec![ints(p.len()), p.clone()],
                    )
                } else {
                    (vec![d.clone()], vec![p.clone()])
                };
                assert_eq!(
                    intern_all(on_codes.as_mut(), &kd),
                    intern_all(on_values.as_mut(), &kp)
                );
            }
            assert_eq!(on_codes.len(), 5, "x, NULL, é, the long one, new");
            let (a, b) = (
                on_codes.emit().expect("emit"),
                on_values.emit().expect("emit"),
            );
            assert_eq!(a.len(), b.len());
            for (x, y) in a.iter().zip(&b) {
                assert_eq!(x.as_ref(), y.as_ref());
            }
        }
    }

    /// Few values per column go through the dense tuple table; once a column has more than its
    /// share of the table's bits the hash table alone serves. Groups must not change.
    #[test]
    fn composed_keys_keep_their_groups_when_a_column_outgrows_the_dense_table() {
        let mut composed = new_group_values(&[DataType::Int32, DataType::Utf8]).expect("table");
        let mut rows = RowGroupValues::new(&[DataType::Int32, DataType::Utf8]).expect("table");
        for batch in 0..6 {
            // The string column has 3 values at first, then up to 200.
            let spread = if batch < 2 { 3 } else { 200 };
            let ints: ArrayRef = Arc::new(Int32Array::from(
                (0..500).map(|i| (i * 7 + batch) % 4).collect::<Vec<i32>>(),
            ));
            let strs: ArrayRef = Arc::new(StringArray::from(
                (0..500)
                    .map(|i| format!("v{}", (i * 13 + batch * 5) % spread))
                    .collect::<Vec<_>>(),
            ));
            let keys = [ints, strs];
            assert_eq!(
                intern_all(composed.as_mut(), &keys),
                intern_all(&mut rows, &keys),
                "batch {batch}"
            );
        }
        assert_eq!(composed.len(), rows.len());
        // After a spill (emit) the table starts again, dense part included.
        composed.emit().expect("emit");
        rows.emit().expect("emit");
        let keys: [ArrayRef; 2] = [
            Arc::new(Int32Array::from(vec![1, 2, 1])),
            Arc::new(StringArray::from(vec!["a", "b", "a"])),
        ];
        assert_eq!(intern_all(composed.as_mut(), &keys), vec![0, 1, 0]);
    }
}
