//! Hashes and digests as Spark computes them: `hash` (Spark's Murmur3 of all its arguments,
//! seed 42), `xxhash64` (XXH64, seed 42), `md5`, `sha1` / `sha`, `sha2` and `crc32`.
//!
//! `hash` and `xxhash64` chain their arguments as Spark's `HashExpression` does: each value is
//! hashed with the hash so far as its seed, a NULL leaves the seed as it is, an array hashes
//! its elements in order, a struct its fields, and `-0.0` hashes as `0.0`. The primitives are
//! ferrospark's own ([`ferrospark_common::murmur3`], [`ferrospark_common::xxhash64`]) because
//! the bits must be Spark's; the digests come from the RustCrypto crates and `crc32fast`.

use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::{
    Date32Type, Decimal128Type, DurationMicrosecondType, Float32Type, Float64Type, Int16Type,
    Int32Type, Int64Type, Int8Type, IntervalYearMonthType, TimestampMicrosecondType,
};
use arrow_array::{Array, ArrayRef, Int32Array, Int64Array, StringArray};
use arrow_schema::{DataType, TimeUnit};
use ferrospark_common::murmur3::{hash_bytes, hash_int, hash_long, SPARK_MURMUR3_SEED};
use ferrospark_common::spark_bits::{spark_double_bits, spark_float_bits};
use ferrospark_common::xxhash64::{
    java_big_integer_bytes, xxh64_bytes, xxh64_int, xxh64_long, SPARK_HASH_SEED,
};
use ferrospark_common::{FerroError, Result};
use sha2::Digest;

use super::{Args, Bound, Call, ScalarFunction};
use crate::expr::Literal;
use crate::physical::PhysicalExpr;
use crate::types::spark_equivalent;

/// The hash and digest functions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HashFn {
    /// `hash(a, ...)`: Murmur3 x86 32-bit, an INT
    Murmur3,
    /// `xxhash64(a, ...)`: a BIGINT
    XxHash64,
    /// `md5(b)`: 32 lower-case hex digits
    Md5,
    /// `sha1(b)` / `sha(b)`: 40 hex digits
    Sha1,
    /// `sha2(b, bits)`: SHA-224 / 256 / 384 / 512 (0 is 256), NULL for other lengths
    Sha2,
    /// `crc32(b)`: a BIGINT
    Crc32,
    /// `hmac(key, message, algorithm)`: RFC 2104 over MD5, SHA-1 or SHA-2, the bytes
    Hmac,
}

impl HashFn {
    /// Spark's name.
    pub fn name(self) -> &'static str {
        match self {
            HashFn::Murmur3 => "hash",
            HashFn::XxHash64 => "xxhash64",
            HashFn::Md5 => "md5",
            HashFn::Sha1 => "sha1",
            HashFn::Sha2 => "sha2",
            HashFn::Crc32 => "crc32",
            HashFn::Hmac => "hmac",
        }
    }

    pub(crate) fn evaluate(self, args: &Args) -> Result<ArrayRef> {
        let n = args.rows();
        Ok(match self {
            HashFn::Murmur3 => {
                let cols = full_args(args)?;
                let mut out = Vec::with_capacity(n);
                for i in 0..n {
                    let mut h = SPARK_MURMUR3_SEED;
                    for c in &cols {
                        h = hash_value::<Murmur3>(c.as_ref(), i, h)?;
                    }
                    out.push(h);
                }
                Arc::new(Int32Array::from(out))
            }
            HashFn::XxHash64 => {
                let cols = full_args(args)?;
                let mut out = Vec::with_capacity(n);
                for i in 0..n {
                    let mut h = SPARK_HASH_SEED;
                    for c in &cols {
                        h = hash_value::<XxHash64>(c.as_ref(), i, h)?;
                    }
                    out.push(h as i64);
                }
                Arc::new(Int64Array::from(out))
            }
            HashFn::Md5 => hex_digests(args, |b| md5::Md5::digest(b).to_vec())?,
            HashFn::Sha1 => hex_digests(args, |b| sha1::Sha1::digest(b).to_vec())?,
            HashFn::Sha2 => {
                let a = args.full(0)?;
                let bytes = a.as_binary::<i32>();
                let bits = args.prim::<Int32Type>(1)?;
                let out: StringArray = (0..n)
                    .map(|i| {
                        let b = bytes.is_valid(i).then(|| bytes.value(i))?;
                        let d = match bits.get(i)? {
                            224 => sha2::Sha224::digest(b).to_vec(),
                            0 | 256 => sha2::Sha256::digest(b).to_vec(),
                            384 => sha2::Sha384::digest(b).to_vec(),
                            512 => sha2::Sha512::digest(b).to_vec(),
                            _ => return None,
                        };
                        Some(hex(&d))
                    })
                    .collect();
                Arc::new(out)
            }
            HashFn::Hmac => {
                let (k, m) = (args.full(0)?, args.full(1)?);
                let (k, m) = (k.as_binary::<i32>(), m.as_binary::<i32>());
                let algorithm = args.str(2)?;
                let mut out = arrow_array::builder::BinaryBuilder::with_capacity(n, n * 32);
                for i in 0..n {
                    match (
                        k.is_valid(i).then(|| k.value(i)),
                        m.is_valid(i).then(|| m.value(i)),
                        algorithm.get(i),
                    ) {
                        (Some(k), Some(m), Some(a)) => out.append_value(hmac(k, m, a)?),
                        _ => out.append_null(),
                    }
                }
                Arc::new(out.finish())
            }
            HashFn::Crc32 => {
                let a = args.full(0)?;
                let bytes = a.as_binary::<i32>();
                let out: Int64Array = bytes
                    .iter()
                    .map(|b| b.map(|b| i64::from(crc32fast::hash(b))))
                    .collect();
                Arc::new(out)
            }
        })
    }
}

