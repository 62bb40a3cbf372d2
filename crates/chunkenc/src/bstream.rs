//! Bit streams, most significant bit first, laid out as Prometheus' `bstream`.
//!
//! Chunk encodings pack fields of arbitrary bit widths back to back, so the
//! byte layout is fully determined by the order and width of the writes:
//! bit 7 of byte 0 is the first bit written, and the unused low bits of the
//! last byte are zero. Matching that is all it takes for our bytes to equal
//! Prometheus' for the same sequence of writes.
//!
//! [`BitWriter`] is a short-lived cursor over storage that its owner keeps
//! (a `Vec<u8>` and the count of unwritten bits in its last byte). That lets
//! a chunk store those two fields next to its own state instead of in a
//! separately padded struct, which keeps the per-series head chunk small.
//!
//! [`BitReader`] keeps only a bit position; a read is a bounds check, one
//! unaligned 8-byte load and two shifts, and a decoder can [`BitReader::peek`]
//! once and take several small fields from the same word. It never reads
//! outside its slice: asking for more bits than remain yields
//! [`EndOfStream`] and consumes nothing.

/// The stream has fewer bits left than a read asked for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[error("bit stream ended")]
pub struct EndOfStream;

/// Appends bits to a byte vector whose last byte may be partly written.
#[derive(Debug)]
pub struct BitWriter<'a> {
    buf: &'a mut Vec<u8>,
    /// Unwritten low bits of the last byte of `buf` (0..=7). They are zero.
    free: &'a mut u8,
}

impl<'a> BitWriter<'a> {
    /// Continues writing at the bit after the last written one.
    ///
    /// `free` is how many low bits of the last byte are still unwritten; they
    /// must be zero because writes OR into them.
    pub fn new(buf: &'a mut Vec<u8>, free: &'a mut u8) -> Self {
        debug_assert!(*free < 8 && (*free == 0 || !buf.is_empty()));
        // Keep the invariant even if a caller broke it: never OR into a
        // byte that does not exist.
        if buf.is_empty() || *free > 7 {
            *free = 0;
        }
        BitWriter { buf, free }
    }

    /// Writes the low `nbits` bits of `value` (`nbits <= 64`), high bit first.
    #[inline]
    pub fn write_bits(&mut self, value: u64, nbits: u32) {
        let nbits = nbits.min(64);
        if nbits == 0 {
            return;
        }
        // Left-align: the first bit to write becomes bit 63, and any bits of
        // `value` above `nbits` fall off.
        let mut pending = value << (64 - nbits);
        let mut left = nbits;
        let free = u32::from(*self.free);
        if free > 0 {
            if let Some(last) = self.buf.last_mut() {
                *last |= (pending >> (64 - free)) as u8;
            }
            if left <= free {
                *self.free = (free - left) as u8;
                return;
            }
            pending <<= free;
            left -= free;
        }
        // 1..=8 whole or partial bytes remain. Appending all 8 and cutting
        // back is a fixed-size store instead of a variable-length memcpy.
        let nbytes = left.div_ceil(8);
        let keep = self.buf.len() + nbytes as usize;
        if self.buf.capacity() - self.buf.len() < 8 {
            crate::growth::grow(self.buf);
        }
        self.buf.extend_from_slice(&pending.to_be_bytes());
        self.buf.truncate(keep);
        *self.free = (nbytes * 8 - left) as u8;
    }

    #[inline]
    pub fn write_bit(&mut self, bit: bool) {
        self.write_bits(u64::from(bit), 1);
    }

    /// Writes an unsigned LEB128 varint (Go's `binary.PutUvarint`), each
    /// byte at the current bit position.
    pub fn write_uvarint(&mut self, x: u64) {
        self.put_uvarint(x);
    }

    /// Writes a zig-zag signed varint (Go's `binary.PutVarint`).
    pub fn write_varint(&mut self, x: i64) {
        self.put_varint(x);
    }
}

