//! `JoinSelection`: which of Spark's five join operators runs a join, and which side it
//! builds, from hints, sizes and configuration, as Spark's `JoinSelection` strategy decides.

use ferrospark_common::{FerroError, Result};

use crate::{BuildSide, JoinType};

/// Spark's physical join operators.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub enum JoinStrategy {
    /// `BroadcastHashJoinExec`: the build side sent to every task, a hash table built once.
    BroadcastHash,
    /// `ShuffledHashJoinExec`: both sides shuffled on the keys, a hash table per partition.
    ShuffledHash,
    /// `SortMergeJoinExec`: both sides shuffled and sorted on the keys, then merged.
    SortMerge,
    /// `BroadcastNestedLoopJoinExec`: the build side sent everywhere, every pair checked.
    BroadcastNestedLoop,
    /// `CartesianProductExec`: every pair of partitions (inner-like joins only).
    Cartesian,
}

impl JoinStrategy {
    /// The name users pass as `strategy=` (and Spark's hint for it).
    pub fn parse(name: &str) -> Result<Self> {
        Ok(match name.to_ascii_lowercase().as_str() {
            "broadcast_hash" | "broadcast" => JoinStrategy::BroadcastHash,
            "shuffle_hash" | "shuffled_hash" => JoinStrategy::ShuffledHash,
            "sort_merge" | "shuffle_merge" | "merge" => JoinStrategy::SortMerge,
            "nested_loop" | "broadcast_nested_loop" => JoinStrategy::BroadcastNestedLoop,
            "cartesian" | "shuffle_replicate_nl" => JoinStrategy::Cartesian,
            other => {
                return Err(FerroError::Config(format!(
                    "unknown join strategy `{other}`; use auto, broadcast_hash, shuffle_hash, sort_merge, nested_loop or cartesian"
                )))
            }
        })
    }

    /// The strategy Spark's join hint `name` asks for (`BROADCAST`, `MERGE`, `SHUFFLE_HASH`,
    /// `SHUFFLE_REPLICATE_NL` and their aliases, any case); `None` for hints that are not join
    /// hints, which Spark ignores.
    pub fn from_hint(name: &str) -> Option<Self> {
        Some(match name.to_ascii_uppercase().as_str() {
            "BROADCAST" | "BROADCASTJOIN" | "MAPJOIN" => JoinStrategy::BroadcastHash,
            "MERGE" | "SHUFFLE_MERGE" | "MERGEJOIN" => JoinStrategy::SortMerge,
            "SHUFFLE_HASH" => JoinStrategy::ShuffledHash,
            "SHUFFLE_REPLICATE_NL" => JoinStrategy::Cartesian,
            _ => return None,
        })
    }

    /// Of two hinted strategies, the one Spark's JoinSelection honours: broadcast over
    /// sort-merge over shuffled hash over the others.
    pub fn stronger_hint(self, other: Self) -> Self {
        let rank = |s: Self| match s {
            JoinStrategy::BroadcastHash => 0,
            JoinStrategy::SortMerge => 1,
            JoinStrategy::ShuffledHash => 2,
            JoinStrategy::Cartesian | JoinStrategy::BroadcastNestedLoop => 3,
        };
        if rank(other) < rank(self) {
            other
        } else {
            self
        }
    }

    /// Every strategy.
    pub const ALL: [JoinStrategy; 5] = [
        JoinStrategy::BroadcastHash,
        JoinStrategy::ShuffledHash,
        JoinStrategy::SortMerge,
        JoinStrategy::BroadcastNestedLoop,
        JoinStrategy::Cartesian,
    ];

