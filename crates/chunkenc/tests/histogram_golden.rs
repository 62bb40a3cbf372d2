//! Golden vectors of native histogram chunks written by Prometheus v3.16.0
//! itself (`interop/cmd/promhistchunks`, which documents the format and how
//! to regenerate): every sequence is appended again with our chunks as
//! Prometheus' head appends it, and must give the same append outcomes,
//! the same append-only verdicts, the same cuts and byte-identical
//! chunks; decoding Prometheus' bytes must give what Prometheus' iterators
//! give, bit for bit.
//!
//! The same for the start-timestamp encodings (histogramST and
//! floathistogramST, `interop/cmd/promhiststchunks`): samples carry an ST,
//! which must be encoded and decoded as Prometheus does.

use ferrite_chunkenc::{
    AppendError, AppendOutcome, CounterResetHeader, FloatHistogramChunk, FloatHistogramIterator,
    FloatHistogramStChunk, HistogramChunk, HistogramIterator, HistogramStChunk,
    MIN_SAMPLES_PER_HISTOGRAM_CHUNK, TARGET_BYTES_PER_HISTOGRAM_CHUNK,
};
use ferrite_model::histogram_record::{self, float_record, int_record};
use ferrite_model::{FloatHistogram, Histogram};

const VECTORS: &str = include_str!("../testdata/prometheus_histogram_vectors.txt");
const ST_VECTORS: &str = include_str!("../testdata/prometheus_histogram_st_vectors.txt");
const FLOAT_ST_VECTORS: &str =
    include_str!("../testdata/prometheus_float_histogram_st_vectors.txt");

#[derive(Debug)]
enum Event {
    Cut {
        size: bool,
    },
    Sample {
        st: i64,
        t: i64,
        record: String,
        outcome: String,
        append_only: Option<String>,
    },
}

#[derive(Debug, Default)]
struct GoldenChunk {
    bytes: Vec<u8>,
    decoded: Vec<String>,
    decoded_float: Vec<String>,
}

#[derive(Debug)]
struct Vector {
    name: String,
    float: bool,
    events: Vec<Event>,
    chunks: Vec<GoldenChunk>,
}

fn parse_hex(s: &str) -> Vec<u8> {
    assert_eq!(s.len() & 1, 0, "odd hex length");
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).expect("hex"))
        .collect()
}

fn vectors() -> Vec<Vector> {
    parse_vectors(VECTORS, false)
}

/// Parses a vectors file; `with_st`: sample and decoded records start with
/// the start timestamp (the ST files).
fn parse_vectors(text: &str, with_st: bool) -> Vec<Vector> {
    let mut out: Vec<Vector> = Vec::new();
    for line in text
        .lines()
        .filter(|l| !l.starts_with('#') && !l.is_empty())
    {
        let (key, rest) = line.split_once(' ').unwrap_or((line, ""));
        if key == "vector" {
            let (name, kind) = rest.split_once(' ').expect("vector name kind");
            // The ST files add the ST pattern.
            let (kind, pattern) = kind.split_once(' ').unwrap_or((kind, ""));
            out.push(Vector {
                name: format!("{name} {pattern}"),
                float: kind == "float",
                events: Vec::new(),
                chunks: Vec::new(),
            });
            continue;
        }
        let v = out.last_mut().expect("record before a vector");
        match key {
            "cut" => v.events.push(Event::Cut {
                size: rest == "size",
            }),
            "sample" => {
                let (st, rest) = if with_st {
                    let (st, rest) = rest.split_once(' ').expect("st t record");
                    (st.parse().expect("st"), rest)
                } else {
                    (0, rest)
                };
                let (t, record) = rest.split_once(' ').expect("t record");
                v.events.push(Event::Sample {
                    st,
                    t: t.parse().expect("t"),
                    record: record.to_string(),
                    outcome: String::new(),
                    append_only: None,
                });
            }
            "appendonly" | "outcome" => match v.events.last_mut() {
                Some(Event::Sample {
                    outcome,
                    append_only,
                    ..
                }) => {
                    if key == "outcome" {
                        *outcome = rest.to_string();
                    } else {
                        *append_only = Some(rest.to_string());
                    }
                }
                _ => panic!("{key} without a sample"),
            },
            "chunk" => v.chunks.push(GoldenChunk {
                bytes: parse_hex(rest),
                ..GoldenChunk::default()
            }),
            "decoded" | "decodedf" => {
                let c = v.chunks.last_mut().expect("decoded before chunk");
                if key == "decoded" {
                    c.decoded.push(rest.to_string());
                } else {
                    c.decoded_float.push(rest.to_string());
                }
            }
            "end" => {}
            other => panic!("unknown record {other}"),
        }
    }
    out
}

