use ferrite_model::{FloatHistogram, Histogram as ModelHistogram};

use super::client_model::*;
use super::{HistogramKind, ProtoEntry, ProtoOptions, ProtoParser};

/// Every entry of `body` as text, as the interop dump writes it (without
/// the escaping): `HELP`, `TYPE`, `UNIT`, `SERIES key {labels} value ts`,
/// `HISTOGRAM key {labels} ts record`, `ERR message`.
fn dump(body: &[u8], opts: ProtoOptions) -> Vec<String> {
    let mut p = ProtoParser::new(body, opts);
    let mut out = Vec::new();
    let mut labels = Vec::new();
    let (mut h, mut fh) = (ModelHistogram::default(), FloatHistogram::default());
    loop {
        let e = match p.next_entry() {
            Ok(Some(e)) => e,
            Ok(None) => return out,
            Err(e) => {
                out.push(format!("ERR {e}"));
                return out;
            }
        };
        let key = |p: &ProtoParser<'_>| {
            let k: Vec<u8> = p
                .series()
                .iter()
                .map(|&b| if b == 0xff { b'|' } else { b })
                .collect();
            String::from_utf8_lossy(&k).into_owned()
        };
        let ts = |t: Option<i64>| t.map_or("-".to_string(), |t| t.to_string());
        out.push(match e {
            ProtoEntry::Help { metric, text } => format!(
                "HELP {} {}",
                String::from_utf8_lossy(metric),
                String::from_utf8_lossy(text)
            ),
            ProtoEntry::Type { metric, kind } => {
                format!("TYPE {} {}", String::from_utf8_lossy(metric), kind.as_str())
            }
            ProtoEntry::Unit { metric, unit } => format!(
                "UNIT {} {}",
                String::from_utf8_lossy(metric),
                String::from_utf8_lossy(unit)
            ),
            ProtoEntry::Series { value, timestamp } => {
                p.labels(&mut labels);
                format!("SERIES {} {labels:?} {value} {}", key(&p), ts(timestamp))
            }
            ProtoEntry::Histogram { timestamp } => {
                p.labels(&mut labels);
                let record = match p.histogram(&mut h, &mut fh) {
                    HistogramKind::Int => ferrite_model::histogram_record::int_record(&h),
                    HistogramKind::Float => ferrite_model::histogram_record::float_record(&fh),
                };
                format!(
                    "HISTOGRAM {} {labels:?} {} {record}",
                    key(&p),
                    ts(timestamp)
                )
            }
        });
    }
}

fn native(
    schema: i32,
    count: u64,
    spans: Vec<BucketSpan>,
    deltas: Vec<i64>,
    classic: Vec<Bucket>,
) -> Metric {
    Metric {
        histogram: Some(Histogram {
            sample_count: Some(count),
            sample_sum: Some(1.5),
            schema: Some(schema),
            zero_threshold: Some(0.001),
            zero_count: Some(1),
            positive_span: spans,
            positive_delta: deltas,
            bucket: classic,
            ..Histogram::default()
        }),
        ..Metric::default()
    }
}

fn bucket(upper: f64, count: u64) -> Bucket {
    Bucket {
        upper_bound: Some(upper),
        cumulative_count: Some(count),
        ..Bucket::default()
    }
}