/// A digest function and its block size in bytes.
type DigestFn = (fn(&[u8]) -> Vec<u8>, usize);

/// RFC 2104's HMAC of `message` under `key` with the digest Spark's `algorithm` names.
fn hmac(key: &[u8], message: &[u8], algorithm: &str) -> Result<Vec<u8>> {
    let (digest, block): DigestFn =
        match algorithm.to_ascii_uppercase().as_str() {
            "MD5" => (|b| md5::Md5::digest(b).to_vec(), 64),
            "SHA-1" | "SHA1" => (|b| sha1::Sha1::digest(b).to_vec(), 64),
            "SHA-224" => (|b| sha2::Sha224::digest(b).to_vec(), 64),
            "SHA-256" => (|b| sha2::Sha256::digest(b).to_vec(), 64),
            "SHA-384" => (|b| sha2::Sha384::digest(b).to_vec(), 128),
            "SHA-512" => (|b| sha2::Sha512::digest(b).to_vec(), 128),
            other => {
                return Err(FerroError::Arithmetic(format!(
                    "[INVALID_PARAMETER_VALUE.HMAC_ALGORITHM] The value of parameter(s) `algorithm` in `hmac` is invalid: '{other}'; expected one of 'MD5', 'SHA-1', 'SHA-224', 'SHA-256', 'SHA-384', 'SHA-512'."
                )))
            }
        };
    if key.is_empty() {
        return Err(FerroError::Arithmetic(
            "[INVALID_PARAMETER_VALUE.HMAC_CRYPTO_ERROR] The value of parameter(s) `key` in `hmac` is invalid: detail message: Empty key SQLSTATE: 22023".into(),
        ));
    }
    let mut k = if key.len() > block {
        digest(key)
    } else {
        key.to_vec()
    };
    k.resize(block, 0);
    let pad = |x: u8| k.iter().map(|b| b ^ x).collect::<Vec<u8>>();
    let mut inner = pad(0x36);
    inner.extend_from_slice(message);
    let mut outer = pad(0x5c);
    outer.extend_from_slice(&digest(&inner));
    Ok(digest(&outer))
}

fn full_args(args: &Args) -> Result<Vec<ArrayRef>> {
    (0..args.len()).map(|i| args.full(i)).collect()
}

fn hex(d: &[u8]) -> String {
    use std::fmt::Write;
    let mut s = String::with_capacity(d.len() * 2);
    for b in d {
        let _ = write!(s, "{b:02x}");
    }
    s
}

