//! One series in the head: its closed chunks (m-mapped in `chunks_head/`) and
//! its open chunk (in memory), plus the chunk-cutting rules.
//!
//! The cutting rules are Prometheus' so that chunks line up with theirs:
//! a chunk never crosses a chunk-range boundary (2 h by default); after a
//! quarter of the target samples the end time is re-estimated so the
//! remaining samples of the range spread evenly over chunks; a chunk is cut at
//! twice the target count, or when it nears 1 KiB.

use ferrite_chunkenc::{Encoding, XorChunk};
use tracing::error;

use crate::head_chunks::{ChunkDiskMapper, ChunkDiskMapperRef};

/// Cut a chunk before it could exceed 1024 bytes with one more (19-byte worst case) sample.
const MAX_XOR_CHUNK_BYTES: usize = 1024 - 19;

/// Chunk-cutting settings of the head.
#[derive(Clone, Copy, Debug)]
pub struct ChunkOpts {
    /// Chunk range in milliseconds (the head's block range, 2 h by default).
    pub chunk_range: i64,
    /// Target samples per chunk (120 by default).
    pub samples_per_chunk: u16,
}

/// A closed chunk stored in the head chunks files.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MmappedChunk {
    pub chunk_ref: ChunkDiskMapperRef,
    pub mint: i64,
    pub maxt: i64,
    pub num_samples: u16,
}

/// The chunk being appended to.
pub struct OpenChunk {
    pub chunk: XorChunk,
    pub mint: i64,
    pub maxt: i64,
}

/// A closed chunk kept in memory because writing it to `chunks_head/` failed.
pub struct UnmappedChunk {
    pub bytes: Vec<u8>,
    pub mint: i64,
    pub maxt: i64,
}

/// Sample data of one series.
pub struct MemSeries {
    pub mmapped: Vec<MmappedChunk>,
    pub open: Option<OpenChunk>,
    pub unmapped: Option<Box<Vec<UnmappedChunk>>>,
    next_at: i64,
    last_value: f64,
}

/// Result of checking a sample against a series.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Appendable {
    Yes,
    /// Same timestamp and identical value as the newest sample: accepted, not stored again.
    Duplicate,
    OutOfOrder,
    /// Same timestamp, other value.
    Conflict {
        existing: f64,
    },
}

fn range_for_timestamp(t: i64, width: i64) -> i64 {
    t.div_euclid(width) * width + width
}

/// Estimates when to cut so the rest of the range splits into equal chunks.
fn compute_chunk_end_time(start: i64, cur: i64, max: i64, ratio_to_full: f64) -> i64 {
    let n = (max - start) as f64 / ((cur - start + 1) as f64 * ratio_to_full);
    if n <= 1.0 {
        return max;
    }
    (start as f64 + (max - start) as f64 / n.floor()) as i64
}

impl Default for MemSeries {
    fn default() -> Self {
        Self::new()
    }
}

impl MemSeries {
    pub fn new() -> Self {
        MemSeries {
            mmapped: Vec::new(),
            open: None,
            unmapped: None,
            next_at: i64::MIN,
            last_value: 0.0,
        }
    }

    /// Timestamp of the newest sample, `i64::MIN` if none.
    pub fn max_time(&self) -> i64 {
        if let Some(c) = &self.open {
            if c.chunk.num_samples() > 0 {
                return c.maxt;
            }
        }
        let u = self
            .unmapped
            .as_ref()
            .and_then(|u| u.last())
            .map_or(i64::MIN, |c| c.maxt);
        let m = self.mmapped.last().map_or(i64::MIN, |c| c.maxt);
        u.max(m)
    }

    /// Timestamp of the oldest sample, `i64::MAX` if none.
    pub fn min_time(&self) -> i64 {
        if let Some(c) = self.mmapped.first() {
            return c.mint;
        }
        if let Some(c) = self.unmapped.as_ref().and_then(|u| u.first()) {
            return c.mint;
        }
        match &self.open {
            Some(c) if c.chunk.num_samples() > 0 => c.mint,
            _ => i64::MAX,
        }
    }

