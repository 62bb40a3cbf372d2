//! The XOR chunk encoding: Facebook's Gorilla, with Prometheus' changes.
//!
//! Layout: a 2-byte big-endian sample count, then a bit stream (most
//! significant bit first, last byte zero-padded):
//!
//! * sample 0: timestamp as a zig-zag varint, then the 64 value bits;
//! * sample 1: timestamp delta as a uvarint, then the value as below;
//! * sample n >= 2: the delta of the timestamp delta ("dod") as
//!   `0` (dod = 0), `10` + 14 bits, `110` + 17 bits, `1110` + 20 bits or
//!   `1111` + 64 bits. An `n`-bit field holds -(2^(n-1) - 1) ..= 2^(n-1),
//!   stored as its low `n` bits (so values above 2^(n-1) read back negative);
//! * values: XOR with the previous value's bits. `0` if equal; `10` + the
//!   XOR's bits inside the previous window if they fit in it; else `11` +
//!   5 bits of leading zeros (clamped to 31) + 6 bits of significant-bit count
//!   (64 written as 0) + the significant bits, which becomes the new window.
//!
//! The varints are written byte by byte at whatever bit position the stream
//! is at, and all timestamp arithmetic wraps, as in Go, so every `i64`
//! sequence round-trips (the head rejects out-of-order samples before they
//! reach a chunk, so in practice deltas are positive).
//!
//! Prometheus, promtool, Thanos and Mimir read the chunks we write and we
//! read theirs, so the writer must make the very same choices as
//! Prometheus' `xorAppender` (bucket edges, clamping, window reuse) and the
//! reader must accept everything Prometheus' `xorIterator` accepts. The
//! golden vectors in `testdata/` pin this down.

use std::iter::FusedIterator;

use crate::bstream::{BitReader, BitWriter, EndOfStream};
use crate::xor_value::XorWindow;

mod bulk;
use crate::{ChunkError, Fault};

/// Bytes of the sample count that starts every chunk.
const HEADER_LEN: usize = 2;
/// Longest sample prefix before the value payload: a 20-bit dod with its
/// 4 control bits, and a new value window's 2 + 5 + 6 header bits.
const FAST_PATH_BITS: usize = 4 + 20 + 2 + 5 + 6;

/// An appendable XOR chunk: the chunk bytes plus the state needed to encode
/// the next sample.
///
/// 56 bytes, since the head keeps one open chunk per series.
#[derive(Clone, Debug)]
pub struct XorChunk {
    /// Header and bit stream, exactly the bytes Prometheus would have.
    buf: Vec<u8>,
    last_t: i64,
    last_value: u64,
    /// Timestamp delta of the last sample (0 after the first).
    last_t_delta: u64,
    /// Unwritten low bits of the last byte of `buf`.
    free_bits: u8,
    /// Current value window; [`XorWindow::NONE`] before the first.
    window: XorWindow,
    /// Sample count, mirrored from the header so appends need not load the
    /// header's cache line (replay appends to many chunks in turn).
    count: u16,
}

impl Default for XorChunk {
    fn default() -> Self {
        Self::new()
    }
}

impl XorChunk {
    /// Most samples a chunk can hold (its count is a `u16`).
    pub const MAX_SAMPLES: u16 = u16::MAX;

    /// An empty chunk: just the zero sample count.
    pub fn new() -> Self {
        // The ladder's first rung, 40 bytes: the header, a first sample
        // (at most 18 bytes) and a few more. Prometheus starts at 128
        // bytes; here the buffer grows by an eighth as it fills
        // ([`crate::growth`]) and is kept across the series' chunks
        // (`reset`), so a long-lived series reaches the size its chunks
        // need once, while a head of new or short-lived series (churn, or
        // a fresh start) pays a 48-byte malloc chunk for each rather than
        // 144: ~96 MB less for a million new series.
        let mut buf = crate::growth::new_buffer();
        buf.extend_from_slice(&[0; HEADER_LEN]);
        XorChunk {
            buf,
            last_t: 0,
            last_value: 0,
            last_t_delta: 0,
            free_bits: 0,
            window: XorWindow::NONE,
            count: 0,
        }
    }

    /// Empties the chunk for reuse, keeping its allocation: the head cuts
    /// chunk after chunk of similar size, so the buffer already fits.
    pub fn reset(&mut self) {
        self.buf.clear();
        self.buf.extend_from_slice(&[0; HEADER_LEN]);
        self.last_t = 0;
        self.last_value = 0;
        self.last_t_delta = 0;
        self.free_bits = 0;
        self.window = XorWindow::NONE;
        self.count = 0;
    }

