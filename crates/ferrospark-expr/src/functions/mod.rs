//! Spark's scalar functions: lookup by name, binding (Spark's implicit casts and result types)
//! and evaluation over Arrow columns.
//!
//! Each family lives in its own file with its own enum: [`string`], [`regex`], [`datetime`],
//! [`math`]. Conditional forms (`CASE`, `IF`, `NVL`, `NULLIF`, ...) bind to
//! [`PhysicalExpr::Case`], which evaluates each branch only on the rows that take it (so an
//! ANSI error in a branch no row takes is not raised, as in Spark).
//!
//! Arguments arrive as [`ColumnarValue`]s; [`Args`] gives each function row-wise typed views
//! in which a literal argument reads as the same value on every row.

pub mod aes;
pub mod array_sets;
pub mod arrays;
pub mod binary;
pub mod bitwise;
pub mod charset;
pub mod collected;
pub mod collections;
pub mod csv_values;
pub mod datetime;
pub mod datetime_units;
mod format;
mod format_number;
mod format_zone;
pub mod hashing;
pub mod higher_order;
mod higher_order_pairs;
pub mod interval;
pub mod json_path;
pub mod json_text;
pub mod json_values;
pub mod maps;
pub mod math;
pub mod misc;
mod number_format;
mod printf;
pub mod random;
pub mod regex;
pub mod sentences;
pub mod sequence;
pub mod string;
pub mod string_edits;
mod structs;
pub mod text;
pub mod urls;
pub mod zones;

use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::ArrowPrimitiveType;
use arrow_array::{Array, ArrayRef, PrimitiveArray, Scalar, StringArray};
use arrow_schema::DataType;
use ferrospark_common::{FerroError, Result};

use crate::bind::BindContext;
use crate::eval::ColumnarValue;
use crate::expr::{Expr, Literal};
use crate::physical::PhysicalExpr;
use crate::types::{comparison_type, spark_equivalent, spark_type_name};

pub use arrays::ArraysFn;
pub use binary::BinaryFn;
pub use bitwise::BitwiseFn;
pub use collections::CollectionFn;
pub use datetime::DateFn;
pub use format::Pattern as DateTimePattern;
pub use hashing::HashFn;
pub use interval::IntervalFn;
pub use math::MathFn;
pub use misc::MiscFn;
pub use regex::RegexFn;
pub use string::StringFn;
pub use string_edits::EditFn;
pub use text::TextFn;

/// Scalar functions ferrospark evaluates natively.
#[derive(Debug, Clone, PartialEq)]
pub enum ScalarFunction {
    /// Numbers: `abs`, `round`, `floor`, `pow`, `greatest`, ...
    Math(MathFn),
    /// Strings: `substring`, `concat`, `trim`, `lpad`, ...
    Str(StringFn),
    /// Regular expressions: `rlike`, `regexp_extract`, `regexp_replace`, `split`.
    Regex(RegexFn),
    /// Dates and timestamps: `year`, `date_add`, `date_format`, ...
    Date(DateFn),
    /// `coalesce(a, b, ...)`: the first non-NULL argument.
    Coalesce,
    /// `named_struct` / `struct`: a struct of the arguments, fields named so.
    Struct(Vec<String>),
    /// Arrays and maps: `array`, `map`, `element_at`, `size`, `array_contains`, ...
    Collection(CollectionFn),
    /// Bits of integers: `&`, `|`, `^`, `~`, shifts, `bit_count`, `getbit`.
    Bitwise(BitwiseFn),
    /// Bytes: `hex`, `unhex`, `to_binary`, `encode`, `decode`, `base64`, `elt`.
    Binary(BinaryFn),
    /// Intervals: arithmetic, `abs`, `signum`, `div`, `make_*interval`.
    Interval(IntervalFn),
    /// More strings: `split_part`, `luhn_check`, the UTF-8 checks, byte padding.
    Text(TextFn),
    /// `width_bucket`, `raise_error`, `assert_true`.
    Misc(MiscFn),
    /// `array_insert`, `arrays_zip`, `map_contains_key`.
    Arrays(ArraysFn),
    /// `transform`, `filter`, `aggregate`, ...: evaluated over the batch, their lambdas over
    /// the elements ([`higher_order`]).
    HigherOrder(higher_order::HigherOrderFn),
    /// `hash`, `xxhash64`, `md5`, `sha1`, `sha2`, `crc32`.
    Hash(HashFn),
    /// `find_in_set`, `levenshtein`, `soundex`, `substring_index`, `overlay`, `mask`, URLs.
    Edit(EditFn),
    /// `from_utc_timestamp`, `to_utc_timestamp`, `convert_timezone`.
    Zone(zones::ZoneFn),
    /// `array_distinct`, `array_union`, `array_position`, `slice`, `flatten`, ...
    ArraySet(array_sets::ArraySetFn),
    /// `rand` / `random`, `randn`: Spark's seeded generator.
    Random(random::RandomFn),
    /// `monotonically_increasing_id`.
    RowId(random::RowIdFn),
    /// `map_from_arrays`, `map_from_entries`, `map_entries`, `map_concat`, `str_to_map`, with
    /// the map type they build.
    Maps(maps::MapsFn, DataType),
    /// `sequence(start, stop[, step])`.
    Sequence(sequence::SequenceFn),
    /// `parse_url`, `try_parse_url`.
    Url(urls::ParseUrlFn),
    /// `json_array_length`, `json_object_keys`.
    JsonText(json_text::JsonTextFn),
    /// `aes_encrypt`, `aes_decrypt`, `try_aes_decrypt`.
    Aes(aes::AesFn),
    /// `from_csv`, `to_csv`.
    CsvValue(csv_values::CsvValueFn),
    /// `get_json_object`.
    GetJsonObject(json_path::GetJsonObjectFn),
    /// `from_json`, `to_json`.
    JsonValue(json_values::JsonValueFn),
    /// `format_number(x, d)`.
    FormatNumber(format_number::FormatNumberFn),
    /// `__mode`, `__listagg`: the finishing steps of `mode` and `listagg`.
    Collected(collected::CollectedFn),
}

