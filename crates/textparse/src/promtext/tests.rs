use super::*;

fn entries(body: &[u8]) -> Result<Vec<TextEntry<'_>>, TextError> {
    let mut p = TextParser::new(body);
    let mut out = Vec::new();
    while let Some(e) = p.next_entry()? {
        out.push(e);
    }
    Ok(out)
}

fn err(body: &[u8]) -> String {
    entries(body).expect_err("an error").0
}

/// A series' raw bytes, labels, value and timestamp.
type Parsed = (String, Vec<(String, String)>, f64, Option<i64>);

fn series(body: &[u8]) -> Vec<Parsed> {
    let mut p = TextParser::new(body);
    let mut out = Vec::new();
    while let Some(e) = p.next_entry().expect("parses") {
        if let TextEntry::Series(s) = e {
            let mut labels = Vec::new();
            p.labels(&mut labels).expect("labels");
            let raw = String::from_utf8_lossy(s.series).into_owned();
            out.push((raw, labels, s.value, s.timestamp));
        }
    }
    out
}

fn pairs(ps: &[(&str, &str)]) -> Vec<(String, String)> {
    ps.iter()
        .map(|(n, v)| (n.to_string(), v.to_string()))
        .collect()
}

#[test]
fn samples_metadata_and_comments() {
    let body = b"# HELP go_gc Number of GCs.\n# TYPE go_gc counter\ngo_gc 4\n# free comment\n\
        http{code=\"200\",path=\"/\"} 1.5e3 1700000000000\n";
    let es = entries(body).expect("parses");
    assert_eq!(
        es[0],
        TextEntry::Help {
            metric: b"go_gc",
            text: Cow::Borrowed(b"Number of GCs.")
        }
    );
    assert_eq!(
        es[1],
        TextEntry::Type {
            metric: b"go_gc",
            kind: MetricType::Counter
        }
    );
    assert_eq!(
        es[3],
        TextEntry::Comment {
            text: b"# free comment"
        }
    );
    let s = series(body);
    assert_eq!(
        s[0],
        ("go_gc".into(), pairs(&[("__name__", "go_gc")]), 4.0, None)
    );
    assert_eq!(
        s[1],
        (
            "http{code=\"200\",path=\"/\"}".into(),
            pairs(&[("__name__", "http"), ("code", "200"), ("path", "/")]),
            1500.0,
            Some(1_700_000_000_000)
        )
    );
}

#[test]
fn prometheus_quirks() {
    // No commas needed, trailing comma allowed, no final newline.
    let s = series(b"a{x=\"1\" y=\"2\",} 1");
    assert_eq!(s[0].1, pairs(&[("__name__", "a"), ("x", "1"), ("y", "2")]));
    // Blanks before the name belong to it.
    assert_eq!(series(b"  a 1\n")[0].1, pairs(&[("__name__", "  a")]));
    // A quoted name in braces; values span lines and keep NULs.
    let s = series(b"{\"my.metric\",x=\"a\nb\0c\"} 2\n");
    assert_eq!(
        s[0].1,
        pairs(&[("__name__", "my.metric"), ("x", "a\nb\0c")])
    );
    // Escapes: \\ \" \n unescaped, others kept.
    let s = series(b"a{x=\"\\\\ \\\" \\n \\t\"} 1\n");
    assert_eq!(s[0].1[1].1, "\\ \" \n \\t");
    // NUL at a line's start ends the input without error.
    assert_eq!(series(b"a 1\n\0garbage {{{\n").len(), 1);
    // le is normalised after a histogram TYPE, whatever it named.
    let s = series(b"# TYPE x histogram\nother_bucket{le=\"1\"} 3\n");
    assert_eq!(s[0].1[1].1, "1.0");
    // NaN has Prometheus' bits.
    assert_eq!(series(b"a NaN\n")[0].2.to_bits(), NORMAL_NAN_BITS);
    // Blanks in the help text after the first are kept.
    let es = entries(b"# HELP a   two\n").expect("parses");
    assert_eq!(
        es[0],
        TextEntry::Help {
            metric: b"a",
            text: Cow::Borrowed(b"  two")
        }
    );
}

