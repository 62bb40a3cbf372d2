//! Property tests: generated valid expositions read back exactly; arbitrary
//! and mutated bytes never panic and fail with a line inside the input.

use ferrite_model::gofloat::{seconds_to_millis, NORMAL_NAN_BITS};
use ferrite_textparse::{backfill, Entry, Label, Parser};
use proptest::prelude::*;

#[derive(Debug, Clone)]
struct Name {
    text: String,
    quoted: bool,
}

/// Exemplar labels, value, timestamp (seconds).
type ExemplarModel = (Vec<(String, String)>, f64, Option<f64>);

#[derive(Debug, Clone)]
struct Sample {
    name: Name,
    /// The name written inside the braces (`{"name", ...}`).
    name_in_braces: bool,
    labels: Vec<(Name, String)>,
    value: f64,
    value_style: u8,
    ts: Option<f64>,
    exemplar: Option<ExemplarModel>,
}

#[derive(Debug, Clone)]
enum Line {
    Type(Name, &'static str),
    Help(Name, String),
    Sample(Sample),
}

fn metric_name() -> impl Strategy<Value = Name> {
    prop_oneof![
        4 => "[a-zA-Z_:][a-zA-Z0-9_:]{0,10}".prop_map(|text| Name { text, quoted: false }),
        1 => "[^\u{0}]{0,8}".prop_map(|text| Name { text, quoted: true }),
    ]
}

fn label_name() -> impl Strategy<Value = Name> {
    prop_oneof![
        4 => "[a-zA-Z_][a-zA-Z0-9_]{0,8}".prop_map(|text| Name { text, quoted: false }),
        1 => "[^\u{0}]{0,8}".prop_map(|text| Name { text, quoted: true }),
    ]
}

fn float() -> impl Strategy<Value = f64> {
    prop_oneof![
        any::<f64>(),
        (-1e6f64..1e6),
        Just(f64::NAN),
        Just(f64::INFINITY),
        Just(f64::NEG_INFINITY),
        Just(-0.0),
    ]
}

fn seconds() -> impl Strategy<Value = f64> {
    prop_oneof![
        (1.6e9f64..1.8e9),
        (-1e12f64..1e12),
        any::<f64>().prop_filter("finite", |f| f.is_finite()),
        (-1000i64..1000).prop_map(|i| i as f64 / 1000.0),
    ]
}

fn sample() -> impl Strategy<Value = Sample> {
    (
        metric_name(),
        any::<bool>(),
        prop::collection::vec((label_name(), ".{0,10}"), 0..4),
        float(),
        0u8..3,
        prop::option::weighted(0.9, seconds()),
        prop::option::weighted(
            0.2,
            (
                prop::collection::vec(("[a-z_][a-z0-9_]{0,5}", "[^\u{0}\n]{0,6}"), 0..3),
                float(),
                prop::option::of(seconds()),
            ),
        ),
    )
        .prop_map(
            |(name, nib, labels, value, value_style, ts, exemplar)| Sample {
                name_in_braces: nib || name.quoted,
                name,
                labels,
                value,
                value_style,
                ts,
                exemplar,
            },
        )
}

fn line() -> impl Strategy<Value = Line> {
    prop_oneof![
        1 => (metric_name(), prop::sample::select(vec!["counter", "gauge", "unknown", "info", "stateset", "gaugehistogram"]))
            .prop_map(|(n, t)| Line::Type(n, t)),
        1 => (metric_name(), "[^\n]{0,12}").prop_map(|(n, h)| Line::Help(n, h)),
        4 => sample().prop_map(Line::Sample),
    ]
}

/// Escapes for a quoted string; a raw newline stays raw in names.
fn escape(s: &str, raw_newline: bool) -> String {
    let mut o = String::new();
    for c in s.chars() {
        match c {
            '\\' => o.push_str("\\\\"),
            '"' => o.push_str("\\\""),
            '\n' if !raw_newline => o.push_str("\\n"),
            c => o.push(c),
        }
    }
    o
}

fn render_name(n: &Name) -> String {
    if n.quoted {
        format!("\"{}\"", escape(&n.text, true))
    } else {
        n.text.clone()
    }
}

fn render_float(f: f64, style: u8) -> String {
    match style {
        0 => format!("{f}"),
        1 => format!("{f:e}"),
        _ => format!("{f:?}"),
    }
}

fn render(lines: &[Line]) -> String {
    let mut out = String::new();
    for l in lines {
        match l {
            Line::Type(n, t) => out.push_str(&format!("# TYPE {} {t}\n", render_name(n))),
            Line::Help(n, h) => out.push_str(&format!(
                "# HELP {} {}\n",
                render_name(n),
                h.replace('\\', "\\\\")
            )),
            Line::Sample(s) => {
                let mut parts: Vec<String> = s
                    .labels
                    .iter()
                    .map(|(n, v)| format!("{}=\"{}\"", render_name(n), escape(v, false)))
                    .collect();
                if s.name_in_braces {
                    parts.insert(0, format!("\"{}\"", escape(&s.name.text, true)));
                    out.push_str(&format!("{{{}}}", parts.join(",")));
                } else {
                    out.push_str(&s.name.text);
                    if !parts.is_empty() {
                        out.push_str(&format!("{{{}}}", parts.join(",")));
                    }
                }
                out.push_str(&format!(" {}", render_float(s.value, s.value_style)));
                if let Some(ts) = s.ts {
                    out.push_str(&format!(" {}", render_float(ts, s.value_style)));
                }
                if let Some((labels, v, ts)) = &s.exemplar {
                    let ls: Vec<String> = labels
                        .iter()
                        .map(|(n, v)| format!("{n}=\"{}\"", escape(v, false)))
                        .collect();
                    out.push_str(&format!(" # {{{}}} {}", ls.join(","), render_float(*v, 2)));
                    if let Some(ts) = ts {
                        out.push_str(&format!(" {}", render_float(*ts, 2)));
                    }
                }
                out.push('\n');
            }
        }
    }
    out.push_str("# EOF\n");
    out
}

fn same_float(a: f64, b: f64) -> bool {
    if b.is_nan() {
        a.to_bits() == NORMAL_NAN_BITS
    } else {
        a.to_bits() == b.to_bits()
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(400))]

