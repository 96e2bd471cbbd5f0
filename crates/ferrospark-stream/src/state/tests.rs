//! Both providers against a model (a map per version), and each provider's recovery, re-runs,
//! retention and damaged files.

use std::collections::BTreeMap;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use super::files::FileKind;
use super::*;

fn conf(provider: ProviderKind, snapshot_every: u64, retain: u64) -> StateStoreConf {
    StateStoreConf {
        provider,
        min_deltas_for_snapshot: snapshot_every,
        min_versions_to_retain: retain,
        ..StateStoreConf::default()
    }
}

const BOTH: [ProviderKind; 2] = [ProviderKind::Memory, ProviderKind::Disk];

/// `group` with its length before it, as prefix-indexed keys start.
fn grouped(group: &[u8]) -> Vec<u8> {
    let mut k = (group.len() as u32).to_be_bytes().to_vec();
    k.extend_from_slice(group);
    k
}

type Model = BTreeMap<Vec<u8>, Vec<u8>>;

/// Random puts and removes over 40 versions on keys sharing a few prefixes; the provider is
/// reopened (state recovered from its files) every seventh version and checked against the
/// model, including prefix scans and unordered iteration, after every commit. Keys are
/// length-prefixed groups, so the memory provider's prefix index runs too.
#[test]
fn random_changes_match_a_model_across_reopens() {
    let indexed = StateStoreConf {
        prefix_index: true,
        ..conf(ProviderKind::Memory, 4, 1000)
    };
    let zstd = StateStoreConf {
        codec: Codec::Zstd,
        ..conf(ProviderKind::Memory, 4, 1000)
    };
    for c in [
        conf(ProviderKind::Memory, 4, 1000),
        indexed,
        zstd,
        conf(ProviderKind::Disk, 4, 1000),
    ] {
        let kind = (c.provider, c.prefix_index, c.codec);
        let dir = tempfile::tempdir().expect("tempdir");
        let id = StateStoreId::new(dir.path(), 3, 1);
        let mut provider = open_provider(&id, &c).expect("open");
        let mut rng = StdRng::seed_from_u64(7);
        let mut models: Vec<Model> = vec![Model::new()];
        for v in 0..40u64 {
            if v % 7 == 6 {
                provider = open_provider(&id, &c).expect("reopen");
            }
            let mut model = models[v as usize].clone();
            let mut store = provider.get_store(v).expect("store");
            for _ in 0..rng.random_range(0..60) {
                let group = ["a", "ab", "b", "é"][rng.random_range(0..4)].as_bytes();
                let mut key = grouped(group);
                key.extend_from_slice(format!("/{}", rng.random_range(0..30)).as_bytes());
                if rng.random_bool(0.3) {
                    store.remove(&key).expect("remove");
                    model.remove(&key);
                } else if rng.random_bool(0.3) {
                    // A read-modify-write of a few keys, `key` twice: the second sees the
                    // first's value. A value grows by a byte or keeps its length (so a key
                    // changed twice in a version is overwritten in place or written anew).
                    let mut other = grouped(group);
                    other.extend_from_slice(format!("/{}", rng.random_range(0..30)).as_bytes());
                    let keys = [key.as_slice(), other.as_slice(), key.as_slice()];
                    let grow = rng.random_bool(0.5);
                    let mut seen = Vec::new();
                    store
                        .update_many(&keys, &mut |i, old, new| {
                            seen.push((i, old.map(<[u8]>::to_vec)));
                            match old {
                                Some(v) if grow => new.extend_from_slice(&[v, &[7]].concat()),
                                Some(v) => new.extend(v.iter().map(|b| b.wrapping_add(1))),
                                None => new.push(1),
                            }
                            Ok(())
                        })
                        .expect("update_many");
                    let mut want_seen = Vec::new();
                    for (i, k) in keys.iter().enumerate() {
                        let old = model.get(*k).cloned();
                        want_seen.push((i, old.clone()));
                        let new = match old {
                            Some(v) if grow => [v.as_slice(), &[7]].concat(),
                            Some(v) => v.iter().map(|b| b.wrapping_add(1)).collect(),
                            None => vec![1],
                        };
                        model.insert(k.to_vec(), new);
                    }
                    assert_eq!(seen, want_seen, "{kind:?} v{v} update_many saw");
                } else {
                    let value = vec![rng.random::<u8>(); rng.random_range(0..5)];
                    store.put(&key, &value).expect("put");
                    model.insert(key, value);
                }
            }
            let prefixes = [
                Vec::new(),
                grouped(b"a"),
                grouped(b"ab"),
                grouped("é".as_bytes()),
                grouped(b"zz"),
                vec![0, 0, 0],
                [grouped(b"ab"), b"/1".to_vec()].concat(),
            ];
            for prefix in &prefixes {
                let prefix = prefix.as_slice();
                let want: Vec<(Vec<u8>, Vec<u8>)> = model
                    .iter()
                    .filter(|(k, _)| k.starts_with(prefix))
                    .map(|(k, v)| (k.clone(), v.clone()))
                    .collect();
                assert_eq!(
                    collect(store.as_ref(), prefix).expect("scan"),
                    want,
                    "{kind:?} v{v} prefix {prefix:?}"
                );
            }
            let mut all = Vec::new();
            store
                .for_each(&mut |k, v| {
                    all.push((k.to_vec(), v.to_vec()));
                    Ok(true)
                })
                .expect("for_each");
            all.sort();
            let want: Vec<_> = model.clone().into_iter().collect();
            assert_eq!(all, want, "{kind:?} v{v} every entry");
            let a1 = [grouped(b"a"), b"/1".to_vec()].concat();
            assert_eq!(
                store.get(&a1).expect("get").map(|v| v.into_owned()),
                model.get(&a1).cloned()
            );
            assert_eq!(store.commit().expect("commit"), v + 1);
            drop(store);
            assert_eq!(
                provider.metrics().num_keys,
                model.len() as u64,
                "{kind:?} v{v}"
            );
            models.push(model);
        }
        // Every version still loads as it was.
        for (v, model) in models.iter().enumerate() {
            let provider2 = &mut open_provider(&id, &c).expect("reopen");
            let store = provider2.get_store(v as u64).expect("old version");
            let got: Model = collect(store.as_ref(), b"")
                .expect("scan")
                .into_iter()
                .collect();
            assert_eq!(&got, model, "{kind:?} version {v}");
        }
    }
}