    /// Spark's physical operator name (`BroadcastHashJoin`, ...).
    pub fn operator_name(self) -> &'static str {
        match self {
            JoinStrategy::BroadcastHash => "BroadcastHashJoin",
            JoinStrategy::ShuffledHash => "ShuffledHashJoin",
            JoinStrategy::SortMerge => "SortMergeJoin",
            JoinStrategy::BroadcastNestedLoop => "BroadcastNestedLoopJoin",
            JoinStrategy::Cartesian => "CartesianProduct",
        }
    }

    /// The strategy whose operator Spark names `name`.
    pub fn of_operator(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|s| s.operator_name() == name)
    }

    /// The user-facing name.
    pub fn name(self) -> &'static str {
        match self {
            JoinStrategy::BroadcastHash => "broadcast_hash",
            JoinStrategy::ShuffledHash => "shuffle_hash",
            JoinStrategy::SortMerge => "sort_merge",
            JoinStrategy::BroadcastNestedLoop => "nested_loop",
            JoinStrategy::Cartesian => "cartesian",
        }
    }
}

/// What the selection looks at.
#[derive(Debug, Clone)]
pub struct JoinSelectionInput {
    /// The join type.
    pub join_type: JoinType,
    /// Whether the condition has equi-keys.
    pub has_equi_keys: bool,
    /// Whether every key can be sorted (sort-merge needs it).
    pub keys_orderable: bool,
    /// Estimated bytes of the left input.
    pub left_bytes: u64,
    /// Estimated bytes of the right input.
    pub right_bytes: u64,
    /// `spark.sql.autoBroadcastJoinThreshold` (negative: never broadcast by size).
    pub broadcast_threshold: i64,
    /// `spark.sql.join.preferSortMergeJoin`.
    pub prefer_sort_merge: bool,
    /// `spark.sql.shuffle.partitions`.
    pub shuffle_partitions: u64,
    /// An explicit strategy (a hint), if any.
    pub hint: Option<JoinStrategy>,
}

/// Sides Spark's broadcast joins can build for `jt` (`canBuildBroadcastLeft/Right`).
/// Whether a broadcast join of type `jt` can build `side`: never a side the join keeps every
/// row of (each task would emit that side's unmatched rows).
pub fn broadcast_buildable(jt: JoinType, side: BuildSide) -> bool {
    use JoinType::*;
    match side {
        BuildSide::Left => matches!(jt, Inner | Cross | RightOuter),
        BuildSide::Right => matches!(
            jt,
            Inner | Cross | LeftOuter | LeftSemi | LeftAnti | NullAwareAnti
        ),
    }
}

/// Sides the shuffled hash join can build for `jt` (`canBuildShuffledHashJoinLeft/Right`).
fn shuffled_buildable(jt: JoinType, side: BuildSide) -> bool {
    use JoinType::*;
    match side {
        BuildSide::Left => matches!(jt, Inner | Cross | LeftOuter | RightOuter | FullOuter),
        BuildSide::Right => matches!(
            jt,
            Inner | Cross | LeftOuter | RightOuter | FullOuter | LeftSemi | LeftAnti
        ),
    }
}

/// Sides an in-process hash join can build: Spark's, and also the left side of a semi or
/// anti join (the right side then streams through, and left rows are kept or dropped at its
/// end), which pays when the left side is the smaller.
fn locally_buildable(jt: JoinType, side: BuildSide) -> bool {
    shuffled_buildable(jt, side)
        || (side == BuildSide::Left && matches!(jt, JoinType::LeftSemi | JoinType::LeftAnti))
}

fn inner_like(jt: JoinType) -> bool {
    matches!(jt, JoinType::Inner | JoinType::Cross)
}

impl JoinSelectionInput {
    fn bytes(&self, side: BuildSide) -> u64 {
        match side {
            BuildSide::Left => self.left_bytes,
            BuildSide::Right => self.right_bytes,
        }
    }

    /// Of the sides `ok` allows, the smaller (the right one on a tie, as Spark).
    fn smaller(&self, ok: impl Fn(BuildSide) -> bool) -> Option<BuildSide> {
        match (ok(BuildSide::Left), ok(BuildSide::Right)) {
            (true, true) if self.left_bytes < self.right_bytes => Some(BuildSide::Left),
            (true, true) => Some(BuildSide::Right),
            (true, false) => Some(BuildSide::Left),
            (false, true) => Some(BuildSide::Right),
            (false, false) => None,
        }
    }

