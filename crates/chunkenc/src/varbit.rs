//! Varbit integers: Prometheus' variable-width integer fields of the
//! histogram chunk encodings.
//!
//! A value is a unary size class followed by that many payload bits:
//!
//! | prefix     | payload | signed range               | unsigned range |
//! |------------|---------|----------------------------|----------------|
//! | `0`        | 0       | 0                          | 0              |
//! | `10`       | 3       | -3 ..= 4                   | 0 ..= 7        |
//! | `110`      | 6       | -31 ..= 32                 | 0 ..= 63       |
//! | `1110`     | 9       | -255 ..= 256               | 0 ..= 511      |
//! | `11110`    | 12      | -2047 ..= 2048             | 0 ..= 4095     |
//! | `111110`   | 18      | -131071 ..= 131072         | 0 ..= 2^18-1   |
//! | `1111110`  | 25      | -(2^24-1) ..= 2^24         | 0 ..= 2^25-1   |
//! | `11111110` | 56      | -(2^55-1) ..= 2^55         | 0 ..= 2^56-1   |
//! | `11111111` | 64      | everything else            | everything else|
//!
//! The writer picks the narrowest class that holds the value (the signed
//! ranges are lopsided as in the XOR chunk's dod fields: the reader takes
//! the top value of a class as positive). Signed payloads are the low bits
//! of the two's complement. The reader accepts any payload of any class,
//! including values a narrower class would have held.

#![deny(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing,
    missing_docs
)]

use crate::bstream::{BitReader, BitSink, EndOfStream};

/// Payload widths of the classes `10` .. `11111110`; `11111111` is 64.
const WIDTHS: [u32; 7] = [3, 6, 9, 12, 18, 25, 56];

/// Whether `v` is in the signed range of an `nbits` payload.
#[inline(always)]
const fn fits_signed(v: i64, nbits: u32) -> bool {
    let half = 1i64 << (nbits - 1);
    -(half - 1) <= v && v <= half
}

/// Writes `v` as a signed varbit integer (Prometheus' `putVarbitInt`).
///
/// The one implementation for every encoding (histogram fields, the start
/// timestamps of XOR2 and the ST histograms), generic over the sink so
/// that XOR2 can gather a sample's fields before writing them.
#[inline(always)]
pub fn write_varbit_int<W: BitSink>(w: &mut W, v: i64) {
    // A match on ranges rather than a loop over widths: XOR2 appends
    // call this per sample and the compiler turns it into a few compares.
    let (class, width) = match v {
        0 => return w.put_bits(0, 1),
        _ if fits_signed(v, 3) => (1, 3),
        _ if fits_signed(v, 6) => (2, 6),
        _ if fits_signed(v, 9) => (3, 9),
        _ if fits_signed(v, 12) => (4, 12),
        _ if fits_signed(v, 18) => (5, 18),
        _ if fits_signed(v, 25) => (6, 25),
        _ if fits_signed(v, 56) => (7, 56),
        _ => return write_widest(w, v as u64),
    };
    write_class(w, class, v as u64, width);
}

/// Writes `v` as an unsigned varbit integer (Prometheus' `putVarbitUint`).
#[inline]
pub fn write_varbit_uint<W: BitSink>(w: &mut W, v: u64) {
    if v == 0 {
        return w.put_bits(0, 1);
    }
    for (class, &width) in WIDTHS.iter().enumerate() {
        if v >> width == 0 {
            return write_class(w, class as u32 + 1, v, width);
        }
    }
    write_widest(w, v);
}

/// Writes `ones` one bits, a zero and the low `width` bits of `payload` in
/// one go (at most 8 + 56 = 64 bits).
#[inline(always)]
fn write_class<W: BitSink>(w: &mut W, ones: u32, payload: u64, width: u32) {
    // `ones` ones followed by a zero: (2^ones - 1) << 1.
    let prefix = ((1u64 << ones) - 1) << 1;
    let mask = (1u64 << width) - 1;
    w.put_bits(prefix << width | (payload & mask), ones + 1 + width);
}

/// The widest class: eight ones and all 64 bits.
#[cold]
fn write_widest<W: BitSink>(w: &mut W, v: u64) {
    w.put_bits(0xff, 8);
    w.put_bits(v, 64);
}

/// Reads a size class and its raw payload: `(width, bits)`. Nothing is
/// consumed on [`EndOfStream`].
#[inline(always)]
fn read_class(r: &mut BitReader<'_>) -> Result<(u32, u64), EndOfStream> {
    let mut peek = r.clone();
    let width = match peek.read_ones(8)? {
        0 => {
            *r = peek;
            return Ok((0, 0));
        }
        1 => 3,
        2 => 6,
        3 => 9,
        4 => 12,
        5 => 18,
        6 => 25,
        7 => 56,
        _ => 64,
    };
    let bits = peek.read_bits(width)?;
    *r = peek;
    Ok((width, bits))
}

/// Reads a signed varbit integer (Prometheus' `readVarbitInt`). Nothing is
/// consumed on [`EndOfStream`].
#[inline]
pub fn read_varbit_int(r: &mut BitReader<'_>) -> Result<i64, EndOfStream> {
    let (width, bits) = read_class(r)?;
    if width == 0 || width == 64 {
        return Ok(bits as i64);
    }
    // Payloads above half the class's span are negative (the lopsided
    // split of `fits_signed`).
    Ok(if bits > 1 << (width - 1) {
        bits.wrapping_sub(1 << width) as i64
    } else {
        bits as i64
    })
}

