//! A head series' open chunk, of whichever encoding its samples need:
//! XOR for floats, the integer or float histogram encodings for native
//! histograms. A series switching between floats and histograms cuts a
//! new chunk of the other encoding, as in Prometheus.

use ferrite_chunkenc::{
    AppendError, AppendOutcome, Encoding, FloatHistogramChunk, HistogramChunk, Xor2Chunk, XorChunk,
};

use crate::sample::SampleRef;

/// The kind of value a sample carries, which decides the chunk encoding.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ValueKind {
    /// A float sample (XOR chunks).
    Float,
    /// An integer native histogram (histogram chunks).
    Histogram,
    /// A float native histogram (float histogram chunks).
    FloatHistogram,
}

impl ValueKind {
    /// The encoding of chunks holding this kind.
    pub fn encoding(self) -> Encoding {
        match self {
            ValueKind::Float => Encoding::Xor,
            ValueKind::Histogram => Encoding::Histogram,
            ValueKind::FloatHistogram => Encoding::FloatHistogram,
        }
    }
}

/// An appendable chunk of one of the head's encodings.
pub enum HeadChunk {
    /// Floats.
    Xor(XorChunk),
    /// Floats, in v3.16's XOR2 encoding (`chunk_encoding.floats: xor2`;
    /// boxed: its start-timestamp state would make every series' open
    /// chunk 24 bytes larger, XOR or not).
    Xor2(Box<Xor2Chunk>),
    /// Integer native histograms (boxed: their encoder state is four
    /// times a float chunk's, and every float series would carry it).
    Histogram(Box<HistogramChunk>),
    /// Float native histograms (boxed, as integer ones).
    FloatHistogram(Box<FloatHistogramChunk>),
}

impl HeadChunk {
    /// An empty chunk for samples of `kind`.
    pub fn new(kind: ValueKind) -> Self {
        match kind {
            ValueKind::Float => HeadChunk::Xor(XorChunk::new()),
            ValueKind::Histogram => HeadChunk::Histogram(Box::default()),
            ValueKind::FloatHistogram => HeadChunk::FloatHistogram(Box::default()),
        }
    }

    /// An empty chunk for samples of `kind`, floats in `float_encoding`
    /// (XOR or XOR2).
    pub fn new_with(kind: ValueKind, float_encoding: Encoding) -> Self {
        match kind {
            ValueKind::Float if float_encoding == Encoding::Xor2 => HeadChunk::Xor2(Box::default()),
            kind => HeadChunk::new(kind),
        }
    }

    /// The kind of samples it holds.
    pub fn kind(&self) -> ValueKind {
        match self {
            HeadChunk::Xor(_) | HeadChunk::Xor2(_) => ValueKind::Float,
            HeadChunk::Histogram(_) => ValueKind::Histogram,
            HeadChunk::FloatHistogram(_) => ValueKind::FloatHistogram,
        }
    }

    /// Its encoding byte on disk.
    pub fn encoding(&self) -> Encoding {
        match self {
            HeadChunk::Xor2(_) => Encoding::Xor2,
            other => other.kind().encoding(),
        }
    }

    /// The encoded bytes.
    pub fn bytes(&self) -> &[u8] {
        match self {
            HeadChunk::Xor(c) => c.bytes(),
            HeadChunk::Xor2(c) => c.bytes(),
            HeadChunk::Histogram(c) => c.bytes(),
            HeadChunk::FloatHistogram(c) => c.bytes(),
        }
    }

    /// The newest float of a float chunk (`None`: a histogram chunk, or
    /// an empty one).
    pub fn last_float(&self) -> Option<f64> {
        match self {
            HeadChunk::Xor(c) => c.last_value(),
            HeadChunk::Xor2(c) => c.last_value(),
            HeadChunk::Histogram(_) | HeadChunk::FloatHistogram(_) => None,
        }
    }

