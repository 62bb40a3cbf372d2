//! Unsigned varints (protobuf's and Go's `uvarint`: 7 bits a byte, low
//! first), as the head's chunk files and the wire form of label sets
//! write them.

/// Appends `x` as a minimal uvarint.
pub(crate) fn put_uvarint(out: &mut Vec<u8>, mut x: u64) {
    while x >= 0x80 {
        out.push((x as u8) | 0x80);
        x >>= 7;
    }
    out.push(x as u8);
}

/// The bytes [`put_uvarint`] writes for `x`.
pub(crate) fn uvarint_len(x: u64) -> usize {
    // 7 bits a byte, at least one byte.
    (u64::BITS - (x | 1).leading_zeros()).div_ceil(7) as usize
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uvarint_len_is_the_encoded_length() {
        for x in [0u64, 1, 127, 128, 255, 16383, 16384, 1 << 21, u64::MAX] {
            let mut out = Vec::new();
            put_uvarint(&mut out, x);
            assert_eq!(uvarint_len(x), out.len(), "{x}");
        }
    }
}