#[test]
fn errors_read_as_prometheus_writes_them() {
    assert_eq!(
        err(b"a\n"),
        "expected value after metric, got \"\\n\" (\"INVALID\") while parsing: \"a\\n\""
    );
    assert_eq!(
        err(b"a 1 -5\n"),
        "expected timestamp or new record, got \"-\" (\"INVALID\") while parsing: \"a 1 -\""
    );
    assert_eq!(
        err(b"a abc\n"),
        "strconv.ParseFloat: parsing \"abc\": invalid syntax while parsing: \"a abc\""
    );
    assert_eq!(
        err(b"a 0x1p3\n"),
        "unsupported character in float while parsing: \"a 0x1p3\""
    );
    assert_eq!(
        err(b"a 1 99999999999999999999\n"),
        "strconv.ParseInt: parsing \"99999999999999999999\": value out of range while parsing: \"a 1 99999999999999999999\""
    );
    assert_eq!(err(b"# TYPE a foo\n"), "invalid metric type \"foo\"");
    assert_eq!(
        err(b"{x=\"1\"} 1\n"),
        "metric name not set while parsing: \"{x=\\\"1\\\"} 1\""
    );
    assert_eq!(
        err(b"a{\"b\"} 1\n"),
        "metric name already set while parsing: \"a{\\\"b\\\"}\""
    );
    assert_eq!(
        err(b"a{x=\"\xff\"} 1\n"),
        "invalid UTF-8 label value: \"\\\"\\xff\\\"\""
    );
    assert_eq!(
        err(b"# HELP \n"),
        "expected metric name after HELP, got \"\\n\" (\"INVALID\") while parsing: \"# HELP \\n\""
    );
    // `# HELP` without a blank after it is a comment.
    assert_eq!(
        entries(b"# HELP\n").expect("parses"),
        vec![TextEntry::Comment { text: b"# HELP" }]
    );
}

#[test]
fn nul_quirks() {
    // NULs after a label value's closing quote: the value is cut short.
    let s = series(b"a{b=\"x\"\0\0,c=\"y\"} 1\n");
    assert_eq!(
        s[0].1,
        pairs(&[("__name__", "a"), ("b", "x\"\0"), ("c", "y")])
    );
    // Stepped over in keywords, comments and help text.
    let es = entries(b"# HE\0LP a \0x\n# c\0d\n").expect("parses");
    assert_eq!(
        es,
        vec![
            TextEntry::Help {
                metric: b"a",
                text: Cow::Borrowed(b"\0x")
            },
            TextEntry::Comment { text: b"# c\0d" }
        ]
    );
    // A NUL in a comment without a blank after `#` ends the input.
    assert_eq!(entries(b"#x\0y\na 1\n").expect("parses"), vec![]);
    // Right after a metadata name: an error.
    assert_eq!(
        err(b"# HELP a\0 x\n"),
        "linebreak expected after metadata, got \"\\x00 \" (\"EOF\") while parsing: \"# HELP a\\x00 \""
    );
}

#[test]
fn names_that_are_not_utf8() {
    // Prometheus hands these out and rejects the series when it validates
    // it; here labels() says so (the known difference).
    for body in [&b"{\"\xff\"} 1\n"[..], b"a{\"b\xff\"=\"c\"} 1\n"] {
        let mut p = TextParser::new(body);
        assert!(matches!(p.next_entry(), Ok(Some(TextEntry::Series(_)))));
        let mut out = Vec::new();
        let e = p.labels(&mut out).expect_err("not UTF-8");
        assert!(e.0.contains("not valid UTF-8"), "{e}");
    }
}

