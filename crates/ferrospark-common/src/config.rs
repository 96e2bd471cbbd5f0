//! Session configuration under Spark's key names, with typed, validated getters.

use std::collections::BTreeMap;

use crate::{FerroError, Result};

/// Batch size of scans and operators (`ferrospark.batch.size`).
pub const BATCH_SIZE: &str = "ferrospark.batch.size";
/// Rows per decoded batch while a scan filters (`ferrospark.scan.filterBatchSize`).
pub const SCAN_FILTER_BATCH_SIZE: &str = "ferrospark.scan.filterBatchSize";
/// Threads a scan may use (`ferrospark.scan.threads`); defaults to the machine's cores.
pub const SCAN_THREADS: &str = "ferrospark.scan.threads";
/// Memory pool limit (`ferrospark.memory.limit`).
pub const MEMORY_LIMIT: &str = "ferrospark.memory.limit";
/// Directory for spill files (`ferrospark.spill.dir`).
pub const SPILL_DIR: &str = "ferrospark.spill.dir";
/// Spark's session time zone, used for TIMESTAMP literals and casts.
pub const SESSION_TIME_ZONE: &str = "spark.sql.session.timeZone";
/// Spark's switch for Parquet filter pushdown (row-group, page, bloom and dictionary pruning).
pub const PARQUET_FILTER_PUSHDOWN: &str = "spark.sql.parquet.filterPushdown";
/// Spark's switch for Parquet bloom-filter pruning (`parquet.filter.bloom.enabled` in parquet-mr).
pub const PARQUET_BLOOM_FILTER: &str = "parquet.filter.bloom.enabled";
/// Spark's switch for Parquet dictionary pruning (`parquet.filter.dictionary.enabled`).
pub const PARQUET_DICTIONARY_FILTER: &str = "parquet.filter.dictionary.enabled";
/// Budget of the process-wide cache of parsed Parquet footers; 0 turns it off.
pub const PARQUET_METADATA_CACHE_SIZE: &str = "ferrospark.parquet.metadataCache.size";
/// Default of [`PARQUET_METADATA_CACHE_SIZE`]: 64 MiB.
pub const DEFAULT_METADATA_CACHE_BYTES: u64 = 64 * 1024 * 1024;
/// Decide a dictionary-encoded filter column on its dictionary codes (default true).
pub const SCAN_DICTIONARY_CODES: &str = "ferrospark.scan.dictionaryCodeFilter";
/// Window frames of doubles in Spark's order of additions (default true), or O(n).
pub const WINDOW_EXACT_FLOAT_FRAMES: &str = "ferrospark.window.exactFloatFrames";
/// Spark's ANSI mode (default true in Spark 4): overflow raises instead of wrapping.
pub const ANSI_ENABLED: &str = "spark.sql.ansi.enabled";
/// Keys an object-hash aggregation holds before it falls back to sort-based aggregation.
pub const OBJECT_AGG_FALLBACK_THRESHOLD: &str =
    "spark.sql.objectHashAggregate.sortBased.fallbackThreshold";
/// Spark's target split size when planning Parquet tasks.
pub const FILES_MAX_PARTITION_BYTES: &str = "spark.sql.files.maxPartitionBytes";
/// Largest side broadcast by size (bytes; -1 never).
pub const AUTO_BROADCAST_THRESHOLD: &str = "spark.sql.autoBroadcastJoinThreshold";
/// Whether sort-merge is preferred over shuffled hash joins.
pub const PREFER_SORT_MERGE: &str = "spark.sql.join.preferSortMergeJoin";
/// Partitions of a shuffle.
pub const SHUFFLE_PARTITIONS: &str = "spark.sql.shuffle.partitions";

/// Whether joins filter their probe side's scan by their build keys (Spark's runtime Bloom
/// filter switch; ferrospark's filters are exact key sets).
pub const RUNTIME_FILTER_ENABLED: &str = "spark.sql.optimizer.runtime.bloomFilter.enabled";
/// Most build rows a runtime filter is made from (Spark's default 4,000,000).
pub const RUNTIME_FILTER_MAX_ITEMS: &str = "spark.sql.optimizer.runtime.bloomFilter.maxNumItems";

