//! The XOR2 chunk encoding (Prometheus v3.16.0, encoding byte 4): XOR's
//! Gorilla scheme with a joint timestamp/value control code per sample,
//! byte-aligned timestamp fields, and optional start timestamps.
//!
//! Layout: a 2-byte big-endian sample count, the [ST header
//! byte](crate::st), then a bit stream (most significant bit first, last
//! byte zero-padded):
//!
//! * sample 0: timestamp as a zig-zag varint, then the 64 value bits;
//! * sample 1: timestamp delta as a uvarint, then the value as `V` below;
//! * sample n >= 2: one control code for the delta of the timestamp delta
//!   ("dod") and the value together:
//!
//!   | code                   | dod            | value                |
//!   |------------------------|----------------|----------------------|
//!   | `0`                    | 0              | unchanged            |
//!   | `10`                   | 0              | changed, as `W`      |
//!   | `110` + 13 bits        | -4096..=4095   | as `V`               |
//!   | `1110` + 20 bits       | ±2^19 likewise | as `V`               |
//!   | `11110` + 64 bits      | any other      | as `V`               |
//!   | `11111`                | 0              | the stale marker     |
//!
//!   (dods in two's complement, so `110` + 13 bits fills two bytes and
//!   `1110` + 20 bits three);
//! * `V`: `0` unchanged, `10` + the XOR's bits inside the current window,
//!   `110` + new window, `111` the stale marker;
//! * `W` (the value is known to differ): `0` + bits inside the window,
//!   `1` + new window;
//! * a new window is 5 bits of leading zeros (clamped to 31), 6 bits of
//!   significant-bit count (64 written as 0) and the significant bits;
//! * after each sample's fields, its start timestamp field if it has one
//!   (see [`crate::st`]).
//!
//! Values are XORed with the last value that was not a stale marker (0
//! before any), so a series that goes stale and comes back at the same
//! value costs one bit. Unlike XOR, the writer does not always reuse a
//! window the XOR fits in: it opens a narrower one when that saves more
//! than the new header costs, and when it must widen, it keeps an old
//! boundary if that costs at most half a header's bits. Our writer makes
//! the very same choices, so its bytes are Prometheus' bytes; the golden
//! vectors in `testdata/prometheus_xor2_vectors.txt` pin this down.
//!
//! Decoding is hardened like [`crate::xor`]'s: corrupt or truncated bytes
//! end iteration with a [`ChunkError`], never a panic, and all timestamp
//! arithmetic wraps as in Go.

#![warn(missing_docs)]

use std::iter::FusedIterator;

use ferrite_model::STALE_NAN_BITS;

use crate::bstream::{BitGather, BitReader, BitWriter, EndOfStream};
use crate::st::{BitSink, StDecoder, StEncoder, StHeader};
use crate::xor_value::XorWindow;
use crate::{ChunkError, Fault};

/// Bytes before the bit stream: sample count and ST header.
const HEADER_LEN: usize = 3;
/// Where the ST header byte sits.
const ST_HEADER_AT: usize = 2;
/// Initial capacity, as Prometheus: room for ~100 typical samples.
const INITIAL_CAPACITY: usize = 128;

/// The codes announcing a value window, in one of two contexts.
struct WindowCodes {
    /// Code (and its length) for "the XOR's bits inside the current window".
    reuse: u64,
    reuse_len: u32,
    /// Code (and its length) for "a new window follows".
    new: u64,
    new_len: u32,
}

impl WindowCodes {
    /// Extra bits a new window costs over reusing the current one: its
    /// longer code plus 5 + 6 header bits.
    const fn new_window_cost(&self) -> u8 {
        (self.new_len + 11 - self.reuse_len) as u8
    }
}

/// `V` of sample 1 and after a dod != 0 (`0` and `111` handled apart).
const AFTER_DOD: WindowCodes = WindowCodes {
    reuse: 0b10,
    reuse_len: 2,
    new: 0b110,
    new_len: 3,
};

