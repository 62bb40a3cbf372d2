//! Property tests of the histogram chunks: random sequences of valid
//! histograms (counters and gauges, growing and shrinking bucket sets,
//! resets, schema changes, stale markers) survive append and iteration;
//! reopening a chunk anywhere and appending on gives the same bytes, as
//! does a used chunk reset for reuse; and
//! no input bytes make decoding panic. The start-timestamp encodings make
//! the same decisions and decode to the same histograms as the plain ones,
//! with every sample's start timestamp back.

use std::collections::BTreeMap;

use ferrite_chunkenc::{
    AppendOutcome, CounterResetHeader, FloatHistogramChunk, FloatHistogramIterator,
    FloatHistogramStChunk, HistogramChunk, HistogramIterator, HistogramStChunk,
};
use ferrite_model::{CounterResetHint, FloatHistogram, Histogram, Span, STALE_NAN};
use proptest::prelude::*;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

/// A histogram as absolute counts by bucket index.
#[derive(Clone, Debug)]
struct Model {
    hint: CounterResetHint,
    schema: i32,
    zero_threshold: f64,
    zero_count: f64,
    sum: f64,
    positive: BTreeMap<i32, f64>,
    negative: BTreeMap<i32, f64>,
    custom: Vec<f64>,
}

fn spans_of(keys: impl Iterator<Item = i32>) -> Vec<Span> {
    let mut spans: Vec<Span> = Vec::new();
    let mut last = 0;
    for k in keys {
        match spans.last_mut() {
            Some(s) if k == last + 1 => s.length += 1,
            Some(_) => spans.push(Span {
                offset: k - last - 1,
                length: 1,
            }),
            None => spans.push(Span {
                offset: k,
                length: 1,
            }),
        }
        last = k;
    }
    spans
}

impl Model {
    fn count(&self) -> f64 {
        self.zero_count + self.positive.values().sum::<f64>() + self.negative.values().sum::<f64>()
    }

    fn int(&self) -> Histogram {
        let deltas = |b: &BTreeMap<i32, f64>| {
            let mut prev = 0i64;
            b.values()
                .map(|&v| {
                    let d = v as i64 - prev;
                    prev = v as i64;
                    d
                })
                .collect()
        };
        Histogram {
            counter_reset_hint: self.hint,
            schema: self.schema,
            zero_threshold: self.zero_threshold,
            zero_count: self.zero_count as u64,
            count: self.count() as u64,
            sum: self.sum,
            positive_spans: spans_of(self.positive.keys().copied()),
            negative_spans: spans_of(self.negative.keys().copied()),
            positive_buckets: deltas(&self.positive),
            negative_buckets: deltas(&self.negative),
            custom_values: self.custom.clone(),
        }
    }

    fn float(&self) -> FloatHistogram {
        FloatHistogram {
            counter_reset_hint: self.hint,
            schema: self.schema,
            zero_threshold: self.zero_threshold,
            zero_count: self.zero_count,
            count: self.count(),
            sum: self.sum,
            positive_spans: spans_of(self.positive.keys().copied()),
            negative_spans: spans_of(self.negative.keys().copied()),
            positive_buckets: self.positive.values().copied().collect(),
            negative_buckets: self.negative.values().copied().collect(),
            custom_values: self.custom.clone(),
        }
    }
}

