//! Moving timestamps between time zones: `from_utc_timestamp`, `to_utc_timestamp` and
//! `convert_timezone`, as Spark's `DateTimeUtils.convertTz` does it (the wall-clock time read
//! in one zone and taken as the same wall-clock time in another; a time in a daylight-saving
//! gap moves forward by the gap, an ambiguous one takes the earlier offset), plus `dayname`
//! and `monthname`.

use std::sync::Arc;

use arrow_array::timezone::Tz;
use arrow_array::types::TimestampMicrosecondType;
use arrow_array::{ArrayRef, PrimitiveArray};
use arrow_schema::DataType;
use ferrospark_common::{FerroError, Result};

use super::datetime::{date_arg, from_local, local, timestamp_arg, timestamp_type, DateFn};
use super::{Args, Bound, Call, ScalarFunction};
use crate::bind::cast_to;
use crate::expr::Literal;
use crate::physical::PhysicalExpr;

/// The zone functions.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ZoneFn {
    /// `from_utc_timestamp(ts, zone)`: the UTC wall-clock time of `ts` taken in `zone`,
    /// typed in the session zone `tz`
    FromUtc {
        /// session zone
        tz: String,
    },
    /// `to_utc_timestamp(ts, zone)`: the wall-clock time of `ts` in `zone` taken in UTC
    ToUtc {
        /// session zone
        tz: String,
    },
    /// `convert_timezone([source,] target, ts)` of a TIMESTAMP_NTZ: the wall-clock time in
    /// `source` (the session zone when absent) shown in `target`
    Convert,
}

impl ZoneFn {
    /// Spark's name.
    pub fn name(&self) -> &'static str {
        match self {
            ZoneFn::FromUtc { .. } => "from_utc_timestamp",
            ZoneFn::ToUtc { .. } => "to_utc_timestamp",
            ZoneFn::Convert => "convert_timezone",
        }
    }

    pub(crate) fn evaluate(&self, args: &Args) -> Result<ArrayRef> {
        let n = args.rows();
        match self {
            ZoneFn::FromUtc { tz } | ZoneFn::ToUtc { tz } => {
                let ts = args.prim::<TimestampMicrosecondType>(0)?;
                let zones = args.str(1)?;
                let mut cache = super::LastCompiled::new(parse_zone);
                let utc = utc()?;
                let mut out = Vec::with_capacity(n);
                for i in 0..n {
                    let (Some(us), Some(name)) = (ts.get(i), zones.get(i)) else {
                        out.push(None);
                        continue;
                    };
                    let zone = *cache.get(name)?;
                    out.push(match self {
                        ZoneFn::FromUtc { .. } => convert(us, &utc, &zone),
                        _ => convert(us, &zone, &utc),
                    });
                }
                let a = PrimitiveArray::<TimestampMicrosecondType>::from(out)
                    .with_timezone(tz.as_str());
                Ok(Arc::new(a))
            }
            ZoneFn::Convert => {
                let (from, to) = (args.str(0)?, args.str(1)?);
                let ts = args.prim::<TimestampMicrosecondType>(2)?;
                let mut from_cache = super::LastCompiled::new(parse_zone);
                let mut to_cache = super::LastCompiled::new(parse_zone);
                let utc = utc()?;
                let mut out = Vec::with_capacity(n);
                for i in 0..n {
                    let (Some(f), Some(t), Some(us)) = (from.get(i), to.get(i), ts.get(i)) else {
                        out.push(None);
                        continue;
                    };
                    let (f, t) = (*from_cache.get(f)?, *to_cache.get(t)?);
                    // The NTZ value is a wall-clock time in `f`: its instant, seen in `t`.
                    let instant = from_local(&local(us, &utc).unwrap_or_default(), &f);
                    out.push(
                        instant
                            .and_then(|x| local(x, &t))
                            .map(|l| l.and_utc().timestamp_micros()),
                    );
                }
                Ok(Arc::new(PrimitiveArray::<TimestampMicrosecondType>::from(
                    out,
                )))
            }
        }
    }
}

fn utc() -> Result<Tz> {
    super::datetime::zone("UTC")
}

/// `convertTz(us, from, to)`: the wall-clock time of `us` in `to`, as an instant in `from`.
fn convert(us: i64, from: &Tz, to: &Tz) -> Option<i64> {
    from_local(&local(us, to)?, from)
}

/// A zone as Spark's `getZoneId` reads it: region ids, `UTC` / `GMT` / `Z`, fixed offsets.
fn parse_zone(name: &str) -> Result<Tz> {
    let id = crate::timestamp_text::spark_zone_id(name).unwrap_or_else(|| name.to_string());
    id.parse::<Tz>().map_err(|_| {
        FerroError::Arithmetic(format!(
            "[INVALID_TIMEZONE] The timezone: {name} is invalid. The timezone must be either a region-based zone ID or a zone offset. Region IDs must have the form 'area/city', such as 'America/Los_Angeles'. Zone offsets must be in the format '(+|-)HH', '(+|-)HH:mm’ or '(+|-)HH:mm:ss', e.g '-08', '+01:00' or '-13:33:33', and must be in the range from -18:00 to +18:00. 'Z' and 'UTC' are accepted as synonyms for '+00:00'. SQLSTATE: 22009"
        ))
    })
}

/// Binds this family's calls; other names are returned.
pub(crate) fn bind(call: &Call<'_, '_>, args: Vec<PhysicalExpr>) -> Result<Bound> {
    let tz = call.ctx.session_tz.to_string();
    Ok(Bound::Done(match call.name {
        "from_utc_timestamp" | "to_utc_timestamp" => {
            call.arity(&args, 2, 2)?;
            let ts = timestamp_arg(call, 0, args[0].clone())?;
            let zone = call.string_arg(1, args[1].clone())?;
            let f = if call.name == "from_utc_timestamp" {
                ZoneFn::FromUtc { tz: tz.clone() }
            } else {
                ZoneFn::ToUtc { tz: tz.clone() }
            };
            call.function(ScalarFunction::Zone(f), vec![ts, zone], timestamp_type(&tz))
        }
        "convert_timezone" => {
            call.arity(&args, 2, 3)?;
            let (from, to, ts) = if args.len() == 3 {
                (
                    call.string_arg(0, args[0].clone())?,
                    call.string_arg(1, args[1].clone())?,
                    args[2].clone(),
                )
            } else {
                (
                    PhysicalExpr::Literal(Literal::string(&tz)),
                    call.string_arg(0, args[0].clone())?,
                    args[1].clone(),
                )
            };
            // The value is read as a TIMESTAMP_NTZ (a TIMESTAMP as its session wall clock).
            let ntz = DataType::Timestamp(arrow_schema::TimeUnit::Microsecond, None);
            let ts = crate::bind::cast_in(ts, &ntz, call.ctx);
            call.function(
                ScalarFunction::Zone(ZoneFn::Convert),
                vec![from, to, ts],
                ntz,
            )
        }
        "dayname" | "monthname" => {
            call.arity(&args, 1, 1)?;
            let d = date_arg(call, 0, args[0].clone())?;
            let ts = cast_to(d, &timestamp_type(&tz));
            let fmt = if call.name == "dayname" { "EEE" } else { "MMM" };
            call.function(
                ScalarFunction::Date(DateFn::DateFormat { tz }),
                vec![ts, PhysicalExpr::Literal(Literal::string(fmt))],
                DataType::Utf8,
            )
        }
        _ => return Ok(Bound::NotMine(args)),
    }))
}