#[test]
fn an_aborted_or_dropped_store_changes_nothing() {
    for kind in BOTH {
        let dir = tempfile::tempdir().expect("tempdir");
        let id = StateStoreId::new(dir.path(), 0, 0);
        let mut p = open_provider(&id, &conf(kind, 10, 100)).expect("open");
        let mut s = p.get_store(0).expect("store");
        s.put(b"k", b"1").expect("put");
        s.commit().expect("commit");
        drop(s);
        let mut s = p.get_store(1).expect("store");
        s.put(b"k", b"2").expect("put");
        s.put(b"x", b"9").expect("put");
        s.abort();
        assert!(
            s.put(b"y", b"1").is_err(),
            "an aborted store takes no changes"
        );
        drop(s);
        let s = p.get_store(1).expect("store");
        assert_eq!(
            s.get(b"k").expect("get").map(|v| v.into_owned()),
            Some(b"1".to_vec())
        );
        assert_eq!(s.get(b"x").expect("get").map(|v| v.into_owned()), None);
        drop(s);
        // A store dropped without commit or abort (an error in the batch) is undone too,
        // however often it changed a key.
        let mut s = p.get_store(1).expect("store");
        s.put(b"k", b"3").expect("put");
        s.remove(b"k").expect("remove");
        s.put(b"k", b"4").expect("put");
        s.put(b"z", b"5").expect("put");
        s.remove(b"z").expect("remove");
        drop(s);
        // An update that fails part way (its first key changed) is undone with the store.
        let mut s = p.get_store(1).expect("store");
        let failed = s.update_many(&[b"k", b"w", b"k"], &mut |i, _, new| {
            if i == 2 {
                return Err(FerroError::Internal("refused".into()));
            }
            new.extend_from_slice(b"longer than before");
            Ok(())
        });
        assert!(failed.is_err());
        assert_eq!(
            s.get(b"w").expect("get").map(|v| v.into_owned()),
            Some(b"longer than before".to_vec()),
            "the keys before the failure were changed"
        );
        drop(s);
        let mut s = p.get_store(1).expect("store");
        assert_eq!(
            collect(s.as_ref(), b"").expect("scan"),
            vec![(b"k".to_vec(), b"1".to_vec())]
        );
        s.remove(b"k").expect("remove");
        s.commit().expect("commit");
        drop(s);
        let s = p.get_store(2).expect("store");
        assert_eq!(s.get(b"k").expect("get").map(|v| v.into_owned()), None);
        drop(s);
        assert_eq!(p.latest_version().expect("latest"), 2);
        // A version never committed cannot be loaded.
        assert!(matches!(p.get_store(5), Err(FerroError::StateStore { .. })));
    }
}

/// A version whose delta runs over several compressed blocks (4.5 MB of records, sealed as
/// the puts fill them):
/// aborted, it leaves the map as it was, every key put back from the undo log; committed,
/// a new provider reads it back whole from its file.
#[test]
fn a_delta_of_many_blocks_is_undone_or_read_back_whole() {
    let dir = tempfile::tempdir().expect("tempdir");
    let id = StateStoreId::new(dir.path(), 0, 0);
    let c = conf(ProviderKind::Memory, 10, 100);
    let mut p = open_provider(&id, &c).expect("open");
    let mut s = p.get_store(0).expect("store");
    for i in 0..1000u32 {
        s.put(&i.to_be_bytes(), b"first").expect("put");
    }
    s.commit().expect("commit");
    drop(s);
    let value = |i: u32| vec![(i % 251) as u8; 200 + (i % 50) as usize];
    let batch = |s: &mut dyn StateStore| {
        for i in 0..20_000u32 {
            s.put(&i.to_be_bytes(), &value(i)).expect("put");
            if i % 3 == 0 {
                s.remove(&(i / 2).to_be_bytes()).expect("remove");
            }
        }
    };
    let mut s = p.get_store(1).expect("store");
    batch(s.as_mut());
    s.abort();
    drop(s);
    let s = p.get_store(1).expect("store");
    let want: Vec<(Vec<u8>, Vec<u8>)> = (0..1000u32)
        .map(|i| (i.to_be_bytes().to_vec(), b"first".to_vec()))
        .collect();
    assert_eq!(collect(s.as_ref(), b"").expect("scan"), want, "undone");
    drop(s);
    let mut s = p.get_store(1).expect("store");
    batch(s.as_mut());
    let committed = collect(s.as_ref(), b"").expect("scan");
    s.commit().expect("commit");
    drop(s);
    assert!(id.dir().join("2.delta").exists(), "the batch's delta");
    let mut fresh = open_provider(&id, &c).expect("reopen");
    let s = fresh.get_store(2).expect("from files");
    assert_eq!(
        collect(s.as_ref(), b"").expect("scan"),
        committed,
        "read back"
    );
}

