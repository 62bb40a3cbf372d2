//! Behaviour of the head chunks store through its public API: round trips
//! across files and reopens, concurrent use, and recovery from every kind
//! of on-disk damage (which must never panic and must keep exactly the
//! chunks before the damage).

use std::fs;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use ferrite_tsdb::head_chunks::{
    scan_file_bytes, ChunkDiskMapper, ChunkDiskMapperRef, DamageKind, HeadChunksError,
    HeadChunksOptions, MappedChunkMeta, OOO_ENCODING_MASK,
};
use parking_lot::RwLock;
use proptest::prelude::*;
use rand::{Rng, SeedableRng};

#[derive(Debug, Clone, PartialEq)]
struct Written {
    series_ref: u64,
    mint: i64,
    maxt: i64,
    encoding: u8,
    is_ooo: bool,
    data: Vec<u8>,
    chunk_ref: ChunkDiskMapperRef,
}

fn opts(max_file_size: u64, write_buffer_size: usize) -> HeadChunksOptions {
    HeadChunksOptions {
        max_file_size,
        write_buffer_size,
    }
}

/// Data shaped like a real chunk: a big-endian sample count, then bytes.
fn chunk_data(rng: &mut impl Rng, len: usize) -> Vec<u8> {
    let mut data: Vec<u8> = (0..len.max(2)).map(|_| rng.gen()).collect();
    let samples: u16 = rng.gen_range(1..=120);
    data[..2].copy_from_slice(&samples.to_be_bytes());
    data
}

fn write_n(m: &ChunkDiskMapper, n: usize, seed: u64, max_len: usize) -> Vec<Written> {
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    (0..n)
        .map(|i| {
            let len = rng.gen_range(2..=max_len);
            let data = chunk_data(&mut rng, len);
            let encoding = rng.gen_range(1..=3u8);
            let is_ooo = i % 7 == 3;
            let raw = if is_ooo {
                encoding | OOO_ENCODING_MASK
            } else {
                encoding
            };
            let (series_ref, mint) = (1 + i as u64 % 50, i as i64 * 1000 - 5000);
            let chunk_ref = m
                .write_chunk(series_ref, mint, mint + 999, raw, &data)
                .expect("write");
            Written {
                series_ref,
                mint,
                maxt: mint + 999,
                encoding,
                is_ooo,
                data,
                chunk_ref,
            }
        })
        .collect()
}

fn assert_meta(meta: &MappedChunkMeta, w: &Written) {
    assert_eq!(meta.chunk_ref, w.chunk_ref);
    assert_eq!(
        (
            meta.series_ref,
            meta.mint,
            meta.maxt,
            meta.encoding,
            meta.is_ooo
        ),
        (w.series_ref, w.mint, w.maxt, w.encoding, w.is_ooo)
    );
    assert_eq!(meta.num_samples, u16::from_be_bytes([w.data[0], w.data[1]]));
}

fn iterate(m: &ChunkDiskMapper) -> (Vec<MappedChunkMeta>, ferrite_tsdb::head_chunks::ScanReport) {
    let mut metas = Vec::new();
    let report = m
        .iterate_all_chunks(&mut |meta| metas.push(meta))
        .expect("iterate");
    (metas, report)
}

fn file_path(dir: &Path, seq: u32) -> PathBuf {
    dir.join(format!("{seq:06}"))
}

fn chunk_files_on_disk(dir: &Path) -> Vec<u32> {
    let mut seqs: Vec<u32> = fs::read_dir(dir)
        .unwrap()
        .filter_map(|e| e.unwrap().file_name().to_str()?.parse().ok())
        .collect();
    seqs.sort_unstable();
    seqs
}