/// A `# HELP` or `# TYPE` line in the common form.
fn common_metadata_line() -> impl proptest::strategy::Strategy<Value = Vec<u8>> {
    use proptest::prelude::*;
    let help = (
        "[a-z_:][a-z0-9_:]{0,8}",
        "([ -\\[\\]-~]|\\\\[\\\\n]|é){1,12}",
    )
        .prop_map(|(n, t)| format!("# HELP {n} {t}\n"));
    let kind = prop_oneof![
        Just("counter"),
        Just("gauge"),
        Just("histogram"),
        Just("summary"),
        Just("untyped"),
        Just("info"),
    ];
    let type_line = ("[a-z_:][a-z0-9_:]{0,8}", kind).prop_map(|(n, k)| format!("# TYPE {n} {k}\n"));
    prop_oneof![help, type_line].prop_map(String::into_bytes)
}

/// A common series or metadata line with one byte put in, deleted or
/// changed.
fn mutated_common_line() -> impl proptest::strategy::Strategy<Value = Vec<u8>> {
    use proptest::prelude::*;
    let special = proptest::sample::select(b"\\\"{}=, \t\n\0#e.+-_xHT\xc3".to_vec());
    (
        prop_oneof![common_line(), common_metadata_line()],
        any::<proptest::sample::Index>(),
        special,
        0..3u8,
    )
        .prop_map(|(mut line, at, byte, how)| {
            let i = at.index(line.len());
            match how {
                0 => line.insert(i, byte),
                1 => {
                    line.remove(i);
                }
                _ => line[i] = byte,
            }
            line
        })
}

proptest::proptest! {
    /// Any input: no panic, and every series' raw bytes are a prefix of
    /// its line.
    #[test]
    fn never_panics(body in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..200)) {
        let mut p = TextParser::new(&body);
        while let Ok(Some(e)) = p.next_entry() {
            if let TextEntry::Series(_) = e {
                let mut out = Vec::new();
                let _ = p.labels(&mut out);
            }
        }
    }
}

/// Everything a parser gives for a body: entries with each series'
/// labels, up to the first error.
fn everything(body: &[u8], fast: bool) -> Vec<String> {
    let mut p = TextParser::new(body);
    p.fast = fast;
    let mut out = Vec::new();
    loop {
        match p.next_entry() {
            Ok(None) => return out,
            Ok(Some(TextEntry::Series(s))) => {
                let mut labels = Vec::new();
                let labels = p.labels(&mut labels).map(|()| labels);
                out.push(format!(
                    "{:?} {} {:?} {labels:?}",
                    s.series,
                    s.value.to_bits(),
                    s.timestamp
                ));
            }
            Ok(Some(e)) => out.push(format!("{e:?}")),
            Err(e) => {
                out.push(format!("error {e}"));
                return out;
            }
        }
    }
}

/// A line near the common form: pieces that are common, unusual or
/// wrong, so that both paths meet every case.
fn near_common_line() -> impl proptest::strategy::Strategy<Value = Vec<u8>> {
    use proptest::prelude::*;
    let piece = prop_oneof![
        6 => "[a-z_:][a-z0-9_:]{0,6}",
        3 => Just("{".to_string()),
        3 => Just("}".to_string()),
        3 => Just("=\"".to_string()),
        3 => Just("\"".to_string()),
        3 => Just(",".to_string()),
        4 => Just(" ".to_string()),
        1 => Just("\t".to_string()),
        4 => "[0-9]{1,4}",
        2 => "[-+]?[0-9]{0,3}(\\.[0-9]{0,3})?([eE][-+]?[0-9]{1,4})?",
        1 => prop_oneof![Just("NaN"), Just("+Inf"), Just("-Inf"), Just("0x1p3"), Just("1_0")].prop_map(String::from),
        1 => Just("\\".to_string()),
        1 => Just("\u{0}".to_string()),
        1 => Just("é".to_string()),
        1 => Just("\n".to_string()),
        1 => Just("# TYPE a histogram\n".to_string()),
        1 => Just("le=\"1\"".to_string()),
        1 => Just("99999999999999999999".to_string()),
        2 => prop_oneof![
            Just("# HELP "),
            Just("# TYPE "),
            Just("#  HELP "),
            Just("counter"),
            Just("gauge"),
            Just("untyped"),
        ]
        .prop_map(String::from),
    ];
    proptest::collection::vec(piece, 0..14).prop_map(|ps| {
        let mut line = ps.concat().into_bytes();
        line.push(b'\n');
        line
    })
}

