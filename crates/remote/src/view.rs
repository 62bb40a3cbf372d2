//! Reading remote write 1.0 requests in place: the ingest hot path.
//!
//! Decoding a 1.0 request with prost allocates two buffers per label and
//! several vectors per series; at hundreds of thousands of samples a second
//! the allocator becomes the receiver's main cost. [`V1View`] walks the
//! protobuf where it lies instead: label names and values are `&str`s into
//! the decompressed body and samples are read as the caller appends them.
//!
//! It understands only the shape senders use for samples — series made of
//! labels, float samples and native histograms ([`histogram`]). Anything
//! else (exemplars, metadata, unknown fields, other wire types) or any
//! malformed byte makes
//! [`V1View::new`] return `None`, and the caller takes the general path
//! ([`crate::decode_request`]), which gives the exact answer, errors
//! included. Where `new` accepts a body, what the view yields is what the
//! general path yields (a property test checks this): protobuf's
//! last-field-wins rule for repeated scalars, defaults for absent fields,
//! and the same label validation ([`validate_pairs`]).

mod histogram;

use std::ops::Range;

use histogram::HistogramSize;
pub use histogram::{HistogramArena, HistogramBuf, HistogramKind, HistogramMessage};

use crate::decode::{utf8_pairs, validate_pairs, validate_structure, Structure};
use crate::{HistogramSample, SeriesError, ValidationScheme};

/// Field keys (field number << 3 | wire type) the view accepts.
const KEY_TIMESERIES: u64 = 1 << 3 | 2;
const KEY_LABELS: u64 = 1 << 3 | 2;
const KEY_SAMPLES: u64 = 2 << 3 | 2;
const KEY_HISTOGRAMS: u64 = 4 << 3 | 2;
const KEY_NAME: u64 = 1 << 3 | 2;
const KEY_VALUE: u64 = 2 << 3 | 2;
const KEY_SAMPLE_VALUE: u64 = 1 << 3 | 1;
const KEY_SAMPLE_TIMESTAMP: u64 = 2 << 3;

/// A protobuf varint; `None` when truncated or longer than 10 bytes, or
/// when the 10th byte overflows 64 bits (prost refuses those).
#[inline(always)]
pub(crate) fn varint(b: &[u8], pos: &mut usize) -> Option<u64> {
    // Keys and most lengths are one byte.
    let first = *b.get(*pos)?;
    if first < 0x80 {
        *pos += 1;
        return Some(u64::from(first));
    }
    let mut x = 0u64;
    for i in 0..10 {
        let c = *b.get(*pos + i)?;
        if i == 9 && c > 1 {
            return None;
        }
        x |= u64::from(c & 0x7f) << (7 * i);
        if c < 0x80 {
            *pos += i + 1;
            return Some(x);
        }
    }
    None
}

/// One field of a message: its key and payload.
#[derive(Clone, Copy)]
enum Field<'a> {
    Len(&'a [u8]),
    Varint(u64),
    Fixed64(u64),
}

/// Iterates the fields of a message whose structure has been checked.
struct Fields<'a> {
    b: &'a [u8],
    pos: usize,
}

impl<'a> Fields<'a> {
    fn new(b: &'a [u8]) -> Self {
        Fields { b, pos: 0 }
    }

    /// The next field, `Some(Err(()))` for bytes the view does not accept.
    #[inline]
    fn next_field(&mut self) -> Option<Result<(u64, Field<'a>), ()>> {
        if self.pos >= self.b.len() {
            return None;
        }
        Some(self.read())
    }

