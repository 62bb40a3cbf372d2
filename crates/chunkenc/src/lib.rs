//! Prometheus-compatible chunk encodings.
//!
//! A chunk holds up to a few hundred consecutive samples of one series,
//! compressed. The XOR encoding is Facebook's Gorilla as Prometheus adapted
//! it: timestamps are stored as the change of the change between them
//! (regular scrapes make that 0, one bit), values as the XOR of their bits
//! with the previous value's, of which only the span between the leading
//! and trailing zeros is written (an unchanged value costs one bit, a slowly
//! moving gauge a dozen or so). Typical series take 1-2 bytes per sample.
//!
//! Prometheus, promtool, Thanos and Mimir read the blocks and head chunk
//! files Ferrite writes, and Ferrite reads theirs, so our chunks are not
//! merely compatible but byte-identical to what Prometheus v3.9.1 writes for
//! the same samples; `testdata/prometheus_xor_vectors.txt`, made by the real
//! Prometheus code, checks that. Decoding is hardened on top: corrupt or
//! truncated bytes end iteration with an error instead of a panic.
//!
//! Native histograms have two encodings of their own, integer
//! ([`HistogramChunk`]) and float ([`FloatHistogramChunk`]): every sample
//! of a chunk shares one bucket layout, counts and buckets are stored as
//! deltas of deltas (integer) or XORed with their previous value (float).
//! Appending follows Prometheus' chunk-level rules exactly: counter resets
//! and layout changes start a new chunk with the right counter-reset
//! header, new buckets recode the chunk, gauges move freely; the
//! [`histogram`] module documents them. `testdata/prometheus_histogram_vectors.txt`,
//! made by Prometheus v3.16.0 (`interop/cmd/promhistchunks`), checks the
//! bytes, the decisions and the decoding.
//!
//! Modules: [`bstream`] packs and unpacks bit fields; [`xor`] is the XOR
//! chunk format; [`xor2`] is Prometheus v3.16.0's XOR2 float format (joint
//! timestamp/value codes, optional start timestamps), checked against
//! `testdata/prometheus_xor2_vectors.txt`; [`st`] is the start timestamp
//! scheme XOR2 shares with the histogramST encodings; [`varbit`] the
//! variable-width integers and [`histogram_meta`] the header and layout the
//! histogram encodings share; [`histogram`] and [`float_histogram`] the two
//! histogram chunk formats; [`histogram_st`] their start-timestamp variants
//! (Prometheus v3.16.0's `histogramST` and `floathistogramST`), checked
//! against `testdata/prometheus_histogram_st_vectors.txt`; `xor_value`
//! (private) the Gorilla value window all of them share.

pub mod bstream;
pub mod float_histogram;
mod growth;
pub mod histogram;
pub mod histogram_meta;
pub mod histogram_st;
pub mod st;
pub mod varbit;
pub mod xor;
pub mod xor2;
mod xor_value;

pub use float_histogram::{FloatHistogramChunk, FloatHistogramIterator};
pub use histogram::{HistogramChunk, HistogramIterator};
pub use histogram_meta::{
    AppendError, AppendOutcome, CounterResetHeader, HISTOGRAM_HEADER_LEN, HISTOGRAM_ST_MAX_SAMPLES,
    MIN_SAMPLES_PER_HISTOGRAM_CHUNK, TARGET_BYTES_PER_HISTOGRAM_CHUNK,
};
pub use histogram_st::{FloatHistogramStChunk, HistogramStChunk};
pub use st::{StDecoder, StEncoder, StHeader};
pub use xor::{XorChunk, XorIterator};
pub use xor2::{Xor2Chunk, Xor2Iterator};

/// Chunk encodings, numbered as Prometheus stores them on disk (the byte
/// before the chunk data in block and head chunk files).
/// Prometheus v3.16.0 knows 1-6; the ST variants carry optional start
/// timestamps beside the samples.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum Encoding {
    None = 0,
    Xor = 1,
    Histogram = 2,
    FloatHistogram = 3,
    Xor2 = 4,
    HistogramSt = 5,
    FloatHistogramSt = 6,
}

impl Encoding {
    pub fn from_u8(b: u8) -> Option<Encoding> {
        match b {
            0 => Some(Encoding::None),
            1 => Some(Encoding::Xor),
            2 => Some(Encoding::Histogram),
            3 => Some(Encoding::FloatHistogram),
            4 => Some(Encoding::Xor2),
            5 => Some(Encoding::HistogramSt),
            6 => Some(Encoding::FloatHistogramSt),
            _ => None,
        }
    }