// Records, as the generator writes them (ferrite-model's text form).

fn parse_int(record: &str) -> Histogram {
    histogram_record::parse_int_record(record).expect("H record")
}

fn parse_float(record: &str) -> FloatHistogram {
    histogram_record::parse_float_record(record).expect("F record")
}

// Replaying with our chunks, as the generator's head does.

/// What the chunk kinds offer the replay. `st` is ignored by the plain
/// encodings (always 0 in their vectors).
trait Chunk: Clone + Default {
    type H;
    fn parse(record: &str) -> Self::H;
    fn append(
        &mut self,
        prev: Option<&Self>,
        st: i64,
        t: i64,
        h: &Self::H,
    ) -> Result<AppendOutcome<Self>, AppendError>;
    fn append_only(&mut self, st: i64, t: i64, h: &Self::H) -> Result<(), AppendError>;
    fn bytes(&self) -> &[u8];
    fn num_samples(&self) -> u16;
    /// Decodes chunk bytes into records: the samples, and the float view.
    fn decode(bytes: &[u8]) -> (Vec<String>, Vec<String>);
    fn reopen(bytes: Vec<u8>) -> Result<Self, ferrite_chunkenc::ChunkError>;
    fn header(&self) -> CounterResetHeader;
}

impl Chunk for HistogramChunk {
    type H = Histogram;
    fn parse(record: &str) -> Histogram {
        parse_int(record)
    }
    fn append(
        &mut self,
        prev: Option<&Self>,
        _st: i64,
        t: i64,
        h: &Histogram,
    ) -> Result<AppendOutcome<Self>, AppendError> {
        HistogramChunk::append(self, prev, t, h)
    }
    fn append_only(&mut self, _st: i64, t: i64, h: &Histogram) -> Result<(), AppendError> {
        HistogramChunk::append_only(self, t, h)
    }
    fn bytes(&self) -> &[u8] {
        HistogramChunk::bytes(self)
    }
    fn num_samples(&self) -> u16 {
        HistogramChunk::num_samples(self)
    }
    fn decode(bytes: &[u8]) -> (Vec<String>, Vec<String>) {
        let mut it = HistogramIterator::new(bytes);
        let (mut h, mut fh) = (Histogram::default(), FloatHistogram::default());
        let (mut ints, mut floats) = (Vec::new(), Vec::new());
        while let Some(t) = it.next_into(&mut h) {
            it.at_float(&mut fh);
            ints.push(format!("{t} {}", int_record(&h)));
            floats.push(format!("{t} {}", float_record(&fh)));
        }
        assert_eq!(it.error(), None);
        (ints, floats)
    }
    fn reopen(bytes: Vec<u8>) -> Result<Self, ferrite_chunkenc::ChunkError> {
        HistogramChunk::from_bytes(bytes)
    }
    fn header(&self) -> CounterResetHeader {
        self.counter_reset_header()
    }
}

