//! Cross-checks against files written by Prometheus v3.9.1 itself (see
//! `testdata/head_chunks/README.md`): Ferrite must find and read exactly
//! the chunks Prometheus wrote, and writing the same chunks must give the
//! same bytes.
//!
//! With `FERRITE_EXPORT_HEAD_CHUNKS=<dir>` set, `export_for_prometheus`
//! also writes a Ferrite directory and its expected listing there, for a
//! Prometheus-side reader to check by hand.

use std::fs;
use std::path::{Path, PathBuf};

use ferrite_tsdb::head_chunks::{
    ChunkDiskMapper, ChunkDiskMapperRef, HeadChunksOptions, OOO_ENCODING_MASK,
};

#[derive(Debug, Clone, PartialEq, Eq)]
struct Expected {
    series_ref: u64,
    mint: i64,
    maxt: i64,
    encoding: u8,
    is_ooo: bool,
    num_samples: u16,
    chunk_ref: ChunkDiskMapperRef,
    data: Vec<u8>,
}

fn testdata() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("testdata/head_chunks")
}

fn unhex(s: &str) -> Vec<u8> {
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
        .collect()
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

fn load_expected() -> Vec<Expected> {
    let text = fs::read_to_string(testdata().join("prometheus_expected.txt")).unwrap();
    text.lines()
        .filter(|l| !l.starts_with('#') && !l.is_empty())
        .map(|l| {
            let f: Vec<&str> = l.split(' ').collect();
            assert_eq!(f.len(), 9, "{l}");
            Expected {
                series_ref: f[0].parse().unwrap(),
                mint: f[1].parse().unwrap(),
                maxt: f[2].parse().unwrap(),
                encoding: f[3].parse().unwrap(),
                is_ooo: f[4] == "1",
                num_samples: f[5].parse().unwrap(),
                chunk_ref: ChunkDiskMapperRef::new(f[6].parse().unwrap(), f[7].parse().unwrap()),
                data: unhex(f[8]),
            }
        })
        .collect()
}

fn copy_dir(from: &Path, to: &Path) {
    fs::create_dir_all(to).unwrap();
    for e in fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        fs::copy(e.path(), to.join(e.file_name())).unwrap();
    }
}

fn iterate_all(m: &ChunkDiskMapper) -> Vec<Expected> {
    let mut found = Vec::new();
    let report = m
        .iterate_all_chunks(&mut |meta| {
            found.push(Expected {
                series_ref: meta.series_ref,
                mint: meta.mint,
                maxt: meta.maxt,
                encoding: meta.encoding,
                is_ooo: meta.is_ooo,
                num_samples: meta.num_samples,
                chunk_ref: meta.chunk_ref,
                data: Vec::new(),
            })
        })
        .unwrap();
    assert_eq!(report.damage, None);
    for e in &mut found {
        e.data = m.chunk(e.chunk_ref).unwrap().to_vec();
    }
    found
}

#[test]
fn reads_exactly_what_prometheus_wrote() {
    let expected = load_expected();
    assert_eq!(expected.len(), 37);
    assert!(expected.iter().any(|e| e.is_ooo) && expected.iter().any(|e| e.encoding == 2));

    let tmp = tempfile::tempdir().unwrap();
    copy_dir(&testdata().join("prometheus"), tmp.path());
    let m = ChunkDiskMapper::open(tmp.path(), HeadChunksOptions::default()).unwrap();
    assert_eq!(m.files(), vec![1, 2, 3]);
    assert_eq!(iterate_all(&m), expected);

    // Like Prometheus after a restart, new chunks go to a new file.
    let r = m.write_chunk(99, 1, 2, 1, &[0, 1, 2]).unwrap();
    assert_eq!(r, ChunkDiskMapperRef::new(4, 8));
}

#[test]
fn writes_the_same_bytes_as_prometheus() {
    let expected = load_expected();
    let tmp = tempfile::tempdir().unwrap();
    let m = ChunkDiskMapper::open(tmp.path(), HeadChunksOptions::default()).unwrap();
    let mut seq = 1;
    for e in &expected {
        if e.chunk_ref.seq() != seq {
            m.cut_new_file();
            seq = e.chunk_ref.seq();
        }
        let enc = if e.is_ooo {
            e.encoding | OOO_ENCODING_MASK
        } else {
            e.encoding
        };
        let r = m
            .write_chunk(e.series_ref, e.mint, e.maxt, enc, &e.data)
            .unwrap();
        assert_eq!(r, e.chunk_ref);
    }
    m.close().unwrap();
    // Both preallocate with zeros, to different sizes: compare the rest.
    for seq in 1..=3u32 {
        let name = format!("{seq:06}");
        let ours = fs::read(tmp.path().join(&name)).unwrap();
        let theirs = fs::read(testdata().join("prometheus").join(&name)).unwrap();
        let trim = |b: &[u8]| b.len() - b.iter().rev().take_while(|&&x| x == 0).count();
        assert_eq!(ours[..trim(&ours)], theirs[..trim(&theirs)], "file {name}");
    }
}

/// Writes Ferrite directories and their listings in the format of
/// `prometheus_expected.txt`, for the Prometheus-side reader: `small/`
/// (many files ending in preallocated zeros) and `large/` (files grown past
/// the preallocation, ending right after their last chunk).
#[test]
fn export_for_prometheus() {
    let Some(out) = std::env::var_os("FERRITE_EXPORT_HEAD_CHUNKS") else {
        return;
    };
    let out = PathBuf::from(out);
    export_dir(&out.join("small"), 2048, 1);
    export_dir(&out.join("large"), 200 * 1024, 40);
}

fn export_dir(out: &Path, max_file_size: u64, rounds: usize) {
    let dir = out.join("chunks_head");
    let _ = fs::remove_dir_all(&dir);
    let expected = load_expected();
    let m = ChunkDiskMapper::open(
        &dir,
        HeadChunksOptions {
            max_file_size,
            write_buffer_size: 1024,
        },
    )
    .unwrap();
    let mut lines =
        vec!["# series_ref mint maxt encoding is_ooo num_samples seq offset data_hex".to_string()];
    for (i, e) in expected
        .iter()
        .cycle()
        .take(expected.len() * rounds)
        .enumerate()
    {
        let is_ooo = i % 3 == 1;
        let enc = if is_ooo {
            e.encoding | OOO_ENCODING_MASK
        } else {
            e.encoding
        };
        let series_ref = 1000 + i as u64;
        let r = m
            .write_chunk(series_ref, e.mint, e.maxt, enc, &e.data)
            .unwrap();
        lines.push(format!(
            "{} {} {} {} {} {} {} {} {}",
            series_ref,
            e.mint,
            e.maxt,
            e.encoding,
            u8::from(is_ooo),
            e.num_samples,
            r.seq(),
            r.offset(),
            hex(&e.data)
        ));
    }
    m.close().unwrap();
    lines.push(String::new());
    fs::write(out.join("expected.txt"), lines.join("\n")).unwrap();
}
