//! The XOR chunk encoding (Facebook's Gorilla, as Prometheus implements it).
//!
//! Layout: a 2-byte big-endian sample count, then a bit stream (most
//! significant bit first). The first sample is a signed varint timestamp and
//! the raw 64 value bits; the second a uvarint timestamp delta and an XOR'd
//! value; later samples store the delta of the timestamp delta in one of five
//! widths and the value XOR'd with the previous one, reusing the previous
//! window of meaningful bits when it fits. Prometheus, Thanos and Mimir read
//! these bytes, so every bit must match theirs.

use crate::bstream::{BitReader, BitWriter};
use crate::ChunkError;

/// Delta-of-delta width classes: (control bits value, control length, payload bits).
const DOD_CLASSES: [(u64, u32, u32); 3] = [(0b10, 2, 14), (0b110, 3, 17), (0b1110, 4, 20)];

/// True if `x` fits Prometheus' `n`-bit delta-of-delta range [-(2^(n-1)-1), 2^(n-1)].
fn fits(x: i64, n: u32) -> bool {
    let half = 1i64 << (n - 1);
    -(half - 1) <= x && x <= half
}

/// An appendable XOR chunk.
#[derive(Clone, Debug)]
pub struct XorChunk {
    stream: BitWriter,
    t: i64,
    v: u64,
    t_delta: u64,
    leading: u8,
    trailing: u8,
}

impl Default for XorChunk {
    fn default() -> Self {
        Self::new()
    }
}

impl XorChunk {
    /// An empty chunk (just the zero sample count).
    pub fn new() -> Self {
        XorChunk {
            stream: BitWriter::with_header(),
            t: 0,
            v: 0,
            t_delta: 0,
            leading: 0xff,
            trailing: 0,
        }
    }

    /// Reopens chunk bytes for appending, restoring the appender state by
    /// decoding every sample.
    pub fn from_bytes(data: Vec<u8>) -> Result<Self, ChunkError> {
        if data.len() < 2 {
            return Err(ChunkError::TooShort(data.len()));
        }
        let mut it = XorIterator::new(&data);
        for _ in it.by_ref() {}
        if let Some(e) = it.error() {
            return Err(e.clone());
        }
        let (t, v, t_delta, leading, trailing) = (it.t, it.v, it.t_delta, it.leading, it.trailing);
        let used_bits = 16 + it.reader.bits_consumed() as usize;
        if used_bits.div_ceil(8) != data.len() {
            return Err(ChunkError::TrailingBytes);
        }
        Ok(XorChunk {
            stream: BitWriter::from_bytes(data, used_bits),
            t,
            v,
            t_delta,
            leading,
            trailing,
        })
    }

    pub fn num_samples(&self) -> u16 {
        let b = self.stream.bytes();
        u16::from_be_bytes([b[0], b[1]])
    }

    pub fn bytes(&self) -> &[u8] {
        self.stream.bytes()
    }

    pub fn into_bytes(self) -> Vec<u8> {
        self.stream.into_bytes()
    }

    pub fn iter(&self) -> XorIterator<'_> {
        XorIterator::new(self.bytes())
    }

    /// Appends a sample. Timestamps must increase (the head checks this).
    pub fn append(&mut self, t: i64, v: f64) {
        let n = self.num_samples();
        let vb = v.to_bits();
        match n {
            0 => {
                self.stream.write_varint(t);
                self.stream.write_bits(vb, 64);
            }
            1 => {
                let d = t.wrapping_sub(self.t) as u64;
                self.stream.write_uvarint(d);
                self.write_value(vb);
                self.t_delta = d;
            }
            _ => {
                let d = t.wrapping_sub(self.t) as u64;
                let dod = d.wrapping_sub(self.t_delta) as i64;
                if dod == 0 {
                    self.stream.write_bits(0, 1);
                } else if let Some(&(ctl, ctl_len, bits)) =
                    DOD_CLASSES.iter().find(|(_, _, bits)| fits(dod, *bits))
                {
                    self.stream.write_bits(ctl, ctl_len);
                    self.stream.write_bits(dod as u64, bits);
                } else {
                    self.stream.write_bits(0b1111, 4);
                    self.stream.write_bits(dod as u64, 64);
                }
                self.write_value(vb);
                self.t_delta = d;
            }
        }
        self.t = t;
        self.v = vb;
        self.stream.set_header_count(n.wrapping_add(1));
    }

    fn write_value(&mut self, vb: u64) {
        let x = vb ^ self.v;
        if x == 0 {
            self.stream.write_bits(0, 1);
            return;
        }
        self.stream.write_bits(1, 1);
        let leading = (x.leading_zeros() as u8).min(31);
        let trailing = x.trailing_zeros() as u8;
        if self.leading != 0xff && leading >= self.leading && trailing >= self.trailing {
            let sig = 64 - self.leading as u32 - self.trailing as u32;
            self.stream.write_bits(0, 1);
            self.stream.write_bits(x >> self.trailing, sig);
            return;
        }
        self.leading = leading;
        self.trailing = trailing;
        let sig = 64 - leading as u32 - trailing as u32;
        self.stream.write_bits(1, 1);
        self.stream.write_bits(leading as u64, 5);
        // 64 significant bits are written as 0 (6 bits cannot hold 64).
        self.stream.write_bits(sig as u64 & 0x3f, 6);
        self.stream.write_bits(x >> trailing, sig);
    }
}