impl ScalarFunction {
    /// The function's Spark name, as plans print it.
    pub fn name(&self) -> &'static str {
        match self {
            ScalarFunction::Math(f) => f.name(),
            ScalarFunction::Str(f) => f.name(),
            ScalarFunction::Regex(f) => f.name(),
            ScalarFunction::Date(f) => f.name(),
            ScalarFunction::Coalesce => "coalesce",
            ScalarFunction::Struct(_) => "named_struct",
            ScalarFunction::Collection(f) => f.name(),
            ScalarFunction::Bitwise(f) => f.name(),
            ScalarFunction::Binary(f) => f.name(),
            ScalarFunction::Interval(f) => f.name(),
            ScalarFunction::Text(f) => f.name(),
            ScalarFunction::Misc(f) => f.name(),
            ScalarFunction::Arrays(f) => f.name(),
            ScalarFunction::HigherOrder(f) => f.name(),
            ScalarFunction::Hash(f) => f.name(),
            ScalarFunction::Edit(f) => f.name(),
            ScalarFunction::Zone(f) => f.name(),
            ScalarFunction::ArraySet(f) => f.name(),
            ScalarFunction::Random(f) => f.name(),
            ScalarFunction::RowId(_) => "monotonically_increasing_id",
            ScalarFunction::Maps(f, _) => f.name(),
            ScalarFunction::Sequence(_) => "sequence",
            ScalarFunction::Url(f) => f.name(),
            ScalarFunction::JsonText(f) => f.name(),
            ScalarFunction::JsonValue(f) => f.name(),
            ScalarFunction::CsvValue(f) => f.name(),
            ScalarFunction::Aes(f) => f.name(),
            ScalarFunction::GetJsonObject(_) => "get_json_object",
            ScalarFunction::FormatNumber(_) => "format_number",
            ScalarFunction::Collected(f) => f.name(),
        }
    }

    /// Whether equal arguments always give equal results; a function that is not (`uuid`)
    /// is never folded into a constant or computed once for two occurrences.
    pub fn deterministic(&self) -> bool {
        !matches!(
            self,
            ScalarFunction::Text(TextFn::Uuid)
                | ScalarFunction::Random(_)
                | ScalarFunction::RowId(_)
        )
    }

    /// Evaluates the function over its argument values for a batch of `n` rows.
    pub fn evaluate(&self, args: &[ColumnarValue], n: usize) -> Result<ColumnarValue> {
        // Constant arguments give one value for every row, but not to a function that draws
        // a new value per row (`uniform(1, 2, 0)`).
        let args = Args::new(args, n, self.deterministic())?;
        let out = match self {
            ScalarFunction::Math(f) => f.evaluate(&args)?,
            ScalarFunction::Str(f) => f.evaluate(&args)?,
            ScalarFunction::Regex(f) => f.evaluate(&args)?,
            ScalarFunction::Date(f) => f.evaluate(&args)?,
            ScalarFunction::Struct(names) => structs::evaluate(names, &args)?,
            ScalarFunction::Collection(f) => f.evaluate(&args)?,
            ScalarFunction::Bitwise(f) => f.evaluate(&args)?,
            ScalarFunction::Binary(f) => f.evaluate(&args)?,
            ScalarFunction::Interval(f) => f.evaluate(&args)?,
            ScalarFunction::Text(f) => f.evaluate(&args)?,
            ScalarFunction::Misc(f) => f.evaluate(&args)?,
            ScalarFunction::Arrays(f) => f.evaluate(&args)?,
            ScalarFunction::Hash(f) => f.evaluate(&args)?,
            ScalarFunction::Edit(f) => f.evaluate(&args)?,
            ScalarFunction::Zone(f) => f.evaluate(&args)?,
            ScalarFunction::ArraySet(f) => f.evaluate(&args)?,
            ScalarFunction::Random(f) => f.evaluate(&args)?,
            ScalarFunction::RowId(f) => f.evaluate(&args)?,
            ScalarFunction::Maps(f, out) => f.evaluate(&args, out)?,
            ScalarFunction::Sequence(f) => f.evaluate(&args)?,
            ScalarFunction::Url(f) => f.evaluate(&args)?,
            ScalarFunction::JsonText(f) => f.evaluate(&args)?,
            ScalarFunction::JsonValue(f) => f.evaluate(&args)?,
            ScalarFunction::CsvValue(f) => f.evaluate(&args)?,
            ScalarFunction::Aes(f) => f.evaluate(&args)?,
            ScalarFunction::GetJsonObject(f) => f.evaluate(&args)?,
            ScalarFunction::FormatNumber(f) => f.evaluate(&args)?,
            ScalarFunction::Collected(f) => f.evaluate(&args)?,
            ScalarFunction::HigherOrder(f) => {
                return Err(FerroError::Internal(format!(
                    "{} is evaluated over its batch, not its argument values",
                    f.name()
                )))
            }
            ScalarFunction::Coalesce => {
                let mut acc = args.full(0)?;
                for i in 1..args.len() {
                    let keep = arrow_arith::boolean::is_not_null(&acc)?;
                    acc = arrow_select::zip::zip(&keep, &acc, &args.full(i)?)?;
                }
                acc
            }
        };
        Ok(args.wrap(out))
    }
}