/// The memory provider's delta holds the version's changes as their outcome: a key put
/// several times is one record with its last value (an entry overwritten in place or
/// replaced), a key put then removed in the version is a remove, a removed key put again is
/// a put, and keys the version did not touch have no record. Reading the delta back over
/// the version before gives the version committed.
#[test]
fn a_memory_delta_holds_each_put_key_once_with_its_last_value() {
    let dir = tempfile::tempdir().expect("tempdir");
    let id = StateStoreId::new(dir.path(), 0, 0);
    let c = conf(ProviderKind::Memory, 100, 100);
    let mut p = open_provider(&id, &c).expect("open");
    let mut s = p.get_store(0).expect("store");
    for k in [b"kept", b"gone", b"back"] {
        s.put(k, b"v1").expect("put");
    }
    s.commit().expect("commit");
    drop(s);
    let mut s = p.get_store(1).expect("store");
    s.put(b"kept", b"v2").expect("put");
    s.put(b"kept", b"v3").expect("put in place");
    s.put(b"kept", b"longer v4").expect("put replacing");
    s.remove(b"gone").expect("remove");
    s.remove(b"back").expect("remove");
    s.put(b"back", b"again").expect("put again");
    s.put(b"brief", b"x").expect("put");
    s.remove(b"brief").expect("remove what the version put");
    s.put(b"new", b"n").expect("put");
    s.commit().expect("commit");
    drop(s);
    let mut records: Vec<(Vec<u8>, Option<Vec<u8>>)> = Vec::new();
    files::read(&id.dir(), FileKind::Delta, 2, &mut |k, v| {
        records.push((k.to_vec(), v.map(<[u8]>::to_vec)));
    })
    .expect("read the delta");
    records.sort();
    let put = |k: &[u8], v: &[u8]| (k.to_vec(), Some(v.to_vec()));
    let removed = |k: &[u8]| (k.to_vec(), None);
    assert_eq!(
        records,
        vec![
            put(b"back", b"again"),
            removed(b"brief"),
            removed(b"gone"),
            put(b"kept", b"longer v4"),
            put(b"new", b"n"),
        ]
    );
    let mut fresh = open_provider(&id, &c).expect("reopen");
    let s = fresh.get_store(2).expect("from files");
    assert_eq!(
        collect(s.as_ref(), b"").expect("scan"),
        vec![
            (b"back".to_vec(), b"again".to_vec()),
            (b"kept".to_vec(), b"longer v4".to_vec()),
            (b"new".to_vec(), b"n".to_vec()),
        ]
    );
}

/// A commit whose delta cannot be written is an error, and the store's changes are undone
/// (each key found again in the map's own entries, the delta's records being gone): the
/// version is as it was, and the batch run again commits.
#[test]
fn a_commit_that_cannot_write_its_delta_changes_nothing() {
    let dir = tempfile::tempdir().expect("tempdir");
    let id = StateStoreId::new(dir.path(), 0, 0);
    let mut p = open_provider(&id, &conf(ProviderKind::Memory, 10, 100)).expect("open");
    let mut s = p.get_store(0).expect("store");
    for i in 0..100u32 {
        s.put(&i.to_be_bytes(), b"kept").expect("put");
    }
    s.commit().expect("commit");
    drop(s);
    let want = collect(p.get_store(1).expect("store").as_ref(), b"").expect("scan");
    let batch = |s: &mut dyn StateStore| {
        for i in 0..30_000u32 {
            s.put(&i.to_be_bytes(), &[7; 100]).expect("put");
            if i % 2 == 0 {
                s.remove(&(i / 3).to_be_bytes()).expect("remove");
            }
        }
    };
    // A directory where the delta's temporary file goes: the write fails.
    let blocker = id.dir().join(".2.delta.tmp");
    std::fs::create_dir_all(&blocker).expect("blocker");
    let mut s = p.get_store(1).expect("store");
    batch(s.as_mut());
    assert!(s.commit().is_err(), "the delta could not be written");
    drop(s);
    let s = p.get_store(1).expect("store");
    assert_eq!(collect(s.as_ref(), b"").expect("scan"), want, "undone");
    drop(s);
    std::fs::remove_dir(&blocker).expect("unblock");
    let mut s = p.get_store(1).expect("store");
    batch(s.as_mut());
    s.commit().expect("commit");
    drop(s);
    assert_eq!(p.latest_version().expect("latest"), 2);
}