impl Chunk for FloatHistogramChunk {
    type H = FloatHistogram;
    fn parse(record: &str) -> FloatHistogram {
        parse_float(record)
    }
    fn append(
        &mut self,
        prev: Option<&Self>,
        _st: i64,
        t: i64,
        h: &FloatHistogram,
    ) -> Result<AppendOutcome<Self>, AppendError> {
        FloatHistogramChunk::append(self, prev, t, h)
    }
    fn append_only(&mut self, _st: i64, t: i64, h: &FloatHistogram) -> Result<(), AppendError> {
        FloatHistogramChunk::append_only(self, t, h)
    }
    fn bytes(&self) -> &[u8] {
        FloatHistogramChunk::bytes(self)
    }
    fn num_samples(&self) -> u16 {
        FloatHistogramChunk::num_samples(self)
    }
    fn decode(bytes: &[u8]) -> (Vec<String>, Vec<String>) {
        let mut it = FloatHistogramIterator::new(bytes);
        let mut fh = FloatHistogram::default();
        let mut floats = Vec::new();
        while let Some(t) = it.next_into(&mut fh) {
            floats.push(format!("{t} {}", float_record(&fh)));
        }
        assert_eq!(it.error(), None);
        (floats.clone(), floats)
    }
    fn reopen(bytes: Vec<u8>) -> Result<Self, ferrite_chunkenc::ChunkError> {
        FloatHistogramChunk::from_bytes(bytes)
    }
    fn header(&self) -> CounterResetHeader {
        self.counter_reset_header()
    }
}

impl Chunk for HistogramStChunk {
    type H = Histogram;
    fn parse(record: &str) -> Histogram {
        parse_int(record)
    }
    fn append(
        &mut self,
        prev: Option<&Self>,
        st: i64,
        t: i64,
        h: &Histogram,
    ) -> Result<AppendOutcome<Self>, AppendError> {
        HistogramStChunk::append(self, prev, st, t, h)
    }
    fn append_only(&mut self, st: i64, t: i64, h: &Histogram) -> Result<(), AppendError> {
        HistogramStChunk::append_only(self, st, t, h)
    }
    fn bytes(&self) -> &[u8] {
        HistogramStChunk::bytes(self)
    }
    fn num_samples(&self) -> u16 {
        HistogramStChunk::num_samples(self)
    }
    fn decode(bytes: &[u8]) -> (Vec<String>, Vec<String>) {
        let mut it = HistogramIterator::new_st(bytes);
        let mut h = Histogram::default();
        let mut out = Vec::new();
        while let Some(t) = it.next_into(&mut h) {
            out.push(format!("{} {t} {}", it.start_timestamp(), int_record(&h)));
        }
        assert_eq!(it.error(), None);
        (out, Vec::new())
    }
    fn reopen(bytes: Vec<u8>) -> Result<Self, ferrite_chunkenc::ChunkError> {
        HistogramStChunk::from_bytes(bytes)
    }
    fn header(&self) -> CounterResetHeader {
        self.counter_reset_header()
    }
}

impl Chunk for FloatHistogramStChunk {
    type H = FloatHistogram;
    fn parse(record: &str) -> FloatHistogram {
        parse_float(record)
    }
    fn append(
        &mut self,
        prev: Option<&Self>,
        st: i64,
        t: i64,
        h: &FloatHistogram,
    ) -> Result<AppendOutcome<Self>, AppendError> {
        FloatHistogramStChunk::append(self, prev, st, t, h)
    }
    fn append_only(&mut self, st: i64, t: i64, h: &FloatHistogram) -> Result<(), AppendError> {
        FloatHistogramStChunk::append_only(self, st, t, h)
    }
    fn bytes(&self) -> &[u8] {
        FloatHistogramStChunk::bytes(self)
    }
    fn num_samples(&self) -> u16 {
        FloatHistogramStChunk::num_samples(self)
    }
    fn decode(bytes: &[u8]) -> (Vec<String>, Vec<String>) {
        let mut it = FloatHistogramIterator::new_st(bytes);
        let mut fh = FloatHistogram::default();
        let mut out = Vec::new();
        while let Some(t) = it.next_into(&mut fh) {
            out.push(format!(
                "{} {t} {}",
                it.start_timestamp(),
                float_record(&fh)
            ));
        }
        assert_eq!(it.error(), None);
        (out, Vec::new())
    }
    fn reopen(bytes: Vec<u8>) -> Result<Self, ferrite_chunkenc::ChunkError> {
        FloatHistogramStChunk::from_bytes(bytes)
    }
    fn header(&self) -> CounterResetHeader {
        self.counter_reset_header()
    }
}

