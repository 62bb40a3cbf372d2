//! The `tombstones` file of a block: time ranges deleted per series.
//!
//! # Format (version 1)
//!
//! ```text
//! magic u32 BE = 0x0130BA30
//! version u8 = 1
//! entries, back to back, one per interval:
//!     series ref uvarint64 | mint varint64 (zigzag) | maxt varint64 (zigzag)
//! crc32c u32 BE of the entries — NOT of the version byte
//! ```
//!
//! Intervals are closed, `[mint, maxt]`, in milliseconds. Prometheus' own
//! format document still describes an older layout (a stones-section offset
//! in the last 8 bytes, padding to 4 bytes); neither exists in v1 files.
//! There is no count: entries run until the CRC. A block without deletions
//! usually has a file with no entries (9 bytes); a missing file means the
//! same.
//!
//! # Reading
//!
//! Checked in this order: at least 5 bytes; the magic; the CRC over the
//! bytes between the version byte and the last four; the version; every
//! entry decodes completely (a uvarint of at most 10 bytes whose 10th byte
//! is 0 or 1, as Go's `binary.Uvarint` requires). Each entry is then added
//! with [`Intervals::add`], in file order, so overlapping or unsorted
//! entries come out merged, exactly as Prometheus reads them. (A 5- to
//! 8-byte file whose magic is right but which has no version byte makes
//! Prometheus v3.9.1 panic; here it is an error.)
//!
//! # Writing
//!
//! Series in ascending ref order, each series' intervals in their (sorted)
//! order — Prometheus iterates a Go map, so its order varies from run to
//! run; ours is deterministic, and byte-identical to Prometheus' whenever
//! Prometheus happens to iterate in ref order. The file is replaced
//! atomically (`tombstones.tmp`, fsync, rename, fsync of the directory).

use std::collections::BTreeMap;
use std::io;
use std::path::{Path, PathBuf};

use thiserror::Error;

use crate::fsutil;

/// File name of the tombstones inside a block directory.
pub const TOMBSTONES_FILENAME: &str = "tombstones";
/// First four bytes of a tombstones file (big-endian).
pub const MAGIC_TOMBSTONE: u32 = 0x0130_BA30;
/// The only tombstones format version.
pub const TOMBSTONES_FORMAT_V1: u8 = 1;
const HEADER_SIZE: usize = 5;
const CRC_SIZE: usize = 4;

/// Errors reading or writing a tombstones file.
#[derive(Debug, Error)]
pub enum TombstonesError {
    #[error("{op} {path:?}: {source}")]
    Io {
        op: &'static str,
        path: PathBuf,
        source: io::Error,
    },
    #[error("tombstones header: invalid size ({0} bytes)")]
    TooShort(usize),
    #[error("invalid magic number {0:x}")]
    BadMagic(u32),
    #[error("tombstones file has no format version byte")]
    MissingVersion,
    #[error("checksum did not match: stored {stored:x}, computed {computed:x}")]
    Checksum { stored: u32, computed: u32 },
    #[error("invalid tombstone format {0:x}")]
    BadVersion(u8),
    #[error("tombstone entry at offset {0}: invalid size")]
    BadEntry(usize),
}

/// A closed time interval `[mint, maxt]` in milliseconds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Interval {
    pub mint: i64,
    pub maxt: i64,
}

impl Interval {
    pub fn new(mint: i64, maxt: i64) -> Interval {
        Interval { mint, maxt }
    }

    /// Whether `t` lies in the interval.
    pub fn in_bounds(&self, t: i64) -> bool {
        self.mint <= t && t <= self.maxt
    }

    /// Whether one interval of `ivs` contains all of this one.
    pub fn is_subrange(&self, ivs: &Intervals) -> bool {
        ivs.iter()
            .any(|r| r.in_bounds(self.mint) && r.in_bounds(self.maxt))
    }
}

/// Sorted, non-overlapping, non-adjacent intervals, kept so by [`add`](Self::add).
#[derive(Debug, Clone, PartialEq, Eq, Default, Hash)]
pub struct Intervals(Vec<Interval>);

impl Intervals {
    pub fn new() -> Intervals {
        Intervals(Vec::new())
    }