/// A batch re-run after a crash loads the version it started from again; its commit
/// replaces the version the interrupted run committed, and later versions go.
#[test]
fn a_rerun_replaces_the_version_it_commits() {
    for kind in BOTH {
        let dir = tempfile::tempdir().expect("tempdir");
        let id = StateStoreId::new(dir.path(), 0, 0);
        let c = conf(kind, 2, 100);
        let mut p = open_provider(&id, &c).expect("open");
        for v in 0..5u64 {
            let mut s = p.get_store(v).expect("store");
            s.put(format!("k{v}").as_bytes(), b"first").expect("put");
            s.commit().expect("commit");
        }
        let mut s = p.get_store(3).expect("store");
        s.put(b"k3", b"again").expect("put");
        assert_eq!(s.commit().expect("commit"), 4);
        drop(s);
        let mut p = open_provider(&id, &c).expect("reopen");
        assert_eq!(p.latest_version().expect("latest"), 4);
        let s = p.get_store(4).expect("store");
        assert_eq!(
            s.get(b"k3").expect("get").map(|v| v.into_owned()),
            Some(b"again".to_vec())
        );
        assert_eq!(
            s.get(b"k4").expect("get").map(|v| v.into_owned()),
            None,
            "version 5 of the first run is gone"
        );
        assert_eq!(collect(s.as_ref(), b"").expect("scan").len(), 4);
    }
}

#[test]
fn snapshots_come_every_few_deltas_and_old_files_go() {
    let dir = tempfile::tempdir().expect("tempdir");
    let id = StateStoreId::new(dir.path(), 1, 2).named("left-keyToNumValues");
    let c = conf(ProviderKind::Memory, 3, 4);
    let mut p = open_provider(&id, &c).expect("open");
    for v in 0..20u64 {
        let mut s = p.get_store(v).expect("store");
        s.put(&v.to_be_bytes(), b"v").expect("put");
        s.commit().expect("commit");
    }
    let (deltas, snapshots) = files::list_versions(&id.dir()).expect("list");
    assert_eq!(
        snapshots.first().copied(),
        Some(15),
        "snapshots {snapshots:?}"
    );
    assert!(snapshots.contains(&18), "snapshots {snapshots:?}");
    assert!(deltas.iter().all(|&d| d > 15), "deltas {deltas:?}");
    assert!(id.dir().ends_with("state/1/2/left-keyToNumValues"));
    // Versions from 16 on load; 10 is gone.
    let mut p = open_provider(&id, &c).expect("reopen");
    assert_eq!(
        collect(p.get_store(16).expect("v16").as_ref(), b"")
            .expect("scan")
            .len(),
        16
    );
    assert!(matches!(
        p.get_store(10),
        Err(FerroError::StateStore { .. })
    ));
    let m = p.metrics();
    assert_eq!(m.loads_from_files, 1);
}

#[test]
fn the_disk_provider_keeps_only_the_versions_asked() {
    let dir = tempfile::tempdir().expect("tempdir");
    let id = StateStoreId::new(dir.path(), 0, 0);
    let c = conf(ProviderKind::Disk, 10, 3);
    let mut p = open_provider(&id, &c).expect("open");
    for v in 0..10u64 {
        let mut s = p.get_store(v).expect("store");
        s.put(b"same", &v.to_be_bytes()).expect("put");
        if v % 2 == 0 {
            s.put(format!("gone{v}").as_bytes(), b"x").expect("put");
        } else {
            s.remove(format!("gone{}", v - 1).as_bytes())
                .expect("remove");
        }
        s.commit().expect("commit");
    }
    let conn = rusqlite::Connection::open(id.dir().join("state.db")).expect("db");
    let rows: i64 = conn
        .query_row("SELECT count(*) FROM state", [], |r| r.get(0))
        .expect("count");
    assert!(rows <= 8, "{rows} rows kept for versions 7-10");
    assert!(matches!(p.get_store(6), Err(FerroError::StateStore { .. })));
    let s = p.get_store(7).expect("v7");
    assert_eq!(
        s.get(b"same").expect("get").map(|v| v.into_owned()),
        Some(6u64.to_be_bytes().to_vec())
    );
    assert_eq!(
        s.get(b"gone6").expect("get").map(|v| v.into_owned()),
        Some(b"x".to_vec())
    );
}