/// The joint code `10` (dod 0, value changed) followed by `W`.
const DOD_ZERO_CHANGED: WindowCodes = WindowCodes {
    reuse: 0b100, // `10`, then `0`
    reuse_len: 3,
    new: 0b101, // `10`, then `1`
    new_len: 3,
};

/// An appendable XOR2 chunk: the chunk bytes plus the state needed to
/// encode the next sample.
#[derive(Clone, Debug)]
pub struct Xor2Chunk {
    /// Header and bit stream, exactly the bytes Prometheus would have.
    buf: Vec<u8>,
    last_t: i64,
    /// Bits of the last value that was not the stale marker (0 if none):
    /// the next value is XORed with it.
    baseline: u64,
    /// Timestamp delta of the last sample (0 after the first).
    last_t_delta: u64,
    st: StEncoder,
    /// Unwritten low bits of the last byte of `buf`.
    free_bits: u8,
    /// Current value window; [`XorWindow::NONE`] before the first.
    window: XorWindow,
    /// Whether the newest sample is the stale marker (which `baseline`
    /// skips), for [`Self::last_value`].
    last_stale: bool,
    /// Sample count, mirrored from the header. A `u32` (never above
    /// `u16::MAX`) so that its store and load are not split with its
    /// neighbours' (a store-forwarding stall on every append otherwise).
    count: u32,
}

impl Default for Xor2Chunk {
    fn default() -> Self {
        Self::new()
    }
}

impl Xor2Chunk {
    /// Most samples a chunk can hold (its count is a `u16`).
    pub const MAX_SAMPLES: u16 = u16::MAX;

    /// An empty chunk: zero sample count and an empty ST header.
    pub fn new() -> Self {
        Self::empty(Vec::with_capacity(INITIAL_CAPACITY))
    }

    /// Empties the chunk for reuse, keeping its allocation.
    pub fn reset(&mut self) {
        *self = Self::empty(std::mem::take(&mut self.buf));
    }

    fn empty(mut buf: Vec<u8>) -> Self {
        buf.clear();
        buf.extend_from_slice(&[0; HEADER_LEN]);
        Xor2Chunk {
            buf,
            last_t: 0,
            baseline: 0,
            last_t_delta: 0,
            st: StEncoder::new(),
            free_bits: 0,
            window: XorWindow::NONE,
            last_stale: false,
            count: 0,
        }
    }

    /// Reopens chunk bytes for appending. Decodes every sample to restore
    /// the encoder state, so appending afterwards writes exactly the bytes
    /// that appending all samples to one chunk would have.
    ///
    /// Fails on anything Prometheus' appender could not have written: a
    /// short header, undecodable samples, bytes or non-zero padding bits
    /// after the last sample, or an ST header that does not fit the sample
    /// count (appending to any of these would corrupt the stream).
    ///
    /// Like [`crate::XorChunk::from_bytes`], and unlike Prometheus'
    /// `Appender()` on existing bytes, this resumes with no value window if
    /// none was ever written (Prometheus takes 0 leading and 0 trailing
    /// zeros then), as a fresh appender would have it; either output decodes
    /// the same way with either implementation.
    pub fn from_bytes(mut data: Vec<u8>) -> Result<Self, ChunkError> {
        let mut it = Xor2Iterator::new(&data);
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
        let st = StEncoder::resume(&it.st, it.total).ok_or(ChunkError::InvalidStHeader {
            header: it.st.header().to_byte(),
            samples: it.total,
        })?;
        let window = if it.window_set {
            it.window
        } else {
            XorWindow::NONE
        };
        let (last_t, baseline, last_t_delta, count) = (it.t, it.baseline, it.t_delta, it.total);
        let last_stale = count > 0 && it.value == STALE_NAN_BITS;
        // Room for the next few samples without an immediate reallocation.
        data.reserve(16);
        Ok(Xor2Chunk {
            buf: data,
            last_t,
            baseline,
            last_t_delta,
            st,
            free_bits,
            window,
            last_stale,
            count: u32::from(count),
        })
    }