    /// Adds `n`, merging it with every interval it overlaps or touches
    /// (times are whole milliseconds, so `[1,3]` and `[4,6]` become `[1,6]`).
    ///
    /// This reproduces Prometheus' `Intervals.Add` exactly, including what it
    /// does with an interval whose `mint > maxt`: find the first interval
    /// ending at or after `mint - 1` (or take the first one when `mint` is
    /// `i64::MIN`); if there is none, append. Among the intervals from there
    /// on, count those starting at or before `maxt + 1` (all of them when
    /// `maxt` is `i64::MAX`); if none, insert `n` before them. Otherwise
    /// the first of them absorbs `n` and the rest of them. Both searches are
    /// bisections with Go's `sort.Search` midpoints, so that even lists that
    /// are not sorted (after adding such inverted intervals) evolve the same.
    ///
    /// One deliberate difference: when `maxt` is `i64::MAX` and `n` does not
    /// start at or before the first interval, Prometheus v3.9.1 indexes past
    /// the end of its slice and panics; here `n` absorbs every interval from
    /// the first one it reaches to the end, which is what the merge means.
    pub fn add(&mut self, n: Interval) {
        let v = &mut self.0;
        if v.is_empty() {
            v.push(n);
            return;
        }
        let lo = if n.mint == i64::MIN {
            0
        } else {
            let lo = search(v.len(), |i| v[i].maxt >= n.mint - 1);
            if lo == v.len() {
                v.push(n);
                return;
            }
            lo
        };
        let count = if n.maxt == i64::MAX {
            v.len() - lo
        } else {
            let k = search(v.len() - lo, |i| v[lo + i].mint > n.maxt + 1);
            if k == 0 {
                v.insert(lo, n);
                return;
            }
            k
        };
        let last_maxt = v[lo + count - 1].maxt;
        let first = &mut v[lo];
        first.mint = first.mint.min(n.mint);
        first.maxt = n.maxt.max(last_maxt);
        v.drain(lo + 1..lo + count);
    }

    /// Whether `t` is in one of the intervals.
    pub fn is_deleted(&self, t: i64) -> bool {
        self.0.iter().any(|iv| iv.in_bounds(t))
    }

    pub fn iter(&self) -> std::slice::Iter<'_, Interval> {
        self.0.iter()
    }

    pub fn as_slice(&self) -> &[Interval] {
        &self.0
    }

    pub fn len(&self) -> usize {
        self.0.len()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl<'a> IntoIterator for &'a Intervals {
    type Item = &'a Interval;
    type IntoIter = std::slice::Iter<'a, Interval>;
    fn into_iter(self) -> Self::IntoIter {
        self.0.iter()
    }
}

impl FromIterator<Interval> for Intervals {
    /// Adds each interval in turn.
    fn from_iter<I: IntoIterator<Item = Interval>>(iter: I) -> Self {
        let mut ivs = Intervals::new();
        for iv in iter {
            ivs.add(iv);
        }
        ivs
    }
}

/// The smallest `i` in `0..n` for which `pred(i)` holds (`n` if none),
/// assuming `pred` turns from false to true once; bisects at `(lo+hi)/2`
/// like Go's `sort.Search`.
fn search(n: usize, pred: impl Fn(usize) -> bool) -> usize {
    let (mut lo, mut hi) = (0, n);
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        if pred(mid) {
            hi = mid;
        } else {
            lo = mid + 1;
        }
    }
    lo
}

/// Deleted intervals per series ref, iterated in ref order.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Tombstones {
    by_ref: BTreeMap<u64, Intervals>,
}

impl Tombstones {
    pub fn new() -> Tombstones {
        Tombstones::default()
    }

    /// Adds `iv` to the intervals of `series_ref`, merging as [`Intervals::add`].
    pub fn add_interval(&mut self, series_ref: u64, iv: Interval) {
        self.by_ref.entry(series_ref).or_default().add(iv);
    }

    /// The intervals of a series, if it has any.
    pub fn get(&self, series_ref: u64) -> Option<&Intervals> {
        self.by_ref.get(&series_ref)
    }

    /// Whether sample time `t` of the series is deleted.
    pub fn is_deleted(&self, series_ref: u64, t: i64) -> bool {
        self.get(series_ref).is_some_and(|ivs| ivs.is_deleted(t))
    }