    /// Reopens chunk bytes for appending. Decodes every sample to restore
    /// the encoder state, so appending afterwards writes exactly the bytes
    /// that appending all samples to one chunk would have.
    ///
    /// Fails on anything Prometheus' appender could not have written: a
    /// short header, undecodable samples, or bytes or non-zero padding bits
    /// after the last sample (appending there would corrupt the stream).
    ///
    /// Unlike Prometheus' `FromData(...).Appender()`, which resumes at the
    /// next byte boundary and with an empty value window taken as 0 leading
    /// and 0 trailing zeros, this resumes at the exact bit and, if no value
    /// window was ever written, as a fresh appender would. Both kinds of
    /// output decode the same way with either implementation.
    pub fn from_bytes(mut data: Vec<u8>) -> Result<Self, ChunkError> {
        let mut it = XorIterator::new(&data);
        while it.next().is_some() {}
        if let Some(err) = it.err.take() {
            return Err(err);
        }
        let used_bits = HEADER_LEN as u64 * 8 + it.reader.bits_consumed();
        let used_bytes = used_bits.div_ceil(8);
        if data.len() as u64 != used_bytes {
            return Err(ChunkError::TrailingBytes {
                samples: it.total,
                extra: (data.len() as u64).saturating_sub(used_bytes),
            });
        }
        let free_bits = (used_bytes * 8 - used_bits) as u8;
        let padding = data.last().map_or(0, |&b| b & ((1u8 << free_bits) - 1));
        if padding != 0 {
            return Err(ChunkError::NonZeroPadding {
                samples: it.total,
                bits: free_bits,
            });
        }
        let window = if it.value_changed {
            it.window
        } else {
            XorWindow::NONE
        };
        let (last_t, last_value, last_t_delta, count) = (it.t, it.value, it.t_delta, it.total);
        // Room for the next few samples without an immediate reallocation.
        data.reserve(16);
        Ok(XorChunk {
            buf: data,
            last_t,
            last_value,
            last_t_delta,
            free_bits,
            window,
            count,
        })
    }

    /// Number of samples, from the chunk header.
    pub fn num_samples(&self) -> u16 {
        self.count
    }

    /// The newest sample's value (`None` while the chunk is empty): the
    /// encoder keeps it anyway, so the head need not keep a copy for its
    /// duplicate checks.
    pub fn last_value(&self) -> Option<f64> {
        (self.count > 0).then(|| f64::from_bits(self.last_value))
    }

    /// True when the chunk holds [`Self::MAX_SAMPLES`] and takes no more.
    pub fn is_full(&self) -> bool {
        self.num_samples() == Self::MAX_SAMPLES
    }

    /// The chunk bytes, header included, as Prometheus stores them.
    pub fn bytes(&self) -> &[u8] {
        &self.buf
    }

    /// Address of the last byte, where the next append writes: for
    /// prefetching when appending to many chunks in turn (WAL replay).
    pub fn tail_ptr(&self) -> *const u8 {
        self.buf
            .as_ptr()
            .wrapping_add(self.buf.len().saturating_sub(1))
    }

    pub fn into_bytes(self) -> Vec<u8> {
        self.buf
    }

    pub fn iter(&self) -> XorIterator<'_> {
        XorIterator::new(&self.buf)
    }

    /// Releases spare capacity once the chunk is complete (Prometheus'
    /// `Compact`); appending still works afterwards.
    pub fn compact(&mut self) {
        if self.buf.capacity() > self.buf.len() + 32 {
            self.buf.shrink_to_fit();
        }
    }

    /// Appends a sample. Callers keep timestamps increasing (Prometheus
    /// does not check either; other orders still round-trip).
    ///
    /// A full chunk (see [`Self::is_full`]) ignores the sample: Prometheus
    /// would wrap the count to 0 and corrupt the chunk. The head cuts chunks
    /// long before that.
    pub fn append(&mut self, t: i64, v: f64) {
        let count = self.num_samples();
        if count == Self::MAX_SAMPLES {
            return;
        }
        let value = v.to_bits();
        let mut w = BitWriter::new(&mut self.buf, &mut self.free_bits);
        match count {
            0 => {
                w.write_varint(t);
                w.write_bits(value, 64);
            }
            1 => {
                let t_delta = t.wrapping_sub(self.last_t) as u64;
                w.write_uvarint(t_delta);
                self.window.write(&mut w, self.last_value ^ value);
                self.last_t_delta = t_delta;
            }
            _ => {
                let t_delta = t.wrapping_sub(self.last_t) as u64;
                write_dod(&mut w, t_delta.wrapping_sub(self.last_t_delta) as i64);
                self.window.write(&mut w, self.last_value ^ value);
                self.last_t_delta = t_delta;
            }
        }
        self.last_t = t;
        self.last_value = value;
        self.count = count + 1;
        if let Some(header) = self.buf.first_chunk_mut::<HEADER_LEN>() {
            *header = self.count.to_be_bytes();
        }
    }
}

