//! Splitting CSV text into records and fields as Spark's parser (Univocity, with Spark's
//! settings) does:
//!
//! - a field starting with the quote character is quoted: inside it, the escape character
//!   before a quote or before itself stands for that character, and the closing quote must be
//!   followed by the separator or the end of the record; a quote anywhere else makes the
//!   field's raw text its value, quotes included (`"p""q"` reads as `"p""q"`, `c"d` as `c"d`);
//! - an unquoted empty field and a field equal to `nullValue` are NULL; a quoted empty field
//!   reads as `emptyValue`, NULL in turn when that equals `nullValue`;
//! - whitespace around a field is kept unless `ignoreLeadingWhiteSpace` /
//!   `ignoreTrailingWhiteSpace` say otherwise (so ` "s"` is not quoted by default);
//! - empty lines and, with `comment`, lines starting with it are skipped; without
//!   `multiLine` every line is one record, with it a quoted field may span lines.

use super::masks::FieldEnds;
use super::CsvOptions;

/// A field's value: NULL, a span of the input read as is (most fields: no copy), or text
/// made from it (escapes applied, `emptyValue`, a stray quote's pieces).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Text {
    /// NULL.
    Null,
    /// `input[start..end]`.
    Span(usize, usize),
    /// Text of its own.
    Owned(String),
}

impl Text {
    /// The value as a string of `input` (invalid UTF-8 replaced), or `None` for NULL.
    pub fn get<'i>(&'i self, input: &'i [u8]) -> Option<std::borrow::Cow<'i, str>> {
        match self {
            Text::Null => None,
            Text::Span(s, e) => Some(String::from_utf8_lossy(&input[*s..*e])),
            Text::Owned(t) => Some(std::borrow::Cow::Borrowed(t.as_str())),
        }
    }
}

/// Where a record lies in the input, and how many fields it has.
#[derive(Debug, Default, Clone, Copy)]
pub struct Extent {
    /// Byte range of the record's text (for the corrupt-record column).
    pub start: usize,
    /// End of the record's text (exclusive, line separator excluded).
    pub end: usize,
    /// The record's first line (1-based) in its file.
    pub line: u64,
    /// Fields in the record (kept or not); those read so far when `partial`.
    pub fields: usize,
    /// Read only through the field [`Tokenizer::stopping_after`] names: the rest of the
    /// record (its later fields, its field count) is not read yet.
    pub partial: bool,
}

/// The separator when records are lines split by one byte and no whitespace is trimmed:
/// then a field ends at the next separator, line end or closing quote, and most records take
/// [`Tokenizer::next_line_record`]'s one search per field.
fn one_byte_sep(o: &CsvOptions) -> Option<u8> {
    match o.sep.as_slice() {
        [sep]
            if !o.multi_line
                && o.line_sep.is_none()
                && !o.ignore_leading_ws
                && !o.ignore_trailing_ws =>
        {
            Some(*sep)
        }
        _ => None,
    }
}

/// Whether a record can be read through some field only, the rest of its line skipped
/// until a filter has seen it ([`Tokenizer::stopping_after`]).
pub fn can_stop_early(o: &CsvOptions) -> bool {
    one_byte_sep(o).is_some()
}

/// The fast path's field ends, when [`one_byte_sep`] allows it.
fn fast_path(o: &CsvOptions) -> Option<FieldEnds> {
    one_byte_sep(o).map(|sep| FieldEnds::new(sep, o.quote, o.escape))
}

fn is_ws(b: u8) -> bool {
    b <= b' '
}

/// Reads the records of one file's text.
pub struct Tokenizer<'a> {
    input: &'a [u8],
    pos: usize,
    line: u64,
    o: &'a CsvOptions,
    /// Fields whose values are kept (the others are found but not copied); all when `None`.
    wanted: Option<&'a [bool]>,
    /// The field ends of the input, for records split as [`one_byte_sep`] says.
    fast: Option<FieldEnds>,
    /// The last field to read of a record before the rest of its line is skipped.
    stop: Option<usize>,
}

