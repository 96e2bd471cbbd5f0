//! Spark's XXH64 (`org.apache.spark.sql.catalyst.expressions.XXH64`): the hash of
//! `xxhash64(...)` and of the values `approx_count_distinct` counts.
//!
//! Written here, not taken from a crate: Spark's `hashInt` / `hashLong` are XXH64 of the 4 or 8
//! little-endian bytes, which a crate would compute only through a byte buffer, and the seed
//! chaining and the decimal bytes (`BigInteger.toByteArray`) are Spark's own.

/// The seed Spark uses for `xxhash64(...)` and for hashing values in `approx_count_distinct`.
pub const SPARK_HASH_SEED: u64 = 42;

// ---------------------------------------------------------------------------------------------
// XXH64 (org.apache.spark.sql.catalyst.expressions.XXH64)
// ---------------------------------------------------------------------------------------------

const PRIME64_1: u64 = 0x9E37_79B1_85EB_CA87;
const PRIME64_2: u64 = 0xC2B2_AE3D_27D4_EB4F;
const PRIME64_3: u64 = 0x1656_67B1_9E37_79F9;
const PRIME64_4: u64 = 0x85EB_CA77_C2B2_AE63;
const PRIME64_5: u64 = 0x27D4_EB2F_1656_67C5;

/// Final avalanche (`XXH64.fmix`).
#[inline]
fn fmix(mut hash: u64) -> u64 {
    hash ^= hash >> 33;
    hash = hash.wrapping_mul(PRIME64_2);
    hash ^= hash >> 29;
    hash = hash.wrapping_mul(PRIME64_3);
    hash ^= hash >> 32;
    hash
}

/// Spark's XXH64 primitive `XXH64.hashInt(input, seed)`: the XXH64 of the 4 little-endian bytes
/// of `v`.
#[inline]
pub fn xxh64_int(v: i32, seed: u64) -> u64 {
    let mut hash = seed.wrapping_add(PRIME64_5).wrapping_add(4);
    hash ^= u64::from(v as u32).wrapping_mul(PRIME64_1);
    hash = hash
        .rotate_left(23)
        .wrapping_mul(PRIME64_2)
        .wrapping_add(PRIME64_3);
    fmix(hash)
}

/// Spark's XXH64 primitive `XXH64.hashLong(input, seed)`: the XXH64 of the 8 little-endian bytes
/// of `v`.
#[inline]
pub fn xxh64_long(v: i64, seed: u64) -> u64 {
    let mut hash = seed.wrapping_add(PRIME64_5).wrapping_add(8);
    hash ^= (v as u64)
        .wrapping_mul(PRIME64_2)
        .rotate_left(31)
        .wrapping_mul(PRIME64_1);
    hash = hash
        .rotate_left(27)
        .wrapping_mul(PRIME64_1)
        .wrapping_add(PRIME64_4);
    fmix(hash)
}

/// Reads the first 8 bytes of `s` as a little-endian `u64` (`Platform.getLong` on a
/// little-endian machine; Spark byte-swaps on big-endian ones, so this is what it always sees).
#[inline]
fn read_u64_le(s: &[u8]) -> u64 {
    s.first_chunk::<8>().map_or(0, |b| u64::from_le_bytes(*b))
}

/// Reads the first 4 bytes of `s` as a little-endian `u32`.
#[inline]
fn read_u32_le(s: &[u8]) -> u32 {
    s.first_chunk::<4>().map_or(0, |b| u32::from_le_bytes(*b))
}

/// One XXH64 stripe-lane round.
#[inline]
fn round(acc: u64, lane: u64) -> u64 {
    acc.wrapping_add(lane.wrapping_mul(PRIME64_2))
        .rotate_left(31)
        .wrapping_mul(PRIME64_1)
}

/// Merges a lane accumulator into the hash after the stripes.
#[inline]
fn merge_round(hash: u64, acc: u64) -> u64 {
    let acc = acc
        .wrapping_mul(PRIME64_2)
        .rotate_left(31)
        .wrapping_mul(PRIME64_1);
    (hash ^ acc).wrapping_mul(PRIME64_1).wrapping_add(PRIME64_4)
}

/// Spark's XXH64 primitive `XXH64.hashUnsafeBytes(base, offset, length, seed)` over `b`.
pub fn xxh64_bytes(b: &[u8], seed: u64) -> u64 {
    let mut rest = b;
    let mut hash;
    if b.len() >= 32 {
        let mut v1 = seed.wrapping_add(PRIME64_1).wrapping_add(PRIME64_2);
        let mut v2 = seed.wrapping_add(PRIME64_2);
        let mut v3 = seed;
        let mut v4 = seed.wrapping_sub(PRIME64_1);
        let mut stripes = b.chunks_exact(32);
        for stripe in &mut stripes {
            let (a, tail) = stripe.split_at(8);
            let (bb, tail) = tail.split_at(8);
            let (c, d) = tail.split_at(8);
            v1 = round(v1, read_u64_le(a));
            v2 = round(v2, read_u64_le(bb));
            v3 = round(v3, read_u64_le(c));
            v4 = round(v4, read_u64_le(d));
        }
        rest = stripes.remainder();
        hash = v1
            .rotate_left(1)
            .wrapping_add(v2.rotate_left(7))
            .wrapping_add(v3.rotate_left(12))
            .wrapping_add(v4.rotate_left(18));
        hash = merge_round(hash, v1);
        hash = merge_round(hash, v2);
        hash = merge_round(hash, v3);
        hash = merge_round(hash, v4);
    } else {
        hash = seed.wrapping_add(PRIME64_5);
    }
    hash = hash.wrapping_add(b.len() as u64);

    let mut words = rest.chunks_exact(8);
    for word in &mut words {
        let k1 = read_u64_le(word)
            .wrapping_mul(PRIME64_2)
            .rotate_left(31)
            .wrapping_mul(PRIME64_1);
        hash ^= k1;
        hash = hash
            .rotate_left(27)
            .wrapping_mul(PRIME64_1)
            .wrapping_add(PRIME64_4);
    }
    let mut rest = words.remainder();
    if rest.len() >= 4 {
        hash ^= u64::from(read_u32_le(rest)).wrapping_mul(PRIME64_1);
        hash = hash
            .rotate_left(23)
            .wrapping_mul(PRIME64_2)
            .wrapping_add(PRIME64_3);
        rest = rest.get(4..).unwrap_or_default();
    }
    for &byte in rest {
        hash ^= u64::from(byte).wrapping_mul(PRIME64_5);
        hash = hash.rotate_left(11).wrapping_mul(PRIME64_1);
    }
    fmix(hash)
}

// ---------------------------------------------------------------------------------------------
// Value hashing (XxHash64Function.hash / InterpretedHashFunction.hash)
// ---------------------------------------------------------------------------------------------

/// Strips a big-endian two's complement integer down to the bytes
/// `java.math.BigInteger.toByteArray` returns: the minimal number of bytes that still carries the
/// sign (at least one byte).
pub fn java_big_integer_bytes(be: &[u8]) -> &[u8] {
    let mut start = 0;
    while let (Some(&b), Some(&next)) = (be.get(start), be.get(start + 1)) {
        let redundant = (b == 0x00 && next & 0x80 == 0) || (b == 0xFF && next & 0x80 != 0);
        if !redundant {
            break;
        }
        start += 1;
    }
    be.get(start..).unwrap_or(be)
}
