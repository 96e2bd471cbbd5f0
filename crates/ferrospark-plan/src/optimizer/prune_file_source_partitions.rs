//! `PruneFileSourcePartitions`: a catalog table's scan reads only the partitions its
//! partition filters keep, decided on the metastore's partition values before any directory
//! is listed, as Spark's rule of that name prunes a `CatalogFileIndex`.
//!
//! A partition filter is a pushed conjunct that reads partition columns only. The values of
//! every registered partition become one batch (each column cast from its directory text to
//! the catalog's type, as Spark casts partition values), the filters run over it, and the
//! directories whose row passes are the scan's. Only those are listed: their files give the
//! scan its size and footer statistics, so join selection and the planner's estimates see
//! the pruned table. A data column the files lack reads as NULL, so a filter on it is
//! decided on NULL.
//!
//! The rule runs twice: before join reordering, so the reorder sees pruned sizes, and after
//! the filters inferred from join conditions are pushed, which may prune further.
//!
//! With the rule switched off, [`list_catalog_scans`] lists every registered partition
//! after the optimizer; the answer is the same, only the listing is larger.

use std::collections::HashSet;
use std::sync::Arc;

use arrow_array::{Array, ArrayRef, RecordBatch, StringArray};
use arrow_schema::{Field, Schema};
use ferrospark_common::{Config, Result};
use ferrospark_expr::{bind_predicate, evaluate_predicate, BindContext, Expr, Literal};
use ferrospark_scan::{list_partition_dirs, ParquetScan, ParquetScanOptions, PartitionDirs};

use super::push_down_predicates::deterministic;
use super::OptimizerRule;
use crate::logical::expr_util::{column_keys, conjoin, replace_columns};
use crate::logical::{Attr, CatalogPartitions, LogicalPlan, ScanSource};

/// Prunes and lists the partitions of catalog tables' scans.
pub struct PruneFileSourcePartitions;

impl OptimizerRule for PruneFileSourcePartitions {
    fn name(&self) -> &'static str {
        "PruneFileSourcePartitions"
    }

    fn apply(&self, plan: &Arc<LogicalPlan>, cfg: &Config) -> Result<Arc<LogicalPlan>> {
        plan.transform_up(&mut |node| list_scan(node, cfg, true))
    }
}

/// Lists every catalog scan `plan` still holds unlisted (its partitions not pruned).
pub(crate) fn list_catalog_scans(
    plan: &Arc<LogicalPlan>,
    cfg: &Config,
) -> Result<Arc<LogicalPlan>> {
    plan.transform_up(&mut |node| list_scan(node, cfg, false))
}

/// `node` listed (and pruned when `prune`) if it is an unlisted catalog scan, else itself.
fn list_scan(node: Arc<LogicalPlan>, cfg: &Config, prune: bool) -> Result<Arc<LogicalPlan>> {
    let LogicalPlan::Scan {
        source: ScanSource::Parquet {
            partitions: Some(parts),
            ..
        },
        attrs,
        projection,
        filters,
        name,
    } = node.as_ref()
    else {
        return Ok(node);
    };
    if parts.listed && !prune {
        return Ok(node);
    }
    let dirs = if prune {
        prune_dirs(
            &parts.dirs,
            &partition_attrs(attrs, &parts.dirs),
            filters,
            cfg,
        )?
    } else {
        parts.dirs.clone()
    };
    // A listed scan is listed again only when filters pushed since prune it further.
    if parts.listed && dirs.dirs.len() == parts.dirs.dirs.len() {
        return Ok(node);
    }
    let options = ParquetScanOptions::from_config(cfg)?;
    let listing = list_partition_dirs(&dirs, options.threads)?;
    let size_bytes: u64 = listing.files.iter().map(|f| f.size).sum();
    let rebuilt = |source: ScanSource, filters: Vec<Expr>| {
        Arc::new(LogicalPlan::Scan {
            source,
            attrs: attrs.clone(),
            projection: projection.clone(),
            filters,
            name: name.clone(),
        })
    };
    if size_bytes == 0 {
        let empty = ScanSource::Memory {
            batches: Arc::new(Vec::new()),
        };
        return Ok(rebuilt(empty, filters.clone()));
    }
    let kept_paths: Vec<std::path::PathBuf> = dirs.dirs.iter().map(|d| d.path.clone()).collect();
    // The footers of the files just listed (the scan lists nothing again).
    let scan = ParquetScan::from_listing(kept_paths.clone(), listing, options)?;
    let file_columns: Vec<String> = scan
        .schema()
        .fields()
        .iter()
        .map(|f| f.name().to_ascii_lowercase())
        .collect();
    let missing: Vec<&Attr> = attrs
        .iter()
        .filter(|a| !file_columns.contains(&a.name.to_ascii_lowercase()))
        .collect();
    let null_for_missing = |k: &str| {
        missing
            .iter()
            .find(|a| a.key() == k)
            .map(|a| Expr::Literal(Literal::null(&a.data_type)))
    };
    let filters = filters
        .iter()
        .map(|f| replace_columns(f, &null_for_missing))
        .collect();
    let source = ScanSource::Parquet {
        paths: kept_paths,
        size_bytes,
        stats: Arc::new(scan.table_statistics()),
        partitions: Some(CatalogPartitions {
            dirs,
            listed: true,
            missing: missing.iter().map(|a| a.name.clone()).collect(),
        }),
    };
    Ok(rebuilt(source, filters))
}

