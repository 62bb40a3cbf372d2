//! The hot path: a 1.0 request appended as it lies in the decompressed
//! body ([`V1View`]), floats and native histograms alike.
//!
//! Steps: every series is read while the body is checked, in one walk
//! (its label pairs kept as bytes, its samples gathered into a
//! request-wide vector, its histograms counted);
//! the known series are found in one batch lookup; then each series gets
//! its float samples, then its histograms, as [`super::append`] appends a
//! decoded request. The histograms were parsed once, while the body was
//! checked, into a per-thread [`HistogramArena`]; each is copied from
//! there into one reused buffer ([`HistogramBuf`]) and lent to the
//! appender, whose batch takes its contents and leaves a spent histogram
//! to copy the next one into. A known
//! series' labels were checked when it was created; a new one's are
//! checked as UTF-8 before anything is appended to it, and a series that
//! fails is dropped, as 1.0 drops invalid series.

use std::ops::Range;

use ferrite_model::resolution::ReduceResolution;
use ferrite_remote::cost::Budget;
use ferrite_remote::text::labels_string;
use ferrite_remote::{
    utf8_labels, DecodeOptions, HistogramArena, HistogramBuf, HistogramKind, V1View,
};
use ferrite_tsdb::head::FoundSeries;
use ferrite_tsdb::{Db, HeadAppender, LentHistogram};

use super::{log_refused, max_time_now, Answer, SampleError};
use super::{MAX_RESERVED_SAMPLES, MAX_RESERVED_SERIES};

/// Label pairs as read from the body: sorted, no empty values, bytes.
type RawPairs<'a> = [(&'a [u8], &'a [u8])];

/// Appends a decompressed 1.0 body in place, as [`super::append`] would
/// append the same body decoded; `None` when the body needs the general
/// path: another shape, or histograms that would not fit the memory
/// budget the general decoder gives the body (a quarter of it for the
/// arena they are parsed into, half for the appender that keeps them).
pub fn append_in_place(
    db: &Db,
    raw: &[u8],
    arena: &mut HistogramArena,
    opts: &DecodeOptions,
) -> Option<Answer> {
    let budget = Budget::for_body(raw.len(), opts.memory_per_body_byte).left();
    let (view, gathered) = Gathered::decode(raw, arena, budget / 4, opts)?;
    if view.histogram_memory() > budget / 2 {
        return None;
    }
    // One walk filled both: every histogram belongs to a series handed on.
    debug_assert_eq!(gathered.histograms, arena.len());
    Some(append_gathered(db, &gathered, arena))
}

/// About the bytes a series of these labels and float samples takes in a
/// body (at least 1): each label's name and value with four bytes of
/// framing, 11 to 20 bytes a sample, and the series' own framing.
fn encoded_len(labels: &RawPairs<'_>, floats: usize) -> usize {
    let labels: usize = labels.iter().map(|(n, v)| n.len() + v.len() + 6).sum();
    labels + floats * 13 + 3
}

/// One valid series of the request: ranges into [`Gathered`]'s vectors
/// (its histograms' are also their places in the arena).
struct GatheredSeries<'a> {
    labels: Range<usize>,
    /// Its labels as the body carries them, when in wire form
    /// ([`ferrite_remote::DecodedSeries::wire_labels`]).
    wire_labels: Option<&'a [u8]>,
    samples: Range<usize>,
    histograms: Range<usize>,
}

/// Every series of a request with something to append, read once.
struct Gathered<'a> {
    labels: Vec<(&'a [u8], &'a [u8])>,
    samples: Vec<(i64, f64)>,
    /// Histograms of every series read so far, dropped ones' too: the
    /// k-th is the arena's k-th.
    histograms: usize,
    series: Vec<GatheredSeries<'a>>,
}