/// Reads an unsigned varbit integer (Prometheus' `readVarbitUint`).
/// Nothing is consumed on [`EndOfStream`].
#[inline]
pub fn read_varbit_uint(r: &mut BitReader<'_>) -> Result<u64, EndOfStream> {
    Ok(read_class(r)?.1)
}

#[cfg(test)]
#[allow(clippy::expect_used, clippy::indexing_slicing)]
mod tests {
    use super::*;
    use crate::bstream::BitWriter;

    fn written(f: impl FnOnce(&mut BitWriter<'_>)) -> Vec<u8> {
        let mut buf = Vec::new();
        let mut free = 0;
        f(&mut BitWriter::new(&mut buf, &mut free));
        buf
    }

    #[test]
    fn class_edges_round_trip() {
        let mut values = vec![0i64, i64::MIN, i64::MAX, -1, 1];
        for &w in &WIDTHS {
            let half = 1i64 << (w - 1);
            values.extend([half, half + 1, -(half - 1), -half]);
        }
        for v in values {
            let data = written(|w| {
                w.write_bits(0b101, 3);
                write_varbit_int(w, v);
                w.write_bits(1, 1);
            });
            let mut r = BitReader::new(&data);
            assert_eq!(r.read_bits(3), Ok(0b101));
            assert_eq!(read_varbit_int(&mut r), Ok(v), "{v}");
            assert_eq!(r.read_bit(), Ok(true));
        }
        let mut values = vec![0u64, 1, u64::MAX];
        for &w in &WIDTHS {
            values.extend([(1u64 << w) - 1, 1u64 << w]);
        }
        for v in values {
            let data = written(|w| write_varbit_uint(w, v));
            assert_eq!(read_varbit_uint(&mut BitReader::new(&data)), Ok(v), "{v}");
        }
    }

    #[test]
    fn layouts_match_prometheus() {
        // 0 is one zero bit.
        assert_eq!(written(|w| write_varbit_int(w, 0)), [0x00]);
        // 4 = `10` + 100; -3 = `10` + 101.
        assert_eq!(written(|w| write_varbit_int(w, 4)), [0b1010_0000]);
        assert_eq!(written(|w| write_varbit_int(w, -3)), [0b1010_1000]);
        // 5 needs the 6-bit class: `110` + 000101.
        assert_eq!(
            written(|w| write_varbit_int(w, 5)),
            [0b1100_0010, 0b1000_0000]
        );
        // Unsigned 7 still fits 3 bits, 8 does not.
        assert_eq!(written(|w| write_varbit_uint(w, 7)), [0b1011_1000]);
        assert_eq!(written(|w| write_varbit_uint(w, 8)), [0b1100_0100, 0]);
        // The widest class: 8 ones and 64 bits.
        let data = written(|w| write_varbit_int(w, i64::MIN));
        assert_eq!(data.len(), 9);
        assert_eq!(data[0], 0xff);
        assert_eq!(data[1], 0x80);
    }

    #[test]
    fn wide_payloads_decode_as_written() {
        // A 3-bit payload of 5 is above half the span: -3.
        let data = written(|w| w.write_bits(0b10_101, 5));
        assert_eq!(read_varbit_int(&mut BitReader::new(&data)), Ok(-3));
        assert_eq!(read_varbit_uint(&mut BitReader::new(&data)), Ok(5));
    }

    #[test]
    fn truncation_is_an_error() {
        assert_eq!(read_varbit_int(&mut BitReader::new(&[])), Err(EndOfStream));
        assert_eq!(
            read_varbit_int(&mut BitReader::new(&[0xff])),
            Err(EndOfStream)
        );
        assert_eq!(
            read_varbit_uint(&mut BitReader::new(&[0b1110_0000])),
            Err(EndOfStream)
        );
        // A failed read consumes nothing, prefix included.
        let data = written(|w| write_varbit_int(w, 1 << 40));
        let mut r = BitReader::new(&data[..data.len() - 1]);
        assert_eq!(read_varbit_int(&mut r), Err(EndOfStream));
        assert_eq!(r.bits_consumed(), 0);
        let mut r = BitReader::new(&[0xff, 0, 0]);
        assert_eq!(read_varbit_uint(&mut r), Err(EndOfStream));
        assert_eq!(r.bits_consumed(), 0);
    }

    #[test]
    fn signed_sizes_match_prometheus() {
        // (value, bits Prometheus' putVarbitInt writes)
        let cases: &[(i64, u64)] = &[
            (0, 1),
            (1, 5),
            (-3, 5),
            (4, 5),
            (-4, 9),
            (5, 9),
            (32, 9),
            (-31, 9),
            (33, 13),
            (-32, 13),
            (256, 13),
            (257, 17),
            (2048, 17),
            (2049, 24),
            (-2048, 24),
            (131072, 24),
            (131073, 32),
            (16777216, 32),
            (16777217, 64),
            (1 << 55, 64),
            ((1 << 55) + 1, 72),
            (-(1 << 55) + 1, 64),
            (-(1 << 55), 72),
            (i64::MAX, 72),
            (i64::MIN, 72),
        ];
        for &(x, bits) in cases {
            let data = written(|w| write_varbit_int(w, x));
            let mut r = BitReader::new(&data);
            assert_eq!(read_varbit_int(&mut r), Ok(x));
            assert_eq!(r.bits_consumed(), bits, "{x}");
            assert_eq!(data.len() as u64, bits.div_ceil(8), "{x}");
        }
    }
}
