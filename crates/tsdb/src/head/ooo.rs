//! Out-of-order samples of a head series (`out_of_order_time_window`).
//!
//! As in Prometheus, a sample older than its series' newest one, but not
//! older than the head's newest sample minus the window, is kept apart from
//! the in-order chunks: in an [`OooChunk`] that holds up to
//! `out_of_order_cap_max` (32 by default) samples uncompressed and sorted by
//! time (a second sample at a timestamp already there is dropped). When it
//! is full it is encoded (one chunk per run of a kind, floats in the
//! configured float encoding) and written to `chunks_head/` with the
//! out-of-order bit set on its encoding byte, and a new one is started.
//! The WBL records which chunk a series' samples went to (mmap markers), so
//! replay knows which samples the chunk files already hold.
//!
//! Out-of-order chunks may overlap each other and the in-order chunks:
//! queries merge them by time, and out-of-order compaction writes them into
//! blocks of their own (`crate::compact::ooo`), which vertical compaction
//! merges with the rest.

use ferrite_chunkenc::Encoding;
use ferrite_model::SampleValue;
use tracing::error;

use super::series::{MemSeries, MmappedChunk, UnmappedChunk};
use crate::head_chunks::{ChunkDiskMapper, ChunkDiskMapperRef, OOO_ENCODING_MASK};
use crate::sample::{BuiltChunk, ChunkBuilder, SampleRef};

/// Default largest number of samples of an in-memory out-of-order chunk
/// (Prometheus' `out_of_order_cap_max`).
pub const DEFAULT_OUT_OF_ORDER_CAP_MAX: u8 = 32;

/// Out-of-order samples in memory, sorted by time, one per timestamp.
#[derive(Default)]
pub struct OooChunk {
    samples: Vec<(i64, SampleValue)>,
}

impl OooChunk {
    /// Inserts a sample in time order; false (nothing stored) if a sample
    /// at `t` is there already.
    pub fn insert(&mut self, t: i64, v: SampleRef<'_>) -> bool {
        // Out-of-order samples mostly come in order among themselves.
        if self.samples.last().is_none_or(|(last, _)| t > *last) {
            self.samples.push((t, v.to_owned_value()));
            return true;
        }
        match self.samples.binary_search_by_key(&t, |(st, _)| *st) {
            Ok(_) => false,
            Err(i) => {
                self.samples.insert(i, (t, v.to_owned_value()));
                true
            }
        }
    }

    /// Number of samples.
    pub fn len(&self) -> usize {
        self.samples.len()
    }

    /// Whether it holds no sample.
    pub fn is_empty(&self) -> bool {
        self.samples.is_empty()
    }

    /// The samples, oldest first.
    pub fn samples(&self) -> &[(i64, SampleValue)] {
        &self.samples
    }

    /// Encodes the samples: a new chunk at each change of kind and where a
    /// histogram chunk asks for one, floats in `float_encoding`.
    pub fn encode(&self, float_encoding: Encoding, out: &mut impl FnMut(BuiltChunk)) {
        let mut builder = ChunkBuilder::single().with_float_encoding(float_encoding);
        for (t, v) in &self.samples {
            builder.push(*t, SampleRef::of(v), out);
        }
        builder.finish(out);
    }
}

/// The out-of-order chunk being filled, with the time range it holds.
pub struct OooHeadChunk {
    pub chunk: OooChunk,
    pub mint: i64,
    pub maxt: i64,
}

/// A series' out-of-order data (boxed in [`MemSeries`]: most series have
/// none).
#[derive(Default)]
pub struct OooFields {
    /// Full chunks written to `chunks_head/`, in the order written.
    pub mmapped: Vec<MmappedChunk>,
    /// Full chunks whose write to `chunks_head/` failed, kept in memory
    /// until out-of-order compaction moves them into a block.
    pub unmapped: Vec<UnmappedChunk>,
    /// The chunk being filled.
    pub head: Option<OooHeadChunk>,
}

impl OooFields {
    /// Whether any sample is left.
    pub fn is_empty(&self) -> bool {
        self.mmapped.is_empty()
            && self.unmapped.is_empty()
            && self.head.as_ref().is_none_or(|h| h.chunk.is_empty())
    }

    /// The time range of all out-of-order samples, `None` if there are none.
    pub fn time_range(&self) -> Option<(i64, i64)> {
        let mmapped = self.mmapped.iter().map(|c| (c.mint, c.maxt));
        let unmapped = self.unmapped.iter().map(|c| (c.mint, c.maxt));
        let head = self
            .head
            .iter()
            .filter(|h| !h.chunk.is_empty())
            .map(|h| (h.mint, h.maxt));
        mmapped
            .chain(unmapped)
            .chain(head)
            .reduce(|a, b| (a.0.min(b.0), a.1.max(b.1)))
    }
}

/// What inserting an out-of-order sample did.
#[derive(Debug, Default)]
pub struct OooInsert {
    /// The sample was stored (false: one at its timestamp was there).
    pub inserted: bool,
    /// A new in-memory chunk was started for it.
    pub chunk_created: bool,
    /// The chunks the previous in-memory chunk was written as.
    pub mmap_refs: Vec<ChunkDiskMapperRef>,
}

impl MemSeries {
    /// Whether the series holds out-of-order samples.
    pub fn has_ooo(&self) -> bool {
        self.ooo().is_some_and(|o| !o.is_empty())
    }

