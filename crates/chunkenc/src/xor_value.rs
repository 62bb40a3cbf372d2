//! Gorilla XOR fields of the histogram encodings: the sum of an integer
//! histogram, and every float of a float histogram after its first sample.
//!
//! The same bit layout as the value of an XOR chunk sample: `0` if the
//! bits are unchanged; `10` + the XOR's bits inside the field's current
//! window of significant bits if they fit; else `11` + 5 bits of leading
//! zeros (clamped to 31) + 6 bits of significant-bit count (64 written as
//! 0) + those bits, which become the new window. Each field keeps its own
//! window.

#![deny(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing,
    missing_docs
)]

use crate::bstream::{BitReader, BitWriter, EndOfStream};

/// `leading` of a field that has no window yet.
const NO_WINDOW: u8 = 0xff;

/// The window of significant bits a field's last `11` set.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct XorWindow {
    /// Leading zeros, or [`NO_WINDOW`].
    leading: u8,
    trailing: u8,
}

impl Default for XorWindow {
    fn default() -> Self {
        XorWindow::NONE
    }
}

/// Why an XOR field could not be read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum XorFault {
    Truncated,
    /// A new window of more than 64 bits.
    InvalidWindow {
        leading: u8,
        significant: u8,
    },
}

impl From<EndOfStream> for XorFault {
    fn from(_: EndOfStream) -> Self {
        XorFault::Truncated
    }
}

impl XorWindow {
    /// No window: the writer's next change opens one with `11`.
    pub(crate) const NONE: XorWindow = XorWindow {
        leading: NO_WINDOW,
        trailing: 0,
    };

    /// Writes `new` as its XOR with `old`, updating the window.
    pub(crate) fn write(&mut self, w: &mut BitWriter<'_>, old: u64, new: u64) {
        let xor = old ^ new;
        if xor == 0 {
            w.write_bits(0, 1);
            return;
        }
        let leading = (xor.leading_zeros() as u8).min(31);
        let trailing = xor.trailing_zeros() as u8;
        if self.leading != NO_WINDOW && leading >= self.leading && trailing >= self.trailing {
            let sig = 64 - u32::from(self.leading) - u32::from(self.trailing);
            w.write_bits(0b10, 2);
            w.write_bits(xor >> self.trailing, sig);
            return;
        }
        self.leading = leading;
        self.trailing = trailing;
        let sig = 64 - u32::from(leading) - u32::from(trailing);
        let header = 0b11 << 11 | u64::from(leading) << 6 | u64::from(sig & 0x3f);
        w.write_bits(header, 2 + 5 + 6);
        w.write_bits(xor >> trailing, sig);
    }

    /// Reads a field written by [`Self::write`], XORing it into `value`.
    ///
    /// A `10` before any `11` reuses a window of 64 bits, as Prometheus'
    /// reader does (its writer emits that after reopening a chunk).
    pub(crate) fn read(&mut self, r: &mut BitReader<'_>, value: &mut u64) -> Result<(), XorFault> {
        let (leading, significant, new_window) = match r.read_ones(2)? {
            0 => return Ok(()),
            1 if self.leading == NO_WINDOW => (0, 64, false),
            1 => (self.leading, 64 - self.leading - self.trailing, false),
            _ => {
                let header = r.read_bits(5 + 6)?;
                let leading = (header >> 6) as u8;
                let significant = match (header & 0x3f) as u8 {
                    0 => 64,
                    n => n,
                };
                if leading + significant > 64 {
                    return Err(XorFault::InvalidWindow {
                        leading,
                        significant,
                    });
                }
                (leading, significant, true)
            }
        };
        let bits = r.read_bits(u32::from(significant))?;
        let trailing = 64 - leading - significant;
        if new_window {
            self.leading = leading;
            self.trailing = trailing;
        }
        *value ^= bits << trailing;
        Ok(())
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
    pub(crate) fn write(&mut self, w: &mut BitWriter<'_>, v: f64) {
        self.window.write(w, self.bits, v.to_bits());
        self.bits = v.to_bits();
    }

    /// Reads the next value.
    pub(crate) fn read(&mut self, r: &mut BitReader<'_>) -> Result<(), XorFault> {
        self.window.read(r, &mut self.bits)
    }
}

#[cfg(test)]
#[allow(clippy::expect_used, clippy::indexing_slicing)]
mod tests {
    use super::*;

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
            window.write(&mut w, prev, v.to_bits());
            prev = v.to_bits();
        }
        let mut r = BitReader::new(&buf);
        let mut window = XorWindow::NONE;
        let mut value = 0u64;
        for v in values {
            window.read(&mut r, &mut value).expect("decodes");
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
        let mut value = 0;
        let mut window = XorWindow::NONE;
        assert_eq!(
            window.read(&mut BitReader::new(&buf), &mut value),
            Err(XorFault::InvalidWindow {
                leading: 31,
                significant: 40
            })
        );
    }
}
