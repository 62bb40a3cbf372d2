//! Gorilla XOR value fields: the one implementation of the value window
//! that the XOR chunk, the XOR2 chunk (with its own codes and window
//! choices), the sum of an integer histogram and every float of a float
//! histogram share.
//!
//! A changed value is written as its XOR with the previous value's bits,
//! either inside the field's current window of significant bits, or with a
//! new window: 5 bits of leading zeros (clamped to 31), 6 bits of
//! significant-bit count (64 written as 0), then those bits. XOR and the
//! histograms code this as `0` unchanged, `10` inside the window (if it
//! holds the bits), `11` new window ([`XorWindow::write`]); XOR2 uses other
//! codes and sometimes opens a window where the old one would do, so it
//! calls [`XorWindow::put_in`] / [`XorWindow::put_new`] itself. Each field
//! keeps its own window.

#![deny(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing,
    missing_docs
)]

use crate::bstream::{BitReader, BitSink, EndOfStream};
use crate::Fault;

/// `leading` of a field that has no window yet.
const NO_WINDOW: u8 = 0xff;

/// The window of significant bits a value field's last new-window code set:
/// the XOR and XOR2 chunks' values and the histograms' XOR fields.
///
/// Writers start with [`Self::NONE`] (the first change opens a window);
/// XOR and XOR2 readers start with [`Self::FULL`], as Prometheus' readers
/// do, and histogram readers with `NONE`, which reads the same.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct XorWindow {
    /// Leading zeros (0..=31), or [`NO_WINDOW`].
    pub(crate) leading: u8,
    /// Trailing zeros (0..=63; 0 with `NO_WINDOW`).
    pub(crate) trailing: u8,
}

impl Default for XorWindow {
    fn default() -> Self {
        XorWindow::NONE
    }
}

impl XorWindow {
    /// No window: the writer's next change opens one. A reader takes a
    /// window reuse before any new window as 64 bits ([`Self::FULL`]).
    pub(crate) const NONE: XorWindow = XorWindow {
        leading: NO_WINDOW,
        trailing: 0,
    };

    /// All 64 bits: where Prometheus' readers (and a reopened Prometheus
    /// appender) start.
    pub(crate) const FULL: XorWindow = XorWindow {
        leading: 0,
        trailing: 0,
    };

    /// Whether a new-window code has set this window.
    #[inline(always)]
    pub(crate) const fn is_open(self) -> bool {
        self.leading != NO_WINDOW
    }

    /// Bits inside the window: 1..=64 (64 for [`Self::NONE`]).
    #[inline(always)]
    pub(crate) const fn significant(self) -> u32 {
        if self.is_open() {
            64 - self.leading as u32 - self.trailing as u32
        } else {
            64
        }
    }

    /// The narrowest window holding a non-zero XOR: its leading zeros
    /// (clamped to 31, the most 5 bits hold) and trailing zeros.
    #[inline(always)]
    pub(crate) const fn tightest(xor: u64) -> XorWindow {
        let leading = xor.leading_zeros() as u8;
        XorWindow {
            leading: if leading > 31 { 31 } else { leading },
            trailing: xor.trailing_zeros() as u8,
        }
    }

    /// Whether this window holds every bit of `tight` (a
    /// [`Self::tightest`]); never for [`Self::NONE`].
    #[inline(always)]
    pub(crate) const fn holds(self, tight: XorWindow) -> bool {
        tight.leading >= self.leading && tight.trailing >= self.trailing
    }

    /// Writes the `code_len`-bit `code`, then the XOR's bits inside this
    /// window (which holds them), in one write when they fit 64 bits.
    #[inline(always)]
    pub(crate) fn put_in<W: BitSink>(self, w: &mut W, code: u64, code_len: u32, xor: u64) {
        let sig = self.significant();
        let payload = xor >> self.trailing;
        if code_len + sig <= 64 {
            w.put_bits(code << sig | payload, code_len + sig);
        } else {
            w.put_bits(code, code_len);
            w.put_bits(payload, sig);
        }
    }

    /// Makes `new` (which holds the non-zero XOR) the window and writes the
    /// `code_len`-bit `code`, the window's header (5 bits of leading zeros,
    /// 6 of significant-bit count, 64 written as 0) and the XOR's bits.
    #[inline(always)]
    pub(crate) fn put_new<W: BitSink>(
        &mut self,
        w: &mut W,
        code: u64,
        code_len: u32,
        xor: u64,
        new: XorWindow,
    ) {
        *self = new;
        let sig = new.significant();
        let header = code << 11 | u64::from(new.leading) << 6 | u64::from(sig & 0x3f);
        w.put_bits(header, code_len + 11);
        w.put_bits(xor >> new.trailing, sig);
    }

