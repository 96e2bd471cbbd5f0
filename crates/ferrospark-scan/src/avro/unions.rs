//! Avro unions of several types in Spark's shape (Spark's `SchemaConverters`).
//!
//! `arrow-avro` decodes a union other than `[null, T]` to an Arrow dense union, null branch
//! included. Spark has no union type; it reads one as:
//!
//! - `[int, long]` (and `null`) as a BIGINT, `[float, double]` as a DOUBLE;
//! - one type and `null` as that type;
//! - anything else as a struct of `member0`, `member1`, ... (one per branch other than
//!   `null`, in the schema's order), of which the row's branch alone is set; the struct is
//!   NULL where the value is `null`.

use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::{new_null_array, Array, ArrayRef, ListArray, MapArray, StructArray, UnionArray};
use arrow_buffer::NullBuffer;
use arrow_schema::{DataType, Field, Fields, UnionFields};
use ferrospark_common::{FerroError, Result};

/// The union's branches other than `null`: `(type id, field)` in the schema's order.
fn branches(fields: &UnionFields) -> Vec<(i8, Arc<Field>)> {
    fields
        .iter()
        .filter(|(_, f)| f.data_type() != &DataType::Null)
        .map(|(id, f)| (id, f.clone()))
        .collect()
}

/// Spark's type for a union of `fields` (`spark_type` gives each branch's).
pub(super) fn union_type(
    fields: &UnionFields,
    spark_type: impl Fn(&DataType) -> Result<DataType>,
) -> Result<DataType> {
    let b = branches(fields);
    let types: Vec<&DataType> = b.iter().map(|(_, f)| f.data_type()).collect();
    Ok(match types.as_slice() {
        [t] => spark_type(t)?,
        [DataType::Int32, DataType::Int64] | [DataType::Int64, DataType::Int32] => DataType::Int64,
        [DataType::Float32, DataType::Float64] | [DataType::Float64, DataType::Float32] => {
            DataType::Float64
        }
        _ => DataType::Struct(
            b.iter()
                .enumerate()
                .map(|(i, (_, f))| {
                    Ok(Field::new(
                        format!("member{i}"),
                        spark_type(f.data_type())?,
                        true,
                    ))
                })
                .collect::<Result<Vec<_>>>()?
                .into(),
        ),
    })
}

/// Whether `t` holds a union anywhere.
pub(super) fn has_union(t: &DataType) -> bool {
    match t {
        DataType::Union(..) => true,
        DataType::Struct(fs) => fs.iter().any(|f| has_union(f.data_type())),
        DataType::List(f) | DataType::LargeList(f) | DataType::Map(f, _) => {
            has_union(f.data_type())
        }
        _ => false,
    }
}

/// `a` as Spark's type `to`: unions reshaped (see the module docs), anything else cast.
pub(super) fn to_spark(a: &ArrayRef, to: &DataType) -> Result<ArrayRef> {
    if !has_union(a.data_type()) {
        return Ok(arrow_cast::cast(a.as_ref(), to)?);
    }
    let unexpected = || {
        FerroError::Internal(format!(
            "Avro values of type {} read as {to}",
            a.data_type()
        ))
    };
    Ok(match to {
        _ if matches!(a.data_type(), DataType::Union(..)) => {
            union_to_spark(a.as_union_opt().ok_or_else(unexpected)?, to)?
        }
        DataType::Struct(fields) => Arc::new(struct_to_spark(
            a.as_struct_opt().ok_or_else(unexpected)?,
            fields,
        )?),
        DataType::List(item) => {
            let l = a.as_list_opt::<i32>().ok_or_else(unexpected)?;
            Arc::new(ListArray::try_new(
                item.clone(),
                l.offsets().clone(),
                to_spark(l.values(), item.data_type())?,
                l.nulls().cloned(),
            )?)
        }
        DataType::Map(entries, sorted) => {
            let m = a.as_map_opt().ok_or_else(unexpected)?;
            let DataType::Struct(kv) = entries.data_type() else {
                return Err(unexpected());
            };
            Arc::new(MapArray::try_new(
                entries.clone(),
                m.offsets().clone(),
                struct_to_spark(m.entries(), kv)?,
                m.nulls().cloned(),
                *sorted,
            )?)
        }
        _ => return Err(unexpected()),
    })
}

/// A struct array with each child as Spark's type of `fields`.
fn struct_to_spark(s: &StructArray, fields: &Fields) -> Result<StructArray> {
    let columns = s
        .columns()
        .iter()
        .zip(fields.iter())
        .map(|(c, f)| to_spark(c, f.data_type()))
        .collect::<Result<Vec<_>>>()?;
    Ok(StructArray::try_new(
        fields.clone(),
        columns,
        s.nulls().cloned(),
    )?)
}

/// A union array in Spark's shape `to`.
fn union_to_spark(u: &UnionArray, to: &DataType) -> Result<ArrayRef> {
    let DataType::Union(fields, _) = u.data_type() else {
        return Err(FerroError::Internal("a union array".into()));
    };
    let b = branches(fields);
    let n = u.len();
    match to {
        DataType::Struct(members) if members.len() == b.len() && b.len() > 1 => {
            let columns = members
                .iter()
                .enumerate()
                .map(|(i, m)| member(u, &b, i, m.data_type(), n))
                .collect::<Result<Vec<_>>>()?;
            let valid: NullBuffer = (0..n)
                .map(|r| b.iter().any(|(id, _)| *id == u.type_id(r)))
                .collect();
            let nulls = (valid.null_count() > 0).then_some(valid);
            Ok(Arc::new(StructArray::try_new(
                members.clone(),
                columns,
                nulls,
            )?))
        }
        // One value type (`[int, long]`, `[float, double]`, one type and `null`): each
        // branch's values as it, one pick per row; a `null` row picks the NULL at the end.
        _ => {
            let mut sources = b
                .iter()
                .map(|(id, _)| to_spark(u.child(*id), to))
                .collect::<Result<Vec<_>>>()?;
            sources.push(new_null_array(to, 1));
            let index: Vec<(usize, usize)> = (0..n)
                .map(|r| match b.iter().position(|(id, _)| *id == u.type_id(r)) {
                    Some(i) => (i, u.value_offset(r)),
                    None => (b.len(), 0),
                })
                .collect();
            let refs: Vec<&dyn Array> = sources.iter().map(|s| s.as_ref()).collect();
            Ok(arrow_select::interleave::interleave(&refs, &index)?)
        }
    }
}

/// Member `i` of a union read as a struct: branch `i`'s values where it is the row's
/// branch, NULL elsewhere.
fn member(
    u: &UnionArray,
    b: &[(i8, Arc<Field>)],
    i: usize,
    t: &DataType,
    n: usize,
) -> Result<ArrayRef> {
    let (id, _) = &b[i];
    let values = to_spark(u.child(*id), t)?;
    let sources = [values, new_null_array(t, 1)];
    let index: Vec<(usize, usize)> = (0..n)
        .map(|r| {
            if u.type_id(r) == *id {
                (0, u.value_offset(r))
            } else {
                (1, 0)
            }
        })
        .collect();
    let refs: Vec<&dyn Array> = sources.iter().map(|s| s.as_ref()).collect();
    Ok(arrow_select::interleave::interleave(&refs, &index)?)
}
