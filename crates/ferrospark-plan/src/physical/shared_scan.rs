//! One Parquet read serving several scans of the same files, the way Polars merges the scans
//! of a repeated subplan and Spark reuses an exchange. TPC-H Q17 reads lineitem twice for the
//! parts of one brand, once to join them and once for each part's average quantity; Q2 and
//! Q11 read partsupp, supplier and nation twice, in the query and in its subquery.
//!
//! ```text
//!   planning:  scans of the same files with the same pushed filter ─▶ one share id; each reads the union of their columns
//!   running:   Pending ──first scan that has runtime filters──▶ Filling ──its rows fit──▶ Kept(rows, its filters)
//!                                                                        └─too many───▶ Declined
//!              a later scan, Kept: its runtime filters within the kept ones? ─yes─▶ replays the kept rows
//!                                                                            └─no──▶ reads the files itself
//! ```
//! A runtime filter only drops rows that cannot find a join partner, so a scan may hand its
//! consumer rows its own filters would have dropped: rows kept under filters holding every
//! key of this scan's filters, on the same columns, are enough. Only a scan narrowed by a
//! runtime filter reads for the others: its rows are few, and the others' filters, built
//! from the same dimension rows, are checked to lie within its own before its rows are used.
//! The kept rows are reserved from the query's pool and capped at [`MAX_SHARED_BYTES`].

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};

use arrow_array::RecordBatch;
use arrow_schema::SchemaRef;
use ferrospark_common::{FerroError, MemoryReservation, Result};
use ferrospark_expr::{Expr, KeySet};

use super::reuse::{Reusable, Slots};
use super::TaskContext;
use crate::logical::expr_util::{conjoin, replace_columns};
use crate::logical::{attrs_schema, expr_text, Attr, LogicalPlan, ScanSource};
use crate::optimizer::same_by_text;

/// The most bytes of rows one scan keeps for the others.
pub const MAX_SHARED_BYTES: u64 = 16 << 20;

/// A scan's place in a group of scans of the same files with the same pushed filter.
#[derive(Debug, Clone)]
pub struct ScanShare {
    /// The group's id within the query.
    pub id: usize,
    /// The union of the group's file columns: what the scan reading for the group reads.
    pub columns: Vec<String>,
    /// Those columns' schema, as the scan's conversion gives them.
    pub schema: SchemaRef,
}

/// The runtime filters a scan applies: (file column, keys).
pub type KeyFilters = Vec<(String, Arc<KeySet>)>;

/// Rows one scan read for the group, with the filters it read them under.
#[derive(Debug)]
pub struct Kept {
    batches: Arc<Vec<RecordBatch>>,
    filters: KeyFilters,
    _memory: Option<MemoryReservation>,
}

/// One group's state in a run.
#[derive(Debug, Default)]
pub enum Slot {
    /// No scan of the group has read for it yet.
    #[default]
    Pending,
    /// A scan is reading for the group.
    Filling,
    /// A scan's rows are kept.
    Kept(Kept),
    /// The rows did not fit: every scan reads its own.
    Declined,
}

/// The groups' states in one run of a query, by share id.
pub type SharedScans = Slots<Slot>;

/// How a scan of a group reads.
pub enum SharedRead {
    /// From the files, its own columns, as if alone.
    Own,
    /// The kept rows (in the group's schema).
    Replay(Arc<Vec<RecordBatch>>),
    /// From the files, the group's columns, keeping the rows through this tee.
    Read(Arc<Tee>),
}

/// Whether rows read under `kept` hold every row a scan under `mine` keeps: each kept
/// filter's column is filtered by `mine` too, with keys within the kept ones.
fn covers(kept: &KeyFilters, mine: &KeyFilters) -> bool {
    kept.iter().all(|(column, theirs)| {
        mine.iter()
            .any(|(c, keys)| c == column && keys.is_subset_of(theirs))
    })
}