    #[inline]
    fn read(&mut self) -> Result<(u64, Field<'a>), ()> {
        let key = varint(self.b, &mut self.pos).ok_or(())?;
        let field = match key & 7 {
            0 => Field::Varint(varint(self.b, &mut self.pos).ok_or(())?),
            1 => {
                let end = self.pos.checked_add(8).ok_or(())?;
                let bytes: [u8; 8] = self
                    .b
                    .get(self.pos..end)
                    .and_then(|s| s.try_into().ok())
                    .ok_or(())?;
                self.pos = end;
                Field::Fixed64(u64::from_le_bytes(bytes))
            }
            2 => {
                let len = varint(self.b, &mut self.pos).ok_or(())?;
                let len = usize::try_from(len).map_err(|_| ())?;
                let end = self.pos.checked_add(len).ok_or(())?;
                let s = self.b.get(self.pos..end).ok_or(())?;
                self.pos = end;
                Field::Len(s)
            }
            _ => return Err(()),
        };
        Ok((key, field))
    }
}

impl<'a> Iterator for Fields<'a> {
    type Item = (u64, Field<'a>);

    /// Stops at the first field it does not accept; [`V1View::new`] has
    /// made sure there is none.
    fn next(&mut self) -> Option<Self::Item> {
        self.next_field()?.ok()
    }
}

/// Checks every field of `msg` with `check(key, field)`.
fn all_fields<'a>(msg: &'a [u8], mut check: impl FnMut(u64, Field<'a>) -> bool) -> bool {
    let mut f = Fields::new(msg);
    while let Some(r) = f.next_field() {
        match r {
            Ok((k, v)) if check(k, v) => {}
            _ => return false,
        }
    }
    true
}

/// A `Label` as senders encode it — name, then value, both shorter than
/// 128 bytes — read without the general field loop.
#[inline]
fn canonical_label(msg: &[u8]) -> Option<(&[u8], &[u8])> {
    let [KEY_NAME_BYTE, n, rest @ ..] = msg else {
        return None;
    };
    if *n >= 0x80 {
        return None;
    }
    let (name, rest) = rest.split_at_checked(usize::from(*n))?;
    let [KEY_VALUE_BYTE, v, value @ ..] = rest else {
        return None;
    };
    (usize::from(*v) == value.len()).then_some((name, value))
}

/// A `Sample` as senders encode it — value, then timestamp.
#[inline]
fn canonical_sample(msg: &[u8]) -> Option<(i64, f64)> {
    let [KEY_SAMPLE_VALUE_BYTE, v @ .., KEY_SAMPLE_TIMESTAMP_BYTE] = msg.get(..10)? else {
        return None;
    };
    let v = u64::from_le_bytes(v.try_into().ok()?);
    let mut pos = 10;
    let t = varint(msg, &mut pos)?;
    (pos == msg.len()).then_some((t as i64, f64::from_bits(v)))
}

const KEY_NAME_BYTE: u8 = KEY_NAME as u8;
const KEY_VALUE_BYTE: u8 = KEY_VALUE as u8;
const KEY_SAMPLE_VALUE_BYTE: u8 = KEY_SAMPLE_VALUE as u8;
const KEY_SAMPLE_TIMESTAMP_BYTE: u8 = KEY_SAMPLE_TIMESTAMP as u8;

/// A `Label` message's (name, value) if the view accepts the message,
/// for one [`canonical_label`] does not read.
fn general_label(msg: &[u8]) -> Option<(&[u8], &[u8])> {
    all_fields(msg, |k, f| {
        matches!((k, f), (KEY_NAME | KEY_VALUE, Field::Len(_)))
    })
    .then(|| label(msg))
}

/// A `Sample` message's (timestamp, value) if the view accepts the message.
#[inline]
fn checked_sample(msg: &[u8]) -> Option<(i64, f64)> {
    canonical_sample(msg).or_else(|| {
        all_fields(msg, |k, f| {
            matches!(
                (k, f),
                (KEY_SAMPLE_VALUE, Field::Fixed64(_)) | (KEY_SAMPLE_TIMESTAMP, Field::Varint(_))
            )
        })
        .then(|| sample(msg))
    })
}

/// What a scan of a [`V1View`] hands on while it checks the body.
trait ScanSink<'a> {
    /// A label; `message` is its `Label` message when [`canonical_label`]
    /// read it.
    fn label(&mut self, pair: (&'a [u8], &'a [u8]), message: Option<&'a [u8]>);
    fn sample(&mut self, sample: (i64, f64));
    /// The series whose labels and samples came since the last call ends;
    /// it had `histograms` native histograms.
    fn end_series(&mut self, histograms: usize);
}

/// A scan that only checks.
struct CheckOnly;

impl<'a> ScanSink<'a> for CheckOnly {
    fn label(&mut self, _: (&'a [u8], &'a [u8]), _: Option<&'a [u8]>) {}
    fn sample(&mut self, _: (i64, f64)) {}
    fn end_series(&mut self, _: usize) {}
}

/// One series as [`V1View::decode_series`] hands it on.
pub struct DecodedSeries<'a, 'k> {
    /// Its label set as [`SeriesView::read_unchecked`] keeps it; `None`
    /// where that refuses the series.
    pub labels: Option<&'k [(&'a [u8], &'a [u8])]>,
    /// The bytes of its labels in the body, when they are exactly the
    /// kept label set in the form `ferrite_tsdb`'s `encode_wire_labels`
    /// gives (as senders encode a sorted label set): the head hashes
    /// them as they lie.
    pub wire_labels: Option<&'a [u8]>,
    /// Where its float samples are in the `samples` vector.
    pub floats: Range<usize>,
    /// How many of the arena's histograms are its (the next ones, in
    /// request order).
    pub histograms: usize,
}

/// Where a series' labels lie in the body while every one so far was
/// read by [`canonical_label`], is preceded by the minimal header of its
/// field, and follows the one before it directly.
#[derive(Default)]
struct WireSpan {
    range: Option<Range<usize>>,
    broken: bool,
}

impl WireSpan {
    fn add(&mut self, body: &[u8], message: Option<&[u8]>) {
        if self.broken {
            return;
        }
        let field = message.and_then(|m| label_field(body, m));
        match (field, &mut self.range) {
            (Some(f), None) => self.range = Some(f),
            (Some(f), Some(r)) if r.end == f.start => r.end = f.end,
            _ => self.broken = true,
        }
    }

