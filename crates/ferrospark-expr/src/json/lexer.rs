//! A JSON scanner with Jackson's leniency switches, as Spark configures them: it checks a
//! value's syntax and finds where it lies, without building it.
//!
//! Written here because the well-kept parsers (`serde_json`, `simd-json`, `arrow-json`) read
//! strict JSON only, while Spark reads single-quoted strings by default, `NaN` and
//! `Infinity` by default, and comments, unquoted names and leading zeros when asked; and
//! Spark keeps a non-string value's exact text when its column is a string (`1.50` stays
//! `1.50`), which needs the value's span rather than a parsed value.

use super::options::JsonOptions;

/// Jackson's default limit on nesting; a deeper document is malformed, not a stack overflow.
const MAX_DEPTH: usize = 1000;

/// What a value is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// `null`.
    Null,
    /// `true`.
    True,
    /// `false`.
    False,
    /// An integer literal.
    Int,
    /// A literal with a fraction or an exponent.
    Float,
    /// `NaN`, `Infinity`, `+Infinity`, `-Infinity`.
    NonNumeric,
    /// A string; `quote` is its quote character.
    Str,
    /// `{...}`.
    Object,
    /// `[...]`.
    Array,
}

/// A value's kind and where it lies.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Span {
    /// What the value is.
    pub kind: Kind,
    /// Its first byte.
    pub start: usize,
    /// One past its last byte.
    pub end: usize,
}

/// The syntax is wrong (where does not matter: the record is malformed).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Malformed;

type Scan<T> = std::result::Result<T, Malformed>;

/// Scans JSON text.
pub struct Lexer<'a> {
    /// The text.
    pub b: &'a [u8],
    /// Where scanning stands.
    pub pos: usize,
    o: &'a JsonOptions,
}

fn ident_byte(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'_' || c == b'$' || c >= 0x80
}

impl<'a> Lexer<'a> {
    /// A scanner of `b` from `pos`.
    pub fn new(b: &'a [u8], pos: usize, o: &'a JsonOptions) -> Self {
        Self { b, pos, o }
    }

    fn peek(&self) -> Option<u8> {
        self.b.get(self.pos).copied()
    }

    /// Skips whitespace and, when allowed, comments; true when text is left.
    #[inline(always)]
    pub fn skip_ws(&mut self) -> Scan<bool> {
        // Most tokens follow the last with nothing between.
        match self.peek() {
            Some(c) if c > b' ' && c != b'/' => Ok(true),
            _ => self.skip_ws_slow(),
        }
    }

    #[inline(never)]
    fn skip_ws_slow(&mut self) -> Scan<bool> {
        loop {
            match self.peek() {
                Some(b' ' | b'\t' | b'\n' | b'\r') => self.pos += 1,
                Some(b'/') if self.o.allow_comments => match self.b.get(self.pos + 1) {
                    Some(b'/') => {
                        self.pos = memchr::memchr(b'\n', &self.b[self.pos..])
                            .map_or(self.b.len(), |i| self.pos + i);
                    }
                    Some(b'*') => {
                        let rest = &self.b[self.pos + 2..];
                        let end = memchr::memmem::find(rest, b"*/").ok_or(Malformed)?;
                        self.pos += 2 + end + 2;
                    }
                    _ => return Err(Malformed),
                },
                Some(_) => return Ok(true),
                None => return Ok(false),
            }
        }
    }

    fn expect_word(&mut self, word: &[u8]) -> Scan<()> {
        if self.b[self.pos..].starts_with(word) {
            self.pos += word.len();
            // `nullx` or `true1` is not a literal.
            if self.peek().is_some_and(ident_byte) {
                return Err(Malformed);
            }
            Ok(())
        } else {
            Err(Malformed)
        }
    }