#[test]
fn every_kind_of_metric() {
    let body = delimited(&[
        MetricFamily {
            unit: Some("seconds".into()),
            ..family(
                "c_seconds",
                COUNTER,
                vec![Metric {
                    label: labels(&[("z", "1"), ("a", "é")]),
                    counter: Some(Counter {
                        value: Some(3.0),
                        ..Counter::default()
                    }),
                    timestamp_ms: Some(1500),
                    ..Metric::default()
                }],
            )
        },
        family(
            "g",
            GAUGE,
            vec![Metric {
                gauge: Some(Gauge { value: Some(-2.5) }),
                ..Metric::default()
            }],
        ),
        family(
            "s",
            SUMMARY,
            vec![Metric {
                summary: Some(Summary {
                    sample_count: Some(4),
                    sample_sum: Some(10.0),
                    quantile: vec![Quantile {
                        quantile: Some(0.5),
                        value: Some(2.0),
                    }],
                    ..Summary::default()
                }),
                ..Metric::default()
            }],
        ),
        family(
            "h",
            HISTOGRAM,
            vec![Metric {
                label: labels(&[("le", "x")]),
                histogram: Some(Histogram {
                    sample_count: Some(3),
                    sample_sum: Some(4.0),
                    bucket: vec![bucket(1.0, 1), bucket(1e6, 2)],
                    ..Histogram::default()
                }),
                ..Metric::default()
            }],
        ),
    ]);
    let got = dump(&body, ProtoOptions::default());
    let want = [
        "HELP c_seconds c_seconds help",
        "UNIT c_seconds seconds",
        "TYPE c_seconds counter",
        r#"SERIES c_seconds|a|é|z|1 [("__name__", "c_seconds"), ("a", "é"), ("z", "1")] 3 1500"#,
        "HELP g g help",
        "TYPE g gauge",
        r#"SERIES g [("__name__", "g")] -2.5 -"#,
        "HELP s s help",
        "TYPE s summary",
        r#"SERIES s_count [("__name__", "s_count")] 4 -"#,
        r#"SERIES s_sum [("__name__", "s_sum")] 10 -"#,
        r#"SERIES s|quantile|0.5 [("__name__", "s"), ("quantile", "0.5")] 2 -"#,
        "HELP h h help",
        "TYPE h histogram",
        r#"SERIES h_count|le|x [("__name__", "h_count"), ("le", "x")] 3 -"#,
        r#"SERIES h_sum|le|x [("__name__", "h_sum"), ("le", "x")] 4 -"#,
        // The bucket's `le` after the metric's own.
        r#"SERIES h_bucket|le|x|le|1.0 [("__name__", "h_bucket"), ("le", "x"), ("le", "1.0")] 1 -"#,
        r#"SERIES h_bucket|le|x|le|1e+06 [("__name__", "h_bucket"), ("le", "x"), ("le", "1e+06")] 2 -"#,
        r#"SERIES h_bucket|le|x|le|+Inf [("__name__", "h_bucket"), ("le", "x"), ("le", "+Inf")] 3 -"#,
    ];
    assert_eq!(got, want);
}

#[test]
fn native_histograms_and_their_classic_buckets() {
    let body = delimited(&[family(
        "n",
        GAUGE_HISTOGRAM,
        vec![
            // Absolute 2 0 3: the empty bucket is cut.
            native(
                3,
                6,
                vec![span(-1, 3)],
                vec![2, -2, 3],
                vec![bucket(f64::INFINITY, 6)],
            ),
            // A classic one after a native one.
            Metric {
                histogram: Some(Histogram {
                    sample_count: Some(1),
                    ..Histogram::default()
                }),
                ..Metric::default()
            },
        ],
    )]);
    let native_line = r#"HISTOGRAM n [("__name__", "n")] - H 3 3 3f50624dd2f1a9fc 6 1 3ff8000000000000 -1:1,1:1 - 2,1 - -"#;
    let classic_of_second = [
        r#"SERIES n_count [("__name__", "n_count")] 1 -"#,
        r#"SERIES n_sum [("__name__", "n_sum")] 0 -"#,
        r#"SERIES n_bucket|le|+Inf [("__name__", "n_bucket"), ("le", "+Inf")] 1 -"#,
    ];
    let got = dump(&body, ProtoOptions::default());
    let mut want = vec!["HELP n n help", "TYPE n gaugehistogram", native_line];
    want.extend(classic_of_second);
    assert_eq!(got, want);

    // With the classic buckets too: the native one's follow it.
    let got = dump(
        &body,
        ProtoOptions {
            keep_classic_histograms: true,
            ..ProtoOptions::default()
        },
    );
    let mut want = vec!["HELP n n help", "TYPE n gaugehistogram", native_line];
    want.extend([
        r#"SERIES n_count [("__name__", "n_count")] 6 -"#,
        r#"SERIES n_sum [("__name__", "n_sum")] 1.5 -"#,
        r#"SERIES n_bucket|le|+Inf [("__name__", "n_bucket"), ("le", "+Inf")] 6 -"#,
    ]);
    want.extend(classic_of_second);
    assert_eq!(got, want);

    // Native parts ignored: both are classic.
    let got = dump(
        &body,
        ProtoOptions {
            ignore_native_histograms: true,
            ..ProtoOptions::default()
        },
    );
    assert_eq!(got.len(), 2 + 3 + 3, "{got:#?}");
    assert!(got.iter().all(|l| !l.starts_with("HISTOGRAM")));
}

