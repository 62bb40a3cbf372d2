//! Arbitrary bytes through every WAL record decoder: each must return
//! entries or a typed error, never panic or allocate without bound. What
//! decodes must re-encode to a record that decodes to the same entries.
#![no_main]

use ferrite_wal::record::*;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    // Every decoder sees every input: the type check is part of what is
    // fuzzed, and the input with each valid type byte forced in front.
    decode_all(data);
    if let Some(body) = data.get(1..) {
        let mut rec = Vec::with_capacity(data.len());
        for typ in 1..=14u8 {
            rec.clear();
            rec.push(typ);
            rec.extend_from_slice(body);
            decode_all(&rec);
        }
    }
});

fn decode_all(rec: &[u8]) {
    let mut buf = Vec::new();

    let mut series = Vec::new();
    if decode_series(rec, |r, labels| {
        series.push((r, labels.to_vec()));
    })
    .is_ok()
    {
        let mut b = SeriesRecordBuilder::new(&mut buf);
        for (r, labels) in &series {
            b.add(*r, labels);
        }
        // Varints may be non-canonical on input: compare values, not bytes.
        let mut again = Vec::new();
        decode_series(&buf, |r, labels| again.push((r, labels.to_vec())))
            .expect("re-encoded series decode");
        assert_eq!(again, series);
    }

    let mut samples = Vec::new();
    if decode_samples(rec, &mut samples).is_ok() {
        // Every entry takes at least 10 bytes after the 17-byte header.
        assert!(samples.len() <= rec.len() / 10);
        let v2 = RecordType::of(rec) == RecordType::SamplesV2;
        if v2 {
            encode_samples_v2(&mut buf, &samples);
        } else {
            encode_samples(&mut buf, &samples);
        }
        let mut again = Vec::new();
        decode_samples(&buf, &mut again).expect("re-encoded samples decode");
        assert_eq!(again.len(), samples.len());
        if v2 {
            let key = |s: &RefSample| (s.series_ref, s.st, s.t, s.v.to_bits());
            assert!(again.iter().map(key).eq(samples.iter().map(key)));
        }
    } else {
        assert!(samples.is_empty());
    }

    let mut stones = Vec::new();
    if decode_tombstones(rec, &mut stones).is_ok() {
        encode_tombstones(&mut buf, &stones);
        let mut again = Vec::new();
        decode_tombstones(&buf, &mut again).expect("re-encoded tombstones decode");
        assert_eq!(again, stones);
    }

    let mut exemplars = Vec::new();
    if decode_exemplars(rec, &mut exemplars).is_ok() {
        encode_exemplars(&mut buf, &exemplars);
        let mut again = Vec::new();
        decode_exemplars(&buf, &mut again).expect("re-encoded exemplars decode");
        assert_eq!(again.len(), exemplars.len());
    }

    let mut markers = Vec::new();
    if decode_mmap_markers(rec, &mut markers).is_ok() {
        encode_mmap_markers(&mut buf, &markers);
        // Fixed-width fields only: the bytes must match.
        assert_eq!(buf, rec, "mmap markers re-encoding differs");
    }

    let mut metadata = Vec::new();
    if decode_metadata(rec, &mut metadata).is_ok() {
        encode_metadata(&mut buf, &metadata);
        let mut again = Vec::new();
        decode_metadata(&buf, &mut again).expect("re-encoded metadata decode");
        assert_eq!(again, metadata);
    }

    let mut histograms = Vec::new();
    if decode_histogram_samples(rec, &mut histograms).is_ok() {
        if RecordType::of(rec) == RecordType::HistogramSamplesV2 {
            encode_histogram_samples_v2(&mut buf, &histograms);
        } else {
            encode_histogram_samples(&mut buf, &histograms);
        }
        let mut again = Vec::new();
        decode_histogram_samples(&buf, &mut again).expect("re-encoded histograms decode");
        assert_eq!(again.len(), histograms.len());
    }

    let mut float_histograms = Vec::new();
    if decode_float_histogram_samples(rec, &mut float_histograms).is_ok() {
        if RecordType::of(rec) == RecordType::FloatHistogramSamplesV2 {
            encode_float_histogram_samples_v2(&mut buf, &float_histograms);
        } else {
            encode_float_histogram_samples(&mut buf, &float_histograms);
        }
        let mut again = Vec::new();
        decode_float_histogram_samples(&buf, &mut again)
            .expect("re-encoded float histograms decode");
        assert_eq!(again.len(), float_histograms.len());
    }
}