/// In-process plans prefer hash joins over sort-merge joins.
pub const PREFER_HASH_JOIN: &str = "ferrospark.join.preferHashJoin";

/// When a running query draws a progress bar on stderr (`ferrospark.progress.bar`):
/// `auto` (default: when stderr is a terminal), `always`, `never`.
pub const PROGRESS_BAR: &str = "ferrospark.progress.bar";
/// How long a query runs before its progress bar appears (`ferrospark.progress.delay`,
/// milliseconds; default 2000).
pub const PROGRESS_DELAY: &str = "ferrospark.progress.delay";
/// Into how many state partitions an in-process streaming operator splits its keys, each
/// run on its own thread (`ferrospark.streaming.statePartitions`; default: the cores).
/// Fixed for a checkpoint by its first batch, as Spark fixes its shuffle partitions.
pub const STREAMING_STATE_PARTITIONS: &str = "ferrospark.streaming.statePartitions";
/// Whether fss's tasks run their streaming operators in the executor's state host, which
/// keeps them loaded between batches (`ferrospark.streaming.stateHost`, default true; read
/// by the Python package).
pub const STREAMING_STATE_HOST: &str = "ferrospark.streaming.stateHost";
/// Seconds the state host keeps an operator no batch has used
/// (`ferrospark.streaming.stateHost.idleTimeout`, default 600; read by the Python package).
pub const STREAMING_STATE_HOST_IDLE: &str = "ferrospark.streaming.stateHost.idleTimeout";
/// Whether fss's tasks read a bare streaming Parquet source's files themselves instead of
/// taking Spark's rows (`ferrospark.streaming.nativeScan`, default true; read by the Python
/// package).
pub const STREAMING_NATIVE_SCAN: &str = "ferrospark.streaming.nativeScan";

/// Every `ferrospark.*` key ferrospark reads. Setting any other `ferrospark.*` key is an error
/// (a typo would otherwise be ignored silently); `spark.*` and other keys are accepted as
/// Spark accepts them. A test checks that every `"ferrospark.…"` key in the code base is here.
pub const KNOWN_FERROSPARK_KEYS: &[&str] = &[
    BATCH_SIZE,
    SCAN_FILTER_BATCH_SIZE,
    SCAN_THREADS,
    MEMORY_LIMIT,
    SPILL_DIR,
    PARQUET_METADATA_CACHE_SIZE,
    SCAN_DICTIONARY_CODES,
    WINDOW_EXACT_FLOAT_FRAMES,
    PREFER_HASH_JOIN,
    PROGRESS_BAR,
    PROGRESS_DELAY,
    STREAMING_STATE_PARTITIONS,
    STREAMING_STATE_HOST,
    STREAMING_STATE_HOST_IDLE,
    STREAMING_NATIVE_SCAN,
];

/// The prefix of ferrospark's own keys, which are checked against [`KNOWN_FERROSPARK_KEYS`].
const FERROSPARK_PREFIX: &str = "ferrospark.";

/// Levenshtein distance between two keys, compared case-insensitively.
fn edit_distance(a: &str, b: &str) -> usize {
    let a: Vec<char> = a.to_ascii_lowercase().chars().collect();
    let b: Vec<char> = b.to_ascii_lowercase().chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.iter().enumerate() {
        let mut cur = vec![i + 1; b.len() + 1];
        for (j, cb) in b.iter().enumerate() {
            let substitute = prev[j] + usize::from(ca != cb);
            cur[j + 1] = substitute.min(prev[j + 1] + 1).min(cur[j] + 1);
        }
        prev = cur;
    }
    prev[b.len()]
}

/// The known ferrospark key closest to `key`.
fn closest_key(key: &str) -> &'static str {
    KNOWN_FERROSPARK_KEYS
        .iter()
        .copied()
        .min_by_key(|k| edit_distance(key, k))
        .unwrap_or(BATCH_SIZE)
}

/// `ConfigError` for a `ferrospark.*` key ferrospark does not know, suggesting the closest one.
fn unknown_key(key: &str) -> FerroError {
    let known = KNOWN_FERROSPARK_KEYS.join(", ");
    FerroError::Config(format!(
        "unknown configuration key '{key}'; did you mean '{}'? ferrospark's keys are: {known}",
        closest_key(key)
    ))
}