/// The last pattern compiled (a date format, a regular expression), reused while rows keep
/// the same pattern text: a literal pattern compiles once per batch.
pub(crate) struct LastCompiled<T> {
    last: Option<(String, T)>,
    compile: fn(&str) -> Result<T>,
}

impl<T> LastCompiled<T> {
    /// A cache compiling with `compile`.
    pub(crate) fn new(compile: fn(&str) -> Result<T>) -> Self {
        Self {
            last: None,
            compile,
        }
    }

    /// The compiled form of `text`.
    pub(crate) fn get(&mut self, text: &str) -> Result<&T> {
        if self.last.as_ref().is_none_or(|(t, _)| t != text) {
            self.last = Some((text.to_string(), (self.compile)(text)?));
        }
        match &self.last {
            Some((_, p)) => Ok(p),
            None => Err(FerroError::Internal("pattern cache empty".into())),
        }
    }
}

/// The internal function a scalar subquery's value goes through when the subquery may have
/// more than one row for an outer row (`SCALAR_SUBQUERY_TOO_MANY_ROWS` then).
pub const SINGLE_VALUE_FN: &str = "__single_value";

/// The names [`bind_call`] knows, for "did you mean" messages.
pub const FUNCTION_NAMES: &[&str] = &[
    "abs",
    "acos",
    "add_months",
    "ascii",
    "asin",
    "atan",
    "atan2",
    "bround",
    "btrim",
    "cbrt",
    "ceil",
    "ceiling",
    "char_length",
    "character_length",
    "coalesce",
    "concat",
    "concat_ws",
    "cos",
    "current_date",
    "current_timestamp",
    "date_add",
    "date_format",
    "to_char",
    "to_varchar",
    "date_sub",
    "date_trunc",
    "dateadd",
    "datediff",
    "day",
    "dayofmonth",
    "dayofweek",
    "dayofyear",
    "degrees",
    "div",
    "e",
    "exp",
    "expm1",
    "extract",
    "floor",
    "from_unixtime",
    "greatest",
    "hour",
    "if",
    "ifnull",
    "initcap",
    "instr",
    "isnan",
    "isnotnull",
    "isnull",
    "last_day",
    "lcase",
    "least",
    "left",
    "len",
    "length",
    "ln",
    "locate",
    "log",
    "log10",
    "log1p",
    "log2",
    "lower",
    "lpad",
    "ltrim",
    "make_date",
    "timestamp_seconds",
    "timestamp_millis",
    "timestamp_micros",
    "conv",
    "bin",
    "make_timestamp",
    "array_insert",
    "arrays_zip",
    "map_contains_key",
    "width_bucket",
    "raise_error",
    "assert_true",
    "regexp_extract_all",
    "regexp_count",
    "regexp_substr",
    "regexp_instr",
    "split_part",
    "luhn_check",
    "is_valid_utf8",
    "make_valid_utf8",
    "validate_utf8",
    "try_validate_utf8",
    "typeof",
    "make_dt_interval",
    "make_interval",
    "make_ym_interval",
    "minute",
    "mod",
    "month",
    "months_between",
    "named_struct",
    "nanvl",
    "negative",
    "next_day",
    "nullif",
    "nvl",
    "nvl2",
    "pi",
    "pmod",
    "position",
    "positive",
    "pow",
    "power",
    "quarter",
    "radians",
    "regexp",
    "regexp_extract",
    "regexp_like",
    "regexp_replace",
    "repeat",
    "replace",
    "reverse",
    "right",
    "rint",
    "rlike",
    "round",
    "rpad",
    "rtrim",
    "second",
    "sign",
    "signum",
    "sin",
    "split",
    "struct",
    "sqrt",
    "substr",
    "substring",
    "tan",
    "to_date",
    "to_timestamp",
    "to_timestamp_ltz",
    "to_timestamp_ntz",
    "translate",
    "trim",
    "trunc",
    "try_divide",
    "ucase",
    "unix_date",
    "unix_timestamp",
    "upper",
    "weekday",
    "weekofyear",
    "year",
    "sec",
    "csc",
    "cot",
    "float",
    "double",
    "boolean",
    "tinyint",
    "smallint",
    "int",
    "bigint",
    "decimal",
    "string",
    "binary",
    "date",
    "timestamp",
    "timestamp_ntz",
    "array",
    "map",
    "size",
    "cardinality",
    "array_size",
    "element_at",
    "try_element_at",
    "get",
    "array_contains",
    "sort_array",
    "array_append",
    "array_prepend",
    "array_compact",
    "map_keys",
    "map_values",
    "shiftleft",
    "shiftright",
    "shiftrightunsigned",
    "bit_count",
    "getbit",
    "bit_get",
    "hex",
    "unhex",
    "to_binary",
    "encode",
    "decode",
    "base64",
    "unbase64",
    "elt",
    "nullifzero",
    "zeroifnull",
    "to_number",
    "try_to_number",
    "try_to_binary",
    "format_string",
    "printf",
    "uuid",
    "rand",
    "random",
    "randn",
    "monotonically_increasing_id",
    "spark_partition_id",
    "hash",
    "xxhash64",
    "md5",
    "sha",
    "sha1",
    "sha2",
    "crc32",
    "sinh",
    "cosh",
    "tanh",
    "asinh",
    "acosh",
    "atanh",
    "hypot",
    "factorial",
    "find_in_set",
    "levenshtein",
    "soundex",
    "sentences",
    "substring_index",
    "overlay",
    "quote",
    "mask",
    "chr",
    "char",
    "url_encode",
    "url_decode",
    "try_url_decode",
    "try_add",
    "try_subtract",
    "try_multiply",
    "try_mod",
    "try_to_timestamp",
    "try_to_date",
    "try_make_timestamp",
    "try_make_timestamp_ltz",
    "try_make_interval",
    "from_utc_timestamp",
    "to_utc_timestamp",
    "convert_timezone",
    "dayname",
    "monthname",
    "current_timezone",
    "current_catalog",
    "current_user",
    "user",
    "session_user",
    "make_timestamp_ntz",
    "try_make_timestamp_ntz",
    "array_distinct",
    "array_union",
    "array_intersect",
    "array_except",
    "arrays_overlap",
    "array_position",
    "array_remove",
    "array_max",
    "array_min",
    "array_join",
    "slice",
    "flatten",
    "array_repeat",
    "map_from_arrays",
    "map_from_entries",
    "map_entries",
    "map_concat",
    "str_to_map",
    "sequence",
    "shuffle",
    "uniform",
    "randstr",
    "parse_url",
    "try_parse_url",
    "to_base32",
    "from_base32",
    "json_array_length",
    "json_object_keys",
    "from_json",
    "to_json",
    "schema_of_json",
    "get_json_object",
    "from_csv",
    "to_csv",
    "schema_of_csv",
    "aes_encrypt",
    "aes_decrypt",
    "try_aes_decrypt",
    "hmac",
    "jaro_winkler_similarity",
    "current_database",
    "current_schema",
    "current_path",
    "version",
    "format_number",
    "window_time",
];