#[test]
fn a_damaged_delta_is_an_error_naming_it() {
    let dir = tempfile::tempdir().expect("tempdir");
    let id = StateStoreId::new(dir.path(), 0, 0);
    let c = conf(ProviderKind::Memory, 100, 100);
    let mut p = open_provider(&id, &c).expect("open");
    for v in 0..3u64 {
        let mut s = p.get_store(v).expect("store");
        s.put(b"k", &[v as u8; 32]).expect("put");
        s.commit().expect("commit");
    }
    let delta = FileKind::Delta.path(&id.dir(), 2);
    let bytes = std::fs::read(&delta).expect("read");
    let cases: Vec<(&str, Vec<u8>)> = vec![
        ("truncated", bytes[..bytes.len() - 7].to_vec()),
        ("flipped", {
            let mut b = bytes.clone();
            b[20] ^= 0x40;
            b
        }),
        ("empty", Vec::new()),
    ];
    for (what, damaged) in cases {
        std::fs::write(&delta, &damaged).expect("write");
        let mut fresh = open_provider(&id, &c).expect("reopen");
        let loaded = fresh.get_store(3).map(|_| ());
        match loaded {
            Err(FerroError::StateStore { path, message }) => {
                assert_eq!(path, delta, "{what}");
                assert!(
                    message.contains("corrupt or truncated"),
                    "{what}: {message}"
                );
            }
            Err(e) => panic!("{what}: {e}"),
            Ok(_) => panic!("{what}: a damaged delta loaded"),
        }
    }
    std::fs::remove_file(&delta).expect("rm");
    let mut fresh = open_provider(&id, &c).expect("reopen");
    let e = fresh
        .get_store(3)
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default();
    assert!(e.contains("2.delta") && e.contains("missing"), "{e}");
}

#[test]
fn the_provider_follows_sparks_keys() {
    let mut cfg = Config::default();
    assert_eq!(
        StateStoreConf::from_config(&cfg).expect("conf"),
        StateStoreConf::default()
    );
    cfg.set(
        PROVIDER_CLASS,
        "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider",
    )
    .expect("set");
    cfg.set(MIN_DELTAS_FOR_SNAPSHOT, "5").expect("set");
    cfg.set(MIN_BATCHES_TO_RETAIN, "7").expect("set");
    let c = StateStoreConf::from_config(&cfg).expect("conf");
    assert_eq!(c, conf(ProviderKind::Disk, 5, 7));
    cfg.set(PROVIDER_CLASS, "com.example.Nope").expect("set");
    assert!(matches!(
        StateStoreConf::from_config(&cfg),
        Err(FerroError::Config(_))
    ));
    let mut cfg = Config::default();
    for (name, codec) in [
        ("lz4", Codec::Lz4),
        ("ZSTD", Codec::Zstd),
        ("org.apache.spark.io.ZStdCompressionCodec", Codec::Zstd),
        ("org.apache.spark.io.LZ4CompressionCodec", Codec::Lz4),
    ] {
        cfg.set(COMPRESSION_CODEC, name).expect("set");
        assert_eq!(
            StateStoreConf::from_config(&cfg).expect("conf").codec,
            codec,
            "{name}"
        );
    }
    cfg.set(COMPRESSION_CODEC, "snappy").expect("set");
    let e = StateStoreConf::from_config(&cfg).expect_err("snappy");
    assert!(
        matches!(&e, FerroError::Config(m) if m.contains("snappy") && m.contains("lz4")),
        "{e}"
    );
}

/// A file in the first format (records not compressed) is read; a compressed block that
/// does not decompress, under a checksum that agrees, is an error naming the file.
#[test]
fn files_of_the_first_format_are_read_and_bad_blocks_are_errors() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut old = b"FSSTATE1".to_vec();
    old.push(1);
    old.extend_from_slice(&1u64.to_le_bytes());
    for (k, v) in [(b"a", Some(b"one".as_slice())), (b"b", None)] {
        old.push(if v.is_some() { 1 } else { 2 });
        old.extend_from_slice(&1u32.to_le_bytes());
        old.extend_from_slice(k);
        if let Some(v) = v {
            old.extend_from_slice(&(v.len() as u32).to_le_bytes());
            old.extend_from_slice(v);
        }
    }
    old.extend_from_slice(&2u64.to_le_bytes());
    let crc = crc32fast::hash(&old);
    old.extend_from_slice(&crc.to_le_bytes());
    std::fs::write(FileKind::Delta.path(dir.path(), 1), &old).expect("write");
    let mut got = Vec::new();
    files::read(dir.path(), FileKind::Delta, 1, &mut |k, v| {
        got.push((k.to_vec(), v.map(<[u8]>::to_vec)))
    })
    .expect("read the first format");
    assert_eq!(
        got,
        vec![
            (b"a".to_vec(), Some(b"one".to_vec())),
            (b"b".to_vec(), None)
        ]
    );
    for codec in [Codec::Lz4, Codec::Zstd] {
        let records: Vec<(Vec<u8>, Vec<u8>)> = (0..3000u32)
            .map(|i| (i.to_be_bytes().to_vec(), vec![(i % 7) as u8; 500]))
            .collect();
        files::write(
            dir.path(),
            FileKind::Snapshot,
            2,
            codec,
            records
                .iter()
                .map(|(k, v)| (k.as_slice(), Some(v.as_slice()))),
        )
        .expect("write");
        let path = FileKind::Snapshot.path(dir.path(), 2);
        let good = std::fs::read(&path).expect("read");
        assert!(
            good.len() < 3000 * 500 / 4,
            "{codec:?}: {} bytes",
            good.len()
        );
        let mut n = 0;
        files::read(dir.path(), FileKind::Snapshot, 2, &mut |k, v| {
            assert_eq!(
                (k, v),
                (records[n].0.as_slice(), Some(records[n].1.as_slice()))
            );
            n += 1;
        })
        .expect("read");
        assert_eq!(n, records.len());
        // The first block's compressed bytes scrambled, the checksum made to agree.
        let mut bad = good[..good.len() - 4].to_vec();
        for b in &mut bad[30..60] {
            *b ^= 0x5a;
        }
        let crc = crc32fast::hash(&bad);
        bad.extend_from_slice(&crc.to_le_bytes());
        std::fs::write(&path, &bad).expect("write");
        let e = files::read(dir.path(), FileKind::Snapshot, 2, &mut |_, _| {})
            .expect_err("a scrambled block");
        assert!(
            matches!(&e, FerroError::StateStore { path: p, message } if *p == path && message.contains("corrupt")),
            "{codec:?}: {e}"
        );
    }
}

