//! Decimal arithmetic Spark defines one way and several operators need: the average of a
//! decimal sum, rounded as Spark's `Average` rounds it.

use arrow_buffer::i256;

/// `round_half_up(n / d)` for `d > 0`.
pub fn div_half_up(n: i256, d: i256) -> i256 {
    let q = n / d;
    let r = n % d;
    let two_r = r.wrapping_mul(i256::from_i128(2)).wrapping_abs();
    if two_r >= d {
        if n.is_negative() {
            q - i256::ONE
        } else {
            q + i256::ONE
        }
    } else {
        q
    }
}

/// `sum / count` of a decimal sum of scale `scale`, at scale `result_scale`: Spark divides to
/// scale 38 (HALF_UP), then rounds to the result scale (HALF_UP). `count` must be positive.
pub fn decimal_average(sum: i256, count: i64, scale: i8, result_scale: i8) -> i256 {
    if let Some(q) = narrow_average(sum, count, scale, result_scale) {
        return q;
    }
    let ten = i256::from_i128(10);
    let up38 = ten.wrapping_pow((38 - i32::from(scale)).max(0) as u32);
    let down = ten.wrapping_pow((38 - i32::from(result_scale)).max(0) as u32);
    let q38 = div_half_up(sum.wrapping_mul(up38), i256::from_i128(i128::from(count)));
    div_half_up(q38, down)
}

/// [`decimal_average`] in 128-bit (or 64-bit) integers when it can be: one rounding of
/// `sum * 10^(result_scale - scale) / count` gives the same digits as Spark's two whenever
/// `count < 10^(38 - result_scale)` (a quotient with that denominator is never within the
/// first rounding's reach of a half), which is every count of a scale-6 average.
fn narrow_average(sum: i256, count: i64, scale: i8, result_scale: i8) -> Option<i256> {
    let down = 38 - i32::from(result_scale);
    let shift = i32::from(result_scale) - i32::from(scale);
    if count <= 0 || !(0..=38).contains(&down) || !(0..=38).contains(&shift) {
        return None;
    }
    if down > 0 && i128::from(count) >= 10i128.checked_pow(down as u32)? {
        return None;
    }
    let a = sum
        .to_i128()?
        .checked_mul(10i128.checked_pow(shift as u32)?)?;
    let (negative, a, c) = (a < 0, a.unsigned_abs(), count as u128);
    let (q, r) = match u64::try_from(a) {
        // The usual case: a 64-bit division.
        Ok(a64) => {
            let c64 = count as u64;
            (u128::from(a64 / c64), u128::from(a64 % c64))
        }
        Err(_) => (a / c, a % c),
    };
    let q = i128::try_from(q + u128::from(2 * r >= c)).ok()?;
    Some(i256::from_i128(if negative { -q } else { q }))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Spark's two roundings in 256-bit arithmetic, the reference for the narrow path.
    fn wide(sum: i128, count: i64, scale: i8, result_scale: i8) -> i256 {
        let ten = i256::from_i128(10);
        let up38 = ten.wrapping_pow((38 - i32::from(scale)).max(0) as u32);
        let down = ten.wrapping_pow((38 - i32::from(result_scale)).max(0) as u32);
        let q38 = div_half_up(
            i256::from_i128(sum).wrapping_mul(up38),
            i256::from_i128(i128::from(count)),
        );
        div_half_up(q38, down)
    }

    #[test]
    fn the_narrow_path_rounds_as_spark_does() {
        let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
        let mut next = || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        for (scale, rs) in [(2i8, 6i8), (0, 4), (10, 14), (18, 22), (34, 38), (38, 38)] {
            for _ in 0..20_000 {
                let sum = (next() as i64 as i128) >> (next() % 40);
                let count = 1 + (next() % 1_000_000) as i64;
                let want = wide(sum, count, scale, rs);
                assert_eq!(
                    decimal_average(i256::from_i128(sum), count, scale, rs),
                    want,
                    "sum {sum} count {count} scale {scale} -> {rs}"
                );
            }
            // Exact halves at the result scale round away from zero.
            for (sum, count) in [(1i128, 8i64), (-1, 8), (5, 2), (-5, 2), (3, 2000)] {
                assert_eq!(
                    decimal_average(i256::from_i128(sum), count, scale, rs),
                    wide(sum, count, scale, rs)
                );
            }
        }
    }

    #[test]
    fn averages_round_half_up_away_from_zero() {
        let avg = |s: i128, c: i64| decimal_average(i256::from_i128(s), c, 2, 6).as_i128();
        // 1.00 / 3 = 0.333333 (scale 6); 2.00 / 3 = 0.666667; -2.00 / 3 = -0.666667.
        assert_eq!(avg(100, 3), 333_333);
        assert_eq!(avg(200, 3), 666_667);
        assert_eq!(avg(-200, 3), -666_667);
        assert_eq!(avg(5, 1), 50_000);
    }
}