/// A random sequence of timestamps and models; `None` is a stale marker.
fn sequence(seed: u64, integer: bool) -> Vec<(i64, Option<Model>)> {
    let mut r = StdRng::seed_from_u64(seed);
    let amount = |r: &mut StdRng| -> f64 {
        if integer || r.gen_bool(0.3) {
            f64::from(r.gen_range(0..5u8))
        } else {
            r.gen_range(0.0..5.0)
        }
    };
    let custom = r.gen_bool(0.2);
    let mut m = Model {
        hint: if r.gen_bool(0.25) {
            CounterResetHint::Gauge
        } else {
            CounterResetHint::Unknown
        },
        schema: if custom { -53 } else { r.gen_range(-4..=8) },
        zero_threshold: if custom { 0.0 } else { 2f64.powi(-128) },
        zero_count: 0.0,
        sum: 0.0,
        positive: BTreeMap::new(),
        negative: BTreeMap::new(),
        custom: if custom {
            vec![0.1, 0.5, 1.0, 2.5, 10.0, 60.001]
        } else {
            Vec::new()
        },
    };
    let max_index = if custom { 7 } else { 30 };
    let mut t = r.gen_range(-1_000_000i64..1_000_000_000_000);
    let mut out = Vec::new();
    for _ in 0..r.gen_range(1..150) {
        t += r.gen_range(1..100_000);
        match r.gen_range(0..100) {
            0..=9 => {
                m.positive
                    .insert(r.gen_range(-5..max_index), amount(&mut r));
            }
            10..=14 if !custom => {
                m.negative.insert(r.gen_range(-5..20), amount(&mut r));
            }
            15..=17 => {
                for v in m.positive.values_mut().chain(m.negative.values_mut()) {
                    *v = 0.0;
                }
                m.zero_count = 0.0;
            }
            18..=20 => {
                out.push((t, None));
                continue;
            }
            21 if !custom => m.schema = r.gen_range(-4..=8),
            22 if !custom => m.zero_threshold = [0.0, 0.001, 0.5][r.gen_range(0..3)],
            23 => {
                m.hint = if m.hint == CounterResetHint::Gauge {
                    CounterResetHint::Unknown
                } else {
                    CounterResetHint::Gauge
                }
            }
            24 => m.hint = CounterResetHint::CounterReset,
            25 if custom => m.custom[5] += 1.0,
            _ => {}
        }
        let gauge = m.hint == CounterResetHint::Gauge;
        for v in m.positive.values_mut().chain(m.negative.values_mut()) {
            if gauge && r.gen_bool(0.3) {
                *v = (*v - amount(&mut r)).max(0.0);
            } else if r.gen_bool(0.6) {
                *v += amount(&mut r);
            }
        }
        if gauge && r.gen_bool(0.2) {
            if let Some(&k) = m.positive.keys().next() {
                m.positive.remove(&k);
            }
        }
        if !custom && r.gen_bool(0.4) {
            m.zero_count += amount(&mut r);
        }
        m.sum += r.gen_range(-10.0..100.0);
        let mut sample = m.clone();
        if r.gen_bool(0.2) {
            // Leave out empty buckets.
            sample.positive.retain(|_, v| *v != 0.0);
            sample.negative.retain(|_, v| *v != 0.0);
        }
        out.push((t, Some(sample)));
        if m.hint == CounterResetHint::CounterReset {
            m.hint = CounterResetHint::Unknown;
        }
    }
    out
}

/// What must survive a chunk: non-empty buckets by index, counts, sum.
#[derive(Debug, PartialEq)]
struct Essence {
    t: i64,
    stale: bool,
    schema: i32,
    zero_threshold: u64,
    count: u64,
    zero_count: u64,
    sum: u64,
    positive: Vec<(i64, u64)>,
    negative: Vec<(i64, u64)>,
    custom: Vec<u64>,
}

fn indexed(spans: &[Span], values: &[f64]) -> Vec<(i64, u64)> {
    let mut out = Vec::new();
    let mut next = 0i64;
    let mut values = values.iter();
    for s in spans {
        let start = next + i64::from(s.offset);
        for i in start..start + i64::from(s.length) {
            if let Some(&v) = values.next() {
                if v != 0.0 {
                    out.push((i, v.to_bits()));
                }
            }
        }
        next = start + i64::from(s.length);
    }
    out
}