/// Under a memory limit the state outgrows, the default provider moves a store to disk: the
/// batch whose puts the pool refuses fails its put, its changes undone, and runs again on
/// disk. Every version reads as the model says before and after the move, a reopened
/// provider goes on on disk, and a version from before the move is a clear error.
#[test]
fn state_over_the_memory_limit_moves_to_disk() {
    let dir = tempfile::tempdir().expect("tempdir");
    let id = StateStoreId::new(dir.path(), 0, 0);
    let c = StateStoreConf {
        pool: ferrospark_common::memory::MemoryPool::new(Some(5_000)),
        ..conf(ProviderKind::Memory, 3, 100)
    };
    let db = id.dir().join("state.db");
    let mut p = open_provider(&id, &c).expect("open");
    let mut models = vec![Model::new()];
    let mut moved_at = None;
    let mut refused_at = Vec::new();
    for v in 0..8u64 {
        let mut model = models[v as usize].clone();
        for i in 0..20 {
            model.insert(format!("k{v}-{i}").into_bytes(), vec![v as u8; 16]);
        }
        let gone = v.checked_sub(1).map(|w| format!("k{w}-0").into_bytes());
        if let Some(g) = &gone {
            model.remove(g);
        }
        let mut s = loop {
            let mut s = p.get_store(v).expect("store");
            if moved_at.is_none() && db.exists() {
                moved_at = Some(v);
            }
            let put =
                (0..20).try_for_each(|i| s.put(format!("k{v}-{i}").as_bytes(), &[v as u8; 16]));
            match put {
                Ok(()) => break s,
                Err(FerroError::MemoryLimit(m)) => {
                    assert!(m.contains("moves to disk and the batch runs again"), "{m}");
                    drop(s);
                    assert!(p.refused_memory());
                    refused_at.push(v);
                }
                Err(e) => panic!("v{v}: {e}"),
            }
        };
        if let Some(g) = &gone {
            s.remove(g).expect("remove");
        }
        assert_eq!(
            collect(s.as_ref(), b"").expect("scan"),
            model.clone().into_iter().collect::<Vec<_>>(),
            "v{v}"
        );
        s.commit().expect("commit");
        drop(s);
        models.push(model);
    }
    // 20 entries of about 40 bytes a batch (key, value, header), with the hash table's
    // slots: 5000 bytes hold four loaded batches' keys, but a batch also holds its undo log
    // and a table grown for what it adds: the third batch's puts are refused, and it runs
    // again on disk.
    let moved_at = moved_at.expect("the state moved to disk");
    assert_eq!(
        refused_at,
        vec![moved_at],
        "refused once, in the batch that moved"
    );
    assert_eq!(moved_at, 2, "moved at version {moved_at}");
    assert_eq!(p.metrics().spills, 1);
    assert!(!p.refused_memory());
    drop(p);
    let mut p = open_provider(&id, &c).expect("reopen");
    for v in moved_at..=8 {
        let s = p.get_store(v).expect("version on disk");
        let got: Model = collect(s.as_ref(), b"")
            .expect("scan")
            .into_iter()
            .collect();
        assert_eq!(got, models[v as usize], "v{v} on disk");
    }
    assert_eq!(p.latest_version().expect("latest"), 8);
    // A version from before the move is no longer there, and the error says why.
    let err = p.get_store(moved_at - 1).err().expect("refused");
    assert!(
        err.to_string().contains("moved to disk")
            && err.to_string().contains("ferrospark.memory.limit"),
        "{err}"
    );
    assert_eq!(p.get_store(8).expect("still there").version(), 8);
}