/// Where encoders put bit fields: a [`BitWriter`], or a buffer that
/// gathers a sample's fields before writing them at once. Field encoders
/// (varbit integers, XOR values, start timestamps) are generic over it.
pub trait BitSink {
    /// Appends the low `nbits` bits of `bits` (`nbits <= 64`; the bits
    /// above `nbits` must be zero).
    fn put_bits(&mut self, bits: u64, nbits: u32);

    /// Appends an unsigned LEB128 varint (Go's `binary.PutUvarint`), byte
    /// by byte at the current bit position.
    fn put_uvarint(&mut self, mut x: u64) {
        while x >= 0x80 {
            self.put_bits((x & 0x7f) | 0x80, 8);
            x >>= 7;
        }
        self.put_bits(x, 8);
    }

    /// Appends a zig-zag signed varint (Go's `binary.PutVarint`).
    fn put_varint(&mut self, x: i64) {
        self.put_uvarint(((x << 1) ^ (x >> 63)) as u64);
    }
}

impl BitSink for BitWriter<'_> {
    #[inline(always)]
    fn put_bits(&mut self, bits: u64, nbits: u32) {
        self.write_bits(bits, nbits);
    }
}

/// Bit fields gathered for fewer writes: a sample's fields often fit 64
/// bits, so appending them takes a single [`BitWriter::write_bits`]
/// (more fields spill to the writer 64 bits at a time). Call
/// [`BitGather::finish`] to write what is left.
pub(crate) struct BitGather<'w, 'b> {
    w: &'w mut BitWriter<'b>,
    /// The gathered fields in the low `len` bits (0 when `len` is 0).
    bits: u64,
    len: u32,
}

impl<'w, 'b> BitGather<'w, 'b> {
    #[inline(always)]
    pub(crate) fn new(w: &'w mut BitWriter<'b>) -> Self {
        BitGather { w, bits: 0, len: 0 }
    }

    /// Writes what is gathered.
    #[inline(always)]
    pub(crate) fn finish(self) {
        self.w.write_bits(self.bits, self.len);
    }

    /// Writes what is gathered and starts over with `bits`. Not cold: a
    /// histogram sample's fields spill a few times each (inlined, encoding
    /// a histogram chunk takes ~9% less time; XOR2 is unchanged).
    fn spill(&mut self, bits: u64, nbits: u32) {
        self.w.write_bits(self.bits, self.len);
        self.bits = bits;
        self.len = nbits;
    }
}

impl BitSink for BitGather<'_, '_> {
    #[inline(always)]
    fn put_bits(&mut self, bits: u64, nbits: u32) {
        if self.len + nbits <= 64 {
            // `wrapping_shl` by 64 shifts by 0, but then `len` was 0 and
            // `self.bits` is 0.
            self.bits = self.bits.wrapping_shl(nbits) | bits;
            self.len += nbits;
        } else {
            self.spill(bits, nbits);
        }
    }
}

/// Reads bits from a byte slice, high bit first.
///
/// The state is just a bit position: every read loads the eight bytes
/// around it (one unaligned load, cheaper than keeping a refilled register
/// in sync) and shifts the wanted bits out.
#[derive(Clone, Debug)]
pub struct BitReader<'a> {
    data: &'a [u8],
    /// Bits consumed.
    pos: usize,
    /// Bits in `data`.
    end: usize,
}

impl<'a> BitReader<'a> {
    pub fn new(data: &'a [u8]) -> Self {
        BitReader {
            data,
            pos: 0,
            end: data.len().saturating_mul(8),
        }
    }

    /// Bits consumed from the start of the slice.
    pub fn bits_consumed(&self) -> u64 {
        self.pos as u64
    }

    /// Bits left to read.
    #[inline(always)]
    pub fn remaining(&self) -> usize {
        self.end.saturating_sub(self.pos)
    }