    pub fn is_empty(&self) -> bool {
        self.max_time() == i64::MIN
    }

    /// Checks a sample the way Prometheus does before accepting it.
    pub fn appendable(&self, t: i64, v: f64) -> Appendable {
        let maxt = self.max_time();
        if maxt == i64::MIN || t > maxt {
            return Appendable::Yes;
        }
        if self.open.is_none() {
            // Newest sample is in an m-mapped chunk (after a restart) and its
            // value is not at hand: like Prometheus, accept and drop silently.
            return Appendable::Duplicate;
        }
        if t == maxt {
            if self.last_value.to_bits() == v.to_bits() {
                return Appendable::Duplicate;
            }
            return Appendable::Conflict {
                existing: self.last_value,
            };
        }
        Appendable::OutOfOrder
    }

    /// Appends a sample, cutting and m-mapping chunks as needed. Returns false
    /// (and stores nothing) if `t` is not after the newest sample.
    pub fn append(
        &mut self,
        series_ref: u64,
        t: i64,
        v: f64,
        opts: ChunkOpts,
        mapper: &ChunkDiskMapper,
    ) -> bool {
        if t <= self.max_time() {
            return false;
        }
        let need_cut = match &self.open {
            None => true,
            Some(c) => {
                let n = c.chunk.num_samples();
                if c.chunk.bytes().len() > MAX_XOR_CHUNK_BYTES {
                    true
                } else {
                    if n == opts.samples_per_chunk / 4 {
                        self.next_at = compute_chunk_end_time(c.mint, c.maxt, self.next_at, 4.0);
                    }
                    t >= self.next_at || n >= opts.samples_per_chunk.saturating_mul(2)
                }
            }
        };
        if need_cut {
            self.cut(series_ref, t, opts, mapper);
        }
        let Some(c) = self.open.as_mut() else {
            return false;
        };
        c.chunk.append(t, v);
        c.maxt = t;
        self.last_value = v;
        true
    }

    /// Closes the open chunk (writing it to `chunks_head/`) and opens a new one at `mint`.
    fn cut(&mut self, series_ref: u64, mint: i64, opts: ChunkOpts, mapper: &ChunkDiskMapper) {
        let chunk = match self.open.take() {
            Some(old) => self.close_chunk(series_ref, old, mapper),
            None => None,
        };
        // The closed chunk's buffer, once on disk, is the new chunk's.
        let chunk = match chunk {
            Some(mut c) => {
                c.reset();
                c
            }
            None => XorChunk::new(),
        };
        self.open = Some(OpenChunk {
            chunk,
            mint,
            maxt: i64::MIN,
        });
        self.next_at = range_for_timestamp(mint, opts.chunk_range);
    }

    /// Writes `old` to `chunks_head/` (or keeps it in memory if that fails);
    /// returns the chunk for reuse when its bytes are no longer needed.
    fn close_chunk(
        &mut self,
        series_ref: u64,
        old: OpenChunk,
        mapper: &ChunkDiskMapper,
    ) -> Option<XorChunk> {
        let n = old.chunk.num_samples();
        if n == 0 {
            return Some(old.chunk);
        }
        match mapper.write_chunk(
            series_ref,
            old.mint,
            old.maxt,
            Encoding::Xor as u8,
            old.chunk.bytes(),
        ) {
            Ok(chunk_ref) => {
                self.mmapped.push(MmappedChunk {
                    chunk_ref,
                    mint: old.mint,
                    maxt: old.maxt,
                    num_samples: n,
                });
                Some(old.chunk)
            }
            Err(e) => {
                error!(series_ref, error = %e, "writing head chunk failed; keeping it in memory");
                self.unmapped
                    .get_or_insert_with(Default::default)
                    .push(UnmappedChunk {
                        bytes: old.chunk.into_bytes(),
                        mint: old.mint,
                        maxt: old.maxt,
                    });
                None
            }
        }
    }

