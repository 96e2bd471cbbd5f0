//! `aes_encrypt`, `aes_decrypt` and `try_aes_decrypt` as Spark's `ExpressionImplUtils` runs
//! them through the JVM's ciphers, with the RustCrypto block ciphers:
//!
//! ```text
//!  mode  padding            output of aes_encrypt
//!  ECB   PKCS (DEFAULT)     ciphertext
//!  CBC   PKCS (DEFAULT)     16-byte IV ++ ciphertext
//!  GCM   NONE (DEFAULT)     12-byte IV ++ ciphertext ++ 16-byte tag   (AAD authenticated)
//! ```
//!
//! Keys are 16, 24 or 32 bytes; an IV not given is drawn at random (so such outputs differ
//! run to run, as Spark's do); mode and padding are case-insensitive. Errors carry Spark's
//! classes (`INVALID_PARAMETER_VALUE.AES_KEY_LENGTH`, `.AES_IV_LENGTH`, `.AES_CRYPTO_ERROR`,
//! `UNSUPPORTED_FEATURE.AES_MODE`, `.AES_MODE_IV`, `.AES_MODE_AAD`); `try_aes_decrypt`
//! gives NULL instead of any of them.

use std::sync::Arc;

use aes::cipher::block_padding::Pkcs7;
use aes::cipher::{BlockDecryptMut, BlockEncryptMut, KeyInit, KeyIvInit};
use aes_gcm::aead::{Aead, Payload};
use arrow_array::builder::BinaryBuilder;
use arrow_array::cast::AsArray;
use arrow_array::{Array, ArrayRef};
use arrow_schema::DataType;
use ferrospark_common::{FerroError, Result};

use super::{Args, Bound, Call, ScalarFunction};
use crate::physical::PhysicalExpr;
use crate::types::spark_equivalent;

/// Which of the three functions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AesFn {
    /// `aes_encrypt(input, key[, mode[, padding[, iv[, aad]]]])`.
    Encrypt,
    /// `aes_decrypt(input, key[, mode[, padding[, aad]]])`.
    Decrypt,
    /// `try_aes_decrypt`: NULL where `aes_decrypt` raises.
    TryDecrypt,
}

/// A cipher mode with its padding.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    Ecb,
    Cbc,
    Gcm,
}

fn runtime(msg: String) -> FerroError {
    FerroError::Arithmetic(msg)
}

fn mode_of(mode: &str, padding: &str) -> Result<Mode> {
    let (m, p) = (mode.to_ascii_uppercase(), padding.to_ascii_uppercase());
    match (m.as_str(), p.as_str()) {
        ("ECB", "PKCS" | "DEFAULT") => Ok(Mode::Ecb),
        ("CBC", "PKCS" | "DEFAULT") => Ok(Mode::Cbc),
        ("GCM", "NONE" | "DEFAULT") => Ok(Mode::Gcm),
        _ => Err(FerroError::Unsupported(format!(
            "[UNSUPPORTED_FEATURE.AES_MODE] The feature is not supported: AES-{mode} with the padding {padding} by the `aes_encrypt`/`aes_decrypt` function. SQLSTATE: 0A000"
        ))),
    }
}

fn crypto_error(detail: &str) -> FerroError {
    runtime(format!(
        "[INVALID_PARAMETER_VALUE.AES_CRYPTO_ERROR] The value of parameter(s) `expr`, `key` in `aes_encrypt`/`aes_decrypt` is invalid: detail message: {detail} SQLSTATE: 22023"
    ))
}

fn check_key(key: &[u8]) -> Result<()> {
    if matches!(key.len(), 16 | 24 | 32) {
        return Ok(());
    }
    Err(runtime(format!(
        "[INVALID_PARAMETER_VALUE.AES_KEY_LENGTH] The value of parameter(s) `key` in `aes_encrypt`/`aes_decrypt` is invalid: expects a binary value with 16, 24 or 32 bytes, but got {} bytes. SQLSTATE: 22023",
        key.len()
    )))
}

macro_rules! by_key {
    ($key:expr, |$k:ident: $t:ident| $body:expr) => {
        match $key.len() {
            16 => {
                type $t = aes::Aes128;
                let $k = $key;
                $body
            }
            24 => {
                type $t = aes::Aes192;
                let $k = $key;
                $body
            }
            _ => {
                type $t = aes::Aes256;
                let $k = $key;
                $body
            }
        }
    };
}

