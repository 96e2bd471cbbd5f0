//! The event-time watermark of a streaming query, as Spark's `WatermarkTracker` keeps it:
//! each input's watermark is the largest event time it has seen minus its delay (never
//! going back), and the query's is their minimum (or maximum, by
//! `spark.sql.streaming.multipleWatermarkPolicy`), never going back either.
//!
//! ```text
//!  batch N: rows ──▶ each input's max event time ──▶ advance() ──▶ watermark used by N + 1
//! ```
//! Times are milliseconds since the epoch, as Spark's watermark is (an event time in
//! microseconds counts by its whole milliseconds). An input that has seen no row yet counts
//! as 0, as in Spark. The watermark a batch runs under is stored with the batch
//! ([`WatermarkTracker::save`]) so a restarted query resumes from it.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use arrow_array::{Array, ArrayRef, TimestampMicrosecondArray};
use arrow_schema::{DataType, TimeUnit};
use ferrospark_common::{Config, FerroError, Result};

/// Spark's key choosing how several inputs' watermarks combine.
pub const MULTIPLE_WATERMARK_POLICY: &str = "spark.sql.streaming.multipleWatermarkPolicy";

/// How the inputs' watermarks make the query's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WatermarkPolicy {
    /// The slowest input's (Spark's default): no input's rows are taken for late too early.
    Min,
    /// The fastest input's: state goes sooner, the slower inputs' rows may be dropped as late.
    Max,
}

impl WatermarkPolicy {
    /// The policy `cfg` sets (`min` by default); another value is a `ConfigError`.
    pub fn from_config(cfg: &Config) -> Result<Self> {
        match cfg
            .get(MULTIPLE_WATERMARK_POLICY)
            .map(|v| v.trim().to_ascii_lowercase())
        {
            None => Ok(WatermarkPolicy::Min),
            Some(v) if v == "min" => Ok(WatermarkPolicy::Min),
            Some(v) if v == "max" => Ok(WatermarkPolicy::Max),
            Some(v) => Err(FerroError::Config(format!(
                "{MULTIPLE_WATERMARK_POLICY} is '{v}': use 'min' (the default) or 'max'"
            ))),
        }
    }
}

/// The watermarks of a query's inputs and the query's own.
#[derive(Debug, Clone, PartialEq)]
pub struct WatermarkTracker {
    policy: WatermarkPolicy,
    /// Each input's delay (ms).
    delays: Vec<i64>,
    /// Each input's watermark so far (`None` before its first row).
    inputs: Vec<Option<i64>>,
    /// Each input's largest event time (ms) in the batch being run.
    seen: Vec<Option<i64>>,
    /// The query's watermark (ms).
    global: i64,
}

impl WatermarkTracker {
    /// A tracker of inputs with these delays (ms).
    pub fn new(delays_ms: Vec<i64>, policy: WatermarkPolicy) -> Self {
        let n = delays_ms.len();
        Self {
            policy,
            delays: delays_ms,
            inputs: vec![None; n],
            seen: vec![None; n],
            global: 0,
        }
    }

    /// The watermark the current batch runs under (ms).
    pub fn current(&self) -> i64 {
        self.global
    }

    /// Notes that input `input` saw a row at `event_time_micros`.
    pub fn observe(&mut self, input: usize, event_time_micros: i64) {
        // Spark's EventTimeStats take the time in whole milliseconds (toward zero).
        let ms = event_time_micros / 1000;
        if let Some(s) = self.seen.get_mut(input) {
            *s = Some(s.map_or(ms, |m| m.max(ms)));
        }
    }

    /// Ends the batch: each input's watermark moves up to its largest time seen minus its
    /// delay, and the query's to the policy's choice among them (never back). Returns the
    /// watermark of the next batch.
    pub fn advance(&mut self) -> i64 {
        for i in 0..self.inputs.len() {
            match self.seen[i].take() {
                Some(max) => {
                    let candidate = max.saturating_sub(self.delays[i]);
                    if self.inputs[i].is_none_or(|w| candidate > w) {
                        self.inputs[i] = Some(candidate);
                    }
                }
                None => {
                    if self.inputs[i].is_none() {
                        self.inputs[i] = Some(0);
                    }
                }
            }
        }
        let values = self.inputs.iter().flatten().copied();
        let chosen = match self.policy {
            WatermarkPolicy::Min => values.min(),
            WatermarkPolicy::Max => values.max(),
        };
        if let Some(c) = chosen.filter(|&c| c > self.global) {
            self.global = c;
        }
        self.global
    }