/// The scan's attributes of the partition columns, in the partitions' column order.
fn partition_attrs(attrs: &[Attr], dirs: &PartitionDirs) -> Vec<Attr> {
    dirs.fields
        .iter()
        .filter_map(|f| {
            attrs
                .iter()
                .find(|a| a.name.eq_ignore_ascii_case(f.name()))
                .cloned()
        })
        .collect()
}

/// The partitions of `dirs` that pass every deterministic filter over partition columns
/// only (all of them when there is none).
fn prune_dirs(
    dirs: &Arc<PartitionDirs>,
    part_attrs: &[Attr],
    filters: &[Expr],
    cfg: &Config,
) -> Result<Arc<PartitionDirs>> {
    if part_attrs.len() != dirs.fields.len() {
        return Ok(dirs.clone());
    }
    let keys: HashSet<String> = part_attrs.iter().map(Attr::key).collect();
    let partition_filters: Vec<Expr> = filters
        .iter()
        .filter(|f| {
            let used = column_keys(f);
            !used.is_empty() && used.is_subset(&keys) && deterministic(f)
        })
        .cloned()
        .collect();
    let Some(predicate) = conjoin(partition_filters) else {
        return Ok(dirs.clone());
    };
    let mut columns: Vec<ArrayRef> = Vec::with_capacity(part_attrs.len());
    for (i, a) in part_attrs.iter().enumerate() {
        let text: ArrayRef = Arc::new(
            dirs.dirs
                .iter()
                .map(|d| d.values[i].as_deref())
                .collect::<StringArray>(),
        );
        columns.push(arrow_cast::cast(&text, &a.data_type)?);
    }
    let schema = Schema::new(
        part_attrs
            .iter()
            .map(|a| Field::new(a.key(), a.data_type.clone(), true))
            .collect::<Vec<_>>(),
    );
    let batch = RecordBatch::try_new(Arc::new(schema.clone()), columns)?;
    let bound = bind_predicate(&predicate, &BindContext::for_session(&schema, cfg))?;
    let mask = evaluate_predicate(&bound, &batch)?;
    let kept = dirs
        .dirs
        .iter()
        .enumerate()
        .filter(|(i, _)| mask.is_valid(*i) && mask.value(*i))
        .map(|(_, d)| d.clone())
        .collect();
    Ok(Arc::new(PartitionDirs {
        fields: dirs.fields.clone(),
        dirs: kept,
    }))
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use arrow_schema::DataType;
    use ferrospark_scan::PartitionDir;

    use super::*;

    fn attr(id: u64, name: &str, data_type: DataType) -> Attr {
        Attr {
            id,
            name: name.into(),
            qualifier: None,
            data_type,
            nullable: true,
            hidden: false,
        }
    }

    /// Partitions `p` (INT) x `q` (STRING): p in 0..4, q in {"01", "a", NULL}.
    fn dirs() -> Arc<PartitionDirs> {
        let mut dirs = Vec::new();
        for p in 0..4 {
            for q in [Some("01"), Some("a"), None] {
                dirs.push(PartitionDir {
                    path: PathBuf::from(format!("/t/p={p}/q={}", q.unwrap_or("null"))),
                    values: vec![Some(p.to_string()), q.map(str::to_string)],
                });
            }
        }
        Arc::new(PartitionDirs {
            fields: vec![
                Field::new("p", DataType::Int32, true),
                Field::new("q", DataType::Utf8, true),
            ],
            dirs,
        })
    }

    fn kept(filters: &[Expr]) -> Vec<String> {
        let attrs = [
            attr(1, "id", DataType::Int64),
            attr(2, "p", DataType::Int32),
            attr(3, "q", DataType::Utf8),
        ];
        let d = dirs();
        let parts = partition_attrs(&attrs, &d);
        prune_dirs(&d, &parts, filters, &Config::default())
            .expect("prunes")
            .dirs
            .iter()
            .map(|d| d.path.display().to_string())
            .collect()
    }

    fn col(k: &str) -> Expr {
        Expr::Column(k.into())
    }

    #[test]
    fn partition_filters_keep_the_partitions_they_pass() {
        let p_is_2 = col("p#2").eq(Expr::lit(Literal::integer(2)));
        assert_eq!(
            kept(std::slice::from_ref(&p_is_2)),
            ["/t/p=2/q=01", "/t/p=2/q=a", "/t/p=2/q=null"]
        );
        // The string "01" stays a string: it is not the number 1.
        let q_is_01 = col("q#3").eq(Expr::lit(Literal::string("01")));
        assert_eq!(kept(&[p_is_2.clone(), q_is_01]), ["/t/p=2/q=01"]);
        let q_null = Expr::IsNull(Box::new(col("q#3")));
        let p_gt_2 = col("p#2").gt(Expr::lit(Literal::integer(2)));
        assert_eq!(kept(&[q_null, p_gt_2]), ["/t/p=3/q=null"]);
        // NULL = anything keeps nothing.
        let q_eq_null = col("q#3").eq(Expr::lit(Literal::null(&DataType::Utf8)));
        assert!(kept(&[q_eq_null]).is_empty());
    }

    #[test]
    fn filters_reading_data_columns_prune_nothing() {
        let all = kept(&[]);
        assert_eq!(all.len(), 12);
        let mixed = col("p#2")
            .eq(Expr::lit(Literal::integer(1)))
            .or(col("id#1").gt(Expr::lit(Literal::integer(5))));
        assert_eq!(kept(&[mixed]), all);
        let data_only = col("id#1").lt(Expr::lit(Literal::integer(0)));
        assert_eq!(kept(&[data_only]), all);
    }

    #[test]
    fn a_listing_with_no_files_is_an_empty_relation() {
        let root = std::env::temp_dir().join(format!("fs-prune-{}", std::process::id()));
        let d = PartitionDirs {
            fields: vec![Field::new("p", DataType::Int32, true)],
            dirs: vec![PartitionDir {
                path: root.join("p=1"),
                values: vec![Some("1".into())],
            }],
        };
        let scan = Arc::new(LogicalPlan::Scan {
            source: ScanSource::Parquet {
                paths: vec![root],
                size_bytes: 1,
                stats: Arc::default(),
                partitions: Some(CatalogPartitions {
                    dirs: Arc::new(d),
                    listed: false,
                    missing: Vec::new(),
                }),
            },
            attrs: vec![attr(1, "a", DataType::Int32), attr(2, "p", DataType::Int32)],
            projection: None,
            filters: vec![],
            name: "t".into(),
        });
        let out = list_catalog_scans(&scan, &Config::default()).expect("lists");
        assert!(matches!(
            out.as_ref(),
            LogicalPlan::Scan {
                source: ScanSource::Memory { .. },
                ..
            }
        ));
    }
}
