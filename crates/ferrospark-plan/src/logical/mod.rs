//! The logical plan: Spark's relational operators over resolved attributes.
//!
//! Every node outputs a list of [`Attr`]s. An attribute has a unique id within its session, so
//! a resolved expression names a column as `name#id` (as Spark's plans print `l_orderkey#17`)
//! and stays unambiguous when a rule moves it across joins and projections. Expressions in a
//! resolved plan are [`Expr`] trees whose [`Expr::Column`]s hold such keys; binding them to a
//! batch schema whose fields carry the same keys gives the physical expression.

mod display;
pub mod expr_util;

use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use arrow_array::RecordBatch;
use arrow_schema::{DataType, Field, Schema, SchemaRef};
use ferrospark_expr::Expr;
use ferrospark_join::{JoinStrategy, JoinType};

pub use display::{expand_text, explain_logical, expr_text, sort_text};

/// A resolved column: what one output position of a plan node holds.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Attr {
    /// Unique within the session.
    pub id: u64,
    /// The name users see.
    pub name: String,
    /// The relation alias it can be qualified with (`t` in `t.a`).
    pub qualifier: Option<String>,
    /// Its type.
    pub data_type: DataType,
    /// Whether it may hold NULLs.
    pub nullable: bool,
    /// Reachable only by its qualified name, and left out of `*`: the other side's key of a
    /// SQL `USING` / `NATURAL` join (Spark's `qualifiedAccessOnly` metadata columns).
    #[serde(default)]
    pub hidden: bool,
}

impl Attr {
    /// The name resolved expressions use for it: `name#id`.
    pub fn key(&self) -> String {
        format!("{}#{}", self.name, self.id)
    }

    /// A column expression reading this attribute.
    pub fn column(&self) -> Expr {
        Expr::Column(self.key())
    }

    /// The field of a batch holding this attribute.
    pub fn field(&self) -> Field {
        Field::new(self.key(), self.data_type.clone(), self.nullable)
    }

    /// The same attribute under another qualifier.
    pub fn with_qualifier(&self, q: Option<String>) -> Attr {
        Attr {
            qualifier: q,
            ..self.clone()
        }
    }
}

/// The schema of batches carrying `attrs`, fields named by [`Attr::key`].
pub fn attrs_schema(attrs: &[Attr]) -> SchemaRef {
    Arc::new(Schema::new(
        attrs.iter().map(Attr::field).collect::<Vec<_>>(),
    ))
}

/// Hands out attribute ids; one per session, shared by its queries.
#[derive(Debug, Default, Clone)]
pub struct IdGen(Arc<AtomicU64>);

impl IdGen {
    /// A new id.
    pub fn next(&self) -> u64 {
        self.0.fetch_add(1, Ordering::Relaxed)
    }
}

/// Where a relation's rows come from. On the wire (a stage sent to Spark tasks) a Parquet
/// source keeps its paths and size and leaves its footer statistics behind (a task plans its
/// fragment without estimates from them); batches travel as Arrow IPC.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub enum ScanSource {
    /// Parquet files (a file, a list or a directory, hive partitions included).
    Parquet {
        /// The paths as given.
        paths: Vec<PathBuf>,
        /// Bytes on disk, for join selection.
        size_bytes: u64,
        /// Rows and column ranges from the footers, for the planner's estimates.
        #[serde(skip)]
        stats: Arc<ferrospark_scan::TableStatistics>,
        /// A catalog table's partitions, read instead of walking `paths`.
        #[serde(default)]
        partitions: Option<CatalogPartitions>,
    },
    /// Arrow batches held in memory (a DataFrame made from Arrow data, inline VALUES).
    Memory {
        /// The batches, fields named as the user named them.
        #[serde(with = "wire_batches")]
        batches: Arc<Vec<RecordBatch>>,
    },
    /// Files of a row format (CSV, JSON, Avro) read with Spark's options; the columns were fixed when the
    /// relation was made (the user's schema, a CSV header's names, or inferred types).
    Files {
        /// The format.
        format: ferrospark_scan::FileFormat,
        /// The paths as given.
        paths: Vec<PathBuf>,
        /// Bytes on disk, for join selection.
        size_bytes: u64,
        /// Spark's read options by Spark's names.
        options: std::collections::BTreeMap<String, String>,
        /// The files' columns (with the corrupt-record column where the user put it).
        schema: arrow_schema::SchemaRef,
    },
    /// Rows the engine running the query hands over (a PySpark DataFrame given to a
    /// session on Spark): only a stage running on Spark reads them.
    External {
        /// Spark's estimate of their size, for join selection.
        size_bytes: u64,
    },
}