fn hex_digests(args: &Args, digest: impl Fn(&[u8]) -> Vec<u8>) -> Result<ArrayRef> {
    let a = args.full(0)?;
    let out: StringArray = a
        .as_binary::<i32>()
        .iter()
        .map(|b| b.map(|b| hex(&digest(b))))
        .collect();
    Ok(Arc::new(out))
}

/// Spark's hash primitives, for one hash family.
trait SparkHasher {
    type Seed: Copy;
    fn int(v: i32, seed: Self::Seed) -> Self::Seed;
    fn long(v: i64, seed: Self::Seed) -> Self::Seed;
    fn bytes(b: &[u8], seed: Self::Seed) -> Self::Seed;
}

struct Murmur3;

impl SparkHasher for Murmur3 {
    type Seed = i32;
    fn int(v: i32, seed: i32) -> i32 {
        hash_int(v, seed)
    }
    fn long(v: i64, seed: i32) -> i32 {
        hash_long(v, seed)
    }
    fn bytes(b: &[u8], seed: i32) -> i32 {
        hash_bytes(b, seed)
    }
}

struct XxHash64;

impl SparkHasher for XxHash64 {
    type Seed = u64;
    fn int(v: i32, seed: u64) -> u64 {
        xxh64_int(v, seed)
    }
    fn long(v: i64, seed: u64) -> u64 {
        xxh64_long(v, seed)
    }
    fn bytes(b: &[u8], seed: u64) -> u64 {
        xxh64_bytes(b, seed)
    }
}

/// Row `i` of `a` hashed with `seed` as Spark's `InterpretedHashFunction.hash` does (NULL
/// gives the seed back).
fn hash_value<H: SparkHasher>(a: &dyn Array, i: usize, seed: H::Seed) -> Result<H::Seed> {
    if a.is_null(i) {
        return Ok(seed);
    }
    Ok(match a.data_type() {
        DataType::Null => seed,
        DataType::Boolean => H::int(i32::from(a.as_boolean().value(i)), seed),
        DataType::Int8 => H::int(i32::from(a.as_primitive::<Int8Type>().value(i)), seed),
        DataType::Int16 => H::int(i32::from(a.as_primitive::<Int16Type>().value(i)), seed),
        DataType::Int32 => H::int(a.as_primitive::<Int32Type>().value(i), seed),
        DataType::Date32 => H::int(a.as_primitive::<Date32Type>().value(i), seed),
        DataType::Interval(arrow_schema::IntervalUnit::YearMonth) => {
            H::int(a.as_primitive::<IntervalYearMonthType>().value(i), seed)
        }
        DataType::Int64 => H::long(a.as_primitive::<Int64Type>().value(i), seed),
        DataType::Timestamp(TimeUnit::Microsecond, _) => {
            H::long(a.as_primitive::<TimestampMicrosecondType>().value(i), seed)
        }
        DataType::Duration(TimeUnit::Microsecond) => {
            H::long(a.as_primitive::<DurationMicrosecondType>().value(i), seed)
        }
        DataType::Float32 => H::int(
            spark_float_bits(a.as_primitive::<Float32Type>().value(i)),
            seed,
        ),
        DataType::Float64 => H::long(
            spark_double_bits(a.as_primitive::<Float64Type>().value(i)),
            seed,
        ),
        DataType::Decimal128(p, _) => {
            let v = a.as_primitive::<Decimal128Type>().value(i);
            if *p <= 18 {
                H::long(v as i64, seed)
            } else {
                H::bytes(java_big_integer_bytes(&v.to_be_bytes()), seed)
            }
        }
        DataType::Utf8 => H::bytes(a.as_string::<i32>().value(i).as_bytes(), seed),
        DataType::LargeUtf8 => H::bytes(a.as_string::<i64>().value(i).as_bytes(), seed),
        DataType::Binary => H::bytes(a.as_binary::<i32>().value(i), seed),
        DataType::LargeBinary => H::bytes(a.as_binary::<i64>().value(i), seed),
        DataType::List(_) => {
            let values = a.as_list::<i32>().value(i);
            let mut h = seed;
            for j in 0..values.len() {
                h = hash_value::<H>(values.as_ref(), j, h)?;
            }
            h
        }
        DataType::Struct(_) => {
            let s = a.as_struct();
            let mut h = seed;
            for c in s.columns() {
                h = hash_value::<H>(c.as_ref(), i, h)?;
            }
            h
        }
        DataType::Map(..) => {
            let m = a.as_map();
            let (start, end) = (
                m.value_offsets()[i] as usize,
                m.value_offsets()[i + 1] as usize,
            );
            let mut h = seed;
            for j in start..end {
                h = hash_value::<H>(m.keys().as_ref(), j, h)?;
                h = hash_value::<H>(m.values().as_ref(), j, h)?;
            }
            h
        }
        other => {
            return Err(FerroError::Unsupported(format!(
                "hashing values of type {} is not supported",
                crate::types::spark_type_name(other)
            )))
        }
    })
}