/// `input` encrypted under `key` (checked) with `iv` (empty: a random one) and `aad`.
fn encrypt(input: &[u8], key: &[u8], mode: Mode, iv: &[u8], aad: &[u8]) -> Result<Vec<u8>> {
    check_key(key)?;
    let name = match mode {
        Mode::Ecb => "ECB",
        Mode::Cbc => "CBC",
        Mode::Gcm => "GCM",
    };
    if mode == Mode::Ecb && !iv.is_empty() {
        return Err(FerroError::Unsupported(
            "[UNSUPPORTED_FEATURE.AES_MODE_IV] The feature is not supported: `aes_encrypt` with AES-ECB does not support initialization vectors (IVs). SQLSTATE: 0A000".into(),
        ));
    }
    if mode != Mode::Gcm && !aad.is_empty() {
        return Err(FerroError::Unsupported(format!(
            "[UNSUPPORTED_FEATURE.AES_MODE_AAD] The feature is not supported: `aes_encrypt` with AES-{name} does not support additional authenticate data (AAD). SQLSTATE: 0A000"
        )));
    }
    let iv_len = if mode == Mode::Cbc { 16 } else { 12 };
    if mode != Mode::Ecb && !iv.is_empty() && iv.len() != iv_len {
        return Err(runtime(format!(
            "[INVALID_PARAMETER_VALUE.AES_IV_LENGTH] The value of parameter(s) `iv` in `aes_encrypt`/`aes_decrypt` is invalid: supports 16-byte CBC IVs and 12-byte GCM IVs, but got {} bytes for {name}. SQLSTATE: 22023",
            iv.len()
        )));
    }
    let iv: Vec<u8> = if iv.is_empty() && mode != Mode::Ecb {
        (0..iv_len).map(|_| rand::random::<u8>()).collect()
    } else {
        iv.to_vec()
    };
    Ok(match mode {
        Mode::Ecb => by_key!(key, |k: C| ecb::Encryptor::<C>::new_from_slice(k)
            .map_err(|e| crypto_error(&e.to_string()))?
            .encrypt_padded_vec_mut::<Pkcs7>(input)),
        Mode::Cbc => {
            let body = by_key!(key, |k: C| cbc::Encryptor::<C>::new_from_slices(k, &iv)
                .map_err(|e| crypto_error(&e.to_string()))?
                .encrypt_padded_vec_mut::<Pkcs7>(input));
            [iv, body].concat()
        }
        Mode::Gcm => {
            let payload = Payload { msg: input, aad };
            let nonce = aes_gcm::Nonce::from_slice(&iv);
            let body = by_key!(key, |k: C| {
                aes_gcm::AesGcm::<C, aes_gcm::aead::consts::U12>::new_from_slice(k)
                    .map_err(|e| crypto_error(&e.to_string()))?
                    .encrypt(nonce, payload)
                    .map_err(|_| crypto_error("Encryption failed"))?
            });
            [iv, body].concat()
        }
    })
}

/// `input` (as `aes_encrypt` wrote it) decrypted under `key` (checked), with `aad`.
fn decrypt(input: &[u8], key: &[u8], mode: Mode, aad: &[u8]) -> Result<Vec<u8>> {
    check_key(key)?;
    if mode != Mode::Gcm && !aad.is_empty() {
        let name = if mode == Mode::Ecb { "ECB" } else { "CBC" };
        return Err(FerroError::Unsupported(format!(
            "[UNSUPPORTED_FEATURE.AES_MODE_AAD] The feature is not supported: `aes_decrypt` with AES-{name} does not support additional authenticate data (AAD). SQLSTATE: 0A000"
        )));
    }
    let bad = || {
        crypto_error("Given final block not properly padded. Such issues can arise if a bad key is used during decryption.")
    };
    match mode {
        Mode::Ecb => by_key!(key, |k: C| ecb::Decryptor::<C>::new_from_slice(k)
            .map_err(|e| crypto_error(&e.to_string()))?
            .decrypt_padded_vec_mut::<Pkcs7>(input)
            .map_err(|_| bad())),
        Mode::Cbc => {
            if input.len() < 16 {
                return Err(crypto_error("Invalid buffer arguments"));
            }
            let (iv, body) = input.split_at(16);
            by_key!(key, |k: C| cbc::Decryptor::<C>::new_from_slices(k, iv)
                .map_err(|e| crypto_error(&e.to_string()))?
                .decrypt_padded_vec_mut::<Pkcs7>(body)
                .map_err(|_| bad()))
        }
        Mode::Gcm => {
            if input.len() < 12 + 16 {
                return Err(crypto_error("Invalid buffer arguments"));
            }
            let (iv, body) = input.split_at(12);
            let nonce = aes_gcm::Nonce::from_slice(iv);
            let payload = Payload { msg: body, aad };
            by_key!(key, |k: C| {
                aes_gcm::AesGcm::<C, aes_gcm::aead::consts::U12>::new_from_slice(k)
                    .map_err(|e| crypto_error(&e.to_string()))?
                    .decrypt(nonce, payload)
                    .map_err(|_| crypto_error("Tag mismatch"))
            })
        }
    }
}

