//! The bits Spark hashes a float or a double by, in every hash it computes (Murmur3 for
//! `hash()` and its hash partitioning, XXH64 for `xxhash64()` and `approx_count_distinct`).

/// `java.lang.Float.floatToIntBits` after Spark's normalisation: `-0.0` hashes as `0.0`
/// (`InterpretedHashFunction` and `NormalizeFloatingNumbers`), every NaN as the canonical NaN
/// `0x7fc00000` (what `floatToIntBits` does).
#[inline]
pub fn spark_float_bits(v: f32) -> i32 {
    if v == 0.0 {
        0
    } else if v.is_nan() {
        0x7fc0_0000
    } else {
        v.to_bits() as i32
    }
}

/// `java.lang.Double.doubleToLongBits` after Spark's normalisation (see [`spark_float_bits`]).
#[inline]
pub fn spark_double_bits(v: f64) -> i64 {
    if v == 0.0 {
        0
    } else if v.is_nan() {
        0x7ff8_0000_0000_0000
    } else {
        v.to_bits() as i64
    }
}
