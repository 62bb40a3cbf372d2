#![no_main]
//! Remote write 1.0 read in place (`V1View`, the ingest hot path):
//! arbitrary bytes as a decompressed body. Must never panic, and wherever
//! the view accepts the body it must read what prost + `convert_v1` read,
//! native histograms included, and its histogram arena (`V1View::decode`)
//! must hold each message's histogram, in order; `V1View::decode_series`
//! must hand on each series as it reads alone.
use ferrite_remote::decode::convert_v1;
use ferrite_remote::{
    decode_v1, utf8_labels, HistogramArena, HistogramBuf, V1View, ValidationScheme,
};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let mut arena = HistogramArena::new();
    let decoded = V1View::decode(data, &mut arena, usize::MAX).is_some();
    let Some(view) = V1View::new(data) else {
        assert!(!decoded);
        return;
    };
    assert!(decoded);
    let mut buf = HistogramBuf::new();
    let mut k = 0;
    for s in view.series() {
        for m in s.histograms() {
            let (t, kind) = buf.read(m);
            let want = format!("{:?}", buf.to_sample(t, kind));
            let (t, kind) = arena.read_into(k, &mut buf).expect("in the arena");
            assert_eq!(format!("{:?}", buf.to_sample(t, kind)), want);
            k += 1;
        }
    }
    assert_eq!(k, arena.len());
    let scheme = ValidationScheme::Utf8;
    // The single walk of the hot path hands on each series as it reads
    // alone, and keeps the floats of those its callback keeps.
    let mut handed = Vec::new();
    let mut floats = Vec::new();
    let single = V1View::decode_series(
        data,
        &mut arena,
        usize::MAX,
        scheme,
        &mut floats,
        |kept, range, n| {
            handed.push((kept.map(<[_]>::to_vec), range, n));
            true
        },
    );
    assert!(single.is_some());
    let (mut raw, mut kept, mut samples) = (Vec::new(), Vec::new(), Vec::new());
    for (s, (got, range, n)) in view.series().zip(&handed) {
        let mut count = 0;
        samples.clear();
        let valid =
            s.read_unchecked_with_histograms(scheme, &mut raw, &mut kept, &mut samples, &mut count);
        assert_eq!(got.as_deref(), valid.then_some(kept.as_slice()));
        assert_eq!(*n, count);
        let bits = |v: &[(i64, f64)]| v.iter().map(|&(t, x)| (t, x.to_bits())).collect::<Vec<_>>();
        assert_eq!(bits(&floats[range.clone()]), bits(&samples));
    }
    assert_eq!(handed.len(), view.series_count());
    let general = convert_v1(
        &decode_v1(data).expect("prost decodes what the view accepts"),
        scheme,
    );
    let (mut raw, mut kept, mut pairs, mut samples) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    let mut valid = general.series.iter();
    let mut buf = HistogramBuf::new();
    for s in view.series() {
        let ok = s.read_unchecked(scheme, &mut raw, &mut kept, &mut samples)
            && utf8_labels(&kept, &mut pairs);
        assert_eq!(ok, s.labels(scheme, &mut raw, &mut pairs).is_ok());
        if ok {
            let g = valid.next().expect("as many valid series");
            let names: Vec<(&str, &str)> = g
                .labels
                .iter()
                .map(|l| (l.name.as_str(), l.value.as_str()))
                .collect();
            assert_eq!(names, pairs);
            assert_eq!(g.samples.len(), samples.len());
            for (a, &(t, v)) in g.samples.iter().zip(&samples) {
                assert_eq!((a.timestamp, a.value.to_bits()), (t, v.to_bits()));
            }
            // `Debug`: NaNs compare equal there.
            let read: Vec<String> = s
                .histograms()
                .map(|m| {
                    let (t, kind) = buf.read(m);
                    format!("{:?}", buf.to_sample(t, kind))
                })
                .collect();
            let want: Vec<String> = g.histograms.iter().map(|h| format!("{h:?}")).collect();
            assert_eq!(read, want);
        }
    }
    assert!(valid.next().is_none());
});