/// Iterates the samples of XOR chunk bytes.
#[derive(Clone, Debug)]
pub struct XorIterator<'a> {
    reader: BitReader<'a>,
    num_total: u16,
    num_read: u16,
    t: i64,
    v: u64,
    t_delta: u64,
    leading: u8,
    trailing: u8,
    err: Option<ChunkError>,
}

impl<'a> XorIterator<'a> {
    pub fn new(data: &'a [u8]) -> Self {
        let (num_total, body, err) = if data.len() >= 2 {
            (u16::from_be_bytes([data[0], data[1]]), &data[2..], None)
        } else {
            (0, &data[..0], Some(ChunkError::TooShort(data.len())))
        };
        XorIterator {
            reader: BitReader::new(body),
            num_total,
            num_read: 0,
            t: 0,
            v: 0,
            t_delta: 0,
            // 0xff: no bit window yet, as in the appender.
            leading: 0xff,
            trailing: 0,
            err,
        }
    }

    /// Why iteration stopped early, if it did.
    pub fn error(&self) -> Option<&ChunkError> {
        self.err.as_ref()
    }

    /// Number of samples the chunk header announces.
    pub fn num_samples(&self) -> u16 {
        self.num_total
    }

    /// Advances to the first sample with timestamp >= `t`.
    pub fn seek(&mut self, t: i64) -> Option<(i64, f64)> {
        if self.num_read > 0 && self.t >= t {
            return Some((self.t, f64::from_bits(self.v)));
        }
        while let Some(s) = self.next() {
            if s.0 >= t {
                return Some(s);
            }
        }
        None
    }

    fn fail(&mut self) -> Option<(i64, f64)> {
        self.err = Some(ChunkError::Truncated {
            sample: self.num_read,
        });
        None
    }

    fn read_value(&mut self) -> Option<()> {
        let r = &mut self.reader;
        if r.read_bit()? == 0 {
            return Some(());
        }
        if r.read_bit()? == 1 {
            self.leading = r.read_bits(5)? as u8;
            let mut sig = r.read_bits(6)? as u8;
            if sig == 0 {
                sig = 64;
            }
            if self.leading as u32 + sig as u32 > 64 {
                return None;
            }
            self.trailing = 64 - self.leading - sig;
        } else if self.leading == 0xff {
            // Reusing a window that was never set: not a valid chunk.
            return None;
        }
        let sig = 64 - self.leading as u32 - self.trailing as u32;
        let bits = r.read_bits(sig)?;
        self.v ^= bits << self.trailing;
        Some(())
    }

    fn read_next(&mut self) -> Option<()> {
        match self.num_read {
            0 => {
                self.t = self.reader.read_varint()?;
                self.v = self.reader.read_bits(64)?;
            }
            1 => {
                self.t_delta = self.reader.read_uvarint()?;
                self.t = self.t.wrapping_add(self.t_delta as i64);
                self.read_value()?;
            }
            _ => {
                let class = self.reader.read_unary_ones(4)?;
                let dod: i64 = match class {
                    0 => 0,
                    4 => self.reader.read_bits(64)? as i64,
                    c => {
                        let bits = DOD_CLASSES[c as usize - 1].2;
                        let raw = self.reader.read_bits(bits)? as i64;
                        // Values above 2^(bits-1) are negative.
                        if raw > 1 << (bits - 1) {
                            raw - (1 << bits)
                        } else {
                            raw
                        }
                    }
                };
                self.t_delta = (self.t_delta as i64).wrapping_add(dod) as u64;
                self.t = self.t.wrapping_add(self.t_delta as i64);
                self.read_value()?;
            }
        }
        Some(())
    }
}

impl Iterator for XorIterator<'_> {
    type Item = (i64, f64);

    #[inline]
    fn next(&mut self) -> Option<(i64, f64)> {
        if self.err.is_some() || self.num_read >= self.num_total {
            return None;
        }
        if self.read_next().is_none() {
            return self.fail();
        }
        self.num_read += 1;
        Some((self.t, f64::from_bits(self.v)))
    }
}
