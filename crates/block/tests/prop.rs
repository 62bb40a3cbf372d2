//! Property tests: round trips, corruption never panics, interval merging
//! against a simple model.

use std::collections::BTreeSet;

use ferrite_block::chunks::{encode_chunk, segment_header};
use ferrite_block::{
    BlockDesc, BlockMeta, BlockStats, BlockUlid, ChunkReader, ChunkRef, ChunkWriter, Compaction,
    Interval, Intervals, RawChunk, Tombstones,
};
use proptest::prelude::*;

fn ulid() -> impl Strategy<Value = BlockUlid> {
    any::<u128>().prop_map(|v| BlockUlid(ulid::Ulid(v)))
}

fn meta() -> impl Strategy<Value = BlockMeta> {
    let stats =
        proptest::array::uniform6(prop_oneof![Just(0u64), any::<u64>()]).prop_map(|s| BlockStats {
            num_samples: s[0],
            num_float_samples: s[1],
            num_histogram_samples: s[2],
            num_series: s[3],
            num_chunks: s[4],
            num_tombstones: s[5],
        });
    let desc =
        (ulid(), any::<i64>(), any::<i64>()).prop_map(|(ulid, min_time, max_time)| BlockDesc {
            ulid,
            min_time,
            max_time,
        });
    let comp = (
        any::<i64>(),
        prop::collection::vec(ulid(), 0..4),
        any::<bool>(),
        prop::collection::vec(desc, 0..4),
        any::<bool>(),
        prop::collection::vec(any::<String>(), 0..3),
    )
        .prop_map(
            |(level, sources, deletable, parents, failed, hints)| Compaction {
                level,
                sources,
                deletable,
                parents,
                failed,
                hints,
            },
        );
    (ulid(), any::<i64>(), any::<i64>(), stats, comp).prop_map(
        |(ulid, min_time, max_time, stats, compaction)| BlockMeta {
            ulid,
            min_time,
            max_time,
            stats,
            compaction,
            version: 1,
        },
    )
}

