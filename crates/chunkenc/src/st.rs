//! Start timestamps (ST) beside a chunk's samples, as Prometheus v3.16.0
//! stores them in its `XOR2`, `histogramST` and `floathistogramST` chunks.
//!
//! A sample's start timestamp says since when a cumulative value has been
//! accumulating (a counter's creation or last reset). It is optional: `0`
//! means "none", and a chunk whose samples all have ST 0 carries no ST bits.
//! The scheme is the same for the three encodings; only the sample data
//! around it differs, so a chunk embeds an [`StEncoder`] / [`StDecoder`] and
//! calls it once per sample, right after writing/reading the sample's own
//! fields.
//!
//! # Layout
//!
//! One header byte (in all three encodings it is byte 2 of the chunk, after
//! the sample count) and an optional field after each sample's data:
//!
//! * header bit 7 ([`StHeader::first_known`]): sample 0 has a non-zero ST,
//!   stored right after sample 0 as a zig-zag varint of `t_0 - st_0`;
//! * header bits 0-6 ([`StHeader::first_change_on`]): the index `k` of the
//!   first later sample whose ST differs from its predecessor's, 0 if none.
//!   Samples `1..k` carry no ST field (their ST is the previous sample's);
//!   every sample `i >= k` carries one: sample `k` stores
//!   `d_k = t_(k-1) - st_k`, and samples `i > k` store `d_i - d_(i-1)`
//!   with `d_i = t_(i-1) - st_i`, each as a [`varbit int`](crate::varbit::write_varbit_int).
//!
//! Seven bits name at most sample 127, so a chunk that reaches sample 127
//! without a change records one there anyway ([`MAX_FIRST_CHANGE_ON`]), and
//! from then on every sample carries an ST field, even when all STs are 0.
//! Note what the fields cost: once a change is recorded, a sample whose ST
//! equals its predecessor's stores the change of `t_(i-1) - st`, i.e. the
//! previous timestamp delta (24 bits for 15 s scrapes), and a sample with
//! `st_i = t_(i-1)` (delta temporality) stores 0 (1 bit). These are
//! Prometheus' choices; we write the same bits.
//!
//! All arithmetic wraps, as Go's does, so every `i64` sequence round-trips.
//!
//! # Use
//!
//! Writing sample `i` (0-based) of a chunk: write the sample's own data,
//! then `header |= enc.encode(&mut writer, i, t, prev_t, st)`. Reading: make
//! a decoder from the header byte, and after each sample's own data call
//! [`StDecoder::decode`] with the same index and timestamps. To continue
//! appending to existing bytes, decode them all and
//! [`StEncoder::resume`] from the decoder.

#![warn(missing_docs)]

pub use crate::bstream::BitSink;
use crate::bstream::{BitReader, EndOfStream};
use crate::varbit::{read_varbit_int, write_varbit_int};

/// Header bit: sample 0's ST is in the stream.
pub const FIRST_ST_KNOWN: u8 = 0x80;

/// Header bits holding [`StHeader::first_change_on`].
pub const FIRST_CHANGE_ON_MASK: u8 = 0x7f;

/// The last sample index the header can name: a chunk that reaches it with
/// no ST change yet records its ST there regardless.
pub const MAX_FIRST_CHANGE_ON: u16 = 0x7f;

/// The ST header byte, decoded.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct StHeader {
    /// Sample 0 carries a (non-zero) ST.
    pub first_known: bool,
    /// Index of the first sample that stores an ST delta (and from which
    /// every sample does); 0 if none does.
    pub first_change_on: u8,
}

impl StHeader {
    /// Splits a header byte.
    pub const fn from_byte(b: u8) -> Self {
        StHeader {
            first_known: b & FIRST_ST_KNOWN != 0,
            first_change_on: b & FIRST_CHANGE_ON_MASK,
        }
    }

    /// The header byte.
    pub const fn to_byte(self) -> u8 {
        (if self.first_known { FIRST_ST_KNOWN } else { 0 })
            | (self.first_change_on & FIRST_CHANGE_ON_MASK)
    }

    /// Whether sample `index` has an ST field after its data.
    #[inline]
    pub const fn has_field(self, index: u16) -> bool {
        if index == 0 {
            self.first_known
        } else {
            self.first_change_on != 0 && index >= self.first_change_on as u16
        }
    }
}

/// Why an ST field could not be read.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum StReadError {
    /// The stream ends inside the field.
    #[error("bit stream ended inside a start timestamp")]
    Truncated,
    /// Sample 0's varint does not fit 64 bits.
    #[error("start timestamp varint overflows 64 bits")]
    VarintOverflow,
}

impl From<EndOfStream> for StReadError {
    fn from(_: EndOfStream) -> Self {
        StReadError::Truncated
    }
}

