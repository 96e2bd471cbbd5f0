//! Operator metrics in the spirit of Spark's SQL metrics: named counters shared between an
//! operator's worker threads and whoever reports them.

use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;

/// What a metric counts; decides how it prints.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MetricValue {
    /// A plain count (rows, batches, files).
    Count,
    /// Bytes.
    Bytes,
    /// Nanoseconds of elapsed time.
    TimeNs,
}

#[derive(Debug)]
struct Metric {
    name: &'static str,
    kind: MetricValue,
    value: AtomicU64,
}

/// A fixed set of named counters, cheap to clone (shared) and safe to bump from any thread.
#[derive(Debug, Clone)]
pub struct MetricsSet {
    metrics: Arc<Vec<Metric>>,
}

impl MetricsSet {
    /// A set with the given counters, all zero.
    pub fn new(names: &[(&'static str, MetricValue)]) -> Self {
        let metrics = names
            .iter()
            .map(|&(name, kind)| Metric {
                name,
                kind,
                value: AtomicU64::new(0),
            })
            .collect();
        Self {
            metrics: Arc::new(metrics),
        }
    }

    fn find(&self, name: &str) -> Option<&Metric> {
        self.metrics.iter().find(|m| m.name == name)
    }

    /// Adds `n` to counter `name` (ignored if the set has no such counter).
    pub fn add(&self, name: &str, n: u64) {
        if let Some(m) = self.find(name) {
            m.value.fetch_add(n, Ordering::Relaxed);
        }
    }

    /// Raises gauge `name` to `n` if it is lower (a peak; ignored if the set has no such
    /// counter).
    pub fn raise_to(&self, name: &str, n: u64) {
        if let Some(m) = self.find(name) {
            m.value.fetch_max(n, Ordering::Relaxed);
        }
    }

    /// The current value of counter `name` (0 if absent).
    pub fn get(&self, name: &str) -> u64 {
        self.find(name)
            .map_or(0, |m| m.value.load(Ordering::Relaxed))
    }

    /// Adds the time elapsed since `start` to a time counter.
    pub fn add_elapsed(&self, name: &str, start: Instant) {
        self.add(name, start.elapsed().as_nanos() as u64);
    }

    /// All counters in declaration order.
    pub fn snapshot(&self) -> Vec<(&'static str, u64)> {
        self.metrics
            .iter()
            .map(|m| (m.name, m.value.load(Ordering::Relaxed)))
            .collect()
    }
}

impl fmt::Display for MetricsSet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut first = true;
        for m in self.metrics.iter() {
            let v = m.value.load(Ordering::Relaxed);
            if !first {
                f.write_str(", ")?;
            }
            first = false;
            match m.kind {
                MetricValue::Count => write!(f, "{}={v}", m.name)?,
                MetricValue::Bytes => write!(f, "{}={}", m.name, human_bytes(v))?,
                MetricValue::TimeNs => write!(f, "{}={:.1}ms", m.name, v as f64 / 1e6)?,
            }
        }
        Ok(())
    }
}

fn human_bytes(v: u64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut x = v as f64;
    let mut u = 0;
    while x >= 1024.0 && u + 1 < UNITS.len() {
        x /= 1024.0;
        u += 1;
    }
    if u == 0 {
        format!("{v}B")
    } else {
        format!("{x:.1}{}", UNITS[u])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counters_are_shared_between_clones() {
        let m = MetricsSet::new(&[("rows", MetricValue::Count), ("bytes", MetricValue::Bytes)]);
        let m2 = m.clone();
        m.add("rows", 5);
        m2.add("rows", 2);
        m2.add("bytes", 4096);
        assert_eq!(m.get("rows"), 7);
        assert_eq!(m.to_string(), "rows=7, bytes=4.0KiB");
        m.add("missing", 1);
        assert_eq!(m.get("missing"), 0);
    }
}
