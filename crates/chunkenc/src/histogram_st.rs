//! The start-timestamp histogram chunk encodings of Prometheus v3.16.0:
//! `histogramST` (encoding 5, [`HistogramStChunk`]) and `floathistogramST`
//! (encoding 6, [`FloatHistogramStChunk`]).
//!
//! Each is its base encoding ([`crate::histogram`], [`crate::float_histogram`])
//! with two differences:
//!
//! * the 3-byte header moves the counter-reset header into the top two
//!   bits of byte 0, leaving 14 bits of sample count (so a chunk holds at
//!   most [`HISTOGRAM_ST_MAX_SAMPLES`] samples), and byte 2 is the
//!   [ST header](crate::st);
//! * after each sample's data comes its start timestamp field, if any, in
//!   the [`crate::st`] scheme XOR2 uses.
//!
//! Appending follows the base encoding's rules exactly: Prometheus' ST
//! appenders make the same decisions (new chunk, recoding, counter-reset
//! header) as the plain ones and never look at the start timestamps for
//! them, so an ST change (a counter reset announced only through its ST,
//! say) neither cuts nor recodes a chunk. A recoded chunk keeps every
//! sample's ST. A full chunk refuses samples with
//! [`AppendError::ChunkFull`] where Prometheus panics.
//!
//! Iteration uses the base iterators made by `new_st`
//! ([`HistogramIterator::new_st`], [`FloatHistogramIterator::new_st`]):
//! their `start_timestamp` gives the ST of the current sample (0: none).

#![deny(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing,
    missing_docs
)]

use ferrite_model::{FloatHistogram, Histogram};

use crate::histogram_meta::{HeaderLayout, HISTOGRAM_ST_MAX_SAMPLES};
use crate::{
    AppendError, AppendOutcome, ChunkError, CounterResetHeader, FloatHistogramChunk,
    FloatHistogramIterator, HistogramChunk, HistogramIterator, StHeader,
};

