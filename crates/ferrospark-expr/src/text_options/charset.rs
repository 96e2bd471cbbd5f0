//! A text file's character set (Spark's `encoding` / `charset` option) and a reader turning
//! the file's bytes into UTF-8 as they stream.
//!
//! Spark 4 accepts exactly `utf-8`, `us-ascii`, `iso-8859-1`, `utf-16`, `utf-16be`, `utf-16le`
//! and `utf-32` (any case; `spark.sql.legacy.javaCharsets` off), each decoded as Java decodes
//! it: `utf-16` and `utf-32` are big-endian unless a byte order mark says otherwise, `us-ascii`
//! reads a byte above 0x7F as U+FFFD, `iso-8859-1` maps each byte to the character of that
//! code, and bytes that do not decode become U+FFFD. UTF-16 decodes with `encoding_rs`; the
//! others are one or four bytes a character and decode here.

use std::io::Read;

use ferrospark_common::{FerroError, Result};

/// The character set of a text file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Charset {
    /// `utf-8`: read as it is.
    Utf8,
    /// `us-ascii`.
    Ascii,
    /// `iso-8859-1`.
    Latin1,
    /// `utf-16`: big-endian unless a byte order mark says otherwise.
    Utf16,
    /// `utf-16be`.
    Utf16Be,
    /// `utf-16le`.
    Utf16Le,
    /// `utf-32`: big-endian unless a byte order mark says otherwise.
    Utf32,
}

impl Charset {
    /// Spark's `encoding` option value; `options` names the reader's options class in
    /// Spark's error (`CSVOptions`, `JSONOptions`).
    pub fn parse(options: &str, value: &str) -> Result<Self> {
        Ok(match value.to_ascii_lowercase().as_str() {
            "utf-8" => Charset::Utf8,
            "us-ascii" => Charset::Ascii,
            "iso-8859-1" => Charset::Latin1,
            "utf-16" => Charset::Utf16,
            "utf-16be" => Charset::Utf16Be,
            "utf-16le" => Charset::Utf16Le,
            "utf-32" => Charset::Utf32,
            _ => {
                return Err(FerroError::Config(format!(
                    "[INVALID_PARAMETER_VALUE.CHARSET] The value of parameter(s) `charset` in `{options}` is invalid: expects one of the iso-8859-1, us-ascii, utf-16, utf-16be, utf-16le, utf-32, utf-8, but got {value}."
                )))
            }
        })
    }

    /// `r`'s bytes as UTF-8 text.
    pub fn reader(self, r: Box<dyn Read + Send>) -> Box<dyn Read + Send> {
        let decoding = match self {
            Charset::Utf8 => return r,
            Charset::Ascii => Decoding::Ascii,
            Charset::Latin1 => Decoding::Latin1,
            Charset::Utf16 => Decoding::Utf16(encoding_rs::UTF_16BE.new_decoder()),
            Charset::Utf16Be => {
                Decoding::Utf16(encoding_rs::UTF_16BE.new_decoder_without_bom_handling())
            }
            Charset::Utf16Le => {
                Decoding::Utf16(encoding_rs::UTF_16LE.new_decoder_without_bom_handling())
            }
            Charset::Utf32 => Decoding::Utf32 {
                little_endian: None,
                partial: Vec::new(),
            },
        };
        Box::new(Decoded {
            inner: r,
            decoding,
            raw: vec![0; CHUNK],
            text: Vec::new(),
            at: 0,
            done: false,
        })
    }
}

/// Bytes of the file decoded at a time.
const CHUNK: usize = 64 << 10;

/// How bytes become characters.
enum Decoding {
    Ascii,
    Latin1,
    Utf16(encoding_rs::Decoder),
    Utf32 {
        /// The byte order, once the first four bytes have told it.
        little_endian: Option<bool>,
        /// Bytes of a character split across chunks.
        partial: Vec<u8>,
    },
}

/// A reader decoding another one's bytes into UTF-8.
struct Decoded {
    inner: Box<dyn Read + Send>,
    decoding: Decoding,
    raw: Vec<u8>,
    /// Decoded text not handed out yet, from `at`.
    text: Vec<u8>,
    at: usize,
    done: bool,
}

fn push_char(out: &mut Vec<u8>, c: char) {
    let mut buf = [0u8; 4];
    out.extend_from_slice(c.encode_utf8(&mut buf).as_bytes());
}