impl<'a> Tokenizer<'a> {
    /// Records of `input` under `o`.
    pub fn new(input: &'a [u8], o: &'a CsvOptions) -> Self {
        // A byte order mark is not data.
        let pos = if input.starts_with(&[0xEF, 0xBB, 0xBF]) {
            3
        } else {
            0
        };
        Self::resume(input, o, pos, 1)
    }

    /// This tokenizer, keeping the values of the fields `wanted` marks only: [`Self::next_into`]
    /// returns those alone (a record's extent still counts all its fields).
    pub fn keeping(mut self, wanted: &'a [bool]) -> Self {
        self.wanted = Some(wanted);
        self
    }

    /// This tokenizer, reading a record only through field `last` when records are lines
    /// split by one byte ([`can_stop_early`]): the rest of its line is skipped, and the
    /// record's [`Extent`] is `partial` (read it again whole to finish it).
    pub fn stopping_after(mut self, last: Option<usize>) -> Self {
        self.stop = last;
        self
    }

    /// Records of `input` from byte `pos`, which starts line `line`.
    pub fn resume(input: &'a [u8], o: &'a CsvOptions, pos: usize, line: u64) -> Self {
        Self {
            input,
            pos,
            line,
            o,
            wanted: None,
            fast: fast_path(o),
            stop: None,
        }
    }

    /// The line the next record starts on.
    pub fn line(&self) -> u64 {
        self.line
    }

    /// Bytes consumed so far.
    pub fn position(&self) -> usize {
        self.pos
    }

    /// The line separator at `at`, if one starts there: its length.
    fn line_sep_at(&self, at: usize) -> Option<usize> {
        let rest = &self.input[at..];
        match &self.o.line_sep {
            Some(sep) => rest.starts_with(sep).then_some(sep.len()),
            None => match rest {
                [b'\r', b'\n', ..] => Some(2),
                [b'\n', ..] | [b'\r', ..] => Some(1),
                _ => None,
            },
        }
    }

    fn sep_at(&self, at: usize) -> bool {
        // One byte (nearly always) compared directly: this runs for every field.
        match self.o.sep.as_slice() {
            [b] => self.input.get(at) == Some(b),
            sep => self.input[at..].starts_with(sep),
        }
    }

    /// The end of the line starting at `at` (the separator's start) and the next line's start.
    fn line_end(&self, at: usize) -> (usize, usize) {
        let rest = &self.input[at..];
        let found = match &self.o.line_sep {
            Some(sep) => memchr::memmem::find(rest, sep).map(|i| (i, sep.len())),
            None => memchr::memchr2(b'\n', b'\r', rest).map(|i| {
                let n = if rest[i] == b'\r' && rest.get(i + 1) == Some(&b'\n') {
                    2
                } else {
                    1
                };
                (i, n)
            }),
        };
        match found {
            Some((i, n)) => (at + i, at + i + n),
            None => (self.input.len(), self.input.len()),
        }
    }

    /// The fields of the next record, skipping empty and comment lines; `None` at the end.
    pub fn next_record(&mut self) -> Option<Vec<Text>> {
        let mut fields = Vec::new();
        self.next_into(&mut fields)?;
        Some(fields)
    }

    /// The next record (see [`Self::next_record`]), its kept fields added to `out` (no
    /// allocation per record); `None` at the end.
    pub fn next_into(&mut self, out: &mut Vec<Text>) -> Option<Extent> {
        if self.fast.is_some() {
            return self.next_line_record(out);
        }
        loop {
            if self.pos >= self.input.len() {
                return None;
            }
            let start = self.pos;
            let (end, next) = self.line_end(start);
            let skip = end == start
                || self
                    .o
                    .comment
                    .is_some_and(|c| self.input.get(start) == Some(&c));
            if skip {
                self.pos = next;
                self.line += 1;
                continue;
            }
            let line = self.line;
            let limit = if self.o.multi_line {
                self.input.len()
            } else {
                end
            };
            let (fields, rec_end) = self.fields(start, limit, out);
            // The record ends at its last field; a multi-line record moved past lines.
            let (rec_end, next) = if self.o.multi_line {
                let (e, n) = self.line_end(rec_end);
                (e, n)
            } else {
                (end, next)
            };
            self.line += 1;
            if self.o.multi_line {
                self.line += count_lines(&self.input[start..rec_end]);
            }
            self.pos = next;
            return Some(Extent {
                start,
                end: rec_end,
                line,
                fields,
                partial: false,
            });
        }
    }