fn essence(t: i64, h: &FloatHistogram) -> Essence {
    let stale = h.is_stale();
    Essence {
        t,
        stale,
        schema: if stale { 0 } else { h.schema },
        zero_threshold: if stale { 0 } else { h.zero_threshold.to_bits() },
        count: if stale { 0 } else { h.count.to_bits() },
        zero_count: if stale { 0 } else { h.zero_count.to_bits() },
        sum: h.sum.to_bits(),
        positive: if stale {
            vec![]
        } else {
            indexed(&h.positive_spans, &h.positive_buckets)
        },
        negative: if stale {
            vec![]
        } else {
            indexed(&h.negative_spans, &h.negative_buckets)
        },
        custom: if stale {
            vec![]
        } else {
            h.custom_values.iter().map(|v| v.to_bits()).collect()
        },
    }
}

fn stale_int() -> Histogram {
    Histogram {
        sum: STALE_NAN,
        ..Histogram::default()
    }
}

/// Appends a sequence to integer chunks as the head does.
fn int_chunks(seq: &[(i64, Option<Model>)]) -> Vec<HistogramChunk> {
    let mut chunks = vec![HistogramChunk::new()];
    for (t, m) in seq {
        let h = m.as_ref().map_or_else(stale_int, Model::int);
        let cur = chunks.last_mut().expect("a chunk");
        match cur.append(None, *t, &h).expect("valid histogram") {
            AppendOutcome::NewChunk(c) => chunks.push(c),
            AppendOutcome::Appended | AppendOutcome::Recoded => {}
        }
    }
    chunks
}

fn float_chunks(seq: &[(i64, Option<Model>)]) -> Vec<FloatHistogramChunk> {
    let mut chunks = vec![FloatHistogramChunk::new()];
    for (t, m) in seq {
        let h = m
            .as_ref()
            .map_or_else(|| stale_int().to_float(), Model::float);
        let cur = chunks.last_mut().expect("a chunk");
        match cur.append(None, *t, &h).expect("valid histogram") {
            AppendOutcome::NewChunk(c) => chunks.push(c),
            AppendOutcome::Appended | AppendOutcome::Recoded => {}
        }
    }
    chunks
}

fn expected(seq: &[(i64, Option<Model>)], integer: bool) -> Vec<Essence> {
    seq.iter()
        .map(|(t, m)| match m {
            None => essence(*t, &stale_int().to_float()),
            Some(m) if integer => essence(*t, &m.int().to_float()),
            Some(m) => essence(*t, &m.float()),
        })
        .collect()
}

/// Checks the hints of one chunk's decoded samples.
fn check_hints(header: CounterResetHeader, hints: &[CounterResetHint], stale: &[bool]) {
    for (i, (&h, &s)) in hints.iter().zip(stale).enumerate() {
        let want = if s {
            CounterResetHint::Unknown
        } else if header == CounterResetHeader::Gauge {
            CounterResetHint::Gauge
        } else if i == 0 {
            CounterResetHint::Unknown
        } else {
            CounterResetHint::NotCounterReset
        };
        assert_eq!(h, want, "sample {i}");
    }
}

