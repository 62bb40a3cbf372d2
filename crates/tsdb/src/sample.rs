//! Decoding a chunk of any encoding the storage holds into typed samples.
//!
//! Floats come from XOR and XOR2 chunks, integer native histograms from
//! histogram chunks, float native histograms from float histogram chunks
//! (and both from their start-timestamp variants; the start timestamps are
//! not handed out).
//! A [`ChunkDecoder`] keeps the histogram it decodes into, so walking many
//! chunks allocates only when a histogram has more buckets than any before.

use ferrite_chunkenc::{
    AppendOutcome, ChunkError, Encoding, FloatHistogramIterator, HistogramIterator, Xor2Iterator,
    XorIterator,
};
use ferrite_model::{FloatHistogram, Histogram, SampleValue};

use crate::head::series::{HeadChunk, ValueKind};

/// One decoded sample's value, borrowed from the decoder.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum SampleRef<'a> {
    /// A float.
    Float(f64),
    /// An integer native histogram.
    Histogram(&'a Histogram),
    /// A float native histogram.
    FloatHistogram(&'a FloatHistogram),
}

impl SampleRef<'_> {
    /// The value, owned.
    pub fn to_owned_value(self) -> SampleValue {
        match self {
            SampleRef::Float(v) => SampleValue::Float(v),
            SampleRef::Histogram(h) => SampleValue::Histogram(Box::new(h.clone())),
            SampleRef::FloatHistogram(h) => SampleValue::FloatHistogram(Box::new(h.clone())),
        }
    }

    /// Stores the value in `dst`, reusing its histogram's allocations when
    /// it holds one of the same kind.
    pub fn store_into(self, dst: &mut SampleValue) {
        match (self, dst) {
            (SampleRef::Histogram(h), SampleValue::Histogram(b)) => (**b).clone_from(h),
            (SampleRef::FloatHistogram(h), SampleValue::FloatHistogram(b)) => (**b).clone_from(h),
            (v, dst) => *dst = v.to_owned_value(),
        }
    }

    /// A borrowed view of an owned value.
    pub fn of(v: &SampleValue) -> SampleRef<'_> {
        match v {
            SampleValue::Float(f) => SampleRef::Float(*f),
            SampleValue::Histogram(h) => SampleRef::Histogram(h),
            SampleValue::FloatHistogram(h) => SampleRef::FloatHistogram(h),
        }
    }
}

/// Why a chunk could not be decoded.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum DecodeError {
    /// The bytes are damaged.
    #[error(transparent)]
    Corrupt(#[from] ChunkError),
    /// An encoding this version does not read (an unknown byte).
    #[error("unsupported chunk encoding {0}")]
    Unsupported(u8),
}

/// Decodes chunks, reusing its histogram buffers.
#[derive(Default)]
pub struct ChunkDecoder {
    histogram: Histogram,
    float_histogram: FloatHistogram,
}

impl ChunkDecoder {
    /// A decoder with empty buffers.
    pub fn new() -> Self {
        Self::default()
    }

    /// Calls `f` with every sample of the chunk, oldest first, until it
    /// returns `false`.
    pub fn for_each(
        &mut self,
        encoding: u8,
        bytes: &[u8],
        mut f: impl FnMut(i64, SampleRef<'_>) -> bool,
    ) -> Result<(), DecodeError> {
        match Encoding::valid(encoding) {
            Some(Encoding::Xor) => {
                let mut it = XorIterator::new(bytes);
                for (t, v) in it.by_ref() {
                    if !f(t, SampleRef::Float(v)) {
                        return Ok(());
                    }
                }
                it.error().map_or(Ok(()), |e| Err(e.clone().into()))
            }
            Some(Encoding::Xor2) => {
                let mut it = Xor2Iterator::new(bytes);
                for (t, v) in it.by_ref() {
                    if !f(t, SampleRef::Float(v)) {
                        return Ok(());
                    }
                }
                it.error().map_or(Ok(()), |e| Err(e.clone().into()))
            }
            Some(e @ (Encoding::Histogram | Encoding::HistogramSt)) => {
                let mut it = if e == Encoding::Histogram {
                    HistogramIterator::new(bytes)
                } else {
                    HistogramIterator::new_st(bytes)
                };
                while let Some(t) = it.next_into(&mut self.histogram) {
                    if !f(t, SampleRef::Histogram(&self.histogram)) {
                        return Ok(());
                    }
                }
                it.error().map_or(Ok(()), |e| Err(e.clone().into()))
            }
            Some(e @ (Encoding::FloatHistogram | Encoding::FloatHistogramSt)) => {
                let mut it = if e == Encoding::FloatHistogram {
                    FloatHistogramIterator::new(bytes)
                } else {
                    FloatHistogramIterator::new_st(bytes)
                };
                while let Some(t) = it.next_into(&mut self.float_histogram) {
                    if !f(t, SampleRef::FloatHistogram(&self.float_histogram)) {
                        return Ok(());
                    }
                }
                it.error().map_or(Ok(()), |e| Err(e.clone().into()))
            }
            None | Some(Encoding::None) => Err(DecodeError::Unsupported(encoding)),
        }
    }
}

/// Samples a [`ChunkBuilder`] puts in one chunk at most, as Prometheus'
/// series-to-chunks encoder (`seriesToChunkEncoderSplit`).
pub const SAMPLES_PER_BUILT_CHUNK: u16 = 120;

/// A chunk a [`ChunkBuilder`] finished.
pub struct BuiltChunk {
    /// The first sample's time.
    pub mint: i64,
    /// The last sample's time.
    pub maxt: i64,
    /// The encoding byte.
    pub encoding: Encoding,
    /// The number of samples in it.
    pub num_samples: u16,
    /// The chunk's bytes.
    pub bytes: Vec<u8>,
}

/// Encodes a series' samples, of any kinds, into chunks as Prometheus
/// does. [`ChunkBuilder::new`] is its series-to-chunks encoder (merging
/// overlapping chunks): a new chunk when the kind changes or after
/// [`SAMPLES_PER_BUILT_CHUNK`] samples, and when a histogram chunk asks
/// for one (a counter reset, a schema change; a recoding stays in place).
/// [`ChunkBuilder::single`] re-encodes the samples left of one chunk
/// (deleted or out-of-range samples dropped) into one chunk, whatever
/// their number, as Prometheus' compactor does.
pub struct ChunkBuilder {
    open: Option<(HeadChunk, i64, i64, u16)>,
    split: bool,
    float_encoding: Encoding,
}

impl Default for ChunkBuilder {
    fn default() -> Self {
        Self::new()
    }
}

impl ChunkBuilder {
    /// A builder splitting as the series-to-chunks encoder does.
    pub fn new() -> Self {
        ChunkBuilder {
            open: None,
            split: true,
            float_encoding: Encoding::Xor,
        }
    }