/// Whether `dod` fits an `nbits` field: -(2^(nbits-1) - 1) ..= 2^(nbits-1).
/// The range is lopsided because the reader takes the top value as positive.
#[inline]
fn dod_fits(dod: i64, nbits: u32) -> bool {
    let half = 1i64 << (nbits - 1);
    -(half - 1) <= dod && dod <= half
}

/// Writes a delta-of-delta: unary size class, then two's complement bits.
#[inline(always)]
fn write_dod(w: &mut BitWriter<'_>, dod: i64) {
    let bits = dod as u64;
    if dod == 0 {
        w.write_bits(0, 1);
    } else if dod_fits(dod, 14) {
        w.write_bits(0b10 << 14 | (bits & 0x3fff), 2 + 14);
    } else if dod_fits(dod, 17) {
        w.write_bits(0b110 << 17 | (bits & 0x1_ffff), 3 + 17);
    } else if dod_fits(dod, 20) {
        w.write_bits(0b1110 << 20 | (bits & 0xf_ffff), 4 + 20);
    } else {
        w.write_bits(0b1111, 4);
        w.write_bits(bits, 64);
    }
}

/// Iterates the samples of XOR chunk bytes, stopping after the count in the
/// header or at the first sample that cannot be decoded (see
/// [`XorIterator::error`]). Never reads outside the slice.
#[derive(Clone, Debug)]
pub struct XorIterator<'a> {
    reader: BitReader<'a>,
    total: u16,
    read: u16,
    /// Samples still to decode: `total - read`, or 0 after an error.
    left: u16,
    /// The last returned sample.
    t: i64,
    value: u64,
    t_delta: u64,
    /// Value window. Starts at 0/0 ([`XorWindow::FULL`]) like Prometheus'
    /// reader, so a `10` before any `11` means 64 bits (Prometheus writes
    /// that after reopening a chunk). Only ever set from a checked header,
    /// so `leading + trailing <= 63` always holds.
    window: XorWindow,
    /// Whether any value differed from its predecessor, i.e. whether the
    /// writer had a window (for [`XorChunk::from_bytes`]).
    value_changed: bool,
    /// `next` returned `None`.
    done: bool,
    err: Option<ChunkError>,
}

impl<'a> XorIterator<'a> {
    pub fn new(data: &'a [u8]) -> Self {
        let (total, body, err) = match data.split_first_chunk::<HEADER_LEN>() {
            Some((header, body)) => (u16::from_be_bytes(*header), body, None),
            None => (
                0,
                &[][..],
                Some(ChunkError::MissingHeader { len: data.len() }),
            ),
        };
        XorIterator {
            reader: BitReader::new(body),
            total,
            read: 0,
            left: if err.is_some() { 0 } else { total },
            t: 0,
            value: 0,
            t_delta: 0,
            window: XorWindow::FULL,
            value_changed: false,
            done: false,
            err,
        }
    }

    /// Number of samples the chunk header announces.
    pub fn num_samples(&self) -> u16 {
        self.total
    }

    /// Why iteration ended early: the bytes are truncated or corrupt.
    pub fn error(&self) -> Option<&ChunkError> {
        self.err.as_ref()
    }

    /// Advances to the first sample with timestamp >= `t` and returns it.
    /// Never moves backwards: if the sample last returned already
    /// qualifies, returns it again. `None` once the samples run out.
    pub fn seek(&mut self, t: i64) -> Option<(i64, f64)> {
        if self.read > 0 && !self.done && self.t >= t {
            return Some(self.current());
        }
        self.by_ref().find(|sample| sample.0 >= t)
    }

    #[inline(always)]
    fn current(&self) -> (i64, f64) {
        (self.t, f64::from_bits(self.value))
    }

    #[inline(always)]
    fn decode_next(&mut self) -> Result<(), Fault> {
        if self.read < 2 {
            return self.decode_start();
        }
        if self.reader.remaining() >= FAST_PATH_BITS {
            let reg = self.reader.peek();
            if let Some((dod, used)) = short_dod(reg) {
                return self.decode_fast(reg, dod, used);
            }
        }
        self.decode_checked()
    }

