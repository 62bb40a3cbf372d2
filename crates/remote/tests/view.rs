//! Property tests of the in-place 1.0 reader (`V1View`): wherever it accepts
//! a body, it reads what the general path (prost + `convert_v1`) reads —
//! the same valid series with the same samples, the same refused series
//! with the same errors — including bodies with damaged bytes; and its
//! histogram arena (`V1View::decode`) holds what each message reads.

use ferrite_remote::decode::convert_v1;
use ferrite_remote::histogram::from_v1;
use ferrite_remote::proto::v1;
use ferrite_remote::{
    decode_v1, utf8_labels, HistogramArena, HistogramBuf, HistogramSample, SeriesError, V1View,
    ValidationScheme,
};
use proptest::prelude::*;
use prost::Message;

/// Label names and values as arbitrary bytes, biased to plausible ones.
fn bytes() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        4 => "[a-z_]{0,4}".prop_map(String::into_bytes),
        1 => Just(b"__name__".to_vec()),
        1 => proptest::collection::vec(any::<u8>(), 0..4),
    ]
}

/// Floats that compare equal to themselves.
fn number() -> impl Strategy<Value = f64> {
    prop_oneof![Just(0.0), Just(-0.0), Just(f64::INFINITY), -1e6f64..1e6,]
}

fn bucket_span() -> impl Strategy<Value = v1::BucketSpan> {
    (any::<i32>(), any::<u32>()).prop_map(|(offset, length)| v1::BucketSpan { offset, length })
}

/// Any `Histogram` message prost can encode (valid or not as a histogram).
fn histogram() -> impl Strategy<Value = v1::Histogram> {
    let count = prop_oneof![
        Just(None),
        any::<u64>().prop_map(|c| Some(v1::Count::CountInt(c))),
        number().prop_map(|c| Some(v1::Count::CountFloat(c))),
    ];
    let zero_count = prop_oneof![
        Just(None),
        any::<u64>().prop_map(|c| Some(v1::ZeroCount::ZeroCountInt(c))),
        number().prop_map(|c| Some(v1::ZeroCount::ZeroCountFloat(c))),
    ];
    let spans = || proptest::collection::vec(bucket_span(), 0..3);
    let ints = || proptest::collection::vec(any::<i64>(), 0..4);
    let floats = || proptest::collection::vec(number(), 0..4);
    (
        (count, zero_count, number(), any::<i32>(), number()),
        (spans(), ints(), floats(), spans(), ints(), floats()),
        (any::<i32>(), any::<i64>(), floats()),
    )
        .prop_map(|(a, b, c)| v1::Histogram {
            count: a.0,
            zero_count: a.1,
            sum: a.2,
            schema: a.3,
            zero_threshold: a.4,
            negative_spans: b.0,
            negative_deltas: b.1,
            negative_counts: b.2,
            positive_spans: b.3,
            positive_deltas: b.4,
            positive_counts: b.5,
            reset_hint: c.0,
            timestamp: c.1,
            custom_values: c.2,
        })
}

fn series() -> impl Strategy<Value = v1::TimeSeries> {
    (
        proptest::collection::vec((bytes(), bytes()), 0..5),
        proptest::collection::vec((any::<i64>(), any::<f64>()), 0..4),
        proptest::collection::vec(histogram(), 0..3),
    )
        .prop_map(|(ls, ss, hs)| v1::TimeSeries {
            labels: ls
                .into_iter()
                .map(|(name, value)| v1::Label { name, value })
                .collect(),
            samples: ss
                .into_iter()
                .map(|(timestamp, value)| v1::Sample { value, timestamp })
                .collect(),
            histograms: hs,
            ..Default::default()
        })
}

/// Labels, samples (value bits) and histograms (their `Debug` text, which
/// damaged bytes may fill with NaNs: equal where `==` is not).
type Read = (Vec<(String, String)>, Vec<(i64, u64)>, Vec<String>);

fn debug(h: &HistogramSample) -> String {
    format!("{h:?}")
}

/// A series' histograms read in place, through one reused buffer.
fn view_histograms(s: &ferrite_remote::SeriesView<'_>, buf: &mut HistogramBuf) -> Vec<String> {
    s.histograms()
        .map(|m| {
            let (t, kind) = buf.read(m);
            debug(&buf.to_sample(t, kind))
        })
        .collect()
}