    /// A builder for the samples of one chunk: no split by count.
    pub fn single() -> Self {
        ChunkBuilder {
            open: None,
            split: false,
            float_encoding: Encoding::Xor,
        }
    }

    /// Float chunks in `e` (XOR, the default, or XOR2), as Prometheus
    /// re-encodes with its configured float encoding.
    pub fn with_float_encoding(mut self, e: Encoding) -> Self {
        self.float_encoding = e;
        self
    }

    /// Adds a sample (times must increase), handing finished chunks to
    /// `out`.
    pub fn push(&mut self, t: i64, v: SampleRef<'_>, out: &mut impl FnMut(BuiltChunk)) {
        let kind = match v {
            SampleRef::Float(_) => ValueKind::Float,
            SampleRef::Histogram(_) => ValueKind::Histogram,
            SampleRef::FloatHistogram(_) => ValueKind::FloatHistogram,
        };
        let cut = match &self.open {
            Some((c, _, _, n)) => c.kind() != kind || (self.split && *n >= SAMPLES_PER_BUILT_CHUNK),
            None => true,
        };
        if cut {
            self.finish(out);
            self.open = Some((HeadChunk::new_with(kind, self.float_encoding), t, t, 0));
        }
        let Some((chunk, _, maxt, n)) = self.open.as_mut() else {
            return;
        };
        let started = match (chunk, v) {
            (HeadChunk::Xor(c), SampleRef::Float(f)) => {
                c.append(t, f);
                None
            }
            (HeadChunk::Xor2(c), SampleRef::Float(f)) => {
                c.append(0, t, f);
                None
            }
            // Validated histograms always go in (a refused one would
            // already have been refused when it was first stored); a kind
            // change cut the chunk above.
            (chunk, v) => match chunk.append_histogram(None, t, v) {
                Some(Ok(AppendOutcome::NewChunk(nc))) => Some(nc),
                _ => None,
            },
        };
        match started {
            Some(new_chunk) => {
                self.finish(out);
                self.open = Some((new_chunk, t, t, 1));
            }
            None => {
                *maxt = t;
                *n += 1;
            }
        }
    }

    /// Hands the open chunk, if it has samples, to `out`.
    pub fn finish(&mut self, out: &mut impl FnMut(BuiltChunk)) {
        if let Some((chunk, mint, maxt, n)) = self.open.take() {
            if n > 0 {
                out(BuiltChunk {
                    mint,
                    maxt,
                    encoding: chunk.encoding(),
                    num_samples: n,
                    bytes: chunk.into_bytes(),
                });
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ferrite_chunkenc::{HistogramChunk, XorChunk};
    use ferrite_model::Span;

    #[test]
    fn decodes_floats_and_histograms() {
        let mut x = XorChunk::new();
        x.append(1, 1.5);
        x.append(2, 2.5);
        let mut d = ChunkDecoder::new();
        let mut got = Vec::new();
        d.for_each(Encoding::Xor as u8, x.bytes(), |t, v| {
            got.push((t, v.to_owned_value()));
            true
        })
        .expect("decodes");
        assert_eq!(
            got,
            vec![(1, SampleValue::Float(1.5)), (2, SampleValue::Float(2.5))]
        );

        let h = Histogram {
            count: 3,
            sum: 4.0,
            positive_spans: vec![Span {
                offset: 0,
                length: 2,
            }],
            positive_buckets: vec![1, 1],
            ..Histogram::default()
        };
        let mut c = HistogramChunk::new();
        c.append(None, 10, &h).expect("appends");
        let mut n = 0;
        d.for_each(Encoding::Histogram as u8, c.bytes(), |t, v| {
            assert_eq!(t, 10);
            match v {
                SampleRef::Histogram(got) => assert_eq!(got.positive_buckets, h.positive_buckets),
                other => panic!("{other:?}"),
            }
            n += 1;
            true
        })
        .expect("decodes");
        assert_eq!(n, 1);
        assert_eq!(
            d.for_each(9, &[], |_, _| true),
            Err(DecodeError::Unsupported(9))
        );
    }
}