/// Binds a call of `name` over bound `args`; `expr` is the whole call, for messages.
pub fn bind_call(
    expr: &Expr,
    name: &str,
    args: Vec<PhysicalExpr>,
    ctx: &BindContext<'_>,
) -> Result<PhysicalExpr> {
    let call = Call { expr, name, ctx };
    if let Some(e) = bind_conditional(&call, &args)? {
        return Ok(e);
    }
    if name == "typeof" {
        call.arity(&args, 1, 1)?;
        let t = crate::types::catalog_string(&args[0].data_type());
        return Ok(PhysicalExpr::Literal(Literal::string(&t)));
    }
    if matches!(name, "coalesce" | "nvl" | "ifnull") {
        return call.coalesce(args);
    }
    if let Some(value) = session_constant(name, ctx) {
        call.arity(&args, 0, 0)?;
        return Ok(PhysicalExpr::Literal(Literal::string(&value)));
    }
    let bound = match random::bind(&call, args)? {
        Bound::Done(e) => return Ok(e),
        Bound::NotMine(a) => a,
    };
    let bound = match structs::bind(&call, bound)? {
        Bound::Done(e) => return Ok(e),
        Bound::NotMine(a) => a,
    };
    let bound = match hashing::bind(&call, bound)? {
        Bound::Done(e) => return Ok(e),
        Bound::NotMine(a) => a,
    };
    let bound = match string_edits::bind(&call, bound)? {
        Bound::Done(e) => return Ok(e),
        Bound::NotMine(a) => a,
    };
    let bound = match zones::bind(&call, bound)? {
        Bound::Done(e) => return Ok(e),
        Bound::NotMine(a) => a,
    };
    let bound = match array_sets::bind(&call, bound)? {
        Bound::Done(e) => return Ok(e),
        Bound::NotMine(a) => a,
    };
    let bound = match collections::bind(&call, bound)? {
        Bound::Done(e) => return Ok(e),
        Bound::NotMine(a) => a,
    };
    let bound = match bitwise::bind(&call, bound)? {
        Bound::Done(e) => return Ok(e),
        Bound::NotMine(a) => a,
    };
    let bound = match binary::bind(&call, bound)? {
        Bound::Done(e) => return Ok(e),
        Bound::NotMine(a) => a,
    };
    let bound = match interval::bind(&call, bound)? {
        Bound::Done(e) => return Ok(e),
        Bound::NotMine(a) => a,
    };
    let bound = match math::bind(&call, bound)? {
        Bound::Done(e) => return Ok(e),
        Bound::NotMine(a) => a,
    };
    let bound = match collected::bind(&call, bound)? {
        Bound::Done(e) => return Ok(e),
        Bound::NotMine(a) => a,
    };
    let bound = match format_number::bind(&call, bound)? {
        Bound::Done(e) => return Ok(e),
        Bound::NotMine(a) => a,
    };
    let bound = match urls::bind(&call, bound)? {
        Bound::Done(e) => return Ok(e),
        Bound::NotMine(a) => a,
    };
    let bound = match json_text::bind(&call, bound)? {
        Bound::Done(e) => return Ok(e),
        Bound::NotMine(a) => a,
    };
    let bound = match json_path::bind(&call, bound)? {
        Bound::Done(e) => return Ok(e),
        Bound::NotMine(a) => a,
    };
    let bound = match aes::bind(&call, bound)? {
        Bound::Done(e) => return Ok(e),
        Bound::NotMine(a) => a,
    };
    let bound = match csv_values::bind(&call, bound)? {
        Bound::Done(e) => return Ok(e),
        Bound::NotMine(a) => a,
    };
    let bound = match json_values::bind(&call, bound)? {
        Bound::Done(e) => return Ok(e),
        Bound::NotMine(a) => a,
    };
    let bound = match sequence::bind(&call, bound)? {
        Bound::Done(e) => return Ok(e),
        Bound::NotMine(a) => a,
    };
    let bound = match maps::bind(&call, bound)? {
        Bound::Done(e) => return Ok(e),
        Bound::NotMine(a) => a,
    };
    let bound = match arrays::bind(&call, bound)? {
        Bound::Done(e) => return Ok(e),
        Bound::NotMine(a) => a,
    };
    let bound = match misc::bind(&call, bound)? {
        Bound::Done(e) => return Ok(e),
        Bound::NotMine(a) => a,
    };
    let bound = match text::bind(&call, bound)? {
        Bound::Done(e) => return Ok(e),
        Bound::NotMine(a) => a,
    };
    let bound = match string::bind(&call, bound)? {
        Bound::Done(e) => return Ok(e),
        Bound::NotMine(a) => a,
    };
    let bound = match regex::bind(&call, bound)? {
        Bound::Done(e) => return Ok(e),
        Bound::NotMine(a) => a,
    };
    match datetime::bind(&call, bound)? {
        Bound::Done(e) => Ok(e),
        Bound::NotMine(_) => Err(unknown_function(name, expr)),
    }
}