fn check_int(seed: u64) {
    let seq = sequence(seed, true);
    let chunks = int_chunks(&seq);
    let mut got = Vec::new();
    let mut h = Histogram::default();
    for c in &chunks {
        let mut it = c.iter();
        let (mut hints, mut stale) = (Vec::new(), Vec::new());
        while let Some(t) = it.next_into(&mut h) {
            hints.push(h.counter_reset_hint);
            stale.push(h.is_stale());
            got.push(essence(t, &h.to_float()));
        }
        assert_eq!(it.error(), None);
        assert_eq!(usize::from(c.num_samples()), hints.len());
        check_hints(c.counter_reset_header(), &hints, &stale);
    }
    assert_eq!(got, expected(&seq, true));

    // Reopening the open chunk at any point changes nothing.
    let cut = seed as usize % seq.len().max(1);
    let mut chunks2 = int_chunks(&seq[..cut]);
    let last = chunks2.pop().expect("a chunk");
    chunks2.push(HistogramChunk::from_bytes(last.bytes().to_vec()).expect("reopens"));
    for (t, m) in &seq[cut..] {
        let h = m.as_ref().map_or_else(stale_int, Model::int);
        let cur = chunks2.last_mut().expect("a chunk");
        if let AppendOutcome::NewChunk(c) = cur.append(None, *t, &h).expect("valid") {
            chunks2.push(c);
        }
    }
    let bytes = |cs: &[HistogramChunk]| cs.iter().map(|c| c.bytes().to_vec()).collect::<Vec<_>>();
    assert_eq!(bytes(&chunks2), bytes(&chunks));

    // A used chunk, reset, encodes the rest as a new chunk does.
    let mut reused = chunks2.pop().expect("a chunk");
    reused.reset();
    assert_eq!(reused.bytes(), HistogramChunk::new().bytes());
    let mut from_reset = vec![reused];
    for (t, m) in &seq[cut..] {
        let h = m.as_ref().map_or_else(stale_int, Model::int);
        let cur = from_reset.last_mut().expect("a chunk");
        if let AppendOutcome::NewChunk(c) = cur.append(None, *t, &h).expect("valid") {
            from_reset.push(c);
        }
    }
    assert_eq!(bytes(&from_reset), bytes(&int_chunks(&seq[cut..])));
}

fn check_float(seed: u64) {
    let seq = sequence(seed, false);
    let chunks = float_chunks(&seq);
    let mut got = Vec::new();
    let mut h = FloatHistogram::default();
    for c in &chunks {
        let mut it = c.iter();
        let (mut hints, mut stale) = (Vec::new(), Vec::new());
        while let Some(t) = it.next_into(&mut h) {
            hints.push(h.counter_reset_hint);
            stale.push(h.is_stale());
            got.push(essence(t, &h));
        }
        assert_eq!(it.error(), None);
        check_hints(c.counter_reset_header(), &hints, &stale);
    }
    assert_eq!(got, expected(&seq, false));

    let cut = seed as usize % seq.len().max(1);
    let mut chunks2 = float_chunks(&seq[..cut]);
    let last = chunks2.pop().expect("a chunk");
    chunks2.push(FloatHistogramChunk::from_bytes(last.bytes().to_vec()).expect("reopens"));
    for (t, m) in &seq[cut..] {
        let h = m
            .as_ref()
            .map_or_else(|| stale_int().to_float(), Model::float);
        let cur = chunks2.last_mut().expect("a chunk");
        if let AppendOutcome::NewChunk(c) = cur.append(None, *t, &h).expect("valid") {
            chunks2.push(c);
        }
    }
    let bytes =
        |cs: &[FloatHistogramChunk]| cs.iter().map(|c| c.bytes().to_vec()).collect::<Vec<_>>();
    assert_eq!(bytes(&chunks2), bytes(&chunks));

    // A used chunk, reset, encodes the rest as a new chunk does.
    let mut reused = chunks2.pop().expect("a chunk");
    reused.reset();
    assert_eq!(reused.bytes(), FloatHistogramChunk::new().bytes());
    let mut from_reset = vec![reused];
    for (t, m) in &seq[cut..] {
        let h = m
            .as_ref()
            .map_or_else(|| stale_int().to_float(), Model::float);
        let cur = from_reset.last_mut().expect("a chunk");
        if let AppendOutcome::NewChunk(c) = cur.append(None, *t, &h).expect("valid") {
            from_reset.push(c);
        }
    }
    assert_eq!(bytes(&from_reset), bytes(&float_chunks(&seq[cut..])));
}

/// Start timestamps for `n` samples at `ts`, in a shape chosen by `seed`.
fn start_timestamps(seed: u64, ts: &[i64]) -> Vec<i64> {
    let mut rng = StdRng::seed_from_u64(seed ^ 0x5eed);
    let change = rng.gen_range(0..ts.len().max(1));
    ts.iter()
        .enumerate()
        .map(|(i, &t)| match seed % 6 {
            0 => 0,
            1 => 1_000,
            2 => i.checked_sub(1).map_or(t - 1, |p| ts[p]),
            3 => rng.gen(),
            4 if i >= change => t - 5,
            4 => 0,
            _ => t - rng.gen_range(0..1 << 20),
        })
        .collect()
}

