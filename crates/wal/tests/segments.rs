//! Segment layer: writer/reader round trips, rotation, the exact page
//! layout, corruption detection and repair.

use std::fs::{self, OpenOptions};
use std::path::Path;

use ferrite_wal::{
    list_segments, repair, segment_path, split_segments, stitch, Compression, Corruption, RangeEnd,
    RecordReader, SegmentRange, SegmentRef, WalError, WalOptions, WalWriter, PAGE_SIZE,
};
use proptest::prelude::*;
use rand::{Rng, SeedableRng};

const MAX_FRAGMENT: usize = PAGE_SIZE - 7;
const COMPRESSIONS: [Compression; 3] = [Compression::None, Compression::Snappy, Compression::Zstd];

fn opts(segment_size: usize, compression: Compression) -> WalOptions {
    WalOptions {
        segment_size,
        compression,
        fsync_on_flush: false,
    }
}

/// Sample-record-like bytes: compress well but not trivially.
fn compressible(len: usize, seed: u64) -> Vec<u8> {
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    let mut out = Vec::with_capacity(len);
    while out.len() < len {
        out.extend_from_slice(b"series_ref=");
        out.extend_from_slice(&rng.gen_range(0u32..1000).to_le_bytes());
    }
    out.truncate(len);
    out
}

fn random(len: usize, seed: u64) -> Vec<u8> {
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    (0..len).map(|_| rng.gen()).collect()
}

/// Reads everything; returns the records and how the read ended.
fn read_dir(dir: &Path) -> (Vec<Vec<u8>>, Result<(), WalError>) {
    let mut reader = RecordReader::open_dir(dir).unwrap();
    let mut out = Vec::new();
    loop {
        match reader.next_record() {
            Ok(Some(rec)) => out.push(rec.to_vec()),
            Ok(None) => return (out, Ok(())),
            Err(e) => return (out, Err(e)),
        }
    }
}

/// Reads everything as parallel replay does: in ranges of `range_size`
/// bytes, one reader each, stitched in order.
fn read_split(dir: &Path, range_size: u64) -> (Vec<Vec<u8>>, Result<(), WalError>) {
    let segs = list_segments(dir).unwrap();
    let mut out = Vec::new();
    let mut prev: Option<(SegmentRange, RangeEnd)> = None;
    for range in split_segments(&segs, range_size).unwrap() {
        let mut reader = range.reader();
        let mut records = Vec::new();
        let result = loop {
            match reader.next_record() {
                Ok(Some(rec)) => records.push(rec.to_vec()),
                Ok(None) => break Ok(()),
                Err(WalError::Corruption(c)) => break Err(c),
                Err(e) => return (out, Err(e)),
            }
        };
        let mut end = RangeEnd::of(&reader, records.len() as u64, result);
        if let Some((p, pe)) = &prev {
            if let Some(c) = stitch(p, pe, &range, &mut end) {
                return (out, Err(WalError::Corruption(c)));
            }
        }
        out.extend(records);
        if let Some(c) = end.corruption.clone() {
            return (out, Err(WalError::Corruption(c)));
        }
        prev = Some((range, end));
    }
    (out, Ok(()))
}

fn same_end(a: &Result<(), WalError>, b: &Result<(), WalError>) -> bool {
    match (a, b) {
        (Ok(()), Ok(())) => true,
        (Err(WalError::Corruption(x)), Err(WalError::Corruption(y))) => x == y,
        _ => false,
    }
}

fn read_clean(dir: &Path) -> Vec<Vec<u8>> {
    let (records, end) = read_dir(dir);
    end.unwrap();
    records
}

fn write_all(dir: &Path, opts: WalOptions, records: &[Vec<u8>], close: bool) {
    let mut w = WalWriter::open(dir, opts).unwrap();
    for rec in records {
        w.log(&[rec]).unwrap();
    }
    if close {
        w.close().unwrap();
    }
}

fn expect_corruption(dir: &Path) -> (Vec<Vec<u8>>, Corruption) {
    match read_dir(dir) {
        (records, Err(WalError::Corruption(c))) => (records, c),
        (records, other) => panic!(
            "expected corruption after {} records, got {other:?}",
            records.len()
        ),
    }
}

/// Offsets of the bytes the format does not checksum: fragment type bytes,
/// and the first byte of padding with room for a header (setting it to 1
/// makes a valid empty record, since the CRC of nothing is 0).
fn unchecksummed_offsets(seg: &[u8]) -> Vec<usize> {
    let mut out = Vec::new();
    let mut pos = 0;
    while pos < seg.len() {
        let page_left = PAGE_SIZE - pos % PAGE_SIZE;
        if seg[pos] == 0 {
            if page_left >= 7 {
                out.push(pos);
            }
            pos += page_left;
            continue;
        }
        out.push(pos);
        let Some(len) = seg.get(pos + 1..pos + 3) else {
            break;
        };
        pos += 7 + u16::from_be_bytes([len[0], len[1]]) as usize;
    }
    out
}