fn verdict(r: &Result<(), AppendError>) -> &'static str {
    match r {
        Ok(()) => "ok",
        Err(AppendError::CounterReset) => "counter reset",
        Err(AppendError::SchemaChange) => "schema change",
        Err(AppendError::LayoutChange) => "layout change",
        Err(_) => "other error",
    }
}

fn go_verdict(s: &str) -> &'static str {
    if s == "ok" {
        "ok"
    } else if s.contains("counter reset") {
        "counter reset"
    } else if s.contains("schema change") {
        "schema change"
    } else if s.contains("layout change") {
        "layout change"
    } else {
        panic!("unknown append-only error {s}")
    }
}

/// Replays a vector; returns our chunks.
fn replay<C: Chunk>(v: &Vector) -> Vec<C> {
    let mut chunks = vec![C::default()];
    let mut just_cut = false;
    for (i, e) in v.events.iter().enumerate() {
        let cur_full = |chunks: &[C]| {
            let c = chunks.last().expect("a chunk");
            c.bytes().len() >= 2 * TARGET_BYTES_PER_HISTOGRAM_CHUNK
                && c.num_samples() >= MIN_SAMPLES_PER_HISTOGRAM_CHUNK
        };
        match e {
            Event::Cut { size } => {
                if *size {
                    assert!(cur_full(&chunks), "{}: event {i}: size cut early", v.name);
                }
                chunks.push(C::default());
                just_cut = true;
            }
            Event::Sample {
                st,
                t,
                record,
                outcome,
                append_only,
            } => {
                let sized_cut_before =
                    i > 0 && matches!(v.events[i - 1], Event::Cut { size: true });
                assert!(
                    sized_cut_before || !cur_full(&chunks),
                    "{}: event {i}: missed a size cut",
                    v.name
                );
                let h = C::parse(record);
                if let Some(expected) = append_only {
                    let mut copy = chunks.last().expect("a chunk").clone();
                    let before = copy.bytes().to_vec();
                    let r = copy.append_only(*st, *t, &h);
                    assert_eq!(
                        verdict(&r),
                        go_verdict(expected),
                        "{}: event {i}: append-only verdict ({expected})",
                        v.name
                    );
                    if r.is_err() {
                        assert_eq!(copy.bytes(), &before[..], "{}: event {i}", v.name);
                    }
                }
                let n = chunks.len();
                let (done, cur) = chunks.split_at_mut(n - 1);
                let prev = if just_cut { done.last() } else { None };
                just_cut = false;
                let got = cur[0]
                    .append(prev, *st, *t, &h)
                    .unwrap_or_else(|e| panic!("{}: event {i}: {e}", v.name));
                let name = match got {
                    AppendOutcome::Appended => "appended",
                    AppendOutcome::Recoded => "recoded",
                    AppendOutcome::NewChunk(c) => {
                        chunks.push(c);
                        "new"
                    }
                };
                assert_eq!(name, outcome, "{}: event {i}: outcome", v.name);
            }
        }
    }
    chunks
}