    /// Writes the watermarks as of batch `batch_id` to `dir/<batch_id>`, whole or not at all.
    pub fn save(&self, dir: &Path, batch_id: u64) -> Result<()> {
        std::fs::create_dir_all(dir).map_err(|e| FerroError::io(dir, e))?;
        let text = serde_line(self.global, &self.inputs);
        ferrospark_common::atomic_file::write_atomic(
            &dir.join(batch_id.to_string()),
            text.as_bytes(),
        )
    }

    /// The watermarks saved for batch `batch_id` in `dir`.
    pub fn load(&mut self, dir: &Path, batch_id: u64) -> Result<()> {
        let path = dir.join(batch_id.to_string());
        let text = std::fs::read_to_string(&path).map_err(|e| FerroError::io(&path, e))?;
        let bad = || {
            crate::state::state_error(
                &path,
                "not a watermark file ferrospark wrote: restore the checkpoint or start anew",
            )
        };
        let mut parts = text.trim().split(',');
        let global = parts
            .next()
            .and_then(|g| g.parse::<i64>().ok())
            .ok_or_else(bad)?;
        let inputs: Vec<Option<i64>> = parts
            .map(|p| match p {
                "-" => Ok(None),
                v => v.parse::<i64>().map(Some).map_err(|_| bad()),
            })
            .collect::<Result<_>>()?;
        if inputs.len() != self.inputs.len() {
            return Err(crate::state::state_error(
                &path,
                format!(
                    "the checkpoint's watermark is over {} watermarked inputs, this query has {}: \
                     keep the inputs' watermarks as they were, or start a new checkpoint",
                    inputs.len(),
                    self.inputs.len()
                ),
            ));
        }
        self.global = global;
        self.inputs = inputs;
        self.seen = vec![None; self.inputs.len()];
        Ok(())
    }
}

/// The timestamps of `a` in microseconds since the epoch (UTC), whatever time zone labels
/// them: only the unit is converted, never the instant.
pub fn micros(a: &ArrayRef) -> Result<TimestampMicrosecondArray> {
    let tz = match a.data_type() {
        DataType::Timestamp(_, tz) => tz.clone(),
        _ => None,
    };
    let t = arrow_cast::cast(a, &DataType::Timestamp(TimeUnit::Microsecond, tz))?;
    t.as_any()
        .downcast_ref::<TimestampMicrosecondArray>()
        .map(|t| t.clone().with_timezone_opt(None::<Arc<str>>))
        .ok_or_else(|| FerroError::Internal("an event time that is not a timestamp".into()))
}

/// How many batches' watermarks stay saved (a batch re-runs only the last one, which
/// needs its own and the one before; the rest is room for inspection).
pub const WATERMARKS_KEPT: u64 = 100;

/// The two watermarks a stateful operator's batch runs under (ms).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BatchWatermark {
    /// State at or below it goes (the watermark computed at the end of the previous batch).
    pub eviction: i64,
    /// Input at or below it is late and dropped: the previous batch's eviction watermark,
    /// as Spark's watermark propagation gives its first stateful operator.
    pub late: i64,
}

/// A stateful operator's watermarks across its micro-batches, each batch's saved under
/// `dir/<batch>` so a restart or a re-run resumes from it.
#[derive(Debug, Clone)]
pub struct BatchWatermarks {
    tracker: WatermarkTracker,
    delays: Vec<i64>,
    policy: WatermarkPolicy,
    dir: PathBuf,
}

impl BatchWatermarks {
    /// The watermarks of inputs with these delays (ms), kept in `dir`.
    pub fn new(dir: PathBuf, delays_ms: Vec<i64>, policy: WatermarkPolicy) -> Self {
        Self {
            tracker: WatermarkTracker::new(delays_ms.clone(), policy),
            delays: delays_ms,
            policy,
            dir,
        }
    }

    fn saved(&self, batch_id: u64) -> Result<i64> {
        if batch_id == 0 {
            return Ok(0);
        }
        let mut t = WatermarkTracker::new(self.delays.clone(), self.policy);
        t.load(&self.dir, batch_id)?;
        Ok(t.current())
    }

    /// Starts batch `batch_id`: its watermarks (`None` when no input has one).
    pub fn begin(&mut self, batch_id: u64) -> Result<Option<BatchWatermark>> {
        if batch_id > 0 {
            self.tracker.load(&self.dir, batch_id)?;
        } else {
            self.tracker = WatermarkTracker::new(self.delays.clone(), self.policy);
        }
        if self.delays.is_empty() {
            return Ok(None);
        }
        Ok(Some(BatchWatermark {
            eviction: self.tracker.current(),
            late: self.saved(batch_id.saturating_sub(1))?,
        }))
    }

    /// Notes input `input`'s event times in this batch (NULLs ignored).
    pub fn observe(&mut self, input: usize, times: &ArrayRef) -> Result<()> {
        if let Some(max) = arrow_arith::aggregate::max(&micros(times)?) {
            self.tracker.observe(input, max);
        }
        Ok(())
    }

