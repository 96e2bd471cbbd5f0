//! Spark's JSON read options (`JSONOptions`): the same names, case-insensitive, and defaults.

use std::collections::HashMap;

use ferrospark_common::{FerroError, Result};

use crate::text_options::{
    flag as text_flag, ratio, Charset, DateTimeFormats, DateTimeOptions, ParseMode,
};

/// The options of a JSON read.
#[derive(Debug, Clone)]
pub struct JsonOptions {
    /// Infer every primitive value as a string (`primitivesAsString`).
    pub primitives_as_string: bool,
    /// Infer fractional numbers as decimals when they fit (`prefersDecimal`).
    pub prefers_decimal: bool,
    /// `/* */` and `//` comments (`allowComments`).
    pub allow_comments: bool,
    /// Field names without quotes (`allowUnquotedFieldNames`).
    pub allow_unquoted_field_names: bool,
    /// Strings and names in single quotes (`allowSingleQuotes`, on by default).
    pub allow_single_quotes: bool,
    /// Numbers with leading zeros, `00012` (`allowNumericLeadingZeros`).
    pub allow_numeric_leading_zeros: bool,
    /// `NaN`, `Infinity`, `-Infinity` as numbers (`allowNonNumericNumbers`, on by default).
    pub allow_non_numeric_numbers: bool,
    /// A backslash before any character (`allowBackslashEscapingAnyCharacter`).
    pub allow_backslash_escaping_any: bool,
    /// Control characters inside strings (`allowUnquotedControlChars`).
    pub allow_unquoted_control_chars: bool,
    /// What happens to a malformed record.
    pub mode: ParseMode,
    /// The column that receives a malformed record's text.
    pub corrupt_column: String,
    /// A file is one JSON value (an object or an array of objects) rather than one per line.
    pub multi_line: bool,
    /// `lineSep` other than `\n` / `\r\n`: records end at it (anywhere, in a string too, as
    /// Spark's reader cuts them); `None` reads lines.
    pub line_sep: Option<Vec<u8>>,
    /// `encoding` / `charset` (default UTF-8).
    pub charset: Charset,
    /// Fraction of records schema inference reads.
    pub sampling_ratio: f64,
    /// Inference drops a field whose values are all NULL (or empty arrays / structs).
    pub drop_field_if_all_null: bool,
    /// `dateFormat` and `timestampFormat` (default: Spark's date and timestamp parsing).
    pub formats: DateTimeFormats,
    /// Rows per output batch.
    pub batch_size: usize,
    /// A STRING field read from a number, array or object keeps its text exactly as written
    /// (the file reader, Spark's `enableExactStringParsing` over raw bytes); false gives
    /// Jackson's copy of the value (`from_json`, whose parser reads through a `Reader`).
    pub exact_strings: bool,
}

impl Default for JsonOptions {
    fn default() -> Self {
        Self {
            primitives_as_string: false,
            prefers_decimal: false,
            allow_comments: false,
            allow_unquoted_field_names: false,
            allow_single_quotes: true,
            allow_numeric_leading_zeros: false,
            allow_non_numeric_numbers: true,
            allow_backslash_escaping_any: false,
            allow_unquoted_control_chars: false,
            mode: ParseMode::Permissive,
            corrupt_column: "_corrupt_record".into(),
            multi_line: false,
            line_sep: None,
            charset: Charset::Utf8,
            sampling_ratio: 1.0,
            drop_field_if_all_null: false,
            formats: DateTimeFormats::default(),
            batch_size: 8192,
            exact_strings: true,
        }
    }
}

fn flag(key: &str, value: &str) -> Result<bool> {
    text_flag("JSON", key, value)
}

impl JsonOptions {
    /// Whether a file is read whole: one record (`multiLine`), or records cut at a custom
    /// `lineSep` (lines cannot say where they start).
    pub fn whole_file(&self) -> bool {
        self.multi_line || self.line_sep.is_some()
    }

    /// Options from Spark's names (case-insensitive); unknown names are ignored, as Spark
    /// ignores them. A bad value is a `ConfigError` naming the option.
    pub fn from_map(options: &HashMap<String, String>) -> Result<Self> {
        let mut o = Self::default();
        let mut patterns = DateTimeOptions::default();
        let (mut charset_name, mut line_sep): (Option<String>, bool) = (None, false);
        for (key, value) in options {
            match key.to_ascii_lowercase().as_str() {
                k if patterns.take(k, value) => {}
                "primitivesasstring" => o.primitives_as_string = flag(key, value)?,
                "prefersdecimal" => o.prefers_decimal = flag(key, value)?,
                "allowcomments" => o.allow_comments = flag(key, value)?,
                "allowunquotedfieldnames" => o.allow_unquoted_field_names = flag(key, value)?,
                "allowsinglequotes" => o.allow_single_quotes = flag(key, value)?,
                "allownumericleadingzeros" => o.allow_numeric_leading_zeros = flag(key, value)?,
                "allownonnumericnumbers" => o.allow_non_numeric_numbers = flag(key, value)?,
                "allowbackslashescapinganycharacter" => {
                    o.allow_backslash_escaping_any = flag(key, value)?
                }
                "allowunquotedcontrolchars" => o.allow_unquoted_control_chars = flag(key, value)?,
                "mode" => o.mode = ParseMode::parse("JSON", value)?,
                "columnnameofcorruptrecord" => o.corrupt_column = value.clone(),
                "multiline" => o.multi_line = flag(key, value)?,
                "samplingratio" => o.sampling_ratio = ratio("JSON", key, value)?,
                "dropfieldifallnull" => o.drop_field_if_all_null = flag(key, value)?,
                "encoding" | "charset" => {
                    o.charset = Charset::parse("JSONOptions", value)?;
                    charset_name = Some(value.clone());
                }
                "linesep" => {
                    if value.is_empty() {
                        return Err(FerroError::Config(format!(
                            "JSON option {key}={value:?}: 'lineSep' cannot be an empty string"
                        )));
                    }
                    line_sep = true;
                    if value != "\n" && value != "\r\n" {
                        o.line_sep = Some(value.as_bytes().to_vec());
                    }
                }
                _ => {}
            }
        }
        // Spark's checks: a line-by-line read of text that is not UTF-8 needs `lineSep`, and
        // UTF-16 / UTF-32 text needs `multiLine`.
        if let Some(name) = charset_name.filter(|_| !o.multi_line) {
            if matches!(o.charset, Charset::Utf16 | Charset::Utf32) {
                return Err(FerroError::Config(format!(
                    "JSON option encoding={name:?}: the {name} encoding must not be included in the denyList when multiLine is disabled: set multiLine to true"
                )));
            }
            if o.charset != Charset::Utf8 && !line_sep {
                return Err(FerroError::Config(format!(
                    "JSON option encoding={name:?}: the lineSep option must be specified for the {name} encoding"
                )));
            }
        }
        o.formats = patterns.compile("JSON")?;
        Ok(o)
    }
}