    /// [`Self::next_into`] for records that are lines split by one byte: each field's end
    /// (the separator, a line end, or a closing quote) comes from [`FieldEnds`], so the line's
    /// end comes with its last field rather than from a search of its own. A line with
    /// anything else (an escape, a stray quote) goes the general way.
    fn next_line_record(&mut self, out: &mut Vec<Text>) -> Option<Extent> {
        let input = self.input;
        loop {
            let start = self.pos;
            let first = *input.get(start)?;
            if first == b'\n' || first == b'\r' || self.o.comment == Some(first) {
                // An empty or comment line.
                self.pos = self.line_end(start).1;
                self.line += 1;
                continue;
            }
            let kept = out.len();
            let split = match self.fast.as_mut() {
                Some(ends) => {
                    // A copy of its own the compiler can keep in registers through the line.
                    let mut local = ends.clone();
                    let split = split_line(
                        input,
                        self.o,
                        self.wanted,
                        self.stop,
                        &mut local,
                        start,
                        out,
                    );
                    *ends = local;
                    split
                }
                None => None,
            };
            let line = self.line;
            self.line += 1;
            let Some((end, count, partial)) = split else {
                out.truncate(kept);
                let (end, next) = self.line_end(start);
                let (fields, _) = self.fields(start, end, out);
                self.pos = next;
                return Some(Extent {
                    start,
                    end,
                    line,
                    fields,
                    partial: false,
                });
            };
            self.pos = match input.get(end..end + 2) {
                Some(b"\r\n") => end + 2,
                _ => (end + 1).min(input.len()),
            };
            return Some(Extent {
                start,
                end,
                line,
                fields: count,
                partial,
            });
        }
    }

    /// Whether the value of field `k` of a record is kept.
    fn keeps(&self, k: usize) -> bool {
        keeps(self.wanted, k)
    }

    /// The fields of the record starting at `start`, reading at most to `limit`: adds the
    /// kept ones to `out`; returns how many there are and where the last one ends.
    fn fields(&self, start: usize, limit: usize, out: &mut Vec<Text>) -> (usize, usize) {
        let mut pos = start;
        let mut count = 0;
        loop {
            let keep = self.keeps(count);
            let (value, end) = self.field(pos, limit, keep);
            if keep {
                out.push(value);
            }
            count += 1;
            if end < limit && self.sep_at(end) {
                pos = end + self.o.sep.len();
                continue;
            }
            return (count, end);
        }
    }

    /// Where an unquoted field starting at `at` ends.
    fn unquoted_end(&self, at: usize, limit: usize) -> usize {
        if let ([sep], None) = (self.o.sep.as_slice(), &self.o.line_sep) {
            // One line at most (no `multiLine`): no line end lies before `limit`, so only the
            // separator ends the field.
            if !self.o.multi_line {
                return find_byte(&self.input[at..limit], *sep).map_or(limit, |i| at + i);
            }
            return memchr::memchr3(*sep, b'\n', b'\r', &self.input[at..limit])
                .map_or(limit, |i| at + i);
        }
        let mut end = at;
        while !self.ends_field(end, limit) {
            end += 1;
        }
        end
    }

    /// Whether position `at` ends a field: the end of the input, a separator, or (outside a
    /// multi-line quoted value) the end of the line.
    fn ends_field(&self, at: usize, limit: usize) -> bool {
        at >= limit || self.sep_at(at) || self.line_sep_at(at).is_some()
    }