    fn get<'a>(&self, body: &'a [u8]) -> Option<&'a [u8]> {
        if self.broken {
            return None;
        }
        body.get(self.range.clone()?)
    }
}

/// Where the labels field holding `message` (a slice of `body`) lies in
/// `body`, if its key and length before it are the minimal ones. A
/// message [`canonical_label`] reads is at most 258 bytes long, so its
/// length takes one or two bytes.
#[inline]
fn label_field(body: &[u8], message: &[u8]) -> Option<Range<usize>> {
    let at = (message.as_ptr() as usize).checked_sub(body.as_ptr() as usize)?;
    let len = message.len();
    let start = match len {
        0..0x80 => {
            let start = at.checked_sub(2)?;
            let [key, l] = *body.get(start..at)?.first_chunk::<2>()?;
            (key == KEY_LABELS as u8 && usize::from(l) == len).then_some(start)
        }
        0x80..0x4000 => {
            let start = at.checked_sub(3)?;
            let [key, lo, hi] = *body.get(start..at)?.first_chunk::<3>()?;
            let minimal = hi != 0 && lo & 0x80 != 0;
            let l = usize::from(lo & 0x7f) | usize::from(hi) << 7;
            (key == KEY_LABELS as u8 && minimal && l == len).then_some(start)
        }
        _ => None,
    }?;
    Some(start..at + len)
}

/// The scan of [`V1View::decode_series`]: each series' raw labels kept,
/// validated at its end and handed to `each`.
struct SeriesSink<'a, 's, F> {
    body: &'a [u8],
    scheme: ValidationScheme,
    raw: Vec<(&'a [u8], &'a [u8])>,
    kept: Vec<(&'a [u8], &'a [u8])>,
    wire: WireSpan,
    samples: &'s mut Vec<(i64, f64)>,
    start: usize,
    each: F,
}