#[test]
fn float_histograms() {
    let body = delimited(&[family(
        "f",
        HISTOGRAM,
        vec![Metric {
            histogram: Some(Histogram {
                sample_count_float: Some(2.5),
                schema: Some(0),
                positive_span: vec![span(0, 2)],
                positive_count: vec![0.0, 2.5],
                positive_delta: vec![7], // ignored: float counts win
                ..Histogram::default()
            }),
            ..Metric::default()
        }],
    )]);
    let got = dump(&body, ProtoOptions::default());
    assert_eq!(
        got[2],
        r#"HISTOGRAM f [("__name__", "f")] - F 0 0 0000000000000000 4004000000000000 0000000000000000 0000000000000000 1:1 - 4004000000000000 - -"#
    );
}

#[test]
fn untyped_values_carry_over_and_empty_families_vanish() {
    let body = delimited(&[
        family(
            "u",
            UNTYPED,
            vec![
                Metric {
                    untyped: Some(Untyped { value: Some(7.0) }),
                    ..Metric::default()
                },
                Metric::default(),
            ],
        ),
        family("empty", GAUGE, vec![]),
        family("v", UNTYPED, vec![Metric::default()]),
    ]);
    let got = dump(&body, ProtoOptions::default());
    assert_eq!(
        got,
        [
            "HELP u u help",
            "TYPE u unknown",
            r#"SERIES u [("__name__", "u")] 7 -"#,
            r#"SERIES u [("__name__", "u")] 7 -"#,
            "HELP v v help",
            "TYPE v unknown",
            r#"SERIES v [("__name__", "v")] 7 -"#,
        ]
    );
}

#[test]
fn errors_are_prometheus_messages() {
    let one_gauge = |name: &str| {
        delimited(&[family(
            name,
            GAUGE,
            vec![Metric {
                gauge: Some(Gauge { value: Some(1.0) }),
                ..Metric::default()
            }],
        )])
    };
    let err = |body: &[u8]| {
        dump(body, ProtoOptions::default())
            .last()
            .cloned()
            .unwrap_or_default()
    };
    assert_eq!(err(&one_gauge("")), "ERR invalid metric name: ");
    let mut bad_type = family("t", 9, vec![Metric::default()]);
    assert_eq!(
        err(&delimited(&[bad_type.clone()])),
        "ERR unknown metric type for metric \"t\": 9"
    );
    bad_type.r#type = Some(GAUGE);
    bad_type.metric[0].label = labels(&[("", "x")]);
    assert_eq!(err(&delimited(&[bad_type])), "ERR invalid label name: ");
    let body = one_gauge("a");
    assert_eq!(
        err(&body[..body.len() - 1]),
        format!(
            "ERR clientpb: insufficient length of buffer, expected at least {} bytes, got {} bytes",
            body.len(),
            body.len() - 1
        )
    );
    assert_eq!(
        err(&[0x80, 0x80, 0x80, 0x80, 0x80, 0x00]),
        "ERR clientpb: invalid varint encountered"
    );
    // A family whose metric is cut short.
    assert_eq!(err(&[3, 0x22, 1, 0x12]), "ERR unexpected EOF");
    assert_eq!(
        err(&[2, 0x22, 0]),
        "ERR invalid metric name: ",
        "a metric that is empty decodes"
    );
    assert_eq!(
        err(&[2, 0x1a, 1]),
        "ERR proto: wrong wireType = 2 for field Type"
    );
    // Spans that do not cover the buckets.
    let body = delimited(&[family(
        "n",
        HISTOGRAM,
        vec![native(0, 1, vec![span(0, 2)], vec![1], vec![])],
    )]);
    assert_eq!(
        err(&body),
        "ERR histogram \"n\": positive side: spans require 2 buckets, have 1"
    );
    // After an error, the same error.
    let mut p = ProtoParser::new(&[9], ProtoOptions::default());
    let e = p.next_entry().expect_err("cut");
    assert_eq!(p.next_entry(), Err(e));
}