#[test]
fn round_trip_across_files_and_reopen() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("chunks_head");
    let m = ChunkDiskMapper::open(&dir, opts(2048, 512)).unwrap();
    assert!(m.files().is_empty());
    let written = write_n(&m, 400, 1, 200);

    // Readable straight away, from the buffer or the file.
    for w in &written {
        assert_eq!(&*m.chunk(w.chunk_ref).unwrap(), &w.data[..]);
    }
    m.flush().unwrap();
    for w in &written {
        assert_eq!(&*m.chunk(w.chunk_ref).unwrap(), &w.data[..]);
    }
    let files = m.files();
    assert!(files.len() > 10, "{files:?}");
    assert_eq!(files, (1..=files.len() as u32).collect::<Vec<_>>());
    assert_eq!(chunk_files_on_disk(&dir), files);
    // First chunk of each file right after the header; files within the max.
    assert_eq!(written[0].chunk_ref, ChunkDiskMapperRef::new(1, 8));
    for w in written.windows(2) {
        if w[1].chunk_ref.seq() != w[0].chunk_ref.seq() {
            assert_eq!(w[1].chunk_ref.offset(), 8);
        }
    }
    m.close().unwrap();
    for seq in &files {
        assert!(fs::metadata(file_path(&dir, *seq)).unwrap().len() <= 2048);
    }

    let m = ChunkDiskMapper::open(&dir, opts(2048, 512)).unwrap();
    let (metas, report) = iterate(&m);
    assert_eq!(report.damage, None);
    assert_eq!(report.chunks, written.len() as u64);
    assert_eq!(report.files_scanned, files.len());
    assert_eq!(metas.len(), written.len());
    for (meta, w) in metas.iter().zip(&written) {
        assert_meta(meta, w);
        assert_eq!(&*m.chunk(meta.chunk_ref).unwrap(), &w.data[..]);
    }

    // A reopened mapper appends to a new file after the last one.
    let last = *files.last().unwrap();
    let r = m.write_chunk(9, 1, 2, 1, &[0, 1, 7]).unwrap();
    assert_eq!(r, ChunkDiskMapperRef::new(last + 1, 8));
    assert_eq!(&*m.chunk(r).unwrap(), &[0, 1, 7]);
    drop(m); // Drop flushes and syncs too.

    let m = ChunkDiskMapper::open(&dir, opts(2048, 512)).unwrap();
    let (metas, _) = iterate(&m);
    assert_eq!(metas.len(), written.len() + 1);
    assert_eq!(metas.last().unwrap().chunk_ref, r);
}

#[test]
fn chunk_bigger_than_file_gets_a_file_of_its_own() {
    let tmp = tempfile::tempdir().unwrap();
    let m = ChunkDiskMapper::open(tmp.path(), opts(256, 64)).unwrap();
    let small = m.write_chunk(1, 0, 1, 1, &[0, 1, 2]).unwrap();
    let big = vec![0x5A; 1000];
    let b = m.write_chunk(1, 2, 3, 1, &big).unwrap();
    let after = m.write_chunk(1, 4, 5, 1, &[0, 1]).unwrap();
    assert_eq!(small, ChunkDiskMapperRef::new(1, 8));
    assert_eq!(b, ChunkDiskMapperRef::new(2, 8));
    assert_eq!(after, ChunkDiskMapperRef::new(3, 8));
    assert_eq!(&*m.chunk(b).unwrap(), &big[..]);
    m.flush().unwrap();
    assert_eq!(&*m.chunk(b).unwrap(), &big[..]);
    assert_eq!(iterate(&m).0.len(), 3);
}

#[test]
fn write_buffer_of_zero_writes_through() {
    let tmp = tempfile::tempdir().unwrap();
    let m = ChunkDiskMapper::open(tmp.path(), opts(1 << 20, 0)).unwrap();
    let written = write_n(&m, 50, 2, 40);
    for w in &written {
        assert_eq!(&*m.chunk(w.chunk_ref).unwrap(), &w.data[..]);
    }
    let (metas, report) = iterate(&m);
    assert_eq!((metas.len(), report.damage), (50, None));
}

type RefAndData = (ChunkDiskMapperRef, Vec<u8>);