/// The partitions a catalog table's scan reads (Spark's `CatalogFileIndex`, then the
/// `InMemoryFileIndex` of the partitions left after pruning).
///
/// ```text
///   relation: every registered partition, listed = false
///     -> PruneFileSourcePartitions: those its partition filters keep, listed = true
///        (or, with the rule off, all of them listed after the optimizer)
/// ```
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct CatalogPartitions {
    /// The directories and their values.
    pub dirs: Arc<ferrospark_scan::PartitionDirs>,
    /// Whether the files were listed (sizes and footer statistics known).
    pub listed: bool,
    /// Declared data columns no file has (added by `ALTER TABLE ... ADD COLUMNS`): they
    /// read as NULL.
    pub missing: Vec<String>,
}

/// In-memory batches as one hex-encoded Arrow IPC stream.
mod wire_batches {
    use std::sync::Arc;

    use arrow_array::RecordBatch;
    use arrow_schema::Schema;
    use ferrospark_expr::wire::{batches_to_ipc, from_hex, ipc_to_batches, to_hex};
    use serde::de::Error as _;
    use serde::ser::Error as _;
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(b: &Arc<Vec<RecordBatch>>, s: S) -> Result<S::Ok, S::Error> {
        let schema = b
            .first()
            .map(|x| x.schema())
            .unwrap_or_else(|| Arc::new(Schema::empty()));
        let bytes = batches_to_ipc(&schema, b).map_err(S::Error::custom)?;
        s.serialize_str(&to_hex(&bytes))
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Arc<Vec<RecordBatch>>, D::Error> {
        let text = String::deserialize(d)?;
        let bytes = from_hex(&text).map_err(D::Error::custom)?;
        let (_, batches) = ipc_to_batches(&bytes).map_err(D::Error::custom)?;
        Ok(Arc::new(batches))
    }
}

/// A sort key of a resolved plan.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct SortExpr {
    /// The key.
    pub expr: Expr,
    /// Ascending?
    pub ascending: bool,
    /// NULLs first?
    pub nulls_first: bool,
}

/// An aggregate function call of an [`LogicalPlan::Aggregate`].
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct AggCall {
    /// Spark's function name (`sum`, `count`, ...).
    pub name: String,
    /// Resolved arguments.
    pub args: Vec<Expr>,
    /// `DISTINCT`
    pub distinct: bool,
    /// `IGNORE NULLS`
    pub ignore_nulls: bool,
}

/// A window function call of a [`LogicalPlan::Window`]: the function (an aggregate or a
/// window-only function, as [`Expr::Function`] / [`Expr::Aggregate`]) and its specification.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct WindowCallExpr {
    /// The function call, arguments resolved.
    pub func: Expr,
    /// PARTITION BY keys.
    pub partition_by: Vec<Expr>,
    /// ORDER BY keys.
    pub order_by: Vec<SortExpr>,
    /// The frame, as Spark SQL text (`ROWS BETWEEN 1 PRECEDING AND CURRENT ROW`), if given.
    pub frame: Option<FrameSpec>,
}

pub use ferrospark_expr::expr::{FrameEdge, FrameSpec};

/// Set operations besides UNION.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum SetOpKind {
    /// `INTERSECT`
    Intersect,
    /// `EXCEPT` / `MINUS`
    Except,
}

/// A generator of [`LogicalPlan::Generate`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum GeneratorKind {
    /// `explode(array)` (`col`) / `explode(map)` (`key`, `value`)
    Explode,
    /// `posexplode`: `pos`, then what `explode` makes.
    PosExplode,
    /// `inline(array of structs)`: the structs' fields.
    Inline,
    /// `stack(n, v1, ..., vk)`: `n` rows of `ceil(k / n)` columns `col0`, `col1`, ...
    Stack,
    /// `json_tuple(json, k1, ..., kn)`: one row of string columns `c0`, `c1`, ..., each
    /// key's value.
    JsonTuple,
}

