//! `meta.json`: what a block holds and which blocks it was made from.
//!
//! # Format (version 1)
//!
//! A JSON object. Prometheus v3.9.1 writes it with Go's
//! `json.MarshalIndent(meta, "", "\t")`, no trailing newline, keys in this
//! order (`?` = left out when zero/false/empty, Go's `omitempty`):
//!
//! ```text
//! {
//!     "ulid": "<26 chars, Crockford base32, upper case>",
//!     "minTime": <int64 ms>,                 first sample time, inclusive
//!     "maxTime": <int64 ms>,                 last sample time, exclusive
//!     "stats": {                             always present ("{}" when all zero)
//!         "numSamples"?, "numFloatSamples"?, "numHistogramSamples"?,
//!         "numSeries"?, "numChunks"?, "numTombstones"?      all uint64
//!     },
//!     "compaction": {
//!         "level": <int>,                    always present
//!         "sources"?: [ "<ulid>", ... ],
//!         "deletable"?: true,
//!         "parents"?: [ { "ulid": .., "minTime": .., "maxTime": .. }, ... ],
//!         "failed"?: true,
//!         "hints"?: [ "from-out-of-order", ... ]
//!     },
//!     "version": 1
//! }
//! ```
//!
//! `stats` carries `omitempty` in Go, but Go never omits a struct, so the key
//! is always written. There is no `out_of_order` key in v3.9.1: a block made
//! from out-of-order data says so with the hint `from-out-of-order`.
//! Indentation is one tab per level, `": "` after keys, and strings escaped
//! as Go escapes them (`<`, `>`, `&`, U+2028, U+2029 as `\u….`; `\b \f \n
//! \r \t` short; other control characters `\u00xx`).
//!
//! # Reading
//!
//! We accept what Go's `json.Unmarshal` into Prometheus' struct accepts:
//! unknown keys are ignored (Thanos adds a `thanos` object), `null` counts
//! as absent, a key matches a field case-insensitively when no exact match
//! exists, numbers must be integers in range. The version must be 1. Two
//! deliberate differences: a ULID with characters outside the base32
//! alphabet is an error (Go silently decodes garbage), and unknown keys are
//! not kept — Prometheus drops them too when it rewrites the file.
//!
//! # Writing
//!
//! [`write_meta`] always writes version 1 and replaces the file atomically
//! (`meta.json.tmp`, fsync, rename, fsync of the directory).

use std::fmt;
use std::io;
use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::sync::Mutex;

use serde_json::{Map, Value};
use thiserror::Error;
use ulid::Ulid;

use crate::fsutil;

/// File name of the block meta inside a block directory.
pub const META_FILENAME: &str = "meta.json";
/// The only meta.json version.
pub const META_VERSION_1: i64 = 1;
/// Hint of a block compacted from out-of-order chunks.
pub const HINT_FROM_OUT_OF_ORDER: &str = "from-out-of-order";
/// Hint of a block made of series that went stale (Prometheus v3.16's
/// stale-series compaction).
pub const HINT_FROM_STALE_SERIES: &str = "from-stale-series";
/// Hint of a block made of selected series only (Prometheus v3.16).
pub const HINT_FROM_SELECTED_SERIES: &str = "from-selected-series";

/// Errors reading or writing `meta.json`.
#[derive(Debug, Error)]
pub enum MetaError {
    #[error("{op} {path:?}: {source}")]
    Io {
        op: &'static str,
        path: PathBuf,
        source: io::Error,
    },
    #[error("meta.json is not valid JSON: {0}")]
    Json(#[from] serde_json::Error),
    #[error("meta.json: {field}: {reason}")]
    Field { field: String, reason: String },
    #[error("unexpected meta file version {0}")]
    Version(i64),
    #[error(transparent)]
    Ulid(#[from] UlidError),
}

/// A string that is not a ULID in the form Prometheus writes and reads.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum UlidError {
    #[error("bad ULID {0:?}: must be 26 characters")]
    Length(String),
    #[error("bad ULID {0:?}: value overflows 128 bits")]
    Overflow(String),
    #[error("bad ULID {0:?}: invalid character")]
    Character(String),
}

/// A block (or source block) identifier.
///
/// The string form is the 26-character Crockford base32 encoding, upper
/// case, as Go's `oklog/ulid` prints it; parsing also accepts lower case,
/// like Go's.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct BlockUlid(pub Ulid);

/// The process-wide generator behind [`BlockUlid::generate`].
static GENERATOR: Mutex<ulid::Generator> = Mutex::new(ulid::Generator::new());

impl BlockUlid {
    /// A new ULID for the current time. Successive calls in this process
    /// return strictly increasing values, even within one millisecond, so
    /// blocks cut back to back sort in creation order.
    pub fn generate() -> BlockUlid {
        loop {
            let next = {
                let mut g = GENERATOR.lock().unwrap_or_else(|e| e.into_inner());
                g.generate()
            };
            match next {
                Ok(u) => return BlockUlid(u),
                // 2^80 ULIDs in one millisecond: wait for the clock.
                Err(_) => std::thread::sleep(std::time::Duration::from_millis(1)),
            }
        }
    }