/// Appends a sequence with STs to ST chunks and checks them against the
/// plain chunks of the same sequence: the same cuts, the same histograms
/// (the bit streams differ only by the ST fields), the STs back, and
/// reopening then appending gives the same bytes.
fn check_st(seed: u64, integer: bool) {
    let seq = sequence(seed, integer);
    let ts: Vec<i64> = seq.iter().map(|(t, _)| *t).collect();
    let sts = start_timestamps(seed, &ts);
    let (mut h, mut fh) = (Histogram::default(), FloatHistogram::default());
    // (decoded records, STs) of each chunk.
    let mut plain = Vec::new();
    let mut with_st = Vec::new();
    if integer {
        for c in int_chunks(&seq) {
            let mut it = c.iter();
            let mut got = Vec::new();
            while let Some(t) = it.next_into(&mut h) {
                got.push((t, format!("{h:?}")));
            }
            plain.push(got);
        }
        let mut chunks = vec![HistogramStChunk::new()];
        for ((t, m), &st) in seq.iter().zip(&sts) {
            let h = m.as_ref().map_or_else(stale_int, Model::int);
            let cur = chunks.last_mut().expect("a chunk");
            if let AppendOutcome::NewChunk(c) = cur.append(None, st, *t, &h).expect("valid") {
                chunks.push(c);
            }
        }
        for c in &chunks {
            let mut it = c.iter();
            let mut got = Vec::new();
            while let Some(t) = it.next_into(&mut h) {
                got.push(((t, format!("{h:?}")), it.start_timestamp()));
            }
            assert_eq!(it.error(), None);
            with_st.push(got);
            let bytes = c.bytes().to_vec();
            let reopened = HistogramStChunk::from_bytes(bytes.clone()).expect("reopens");
            assert_eq!(reopened.bytes(), &bytes[..]);
        }
    } else {
        for c in float_chunks(&seq) {
            let mut it = c.iter();
            let mut got = Vec::new();
            while let Some(t) = it.next_into(&mut fh) {
                got.push((t, format!("{fh:?}")));
            }
            plain.push(got);
        }
        let mut chunks = vec![FloatHistogramStChunk::new()];
        for ((t, m), &st) in seq.iter().zip(&sts) {
            let h = m
                .as_ref()
                .map_or_else(|| stale_int().to_float(), Model::float);
            let cur = chunks.last_mut().expect("a chunk");
            if let AppendOutcome::NewChunk(c) = cur.append(None, st, *t, &h).expect("valid") {
                chunks.push(c);
            }
        }
        for c in &chunks {
            let mut it = c.iter();
            let mut got = Vec::new();
            while let Some(t) = it.next_into(&mut fh) {
                got.push(((t, format!("{fh:?}")), it.start_timestamp()));
            }
            assert_eq!(it.error(), None);
            with_st.push(got);
        }
    }
    let samples: Vec<_> = with_st
        .iter()
        .map(|c| c.iter().map(|(s, _)| s.clone()).collect::<Vec<_>>())
        .collect();
    assert_eq!(samples, plain, "seed {seed}");
    let got_sts: Vec<i64> = with_st.iter().flatten().map(|(_, st)| *st).collect();
    assert_eq!(got_sts, sts, "seed {seed}");
}

