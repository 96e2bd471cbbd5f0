//! Spark's catalog type strings (`int`, `decimal(10,2)`, `array<string>`,
//! `struct<a:int,b:string>`), as `DESCRIBE` prints them and the metastore's `COLUMNS_V2` keeps
//! them.

use arrow_schema::DataType;

/// The catalog string of an Arrow type as Spark names it (one implementation, beside the
/// other type names in `ferrospark-expr`; `typeof` prints it too).
pub use ferrospark_expr::types::catalog_string;

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
