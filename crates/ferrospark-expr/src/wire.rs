//! Expressions on the wire: a [`Literal`] travels as the Arrow IPC stream of its one-element
//! array, so its type and value arrive exactly (a decimal's precision, a timestamp's zone, a
//! NaN's bits), which no text form guarantees.

use std::io::Cursor;
use std::sync::Arc;

use arrow_array::{RecordBatch, RecordBatchOptions};
use arrow_ipc::reader::StreamReader;
use arrow_ipc::writer::StreamWriter;
use arrow_schema::{ArrowError, Field, Schema, SchemaRef};
use serde::de::Error as _;
use serde::ser::Error as _;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::Literal;

/// `batches` (of `schema`) as one Arrow IPC stream.
pub fn batches_to_ipc(schema: &SchemaRef, batches: &[RecordBatch]) -> Result<Vec<u8>, ArrowError> {
    let mut out = Vec::new();
    let mut w = StreamWriter::try_new(&mut out, schema)?;
    for b in batches {
        w.write(b)?;
    }
    w.finish()?;
    drop(w);
    Ok(out)
}

/// The schema and batches of an Arrow IPC stream.
pub fn ipc_to_batches(bytes: &[u8]) -> Result<(SchemaRef, Vec<RecordBatch>), ArrowError> {
    let reader = StreamReader::try_new(Cursor::new(bytes), None)?;
    let schema = reader.schema();
    let batches = reader.collect::<Result<Vec<_>, _>>()?;
    Ok((schema, batches))
}

/// Lower-case hex of `bytes` (JSON carries it as one compact string).
pub fn to_hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut s = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        s.push(DIGITS[(b >> 4) as usize] as char);
        s.push(DIGITS[(b & 15) as usize] as char);
    }
    s
}

/// The bytes of lower-case or upper-case hex text.
pub fn from_hex(text: &str) -> Result<Vec<u8>, String> {
    let digit = |c: u8| -> Result<u8, String> {
        match c {
            b'0'..=b'9' => Ok(c - b'0'),
            b'a'..=b'f' => Ok(c - b'a' + 10),
            b'A'..=b'F' => Ok(c - b'A' + 10),
            _ => Err(format!("not a hex digit: {:?}", c as char)),
        }
    };
    let b = text.as_bytes();
    if !b.len().is_multiple_of(2) {
        return Err("odd number of hex digits".into());
    }
    b.chunks(2)
        .map(|p| Ok((digit(p[0])? << 4) | digit(p[1])?))
        .collect()
}

impl Serialize for Literal {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let array = self.array().clone();
        let schema = Arc::new(Schema::new(vec![Field::new(
            "v",
            array.data_type().clone(),
            true,
        )]));
        let batch = RecordBatch::try_new_with_options(
            schema.clone(),
            vec![array],
            &RecordBatchOptions::new().with_row_count(Some(1)),
        )
        .map_err(S::Error::custom)?;
        let bytes = batches_to_ipc(&schema, &[batch]).map_err(S::Error::custom)?;
        s.serialize_str(&to_hex(&bytes))
    }
}

impl<'de> Deserialize<'de> for Literal {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = String::deserialize(d)?;
        let bytes = from_hex(&text).map_err(D::Error::custom)?;
        let (_, batches) = ipc_to_batches(&bytes).map_err(D::Error::custom)?;
        match batches.first() {
            Some(b) if b.num_columns() == 1 && b.num_rows() == 1 => {
                Ok(Literal::new(b.column(0).clone()))
            }
            _ => Err(D::Error::custom("a literal is one value")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Expr;

    #[test]
    fn literals_round_trip_exactly() {
        let exprs = vec![
            Expr::lit(Literal::integer(3)),
            Expr::lit(Literal::bigint(i64::MIN)),
            Expr::lit(Literal::null(&arrow_schema::DataType::Decimal128(15, 2))),
            Expr::lit(Literal::new(Arc::new(arrow_array::Float64Array::from(
                vec![-0.0f64],
            )))),
            Expr::lit(Literal::new(Arc::new(arrow_array::StringArray::from(
                vec!["héllo\u{1F600}"],
            )))),
            Expr::col("a#1").and(Expr::col("b#2").lt(Expr::lit(Literal::integer(5)))),
        ];
        for e in exprs {
            let text = serde_json_like(&e);
            assert!(!text.is_empty());
        }
    }

    /// A serializer-agnostic check: hex round trip of the literal's bytes.
    fn serde_json_like(e: &Expr) -> String {
        let mut out = String::new();
        e.visit(&mut |n| {
            if let Expr::Literal(l) = n {
                let schema = Arc::new(Schema::new(vec![Field::new(
                    "v",
                    l.array().data_type().clone(),
                    true,
                )]));
                let batch =
                    RecordBatch::try_new(schema.clone(), vec![l.array().clone()]).expect("batch");
                let bytes = batches_to_ipc(&schema, &[batch]).expect("ipc");
                let back = from_hex(&to_hex(&bytes)).expect("hex");
                assert_eq!(back, bytes);
                let (_, b) = ipc_to_batches(&back).expect("read");
                assert_eq!(b[0].column(0).as_ref(), l.array().as_ref());
                out.push_str(&to_hex(&bytes));
            }
        });
        out.push('.');
        out
    }
}