    /// Number of samples, from the chunk header.
    pub fn num_samples(&self) -> u16 {
        self.count as u16
    }

    /// True when the chunk holds [`Self::MAX_SAMPLES`] and takes no more.
    pub fn is_full(&self) -> bool {
        self.count == u32::from(Self::MAX_SAMPLES)
    }

    /// The newest sample's value (`None` while the chunk is empty).
    pub fn last_value(&self) -> Option<f64> {
        let bits = if self.last_stale {
            STALE_NAN_BITS
        } else {
            self.baseline
        };
        (self.count > 0).then(|| f64::from_bits(bits))
    }

    /// The ST header: whether and from which sample on start timestamps
    /// are stored.
    pub fn st_header(&self) -> StHeader {
        StHeader::from_byte(self.buf.get(ST_HEADER_AT).copied().unwrap_or(0))
    }

    /// The chunk bytes, header included, as Prometheus stores them.
    pub fn bytes(&self) -> &[u8] {
        &self.buf
    }

    /// Address of the last byte, where the next append writes: for
    /// prefetching when appending to many chunks in turn.
    pub fn tail_ptr(&self) -> *const u8 {
        self.buf
            .as_ptr()
            .wrapping_add(self.buf.len().saturating_sub(1))
    }

    /// The chunk bytes, header included.
    pub fn into_bytes(self) -> Vec<u8> {
        self.buf
    }

    /// Iterates the samples.
    pub fn iter(&self) -> Xor2Iterator<'_> {
        Xor2Iterator::new(&self.buf)
    }

    /// Releases spare capacity once the chunk is complete (Prometheus'
    /// `Compact`); appending still works afterwards.
    pub fn compact(&mut self) {
        if self.buf.capacity() > self.buf.len() + 32 {
            self.buf.shrink_to_fit();
        }
    }

    /// Appends a sample with start timestamp `st` (0: none; Prometheus
    /// makes no difference between a missing ST and an ST of 0). Callers
    /// keep timestamps increasing (Prometheus does not check either; other
    /// orders still round-trip).
    ///
    /// A full chunk (see [`Self::is_full`]) ignores the sample, where
    /// Prometheus would panic.
    #[inline]
    pub fn append(&mut self, st: i64, t: i64, v: f64) {
        let index = self.count as u16;
        if index < 2 || index == Self::MAX_SAMPLES {
            return self.append_start(st, t, v);
        }
        let value = v.to_bits();
        let prev_t = self.last_t;
        let t_delta = t.wrapping_sub(prev_t) as u64;
        let dod = t_delta.wrapping_sub(self.last_t_delta) as i64;
        // Gather the sample's fields, typically well under 64 bits, to
        // write them at once.
        let mut w = BitWriter::new(&mut self.buf, &mut self.free_bits);
        let mut out = BitGather::new(&mut w);
        write_joint(&mut out, dod, value, self.baseline, &mut self.window);
        let st_bits = self.st.encode(&mut out, index, t, prev_t, st);
        out.finish();
        self.last_t_delta = t_delta;
        self.finish_append(index, t, value, st_bits);
    }

    /// Samples 0 and 1, whose timestamps are varints; and a full chunk.
    #[cold]
    fn append_start(&mut self, st: i64, t: i64, v: f64) {
        let index = self.count as u16;
        if index == Self::MAX_SAMPLES {
            return;
        }
        let value = v.to_bits();
        let prev_t = self.last_t;
        let mut w = BitWriter::new(&mut self.buf, &mut self.free_bits);
        if index == 0 {
            w.write_varint(t);
            w.write_bits(value, 64);
        } else {
            let t_delta = t.wrapping_sub(prev_t) as u64;
            w.write_uvarint(t_delta);
            write_value(&mut w, value, self.baseline, &mut self.window);
            self.last_t_delta = t_delta;
        }
        let st_bits = self.st.encode(&mut w, index, t, prev_t, st);
        self.finish_append(index, t, value, st_bits);
    }

    #[inline(always)]
    fn finish_append(&mut self, index: u16, t: i64, value: u64, st_bits: u8) {
        self.last_t = t;
        self.last_stale = value == STALE_NAN_BITS;
        if !self.last_stale {
            self.baseline = value;
        }
        let count = index + 1;
        self.count = u32::from(count);
        if let Some(header) = self.buf.first_chunk_mut::<HEADER_LEN>() {
            header[..2].copy_from_slice(&count.to_be_bytes());
            header[ST_HEADER_AT] |= st_bits;
        }
    }
}

