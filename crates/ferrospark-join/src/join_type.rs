//! Join types, build sides and the output schema of a join.

use std::sync::Arc;

use arrow_schema::{Field, Schema, SchemaRef};
use ferrospark_common::{FerroError, Result};

/// Spark's join types.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub enum JoinType {
    /// Rows of both sides that match.
    Inner,
    /// Every left row, with its matches or NULLs.
    LeftOuter,
    /// Every right row, with its matches or NULLs.
    RightOuter,
    /// Every row of both sides.
    FullOuter,
    /// Left rows with at least one match, once each.
    LeftSemi,
    /// Left rows without a match.
    LeftAnti,
    /// `NOT IN`: a left anti join where a NULL on either side makes the comparison unknown
    /// (an empty right side keeps every left row; a NULL right key keeps none; a NULL left
    /// key drops that row).
    NullAwareAnti,
    /// Every pair of rows (an inner join without keys).
    Cross,
}

impl JoinType {
    /// The type Spark's `how` argument names (`inner`, `left`, `left_outer`, `full`, `semi`,
    /// `leftanti`, `cross`, ...).
    pub fn parse(how: &str) -> Result<Self> {
        let h = how.to_ascii_lowercase().replace('_', "");
        Ok(match h.as_str() {
            "inner" => JoinType::Inner,
            "left" | "leftouter" => JoinType::LeftOuter,
            "right" | "rightouter" => JoinType::RightOuter,
            "full" | "outer" | "fullouter" => JoinType::FullOuter,
            "semi" | "leftsemi" => JoinType::LeftSemi,
            "anti" | "leftanti" => JoinType::LeftAnti,
            "nullawareanti" | "notin" => JoinType::NullAwareAnti,
            "cross" => JoinType::Cross,
            _ => {
                return Err(FerroError::Config(format!(
                    "unknown join type `{how}`; use inner, left, right, full, semi, anti, null_aware_anti or cross"
                )))
            }
        })
    }

    /// The short name `parse` reads back (`inner`, `left`, `right`, `full`, `semi`, `anti`,
    /// `null_aware_anti`, `cross`).
    pub fn how(self) -> &'static str {
        match self {
            JoinType::Inner => "inner",
            JoinType::LeftOuter => "left",
            JoinType::RightOuter => "right",
            JoinType::FullOuter => "full",
            JoinType::LeftSemi => "semi",
            JoinType::LeftAnti => "anti",
            JoinType::NullAwareAnti => "null_aware_anti",
            JoinType::Cross => "cross",
        }
    }

    /// Whether unmatched rows of `side` come out (NULL-extended).
    pub fn keeps(self, side: BuildSide) -> bool {
        match side {
            BuildSide::Left => self.keeps_left(),
            BuildSide::Right => self.keeps_right(),
        }
    }

    /// Spark's name for the type.
    pub fn name(self) -> &'static str {
        match self {
            JoinType::Inner => "Inner",
            JoinType::LeftOuter => "LeftOuter",
            JoinType::RightOuter => "RightOuter",
            JoinType::FullOuter => "FullOuter",
            JoinType::LeftSemi => "LeftSemi",
            JoinType::LeftAnti => "LeftAnti",
            JoinType::NullAwareAnti => "LeftAnti(nullAware)",
            JoinType::Cross => "Cross",
        }
    }

    /// Whether only the left columns come out.
    pub fn left_only(self) -> bool {
        matches!(
            self,
            JoinType::LeftSemi | JoinType::LeftAnti | JoinType::NullAwareAnti
        )
    }

    /// Whether unmatched left rows come out (NULL-extended).
    pub fn keeps_left(self) -> bool {
        matches!(self, JoinType::LeftOuter | JoinType::FullOuter)
    }

    /// Whether unmatched right rows come out (NULL-extended).
    pub fn keeps_right(self) -> bool {
        matches!(self, JoinType::RightOuter | JoinType::FullOuter)
    }
}

/// Which input a hash join builds its table from; the other one streams through it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum BuildSide {
    /// The left input is built.
    Left,
    /// The right input is built.
    Right,
}

/// The output schema of `join_type` over `left` and `right`: left columns then right ones,
/// the columns of a side that may be NULL-extended made nullable; left only for semi / anti.
pub fn join_schema(left: &Schema, right: &Schema, join_type: JoinType) -> SchemaRef {
    let side = |s: &Schema, nullable: bool| -> Vec<Field> {
        s.fields()
            .iter()
            .map(|f| {
                let f = f.as_ref().clone();
                if nullable {
                    f.with_nullable(true)
                } else {
                    f
                }
            })
            .collect()
    };
    let mut fields = side(left, join_type.keeps_right());
    if !join_type.left_only() {
        fields.extend(side(right, join_type.keeps_left()));
    }
    Arc::new(Schema::new(fields))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spark_spellings_parse() {
        for (how, want) in [
            ("inner", JoinType::Inner),
            ("left_outer", JoinType::LeftOuter),
            ("LEFT", JoinType::LeftOuter),
            ("rightouter", JoinType::RightOuter),
            ("outer", JoinType::FullOuter),
            ("full_outer", JoinType::FullOuter),
            ("left_semi", JoinType::LeftSemi),
            ("anti", JoinType::LeftAnti),
            ("cross", JoinType::Cross),
        ] {
            assert_eq!(JoinType::parse(how).expect("parses"), want, "{how}");
        }
        let err = JoinType::parse("sideways").expect_err("unknown");
        assert!(err.to_string().contains("sideways"));
    }
}
