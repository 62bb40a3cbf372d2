//! Codecs for the WAL records Prometheus v3.9.1 writes.
//!
//! Every record starts with a type byte. Fixed-width integers are big-endian,
//! varints are Go's `binary.Varint`/`Uvarint`, strings are uvarint-length
//! prefixed. Sample-like records store the first ref and timestamp in full and
//! every entry as a varint delta from them. As in Prometheus, decoders are
//! strict: truncation and trailing bytes are errors, so a damaged record is
//! never misread. Decoders fill caller-provided vectors so replay reuses them.

use std::str;

/// The kind of a WAL record, from its first byte.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RecordType {
    Series,
    Samples,
    Tombstones,
    Exemplars,
    MmapMarkers,
    Metadata,
    HistogramSamples,
    FloatHistogramSamples,
    CustomBucketsHistogramSamples,
    CustomBucketsFloatHistogramSamples,
    Unknown(u8),
}

impl RecordType {
    /// The type of a record (`Unknown(255)` for an empty one).
    pub fn of(rec: &[u8]) -> RecordType {
        match rec.first() {
            Some(&b) => RecordType::from_u8(b),
            None => RecordType::Unknown(255),
        }
    }

    pub fn from_u8(b: u8) -> RecordType {
        match b {
            1 => RecordType::Series,
            2 => RecordType::Samples,
            3 => RecordType::Tombstones,
            4 => RecordType::Exemplars,
            5 => RecordType::MmapMarkers,
            6 => RecordType::Metadata,
            7 => RecordType::HistogramSamples,
            8 => RecordType::FloatHistogramSamples,
            9 => RecordType::CustomBucketsHistogramSamples,
            10 => RecordType::CustomBucketsFloatHistogramSamples,
            b => RecordType::Unknown(b),
        }
    }

    pub fn as_u8(self) -> u8 {
        match self {
            RecordType::Series => 1,
            RecordType::Samples => 2,
            RecordType::Tombstones => 3,
            RecordType::Exemplars => 4,
            RecordType::MmapMarkers => 5,
            RecordType::Metadata => 6,
            RecordType::HistogramSamples => 7,
            RecordType::FloatHistogramSamples => 8,
            RecordType::CustomBucketsHistogramSamples => 9,
            RecordType::CustomBucketsFloatHistogramSamples => 10,
            RecordType::Unknown(b) => b,
        }
    }
}

/// A record that cannot be decoded.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RecordError {
    #[error("record type {found} where {expected} was expected")]
    UnexpectedType { expected: &'static str, found: u8 },
    #[error("record truncated at byte {0}")]
    Truncated(usize),
    #[error("invalid varint at byte {0}")]
    BadVarint(usize),
    #[error("label string is not valid UTF-8 at byte {0}")]
    InvalidUtf8(usize),
    #[error("unexpected {0} bytes left in record")]
    TrailingBytes(usize),
    #[error("length {0} is larger than the record")]
    BadLength(u64),
}

/// A float sample of a series.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RefSample {
    pub series_ref: u64,
    pub t: i64,
    pub v: f64,
}