#[test]
fn round_trip_edge_sizes_all_compressions() {
    let sizes = [
        0,
        1,
        6,
        7,
        8,
        MAX_FRAGMENT - 7,
        MAX_FRAGMENT - 1,
        MAX_FRAGMENT,
        MAX_FRAGMENT + 1,
        PAGE_SIZE,
        3 * PAGE_SIZE + 5,
        // Larger than the 128 KiB segments below: gets a segment of its own.
        300_000,
        0,
    ];
    for compression in COMPRESSIONS {
        for make in [random as fn(usize, u64) -> Vec<u8>, compressible] {
            let tmp = tempfile::tempdir().unwrap();
            let records: Vec<Vec<u8>> = sizes.iter().map(|&n| make(n, n as u64)).collect();
            write_all(tmp.path(), opts(128 * 1024, compression), &records, true);
            assert_eq!(read_clean(tmp.path()), records, "{compression}");
        }
    }
}

#[test]
fn record_filling_a_page_exactly() {
    let tmp = tempfile::tempdir().unwrap();
    let rec = random(MAX_FRAGMENT, 1);
    let mut w = WalWriter::open(tmp.path(), opts(1 << 20, Compression::None)).unwrap();
    w.log(&[&rec]).unwrap();
    assert_eq!(w.position(), PAGE_SIZE as u64);
    w.log(&[b"next"]).unwrap();
    drop(w);
    let seg = fs::read(segment_path(tmp.path(), 0)).unwrap();
    assert_eq!(seg.len(), PAGE_SIZE + 7 + 4);
    assert_eq!(seg[0], 1, "full fragment");
    assert_eq!(seg[PAGE_SIZE], 1, "next record starts the next page");
    assert_eq!(read_clean(tmp.path()), vec![rec, b"next".to_vec()]);
}

#[test]
fn page_with_room_for_only_a_header_gets_an_empty_first_fragment() {
    let tmp = tempfile::tempdir().unwrap();
    let mut w = WalWriter::open(tmp.path(), opts(1 << 20, Compression::None)).unwrap();
    let a = random(MAX_FRAGMENT - 7, 1); // leaves exactly 7 bytes in the page
    let b = random(100, 2);
    w.log(&[&a, &b, b""]).unwrap();
    w.close().unwrap();
    let seg = fs::read(segment_path(tmp.path(), 0)).unwrap();
    let first = PAGE_SIZE - 7;
    assert_eq!(
        &seg[first..first + 3],
        &[2, 0, 0],
        "zero-length first fragment"
    );
    assert_eq!(seg[PAGE_SIZE], 4, "last fragment on the next page");
    assert_eq!(seg.len(), 2 * PAGE_SIZE, "close pads the last page");
    assert_eq!(read_clean(tmp.path()), vec![a, b, Vec::new()]);
}

#[test]
fn page_tail_smaller_than_a_header_is_padded() {
    let tmp = tempfile::tempdir().unwrap();
    let mut w = WalWriter::open(tmp.path(), opts(1 << 20, Compression::None)).unwrap();
    let a = random(MAX_FRAGMENT - 3, 1); // leaves 3 bytes
    w.log(&[&a]).unwrap();
    assert_eq!(w.position(), PAGE_SIZE as u64, "3-byte tail padded at once");
    w.log(&[b"x"]).unwrap();
    drop(w);
    let seg = fs::read(segment_path(tmp.path(), 0)).unwrap();
    assert_eq!(&seg[PAGE_SIZE - 3..PAGE_SIZE], &[0, 0, 0]);
    assert_eq!(read_clean(tmp.path()), vec![a, b"x".to_vec()]);
}

#[test]
fn incompressible_records_are_stored_uncompressed() {
    for compression in [Compression::Snappy, Compression::Zstd] {
        let tmp = tempfile::tempdir().unwrap();
        let records = vec![random(1000, 1), compressible(1000, 2)];
        write_all(tmp.path(), opts(1 << 20, compression), &records, false);
        let seg = fs::read(segment_path(tmp.path(), 0)).unwrap();
        assert_eq!(seg[0], 1, "random record stored plain");
        let second = 7 + 1000;
        let flag = if compression == Compression::Snappy {
            0x08
        } else {
            0x10
        };
        assert_eq!(seg[second], 1 | flag, "compressible record compressed");
        assert_eq!(read_clean(tmp.path()), records);
    }
}