    /// Decodes a sample whose dod class is 0..=3 (`dod`, taking `used`
    /// bits: [`short_dod`]) from a buffer holding at least
    /// [`FAST_PATH_BITS`]: everything up to the value's payload is taken
    /// from `reg` without further checks.
    ///
    /// This decodes the value field inline rather than through
    /// [`XorWindow::read`] (which [`Self::decode_value`] uses): the value's
    /// control bits, window header and usually its payload come from the
    /// same 64-bit `reg` as the dod, with one bounds check for the whole
    /// sample; going through the bit reader field by field costs three more
    /// loads and checks per sample in XOR's hottest loop.
    #[inline(always)]
    fn decode_fast(&mut self, reg: u64, dod: u64, mut used: u32) -> Result<(), Fault> {
        self.t_delta = self.t_delta.wrapping_add(dod);
        self.t = self.t.wrapping_add(self.t_delta as i64);

        // Value control: `0` same, `10` old window, `11` + 11 bits new one.
        let value_reg = reg << used;
        let control = value_reg.leading_ones().min(2);
        if control == 0 {
            self.reader.skip(used + 1);
            return Ok(());
        }
        let new_window = control == 2;
        let mut leading = self.window.leading;
        let mut significant = 64 - self.window.leading - self.window.trailing;
        if new_window {
            (leading, significant) = XorWindow::header_fields((value_reg << 2) >> (64 - 11));
        }
        // One check for both cases (the current window always passes).
        let window = XorWindow::checked(leading, significant)?;
        used += 2 + if new_window { 11 } else { 0 };
        // Small payloads are still in `reg` (57 bits are meaningful).
        let sig = u32::from(significant);
        let bits = if used + sig <= 57 && (used + sig) as usize <= self.reader.remaining() {
            self.reader.skip(used + sig);
            ((reg << used) >> 1) >> (63 - sig)
        } else {
            self.reader.skip(used);
            self.reader.read_bits(sig)?
        };
        self.window = window;
        self.value ^= bits << window.trailing;
        self.value_changed = true;
        Ok(())
    }

    /// Decodes a sample field by field, checking every read: for the
    /// 64-bit dod and for the end of the stream.
    #[cold]
    fn decode_checked(&mut self) -> Result<(), Fault> {
        let dod = match self.reader.read_ones(4)? {
            0 => 0,
            1 => read_dod(&mut self.reader, 14)?,
            2 => read_dod(&mut self.reader, 17)?,
            3 => read_dod(&mut self.reader, 20)?,
            _ => self.reader.read_bits(64)? as i64,
        };
        self.t_delta = self.t_delta.wrapping_add(dod as u64);
        self.t = self.t.wrapping_add(self.t_delta as i64);
        self.decode_value()
    }

    /// The first two samples, with varint timestamps.
    #[cold]
    fn decode_start(&mut self) -> Result<(), Fault> {
        if self.read == 0 {
            self.t = self.reader.read_varint()?.ok_or(Fault::VarintOverflow)?;
            self.value = self.reader.read_bits(64)?;
            Ok(())
        } else {
            self.t_delta = self.reader.read_uvarint()?.ok_or(Fault::VarintOverflow)?;
            self.t = self.t.wrapping_add(self.t_delta as i64);
            self.decode_value()
        }
    }

    fn decode_value(&mut self) -> Result<(), Fault> {
        let xor = self.window.read(&mut self.reader)?;
        self.value ^= xor;
        self.value_changed |= xor != 0;
        Ok(())
    }
}

/// The delta of delta at the front of `reg` if its class is 0..=3
/// (`class` ones, a zero, then 0, 14, 17 or 20 bits), with the bits it
/// takes; `None` for the 64-bit class. The class (hard to predict for
/// jittery scrapes) selects a width instead of a branch.
#[inline(always)]
fn short_dod(reg: u64) -> Option<(u64, u32)> {
    let dod_class = reg.leading_ones();
    let width = match dod_class {
        0 => 0,
        1 => 14,
        2 => 17,
        3 => 20,
        _ => return None,
    };
    let used = dod_class + 1;
    let raw = ((reg << used) >> 1) >> (63 - width);
    // 2^width (0 for width 0); raw above half of it is negative.
    let span = (1u64 << width) & !1;
    Some((
        raw.wrapping_sub(if raw > span >> 1 { span } else { 0 }),
        used + width,
    ))
}

/// Reads an `nbits` delta-of-delta; values above 2^(nbits-1) are negative.
#[inline(always)]
fn read_dod(reader: &mut BitReader<'_>, nbits: u32) -> Result<i64, EndOfStream> {
    let raw = reader.read_bits(nbits)? as i64;
    Ok(if raw > 1 << (nbits - 1) {
        raw - (1 << nbits)
    } else {
        raw
    })
}