/// Deleted interval(s) of a series (inclusive).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stone {
    pub series_ref: u64,
    pub intervals: Vec<(i64, i64)>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct RefExemplar {
    pub series_ref: u64,
    pub t: i64,
    pub v: f64,
    pub labels: Vec<(String, String)>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RefMmapMarker {
    pub series_ref: u64,
    pub mmap_ref: u64,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RefMetadata {
    pub series_ref: u64,
    pub metric_type: u8,
    pub unit: String,
    pub help: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Span {
    pub offset: i32,
    pub length: u32,
}

/// Schema number of custom-bucket (NHCB) histograms.
pub const CUSTOM_BUCKETS_SCHEMA: i32 = -53;

/// An integer native histogram (bucket counts delta-encoded).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Histogram {
    pub counter_reset_hint: u8,
    pub schema: i32,
    pub zero_threshold: f64,
    pub zero_count: u64,
    pub count: u64,
    pub sum: f64,
    pub positive_spans: Vec<Span>,
    pub negative_spans: Vec<Span>,
    pub positive_buckets: Vec<i64>,
    pub negative_buckets: Vec<i64>,
    pub custom_values: Vec<f64>,
}

/// A float native histogram.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct FloatHistogram {
    pub counter_reset_hint: u8,
    pub schema: i32,
    pub zero_threshold: f64,
    pub zero_count: f64,
    pub count: f64,
    pub sum: f64,
    pub positive_spans: Vec<Span>,
    pub negative_spans: Vec<Span>,
    pub positive_buckets: Vec<f64>,
    pub negative_buckets: Vec<f64>,
    pub custom_values: Vec<f64>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct RefHistogramSample {
    pub series_ref: u64,
    pub t: i64,
    pub h: Histogram,
}

#[derive(Debug, Clone, PartialEq)]
pub struct RefFloatHistogramSample {
    pub series_ref: u64,
    pub t: i64,
    pub h: FloatHistogram,
}

/// A bounds-checked cursor over a record.
struct Dec<'a> {
    b: &'a [u8],
    pos: usize,
}

impl<'a> Dec<'a> {
    fn new(rec: &'a [u8], want: &[RecordType], name: &'static str) -> Result<Self, RecordError> {
        let t = RecordType::of(rec);
        if !want.contains(&t) {
            return Err(RecordError::UnexpectedType {
                expected: name,
                found: t.as_u8(),
            });
        }
        Ok(Dec { b: rec, pos: 1 })
    }

    fn remaining(&self) -> usize {
        self.b.len() - self.pos
    }

    fn bytes(&mut self, n: usize) -> Result<&'a [u8], RecordError> {
        if self.remaining() < n {
            return Err(RecordError::Truncated(self.pos));
        }
        let s = &self.b[self.pos..self.pos + n];
        self.pos += n;
        Ok(s)
    }

    fn byte(&mut self) -> Result<u8, RecordError> {
        Ok(self.bytes(1)?[0])
    }

    fn be64(&mut self) -> Result<u64, RecordError> {
        let s = self.bytes(8)?;
        let mut a = [0u8; 8];
        a.copy_from_slice(s);
        Ok(u64::from_be_bytes(a))
    }

    fn f64(&mut self) -> Result<f64, RecordError> {
        Ok(f64::from_bits(self.be64()?))
    }

    fn uvarint(&mut self) -> Result<u64, RecordError> {
        let start = self.pos;
        let mut x = 0u64;
        let mut shift = 0u32;
        loop {
            let Some(&b) = self.b.get(self.pos) else {
                return Err(RecordError::Truncated(start));
            };
            self.pos += 1;
            if shift == 63 && b > 1 {
                return Err(RecordError::BadVarint(start));
            }
            x |= ((b & 0x7f) as u64) << shift;
            if b < 0x80 {
                return Ok(x);
            }
            shift += 7;
            if shift > 63 {
                return Err(RecordError::BadVarint(start));
            }
        }
    }

    fn varint(&mut self) -> Result<i64, RecordError> {
        let u = self.uvarint()?;
        Ok(((u >> 1) as i64) ^ -((u & 1) as i64))
    }

    fn len_prefix(&mut self) -> Result<usize, RecordError> {
        let n = self.uvarint()?;
        if n > self.remaining() as u64 {
            return Err(RecordError::BadLength(n));
        }
        Ok(n as usize)
    }

    fn str(&mut self) -> Result<&'a str, RecordError> {
        let at = self.pos;
        let n = self.len_prefix()?;
        let b = self.bytes(n)?;
        str::from_utf8(b).map_err(|_| RecordError::InvalidUtf8(at))
    }

    fn labels(&mut self, out: &mut Vec<(&'a str, &'a str)>) -> Result<(), RecordError> {
        let n = self.len_prefix()?;
        out.clear();
        for _ in 0..n {
            let name = self.str()?;
            let value = self.str()?;
            out.push((name, value));
        }
        Ok(())
    }

    fn finish(&self) -> Result<(), RecordError> {
        match self.remaining() {
            0 => Ok(()),
            n => Err(RecordError::TrailingBytes(n)),
        }
    }
}