impl GeneratorKind {
    /// The generator a function name calls (`explode_outer` is `explode`, outer).
    pub fn from_name(name: &str) -> Option<(GeneratorKind, bool)> {
        Some(match name.to_ascii_lowercase().as_str() {
            "explode" => (GeneratorKind::Explode, false),
            "explode_outer" => (GeneratorKind::Explode, true),
            "posexplode" => (GeneratorKind::PosExplode, false),
            "posexplode_outer" => (GeneratorKind::PosExplode, true),
            "inline" => (GeneratorKind::Inline, false),
            "inline_outer" => (GeneratorKind::Inline, true),
            "stack" => (GeneratorKind::Stack, false),
            "json_tuple" => (GeneratorKind::JsonTuple, false),
            _ => return None,
        })
    }

    /// Spark's name.
    pub fn name(self) -> &'static str {
        match self {
            GeneratorKind::Explode => "explode",
            GeneratorKind::PosExplode => "posexplode",
            GeneratorKind::Inline => "inline",
            GeneratorKind::Stack => "stack",
            GeneratorKind::JsonTuple => "json_tuple",
        }
    }

    /// Whether the element's position comes first.
    pub fn has_position(self) -> bool {
        self == GeneratorKind::PosExplode
    }

    /// Whether each element is a struct spread into its fields.
    pub fn is_inline(self) -> bool {
        self == GeneratorKind::Inline
    }
}

/// A logical plan node.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub enum LogicalPlan {
    /// Rows from files or memory. `filters` and `projection` are what the optimizer pushed
    /// into the scan.
    Scan {
        /// The source.
        source: ScanSource,
        /// Every column the source has.
        attrs: Vec<Attr>,
        /// Positions of `attrs` read, in output order; `None` = all.
        projection: Option<Vec<usize>>,
        /// Conjuncts the scan applies (over `attrs`' keys).
        filters: Vec<Expr>,
        /// The relation's name, for EXPLAIN.
        name: String,
    },
    /// One row with no columns (`SELECT 1`).
    OneRow,
    /// No rows (a filter the optimizer proved false).
    Empty {
        /// Its output.
        attrs: Vec<Attr>,
    },
    /// `SELECT exprs`: each output attribute and the expression computing it.
    Project {
        /// Input.
        input: Arc<LogicalPlan>,
        /// Output attributes with their expressions.
        exprs: Vec<(Expr, Attr)>,
    },
    /// `WHERE predicate`.
    Filter {
        /// Input.
        input: Arc<LogicalPlan>,
        /// The predicate.
        predicate: Expr,
    },
    /// `GROUP BY group` computing `aggs`; output: the group attributes then the aggregates.
    Aggregate {
        /// Input.
        input: Arc<LogicalPlan>,
        /// Grouping expressions with their output attributes.
        group: Vec<(Expr, Attr)>,
        /// Aggregate calls with their output attributes.
        aggs: Vec<(AggCall, Attr)>,
    },
    /// Each input row once per projection (GROUPING SETS / ROLLUP / CUBE): the input's
    /// columns, each grouping column or NULL, and the grouping set's id.
    Expand {
        /// Input.
        input: Arc<LogicalPlan>,
        /// One expression list per grouping set, one expression per output attribute.
        projections: Vec<Vec<Expr>>,
        /// Output attributes (input attributes passed through keep their ids).
        attrs: Vec<Attr>,
    },
    /// Each input row beside each row its generator makes (`explode`, `LATERAL VIEW`):
    /// the input's columns, then `attrs`.
    Generate {
        /// Input.
        input: Arc<LogicalPlan>,
        /// Which generator.
        kind: GeneratorKind,
        /// Its arguments, over the input.
        args: Vec<Expr>,
        /// One row of NULLs for an input row that makes none.
        outer: bool,
        /// The generated columns.
        attrs: Vec<Attr>,
    },
    /// A join; the condition is over the left then the right attributes.
    Join {
        /// Left input.
        left: Arc<LogicalPlan>,
        /// Right input.
        right: Arc<LogicalPlan>,
        /// The join type.
        join_type: JoinType,
        /// The ON condition, if any.
        condition: Option<Expr>,
        /// A join strategy hint.
        hint: Option<JoinStrategy>,
    },
    /// Window functions appended to the input's columns.
    Window {
        /// Input.
        input: Arc<LogicalPlan>,
        /// The calls with their output attributes.
        exprs: Vec<(WindowCallExpr, Attr)>,
    },
    /// `ORDER BY`.
    Sort {
        /// Input.
        input: Arc<LogicalPlan>,
        /// Keys.
        keys: Vec<SortExpr>,
    },
    /// `LIMIT fetch OFFSET skip`.
    Limit {
        /// Input.
        input: Arc<LogicalPlan>,
        /// Rows skipped.
        skip: usize,
        /// Rows kept after skipping.
        fetch: Option<usize>,
    },
    /// `UNION ALL` of inputs with the same number of columns; output attributes new.
    Union {
        /// Inputs.
        inputs: Vec<Arc<LogicalPlan>>,
        /// Output attributes (widened types).
        attrs: Vec<Attr>,
    },
    /// `INTERSECT` / `EXCEPT`, DISTINCT or ALL.
    SetOp {
        /// Left input (its attributes are the output).
        left: Arc<LogicalPlan>,
        /// Right input.
        right: Arc<LogicalPlan>,
        /// Which operation.
        kind: SetOpKind,
        /// ALL?
        all: bool,
    },
    /// `(subquery) AS alias` / a view name: the same attributes under a new qualifier.
    SubqueryAlias {
        /// Input.
        input: Arc<LogicalPlan>,
        /// The alias.
        alias: String,
        /// The input's attributes, requalified.
        attrs: Vec<Attr>,
    },
}