/// Writes the joint dod/value code of a sample n >= 2, and its value.
#[inline(always)]
fn write_joint<W: BitSink>(w: &mut W, dod: i64, value: u64, baseline: u64, window: &mut XorWindow) {
    if dod == 0 {
        let xor = value ^ baseline;
        if value == STALE_NAN_BITS {
            w.put_bits(0b11111, 5);
        } else if xor == 0 {
            w.put_bits(0, 1);
        } else {
            write_window(w, xor, window, &DOD_ZERO_CHANGED);
        }
        return;
    }
    let bits = dod as u64;
    // Two's complement fields, the code and the dod filling whole bytes.
    if (-(1 << 12)..1 << 12).contains(&dod) {
        w.put_bits(0b110 << 13 | (bits & 0x1fff), 16);
    } else if (-(1 << 19)..1 << 19).contains(&dod) {
        w.put_bits(0b1110 << 20 | (bits & 0xf_ffff), 24);
    } else {
        w.put_bits(0b11110, 5);
        w.put_bits(bits, 64);
    }
    write_value(w, value, baseline, window);
}

/// Writes a value as `V`: unchanged, stale marker, or its XOR with the
/// baseline in a window.
#[inline(always)]
fn write_value<W: BitSink>(w: &mut W, value: u64, baseline: u64, window: &mut XorWindow) {
    // The baseline is never the stale marker, so an unchanged value is not.
    let xor = value ^ baseline;
    if xor == 0 {
        w.put_bits(0, 1);
    } else if value == STALE_NAN_BITS {
        w.put_bits(0b111, 3);
    } else {
        write_window(w, xor, window, &AFTER_DOD);
    }
}

/// Writes a non-zero XOR inside the current window or a new one, choosing
/// as Prometheus' `xor2Appender` does.
#[inline(always)]
fn write_window<W: BitSink>(w: &mut W, xor: u64, window: &mut XorWindow, codes: &WindowCodes) {
    let mut new = XorWindow::tightest(xor);
    let old = *window;
    let header_cost = codes.new_window_cost();
    if old.is_open() {
        // The current window holds the bits: reuse it unless a new, narrower
        // one saves more than its header costs (a tie reuses).
        if old.holds(new) && new.leading + new.trailing <= old.leading + old.trailing + header_cost
        {
            return old.put_in(w, codes.reuse, codes.reuse_len, xor);
        }
        // Widening: keep an old boundary if the union costs at most half a
        // header in extra payload bits (the next value may need it again).
        if !old.holds(new) {
            let union = XorWindow {
                leading: new.leading.min(old.leading),
                trailing: new.trailing.min(old.trailing),
            };
            if new.leading + new.trailing - union.leading - union.trailing <= header_cost / 2 {
                new = union;
            }
        }
    }
    window.put_new(w, codes.new, codes.new_len, xor, new);
}

