//! Where the bytes that end CSV fields lie, 64 input bytes at a time, as bit masks.
//!
//! The tokenizer's fast path asks, field after field, "where is the next separator or line
//! end" (or, in a quoted field, "the next quote, escape or line end"). Answering each question
//! with a search of its own costs a mispredicted branch where the search stops, once per
//! field: on TPC-H lineitem, 16 a line, most of the CSV reader's time. Here one pass of 16-byte
//! compares (SSE2 / NEON through the `wide` crate, no `unsafe`) marks every such byte of a
//! 64-byte block, and each question becomes a shift and a count of trailing zeros, with a
//! branch that misses about once a block.

use wide::u8x16;

/// The marked bytes of the 64 input bytes from `base`: bit `i` of a mask stands for byte
/// `base + i`. The input's end, when it falls inside the block, reads as a line end there.
#[derive(Debug, Clone, Copy)]
struct Block {
    base: usize,
    /// The separator.
    seps: u64,
    /// `\n`, `\r`, and the input's end.
    ends: u64,
    /// The quote and the escape characters.
    quotes: u64,
}

/// Answers "where is the next field end" over one input, block by block.
#[derive(Debug, Clone)]
pub struct FieldEnds {
    sep: u8,
    /// The quote and escape characters (`None` without quoting).
    quote: Option<(u8, u8)>,
    block: Block,
}

impl FieldEnds {
    /// Field ends split by `sep`, with `quote` / `escape` marked when quoting is on.
    pub fn new(sep: u8, quote: Option<u8>, escape: Option<u8>) -> Self {
        Self {
            sep,
            quote: quote.map(|q| (q, escape.unwrap_or(q))),
            // No block yet: the first question loads one.
            block: Block {
                base: usize::MAX,
                seps: 0,
                ends: 0,
                quotes: 0,
            },
        }
    }

    /// The first separator or line end at or after `from` in `input` (`input.len()` when
    /// there is none). `from` must not pass `input.len()`.
    #[inline]
    pub fn field_end(&mut self, input: &[u8], from: usize) -> usize {
        self.next(input, from, |b| b.seps | b.ends)
    }

    /// The first quote, escape or line end at or after `from` (`input.len()` when there is
    /// none).
    #[inline]
    pub fn quote_or_end(&mut self, input: &[u8], from: usize) -> usize {
        self.next(input, from, |b| b.quotes | b.ends)
    }

    #[inline]
    fn next(&mut self, input: &[u8], mut from: usize, pick: impl Fn(&Block) -> u64) -> usize {
        loop {
            let b = &self.block;
            if let Some(off) = from.checked_sub(b.base).filter(|&o| o < 64) {
                let m = pick(b) >> off;
                if m != 0 {
                    return from + m.trailing_zeros() as usize;
                }
                from = b.base + 64;
            }
            // Every mask marks the input's end, so `from` never passes it.
            self.block = load(input, from.min(input.len()), self.sep, self.quote);
        }
    }
}

/// The block of `input` from `base`.
fn load(input: &[u8], base: usize, sep: u8, quote: Option<(u8, u8)>) -> Block {
    let rest = &input[base..];
    let mut padded = [0u8; 64];
    let bytes: &[u8; 64] = match rest.first_chunk::<64>() {
        Some(b) => b,
        None => {
            padded[..rest.len()].copy_from_slice(rest);
            &padded
        }
    };
    let (chunks, _) = bytes.as_chunks::<16>();
    let lanes: [u8x16; 4] = std::array::from_fn(|k| u8x16::from(chunks[k]));
    let (sep, nl, cr) = (u8x16::splat(sep), u8x16::splat(b'\n'), u8x16::splat(b'\r'));
    let mut seps = mask(&lanes, |v| v.simd_eq(sep));
    let mut ends = mask(&lanes, |v| v.simd_eq(nl) | v.simd_eq(cr));
    let mut quotes = match quote {
        Some((q, e)) => {
            let (q, e) = (u8x16::splat(q), u8x16::splat(e));
            mask(&lanes, |v| v.simd_eq(q) | v.simd_eq(e))
        }
        None => 0,
    };
    if rest.len() < 64 {
        let inside = (1u64 << rest.len()) - 1;
        seps &= inside;
        quotes &= inside;
        ends = (ends & inside) | (1u64 << rest.len());
    }
    Block {
        base,
        seps,
        ends,
        quotes,
    }
}

/// Bit `16 k + i` set where lane `k`'s byte `i` passes `test` (a lane of all-ones bytes).
#[inline]
fn mask(lanes: &[u8x16; 4], test: impl Fn(u8x16) -> u8x16) -> u64 {
    lanes.iter().enumerate().fold(0u64, |m, (k, &v)| {
        m | (u64::from(test(v).to_bitmask()) << (16 * k))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};

    fn first(input: &[u8], from: usize, set: &[u8]) -> usize {
        input[from..]
            .iter()
            .position(|b| set.contains(b))
            .map_or(input.len(), |i| from + i)
    }

    /// Random text of the bytes that matter, asked from random and rising positions, as a
    /// tokenizer asks: every answer is the plain search's.
    #[test]
    fn answers_agree_with_a_byte_search() {
        let mut rng = rand::rngs::StdRng::seed_from_u64(7);
        let alphabet = b"ab,\"\\\n\r\0x";
        for len in [
            0usize, 1, 2, 15, 16, 17, 63, 64, 65, 127, 128, 129, 300, 1000,
        ] {
            for _ in 0..20 {
                let input: Vec<u8> = (0..len)
                    .map(|_| alphabet[rng.random_range(0..alphabet.len())])
                    .collect();
                for (quote, escape) in [(Some(b'"'), Some(b'\\')), (Some(b'"'), None), (None, None)]
                {
                    let mut ends = FieldEnds::new(b',', quote, escape);
                    let mut quotes: Vec<u8> = quote.into_iter().chain(escape).collect();
                    quotes.extend([b'\n', b'\r']);
                    let mut from = 0;
                    while from <= len {
                        assert_eq!(
                            ends.field_end(&input, from),
                            first(&input, from, b",\n\r"),
                            "{input:?} from {from}"
                        );
                        assert_eq!(
                            ends.quote_or_end(&input, from),
                            first(&input, from, &quotes),
                            "{input:?} from {from}"
                        );
                        from += rng.random_range(1..80);
                    }
                }
            }
        }
    }
}