    /// Milliseconds since the Unix epoch in the ULID's time part.
    pub fn timestamp_ms(&self) -> u64 {
        self.0.timestamp_ms()
    }
}

impl From<Ulid> for BlockUlid {
    fn from(u: Ulid) -> Self {
        BlockUlid(u)
    }
}

impl fmt::Display for BlockUlid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut buf = [0u8; ulid::ULID_LEN];
        f.write_str(self.0.array_to_str(&mut buf))
    }
}

impl FromStr for BlockUlid {
    type Err = UlidError;

    fn from_str(s: &str) -> Result<Self, UlidError> {
        if s.len() != ulid::ULID_LEN {
            return Err(UlidError::Length(s.to_string()));
        }
        // 26 base32 digits hold 130 bits: the first may be at most 7, and Go
        // tests the raw byte, so nothing above '7' passes.
        if s.as_bytes()[0] > b'7' {
            return Err(UlidError::Overflow(s.to_string()));
        }
        Ulid::from_string(s)
            .map(BlockUlid)
            .map_err(|_| UlidError::Character(s.to_string()))
    }
}

/// Counts of what a block holds (all omitted from the JSON when zero).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct BlockStats {
    pub num_samples: u64,
    pub num_float_samples: u64,
    pub num_histogram_samples: u64,
    pub num_series: u64,
    pub num_chunks: u64,
    pub num_tombstones: u64,
}

/// A block a compacted block was made from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct BlockDesc {
    pub ulid: BlockUlid,
    pub min_time: i64,
    pub max_time: i64,
}

/// The compaction history of a block.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Compaction {
    /// 1 for a block cut from the head, 1 + the highest parent level after.
    pub level: i64,
    /// The level-1 blocks everything in this block came from.
    pub sources: Vec<BlockUlid>,
    /// The compaction produced no samples: delete on the next reload.
    pub deletable: bool,
    /// The blocks compacted directly into this one.
    pub parents: Vec<BlockDesc>,
    /// A compaction of this block failed; do not pick it again.
    pub failed: bool,
    /// Free-form notes such as [`HINT_FROM_OUT_OF_ORDER`].
    pub hints: Vec<String>,
}

impl Compaction {
    /// Whether the block was compacted from out-of-order chunks.
    pub fn from_out_of_order(&self) -> bool {
        self.hints.iter().any(|h| h == HINT_FROM_OUT_OF_ORDER)
    }

    /// Whether the block counts for the head's min valid time: Prometheus
    /// leaves out blocks made wholly of out-of-order samples, of stale
    /// series or of selected series (`inOrderBlocksMaxTime`), since the
    /// head may still hold in-order samples of their time range.
    pub fn bounds_in_order_data(&self) -> bool {
        !self.hints.iter().any(|h| {
            h == HINT_FROM_OUT_OF_ORDER
                || h == HINT_FROM_STALE_SERIES
                || h == HINT_FROM_SELECTED_SERIES
        })
    }

    /// Adds the out-of-order hint (once) and sorts the hints, as Prometheus does.
    pub fn set_out_of_order(&mut self) {
        if !self.from_out_of_order() {
            self.hints.push(HINT_FROM_OUT_OF_ORDER.to_string());
            self.hints.sort();
        }
    }
}

/// The contents of `meta.json`.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct BlockMeta {
    pub ulid: BlockUlid,
    /// Inclusive lower bound of the sample times, in milliseconds.
    pub min_time: i64,
    /// Exclusive upper bound of the sample times, in milliseconds.
    pub max_time: i64,
    pub stats: BlockStats,
    pub compaction: Compaction,
    /// Format version; [`write_meta`] always writes 1.
    pub version: i64,
}