    /// Drops the chunks whose samples all lie before `mint` (head
    /// truncation after compaction); returns whether anything is left.
    pub fn truncate_chunks_before(&mut self, mint: i64) -> bool {
        self.mmapped.retain(|c| c.maxt >= mint);
        if let Some(u) = self.unmapped.as_mut() {
            u.retain(|c| c.maxt >= mint);
            if u.is_empty() {
                self.unmapped = None;
            }
        }
        if self
            .open
            .as_ref()
            .is_some_and(|c| c.chunk.num_samples() > 0 && c.maxt < mint)
        {
            self.open = None;
        }
        !self.mmapped.is_empty()
            || self.unmapped.is_some()
            || self
                .open
                .as_ref()
                .is_some_and(|c| c.chunk.num_samples() > 0)
    }

    /// Approximate heap bytes held by this series' sample data.
    pub fn heap_bytes(&self) -> usize {
        self.mmapped.capacity() * std::mem::size_of::<MmappedChunk>()
            + self.open.as_ref().map_or(0, |c| c.chunk.bytes().len())
            + self
                .unmapped
                .as_ref()
                .map_or(0, |u| u.iter().map(|c| c.bytes.len()).sum())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chunk_end_time_spreads_samples() {
        // 30 samples in the first 30*15s of a 2h range: cut at an equal split.
        let start = 0;
        let cur = 29 * 15_000;
        let max = 7_200_000;
        let end = compute_chunk_end_time(start, cur, max, 4.0);
        assert!(end > cur && end <= max);
        assert_eq!(
            compute_chunk_end_time(0, 7_000_000, 7_200_000, 4.0),
            7_200_000
        );
        assert_eq!(range_for_timestamp(7_199_999, 7_200_000), 7_200_000);
        assert_eq!(range_for_timestamp(-1, 7_200_000), 0);
    }

    #[test]
    fn appendable_rules() {
        let dir = tempfile::tempdir().unwrap();
        let mapper = ChunkDiskMapper::open(dir.path(), Default::default()).unwrap();
        let opts = ChunkOpts {
            chunk_range: 7_200_000,
            samples_per_chunk: 120,
        };
        let mut s = MemSeries::new();
        assert_eq!(s.appendable(10, 1.0), Appendable::Yes);
        assert!(s.append(1, 10, 1.0, opts, &mapper));
        assert_eq!(s.appendable(10, 1.0), Appendable::Duplicate);
        assert_eq!(
            s.appendable(10, 2.0),
            Appendable::Conflict { existing: 1.0 }
        );
        assert_eq!(s.appendable(9, 2.0), Appendable::OutOfOrder);
        assert!(!s.append(1, 10, 1.0, opts, &mapper));
        assert_eq!((s.min_time(), s.max_time()), (10, 10));
    }

    #[test]
    fn cuts_at_range_boundary_and_at_twice_target() {
        let dir = tempfile::tempdir().unwrap();
        let mapper = ChunkDiskMapper::open(dir.path(), Default::default()).unwrap();
        let opts = ChunkOpts {
            chunk_range: 7_200_000,
            samples_per_chunk: 120,
        };
        let mut s = MemSeries::new();
        // 15s interval over 4h: chunks must not cross the 2h boundary.
        for i in 0..960 {
            assert!(s.append(1, i * 15_000, i as f64, opts, &mapper));
        }
        for c in &s.mmapped {
            assert_eq!(
                c.mint.div_euclid(7_200_000),
                c.maxt.div_euclid(7_200_000),
                "chunk crosses a range boundary"
            );
            assert!(c.num_samples <= 240);
        }
        let total: u32 = s.mmapped.iter().map(|c| c.num_samples as u32).sum::<u32>()
            + s.open.as_ref().map_or(0, |c| c.chunk.num_samples() as u32);
        assert_eq!(total, 960);
        // 1ms interval: many samples per range, cut at 240.
        let mut s = MemSeries::new();
        for i in 0..1000 {
            s.append(2, i, 0.0, opts, &mapper);
        }
        assert!(s.mmapped.iter().all(|c| c.num_samples <= 240));
    }
}