#[test]
fn bytes_not_utf8_are_quoted_raw() {
    // A label value that is not UTF-8, written by hand: LabelPair{name:
    // "a", value: "\xff"} in a Metric in a MetricFamily{name: "m"}.
    let label = [0x0a, 1, b'a', 0x12, 1, 0xff];
    let mut metric = vec![0x0a, label.len() as u8];
    metric.extend_from_slice(&label);
    let mut fam = vec![0x0a, 1, b'm', 0x18, 1, 0x22, metric.len() as u8];
    fam.extend_from_slice(&metric);
    let mut body = vec![fam.len() as u8];
    body.extend_from_slice(&fam);
    let mut p = ProtoParser::new(&body, ProtoOptions::default());
    assert!(matches!(p.next_entry(), Ok(Some(ProtoEntry::Help { .. }))));
    assert!(matches!(p.next_entry(), Ok(Some(ProtoEntry::Type { .. }))));
    let e = p.next_entry().expect_err("not UTF-8");
    assert_eq!(e.as_bytes(), b"invalid label value: \xff");
}

/// Reads every entry of `body` in each mode, as a scrape would.
fn read_all(body: &[u8]) {
    let modes = [(true, false), (false, false), (false, true)];
    for ((ignore, keep), convert) in modes.into_iter().flat_map(|m| [(m, false), (m, true)]) {
        let opts = ProtoOptions {
            ignore_native_histograms: ignore,
            keep_classic_histograms: keep,
            convert_classic_histograms_to_nhcb: convert,
        };
        let mut p = ProtoParser::new(body, opts);
        let mut labels = Vec::new();
        let (mut h, mut fh) = (ModelHistogram::default(), FloatHistogram::default());
        while let Ok(Some(e)) = p.next_entry() {
            match e {
                ProtoEntry::Series { .. } => p.labels(&mut labels),
                ProtoEntry::Histogram { .. } => {
                    p.labels(&mut labels);
                    p.histogram(&mut h, &mut fh);
                }
                _ => {}
            }
        }
    }
}

proptest::proptest! {
    /// Any bytes, and valid bodies edited at random, never panic.
    #[test]
    fn arbitrary_bodies_do_not_panic(
        bytes in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..200),
        edits in proptest::collection::vec((0usize..400, proptest::prelude::any::<u8>()), 0..4),
        schema in -10i32..60,
        deltas in proptest::collection::vec(-3i64..4, 0..8),
        spans in proptest::collection::vec((-3i32..4, 0u32..4), 0..4),
    ) {
        read_all(&bytes);
        let h = Histogram {
            schema: Some(schema),
            zero_threshold: Some(0.5),
            positive_span: spans.iter().map(|&(o, l)| span(o, l)).collect(),
            positive_delta: deltas.clone(),
            negative_span: spans.iter().map(|&(o, l)| span(o, l)).collect(),
            negative_count: deltas.iter().map(|&d| d as f64).collect(),
            bucket: vec![bucket(1.0, 1)],
            ..Histogram::default()
        };
        let metric = Metric {
            histogram: Some(h),
            label: labels(&[("a", "b")]),
            ..Metric::default()
        };
        let mut body = delimited(&[family("h", HISTOGRAM, vec![metric.clone(), metric])]);
        for (at, b) in edits {
            if !body.is_empty() {
                let at = at % body.len();
                body[at] = b;
            }
        }
        read_all(&body);
    }
}