/// The session's constants Spark reads without arguments: the time zone, the catalog's name
/// and the user (`SPARK_USER`, else the login name, as Spark's `Utils.getCurrentUserName`).
fn session_constant(name: &str, ctx: &BindContext<'_>) -> Option<String> {
    Some(match name {
        "current_timezone" => ctx.session_tz.to_string(),
        "current_catalog" => "spark_catalog".to_string(),
        // The Spark version whose answers ferrospark gives, then its own build in place of
        // Spark's revision.
        "version" => format!("4.3.0 ferrospark-{}", env!("CARGO_PKG_VERSION")),
        "current_user" | "user" | "session_user" => ["SPARK_USER", "USER", "LOGNAME"]
            .iter()
            .find_map(|k| std::env::var(k).ok().filter(|v| !v.is_empty()))
            .unwrap_or_else(|| "root".to_string()),
        _ => return None,
    })
}

/// Spark's `WindowFunction`s (ranking, offsets, `nth_value`, `counter_diff`): meaningful only
/// over an ordered window, never without OVER. Aggregates such as `first_value` run anywhere.
pub fn is_window_only(name: &str) -> bool {
    matches!(
        name,
        "row_number"
            | "rank"
            | "dense_rank"
            | "percent_rank"
            | "cume_dist"
            | "ntile"
            | "lag"
            | "lead"
            | "nth_value"
            | "counter_diff"
    )
}

fn unknown_function(name: &str, expr: &Expr) -> FerroError {
    if is_window_only(name) {
        return FerroError::Analysis(format!(
            "[WINDOW_FUNCTION_WITHOUT_OVER_CLAUSE] Window function \"{}\" requires an OVER clause. SQLSTATE: 42601",
            crate::expr::strip_ids(&expr.spark_name())
        ));
    }
    let near = FUNCTION_NAMES
        .iter()
        .min_by_key(|c| crate::bind::edit_distance(c, name))
        .filter(|c| crate::bind::edit_distance(c, name) <= 2);
    let hint = near
        .map(|n| format!(" Did you mean `{n}`?"))
        .unwrap_or_default();
    FerroError::Analysis(format!(
        "[UNRESOLVED_ROUTINE] Cannot resolve routine `{name}` in \"{expr}\".{hint} Verify the spelling; the supported functions are listed in docs/queries.md."
    ))
}