#[test]
fn rotation_keeps_records_within_segments() {
    let tmp = tempfile::tempdir().unwrap();
    let segment_size = 64 * 1024;
    let records: Vec<Vec<u8>> = (0..60).map(|i| random(1000 + i * 137, i as u64)).collect();
    let mut w = WalWriter::open(tmp.path(), opts(segment_size, Compression::None)).unwrap();
    for chunk in records.chunks(4) {
        let batch: Vec<&[u8]> = chunk.iter().map(|r| r.as_slice()).collect();
        w.log(&batch).unwrap();
    }
    let last = w.current_segment();
    w.close().unwrap();

    let segments = list_segments(tmp.path()).unwrap();
    assert_eq!(segments.len() as u32, last + 1);
    assert!(segments.len() > 3);
    for s in &segments {
        let len = fs::metadata(&s.path).unwrap().len() as usize;
        assert!(
            len <= segment_size && (len / PAGE_SIZE) * PAGE_SIZE == len,
            "segment {} is {len} bytes",
            s.index
        );
    }
    // Each record lies in one segment; positions are increasing.
    let mut reader = RecordReader::new(segments);
    let mut prev = (0, 0);
    let mut n = 0;
    while let Some(len) = reader.next_record().unwrap().map(|r| r.len()) {
        let here = (reader.segment(), reader.offset());
        assert!(n == 0 || here > prev);
        assert!(here.1 as usize + len <= segment_size);
        prev = here;
        n += 1;
    }
    assert_eq!(n, records.len());
}

#[test]
fn oversized_record_rotates_like_prometheus() {
    // Prometheus starts a new segment even when the current one is empty,
    // then writes the record into it regardless of the segment size.
    let tmp = tempfile::tempdir().unwrap();
    let big = random(100_000, 1);
    let mut w = WalWriter::open(tmp.path(), opts(32 * 1024, Compression::None)).unwrap();
    w.log(&[&big]).unwrap();
    assert_eq!(w.current_segment(), 1);
    w.log(&[b"small"]).unwrap();
    assert_eq!(
        w.current_segment(),
        2,
        "an overrun segment takes no more records"
    );
    w.close().unwrap();
    let lens: Vec<u64> = list_segments(tmp.path())
        .unwrap()
        .iter()
        .map(|s| fs::metadata(&s.path).unwrap().len())
        .collect();
    assert_eq!(lens, vec![0, 4 * PAGE_SIZE as u64, PAGE_SIZE as u64]);
    assert_eq!(read_clean(tmp.path()), vec![big, b"small".to_vec()]);
}

#[test]
fn reopen_starts_a_new_segment() {
    let tmp = tempfile::tempdir().unwrap();
    let first = vec![random(10, 1), random(50_000, 2)];
    let second = vec![random(20, 3)];
    write_all(tmp.path(), opts(1 << 20, Compression::Snappy), &first, true);
    let mut w = WalWriter::open(tmp.path(), opts(1 << 20, Compression::Snappy)).unwrap();
    assert_eq!(w.current_segment(), 1);
    w.log(&[&second[0]]).unwrap();
    w.close().unwrap();
    assert_eq!(read_clean(tmp.path()), [first, second].concat());
}

#[test]
fn writer_dropped_without_close_leaves_a_readable_unpadded_segment() {
    let tmp = tempfile::tempdir().unwrap();
    let records = vec![random(10, 1), random(40_000, 2)];
    write_all(
        tmp.path(),
        opts(1 << 20, Compression::Zstd),
        &records,
        false,
    );
    let len = fs::metadata(segment_path(tmp.path(), 0)).unwrap().len();
    assert_ne!(len % PAGE_SIZE as u64, 0);
    // A restart appends to a new segment; the unpadded one still reads.
    write_all(tmp.path(), opts(1 << 20, Compression::Zstd), &records, true);
    assert_eq!(read_clean(tmp.path()), [records.clone(), records].concat());
}

#[test]
fn next_segment_pads_and_advances() {
    let tmp = tempfile::tempdir().unwrap();
    let mut w = WalWriter::open(tmp.path(), WalOptions::default()).unwrap();
    w.log(&[b"a"]).unwrap();
    assert_eq!(w.next_segment().unwrap(), 1);
    assert_eq!(w.current_segment(), 1);
    assert_eq!(
        w.next_segment().unwrap(),
        2,
        "an empty segment is left as is"
    );
    w.log(&[b"b"]).unwrap();
    w.sync().unwrap();
    assert_eq!(w.dir(), tmp.path());
    w.close().unwrap();
    let lens: Vec<u64> = list_segments(tmp.path())
        .unwrap()
        .iter()
        .map(|s| fs::metadata(&s.path).unwrap().len())
        .collect();
    assert_eq!(lens, vec![PAGE_SIZE as u64, 0, PAGE_SIZE as u64]);
    assert_eq!(read_clean(tmp.path()), vec![b"a".to_vec(), b"b".to_vec()]);
}

