//! Plain-text specs and dumps of block files, shared with the Go tool
//! `interop/cmd/promblockfiles`, which reads and writes the same forms with
//! Prometheus' own code. `ferrite debug block-files` exposes them; the
//! cross-check compares dumps and files between the two.
//!
//! Lines are `keyword args...`; in specs, blank lines and lines starting
//! with `#` are ignored. Numbers are decimal, byte strings lower-case hex.
//!
//! # Chunks
//!
//! Spec:
//!
//! ```text
//! segment_size 4096            optional, before any write; default 512 MiB
//! write 1:0001ab.. 1:...       one group (ChunkWriter::write_chunks call) of
//!                              <encoding>:<hex data> chunks; may be empty
//! ```
//!
//! Writing prints `ref <segment>:<offset>` per chunk, in order. The dump of a
//! chunks directory is `segments <n>`, then per segment
//! `segment <index> <file name> size <bytes>` followed by one line per chunk
//! found walking the segment, `chunk <seg>:<off> enc <e> len <n> <hex>`; the
//! walk of a segment stops at its end or after a `bad <seg>:<off>` line for a
//! chunk that cannot be read (bounds, length, CRC or encoding).
//!
//! # Tombstones
//!
//! Spec and dump: `<series ref> <mint> <maxt>` per line, added in order. The
//! dump lists the merged intervals in ref order and ends with
//! `# intervals <n>`.
//!
//! # Meta
//!
//! Spec and dump (the dump always lists every scalar):
//!
//! ```text
//! ulid <ULID>
//! min_time <ms>            max_time <ms>       (each on its own line)
//! num_samples <n>          num_float_samples <n>    num_histogram_samples <n>
//! num_series <n>           num_chunks <n>           num_tombstones <n>
//! level <n>
//! source <ULID>            repeated, in order
//! deletable true|false
//! parent <ULID> <min_time> <max_time>   repeated, in order
//! failed true|false
//! hint <hex of the string> repeated, in order
//! version <n>              (writers always write 1)
//! ```

use std::fmt::Write as _;
use std::path::Path;

use thiserror::Error;

use crate::chunks::{
    ChunkReader, ChunkRef, ChunkWriter, ChunksError, RawChunk, DEFAULT_SEGMENT_SIZE,
};
use crate::meta::{BlockDesc, BlockMeta, BlockUlid};
use crate::tombstones::{Interval, Tombstones};

/// A spec line that cannot be understood.
#[derive(Debug, Error)]
#[error("spec line {line}: {reason}: {text:?}")]
pub struct SpecError {
    pub line: usize,
    pub text: String,
    pub reason: String,
}

/// Non-comment lines with their 1-based numbers, split into words.
fn spec_lines(spec: &str) -> impl Iterator<Item = (usize, &str, Vec<&str>)> {
    spec.lines().enumerate().filter_map(|(i, l)| {
        let t = l.trim();
        (!t.is_empty() && !t.starts_with('#')).then(|| (i + 1, t, t.split_whitespace().collect()))
    })
}

fn err(line: usize, text: &str, reason: impl Into<String>) -> SpecError {
    SpecError {
        line,
        text: text.to_string(),
        reason: reason.into(),
    }
}

/// Lower-case hex.
pub fn hex(b: &[u8]) -> String {
    let mut s = String::with_capacity(2 * b.len());
    for x in b {
        let _ = write!(s, "{x:02x}");
    }
    s
}

/// Parses hex (either case); `None` if malformed.
pub fn unhex(s: &str) -> Option<Vec<u8>> {
    if s.len() & 1 != 0 {
        return None;
    }
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(s.get(i..i + 2)?, 16).ok())
        .collect()
}

/// A parsed chunks spec.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChunksSpec {
    pub segment_size: u64,
    /// Groups of `(encoding, data)`.
    pub writes: Vec<Vec<(u8, Vec<u8>)>>,
}

