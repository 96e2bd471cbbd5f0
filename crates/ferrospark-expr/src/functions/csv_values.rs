//! `from_csv`, `to_csv` and `schema_of_csv`: one CSV record to a struct and back, with the
//! CSV reader's own tokenizer and conversions (`crate::csv`), as Spark's `CsvToStructs`,
//! `StructsToCsv` and `SchemaOfCsv` run its `UnivocityParser`, `UnivocityGenerator` and
//! `CSVInferSchema`.
//!
//! `from_csv` reads the first record of each string against a struct of simple types:
//! fields match by position, missing ones are NULL and extra ones ignored, a field that does
//! not convert is NULL (the others kept), and a string field named as
//! `columnNameOfCorruptRecord` receives a malformed record's text; `mode` is `PERMISSIVE` or
//! `FAILFAST`. NULL text gives NULL, empty text a struct of NULLs.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use arrow_array::builder::StringBuilder;
use arrow_array::cast::AsArray;
use arrow_array::{Array, ArrayRef, RecordBatch, StringArray, StructArray};
use arrow_buffer::NullBuffer;
use arrow_schema::{DataType, Field, Fields, Schema};
use ferrospark_common::{Config, FerroError, Result};

use super::binary::{fold_argument, foldable_text};
use super::json_values::{
    corrupt_field, drop_malformed_unsupported, malformed_record, options_of, session_config,
};
use super::{Args, Bound, Call, ScalarFunction};
use crate::csv::convert::convert_column;
use crate::csv::infer::{infer_column, Inferred};
use crate::csv::tokenize::Tokenizer;
use crate::csv::write::{for_each_record, CsvWriteOptions};
use crate::csv::CsvOptions;
use crate::json::schema_text::parse_schema_text;
use crate::physical::PhysicalExpr;
use crate::text_options::ParseMode;
use crate::types::spark_type_name;

/// What `from_csv` reads with.
#[derive(Debug)]
pub struct FromCsv {
    options: CsvOptions,
    fields: Fields,
    corrupt: Option<usize>,
    /// The fields without the corrupt-record field: the ones a record's fields fill.
    read: Fields,
    cfg: Config,
}

/// What `to_csv` writes with.
#[derive(Debug)]
pub struct ToCsv {
    options: CsvWriteOptions,
    session_tz: String,
}

/// `from_csv`, `to_csv` (`schema_of_csv` folds while binding: its input is a constant).
#[derive(Debug, Clone)]
pub enum CsvValueFn {
    /// A CSV record to a struct.
    FromCsv(Arc<FromCsv>),
    /// A struct to a CSV record.
    ToCsv(Arc<ToCsv>),
}

impl PartialEq for CsvValueFn {
    fn eq(&self, other: &Self) -> bool {
        match (self, other) {
            (CsvValueFn::FromCsv(a), CsvValueFn::FromCsv(b)) => Arc::ptr_eq(a, b),
            (CsvValueFn::ToCsv(a), CsvValueFn::ToCsv(b)) => Arc::ptr_eq(a, b),
            _ => false,
        }
    }
}

impl CsvValueFn {
    /// Spark's name.
    pub fn name(&self) -> &'static str {
        match self {
            CsvValueFn::FromCsv(_) => "from_csv",
            CsvValueFn::ToCsv(_) => "to_csv",
        }
    }

    pub(crate) fn evaluate(&self, args: &Args) -> Result<ArrayRef> {
        match self {
            CsvValueFn::FromCsv(f) => f.read(args),
            CsvValueFn::ToCsv(t) => t.write(args),
        }
    }
}

/// The fields of the first record of `line` (NULL for a field the options read as NULL);
/// `None` when the text holds no record.
fn record(line: &str, o: &CsvOptions) -> Option<Vec<Option<String>>> {
    let input = line.as_bytes();
    let fields = Tokenizer::new(input, o).next_record()?;
    Some(
        fields
            .iter()
            .map(|t| t.get(input).map(|c| c.into_owned()))
            .collect(),
    )
}