#[test]
fn truncate_deletes_older_segments_only() {
    let tmp = tempfile::tempdir().unwrap();
    let mut w = WalWriter::open(tmp.path(), WalOptions::default()).unwrap();
    for i in 0..4u8 {
        w.log(&[&[i]]).unwrap();
        w.next_segment().unwrap();
    }
    w.truncate(2).unwrap();
    let left: Vec<u32> = list_segments(tmp.path())
        .unwrap()
        .iter()
        .map(|s| s.index)
        .collect();
    assert_eq!(left, vec![2, 3, 4]);
    w.truncate(100).unwrap();
    let left: Vec<u32> = list_segments(tmp.path())
        .unwrap()
        .iter()
        .map(|s| s.index)
        .collect();
    assert_eq!(left, vec![4], "the active segment survives");
    w.log(&[b"z"]).unwrap();
    w.close().unwrap();
    assert_eq!(read_clean(tmp.path()), vec![b"z".to_vec()]);
}

#[test]
fn list_segments_rules() {
    let tmp = tempfile::tempdir().unwrap();
    assert!(list_segments(&tmp.path().join("missing"))
        .unwrap()
        .is_empty());
    for name in [
        "00000003",
        "00000004",
        "00000005",
        "checkpoint.00000002",
        "00000004.repair",
        "0000006",
        "lock",
    ] {
        fs::write(tmp.path().join(name), b"").unwrap();
    }
    fs::create_dir(tmp.path().join("checkpoint.00000001")).unwrap();
    let segs = list_segments(tmp.path()).unwrap();
    assert_eq!(
        segs,
        (3..=5)
            .map(|i| SegmentRef {
                index: i,
                path: segment_path(tmp.path(), i)
            })
            .collect::<Vec<_>>()
    );
    fs::write(tmp.path().join("00000007"), b"").unwrap();
    assert!(matches!(
        list_segments(tmp.path()),
        Err(WalError::NonSequentialSegments {
            before: 5,
            after: 7,
            ..
        })
    ));
    assert!(WalWriter::open(tmp.path(), WalOptions::default()).is_err());
}

#[test]
fn invalid_segment_sizes_are_rejected() {
    let tmp = tempfile::tempdir().unwrap();
    for size in [0, 1000, PAGE_SIZE + 1] {
        assert!(matches!(
            WalWriter::open(tmp.path(), opts(size, Compression::None)),
            Err(WalError::InvalidSegmentSize(_))
        ));
    }
}

#[test]
fn empty_wal_and_empty_segments_read_cleanly() {
    let tmp = tempfile::tempdir().unwrap();
    assert!(read_clean(tmp.path()).is_empty());
    WalWriter::open(tmp.path(), WalOptions::default())
        .unwrap()
        .close()
        .unwrap();
    assert!(read_clean(tmp.path()).is_empty());
    assert!(RecordReader::from_bytes(Vec::new())
        .next_record()
        .unwrap()
        .is_none());
}

// ---------------------------------------------------------------------------
// Clean ends and torn tails.

fn truncate_file(path: &Path, len: u64) {
    OpenOptions::new()
        .write(true)
        .open(path)
        .unwrap()
        .set_len(len)
        .unwrap();
}

#[test]
fn eof_at_a_record_boundary_is_a_clean_end() {
    let tmp = tempfile::tempdir().unwrap();
    let records = vec![random(100, 1), random(50_000, 2), random(10, 3)];
    write_all(tmp.path(), opts(1 << 20, Compression::None), &records, true);
    let seg = segment_path(tmp.path(), 0);
    // Right after record 1 (which ends on page 1).
    let end_of_second = 7 + 100 + 7 + (PAGE_SIZE - 7 - 107) + 7 + (50_000 - (PAGE_SIZE - 7 - 107));
    truncate_file(&seg, end_of_second as u64);
    assert_eq!(read_clean(tmp.path()), records[..2]);
}

#[test]
fn eof_inside_padding_is_a_clean_end() {
    let tmp = tempfile::tempdir().unwrap();
    let records = vec![random(100, 1)];
    write_all(tmp.path(), opts(1 << 20, Compression::None), &records, true);
    truncate_file(&segment_path(tmp.path(), 0), 5000);
    assert_eq!(read_clean(tmp.path()), records);
}

