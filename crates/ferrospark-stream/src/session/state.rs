//! The sessions of a streaming session window aggregation in one state store, as Spark's
//! `StreamingSessionWindowStateManager` keeps them: every session of a group key under a
//! common prefix, so the sessions of the keys a batch touches come from one prefix scan each.
//!
//! ```text
//!   len (u32) ++ group key ++ start (i64, sign bit flipped)  ->  end (i64) ++ buffers
//! ```
//! Numbers are big-endian; flipping the start's sign bit makes the keys of one group sort by
//! start. `buffers` are the aggregates' intermediate states as one `arrow-row` row.

use ferrospark_common::{FerroError, Result};

use crate::state::StateStore;

/// A stored session: its group, bounds (microseconds, end exclusive) and aggregate buffers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredSession {
    /// The encoded group key.
    pub key: Vec<u8>,
    /// Its first event time.
    pub start: i64,
    /// Its last event time plus its gap.
    pub end: i64,
    /// The encoded aggregate buffers.
    pub buffers: Vec<u8>,
}

/// The prefix of every session of `group`.
pub fn group_prefix(group: &[u8]) -> Result<Vec<u8>> {
    let len = u32::try_from(group.len())
        .map_err(|_| FerroError::Unsupported(format!("a group key of {} bytes", group.len())))?;
    let mut k = Vec::with_capacity(group.len() + 12);
    k.extend_from_slice(&len.to_be_bytes());
    k.extend_from_slice(group);
    Ok(k)
}

fn flipped(start: i64) -> [u8; 8] {
    ((start as u64) ^ (1 << 63)).to_be_bytes()
}

/// The state key of `group`'s session starting at `start`.
pub fn session_key(group: &[u8], start: i64) -> Result<Vec<u8>> {
    let mut k = group_prefix(group)?;
    k.extend_from_slice(&flipped(start));
    Ok(k)
}

fn decoded(key: &[u8], value: &[u8]) -> Result<StoredSession> {
    let bad = || FerroError::Internal("a session state entry that is too short".into());
    if key.len() < 12 || value.len() < 8 {
        return Err(bad());
    }
    let mut len = [0u8; 4];
    len.copy_from_slice(&key[..4]);
    let len = u32::from_be_bytes(len) as usize;
    if key.len() != 4 + len + 8 {
        return Err(bad());
    }
    let mut start = [0u8; 8];
    start.copy_from_slice(&key[4 + len..]);
    let mut end = [0u8; 8];
    end.copy_from_slice(&value[..8]);
    Ok(StoredSession {
        key: key[4..4 + len].to_vec(),
        start: (u64::from_be_bytes(start) ^ (1 << 63)) as i64,
        end: i64::from_be_bytes(end),
        buffers: value[8..].to_vec(),
    })
}

/// Stores `session` (replacing the one of its group with its start, if any).
pub fn put_session(store: &mut dyn StateStore, session: &StoredSession) -> Result<()> {
    let mut v = Vec::with_capacity(8 + session.buffers.len());
    v.extend_from_slice(&session.end.to_be_bytes());
    v.extend_from_slice(&session.buffers);
    store.put(&session_key(&session.key, session.start)?, &v)
}

/// Removes `group`'s session starting at `start`.
pub fn remove_session(store: &mut dyn StateStore, group: &[u8], start: i64) -> Result<()> {
    store.remove(&session_key(group, start)?)
}

/// The sessions of `group` (every session when `group` is `None`), by key then start.
pub fn sessions(store: &dyn StateStore, group: Option<&[u8]>) -> Result<Vec<StoredSession>> {
    let prefix = match group {
        Some(g) => group_prefix(g)?,
        None => Vec::new(),
    };
    let mut out = Vec::new();
    let mut bad = None;
    store.scan(&prefix, &mut |k, v| {
        match decoded(k, v) {
            Ok(s) => out.push(s),
            Err(e) => bad = Some(e),
        }
        Ok(bad.is_none())
    })?;
    match bad {
        Some(e) => Err(e),
        None => Ok(out),
    }
}

/// The sessions whose end is at or below `bound` (microseconds), by key then start: what
/// the watermark frees. One pass in no order reads only the ends; what it finds is sorted.
pub fn ended_sessions(store: &dyn StateStore, bound: i64) -> Result<Vec<StoredSession>> {
    let mut out = Vec::new();
    let mut bad = None;
    store.for_each(&mut |k, v| {
        let ends = v
            .get(..8)
            .and_then(|b| b.try_into().ok())
            .map(i64::from_be_bytes);
        if ends.is_some_and(|e| e <= bound) {
            match decoded(k, v) {
                Ok(s) => out.push(s),
                Err(e) => bad = Some(e),
            }
        }
        Ok(bad.is_none())
    })?;
    match bad {
        Some(e) => Err(e),
        None => {
            // The order of their state keys: group length, group, start.
            out.sort_unstable_by(|a, b| {
                (a.key.len(), &a.key, a.start).cmp(&(b.key.len(), &b.key, b.start))
            });
            Ok(out)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::state::{open_provider, StateStoreConf, StateStoreId};

    #[test]
    fn a_groups_sessions_come_by_start_and_ends_are_read_alone() {
        // With and without the memory provider's prefix index, and on disk.
        for conf in [
            StateStoreConf::default(),
            StateStoreConf {
                prefix_index: true,
                ..StateStoreConf::default()
            },
            StateStoreConf {
                provider: crate::state::ProviderKind::Disk,
                ..StateStoreConf::default()
            },
        ] {
            let dir = tempfile::tempdir().expect("tempdir");
            let mut p = open_provider(&StateStoreId::new(dir.path(), 0, 0), &conf).expect("open");
            let mut st = p.get_store(0).expect("store");
            let s = |key: &[u8], start: i64, end: i64| StoredSession {
                key: key.to_vec(),
                start,
                end,
                buffers: vec![start as u8],
            };
            for x in [
                s(b"b", 7, 20),
                s(b"a", 5, 9),
                s(b"ab", 0, 2),
                s(b"a", -3, 1),
            ] {
                put_session(st.as_mut(), &x).expect("put");
            }
            let a = sessions(st.as_ref(), Some(b"a")).expect("scan");
            assert_eq!(
                a,
                vec![s(b"a", -3, 1), s(b"a", 5, 9)],
                "a's sessions only, by start ({conf:?})"
            );
            let ended = ended_sessions(st.as_ref(), 9).expect("ended");
            assert_eq!(
                ended,
                vec![s(b"a", -3, 1), s(b"a", 5, 9), s(b"ab", 0, 2)],
                "by group length, group, start ({conf:?})"
            );
            remove_session(st.as_mut(), b"a", 5).expect("remove");
            assert_eq!(sessions(st.as_ref(), Some(b"a")).expect("a").len(), 1);
            assert_eq!(sessions(st.as_ref(), None).expect("all").len(), 3);
            st.commit().expect("commit");
            drop(st);
            // The index is rebuilt when the version is read back from its files.
            let mut p = open_provider(&StateStoreId::new(dir.path(), 0, 0), &conf).expect("reopen");
            let st = p.get_store(1).expect("version 1");
            assert_eq!(
                sessions(st.as_ref(), Some(b"a")).expect("a"),
                vec![s(b"a", -3, 1)]
            );
            assert_eq!(sessions(st.as_ref(), Some(b"ab")).expect("ab").len(), 1);
        }
    }
}