impl FromCsv {
    fn read(&self, args: &Args) -> Result<ArrayRef> {
        let input = args.full(0)?;
        let text = input.as_string::<i32>();
        let n = text.len();
        let read = &self.read;
        let mut columns: Vec<StringBuilder> = read
            .iter()
            .map(|_| StringBuilder::with_capacity(n, n * 8))
            .collect();
        let mut fields = Vec::new();
        for i in 0..n {
            fields.clear();
            let input = if text.is_valid(i) {
                text.value(i).as_bytes()
            } else {
                &[]
            };
            if !input.is_empty() {
                Tokenizer::new(input, &self.options).next_into(&mut fields);
            }
            for (k, b) in columns.iter_mut().enumerate() {
                b.append_option(fields.get(k).and_then(|f| f.get(input)));
            }
        }
        let mut bad = vec![false; n];
        let mut converted = Vec::with_capacity(self.fields.len());
        for (f, mut b) in read.iter().zip(columns) {
            let values = b.finish();
            let (c, c_bad) = convert_column(&values, f.data_type(), &self.options, &self.cfg)?;
            for (b, cb) in bad.iter_mut().zip(c_bad) {
                *b |= cb;
            }
            converted.push(c);
        }
        if self.options.mode == ParseMode::FailFast {
            if let Some(i) = bad.iter().position(|b| *b) {
                return Err(malformed_record(text.value(i)));
            }
        }
        if let Some(at) = self.corrupt {
            let corrupt: StringArray = (0..n)
                .map(|i| (bad[i] && text.is_valid(i)).then(|| text.value(i)))
                .collect();
            converted.insert(at, Arc::new(corrupt));
        }
        let valid: Vec<bool> = (0..n).map(|i| text.is_valid(i)).collect();
        Ok(Arc::new(StructArray::try_new_with_length(
            self.fields.clone(),
            converted,
            Some(NullBuffer::from(valid)),
            n,
        )?))
    }
}

impl ToCsv {
    fn write(&self, args: &Args) -> Result<ArrayRef> {
        let values = args.full(0)?;
        let s = values.as_struct();
        let batch = RecordBatch::try_new_with_options(
            Arc::new(Schema::new(s.fields().clone())),
            s.columns().to_vec(),
            &arrow_array::RecordBatchOptions::new().with_row_count(Some(s.len())),
        )?;
        let mut out = StringBuilder::with_capacity(s.len(), s.len() * 16);
        let mut row = 0;
        for_each_record(&batch, &self.options, &self.session_tz, |record| {
            if s.is_null(row) {
                out.append_null();
            } else {
                out.append_value(String::from_utf8_lossy(record));
            }
            row += 1;
        })?;
        Ok(Arc::new(out.finish()))
    }
}

fn csv_options(map: BTreeMap<String, String>) -> Result<CsvOptions> {
    let map: HashMap<String, String> = map.into_iter().collect();
    CsvOptions::from_map(&map)
}

/// Binds `from_csv`, `to_csv` and `schema_of_csv`; other names are not this family's.
pub(crate) fn bind(call: &Call<'_, '_>, args: Vec<PhysicalExpr>) -> Result<Bound> {
    match call.name {
        "from_csv" => bind_from_csv(call, args),
        "to_csv" => bind_to_csv(call, args),
        "schema_of_csv" => bind_schema_of_csv(call, args),
        _ => Ok(Bound::NotMine(args)),
    }
}

fn simple(t: &DataType) -> bool {
    !matches!(
        t,
        DataType::Struct(_) | DataType::List(_) | DataType::Map(..) | DataType::Binary
    )
}

fn bind_from_csv(call: &Call<'_, '_>, args: Vec<PhysicalExpr>) -> Result<Bound> {
    call.arity(&args, 2, 3)?;
    let options = options_of(call, args.get(2))?;
    let schema = match fold_argument(&args[1])? {
        Some(_) => foldable_text(call, &args[1], "schema")?,
        None => None,
    };
    let Some(schema) = schema else {
        return Err(FerroError::Analysis(format!(
            "[INVALID_SCHEMA.NON_STRING_LITERAL] The input schema \"{}\" is not a valid schema string. The input expression must be string literal and not null. SQLSTATE: 42K07",
            args[1]
        )));
    };
    let target = parse_schema_text(&schema, call.ctx.session_tz)?;
    let DataType::Struct(fields) = &target else {
        return Err(FerroError::Analysis(format!(
            "[INVALID_SCHEMA.NON_STRUCT_TYPE] The input schema \"{schema}\" is not a valid schema string. The input expression should be evaluated to struct type, but got \"{}\". SQLSTATE: 42K07",
            spark_type_name(&target)
        )));
    };
    if let Some(f) = fields.iter().find(|f| !simple(f.data_type())) {
        return Err(FerroError::Analysis(format!(
            "[UNSUPPORTED_DATATYPE] Unsupported data type \"{}\". SQLSTATE: 0A000",
            spark_type_name(f.data_type())
        )));
    }
    let csv = csv_options(options)?;
    if csv.mode == ParseMode::DropMalformed {
        return Err(drop_malformed_unsupported("from_csv"));
    }
    let (corrupt, read) = corrupt_field(fields, &csv.corrupt_column);
    let cfg = session_config(call)?;
    let text = call.string_arg(0, args.into_iter().next().expect("arity checked"))?;
    let f = FromCsv {
        options: csv,
        fields: fields.clone(),
        corrupt,
        read,
        cfg,
    };
    Ok(Bound::Done(call.function(
        ScalarFunction::CsvValue(CsvValueFn::FromCsv(Arc::new(f))),
        vec![text],
        target,
    )))
}