/// A common series line with random labels, value and timestamp.
fn common_line() -> impl proptest::strategy::Strategy<Value = Vec<u8>> {
    use proptest::prelude::*;
    let label = (
        "[a-z_][a-z0-9_]{0,5}",
        "([ -!#-\\[\\]-~]|\\\\[\\\\n\"]){0,6}",
    );
    (
        "[a-z_:][a-z0-9_:]{0,8}",
        proptest::option::of(proptest::collection::vec(label, 0..4)),
        prop_oneof![Just(" "), Just("  "), Just("\t")],
        "-?[0-9]{1,5}(\\.[0-9]{1,4})?(e[-+]?[0-9]{1,3})?",
        proptest::option::of("[0-9]{1,14}"),
    )
        .prop_map(|(name, labels, blank, value, ts)| {
            let mut line = name;
            if let Some(labels) = labels {
                let pairs: Vec<String> =
                    labels.iter().map(|(n, v)| format!("{n}=\"{v}\"")).collect();
                line.push('{');
                line.push_str(&pairs.join(","));
                line.push('}');
            }
            line.push_str(blank);
            line.push_str(&value);
            if let Some(ts) = ts {
                line.push(' ');
                line.push_str(&ts);
            }
            line.push('\n');
            line.into_bytes()
        })
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(3000))]

    /// The one-pass path reads every line it takes as the lexer does,
    /// and leaves the rest to it.
    #[test]
    fn the_common_line_path_reads_as_the_lexer_does(
        lines in proptest::collection::vec(
            proptest::prop_oneof![
                near_common_line(),
                common_line(),
                common_metadata_line(),
                mutated_common_line(),
            ],
            1..8,
        ),
        chop in proptest::bool::ANY,
    ) {
        let mut body = lines.concat();
        if chop {
            // No final newline.
            body.pop();
        }
        proptest::prop_assert_eq!(everything(&body, true), everything(&body, false));
    }
}

#[test]
fn common_lines_take_the_one_pass_path() {
    let body = b"a{b=\"1\",c=\"x y\",} 1.5 17\nb 2\nc{} -3e2\n";
    let mut p = TextParser::new(body);
    for _ in 0..3 {
        let s = p.common_series().expect("a common line");
        assert!(!s.series.is_empty());
    }
    assert_eq!(everything(body, true), everything(body, false));
    assert_eq!(everything(body, true).len(), 3);
}

/// What a first read of a body teaches a scrape cache: each series
/// part, and each metadata line with its entry.
#[derive(Default)]
struct Known {
    series: std::collections::HashSet<Vec<u8>>,
    metadata: std::collections::HashMap<Vec<u8>, (String, Option<MetricType>)>,
}

/// One entry as [`read_with_known`] and [`read_learning`] give it (no
/// labels: a known line's are the cache's), with the type in force after
/// it.
fn entry_text(e: &TextEntry<'_>, mtype: MetricType) -> String {
    match e {
        TextEntry::Series(s) => format!(
            "{:?} {} {:?} {mtype:?}",
            s.series,
            s.value.to_bits(),
            s.timestamp
        ),
        e => format!("{e:?} {mtype:?}"),
    }
}

/// Reads `body` with `next_entry` only, up to the first error, learning
/// its lines into `known`.
fn read_learning(body: &[u8], known: &mut Known) -> Vec<String> {
    let mut p = TextParser::new(body);
    let mut out = Vec::new();
    loop {
        let entry = match p.next_entry() {
            Ok(None) => return out,
            Ok(Some(e)) => e,
            Err(e) => {
                out.push(format!("error {e}"));
                return out;
            }
        };
        let text = entry_text(&entry, p.metric_type());
        match &entry {
            TextEntry::Series(s) => {
                known.series.insert(s.series.to_vec());
            }
            TextEntry::Help { .. } | TextEntry::Type { .. } => {
                let rest = &body[p.start..];
                let line = &rest[..memchr::memchr(b'\n', rest).unwrap_or(rest.len())];
                let kind = matches!(entry, TextEntry::Type { .. }).then(|| p.metric_type());
                known
                    .metadata
                    .insert(line.to_vec(), (format!("{entry:?}"), kind));
            }
            TextEntry::Comment { .. } => {}
        }
        out.push(text);
    }
}