/// Two providers over one store's directory, as a state partition moving between Spark's
/// Python workers: one reaches the versions the other committed by applying their deltas to
/// the version it kept, unless the kept version's delta was rewritten since (a batch run
/// again), when it loads the version whole.
#[test]
fn a_kept_version_catches_up_with_versions_another_process_committed() {
    let dir = tempfile::tempdir().expect("tempdir");
    let id = StateStoreId::new(dir.path(), 0, 0);
    let c = conf(ProviderKind::Memory, 100, 100);
    let commit = |p: &mut Box<dyn StateStoreProvider>, v: u64, key: &[u8], value: &[u8]| {
        let mut s = p.get_store(v).expect("store");
        s.put(key, value).expect("put");
        assert_eq!(s.commit().expect("commit"), v + 1);
    };
    let all = |p: &mut Box<dyn StateStoreProvider>, v: u64| {
        let s = p.get_store(v).expect("store");
        collect(s.as_ref(), b"").expect("scan")
    };
    let pair = |k: &[u8], v: &[u8]| (k.to_vec(), v.to_vec());
    let mut a = open_provider(&id, &c).expect("open a");
    let mut b = open_provider(&id, &c).expect("open b");
    commit(&mut a, 0, b"x", b"1");
    commit(&mut a, 1, b"y", b"2");
    commit(&mut b, 2, b"z", b"3");
    commit(&mut b, 3, b"x", b"4");
    assert_eq!(
        all(&mut a, 4),
        vec![pair(b"x", b"4"), pair(b"y", b"2"), pair(b"z", b"3")]
    );
    let m = a.metrics();
    assert_eq!((m.deltas_caught_up, m.loads_from_files), (2, 0), "{m:?}");
    // b runs batch 3 again with other input: version 4 is another one now.
    commit(&mut b, 3, b"w", b"5");
    commit(&mut b, 4, b"v", b"6");
    assert_eq!(
        all(&mut a, 5),
        vec![
            pair(b"v", b"6"),
            pair(b"w", b"5"),
            pair(b"x", b"1"),
            pair(b"y", b"2"),
            pair(b"z", b"3")
        ]
    );
    let m = a.metrics();
    assert_eq!(
        (m.deltas_caught_up, m.loads_from_files),
        (2, 1),
        "loaded whole: {m:?}"
    );
}

/// A provider holding a store in memory finds it on disk once another process moved it there
/// (a Spark Python worker that ran the partition under the memory limit).
#[test]
fn a_store_another_process_moved_to_disk_is_read_from_disk() {
    let dir = tempfile::tempdir().expect("tempdir");
    let id = StateStoreId::new(dir.path(), 0, 0);
    let roomy = conf(ProviderKind::Memory, 10, 100);
    let tight = StateStoreConf {
        pool: ferrospark_common::memory::MemoryPool::new(Some(10)),
        ..roomy.clone()
    };
    let mut b = open_provider(&id, &roomy).expect("open b");
    let mut s = b.get_store(0).expect("store");
    s.put(b"k", b"value of k").expect("put");
    s.commit().expect("commit");
    drop(s);
    let mut a = open_provider(&id, &tight).expect("open a");
    let mut s = a.get_store(1).expect("moved to disk");
    s.put(b"j", b"2").expect("put");
    s.commit().expect("commit");
    drop(s);
    assert_eq!(a.metrics().spills, 1);
    assert_eq!(
        b.latest_version().expect("latest"),
        2,
        "b sees a's commit on disk"
    );
    let s = b.get_store(2).expect("b reads version 2");
    assert_eq!(
        collect(s.as_ref(), b"").expect("scan"),
        vec![
            (b"j".to_vec(), b"2".to_vec()),
            (b"k".to_vec(), b"value of k".to_vec())
        ]
    );
}

/// The memory provider's map against a model: versions of puts and removes, each either kept
/// or undone from its log of first changes (as a store's abort undoes), the arena compacted
/// at random points between versions (a key put again in its version at the same size is
/// overwritten in place); entries, lookups, batched lookups, sizes and the dead
/// entries a scan must skip all match after every version.
#[test]
fn the_byte_map_matches_a_model_through_undo_and_compaction() {
    use super::byte_map::{Before, ByteMap, Entry};
    let mut rng = StdRng::seed_from_u64(5);
    let mut map = ByteMap::default();
    let mut model = Model::new();
    for version in 1..=60u64 {
        let before_version = model.clone();
        let mut undo: Vec<(Vec<u8>, Option<Entry>)> = Vec::new();
        for _ in 0..rng.random_range(0..200) {
            let key = vec![rng.random_range(0..40u8); rng.random_range(1..4)];
            let before = if rng.random_bool(0.7) {
                // Half the values one size: a key put again in its version is then
                // overwritten in place.
                let len = if rng.random_bool(0.5) {
                    8
                } else {
                    rng.random_range(0..30)
                };
                let value = vec![rng.random::<u8>(); len];
                model.insert(key.clone(), value.clone());
                Some(map.insert(&key, &value, version))
            } else {
                let was = model.remove(&key).is_some();
                let b = map.remove(&key, version).map(|(b, _)| b);
                assert_eq!(b.is_some(), was, "remove of {key:?}");
                b
            };
            if let Some(Before::First { old, key: at }) = before {
                assert_eq!(map.key_of(at), key.as_slice(), "the entry an undo keeps");
                undo.push((key, old));
            }
        }
        if rng.random_bool(0.3) {
            for (key, old) in undo.into_iter().rev() {
                map.restore(&key, old);
            }
            model = before_version;
        }
        if rng.random_bool(0.2) {
            map.compact();
        }
        let mut entries: Vec<(Vec<u8>, Vec<u8>)> =
            map.iter().map(|(k, v)| (k.to_vec(), v.to_vec())).collect();
        entries.sort();
        let want: Vec<(Vec<u8>, Vec<u8>)> = model.clone().into_iter().collect();
        assert_eq!(entries, want, "version {version}");
        assert_eq!(map.len(), model.len());
        let bytes: usize = model.iter().map(|(k, v)| k.len() + v.len()).sum();
        assert_eq!(map.bytes(), bytes as u64);
        let probes: Vec<Vec<u8>> = (0..40u8).map(|b| vec![b; 2]).collect();
        let refs: Vec<&[u8]> = probes.iter().map(Vec::as_slice).collect();
        for (k, place) in probes.iter().zip(map.find_many(&refs)) {
            assert_eq!(place.map(|p| map.value(p)), model.get(k).map(Vec::as_slice));
            assert_eq!(map.get(k), model.get(k).map(Vec::as_slice));
        }
    }
}

