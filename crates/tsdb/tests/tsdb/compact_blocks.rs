//! Merging blocks: leveled compaction of adjacent blocks copies chunks as
//! they are; vertical compaction of overlapping blocks merges samples (one
//! per timestamp). Queries read the same before and after.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use ferrite_block::meta::Compaction;
use ferrite_chunkenc::{Encoding, XorChunk};
use ferrite_model::Labels;
use ferrite_tsdb::block::{write_block, Block, BlockChunk};
use ferrite_tsdb::compact::compact_blocks;

type Model = BTreeMap<Labels, BTreeMap<i64, f64>>;

fn labels(i: usize) -> Labels {
    Labels::from_pairs(&[("__name__", "m"), ("i", &i.to_string()), ("job", "j")])
}

/// Writes a block of `series` series with samples every `step` ms in
/// [mint, maxt), value from `value(i, t)`; returns the block and adds the
/// samples to `model` (existing timestamps are kept: the first block wins).
fn block(
    dir: &Path,
    mint: i64,
    maxt: i64,
    step: i64,
    series: std::ops::Range<usize>,
    value: impl Fn(usize, i64) -> f64,
    model: &mut Model,
) -> Arc<Block> {
    let mut order: Vec<(Labels, usize)> = series.clone().map(|i| (labels(i), i)).collect();
    order.sort();
    let ls: Vec<Labels> = order.iter().map(|(l, _)| l.clone()).collect();
    let meta = write_block(dir, mint, maxt, Compaction::default(), &ls, |k, out| {
        let i = order[k].1;
        let ts: Vec<i64> = (mint..maxt).step_by(step as usize).collect();
        for group in ts.chunks(120) {
            let mut c = XorChunk::new();
            for &t in group {
                c.append(t, value(i, t));
            }
            out.push(BlockChunk::xor(
                group[0],
                *group.last().unwrap(),
                c.into_bytes(),
            ));
        }
        Ok(())
    })
    .unwrap()
    .unwrap();
    for i in series {
        let m = model.entry(labels(i)).or_default();
        for t in (mint..maxt).step_by(step as usize) {
            m.entry(t).or_insert(value(i, t));
        }
    }
    Arc::new(Block::open(&dir.join(meta.ulid.to_string())).unwrap())
}

fn read(b: &Block) -> Model {
    let mut out = Model::new();
    let mut metas = Vec::new();
    for r in b.postings(&[]).unwrap() {
        let l = b.series(r, &mut metas).unwrap();
        let m = out.entry(l).or_default();
        for c in &metas {
            for (t, v) in XorChunk::from_bytes(b.chunk(c.chunk_ref).unwrap().to_vec())
                .unwrap()
                .iter()
            {
                assert!(m.insert(t, v).is_none(), "timestamp {t} twice");
            }
        }
    }
    out
}

#[test]
fn adjacent_blocks_merge_into_a_higher_level() {
    let tmp = tempfile::tempdir().unwrap();
    let mut model = Model::new();
    let h = 7_200_000;
    let a = block(
        tmp.path(),
        0,
        h,
        15_000,
        0..20,
        |i, t| (i as i64 * t) as f64,
        &mut model,
    );
    let b = block(
        tmp.path(),
        h,
        2 * h,
        15_000,
        5..30,
        |i, t| (i as i64 + t) as f64,
        &mut model,
    );
    let c = block(
        tmp.path(),
        2 * h,
        3 * h,
        30_000,
        0..10,
        |_, t| t as f64 / 7.0,
        &mut model,
    );
    let meta = compact_blocks(
        tmp.path(),
        &[a.clone(), b.clone(), c.clone()],
        None,
        Encoding::Xor,
    )
    .unwrap()
    .unwrap();
    assert_eq!((meta.min_time, meta.max_time), (0, 3 * h));
    assert_eq!(meta.compaction.level, 2);
    assert_eq!(meta.compaction.parents.len(), 3);
    assert_eq!(meta.compaction.sources.len(), 3);
    let merged = Block::open(&tmp.path().join(meta.ulid.to_string())).unwrap();
    assert_eq!(read(&merged), model);
    // Nothing overlapped: chunks were copied, so the chunk count adds up.
    let parts: u64 = [&a, &b, &c].iter().map(|b| b.meta().stats.num_chunks).sum();
    assert_eq!(merged.meta().stats.num_chunks, parts);
    assert_eq!(merged.meta().stats.num_series, 30);
}

#[test]
fn overlapping_blocks_merge_samples_once() {
    let tmp = tempfile::tempdir().unwrap();
    let mut model = Model::new();
    let h = 7_200_000;
    let a = block(
        tmp.path(),
        0,
        h,
        10_000,
        0..10,
        |i, t| (i as i64 * 3 + t) as f64,
        &mut model,
    );
    // Overlaps a, with some equal timestamps (different values: a's win)
    // and some in between.
    let b = block(
        tmp.path(),
        h / 2,
        h + h / 2,
        15_000,
        5..15,
        |_, t| -(t as f64),
        &mut model,
    );
    let meta = compact_blocks(tmp.path(), &[a, b], None, Encoding::Xor)
        .unwrap()
        .unwrap();
    assert_eq!((meta.min_time, meta.max_time), (0, h + h / 2));
    let merged = Block::open(&tmp.path().join(meta.ulid.to_string())).unwrap();
    let got = read(&merged);
    assert_eq!(got, model);
    assert_eq!(
        merged.meta().stats.num_samples,
        model.values().map(|m| m.len() as u64).sum::<u64>()
    );
}
