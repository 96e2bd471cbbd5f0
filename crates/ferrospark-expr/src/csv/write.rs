//! CSV as Spark's `UnivocityGenerator` writes it with Spark's writer settings: no header by
//! default, NULL as the `nullValue` (empty), an empty string as `emptyValue` (`""`), values
//! trimmed of leading and trailing white space, and quoted when they hold the delimiter, the
//! quote or a line break (a quote inside escaped with `escape`, a backslash).

use std::collections::BTreeMap;

use arrow_array::cast::AsArray;
use arrow_array::{Array, RecordBatch};
use arrow_schema::Schema;
use ferrospark_common::{FerroError, Result};

/// Spark's CSV writer options.
#[derive(Debug, Clone, PartialEq)]
pub struct CsvWriteOptions {
    /// `sep` / `delimiter` (`,`)
    pub delimiter: String,
    /// `quote` (`"`)
    pub quote: char,
    /// `escape` (`\`)
    pub escape: char,
    /// `header` (false)
    pub header: bool,
    /// `nullValue` (empty)
    pub null_value: String,
    /// `emptyValue` (`""`)
    pub empty_value: String,
    /// `quoteAll` (false)
    pub quote_all: bool,
    /// `escapeQuotes` (true): values holding the quote are quoted
    pub escape_quotes: bool,
    /// `ignoreLeadingWhiteSpace` (true when writing)
    pub trim_leading: bool,
    /// `ignoreTrailingWhiteSpace` (true when writing)
    pub trim_trailing: bool,
    /// `dateFormat`
    pub date_format: String,
    /// `timestampFormat`
    pub timestamp_format: String,
    /// `timestampNTZFormat`
    pub timestamp_ntz_format: String,
    /// `lineSep` (`\n`)
    pub line_sep: String,
}

fn one_char(o: &BTreeMap<String, String>, key: &str, default: char) -> Result<char> {
    match o.get(key) {
        None => Ok(default),
        Some(v) if v.is_empty() => Ok('\u{0}'),
        Some(v) => {
            let mut c = v.chars();
            match (c.next(), c.next()) {
                (Some(x), None) => Ok(x),
                _ => Err(FerroError::Config(format!(
                    "[INVALID_OPTION] the CSV option {key} must be one character, got '{v}'"
                ))),
            }
        }
    }
}

impl CsvWriteOptions {
    /// The options of a write (keys lower-cased).
    pub fn parse(o: &BTreeMap<String, String>) -> Result<Self> {
        let flag = |k: &str, d: bool| o.get(k).map_or(d, |v| v.eq_ignore_ascii_case("true"));
        let text = |k: &str, d: &str| o.get(k).cloned().unwrap_or_else(|| d.to_string());
        Ok(Self {
            delimiter: o
                .get("sep")
                .or_else(|| o.get("delimiter"))
                .map(|d| d.replace("\\t", "\t"))
                .unwrap_or_else(|| ",".into()),
            quote: one_char(o, "quote", '"')?,
            escape: one_char(o, "escape", '\\')?,
            header: flag("header", false),
            null_value: text("nullvalue", ""),
            empty_value: text("emptyvalue", "\"\""),
            quote_all: flag("quoteall", false),
            escape_quotes: flag("escapequotes", true),
            trim_leading: flag("ignoreleadingwhitespace", true),
            trim_trailing: flag("ignoretrailingwhitespace", true),
            date_format: text("dateformat", "yyyy-MM-dd"),
            timestamp_format: text("timestampformat", "yyyy-MM-dd'T'HH:mm:ss.SSSXXX"),
            timestamp_ntz_format: text("timestampntzformat", "yyyy-MM-dd'T'HH:mm:ss[.SSS]"),
            line_sep: text("linesep", "\n"),
        })
    }

    fn cell(&self, v: &str, out: &mut Vec<u8>) {
        if v.is_empty() {
            if self.quote_all && self.empty_value != "\"\"" {
                self.quoted(&self.empty_value, out);
            } else {
                out.extend_from_slice(self.empty_value.as_bytes());
            }
            return;
        }
        // Univocity trims the characters up to the space.
        let mut v = v;
        if self.trim_leading {
            v = v.trim_start_matches(|c: char| c <= ' ');
        }
        if self.trim_trailing {
            v = v.trim_end_matches(|c: char| c <= ' ');
        }
        let has_quote = self.quote != '\u{0}' && v.contains(self.quote);
        let quoted = self.quote_all
            || (has_quote && self.escape_quotes)
            || v.contains(self.delimiter.as_str())
            || v.contains(['\n', '\r']);
        if !quoted {
            out.extend_from_slice(v.as_bytes());
            return;
        }
        self.quoted(v, out);
    }

    /// `v` between quotes: a quote or an escape character inside escaped (Univocity's
    /// `charToEscapeQuoteEscaping`, the escape itself by default).
    fn quoted(&self, v: &str, out: &mut Vec<u8>) {
        let mut buf = [0u8; 4];
        out.extend_from_slice(self.quote.encode_utf8(&mut buf).as_bytes());
        for c in v.chars() {
            if c == self.quote || (c == self.escape && self.escape != self.quote) {
                out.extend_from_slice(self.escape.encode_utf8(&mut buf).as_bytes());
            }
            out.extend_from_slice(c.encode_utf8(&mut buf).as_bytes());
        }
        out.extend_from_slice(self.quote.encode_utf8(&mut buf).as_bytes());
    }

    /// A NULL's cell: the `nullValue`, quoted under `quoteAll`.
    fn null_cell(&self, out: &mut Vec<u8>) {
        if self.quote_all {
            self.quoted(&self.null_value, out);
        } else {
            out.extend_from_slice(self.null_value.as_bytes());
        }
    }
}

/// The header line: the column names as cells.
pub fn write_header(schema: &Schema, o: &CsvWriteOptions, out: &mut Vec<u8>) {
    for (i, f) in schema.fields().iter().enumerate() {
        if i > 0 {
            out.extend_from_slice(o.delimiter.as_bytes());
        }
        o.cell(f.name(), out);
    }
    out.extend_from_slice(o.line_sep.as_bytes());
}

/// Appends the rows of `batch` to `out`.
pub fn write_rows(
    batch: &RecordBatch,
    o: &CsvWriteOptions,
    tz: &str,
    out: &mut Vec<u8>,
) -> Result<()> {
    for_each_record(batch, o, tz, |record| {
        out.extend_from_slice(record);
        out.extend_from_slice(o.line_sep.as_bytes());
    })
}

/// Hands each row of `batch` to `each` as one CSV record without its line separator (`to_csv`
/// reads them one by one); the values' texts are computed once for the batch.
pub fn for_each_record(
    batch: &RecordBatch,
    o: &CsvWriteOptions,
    tz: &str,
    mut each: impl FnMut(&[u8]),
) -> Result<()> {
    let texts = batch
        .columns()
        .iter()
        .map(|c| {
            crate::text_options::value_texts(
                c,
                &o.date_format,
                &o.timestamp_format,
                &o.timestamp_ntz_format,
                tz,
            )
        })
        .collect::<Result<Vec<_>>>()?;
    let texts: Vec<_> = texts.iter().map(|t| t.as_string::<i32>()).collect();
    let mut record = Vec::new();
    for r in 0..batch.num_rows() {
        record.clear();
        for (i, t) in texts.iter().enumerate() {
            if i > 0 {
                record.extend_from_slice(o.delimiter.as_bytes());
            }
            if t.is_valid(r) {
                o.cell(t.value(r), &mut record);
            } else {
                o.null_cell(&mut record);
            }
        }
        each(&record);
    }
    Ok(())
}