    /// Writes a value as its XOR with the previous one, the way the XOR
    /// chunk and the histogram chunks do: `0` if unchanged; `10` + the bits
    /// inside the window if it holds them; else `11` + the XOR's tightest
    /// window, which becomes the window.
    #[inline(always)]
    pub(crate) fn write<W: BitSink>(&mut self, w: &mut W, xor: u64) {
        if xor == 0 {
            return w.put_bits(0, 1);
        }
        let tight = XorWindow::tightest(xor);
        if self.holds(tight) {
            self.put_in(w, 0b10, 2, xor);
        } else {
            self.put_new(w, 0b11, 2, xor, tight);
        }
    }

    /// Reads the XOR's bits inside this window (after its code).
    #[inline(always)]
    pub(crate) fn read_in(self, r: &mut BitReader<'_>) -> Result<u64, EndOfStream> {
        Ok(r.read_bits(self.significant())? << self.trailing)
    }

    /// Leading zeros and significant bits of an 11-bit new-window header
    /// (5 bits of leading zeros, 6 of significant-bit count, 0 meaning
    /// 64; bits above the 11 must be zero), unchecked: see
    /// [`Self::checked`].
    #[inline(always)]
    pub(crate) const fn header_fields(header: u64) -> (u8, u8) {
        let leading = (header >> 6) as u8;
        let significant = match (header & 0x3f) as u8 {
            0 => 64,
            n => n,
        };
        (leading, significant)
    }

    /// The window of `leading` zeros and `significant` bits, or an error if
    /// it spans more than 64 bits.
    #[inline(always)]
    pub(crate) fn checked(leading: u8, significant: u8) -> Result<XorWindow, Fault> {
        if leading + significant > 64 {
            return Err(Fault::InvalidWindow {
                leading,
                significant,
            });
        }
        Ok(XorWindow {
            leading,
            trailing: 64 - leading - significant,
        })
    }

    /// Reads a new window's header (after its code), makes it the window
    /// and reads the XOR's bits inside it.
    #[inline]
    pub(crate) fn read_new(&mut self, r: &mut BitReader<'_>) -> Result<u64, Fault> {
        let (leading, significant) = XorWindow::header_fields(r.read_bits(5 + 6)?);
        *self = XorWindow::checked(leading, significant)?;
        self.read_in(r).map_err(Fault::from)
    }

    /// Reads a value written by [`Self::write`]: the XOR with the previous
    /// value (0 if unchanged).
    #[inline]
    pub(crate) fn read(&mut self, r: &mut BitReader<'_>) -> Result<u64, Fault> {
        match r.read_ones(2)? {
            0 => Ok(0),
            1 => Ok(self.read_in(r)?),
            _ => self.read_new(r),
        }
    }
}

/// A float field with its own window: its last value's bits.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct XorField {
    pub bits: u64,
    pub window: XorWindow,
}

impl XorField {
    /// A field whose first value was written raw.
    pub(crate) fn new(bits: u64) -> Self {
        XorField {
            bits,
            window: XorWindow::NONE,
        }
    }

    /// The last value.
    pub(crate) fn value(&self) -> f64 {
        f64::from_bits(self.bits)
    }

    /// Writes `v` relative to the last value.
    pub(crate) fn write<W: BitSink>(&mut self, w: &mut W, v: f64) {
        self.window.write(w, self.bits ^ v.to_bits());
        self.bits = v.to_bits();
    }

    /// Reads the next value.
    pub(crate) fn read(&mut self, r: &mut BitReader<'_>) -> Result<(), Fault> {
        self.bits ^= self.window.read(r)?;
        Ok(())
    }
}

#[cfg(test)]
#[allow(clippy::expect_used, clippy::indexing_slicing)]
mod tests {
    use super::*;
    use crate::bstream::BitWriter;

    #[test]
    fn round_trips_and_reuses_windows() {
        let values = [
            0.0f64,
            1.5,
            1.5,
            1.75,
            -3.0,
            f64::NAN,
            1e300,
            1e-300,
            0.0,
            2.0,
        ];
        let mut buf = Vec::new();
        let mut free = 0;
        let mut window = XorWindow::NONE;
        let mut w = BitWriter::new(&mut buf, &mut free);
        let mut prev = 0u64;
        for v in values {
            window.write(&mut w, prev ^ v.to_bits());
            prev = v.to_bits();
        }
        let mut r = BitReader::new(&buf);
        let mut window = XorWindow::NONE;
        let mut value = 0u64;
        for v in values {
            value ^= window.read(&mut r).expect("decodes");
            assert_eq!(value, v.to_bits());
        }
        assert!(r.remaining() < 8);
    }

    #[test]
    fn rejects_oversized_windows() {
        // `11`, 31 leading zeros, 40 significant bits.
        let mut buf = Vec::new();
        let mut free = 0;
        BitWriter::new(&mut buf, &mut free).write_bits(0b11 << 11 | 31 << 6 | 40, 13);
        buf.extend([0xff; 8]);
        let mut window = XorWindow::NONE;
        assert_eq!(
            window.read(&mut BitReader::new(&buf)),
            Err(Fault::InvalidWindow {
                leading: 31,
                significant: 40
            })
        );
    }
}