/// An immutable-by-convention map of configuration keys to string values, as Spark keeps them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Config {
    values: BTreeMap<String, String>,
}

impl Config {
    /// An empty configuration: every getter returns its default.
    pub fn new() -> Self {
        Self::default()
    }

    /// Builds a configuration from key/value pairs, validating the keys ferrospark knows.
    pub fn from_pairs<I, K, V>(pairs: I) -> Result<Self>
    where
        I: IntoIterator<Item = (K, V)>,
        K: Into<String>,
        V: Into<String>,
    {
        let mut cfg = Config::new();
        for (k, v) in pairs {
            cfg.set(k, v)?;
        }
        Ok(cfg)
    }

    /// Sets a key, checking the value now so a bad option fails where it is given. Unknown
    /// `ferrospark.*` keys are refused (with the closest known key); other keys are kept.
    pub fn set(&mut self, key: impl Into<String>, value: impl Into<String>) -> Result<()> {
        let key = key.into();
        let value = value.into();
        let mut probe = Config::new();
        probe.values.insert(key.clone(), value.clone());
        match key.as_str() {
            BATCH_SIZE => {
                probe.batch_size()?;
            }
            SCAN_THREADS => {
                probe.scan_threads()?;
            }
            SCAN_FILTER_BATCH_SIZE => {
                probe.filter_batch_size()?;
            }
            MEMORY_LIMIT => {
                probe.memory_limit()?;
            }
            FILES_MAX_PARTITION_BYTES => {
                probe.max_partition_bytes()?;
            }
            PARQUET_METADATA_CACHE_SIZE => {
                probe.metadata_cache_size()?;
            }
            SESSION_TIME_ZONE => {
                value.parse::<arrow_array::timezone::Tz>().map_err(|e| {
                    FerroError::Config(format!(
                        "config {SESSION_TIME_ZONE} '{value}' is not a time zone ({e}); use a region such as 'America/Los_Angeles', 'UTC' or an offset such as '+08:00'"
                    ))
                })?;
            }
            OBJECT_AGG_FALLBACK_THRESHOLD => {
                probe.object_agg_fallback_threshold()?;
            }
            AUTO_BROADCAST_THRESHOLD => {
                probe.auto_broadcast_threshold()?;
            }
            SHUFFLE_PARTITIONS => {
                probe.shuffle_partitions()?;
            }
            PREFER_SORT_MERGE => {
                probe.get_bool(&key, true)?;
            }
            ANSI_ENABLED
            | PARQUET_FILTER_PUSHDOWN
            | PARQUET_BLOOM_FILTER
            | PARQUET_DICTIONARY_FILTER
            | SCAN_DICTIONARY_CODES
            | WINDOW_EXACT_FLOAT_FRAMES => {
                probe.get_bool(&key, true)?;
            }
            k if k.starts_with(FERROSPARK_PREFIX) && !KNOWN_FERROSPARK_KEYS.contains(&k) => {
                return Err(unknown_key(k));
            }
            _ => {}
        }
        self.values.insert(key, value);
        Ok(())
    }

    /// The raw value of a key, if set.
    pub fn get(&self, key: &str) -> Option<&str> {
        self.values.get(key).map(String::as_str)
    }