impl Slots<Slot> {
    /// How a scan of group `id` running under runtime filters `mine` reads, in `ctx`.
    pub fn claim(&self, id: usize, mine: KeyFilters, ctx: &TaskContext) -> Result<SharedRead> {
        let slot = self.slot(id)?;
        let mut state = slot
            .lock()
            .map_err(|_| FerroError::Internal("shared scan poisoned".into()))?;
        Ok(match &*state {
            Slot::Kept(k) if covers(&k.filters, &mine) => SharedRead::Replay(k.batches.clone()),
            Slot::Pending if !mine.is_empty() => {
                *state = Slot::Filling;
                SharedRead::Read(Arc::new(Tee {
                    slot: slot.clone(),
                    buffer: Mutex::new(Buffer {
                        batches: Vec::new(),
                        memory: Some(ctx.pool.reservation(format!("SharedScan id={id}"))),
                        overflow: false,
                    }),
                    filters: mine,
                }))
            }
            _ => SharedRead::Own,
        })
    }
}

#[derive(Debug)]
struct Buffer {
    batches: Vec<RecordBatch>,
    /// Reserved for the batches (handed to the kept rows at the end).
    memory: Option<MemoryReservation>,
    /// Over [`MAX_SHARED_BYTES`] or refused by the pool: nothing is kept.
    overflow: bool,
}

impl Buffer {
    /// Drops what is kept and keeps nothing more.
    fn keep_nothing(&mut self) {
        self.overflow = true;
        self.batches = Vec::new();
        self.memory = None;
    }
}

/// Keeps the rows of the scan reading for its group, from every scan thread.
#[derive(Debug)]
pub struct Tee {
    slot: Arc<Mutex<Slot>>,
    buffer: Mutex<Buffer>,
    filters: KeyFilters,
}

impl Tee {
    /// Keeps `batch` unless the rows have outgrown what may be kept.
    pub fn keep(&self, batch: &RecordBatch) {
        let Ok(mut b) = self.buffer.lock() else {
            return;
        };
        let bytes = ferrospark_common::batch_bytes(batch) as u64;
        if b.overflow {
            return;
        }
        let fits = match b.memory.as_mut() {
            Some(m) => m.size() + bytes <= MAX_SHARED_BYTES && m.try_grow(bytes),
            None => return,
        };
        if fits {
            b.batches.push(batch.clone());
        } else {
            b.keep_nothing();
        }
    }

    /// The read failed: nothing is kept for the group.
    pub fn abandon(&self) {
        if let Ok(mut b) = self.buffer.lock() {
            b.keep_nothing();
        }
    }

    /// Every batch has been read: the rows are kept for the group, or declined. Returns how
    /// many rows are kept.
    pub fn finish(&self) -> usize {
        let (Ok(mut b), Ok(mut slot)) = (self.buffer.lock(), self.slot.lock()) else {
            return 0;
        };
        if b.overflow {
            *slot = Slot::Declined;
            return 0;
        }
        let batches = std::mem::take(&mut b.batches);
        let rows = batches.iter().map(|b| b.num_rows()).sum();
        let memory = b.memory.take();
        *slot = Slot::Kept(Kept {
            batches: Arc::new(batches),
            filters: self.filters.clone(),
            _memory: memory,
        });
        rows
    }
}

/// A Parquet scan's output columns and its pushed filter over file column names; `None` for
/// other scans and for a scan reading no column (a row count).
pub(crate) fn parquet_read(plan: &LogicalPlan) -> Option<(Vec<Attr>, Option<Expr>)> {
    let LogicalPlan::Scan {
        source: ScanSource::Parquet { .. },
        attrs,
        filters,
        ..
    } = plan
    else {
        return None;
    };
    let by_name = |k: &str| {
        attrs
            .iter()
            .find(|a| a.key() == k)
            .map(|a| Expr::Column(a.name.clone()))
    };
    let filter = conjoin(filters.iter().map(|f| replace_columns(f, &by_name)));
    Some((plan.output(), filter))
}