#[test]
fn concurrent_writers_and_readers() {
    let tmp = tempfile::tempdir().unwrap();
    let m = Arc::new(ChunkDiskMapper::open(tmp.path(), opts(16 * 1024, 2048)).unwrap());
    let written: Arc<RwLock<Vec<RefAndData>>> = Arc::default();
    let writers: Vec<_> = (0..3u64)
        .map(|t| {
            let (m, written) = (Arc::clone(&m), Arc::clone(&written));
            std::thread::spawn(move || {
                let mut rng = rand::rngs::StdRng::seed_from_u64(t);
                for i in 0..400 {
                    let len = rng.gen_range(2..300);
                    let data = chunk_data(&mut rng, len);
                    let r = m.write_chunk(t + 1, i, i + 1, 1, &data).unwrap();
                    assert_eq!(&*m.chunk(r).unwrap(), &data[..]);
                    written.write().push((r, data));
                    if i % 97 == 0 {
                        m.flush().unwrap();
                    }
                }
            })
        })
        .collect();
    let readers: Vec<_> = (0..2u64)
        .map(|t| {
            let (m, written) = (Arc::clone(&m), Arc::clone(&written));
            std::thread::spawn(move || {
                let mut rng = rand::rngs::StdRng::seed_from_u64(100 + t);
                let mut reads = 0;
                while reads < 3000 {
                    let pick = {
                        let w = written.read();
                        if w.is_empty() {
                            continue;
                        }
                        w[rng.gen_range(0..w.len())].clone()
                    };
                    assert_eq!(&*m.chunk(pick.0).unwrap(), &pick.1[..]);
                    reads += 1;
                }
            })
        })
        .collect();
    for t in writers.into_iter().chain(readers) {
        t.join().unwrap();
    }
    let mut all = Arc::try_unwrap(written).unwrap().into_inner();
    all.sort_by_key(|(r, _)| *r);
    Arc::try_unwrap(m).unwrap().close().unwrap();

    let m = ChunkDiskMapper::open(tmp.path(), HeadChunksOptions::default()).unwrap();
    let (metas, report) = iterate(&m);
    assert_eq!(report.damage, None);
    assert_eq!(metas.len(), all.len());
    for (meta, (r, data)) in metas.iter().zip(&all) {
        assert_eq!(meta.chunk_ref, *r);
        assert_eq!(&*m.chunk(*r).unwrap(), &data[..]);
    }
}

#[test]
fn truncate_before_deletes_old_files_but_never_the_active_one() {
    let tmp = tempfile::tempdir().unwrap();
    let m = ChunkDiskMapper::open(tmp.path(), opts(1024, 256)).unwrap();
    let written = write_n(&m, 60, 3, 150);
    let files = m.files();
    assert!(files.len() >= 5);
    let active = *files.last().unwrap();

    m.truncate_before(3).unwrap();
    assert_eq!(m.files(), (3..=active).collect::<Vec<_>>());
    assert_eq!(chunk_files_on_disk(tmp.path()), m.files());
    for w in &written {
        match m.chunk(w.chunk_ref) {
            Ok(data) => {
                assert!(w.chunk_ref.seq() >= 3);
                assert_eq!(&*data, &w.data[..]);
            }
            Err(HeadChunksError::UnknownFile(r)) => assert!(r.seq() < 3),
            Err(e) => panic!("{e}"),
        }
    }

    m.truncate_before(u32::MAX).unwrap();
    assert_eq!(m.files(), vec![active]);
    let last = written.last().unwrap();
    assert_eq!(&*m.chunk(last.chunk_ref).unwrap(), &last.data[..]);
    // The active file had chunks, so the next write starts a new one.
    let r = m.write_chunk(1, 0, 1, 1, &[0, 1]).unwrap();
    assert_eq!(r, ChunkDiskMapperRef::new(active + 1, 8));
    m.truncate_before(u32::MAX).unwrap();
    assert_eq!(m.files(), vec![active + 1]);

    // With every file gone, numbering carries on rather than restarting.
    m.close().unwrap();
    let m = ChunkDiskMapper::open(tmp.path(), opts(1024, 256)).unwrap();
    m.truncate_before(u32::MAX).unwrap();
    assert!(m.files().is_empty());
    let r = m.write_chunk(1, 0, 1, 1, &[0, 1]).unwrap();
    assert_eq!(r.seq(), active + 2);
}