    /// One field starting at `pos`: its value (NULL unless `keep`) and the position after
    /// it.
    fn field(&self, pos: usize, limit: usize, keep: bool) -> (Text, usize) {
        let o = self.o;
        let input = self.input;
        let mut at = pos;
        if o.ignore_leading_ws {
            while at < limit && is_ws(input[at]) && !self.ends_field(at, limit) {
                at += 1;
            }
        }
        let mut prefix = Vec::new();
        if let Some(q) = o.quote {
            if at < limit && input[at] == q {
                match self.quoted(at + 1, limit, q, keep) {
                    Quoted::Closed(_, end) | Quoted::Unclosed(_, end) if !keep => {
                        return (Text::Null, end)
                    }
                    // A quote left open reads to the end of the record (without `multiLine`,
                    // its line), as Spark's parser reads it.
                    Quoted::Closed(value, end) | Quoted::Unclosed(value, end) => {
                        return (quoted_text(self.input, self.o, value), end);
                    }
                    // A quote inside that is neither escaped nor closing: the quoted part
                    // as read (escapes applied) between its quotes, then the raw rest.
                    Quoted::Stray(value, after) => {
                        prefix.push(q);
                        prefix.extend_from_slice(&value);
                        prefix.push(q);
                        at = after;
                    }
                }
            }
        }
        let end = self.unquoted_end(at, limit);
        if !keep {
            return (Text::Null, end);
        }
        let mut value_end = end;
        if o.ignore_trailing_ws {
            while value_end > at && is_ws(input[value_end - 1]) {
                value_end -= 1;
            }
        }
        if prefix.is_empty() {
            return (unquoted(self.input, self.o, at, value_end.max(at)), end);
        }
        let raw = &input[at..value_end.max(at)];
        prefix.extend_from_slice(raw);
        let text = String::from_utf8_lossy(&prefix).into_owned();
        let null = text == o.null_value;
        (if null { Text::Null } else { Text::Owned(text) }, end)
    }

    /// A quoted value whose text starts at `at` (after its opening quote).
    fn quoted(&self, mut at: usize, limit: usize, q: u8, keep: bool) -> Quoted {
        let input = self.input;
        let esc = self.o.escape.filter(|&e| e != q);
        let start = at;
        // Until an escape is met the value is the input's own text, kept as a span.
        let mut value: Option<Vec<u8>> = None;
        while at < limit {
            // One line at most (no `multiLine`): no line end lies before `limit`, so jump to
            // the next quote or escape character.
            if !self.o.multi_line {
                let next = memchr::memchr2(q, esc.unwrap_or(q), &input[at..limit])
                    .map_or(limit, |i| at + i);
                if keep {
                    if let Some(v) = value.as_mut() {
                        v.extend_from_slice(&input[at..next]);
                    }
                }
                at = next;
                if at >= limit {
                    break;
                }
            }
            let b = input[at];
            let escaped = (Some(b) == esc
                && at + 1 < limit
                && (input[at + 1] == q || Some(input[at + 1]) == esc))
                // With the quote as its own escape, a doubled quote is one quote.
                || (b == q && self.o.escape == Some(q) && at + 1 < limit && input[at + 1] == q);
            if escaped {
                value
                    .get_or_insert_with(|| input[start..at].to_vec())
                    .push(input[at + 1]);
                at += 2;
                continue;
            }
            if b == q {
                let mut end = at + 1;
                if self.o.ignore_trailing_ws {
                    while end < limit && is_ws(input[end]) && !self.ends_field(end, limit) {
                        end += 1;
                    }
                }
                if self.ends_field(end, limit) {
                    let text = match value {
                        Some(v) => Text::Owned(String::from_utf8_lossy(&v).into_owned()),
                        None => Text::Span(start, at),
                    };
                    return Quoted::Closed(text, end);
                }
                let v = value.unwrap_or_else(|| input[start..at].to_vec());
                return Quoted::Stray(v, at + 1);
            }
            if !self.o.multi_line && self.line_sep_at(at).is_some() {
                break;
            }
            if keep {
                if let Some(v) = value.as_mut() {
                    v.push(b);
                }
            }
            at += 1;
        }
        let text = match value {
            Some(v) => Text::Owned(String::from_utf8_lossy(&v).into_owned()),
            None => Text::Span(start, at),
        };
        Quoted::Unclosed(text, at)
    }
}