pub fn parse_chunks_spec(spec: &str) -> Result<ChunksSpec, SpecError> {
    let mut out = ChunksSpec {
        segment_size: DEFAULT_SEGMENT_SIZE,
        writes: Vec::new(),
    };
    for (n, text, words) in spec_lines(spec) {
        match words[0] {
            "segment_size" if words.len() == 2 && out.writes.is_empty() => {
                out.segment_size = words[1]
                    .parse()
                    .ok()
                    .filter(|&s| s > 0)
                    .ok_or_else(|| err(n, text, "bad segment size"))?;
            }
            "write" => {
                let mut group = Vec::new();
                for w in &words[1..] {
                    let (e, h) = w
                        .split_once(':')
                        .ok_or_else(|| err(n, text, "chunk is not <encoding>:<hex>"))?;
                    let e: u8 = e.parse().map_err(|_| err(n, text, "bad encoding"))?;
                    let d = unhex(h).ok_or_else(|| err(n, text, "bad hex"))?;
                    group.push((e, d));
                }
                out.writes.push(group);
            }
            _ => return Err(err(n, text, "unknown line")),
        }
    }
    Ok(out)
}

/// Writes the chunks of `spec` into `dir` and returns the `ref` lines.
pub fn write_chunks_spec(spec: &ChunksSpec, dir: &Path) -> Result<String, ChunksError> {
    let mut w = ChunkWriter::with_segment_size(dir, spec.segment_size)?;
    let mut refs: Vec<ChunkRef> = Vec::new();
    for group in &spec.writes {
        let raw: Vec<RawChunk> = group
            .iter()
            .map(|(e, d)| RawChunk {
                encoding: *e,
                data: d,
            })
            .collect();
        w.write_chunks(&raw, &mut refs)?;
    }
    w.finish()?;
    let mut out = String::new();
    for r in refs {
        let _ = writeln!(out, "ref {r}");
    }
    Ok(out)
}

/// The dump of a chunks directory; opening it may fail, reading chunks
/// does not (bad ones are listed).
pub fn dump_chunks_dir(dir: &Path) -> Result<String, ChunksError> {
    Ok(dump_chunks(&ChunkReader::open(dir)?))
}

/// The dump of an open reader.
pub fn dump_chunks(r: &ChunkReader) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "segments {}", r.segment_count());
    let mut next_seg = 0usize;
    let mut header = |out: &mut String, upto: usize| {
        while next_seg <= upto && next_seg < r.segment_count() {
            let _ = writeln!(
                out,
                "segment {} {} size {}",
                next_seg,
                r.segment_name(next_seg).unwrap_or_default(),
                r.segment_len(next_seg).unwrap_or_default()
            );
            next_seg += 1;
        }
    };
    for c in r.iter() {
        match c {
            Ok(c) => {
                header(&mut out, c.chunk_ref.segment() as usize);
                let _ = writeln!(
                    out,
                    "chunk {} enc {} len {} {}",
                    c.chunk_ref,
                    c.encoding,
                    c.data.len(),
                    hex(c.data)
                );
            }
            Err(e) => {
                let r = bad_ref(&e);
                header(&mut out, r.segment() as usize);
                let _ = writeln!(out, "bad {r}");
            }
        }
    }
    header(&mut out, usize::MAX);
    out
}

fn bad_ref(e: &ChunksError) -> ChunkRef {
    match *e {
        ChunksError::SegmentOutOfRange { chunk_ref, .. }
        | ChunksError::LengthFieldOutOfRange { chunk_ref, .. }
        | ChunksError::BadLength { chunk_ref }
        | ChunksError::ChunkOutOfRange { chunk_ref, .. }
        | ChunksError::Checksum { chunk_ref, .. }
        | ChunksError::InvalidEncoding { chunk_ref, .. } => chunk_ref,
        _ => ChunkRef::default(),
    }
}

pub fn parse_tombstones_spec(spec: &str) -> Result<Tombstones, SpecError> {
    let mut t = Tombstones::new();
    for (n, text, words) in spec_lines(spec) {
        let [r, a, b] = words[..] else {
            return Err(err(n, text, "want <ref> <mint> <maxt>"));
        };
        let bad = || err(n, text, "bad number");
        let r: u64 = r.parse().map_err(|_| bad())?;
        let a: i64 = a.parse().map_err(|_| bad())?;
        let b: i64 = b.parse().map_err(|_| bad())?;
        t.add_interval(r, Interval::new(a, b));
    }
    Ok(t)
}