/// What the memory pool is told a map holds: its entries with their 16-byte headers, the
/// replaced ones until a compaction, and its table's slots.
#[test]
fn a_maps_footprint_counts_headers_replaced_entries_and_slots() {
    use super::byte_map::ByteMap;
    let mut map = ByteMap::default();
    assert_eq!(map.footprint(), 0);
    for i in 0..1000u32 {
        map.insert(&i.to_be_bytes(), &[1u8; 10], 1);
    }
    let live = 1000 * (16 + 4 + 10);
    let slots = map.footprint() - live;
    assert!(
        (1000 * 17..=2 * 1024 * 17).contains(&slots),
        "{slots} bytes of slots for 1000 keys"
    );
    // Each value replaced by a longer one: the old entries stay until compacted.
    for i in 0..1000u32 {
        map.insert(&i.to_be_bytes(), &[2u8; 20], 2);
    }
    let longer = 1000 * (16 + 4 + 20);
    assert_eq!(map.footprint(), live + longer + slots);
    map.compact();
    assert_eq!(map.footprint(), longer + slots);
}

/// Blocks were 1 MiB before they were 64 KiB: a file of 1 MiB blocks is read; a block
/// larger than that is an error naming the file, not an allocation of what it claims.
#[test]
fn files_of_one_mib_blocks_are_read_and_larger_blocks_refused() {
    let dir = tempfile::tempdir().expect("tempdir");
    // Records of a 4-byte key and a value, 1 MiB of them in all.
    let mut raw = Vec::new();
    let mut records = 0u64;
    while raw.len() + 1 + 4 + 4 + 4 + 100 <= 1 << 20 {
        raw.push(1);
        raw.extend_from_slice(&4u32.to_le_bytes());
        raw.extend_from_slice(&(records as u32).to_be_bytes());
        raw.extend_from_slice(&100u32.to_le_bytes());
        raw.extend_from_slice(&[(records % 251) as u8; 100]);
        records += 1;
    }
    // Padding to exactly 1 MiB: one more record with a longer value.
    let pad = (1 << 20) - raw.len() - (1 + 4 + 4 + 4);
    raw.push(1);
    raw.extend_from_slice(&4u32.to_le_bytes());
    raw.extend_from_slice(&u32::MAX.to_be_bytes());
    raw.extend_from_slice(&(pad as u32).to_le_bytes());
    raw.extend(std::iter::repeat_n(9u8, pad));
    records += 1;
    assert_eq!(raw.len(), 1 << 20);
    let file = |raw: &[u8], records: u64| {
        let mut f = b"FSSTATE2".to_vec();
        f.push(1); // a delta
        f.extend_from_slice(&1u64.to_le_bytes());
        f.push(1); // LZ4
        let stored = lz4_flex::block::compress(raw);
        f.extend_from_slice(&(raw.len() as u32).to_le_bytes());
        f.extend_from_slice(&(stored.len() as u32).to_le_bytes());
        f.extend_from_slice(&stored);
        f.extend_from_slice(&records.to_le_bytes());
        let crc = crc32fast::hash(&f);
        f.extend_from_slice(&crc.to_le_bytes());
        f
    };
    let path = FileKind::Delta.path(dir.path(), 1);
    std::fs::write(&path, file(&raw, records)).expect("write");
    let mut n = 0u64;
    files::read(dir.path(), FileKind::Delta, 1, &mut |k, v| {
        if n + 1 < records {
            assert_eq!(k, (n as u32).to_be_bytes());
            assert_eq!(v, Some([(n % 251) as u8; 100].as_slice()));
        } else {
            assert_eq!(
                (k, v.map(<[u8]>::len)),
                (u32::MAX.to_be_bytes().as_slice(), Some(pad))
            );
        }
        n += 1;
    })
    .expect("a file of 1 MiB blocks");
    assert_eq!(n, records);
    // One byte more than 1 MiB in a block.
    let mut big = raw.clone();
    big.push(2);
    std::fs::write(&path, file(&big, records)).expect("write");
    let e = files::read(dir.path(), FileKind::Delta, 1, &mut |_, _| {})
        .expect_err("a block over 1 MiB");
    assert!(
        matches!(&e, FerroError::StateStore { path: p, .. } if *p == path),
        "{e}"
    );
}
