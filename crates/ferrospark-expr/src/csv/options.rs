//! Spark's CSV read options (`CSVOptions`): the same names, case-insensitive, and defaults.

use std::collections::HashMap;

use ferrospark_common::{FerroError, Result};

use crate::text_options::{
    flag as text_flag, ratio, Charset, DateTimeFormats, DateTimeOptions, ParseMode,
};

/// The options of a CSV read.
#[derive(Debug, Clone)]
pub struct CsvOptions {
    /// `sep` / `delimiter` (default `,`; may be several characters).
    pub sep: Vec<u8>,
    /// `quote` (default `"`; the empty string turns quoting off).
    pub quote: Option<u8>,
    /// `escape` (default `\`): before a quote inside a quoted value, makes it literal.
    pub escape: Option<u8>,
    /// `comment`: lines starting with it are skipped (default none).
    pub comment: Option<u8>,
    /// `header`: the first line of each file names the columns.
    pub header: bool,
    /// `nullValue` (default empty): a value equal to it is NULL.
    pub null_value: String,
    /// `emptyValue` (default empty): what a quoted empty value reads as.
    pub empty_value: String,
    /// `nanValue` (default `NaN`).
    pub nan_value: String,
    /// `positiveInf` (default `Inf`).
    pub positive_inf: String,
    /// `negativeInf` (default `-Inf`).
    pub negative_inf: String,
    /// `mode` (default PERMISSIVE).
    pub mode: ParseMode,
    /// `columnNameOfCorruptRecord` (default `_corrupt_record`, or
    /// `spark.sql.columnNameOfCorruptRecord`).
    pub corrupt_column: String,
    /// `ignoreLeadingWhiteSpace` (default false when reading).
    pub ignore_leading_ws: bool,
    /// `ignoreTrailingWhiteSpace` (default false when reading).
    pub ignore_trailing_ws: bool,
    /// `multiLine`: a quoted value may span lines (default false: one record per line).
    pub multi_line: bool,
    /// `lineSep`: the line separator (default: `\n`, `\r\n` or `\r`).
    pub line_sep: Option<Vec<u8>>,
    /// `inferSchema`: infer column types from the data (default false: every column a string).
    pub infer_schema: bool,
    /// `samplingRatio` (default 1.0): the share of records type inference reads.
    pub sampling_ratio: f64,
    /// `encoding` / `charset` (default UTF-8).
    pub charset: Charset,
    /// `dateFormat` and `timestampFormat` (default: Spark's date and timestamp parsing).
    pub formats: DateTimeFormats,
    /// Rows per output batch.
    pub batch_size: usize,
}

impl Default for CsvOptions {
    fn default() -> Self {
        Self {
            sep: b",".to_vec(),
            quote: Some(b'"'),
            escape: Some(b'\\'),
            comment: None,
            header: false,
            null_value: String::new(),
            empty_value: String::new(),
            nan_value: "NaN".into(),
            positive_inf: "Inf".into(),
            negative_inf: "-Inf".into(),
            mode: ParseMode::Permissive,
            corrupt_column: "_corrupt_record".into(),
            ignore_leading_ws: false,
            ignore_trailing_ws: false,
            multi_line: false,
            line_sep: None,
            infer_schema: false,
            sampling_ratio: 1.0,
            charset: Charset::Utf8,
            formats: DateTimeFormats::default(),
            batch_size: 8192,
        }
    }
}

fn bad(key: &str, value: &str, why: &str) -> FerroError {
    FerroError::Config(format!("CSV option {key}={value:?}: {why}"))
}

fn flag(key: &str, value: &str) -> Result<bool> {
    text_flag("CSV", key, value)
}

/// One character of a CSV option: `\t`, `\u0000`-style escapes as Spark reads them.
fn one_char(key: &str, value: &str) -> Result<Option<u8>> {
    let text = match value {
        "\\t" => "\t",
        "\\u0000" | "" => return Ok(None),
        v => v,
    };
    let bytes = text.as_bytes();
    match bytes {
        [b] if b.is_ascii() => Ok(if *b == 0 { None } else { Some(*b) }),
        _ => Err(bad(key, value, "expected one ASCII character")),
    }
}

impl CsvOptions {
    /// Options from Spark's names (case-insensitive); unknown names are ignored, as Spark
    /// ignores them. A bad value is a `ConfigError` naming the option.
    pub fn from_map(options: &HashMap<String, String>) -> Result<Self> {
        let mut o = Self::default();
        let mut patterns = DateTimeOptions::default();
        for (key, value) in options {
            match key.to_ascii_lowercase().as_str() {
                k if patterns.take(k, value) => {}
                "sep" | "delimiter" => {
                    let v = if value == "\\t" { "\t" } else { value.as_str() };
                    if v.is_empty() {
                        return Err(bad(key, value, "the delimiter cannot be empty"));
                    }
                    o.sep = v.as_bytes().to_vec();
                }
                "quote" => o.quote = one_char(key, value)?,
                "escape" => o.escape = one_char(key, value)?,
                "comment" => o.comment = one_char(key, value)?,
                "header" => o.header = flag(key, value)?,
                "nullvalue" => o.null_value = value.clone(),
                "emptyvalue" => o.empty_value = value.clone(),
                "nanvalue" => o.nan_value = value.clone(),
                "positiveinf" => o.positive_inf = value.clone(),
                "negativeinf" => o.negative_inf = value.clone(),
                "mode" => o.mode = ParseMode::parse("CSV", value)?,
                "columnnameofcorruptrecord" => o.corrupt_column = value.clone(),
                "ignoreleadingwhitespace" => o.ignore_leading_ws = flag(key, value)?,
                "ignoretrailingwhitespace" => o.ignore_trailing_ws = flag(key, value)?,
                "multiline" => o.multi_line = flag(key, value)?,
                "linesep" => {
                    if value.is_empty() || value.len() > 2 {
                        return Err(bad(key, value, "expected one or two characters"));
                    }
                    o.line_sep = Some(value.as_bytes().to_vec());
                }
                "inferschema" => o.infer_schema = flag(key, value)?,
                "samplingratio" => o.sampling_ratio = ratio("CSV", key, value)?,
                "encoding" | "charset" => o.charset = Charset::parse("CSVOptions", value)?,
                _ => {}
            }
        }
        o.formats = patterns.compile("CSV")?;
        Ok(o)
    }
}