fn put_uvarint(buf: &mut Vec<u8>, mut x: u64) {
    while x >= 0x80 {
        buf.push(x as u8 | 0x80);
        x >>= 7;
    }
    buf.push(x as u8);
}

fn put_varint(buf: &mut Vec<u8>, x: i64) {
    put_uvarint(buf, ((x << 1) ^ (x >> 63)) as u64);
}

fn put_str(buf: &mut Vec<u8>, s: &str) {
    put_uvarint(buf, s.len() as u64);
    buf.extend_from_slice(s.as_bytes());
}

fn put_labels<'s>(buf: &mut Vec<u8>, labels: impl ExactSizeIterator<Item = (&'s str, &'s str)>) {
    put_uvarint(buf, labels.len() as u64);
    for (n, v) in labels {
        put_str(buf, n);
        put_str(buf, v);
    }
}

/// Decodes a series record, calling `f` with each ref and its labels.
pub fn decode_series<'a>(
    rec: &'a [u8],
    mut f: impl FnMut(u64, &[(&'a str, &'a str)]),
) -> Result<(), RecordError> {
    let mut d = Dec::new(rec, &[RecordType::Series], "series")?;
    let mut labels = Vec::new();
    while d.remaining() > 0 {
        let r = d.be64()?;
        d.labels(&mut labels)?;
        f(r, &labels);
    }
    Ok(())
}

/// Builds a series record in a caller's buffer.
pub struct SeriesRecordBuilder<'b> {
    buf: &'b mut Vec<u8>,
}

impl<'b> SeriesRecordBuilder<'b> {
    pub fn new(buf: &'b mut Vec<u8>) -> Self {
        buf.clear();
        buf.push(RecordType::Series.as_u8());
        SeriesRecordBuilder { buf }
    }

    pub fn add(&mut self, series_ref: u64, labels: &[(&str, &str)]) {
        self.buf.extend_from_slice(&series_ref.to_be_bytes());
        put_labels(self.buf, labels.iter().copied());
    }
}

/// Decodes a float samples record into `out` (cleared first).
pub fn decode_samples(rec: &[u8], out: &mut Vec<RefSample>) -> Result<(), RecordError> {
    out.clear();
    let mut d = Dec::new(rec, &[RecordType::Samples], "samples")?;
    if d.remaining() == 0 {
        return Ok(());
    }
    let base_ref = d.be64()?;
    let base_t = d.be64()? as i64;
    out.reserve(d.remaining() / 10);
    while d.remaining() > 0 {
        let dr = d.varint()?;
        let dt = d.varint()?;
        let v = d.f64()?;
        out.push(RefSample {
            series_ref: (base_ref as i64).wrapping_add(dr) as u64,
            t: base_t.wrapping_add(dt),
            v,
        });
    }
    d.finish()
}

/// Encodes a float samples record into `buf` (cleared first).
pub fn encode_samples(buf: &mut Vec<u8>, samples: &[RefSample]) {
    buf.clear();
    buf.push(RecordType::Samples.as_u8());
    let Some(first) = samples.first() else {
        return;
    };
    buf.extend_from_slice(&first.series_ref.to_be_bytes());
    buf.extend_from_slice(&first.t.to_be_bytes());
    for s in samples {
        put_varint(
            buf,
            (s.series_ref as i64).wrapping_sub(first.series_ref as i64),
        );
        put_varint(buf, s.t.wrapping_sub(first.t));
        buf.extend_from_slice(&s.v.to_bits().to_be_bytes());
    }
}

/// Decodes a tombstones record. Each entry holds one interval; consecutive
/// entries of one series are merged into one stone.
pub fn decode_tombstones(rec: &[u8], out: &mut Vec<Stone>) -> Result<(), RecordError> {
    out.clear();
    let mut d = Dec::new(rec, &[RecordType::Tombstones], "tombstones")?;
    while d.remaining() > 0 {
        let r = d.be64()?;
        let mint = d.varint()?;
        let maxt = d.varint()?;
        match out.last_mut() {
            Some(s) if s.series_ref == r => s.intervals.push((mint, maxt)),
            _ => out.push(Stone {
                series_ref: r,
                intervals: vec![(mint, maxt)],
            }),
        }
    }
    Ok(())
}