impl BlockMeta {
    /// The JSON exactly as Prometheus writes it for this value (the version
    /// as stored here; the file writers force 1).
    pub fn to_json(&self) -> Vec<u8> {
        let mut w = JsonWriter::default();
        w.open('{');
        w.key("ulid");
        w.string(&self.ulid.to_string());
        w.key("minTime");
        w.raw(&self.min_time.to_string());
        w.key("maxTime");
        w.raw(&self.max_time.to_string());

        w.key("stats");
        let s = &self.stats;
        let stats = [
            ("numSamples", s.num_samples),
            ("numFloatSamples", s.num_float_samples),
            ("numHistogramSamples", s.num_histogram_samples),
            ("numSeries", s.num_series),
            ("numChunks", s.num_chunks),
            ("numTombstones", s.num_tombstones),
        ];
        w.open('{');
        for (k, v) in stats {
            if v != 0 {
                w.key(k);
                w.raw(&v.to_string());
            }
        }
        w.close('}');

        w.key("compaction");
        let c = &self.compaction;
        w.open('{');
        w.key("level");
        w.raw(&c.level.to_string());
        if !c.sources.is_empty() {
            w.key("sources");
            w.open('[');
            for u in &c.sources {
                w.item();
                w.string(&u.to_string());
            }
            w.close(']');
        }
        if c.deletable {
            w.key("deletable");
            w.raw("true");
        }
        if !c.parents.is_empty() {
            w.key("parents");
            w.open('[');
            for p in &c.parents {
                w.item();
                w.open('{');
                w.key("ulid");
                w.string(&p.ulid.to_string());
                w.key("minTime");
                w.raw(&p.min_time.to_string());
                w.key("maxTime");
                w.raw(&p.max_time.to_string());
                w.close('}');
            }
            w.close(']');
        }
        if c.failed {
            w.key("failed");
            w.raw("true");
        }
        if !c.hints.is_empty() {
            w.key("hints");
            w.open('[');
            for h in &c.hints {
                w.item();
                w.string(h);
            }
            w.close(']');
        }
        w.close('}');

        w.key("version");
        w.raw(&self.version.to_string());
        w.close('}');
        w.out
    }

    /// Parses `meta.json` contents with Prometheus' rules (see the module
    /// docs), version check included.
    pub fn from_json(bytes: &[u8]) -> Result<BlockMeta, MetaError> {
        let v: Value = serde_json::from_slice(bytes)?;
        let mut m = BlockMeta::default();
        let Some(obj) = as_object(&v, "meta")? else {
            return Err(MetaError::Version(0));
        };
        if let Some(u) = field(obj, "ulid") {
            m.ulid = get_ulid(u, "ulid")?;
        }
        if let Some(x) = field(obj, "minTime") {
            m.min_time = get_i64(x, "minTime")?;
        }
        if let Some(x) = field(obj, "maxTime") {
            m.max_time = get_i64(x, "maxTime")?;
        }
        if let Some(Some(st)) = field(obj, "stats")
            .map(|x| as_object(x, "stats"))
            .transpose()?
        {
            let s = &mut m.stats;
            for (key, slot) in [
                ("numSamples", &mut s.num_samples),
                ("numFloatSamples", &mut s.num_float_samples),
                ("numHistogramSamples", &mut s.num_histogram_samples),
                ("numSeries", &mut s.num_series),
                ("numChunks", &mut s.num_chunks),
                ("numTombstones", &mut s.num_tombstones),
            ] {
                if let Some(x) = field(st, key) {
                    *slot = get_u64(x, key)?;
                }
            }
        }
        if let Some(Some(c)) = field(obj, "compaction")
            .map(|x| as_object(x, "compaction"))
            .transpose()?
        {
            let mc = &mut m.compaction;
            if let Some(x) = field(c, "level") {
                mc.level = get_i64(x, "level")?;
            }
            if let Some(arr) = field(c, "sources")
                .map(|x| as_array(x, "sources"))
                .transpose()?
            {
                mc.sources = arr
                    .into_iter()
                    .flatten()
                    .map(|u| get_ulid(u, "sources"))
                    .collect::<Result<_, _>>()?;
            }
            if let Some(x) = field(c, "deletable") {
                mc.deletable = get_bool(x, "deletable")?;
            }
            if let Some(arr) = field(c, "parents")
                .map(|x| as_array(x, "parents"))
                .transpose()?
            {
                let mut parents = Vec::new();
                for p in arr.into_iter().flatten() {
                    let mut d = BlockDesc::default();
                    if let Some(p) = as_object(p, "parents")? {
                        if let Some(u) = field(p, "ulid") {
                            d.ulid = get_ulid(u, "parents.ulid")?;
                        }
                        if let Some(x) = field(p, "minTime") {
                            d.min_time = get_i64(x, "parents.minTime")?;
                        }
                        if let Some(x) = field(p, "maxTime") {
                            d.max_time = get_i64(x, "parents.maxTime")?;
                        }
                    }
                    parents.push(d);
                }
                mc.parents = parents;
            }
            if let Some(x) = field(c, "failed") {
                mc.failed = get_bool(x, "failed")?;
            }
            if let Some(arr) = field(c, "hints")
                .map(|x| as_array(x, "hints"))
                .transpose()?
            {
                mc.hints = arr
                    .into_iter()
                    .flatten()
                    .map(|h| match h {
                        Value::Null => Ok(String::new()),
                        Value::String(s) => Ok(s.clone()),
                        _ => Err(bad("hints", "not a string")),
                    })
                    .collect::<Result<_, _>>()?;
            }
        }
        if let Some(x) = field(obj, "version") {
            m.version = get_i64(x, "version")?;
        }
        if m.version != META_VERSION_1 {
            return Err(MetaError::Version(m.version));
        }
        Ok(m)
    }
}

