//! Ferrite against the files Prometheus wrote in `testdata/` (see its README).

use std::fs;
use std::path::{Path, PathBuf};

use ferrite_block::{meta, text, tombstones, ChunkReader, ChunkRef};

fn td(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("testdata")
        .join(name)
}

fn read(name: &str) -> String {
    fs::read_to_string(td(name)).unwrap()
}

fn dir_files(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut v: Vec<_> = fs::read_dir(dir)
        .unwrap()
        .map(|e| {
            let e = e.unwrap();
            (
                e.file_name().into_string().unwrap(),
                fs::read(e.path()).unwrap(),
            )
        })
        .collect();
    v.sort();
    v
}

#[test]
fn chunks_dump_matches_prometheus() {
    assert_eq!(
        text::dump_chunks_dir(&td("chunks")).unwrap(),
        read("chunks.dump")
    );
}

#[test]
fn chunks_written_byte_identical() {
    let spec = text::parse_chunks_spec(&read("chunks.spec")).unwrap();
    let out = tempfile::tempdir().unwrap();
    let refs = text::write_chunks_spec(&spec, out.path()).unwrap();
    assert_eq!(refs, read("chunks.refs"));
    assert_eq!(dir_files(out.path()), dir_files(&td("chunks")));
}

#[test]
fn chunks_refs_resolve() {
    let r = ChunkReader::open(&td("chunks")).unwrap();
    let spec = text::parse_chunks_spec(&read("chunks.spec")).unwrap();
    let want: Vec<_> = spec.writes.iter().flatten().collect();
    let refs: Vec<ChunkRef> = read("chunks.refs")
        .lines()
        .map(|l| {
            let (s, o) = l.strip_prefix("ref ").unwrap().split_once(':').unwrap();
            ChunkRef::new(s.parse().unwrap(), o.parse().unwrap())
        })
        .collect();
    assert_eq!(refs.len(), want.len());
    for (rf, (enc, data)) in refs.iter().zip(want) {
        assert_eq!(r.chunk(*rf).unwrap(), (*enc, data.as_slice()));
    }
}

#[test]
fn tombstones_match_prometheus() {
    let t = tombstones::read_tombstones_file(&td("tombstones")).unwrap();
    assert_eq!(text::dump_tombstones(&t), read("tombstones.dump"));
    let spec = text::parse_tombstones_spec(&read("tombstones.spec")).unwrap();
    assert_eq!(spec.encode(), fs::read(td("tombstones")).unwrap());
    let out = tempfile::tempdir().unwrap();
    tombstones::write_tombstones(out.path(), &spec).unwrap();
    assert_eq!(
        fs::read(out.path().join("tombstones")).unwrap(),
        fs::read(td("tombstones")).unwrap()
    );
}

#[test]
fn meta_matches_prometheus() {
    let m = meta::read_meta_file(&td("meta.json")).unwrap();
    assert_eq!(text::dump_meta(&m), read("meta.dump"));
    let spec = text::parse_meta_spec(&read("meta.spec")).unwrap();
    let out = tempfile::tempdir().unwrap();
    meta::write_meta(out.path(), &spec).unwrap();
    assert_eq!(
        fs::read(out.path().join("meta.json")).unwrap(),
        fs::read(td("meta.json")).unwrap()
    );
    // The dump is itself a spec.
    assert_eq!(text::parse_meta_spec(&read("meta.dump")).unwrap(), m);
}

/// Every single-byte change and every truncation of the golden files is
/// read without a panic.
#[test]
fn golden_damage_never_panics() {
    let seg = fs::read(td("chunks/000001")).unwrap();
    let others = [fs::read(td("chunks/000002")).unwrap()];
    for i in 0..seg.len() {
        for flip in [0x01u8, 0x80, 0xff] {
            let mut b = seg.clone();
            b[i] ^= flip;
            if let Ok(r) = ChunkReader::from_bytes(vec![b, others[0].clone()]) {
                let _ = text::dump_chunks(&r);
                for off in 0..r.segment_len(0).unwrap() as u32 + 8 {
                    let _ = r.chunk(ChunkRef::new(0, off));
                }
            }
        }
        if let Ok(r) = ChunkReader::from_bytes(vec![seg[..i].to_vec()]) {
            let _ = text::dump_chunks(&r);
        }
    }
    let ts = fs::read(td("tombstones")).unwrap();
    for i in 0..ts.len() {
        let mut b = ts.clone();
        b[i] ^= 0x41;
        let _ = tombstones::Tombstones::decode(&b);
        let _ = tombstones::Tombstones::decode(&ts[..i]);
    }
    let mj = fs::read(td("meta.json")).unwrap();
    for i in 0..mj.len() {
        let mut b = mj.clone();
        b[i] ^= 0x20;
        let _ = meta::BlockMeta::from_json(&b);
        let _ = meta::BlockMeta::from_json(&mj[..i]);
    }
}