#[test]
fn record_torn_at_the_end_is_corruption_at_its_start() {
    let tmp = tempfile::tempdir().unwrap();
    let records = vec![random(100, 1), random(70_000, 2)];
    write_all(tmp.path(), opts(1 << 20, Compression::None), &records, true);
    let seg = segment_path(tmp.path(), 0);
    for cut in [
        108,
        110,
        120,
        5000,
        PAGE_SIZE as u64,
        2 * PAGE_SIZE as u64 + 1,
    ] {
        let data = fs::read(&seg).unwrap();
        truncate_file(&seg, cut);
        let (got, c) = expect_corruption(tmp.path());
        assert_eq!(got, records[..1]);
        assert_eq!(
            (c.segment, c.offset),
            (0, 107),
            "cut at {cut}: {}",
            c.reason
        );
        fs::write(&seg, data).unwrap();
    }
}

#[test]
fn record_torn_at_the_end_of_an_earlier_segment_is_corruption_there() {
    let tmp = tempfile::tempdir().unwrap();
    let records = vec![random(100, 1), random(70_000, 2)];
    write_all(tmp.path(), opts(1 << 20, Compression::None), &records, true);
    write_all(tmp.path(), opts(1 << 20, Compression::None), &records, true);
    truncate_file(&segment_path(tmp.path(), 0), 40_000);
    let (got, c) = expect_corruption(tmp.path());
    assert_eq!(got, records[..1]);
    assert_eq!((c.segment, c.offset), (0, 107));
}

// ---------------------------------------------------------------------------
// Detected corruption, one kind at a time, on a hand-checked layout:
// segment 0 = [full 100 @0][first @107 .. page end][last @32768][pad].

fn damaged(edit: impl FnOnce(&mut Vec<u8>)) -> (Vec<Vec<u8>>, Vec<Vec<u8>>, Corruption) {
    let tmp = tempfile::tempdir().unwrap();
    let records = vec![random(100, 1), random(40_000, 2), random(10, 3)];
    write_all(tmp.path(), opts(1 << 20, Compression::None), &records, true);
    let path = segment_path(tmp.path(), 0);
    let mut data = fs::read(&path).unwrap();
    edit(&mut data);
    fs::write(&path, data).unwrap();
    let (got, c) = expect_corruption(tmp.path());
    (records, got, c)
}

fn set_header(data: &mut [u8], at: usize, typ: u8, payload: &[u8]) {
    data[at] = typ;
    data[at + 1..at + 3].copy_from_slice(&(payload.len() as u16).to_be_bytes());
    data[at + 3..at + 7].copy_from_slice(&crc32c::crc32c(payload).to_be_bytes());
    data[at + 7..at + 7 + payload.len()].copy_from_slice(payload);
}

#[test]
fn detects_each_kind_of_damage() {
    type Edit = Box<dyn FnOnce(&mut Vec<u8>)>;
    let cases: Vec<(&str, Edit, usize, u64)> = vec![
        ("bad crc", Box::new(|d| d[50] ^= 1), 0, 0),
        (
            "crc in a middle fragment",
            Box::new(|d| d[PAGE_SIZE + 100] ^= 0x80),
            1,
            107,
        ),
        ("invalid type", Box::new(|d| d[0] = 5), 0, 0),
        ("reserved bits", Box::new(|d| d[0] = 0x21), 0, 0),
        ("both compressions", Box::new(|d| d[0] = 0x19), 0, 0),
        ("padding type with flags", Box::new(|d| d[0] = 0x08), 0, 0),
        (
            "first fragment type on the last",
            Box::new(|d| d[PAGE_SIZE] = 2),
            1,
            107,
        ),
        (
            "full inside a record",
            Box::new(|d| d[PAGE_SIZE] = 1),
            1,
            107,
        ),
        ("last without first", Box::new(|d| d[107] = 4), 1, 107),
        (
            "flags differ",
            Box::new(|d| d[PAGE_SIZE] = 4 | 0x08),
            1,
            107,
        ),
        (
            "zeroed second page",
            Box::new(|d| d[PAGE_SIZE..2 * PAGE_SIZE].fill(0)),
            1,
            107,
        ),
        (
            "non-zero padding",
            Box::new(|d| {
                let end = PAGE_SIZE + 7 + (40_000 - (PAGE_SIZE - 114)) + 17;
                d[end + 100] = 1;
            }),
            3,
            (PAGE_SIZE + 7 + (40_000 - (PAGE_SIZE - 114)) + 17) as u64,
        ),
        (
            "fragment crossing a page",
            Box::new(|d| d[1..3].copy_from_slice(&((PAGE_SIZE - 6) as u16).to_be_bytes())),
            0,
            0,
        ),
        (
            "first fragment not filling its page",
            Box::new(|d| set_header(d, 107, 2, b"abc")),
            1,
            107,
        ),
        (
            "record after end-of-segment padding",
            Box::new(|d| {
                let mut extra = vec![0u8; PAGE_SIZE];
                set_header(&mut extra, 0, 1, b"zombie");
                d.extend_from_slice(&extra);
            }),
            3,
            (PAGE_SIZE + 7 + (40_000 - (PAGE_SIZE - 114)) + 17) as u64,
        ),
    ];
    for (name, edit, good, offset) in cases {
        let (records, got, c) = damaged(edit);
        assert_eq!(got, records[..good], "{name}");
        assert_eq!((c.segment, c.offset), (0, offset), "{name}: {}", c.reason);
    }
}