/// The set of deleted times, for intervals over a small time range.
fn model(ivs: &[(i64, i64)]) -> BTreeSet<i64> {
    ivs.iter().flat_map(|&(a, b)| a..=b).collect()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn meta_round_trip(m in meta()) {
        let j = m.to_json();
        let back = BlockMeta::from_json(&j).unwrap();
        prop_assert_eq!(&back, &m);
        prop_assert_eq!(back.to_json(), j.clone());
        // serde_json agrees it is JSON and sees the same strings.
        let v: serde_json::Value = serde_json::from_slice(&j).unwrap();
        prop_assert_eq!(v["version"].as_i64(), Some(1));
    }

    #[test]
    fn meta_garbage_never_panics(b in prop::collection::vec(any::<u8>(), 0..300)) {
        let _ = BlockMeta::from_json(&b);
    }

    #[test]
    fn meta_mutation_never_panics(m in meta(), at in any::<prop::sample::Index>(), x in any::<u8>()) {
        let mut j = m.to_json();
        let i = at.index(j.len());
        j[i] = x;
        let _ = BlockMeta::from_json(&j);
    }

    #[test]
    fn intervals_match_model(adds in prop::collection::vec((-40i64..40, 0i64..12), 0..30)) {
        let mut ivs = Intervals::new();
        let mut raw = Vec::new();
        for (a, len) in adds {
            ivs.add(Interval::new(a, a + len));
            raw.push((a, a + len));
            // Sorted, disjoint and not adjacent.
            for w in ivs.as_slice().windows(2) {
                prop_assert!(w[0].maxt + 1 < w[1].mint, "{:?}", ivs);
            }
            for iv in ivs.iter() {
                prop_assert!(iv.mint <= iv.maxt);
            }
            let got: BTreeSet<i64> = ivs.iter().flat_map(|iv| iv.mint..=iv.maxt).collect();
            prop_assert_eq!(&got, &model(&raw));
            for t in -45..60 {
                prop_assert_eq!(ivs.is_deleted(t), got.contains(&t));
            }
        }
    }

    #[test]
    fn intervals_at_the_edges(adds in prop::collection::vec(
        (prop_oneof![Just(i64::MIN), -20i64..20], prop_oneof![Just(i64::MAX), -20i64..20]), 0..12)) {
        // Never panics, and stays sorted and disjoint for well-formed input.
        let mut ivs = Intervals::new();
        for (a, b) in adds.into_iter().filter(|(a, b)| a <= b) {
            ivs.add(Interval::new(a, b));
            for w in ivs.as_slice().windows(2) {
                prop_assert!(w[0].maxt < w[1].mint && w[0].maxt + 1 < w[1].mint);
            }
        }
    }

    #[test]
    fn intervals_inverted_never_panic(adds in prop::collection::vec((any::<i64>(), any::<i64>()), 0..20)) {
        let mut ivs = Intervals::new();
        for (a, b) in adds {
            ivs.add(Interval::new(a, b));
        }
    }

    #[test]
    fn tombstones_round_trip(entries in prop::collection::vec(
        (prop_oneof![0u64..5, any::<u64>()], any::<i64>(), any::<i64>()), 0..40)) {
        let mut t = Tombstones::new();
        for (r, a, b) in entries {
            t.add_interval(r, Interval::new(a.min(b), a.max(b)));
        }
        let enc = t.encode();
        let back = Tombstones::decode(&enc).unwrap();
        prop_assert_eq!(&back, &t);
        prop_assert_eq!(back.encode(), enc);
    }

    #[test]
    fn tombstones_garbage_never_panics(b in prop::collection::vec(any::<u8>(), 0..200), fix in any::<bool>()) {
        let mut b = b;
        if fix && b.len() >= 9 {
            // A valid header and CRC around arbitrary entries.
            b[..4].copy_from_slice(&0x0130_BA30u32.to_be_bytes());
            b[4] = 1;
            let n = b.len();
            let crc = crc32c::crc32c(&b[5..n - 4]);
            b[n - 4..].copy_from_slice(&crc.to_be_bytes());
        }
        let _ = Tombstones::decode(&b);
    }

    #[test]
    fn chunks_round_trip(
        groups in prop::collection::vec(
            prop::collection::vec((1u8..=3, prop::collection::vec(any::<u8>(), 0..200)), 0..6), 1..12),
        cap in prop_oneof![Just(1u64), 20u64..2000, Just(1u64 << 29)],
    ) {
        let dir = tempfile::tempdir().unwrap();
        let mut w = ChunkWriter::with_segment_size(dir.path(), cap).unwrap();
        let mut refs = Vec::new();
        for g in &groups {
            let raw: Vec<RawChunk> = g.iter().map(|(e, d)| RawChunk { encoding: *e, data: d }).collect();
            w.write_chunks(&raw, &mut refs).unwrap();
        }
        w.finish().unwrap();
        let r = ChunkReader::open(dir.path()).unwrap();
        let all: Vec<_> = groups.iter().flatten().collect();
        prop_assert_eq!(refs.len(), all.len());
        for (rf, (e, d)) in refs.iter().zip(&all) {
            prop_assert_eq!(r.chunk(*rf).unwrap(), (*e, d.as_slice()));
        }
        let walked: Vec<ChunkRef> = r.iter().map(|c| c.unwrap().chunk_ref).collect();
        prop_assert_eq!(walked, refs.clone());
        // No empty segments except a lone first one.
        for s in 0..r.segment_count() {
            prop_assert!(refs.iter().any(|c| c.segment() as usize == s) || r.segment_count() == 1);
        }
    }

    #[test]
    fn chunks_corruption_never_panics(
        chunks in prop::collection::vec((1u8..=3, prop::collection::vec(any::<u8>(), 0..50)), 0..8),
        flips in prop::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 0..4),
        cut in any::<prop::sample::Index>(),
        truncate in any::<bool>(),
        refs in prop::collection::vec(any::<u64>(), 0..16),
    ) {
        let mut seg = segment_header().to_vec();
        for (e, d) in &chunks {
            encode_chunk(&mut seg, *e, d);
        }
        for (at, x) in flips {
            let i = at.index(seg.len());
            seg[i] ^= x;
        }
        if truncate {
            seg.truncate(cut.index(seg.len() + 1));
        }
        if let Ok(r) = ChunkReader::from_bytes(vec![seg]) {
            for c in r.iter() {
                let _ = c;
            }
            for rf in refs {
                let _ = r.chunk(ChunkRef(rf));
                let _ = r.chunk(ChunkRef(rf & 0x1_0000_00ff));
                let _ = r.chunk_unchecked(ChunkRef(rf & 0xff));
            }
        }
    }
}