/// Encoder state for the ST fields of one chunk.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct StEncoder {
    /// ST of the last sample appended (0 before the first).
    st: i64,
    /// `prev_t - st` of the last sample that stored an ST delta.
    diff: i64,
    /// As in the header: index of the first sample storing a delta, 0 if
    /// none did yet.
    first_change_on: u8,
}

impl StEncoder {
    /// State for an empty chunk.
    pub const fn new() -> Self {
        StEncoder {
            st: 0,
            diff: 0,
            first_change_on: 0,
        }
    }

    /// State for appending after the `samples` samples that `decoder` has
    /// read (all of a chunk's samples), so that appending continues exactly
    /// as if the encoder had written them.
    ///
    /// `None` if the header is one Prometheus' encoder cannot have written
    /// for that many samples, so appending would corrupt the chunk: header
    /// bits in an empty chunk, a first change at or after `samples`, or no
    /// change recorded although sample [`MAX_FIRST_CHANGE_ON`] exists.
    pub fn resume(decoder: &StDecoder, samples: u16) -> Option<Self> {
        let header = decoder.header;
        let fits = match (samples, header.first_change_on) {
            (0, _) => header == StHeader::default(),
            (n, 0) => n <= MAX_FIRST_CHANGE_ON,
            (n, k) => u16::from(k) < n,
        };
        fits.then_some(StEncoder {
            st: decoder.st,
            diff: if header.first_change_on == 0 {
                0
            } else {
                decoder.diff
            },
            first_change_on: header.first_change_on,
        })
    }

    /// Whether every further sample stores an ST field.
    #[inline]
    pub const fn is_active(&self) -> bool {
        self.first_change_on != 0
    }

    /// ST of the last sample encoded.
    pub const fn last_st(&self) -> i64 {
        self.st
    }

    /// Writes the ST field (if any) of sample `index`, whose timestamp is
    /// `t` and whose predecessor's is `prev_t` (ignored for sample 0), and
    /// returns the bits to OR into the chunk's ST header byte (0 if none).
    ///
    /// Indices past [`MAX_FIRST_CHANGE_ON`] require a change to have been
    /// recorded already, which holds for an encoder that saw every index
    /// from 0 or was made by [`Self::resume`].
    #[inline(always)]
    pub fn encode<W: BitSink>(
        &mut self,
        w: &mut W,
        index: u16,
        t: i64,
        prev_t: i64,
        st: i64,
    ) -> u8 {
        if index != 0 {
            if self.first_change_on != 0 {
                // Every sample stores the change of `prev_t - st`.
                let diff = prev_t.wrapping_sub(st);
                write_varbit_int(w, diff.wrapping_sub(self.diff));
                self.diff = diff;
                self.st = st;
                return 0;
            }
            if st == self.st && index < MAX_FIRST_CHANGE_ON {
                // Unchanged, and no change recorded yet: nothing to write.
                return 0;
            }
        }
        self.encode_rare(w, index, t, prev_t, st)
    }

    /// Sample 0, and the first change.
    #[cold]
    fn encode_rare<W: BitSink>(
        &mut self,
        w: &mut W,
        index: u16,
        t: i64,
        prev_t: i64,
        st: i64,
    ) -> u8 {
        let mut header = 0;
        if index == 0 {
            if st != 0 {
                w.put_varint(t.wrapping_sub(st));
                header = FIRST_ST_KNOWN;
            }
        } else {
            debug_assert!(
                index <= MAX_FIRST_CHANGE_ON,
                "ST header cannot name sample {index}"
            );
            let diff = prev_t.wrapping_sub(st);
            write_varbit_int(w, diff);
            self.diff = diff;
            // At most 127, by the caller's condition (and `resume`).
            self.first_change_on = index.min(MAX_FIRST_CHANGE_ON) as u8;
            header = self.first_change_on;
        }
        self.st = st;
        header
    }
}

/// Decoder state for the ST fields of one chunk.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct StDecoder {
    header: StHeader,
    /// ST of the last sample decoded.
    st: i64,
    /// `prev_t - st` of the last sample that stored a delta.
    diff: i64,
}

impl StDecoder {
    /// A decoder for a chunk with this ST header byte.
    pub const fn new(header: u8) -> Self {
        StDecoder {
            header: StHeader::from_byte(header),
            st: 0,
            diff: 0,
        }
    }

    /// The chunk's ST header.
    pub const fn header(&self) -> StHeader {
        self.header
    }

    /// ST of the sample last decoded (0: none).
    #[inline]
    pub const fn st(&self) -> i64 {
        self.st
    }