#[test]
fn bad_refs_are_errors() {
    let tmp = tempfile::tempdir().unwrap();
    let m = ChunkDiskMapper::open(tmp.path(), opts(4096, 64)).unwrap();
    let written = write_n(&m, 20, 4, 100);
    m.flush().unwrap();
    let _buffered = m.write_chunk(1, 0, 1, 1, &[0, 1, 2, 3]).unwrap();
    let seq = written[0].chunk_ref.seq();
    for r in [
        ChunkDiskMapperRef::new(seq, 0),
        ChunkDiskMapperRef::new(seq, 7),
        ChunkDiskMapperRef::new(seq, written[0].chunk_ref.offset() + 1),
        ChunkDiskMapperRef::new(seq, u32::MAX),
        ChunkDiskMapperRef::new(99, 8),
        ChunkDiskMapperRef(u64::MAX),
    ] {
        assert!(m.chunk(r).is_err(), "{r}");
    }
    // Past the end of the buffered data of the active file.
    let active = *m.files().last().unwrap();
    assert!(m.chunk(ChunkDiskMapperRef::new(active, 100_000)).is_err());
}

#[test]
fn invalid_writes_and_closed_mapper() {
    let tmp = tempfile::tempdir().unwrap();
    let m = ChunkDiskMapper::open(tmp.path(), HeadChunksOptions::default()).unwrap();
    assert!(matches!(
        m.write_chunk(0, 0, 1, 1, &[0, 1]),
        Err(HeadChunksError::ZeroSeriesRef)
    ));
    for enc in [0u8, 7, 0x80, 0x87, 0xFF] {
        assert!(matches!(
            m.write_chunk(1, 0, 1, enc, &[0, 1]),
            Err(HeadChunksError::InvalidEncoding(e)) if e == enc
        ));
    }
    let r = m.write_chunk(1, 0, 1, 0x83, &[0, 1]).unwrap();
    m.close().unwrap();
    m.close().unwrap();
    assert!(matches!(
        m.write_chunk(1, 0, 1, 1, &[0, 1]),
        Err(HeadChunksError::Closed)
    ));
    assert!(matches!(m.chunk(r), Err(HeadChunksError::Closed)));
    assert!(matches!(m.flush(), Err(HeadChunksError::Closed)));

    for bad in [opts(8, 1), opts((1 << 32) + 1, 1)] {
        assert!(matches!(
            ChunkDiskMapper::open(tmp.path(), bad),
            Err(HeadChunksError::InvalidOptions(_))
        ));
    }
}

// ---- Damage ----------------------------------------------------------------

/// A closed directory of several files; returns what was written.
fn damaged_dir_fixture(dir: &Path) -> Vec<Written> {
    let m = ChunkDiskMapper::open(dir, opts(1024, 128)).unwrap();
    let written = write_n(&m, 40, 5, 120);
    m.close().unwrap();
    assert!(chunk_files_on_disk(dir).len() >= 4);
    written
}

fn in_file(written: &[Written], seq: u32) -> Vec<&Written> {
    written
        .iter()
        .filter(|w| w.chunk_ref.seq() == seq)
        .collect()
}

