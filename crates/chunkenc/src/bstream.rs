//! Bit streams, most significant bit first, as Prometheus' `bstream`.
//!
//! The writer appends to a byte vector that starts with the chunk's 2-byte
//! header. The reader keeps up to 64 bits in a register so most reads are a
//! shift and a mask, and it never reads past the end of its slice: running
//! out of bits yields `None`.

/// Appends bits to a byte vector.
#[derive(Clone, Debug)]
pub struct BitWriter {
    buf: Vec<u8>,
    /// Unused low bits of the last byte (0 when it is full).
    free: u8,
}

impl BitWriter {
    /// A stream that starts with a zeroed 2-byte chunk header.
    pub fn with_header() -> Self {
        let mut buf = Vec::with_capacity(128);
        buf.extend_from_slice(&[0, 0]);
        BitWriter { buf, free: 0 }
    }

    /// Continues a stream of which `used_bits` bits are meaningful.
    pub fn from_bytes(buf: Vec<u8>, used_bits: usize) -> Self {
        let free = (buf.len() * 8 - used_bits) as u8;
        BitWriter { buf, free }
    }

    pub fn bytes(&self) -> &[u8] {
        &self.buf
    }

    pub fn into_bytes(self) -> Vec<u8> {
        self.buf
    }

    pub fn set_header_count(&mut self, n: u16) {
        self.buf[..2].copy_from_slice(&n.to_be_bytes());
    }

    /// Writes the low `n` bits of `v` (n <= 64).
    #[inline]
    pub fn write_bits(&mut self, v: u64, mut n: u32) {
        debug_assert!(n <= 64);
        let v = if n == 64 { v } else { v & ((1u64 << n) - 1) };
        while n > 0 {
            if self.free == 0 {
                self.buf.push(0);
                self.free = 8;
            }
            let take = n.min(self.free as u32);
            let chunk = (v >> (n - take)) & ((1u64 << take) - 1);
            let shift = self.free as u32 - take;
            if let Some(last) = self.buf.last_mut() {
                *last |= (chunk << shift) as u8;
            }
            self.free -= take as u8;
            n -= take;
        }
    }

    /// Writes a signed (zig-zag) varint as Go's `binary.PutVarint`.
    pub fn write_varint(&mut self, x: i64) {
        self.write_uvarint(((x << 1) ^ (x >> 63)) as u64);
    }

    /// Writes an unsigned LEB128 varint as Go's `binary.PutUvarint`, byte-wise.
    pub fn write_uvarint(&mut self, mut x: u64) {
        while x >= 0x80 {
            self.write_bits((x as u8 | 0x80) as u64, 8);
            x >>= 7;
        }
        self.write_bits(x, 8);
    }
}

/// Reads bits from a byte slice.
#[derive(Clone, Debug)]
pub struct BitReader<'a> {
    data: &'a [u8],
    /// Next byte of `data` to load into `reg`.
    pos: usize,
    /// Buffered bits, left-aligned.
    reg: u64,
    /// Number of valid bits in `reg`.
    valid: u32,
}

impl<'a> BitReader<'a> {
    pub fn new(data: &'a [u8]) -> Self {
        BitReader {
            data,
            pos: 0,
            reg: 0,
            valid: 0,
        }
    }

    /// Bits consumed so far.
    pub fn bits_consumed(&self) -> u64 {
        self.pos as u64 * 8 - self.valid as u64
    }

    #[inline]
    fn refill(&mut self) {
        if self.valid <= 56 && self.pos + 8 <= self.data.len() {
            // Fast path: load 8 bytes, keep as many as fit.
            let mut w = [0u8; 8];
            w.copy_from_slice(&self.data[self.pos..self.pos + 8]);
            let word = u64::from_be_bytes(w);
            let take = (64 - self.valid) / 8;
            // Keep exactly the top `take` bytes of the word.
            let masked = match (u64::MAX).checked_shr(take * 8) {
                Some(low) => word & !low,
                None => word,
            };
            self.reg |= masked >> self.valid;
            self.pos += take as usize;
            self.valid += take * 8;
            return;
        }
        while self.valid <= 56 && self.pos < self.data.len() {
            self.reg |= (self.data[self.pos] as u64) << (56 - self.valid);
            self.valid += 8;
            self.pos += 1;
        }
    }

    /// Reads `n` bits (n <= 64) as the low bits of the result.
    #[inline]
    pub fn read_bits(&mut self, n: u32) -> Option<u64> {
        if n == 0 {
            return Some(0);
        }
        if n > 56 {
            let hi = self.read_bits(n - 32)?;
            let lo = self.read_bits(32)?;
            return Some((hi << 32) | lo);
        }
        if self.valid < n {
            self.refill();
            if self.valid < n {
                return None;
            }
        }
        let v = self.reg >> (64 - n);
        self.reg <<= n;
        self.valid -= n;
        Some(v)
    }

    #[inline]
    pub fn read_bit(&mut self) -> Option<u64> {
        self.read_bits(1)
    }

    /// Counts leading one bits up to `max`, consuming them and the
    /// terminating zero (if fewer than `max` ones).
    #[inline]
    pub fn read_unary_ones(&mut self, max: u32) -> Option<u32> {
        if self.valid < max {
            self.refill();
        }
        if self.valid >= max {
            let ones = (!self.reg).leading_zeros().min(max);
            let used = if ones < max { ones + 1 } else { max };
            self.reg <<= used;
            self.valid -= used;
            return Some(ones);
        }
        let mut ones = 0;
        while ones < max {
            if self.read_bit()? == 0 {
                break;
            }
            ones += 1;
        }
        Some(ones)
    }

    /// Reads an unsigned varint written byte-wise into the bit stream.
    pub fn read_uvarint(&mut self) -> Option<u64> {
        let mut x = 0u64;
        let mut shift = 0u32;
        for i in 0..10 {
            let b = self.read_bits(8)?;
            if b < 0x80 {
                if i == 9 && b > 1 {
                    return None;
                }
                return Some(x | (b << shift));
            }
            x |= (b & 0x7f) << shift;
            shift += 7;
        }
        None
    }

    /// Reads a zig-zag signed varint.
    pub fn read_varint(&mut self) -> Option<i64> {
        let u = self.read_uvarint()?;
        Some(((u >> 1) as i64) ^ -((u & 1) as i64))
    }
}