/// How a quoted field ended.
enum Quoted {
    /// At its closing quote: the value, and the position after it.
    Closed(Text, usize),
    /// At a quote followed by more text: the value read so far, and the position after
    /// that quote.
    Stray(Vec<u8>, usize),
    /// Not at all: the value read to where the record ends, and that position.
    Unclosed(Text, usize),
}

/// The fields of the line starting at `start` (not empty, not a comment) when it is plain:
/// the kept ones added to `out`; the line's end, its field count, and whether the line was
/// left after field `stop` (its count then the fields read). `None` when the line needs the
/// general path (a quoted field with an escape, a line end inside, or text after its closing
/// quote).
#[inline(always)]
fn split_line(
    input: &[u8],
    o: &CsvOptions,
    wanted: Option<&[bool]>,
    stop: Option<usize>,
    ends: &mut FieldEnds,
    start: usize,
    out: &mut Vec<Text>,
) -> Option<(usize, usize, bool)> {
    let keeps = |k: usize| keeps(wanted, k);
    let (mut pos, mut count) = (start, 0);
    loop {
        let keep = keeps(count);
        let end = if o.quote == Some(input[pos]) {
            let close = ends.quote_or_end(input, pos + 1);
            if input.get(close) != Some(&input[pos]) {
                return None;
            }
            let after = close + 1;
            if let Some(&c) = input.get(after) {
                if !matches!(c, b'\n' | b'\r') && Some(c) != o.sep.first().copied() {
                    return None;
                }
            }
            if keep {
                out.push(quoted_text(input, o, Text::Span(pos + 1, close)));
            }
            after
        } else {
            let end = ends.field_end(input, pos);
            if keep {
                out.push(unquoted(input, o, pos, end));
            }
            end
        };
        count += 1;
        if end < input.len() && Some(&input[end]) == o.sep.first() {
            if stop == Some(count - 1) {
                // The filter's fields are read: the rest of the line waits for its verdict.
                let line_end =
                    memchr::memchr2(b'\n', b'\r', &input[end..]).map_or(input.len(), |i| end + i);
                return Some((line_end, count, true));
            }
            pos = end + 1;
            if pos == input.len() {
                // A separator ends the text: one more, empty, field.
                if keeps(count) {
                    out.push(Text::Null);
                }
                return Some((pos, count + 1, false));
            }
            continue;
        }
        return Some((end, count, false));
    }
}

/// Whether field `k` of a record is kept, `wanted` marking the kept ones (all when `None`).
#[inline]
fn keeps(wanted: Option<&[bool]>, k: usize) -> bool {
    wanted.is_none_or(|w| w.get(k) == Some(&true))
}

/// The value of a closed quoted field read as `value` (its text between the quotes,
/// escapes applied): `emptyValue` when empty, NULL when `nullValue`.
fn quoted_text(input: &[u8], o: &CsvOptions, value: Text) -> Text {
    let bytes: &[u8] = match &value {
        Text::Span(s, e) => &input[*s..*e],
        Text::Owned(t) => t.as_bytes(),
        Text::Null => &[],
    };
    if bytes.is_empty() {
        if o.empty_value == o.null_value {
            Text::Null
        } else {
            Text::Owned(o.empty_value.clone())
        }
    } else if bytes == o.null_value.as_bytes() {
        Text::Null
    } else {
        value
    }
}