/// Opens `dir` after damage, checks that exactly `expected` chunks come
/// back, that the directory is left scanning clean, and that the mapper
/// (and a reopened one) can append again.
fn check_recovery(dir: &Path, expected: &[Written]) -> ferrite_tsdb::head_chunks::ScanReport {
    let m = ChunkDiskMapper::open(dir, opts(1024, 128)).unwrap();
    let (metas, report) = iterate(&m);
    assert_eq!(metas.len(), expected.len(), "{report:?}");
    for (meta, w) in metas.iter().zip(expected) {
        assert_meta(meta, w);
        assert_eq!(&*m.chunk(meta.chunk_ref).unwrap(), &w.data[..]);
    }
    let files = m.files();
    assert_eq!(chunk_files_on_disk(dir), files);

    let (again, second) = iterate(&m);
    assert_eq!((again, second.damage), (metas.clone(), None));

    let r = m.write_chunk(7, 1, 2, 1, &[0, 1, 0xEE]).unwrap();
    assert_eq!(r.seq(), files.last().map_or(1, |s| s + 1));
    assert_eq!(&*m.chunk(r).unwrap(), &[0, 1, 0xEE]);
    m.close().unwrap();

    let m = ChunkDiskMapper::open(dir, opts(1024, 128)).unwrap();
    let (after, third) = iterate(&m);
    assert_eq!(third.damage, None);
    assert_eq!(after.len(), expected.len() + 1);
    assert_eq!(after.last().unwrap().chunk_ref, r);
    report
}

fn edit(path: &Path, f: impl FnOnce(&mut Vec<u8>)) {
    let mut bytes = fs::read(path).unwrap();
    f(&mut bytes);
    fs::write(path, bytes).unwrap();
}

#[test]
fn flipped_byte_keeps_chunks_before_it() {
    let tmp = tempfile::tempdir().unwrap();
    let written = damaged_dir_fixture(tmp.path());
    let victim = in_file(&written, 2)[1].clone();
    edit(&file_path(tmp.path(), 2), |b| {
        b[victim.chunk_ref.offset() as usize + 30] ^= 0x01;
    });
    let expected: Vec<Written> = written
        .iter()
        .filter(|w| w.chunk_ref < victim.chunk_ref)
        .cloned()
        .collect();
    let later: Vec<u32> = (3..=*chunk_files_on_disk(tmp.path()).last().unwrap()).collect();

    let report = check_recovery(tmp.path(), &expected);
    let d = report.damage.unwrap();
    assert_eq!((d.seq, d.offset), (2, u64::from(victim.chunk_ref.offset())));
    assert!(matches!(d.kind, DamageKind::BadCrc { .. }), "{d:?}");
    assert!(d.file_truncated);
    assert_eq!(d.files_removed, later);
    // The kept file was cut exactly at the damaged chunk (before the new write).
    assert_eq!(report.chunks, expected.len() as u64);
}

#[test]
fn damaged_first_chunk_removes_the_whole_file() {
    let tmp = tempfile::tempdir().unwrap();
    let written = damaged_dir_fixture(tmp.path());
    edit(&file_path(tmp.path(), 2), |b| b[8 + 3] ^= 0xFF);
    let expected: Vec<Written> = in_file(&written, 1).into_iter().cloned().collect();
    let report = check_recovery(tmp.path(), &expected);
    let d = report.damage.unwrap();
    assert_eq!((d.seq, d.offset, d.file_truncated), (2, 8, false));
    assert_eq!(d.files_removed[0], 2);
}

#[test]
fn truncated_last_file_mid_chunk() {
    let tmp = tempfile::tempdir().unwrap();
    let written = damaged_dir_fixture(tmp.path());
    let last_seq = *chunk_files_on_disk(tmp.path()).last().unwrap();
    let last_file = in_file(&written, last_seq);
    let victim = last_file.last().unwrap().chunk_ref;
    let path = file_path(tmp.path(), last_seq);
    edit(&path, |b| b.truncate(victim.offset() as usize + 20));
    let expected: Vec<Written> = written
        .iter()
        .filter(|w| w.chunk_ref < victim)
        .cloned()
        .collect();
    let report = check_recovery(tmp.path(), &expected);
    let d = report.damage.unwrap();
    assert_eq!((d.seq, d.offset), (last_seq, u64::from(victim.offset())));
    assert!(matches!(d.kind, DamageKind::Truncated { .. }));
    assert!(d.files_removed.is_empty());
}

