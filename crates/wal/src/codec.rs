//! Whole-record compression as Prometheus applies it.
//!
//! Snappy uses the raw block format (Go's `snappy.Encode`, no framing) and
//! zstd uses standard frames (Go's `zstd.Encoder.EncodeAll`, which may emit
//! several concatenated frames, so the decoder accepts any number of them).
//! Both sides keep their codec state and output buffer between records: the
//! WAL hot paths must not allocate per record.

use zstd::zstd_safe::{self, DCtx, InBuffer, OutBuffer, ResetDirective};

use crate::error::WalError;
use crate::segment::Compression;

/// Prometheus' zstd mode is klauspost's `SpeedDefault`, documented as
/// roughly the reference implementation's level 3.
const ZSTD_LEVEL: i32 = 3;

/// A snappy block cannot expand by more than ~21x (a 3-byte copy tag yields
/// at most 64 bytes); a larger declared length is corruption, rejected
/// before allocating for it.
const SNAPPY_MAX_EXPANSION: usize = 32;

/// Compresses records for the writer, reusing its buffers.
pub(crate) struct RecordCompressor {
    kind: Compression,
    snappy: snap::raw::Encoder,
    zstd: Option<zstd::bulk::Compressor<'static>>,
    buf: Vec<u8>,
}

impl RecordCompressor {
    pub(crate) fn new(kind: Compression) -> Result<Self, WalError> {
        let zstd = match kind {
            Compression::Zstd => Some(zstd::bulk::Compressor::new(ZSTD_LEVEL)?),
            _ => None,
        };
        Ok(RecordCompressor {
            kind,
            snappy: snap::raw::Encoder::new(),
            zstd,
            buf: Vec::new(),
        })
    }

    /// Bytes its output buffer holds on to.
    pub(crate) fn held_bytes(&self) -> usize {
        self.buf.capacity()
    }

    /// The compression it applies.
    pub(crate) fn kind(&self) -> Compression {
        self.kind
    }

    /// Compresses `rec` if that makes it smaller, like Prometheus does: a
    /// record that does not shrink (and the empty record) is stored as is.
    /// Returns the compression actually applied and the bytes to store.
    pub(crate) fn compress<'a>(
        &'a mut self,
        rec: &'a [u8],
    ) -> Result<(Compression, &'a [u8]), WalError> {
        if rec.is_empty() {
            return Ok((Compression::None, rec));
        }
        let len = match self.kind {
            Compression::None => return Ok((Compression::None, rec)),
            Compression::Snappy => {
                let bound = snap::raw::max_compress_len(rec.len());
                if bound == 0 {
                    return Err(WalError::RecordTooLarge(rec.len()));
                }
                if self.buf.len() < bound {
                    self.buf.resize(bound, 0);
                }
                self.snappy
                    .compress(rec, &mut self.buf)
                    .map_err(|e| WalError::Compression(e.to_string()))?
            }
            Compression::Zstd => {
                let Some(zstd) = self.zstd.as_mut() else {
                    return Err(WalError::Compression("zstd compressor missing".into()));
                };
                self.buf.clear();
                self.buf.reserve(zstd_safe::compress_bound(rec.len()));
                zstd.compress_to_buffer(rec, &mut self.buf)?
            }
        };
        match self.buf.get(..len) {
            Some(out) if len < rec.len() => Ok((self.kind, out)),
            _ => Ok((Compression::None, rec)),
        }
    }
}

/// Decompresses records for the reader, reusing its buffers.
pub(crate) struct RecordDecompressor {
    snappy: snap::raw::Decoder,
    zstd: Option<DCtx<'static>>,
    buf: Vec<u8>,
}

impl RecordDecompressor {
    pub(crate) fn new() -> Self {
        RecordDecompressor {
            snappy: snap::raw::Decoder::new(),
            zstd: None,
            buf: Vec::new(),
        }
    }

    /// The output of the last successful [`Self::decompress`].
    pub(crate) fn output(&self, len: usize) -> &[u8] {
        self.buf.get(..len).unwrap_or_default()
    }

    /// Decompresses `src` into the internal buffer and returns the record
    /// length. Errors are corruption reasons.
    pub(crate) fn decompress(
        &mut self,
        kind: Compression,
        src: &[u8],
        max_len: usize,
    ) -> Result<usize, String> {
        // Prometheus never compresses the empty record and decodes an empty
        // payload as empty whatever its flag says.
        if src.is_empty() {
            return Ok(0);
        }
        match kind {
            Compression::None => Err("uncompressed record passed to decompressor".into()),
            Compression::Snappy => self.snappy(src, max_len),
            Compression::Zstd => self.zstd(src, max_len),
        }
    }

