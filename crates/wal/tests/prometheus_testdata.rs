//! Interoperability with WALs written by the real Prometheus v3.9.1.
//!
//! `testdata/prometheus/` holds WAL directories written by Prometheus' own
//! `wlog` package (see its README). We must read them back exactly, and for
//! uncompressed records our writer must produce the very same bytes.

use std::fs;
use std::path::{Path, PathBuf};

use ferrite_wal::{list_segments, Compression, RecordReader, WalOptions, WalWriter};

fn testdata() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("testdata/prometheus")
}

fn xorshift(s: &mut u64) -> u64 {
    let mut x = *s;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    *s = x;
    x
}

/// The record generator described in testdata/prometheus/README.md.
fn generate(kind: &str, len: usize, seed: u64) -> Vec<u8> {
    let mut state = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15).wrapping_add(1);
    let mut out = vec![0u8; len];
    match kind {
        "random" => {
            for b in &mut out {
                *b = (xorshift(&mut state) >> 56) as u8;
            }
        }
        "text" => {
            let mut line = format!(
                "http_requests_total{{job=\"api\",instance=\"10.0.0.{}:9090\",code=\"200\"}} ",
                seed % 256
            )
            .into_bytes();
            let n = line.len();
            for (i, b) in out.iter_mut().enumerate() {
                if i % n == 0 {
                    line[n - 2] = b'0' + ((i / n) % 10) as u8;
                }
                *b = line[i % n];
            }
        }
        "semi" => {
            let mut chunk = [0u8; 16];
            for (i, b) in out.iter_mut().enumerate() {
                if i % 32 == 0 {
                    for c in &mut chunk {
                        *c = (xorshift(&mut state) >> 56) as u8;
                    }
                }
                *b = chunk[i % 16];
            }
        }
        other => panic!("unknown record kind {other}"),
    }
    out
}

fn expected_records(spec_file: &str) -> Vec<Vec<u8>> {
    let text = fs::read_to_string(testdata().join(spec_file)).unwrap();
    text.lines()
        .filter(|l| !l.trim().is_empty() && !l.starts_with('#'))
        .map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            generate(f[0], f[1].parse().unwrap(), f[2].parse().unwrap())
        })
        .collect()
}

fn read_all(dir: &Path) -> Vec<Vec<u8>> {
    let mut reader = RecordReader::open_dir(dir).unwrap();
    let mut out = Vec::new();
    while let Some(rec) = reader.next_record().unwrap() {
        out.push(rec.to_vec());
    }
    out
}

fn assert_records_eq(got: &[Vec<u8>], want: &[Vec<u8>]) {
    assert_eq!(got.len(), want.len(), "record count");
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        assert!(
            g == w,
            "record {i} differs: {} vs {} bytes",
            g.len(),
            w.len()
        );
    }
}

#[test]
fn reads_prometheus_uncompressed_wal() {
    let want = expected_records("none.records");
    assert_records_eq(&read_all(&testdata().join("none")), &want);
}

#[test]
fn reads_prometheus_snappy_wal() {
    let want = expected_records("compressed.records");
    assert_records_eq(&read_all(&testdata().join("snappy")), &want);
}

#[test]
fn reads_prometheus_zstd_wal() {
    let want = expected_records("compressed.records");
    assert_records_eq(&read_all(&testdata().join("zstd")), &want);
}

#[test]
fn reports_record_positions_like_prometheus_layout() {
    // In the zstd WAL the 70000-byte record does not fit the first 32 KiB
    // segment and starts segment 1 at offset 0.
    let mut reader = RecordReader::open_dir(&testdata().join("zstd")).unwrap();
    let mut positions = Vec::new();
    while let Some(len) = reader.next_record().unwrap().map(|r| r.len()) {
        positions.push((reader.segment(), reader.offset(), len));
    }
    assert_eq!(positions[4], (1, 0, 70000));
    assert_eq!(positions[5], (2, 0, 6000));
}

/// Writes `records` the way the Go program did (records 2 and 3 batched).
fn write_like_prometheus(dir: &Path, records: &[Vec<u8>], opts: WalOptions, close: bool) {
    let mut w = WalWriter::open(dir, opts).unwrap();
    for (i, rec) in records.iter().enumerate() {
        match i {
            2 => w.log(&[&records[2], &records[3]]).unwrap(),
            3 => {}
            _ => w.log(&[rec]).unwrap(),
        }
    }
    if close {
        w.close().unwrap();
    }
}