fn bind_to_csv(call: &Call<'_, '_>, args: Vec<PhysicalExpr>) -> Result<Bound> {
    call.arity(&args, 1, 2)?;
    let options = options_of(call, args.get(1))?;
    let t = crate::types::spark_equivalent(&args[0].data_type());
    if !matches!(t, DataType::Struct(_)) {
        return Err(FerroError::Analysis(format!(
            "[DATATYPE_MISMATCH.UNSUPPORTED_INPUT_TYPE] Cannot resolve \"{}\" due to data type mismatch: The input of `to_csv` can't be \"{}\" type data. SQLSTATE: 42K09",
            call.expr,
            spark_type_name(&t)
        )));
    }
    let f = ToCsv {
        options: CsvWriteOptions::parse(&options)?,
        session_tz: call.ctx.session_tz.to_string(),
    };
    let value = args.into_iter().next().expect("arity checked");
    Ok(Bound::Done(call.function(
        ScalarFunction::CsvValue(CsvValueFn::ToCsv(Arc::new(f))),
        vec![value],
        DataType::Utf8,
    )))
}

/// `schema_of_csv` of a constant: each field's inferred type, as DDL (`_c0`, `_c1`, ...).
fn bind_schema_of_csv(call: &Call<'_, '_>, args: Vec<PhysicalExpr>) -> Result<Bound> {
    call.arity(&args, 1, 2)?;
    let options = options_of(call, args.get(1))?;
    let o = csv_options(options)?;
    let Some(text) = foldable_text(call, &args[0], "csv")? else {
        return Err(FerroError::Analysis(format!(
            "[DATATYPE_MISMATCH.UNEXPECTED_NULL] Cannot resolve \"{}\" due to data type mismatch: The csv must not be null. SQLSTATE: 42K09",
            call.expr
        )));
    };
    let cfg = Config::from_pairs([("spark.sql.session.timeZone", call.ctx.session_tz)])?;
    let ddl = schema_of(&text, &o, &cfg)?;
    Ok(Bound::Done(PhysicalExpr::Literal(
        crate::expr::Literal::string(&ddl),
    )))
}

/// The DDL struct type Spark infers for the CSV record `text`.
pub fn schema_of(text: &str, o: &CsvOptions, cfg: &Config) -> Result<String> {
    let fields = record(text, o).unwrap_or_default();
    let mut out = Vec::with_capacity(fields.len());
    for (i, v) in fields.into_iter().enumerate() {
        let values = StringArray::from(vec![v]);
        let kind = infer_column(&values, o, cfg)?;
        let kind = if kind == Inferred::Null {
            Inferred::String
        } else {
            kind
        };
        out.push(Field::new(
            format!("_c{i}"),
            kind.data_type(cfg.session_time_zone()),
            true,
        ));
    }
    Ok(spark_type_name(&DataType::Struct(out.into())))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The expectations are PySpark 4.3's.
    #[test]
    fn inferred_records_print_as_spark_prints_them() {
        let o = CsvOptions::default();
        let cfg = Config::new();
        let s = |t: &str| schema_of(t, &o, &cfg).expect(t);
        assert_eq!(s("1,abc"), "STRUCT<_c0: INT, _c1: STRING>");
        assert_eq!(
            s("1.5,true,2020-01-01,2020-01-01 10:00:00,x,"),
            "STRUCT<_c0: DOUBLE, _c1: BOOLEAN, _c2: DATE, _c3: TIMESTAMP, _c4: STRING, _c5: STRING>"
        );
        assert_eq!(
            s("12345678901,1e10,\"q,r\""),
            "STRUCT<_c0: BIGINT, _c1: DOUBLE, _c2: STRING>"
        );
    }
}