pub fn encode_tombstones(buf: &mut Vec<u8>, stones: &[Stone]) {
    buf.clear();
    buf.push(RecordType::Tombstones.as_u8());
    for s in stones {
        for &(mint, maxt) in &s.intervals {
            buf.extend_from_slice(&s.series_ref.to_be_bytes());
            put_varint(buf, mint);
            put_varint(buf, maxt);
        }
    }
}

pub fn decode_exemplars(rec: &[u8], out: &mut Vec<RefExemplar>) -> Result<(), RecordError> {
    out.clear();
    let mut d = Dec::new(rec, &[RecordType::Exemplars], "exemplars")?;
    if d.remaining() == 0 {
        return Ok(());
    }
    let base_ref = d.be64()?;
    let base_t = d.be64()? as i64;
    let mut labels = Vec::new();
    while d.remaining() > 0 {
        let dr = d.varint()?;
        let dt = d.varint()?;
        let v = d.f64()?;
        d.labels(&mut labels)?;
        out.push(RefExemplar {
            series_ref: base_ref.wrapping_add(dr as u64),
            t: base_t.wrapping_add(dt),
            v,
            labels: labels
                .iter()
                .map(|(n, v)| (n.to_string(), v.to_string()))
                .collect(),
        });
    }
    d.finish()
}

pub fn encode_exemplars(buf: &mut Vec<u8>, exemplars: &[RefExemplar]) {
    buf.clear();
    buf.push(RecordType::Exemplars.as_u8());
    let Some(first) = exemplars.first() else {
        return;
    };
    buf.extend_from_slice(&first.series_ref.to_be_bytes());
    buf.extend_from_slice(&first.t.to_be_bytes());
    for e in exemplars {
        put_varint(buf, e.series_ref.wrapping_sub(first.series_ref) as i64);
        put_varint(buf, e.t.wrapping_sub(first.t));
        buf.extend_from_slice(&e.v.to_bits().to_be_bytes());
        put_labels(buf, e.labels.iter().map(|(n, v)| (n.as_str(), v.as_str())));
    }
}

pub fn decode_mmap_markers(rec: &[u8], out: &mut Vec<RefMmapMarker>) -> Result<(), RecordError> {
    out.clear();
    let mut d = Dec::new(rec, &[RecordType::MmapMarkers], "mmap markers")?;
    while d.remaining() > 0 {
        out.push(RefMmapMarker {
            series_ref: d.be64()?,
            mmap_ref: d.be64()?,
        });
    }
    Ok(())
}

pub fn encode_mmap_markers(buf: &mut Vec<u8>, markers: &[RefMmapMarker]) {
    buf.clear();
    buf.push(RecordType::MmapMarkers.as_u8());
    for m in markers {
        buf.extend_from_slice(&m.series_ref.to_be_bytes());
        buf.extend_from_slice(&m.mmap_ref.to_be_bytes());
    }
}

/// Decodes a metadata record. Fields other than unit and help are skipped,
/// as Prometheus does, so newer writers stay readable.
pub fn decode_metadata(rec: &[u8], out: &mut Vec<RefMetadata>) -> Result<(), RecordError> {
    out.clear();
    let mut d = Dec::new(rec, &[RecordType::Metadata], "metadata")?;
    while d.remaining() > 0 {
        let r = d.uvarint()?;
        let metric_type = d.byte()?;
        let fields = d.uvarint()?;
        let (mut unit, mut help) = ("", "");
        for _ in 0..fields {
            let name = d.str()?;
            let value = d.str()?;
            match name {
                "UNIT" => unit = value,
                "HELP" => help = value,
                _ => {}
            }
        }
        out.push(RefMetadata {
            series_ref: r,
            metric_type,
            unit: unit.to_owned(),
            help: help.to_owned(),
        });
    }
    Ok(())
}