/// Iterates the samples of XOR2 chunk bytes as `(t, v)`, stopping after the
/// count in the header or at the first sample that cannot be decoded (see
/// [`Xor2Iterator::error`]). The start timestamp of the sample last
/// returned is [`Xor2Iterator::at_st`]; [`Xor2Iterator::next_with_st`]
/// yields `(st, t, v)`. Never reads outside the slice and never allocates.
#[derive(Clone, Debug)]
pub struct Xor2Iterator<'a> {
    reader: BitReader<'a>,
    st: StDecoder,
    total: u16,
    read: u16,
    /// Samples still to decode: `total - read`, or 0 after an error.
    left: u16,
    /// The last returned sample.
    t: i64,
    value: u64,
    /// Bits of the last value that was not the stale marker.
    baseline: u64,
    t_delta: u64,
    /// Value window. Starts at 0/0 ([`XorWindow::FULL`]) like Prometheus'
    /// reader, so a reuse code before any new window means 64 bits.
    window: XorWindow,
    /// Whether any value XOR was read, i.e. whether the writer had a window
    /// (for [`Xor2Chunk::from_bytes`]).
    window_set: bool,
    /// `next` returned `None`.
    done: bool,
    err: Option<ChunkError>,
}

impl<'a> Xor2Iterator<'a> {
    /// Iterates chunk bytes (header included).
    pub fn new(data: &'a [u8]) -> Self {
        let (total, st_header, body, err) = match data.split_first_chunk::<HEADER_LEN>() {
            Some((header, body)) => (
                u16::from_be_bytes([header[0], header[1]]),
                header[ST_HEADER_AT],
                body,
                None,
            ),
            None => (
                0,
                0,
                &[][..],
                Some(ChunkError::ShortHeader {
                    len: data.len(),
                    need: HEADER_LEN,
                }),
            ),
        };
        Xor2Iterator {
            reader: BitReader::new(body),
            st: StDecoder::new(st_header),
            total,
            read: 0,
            left: if err.is_some() { 0 } else { total },
            t: 0,
            value: 0,
            baseline: 0,
            t_delta: 0,
            window: XorWindow::FULL,
            window_set: false,
            done: false,
            err,
        }
    }

    /// Number of samples the chunk header announces.
    pub fn num_samples(&self) -> u16 {
        self.total
    }

    /// The chunk's ST header.
    pub fn st_header(&self) -> StHeader {
        self.st.header()
    }

    /// Why iteration ended early: the bytes are truncated or corrupt.
    pub fn error(&self) -> Option<&ChunkError> {
        self.err.as_ref()
    }

    /// Start timestamp of the sample last returned (0: none; also before
    /// the first sample).
    pub fn at_st(&self) -> i64 {
        self.st.st()
    }

    /// The next sample as `(st, t, v)`.
    #[inline]
    pub fn next_with_st(&mut self) -> Option<(i64, i64, f64)> {
        let (t, v) = self.next()?;
        Some((self.st.st(), t, v))
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
        let index = self.read;
        let prev_t = self.t;
        match index {
            0 => self.decode_first()?,
            1 => {
                self.t_delta = self.reader.read_uvarint()?.ok_or(Fault::VarintOverflow)?;
                self.t = self.t.wrapping_add(self.t_delta as i64);
                self.decode_value()?;
            }
            _ => self.decode_joint()?,
        }
        self.st.decode(&mut self.reader, index, self.t, prev_t)?;
        Ok(())
    }

    #[cold]
    fn decode_first(&mut self) -> Result<(), Fault> {
        self.t = self.reader.read_varint()?.ok_or(Fault::VarintOverflow)?;
        self.value = self.reader.read_bits(64)?;
        if self.value != STALE_NAN_BITS {
            self.baseline = self.value;
        }
        Ok(())
    }