    /// All keys and values, sorted by key.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &str)> {
        self.values.iter().map(|(k, v)| (k.as_str(), v.as_str()))
    }

    /// A boolean key (`true`/`false`, case-insensitive).
    pub fn get_bool(&self, key: &str, default: bool) -> Result<bool> {
        match self.get(key) {
            None => Ok(default),
            Some(v) => match v.trim().to_ascii_lowercase().as_str() {
                "true" => Ok(true),
                "false" => Ok(false),
                _ => Err(FerroError::Config(format!(
                    "config {key} must be true or false, got '{v}'"
                ))),
            },
        }
    }

    /// A positive integer key (`default` when unset); anything else is a `ConfigError`
    /// naming the key.
    pub fn get_positive(&self, key: &str, default: usize) -> Result<usize> {
        match self.get(key) {
            None => Ok(default),
            Some(v) => match v.trim().parse::<usize>() {
                Ok(n) if n > 0 => Ok(n),
                _ => Err(FerroError::Config(format!(
                    "config {key} must be a positive integer, got '{v}'"
                ))),
            },
        }
    }

    /// `ferrospark.batch.size`, default 8192 rows.
    pub fn batch_size(&self) -> Result<usize> {
        self.get_positive(BATCH_SIZE, 8192)
    }

    /// `ferrospark.scan.filterBatchSize`, default 65536 rows.
    pub fn filter_batch_size(&self) -> Result<usize> {
        self.get_positive(SCAN_FILTER_BATCH_SIZE, 65536)
    }

    /// `ferrospark.scan.threads`, default the number of available cores.
    pub fn scan_threads(&self) -> Result<usize> {
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        self.get_positive(SCAN_THREADS, cores)
    }

    /// `ferrospark.memory.limit` in bytes; `None` when unlimited.
    pub fn memory_limit(&self) -> Result<Option<u64>> {
        self.get(MEMORY_LIMIT)
            .map(|v| {
                parse_byte_size(v)
                    .map_err(|e| FerroError::Config(format!("config {MEMORY_LIMIT}: {e}")))
            })
            .transpose()
    }

    /// `spark.sql.files.maxPartitionBytes`, default 128 MiB as in Spark.
    pub fn max_partition_bytes(&self) -> Result<u64> {
        match self.get(FILES_MAX_PARTITION_BYTES) {
            None => Ok(128 * 1024 * 1024),
            Some(v) => parse_byte_size(v).map_err(|e| {
                FerroError::Config(format!("config {FILES_MAX_PARTITION_BYTES}: {e}"))
            }),
        }
    }

    /// `ferrospark.parquet.metadataCache.size`, default 64 MiB; 0 disables the footer cache.
    pub fn metadata_cache_size(&self) -> Result<u64> {
        match self.get(PARQUET_METADATA_CACHE_SIZE) {
            None => Ok(DEFAULT_METADATA_CACHE_BYTES),
            Some(v) => parse_byte_size(v).map_err(|e| {
                FerroError::Config(format!("config {PARQUET_METADATA_CACHE_SIZE}: {e}"))
            }),
        }
    }

    /// `spark.sql.autoBroadcastJoinThreshold` in bytes, default 10 MiB as in Spark; negative
    /// (`-1`) turns broadcasting by size off.
    pub fn auto_broadcast_threshold(&self) -> Result<i64> {
        match self.get(AUTO_BROADCAST_THRESHOLD).map(str::trim) {
            None => Ok(10 * 1024 * 1024),
            Some(v) if v.starts_with('-') => Ok(-1),
            Some(v) => parse_byte_size(v)
                .map(|b| b.min(i64::MAX as u64) as i64)
                .map_err(|e| FerroError::Config(format!("config {AUTO_BROADCAST_THRESHOLD}: {e}"))),
        }
    }

    /// `spark.sql.join.preferSortMergeJoin`, default true as in Spark.
    pub fn prefer_sort_merge_join(&self) -> Result<bool> {
        self.get_bool(PREFER_SORT_MERGE, true)
    }

    /// `ferrospark.join.preferHashJoin`, default true: in-process query plans build a hash
    /// table where Spark would sort-merge (the join falls back to sort-merge past the memory
    /// limit). `false` plans exactly Spark's strategies.
    pub fn prefer_hash_join(&self) -> Result<bool> {
        self.get_bool(PREFER_HASH_JOIN, true)
    }

    /// `spark.sql.optimizer.runtime.bloomFilter.enabled`, default true as in Spark 4.
    pub fn runtime_filter_enabled(&self) -> Result<bool> {
        self.get_bool(RUNTIME_FILTER_ENABLED, true)
    }

    /// `spark.sql.optimizer.runtime.bloomFilter.maxNumItems`, default 4,000,000 as in Spark.
    pub fn runtime_filter_max_items(&self) -> Result<usize> {
        self.get_positive(RUNTIME_FILTER_MAX_ITEMS, 4_000_000)
    }

    /// `spark.sql.shuffle.partitions`, default 200 as in Spark.
    pub fn shuffle_partitions(&self) -> Result<usize> {
        self.get_positive(SHUFFLE_PARTITIONS, 200)
    }

    /// `ferrospark.window.exactFloatFrames`, default true: sliding frames of doubles and the
    /// variance family give Spark's last bit (O(n·w)); false: O(n), equal up to rounding.
    pub fn window_exact_float_frames(&self) -> Result<bool> {
        self.get_bool(WINDOW_EXACT_FLOAT_FRAMES, true)
    }

    /// `spark.sql.ansi.enabled`, default true as in Spark 4.
    pub fn ansi_enabled(&self) -> Result<bool> {
        self.get_bool(ANSI_ENABLED, true)
    }

    /// `spark.sql.objectHashAggregate.sortBased.fallbackThreshold`, default 128 as in Spark.
    pub fn object_agg_fallback_threshold(&self) -> Result<usize> {
        self.get_positive(OBJECT_AGG_FALLBACK_THRESHOLD, 128)
    }

    /// `ferrospark.progress.bar`: `Some(true)` always, `Some(false)` never, `None` (auto)
    /// when stderr is a terminal.
    pub fn progress_bar(&self) -> Result<Option<bool>> {
        match self
            .get(PROGRESS_BAR)
            .map(|v| v.trim().to_ascii_lowercase())
        {
            None => Ok(None),
            Some(v) if v == "auto" => Ok(None),
            Some(v) if v == "always" || v == "true" => Ok(Some(true)),
            Some(v) if v == "never" || v == "false" => Ok(Some(false)),
            Some(v) => Err(FerroError::Config(format!(
                "{PROGRESS_BAR} must be auto, always or never, not '{v}'"
            ))),
        }
    }

    /// `ferrospark.progress.delay` in milliseconds, default 2000.
    pub fn progress_delay_ms(&self) -> Result<u64> {
        match self.get(PROGRESS_DELAY) {
            None => Ok(2000),
            Some(v) => v.trim().parse::<u64>().map_err(|_| {
                FerroError::Config(format!(
                    "{PROGRESS_DELAY} must be a number of milliseconds, not '{v}'"
                ))
            }),
        }
    }

    /// `ferrospark.spill.dir`; the system temp directory when unset.
    pub fn spill_dir(&self) -> Option<std::path::PathBuf> {
        self.get(SPILL_DIR).map(std::path::PathBuf::from)
    }

    /// `spark.sql.session.timeZone`, default UTC.
    pub fn session_time_zone(&self) -> &str {
        self.get(SESSION_TIME_ZONE).unwrap_or("UTC")
    }
}