#[test]
fn detects_undecodable_compressed_records() {
    for flag in [0x08u8, 0x10] {
        let mut seg = vec![0u8; 64];
        set_header(&mut seg, 0, 1 | flag, &[0xff; 20]);
        let mut r = RecordReader::from_bytes(seg);
        let err = r.next_record().unwrap_err();
        let c = err.as_corruption().expect("corruption");
        assert_eq!((c.segment, c.offset), (0, 0));
        // Sticky: the same error again.
        assert_eq!(r.next_record().unwrap_err().as_corruption(), Some(c));
    }
}

#[test]
fn records_over_the_limit_are_corruption() {
    let tmp = tempfile::tempdir().unwrap();
    for compression in COMPRESSIONS {
        let _ = fs::remove_dir_all(tmp.path());
        let records = vec![compressible(1000, 1), compressible(100_000, 2)];
        write_all(tmp.path(), opts(1 << 20, compression), &records, true);
        let mut r = RecordReader::open_dir(tmp.path())
            .unwrap()
            .with_max_record_size(50_000);
        assert_eq!(r.next_record().unwrap().unwrap(), &records[0][..]);
        let err = r.next_record().unwrap_err();
        assert!(err.as_corruption().is_some(), "{compression}: {err}");
    }
}

#[test]
fn start_offset_skips_into_the_first_segment() {
    let tmp = tempfile::tempdir().unwrap();
    let records: Vec<Vec<u8>> = (0..20).map(|i| random(3000 * i, i as u64)).collect();
    let mut w = WalWriter::open(tmp.path(), opts(1 << 20, Compression::Snappy)).unwrap();
    let mut offsets = Vec::new();
    for rec in &records {
        offsets.push(w.position());
        w.log(&[rec]).unwrap();
    }
    w.close().unwrap();
    for k in [0, 1, 7, 19] {
        let segs = list_segments(tmp.path()).unwrap();
        let mut r = RecordReader::with_start_offset(segs, offsets[k]);
        let mut got = Vec::new();
        while let Some(rec) = r.next_record().unwrap() {
            got.push(rec.to_vec());
        }
        assert_eq!(got, records[k..], "from record {k}");
    }
}

// ---------------------------------------------------------------------------
// Repair.

#[test]
fn repair_keeps_the_records_before_the_corruption_and_allows_appending() {
    let tmp = tempfile::tempdir().unwrap();
    let records: Vec<Vec<u8>> = (0..40)
        .map(|i| match i % 2 {
            0 => compressible(500 * i, i as u64),
            _ => random(500 * i, i as u64),
        })
        .collect();
    write_all(
        tmp.path(),
        opts(64 * 1024, Compression::Snappy),
        &records,
        true,
    );
    let segs = list_segments(tmp.path()).unwrap();
    assert!(segs.len() >= 3);
    // Damage the middle segment.
    let mid = &segs[segs.len() / 2];
    let mut data = fs::read(&mid.path).unwrap();
    let at = unchecksummed_offsets(&data)[1] + 9;
    data[at] ^= 0x40;
    fs::write(&mid.path, data).unwrap();

    let (good, c) = expect_corruption(tmp.path());
    assert_eq!(c.segment, mid.index);
    assert_eq!(good, records[..good.len()]);
    repair(tmp.path(), &c).unwrap();
    assert_eq!(
        list_segments(tmp.path()).unwrap().last().unwrap().index,
        mid.index
    );
    assert_eq!(read_clean(tmp.path()), good);

    let more = vec![random(5, 1), random(90_000, 2)];
    write_all(
        tmp.path(),
        opts(64 * 1024, Compression::Snappy),
        &more,
        true,
    );
    assert_eq!(read_clean(tmp.path()), [good, more].concat());
}

#[test]
fn repair_rejects_bad_positions() {
    let tmp = tempfile::tempdir().unwrap();
    write_all(tmp.path(), WalOptions::default(), &[random(10, 1)], false);
    let c = |segment, offset| Corruption {
        segment,
        offset,
        reason: "test".into(),
    };
    assert!(matches!(
        repair(tmp.path(), &c(5, 0)),
        Err(WalError::RepairSegmentMissing(5))
    ));
    assert!(matches!(
        repair(tmp.path(), &c(0, 1_000_000)),
        Err(WalError::RepairOffsetOutOfRange { .. })
    ));
    // Offset 0 empties the segment but keeps it.
    repair(tmp.path(), &c(0, 0)).unwrap();
    assert!(read_clean(tmp.path()).is_empty());
}

