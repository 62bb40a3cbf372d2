//! Byte layout of a head chunks file, with no I/O.
//!
//! Kept apart from the mapper so that the exact same parsing code serves
//! replay (`iterate_all_chunks`), single-chunk reads (`chunk`) and the fuzz
//! target, which feeds arbitrary bytes straight into [`scan_file_bytes`].
//!
//! File: `magic u32 BE = 0x0130BC91 | version u8 = 1 | 3 padding bytes`, then
//! chunks back to back:
//!
//! ```text
//! series ref u64 BE | mint i64 BE | maxt i64 BE | encoding u8 | len uvarint | data | crc32c u32 BE
//! ```
//!
//! The CRC-32 (Castagnoli) covers every byte of the chunk from the series
//! ref through the end of the data, i.e. including the encoding byte and
//! the length varint. The high bit of the encoding byte marks an
//! out-of-order chunk. Prometheus never checks the padding bytes, so
//! neither do we.

use std::ops::Range;

use super::{ChunkDiskMapperRef, DamageKind, MappedChunkMeta};
use crate::varint::{put_uvarint, uvarint_len};

/// First four bytes of every head chunks file (big-endian).
pub const MAGIC: u32 = 0x0130_BC91;
/// The only head chunks file format version.
pub const FORMAT_VERSION: u8 = 1;
/// Magic, version and padding.
pub const FILE_HEADER_SIZE: usize = 8;
/// Encoding-byte bit that marks an out-of-order chunk.
pub const OOO_ENCODING_MASK: u8 = 0x80;
/// Series ref, mint, maxt and encoding: the fixed-size part before the length.
const FIXED_PREFIX_SIZE: usize = 8 + 8 + 8 + 1;
/// Prometheus reads the data length from at most five bytes (a 32-bit uvarint).
const MAX_LEN_FIELD_SIZE: usize = 5;
const CRC_SIZE: usize = 4;
/// Largest per-chunk overhead (everything but the data).
pub const MAX_CHUNK_META_SIZE: usize = FIXED_PREFIX_SIZE + MAX_LEN_FIELD_SIZE + CRC_SIZE;

/// Bytes a chunk with `data_len` bytes of data occupies on disk.
pub fn chunk_disk_size(data_len: usize) -> u64 {
    (FIXED_PREFIX_SIZE + uvarint_len(data_len as u64) + data_len + CRC_SIZE) as u64
}

/// The 8-byte file header.
pub fn file_header() -> [u8; FILE_HEADER_SIZE] {
    let mut h = [0u8; FILE_HEADER_SIZE];
    h[..4].copy_from_slice(&MAGIC.to_be_bytes());
    h[4] = FORMAT_VERSION;
    h
}

/// Appends one encoded chunk to `out`. `encoding` is the byte as stored
/// (out-of-order bit included).
pub fn encode_chunk(
    out: &mut Vec<u8>,
    series_ref: u64,
    mint: i64,
    maxt: i64,
    encoding: u8,
    data: &[u8],
) {
    let start = out.len();
    out.reserve(MAX_CHUNK_META_SIZE + data.len());
    out.extend_from_slice(&series_ref.to_be_bytes());
    out.extend_from_slice(&mint.to_be_bytes());
    out.extend_from_slice(&maxt.to_be_bytes());
    out.push(encoding);
    put_uvarint(out, data.len() as u64);
    out.extend_from_slice(data);
    let crc = crc32c::crc32c(&out[start..]);
    out.extend_from_slice(&crc.to_be_bytes());
}

/// Checks the 8-byte file header.
pub fn check_header(bytes: &[u8]) -> Result<(), DamageKind> {
    let header = bytes
        .get(..FILE_HEADER_SIZE)
        .ok_or(DamageKind::HeaderTooShort {
            len: bytes.len() as u64,
        })?;
    let magic = u32::from_be_bytes([header[0], header[1], header[2], header[3]]);
    if magic != MAGIC {
        return Err(DamageKind::BadMagic(magic));
    }
    if header[4] != FORMAT_VERSION {
        return Err(DamageKind::BadVersion(header[4]));
    }
    Ok(())
}

