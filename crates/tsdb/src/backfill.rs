//! Building a block straight from samples, without a head or a WAL: what
//! backfilling (`ferrite tsdb create-blocks-from`) writes.
//!
//! Samples go through the head's rules for one series (timestamps must
//! increase; the same timestamp again is accepted only with the same value)
//! and are cut into chunks of 120 samples, as Prometheus' block writer does
//! with its in-memory head. The block spans the first sample to the last
//! plus one millisecond, as Prometheus' `BlockWriter` writes it.

use std::collections::BTreeMap;
use std::path::Path;

use ferrite_block::meta::{BlockMeta, Compaction};
use ferrite_chunkenc::XorChunk;

use crate::block::{write_block, BlockChunk, BlockError};
use crate::head::AppendError;
use ferrite_model::Labels;

/// Samples per chunk (Prometheus' target).
const SAMPLES_PER_CHUNK: u16 = 120;

#[derive(Default)]
struct SeriesBuf {
    done: Vec<BlockChunk>,
    open: Option<(XorChunk, i64)>,
    last: Option<(i64, f64)>,
}

/// Collects samples for one block, series by series.
#[derive(Default)]
pub struct BlockBuilder {
    series: BTreeMap<Labels, SeriesBuf>,
    mint: i64,
    maxt: i64,
    samples: u64,
}

impl BlockBuilder {
    pub fn new() -> BlockBuilder {
        BlockBuilder {
            mint: i64::MAX,
            maxt: i64::MIN,
            ..BlockBuilder::default()
        }
    }

    /// Samples added so far.
    pub fn len(&self) -> u64 {
        self.samples
    }

    pub fn is_empty(&self) -> bool {
        self.samples == 0
    }

    /// Adds a sample; a series' samples must come in time order.
    pub fn add(&mut self, labels: &Labels, t: i64, v: f64) -> Result<(), AppendError> {
        labels.validate()?;
        let s = match self.series.get_mut(labels) {
            Some(s) => s,
            None => self.series.entry(labels.clone()).or_default(),
        };
        if let Some((lt, lv)) = s.last {
            if t < lt {
                return Err(AppendError::OutOfOrder);
            }
            if t == lt {
                if lv.to_bits() == v.to_bits() {
                    return Ok(());
                }
                return Err(AppendError::DuplicateSample {
                    t,
                    existing: lv,
                    new: v,
                });
            }
        }
        let full = s
            .open
            .as_ref()
            .is_some_and(|(c, _)| c.num_samples() >= SAMPLES_PER_CHUNK);
        if full {
            if let (Some((c, mint)), Some((lt, _))) = (s.open.take(), s.last) {
                s.done.push(BlockChunk::xor(mint, lt, c.into_bytes()));
            }
        }
        let (c, _) = s.open.get_or_insert_with(|| (XorChunk::new(), t));
        c.append(t, v);
        s.last = Some((t, v));
        self.mint = self.mint.min(t);
        self.maxt = self.maxt.max(t);
        self.samples += 1;
        Ok(())
    }

    /// Writes the block into `dir`; `None` if no sample was added.
    pub fn write(self, dir: &Path) -> Result<Option<BlockMeta>, BlockError> {
        if self.samples == 0 {
            return Ok(None);
        }
        let (mint, maxt) = (self.mint, self.maxt.saturating_add(1));
        let mut series: Vec<(Labels, SeriesBuf)> = self.series.into_iter().collect();
        for (_, s) in series.iter_mut() {
            if let (Some((c, cmin)), Some((lt, _))) = (s.open.take(), s.last) {
                s.done.push(BlockChunk::xor(cmin, lt, c.into_bytes()));
            }
        }
        let labels: Vec<Labels> = series.iter().map(|(l, _)| l.clone()).collect();
        write_block(
            dir,
            mint,
            maxt,
            Compaction {
                level: 1,
                ..Compaction::default()
            },
            &labels,
            |i, out| {
                out.append(&mut series[i].1.done);
                Ok(())
            },
        )
    }
}