impl<'a> Gathered<'a> {
    /// Checks the body and reads every series in the same walk
    /// ([`V1View::decode_series`]); series whose labels are invalid
    /// (other than by UTF-8, checked later for new series only) or that
    /// carry nothing are left out. `None`: the body takes the general path.
    fn decode(
        raw: &'a [u8],
        arena: &mut HistogramArena,
        max_bytes: usize,
        opts: &DecodeOptions,
    ) -> Option<(V1View<'a>, Self)> {
        // The counts are known only at the end of the walk: room is made
        // at the first series kept, for as many series as the body holds
        // if they are all of its size.
        let (mut samples, mut labels, mut series) = (Vec::new(), Vec::new(), Vec::new());
        let mut histograms = 0;
        let view = V1View::decode_series(
            raw,
            arena,
            max_bytes,
            opts.validation,
            &mut samples,
            |decoded| {
                let (floats, n) = (decoded.floats, decoded.histograms);
                let h = histograms;
                histograms += n;
                let Some(kept) = decoded.labels.filter(|_| !floats.is_empty() || n > 0) else {
                    return false;
                };
                if series.capacity() == 0 {
                    let expected =
                        (raw.len() / encoded_len(kept, floats.len())).clamp(1, MAX_RESERVED_SERIES);
                    series.reserve(expected);
                    labels.reserve((kept.len() * expected).min(MAX_RESERVED_SAMPLES));
                }
                let k = labels.len();
                labels.extend_from_slice(kept);
                series.push(GatheredSeries {
                    labels: k..labels.len(),
                    wire_labels: decoded.wire_labels,
                    samples: floats,
                    histograms: h..histograms,
                });
                true
            },
        )?;
        let gathered = Gathered {
            labels,
            samples,
            histograms,
            series,
        };
        Some((view, gathered))
    }

    fn label_sets(&self) -> Vec<&RawPairs<'a>> {
        self.series
            .iter()
            .map(|s| &self.labels[s.labels.clone()])
            .collect()
    }
}

/// Where a series' appends go.
enum Target<'f> {
    /// An existing series.
    Found(&'f FoundSeries),
    /// A new series, not yet created: its first append creates it.
    New,
    /// A new series, created by an earlier append of this request.
    Created(u64),
}

/// Appends of one request, with the buffers they reuse.
struct ViewAppender<'d, 'a> {
    app: HeadAppender<'d>,
    pairs: Vec<(&'a str, &'a str)>,
    histogram: HistogramBuf,
    max_time: i64,
}

impl<'a> ViewAppender<'_, 'a> {
    /// Appends one series' floats, then its histograms. `Ok(false)`: the
    /// series is new and its labels are not UTF-8 (dropped).
    fn series(
        &mut self,
        found: Option<&FoundSeries>,
        labels: &RawPairs<'a>,
        samples: &[(i64, f64)],
        histograms: Range<usize>,
        arena: &HistogramArena,
    ) -> Result<bool, (SampleError, i64, bool)> {
        let mut target = match found {
            Some(f) => Target::Found(f),
            None if utf8_labels(labels, &mut self.pairs) => Target::New,
            None => return Ok(false),
        };
        for &(t, v) in samples {
            self.float(&mut target, t, v).map_err(|e| (e, t, false))?;
        }
        for k in histograms {
            let Some((t, kind)) = arena.read_into(k, &mut self.histogram) else {
                break; // never: the arena holds every message (checked before)
            };
            self.histogram(&mut target, t, kind)
                .map_err(|e| (e, t, true))?;
        }
        Ok(true)
    }

    fn float(&mut self, target: &mut Target<'_>, t: i64, v: f64) -> Result<(), SampleError> {
        if t > self.max_time {
            return Err(SampleError::TooFarInFuture);
        }
        match *target {
            Target::Found(f) => self.app.append_found(f, t, v).map(drop)?,
            Target::Created(r) => self.app.append_ref(r, t, v)?,
            Target::New => *target = Target::Created(self.app.append_pairs(&self.pairs, t, v)?),
        }
        Ok(())
    }

    /// The histogram just read: the time limit, the reserved schemas
    /// reduced, then the appender (which validates it first).
    fn histogram(
        &mut self,
        target: &mut Target<'_>,
        t: i64,
        kind: HistogramKind,
    ) -> Result<(), SampleError> {
        if t > self.max_time {
            return Err(SampleError::TooFarInFuture);
        }
        let buf = &mut self.histogram;
        let h = match kind {
            HistogramKind::Int => {
                buf.int
                    .reduce_reserved_schema()
                    .map_err(SampleError::Histogram)?;
                LentHistogram::Int(&mut buf.int)
            }
            HistogramKind::Float => {
                buf.float
                    .reduce_reserved_schema()
                    .map_err(SampleError::Histogram)?;
                LentHistogram::Float(&mut buf.float)
            }
        };
        match *target {
            Target::Found(f) => self.app.append_histogram_found(f, t, h).map(drop)?,
            Target::Created(r) => self.app.append_histogram_ref(r, t, h)?,
            Target::New => {
                *target = Target::Created(self.app.append_histogram_pairs(&self.pairs, t, h)?)
            }
        }
        Ok(())
    }
}

