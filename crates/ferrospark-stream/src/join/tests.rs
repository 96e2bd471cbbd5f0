//! The join state manager against a model: a multi-map per version.

use std::collections::BTreeMap;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use super::state::{JoinSide, JoinStateManager, StoredRow};
use crate::state::{open_provider, ProviderKind, StateStoreConf, StateStoreId};

type Model = BTreeMap<Vec<u8>, Vec<(Vec<u8>, bool)>>;

fn sorted(mut v: Vec<(Vec<u8>, bool)>) -> Vec<(Vec<u8>, bool)> {
    v.sort();
    v
}

fn rows_of(v: Vec<StoredRow>) -> Vec<(Vec<u8>, bool)> {
    sorted(v.into_iter().map(|r| (r.row, r.matched)).collect())
}

/// Appends, joins (marking matches), removals by key and by value over 25 versions, with
/// the providers reopened every fifth version; each key's rows and flags match the model's.
#[test]
fn a_sides_rows_match_a_model() {
    for kind in [ProviderKind::Memory, ProviderKind::Disk] {
        let dir = tempfile::tempdir().expect("tempdir");
        let conf = StateStoreConf {
            provider: kind,
            min_deltas_for_snapshot: 3,
            min_versions_to_retain: 10,
        };
        let [counts_name, rows_name] = JoinSide::Left.store_names();
        let id = StateStoreId::new(dir.path(), 0, 4);
        let mut counts = open_provider(&id.clone().named(counts_name), &conf).expect("open");
        let mut rows = open_provider(&id.clone().named(rows_name), &conf).expect("open");
        let mut rng = StdRng::seed_from_u64(11);
        let mut model = Model::new();
        for v in 0..25u64 {
            if v % 5 == 4 {
                counts = open_provider(&id.clone().named(counts_name), &conf).expect("reopen");
                rows = open_provider(&id.clone().named(rows_name), &conf).expect("reopen");
            }
            let mut m = JoinStateManager::open(counts.as_mut(), rows.as_mut(), v).expect("state");
            for _ in 0..40 {
                let key = vec![rng.random_range(0..12u8)];
                let row = vec![rng.random_range(0..50u8)];
                match rng.random_range(0..10) {
                    0..=5 => {
                        m.append(&key, &row, false).expect("append");
                        model.entry(key).or_default().push((row, false));
                    }
                    6 | 7 => {
                        // Rows below a bound join; they are marked matched.
                        let bound = rng.random_range(0..50u8);
                        let mut joined = m
                            .join_with(&key, false, &mut |r| Ok(r[0] < bound))
                            .expect("join");
                        joined.sort();
                        let mut want = Vec::new();
                        for (r, matched) in model.entry(key.clone()).or_default() {
                            if r[0] < bound {
                                *matched = true;
                                want.push(r.clone());
                            }
                        }
                        model.retain(|_, rows| !rows.is_empty());
                        want.sort();
                        assert_eq!(joined, want);
                    }
                    8 => {
                        let below = rng.random_range(0..12u8);
                        let got = m.remove_by_key(&mut |k| Ok(k[0] < below)).expect("by key");
                        let mut want = Vec::new();
                        model.retain(|k, rows| {
                            if k[0] < below {
                                want.extend(rows.iter().cloned());
                                false
                            } else {
                                true
                            }
                        });
                        assert_eq!(rows_of(got), sorted(want));
                    }
                    _ => {
                        let below = rng.random_range(0..50u8);
                        let got = m
                            .remove_by_value(&mut |r| Ok(r[0] < below))
                            .expect("by value");
                        let mut want = Vec::new();
                        for rows in model.values_mut() {
                            want.extend(rows.iter().filter(|(r, _)| r[0] < below).cloned());
                            rows.retain(|(r, _)| r[0] >= below);
                        }
                        model.retain(|_, rows| !rows.is_empty());
                        assert_eq!(rows_of(got), sorted(want));
                    }
                }
            }
            for (k, want) in &model {
                assert_eq!(
                    rows_of(m.get(k).expect("get")),
                    sorted(want.clone()),
                    "{kind:?} v{v}"
                );
            }
            assert_eq!(
                m.keys().expect("keys"),
                model.keys().cloned().collect::<Vec<_>>()
            );
            let total: usize = model.values().map(Vec::len).sum();
            assert_eq!(m.num_rows().expect("rows"), total as u64);
            assert_eq!(m.commit().expect("commit"), v + 1);
        }
    }
}

#[test]
fn matched_rows_can_be_skipped() {
    let dir = tempfile::tempdir().expect("tempdir");
    let conf = StateStoreConf::default();
    let id = StateStoreId::new(dir.path(), 1, 0);
    let [a, b] = JoinSide::Right.store_names();
    let mut counts = open_provider(&id.clone().named(a), &conf).expect("open");
    let mut rows = open_provider(&id.named(b), &conf).expect("open");
    let mut m = JoinStateManager::open(counts.as_mut(), rows.as_mut(), 0).expect("state");
    m.append(b"k", b"r1", false).expect("append");
    m.append(b"k", b"r2", true).expect("append");
    let got = m.join_with(b"k", true, &mut |_| Ok(true)).expect("join");
    assert_eq!(got, vec![b"r1".to_vec()]);
    assert!(m.get(b"k").expect("get").iter().all(|r| r.matched));
    assert!(m.get(b"other").expect("get").is_empty());
}
