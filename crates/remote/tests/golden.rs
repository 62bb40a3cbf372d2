//! Bodies made by Prometheus' own types, with Prometheus' answers
//! (testdata/README.md): Ferrite's answer must be the same, or the reviewed
//! deliberate difference in `NAME.ferrite.txt`.

use std::path::Path;

use ferrite_remote::{decode_request, text, DecodeOptions};

#[test]
fn golden_bodies_answer_like_prometheus() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("testdata");
    let mut n = 0;
    let mut names: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .filter_map(|e| {
            let p = e.unwrap().path();
            (p.extension()? == "bin").then(|| p.file_stem().unwrap().to_string_lossy().into_owned())
        })
        .collect();
    names.sort();
    for name in names {
        let body = std::fs::read(dir.join(format!("{name}.bin"))).unwrap();
        let headers = std::fs::read_to_string(dir.join(format!("{name}.headers"))).unwrap();
        let (ct, ce) = text::parse_headers(&headers);
        let got = text::render_response(&decode_request(
            ct.as_deref(),
            ce.as_deref(),
            &body,
            &DecodeOptions::default(),
        ));
        let ferrite = dir.join(format!("{name}.ferrite.txt"));
        let want_path = if ferrite.exists() {
            ferrite
        } else {
            dir.join(format!("{name}.prom.txt"))
        };
        let want = std::fs::read_to_string(&want_path).unwrap();
        assert_eq!(got, want, "{}", want_path.display());
        n += 1;
    }
    assert!(n >= 16, "only {n} golden bodies");
}

#[test]
fn histograms_are_decoded_with_their_series() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("testdata");
    let body = std::fs::read(dir.join("v2_histograms.bin")).unwrap();
    let req = decode_request(
        Some("application/x-protobuf;proto=io.prometheus.write.v2.Request"),
        None,
        &body,
        &DecodeOptions::default(),
    )
    .unwrap();
    assert!(req.errors.is_empty());
    assert_eq!(req.series.len(), 2);
    assert_eq!(req.series[1].histograms.len(), 1);
    assert_eq!(req.series[1].histograms[0].timestamp, 1_700_000_000_000);
    assert_eq!(req.stats().histograms, 1);
    assert_eq!(req.verdict(), ferrite_remote::Verdict::Accept);
}