impl Iterator for XorIterator<'_> {
    type Item = (i64, f64);

    #[inline]
    fn next(&mut self) -> Option<(i64, f64)> {
        if self.left == 0 {
            self.done = true;
            return None;
        }
        match self.decode_next() {
            Ok(()) => {
                self.read += 1;
                self.left -= 1;
                Some(self.current())
            }
            Err(fault) => {
                self.err = Some(fault.at(self.read, self.total));
                self.left = 0;
                self.done = true;
                None
            }
        }
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        (0, Some(usize::from(self.left)))
    }
}

impl FusedIterator for XorIterator<'_> {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn open_chunk_is_at_most_64_bytes() {
        assert!(std::mem::size_of::<XorChunk>() <= 64);
    }

    #[test]
    fn dod_ranges_are_lopsided_like_prometheus() {
        assert!(dod_fits(8192, 14) && dod_fits(-8191, 14));
        assert!(!dod_fits(8193, 14) && !dod_fits(-8192, 14));
        assert!(dod_fits(524288, 20) && !dod_fits(-524288, 20));
    }

    /// A chunk Prometheus writes after reopening one whose values never
    /// changed: its appender then has window 0/0 and emits `10` + 64 bits.
    #[test]
    fn reads_window_reuse_before_any_window() {
        let mut buf = vec![0, 3];
        let mut free = 0;
        let mut w = BitWriter::new(&mut buf, &mut free);
        w.write_varint(1000);
        w.write_bits(1.0f64.to_bits(), 64);
        w.write_uvarint(15);
        w.write_bits(0, 1); // same value
        w.write_bits(0, 1); // dod 0
        w.write_bits(0b10, 2);
        w.write_bits(1.0f64.to_bits() ^ 2.5f64.to_bits(), 64);
        let samples: Vec<_> = XorIterator::new(&buf).collect();
        assert_eq!(samples, [(1000, 1.0), (1015, 1.0), (1030, 2.5)]);

        // Reopened, the window stays 0/0 as the writer had it.
        let mut c = XorChunk::from_bytes(buf).unwrap();
        assert_eq!(c.window, XorWindow::FULL);
        c.append(1045, 3.0);
        let samples: Vec<_> = c.iter().collect();
        assert_eq!(samples.last(), Some(&(1045, 3.0)));
    }

    #[test]
    fn rejects_window_wider_than_64_bits() {
        let mut buf = vec![0, 2];
        let mut free = 0;
        let mut w = BitWriter::new(&mut buf, &mut free);
        w.write_varint(0);
        w.write_bits(0, 64);
        w.write_uvarint(1);
        w.write_bits(0b11, 2);
        w.write_bits(31, 5);
        w.write_bits(40, 6);
        w.write_bits(u64::MAX, 40);
        let mut it = XorIterator::new(&buf);
        assert_eq!(it.next(), Some((0, 0.0)));
        assert_eq!(it.next(), None);
        assert_eq!(
            it.error(),
            Some(&ChunkError::InvalidValueWindow {
                sample: 1,
                leading: 31,
                significant: 40
            })
        );
    }

    #[test]
    fn from_bytes_rejects_what_cannot_be_appended_to() {
        let mut c = XorChunk::new();
        c.append(1, 1.0);
        c.append(2, 3.0);
        let mut extra = c.bytes().to_vec();
        extra.push(0);
        assert!(matches!(
            XorChunk::from_bytes(extra),
            Err(ChunkError::TrailingBytes { extra: 1, .. })
        ));
        let mut dirty = c.bytes().to_vec();
        assert_ne!(c.free_bits, 0);
        if let Some(last) = dirty.last_mut() {
            *last |= 1;
        }
        assert!(matches!(
            XorChunk::from_bytes(dirty),
            Err(ChunkError::NonZeroPadding { .. })
        ));
        assert_eq!(
            XorChunk::from_bytes(vec![7]).unwrap_err(),
            ChunkError::MissingHeader { len: 1 }
        );
        assert!(XorChunk::from_bytes(vec![0, 0, 0]).is_err());
        let empty = XorChunk::from_bytes(vec![0, 0]).unwrap();
        assert_eq!(empty.window, XorWindow::NONE);
    }

    #[test]
    fn full_chunk_ignores_appends() {
        let mut c = XorChunk::new();
        for i in 0..u16::MAX {
            c.append(i64::from(i) * 15_000, 1.0);
        }
        assert!(c.is_full());
        let len = c.bytes().len();
        c.append(i64::MAX, 2.0);
        assert_eq!((c.num_samples(), c.bytes().len()), (u16::MAX, len));
        assert_eq!(c.iter().count(), usize::from(u16::MAX));
    }
}