impl LogicalPlan {
    /// The keys (`name#id`) of the attributes this node outputs.
    pub fn output_keys(&self) -> std::collections::HashSet<String> {
        self.output().iter().map(Attr::key).collect()
    }

    /// The attributes this node outputs, in order.
    pub fn output(&self) -> Vec<Attr> {
        match self {
            LogicalPlan::Scan {
                attrs, projection, ..
            } => match projection {
                Some(p) => p.iter().map(|&i| attrs[i].clone()).collect(),
                None => attrs.clone(),
            },
            LogicalPlan::OneRow => Vec::new(),
            LogicalPlan::Empty { attrs } => attrs.clone(),
            LogicalPlan::Project { exprs, .. } => exprs.iter().map(|(_, a)| a.clone()).collect(),
            LogicalPlan::Filter { input, .. }
            | LogicalPlan::Sort { input, .. }
            | LogicalPlan::Limit { input, .. } => input.output(),
            LogicalPlan::Aggregate { group, aggs, .. } => group
                .iter()
                .map(|(_, a)| a.clone())
                .chain(aggs.iter().map(|(_, a)| a.clone()))
                .collect(),
            LogicalPlan::Join {
                left,
                right,
                join_type,
                ..
            } => {
                let nullable = |attrs: Vec<Attr>, yes: bool| -> Vec<Attr> {
                    attrs
                        .into_iter()
                        .map(|a| Attr {
                            nullable: a.nullable || yes,
                            ..a
                        })
                        .collect()
                };
                match join_type {
                    JoinType::LeftSemi | JoinType::LeftAnti | JoinType::NullAwareAnti => {
                        left.output()
                    }
                    jt => {
                        let l_null = matches!(jt, JoinType::RightOuter | JoinType::FullOuter);
                        let r_null = matches!(jt, JoinType::LeftOuter | JoinType::FullOuter);
                        let mut out = nullable(left.output(), l_null);
                        out.extend(nullable(right.output(), r_null));
                        out
                    }
                }
            }
            LogicalPlan::Window { input, exprs } => {
                let mut out = input.output();
                out.extend(exprs.iter().map(|(_, a)| a.clone()));
                out
            }
            LogicalPlan::Union { attrs, .. } | LogicalPlan::Expand { attrs, .. } => attrs.clone(),
            LogicalPlan::Generate { input, attrs, .. } => {
                let mut out = input.output();
                out.extend(attrs.iter().cloned());
                out
            }
            LogicalPlan::SetOp { left, .. } => left.output(),
            LogicalPlan::SubqueryAlias { attrs, .. } => attrs.clone(),
        }
    }

