//! Property tests of the in-place 1.0 reader (`V1View`): wherever it accepts
//! a body, it reads what the general path (prost + `convert_v1`) reads —
//! the same valid series with the same samples, the same refused series
//! with the same errors — including bodies with damaged bytes.

use ferrite_remote::decode::convert_v1;
use ferrite_remote::proto::v1;
use ferrite_remote::{decode_v1, utf8_labels, SeriesError, V1View, ValidationScheme};
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

fn series() -> impl Strategy<Value = v1::TimeSeries> {
    (
        proptest::collection::vec((bytes(), bytes()), 0..5),
        proptest::collection::vec((any::<i64>(), any::<f64>()), 0..4),
    )
        .prop_map(|(ls, ss)| v1::TimeSeries {
            labels: ls
                .into_iter()
                .map(|(name, value)| v1::Label { name, value })
                .collect(),
            samples: ss
                .into_iter()
                .map(|(timestamp, value)| v1::Sample { value, timestamp })
                .collect(),
            ..Default::default()
        })
}

type Read = (Vec<(String, String)>, Vec<(i64, u64)>);

/// What the view reads: valid series and the errors of refused ones.
fn through_view(
    view: &V1View<'_>,
    scheme: ValidationScheme,
) -> (Vec<Read>, Vec<SeriesError>, usize) {
    let (mut ok, mut errs, mut invalid) = (Vec::new(), Vec::new(), 0);
    let (mut raw, mut pairs) = (Vec::new(), Vec::new());
    let mut samples = Vec::new();
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
        match labels {
            Ok(()) => ok.push((
                pairs
                    .iter()
                    .map(|&(n, v)| (n.to_owned(), v.to_owned()))
                    .collect(),
                s.samples().map(|(t, v)| (t, v.to_bits())).collect(),
            )),
            Err(e) => {
                invalid += s.sample_count();
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
            )
        })
        .collect();
    (ok, req.errors, req.invalid_label_samples)
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
            }
            None => prop_assert!(!pristine, "a plain request must take the fast path"),
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
            vec![(7, 1.0f64.to_bits())]
        )]
    );
}