/// What a family's binder returns: the bound call, or the arguments back when the name is
/// not one of its functions.
pub(crate) enum Bound {
    Done(PhysicalExpr),
    NotMine(Vec<PhysicalExpr>),
}

/// A call being bound: its name, the whole expression (for messages) and the context.
pub(crate) struct Call<'a, 'b> {
    pub expr: &'a Expr,
    pub name: &'a str,
    pub ctx: &'a BindContext<'b>,
}

impl Call<'_, '_> {
    /// `[WRONG_NUM_ARGS]` unless the call has `lo..=hi` arguments.
    pub fn arity(&self, args: &[PhysicalExpr], lo: usize, hi: usize) -> Result<()> {
        if (lo..=hi).contains(&args.len()) {
            return Ok(());
        }
        let want = if lo == hi {
            format!("{lo}")
        } else if hi == usize::MAX {
            format!("at least {lo}")
        } else {
            format!("{lo} to {hi}")
        };
        Err(FerroError::Analysis(format!(
            "[WRONG_NUM_ARGS.WITHOUT_SUGGESTION] The `{}` requires {want} parameters but the actual number is {} in \"{}\".",
            self.name,
            args.len(),
            self.expr
        )))
    }

    /// `[DATATYPE_MISMATCH.UNEXPECTED_INPUT_TYPE]` for argument `i`.
    pub fn wrong_type(&self, i: usize, arg: &PhysicalExpr, wanted: &str) -> FerroError {
        FerroError::Analysis(format!(
            "[DATATYPE_MISMATCH.UNEXPECTED_INPUT_TYPE] Cannot resolve \"{}\" due to data type mismatch: parameter {} requires {wanted}, however \"{arg}\" has the type {}.",
            self.expr,
            i + 1,
            spark_type_name(&arg.data_type())
        ))
    }

    /// A function node.
    pub fn function(
        &self,
        func: ScalarFunction,
        args: Vec<PhysicalExpr>,
        data_type: DataType,
    ) -> PhysicalExpr {
        PhysicalExpr::Function {
            func,
            args,
            data_type,
        }
    }

    /// Every argument cast to a string ([`Call::string_arg`]).
    pub fn string_args(&self, args: Vec<PhysicalExpr>) -> Result<Vec<PhysicalExpr>> {
        args.into_iter()
            .enumerate()
            .map(|(i, a)| self.string_arg(i, a))
            .collect()
    }

    /// Casts argument `i` to a string as Spark's implicit cast does (numbers, dates, ... are
    /// printed; binary is refused).
    pub fn string_arg(&self, i: usize, a: PhysicalExpr) -> Result<PhysicalExpr> {
        let t = spark_equivalent(&a.data_type());
        match t {
            DataType::Utf8 => Ok(crate::bind::cast_to(a, &DataType::Utf8)),
            DataType::Null => Ok(PhysicalExpr::Literal(Literal::null(&DataType::Utf8))),
            // Spark's implicit cast reads bytes as UTF-8 text.
            DataType::Struct(_) | DataType::List(_) | DataType::Map(..) => {
                Err(self.wrong_type(i, &a, "the \"STRING\" type"))
            }
            _ => Ok(crate::bind::cast_to(a, &DataType::Utf8)),
        }
    }

    /// Casts argument `i` to an integer type `to` (integral arguments only, as Spark's
    /// implicit casts for positions and lengths; strings are parsed as Spark casts them).
    pub fn int_arg(&self, i: usize, a: PhysicalExpr, to: &DataType) -> Result<PhysicalExpr> {
        let t = spark_equivalent(&a.data_type());
        if crate::types::is_integral(&t) || t == DataType::Null || t == DataType::Utf8 {
            Ok(crate::bind::cast_to(a, to))
        } else {
            Err(self.wrong_type(i, &a, &format!("the \"{}\" type", spark_type_name(to))))
        }
    }

    /// Casts argument `i` to DOUBLE (numbers and strings).
    pub fn double_arg(&self, i: usize, a: PhysicalExpr) -> Result<PhysicalExpr> {
        let t = spark_equivalent(&a.data_type());
        if crate::types::is_numeric(&t) || t == DataType::Null || t == DataType::Utf8 {
            Ok(crate::bind::cast_to(a, &DataType::Float64))
        } else {
            Err(self.wrong_type(i, &a, "the \"DOUBLE\" type"))
        }
    }