fn segment_files(dir: &Path) -> Vec<(u32, Vec<u8>)> {
    list_segments(dir)
        .unwrap()
        .into_iter()
        .map(|s| (s.index, fs::read(&s.path).unwrap()))
        .collect()
}

#[test]
fn uncompressed_output_is_byte_identical_to_prometheus() {
    let records = expected_records("none.records");
    let tmp = tempfile::tempdir().unwrap();
    let opts = WalOptions {
        segment_size: 64 * 1024,
        compression: Compression::None,
        fsync_on_flush: false,
    };
    write_like_prometheus(tmp.path(), &records, opts, true);
    let ours = segment_files(tmp.path());
    let theirs = segment_files(&testdata().join("none"));
    assert_eq!(ours.len(), theirs.len(), "segment count");
    for ((i, a), (j, b)) in ours.iter().zip(&theirs) {
        assert_eq!(i, j);
        assert!(
            a == b,
            "segment {i} differs ({} vs {} bytes)",
            a.len(),
            b.len()
        );
    }
}

#[test]
fn compressed_output_has_prometheus_layout() {
    // Codec output may differ by library, so compare what can be compared:
    // the records read back and, for zstd with its 32 KiB segments, the
    // rotation points.
    let records = expected_records("compressed.records");
    for (name, compression, segment_size) in [
        ("snappy", Compression::Snappy, 64 * 1024),
        ("zstd", Compression::Zstd, 32 * 1024),
    ] {
        let tmp = tempfile::tempdir().unwrap();
        let opts = WalOptions {
            segment_size,
            compression,
            fsync_on_flush: false,
        };
        write_like_prometheus(tmp.path(), &records, opts, false);
        assert_records_eq(&read_all(tmp.path()), &records);
        let ours = list_segments(tmp.path()).unwrap().len();
        let theirs = list_segments(&testdata().join(name)).unwrap().len();
        assert_eq!(ours, theirs, "{name}: segment count");
    }
}

/// Writes WALs for the manual Go cross-check (Prometheus' `wlog.NewReader`
/// reading our output): `FERRITE_WAL_XCHECK_DIR=/tmp/x cargo test -p
/// ferrite-wal --test prometheus_testdata -- --ignored`. If
/// `FERRITE_WAL_GO_DIR` names a directory where Prometheus wrote the same
/// records (`/tmp/x/records.txt`) into `none`, `snappy` and `zstd`, those are
/// read back and checked too.
#[test]
#[ignore]
fn write_wals_for_go_cross_check() {
    let Ok(out) = std::env::var("FERRITE_WAL_XCHECK_DIR") else {
        return;
    };
    let out = PathBuf::from(out);
    let mut specs = String::new();
    let mut records = Vec::new();
    let mut state = 42u64;
    for i in 0..400u64 {
        let kind = ["random", "text", "semi"][(xorshift(&mut state) % 3) as usize];
        let len = match xorshift(&mut state) % 10 {
            0 => 0,
            1..=5 => (xorshift(&mut state) % 300) as usize,
            6..=8 => (xorshift(&mut state) % 40_000) as usize,
            _ => (xorshift(&mut state) % 150_000) as usize,
        };
        specs.push_str(&format!("{kind} {len} {i}\n"));
        records.push(generate(kind, len, i));
    }
    fs::create_dir_all(&out).unwrap();
    fs::write(out.join("records.txt"), specs).unwrap();
    for compression in [Compression::None, Compression::Snappy, Compression::Zstd] {
        let dir = out.join(compression.as_str());
        let _ = fs::remove_dir_all(&dir);
        let opts = WalOptions {
            segment_size: 128 * 1024,
            compression,
            fsync_on_flush: false,
        };
        let mut w = WalWriter::open(&dir, opts).unwrap();
        for batch in records.chunks(3) {
            let refs: Vec<&[u8]> = batch.iter().map(|r| r.as_slice()).collect();
            w.log(&refs).unwrap();
        }
        w.close().unwrap();
        assert_records_eq(&read_all(&dir), &records);
        if let Ok(go_dir) = std::env::var("FERRITE_WAL_GO_DIR") {
            let go_dir = PathBuf::from(go_dir).join(compression.as_str());
            assert_records_eq(&read_all(&go_dir), &records);
        }
    }
}