    /// A sample n >= 2: the joint code, then the dod and value it calls for.
    #[inline(always)]
    fn decode_joint(&mut self) -> Result<(), Fault> {
        let dod = match self.reader.read_ones(5)? {
            0 => {
                self.t = self.t.wrapping_add(self.t_delta as i64);
                self.value = self.baseline;
                return Ok(());
            }
            1 => {
                self.t = self.t.wrapping_add(self.t_delta as i64);
                return if self.reader.read_bit()? {
                    self.decode_new_window()
                } else {
                    self.decode_in_window()
                };
            }
            2 => read_signed(&mut self.reader, 13)?,
            3 => read_signed(&mut self.reader, 20)?,
            4 => self.reader.read_bits(64)? as i64,
            _ => {
                self.t = self.t.wrapping_add(self.t_delta as i64);
                self.value = STALE_NAN_BITS;
                return Ok(());
            }
        };
        self.t_delta = self.t_delta.wrapping_add(dod as u64);
        self.t = self.t.wrapping_add(self.t_delta as i64);
        self.decode_value()
    }

    /// A value coded as `V`.
    #[inline(always)]
    fn decode_value(&mut self) -> Result<(), Fault> {
        match self.reader.read_ones(3)? {
            0 => {
                self.value = self.baseline;
                Ok(())
            }
            1 => self.decode_in_window(),
            2 => self.decode_new_window(),
            _ => {
                self.value = STALE_NAN_BITS;
                Ok(())
            }
        }
    }

    /// The XOR's bits inside the current window.
    #[inline(always)]
    fn decode_in_window(&mut self) -> Result<(), Fault> {
        let xor = self.window.read_in(&mut self.reader)?;
        self.apply_xor(xor);
        Ok(())
    }

    /// A new window (leading zeros, significant bits) and the XOR's bits.
    fn decode_new_window(&mut self) -> Result<(), Fault> {
        let xor = self.window.read_new(&mut self.reader)?;
        self.apply_xor(xor);
        Ok(())
    }

    #[inline(always)]
    fn apply_xor(&mut self, xor: u64) {
        self.value = self.baseline ^ xor;
        self.baseline = self.value;
        self.window_set = true;
    }
}

/// Reads an `nbits` two's complement field.
#[inline(always)]
fn read_signed(reader: &mut BitReader<'_>, nbits: u32) -> Result<i64, EndOfStream> {
    let raw = reader.read_bits(nbits)?;
    let shift = 64 - nbits;
    Ok(((raw << shift) as i64) >> shift)
}

impl Iterator for Xor2Iterator<'_> {
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