impl<'a, F> ScanSink<'a> for SeriesSink<'a, '_, F>
where
    F: FnMut(DecodedSeries<'a, '_>) -> bool,
{
    fn label(&mut self, pair: (&'a [u8], &'a [u8]), message: Option<&'a [u8]>) {
        self.raw.push(pair);
        self.wire.add(self.body, message);
    }

    fn sample(&mut self, sample: (i64, f64)) {
        self.samples.push(sample);
    }

    fn end_series(&mut self, histograms: usize) {
        let structure = validate_structure(&mut self.raw, self.scheme, &mut self.kept);
        // Sorted (so no repeated name) and nothing dropped: the labels
        // as they lie are the kept set's wire form.
        let as_kept = structure == Structure::Sorted && self.kept.len() == self.raw.len();
        let series = DecodedSeries {
            labels: structure.is_valid().then_some(self.kept.as_slice()),
            wire_labels: self.wire.get(self.body).filter(|_| as_kept),
            floats: self.start..self.samples.len(),
            histograms,
        };
        if !(self.each)(series) {
            self.samples.truncate(self.start);
        }
        self.start = self.samples.len();
        self.raw.clear();
        self.wire = WireSpan::default();
    }
}

/// The label set [`SeriesView::read_unchecked`] kept, as strings, if it is
/// valid UTF-8 (then the series is valid).
pub fn utf8_labels<'a>(kept: &[(&'a [u8], &'a [u8])], out: &mut Vec<(&'a str, &'a str)>) -> bool {
    utf8_pairs(kept, out)
}

/// A `Label` message's (name, value); absent fields are empty, a repeated
/// field keeps its last value.
#[inline]
fn label(msg: &[u8]) -> (&[u8], &[u8]) {
    if let Some(l) = canonical_label(msg) {
        return l;
    }
    let (mut name, mut value): (&[u8], &[u8]) = (&[], &[]);
    for (k, f) in Fields::new(msg) {
        match (k, f) {
            (KEY_NAME, Field::Len(s)) => name = s,
            (KEY_VALUE, Field::Len(s)) => value = s,
            _ => {}
        }
    }
    (name, value)
}

/// A `Sample` message's (timestamp, value), with the same rules.
#[inline]
fn sample(msg: &[u8]) -> (i64, f64) {
    if let Some(s) = canonical_sample(msg) {
        return s;
    }
    let (mut t, mut v) = (0i64, 0u64);
    for (k, f) in Fields::new(msg) {
        match (k, f) {
            (KEY_SAMPLE_VALUE, Field::Fixed64(x)) => v = x,
            (KEY_SAMPLE_TIMESTAMP, Field::Varint(x)) => t = x as i64,
            _ => {}
        }
    }
    (t, f64::from_bits(v))
}

/// A decompressed 1.0 request of the common shape, read in place.
pub struct V1View<'a> {
    raw: &'a [u8],
    series: usize,
    samples: usize,
    histograms: usize,
    histogram_memory: usize,
}

impl<'a> V1View<'a> {
    /// Checks the whole message; `None` if it has anything but series of
    /// labels, float samples and native histograms, or is malformed (use
    /// the general path).
    pub fn new(raw: &'a [u8]) -> Option<Self> {
        let mut histogram = HistogramBuf::new();
        Self::scan(
            raw,
            |h| histogram.read_checked(h).map(|(_, _, size)| size),
            &mut CheckOnly,
        )
    }

    /// [`V1View::new`] that also keeps every native histogram it checks,
    /// in request order, in `arena` (emptied first): each is parsed once,
    /// then copied out with [`HistogramArena::read_into`]. `None` also
    /// when the arena would need more than `max_bytes` allocated.
    pub fn decode(raw: &'a [u8], arena: &mut HistogramArena, max_bytes: usize) -> Option<Self> {
        arena.clear();
        Self::scan(raw, |h| arena.push_message(h, max_bytes), &mut CheckOnly)
    }