/// Reads `<block_dir>/meta.json`.
pub fn read_meta(block_dir: &Path) -> Result<BlockMeta, MetaError> {
    read_meta_file(&block_dir.join(META_FILENAME))
}

/// Reads a meta.json file by path.
pub fn read_meta_file(path: &Path) -> Result<BlockMeta, MetaError> {
    let bytes = std::fs::read(path).map_err(|source| MetaError::Io {
        op: "read",
        path: path.to_path_buf(),
        source,
    })?;
    BlockMeta::from_json(&bytes)
}

/// Writes `<block_dir>/meta.json` atomically, with version 1. Returns the
/// number of bytes written.
pub fn write_meta(block_dir: &Path, meta: &BlockMeta) -> Result<u64, MetaError> {
    write_meta_file(&block_dir.join(META_FILENAME), meta)
}

/// Writes a meta.json file by path (via `<path>.tmp`), with version 1.
pub fn write_meta_file(path: &Path, meta: &BlockMeta) -> Result<u64, MetaError> {
    let mut m = meta.clone();
    m.version = META_VERSION_1;
    let bytes = m.to_json();
    fsutil::write_atomic(path, &bytes).map_err(|source| MetaError::Io {
        op: "write",
        path: path.to_path_buf(),
        source,
    })?;
    Ok(bytes.len() as u64)
}

// ---- reading helpers: Go's json.Unmarshal rules on a serde_json::Value ----

fn bad(field: &str, reason: &str) -> MetaError {
    MetaError::Field {
        field: field.to_string(),
        reason: reason.to_string(),
    }
}

/// The value for struct field `name`: an exact key first, else a key equal
/// ignoring ASCII case (Go's fallback). `null` is the same as absent.
fn field<'a>(obj: &'a Map<String, Value>, name: &str) -> Option<&'a Value> {
    let v = obj.get(name).or_else(|| {
        obj.iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v)
    })?;
    (!v.is_null()).then_some(v)
}

fn as_object<'a>(v: &'a Value, name: &str) -> Result<Option<&'a Map<String, Value>>, MetaError> {
    match v {
        Value::Null => Ok(None),
        Value::Object(o) => Ok(Some(o)),
        _ => Err(bad(name, "not an object")),
    }
}

fn as_array<'a>(v: &'a Value, name: &str) -> Result<Option<&'a Vec<Value>>, MetaError> {
    match v {
        Value::Null => Ok(None),
        Value::Array(a) => Ok(Some(a)),
        _ => Err(bad(name, "not an array")),
    }
}

fn get_i64(v: &Value, name: &str) -> Result<i64, MetaError> {
    v.as_i64()
        .ok_or_else(|| bad(name, "not an integer in the int64 range"))
}

fn get_u64(v: &Value, name: &str) -> Result<u64, MetaError> {
    v.as_u64()
        .ok_or_else(|| bad(name, "not an integer in the uint64 range"))
}