    /// The type all `args` widen to, as Spark's `findWiderCommonType` for CASE, COALESCE,
    /// GREATEST and LEAST.
    pub fn common_type(&self, args: &[&PhysicalExpr]) -> Result<DataType> {
        let mut t = DataType::Null;
        for a in args {
            let at = spark_equivalent(&a.data_type());
            let string_and =
                |s: &DataType, o: &DataType| *s == DataType::Utf8 && (crate::types::is_numeric(o));
            t = if t == DataType::Null {
                at
            } else if at == DataType::Null {
                t
            } else if string_and(&t, &at) || string_and(&at, &t) {
                // Spark's ANSI coercion: a string beside a number becomes a BIGINT (or a
                // DOUBLE / DECIMAL beside those), cast when the value is read; legacy mode
                // makes both strings.
                let o = if t == DataType::Utf8 { &at } else { &t };
                if !self.ctx.ansi {
                    DataType::Utf8
                } else if crate::types::is_integral(o) {
                    DataType::Int64
                } else {
                    o.clone()
                }
            } else {
                comparison_type(&t, &at).ok_or_else(|| {
                    FerroError::Analysis(format!(
                        "[DATATYPE_MISMATCH.DATA_DIFF_TYPES] Cannot resolve \"{}\" due to data type mismatch: the arguments of `{}` should all have the same type, but they are {} and {}.",
                        self.expr,
                        self.name,
                        spark_type_name(&t),
                        spark_type_name(&at)
                    ))
                })?
            };
        }
        Ok(t)
    }

    fn coalesce(&self, args: Vec<PhysicalExpr>) -> Result<PhysicalExpr> {
        if self.name == "coalesce" {
            self.arity(&args, 1, usize::MAX)?;
        } else {
            self.arity(&args, 2, 2)?;
        }
        let t = self.common_type(&args.iter().collect::<Vec<_>>())?;
        let args: Vec<PhysicalExpr> = args
            .into_iter()
            .map(|a| crate::bind::cast_to(a, &t))
            .collect();
        Ok(self.function(ScalarFunction::Coalesce, args, t))
    }
}

/// `if`, `nullif`, `nvl2`, `nanvl`, `try_divide` and the null tests as functions.
fn bind_conditional(call: &Call<'_, '_>, args: &[PhysicalExpr]) -> Result<Option<PhysicalExpr>> {
    let null_of = |t: &DataType| PhysicalExpr::Literal(Literal::null(t));
    Ok(Some(match call.name {
        "if" | "iff" => {
            call.arity(args, 3, 3)?;
            let cond = crate::bind::cast_boolean(call.expr, args[0].clone())?;
            case(call, vec![(cond, args[1].clone())], Some(args[2].clone()))?
        }
        "nullif" => {
            call.arity(args, 2, 2)?;
            let t = call.common_type(&[&args[0], &args[1]])?;
            let eq = PhysicalExpr::Compare {
                op: crate::expr::BinaryOp::Eq,
                left: Box::new(crate::bind::cast_to(args[0].clone(), &t)),
                right: Box::new(crate::bind::cast_to(args[1].clone(), &t)),
            };
            let out = spark_equivalent(&args[0].data_type());
            PhysicalExpr::Case {
                branches: vec![(eq, null_of(&out))],
                otherwise: Some(Box::new(crate::bind::cast_to(args[0].clone(), &out))),
                data_type: out,
            }
        }
        "nvl2" => {
            call.arity(args, 3, 3)?;
            let cond = PhysicalExpr::IsNotNull(Box::new(args[0].clone()));
            case(call, vec![(cond, args[1].clone())], Some(args[2].clone()))?
        }
        "isnull" => {
            call.arity(args, 1, 1)?;
            PhysicalExpr::IsNull(Box::new(args[0].clone()))
        }
        "isnotnull" => {
            call.arity(args, 1, 1)?;
            PhysicalExpr::IsNotNull(Box::new(args[0].clone()))
        }
        _ => return Ok(None),
    }))
}

/// `CASE WHEN c1 THEN v1 ... [ELSE e] END` with the values widened to one type.
pub(crate) fn case(
    call: &Call<'_, '_>,
    branches: Vec<(PhysicalExpr, PhysicalExpr)>,
    otherwise: Option<PhysicalExpr>,
) -> Result<PhysicalExpr> {
    let mut values: Vec<&PhysicalExpr> = branches.iter().map(|(_, v)| v).collect();
    if let Some(o) = &otherwise {
        values.push(o);
    }
    let t = call.common_type(&values)?;
    Ok(PhysicalExpr::Case {
        branches: branches
            .into_iter()
            .map(|(c, v)| (c, crate::bind::cast_to(v, &t)))
            .collect(),
        otherwise: otherwise.map(|o| Box::new(crate::bind::cast_to(o, &t))),
        data_type: t,
    })
}

/// A function's arguments over one batch: all literal (evaluated once, one row) or columns of
/// `n` rows, literals read as the same value on every row.
pub struct Args {
    arrays: Vec<ArrayRef>,
    scalar: Vec<bool>,
    len: usize,
    all_scalar: bool,
}

impl Args {
    fn new(vals: &[ColumnarValue], n: usize, collapse: bool) -> Result<Self> {
        let all_scalar = collapse && !vals.is_empty() && vals.iter().all(ColumnarValue::is_scalar);
        let mut arrays = Vec::with_capacity(vals.len());
        let mut scalar = Vec::with_capacity(vals.len());
        for v in vals {
            match v {
                ColumnarValue::Array(a) => {
                    arrays.push(a.clone());
                    scalar.push(false);
                }
                ColumnarValue::Scalar(s) => {
                    arrays.push(s.clone().into_inner());
                    scalar.push(!all_scalar);
                }
            }
        }
        Ok(Self {
            arrays,
            scalar,
            len: if all_scalar { 1 } else { n },
            all_scalar,
        })
    }