    /// Samples in the chunk.
    pub fn num_samples(&self) -> u16 {
        match self {
            HeadChunk::Xor(c) => c.num_samples(),
            HeadChunk::Xor2(c) => c.num_samples(),
            HeadChunk::Histogram(c) => c.num_samples(),
            HeadChunk::FloatHistogram(c) => c.num_samples(),
        }
    }

    /// The encoded bytes, by value.
    pub fn into_bytes(self) -> Vec<u8> {
        match self {
            HeadChunk::Xor(c) => c.into_bytes(),
            HeadChunk::Xor2(c) => c.into_bytes(),
            HeadChunk::Histogram(c) => c.into_bytes(),
            HeadChunk::FloatHistogram(c) => c.into_bytes(),
        }
    }

    /// Appends a histogram sample of the chunk's own kind by the chunk's
    /// rules (appended, recoded, or a new chunk holding it). `prev`, the
    /// series' previous chunk, counts only if it is of the same kind.
    /// `None` for a float or a histogram of the other kind.
    pub fn append_histogram(
        &mut self,
        prev: Option<&HeadChunk>,
        t: i64,
        v: SampleRef<'_>,
    ) -> Option<Result<AppendOutcome<HeadChunk>, AppendError>> {
        fn wrap<C>(
            r: Result<AppendOutcome<C>, AppendError>,
            f: impl FnOnce(C) -> HeadChunk,
        ) -> Result<AppendOutcome<HeadChunk>, AppendError> {
            r.map(|o| match o {
                AppendOutcome::Appended => AppendOutcome::Appended,
                AppendOutcome::Recoded => AppendOutcome::Recoded,
                AppendOutcome::NewChunk(n) => AppendOutcome::NewChunk(f(n)),
            })
        }
        match (self, v) {
            (HeadChunk::Histogram(c), SampleRef::Histogram(h)) => {
                let prev = match prev {
                    Some(HeadChunk::Histogram(p)) => Some(&**p),
                    _ => None,
                };
                Some(wrap(c.append(prev, t, h), |c| {
                    HeadChunk::Histogram(Box::new(c))
                }))
            }
            (HeadChunk::FloatHistogram(c), SampleRef::FloatHistogram(h)) => {
                let prev = match prev {
                    Some(HeadChunk::FloatHistogram(p)) => Some(&**p),
                    _ => None,
                };
                Some(wrap(c.append(prev, t, h), |c| {
                    HeadChunk::FloatHistogram(Box::new(c))
                }))
            }
            _ => None,
        }
    }

    /// Where a boxed chunk (the histogram kinds) lives, for prefetching
    /// it before [`Self::append_addresses`] reads it; null for the float
    /// kinds, which live inline.
    pub fn boxed_address(&self) -> *const u8 {
        match self {
            HeadChunk::Xor(_) | HeadChunk::Xor2(_) => std::ptr::null(),
            HeadChunk::Histogram(c) => (&**c as *const HistogramChunk).cast(),
            HeadChunk::FloatHistogram(c) => (&**c as *const FloatHistogramChunk).cast(),
        }
    }

    /// Where the next append reads and writes first, for prefetching when
    /// appending to many chunks in turn (WAL replay).
    pub fn append_addresses(&self) -> [*const u8; 6] {
        match self {
            HeadChunk::Histogram(c) => c.append_addresses(),
            HeadChunk::FloatHistogram(c) => c.append_addresses(),
            other => {
                let none = std::ptr::null();
                [
                    other.tail_ptr(),
                    other.bytes().as_ptr(),
                    none,
                    none,
                    none,
                    none,
                ]
            }
        }
    }

    /// Where the encoded bytes end in memory (for prefetching).
    pub fn tail_ptr(&self) -> *const u8 {
        match self {
            HeadChunk::Xor(c) => c.tail_ptr(),
            HeadChunk::Xor2(c) => c.tail_ptr(),
            other => other.bytes().as_ptr_range().end,
        }
    }
}