    /// The encoding of a byte a chunk may be stored with (Prometheus'
    /// `IsValidEncoding`: 1-6); `None` for 0 and unknown bytes.
    pub fn valid(b: u8) -> Option<Encoding> {
        Encoding::from_u8(b).filter(|e| *e != Encoding::None)
    }

    /// Prometheus' name of the encoding (`Encoding.String()`).
    pub fn name(self) -> &'static str {
        match self {
            Encoding::None => "none",
            Encoding::Xor => "XOR",
            Encoding::Histogram => "histogram",
            Encoding::FloatHistogram => "floathistogram",
            Encoding::Xor2 => "XOR2",
            Encoding::HistogramSt => "histogramST",
            Encoding::FloatHistogramSt => "floathistogramST",
        }
    }
}

/// Chunk bytes that cannot be decoded or appended to.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ChunkError {
    #[error("chunk is {len} bytes, shorter than its 2-byte sample count")]
    MissingHeader { len: usize },
    #[error("chunk data ends inside sample {sample} of {total}")]
    Truncated { sample: u16, total: u16 },
    #[error("sample {sample}: timestamp varint overflows 64 bits")]
    VarintOverflow { sample: u16 },
    #[error(
        "sample {sample}: value window of {leading} leading zeros and \
         {significant} significant bits exceeds 64 bits"
    )]
    InvalidValueWindow {
        sample: u16,
        leading: u8,
        significant: u8,
    },
    #[error("{extra} bytes after the last of {samples} samples")]
    TrailingBytes { samples: u16, extra: u64 },
    #[error("padding {bits} bits after the last of {samples} samples are not zero")]
    NonZeroPadding { samples: u16, bits: u8 },
    /// The chunk is shorter than its encoding's header (3 bytes for XOR2
    /// and the histogram encodings: sample count and a flags byte).
    #[error("chunk is {len} bytes, shorter than its {need}-byte header")]
    ShortHeader { len: usize, need: usize },
    /// The start timestamp header cannot belong to a chunk of this many
    /// samples, so appending would corrupt it (see [`StEncoder::resume`]).
    #[error("start timestamp header {header:#04x} does not fit a chunk of {samples} samples")]
    InvalidStHeader { header: u8, samples: u16 },
    #[error("histogram chunk layout has unknown schema {schema}")]
    UnknownSchema { schema: i32 },
    #[error(
        "histogram chunk layout of schema {schema} has a span with a negative \
         offset and cannot be reduced to schema 8"
    )]
    IrreducibleLayout { schema: i32 },
    #[error("histogram chunk layout has a later span with a negative offset: cannot append to it")]
    UnorderedSpans,
}

/// Why decoding a sample stopped, before the sample's index is attached
/// ([`Fault::at`] makes the [`ChunkError`]). Shared by every encoding.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Fault {
    /// The bit stream ends inside the sample.
    Truncated,
    /// A varint does not fit 64 bits.
    VarintOverflow,
    /// A new XOR value window of more than 64 bits.
    InvalidWindow { leading: u8, significant: u8 },
    /// A histogram layout with an unknown schema.
    UnknownSchema(i32),
    /// A histogram layout that cannot be reduced to schema 8.
    IrreducibleLayout(i32),
}

impl From<bstream::EndOfStream> for Fault {
    fn from(_: bstream::EndOfStream) -> Self {
        Fault::Truncated
    }
}

impl From<st::StReadError> for Fault {
    fn from(e: st::StReadError) -> Self {
        match e {
            st::StReadError::Truncated => Fault::Truncated,
            st::StReadError::VarintOverflow => Fault::VarintOverflow,
        }
    }
}

impl Fault {
    /// The error for sample `sample` of `total`.
    pub(crate) fn at(self, sample: u16, total: u16) -> ChunkError {
        match self {
            Fault::Truncated => ChunkError::Truncated { sample, total },
            Fault::VarintOverflow => ChunkError::VarintOverflow { sample },
            Fault::InvalidWindow {
                leading,
                significant,
            } => ChunkError::InvalidValueWindow {
                sample,
                leading,
                significant,
            },
            Fault::UnknownSchema(schema) => ChunkError::UnknownSchema { schema },
            Fault::IrreducibleLayout(schema) => ChunkError::IrreducibleLayout { schema },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encoding_bytes_round_trip() {
        for b in 0..=255u8 {
            match Encoding::from_u8(b) {
                Some(e) => assert_eq!(e as u8, b),
                None => assert!(b > 6),
            }
        }
    }
}
