//! WAL read throughput (and, for reference, write throughput) over records
//! shaped like Prometheus sample records: a 17-byte header (type, base ref,
//! base timestamp) followed by samples encoded as varint ref delta, varint
//! timestamp delta and an 8-byte float, ~1000 samples per record.
//!
//! Throughput is counted in decoded record bytes.
//! Run: `cargo bench -p ferrite-wal --bench wal_read`.

use std::path::Path;

use divan::counter::BytesCount;
use divan::{black_box, Bencher};
use ferrite_wal::{Compression, RecordReader, WalOptions, WalWriter};
use rand::{Rng, SeedableRng};

const READ_BYTES: usize = 64 << 20;
const WRITE_BYTES: usize = 16 << 20;
const COMPRESSIONS: [&str; 3] = ["none", "snappy", "zstd"];

fn main() {
    divan::main();
}

fn put_varint(out: &mut Vec<u8>, v: i64) {
    let mut u = ((v << 1) ^ (v >> 63)) as u64;
    while u >= 0x80 {
        out.push(u as u8 | 0x80);
        u >>= 7;
    }
    out.push(u as u8);
}

/// Sample records totalling about `total` bytes. Each record is one scrape
/// of 1000 consecutive series sharing a timestamp (what a Prometheus commit
/// looks like); values are mostly integer counters, some jittery gauges.
fn sample_records(total: usize) -> Vec<Vec<u8>> {
    let mut rng = rand::rngs::StdRng::seed_from_u64(7);
    let mut records = Vec::new();
    let mut size = 0;
    let mut ts: i64 = 1_700_000_000_000;
    let mut values: Vec<f64> = (0..50_000).map(|i| (i * 10) as f64).collect();
    let mut base_ref = 0usize;
    while size < total {
        let mut rec = Vec::with_capacity(16 * 1024);
        rec.push(2); // samples record type
        rec.extend_from_slice(&(base_ref as u64).to_be_bytes());
        rec.extend_from_slice(&ts.to_be_bytes());
        let jitter = rng.gen_range(0..20);
        for i in 0..1000 {
            let series = base_ref + i;
            put_varint(&mut rec, i as i64);
            put_varint(&mut rec, jitter);
            if series & 3 != 0 {
                values[series] += rng.gen_range(0..50) as f64;
            } else {
                values[series] = (rng.gen::<f64>() * 1000.0).round() / 100.0;
            }
            rec.extend_from_slice(&values[series].to_bits().to_le_bytes());
        }
        base_ref = (base_ref + 1000) % 49_000;
        ts += 15_000;
        size += rec.len();
        records.push(rec);
    }
    records
}

fn write_wal(dir: &Path, compression: Compression, records: &[Vec<u8>]) {
    let opts = WalOptions {
        compression,
        ..WalOptions::default()
    };
    let mut w = WalWriter::open(dir, opts).unwrap();
    for batch in records.chunks(4) {
        let refs: Vec<&[u8]> = batch.iter().map(|r| r.as_slice()).collect();
        w.log(&refs).unwrap();
    }
    w.close().unwrap();
}

#[divan::bench(args = COMPRESSIONS, sample_count = 10, sample_size = 1)]
fn read(bencher: Bencher, compression: &str) {
    let records = sample_records(READ_BYTES);
    let total: usize = records.iter().map(Vec::len).sum();
    let tmp = tempfile::tempdir().unwrap();
    write_wal(tmp.path(), compression.parse().unwrap(), &records);
    drop(records);
    let on_disk: u64 = ferrite_wal::list_segments(tmp.path())
        .unwrap()
        .iter()
        .map(|s| std::fs::metadata(&s.path).unwrap().len())
        .sum();
    eprintln!(
        "{compression}: {} MiB of records, {:.1} MiB on disk",
        total >> 20,
        on_disk as f64 / (1 << 20) as f64
    );
    bencher.counter(BytesCount::new(total)).bench(|| {
        let mut reader = RecordReader::open_dir(tmp.path()).unwrap();
        let mut bytes = 0;
        while let Some(rec) = reader.next_record().unwrap() {
            bytes += rec.len();
        }
        assert_eq!(bytes, total);
        black_box(bytes)
    });
}

#[divan::bench(args = COMPRESSIONS, sample_count = 10, sample_size = 1)]
fn write(bencher: Bencher, compression: &str) {
    let records = sample_records(WRITE_BYTES);
    let total: usize = records.iter().map(Vec::len).sum();
    let compression: Compression = compression.parse().unwrap();
    bencher
        .counter(BytesCount::new(total))
        .with_inputs(|| tempfile::tempdir().unwrap())
        .bench_values(|tmp| {
            write_wal(tmp.path(), compression, &records);
            tmp
        });
}