/// Appends a 1.0 request read in place, its histograms in `arena`, as
/// [`super::append`] would append the same request decoded: invalid
/// series are dropped, an append error rolls the whole request back.
fn append_gathered(db: &Db, gathered: &Gathered<'_>, arena: &HistogramArena) -> Answer {
    let sets = gathered.label_sets();
    let wire: Vec<Option<&[u8]>> = gathered.series.iter().map(|s| s.wire_labels).collect();
    let app = db.appender();
    let mut found = Vec::new();
    app.find_existing(&sets, &wire, &mut found);
    let mut w = ViewAppender {
        app,
        pairs: Vec::new(),
        histogram: HistogramBuf::new(),
        max_time: max_time_now(),
    };
    for ((s, labels), found) in gathered.series.iter().zip(&sets).zip(&found) {
        let samples = &gathered.samples[s.samples.clone()];
        let histograms = s.histograms.clone();
        if let Err((e, t, histogram)) = w.series(found.as_ref(), labels, samples, histograms, arena)
        {
            log_refused(&e, &labels_string(labels), t, histogram);
            let _ = w.app.rollback();
            return Answer::refused(&e, None);
        }
    }
    match w.app.commit() {
        Ok(()) => Answer::written(None),
        Err(e) => Answer::failed(e.to_string(), None),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn label_set() -> impl Strategy<Value = std::collections::BTreeMap<Vec<u8>, Vec<u8>>> {
        let bytes = |max: usize| proptest::collection::vec(any::<u8>(), 1..max);
        proptest::collection::btree_map(prop_oneof![bytes(12), bytes(200)], bytes(150), 0..6)
    }

    proptest! {
        /// A sorted label set as prost encodes it (as every sender does)
        /// is handed on in wire form, exactly what the head encodes for
        /// the kept pairs (so both hash alike); any other is not.
        #[test]
        fn sorted_labels_are_handed_on_in_wire_form(sets in proptest::collection::vec(label_set(), 1..4)) {
            use ferrite_remote::proto::v1;
            use prost::Message;
            let mut request = v1::WriteRequest::default();
            for set in &sets {
                let mut labels: Vec<v1::Label> = set
                    .iter()
                    .map(|(n, v)| v1::Label { name: n.clone(), value: v.clone() })
                    .collect();
                labels.push(v1::Label { name: b"__name__".to_vec(), value: b"m".to_vec() });
                labels.sort_by(|a, b| a.name.cmp(&b.name));
                labels.dedup_by(|a, b| a.name == b.name);
                request.timeseries.push(v1::TimeSeries {
                    labels,
                    samples: vec![v1::Sample { value: 1.0, timestamp: 5 }],
                    ..Default::default()
                });
            }
            let body = request.encode_to_vec();
            let (mut arena, mut samples) = (HistogramArena::new(), Vec::new());
            let mut seen = 0;
            V1View::decode_series(&body, &mut arena, usize::MAX, Default::default(), &mut samples, |d| {
                let kept = d.labels.expect("valid");
                let short = kept.iter().all(|(n, v)| n.len() < 128 && v.len() < 128 && n.len() + v.len() < 120);
                let mut want = Vec::new();
                ferrite_tsdb::head::encode_wire_labels(kept.iter().copied(), &mut want);
                match d.wire_labels {
                    Some(w) => assert_eq!(w, &want[..]),
                    None => assert!(!short, "short labels not in wire form"),
                }
                seen += 1;
                true
            }).expect("view");
            prop_assert_eq!(seen, sets.len());
        }
    }

    #[test]
    fn histograms_over_the_budget_take_the_general_path() {
        use ferrite_remote::proto::v1;
        use prost::Message;
        let request = |n: usize| {
            v1::WriteRequest {
                timeseries: vec![v1::TimeSeries {
                    labels: vec![v1::Label {
                        name: b"__name__".to_vec(),
                        value: b"h".to_vec(),
                    }],
                    histograms: vec![v1::Histogram::default(); n],
                    ..Default::default()
                }],
                metadata: vec![],
            }
            .encode_to_vec()
        };
        let dir = tempfile::tempdir().expect("tempdir");
        let db = Db::open(dir.path(), ferrite_tsdb::DbOptions::default()).expect("open");
        let (opts, mut arena) = (DecodeOptions::default(), HistogramArena::new());
        // 2 bytes a histogram on the wire, far more once read.
        let many = request(20_000);
        assert!(V1View::new(&many).is_some(), "plain shape");
        assert!(append_in_place(&db, &many, &mut arena, &opts).is_none());
        let few = request(10);
        let answer = append_in_place(&db, &few, &mut arena, &opts).expect("in place");
        assert_eq!(answer.status(), axum::http::StatusCode::NO_CONTENT);
        assert_eq!(arena.len(), 10);
        db.close().expect("close");
    }
}