/// One chunk as found in a byte slice.
#[derive(Debug, Clone)]
pub struct ParsedChunk {
    pub series_ref: u64,
    pub mint: i64,
    pub maxt: i64,
    /// The encoding byte as stored, out-of-order bit included.
    pub raw_encoding: u8,
    /// Where the data lies in the slice that was parsed.
    pub data: Range<usize>,
    /// Offset just past the CRC: where the next chunk starts.
    pub end: usize,
}

impl ParsedChunk {
    /// The replay view of this chunk.
    pub fn meta(&self, bytes: &[u8], chunk_ref: ChunkDiskMapperRef) -> MappedChunkMeta {
        // Every valid encoding starts its data with a big-endian u16 sample count.
        let num_samples = match bytes.get(self.data.start..self.data.end) {
            Some([a, b, ..]) => u16::from_be_bytes([*a, *b]),
            _ => 0,
        };
        MappedChunkMeta {
            series_ref: self.series_ref,
            mint: self.mint,
            maxt: self.maxt,
            encoding: self.raw_encoding & !OOO_ENCODING_MASK,
            is_ooo: self.raw_encoding & OOO_ENCODING_MASK != 0,
            num_samples,
            chunk_ref,
        }
    }
}

fn be_u64(bytes: &[u8], at: usize) -> Option<u64> {
    let b: [u8; 8] = bytes.get(at..at.checked_add(8)?)?.try_into().ok()?;
    Some(u64::from_be_bytes(b))
}

/// Parses and verifies (bounds, length, CRC, encoding) the chunk starting
/// at `start`. Never reads outside `bytes`.
pub fn parse_chunk(bytes: &[u8], start: usize) -> Result<ParsedChunk, DamageKind> {
    let available = bytes.len().saturating_sub(start) as u64;
    let truncated = |needed: usize| DamageKind::Truncated {
        needed: needed as u64,
        available,
    };
    let (Some(series_ref), Some(mint), Some(maxt), Some(&raw_encoding)) = (
        be_u64(bytes, start),
        be_u64(bytes, start.saturating_add(8)),
        be_u64(bytes, start.saturating_add(16)),
        bytes.get(start.saturating_add(24)),
    ) else {
        return Err(truncated(FIXED_PREFIX_SIZE));
    };

    // Data length: a uvarint of at most five bytes.
    let len_start = start + FIXED_PREFIX_SIZE;
    let mut data_len: u64 = 0;
    let mut len_size = 0;
    loop {
        let Some(&b) = bytes.get(len_start + len_size) else {
            return Err(truncated(FIXED_PREFIX_SIZE + len_size + 1));
        };
        data_len |= u64::from(b & 0x7f) << (7 * len_size);
        len_size += 1;
        if b & 0x80 == 0 {
            break;
        }
        if len_size == MAX_LEN_FIELD_SIZE {
            return Err(DamageKind::BadLength);
        }
    }

    let data_start = len_start + len_size;
    let needed = usize::try_from(data_len)
        .ok()
        .and_then(|l| (FIXED_PREFIX_SIZE + len_size + CRC_SIZE).checked_add(l))
        .ok_or(DamageKind::BadLength)?;
    let end = start.checked_add(needed).ok_or(DamageKind::BadLength)?;
    if end > bytes.len() {
        return Err(truncated(needed));
    }
    let data_end = end - CRC_SIZE;
    let stored = u32::from_be_bytes([
        bytes[data_end],
        bytes[data_end + 1],
        bytes[data_end + 2],
        bytes[data_end + 3],
    ]);
    let computed = crc32c::crc32c(&bytes[start..data_end]);
    if stored != computed {
        return Err(DamageKind::BadCrc { stored, computed });
    }
    // The checksum covers the encoding byte: a byte Ferrite does not
    // know here was written as such (by a newer Prometheus), so the chunk
    // is reported, not treated as damage, and its reader decides (replay
    // refuses anything but in-order XOR as unsupported).
    Ok(ParsedChunk {
        series_ref,
        mint: mint as i64,
        maxt: maxt as i64,
        raw_encoding,
        data: data_start..data_end,
        end,
    })
}