pub fn encode_metadata(buf: &mut Vec<u8>, metadata: &[RefMetadata]) {
    buf.clear();
    buf.push(RecordType::Metadata.as_u8());
    for m in metadata {
        put_uvarint(buf, m.series_ref);
        buf.push(m.metric_type);
        put_uvarint(buf, 2);
        put_str(buf, "UNIT");
        put_str(buf, &m.unit);
        put_str(buf, "HELP");
        put_str(buf, &m.help);
    }
}

fn decode_spans(d: &mut Dec<'_>) -> Result<Vec<Span>, RecordError> {
    let n = d.len_prefix()?;
    let mut v = Vec::with_capacity(n);
    for _ in 0..n {
        let offset = d.varint()? as i32;
        let length = d.uvarint()? as u32;
        v.push(Span { offset, length });
    }
    Ok(v)
}

fn put_spans(buf: &mut Vec<u8>, spans: &[Span]) {
    put_uvarint(buf, spans.len() as u64);
    for s in spans {
        put_varint(buf, s.offset as i64);
        put_uvarint(buf, s.length as u64);
    }
}

fn decode_f64s(d: &mut Dec<'_>) -> Result<Vec<f64>, RecordError> {
    let n = d.len_prefix()?;
    (0..n).map(|_| d.f64()).collect()
}

fn put_f64s(buf: &mut Vec<u8>, v: &[f64]) {
    put_uvarint(buf, v.len() as u64);
    for x in v {
        buf.extend_from_slice(&x.to_bits().to_be_bytes());
    }
}

fn decode_histogram(d: &mut Dec<'_>) -> Result<Histogram, RecordError> {
    let mut h = Histogram {
        counter_reset_hint: d.byte()?,
        schema: d.varint()? as i32,
        zero_threshold: d.f64()?,
        zero_count: d.uvarint()?,
        count: d.uvarint()?,
        sum: d.f64()?,
        positive_spans: decode_spans(d)?,
        negative_spans: decode_spans(d)?,
        ..Default::default()
    };
    let n = d.len_prefix()?;
    h.positive_buckets = (0..n).map(|_| d.varint()).collect::<Result<_, _>>()?;
    let n = d.len_prefix()?;
    h.negative_buckets = (0..n).map(|_| d.varint()).collect::<Result<_, _>>()?;
    if h.schema == CUSTOM_BUCKETS_SCHEMA {
        h.custom_values = decode_f64s(d)?;
    }
    Ok(h)
}

fn put_histogram(buf: &mut Vec<u8>, h: &Histogram) {
    buf.push(h.counter_reset_hint);
    put_varint(buf, h.schema as i64);
    buf.extend_from_slice(&h.zero_threshold.to_bits().to_be_bytes());
    put_uvarint(buf, h.zero_count);
    put_uvarint(buf, h.count);
    buf.extend_from_slice(&h.sum.to_bits().to_be_bytes());
    put_spans(buf, &h.positive_spans);
    put_spans(buf, &h.negative_spans);
    put_uvarint(buf, h.positive_buckets.len() as u64);
    for &b in &h.positive_buckets {
        put_varint(buf, b);
    }
    put_uvarint(buf, h.negative_buckets.len() as u64);
    for &b in &h.negative_buckets {
        put_varint(buf, b);
    }
    if h.schema == CUSTOM_BUCKETS_SCHEMA {
        put_f64s(buf, &h.custom_values);
    }
}

fn decode_float_histogram(d: &mut Dec<'_>) -> Result<FloatHistogram, RecordError> {
    let mut h = FloatHistogram {
        counter_reset_hint: d.byte()?,
        schema: d.varint()? as i32,
        zero_threshold: d.f64()?,
        zero_count: d.f64()?,
        count: d.f64()?,
        sum: d.f64()?,
        positive_spans: decode_spans(d)?,
        negative_spans: decode_spans(d)?,
        ..Default::default()
    };
    h.positive_buckets = decode_f64s(d)?;
    h.negative_buckets = decode_f64s(d)?;
    if h.schema == CUSTOM_BUCKETS_SCHEMA {
        h.custom_values = decode_f64s(d)?;
    }
    Ok(h)
}