impl AesFn {
    /// Spark's name.
    pub fn name(self) -> &'static str {
        match self {
            AesFn::Encrypt => "aes_encrypt",
            AesFn::Decrypt => "aes_decrypt",
            AesFn::TryDecrypt => "try_aes_decrypt",
        }
    }

    pub(crate) fn evaluate(self, args: &Args) -> Result<ArrayRef> {
        let n = args.rows();
        let full: Vec<ArrayRef> = (0..args.len())
            .map(|i| args.full(i))
            .collect::<Result<_>>()?;
        let bytes = |i: usize, r: usize| -> Option<&[u8]> {
            let a = full[i].as_binary::<i32>();
            a.is_valid(r).then(|| a.value(r))
        };
        let text = |i: usize, r: usize| -> Option<&str> {
            let a = full[i].as_string::<i32>();
            a.is_valid(r).then(|| a.value(r))
        };
        let mut out = BinaryBuilder::with_capacity(n, n * 32);
        for r in 0..n {
            let (Some(input), Some(key), Some(mode), Some(padding)) =
                (bytes(0, r), bytes(1, r), text(2, r), text(3, r))
            else {
                out.append_null();
                continue;
            };
            let result = match self {
                AesFn::Encrypt => {
                    let (Some(iv), Some(aad)) = (bytes(4, r), bytes(5, r)) else {
                        out.append_null();
                        continue;
                    };
                    mode_of(mode, padding).and_then(|m| encrypt(input, key, m, iv, aad))
                }
                AesFn::Decrypt | AesFn::TryDecrypt => {
                    let Some(aad) = bytes(4, r) else {
                        out.append_null();
                        continue;
                    };
                    mode_of(mode, padding).and_then(|m| decrypt(input, key, m, aad))
                }
            };
            match result {
                Ok(v) => out.append_value(v),
                Err(_) if self == AesFn::TryDecrypt => out.append_null(),
                Err(e) => return Err(e),
            }
        }
        Ok(Arc::new(out.finish()))
    }
}

/// Binds the three AES functions; other names are not theirs. Missing arguments take Spark's
/// defaults (`GCM`, `DEFAULT`, no IV, no AAD).
pub(crate) fn bind(call: &Call<'_, '_>, args: Vec<PhysicalExpr>) -> Result<Bound> {
    let (f, max) = match call.name {
        "aes_encrypt" => (AesFn::Encrypt, 6),
        "aes_decrypt" => (AesFn::Decrypt, 5),
        "try_aes_decrypt" => (AesFn::TryDecrypt, 5),
        _ => return Ok(Bound::NotMine(args)),
    };
    call.arity(&args, 2, max)?;
    let lit = |s: &str| PhysicalExpr::Literal(crate::expr::Literal::string(s));
    let defaults = [lit("GCM"), lit("DEFAULT"), lit(""), lit("")];
    let mut all = args;
    let given = all.len();
    all.extend(defaults.into_iter().skip(given - 2).take(max - given));
    let mut bound = Vec::with_capacity(max);
    for (i, a) in all.into_iter().enumerate() {
        let t = spark_equivalent(&a.data_type());
        let text_arg = i == 2 || i == 3;
        let ok = matches!(t, DataType::Utf8 | DataType::Binary | DataType::Null);
        if !ok {
            let wanted = if text_arg {
                "the \"STRING\" type"
            } else {
                "the \"BINARY\" type"
            };
            return Err(call.wrong_type(i, &a, wanted));
        }
        let to = if text_arg {
            DataType::Utf8
        } else {
            DataType::Binary
        };
        bound.push(crate::bind::cast_to(a, &to));
    }
    Ok(Bound::Done(call.function(
        ScalarFunction::Aes(f),
        bound,
        DataType::Binary,
    )))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn unhex(s: &str) -> Vec<u8> {
        (0..s.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&s[i..i + 2], 16).expect("hex"))
            .collect()
    }

    /// The ciphertexts are PySpark 4.3's.
    #[test]
    fn ciphertexts_are_sparks() {
        let ecb = encrypt(b"Spark", b"0000111122223333", Mode::Ecb, b"", b"").expect("ecb");
        assert_eq!(ecb, unhex("348FF37EBDE05B7880BA339068FBDA5E"));
        let key = b"abcdefghijklmnop12345678ABCDEFGH";
        let cbc = encrypt(b"Spark", key, Mode::Cbc, &[0; 16], b"").expect("cbc");
        assert_eq!(
            cbc,
            unhex("00000000000000000000000000000000F49DE265B2319E6686F8E200F4099DF8")
        );
        let aad = b"This is an AAD mixed into the input";
        let gcm = encrypt(b"Spark", key, Mode::Gcm, &[0; 12], aad).expect("gcm");
        assert_eq!(
            gcm,
            unhex("000000000000000000000000422622FAC4CB9BB283F54719DA79517580DEFCF5F8")
        );
        let sparks =
            unhex("6E7CA17BBB468D3084B5744BCA729FB7B2B7BCB8E4472847D02670489D95FA97DBBA7D3210");
        assert_eq!(
            decrypt(&sparks, b"0000111122223333", Mode::Gcm, b"").expect("gcm"),
            b"Spark SQL"
        );
        let random = encrypt(b"x", b"000011112222333344445555", Mode::Cbc, b"", b"").expect("cbc");
        assert_eq!(
            decrypt(&random, b"000011112222333344445555", Mode::Cbc, b"").expect("back"),
            b"x"
        );
        assert!(decrypt(&[0, 0x11], b"0000111122223333", Mode::Gcm, b"").is_err());
        assert!(encrypt(b"x", b"12345", Mode::Ecb, b"", b"").is_err());
    }
}