/// Groups the Parquet scans of `plan` reading the same files, with the same columns' types
/// and the same deterministic pushed filter; each scan of a group of two or more gets the group's share.
/// Inside an aggregation `reusable` computes once, only the first occurrence counts.
pub fn find_shared_scans(
    plan: &LogicalPlan,
    reusable: &Reusable,
) -> HashMap<*const LogicalPlan, ScanShare> {
    type Groups<'a> = BTreeMap<String, Vec<(&'a LogicalPlan, Vec<Attr>)>>;
    fn walk<'a>(
        p: &'a LogicalPlan,
        reusable: &Reusable,
        seen: &mut Vec<usize>,
        groups: &mut Groups<'a>,
    ) {
        if let Some(id) = reusable.id_of(p) {
            if seen.contains(&id) {
                return;
            }
            seen.push(id);
        }
        if let (
            LogicalPlan::Scan {
                source:
                    ScanSource::Parquet {
                        paths, partitions, ..
                    },
                attrs,
                ..
            },
            Some((out, filter)),
        ) = (p, parquet_read(p))
        {
            // Columns no file has are filled in by each scan alone.
            let fills_nulls = partitions.as_ref().is_some_and(|p| !p.missing.is_empty());
            // A nondeterministic filter (`rand() < 0.5`) keeps different rows in each scan.
            let fixed = filter.as_ref().is_none_or(same_by_text);
            if !out.is_empty() && fixed && !fills_nulls {
                let types: Vec<String> = attrs
                    .iter()
                    .map(|a| format!("{}:{}", a.name, a.data_type))
                    .collect();
                let filter = filter.as_ref().map(expr_text).unwrap_or_default();
                let key = format!("{paths:?} {types:?} {filter}");
                groups.entry(key).or_default().push((p, out));
            }
        }
        for c in p.children() {
            walk(c, reusable, seen, groups);
        }
    }
    let mut groups = Groups::new();
    walk(plan, reusable, &mut Vec::new(), &mut groups);
    let mut out = HashMap::new();
    let repeated = groups.into_values().filter(|g| g.len() > 1);
    for (id, members) in repeated.enumerate() {
        let mut union: Vec<Attr> = Vec::new();
        for (_, attrs) in &members {
            for a in attrs {
                if !union.iter().any(|u| u.name == a.name) {
                    union.push(a.clone());
                }
            }
        }
        let share = ScanShare {
            id,
            columns: union.iter().map(|a| a.name.clone()).collect(),
            schema: attrs_schema(&union),
        };
        for (node, _) in members {
            out.insert(node as *const LogicalPlan, share.clone());
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use arrow_array::{ArrayRef, Int64Array};
    use arrow_schema::{DataType, Field, Schema};
    use ferrospark_common::Config;

    use super::*;
    use crate::sql::SqlStatement;
    use crate::QueryEngine;

    fn keys(v: &[i64]) -> Arc<KeySet> {
        let a: ArrayRef = Arc::new(Int64Array::from(v.to_vec()));
        Arc::new(KeySet::try_new(&[a]).expect("a set"))
    }

    fn batch(n: i64) -> RecordBatch {
        let schema = Arc::new(Schema::new(vec![Field::new("k", DataType::Int64, false)]));
        RecordBatch::try_new(schema, vec![Arc::new(Int64Array::from_iter_values(0..n))])
            .expect("batch")
    }

    /// The tee of a scan that must read for group `id`.
    fn reads_for_group(ctx: &TaskContext, id: usize, mine: &KeyFilters) -> Arc<Tee> {
        match ctx
            .shared_scans
            .claim(id, mine.clone(), ctx)
            .expect("claim")
        {
            SharedRead::Read(tee) => tee,
            _ => panic!("the scan should read for group {id}"),
        }
    }

    fn replays(read: &SharedRead) -> Option<usize> {
        match read {
            SharedRead::Replay(b) => Some(b.iter().map(|b| b.num_rows()).sum()),
            _ => None,
        }
    }

    #[test]
    fn rows_kept_under_wider_filters_serve_a_scan_whose_filters_lie_within_them() {
        let ctx = TaskContext::new(&Config::default()).expect("context");
        let shared = &ctx.shared_scans;
        // No runtime filter: nothing narrows the rows, so this scan reads alone.
        assert!(matches!(
            shared.claim(0, vec![], &ctx).expect("claim"),
            SharedRead::Own
        ));
        let wide = vec![("k".to_string(), keys(&[1, 2, 3, 500]))];
        // The first filtered scan reads for the group.
        let tee = reads_for_group(&ctx, 0, &wide);
        // While it reads, the others read alone rather than wait.
        assert!(matches!(
            shared.claim(0, wide.clone(), &ctx).expect("claim"),
            SharedRead::Own
        ));
        tee.keep(&batch(10));
        tee.keep(&batch(5));
        assert_eq!(tee.finish(), 15);
        assert!(ctx.pool.reserved() > 0);
        let within = vec![
            ("other".to_string(), keys(&[7])),
            ("k".to_string(), keys(&[2, 500])),
        ];
        assert_eq!(
            replays(&shared.claim(0, within, &ctx).expect("claim")),
            Some(15)
        );
        // A key the kept rows were not read for, a filter on another column, or none at
        // all: the kept rows may lack some of this scan's rows.
        for mine in [
            vec![("k".to_string(), keys(&[2, 4]))],
            vec![("other".to_string(), keys(&[2]))],
            vec![],
        ] {
            let read = shared.claim(0, mine, &ctx).expect("claim");
            assert!(matches!(read, SharedRead::Own));
        }
    }

    #[test]
    fn rows_over_the_cap_or_refused_by_the_pool_are_not_kept() {
        let mut cfg = Config::default();
        cfg.set(ferrospark_common::config::MEMORY_LIMIT, "100k")
            .expect("set");
        let ctx = TaskContext::new(&cfg).expect("context");
        let mine = vec![("k".to_string(), keys(&[1]))];
        let tee = reads_for_group(&ctx, 3, &mine);
        tee.keep(&batch(1000));
        tee.keep(&batch(100_000));
        tee.keep(&batch(10));
        assert_eq!(tee.finish(), 0);
        assert_eq!(ctx.pool.reserved(), 0);
        // A read that failed part way keeps nothing either.
        let other = vec![("k".to_string(), keys(&[1]))];
        let failed = reads_for_group(&ctx, 4, &other);
        failed.keep(&batch(10));
        failed.abandon();
        failed.keep(&batch(10));
        assert_eq!(failed.finish(), 0);
        assert!(matches!(
            ctx.shared_scans.claim(4, other, &ctx).expect("claim"),
            SharedRead::Own
        ));
        assert!(matches!(
            ctx.shared_scans.claim(3, mine, &ctx).expect("claim"),
            SharedRead::Own
        ));
    }

    #[test]
    fn scans_of_the_same_files_and_filter_share_the_union_of_their_columns() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("t.parquet");
        let schema = Arc::new(Schema::new(vec![
            Field::new("k", DataType::Int64, true),
            Field::new("v", DataType::Int64, true),
            Field::new("w", DataType::Int64, true),
        ]));
        let cols: Vec<ArrayRef> = (0..3)
            .map(|_| Arc::new(Int64Array::from(vec![1, 2, 3])) as ArrayRef)
            .collect();
        let b = RecordBatch::try_new(schema.clone(), cols).expect("batch");
        let file = std::fs::File::create(&path).expect("create");
        let mut w = parquet::arrow::ArrowWriter::try_new(file, schema, None).expect("writer");
        w.write(&b).expect("write");
        w.close().expect("close");
        let e = QueryEngine::new(Config::default());
        let t = format!("parquet.`{}`", path.display());
        let shares = |sql: &str| {
            let SqlStatement::Query(p) = e.sql(sql).expect("plans") else {
                panic!("not a query")
            };
            let plan = e.optimize(&p).expect("optimizes").0;
            let found = find_shared_scans(&plan, &Reusable::default());
            found.into_values().map(|s| s.columns).collect::<Vec<_>>()
        };
        let same = shares(&format!(
            "SELECT a.v, b.k FROM {t} a JOIN {t} b ON a.k = b.k WHERE a.w = 1 AND b.w = 1"
        ));
        assert_eq!(same.len(), 2, "{same:?}");
        assert!(same.iter().all(|c| c == &["k", "v"]), "{same:?}");
        let differing = shares(&format!(
            "SELECT a.v, b.k FROM {t} a JOIN {t} b ON a.k = b.k WHERE a.w = 1 AND b.w = 2"
        ));
        assert!(differing.is_empty(), "{differing:?}");
    }
}