    fn broadcastable_by_size(&self, side: BuildSide) -> bool {
        self.broadcast_threshold >= 0 && self.bytes(side) <= self.broadcast_threshold as u64
    }

    /// `canBuildLocalHashMapBySize` and `muchSmaller`: small enough per partition, and at
    /// least three times smaller than the other side.
    fn hash_map_worth_it(&self, side: BuildSide) -> bool {
        let other = match side {
            BuildSide::Left => self.right_bytes,
            BuildSide::Right => self.left_bytes,
        };
        let per_partition =
            (self.broadcast_threshold.max(0) as u64).saturating_mul(self.shuffle_partitions);
        self.bytes(side) < per_partition && self.bytes(side).saturating_mul(3) <= other
    }
}

/// The in-process choice: Spark's, except that where Spark would sort-merge (which pays for
/// sorting both sides so that a cluster's partitions stay bounded) one process builds a hash
/// table on the smaller side instead. The hash join still turns into a sort-merge join when
/// its build side outgrows `ferrospark.memory.limit`, so memory stays bounded; hints are kept.
///
/// A semi or anti join Spark would broadcast builds its left side instead when that side is
/// the smaller: the big right side then streams once through a small table.
///
/// `local_bytes` are finer size estimates of the (left, right) sides for choosing the side to
/// build.
pub fn select_join_in_process(
    i: &JoinSelectionInput,
    local_bytes: (u64, u64),
) -> Result<(JoinStrategy, BuildSide)> {
    let chosen = select_join(i)?;
    if i.hint.is_some() {
        return Ok(chosen);
    }
    let local = JoinSelectionInput {
        left_bytes: local_bytes.0,
        right_bytes: local_bytes.1,
        ..i.clone()
    };
    let side = local.smaller(|s| locally_buildable(i.join_type, s));
    match (chosen.0, side) {
        (JoinStrategy::SortMerge | JoinStrategy::ShuffledHash, Some(side)) => {
            return Ok((JoinStrategy::ShuffledHash, side));
        }
        // A semi or anti join whose left side is the smaller builds it rather than the
        // broadcast right side: the right side streams once, the table holds fewer rows.
        (JoinStrategy::BroadcastHash, Some(BuildSide::Left))
            if matches!(i.join_type, JoinType::LeftSemi | JoinType::LeftAnti) =>
        {
            return Ok((JoinStrategy::ShuffledHash, BuildSide::Left));
        }
        // An inner join both of whose sides could be broadcast builds the side the finer
        // estimates find smaller: Spark's estimate of a join is the product of its sides, so
        // a few rows of a filtered join would otherwise probe a whole table's hash table.
        (JoinStrategy::BroadcastHash, Some(side))
            if i.join_type == JoinType::Inner
                && side != chosen.1
                && i.broadcastable_by_size(side) =>
        {
            return Ok((JoinStrategy::BroadcastHash, side));
        }
        _ => {}
    }
    Ok(chosen)
}