fn put_float_histogram(buf: &mut Vec<u8>, h: &FloatHistogram) {
    buf.push(h.counter_reset_hint);
    put_varint(buf, h.schema as i64);
    for x in [h.zero_threshold, h.zero_count, h.count, h.sum] {
        buf.extend_from_slice(&x.to_bits().to_be_bytes());
    }
    put_spans(buf, &h.positive_spans);
    put_spans(buf, &h.negative_spans);
    put_f64s(buf, &h.positive_buckets);
    put_f64s(buf, &h.negative_buckets);
    if h.schema == CUSTOM_BUCKETS_SCHEMA {
        put_f64s(buf, &h.custom_values);
    }
}

/// Decodes a histogram samples record (plain or custom-bucket).
pub fn decode_histogram_samples(
    rec: &[u8],
    out: &mut Vec<RefHistogramSample>,
) -> Result<(), RecordError> {
    out.clear();
    let mut d = Dec::new(
        rec,
        &[
            RecordType::HistogramSamples,
            RecordType::CustomBucketsHistogramSamples,
        ],
        "histogram samples",
    )?;
    if d.remaining() == 0 {
        return Ok(());
    }
    let base_ref = d.be64()?;
    let base_t = d.be64()? as i64;
    while d.remaining() > 0 {
        let dr = d.varint()?;
        let dt = d.varint()?;
        let h = decode_histogram(&mut d)?;
        out.push(RefHistogramSample {
            series_ref: base_ref.wrapping_add(dr as u64),
            t: base_t.wrapping_add(dt),
            h,
        });
    }
    d.finish()
}

/// Encodes histogram samples; custom-bucket histograms need the
/// `CustomBucketsHistogramSamples` type, as Prometheus writes them apart.
pub fn encode_histogram_samples(
    buf: &mut Vec<u8>,
    typ: RecordType,
    samples: &[RefHistogramSample],
) {
    buf.clear();
    buf.push(typ.as_u8());
    let Some(first) = samples.first() else {
        return;
    };
    buf.extend_from_slice(&first.series_ref.to_be_bytes());
    buf.extend_from_slice(&first.t.to_be_bytes());
    for s in samples {
        put_varint(buf, s.series_ref.wrapping_sub(first.series_ref) as i64);
        put_varint(buf, s.t.wrapping_sub(first.t));
        put_histogram(buf, &s.h);
    }
}

/// Decodes a float histogram samples record (plain or custom-bucket).
pub fn decode_float_histogram_samples(
    rec: &[u8],
    out: &mut Vec<RefFloatHistogramSample>,
) -> Result<(), RecordError> {
    out.clear();
    let mut d = Dec::new(
        rec,
        &[
            RecordType::FloatHistogramSamples,
            RecordType::CustomBucketsFloatHistogramSamples,
        ],
        "float histogram samples",
    )?;
    if d.remaining() == 0 {
        return Ok(());
    }
    let base_ref = d.be64()?;
    let base_t = d.be64()? as i64;
    while d.remaining() > 0 {
        let dr = d.varint()?;
        let dt = d.varint()?;
        let h = decode_float_histogram(&mut d)?;
        out.push(RefFloatHistogramSample {
            series_ref: base_ref.wrapping_add(dr as u64),
            t: base_t.wrapping_add(dt),
            h,
        });
    }
    d.finish()
}

pub fn encode_float_histogram_samples(
    buf: &mut Vec<u8>,
    typ: RecordType,
    samples: &[RefFloatHistogramSample],
) {
    buf.clear();
    buf.push(typ.as_u8());
    let Some(first) = samples.first() else {
        return;
    };
    buf.extend_from_slice(&first.series_ref.to_be_bytes());
    buf.extend_from_slice(&first.t.to_be_bytes());
    for s in samples {
        put_varint(buf, s.series_ref.wrapping_sub(first.series_ref) as i64);
        put_varint(buf, s.t.wrapping_sub(first.t));
        put_float_histogram(buf, &s.h);
    }
}