/// What the view reads: valid series and the errors of refused ones.
fn through_view(
    view: &V1View<'_>,
    scheme: ValidationScheme,
) -> (Vec<Read>, Vec<SeriesError>, usize) {
    let (mut ok, mut errs, mut invalid) = (Vec::new(), Vec::new(), 0);
    let (mut raw, mut pairs) = (Vec::new(), Vec::new());
    let mut samples = Vec::new();
    let mut buf = HistogramBuf::new();
    for s in view.series() {
        let one_walk = s.read(scheme, &mut raw, &mut pairs, &mut samples);
        let bits = |v: &[(i64, f64)]| v.iter().map(|&(t, x)| (t, x.to_bits())).collect::<Vec<_>>();
        assert_eq!(bits(&samples), bits(&s.samples().collect::<Vec<_>>()));
        let labels = s.labels(scheme, &mut raw, &mut pairs);
        assert_eq!(one_walk, labels);
        // The split check: structure, then UTF-8 of what stays.
        let (mut kept, mut strs) = (Vec::new(), Vec::new());
        let split = s.read_unchecked(scheme, &mut raw, &mut kept, &mut samples)
            && utf8_labels(&kept, &mut strs);
        assert_eq!(split, labels.is_ok());
        if split {
            assert_eq!(strs, pairs);
        }
        // Appending: the same verdict and label set, the samples after
        // what was there.
        let mut appended = vec![(7, 7.0)];
        let kept_before = kept.clone();
        let into = s.read_unchecked_into(scheme, &mut raw, &mut kept, &mut appended);
        assert_eq!(
            into,
            s.read_unchecked(scheme, &mut raw, &mut kept, &mut samples)
        );
        assert_eq!(kept, kept_before);
        assert_eq!(bits(&appended[1..]), bits(&samples));
        let mut with_h = vec![(7, 7.0)];
        let mut messages = 0;
        let all = s.read_unchecked_with_histograms(
            scheme,
            &mut raw,
            &mut kept,
            &mut with_h,
            &mut messages,
        );
        assert_eq!(all, into);
        assert_eq!(bits(&with_h), bits(&appended));
        assert_eq!(messages, s.histograms().count());
        match labels {
            Ok(()) => ok.push((
                pairs
                    .iter()
                    .map(|&(n, v)| (n.to_owned(), v.to_owned()))
                    .collect(),
                s.samples().map(|(t, v)| (t, v.to_bits())).collect(),
                view_histograms(&s, &mut buf),
            )),
            Err(e) => {
                invalid += s.sample_count() + s.histograms().count();
                errs.push(e);
            }
        }
    }
    (ok, errs, invalid)
}

fn through_prost(raw: &[u8], scheme: ValidationScheme) -> (Vec<Read>, Vec<SeriesError>, usize) {
    let req = convert_v1(&decode_v1(raw).expect("the view accepted it"), scheme);
    let ok = req
        .series
        .iter()
        .map(|s| {
            (
                s.labels
                    .iter()
                    .map(|l| (l.name.to_string(), l.value.to_string()))
                    .collect(),
                s.samples
                    .iter()
                    .map(|x| (x.timestamp, x.value.to_bits()))
                    .collect(),
                s.histograms.iter().map(debug).collect(),
            )
        })
        .collect();
    (ok, req.errors, req.invalid_label_samples)
}