/// Spark's choice of operator and build side (the build side is irrelevant to sort-merge
/// and cartesian joins, reported as the right). An explicit strategy the operator cannot run
/// for this join type is an error saying so.
pub fn select_join(i: &JoinSelectionInput) -> Result<(JoinStrategy, BuildSide)> {
    let jt = i.join_type;
    let refuse = |s: JoinStrategy, why: &str| {
        Err(FerroError::Config(format!(
            "Spark's {} join cannot run this {} join: {why}",
            s.name(),
            jt.name()
        )))
    };
    // NOT IN: Spark broadcasts the subquery's side (a null-aware hash join, else a nested
    // loop over the broadcast side), never shuffles it: a NULL key must be seen by every task.
    if jt == JoinType::NullAwareAnti {
        return match i.hint {
            None | Some(JoinStrategy::BroadcastHash) if i.has_equi_keys => {
                Ok((JoinStrategy::BroadcastHash, BuildSide::Right))
            }
            Some(hint) => refuse(hint, "NOT IN runs as a broadcast hash join"),
            None => refuse(
                JoinStrategy::BroadcastHash,
                "NOT IN compares one key (use on=...)",
            ),
        };
    }
    if let Some(hint) = i.hint {
        return match hint {
            JoinStrategy::BroadcastHash if !i.has_equi_keys => {
                refuse(hint, "it needs equality keys (use nested_loop)")
            }
            JoinStrategy::BroadcastHash => match i.smaller(|s| broadcast_buildable(jt, s)) {
                Some(side) => Ok((hint, side)),
                None => refuse(hint, "it cannot build either side of a full outer join"),
            },
            JoinStrategy::ShuffledHash if !i.has_equi_keys => {
                refuse(hint, "it needs equality keys (use nested_loop)")
            }
            JoinStrategy::ShuffledHash => match i.smaller(|s| shuffled_buildable(jt, s)) {
                Some(side) => Ok((hint, side)),
                None => refuse(hint, "it cannot build either side"),
            },
            JoinStrategy::SortMerge if !i.has_equi_keys => {
                refuse(hint, "it needs equality keys (use nested_loop)")
            }
            JoinStrategy::SortMerge if !i.keys_orderable => {
                refuse(hint, "its keys cannot be sorted")
            }
            JoinStrategy::SortMerge => Ok((hint, BuildSide::Right)),
            JoinStrategy::Cartesian if !inner_like(jt) => {
                refuse(hint, "a cartesian product runs inner and cross joins only")
            }
            JoinStrategy::Cartesian => Ok((hint, BuildSide::Right)),
            JoinStrategy::BroadcastNestedLoop => Ok((
                hint,
                i.smaller(|s| broadcast_buildable(jt, s))
                    .unwrap_or_else(|| i.smaller(|_| true).unwrap_or(BuildSide::Right)),
            )),
        };
    }
    if i.has_equi_keys {
        if let Some(side) = i.smaller(|s| broadcast_buildable(jt, s) && i.broadcastable_by_size(s))
        {
            return Ok((JoinStrategy::BroadcastHash, side));
        }
        let forced_hash = !i.keys_orderable;
        if !i.prefer_sort_merge || forced_hash {
            let side = i.smaller(|s| shuffled_buildable(jt, s) && i.hash_map_worth_it(s));
            let side = side.or_else(|| {
                forced_hash
                    .then(|| i.smaller(|s| shuffled_buildable(jt, s)))
                    .flatten()
            });
            if let Some(side) = side {
                return Ok((JoinStrategy::ShuffledHash, side));
            }
        }
        if i.keys_orderable {
            return Ok((JoinStrategy::SortMerge, BuildSide::Right));
        }
    }
    if let Some(side) = i.smaller(|s| broadcast_buildable(jt, s) && i.broadcastable_by_size(s)) {
        return Ok((JoinStrategy::BroadcastNestedLoop, side));
    }
    if inner_like(jt) {
        return Ok((JoinStrategy::Cartesian, BuildSide::Right));
    }
    Ok((
        JoinStrategy::BroadcastNestedLoop,
        i.smaller(|_| true).unwrap_or(BuildSide::Right),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    const MB: u64 = 1 << 20;

    #[test]
    fn hints_name_strategies_and_the_stronger_one_wins() {
        assert_eq!(
            JoinStrategy::from_hint("mapJoin"),
            Some(JoinStrategy::BroadcastHash)
        );
        assert_eq!(
            JoinStrategy::from_hint("shuffle_merge"),
            Some(JoinStrategy::SortMerge)
        );
        assert_eq!(JoinStrategy::from_hint("repartition"), None);
        let (b, m, h, c) = (
            JoinStrategy::BroadcastHash,
            JoinStrategy::SortMerge,
            JoinStrategy::ShuffledHash,
            JoinStrategy::Cartesian,
        );
        assert_eq!(c.stronger_hint(h), h);
        assert_eq!(h.stronger_hint(m), m);
        assert_eq!(m.stronger_hint(b), b);
        assert_eq!(b.stronger_hint(c), b);
    }

    fn input(jt: JoinType, left: u64, right: u64) -> JoinSelectionInput {
        JoinSelectionInput {
            join_type: jt,
            has_equi_keys: true,
            keys_orderable: true,
            left_bytes: left,
            right_bytes: right,
            broadcast_threshold: 10 * MB as i64,
            prefer_sort_merge: true,
            shuffle_partitions: 200,
            hint: None,
        }
    }

    fn pick(i: &JoinSelectionInput) -> (JoinStrategy, BuildSide) {
        select_join(i).expect("selects")
    }

    #[test]
    fn not_in_is_always_a_broadcast_hash_join() {
        let mut i = input(JoinType::NullAwareAnti, MB, 100 * MB);
        assert_eq!(
            select_join(&i).ok(),
            Some((JoinStrategy::BroadcastHash, BuildSide::Right))
        );
        for hint in [
            JoinStrategy::ShuffledHash,
            JoinStrategy::SortMerge,
            JoinStrategy::BroadcastNestedLoop,
        ] {
            i.hint = Some(hint);
            assert!(select_join(&i).is_err(), "{hint:?}");
        }
    }

    #[test]
    fn in_process_builds_the_smaller_side_where_spark_shuffles_or_a_semi_join_broadcasts() {
        use BuildSide::*;
        use JoinStrategy::*;
        let local = |i: &JoinSelectionInput, l: u64, r: u64| {
            select_join_in_process(i, (l, r)).expect("selects")
        };
        // Spark sort-merges two large sides; one process hashes the smaller.
        let big = input(JoinType::Inner, 100 * MB, 50 * MB);
        assert_eq!(pick(&big).0, SortMerge);
        assert_eq!(local(&big, 100 * MB, 50 * MB), (ShuffledHash, Right));
        assert_eq!(local(&big, 20 * MB, 50 * MB), (ShuffledHash, Left));
        // A semi / anti join Spark broadcasts on the right builds a smaller left side.
        for jt in [JoinType::LeftSemi, JoinType::LeftAnti] {
            let i = input(jt, 30 * MB, 8 * MB);
            assert_eq!(pick(&i), (BroadcastHash, Right));
            assert_eq!(local(&i, MB, 8 * MB), (ShuffledHash, Left), "{jt:?}");
            assert_eq!(local(&i, 30 * MB, 8 * MB), (BroadcastHash, Right), "{jt:?}");
        }
        // An inner join both of whose sides Spark could broadcast builds the locally
        // smaller one; one Spark can only broadcast on one side stays Spark's.
        let both = input(JoinType::Inner, 5 * MB, 8 * MB);
        assert_eq!(pick(&both), (BroadcastHash, Left));
        assert_eq!(local(&both, 9 * MB, MB), (BroadcastHash, Right));
        assert_eq!(local(&both, MB, 9 * MB), (BroadcastHash, Left));
        // NOT IN, hints and broadcasts of one possible side stay Spark's.
        let inner = input(JoinType::Inner, 30 * MB, 8 * MB);
        assert_eq!(local(&inner, MB, 8 * MB), (BroadcastHash, Right));
        let naaj = input(JoinType::NullAwareAnti, 30 * MB, 8 * MB);
        assert_eq!(local(&naaj, MB, 8 * MB), (BroadcastHash, Right));
        let mut hinted = input(JoinType::LeftSemi, 30 * MB, 8 * MB);
        hinted.hint = Some(BroadcastHash);
        assert_eq!(local(&hinted, MB, 8 * MB), (BroadcastHash, Right));
    }

    #[test]
    fn sizes_and_configuration_choose_like_spark() {
        use BuildSide::*;
        use JoinStrategy::*;
        // A small side is broadcast, if the operator can build it.
        assert_eq!(
            pick(&input(JoinType::Inner, 100 * MB, MB)),
            (BroadcastHash, Right)
        );
        assert_eq!(
            pick(&input(JoinType::Inner, MB, 100 * MB)),
            (BroadcastHash, Left)
        );
        assert_eq!(
            pick(&input(JoinType::LeftOuter, MB, 100 * MB)),
            (SortMerge, Right)
        );
        assert_eq!(
            pick(&input(JoinType::RightOuter, MB, 100 * MB)),
            (BroadcastHash, Left)
        );
        assert_eq!(
            pick(&input(JoinType::FullOuter, MB, MB)),
            (SortMerge, Right)
        );
        // Both small: the smaller one.
        assert_eq!(
            pick(&input(JoinType::Inner, 2 * MB, 3 * MB)),
            (BroadcastHash, Left)
        );
        // Threshold -1 never broadcasts by size.
        let mut i = input(JoinType::Inner, 100 * MB, MB);
        i.broadcast_threshold = -1;
        assert_eq!(pick(&i), (SortMerge, Right));
        // preferSortMergeJoin=false: shuffled hash when a side is 3x smaller and fits a
        // partition's hash map.
        let mut i = input(JoinType::Inner, 900 * MB, 300 * MB);
        i.prefer_sort_merge = false;
        assert_eq!(pick(&i), (ShuffledHash, Right));
        let mut i = input(JoinType::Inner, 899 * MB, 300 * MB);
        i.prefer_sort_merge = false;
        assert_eq!(pick(&i), (SortMerge, Right), "not 3x smaller");
        let mut i = input(JoinType::LeftSemi, 900 * MB, 3000 * MB);
        i.prefer_sort_merge = false;
        assert_eq!(pick(&i), (SortMerge, Right), "semi joins build right only");
        // Keys that cannot be sorted force a hash join.
        let mut i = input(JoinType::Inner, 900 * MB, 800 * MB);
        i.keys_orderable = false;
        assert_eq!(pick(&i), (ShuffledHash, Right));
        // Without equi-keys: nested loop if a side can be broadcast, else cartesian (inner),
        // else nested loop building the smaller side.
        let mut i = input(JoinType::LeftOuter, 100 * MB, MB);
        i.has_equi_keys = false;
        assert_eq!(pick(&i), (BroadcastNestedLoop, Right));
        let mut i = input(JoinType::Inner, 100 * MB, 100 * MB);
        i.has_equi_keys = false;
        assert_eq!(pick(&i), (Cartesian, Right));
        let mut i = input(JoinType::FullOuter, 50 * MB, 100 * MB);
        i.has_equi_keys = false;
        assert_eq!(pick(&i), (BroadcastNestedLoop, Left));
    }

    #[test]
    fn hints_win_and_impossible_ones_are_errors() {
        use BuildSide::*;
        use JoinStrategy::*;
        let mut i = input(JoinType::Inner, 900 * MB, 800 * MB);
        i.hint = Some(BroadcastHash);
        assert_eq!(pick(&i), (BroadcastHash, Right));
        i.hint = Some(ShuffledHash);
        assert_eq!(pick(&i), (ShuffledHash, Right));
        i.hint = Some(Cartesian);
        assert_eq!(pick(&i), (Cartesian, Right));
        let mut i = input(JoinType::FullOuter, MB, MB);
        i.hint = Some(BroadcastHash);
        let err = select_join(&i).expect_err("full outer cannot broadcast");
        assert!(err.to_string().contains("broadcast_hash"), "{err}");
        i.hint = Some(Cartesian);
        assert!(select_join(&i).is_err());
        let mut i = input(JoinType::LeftOuter, MB, MB);
        i.has_equi_keys = false;
        i.hint = Some(SortMerge);
        let err = select_join(&i).expect_err("sort-merge needs keys");
        assert!(err.to_string().contains("equality keys"), "{err}");
        assert_eq!(
            JoinStrategy::parse("shuffle_replicate_nl").expect("parses"),
            Cartesian
        );
    }
}