    /// The next bits, left-aligned, without consuming them. The first
    /// `min(57, self.remaining())` are meaningful; bits past the end read
    /// as zero.
    #[inline(always)]
    pub fn peek(&self) -> u64 {
        let byte = self.pos >> 3;
        let word = match self
            .data
            .get(byte..byte + 8)
            .and_then(|w| <[u8; 8]>::try_from(w).ok())
        {
            Some(word) => u64::from_be_bytes(word),
            None => self.tail_word(byte),
        };
        word << (self.pos & 7)
    }

    /// The last (fewer than eight) bytes from `byte` on, zero-padded.
    #[cold]
    #[inline(never)]
    fn tail_word(&self, byte: usize) -> u64 {
        let rest = self.data.get(byte..).unwrap_or(&[]);
        rest.iter()
            .take(8)
            .enumerate()
            .fold(0, |word, (i, &b)| word | u64::from(b) << (56 - 8 * i))
    }

    /// Consumes `nbits` bits, at most [`Self::remaining`].
    #[inline(always)]
    pub fn skip(&mut self, nbits: u32) {
        debug_assert!(nbits as usize <= self.remaining());
        self.pos += nbits as usize;
    }

    /// Reads `nbits` bits (`nbits <= 64`) into the low bits of the result.
    /// On [`EndOfStream`] nothing is consumed.
    #[inline(always)]
    pub fn read_bits(&mut self, nbits: u32) -> Result<u64, EndOfStream> {
        if nbits as usize > self.remaining() {
            return Err(EndOfStream);
        }
        if nbits > 57 {
            return Ok(self.read_wide(nbits));
        }
        // Two shifts so that nbits == 0 yields 0 without a 64-bit shift.
        let bits = (self.peek() >> 1) >> (63 - nbits);
        self.pos += nbits as usize;
        Ok(bits)
    }

    /// Reads 58..=64 bits, which `peek` may not cover. The caller checked
    /// that they are there.
    #[cold]
    fn read_wide(&mut self, nbits: u32) -> u64 {
        let low_bits = nbits.min(64) - 32;
        let high = (self.peek() >> 1) >> 31;
        self.pos += 32;
        let low = (self.peek() >> 1) >> (63 - low_bits);
        self.pos += low_bits as usize;
        high << low_bits | low
    }

    #[inline(always)]
    pub fn read_bit(&mut self) -> Result<bool, EndOfStream> {
        Ok(self.read_bits(1)? == 1)
    }

    /// Reads a unary prefix: counts one bits up to `max` (`max <= 8`),
    /// consuming them and the zero that ends them, if fewer than `max`.
    #[inline(always)]
    pub fn read_ones(&mut self, max: u32) -> Result<u32, EndOfStream> {
        let max = max.min(8);
        // Bits past the end peek as zero, so the count stops there at the
        // latest; the check rejects a count that used them.
        let ones = self.peek().leading_ones().min(max);
        let used = (ones + 1).min(max);
        if used as usize > self.remaining() {
            return Err(EndOfStream);
        }
        self.pos += used as usize;
        Ok(ones)
    }

    /// Reads an unsigned varint written byte-wise into the stream, with the
    /// limits of Go's `binary.ReadUvarint`: at most 10 bytes, and the value
    /// must fit in 64 bits. `Ok(None)` means it does not.
    pub fn read_uvarint(&mut self) -> Result<Option<u64>, EndOfStream> {
        let mut value = 0u64;
        for i in 0..10 {
            let byte = self.read_bits(8)?;
            if byte < 0x80 {
                if i == 9 && byte > 1 {
                    return Ok(None);
                }
                return Ok(Some(value | byte << (7 * i)));
            }
            value |= (byte & 0x7f) << (7 * i);
        }
        Ok(None)
    }