/// `V1View::decode_series` (the hot path's single walk) hands on each
/// series as `read_unchecked_with_histograms` reads it alone, and takes
/// back the floats of the series its callback refuses (every other one
/// here), keeping the others in order after what the vector held.
fn decode_series_reads_each_series(
    raw: &[u8],
    view: &V1View<'_>,
    scheme: ValidationScheme,
) -> Result<(), TestCaseError> {
    type Kept = Option<Vec<(Vec<u8>, Vec<u8>)>>;
    let mut handed: Vec<(Kept, std::ops::Range<usize>, usize)> = Vec::new();
    let mut floats = vec![(7, 7.0)];
    let mut keep = false;
    let mut arena = HistogramArena::new();
    let decoded = V1View::decode_series(raw, &mut arena, usize::MAX, scheme, &mut floats, |d| {
        let kept = d
            .labels
            .map(|k| k.iter().map(|(a, b)| (a.to_vec(), b.to_vec())).collect());
        handed.push((kept, d.floats, d.histograms));
        keep = !keep;
        keep
    });
    prop_assert!(decoded.is_some());
    prop_assert_eq!(handed.len(), view.series_count());
    let (mut raw_pairs, mut kept, mut samples) = (Vec::new(), Vec::new(), Vec::new());
    let mut want_floats = vec![(7, 7.0f64.to_bits())];
    for (k, (s, (got_kept, range, n))) in view.series().zip(&handed).enumerate() {
        let mut count = 0;
        samples.clear();
        let valid = s.read_unchecked_with_histograms(
            scheme,
            &mut raw_pairs,
            &mut kept,
            &mut samples,
            &mut count,
        );
        let want_kept: Kept =
            valid.then(|| kept.iter().map(|(a, b)| (a.to_vec(), b.to_vec())).collect());
        prop_assert_eq!(got_kept, &want_kept);
        prop_assert_eq!(*n, count);
        prop_assert_eq!(
            range.clone(),
            want_floats.len()..want_floats.len() + samples.len()
        );
        if k % 2 == 0 {
            want_floats.extend(samples.iter().map(|&(t, v)| (t, v.to_bits())));
        }
    }
    let got: Vec<(i64, u64)> = floats.iter().map(|&(t, v)| (t, v.to_bits())).collect();
    prop_assert_eq!(got, want_floats);
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn view_reads_what_prost_reads(
        ts in proptest::collection::vec(series(), 0..5),
        damage in proptest::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 0..3),
        cut in proptest::option::of(any::<prop::sample::Index>()),
        legacy in any::<bool>(),
    ) {
        let scheme = if legacy { ValidationScheme::Legacy } else { ValidationScheme::Utf8 };
        let mut raw = v1::WriteRequest { timeseries: ts, metadata: vec![] }.encode_to_vec();
        let pristine = damage.is_empty() && cut.is_none();
        if !raw.is_empty() {
            for (i, b) in &damage {
                let i = i.index(raw.len());
                raw[i] = *b;
            }
            if let Some(c) = cut {
                raw.truncate(c.index(raw.len()));
            }
        }
        match V1View::new(&raw) {
            Some(view) => {
                let got = through_view(&view, scheme);
                prop_assert_eq!(&got, &through_prost(&raw, scheme));
                let samples: usize = view.series().map(|s| s.sample_count()).sum();
                prop_assert_eq!(view.sample_count(), samples);
                let histograms: usize = view.series().map(|s| s.histograms().count()).sum();
                prop_assert_eq!(view.histogram_count(), histograms);
                // Decoded once into an arena: the same histograms, in
                // request order, as each message read.
                let mut arena = HistogramArena::new();
                prop_assert!(V1View::decode(&raw, &mut arena, usize::MAX).is_some());
                prop_assert_eq!(arena.len(), histograms);
                let mut buf = HistogramBuf::new();
                let read: Vec<String> = view.series().flat_map(|s| view_histograms(&s, &mut buf)).collect();
                let from_arena: Vec<String> = (0..arena.len())
                    .map(|k| {
                        let (t, kind) = arena.read_into(k, &mut buf).expect("held");
                        debug(&buf.to_sample(t, kind))
                    })
                    .collect();
                prop_assert_eq!(read, from_arena);
                prop_assert!(arena.read_into(histograms, &mut buf).is_none());
                // A budget the histograms do not fit sends the body elsewhere.
                if histograms > 0 {
                    prop_assert!(V1View::decode(&raw, &mut arena, 8).is_none());
                }
                decode_series_reads_each_series(&raw, &view, scheme)?;
            }
            None => {
                prop_assert!(!pristine, "a plain request must take the fast path");
                prop_assert!(V1View::decode(&raw, &mut HistogramArena::new(), usize::MAX).is_none());
            }
        }
    }
}

#[test]
fn repeated_scalar_fields_keep_the_last() {
    // Label { name: "a", name: "__name__", value: "up" } and
    // Sample { value: 1.0, timestamp: 5, timestamp: 7 }.
    let mut label = vec![0x0a, 1, b'a', 0x0a, 8];
    label.extend_from_slice(b"__name__");
    label.extend_from_slice(&[0x12, 2, b'u', b'p']);
    let mut sample = vec![0x09];
    sample.extend_from_slice(&1.0f64.to_le_bytes());
    sample.extend_from_slice(&[0x10, 5, 0x10, 7]);
    let mut ts = vec![0x0a, label.len() as u8];
    ts.extend_from_slice(&label);
    ts.extend_from_slice(&[0x12, sample.len() as u8]);
    ts.extend_from_slice(&sample);
    let mut raw = vec![0x0a, ts.len() as u8];
    raw.extend_from_slice(&ts);
    let view = V1View::new(&raw).expect("common shape");
    let got = through_view(&view, ValidationScheme::Utf8);
    assert_eq!(got, through_prost(&raw, ValidationScheme::Utf8));
    assert_eq!(
        got.0,
        vec![(
            vec![("__name__".to_owned(), "up".to_owned())],
            vec![(7, 1.0f64.to_bits())],
            vec![]
        )]
    );
}

