//! Varints, big-endian integers and CRC-framed sections.
//!
//! [`Dec`] is a bounds-checked cursor over a window `[pos, end)` of the whole
//! file, so every error can report an absolute file offset. Varints follow
//! Go's `encoding/binary` exactly: at most 10 bytes, the 10th at most 1, and
//! non-minimal encodings accepted, because Prometheus accepts them.

use crate::error::{IndexError, Result};

pub(crate) const MAX_VARINT_LEN: usize = 10;
/// Prometheus reads a series entry's length from at most 5 bytes.
pub(crate) const MAX_VARINT_LEN32: usize = 5;

pub(crate) fn put_uvarint(buf: &mut Vec<u8>, mut x: u64) {
    while x >= 0x80 {
        buf.push(x as u8 | 0x80);
        x >>= 7;
    }
    buf.push(x as u8);
}

pub(crate) fn put_varint(buf: &mut Vec<u8>, x: i64) {
    put_uvarint(buf, ((x << 1) ^ (x >> 63)) as u64);
}

pub(crate) fn put_uvarint_bytes(buf: &mut Vec<u8>, s: &[u8]) {
    put_uvarint(buf, s.len() as u64);
    buf.extend_from_slice(s);
}

/// Decodes a uvarint from the start of `b`: the value and its length, or
/// `None` if `b` ends first or the value overflows 64 bits.
#[inline]
pub(crate) fn uvarint(b: &[u8]) -> Option<(u64, usize)> {
    let mut x = 0u64;
    let mut shift = 0u32;
    for (i, &byte) in b.iter().enumerate().take(MAX_VARINT_LEN) {
        if byte < 0x80 {
            if i == MAX_VARINT_LEN - 1 && byte > 1 {
                return None;
            }
            return Some((x | u64::from(byte) << shift, i + 1));
        }
        x |= u64::from(byte & 0x7f) << shift;
        shift += 7;
    }
    None
}

pub(crate) fn be32(b: &[u8], at: usize) -> Option<u32> {
    let s = b.get(at..at.checked_add(4)?)?;
    Some(u32::from_be_bytes([s[0], s[1], s[2], s[3]]))
}

pub(crate) fn be64(b: &[u8], at: usize) -> Option<u64> {
    let s = b.get(at..at.checked_add(8)?)?;
    let mut a = [0u8; 8];
    a.copy_from_slice(s);
    Some(u64::from_be_bytes(a))
}

/// A cursor over `data[pos..end]`.
#[derive(Clone)]
pub(crate) struct Dec<'a> {
    pub data: &'a [u8],
    pub pos: usize,
    pub end: usize,
    pub section: &'static str,
}

impl<'a> Dec<'a> {
    /// A cursor over `data[start..end]`; `end` must be within `data`.
    pub fn new(data: &'a [u8], start: usize, end: usize, section: &'static str) -> Self {
        debug_assert!(start <= end && end <= data.len());
        Dec {
            data,
            pos: start,
            end,
            section,
        }
    }

