//! Spark's order of doubles as plain integers, for operators that sort, rank or compare
//! doubles without going through the row format.

/// Spark's ordering of doubles as an integer key: -0.0 = 0.0, every NaN equal and greatest.
#[inline]
pub fn f64_order_key(v: f64) -> i64 {
    let v = if v == 0.0 {
        0.0
    } else if v.is_nan() {
        f64::NAN
    } else {
        v
    };
    let bits = v.to_bits() as i64;
    bits ^ ((((bits >> 63) as u64) >> 1) as i64)
}

#[cfg(test)]
mod tests {
    use super::f64_order_key;

    #[test]
    fn keys_order_doubles_as_spark_does() {
        let ordered = [
            f64::NEG_INFINITY,
            -2.5,
            -1e-300,
            0.0,
            1e-300,
            3.0,
            f64::INFINITY,
            f64::NAN,
        ];
        for w in ordered.windows(2) {
            assert!(
                f64_order_key(w[0]) < f64_order_key(w[1]),
                "{} < {}",
                w[0],
                w[1]
            );
        }
        assert_eq!(f64_order_key(-0.0), f64_order_key(0.0));
        assert_eq!(f64_order_key(f64::NAN), f64_order_key(-f64::NAN));
    }
}