/// One field of a hand-encoded `Histogram` message: prost writes each field
/// once and repeated numbers packed, but a sender may repeat any field and
/// write repeated numbers unpacked, or mix both.
#[derive(Debug, Clone)]
enum HistogramField {
    CountInt(u64),
    CountFloat(f64),
    Sum(f64),
    Schema(u64),
    ZeroThreshold(f64),
    ZeroCountInt(u64),
    ZeroCountFloat(f64),
    Span {
        positive: bool,
        offset: u64,
        length: u64,
    },
    DeltasPacked {
        positive: bool,
        values: Vec<u64>,
    },
    Delta {
        positive: bool,
        value: u64,
    },
    CountsPacked {
        field: u64,
        values: Vec<f64>,
    },
    Count {
        field: u64,
        value: f64,
    },
    ResetHint(u64),
    Timestamp(u64),
}

fn put_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push(v as u8 | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

fn put_len(out: &mut Vec<u8>, key: u64, body: &[u8]) {
    put_varint(out, key);
    put_varint(out, body.len() as u64);
    out.extend_from_slice(body);
}

fn put_fixed(out: &mut Vec<u8>, key: u64, v: f64) {
    put_varint(out, key);
    out.extend_from_slice(&v.to_le_bytes());
}

fn put_uint(out: &mut Vec<u8>, key: u64, v: u64) {
    put_varint(out, key);
    put_varint(out, v);
}

impl HistogramField {
    fn encode(&self, out: &mut Vec<u8>) {
        let side = |positive: bool, pos: u64, neg: u64| if positive { pos } else { neg };
        match self {
            HistogramField::CountInt(v) => put_uint(out, 1 << 3, *v),
            HistogramField::CountFloat(v) => put_fixed(out, 2 << 3 | 1, *v),
            HistogramField::Sum(v) => put_fixed(out, 3 << 3 | 1, *v),
            HistogramField::Schema(v) => put_uint(out, 4 << 3, *v),
            HistogramField::ZeroThreshold(v) => put_fixed(out, 5 << 3 | 1, *v),
            HistogramField::ZeroCountInt(v) => put_uint(out, 6 << 3, *v),
            HistogramField::ZeroCountFloat(v) => put_fixed(out, 7 << 3 | 1, *v),
            HistogramField::Span {
                positive,
                offset,
                length,
            } => {
                let mut body = Vec::new();
                put_uint(&mut body, 1 << 3, *offset);
                put_uint(&mut body, 2 << 3, *length);
                put_len(out, side(*positive, 11, 8) << 3 | 2, &body);
            }
            HistogramField::DeltasPacked { positive, values } => {
                let mut body = Vec::new();
                for v in values {
                    put_varint(&mut body, *v);
                }
                put_len(out, side(*positive, 12, 9) << 3 | 2, &body);
            }
            HistogramField::Delta { positive, value } => {
                put_uint(out, side(*positive, 12, 9) << 3, *value)
            }
            HistogramField::CountsPacked { field, values } => {
                let body: Vec<u8> = values.iter().flat_map(|v| v.to_le_bytes()).collect();
                put_len(out, field << 3 | 2, &body);
            }
            HistogramField::Count { field, value } => put_fixed(out, field << 3 | 1, *value),
            HistogramField::ResetHint(v) => put_uint(out, 14 << 3, *v),
            HistogramField::Timestamp(v) => put_uint(out, 15 << 3, *v),
        }
    }
}

fn histogram_field() -> impl Strategy<Value = HistogramField> {
    use HistogramField as F;
    let counts_field = prop_oneof![Just(10u64), Just(13), Just(16)];
    prop_oneof![
        any::<u64>().prop_map(F::CountInt),
        number().prop_map(F::CountFloat),
        number().prop_map(F::Sum),
        any::<u64>().prop_map(F::Schema),
        number().prop_map(F::ZeroThreshold),
        any::<u64>().prop_map(F::ZeroCountInt),
        number().prop_map(F::ZeroCountFloat),
        (any::<bool>(), any::<u64>(), any::<u64>()).prop_map(|(positive, offset, length)| {
            F::Span {
                positive,
                offset,
                length,
            }
        }),
        (any::<bool>(), proptest::collection::vec(any::<u64>(), 0..4))
            .prop_map(|(positive, values)| F::DeltasPacked { positive, values }),
        (any::<bool>(), any::<u64>()).prop_map(|(positive, value)| F::Delta { positive, value }),
        (
            counts_field.clone(),
            proptest::collection::vec(number(), 0..4)
        )
            .prop_map(|(field, values)| F::CountsPacked { field, values }),
        (counts_field, number()).prop_map(|(field, value)| F::Count { field, value }),
        any::<u64>().prop_map(F::ResetHint),
        any::<u64>().prop_map(F::Timestamp),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    /// Hand-encoded histograms (fields repeated, in any order, packed or
    /// not, 64-bit values in 32-bit fields) read in place equal prost's.
    #[test]
    fn histograms_read_in_place_equal_prost(
        fields in proptest::collection::vec(histogram_field(), 0..12),
        damage in proptest::option::of((any::<prop::sample::Index>(), any::<u8>())),
    ) {
        let mut msg = Vec::new();
        for f in &fields {
            f.encode(&mut msg);
        }
        if let (Some((i, b)), false) = (damage, msg.is_empty()) {
            let i = i.index(msg.len());
            msg[i] = b;
        }
        let mut ts = Vec::new();
        put_len(&mut ts, 1 << 3 | 2, &[0x0a, 1, b'a', 0x12, 1, b'b']);
        put_len(&mut ts, 4 << 3 | 2, &msg);
        let mut raw = Vec::new();
        put_len(&mut raw, 1 << 3 | 2, &ts);
        let Some(view) = V1View::new(&raw) else {
            prop_assert!(damage.is_some(), "every known field, well formed, is read in place");
            return Ok(());
        };
        let prost = decode_v1(&raw).expect("the view accepted it");
        let want = from_v1(&prost.timeseries[0].histograms[0]);
        let s = view.series().next().expect("one series");
        let mut buf = HistogramBuf::new();
        // Read twice: what the first read left in the buffer must not show.
        let _ = view_histograms(&s, &mut buf);
        prop_assert_eq!(view_histograms(&s, &mut buf), vec![debug(&want)]);
    }
}

/// The wire form of a series' labels (`DecodedSeries::wire_labels`) is
/// handed on only where the bytes are the form the head encodes: minimal
/// headers, labels adjacent, sorted, no empty value.
#[test]
fn wire_labels_only_in_the_encoded_form() {
    let label = |n: &str, v: &str| {
        let mut m = Vec::new();
        put_len(&mut m, 1 << 3 | 2, n.as_bytes());
        put_len(&mut m, 2 << 3 | 2, v.as_bytes());
        m
    };
    /// One field of the series: a label with a minimal or a padded
    /// header, or a sample.
    enum Part<'a> {
        Label(&'a [u8]),
        Padded(&'a [u8]),
        Sample,
    }
    let (a, m, empty) = (label("a", "x"), label("__name__", "m"), label("b", ""));
    let long = label("__name__", &"m".repeat(120));
    use Part::{Label, Padded, Sample};
    let cases = [
        ("sorted", vec![Label(&m), Label(&a), Sample], true),
        (
            "a two-byte length",
            vec![Label(&long), Label(&a), Sample],
            true,
        ),
        (
            "a sample between",
            vec![Label(&m), Sample, Label(&a)],
            false,
        ),
        ("unsorted", vec![Label(&a), Label(&m), Sample], false),
        (
            "a padded length",
            vec![Padded(&m), Label(&a), Sample],
            false,
        ),
        (
            "an empty value",
            vec![Label(&m), Label(&a), Label(&empty), Sample],
            false,
        ),
    ];
    for (name, parts, wire) in cases {
        let mut series = Vec::new();
        for part in parts {
            match part {
                Label(l) => put_len(&mut series, 1 << 3 | 2, l),
                Padded(l) => {
                    // The length as two bytes where one would do.
                    series.extend_from_slice(&[0x0a, l.len() as u8 | 0x80, 0]);
                    series.extend_from_slice(l);
                }
                Sample => {
                    let mut s = Vec::new();
                    put_fixed(&mut s, 1 << 3 | 1, 1.0);
                    put_uint(&mut s, 2 << 3, 5);
                    put_len(&mut series, 2 << 3 | 2, &s);
                }
            }
        }
        let mut body = Vec::new();
        put_len(&mut body, 1 << 3 | 2, &series);
        let (mut arena, mut samples, mut got) = (HistogramArena::new(), Vec::new(), None);
        V1View::decode_series(
            &body,
            &mut arena,
            usize::MAX,
            ValidationScheme::Utf8,
            &mut samples,
            |d| {
                assert!(d.labels.is_some(), "{name}: valid");
                got = Some(d.wire_labels.map(<[u8]>::to_vec));
                true
            },
        )
        .expect("view");
        let got = got.expect("one series");
        assert_eq!(got.is_some(), wire, "{name}");
        if let Some(w) = got {
            let start = series.iter().position(|&b| b == 0x0a).expect("label");
            assert_eq!(w, series[start..start + w.len()], "{name}");
        }
    }
}