/// Parses Spark-style byte sizes: `1024`, `10b`, `64k`, `10MB`, `2g`, `1.5GB`, `1TiB`.
pub fn parse_byte_size(text: &str) -> std::result::Result<u64, String> {
    let t = text.trim().to_ascii_lowercase();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let value: f64 = num
        .parse()
        .map_err(|_| format!("'{text}' is not a size such as 512MB or 2GB"))?;
    let unit = unit.trim();
    let mult: f64 = match unit {
        "" | "b" => 1.0,
        "k" | "kb" | "kib" => 1024.0,
        "m" | "mb" | "mib" => 1024.0 * 1024.0,
        "g" | "gb" | "gib" => 1024.0 * 1024.0 * 1024.0,
        "t" | "tb" | "tib" => 1024.0 * 1024.0 * 1024.0 * 1024.0,
        _ => {
            return Err(format!(
                "'{text}' has an unknown unit '{unit}' (use b, k, m, g or t)"
            ))
        }
    };
    Ok((value * mult).round() as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_parse_like_spark() {
        assert_eq!(parse_byte_size("10MB"), Ok(10 * 1024 * 1024));
        assert_eq!(parse_byte_size("2g"), Ok(2 * 1024 * 1024 * 1024));
        assert_eq!(parse_byte_size("512"), Ok(512));
        assert_eq!(parse_byte_size("1.5k"), Ok(1536));
        assert!(parse_byte_size("ten").is_err());
        assert!(parse_byte_size("10 parsecs").is_err());
    }

    #[test]
    fn bad_values_fail_when_set() {
        let mut c = Config::new();
        assert!(c.set(BATCH_SIZE, "0").is_err());
        assert!(c.set(BATCH_SIZE, "abc").is_err());
        assert!(c.set(PARQUET_FILTER_PUSHDOWN, "maybe").is_err());
        assert!(c.set(SESSION_TIME_ZONE, "Not/AZone").is_err());
        c.set(SESSION_TIME_ZONE, "America/Los_Angeles")
            .expect("a region");
        c.set(SESSION_TIME_ZONE, "+08:00").expect("an offset");
        c.set(BATCH_SIZE, "1024").expect("valid");
        assert_eq!(c.batch_size().expect("valid"), 1024);
        c.set("spark.some.unknown", "x")
            .expect("unknown keys are kept");
        assert_eq!(c.get("spark.some.unknown"), Some("x"));
    }

    #[test]
    fn unknown_ferrospark_keys_fail_with_a_suggestion() {
        let mut c = Config::new();
        // Typos built at run time, so the scan of the sources below does not see them as keys.
        let typo = format!("{FERROSPARK_PREFIX}memroy.limit");
        let err = c.set(&typo, "1g").expect_err("a typo").to_string();
        assert!(err.contains(&format!("'{typo}'")), "{err}");
        assert!(
            err.contains("did you mean 'ferrospark.memory.limit'"),
            "{err}"
        );
        let typo = format!("{FERROSPARK_PREFIX}batchsize");
        let err = c.set(typo, "10").expect_err("a typo").to_string();
        assert!(
            err.contains("did you mean 'ferrospark.batch.size'"),
            "{err}"
        );
        assert_eq!(c.get(&format!("{FERROSPARK_PREFIX}memroy.limit")), None);
        for key in KNOWN_FERROSPARK_KEYS {
            assert_eq!(closest_key(key), *key);
        }
        c.set("spark.executor.memory", "4g")
            .expect("spark keys are Spark's to judge");
        c.set(SPILL_DIR, "/tmp").expect("known");
    }

    /// Every `"ferrospark.<key>"` string in the Rust and Python sources (other than Python
    /// module names such as `ferrospark.errors`) must be a known key, so a key read somewhere
    /// can always be set.
    #[test]
    fn every_key_in_the_code_base_is_known() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
        let package = root.join("python/ferrospark");
        let is_module = |name: &str| {
            let first = name.split('.').next().unwrap_or(name);
            first.starts_with('_')
                || package.join(format!("{first}.py")).exists()
                || package.join(first).is_dir()
        };
        let mut files = Vec::new();
        // Tests are left out: they may spell keys wrong on purpose, and Config::set checks
        // every key they set at run time anyway.
        let mut dirs = vec![
            root.join("crates"),
            root.join("python"),
            root.join("benches"),
        ];
        while let Some(dir) = dirs.pop() {
            let Ok(entries) = std::fs::read_dir(&dir) else {
                continue;
            };
            for entry in entries.flatten() {
                let path = entry.path();
                if path.is_dir() {
                    dirs.push(path);
                } else if path
                    .extension()
                    .is_some_and(|e| e == "rs" || e == "py" || e == "pyi")
                {
                    files.push(path);
                }
            }
        }
        assert!(
            files.len() > 20,
            "sources not found under {}",
            root.display()
        );
        let mut found = 0;
        let mut unknown = Vec::new();
        for file in files {
            let text = std::fs::read_to_string(&file).unwrap_or_default();
            for quote in ['"', '\u{27}'] {
                let pattern = format!("{quote}{FERROSPARK_PREFIX}");
                for (at, _) in text.match_indices(&pattern) {
                    let rest = &text[at + 1..];
                    let Some(end) = rest.find(quote) else {
                        continue;
                    };
                    let key = &rest[..end];
                    let name = &key[FERROSPARK_PREFIX.len()..];
                    let is_key = !name.is_empty()
                        && name
                            .chars()
                            .all(|c| c.is_ascii_alphanumeric() || c == '.' || c == '_');
                    if !is_key || is_module(name) {
                        continue;
                    }
                    found += 1;
                    if !KNOWN_FERROSPARK_KEYS.contains(&key) {
                        unknown.push(format!("{key} in {}", file.display()));
                    }
                }
            }
        }
        assert!(found > 0, "no ferrospark keys found: is the scan broken?");
        assert!(
            unknown.is_empty(),
            "keys used but missing from KNOWN_FERROSPARK_KEYS: {unknown:?}"
        );
    }
}
