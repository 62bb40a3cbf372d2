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