/// Defines an ST chunk type around a base chunk type with ST header.
macro_rules! st_chunk {
    (
        $(#[$doc:meta])*
        $name:ident, $base:ident, $iter:ident, $hist:ty, $enc:literal
    ) => {
        $(#[$doc])*
        #[derive(Clone, Debug)]
        pub struct $name {
            /// A base chunk with the ST header layout.
            inner: $base,
        }

        impl Default for $name {
            fn default() -> Self {
                Self::new()
            }
        }

        impl $name {
            /// Most samples a chunk can hold (its sample count has 14 bits).
            pub const MAX_SAMPLES: u16 = HISTOGRAM_ST_MAX_SAMPLES;

            /// An empty chunk: zero samples, header `Unknown`, no STs.
            pub fn new() -> Self {
                $name {
                    inner: $base::empty(HeaderLayout::St),
                }
            }

            #[doc = concat!("Reopens ", $enc, " chunk bytes for appending, decoding every")]
            /// sample to restore the encoder state. Refuses what the base
            /// encoding's `from_bytes` refuses, and an ST header that does
            /// not fit the sample count ([`ChunkError::InvalidStHeader`]).
            pub fn from_bytes(data: Vec<u8>) -> Result<Self, ChunkError> {
                $base::from_bytes_as(data, HeaderLayout::St).map(|inner| $name { inner })
            }

            /// Number of samples.
            pub fn num_samples(&self) -> u16 {
                self.inner.num_samples()
            }

            /// True when the chunk holds [`Self::MAX_SAMPLES`] samples.
            pub fn is_full(&self) -> bool {
                self.inner.is_full()
            }

            /// The chunk bytes, header included, as Prometheus stores them.
            pub fn bytes(&self) -> &[u8] {
                self.inner.bytes()
            }

            /// The chunk bytes.
            pub fn into_bytes(self) -> Vec<u8> {
                self.inner.into_bytes()
            }

            /// The counter-reset header (top bits of byte 0).
            pub fn counter_reset_header(&self) -> CounterResetHeader {
                self.inner.counter_reset_header()
            }

            /// Sets the counter-reset header, keeping the sample count.
            pub fn set_counter_reset_header(&mut self, header: CounterResetHeader) {
                self.inner.set_counter_reset_header(header);
            }

            /// The ST header: whether and from which sample on start
            /// timestamps are stored.
            pub fn st_header(&self) -> StHeader {
                StHeader::from_byte(self.inner.bytes().get(2).copied().unwrap_or(0))
            }

            /// Iterates the samples; the iterator's `start_timestamp` gives
            /// each one's ST.
            pub fn iter(&self) -> $iter<'_> {
                self.inner.iter()
            }

            /// Releases spare capacity once the chunk is complete.
            pub fn compact(&mut self) {
                self.inner.compact();
            }

            #[doc = concat!("Appends a sample with start timestamp `st` (0: none) as")]
            #[doc = concat!("Prometheus' head does: the same outcomes as [`", stringify!($base), "::append`],")]
            /// the ST playing no part in them. `prev` is the series'
            /// previous chunk, consulted only for the counter-reset header
            /// of a first sample. Errors for a full chunk or inconsistent
            /// spans; the chunk is then unchanged.
            pub fn append(
                &mut self,
                prev: Option<&$name>,
                st: i64,
                t: i64,
                h: &$hist,
            ) -> Result<AppendOutcome<$name>, AppendError> {
                let prev = prev.map(|p| &p.inner);
                Ok(match self.inner.append_with(prev, st, t, h, false)? {
                    AppendOutcome::Appended => AppendOutcome::Appended,
                    AppendOutcome::Recoded => AppendOutcome::Recoded,
                    AppendOutcome::NewChunk(inner) => AppendOutcome::NewChunk($name { inner }),
                })
            }

            /// Appends a sample only if it fits this chunk as it is laid
            /// out (Prometheus' `appendOnly`); the chunk is unchanged on an
            /// error.
            pub fn append_only(&mut self, st: i64, t: i64, h: &$hist) -> Result<(), AppendError> {
                self.inner.append_only_st(st, t, h)
            }
        }
    };
}

st_chunk!(
    /// An integer histogram chunk with start timestamps (Prometheus'
    /// `histogramST`, encoding 5), appendable.
    HistogramStChunk,
    HistogramChunk,
    HistogramIterator,
    Histogram,
    "histogramST"
);

st_chunk!(
    /// A float histogram chunk with start timestamps (Prometheus'
    /// `floathistogramST`, encoding 6), appendable.
    FloatHistogramStChunk,
    FloatHistogramChunk,
    FloatHistogramIterator,
    FloatHistogram,
    "floathistogramST"
);

#[cfg(test)]
#[allow(clippy::expect_used, clippy::indexing_slicing, clippy::panic)]
mod tests {
    use super::*;
    use ferrite_model::{CounterResetHint, Span};

    fn sample(count: u64) -> Histogram {
        Histogram {
            count,
            sum: count as f64,
            positive_spans: vec![Span {
                offset: 0,
                length: 1,
            }],
            positive_buckets: vec![count as i64],
            ..Histogram::default()
        }
    }

    #[test]
    fn header_keeps_reset_bits_beside_a_14_bit_count() {
        let mut c = HistogramStChunk::new();
        c.append(None, 0, 1, &sample(1)).expect("appends");
        c.set_counter_reset_header(CounterResetHeader::CounterReset);
        c.append(None, 0, 2, &sample(2)).expect("appends");
        assert_eq!(&c.bytes()[..3], &[0x80, 2, 0]);
        assert_eq!(c.counter_reset_header(), CounterResetHeader::CounterReset);
        assert_eq!(c.num_samples(), 2);
    }

    #[test]
    fn full_chunk_refuses_samples() {
        let mut c = HistogramStChunk::new();
        for i in 0..HISTOGRAM_ST_MAX_SAMPLES {
            c.append(None, 7, i64::from(i), &sample(u64::from(i)))
                .expect("appends");
        }
        assert!(c.is_full());
        let before = c.bytes().to_vec();
        assert_eq!(
            c.append(None, 7, 1 << 40, &sample(1 << 20)).err(),
            Some(AppendError::ChunkFull)
        );
        assert_eq!(c.bytes(), &before[..]);
        let mut it = c.iter();
        let mut h = Histogram::default();
        let mut n = 0u16;
        while it.next_into(&mut h).is_some() {
            assert_eq!(it.start_timestamp(), 7);
            n += 1;
        }
        assert_eq!((n, it.error()), (HISTOGRAM_ST_MAX_SAMPLES, None));
        assert_eq!(c.st_header(), StHeader::from_byte(0xff));
    }

    #[test]
    fn st_changes_neither_cut_nor_recode() {
        let mut c = FloatHistogramStChunk::new();
        let mut h = sample(1).to_float();
        c.append(None, 100, 1000, &h).expect("appends");
        h.count = 2.0;
        h.positive_buckets = vec![2.0];
        h.counter_reset_hint = CounterResetHint::Unknown;
        // A new ST (a reset announced only by its ST) still appends.
        match c.append(None, 1500, 2000, &h).expect("appends") {
            AppendOutcome::Appended => {}
            other => panic!("{other:?}"),
        }
        let mut it = c.iter();
        let mut fh = FloatHistogram::default();
        let mut sts = Vec::new();
        while it.next_into(&mut fh).is_some() {
            sts.push(it.start_timestamp());
        }
        assert_eq!(sts, [100, 1500]);
    }
}