    /// Opens the CRC-framed section at `off`: `len (4) | len bytes | crc (4)`.
    /// Returns a cursor over the `len` bytes, after checking the CRC if
    /// `verify` is set.
    pub fn framed(
        data: &'a [u8],
        off: u64,
        section: &'static str,
        verify: bool,
    ) -> Result<Dec<'a>> {
        let start = usize::try_from(off)
            .map_err(|_| IndexError::corrupt(section, usize::MAX, "offset beyond address space"))?;
        let len = be32(data, start).ok_or_else(|| {
            IndexError::corrupt(section, start, "section length beyond end of file")
        })? as usize;
        let body = start + 4;
        let end = body
            .checked_add(len)
            .filter(|&e| e.checked_add(4).is_some_and(|c| c <= data.len()))
            .ok_or_else(|| {
                IndexError::corrupt(
                    section,
                    start,
                    format!("section of {len} bytes runs past end of file"),
                )
            })?;
        if verify {
            check_crc(data, body, end, section)?;
        }
        Ok(Dec::new(data, body, end, section))
    }

    pub fn remaining(&self) -> usize {
        self.end - self.pos
    }

    pub fn err(&self, reason: impl Into<String>) -> IndexError {
        IndexError::corrupt(self.section, self.pos, reason)
    }

    pub fn be32(&mut self) -> Result<u32> {
        if self.remaining() < 4 {
            return Err(self.err("unexpected end of section reading a 4-byte integer"));
        }
        let v = be32(self.data, self.pos).ok_or_else(|| self.err("short read"))?;
        self.pos += 4;
        Ok(v)
    }

    #[inline]
    pub fn uvarint(&mut self) -> Result<u64> {
        // Most values in an index are one byte.
        if self.pos < self.end {
            if let Some(&b) = self.data.get(self.pos) {
                if b < 0x80 {
                    self.pos += 1;
                    return Ok(u64::from(b));
                }
            }
        }
        match uvarint(&self.data[self.pos..self.end]) {
            Some((v, n)) => {
                self.pos += n;
                Ok(v)
            }
            None => Err(self.err("truncated or overflowing varint")),
        }
    }

    pub fn varint(&mut self) -> Result<i64> {
        let u = self.uvarint()?;
        Ok((u >> 1) as i64 ^ -((u & 1) as i64))
    }

    /// A uvarint that must fit 32 bits (symbol references).
    pub fn uvarint32(&mut self) -> Result<u32> {
        let at = self.pos;
        let v = self.uvarint()?;
        u32::try_from(v)
            .map_err(|_| IndexError::corrupt(self.section, at, format!("{v} does not fit 32 bits")))
    }

    /// A length-prefixed byte string.
    pub fn uvarint_bytes(&mut self) -> Result<&'a [u8]> {
        let at = self.pos;
        let len = self.uvarint()?;
        if len > self.remaining() as u64 {
            return Err(IndexError::corrupt(
                self.section,
                at,
                format!("string of {len} bytes runs past end of section"),
            ));
        }
        let s = &self.data[self.pos..self.pos + len as usize];
        self.pos += len as usize;
        Ok(s)
    }
}

/// Checks the big-endian CRC32C stored at `data[end..end+4]` against
/// `data[start..end]`.
pub(crate) fn check_crc(
    data: &[u8],
    start: usize,
    end: usize,
    section: &'static str,
) -> Result<()> {
    let stored = be32(data, end)
        .ok_or_else(|| IndexError::corrupt(section, end, "CRC beyond end of file"))?;
    let body = data
        .get(start..end)
        .ok_or_else(|| IndexError::corrupt(section, start, "section beyond end of file"))?;
    let computed = crc32c::crc32c(body);
    if stored != computed {
        return Err(IndexError::Checksum {
            section,
            offset: start as u64,
            stored,
            computed,
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn varints_round_trip_like_go() {
        for v in [0u64, 1, 127, 128, 300, u32::MAX as u64, u64::MAX] {
            let mut b = Vec::new();
            put_uvarint(&mut b, v);
            assert_eq!(uvarint(&b), Some((v, b.len())));
        }
        for v in [0i64, -1, 1, -64, 64, i64::MIN, i64::MAX] {
            let mut b = Vec::new();
            put_varint(&mut b, v);
            let mut d = Dec::new(&b, 0, b.len(), "t");
            assert_eq!(d.varint().unwrap(), v);
        }
        // Go accepts non-minimal encodings and rejects a 10th byte > 1.
        assert_eq!(uvarint(&[0x80, 0x00]), Some((0, 2)));
        assert_eq!(
            uvarint(&[0xff; 9].iter().copied().chain([2]).collect::<Vec<_>>()),
            None
        );
        assert_eq!(uvarint(&[0x80]), None);
        assert_eq!(uvarint(&[]), None);
    }
}