/// Decodes arbitrary bytes every way there is; must not panic.
fn decode_everything(data: &[u8]) {
    let mut h = Histogram::default();
    let mut fh = FloatHistogram::default();
    let mut it = HistogramIterator::new(data);
    let mut n = 0usize;
    while it.advance().is_some() {
        it.at(&mut h);
        it.at_float(&mut fh);
        n += 1;
    }
    assert!(n <= usize::from(it.num_samples()));
    assert!(n == usize::from(it.num_samples()) || it.error().is_some());
    let mut it = FloatHistogramIterator::new(data);
    while it.next_into(&mut fh).is_some() {}
    let mut it = HistogramIterator::new(data);
    let _ = it.seek(i64::MAX / 2);
    for st in [false, true] {
        let (mut it, mut fit) = if st {
            (
                HistogramIterator::new_st(data),
                FloatHistogramIterator::new_st(data),
            )
        } else {
            (
                HistogramIterator::new(data),
                FloatHistogramIterator::new(data),
            )
        };
        let mut n = 0usize;
        while it.next_into(&mut h).is_some() {
            let _ = it.start_timestamp();
            n += 1;
        }
        assert!(n == usize::from(it.num_samples()) || it.error().is_some());
        while fit.next_into(&mut fh).is_some() {}
    }
    if let Ok(mut c) = HistogramStChunk::from_bytes(data.to_vec()) {
        assert_eq!(c.bytes(), data);
        let _ = c.append(None, 42, i64::MAX, &stale_int());
        let mut it = c.iter();
        while it.next_into(&mut h).is_some() {}
        assert_eq!(it.error(), None);
    }
    if let Ok(mut c) = FloatHistogramStChunk::from_bytes(data.to_vec()) {
        assert_eq!(c.bytes(), data);
        let _ = c.append(None, -42, 0, &stale_int().to_float());
        let mut it = c.iter();
        while it.next_into(&mut fh).is_some() {}
        assert_eq!(it.error(), None);
    }
    if let Ok(mut c) = HistogramChunk::from_bytes(data.to_vec()) {
        assert_eq!(c.bytes(), data);
        let sample = Histogram {
            count: 3,
            zero_count: 1,
            sum: 1.5,
            zero_threshold: 0.001,
            positive_spans: vec![Span {
                offset: 1,
                length: 2,
            }],
            positive_buckets: vec![1, 0],
            ..Histogram::default()
        };
        let _ = c.append(None, i64::MAX, &sample);
        let mut it = c.iter();
        while it.next_into(&mut h).is_some() {}
        assert_eq!(it.error(), None);
    }
    if let Ok(mut c) = FloatHistogramChunk::from_bytes(data.to_vec()) {
        assert_eq!(c.bytes(), data);
        let _ = c.append(None, 0, &stale_int().to_float());
        let mut it = c.iter();
        while it.next_into(&mut fh).is_some() {}
        assert_eq!(it.error(), None);
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    #[test]
    fn integer_sequences_round_trip(seed in any::<u64>()) {
        check_int(seed);
    }

    #[test]
    fn float_sequences_round_trip(seed in any::<u64>()) {
        check_float(seed);
    }

    #[test]
    fn st_sequences_match_the_plain_encodings(seed in any::<u64>()) {
        check_st(seed, seed % 2 == 0);
    }

    #[test]
    fn arbitrary_bytes_never_panic(data in proptest::collection::vec(any::<u8>(), 0..200)) {
        decode_everything(&data);
    }

    #[test]
    fn corrupted_chunks_never_panic(seed in any::<u64>(), flips in proptest::collection::vec((any::<usize>(), any::<u8>()), 1..4), cut in any::<usize>()) {
        let seq = sequence(seed, seed % 2 == 0);
        let bytes = if seed % 2 == 0 {
            int_chunks(&seq)[0].bytes().to_vec()
        } else {
            float_chunks(&seq)[0].bytes().to_vec()
        };
        let mut data = bytes.clone();
        for (pos, x) in flips {
            let n = data.len();
            data[pos % n] ^= x;
        }
        decode_everything(&data);
        // Every prefix of a valid chunk decodes to an error or fewer samples.
        let prefix = &bytes[..cut % (bytes.len() + 1)];
        decode_everything(prefix);
    }
}