#[test]
fn garbage_header_drops_that_file_and_later_ones() {
    let tmp = tempfile::tempdir().unwrap();
    let written = damaged_dir_fixture(tmp.path());
    let last = *chunk_files_on_disk(tmp.path()).last().unwrap();
    edit(&file_path(tmp.path(), 2), |b| {
        b[..8].copy_from_slice(b"garbage!")
    });
    let expected: Vec<Written> = in_file(&written, 1).into_iter().cloned().collect();
    let report = check_recovery(tmp.path(), &expected);
    let d = report.damage.unwrap();
    assert_eq!((d.seq, d.offset), (2, 0));
    assert!(matches!(d.kind, DamageKind::BadMagic(_)));
    assert_eq!(d.files_removed, (2..=last).collect::<Vec<_>>());

    // Bad version likewise.
    let tmp = tempfile::tempdir().unwrap();
    let written = damaged_dir_fixture(tmp.path());
    edit(&file_path(tmp.path(), 3), |b| b[4] = 2);
    let expected: Vec<Written> = written
        .iter()
        .filter(|w| w.chunk_ref.seq() < 3)
        .cloned()
        .collect();
    let d = check_recovery(tmp.path(), &expected).damage.unwrap();
    assert_eq!(d.kind, DamageKind::BadVersion(2));
}

#[test]
fn zeroed_region_is_damage_but_zero_tail_is_not() {
    let tmp = tempfile::tempdir().unwrap();
    let written = damaged_dir_fixture(tmp.path());
    let in2 = in_file(&written, 2);
    let (a, b) = (
        in2[1].chunk_ref.offset() as usize,
        in2[2].chunk_ref.offset() as usize,
    );
    edit(&file_path(tmp.path(), 2), |bytes| bytes[a..b + 5].fill(0));
    let expected: Vec<Written> = written
        .iter()
        .filter(|w| w.chunk_ref < in2[1].chunk_ref)
        .cloned()
        .collect();
    let d = check_recovery(tmp.path(), &expected).damage.unwrap();
    assert_eq!((d.seq, d.offset as usize), (2, a));

    // Zeros after the last chunk (preallocation) end a file cleanly.
    let tmp = tempfile::tempdir().unwrap();
    let written = damaged_dir_fixture(tmp.path());
    for seq in chunk_files_on_disk(tmp.path()) {
        edit(&file_path(tmp.path(), seq), |b| {
            b.extend_from_slice(&[0; 3000])
        });
    }
    let report = check_recovery(tmp.path(), &written);
    assert_eq!(report.damage, None);
}

#[test]
fn gap_in_numbering_drops_files_after_it() {
    let tmp = tempfile::tempdir().unwrap();
    let written = damaged_dir_fixture(tmp.path());
    fs::remove_file(file_path(tmp.path(), 2)).unwrap();
    let expected: Vec<Written> = in_file(&written, 1).into_iter().cloned().collect();
    let d = check_recovery(tmp.path(), &expected).damage.unwrap();
    assert_eq!(d.kind, DamageKind::SequenceGap { expected: 2 });
    assert_eq!(d.seq, 3);
}

#[test]
fn empty_last_file_from_a_crash_is_removed_quietly() {
    for contents in [&[][..], &[0u8; 8][..], &[0x01, 0x30][..]] {
        let tmp = tempfile::tempdir().unwrap();
        let written = damaged_dir_fixture(tmp.path());
        let next = chunk_files_on_disk(tmp.path()).last().unwrap() + 1;
        fs::write(file_path(tmp.path(), next), contents).unwrap();
        fs::write(tmp.path().join("000099.tmp"), b"junk").unwrap();
        let report = check_recovery(tmp.path(), &written);
        assert_eq!(report.damage, None);
        assert!(!tmp.path().join("000099.tmp").exists());
    }
}

