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
    let ten = i256::from_i128(10);
    let up38 = ten.wrapping_pow((38 - i32::from(scale)).max(0) as u32);
    let down = ten.wrapping_pow((38 - i32::from(result_scale)).max(0) as u32);
    let q38 = div_half_up(sum.wrapping_mul(up38), i256::from_i128(i128::from(count)));
    div_half_up(q38, down)
}

#[cfg(test)]
mod tests {
    use super::*;

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