/// Reads `body` as a scrape with a cache does: a peeked line whose
/// series part or metadata line `known` holds is taken as known, any
/// other read with `next_entry`. Also how many lines were taken as known.
fn read_with_known(body: &[u8], known: &Known) -> (Vec<String>, usize) {
    let mut p = TextParser::new(body);
    let mut out = Vec::new();
    let mut taken = 0;
    loop {
        if let Some(line) = p.peek_line() {
            let hit = match line.kind {
                PeekedLineKind::Series(s) if known.series.contains(s.series) => {
                    Some((None, TextEntry::Series(s)))
                }
                PeekedLineKind::Series(_) => None,
                PeekedLineKind::Help | PeekedLineKind::Type => {
                    known.metadata.get(line.bytes(&p)).map(|(text, kind)| {
                        (
                            *kind,
                            TextEntry::Comment {
                                text: text.as_bytes(),
                            },
                        )
                    })
                }
            };
            if let Some((kind, entry)) = hit {
                p.take_peeked(&line, kind);
                out.push(match entry {
                    // A known metadata line: its entry as first read.
                    TextEntry::Comment { text } => {
                        format!("{} {:?}", String::from_utf8_lossy(text), p.metric_type())
                    }
                    e => entry_text(&e, p.metric_type()),
                });
                taken += 1;
                continue;
            }
        }
        match p.next_entry() {
            Ok(None) => return (out, taken),
            Ok(Some(e)) => out.push(entry_text(&e, p.metric_type())),
            Err(e) => {
                out.push(format!("error {e}"));
                return (out, taken);
            }
        }
    }
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(3000))]

    /// Lines taken as known read as `next_entry` reads them, in a body
    /// made of the lines a first body taught, mutated lines and others.
    #[test]
    fn known_lines_read_as_next_entry_reads_them(
        first in proptest::collection::vec(
            proptest::prop_oneof![
                near_common_line(),
                common_line(),
                common_metadata_line(),
            ],
            1..8,
        ),
        others in proptest::collection::vec(
            proptest::prop_oneof![near_common_line(), mutated_common_line()],
            0..4,
        ),
        picks in proptest::collection::vec(proptest::prelude::any::<proptest::sample::Index>(), 1..10),
        chop in proptest::bool::ANY,
    ) {
        let mut known = Known::default();
        read_learning(&first.concat(), &mut known);
        let pool: Vec<&Vec<u8>> = first.iter().chain(&others).collect();
        let mut body: Vec<u8> = picks.iter().flat_map(|i| pool[i.index(pool.len())].clone()).collect();
        if chop {
            body.pop();
        }
        let (with_known, _) = read_with_known(&body, &known);
        proptest::prop_assert_eq!(with_known, read_learning(&body, &mut Known::default()));
    }
}

#[test]
fn known_lines_are_taken_without_reading_them() {
    let first = b"# HELP a Help.\n# TYPE a histogram\na_bucket{le=\"1\",x=\"} 1\"} 1\na 2 17\nb{} 3\nc{x=\"}a\"} 4\n";
    let mut known = Known::default();
    let plain = read_learning(first, &mut known);
    let (with_known, taken) = read_with_known(first, &known);
    assert_eq!(with_known, plain);
    // The bucket's series part has `} ` inside a label value: not found
    // by peeking, read by `next_entry` (`c`'s `}` without a blank after
    // it is stepped over).
    assert_eq!(taken, 5, "{with_known:?}");
    // A series part that was never read is not taken, even if it looks
    // like one that was.
    let second = b"# TYPE a gauge\na 2 17\na{} 3\n";
    let (with_known, taken) = read_with_known(second, &known);
    assert_eq!(with_known, read_learning(second, &mut Known::default()));
    assert_eq!(taken, 1);
}