fn check<C: Chunk>(v: &Vector) {
    let ours = replay::<C>(v);
    assert_eq!(ours.len(), v.chunks.len(), "{}: chunk count", v.name);
    for (n, (c, golden)) in ours.iter().zip(&v.chunks).enumerate() {
        assert_eq!(
            hex(c.bytes()),
            hex(&golden.bytes),
            "{}: chunk {n} differs",
            v.name
        );
        let (ints, floats) = C::decode(&golden.bytes);
        assert_eq!(ints, golden.decoded, "{}: chunk {n} decoded", v.name);
        if !golden.decoded_float.is_empty() {
            assert_eq!(
                floats, golden.decoded_float,
                "{}: chunk {n} float view",
                v.name
            );
        }
        let reopened = C::reopen(golden.bytes.clone())
            .unwrap_or_else(|e| panic!("{}: chunk {n} reopens: {e}", v.name));
        assert_eq!(reopened.bytes(), &golden.bytes[..]);
        assert_eq!(reopened.header(), c.header());
    }
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

#[test]
fn vectors_cover_the_cases() {
    let vs = vectors();
    assert!(vs.len() >= 70, "only {} vectors", vs.len());
    let outcomes = |o: &str| {
        vs.iter()
            .flat_map(|v| &v.events)
            .filter(|e| matches!(e, Event::Sample { outcome, .. } if outcome == o))
            .count()
    };
    assert!(outcomes("recoded") > 100);
    assert!(outcomes("new") > 100);
    let cuts = |size| {
        vs.iter()
            .flat_map(|v| &v.events)
            .filter(|e| matches!(e, Event::Cut { size: s } if *s == size))
            .count()
    };
    assert!(cuts(true) > 5 && cuts(false) > 20);
    let headers: std::collections::HashSet<u8> = vs
        .iter()
        .flat_map(|v| &v.chunks)
        .filter_map(|c| c.bytes.get(2).copied())
        .collect();
    assert_eq!(headers.len(), 4, "all four counter-reset headers occur");
}

#[test]
fn integer_chunks_are_byte_identical_to_prometheus() {
    let vs = vectors();
    let ints: Vec<_> = vs.iter().filter(|v| !v.float).collect();
    assert!(ints.len() >= 35);
    for v in ints {
        check::<HistogramChunk>(v);
    }
}

#[test]
fn float_chunks_are_byte_identical_to_prometheus() {
    let vs = vectors();
    let floats: Vec<_> = vs.iter().filter(|v| v.float).collect();
    assert!(floats.len() >= 35);
    for v in floats {
        check::<FloatHistogramChunk>(v);
    }
}

#[test]
fn st_vectors_cover_the_cases() {
    for (text, float) in [(ST_VECTORS, false), (FLOAT_ST_VECTORS, true)] {
        let vs = parse_vectors(text, true);
        assert!(vs.len() >= 20, "only {} vectors", vs.len());
        assert!(vs.iter().all(|v| v.float == float));
        let outcomes = |o: &str| {
            vs.iter()
                .flat_map(|v| &v.events)
                .filter(|e| matches!(e, Event::Sample { outcome, .. } if outcome == o))
                .count()
        };
        assert!(outcomes("recoded") > 30 && outcomes("new") > 30);
        // ST headers: none, first ST only, changes early and late, and the
        // forced record at sample 127.
        let headers: std::collections::HashSet<u8> = vs
            .iter()
            .flat_map(|v| &v.chunks)
            .filter_map(|c| c.bytes.get(2).copied())
            .collect();
        for h in [0x00, 0x80, 0x81, 0x7f, 0xff] {
            assert!(headers.contains(&h), "ST header {h:#04x} missing");
        }
        // All four counter-reset headers, in byte 0.
        let resets: std::collections::HashSet<u8> = vs
            .iter()
            .flat_map(|v| &v.chunks)
            .filter_map(|c| c.bytes.first().map(|b| b & 0xc0))
            .collect();
        assert_eq!(resets.len(), 4);
        // More than 127 samples in a chunk.
        assert!(vs
            .iter()
            .flat_map(|v| &v.chunks)
            .any(|c| c.decoded.len() > 128));
    }
}

#[test]
fn histogram_st_chunks_are_byte_identical_to_prometheus() {
    for v in parse_vectors(ST_VECTORS, true) {
        check::<HistogramStChunk>(&v);
    }
}

#[test]
fn float_histogram_st_chunks_are_byte_identical_to_prometheus() {
    for v in parse_vectors(FLOAT_ST_VECTORS, true) {
        check::<FloatHistogramStChunk>(&v);
    }
}