#[test]
fn damage_in_the_active_file_while_running() {
    let tmp = tempfile::tempdir().unwrap();
    let m = ChunkDiskMapper::open(tmp.path(), opts(1 << 20, 64)).unwrap();
    let written = write_n(&m, 20, 6, 50);
    m.flush().unwrap();
    edit(&file_path(tmp.path(), 1), |b| {
        b[written[10].chunk_ref.offset() as usize + 28] ^= 0x10;
    });
    let (metas, report) = iterate(&m);
    assert_eq!(metas.len(), 10);
    assert_eq!(report.damage.unwrap().seq, 1);
    for w in &written[..10] {
        assert_eq!(&*m.chunk(w.chunk_ref).unwrap(), &w.data[..]);
    }
    // Writing resumes in a fresh file.
    let r = m.write_chunk(1, 0, 1, 1, &[0, 1]).unwrap();
    assert_eq!(r, ChunkDiskMapperRef::new(2, 8));
    assert_eq!(iterate(&m).0.len(), 11);
}

// ---- Arbitrary bytes -------------------------------------------------------

fn valid_file_bytes(seed: u64, n: usize) -> (Vec<u8>, Vec<Written>) {
    let tmp = tempfile::tempdir().unwrap();
    let m = ChunkDiskMapper::open(tmp.path(), opts(1 << 20, 1 << 16)).unwrap();
    let written = write_n(&m, n, seed, 60);
    m.close().unwrap();
    let mut bytes = fs::read(file_path(tmp.path(), 1)).unwrap();
    while bytes.last() == Some(&0) && bytes.len() > 8 {
        bytes.pop();
    }
    (bytes, written)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 128, ..ProptestConfig::default() })]

    #[test]
    fn arbitrary_bytes_never_panic(
        mut bytes in proptest::collection::vec(any::<u8>(), 0..600),
        with_header in any::<bool>(),
    ) {
        if with_header && bytes.len() >= 8 {
            bytes[..8].copy_from_slice(&[0x01, 0x30, 0xBC, 0x91, 1, 0, 0, 0]);
        }
        let mut n = 0u64;
        let scan = scan_file_bytes(1, &bytes, &mut |_| n += 1);
        prop_assert_eq!(scan.chunks, n);
        prop_assert!(scan.valid_end <= bytes.len() as u64);

        let tmp = tempfile::tempdir().unwrap();
        fs::write(tmp.path().join("000001"), &bytes).unwrap();
        let m = ChunkDiskMapper::open(tmp.path(), opts(4096, 256)).unwrap();
        let mut refs = Vec::new();
        m.iterate_all_chunks(&mut |meta| refs.push(meta.chunk_ref)).unwrap();
        prop_assert_eq!(refs.len() as u64, n);
        for r in refs {
            m.chunk(r).unwrap();
        }
        let r = m.write_chunk(1, 0, 1, 1, &[0, 1]).unwrap();
        prop_assert_eq!(&*m.chunk(r).unwrap(), &[0u8, 1][..]);
    }

    #[test]
    fn mutated_files_yield_a_prefix_of_the_original(
        seed in 0u64..1000,
        edits in proptest::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..4),
        cut in proptest::option::of(any::<prop::sample::Index>()),
    ) {
        let (mut bytes, written) = valid_file_bytes(seed, 12);
        for (at, v) in edits {
            let i = at.index(bytes.len());
            bytes[i] = v;
        }
        if let Some(cut) = cut {
            bytes.truncate(cut.index(bytes.len() + 1));
        }
        let mut metas = Vec::new();
        scan_file_bytes(1, &bytes, &mut |m| metas.push(m));
        prop_assert!(metas.len() <= written.len());
        for (meta, w) in metas.iter().zip(&written) {
            assert_meta(meta, w);
        }
    }
}