    /// Notes that input `input` saw an event at `event_time_micros` in this batch.
    pub fn observe_micros(&mut self, input: usize, event_time_micros: i64) {
        self.tracker.observe(input, event_time_micros);
    }

    /// Ends batch `batch_id`: the next batch's watermark is computed and saved; the
    /// watermarks of batches more than [`WATERMARKS_KEPT`] before it are removed.
    pub fn end(&mut self, batch_id: u64) -> Result<()> {
        self.tracker.advance();
        self.tracker.save(&self.dir, batch_id + 1)?;
        if let Some(old) = (batch_id + 1).checked_sub(WATERMARKS_KEPT) {
            let _ = std::fs::remove_file(self.dir.join(old.to_string()));
        }
        Ok(())
    }
}

fn serde_line(global: i64, inputs: &[Option<i64>]) -> String {
    let mut s = global.to_string();
    for i in inputs {
        s.push(',');
        match i {
            Some(v) => s.push_str(&v.to_string()),
            None => s.push('-'),
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    const MIN: i64 = 60_000;

    #[test]
    fn event_times_are_instants_whatever_zone_labels_them() {
        use arrow_array::TimestampMillisecondArray;
        let utc = 1_709_350_152_873_619_i64;
        for tz in [
            None,
            Some("UTC"),
            Some("America/Los_Angeles"),
            Some("+05:30"),
        ] {
            let a: ArrayRef = Arc::new(
                TimestampMicrosecondArray::from(vec![Some(utc), None]).with_timezone_opt(tz),
            );
            let m = micros(&a).expect("micros");
            assert_eq!((m.value(0), m.is_null(1)), (utc, true), "{tz:?}");
            let ms: ArrayRef =
                Arc::new(TimestampMillisecondArray::from(vec![utc / 1000]).with_timezone_opt(tz));
            assert_eq!(
                micros(&ms).expect("micros").value(0),
                utc / 1000 * 1000,
                "{tz:?}"
            );
        }
    }

    #[test]
    fn the_slowest_input_holds_the_watermark_back() {
        let mut t = WatermarkTracker::new(vec![10 * MIN, 5 * MIN], WatermarkPolicy::Min);
        assert_eq!(t.current(), 0);
        // Only the left input has rows: the right one counts as 0.
        t.observe(0, 30 * MIN * 1000);
        assert_eq!(t.advance(), 0);
        t.observe(1, 12 * MIN * 1000 + 999);
        t.observe(1, 11 * MIN * 1000);
        assert_eq!(
            t.advance(),
            7 * MIN,
            "12:00 and 999 microseconds counts as 12:00"
        );
        // An input's watermark never goes back, nor does the query's.
        t.observe(0, MIN * 1000);
        t.observe(1, MIN * 1000);
        assert_eq!(t.advance(), 7 * MIN);
        let mut max = WatermarkTracker::new(vec![10 * MIN, 5 * MIN], WatermarkPolicy::Max);
        max.observe(0, 30 * MIN * 1000);
        assert_eq!(max.advance(), 20 * MIN);
    }

    #[test]
    fn watermarks_survive_a_restart() {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut t = WatermarkTracker::new(vec![MIN, MIN], WatermarkPolicy::Min);
        t.observe(0, 5 * MIN * 1000);
        t.advance();
        t.save(dir.path(), 3).expect("save");
        let mut again = WatermarkTracker::new(vec![MIN, MIN], WatermarkPolicy::Min);
        again.load(dir.path(), 3).expect("load");
        assert_eq!(again, t);
        std::fs::write(dir.path().join("4"), "x,1").expect("write");
        assert!(matches!(
            again.load(dir.path(), 4),
            Err(FerroError::StateStore { .. })
        ));
        // A query that watermarks one input more than its checkpoint did.
        let mut three = WatermarkTracker::new(vec![MIN, MIN, MIN], WatermarkPolicy::Min);
        let err = three.load(dir.path(), 3).expect_err("refused").to_string();
        assert!(
            err.contains("over 2 watermarked inputs, this query has 3"),
            "{err}"
        );
    }

    #[test]
    fn the_policy_follows_sparks_key() {
        let mut cfg = Config::default();
        assert_eq!(
            WatermarkPolicy::from_config(&cfg).expect("policy"),
            WatermarkPolicy::Min
        );
        cfg.set(MULTIPLE_WATERMARK_POLICY, "MAX").expect("set");
        assert_eq!(
            WatermarkPolicy::from_config(&cfg).expect("policy"),
            WatermarkPolicy::Max
        );
        cfg.set(MULTIPLE_WATERMARK_POLICY, "avg").expect("set");
        assert!(WatermarkPolicy::from_config(&cfg).is_err());
    }
}