fn get_bool(v: &Value, name: &str) -> Result<bool, MetaError> {
    v.as_bool().ok_or_else(|| bad(name, "not a boolean"))
}

fn get_ulid(v: &Value, name: &str) -> Result<BlockUlid, MetaError> {
    match v {
        // A null array element decodes to the zero ULID in Go.
        Value::Null => Ok(BlockUlid::default()),
        Value::String(s) => Ok(s.parse()?),
        _ => Err(bad(name, "not a string")),
    }
}

// ---- writing: Go's MarshalIndent(v, "", "\t") layout ----

/// Emits JSON with Go's indentation: every value of a non-empty object or
/// array on its own line, one tab deeper; empty ones as `{}` / `[]`.
#[derive(Default)]
struct JsonWriter {
    out: Vec<u8>,
    depth: usize,
    /// Whether the innermost open container has an element yet.
    has_items: Vec<bool>,
}

impl JsonWriter {
    fn open(&mut self, c: char) {
        self.out.push(c as u8);
        self.depth += 1;
        self.has_items.push(false);
    }

    fn close(&mut self, c: char) {
        self.depth -= 1;
        if self.has_items.pop() == Some(true) {
            self.newline();
        }
        self.out.push(c as u8);
    }

    /// Starts the next element of the innermost container.
    fn item(&mut self) {
        if let Some(has) = self.has_items.last_mut() {
            if *has {
                self.out.push(b',');
            }
            *has = true;
        }
        self.newline();
    }

    fn key(&mut self, k: &str) {
        self.item();
        self.string(k);
        self.out.extend_from_slice(b": ");
    }

    fn newline(&mut self) {
        self.out.push(b'\n');
        for _ in 0..self.depth {
            self.out.push(b'\t');
        }
    }

    fn raw(&mut self, s: &str) {
        self.out.extend_from_slice(s.as_bytes());
    }

    /// A string escaped as Go's encoding/json does with HTML escaping on.
    fn string(&mut self, s: &str) {
        const HEX: &[u8; 16] = b"0123456789abcdef";
        let o = &mut self.out;
        o.push(b'"');
        for c in s.chars() {
            match c {
                '"' => o.extend_from_slice(b"\\\""),
                '\\' => o.extend_from_slice(b"\\\\"),
                '\u{8}' => o.extend_from_slice(b"\\b"),
                '\u{c}' => o.extend_from_slice(b"\\f"),
                '\n' => o.extend_from_slice(b"\\n"),
                '\r' => o.extend_from_slice(b"\\r"),
                '\t' => o.extend_from_slice(b"\\t"),
                '\u{0}'..='\u{1f}' | '<' | '>' | '&' => {
                    let b = c as u8;
                    o.extend_from_slice(b"\\u00");
                    o.push(HEX[(b >> 4) as usize]);
                    o.push(HEX[(b & 0xf) as usize]);
                }
                '\u{2028}' => o.extend_from_slice(b"\\u2028"),
                '\u{2029}' => o.extend_from_slice(b"\\u2029"),
                _ => {
                    let mut buf = [0u8; 4];
                    o.extend_from_slice(c.encode_utf8(&mut buf).as_bytes());
                }
            }
        }
        o.push(b'"');
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ulid(s: &str) -> BlockUlid {
        s.parse().unwrap()
    }

    /// A meta.json as Prometheus v3.9.1 writes it for a level-2 block.
    const FULL: &str = "{\n\t\"ulid\": \"01HQ3ZJ5A9Y1N1ZK0F3M6D7X2B\",\n\t\"minTime\": 1700000000000,\n\t\"maxTime\": 1700007200000,\n\t\"stats\": {\n\t\t\"numSamples\": 120,\n\t\t\"numFloatSamples\": 120,\n\t\t\"numSeries\": 2,\n\t\t\"numChunks\": 2\n\t},\n\t\"compaction\": {\n\t\t\"level\": 2,\n\t\t\"sources\": [\n\t\t\t\"01HQ3ZJ5A9Y1N1ZK0F3M6D7X2A\",\n\t\t\t\"01HQ3ZJ5A9Y1N1ZK0F3M6D7X29\"\n\t\t],\n\t\t\"parents\": [\n\t\t\t{\n\t\t\t\t\"ulid\": \"01HQ3ZJ5A9Y1N1ZK0F3M6D7X2A\",\n\t\t\t\t\"minTime\": 1700000000000,\n\t\t\t\t\"maxTime\": 1700003600000\n\t\t\t}\n\t\t],\n\t\t\"hints\": [\n\t\t\t\"from-out-of-order\"\n\t\t]\n\t},\n\t\"version\": 1\n}";

    #[test]
    fn full_round_trip_is_byte_identical() {
        let m = BlockMeta::from_json(FULL.as_bytes()).unwrap();
        assert_eq!(m.ulid, ulid("01HQ3ZJ5A9Y1N1ZK0F3M6D7X2B"));
        assert_eq!(m.stats.num_series, 2);
        assert_eq!(m.compaction.sources.len(), 2);
        assert!(m.compaction.from_out_of_order());
        assert_eq!(String::from_utf8(m.to_json()).unwrap(), FULL);
    }

    #[test]
    fn empty_stats_and_level_zero() {
        let m = BlockMeta {
            version: 1,
            ..Default::default()
        };
        let want = "{\n\t\"ulid\": \"00000000000000000000000000\",\n\t\"minTime\": 0,\n\t\"maxTime\": 0,\n\t\"stats\": {},\n\t\"compaction\": {\n\t\t\"level\": 0\n\t},\n\t\"version\": 1\n}";
        assert_eq!(String::from_utf8(m.to_json()).unwrap(), want);
    }

    #[test]
    fn go_string_escapes() {
        let mut w = JsonWriter::default();
        w.string("a\"\\\u{8}\u{c}\n\r\t\u{1}\u{1f}<>&\u{7f}é\u{2028}\u{2029}😀");
        assert_eq!(
            String::from_utf8(w.out).unwrap(),
            "\"a\\\"\\\\\\b\\f\\n\\r\\t\\u0001\\u001f\\u003c\\u003e\\u0026\u{7f}é\\u2028\\u2029😀\""
        );
    }

    #[test]
    fn tolerant_reading() {
        let j = r#"{"ULID":"01hq3zj5a9y1n1zk0f3m6d7x2b","minTime":5,"maxTime":null,"stats":null,
            "compaction":{"level":3,"sources":null,"parents":[{"ulid":"01HQ3ZJ5A9Y1N1ZK0F3M6D7X2A"}],
            "extra":[1,2]},"thanos":{"labels":{"a":"b"}},"version":1}"#;
        let m = BlockMeta::from_json(j.as_bytes()).unwrap();
        assert_eq!(m.ulid, ulid("01HQ3ZJ5A9Y1N1ZK0F3M6D7X2B"));
        assert_eq!(m.min_time, 5);
        assert_eq!(m.compaction.level, 3);
        assert_eq!(m.compaction.parents[0].max_time, 0);
    }