impl FusedIterator for Xor2Iterator<'_> {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn open_chunk_is_at_most_80_bytes() {
        assert!(std::mem::size_of::<Xor2Chunk>() <= 80);
    }

    #[test]
    fn window_costs_match_prometheus() {
        // writeVDelta: 12 bits, union within 6; writeVDeltaKnownNonZero: 11
        // bits, union within 5.
        assert_eq!(AFTER_DOD.new_window_cost(), 12);
        assert_eq!(DOD_ZERO_CHANGED.new_window_cost(), 11);
    }

    #[test]
    fn empty_chunk_is_three_zero_bytes() {
        let c = Xor2Chunk::new();
        assert_eq!(c.bytes(), &[0, 0, 0]);
        assert_eq!(c.iter().next(), None);
        let c = Xor2Chunk::from_bytes(vec![0, 0, 0]).unwrap();
        assert_eq!(c.window, XorWindow::NONE);
    }

    #[test]
    fn dod_fields_are_two_complement() {
        for (dod, code_len) in [
            (4095, 16),
            (-4096, 16),
            (4096, 24),
            (-4097, 24),
            (524287, 24),
            (-524288, 24),
            (524288, 69),
            (-524289, 69),
        ] {
            let mut c = Xor2Chunk::new();
            c.append(0, 0, 1.0);
            c.append(0, 1000, 1.0);
            let before = c.bytes().len() * 8 - usize::from(c.free_bits);
            c.append(0, 2000 + dod, 1.0);
            let after = c.bytes().len() * 8 - usize::from(c.free_bits);
            // The code, the dod and the `0` of an unchanged value.
            assert_eq!(after - before, code_len + 1, "dod {dod}");
            let ts: Vec<i64> = c.iter().map(|s| s.0).collect();
            assert_eq!(ts, [0, 1000, 2000 + dod]);
        }
    }

    /// Prometheus writes `10`/`0` + 64 bits after reopening a chunk whose
    /// values never changed (its window is then 0/0).
    #[test]
    fn reads_window_reuse_before_any_window() {
        let mut buf = vec![0, 3, 0];
        let mut free = 0;
        let mut w = BitWriter::new(&mut buf, &mut free);
        w.write_varint(1000);
        w.write_bits(1.0f64.to_bits(), 64);
        w.write_uvarint(15);
        w.write_bits(0b10, 2); // V: reuse
        w.write_bits(1.0f64.to_bits() ^ 2.0f64.to_bits(), 64);
        w.write_bits(0b100, 3); // dod 0, changed, W: reuse
        w.write_bits(2.0f64.to_bits() ^ 2.5f64.to_bits(), 64);
        let samples: Vec<_> = Xor2Iterator::new(&buf).collect();
        assert_eq!(samples, [(1000, 1.0), (1015, 2.0), (1030, 2.5)]);
        let mut c = Xor2Chunk::from_bytes(buf).unwrap();
        assert_eq!(c.window, XorWindow::FULL);
        c.append(0, 1045, 3.0);
        assert_eq!(c.iter().last(), Some((1045, 3.0)));
    }

    #[test]
    fn rejects_window_wider_than_64_bits() {
        let mut buf = vec![0, 2, 0];
        let mut free = 0;
        let mut w = BitWriter::new(&mut buf, &mut free);
        w.write_varint(0);
        w.write_bits(0, 64);
        w.write_uvarint(1);
        w.write_bits(0b110, 3);
        w.write_bits(31, 5);
        w.write_bits(40, 6);
        w.write_bits(u64::MAX, 40);
        let mut it = Xor2Iterator::new(&buf);
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
        let mut c = Xor2Chunk::new();
        c.append(5, 1, 1.0);
        c.append(5, 2, 3.0);
        let mut extra = c.bytes().to_vec();
        extra.push(0);
        assert!(matches!(
            Xor2Chunk::from_bytes(extra),
            Err(ChunkError::TrailingBytes { extra: 1, .. })
        ));
        let mut dirty = c.bytes().to_vec();
        assert_ne!(c.free_bits, 0);
        if let Some(last) = dirty.last_mut() {
            *last |= 1;
        }
        assert!(matches!(
            Xor2Chunk::from_bytes(dirty),
            Err(ChunkError::NonZeroPadding { .. })
        ));
        assert_eq!(
            Xor2Chunk::from_bytes(vec![0, 0]).unwrap_err(),
            ChunkError::ShortHeader { len: 2, need: 3 }
        );
        assert_eq!(
            Xor2Chunk::from_bytes(vec![0, 0, 0x80]).unwrap_err(),
            ChunkError::InvalidStHeader {
                header: 0x80,
                samples: 0
            }
        );
        // The header names a first change at sample 2 of 2.
        let mut late = c.bytes().to_vec();
        late[2] |= 2;
        assert_eq!(
            Xor2Chunk::from_bytes(late).unwrap_err(),
            ChunkError::InvalidStHeader {
                header: 0x82,
                samples: 2
            }
        );
    }

    #[test]
    fn full_chunk_ignores_appends() {
        let mut c = Xor2Chunk::new();
        for i in 0..u16::MAX {
            c.append(7, i64::from(i) * 15_000, 1.0);
        }
        assert!(c.is_full());
        let len = c.bytes().len();
        c.append(0, i64::MAX, 2.0);
        assert_eq!((c.num_samples(), c.bytes().len()), (u16::MAX, len));
        let mut it = c.iter();
        assert_eq!(it.by_ref().count(), usize::from(u16::MAX));
        assert!(it.error().is_none());
        assert_eq!(it.at_st(), 7);
    }
}