    #[test]
    fn valid_expositions_round_trip(lines in prop::collection::vec(line(), 0..12)) {
        let text = render(&lines);
        let entries: Vec<Entry> = Parser::new(text.as_bytes())
            .collect::<Result<_, _>>()
            .map_err(|e| TestCaseError::fail(format!("{e}\n{text}")))?;
        prop_assert_eq!(entries.len(), lines.len());
        let mut line_no = 1;
        for (l, e) in lines.iter().zip(&entries) {
            match (l, e) {
                (Line::Type(n, t), Entry::Type { metric, kind, line }) => {
                    prop_assert_eq!(metric, &n.text);
                    prop_assert_eq!(kind.as_str(), *t);
                    prop_assert_eq!(*line, line_no);
                }
                (Line::Help(n, h), Entry::Help { metric, text, line }) => {
                    prop_assert_eq!(metric, &n.text);
                    prop_assert_eq!(text, h);
                    prop_assert_eq!(*line, line_no);
                }
                (Line::Sample(s), Entry::Series(got)) => {
                    let mut want = vec![Label::new("__name__", s.name.text.clone())];
                    want.extend(s.labels.iter().map(|(n, v)| Label::new(n.text.clone(), v.clone())));
                    want.sort_by(|a, b| a.name.cmp(&b.name));
                    prop_assert_eq!(&got.labels, &want);
                    prop_assert!(same_float(got.value, s.value), "{} vs {}", got.value, s.value);
                    prop_assert_eq!(got.timestamp, s.ts.map(seconds_to_millis));
                    prop_assert_eq!(got.line, line_no);
                    match (&s.exemplar, &got.exemplar) {
                        (None, None) => {}
                        (Some((labels, v, ts)), Some(e)) => {
                            let mut want: Vec<Label> = labels.iter().map(|(n, v)| Label::new(n.clone(), v.clone())).collect();
                            want.sort_by(|a, b| a.name.cmp(&b.name));
                            prop_assert_eq!(&e.labels, &want);
                            prop_assert!(same_float(e.value, *v));
                            prop_assert_eq!(e.timestamp, ts.map(seconds_to_millis));
                        }
                        _ => prop_assert!(false, "exemplar mismatch"),
                    }
                }
                _ => prop_assert!(false, "entry kind mismatch: {:?} vs {:?}", l, e),
            }
            // Raw newlines in quoted names move the following lines.
            line_no += 1 + match l {
                Line::Type(n, _) | Line::Help(n, _) => n.text.matches('\n').count() * n.quoted as usize,
                Line::Sample(s) => {
                    (if s.name_in_braces { s.name.text.matches('\n').count() } else { 0 })
                        + s.labels.iter().map(|(n, _)| if n.quoted { n.text.matches('\n').count() } else { 0 }).sum::<usize>()
                }
            };
        }
    }

    #[test]
    fn arbitrary_bytes_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..600)) {
        check_no_panic(&bytes)?;
    }

    #[test]
    fn mutated_expositions_never_panic(
        lines in prop::collection::vec(line(), 0..8),
        edits in prop::collection::vec((any::<prop::sample::Index>(), 0u8..3, prop::sample::select(b" \n\"\\{}=,#x0.\xff\x00".to_vec())), 1..5),
    ) {
        let mut b = render(&lines).into_bytes();
        for (i, op, c) in edits {
            if b.is_empty() { b.push(c); continue; }
            let i = i.index(b.len());
            match op {
                0 => { b.remove(i); }
                1 => b.insert(i, c),
                _ => b[i] = c,
            }
        }
        check_no_panic(&b)?;
    }
}

/// Parses to the end; an error's line must lie within the input.
fn check_no_panic(b: &[u8]) -> Result<(), TestCaseError> {
    let lines = 1 + b.iter().filter(|&&c| c == b'\n').count();
    for e in Parser::new(b) {
        if let Err(e) = e {
            prop_assert!(
                e.line >= 1 && e.line <= lines,
                "line {} of {}",
                e.line,
                lines
            );
            let _ = e.to_string();
        }
    }
    if let Err(e) = backfill::samples(b) {
        prop_assert!(
            e.line >= 1 && e.line <= lines,
            "line {} of {}",
            e.line,
            lines
        );
    }
    Ok(())
}