    #[test]
    fn rejects() {
        for j in [
            r#"{"version":2}"#,
            r#"{}"#,
            r#"[]"#,
            r#"{"version":1,"minTime":1.5}"#,
            r#"{"version":1,"minTime":"1"}"#,
            r#"{"version":1,"stats":{"numSeries":-1}}"#,
            r#"{"version":1,"ulid":"81HQ3ZJ5A9Y1N1ZK0F3M6D7X2B"}"#,
            r#"{"version":1,"ulid":"01HQ3ZJ5A9Y1N1ZK0F3M6D7X2"}"#,
            r#"{"version":1,"ulid":"01HQ3ZJ5A9Y1N1ZK0F3M6D7XUU"}"#,
            r#"{"version":1"#,
        ] {
            assert!(BlockMeta::from_json(j.as_bytes()).is_err(), "{j}");
        }
    }

    #[test]
    fn generated_ulids_increase() {
        let mut prev = BlockUlid::generate();
        for _ in 0..10_000 {
            let u = BlockUlid::generate();
            assert!(u > prev);
            prev = u;
        }
    }

    #[test]
    fn write_is_atomic_and_forces_version() {
        let dir = tempfile::tempdir().unwrap();
        let m = BlockMeta {
            ulid: BlockUlid::generate(),
            min_time: -5,
            max_time: 10,
            ..Default::default()
        };
        let n = write_meta(dir.path(), &m).unwrap();
        let bytes = std::fs::read(dir.path().join(META_FILENAME)).unwrap();
        assert_eq!(n, bytes.len() as u64);
        assert!(!dir.path().join("meta.json.tmp").exists());
        let back = read_meta(dir.path()).unwrap();
        assert_eq!(back.version, 1);
        assert_eq!(back.ulid, m.ulid);
        assert_eq!(back.min_time, -5);
    }
}