#[test]
fn classic_histograms_converted_to_nhcb() {
    let classic = |count: u64, buckets: Vec<Bucket>| Metric {
        histogram: Some(Histogram {
            sample_count: Some(count),
            sample_sum: Some(4.0),
            bucket: buckets,
            ..Histogram::default()
        }),
        ..Metric::default()
    };
    let body = delimited(&[
        family(
            "h",
            HISTOGRAM,
            vec![Metric {
                label: labels(&[("a", "b")]),
                timestamp_ms: Some(1500),
                // Out of order, no +Inf bucket.
                ..classic(3, vec![bucket(1e6, 2), bucket(1.0, 1)])
            }],
        ),
        family(
            "n",
            GAUGE_HISTOGRAM,
            vec![
                native(
                    3,
                    6,
                    vec![span(-1, 3)],
                    vec![2, -2, 3],
                    vec![bucket(1.0, 6)],
                ),
                classic(1, vec![]),
            ],
        ),
    ]);
    let opts = |keep: bool| ProtoOptions {
        keep_classic_histograms: keep,
        convert_classic_histograms_to_nhcb: true,
        ..ProtoOptions::default()
    };
    let h_nhcb = r#"HISTOGRAM h|a|b [("__name__", "h"), ("a", "b")] 1500 H 0 -53 0000000000000000 3 0 4010000000000000 0:3 - 1,0,0 - 3ff0000000000000,412e848000000000"#;
    let native_line = r#"HISTOGRAM n [("__name__", "n")] - H 3 3 3f50624dd2f1a9fc 6 1 3ff8000000000000 -1:1,1:1 - 2,1 - -"#;
    // The gauge histogram's classic metric, converted with the gauge hint.
    let n_nhcb = r#"HISTOGRAM n [("__name__", "n")] - H 3 -53 0000000000000000 1 0 4010000000000000 0:1 - 1 - -"#;
    let got = dump(&body, opts(false));
    let want = [
        "HELP h h help",
        "TYPE h histogram",
        h_nhcb,
        "HELP n n help",
        "TYPE n gaugehistogram",
        native_line,
        n_nhcb,
    ];
    assert_eq!(got, want);

    // Classic series kept: before the converted histogram; a native
    // histogram's classic buckets are not converted.
    let got = dump(&body, opts(true));
    let want = [
        "HELP h h help",
        "TYPE h histogram",
        r#"SERIES h_count|a|b [("__name__", "h_count"), ("a", "b")] 3 1500"#,
        r#"SERIES h_sum|a|b [("__name__", "h_sum"), ("a", "b")] 4 1500"#,
        r#"SERIES h_bucket|a|b|le|1e+06 [("__name__", "h_bucket"), ("a", "b"), ("le", "1e+06")] 2 1500"#,
        r#"SERIES h_bucket|a|b|le|1.0 [("__name__", "h_bucket"), ("a", "b"), ("le", "1.0")] 1 1500"#,
        r#"SERIES h_bucket|a|b|le|+Inf [("__name__", "h_bucket"), ("a", "b"), ("le", "+Inf")] 3 1500"#,
        h_nhcb,
        "HELP n n help",
        "TYPE n gaugehistogram",
        native_line,
        r#"SERIES n_count [("__name__", "n_count")] 6 -"#,
        r#"SERIES n_sum [("__name__", "n_sum")] 1.5 -"#,
        r#"SERIES n_bucket|le|1.0 [("__name__", "n_bucket"), ("le", "1.0")] 6 -"#,
        r#"SERIES n_bucket|le|+Inf [("__name__", "n_bucket"), ("le", "+Inf")] 6 -"#,
        r#"SERIES n_count [("__name__", "n_count")] 1 -"#,
        r#"SERIES n_sum [("__name__", "n_sum")] 4 -"#,
        r#"SERIES n_bucket|le|+Inf [("__name__", "n_bucket"), ("le", "+Inf")] 1 -"#,
        n_nhcb,
    ];
    assert_eq!(got, want);

    // Native parts ignored: the native histogram's classic buckets are
    // converted too.
    let got = dump(
        &body,
        ProtoOptions {
            ignore_native_histograms: true,
            ..opts(false)
        },
    );
    assert_eq!(
        got[5],
        r#"HISTOGRAM n [("__name__", "n")] - H 3 -53 0000000000000000 6 0 3ff8000000000000 0:1 - 6 - 3ff0000000000000"#
    );

    // A histogram that cannot be converted fails the body.
    let bad = delimited(&[family(
        "h",
        HISTOGRAM,
        vec![classic(3, vec![bucket(1.0, 2), bucket(2.0, 1)])],
    )]);
    let got = dump(&bad, opts(false));
    assert_eq!(
        got.last().map(String::as_str),
        Some("ERR count is not cumulative: 1 < 2")
    );
}