    /// [`V1View::decode`] that also reads every series while it checks
    /// the body, so the body is walked once (reading the series in a
    /// second walk cost about as much as the check). Each series' float
    /// samples are appended to `samples`, then `each` gets the series
    /// ([`DecodedSeries`]). Where `each` answers false, the series' floats
    /// are taken out of `samples` again. On `None` the series handed on
    /// so far mean nothing.
    pub fn decode_series(
        raw: &'a [u8],
        arena: &mut HistogramArena,
        max_bytes: usize,
        scheme: ValidationScheme,
        samples: &mut Vec<(i64, f64)>,
        each: impl FnMut(DecodedSeries<'a, '_>) -> bool,
    ) -> Option<Self> {
        arena.clear();
        let start = samples.len();
        let mut sink = SeriesSink {
            body: raw,
            scheme,
            raw: Vec::new(),
            kept: Vec::new(),
            wire: WireSpan::default(),
            samples,
            start,
            each,
        };
        Self::scan(raw, |h| arena.push_message(h, max_bytes), &mut sink)
    }

    /// Checks the whole message, each histogram by `histogram` (`None`:
    /// refused, else its size), handing what it reads to `sink`.
    fn scan(
        raw: &'a [u8],
        mut histogram: impl FnMut(&'a [u8]) -> Option<HistogramSize>,
        sink: &mut impl ScanSink<'a>,
    ) -> Option<Self> {
        let (mut series, mut samples) = (0usize, 0usize);
        let (mut histograms, mut histogram_memory) = (0usize, 0usize);
        let ok = all_fields(raw, |k, f| {
            let (KEY_TIMESERIES, Field::Len(ts)) = (k, f) else {
                return false;
            };
            series += 1;
            let before = histograms;
            let ok = all_fields(ts, |k, f| match (k, f) {
                (KEY_LABELS, Field::Len(l)) => match canonical_label(l) {
                    Some(p) => {
                        sink.label(p, Some(l));
                        true
                    }
                    None => general_label(l).map(|p| sink.label(p, None)).is_some(),
                },
                (KEY_SAMPLES, Field::Len(s)) => {
                    samples += 1;
                    checked_sample(s).map(|x| sink.sample(x)).is_some()
                }
                (KEY_HISTOGRAMS, Field::Len(h)) => match histogram(h) {
                    Some(size) => {
                        histograms += 1;
                        histogram_memory += std::mem::size_of::<HistogramSample>()
                            + size.spans * std::mem::size_of::<ferrite_model::Span>()
                            + size.values * 8;
                        true
                    }
                    None => false,
                },
                _ => false,
            });
            if ok {
                sink.end_series(histograms - before);
            }
            ok
        });
        ok.then_some(V1View {
            raw,
            series,
            samples,
            histograms,
            histogram_memory,
        })
    }

    /// Number of native histograms in the request.
    pub fn histogram_count(&self) -> usize {
        self.histograms
    }

    /// About the memory the request's histograms take once read, each
    /// into its own vectors (as [`crate::HistogramValue::memory`] counts
    /// it): what a receiver that keeps them until its commit must budget.
    pub fn histogram_memory(&self) -> usize {
        self.histogram_memory
    }

    /// Number of series in the request.
    pub fn series_count(&self) -> usize {
        self.series
    }

    /// Number of float samples in the request.
    pub fn sample_count(&self) -> usize {
        self.samples
    }

    /// The series, in request order.
    pub fn series(&self) -> impl Iterator<Item = SeriesView<'a>> + 'a {
        Fields::new(self.raw).filter_map(|(_, f)| match f {
            Field::Len(msg) => Some(SeriesView { msg }),
            _ => None,
        })
    }
}

/// One `TimeSeries` message of a [`V1View`].
#[derive(Clone, Copy)]
pub struct SeriesView<'a> {
    msg: &'a [u8],
}