    /// The node's inputs.
    pub fn children(&self) -> Vec<&Arc<LogicalPlan>> {
        match self {
            LogicalPlan::Scan { .. } | LogicalPlan::OneRow | LogicalPlan::Empty { .. } => vec![],
            LogicalPlan::Project { input, .. }
            | LogicalPlan::Filter { input, .. }
            | LogicalPlan::Aggregate { input, .. }
            | LogicalPlan::Window { input, .. }
            | LogicalPlan::Sort { input, .. }
            | LogicalPlan::Limit { input, .. }
            | LogicalPlan::Expand { input, .. }
            | LogicalPlan::Generate { input, .. }
            | LogicalPlan::SubqueryAlias { input, .. } => vec![input],
            LogicalPlan::Join { left, right, .. } | LogicalPlan::SetOp { left, right, .. } => {
                vec![left, right]
            }
            LogicalPlan::Union { inputs, .. } => inputs.iter().collect(),
        }
    }

    /// The same node over new inputs (in [`LogicalPlan::children`] order).
    pub fn with_children(&self, mut children: Vec<Arc<LogicalPlan>>) -> LogicalPlan {
        let mut next = || children.remove(0);
        match self {
            LogicalPlan::Scan { .. } | LogicalPlan::OneRow | LogicalPlan::Empty { .. } => {
                self.clone()
            }
            LogicalPlan::Project { exprs, .. } => LogicalPlan::Project {
                input: next(),
                exprs: exprs.clone(),
            },
            LogicalPlan::Filter { predicate, .. } => LogicalPlan::Filter {
                input: next(),
                predicate: predicate.clone(),
            },
            LogicalPlan::Aggregate { group, aggs, .. } => LogicalPlan::Aggregate {
                input: next(),
                group: group.clone(),
                aggs: aggs.clone(),
            },
            LogicalPlan::Window { exprs, .. } => LogicalPlan::Window {
                input: next(),
                exprs: exprs.clone(),
            },
            LogicalPlan::Sort { keys, .. } => LogicalPlan::Sort {
                input: next(),
                keys: keys.clone(),
            },
            LogicalPlan::Limit { skip, fetch, .. } => LogicalPlan::Limit {
                input: next(),
                skip: *skip,
                fetch: *fetch,
            },
            LogicalPlan::Expand {
                projections, attrs, ..
            } => LogicalPlan::Expand {
                input: next(),
                projections: projections.clone(),
                attrs: attrs.clone(),
            },
            LogicalPlan::SubqueryAlias { alias, attrs, .. } => LogicalPlan::SubqueryAlias {
                input: next(),
                alias: alias.clone(),
                attrs: attrs.clone(),
            },
            LogicalPlan::Generate {
                kind,
                args,
                outer,
                attrs,
                ..
            } => LogicalPlan::Generate {
                input: next(),
                kind: *kind,
                args: args.clone(),
                outer: *outer,
                attrs: attrs.clone(),
            },
            LogicalPlan::Join {
                join_type,
                condition,
                hint,
                ..
            } => {
                let left = next();
                LogicalPlan::Join {
                    left,
                    right: next(),
                    join_type: *join_type,
                    condition: condition.clone(),
                    hint: *hint,
                }
            }
            LogicalPlan::SetOp { kind, all, .. } => {
                let left = next();
                LogicalPlan::SetOp {
                    left,
                    right: next(),
                    kind: *kind,
                    all: *all,
                }
            }
            LogicalPlan::Union { attrs, .. } => LogicalPlan::Union {
                inputs: children,
                attrs: attrs.clone(),
            },
        }
    }

    /// Rewrites the tree bottom-up with `f` (children first, then the rebuilt node).
    pub fn transform_up(
        self: &Arc<Self>,
        f: &mut dyn FnMut(Arc<LogicalPlan>) -> ferrospark_common::Result<Arc<LogicalPlan>>,
    ) -> ferrospark_common::Result<Arc<LogicalPlan>> {
        let kids = self.children();
        let node = if kids.is_empty() {
            self.clone()
        } else {
            let new_kids = kids
                .into_iter()
                .map(|k| k.transform_up(f))
                .collect::<ferrospark_common::Result<Vec<_>>>()?;
            Arc::new(self.with_children(new_kids))
        };
        f(node)
    }