/// Outcome of scanning one file's bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileScan {
    /// Valid chunks found (and reported).
    pub chunks: u64,
    /// Offset just past the last valid chunk (0 if the header is bad):
    /// where the file would be cut if it is damaged.
    pub valid_end: u64,
    /// The first damage, found at `valid_end`; `None` if the file ends cleanly.
    pub damage: Option<DamageKind>,
}

/// Scans a whole head chunks file held in memory: checks the header, then
/// reports every chunk to `f` in order, stopping at the first damage.
///
/// A file ends cleanly at its last byte or where only zero bytes remain
/// (Prometheus preallocates files, so their tails are zeros). Anything else
/// that does not parse as a valid chunk is damage; nothing after it is
/// reported. `seq` only goes into the chunk refs. Never panics.
pub fn scan_file_bytes(seq: u32, bytes: &[u8], f: &mut dyn FnMut(MappedChunkMeta)) -> FileScan {
    let mut scan = FileScan {
        chunks: 0,
        valid_end: 0,
        damage: None,
    };
    if let Err(kind) = check_header(bytes) {
        scan.damage = Some(kind);
        return scan;
    }
    let mut pos = FILE_HEADER_SIZE;
    while pos < bytes.len() {
        scan.valid_end = pos as u64;
        let parsed = parse_chunk(bytes, pos);
        let chunk = match parsed {
            Ok(chunk) => chunk,
            // Only checked on failure, so a file is walked once.
            Err(_) if bytes[pos..].iter().all(|&b| b == 0) => return scan,
            Err(kind) => {
                scan.damage = Some(kind);
                return scan;
            }
        };
        let Ok(offset) = u32::try_from(pos) else {
            scan.damage = Some(DamageKind::OffsetOverflow);
            return scan;
        };
        f(chunk.meta(bytes, ChunkDiskMapperRef::new(seq, offset)));
        scan.chunks += 1;
        pos = chunk.end;
    }
    scan.valid_end = pos as u64;
    scan
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file_with(chunks: &[(u64, i64, i64, u8, &[u8])]) -> Vec<u8> {
        let mut b = file_header().to_vec();
        for &(s, mint, maxt, enc, data) in chunks {
            encode_chunk(&mut b, s, mint, maxt, enc, data);
        }
        b
    }

    fn collect(bytes: &[u8]) -> (Vec<MappedChunkMeta>, FileScan) {
        let mut metas = Vec::new();
        let scan = scan_file_bytes(3, bytes, &mut |m| metas.push(m));
        (metas, scan)
    }

    #[test]
    fn header_layout() {
        assert_eq!(file_header(), [0x01, 0x30, 0xBC, 0x91, 1, 0, 0, 0]);
    }

    #[test]
    fn encode_layout_and_size() {
        let data = vec![0xAB; 200];
        let mut out = Vec::new();
        encode_chunk(&mut out, 7, -1, 2, 0x81, &data);
        assert_eq!(out.len() as u64, chunk_disk_size(200));
        assert_eq!(&out[..8], &7u64.to_be_bytes());
        assert_eq!(&out[8..16], &(-1i64).to_be_bytes());
        assert_eq!(out[24], 0x81);
        // 200 = 0xC8 0x01 as a uvarint.
        assert_eq!(&out[25..27], &[0xC8, 0x01]);
        let crc = crc32c::crc32c(&out[..out.len() - 4]);
        assert_eq!(&out[out.len() - 4..], &crc.to_be_bytes());
    }

    #[test]
    fn scan_reports_chunks_and_meta() {
        let f = file_with(&[(1, 10, 20, 1, &[0, 5, 9]), (2, 30, 40, 0x82, &[1, 2])]);
        let (m, scan) = collect(&f);
        assert_eq!(scan.damage, None);
        assert_eq!(scan.chunks, 2);
        assert_eq!(scan.valid_end, f.len() as u64);
        assert_eq!(m[0].num_samples, 5);
        assert_eq!(m[0].chunk_ref, ChunkDiskMapperRef::new(3, 8));
        assert_eq!(
            (m[1].encoding, m[1].is_ooo, m[1].num_samples),
            (2, true, 258)
        );
    }

    #[test]
    fn trailing_zeros_are_a_clean_end() {
        let mut f = file_with(&[(1, 10, 20, 1, &[0, 1])]);
        let end = f.len() as u64;
        f.extend_from_slice(&[0; 100]);
        let (m, scan) = collect(&f);
        assert_eq!((m.len(), scan.valid_end, scan.damage), (1, end, None));
        // A few zeros, fewer than a chunk header, too.
        f.truncate(end as usize + 3);
        assert_eq!(collect(&f).1.damage, None);
    }

    #[test]
    fn damage_kinds() {
        let good = file_with(&[(1, 10, 20, 1, &[0, 1, 2, 3]), (2, 10, 20, 1, &[0, 1])]);
        let second = 8 + chunk_disk_size(4) as usize;

        let mut flipped = good.clone();
        flipped[second + 26] ^= 0x40;
        let (m, scan) = collect(&flipped);
        assert_eq!(m.len(), 1);
        assert_eq!(scan.valid_end, second as u64);
        assert!(matches!(scan.damage, Some(DamageKind::BadCrc { .. })));

        let (m, scan) = collect(&good[..good.len() - 1]);
        assert_eq!(m.len(), 1);
        assert!(matches!(scan.damage, Some(DamageKind::Truncated { .. })));

        // A valid chunk of any encoding byte (even one no Prometheus
        // writes) is not damage: it is reported.
        let new_enc = file_with(&[(1, 10, 20, 5, &[0, 1]), (2, 10, 20, 0x7f, &[0, 1])]);
        let (m, scan) = collect(&new_enc);
        assert_eq!(scan.damage, None);
        assert_eq!(
            m.iter().map(|m| (m.encoding, m.is_ooo)).collect::<Vec<_>>(),
            [(5, false), (0x7f, false)]
        );

        let mut long_len = good.clone();
        long_len[8 + 25..8 + 30].fill(0xFF);
        assert_eq!(collect(&long_len).1.damage, Some(DamageKind::BadLength));

        let mut bad_magic = good.clone();
        bad_magic[0] = 9;
        let (m, scan) = collect(&bad_magic);
        assert!(m.is_empty());
        assert_eq!(scan.valid_end, 0);
        assert!(matches!(scan.damage, Some(DamageKind::BadMagic(_))));

        let mut bad_version = good.clone();
        bad_version[4] = 2;
        assert_eq!(
            collect(&bad_version).1.damage,
            Some(DamageKind::BadVersion(2))
        );
        assert_eq!(
            collect(&good[..5]).1.damage,
            Some(DamageKind::HeaderTooShort { len: 5 })
        );

        // Zeros followed by data are damage, not a clean end.
        let mut zero_hole = good.clone();
        zero_hole[8..second].fill(0);
        let (m, scan) = collect(&zero_hole);
        assert!(m.is_empty());
        assert_eq!(scan.valid_end, 8);
        assert!(scan.damage.is_some());
    }

    #[test]
    fn huge_length_does_not_overflow() {
        let mut f = file_header().to_vec();
        f.extend_from_slice(&[1; 25]);
        f.extend_from_slice(&[0xFF, 0xFF, 0xFF, 0xFF, 0x7F]);
        f.extend_from_slice(&[0; 10]);
        assert!(matches!(
            collect(&f).1.damage,
            Some(DamageKind::Truncated { .. })
        ));
    }
}