    /// Series and their intervals in ascending ref order.
    pub fn iter(&self) -> impl Iterator<Item = (u64, &Intervals)> + '_ {
        self.by_ref.iter().map(|(r, ivs)| (*r, ivs))
    }

    /// Number of series with intervals.
    pub fn num_series(&self) -> usize {
        self.by_ref.len()
    }

    /// Number of intervals over all series (Prometheus' `Total`, the
    /// `numTombstones` of meta.json).
    pub fn total(&self) -> u64 {
        self.by_ref.values().map(|ivs| ivs.len() as u64).sum()
    }

    pub fn is_empty(&self) -> bool {
        self.by_ref.is_empty()
    }

    /// Forgets the given series.
    pub fn delete_series(&mut self, refs: impl IntoIterator<Item = u64>) {
        for r in refs {
            self.by_ref.remove(&r);
        }
    }

    /// Drops, for every series, the intervals that end before `before_t`
    /// (keeping everything from the last one that does not), and series
    /// left without intervals — Prometheus' `TruncateBefore`.
    pub fn truncate_before(&mut self, before_t: i64) {
        self.by_ref.retain(|_, ivs| {
            let keep_from = ivs
                .0
                .iter()
                .rposition(|iv| before_t > iv.maxt)
                .map_or(0, |i| i + 1);
            ivs.0.drain(..keep_from);
            !ivs.0.is_empty()
        });
    }

    /// The whole file: header, entries in ref order, CRC.
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(HEADER_SIZE + CRC_SIZE + 8 * self.total() as usize);
        out.extend_from_slice(&MAGIC_TOMBSTONE.to_be_bytes());
        out.push(TOMBSTONES_FORMAT_V1);
        for (r, ivs) in self.iter() {
            for iv in ivs {
                put_uvarint(&mut out, r);
                put_uvarint(&mut out, zigzag(iv.mint));
                put_uvarint(&mut out, zigzag(iv.maxt));
            }
        }
        let crc = crc32c::crc32c(&out[HEADER_SIZE..]);
        out.extend_from_slice(&crc.to_be_bytes());
        out
    }

    /// Parses a whole file with Prometheus' rules (module docs).
    pub fn decode(b: &[u8]) -> Result<Tombstones, TombstonesError> {
        if b.len() < HEADER_SIZE {
            return Err(TombstonesError::TooShort(b.len()));
        }
        let (body, sum) = b.split_at(b.len() - CRC_SIZE);
        let Some(magic) = body.get(..4) else {
            return Err(TombstonesError::TooShort(b.len()));
        };
        let magic = u32::from_be_bytes([magic[0], magic[1], magic[2], magic[3]]);
        if magic != MAGIC_TOMBSTONE {
            return Err(TombstonesError::BadMagic(magic));
        }
        let Some((&version, entries)) = body[4..].split_first() else {
            return Err(TombstonesError::MissingVersion);
        };
        let stored = u32::from_be_bytes([sum[0], sum[1], sum[2], sum[3]]);
        let computed = crc32c::crc32c(entries);
        if stored != computed {
            return Err(TombstonesError::Checksum { stored, computed });
        }
        if version != TOMBSTONES_FORMAT_V1 {
            return Err(TombstonesError::BadVersion(version));
        }
        let mut t = Tombstones::new();
        let mut pos = 0;
        while pos < entries.len() {
            let start = pos;
            let mut next = || {
                let (v, n) = uvarint(&entries[pos..])?;
                pos += n;
                Some(v)
            };
            let (Some(r), Some(mint), Some(maxt)) = (next(), next(), next()) else {
                return Err(TombstonesError::BadEntry(HEADER_SIZE + start));
            };
            t.add_interval(r, Interval::new(unzigzag(mint), unzigzag(maxt)));
        }
        Ok(t)
    }
}

/// Reads `<block_dir>/tombstones`; a missing file is no tombstones.
pub fn read_tombstones(block_dir: &Path) -> Result<Tombstones, TombstonesError> {
    let path = block_dir.join(TOMBSTONES_FILENAME);
    match std::fs::read(&path) {
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(Tombstones::new()),
        Err(source) => Err(TombstonesError::Io {
            op: "read",
            path,
            source,
        }),
        Ok(b) => Tombstones::decode(&b),
    }
}

/// Reads a tombstones file by path (it must exist).
pub fn read_tombstones_file(path: &Path) -> Result<Tombstones, TombstonesError> {
    let b = std::fs::read(path).map_err(|source| TombstonesError::Io {
        op: "read",
        path: path.to_path_buf(),
        source,
    })?;
    Tombstones::decode(&b)
}

/// Writes `<block_dir>/tombstones` atomically; returns its size.
pub fn write_tombstones(block_dir: &Path, t: &Tombstones) -> Result<u64, TombstonesError> {
    write_tombstones_file(&block_dir.join(TOMBSTONES_FILENAME), t)
}