    /// Every expression the node holds (not its children's).
    pub fn expressions(&self) -> Vec<&Expr> {
        match self {
            LogicalPlan::Scan { filters, .. } => filters.iter().collect(),
            LogicalPlan::Project { exprs, .. } => exprs.iter().map(|(e, _)| e).collect(),
            LogicalPlan::Filter { predicate, .. } => vec![predicate],
            LogicalPlan::Aggregate { group, aggs, .. } => group
                .iter()
                .map(|(e, _)| e)
                .chain(aggs.iter().flat_map(|(a, _)| a.args.iter()))
                .collect(),
            LogicalPlan::Join { condition, .. } => condition.iter().collect(),
            LogicalPlan::Window { exprs, .. } => {
                let mut out = Vec::new();
                for (w, _) in exprs {
                    out.push(&w.func);
                    out.extend(w.partition_by.iter());
                    out.extend(w.order_by.iter().map(|s| &s.expr));
                }
                out
            }
            LogicalPlan::Sort { keys, .. } => keys.iter().map(|k| &k.expr).collect(),
            LogicalPlan::Expand { projections, .. } => projections.iter().flatten().collect(),
            LogicalPlan::Generate { args, .. } => args.iter().collect(),
            _ => Vec::new(),
        }
    }
}

/// `node` with `f` applied to each of its own expressions (not its children's).
pub fn rewrite_expressions(
    node: &Arc<LogicalPlan>,
    f: &mut dyn FnMut(&Expr) -> ferrospark_common::Result<Expr>,
) -> ferrospark_common::Result<Arc<LogicalPlan>> {
    let all = |v: &[Expr], f: &mut dyn FnMut(&Expr) -> ferrospark_common::Result<Expr>| {
        v.iter()
            .map(&mut *f)
            .collect::<ferrospark_common::Result<Vec<_>>>()
    };
    Ok(Arc::new(match node.as_ref() {
        LogicalPlan::Scan {
            source,
            attrs,
            projection,
            filters,
            name,
        } => LogicalPlan::Scan {
            source: source.clone(),
            attrs: attrs.clone(),
            projection: projection.clone(),
            filters: all(filters, f)?,
            name: name.clone(),
        },
        LogicalPlan::Project { input, exprs } => LogicalPlan::Project {
            input: input.clone(),
            exprs: exprs
                .iter()
                .map(|(e, a)| Ok((f(e)?, a.clone())))
                .collect::<ferrospark_common::Result<_>>()?,
        },
        LogicalPlan::Filter { input, predicate } => LogicalPlan::Filter {
            input: input.clone(),
            predicate: f(predicate)?,
        },
        LogicalPlan::Aggregate { input, group, aggs } => LogicalPlan::Aggregate {
            input: input.clone(),
            group: group
                .iter()
                .map(|(e, a)| Ok((f(e)?, a.clone())))
                .collect::<ferrospark_common::Result<_>>()?,
            aggs: aggs
                .iter()
                .map(|(c, a)| {
                    Ok((
                        AggCall {
                            args: all(&c.args, f)?,
                            ..c.clone()
                        },
                        a.clone(),
                    ))
                })
                .collect::<ferrospark_common::Result<_>>()?,
        },
        LogicalPlan::Join {
            left,
            right,
            join_type,
            condition,
            hint,
        } => LogicalPlan::Join {
            left: left.clone(),
            right: right.clone(),
            join_type: *join_type,
            condition: condition.as_ref().map(&mut *f).transpose()?,
            hint: *hint,
        },
        LogicalPlan::Sort { input, keys } => LogicalPlan::Sort {
            input: input.clone(),
            keys: keys
                .iter()
                .map(|k| {
                    Ok(SortExpr {
                        expr: f(&k.expr)?,
                        ..k.clone()
                    })
                })
                .collect::<ferrospark_common::Result<_>>()?,
        },
        LogicalPlan::Expand {
            input,
            projections,
            attrs,
        } => LogicalPlan::Expand {
            input: input.clone(),
            projections: projections
                .iter()
                .map(|p| all(p, f))
                .collect::<ferrospark_common::Result<_>>()?,
            attrs: attrs.clone(),
        },
        LogicalPlan::Generate {
            input,
            kind,
            args,
            outer,
            attrs,
        } => LogicalPlan::Generate {
            input: input.clone(),
            kind: *kind,
            args: all(args, f)?,
            outer: *outer,
            attrs: attrs.clone(),
        },
        _ => return Ok(node.clone()),
    }))
}