    /// The value at the cursor (whitespace skipped first).
    // Inlined into the member loops: a `Span` returned through memory stalls the loop
    // that reads it straight back.
    #[inline(always)]
    pub fn value(&mut self, depth: usize) -> Scan<Span> {
        if !self.skip_ws()? {
            return Err(Malformed);
        }
        let start = self.pos;
        let kind = match self.b[self.pos] {
            b'{' | b'[' => self.container(depth)?,
            b'"' => {
                self.string(b'"')?;
                Kind::Str
            }
            b'\'' if self.o.allow_single_quotes => {
                self.string(b'\'')?;
                Kind::Str
            }
            b't' => {
                self.expect_word(b"true")?;
                Kind::True
            }
            b'f' => {
                self.expect_word(b"false")?;
                Kind::False
            }
            b'n' => {
                self.expect_word(b"null")?;
                Kind::Null
            }
            b'N' if self.o.allow_non_numeric_numbers => {
                self.expect_word(b"NaN")?;
                Kind::NonNumeric
            }
            b'I' if self.o.allow_non_numeric_numbers => {
                self.expect_word(b"Infinity")?;
                Kind::NonNumeric
            }
            b'+' if self.o.allow_non_numeric_numbers => {
                self.pos += 1;
                self.expect_word(b"Infinity")?;
                Kind::NonNumeric
            }
            b'-' | b'0'..=b'9' => self.number()?,
            _ => return Err(Malformed),
        };
        Ok(Span {
            kind,
            start,
            end: self.pos,
        })
    }

    /// Skips the object or array at the cursor.
    #[inline(never)]
    fn container(&mut self, depth: usize) -> Scan<Kind> {
        if self.b[self.pos] == b'{' {
            self.object(depth + 1, |_, _, _| {})?;
            Ok(Kind::Object)
        } else {
            self.array(depth + 1, |_, _| {})?;
            Ok(Kind::Array)
        }
    }

    fn digits(&mut self) -> usize {
        let from = self.pos;
        while self.peek().is_some_and(|c| c.is_ascii_digit()) {
            self.pos += 1;
        }
        self.pos - from
    }

    fn number(&mut self) -> Scan<Kind> {
        if self.peek() == Some(b'-') {
            self.pos += 1;
            if self.peek() == Some(b'I') && self.o.allow_non_numeric_numbers {
                self.expect_word(b"Infinity")?;
                return Ok(Kind::NonNumeric);
            }
        }
        let int_start = self.pos;
        let n = self.digits();
        if n == 0 || (n > 1 && self.b[int_start] == b'0' && !self.o.allow_numeric_leading_zeros) {
            return Err(Malformed);
        }
        let mut kind = Kind::Int;
        if self.peek() == Some(b'.') {
            self.pos += 1;
            if self.digits() == 0 {
                return Err(Malformed);
            }
            kind = Kind::Float;
        }
        if matches!(self.peek(), Some(b'e' | b'E')) {
            self.pos += 1;
            if matches!(self.peek(), Some(b'+' | b'-')) {
                self.pos += 1;
            }
            if self.digits() == 0 {
                return Err(Malformed);
            }
            kind = Kind::Float;
        }
        if self.peek().is_some_and(ident_byte) {
            return Err(Malformed);
        }
        Ok(kind)
    }

    /// Skips a string whose opening `quote` is at the cursor; whether it holds an escape.
    fn string(&mut self, quote: u8) -> Scan<bool> {
        let b = self.b;
        let mut i = self.pos + 1;
        let mut escaped = false;
        loop {
            // Eight bytes at a time while none is the quote, a backslash or a control
            // character (most strings are short, so no `memchr` call per string).
            const LO: u64 = 0x0101_0101_0101_0101;
            const HI: u64 = 0x8080_8080_8080_8080;
            let zero = |v: u64| v.wrapping_sub(LO) & !v & HI;
            while let Some(chunk) = b.get(i..i + 8) {
                let w = u64::from_le_bytes([
                    chunk[0], chunk[1], chunk[2], chunk[3], chunk[4], chunk[5], chunk[6], chunk[7],
                ]);
                let special = zero(w ^ (LO * u64::from(quote)))
                    | zero(w ^ (LO * u64::from(b'\\')))
                    | (w.wrapping_sub(LO * 0x20) & !w & HI);
                if special != 0 {
                    break;
                }
                i += 8;
            }
            while i < b.len() && b[i] != quote && b[i] != b'\\' && b[i] >= 0x20 {
                i += 1;
            }
            let c = *b.get(i).ok_or(Malformed)?;
            if c == quote {
                self.pos = i + 1;
                return Ok(escaped);
            }
            if c < 0x20 {
                if !self.o.allow_unquoted_control_chars {
                    return Err(Malformed);
                }
                i += 1;
                continue;
            }
            let e = *b.get(i + 1).ok_or(Malformed)?;
            escaped = true;
            i += 2;
            match e {
                b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't' => {}
                b'u' => {
                    let hex = b.get(i..i + 4).ok_or(Malformed)?;
                    if !hex.iter().all(|h| h.is_ascii_hexdigit()) {
                        return Err(Malformed);
                    }
                    i += 4;
                }
                b'\'' if self.o.allow_single_quotes => {}
                _ if self.o.allow_backslash_escaping_any => {}
                _ => return Err(Malformed),
            }
        }
    }

