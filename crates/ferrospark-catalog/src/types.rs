//! Spark's catalog type strings (`int`, `decimal(10,2)`, `array<string>`,
//! `struct<a:int,b:string>`), as `DESCRIBE` prints them and the metastore's `COLUMNS_V2` keeps
//! them.

use arrow_schema::DataType;

/// The catalog string of an Arrow type as Spark names it.
pub fn catalog_string(dt: &DataType) -> String {
    match dt {
        DataType::Null => "void".into(),
        DataType::Boolean => "boolean".into(),
        DataType::Int8 => "tinyint".into(),
        DataType::Int16 | DataType::UInt8 => "smallint".into(),
        DataType::Int32 | DataType::UInt16 => "int".into(),
        DataType::Int64 | DataType::UInt32 => "bigint".into(),
        DataType::UInt64 => "decimal(20,0)".into(),
        DataType::Float16 | DataType::Float32 => "float".into(),
        DataType::Float64 => "double".into(),
        DataType::Decimal32(p, s)
        | DataType::Decimal64(p, s)
        | DataType::Decimal128(p, s)
        | DataType::Decimal256(p, s) => format!("decimal({p},{s})"),
        DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View => "string".into(),
        DataType::Binary
        | DataType::LargeBinary
        | DataType::BinaryView
        | DataType::FixedSizeBinary(_) => "binary".into(),
        DataType::Date32 | DataType::Date64 => "date".into(),
        DataType::Timestamp(_, Some(_)) => "timestamp".into(),
        DataType::Timestamp(_, None) => "timestamp_ntz".into(),
        DataType::Duration(_) => "interval day to second".into(),
        DataType::List(f) | DataType::LargeList(f) | DataType::FixedSizeList(f, _) => {
            format!("array<{}>", catalog_string(f.data_type()))
        }
        DataType::Struct(fields) => {
            let inner: Vec<String> = fields
                .iter()
                .map(|f| format!("{}:{}", f.name(), catalog_string(f.data_type())))
                .collect();
            format!("struct<{}>", inner.join(","))
        }
        DataType::Map(f, _) => match f.data_type() {
            DataType::Struct(kv) if kv.len() == 2 => format!(
                "map<{},{}>",
                catalog_string(kv[0].data_type()),
                catalog_string(kv[1].data_type())
            ),
            _ => "map".into(),
        },
        DataType::Dictionary(_, v) => catalog_string(v),
        other => other.to_string().to_lowercase(),
    }
}

/// The type as `SHOW CREATE TABLE` writes it (`INT`, `STRING COLLATE UTF8_BINARY`).
pub fn ddl_string(dt: &DataType) -> String {
    match dt {
        DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View => {
            "STRING COLLATE UTF8_BINARY".into()
        }
        DataType::List(f) | DataType::LargeList(f) => {
            format!("ARRAY<{}>", ddl_string(f.data_type()))
        }
        DataType::Struct(fields) => {
            let inner: Vec<String> = fields
                .iter()
                .map(|f| format!("{}: {}", f.name(), ddl_string(f.data_type())))
                .collect();
            format!("STRUCT<{}>", inner.join(", "))
        }
        other => catalog_string(other).to_uppercase(),
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use arrow_schema::{Field, Fields, TimeUnit};

    use super::*;

    #[test]
    fn catalog_strings_are_spark_simple_strings() {
        let st = DataType::Struct(Fields::from(vec![
            Field::new("a", DataType::Int32, true),
            Field::new("b", DataType::Utf8, true),
        ]));
        for (dt, want) in [
            (DataType::Int32, "int"),
            (DataType::Decimal128(10, 2), "decimal(10,2)"),
            (
                DataType::Timestamp(TimeUnit::Microsecond, Some("UTC".into())),
                "timestamp",
            ),
            (
                DataType::List(Arc::new(Field::new("e", DataType::Utf8, true))),
                "array<string>",
            ),
            (st, "struct<a:int,b:string>"),
        ] {
            assert_eq!(catalog_string(&dt), want);
        }
        assert_eq!(ddl_string(&DataType::Utf8), "STRING COLLATE UTF8_BINARY");
    }
}