impl Decoded {
    /// Decodes the next chunk of the file into `text`.
    fn decode_more(&mut self) -> std::io::Result<()> {
        let n = self.inner.read(&mut self.raw)?;
        let last = n == 0;
        self.done = last;
        let raw = &self.raw[..n];
        self.text.clear();
        self.at = 0;
        match &mut self.decoding {
            Decoding::Ascii => {
                for &b in raw {
                    push_char(
                        &mut self.text,
                        if b < 0x80 { b as char } else { '\u{FFFD}' },
                    );
                }
            }
            Decoding::Latin1 => {
                for &b in raw {
                    push_char(&mut self.text, char::from(b));
                }
            }
            Decoding::Utf16(d) => {
                let room = d.max_utf8_buffer_length(n).unwrap_or(4 * n + 16);
                self.text.resize(room, 0);
                let (_, _, written, _) = d.decode_to_utf8(raw, &mut self.text, last);
                self.text.truncate(written);
            }
            Decoding::Utf32 {
                little_endian,
                partial,
            } => {
                partial.extend_from_slice(raw);
                let whole = partial.len() / 4 * 4;
                for unit in partial[..whole].chunks_exact(4) {
                    let u = [unit[0], unit[1], unit[2], unit[3]];
                    let le = match *little_endian {
                        Some(le) => le,
                        None => {
                            // A byte order mark decides, and is not text.
                            let le = u == [0xFF, 0xFE, 0, 0];
                            *little_endian = Some(le);
                            if le || u == [0, 0, 0xFE, 0xFF] {
                                continue;
                            }
                            le
                        }
                    };
                    let v = if le {
                        u32::from_le_bytes(u)
                    } else {
                        u32::from_be_bytes(u)
                    };
                    push_char(&mut self.text, char::from_u32(v).unwrap_or('\u{FFFD}'));
                }
                partial.drain(..whole);
                if last && !partial.is_empty() {
                    partial.clear();
                    push_char(&mut self.text, '\u{FFFD}');
                }
            }
        }
        Ok(())
    }
}

impl Read for Decoded {
    fn read(&mut self, out: &mut [u8]) -> std::io::Result<usize> {
        while self.at >= self.text.len() {
            if self.done {
                return Ok(0);
            }
            self.decode_more()?;
        }
        let n = out.len().min(self.text.len() - self.at);
        out[..n].copy_from_slice(&self.text[self.at..self.at + n]);
        self.at += n;
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decode(c: Charset, bytes: &[u8]) -> String {
        let mut out = String::new();
        c.reader(Box::new(std::io::Cursor::new(bytes.to_vec())))
            .read_to_string(&mut out)
            .expect("decodes");
        out
    }

    #[test]
    fn spark_names_and_java_meanings() {
        let c = |v: &str| Charset::parse("CSVOptions", v).expect("known");
        assert_eq!(c("UTF-8"), Charset::Utf8);
        assert_eq!(decode(c("ISO-8859-1"), b"caf\xe9 \x85"), "café \u{85}");
        assert_eq!(decode(c("us-ascii"), b"caf\xe9"), "caf\u{FFFD}");
        assert_eq!(decode(c("UTF-16"), b"\x00h\x00\xe9"), "hé");
        assert_eq!(decode(c("UTF-16"), b"\xff\xfeh\x00"), "h");
        assert_eq!(decode(c("UTF-16LE"), b"h\x00\xe9\x00"), "hé");
        assert_eq!(decode(c("utf-16be"), b"\x00h\x00\xe9"), "hé");
        assert_eq!(
            decode(c("UTF-32"), b"\0\0\0h\0\x01\xf6\x00\0\0"),
            "h\u{1F600}\u{FFFD}"
        );
        assert_eq!(decode(c("UTF-32"), b"\xff\xfe\0\0h\0\0\0"), "h");
        for bad in ["latin1", "UTF8", "windows-1252", "klingon"] {
            let e = Charset::parse("CSVOptions", bad).expect_err("refused");
            assert!(
                e.to_string().contains("INVALID_PARAMETER_VALUE.CHARSET"),
                "{e}"
            );
        }
    }

    #[test]
    fn characters_split_across_chunks_decode_whole() {
        // Characters of two and four bytes straddle the chunk ends.
        let text: String = "日本語 ab \u{1F600} ".repeat(CHUNK / 5);
        let utf16: Vec<u8> = text.encode_utf16().flat_map(|u| u.to_be_bytes()).collect();
        let got = decode(Charset::Utf16Be, &utf16);
        assert!(got == text, "{} of {} characters", got.len(), text.len());
        let utf32: Vec<u8> = text
            .chars()
            .flat_map(|c| (c as u32).to_be_bytes())
            .collect();
        let got = decode(Charset::Utf32, &utf32);
        assert!(got == text, "{} of {} characters", got.len(), text.len());
    }
}