    /// Inserts an out-of-order sample, first writing the in-memory chunk
    /// to `chunks_head/` when it holds `cap` samples already.
    pub fn insert_ooo(
        &mut self,
        series_ref: u64,
        t: i64,
        v: SampleRef<'_>,
        float_encoding: Encoding,
        cap: usize,
        mapper: &ChunkDiskMapper,
    ) -> OooInsert {
        let mut res = OooInsert::default();
        let full = match self.ooo().and_then(|o| o.head.as_ref()) {
            None => true,
            Some(h) => h.chunk.len() >= cap,
        };
        if full {
            res.mmap_refs = self.mmap_ooo_head(series_ref, float_encoding, mapper);
            let ooo = self.ooo_or_default();
            ooo.head = Some(OooHeadChunk {
                chunk: OooChunk::default(),
                mint: t,
                maxt: t,
            });
            res.chunk_created = true;
        }
        let Some(head) = self.ooo_mut().and_then(|o| o.head.as_mut()) else {
            return res;
        };
        res.inserted = head.chunk.insert(t, v);
        if res.inserted {
            if res.chunk_created || t < head.mint {
                head.mint = t;
            }
            if res.chunk_created || t > head.maxt {
                head.maxt = t;
            }
        }
        res
    }

    /// Writes the in-memory out-of-order chunk to `chunks_head/` (as one
    /// chunk per run of a kind) and drops it; returns the refs written.
    /// A chunk whose write fails stays in memory (see [`OooFields`]).
    pub fn mmap_ooo_head(
        &mut self,
        series_ref: u64,
        float_encoding: Encoding,
        mapper: &ChunkDiskMapper,
    ) -> Vec<ChunkDiskMapperRef> {
        let Some(ooo) = self.ooo_mut() else {
            return Vec::new();
        };
        let Some(head) = ooo.head.take() else {
            return Vec::new();
        };
        let mut refs = Vec::new();
        head.chunk.encode(float_encoding, &mut |c: BuiltChunk| {
            let encoding = c.encoding as u8 | OOO_ENCODING_MASK;
            match mapper.write_chunk(series_ref, c.mint, c.maxt, encoding, &c.bytes) {
                Ok(chunk_ref) => {
                    refs.push(chunk_ref);
                    ooo.mmapped.push(MmappedChunk {
                        chunk_ref,
                        mint: c.mint,
                        maxt: c.maxt,
                        num_samples: c.num_samples,
                        encoding: c.encoding,
                    });
                }
                Err(e) => {
                    error!(series_ref, error = %e, "writing an out-of-order head chunk failed; keeping it in memory");
                    ooo.unmapped.push(UnmappedChunk {
                        bytes: c.bytes,
                        mint: c.mint,
                        maxt: c.maxt,
                        encoding: c.encoding,
                    });
                }
            }
        });
        refs
    }

    /// Drops the out-of-order chunks out-of-order compaction moved into
    /// blocks: those written at or before `last`, and the first `unmapped`
    /// of those kept in memory. Returns whether any
    /// out-of-order sample is left.
    pub fn drop_compacted_ooo(&mut self, last: ChunkDiskMapperRef, unmapped: usize) -> bool {
        let Some(ooo) = self.ooo_mut() else {
            return false;
        };
        ooo.mmapped.retain(|c| c.chunk_ref > last);
        ooo.unmapped.drain(..unmapped.min(ooo.unmapped.len()));
        if ooo.is_empty() {
            self.clear_ooo();
            return false;
        }
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn insert_keeps_time_order_and_drops_same_timestamp() {
        let mut c = OooChunk::default();
        for t in [5, 3, 9, 1, 3, 7] {
            c.insert(t, SampleRef::Float(t as f64));
        }
        let ts: Vec<i64> = c.samples().iter().map(|s| s.0).collect();
        assert_eq!(ts, vec![1, 3, 5, 7, 9]);
        assert!(!c.insert(5, SampleRef::Float(0.0)));
        assert_eq!(c.len(), 5);
    }

    #[test]
    fn full_chunk_goes_to_disk_with_the_ooo_bit() {
        let dir = tempfile::tempdir().unwrap();
        let mapper = ChunkDiskMapper::open(dir.path(), Default::default()).unwrap();
        let mut s = MemSeries::new();
        let mut created = 0;
        for i in 0..70i64 {
            let t = 1000 - i;
            let r = s.insert_ooo(7, t, SampleRef::Float(i as f64), Encoding::Xor, 32, &mapper);
            assert!(r.inserted);
            if r.chunk_created {
                created += 1;
            }
        }
        assert_eq!(created, 3);
        let ooo = s.ooo().unwrap();
        assert_eq!(ooo.mmapped.len(), 2);
        assert_eq!(ooo.mmapped[0].num_samples, 32);
        assert_eq!((ooo.mmapped[0].mint, ooo.mmapped[0].maxt), (969, 1000));
        assert_eq!(ooo.head.as_ref().unwrap().chunk.len(), 6);
        assert_eq!(ooo.time_range(), Some((931, 1000)));
        mapper.flush().unwrap();
        let mut seen = Vec::new();
        mapper
            .iterate_all_chunks(&mut |m| seen.push((m.series_ref, m.is_ooo, m.num_samples)))
            .unwrap();
        assert_eq!(seen, vec![(7, true, 32), (7, true, 32)]);
        assert!(s.drop_compacted_ooo(ooo.mmapped[1].chunk_ref, 0));
        assert!(s.ooo().unwrap().mmapped.is_empty());
        assert!(s.has_ooo());
    }
}
