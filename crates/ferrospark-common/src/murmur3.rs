//! Spark's hash partitioning: `pmod(Murmur3Hash(keys, 42), n)`, the partition Spark's
//! `repartition(n, keys)` sends a row to.
//!
//! Written here, not taken from a crate, because the bits must be Spark's own: Spark's
//! `Murmur3_x86_32` hashes a string's trailing bytes one *signed* byte at a time (its legacy
//! `hashUnsafeBytes`, which no Murmur3 crate reproduces), chains the key columns by using each
//! column's hash as the next one's seed, skips NULLs (the seed passes through) and hashes
//! `-0.0` as `0`. ferrospark computes the partition of rows it reads itself so that they meet,
//! in the same task, the rows Spark's own exchange routed there.

use arrow_array::cast::AsArray;
use arrow_array::types::{
    Date32Type, Decimal128Type, Float32Type, Float64Type, Int16Type, Int32Type, Int64Type,
    Int8Type, TimestampMicrosecondType,
};
use arrow_array::{Array, ArrayRef};
use arrow_schema::{DataType, TimeUnit};

use crate::spark_bits::{spark_double_bits, spark_float_bits};

/// The seed of Spark's `hash(...)` and of its hash partitioning.
pub const SPARK_MURMUR3_SEED: i32 = 42;

const C1: i32 = 0xcc9e_2d51_u32 as i32;
const C2: i32 = 0x1b87_3593;

fn mix_k1(k1: i32) -> i32 {
    k1.wrapping_mul(C1).rotate_left(15).wrapping_mul(C2)
}

fn mix_h1(h1: i32, k1: i32) -> i32 {
    (h1 ^ k1)
        .rotate_left(13)
        .wrapping_mul(5)
        .wrapping_add(0xe654_6b64_u32 as i32)
}

fn fmix(h1: i32, length: i32) -> i32 {
    let mut h = (h1 ^ length) as u32;
    h ^= h >> 16;
    h = h.wrapping_mul(0x85eb_ca6b);
    h ^= h >> 13;
    h = h.wrapping_mul(0xc2b2_ae35);
    h ^= h >> 16;
    h as i32
}

/// Spark's `Murmur3_x86_32.hashInt`.
pub fn hash_int(input: i32, seed: i32) -> i32 {
    fmix(mix_h1(seed, mix_k1(input)), 4)
}

/// Spark's `Murmur3_x86_32.hashLong`: the low word, then the high word.
pub fn hash_long(input: i64, seed: i32) -> i32 {
    let h1 = mix_h1(seed, mix_k1(input as i32));
    fmix(mix_h1(h1, mix_k1((input >> 32) as i32)), 8)
}

/// Spark's `Murmur3_x86_32.hashUnsafeBytes`: whole little-endian words, then each trailing
/// byte sign-extended on its own.
pub fn hash_bytes(bytes: &[u8], seed: i32) -> i32 {
    let mut h1 = seed;
    let words = bytes.chunks_exact(4);
    let tail = words.remainder();
    for w in words {
        h1 = mix_h1(h1, mix_k1(i32::from_le_bytes([w[0], w[1], w[2], w[3]])));
    }
    for &b in tail {
        h1 = mix_h1(h1, mix_k1(i32::from(b as i8)));
    }
    fmix(h1, bytes.len() as i32)
}

/// Folds column `c` into `hashes` (one per row): each non-NULL value hashed with its row's
/// hash so far as the seed, as Spark's `Murmur3Hash` chains its children.
fn fold_column(c: &dyn Array, hashes: &mut [i32]) -> Option<()> {
    macro_rules! each {
        ($a:expr, $hash:expr) => {{
            let a = $a;
            for (i, h) in hashes.iter_mut().enumerate() {
                if a.is_valid(i) {
                    *h = $hash(a.value(i), *h);
                }
            }
        }};
    }
    match c.data_type() {
        DataType::Boolean => each!(c.as_boolean(), |v: bool, s| hash_int(i32::from(v), s)),
        DataType::Int8 => each!(c.as_primitive::<Int8Type>(), |v: i8, s| hash_int(
            i32::from(v),
            s
        )),
        DataType::Int16 => each!(c.as_primitive::<Int16Type>(), |v: i16, s| hash_int(
            i32::from(v),
            s
        )),
        DataType::Int32 => each!(c.as_primitive::<Int32Type>(), hash_int),
        DataType::Date32 => each!(c.as_primitive::<Date32Type>(), hash_int),
        DataType::Int64 => each!(c.as_primitive::<Int64Type>(), hash_long),
        DataType::Timestamp(TimeUnit::Microsecond, _) => {
            each!(c.as_primitive::<TimestampMicrosecondType>(), hash_long)
        }
        DataType::Float32 => each!(c.as_primitive::<Float32Type>(), |v: f32, s| hash_int(
            spark_float_bits(v),
            s
        )),
        DataType::Float64 => each!(c.as_primitive::<Float64Type>(), |v: f64, s| hash_long(
            spark_double_bits(v),
            s
        )),
        DataType::Decimal128(p, _) if *p <= 18 => {
            each!(c.as_primitive::<Decimal128Type>(), |v: i128, s| hash_long(
                v as i64, s
            ))
        }
        DataType::Utf8 => each!(c.as_string::<i32>(), |v: &str, s| hash_bytes(
            v.as_bytes(),
            s
        )),
        DataType::LargeUtf8 => each!(c.as_string::<i64>(), |v: &str, s| hash_bytes(
            v.as_bytes(),
            s
        )),
        DataType::Binary => each!(c.as_binary::<i32>(), hash_bytes),
        DataType::LargeBinary => each!(c.as_binary::<i64>(), hash_bytes),
        _ => return None,
    }
    Some(())
}