pub fn dump_tombstones(t: &Tombstones) -> String {
    let mut out = String::new();
    for (r, ivs) in t.iter() {
        for iv in ivs {
            let _ = writeln!(out, "{r} {} {}", iv.mint, iv.maxt);
        }
    }
    let _ = writeln!(out, "# intervals {}", t.total());
    out
}

pub fn parse_meta_spec(spec: &str) -> Result<BlockMeta, SpecError> {
    let mut m = BlockMeta::default();
    for (n, text, words) in spec_lines(spec) {
        let bad = |what: &str| err(n, text, format!("bad {what}"));
        let arg = |i: usize| words.get(i).copied().ok_or_else(|| bad("argument count"));
        let int =
            |i: usize| -> Result<i64, SpecError> { arg(i)?.parse().map_err(|_| bad("number")) };
        let uint =
            |i: usize| -> Result<u64, SpecError> { arg(i)?.parse().map_err(|_| bad("number")) };
        let ulid =
            |i: usize| -> Result<BlockUlid, SpecError> { arg(i)?.parse().map_err(|_| bad("ulid")) };
        let boolean = |i: usize| match arg(i)? {
            "true" => Ok(true),
            "false" => Ok(false),
            _ => Err(bad("boolean")),
        };
        let want = match words[0] {
            "parent" => 4,
            "hint" => words.len().clamp(1, 2),
            _ => 2,
        };
        if words.len() != want {
            return Err(bad("argument count"));
        }
        let s = &mut m.stats;
        match words[0] {
            "ulid" => m.ulid = ulid(1)?,
            "min_time" => m.min_time = int(1)?,
            "max_time" => m.max_time = int(1)?,
            "num_samples" => s.num_samples = uint(1)?,
            "num_float_samples" => s.num_float_samples = uint(1)?,
            "num_histogram_samples" => s.num_histogram_samples = uint(1)?,
            "num_series" => s.num_series = uint(1)?,
            "num_chunks" => s.num_chunks = uint(1)?,
            "num_tombstones" => s.num_tombstones = uint(1)?,
            "level" => m.compaction.level = int(1)?,
            "source" => m.compaction.sources.push(ulid(1)?),
            "deletable" => m.compaction.deletable = boolean(1)?,
            "parent" => m.compaction.parents.push(BlockDesc {
                ulid: ulid(1)?,
                min_time: int(2)?,
                max_time: int(3)?,
            }),
            "failed" => m.compaction.failed = boolean(1)?,
            "hint" => {
                let h = unhex(words.get(1).copied().unwrap_or("")).ok_or_else(|| bad("hex"))?;
                let h = String::from_utf8(h).map_err(|_| bad("UTF-8"))?;
                m.compaction.hints.push(h);
            }
            "version" => m.version = int(1)?,
            _ => return Err(err(n, text, "unknown line")),
        }
    }
    Ok(m)
}

pub fn dump_meta(m: &BlockMeta) -> String {
    let mut o = String::new();
    let s = &m.stats;
    let c = &m.compaction;
    let _ = writeln!(o, "ulid {}", m.ulid);
    let _ = writeln!(o, "min_time {}", m.min_time);
    let _ = writeln!(o, "max_time {}", m.max_time);
    let _ = writeln!(o, "num_samples {}", s.num_samples);
    let _ = writeln!(o, "num_float_samples {}", s.num_float_samples);
    let _ = writeln!(o, "num_histogram_samples {}", s.num_histogram_samples);
    let _ = writeln!(o, "num_series {}", s.num_series);
    let _ = writeln!(o, "num_chunks {}", s.num_chunks);
    let _ = writeln!(o, "num_tombstones {}", s.num_tombstones);
    let _ = writeln!(o, "level {}", c.level);
    for u in &c.sources {
        let _ = writeln!(o, "source {u}");
    }
    let _ = writeln!(o, "deletable {}", c.deletable);
    for p in &c.parents {
        let _ = writeln!(o, "parent {} {} {}", p.ulid, p.min_time, p.max_time);
    }
    let _ = writeln!(o, "failed {}", c.failed);
    for h in &c.hints {
        let _ = writeln!(o, "hint {}", hex(h.as_bytes()));
    }
    let _ = writeln!(o, "version {}", m.version);
    o
}