// ---------------------------------------------------------------------------
// Properties.

fn record_strategy() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        4 => proptest::collection::vec(any::<u8>(), 0..200),
        2 => (0usize..40_000, any::<u64>()).prop_map(|(n, s)| compressible(n, s)),
        1 => (0usize..100_000, any::<u64>()).prop_map(|(n, s)| random(n, s)),
    ]
}

fn options_strategy() -> impl Strategy<Value = WalOptions> {
    (
        prop_oneof![
            Just(Compression::None),
            Just(Compression::Snappy),
            Just(Compression::Zstd)
        ],
        prop_oneof![Just(PAGE_SIZE), Just(2 * PAGE_SIZE), Just(4 * PAGE_SIZE)],
    )
        .prop_map(|(compression, segment_size)| opts(segment_size, compression))
}

#[derive(Clone, Debug)]
enum Damage {
    /// Flip bit `bit` of the byte at `at` (scaled into the segment).
    Flip { seg: usize, at: usize, bit: u8 },
    /// Cut the last segment to `at` (scaled).
    TruncateLast { at: usize },
    /// Zero page `page` (scaled) of a segment, except the final page of a
    /// segment followed by others.
    ZeroPage { seg: usize, page: usize },
    /// Append garbage to a segment.
    Append { seg: usize, bytes: Vec<u8> },
}

fn damage_strategy() -> impl Strategy<Value = Damage> {
    prop_oneof![
        (any::<usize>(), any::<usize>(), 0u8..8).prop_map(|(seg, at, bit)| Damage::Flip {
            seg,
            at,
            bit
        }),
        any::<usize>().prop_map(|at| Damage::TruncateLast { at }),
        (any::<usize>(), any::<usize>()).prop_map(|(seg, page)| Damage::ZeroPage { seg, page }),
        (
            any::<usize>(),
            proptest::collection::vec(any::<u8>(), 1..300)
        )
            .prop_map(|(seg, bytes)| Damage::Append { seg, bytes }),
    ]
}

/// Applies `damage`; returns false if it hit a byte the format does not
/// checksum (a flipped compression flag can turn a record into a different
/// valid one; Prometheus has the same blind spot).
fn apply(segs: &[SegmentRef], damage: &Damage) -> bool {
    let n = segs.len();
    match damage {
        Damage::Flip { seg, at, bit } => {
            let path = &segs[seg % n].path;
            let mut data = fs::read(path).unwrap();
            if data.is_empty() {
                return true;
            }
            let at = at % data.len();
            let checked = !unchecksummed_offsets(&data).contains(&at);
            data[at] ^= 1 << bit;
            fs::write(path, data).unwrap();
            checked
        }
        Damage::TruncateLast { at } => {
            let path = &segs[n - 1].path;
            let len = fs::metadata(path).unwrap().len() as usize;
            truncate_file(path, (at % (len + 1)) as u64);
            true
        }
        Damage::ZeroPage { seg, page } => {
            let i = seg % n;
            let mut data = fs::read(&segs[i].path).unwrap();
            let pages = data.len().div_ceil(PAGE_SIZE);
            // Zeroing the final page of a non-final segment is indistinguishable
            // from a crash that lost that page before a restart.
            let usable = if i + 1 < n {
                pages.saturating_sub(1)
            } else {
                pages
            };
            if usable == 0 {
                return true;
            }
            let p = page % usable;
            let end = ((p + 1) * PAGE_SIZE).min(data.len());
            data[p * PAGE_SIZE..end].fill(0);
            fs::write(&segs[i].path, data).unwrap();
            true
        }
        Damage::Append { seg, bytes } => {
            let path = &segs[seg % n].path;
            let mut data = fs::read(path).unwrap();
            data.extend_from_slice(bytes);
            fs::write(path, data).unwrap();
            true
        }
    }
}