impl<'a> SeriesView<'a> {
    /// The raw (name, value) pairs in request order.
    pub fn raw_labels(&self) -> impl Iterator<Item = (&'a [u8], &'a [u8])> + 'a {
        Fields::new(self.msg).filter_map(|(k, f)| match (k, f) {
            (KEY_LABELS, Field::Len(l)) => Some(label(l)),
            _ => None,
        })
    }

    /// The series' labels as the general path validates them: sorted by
    /// name, empty values dropped, into `out`. `raw` is scratch space.
    pub fn labels(
        &self,
        scheme: ValidationScheme,
        raw: &mut Vec<(&'a [u8], &'a [u8])>,
        out: &mut Vec<(&'a str, &'a str)>,
    ) -> Result<(), SeriesError> {
        raw.clear();
        raw.extend(self.raw_labels());
        validate_pairs(raw, scheme, out)
    }

    /// The series' native histograms, in request order.
    pub fn histograms(&self) -> impl Iterator<Item = HistogramMessage<'a>> + 'a {
        Fields::new(self.msg).filter_map(|(k, f)| match (k, f) {
            (KEY_HISTOGRAMS, Field::Len(h)) => Some(HistogramMessage(h)),
            _ => None,
        })
    }

    /// Reads the series in one walk: its labels validated into `out` (as
    /// [`SeriesView::labels`]) and its samples into `samples`. On `Err`,
    /// `samples` still holds the series' samples.
    pub fn read(
        &self,
        scheme: ValidationScheme,
        raw: &mut Vec<(&'a [u8], &'a [u8])>,
        out: &mut Vec<(&'a str, &'a str)>,
        samples: &mut Vec<(i64, f64)>,
    ) -> Result<(), SeriesError> {
        self.walk(raw, samples);
        validate_pairs(raw, scheme, out)
    }

    /// [`SeriesView::read`] without the UTF-8 check of the labels that
    /// stay: `false` if the series is invalid for any other reason, else
    /// `kept` holds its label set as bytes (sorted, no empty values). The
    /// series is valid iff [`utf8_labels`] then accepts `kept`, or `kept`
    /// equals a label set known to be valid.
    pub fn read_unchecked(
        &self,
        scheme: ValidationScheme,
        raw: &mut Vec<(&'a [u8], &'a [u8])>,
        kept: &mut Vec<(&'a [u8], &'a [u8])>,
        samples: &mut Vec<(i64, f64)>,
    ) -> bool {
        samples.clear();
        self.read_unchecked_into(scheme, raw, kept, samples)
    }

    /// [`SeriesView::read_unchecked`] appending the series' samples to
    /// `samples` (what it held stays; on `false` the caller drops what was
    /// appended, if it wants). Saves a copy of every sample for a caller
    /// that gathers a request's samples in one vector.
    pub fn read_unchecked_into(
        &self,
        scheme: ValidationScheme,
        raw: &mut Vec<(&'a [u8], &'a [u8])>,
        kept: &mut Vec<(&'a [u8], &'a [u8])>,
        samples: &mut Vec<(i64, f64)>,
    ) -> bool {
        self.walk_into(raw, samples, None);
        validate_structure(raw, scheme, kept).is_valid()
    }

    /// [`SeriesView::read_unchecked_into`] also adding the series' number
    /// of native histograms to `histograms` (they are read from the
    /// arena of [`V1View::decode`], in request order).
    pub fn read_unchecked_with_histograms(
        &self,
        scheme: ValidationScheme,
        raw: &mut Vec<(&'a [u8], &'a [u8])>,
        kept: &mut Vec<(&'a [u8], &'a [u8])>,
        samples: &mut Vec<(i64, f64)>,
        histograms: &mut usize,
    ) -> bool {
        self.walk_into(raw, samples, Some(histograms));
        validate_structure(raw, scheme, kept).is_valid()
    }

    /// One walk over the series: its raw labels and its samples.
    fn walk(&self, raw: &mut Vec<(&'a [u8], &'a [u8])>, samples: &mut Vec<(i64, f64)>) {
        samples.clear();
        self.walk_into(raw, samples, None);
    }

    /// [`SeriesView::walk`] appending to `samples`, and counting the
    /// histograms into `histograms` if given.
    fn walk_into(
        &self,
        raw: &mut Vec<(&'a [u8], &'a [u8])>,
        samples: &mut Vec<(i64, f64)>,
        mut histograms: Option<&mut usize>,
    ) {
        raw.clear();
        for (k, f) in Fields::new(self.msg) {
            match (k, f) {
                (KEY_LABELS, Field::Len(l)) => raw.push(label(l)),
                (KEY_SAMPLES, Field::Len(s)) => samples.push(sample(s)),
                (KEY_HISTOGRAMS, Field::Len(_)) => {
                    if let Some(n) = histograms.as_deref_mut() {
                        *n += 1;
                    }
                }
                _ => {}
            }
        }
    }

    /// The samples as (timestamp, value), in request order.
    pub fn samples(&self) -> impl Iterator<Item = (i64, f64)> + 'a {
        Fields::new(self.msg).filter_map(|(k, f)| match (k, f) {
            (KEY_SAMPLES, Field::Len(s)) => Some(sample(s)),
            _ => None,
        })
    }

    /// Number of samples of the series.
    pub fn sample_count(&self) -> usize {
        Fields::new(self.msg)
            .filter(|(k, _)| *k == KEY_SAMPLES)
            .count()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proto::v1;
    use prost::Message;

    fn request() -> v1::WriteRequest {
        v1::WriteRequest {
            timeseries: vec![
                v1::TimeSeries {
                    labels: vec![
                        v1::Label {
                            name: b"job".to_vec(),
                            value: b"a".to_vec(),
                        },
                        v1::Label {
                            name: b"__name__".to_vec(),
                            value: b"up".to_vec(),
                        },
                        v1::Label {
                            name: b"empty".to_vec(),
                            value: Vec::new(),
                        },
                    ],
                    samples: vec![
                        v1::Sample {
                            value: 1.5,
                            timestamp: 1000,
                        },
                        v1::Sample {
                            value: -2.0,
                            timestamp: -5,
                        },
                    ],
                    ..Default::default()
                },
                v1::TimeSeries::default(),
            ],
            metadata: Vec::new(),
        }
    }

    #[test]
    fn reads_labels_and_samples() {
        let raw = request().encode_to_vec();
        let view = V1View::new(&raw).expect("common shape");
        assert_eq!((view.series_count(), view.sample_count()), (2, 2));
        let series: Vec<_> = view.series().collect();
        let (mut scratch, mut out) = (Vec::new(), Vec::new());
        series[0]
            .labels(ValidationScheme::Utf8, &mut scratch, &mut out)
            .unwrap();
        assert_eq!(out, [("__name__", "up"), ("job", "a")]);
        assert_eq!(
            series[0].samples().collect::<Vec<_>>(),
            [(1000, 1.5), (-5, -2.0)]
        );
        assert_eq!(series[1].sample_count(), 0);
        assert!(series[1]
            .labels(ValidationScheme::Utf8, &mut scratch, &mut out)
            .is_err());
    }

    #[test]
    fn other_shapes_take_the_general_path() {
        let mut r = request();
        r.metadata.push(v1::MetricMetadata {
            r#type: 1,
            metric_family_name: b"up".to_vec(),
            help: Vec::new(),
            unit: Vec::new(),
        });
        assert!(V1View::new(&r.encode_to_vec()).is_none());
        let mut r = request();
        r.timeseries[0].exemplars.push(v1::Exemplar::default());
        assert!(V1View::new(&r.encode_to_vec()).is_none());
        let raw = request().encode_to_vec();
        assert!(V1View::new(&raw[..raw.len() - 1]).is_none());
        assert!(V1View::new(&[0xff]).is_none());
        assert!(V1View::new(&[]).is_some());
    }
}