    /// Reads a zig-zag signed varint (Go's `binary.ReadVarint`).
    pub fn read_varint(&mut self) -> Result<Option<i64>, EndOfStream> {
        Ok(self
            .read_uvarint()?
            .map(|u| ((u >> 1) as i64) ^ -((u & 1) as i64)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn written(writes: &[(u64, u32)]) -> Vec<u8> {
        let mut buf = Vec::new();
        let mut free = 0;
        let mut w = BitWriter::new(&mut buf, &mut free);
        for &(v, n) in writes {
            w.write_bits(v, n);
        }
        buf
    }

    #[test]
    fn writes_msb_first_and_pads_with_zeros() {
        assert_eq!(written(&[(1, 1)]), [0x80]);
        assert_eq!(
            written(&[(0b101, 3), (0xff, 8)]),
            [0b1011_1111, 0b1110_0000]
        );
        assert_eq!(
            written(&[(u64::MAX, 64), (0, 1)]),
            [0xff; 8].iter().copied().chain([0]).collect::<Vec<_>>()
        );
        // High bits beyond nbits are ignored.
        assert_eq!(written(&[(0xffff, 4)]), [0xf0]);
        assert_eq!(written(&[(0, 0)]), [] as [u8; 0]);
    }

    #[test]
    fn reads_back_every_width_at_every_offset() {
        for offset in 0..8u32 {
            for width in 0..=64u32 {
                let value =
                    0xdead_beef_f00d_cafe_u64 & u64::MAX.checked_shr(64 - width).unwrap_or(0);
                let data = written(&[(0, offset), (value, width), (1, 1)]);
                let mut r = BitReader::new(&data);
                assert_eq!(r.read_bits(offset), Ok(0));
                assert_eq!(
                    r.read_bits(width),
                    Ok(value),
                    "offset {offset} width {width}"
                );
                assert_eq!(r.read_bit(), Ok(true));
                assert_eq!(r.bits_consumed(), u64::from(offset + width + 1));
            }
        }
    }

    #[test]
    fn never_reads_past_the_end() {
        let data = [0xff; 3];
        let mut r = BitReader::new(&data);
        assert_eq!(r.read_bits(25), Err(EndOfStream));
        assert_eq!(r.read_bits(64), Err(EndOfStream));
        // A failed read consumes nothing.
        assert_eq!(r.read_bits(20), Ok(0xfffff));
        assert_eq!(r.read_ones(8), Err(EndOfStream));
        assert_eq!(r.read_ones(4), Ok(4));
        assert_eq!(r.read_bits(1), Err(EndOfStream));
        assert_eq!(BitReader::new(&[]).read_bit(), Err(EndOfStream));
    }

    #[test]
    fn unary_prefix() {
        let data = written(&[(0b0, 1), (0b10, 2), (0b110, 3), (0b1110, 4), (0b1111, 4)]);
        let mut r = BitReader::new(&data);
        for expected in 0..=4 {
            assert_eq!(r.read_ones(4), Ok(expected));
        }
    }

    #[test]
    fn varints_match_go() {
        for x in [0i64, 1, -1, 63, -64, 64, 1000, i64::MIN, i64::MAX] {
            // 5 bits written, 3 free (and zero).
            let mut buf = vec![0b1010_1000];
            let mut free = 3;
            let mut w = BitWriter::new(&mut buf, &mut free);
            w.write_varint(x);
            let mut r = BitReader::new(&buf);
            assert_eq!(r.read_bits(5), Ok(0b10101));
            assert_eq!(r.read_varint(), Ok(Some(x)));
        }
        // PutVarint(1000) = zig-zag 2000 = d0 0f.
        let mut buf = Vec::new();
        let mut free = 0;
        BitWriter::new(&mut buf, &mut free).write_varint(1000);
        assert_eq!(buf, [0xd0, 0x0f]);
        // Eleven bytes, or a tenth byte above 1, overflow as in Go.
        let mut r = BitReader::new(&[0xff; 11]);
        assert_eq!(r.read_uvarint(), Ok(None));
        let mut long = [0xff; 10];
        long[9] = 0x02;
        assert_eq!(BitReader::new(&long).read_uvarint(), Ok(None));
        long[9] = 0x01;
        assert_eq!(BitReader::new(&long).read_uvarint(), Ok(Some(u64::MAX)));
        assert_eq!(BitReader::new(&[0x80]).read_uvarint(), Err(EndOfStream));
    }
}
