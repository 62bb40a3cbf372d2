use super::*;

fn entries(body: &[u8]) -> Result<Vec<OmEntry<'_>>, TextError> {
    let mut p = OmParser::new(body);
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
    let mut p = OmParser::new(body);
    let mut out = Vec::new();
    while let Some(e) = p.next_entry().expect("parses") {
        if let OmEntry::Series(s) = e {
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
fn samples_and_metadata() {
    let body =
        b"# HELP http Requests \\\"served\\\".\n# TYPE http counter\n# UNIT http_seconds seconds\n\
        http_total{code=\"200\",path=\"/\"} 1.5e3 1700000000.5\nup 1\n# EOF\n";
    let es = entries(body).expect("parses");
    assert_eq!(
        es[0],
        OmEntry::Help {
            metric: b"http",
            text: Cow::Owned(b"Requests \"served\".".to_vec())
        }
    );
    assert_eq!(
        es[1],
        OmEntry::Type {
            metric: b"http",
            kind: MetricType::Counter
        }
    );
    assert_eq!(
        es[2],
        OmEntry::Unit {
            metric: b"http_seconds",
            unit: b"seconds"
        }
    );
    let s = series(body);
    assert_eq!(
        s[0],
        (
            "http_total{code=\"200\",path=\"/\"}".into(),
            pairs(&[("__name__", "http_total"), ("code", "200"), ("path", "/")]),
            1500.0,
            Some(1_700_000_000_500)
        )
    );
    assert_eq!(s[1], ("up".into(), pairs(&[("__name__", "up")]), 1.0, None));
}

#[test]
fn eof_rules() {
    assert_eq!(entries(b"# EOF").expect("parses"), vec![]);
    assert_eq!(entries(b"# EOF\n").expect("parses"), vec![]);
    // NULs after `# EOF` are stepped over.
    assert_eq!(entries(b"# EOF\n\0\0").expect("parses"), vec![]);
    assert_eq!(err(b""), "data does not end with # EOF");
    assert_eq!(err(b"a 1\n"), "data does not end with # EOF");
    assert_eq!(err(b"# EOF\n\n"), "unexpected data after # EOF");
    assert_eq!(err(b"# EOF \n"), "unexpected data after # EOF");
    // The parser stays done, or failed.
    let mut p = OmParser::new(b"# EOF\n");
    assert_eq!(p.next_entry(), Ok(None));
    assert_eq!(p.next_entry(), Ok(None));
    let mut p = OmParser::new(b"a x\n# EOF\n");
    let first = p.next_entry().expect_err("bad value");
    assert_eq!(p.next_entry(), Err(first));
}

#[test]
fn exemplars_are_read_and_checked() {
    let body = b"a 1 # {trace_id=\"x\\\"y\",\"q.r\"=\"1\"} 2.5 1.5\nb 1 2 # {} NaN\nc 1\n# EOF\n";
    let mut p = OmParser::new(body);
    assert!(matches!(p.next_entry(), Ok(Some(OmEntry::Series(_)))));
    let e = p.exemplar().expect("an exemplar");
    // Labels as written: Prometheus does not unescape them.
    assert_eq!(
        e.labels,
        vec![(&b"trace_id"[..], &b"x\\\"y"[..]), (&b"q.r"[..], &b"1"[..])]
    );
    assert_eq!((e.value, e.timestamp), (2.5, Some(1500)));
    assert!(matches!(p.next_entry(), Ok(Some(OmEntry::Series(s))) if s.timestamp == Some(2000)));
    let e = p.exemplar().expect("an exemplar");
    assert!(e.labels.is_empty() && e.value.to_bits() == NORMAL_NAN_BITS && e.timestamp.is_none());
    assert!(matches!(p.next_entry(), Ok(Some(OmEntry::Series(_)))));
    assert_eq!(p.exemplar(), None);
    // A bad exemplar is an error of the whole exposition.
    assert_eq!(
        err(b"a 1 # {\"b\"} 1\n# EOF\n"),
        "expected label name, got \"} \" (\"BCLOSE\") while parsing: \"a 1 # {\\\"b\\\"} \""
    );
    assert_eq!(
        err(b"a 1 # {} 1 +Inf\n# EOF\n"),
        "invalid exemplar timestamp +Inf"
    );
    assert_eq!(
        err(b"a 1 # {} 1 \n# EOF\n"),
        "expected timestamp or comment, got \" \\n\" (\"INVALID\") while parsing: \"a 1 # {} 1 \\n\""
    );
}

#[test]
fn errors_read_as_prometheus_writes_them() {
    assert_eq!(
        err(b"a\n# EOF\n"),
        "expected value after metric, got \"\\n\" (\"INVALID\") while parsing: \"a\\n\""
    );
    assert_eq!(
        err(b"a abc\n# EOF\n"),
        "strconv.ParseFloat: parsing \"abc\": invalid syntax while parsing: \"a abc\""
    );
    assert_eq!(
        err(b"a 1 0x1p3\n# EOF\n"),
        "unsupported character in float while parsing: \"a 1 0x1p3\""
    );
    assert_eq!(err(b"a 1 NaN\n# EOF\n"), "invalid timestamp NaN");
    assert_eq!(
        err(b"# TYPE a untyped\n"),
        "invalid metric type \"untyped\""
    );
    assert_eq!(err(b"# HELP a\n"), "expected text in HELP");
    assert_eq!(
        err(b"# UNIT a_s b\n"),
        "unit \"b\" not a suffix of metric \"a_s\""
    );
    assert_eq!(
        err(b"{x=\"1\"} 1\n"),
        "metric name not set while parsing: \"{x=\\\"1\\\"} 1\""
    );
    assert_eq!(
        err(b"a{\"b\"} 1\n"),
        "metric name already set while parsing: \"a{\\\"b\\\"}\""
    );
    assert_eq!(
        err(b"a{b=\"1\" c=\"2\"} 1\n"),
        "expected comma or brace close, got \" \" (\"INVALID\") while parsing: \"a{b=\\\"1\\\" \""
    );
    assert_eq!(
        err(b"a{x=\"\xff\"} 1\n"),
        "invalid UTF-8 label value: \"\\\"\\xff\\\"\""
    );
    assert_eq!(
        err(b"# HELP a \xff\n"),
        "help text \"\\xff\" is not a valid utf8 string"
    );
    assert_eq!(
        err(b"# a comment\n"),
        "expected a valid start token, got \"# a\" (\"INVALID\") while parsing: \"# a\""
    );
    // At the end of the input the token quoted is the last one read.
    assert_eq!(
        err(b"a{b"),
        "expected equal, got \"b\" (\"EOF\") while parsing: \"a{b\""
    );
}

#[test]
fn prometheus_quirks() {
    // A sample followed by junk is handed out; the next call fails.
    let mut p = OmParser::new(b"a 1 \n# EOF\n");
    assert!(matches!(p.next_entry(), Ok(Some(OmEntry::Series(s))) if s.timestamp.is_none()));
    assert_eq!(
        p.next_entry().expect_err("junk").0,
        "expected a valid start token, got \"\\n#\" (\"LINEBREAK\") while parsing: \"\\n#\""
    );
    // ` #` alone is a timestamp.
    assert_eq!(
        err(b"a 1 #\n# EOF\n"),
        "strconv.ParseFloat: parsing \"#\": invalid syntax while parsing: \"a 1 #\""
    );
    // NULs after a label value's closing quote: the value is cut short.
    let s = series(b"a{b=\"x\"\0\0,c=\"y\"} 1\n# EOF\n");
    assert_eq!(
        s[0].1,
        pairs(&[("__name__", "a"), ("b", "x\"\0"), ("c", "y")])
    );
    // NULs after a metadata line's newline belong to its text.
    let es = entries(b"# HELP a x\n\0b 1\n# EOF\n").expect("parses");
    assert_eq!(
        es[0],
        OmEntry::Help {
            metric: b"a",
            text: Cow::Borrowed(b"x\n")
        }
    );
    // Quoted names: metadata names keep their escapes, series names are
    // unescaped; a quoted name may span lines.
    let es = entries(b"# TYPE \"a\\\"b\" gauge\n{\"a\\\"b\",\"c\nd\"=\"1\"} 1\n# EOF\n")
        .expect("parses");
    assert_eq!(
        es[0],
        OmEntry::Type {
            metric: b"a\\\"b",
            kind: MetricType::Gauge
        }
    );
    let s = series(b"{\"a\\\"b\",\"c\nd\"=\"1\"} 1\n# EOF\n");
    assert_eq!(s[0].1, pairs(&[("__name__", "a\"b"), ("c\nd", "1")]));
    // le is normalised after a histogram TYPE, whatever it named; not
    // after a gaugehistogram's.
    let s = series(b"# TYPE x histogram\nother_bucket{le=\"1\"} 3\n# EOF\n");
    assert_eq!(s[0].1[1].1, "1.0");
    let s = series(b"# TYPE x gaugehistogram\nx_bucket{le=\"1\"} 3\n# EOF\n");
    assert_eq!(s[0].1[1].1, "1");
    // _created lines are ordinary series.
    let s = series(b"# TYPE c counter\nc_total 1\nc_created 1700000000\n# EOF\n");
    assert_eq!(s.len(), 2);
    // Timestamps beyond i64 milliseconds: Go on amd64.
    assert_eq!(series(b"a 1 1e17\n# EOF\n")[0].3, Some(i64::MIN));
}

#[test]
fn names_that_are_not_utf8() {
    for body in [
        &b"{\"\xff\"} 1\n# EOF\n"[..],
        b"a{\"b\xff\"=\"c\"} 1\n# EOF\n",
    ] {
        let mut p = OmParser::new(body);
        assert!(matches!(p.next_entry(), Ok(Some(OmEntry::Series(_)))));
        let mut out = Vec::new();
        let e = p.labels(&mut out).expect_err("not UTF-8");
        assert!(e.0.contains("not valid UTF-8"), "{e}");
    }
}