    fn snappy(&mut self, src: &[u8], max_len: usize) -> Result<usize, String> {
        let len = snap::raw::decompress_len(src).map_err(|e| format!("snappy: {e}"))?;
        if len > max_len {
            return Err(format!(
                "snappy record of {len} bytes exceeds the {max_len} byte limit"
            ));
        }
        if len > src.len().saturating_mul(SNAPPY_MAX_EXPANSION) {
            return Err(format!(
                "snappy header declares {len} bytes for {} compressed bytes",
                src.len()
            ));
        }
        if self.buf.len() < len {
            self.buf.resize(len, 0);
        }
        let out = self.buf.get_mut(..len).unwrap_or_default();
        let written = self
            .snappy
            .decompress(src, out)
            .map_err(|e| format!("snappy: {e}"))?;
        if written != len {
            return Err(format!(
                "snappy: decoded {written} bytes, header said {len}"
            ));
        }
        Ok(len)
    }

    fn zstd(&mut self, src: &[u8], max_len: usize) -> Result<usize, String> {
        let dctx = self.zstd.get_or_insert_with(DCtx::create);
        // Drop any state left behind by a previous failed record.
        dctx.reset(ResetDirective::SessionOnly)
            .map_err(|code| format!("zstd: {}", zstd_safe::get_error_name(code)))?;
        self.buf.clear();
        if let Ok(Some(size)) = zstd_safe::get_frame_content_size(src) {
            if size > max_len as u64 {
                return Err(format!(
                    "zstd record of {size} bytes exceeds the {max_len} byte limit"
                ));
            }
            // Size known: reserve it up front, but only as much as the input
            // could plausibly expand to, so a corrupt header cannot make us
            // allocate a gigabyte; real outliers grow below.
            let plausible = src.len().saturating_mul(64).saturating_add(1 << 16);
            self.buf.reserve((size as usize).min(plausible));
        }
        // Output is capped one byte past the limit so an oversized record is
        // detected instead of silently truncated.
        let cap_limit = max_len.saturating_add(1);
        let mut input = InBuffer::around(src);
        loop {
            if self.buf.len() == self.buf.capacity() {
                if self.buf.len() >= cap_limit {
                    return Err(format!("zstd record exceeds the {max_len} byte limit"));
                }
                let grow = self.buf.capacity().max(64 * 1024);
                self.buf.reserve(grow.min(cap_limit - self.buf.len()));
            }
            let (in_before, out_before) = (input.pos(), self.buf.len());
            let pos = self.buf.len();
            let mut output = OutBuffer::around_pos(&mut self.buf, pos);
            let hint = dctx
                .decompress_stream(&mut output, &mut input)
                .map_err(|code| format!("zstd: {}", zstd_safe::get_error_name(code)))?;
            if self.buf.len() > max_len {
                return Err(format!("zstd record exceeds the {max_len} byte limit"));
            }
            let input_done = input.pos() == src.len();
            let output_full = self.buf.len() == self.buf.capacity();
            if hint == 0 && input_done {
                return Ok(self.buf.len());
            }
            if input_done && !output_full {
                return Err("zstd: truncated frame".into());
            }
            if input.pos() == in_before && self.buf.len() == out_before && !output_full {
                return Err("zstd: decoder made no progress".into());
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn roundtrip(kind: Compression, rec: &[u8]) {
        let mut c = RecordCompressor::new(kind).unwrap();
        let mut d = RecordDecompressor::new();
        let (applied, bytes) = c.compress(rec).unwrap();
        let bytes = bytes.to_vec();
        if applied == Compression::None {
            assert_eq!(bytes, rec);
        } else {
            assert!(bytes.len() < rec.len());
            let n = d.decompress(applied, &bytes, usize::MAX).unwrap();
            assert_eq!(d.output(n), rec);
        }
    }

    #[test]
    fn codecs_roundtrip() {
        let text: Vec<u8> = b"metric{a=\"b\"} 1 "
            .iter()
            .cycle()
            .take(100_000)
            .copied()
            .collect();
        for kind in [Compression::None, Compression::Snappy, Compression::Zstd] {
            roundtrip(kind, b"");
            roundtrip(kind, b"x");
            roundtrip(kind, &text);
            roundtrip(kind, &text[..10]);
        }
    }

    #[test]
    fn limits_and_garbage() {
        let text: Vec<u8> = b"abcd".iter().cycle().take(10_000).copied().collect();
        let mut d = RecordDecompressor::new();
        for kind in [Compression::Snappy, Compression::Zstd] {
            let mut c = RecordCompressor::new(kind).unwrap();
            let bytes = c.compress(&text).unwrap().1.to_vec();
            assert!(d.decompress(kind, &bytes, 9_999).is_err());
            assert_eq!(d.decompress(kind, &bytes, 10_000), Ok(10_000));
            assert!(d
                .decompress(kind, &bytes[..bytes.len() - 1], usize::MAX)
                .is_err());
            assert!(d.decompress(kind, &[0xff; 20], usize::MAX).is_err());
            assert_eq!(d.decompress(kind, &bytes, 10_000), Ok(10_000));
            assert_eq!(d.output(10_000), &text[..]);
        }
        // Declared length far beyond what the input could expand to.
        assert!(d
            .decompress(Compression::Snappy, &[0xff, 0xff, 0xff, 0x7f], usize::MAX)
            .is_err());
    }
}