fn contains_map(t: &DataType) -> bool {
    match t {
        DataType::Map(..) => true,
        DataType::List(f) | DataType::LargeList(f) => contains_map(f.data_type()),
        DataType::Struct(fs) => fs.iter().any(|f| contains_map(f.data_type())),
        _ => false,
    }
}

/// Argument `i` as bytes: BINARY as is, text as its UTF-8 bytes (Spark's implicit cast).
fn binary_arg(call: &Call<'_, '_>, i: usize, a: PhysicalExpr) -> Result<PhysicalExpr> {
    match spark_equivalent(&a.data_type()) {
        DataType::Binary => Ok(a),
        DataType::Null => Ok(PhysicalExpr::Literal(Literal::null(&DataType::Binary))),
        DataType::Utf8 => Ok(crate::bind::cast_to(a, &DataType::Binary)),
        _ => Err(call.wrong_type(i, &a, "the \"BINARY\" type")),
    }
}

/// Binds this family's calls; other names are returned.
pub(crate) fn bind(call: &Call<'_, '_>, args: Vec<PhysicalExpr>) -> Result<Bound> {
    let f = ScalarFunction::Hash;
    Ok(Bound::Done(match call.name {
        "hash" | "xxhash64" => {
            call.arity(&args, 1, usize::MAX)?;
            // Spark's default (`spark.sql.legacy.allowHashOnMapType=false`); the legacy
            // setting is not read: a map's entry order is not its identity.
            if args.iter().any(|a| contains_map(&a.data_type())) {
                return Err(FerroError::Analysis(format!(
                    "[DATATYPE_MISMATCH.HASH_MAP_TYPE] Cannot resolve \"{}\" due to data type mismatch: Input to the function `{}` cannot contain elements of the \"MAP\" type. In Spark, same maps may have different hashcode, thus hash expressions are prohibited on \"MAP\" elements. To restore previous behavior set \"spark.sql.legacy.allowHashOnMapType\" to \"true\". SQLSTATE: 42K09",
                    call.expr, call.name
                )));
            }
            let (func, t) = if call.name == "hash" {
                (HashFn::Murmur3, DataType::Int32)
            } else {
                (HashFn::XxHash64, DataType::Int64)
            };
            call.function(f(func), args, t)
        }
        "md5" | "sha1" | "sha" | "crc32" => {
            call.arity(&args, 1, 1)?;
            let (func, t) = match call.name {
                "md5" => (HashFn::Md5, DataType::Utf8),
                "crc32" => (HashFn::Crc32, DataType::Int64),
                _ => (HashFn::Sha1, DataType::Utf8),
            };
            let b = binary_arg(call, 0, args[0].clone())?;
            call.function(f(func), vec![b], t)
        }
        "hmac" => {
            call.arity(&args, 2, 3)?;
            let key = binary_arg(call, 0, args[0].clone())?;
            let message = binary_arg(call, 1, args[1].clone())?;
            let algorithm = match args.get(2) {
                Some(a) => call.string_arg(2, a.clone())?,
                None => PhysicalExpr::Literal(crate::expr::Literal::string("SHA-256")),
            };
            call.function(
                f(HashFn::Hmac),
                vec![key, message, algorithm],
                DataType::Binary,
            )
        }
        "sha2" => {
            call.arity(&args, 2, 2)?;
            let b = binary_arg(call, 0, args[0].clone())?;
            let bits = call.int_arg(1, args[1].clone(), &DataType::Int32)?;
            call.function(f(HashFn::Sha2), vec![b, bits], DataType::Utf8)
        }
        _ => return Ok(Bound::NotMine(args)),
    }))
}