/// Writes a tombstones file by path (via `<path>.tmp`); returns its size.
pub fn write_tombstones_file(path: &Path, t: &Tombstones) -> Result<u64, TombstonesError> {
    let b = t.encode();
    fsutil::write_atomic(path, &b).map_err(|source| TombstonesError::Io {
        op: "write",
        path: path.to_path_buf(),
        source,
    })?;
    Ok(b.len() as u64)
}

fn put_uvarint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push(v as u8 | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

fn zigzag(v: i64) -> u64 {
    ((v << 1) ^ (v >> 63)) as u64
}

fn unzigzag(u: u64) -> i64 {
    ((u >> 1) as i64) ^ -((u & 1) as i64)
}

/// Go's `binary.Uvarint`: at most 10 bytes, the 10th at most 1; `None` if
/// the buffer ends first or the value overflows.
fn uvarint(b: &[u8]) -> Option<(u64, usize)> {
    let mut x = 0u64;
    for (i, &byte) in b.iter().enumerate().take(10) {
        if byte < 0x80 {
            if i == 9 && byte > 1 {
                return None;
            }
            return Some((x | u64::from(byte) << (7 * i), i + 1));
        }
        x |= u64::from(byte & 0x7f) << (7 * i);
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ivs(v: &[(i64, i64)]) -> Vec<Interval> {
        v.iter().map(|&(a, b)| Interval::new(a, b)).collect()
    }

    #[test]
    fn add_merges_overlapping_and_adjacent() {
        type Case<'a> = (&'a [(i64, i64)], (i64, i64), &'a [(i64, i64)]);
        let cases: &[Case] = &[
            (&[], (1, 2), &[(1, 2)]),
            (&[(1, 2)], (3, 4), &[(1, 4)]),
            (&[(1, 2)], (4, 5), &[(1, 2), (4, 5)]),
            (&[(4, 5)], (1, 2), &[(1, 2), (4, 5)]),
            (&[(4, 5)], (1, 3), &[(1, 5)]),
            (&[(1, 2), (5, 6), (9, 10)], (3, 8), &[(1, 10)]),
            (
                &[(1, 2), (5, 6), (12, 13)],
                (4, 7),
                &[(1, 2), (4, 7), (12, 13)],
            ),
            (&[(1, 2), (5, 6)], (8, 9), &[(1, 2), (5, 6), (8, 9)]),
            (&[(5, 6)], (i64::MIN, 3), &[(i64::MIN, 3), (5, 6)]),
            (&[(5, 6)], (i64::MIN, 4), &[(i64::MIN, 6)]),
            (&[(1, 2), (5, 6)], (4, i64::MAX), &[(1, 2), (4, i64::MAX)]),
            (
                &[(1, 2), (5, 6)],
                (i64::MIN, i64::MAX),
                &[(i64::MIN, i64::MAX)],
            ),
            (&[(i64::MIN, 0)], (i64::MIN, 0), &[(i64::MIN, 0)]),
            (&[(10, i64::MAX)], (1, 5), &[(1, 5), (10, i64::MAX)]),
        ];
        for (before, n, after) in cases {
            let mut v = Intervals(ivs(before));
            v.add(Interval::new(n.0, n.1));
            assert_eq!(v.as_slice(), ivs(after).as_slice(), "{before:?} + {n:?}");
        }
    }

    #[test]
    fn deleted_lookup() {
        let v: Intervals = ivs(&[(10, 20), (30, 40)]).into_iter().collect();
        assert!(v.is_deleted(10) && v.is_deleted(20) && v.is_deleted(35));
        assert!(!v.is_deleted(9) && !v.is_deleted(25) && !v.is_deleted(41));
        assert!(Interval::new(12, 18).is_subrange(&v));
        assert!(!Interval::new(12, 32).is_subrange(&v));
    }

    #[test]
    fn empty_file_is_nine_bytes() {
        let b = Tombstones::new().encode();
        assert_eq!(b, [0x01, 0x30, 0xBA, 0x30, 1, 0, 0, 0, 0]);
        assert!(Tombstones::decode(&b).unwrap().is_empty());
    }

    #[test]
    fn round_trip_and_layout() {
        let mut t = Tombstones::new();
        t.add_interval(300, Interval::new(-1, 1));
        t.add_interval(2, Interval::new(5, 10));
        t.add_interval(2, Interval::new(0, 1));
        let b = t.encode();
        // ref 2: [0,1], [5,10]; ref 300 (uvarint ac 02): [-1,1].
        assert_eq!(&b[5..b.len() - 4], &[2, 0, 2, 2, 10, 20, 0xac, 0x02, 1, 2]);
        let crc = crc32c::crc32c(&b[5..b.len() - 4]);
        assert_eq!(&b[b.len() - 4..], crc.to_be_bytes());
        assert_eq!(Tombstones::decode(&b).unwrap(), t);
        assert_eq!(t.total(), 3);
    }

    #[test]
    fn decode_merges_like_add() {
        // Entries [5,10] then [0,4] then [11,12] for one ref merge to [0,12].
        let mut body = vec![];
        for (a, b) in [(5, 10), (0, 4), (11, 12)] {
            put_uvarint(&mut body, 7);
            put_uvarint(&mut body, zigzag(a));
            put_uvarint(&mut body, zigzag(b));
        }
        let mut f = MAGIC_TOMBSTONE.to_be_bytes().to_vec();
        f.push(1);
        f.extend_from_slice(&body);
        f.extend_from_slice(&crc32c::crc32c(&body).to_be_bytes());
        let t = Tombstones::decode(&f).unwrap();
        assert_eq!(t.get(7).unwrap().as_slice(), &[Interval::new(0, 12)]);
    }

    #[test]
    fn decode_errors() {
        let good = {
            let mut t = Tombstones::new();
            t.add_interval(1, Interval::new(1, 2));
            t.encode()
        };
        assert!(matches!(
            Tombstones::decode(&good[..4]),
            Err(TombstonesError::TooShort(4))
        ));
        assert!(matches!(
            Tombstones::decode(&good[..8]),
            Err(TombstonesError::MissingVersion)
        ));
        let mut bad = good.clone();
        bad[0] = 0;
        assert!(matches!(
            Tombstones::decode(&bad),
            Err(TombstonesError::BadMagic(_))
        ));
        let mut bad = good.clone();
        bad[6] ^= 0xff;
        assert!(matches!(
            Tombstones::decode(&bad),
            Err(TombstonesError::Checksum { .. })
        ));
        // The version byte is outside the CRC.
        let mut bad = good.clone();
        bad[4] = 2;
        assert!(matches!(
            Tombstones::decode(&bad),
            Err(TombstonesError::BadVersion(2))
        ));
        // A truncated entry with a matching CRC.
        let body = [1u8, 2];
        let mut f = MAGIC_TOMBSTONE.to_be_bytes().to_vec();
        f.push(1);
        f.extend_from_slice(&body);
        f.extend_from_slice(&crc32c::crc32c(&body).to_be_bytes());
        assert!(matches!(
            Tombstones::decode(&f),
            Err(TombstonesError::BadEntry(5))
        ));
    }

    #[test]
    fn go_uvarint_limits() {
        let max = [0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01];
        assert_eq!(uvarint(&max), Some((u64::MAX, 10)));
        let over = [0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02];
        assert_eq!(uvarint(&over), None);
        assert_eq!(uvarint(&[0x80; 11]), None);
        // Non-canonical but accepted, as in Go.
        assert_eq!(uvarint(&[0x80, 0x00]), Some((0, 2)));
        for v in [i64::MIN, -1, 0, 1, i64::MAX] {
            assert_eq!(unzigzag(zigzag(v)), v);
        }
    }

    #[test]
    fn truncate_before() {
        let mut t = Tombstones::new();
        t.add_interval(1, Interval::new(0, 10));
        t.add_interval(1, Interval::new(20, 30));
        t.add_interval(2, Interval::new(0, 5));
        t.truncate_before(15);
        assert_eq!(t.get(1).unwrap().as_slice(), &[Interval::new(20, 30)]);
        assert!(t.get(2).is_none());
    }

    #[test]
    fn file_io() {
        let dir = tempfile::tempdir().unwrap();
        assert!(read_tombstones(dir.path()).unwrap().is_empty());
        let mut t = Tombstones::new();
        t.add_interval(9, Interval::new(-5, 5));
        let n = write_tombstones(dir.path(), &t).unwrap();
        assert_eq!(
            n,
            std::fs::metadata(dir.path().join("tombstones"))
                .unwrap()
                .len()
        );
        assert!(!dir.path().join("tombstones.tmp").exists());
        assert_eq!(read_tombstones(dir.path()).unwrap(), t);
    }
}