/// Spark's `hash(keys...)` of each row (`Murmur3Hash` with seed 42); `None` when a key's type
/// is not one computed here (booleans, integers, floats, strings, binary, dates, timestamps
/// in microseconds, decimals of up to 18 digits).
pub fn spark_hash(keys: &[ArrayRef]) -> Option<Vec<i32>> {
    let rows = keys.first().map_or(0, |k| k.len());
    let mut hashes = vec![SPARK_MURMUR3_SEED; rows];
    for k in keys {
        fold_column(k.as_ref(), &mut hashes)?;
    }
    Some(hashes)
}

/// The partition Spark's `repartition(n, keys...)` sends each row to:
/// `pmod(hash(keys...), n)`; `None` when a key's type is not one [`spark_hash`] computes.
pub fn spark_partition_ids(keys: &[ArrayRef], n: usize) -> Option<Vec<u32>> {
    let n = i64::try_from(n.max(1)).ok()?;
    let hashes = spark_hash(keys)?;
    Some(
        hashes
            .into_iter()
            .map(|h| i64::from(h).rem_euclid(n) as u32)
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_array::{Float64Array, Int32Array, Int64Array, StringArray};
    use std::sync::Arc;

    // Values printed by Spark 4: `SELECT hash(...)`.
    #[test]
    fn matches_spark_hash_of_single_values() {
        let int: ArrayRef = Arc::new(Int32Array::from(vec![Some(1), Some(0), Some(-7), None]));
        assert_eq!(
            spark_hash(&[int]).expect("test value"),
            vec![-559580957, 933211791, -1618159745, 42]
        );
        let long: ArrayRef = Arc::new(Int64Array::from(vec![1i64, 1 << 40]));
        assert_eq!(
            spark_hash(&[long]).expect("test value"),
            vec![-1712319331, -1596767687]
        );
        let s: ArrayRef = Arc::new(StringArray::from(vec!["", "a", "abcd", "abcde", "é€😀"]));
        assert_eq!(
            spark_hash(&[s]).expect("test value"),
            vec![142593372, 1485273170, -396302900, 814637928, -1844856255]
        );
        let d: ArrayRef = Arc::new(Float64Array::from(vec![0.0, -0.0, 1.5, f64::NAN]));
        let h = spark_hash(&[d]).expect("test value");
        assert_eq!(h, vec![-1670924195, -1670924195, 1290763749, -1281358385]);
    }

    #[test]
    fn chains_columns_and_skips_nulls() {
        let a: ArrayRef = Arc::new(StringArray::from(vec![Some("user-1"), None]));
        let b: ArrayRef = Arc::new(Int32Array::from(vec![Some(3), Some(3)]));
        let both = spark_hash(&[a.clone(), b.clone()]).expect("test value");
        let first = spark_hash(&[a]).expect("test value");
        assert_eq!(both, vec![275217405, -1823081949]);
        assert_eq!(both[0], hash_int(3, first[0]));
        let ids = spark_partition_ids(&[b], 7).expect("test value");
        assert!(ids.iter().all(|&p| p < 7));
    }

    #[test]
    fn other_types_are_left_to_spark() {
        let l: ArrayRef = Arc::new(arrow_array::ListArray::new_null(
            Arc::new(arrow_schema::Field::new("x", DataType::Int32, true)),
            1,
        ));
        assert!(spark_hash(&[l]).is_none());
    }
}