proptest! {
    // PROPTEST_CASES=n runs more cases.
    #![proptest_config(ProptestConfig {
        cases: std::env::var("PROPTEST_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(48),
        ..ProptestConfig::default()
    })]

    #[test]
    fn arbitrary_records_round_trip(
        records in proptest::collection::vec(record_strategy(), 0..40),
        opts in options_strategy(),
        batch in 1usize..5,
        close in any::<bool>(),
    ) {
        let tmp = tempfile::tempdir().unwrap();
        let mut w = WalWriter::open(tmp.path(), opts).unwrap();
        for chunk in records.chunks(batch) {
            let refs: Vec<&[u8]> = chunk.iter().map(|r| r.as_slice()).collect();
            w.log(&refs).unwrap();
        }
        if close { w.close().unwrap(); } else { drop(w); }
        prop_assert_eq!(&read_clean(tmp.path()), &records);
        for pages in 1..4 {
            let (split, end) = read_split(tmp.path(), pages * PAGE_SIZE as u64);
            prop_assert!(end.is_ok(), "{:?}", end);
            prop_assert_eq!(&split, &records);
        }
    }

    #[test]
    fn damage_yields_a_prefix_and_repair_restores_it(
        records in proptest::collection::vec(record_strategy(), 1..30),
        opts in options_strategy(),
        close in any::<bool>(),
        damages in proptest::collection::vec(damage_strategy(), 1..4),
    ) {
        let tmp = tempfile::tempdir().unwrap();
        write_all(tmp.path(), opts.clone(), &records, close);
        let segs = list_segments(tmp.path()).unwrap();
        let mut checked = true;
        for d in &damages {
            checked &= apply(&segs, d);
        }

        let (got, end) = read_dir(tmp.path());
        for pages in 1..4 {
            let (split, split_end) = read_split(tmp.path(), pages * PAGE_SIZE as u64);
            prop_assert_eq!(&split, &got, "range of {} pages", pages);
            prop_assert!(same_end(&split_end, &end), "range of {} pages: {:?} vs {:?}", pages, split_end, end);
        }
        if checked {
            prop_assert!(got.len() <= records.len());
            prop_assert_eq!(&got[..], &records[..got.len()]);
        }
        let kept = match end {
            Ok(()) => got,
            Err(WalError::Corruption(c)) => {
                repair(tmp.path(), &c).unwrap();
                let after = read_clean(tmp.path());
                prop_assert_eq!(&after, &got);
                after
            }
            Err(e) => panic!("unexpected error {e}"),
        };
        let more = vec![random(3, 1), compressible(50_000, 2)];
        write_all(tmp.path(), opts, &more, true);
        prop_assert_eq!(read_clean(tmp.path()), [kept, more].concat());
    }

    #[test]
    fn arbitrary_bytes_never_panic(data in proptest::collection::vec(any::<u8>(), 0..70_000)) {
        let mut r = RecordReader::from_bytes(data).with_max_record_size(1 << 20);
        while let Ok(Some(_)) = r.next_record() {}
    }

    #[test]
    fn mutated_segments_never_panic(
        records in proptest::collection::vec(record_strategy(), 1..10),
        compression in prop_oneof![Just(Compression::Snappy), Just(Compression::Zstd)],
        edits in proptest::collection::vec((any::<usize>(), any::<u8>()), 1..20),
    ) {
        let tmp = tempfile::tempdir().unwrap();
        write_all(tmp.path(), opts(1 << 20, compression), &records, false);
        let mut data = fs::read(segment_path(tmp.path(), 0)).unwrap();
        for (at, byte) in edits {
            let at = at % data.len();
            data[at] = byte;
        }
        let mut r = RecordReader::from_bytes(data).with_max_record_size(1 << 24);
        while let Ok(Some(_)) = r.next_record() {}
    }
}

/// Records compressed ahead (`log_prepared`, as the head's appenders log)
/// leave exactly the bytes `log` leaves, rotation included.
#[test]
fn prepared_records_write_the_same_bytes() {
    for compression in COMPRESSIONS {
        let (a, b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        let mut plain = WalWriter::open(a.path(), opts(2 * PAGE_SIZE, compression)).unwrap();
        let mut ahead = WalWriter::open(b.path(), opts(2 * PAGE_SIZE, compression)).unwrap();
        let mut prepared = ferrite_wal::PreparedRecords::new(compression).unwrap();
        assert_eq!(prepared.kind(), compression);
        for batch in 0..20u64 {
            let recs: Vec<Vec<u8>> = (0..3)
                .map(|i| match (batch + i) % 3 {
                    0 => compressible(100 + 9000 * i as usize, batch * 3 + i),
                    1 => random(50 + 7000 * i as usize, batch * 3 + i),
                    _ => Vec::new(),
                })
                .collect();
            let refs: Vec<&[u8]> = recs.iter().map(Vec::as_slice).collect();
            plain.log(&refs).unwrap();
            prepared.prepare(&refs).unwrap();
            ahead.log_prepared(&prepared).unwrap();
        }
        plain.close().unwrap();
        ahead.close().unwrap();
        let (sa, sb) = (
            list_segments(a.path()).unwrap(),
            list_segments(b.path()).unwrap(),
        );
        assert!(sa.len() > 1, "the batches rotate segments");
        assert_eq!(sa.len(), sb.len());
        for (x, y) in sa.iter().zip(&sb) {
            assert_eq!(fs::read(&x.path).unwrap(), fs::read(&y.path).unwrap());
        }
        assert_eq!(read_dir(a.path()).0, read_dir(b.path()).0);
    }
}
