//! Decoding whole XOR chunks at once, for readers that want every sample
//! (queries): [`XorIterator::drain_into`].
//!
//! The common samples (dod classes 0..=3, not within [`LONGEST`] bits of
//! the stream's end) are decoded in a loop whose state lives in locals and
//! which pushes straight into the output; the first two samples of a
//! chunk, 64-bit dods, the tail and damage go through
//! [`XorIterator::next`], so the output and the errors are exactly the
//! iterator's. Decoding itself is no faster than `next` (one long chain of
//! dependent steps, ~8 ns a sample); what this saves is the call and the
//! checks per sample of a reader that filters and copies through `next`.
//! Tried and measured slower or no faster: decoding 2 or 4 chunks
//! interleaved in one loop, and a branch-free step cutting every field
//! from one 128-bit load.

use super::{short_dod, XorIterator, FAST_PATH_BITS};
use crate::bstream::BitReader;
use crate::xor_value::XorWindow;

/// The longest sample the loop takes: dod prefix and field, value control
/// and window header, 64-bit payload. With this many bits left, no read
/// can run past the end.
const LONGEST: usize = FAST_PATH_BITS + 64;

/// Decoder state of one chunk, held in locals while the loop runs.
struct DecodeState<'a> {
    reader: BitReader<'a>,
    t: i64,
    t_delta: u64,
    value: u64,
    window: XorWindow,
    left: u16,
    changed: bool,
}

impl<'a> DecodeState<'a> {
    fn take(it: &XorIterator<'a>) -> Self {
        DecodeState {
            reader: it.reader.clone(),
            t: it.t,
            t_delta: it.t_delta,
            value: it.value,
            window: it.window,
            left: it.left,
            changed: false,
        }
    }

    /// Hands the state back to the iterator it came from.
    fn give_back(self, it: &mut XorIterator<'a>) {
        let taken = it.left - self.left;
        it.reader = self.reader;
        (it.t, it.t_delta, it.value, it.window) = (self.t, self.t_delta, self.value, self.window);
        it.value_changed |= self.changed;
        it.read += taken;
        it.left = self.left;
    }

    /// Decodes the next sample into `out` if it is a common one (see the
    /// module doc); returns false, consuming nothing, if not.
    #[inline(always)]
    fn step(&mut self, out: &mut Vec<(i64, f64)>) -> bool {
        if self.left == 0 || self.reader.remaining() < LONGEST {
            return false;
        }
        let reg = self.reader.peek();
        let Some((dod, mut used)) = short_dod(reg) else {
            return false;
        };
        // Value control: `0` same, `10` old window, `11` + 11 bits new one.
        let value_reg = reg << used;
        let control = value_reg.leading_ones().min(2);
        if control == 0 {
            self.reader.skip(used + 1);
        } else {
            let (leading, significant) = if control == 2 {
                XorWindow::header_fields((value_reg << 2) >> (64 - 11))
            } else {
                (
                    self.window.leading,
                    64 - self.window.leading - self.window.trailing,
                )
            };
            // A bad window header: `next` reports it.
            let Ok(window) = XorWindow::checked(leading, significant) else {
                return false;
            };
            used += if control == 2 { 2 + 11 } else { 2 };
            let sig = u32::from(significant);
            // Small payloads are still in `reg` (57 bits are meaningful).
            let bits = if used + sig <= 57 {
                self.reader.skip(used + sig);
                ((reg << used) >> 1) >> (63 - sig)
            } else {
                self.reader.skip(used);
                // At least LONGEST bits were left: this read cannot fail.
                match self.reader.read_bits(sig) {
                    Ok(bits) => bits,
                    Err(_) => return false,
                }
            };
            self.window = window;
            self.value ^= bits << window.trailing;
            self.changed = true;
        }
        self.t_delta = self.t_delta.wrapping_add(dod);
        self.t = self.t.wrapping_add(self.t_delta as i64);
        self.left -= 1;
        out.push((self.t, f64::from_bits(self.value)));
        true
    }
}

impl XorIterator<'_> {
    /// Appends every sample not returned yet to `out`, exactly as calling
    /// [`Iterator::next`] until `None` would (stopping at the same sample
    /// on damage; [`Self::error`] then says why), with the common samples
    /// decoded in a loop over locals.
    pub fn drain_into(&mut self, out: &mut Vec<(i64, f64)>) {
        out.reserve(usize::from(self.left));
        loop {
            if self.read >= 2 {
                let mut state = DecodeState::take(self);
                while state.step(out) {}
                state.give_back(self);
            }
            match self.next() {
                Some(sample) => out.push(sample),
                None => return,
            }
        }
    }
}