/// The value of an unquoted field whose text is `input[start..end]`: NULL when empty or
/// `nullValue`.
fn unquoted(input: &[u8], o: &CsvOptions, start: usize, end: usize) -> Text {
    let raw = &input[start..end];
    if raw.is_empty() || raw == o.null_value.as_bytes() {
        Text::Null
    } else {
        Text::Span(start, end)
    }
}

/// The first `b` in `hay`.
#[inline]
fn find_byte(hay: &[u8], b: u8) -> Option<usize> {
    find_any(hay, [b])
}

/// The first of `N` bytes in `hay`, eight bytes at a time: fields are short, and a `memchr`
/// call per field costs more than the search.
#[inline]
fn find_any<const N: usize>(hay: &[u8], bytes: [u8; N]) -> Option<usize> {
    const LO: u64 = 0x0101_0101_0101_0101;
    const HI: u64 = 0x8080_8080_8080_8080;
    let zero = |w: u64| w.wrapping_sub(LO) & !w & HI;
    let splat = bytes.map(|b| LO * u64::from(b));
    let mut i = 0;
    while let Some(chunk) = hay.get(i..i + 8) {
        let w = u64::from_le_bytes([
            chunk[0], chunk[1], chunk[2], chunk[3], chunk[4], chunk[5], chunk[6], chunk[7],
        ]);
        let found = splat.iter().fold(0, |f, s| f | zero(w ^ s));
        if found != 0 {
            return Some(i + (found.trailing_zeros() / 8) as usize);
        }
        i += 8;
    }
    hay[i..]
        .iter()
        .position(|c| bytes.contains(c))
        .map(|p| i + p)
}

fn count_lines(text: &[u8]) -> u64 {
    memchr::memchr_iter(b'\n', text).count() as u64
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};

    /// A record's kept values, start, end, first line and field count.
    type Record = (Vec<Option<String>>, usize, usize, u64, usize);

    /// Every record of `input`, with its kept fields' values.
    fn records(mut t: Tokenizer<'_>) -> Vec<Record> {
        let input = t.input;
        let mut out = Vec::new();
        let mut fields = Vec::new();
        while let Some(e) = t.next_into(&mut fields) {
            let values = fields
                .drain(..)
                .map(|f| f.get(input).map(|v| v.into_owned()))
                .collect();
            out.push((values, e.start, e.end, e.line, e.fields));
        }
        out
    }

    /// The lines-split-by-one-byte path reads what the general path reads, on random text
    /// made of the bytes that matter (separators, quotes, escapes, line ends, comments).
    #[test]
    fn one_byte_path_agrees_with_the_general_path() {
        let mut rng = rand::rngs::StdRng::seed_from_u64(16);
        let alphabet = b"ab,,,\"\"\\\n\r #N";
        let options = [
            CsvOptions::default(),
            CsvOptions {
                null_value: "N".into(),
                empty_value: "E".into(),
                comment: Some(b'#'),
                ..CsvOptions::default()
            },
            CsvOptions {
                escape: Some(b'"'),
                empty_value: "N".into(),
                null_value: "N".into(),
                ..CsvOptions::default()
            },
            CsvOptions {
                escape: None,
                quote: None,
                ..CsvOptions::default()
            },
        ];
        for o in &options {
            assert!(one_byte_sep(o).is_some());
            for _ in 0..3000 {
                // Past 64 bytes, so lines cross the field-end masks' blocks.
                let len = rng.random_range(0..200);
                let input: Vec<u8> = (0..len)
                    .map(|_| alphabet[rng.random_range(0..alphabet.len())])
                    .collect();
                let wanted: Vec<bool> = (0..8).map(|_| rng.random_bool(0.6)).collect();
                let fast = Tokenizer::new(&input, o).keeping(&wanted);
                let mut general = Tokenizer::new(&input, o).keeping(&wanted);
                general.fast = None;
                assert_eq!(
                    records(fast),
                    records(general),
                    "{:?} {wanted:?}",
                    String::from_utf8_lossy(&input)
                );
            }
        }
    }
}
