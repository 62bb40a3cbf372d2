//! Prometheus-compatible chunk encodings.
//!
//! A chunk holds up to a few hundred samples of one series, compressed. The
//! XOR encoding (Gorilla) stores timestamps as delta-of-deltas and values as
//! XORs with the previous value, about 1-2 bytes per sample for typical
//! metrics. Ferrite's chunks must be byte-identical to Prometheus' so that
//! Prometheus, promtool, Thanos and Mimir read the blocks Ferrite writes.

pub mod bstream;
pub mod xor;

pub use xor::{XorChunk, XorIterator};

/// Chunk encodings, numbered as in Prometheus.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum Encoding {
    None = 0,
    Xor = 1,
    Histogram = 2,
    FloatHistogram = 3,
}

impl Encoding {
    pub fn from_u8(b: u8) -> Option<Encoding> {
        match b {
            0 => Some(Encoding::None),
            1 => Some(Encoding::Xor),
            2 => Some(Encoding::Histogram),
            3 => Some(Encoding::FloatHistogram),
            _ => None,
        }
    }
}

/// A chunk that cannot be decoded.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ChunkError {
    #[error("chunk is {0} bytes, shorter than its 2-byte header")]
    TooShort(usize),
    #[error("chunk data ends or is invalid at sample {sample}")]
    Truncated { sample: u16 },
    #[error("chunk has bytes after its last sample")]
    TrailingBytes,
}