    /// A member's name at the cursor (see [`Lexer::member_start`]): its span (quotes
    /// included), and whether it is `"`-quoted without escapes, so that its text between the
    /// quotes is the name itself. Nothing is consumed past the name.
    #[inline]
    pub fn name(&mut self) -> Scan<(usize, usize, bool)> {
        let start = self.pos;
        let mut plain = false;
        match self.peek() {
            Some(b'"') => plain = !self.string(b'"')?,
            Some(b'\'') if self.o.allow_single_quotes => {
                self.string(b'\'')?;
            }
            Some(c) if self.o.allow_unquoted_field_names && ident_byte(c) => {
                while self.peek().is_some_and(ident_byte) {
                    self.pos += 1;
                }
            }
            _ => return Err(Malformed),
        }
        Ok((start, self.pos, plain))
    }

    /// Enters an object whose `{` is at the cursor; its members come from
    /// [`Lexer::next_member`].
    pub fn open_object(&mut self, depth: usize) -> Scan<()> {
        if depth > MAX_DEPTH {
            return Err(Malformed);
        }
        self.pos += 1;
        Ok(())
    }

    /// The next member of an open object at `depth` (its name's span and its value), or
    /// `None` past its `}`; `first` for the object's first member. A caller may stop between
    /// members and go on later from the same position.
    #[inline]
    pub fn next_member(
        &mut self,
        depth: usize,
        first: bool,
    ) -> Scan<Option<((usize, usize), Span)>> {
        if !self.member_start(first)? {
            return Ok(None);
        }
        let (start, end, _) = self.name()?;
        self.colon()?;
        Ok(Some(((start, end), self.value(depth)?)))
    }

    /// The separator before the next member of an open object (a `,`, or nothing when
    /// `first`): true when a member follows, false past the object's `}`.
    #[inline]
    pub fn member_start(&mut self, first: bool) -> Scan<bool> {
        if !self.skip_ws()? {
            return Err(Malformed);
        }
        match (self.b[self.pos], first) {
            (b'}', _) => {
                self.pos += 1;
                Ok(false)
            }
            (b',', false) => {
                self.pos += 1;
                if !self.skip_ws()? {
                    return Err(Malformed);
                }
                Ok(true)
            }
            (_, true) => Ok(true),
            _ => Err(Malformed),
        }
    }

    /// The `:` after a member's name (whitespace around it skipped before the value).
    #[inline]
    pub fn colon(&mut self) -> Scan<()> {
        if !self.skip_ws()? || self.peek() != Some(b':') {
            return Err(Malformed);
        }
        self.pos += 1;
        Ok(())
    }

    /// Skips an object whose `{` is at the cursor, calling `member(lexer, name span, value
    /// span)` for each member.
    pub fn object(
        &mut self,
        depth: usize,
        mut member: impl FnMut(&Self, (usize, usize), Span),
    ) -> Scan<()> {
        self.open_object(depth)?;
        let mut first = true;
        while let Some((name, v)) = self.next_member(depth, first)? {
            member(self, name, v);
            first = false;
        }
        Ok(())
    }

    /// Skips an array whose `[` is at the cursor, calling `element` for each element.
    pub fn array(&mut self, depth: usize, mut element: impl FnMut(&Self, Span)) -> Scan<()> {
        if depth > MAX_DEPTH {
            return Err(Malformed);
        }
        self.pos += 1;
        if !self.skip_ws()? {
            return Err(Malformed);
        }
        if self.peek() == Some(b']') {
            self.pos += 1;
            return Ok(());
        }
        loop {
            let v = self.value(depth)?;
            element(self, v);
            if !self.skip_ws()? {
                return Err(Malformed);
            }
            match self.peek() {
                Some(b',') => self.pos += 1,
                Some(b']') => {
                    self.pos += 1;
                    return Ok(());
                }
                _ => return Err(Malformed),
            }
        }
    }
}

/// The text of a string or a name at `span` of `b` (quotes, if any, included in the span),
/// escapes decoded. `None` when it is not valid UTF-8.
pub fn decode_string(b: &[u8], start: usize, end: usize) -> Option<std::borrow::Cow<'_, str>> {
    let quoted = matches!(b[start], b'"' | b'\'');
    let inner = if quoted {
        &b[start + 1..end - 1]
    } else {
        &b[start..end]
    };
    crate::functions::json_text::decode_escapes(inner)
}