    /// Reads the ST field (if any) of sample `index`, whose timestamp is `t`
    /// and whose predecessor's is `prev_t` (ignored for sample 0), and
    /// returns the sample's ST. Nothing is consumed from `r` on error.
    #[inline]
    pub fn decode(
        &mut self,
        r: &mut BitReader<'_>,
        index: u16,
        t: i64,
        prev_t: i64,
    ) -> Result<i64, StReadError> {
        if !self.header.has_field(index) {
            return Ok(self.st);
        }
        if index == 0 {
            let mut peek = r.clone();
            let diff = peek.read_varint()?.ok_or(StReadError::VarintOverflow)?;
            *r = peek;
            self.st = t.wrapping_sub(diff);
        } else {
            let x = read_varbit_int(r)?;
            self.diff = if index == u16::from(self.header.first_change_on) {
                x
            } else {
                self.diff.wrapping_add(x)
            };
            self.st = prev_t.wrapping_sub(self.diff);
        }
        Ok(self.st)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bstream::BitWriter;

    #[test]
    fn header_byte_round_trips() {
        for b in 0..=255u8 {
            assert_eq!(StHeader::from_byte(b).to_byte(), b);
        }
        let h = StHeader::from_byte(0x85);
        assert!(h.first_known && h.first_change_on == 5);
        assert!(h.has_field(0) && !h.has_field(4) && h.has_field(5) && h.has_field(900));
        assert!(!StHeader::from_byte(0).has_field(0));
    }

    /// Encodes (index, t, st) triples as a chunk would (with a filler bit
    /// per sample standing for its data) and decodes them back.
    fn round_trip(samples: &[(i64, i64)]) -> (Vec<u8>, u8) {
        let mut buf = Vec::new();
        let mut free = 0;
        let mut header = 0;
        let mut enc = StEncoder::new();
        let mut w = BitWriter::new(&mut buf, &mut free);
        let mut prev_t = 0;
        for (i, &(t, st)) in samples.iter().enumerate() {
            w.write_bits(1, 1);
            header |= enc.encode(&mut w, i as u16, t, prev_t, st);
            prev_t = t;
        }
        let mut dec = StDecoder::new(header);
        let mut r = BitReader::new(&buf);
        let mut prev_t = 0;
        for (i, &(t, st)) in samples.iter().enumerate() {
            assert_eq!(r.read_bit(), Ok(true));
            assert_eq!(
                dec.decode(&mut r, i as u16, t, prev_t),
                Ok(st),
                "sample {i}"
            );
            prev_t = t;
        }
        assert_eq!(r.remaining(), usize::from(free));
        let resumed = StEncoder::resume(&dec, samples.len() as u16);
        assert_eq!(resumed, Some(enc));
        (buf, header)
    }

    #[test]
    fn no_st_costs_nothing_up_to_sample_127() {
        let samples: Vec<(i64, i64)> = (0..127).map(|i| (i * 10, 0)).collect();
        let (buf, header) = round_trip(&samples);
        assert_eq!((buf.len(), header), (16, 0));
        // Sample 127 records ST 0 as `t_126 - 0` and later samples the
        // timestamp delta's change.
        let samples: Vec<(i64, i64)> = (0..130).map(|i| (i * 10, 0)).collect();
        let (_, header) = round_trip(&samples);
        assert_eq!(header, 127);
    }

    #[test]
    fn st_patterns_round_trip() {
        round_trip(&[(1000, 900)]);
        round_trip(&[
            (1000, 1000),
            (2000, 1000),
            (3000, 2500),
            (4000, 0),
            (5000, 0),
        ]);
        round_trip(&[(5, i64::MIN), (i64::MIN, i64::MAX), (0, 1), (-1, 0)]);
        let changing: Vec<(i64, i64)> = (0..300).map(|i| (i * 15, i * 15 - 1 - i % 7)).collect();
        let (_, header) = round_trip(&changing);
        assert_eq!(header, FIRST_ST_KNOWN | 1);
        let late: Vec<(i64, i64)> = (0..200)
            .map(|i| (i * 15, if i < 60 { 7 } else { 900 }))
            .collect();
        let (_, header) = round_trip(&late);
        assert_eq!(header, FIRST_ST_KNOWN | 60);
    }

    #[test]
    fn resume_rejects_headers_the_encoder_cannot_continue() {
        let dec = |b: u8| StDecoder::new(b);
        assert!(StEncoder::resume(&dec(0), 0).is_some());
        assert!(StEncoder::resume(&dec(0x80), 0).is_none());
        assert!(StEncoder::resume(&dec(0x01), 0).is_none());
        assert!(StEncoder::resume(&dec(0), 127).is_some());
        assert!(StEncoder::resume(&dec(0), 128).is_none());
        assert!(StEncoder::resume(&dec(5), 5).is_none());
        assert!(StEncoder::resume(&dec(5), 6).is_some());
        assert!(StEncoder::resume(&dec(0x80), 1).is_some());
    }
}