    /// Rows of the result.
    pub fn rows(&self) -> usize {
        self.len
    }

    /// Number of arguments.
    pub fn len(&self) -> usize {
        self.arrays.len()
    }

    /// True when the call has no arguments.
    pub fn is_empty(&self) -> bool {
        self.arrays.is_empty()
    }

    /// Argument `i` as a full column of [`Args::rows`] rows.
    pub fn array(&self, i: usize) -> &ArrayRef {
        &self.arrays[i]
    }

    /// Argument `i` materialised to [`Args::rows`] rows.
    pub fn full(&self, i: usize) -> Result<ArrayRef> {
        if self.scalar[i] {
            ColumnarValue::Scalar(Scalar::new(self.arrays[i].clone())).into_array(self.len)
        } else {
            Ok(self.arrays[i].clone())
        }
    }

    /// Whether argument `i` is one value for every row.
    pub fn is_scalar(&self, i: usize) -> bool {
        self.scalar[i] || self.all_scalar
    }

    /// Argument `i` as strings.
    pub fn str(&self, i: usize) -> Result<StrView<'_>> {
        let a = self.arrays[i].as_string_opt::<i32>().ok_or_else(|| {
            FerroError::Internal(format!(
                "argument {i} is {} where a string was bound",
                self.arrays[i].data_type()
            ))
        })?;
        Ok(StrView {
            a,
            scalar: self.scalar[i],
        })
    }

    /// Argument `i` as primitives of type `T`.
    pub fn prim<T: ArrowPrimitiveType>(&self, i: usize) -> Result<PrimView<'_, T>> {
        let a = self.arrays[i].as_primitive_opt::<T>().ok_or_else(|| {
            FerroError::Internal(format!(
                "argument {i} is {} where {} was bound",
                self.arrays[i].data_type(),
                T::DATA_TYPE
            ))
        })?;
        Ok(PrimView {
            a,
            scalar: self.scalar[i],
        })
    }

    /// The constant value of a literal string argument (`None` for a column or NULL).
    pub fn const_str(&self, i: usize) -> Option<&str> {
        if !self.is_scalar(i) {
            return None;
        }
        crate::eval::single_str(self.arrays[i].as_ref())
    }

    fn wrap(&self, out: ArrayRef) -> ColumnarValue {
        if self.all_scalar {
            ColumnarValue::Scalar(Scalar::new(out))
        } else {
            ColumnarValue::Array(out)
        }
    }
}

/// Row-wise access to a string argument.
#[derive(Clone, Copy)]
pub struct StrView<'a> {
    a: &'a StringArray,
    scalar: bool,
}

impl<'a> StrView<'a> {
    /// Row `i` (NULL as `None`).
    #[inline]
    pub fn get(&self, i: usize) -> Option<&'a str> {
        let i = if self.scalar { 0 } else { i };
        self.a.is_valid(i).then(|| self.a.value(i))
    }
}

/// Row-wise access to a primitive argument.
#[derive(Clone, Copy)]
pub struct PrimView<'a, T: ArrowPrimitiveType> {
    a: &'a PrimitiveArray<T>,
    scalar: bool,
}

impl<T: ArrowPrimitiveType> PrimView<'_, T> {
    /// Row `i` (NULL as `None`).
    #[inline]
    pub fn get(&self, i: usize) -> Option<T::Native> {
        let i = if self.scalar { 0 } else { i };
        self.a.is_valid(i).then(|| self.a.value(i))
    }
}

/// Builds a string column row by row into one reused buffer: `f` writes row `i` and says
/// whether it is valid (false makes it NULL).
pub fn build_strings(
    n: usize,
    mut f: impl FnMut(usize, &mut String) -> Result<bool>,
) -> Result<ArrayRef> {
    let mut b = arrow_array::builder::StringBuilder::with_capacity(n, n * 8);
    let mut buf = String::new();
    for i in 0..n {
        buf.clear();
        if f(i, &mut buf)? {
            b.append_value(&buf);
        } else {
            b.append_null();
        }
    }
    Ok(Arc::new(b.finish()))
}

/// Builds a string column of pieces of other strings: `f` gives row `i`'s value (`None` for
/// NULL), appended without an intermediate copy.
pub fn build_str_slices<'a>(
    n: usize,
    bytes_hint: usize,
    mut f: impl FnMut(usize) -> Result<Option<&'a str>>,
) -> Result<ArrayRef> {
    let mut b = arrow_array::builder::StringBuilder::with_capacity(n, bytes_hint);
    for i in 0..n {
        b.append_option(f(i)?);
    }
    Ok(Arc::new(b.finish()))
}

/// Builds a primitive column row by row.
pub fn build_prims<T: ArrowPrimitiveType>(
    n: usize,
    mut f: impl FnMut(usize) -> Result<Option<T::Native>>,
) -> Result<ArrayRef> {
    let mut out = Vec::with_capacity(n);
    for i in 0..n {
        out.push(f(i)?);
    }
    Ok(Arc::new(PrimitiveArray::<T>::from_iter(out)))
}
