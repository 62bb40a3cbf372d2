//! Tests of the whole: `check` as the rules crate used it, and expansion.

use super::*;
fn err(text: &str) -> String {
    check("__alert_A", text).expect_err(text)
}

#[test]
fn prometheus_templates_parse() {
    for ok in [
        "",
        "plain text",
        "{{ $labels.job }} is down",
        "value {{ $value }}",
        "{{ humanize $value }}",
        "{{ if gt $value 1.0 }}big{{ else if lt $value 0.5 }}small{{ else }}mid{{ end }}",
        "{{ range $k, $v := $labels }}{{ $k }}={{ $v }} {{ end }}",
        "{{- /* a comment */ -}}",
        "{{ with $labels.x }}{{ . }}{{ end }}",
        "{{ printf \"%.2f\" $value }}",
        "{{ $x := 1 }}{{ $x }}",
        "{{ range .Items }}{{ break }}{{ end }}",
        "{{ `raw` }}",
        "{{ 'a' }} {{ 0x1F }} {{ 1e3 }} {{ -2 }}",
        "{{ (query \"up\") | first | value }}",
        "{{ $externalURL }}{{ $externalLabels.env }}",
        "{{define \"x\"}}y{{end}}{{template \"x\"}}",
    ] {
        assert_eq!(check("__alert_A", ok), Ok(()), "{ok}");
    }
}

#[test]
fn errors_as_go_words_them() {
    for (text, want) in [
        (
            "{{ .Foo }",
            "template: __alert_A:1: unexpected \"}\" in operand",
        ),
        (
            "{{ bogus }}",
            "template: __alert_A:1: function \"bogus\" not defined",
        ),
        (
            "{{ hu{manize $value }}",
            "template: __alert_A:1: bad character U+007B '{'",
        ),
        (
            "{{ $nope }}",
            "template: __alert_A:1: undefined variable \"$nope\"",
        ),
        ("{{ if true }}x", "template: __alert_A:1: unexpected EOF"),
        ("{{ end }}", "template: __alert_A:1: unexpected {{end}}"),
        ("{{ else }}", "template: __alert_A:1: unexpected {{else}}"),
        ("{{", "template: __alert_A:1: unclosed action"),
        (
            "{{ \"abc }}",
            "template: __alert_A:1: unterminated quoted string",
        ),
        (
            "{{ break }}",
            "template: __alert_A:1: {{break}} outside {{range}}",
        ),
        (
            "{{ 1 | 2 }}",
            "template: __alert_A:1: non executable command in pipeline stage 2",
        ),
        ("{{ }}", "template: __alert_A:1: missing value for command"),
        ("{{ (1 }}", "template: __alert_A:1: unclosed left paren"),
        ("{{ 1) }}", "template: __alert_A:1: unexpected right paren"),
        (
            "{{ 3x }}",
            "template: __alert_A:1: bad number syntax: \"3x\"",
        ),
        (
            "{{ \"a\".b }}",
            "template: __alert_A:1: unexpected . after term \"\\\"a\\\"\"",
        ),
        ("{{ \"\\q\" }}", "template: __alert_A:1: invalid syntax"),
        (
            "{{ 'ab' }}",
            "template: __alert_A:1: malformed character constant: 'ab'",
        ),
        (
            "a\n{{ if x }}",
            "template: __alert_A:2: function \"x\" not defined",
        ),
        (
            "{{ /* x */ }}",
            "template: __alert_A:1: unexpected \"/\" in command",
        ),
        (
            "{{/* x */ }}",
            "template: __alert_A:1: comment ends before closing delimiter",
        ),
        (
            "{{ $a, $b := 1 }}",
            "template: __alert_A:1: too many declarations in command",
        ),
    ] {
        assert_eq!(err(text), want, "{text}");
    }
}

/// A query function serving one canned vector.
struct Canned;

impl QueryFunc for Canned {
    fn query(&self, expr: &str, t_ms: i64) -> Result<Vec<ferrite_promql::Sample>, String> {
        match expr {
            "up" => Ok(vec![
                ferrite_promql::Sample {
                    labels: ferrite_model::Labels::from_pairs(&[("job", "b"), ("instance", "x:1")]),
                    t: t_ms,
                    f: 1.0,
                    h: None,
                },
                ferrite_promql::Sample {
                    labels: ferrite_model::Labels::from_pairs(&[("job", "a"), ("instance", "y:2")]),
                    t: t_ms,
                    f: 0.0,
                    h: None,
                },
            ]),
            "empty" => Ok(Vec::new()),
            _ => Err(format!("bad query {expr}")),
        }
    }
}

/// Expands `text` after Prometheus' definitions, for the alert `A` with
/// labels job="node", instance="h.example.com:9100" and value `value`.
fn expand(text: &str, value: f64) -> Result<String, String> {
    let labels =
        ferrite_model::Labels::from_pairs(&[("job", "node"), ("instance", "h.example.com:9100")]);
    let ext = ferrite_model::Labels::from_pairs(&[("cluster", "eu")]);
    let data = alert_template_data(&labels, &ext, "http://p:9090/x", value, None);
    let source = format!("{DEFINITIONS}{text}");
    Expander::new(
        "__alert_A",
        &source,
        data,
        1_700_000_000_000,
        &Canned,
        "http://p:9090/x",
    )
    .expand()
}

#[test]
fn expands_alert_templates() {
    for (text, value, want) in [
        ("{{ $labels.job }} is down", 1.0, "node is down"),
        ("{{ $value }}", 1e6, "1e+06"),
        ("{{ $value }}", 0.1, "0.1"),
        ("{{ $value }}", f64::NAN, "NaN"),
        ("{{ $value }}", f64::INFINITY, "+Inf"),
        ("{{ $labels.missing }}|", 1.0, "|"),
        ("{{ (args 1).x }}", 1.0, "<no value>"),
        (
            "{{ $labels }}",
            1.0,
            "map[instance:h.example.com:9100 job:node]",
        ),
        ("{{ humanize $value }}", 1234567.0, "1.235M"),
        ("{{ humanizeDuration $value }}", 90061.0, "1d 1h 1m 1s"),
        ("{{ humanizePercentage $value }}", 0.256, "25.6%"),
        (
            "{{ humanizeTimestamp $value }}",
            1.5,
            "1970-01-01 00:00:01.5 +0000 UTC",
        ),
        ("{{ printf \"%.2f\" $value }}", 1.23456, "1.23"),
        (
            "{{ if gt $value 1.0 }}big{{ else }}small{{ end }}",
            2.0,
            "big",
        ),
        (
            "{{ range $k, $v := $labels }}{{ $k }}={{ $v }};{{ end }}",
            1.0,
            "instance=h.example.com:9100;job=node;",
        ),
        (
            "{{ range query \"up\" | sortByLabel \"job\" }}{{ .Labels.job }}{{ end }}",
            1.0,
            "ab",
        ),
        ("{{ query \"up\" | first | value }}", 1.0, "1"),
        (
            "{{ with query \"empty\" }}x{{ else }}none{{ end }}",
            1.0,
            "none",
        ),
        (
            "{{ stripPort $labels.instance }} {{ stripDomain $labels.instance }}",
            1.0,
            "h.example.com h:9100",
        ),
        (
            "{{ reReplaceAll \"(.*):(.*)\" \"$2\" $labels.instance }}",
            1.0,
            "9100",
        ),
        (
            "{{ title \"hello world\" }} {{ toUpper \"a\" }}",
            1.0,
            "Hello World A",
        ),
        (
            "{{ pathPrefix }} {{ externalURL }} {{ $externalURL }}",
            1.0,
            "/x http://p:9090/x http://p:9090/x",
        ),
        (
            "{{ define \"t\" }}[{{ . }}]{{ end }}{{ template \"t\" $labels.job }}",
            1.0,
            "[node]",
        ),
        (
            "{{ range $labels }}{{ if eq . \"node\" }}{{ break }}{{ end }}{{ . }};{{ end }}",
            1.0,
            "h.example.com:9100;",
        ),
        ("a {{- \" b \" -}} c", 1.0, "a b c"),
        ("{{ now }}", 1.0, "1.7e+09"),
    ] {
        assert_eq!(expand(text, value).as_deref(), Ok(want), "{text}");
    }
}

#[test]
fn errors_as_prometheus_words_them() {
    for (text, want) in [
        ("{{ bogus }}", "error parsing template __alert_A: template: __alert_A:1: function \"bogus\" not defined"),
        ("{{ .Nope }}", "error executing template __alert_A: template: __alert_A:1:115: executing \"__alert_A\" at <.Nope>: can't evaluate field Nope in type struct { Labels map[string]string; ExternalLabels map[string]string; ExternalURL string; Value interface {} }"),
        ("{{ humanize \"x\" }}", "error executing template __alert_A: template: __alert_A:1:115: executing \"__alert_A\" at <humanize \"x\">: error calling humanize: strconv.ParseFloat: parsing \"x\": invalid syntax"),
        ("{{ gt $value 1 }}", "error executing template __alert_A: template: __alert_A:1:115: executing \"__alert_A\" at <gt $value 1>: error calling gt: incompatible types for comparison: float64 and int"),
        ("{{ query \"empty\" | first }}", "error executing template __alert_A: template: __alert_A:1:131: executing \"__alert_A\" at <first>: error calling first: first() called on vector with no elements"),
        ("{{ toUpper 1 }}", "error executing template __alert_A: template: __alert_A:1:123: executing \"__alert_A\" at <1>: expected string; found 1"),
        ("{{ template \"x\" }}", "error executing template __alert_A: template: __alert_A:1:124: executing \"__alert_A\" at <{{template \"x\"}}>: template \"x\" not defined"),
    ] {
        assert_eq!(expand(text, 1.0), Err(want.to_string()), "{text}");
    }
}

/// Runs `f` on a thread with a small stack: deep input must not overflow.
fn on_small_stack(f: impl FnOnce() + Send + 'static) {
    std::thread::Builder::new()
        .stack_size(256 * 1024)
        .spawn(f)
        .expect("spawn")
        .join()
        .expect("no stack overflow");
}

#[test]
fn deep_input_does_not_overflow_the_stack() {
    on_small_stack(|| {
        let n = 20_000;
        let text = format!("{}x{}", "{{if 1}}".repeat(n), "{{end}}".repeat(n));
        assert_eq!(expand(&text, 1.0).as_deref(), Ok("x"));
        let parens = format!("{{{{ {}1{} }}}}", "(".repeat(9_000), ")".repeat(9_000));
        assert_eq!(expand(&parens, 1.0).as_deref(), Ok("1"));
        let bad = format!(
            "{{{{ {}humanize \"x\"{} }}}}",
            "(".repeat(5_000),
            ")".repeat(5_000)
        );
        assert!(expand(&bad, 1.0).is_err());
        let too_deep = format!("{{{{ {}1{} }}}}", "(".repeat(10_001), ")".repeat(10_001));
        assert!(check("__alert_A", &too_deep).is_err());
    });
}

#[test]
fn template_recursion_stops_at_gos_depth() {
    on_small_stack(|| {
        let text = "{{ define \"loop\" }}{{ template \"loop\" }}{{ end }}{{ template \"loop\" }}";
        let err = expand(text, 1.0).expect_err("recursion");
        assert!(
            err.ends_with("exceeded maximum template depth (100000)"),
            "{err}"
        );
    });
}

mod properties {
    use super::*;
    use proptest::prelude::*;

    /// Pieces templates are made of, valid and not.
    const PIECES: &[&str] = &[
        "{{",
        "}}",
        "{{-",
        "-}}",
        " ",
        "\n",
        "x",
        "$value",
        "$labels.job",
        ".Labels",
        ".",
        "$",
        "$x",
        "$x :=",
        "$x =",
        "|",
        "(",
        ")",
        "\"s\"",
        "`r`",
        "'c'",
        "1",
        "1.5",
        "-2",
        "0x1F",
        "1e3",
        "nil",
        "true",
        "if",
        "else",
        "end",
        "range",
        "with",
        "break",
        "continue",
        "define \"t\"",
        "template \"t\"",
        "block \"b\" .",
        "humanize",
        "printf \"%d\"",
        "print",
        "len",
        "index",
        "eq",
        "lt",
        "and",
        "or",
        "not",
        "query \"up\"",
        "first",
        "value",
        "label \"job\"",
        "sortByLabel \"job\"",
        "toUpper",
        "reReplaceAll \"a\" \"b\"",
        "bogus",
        "/* c */",
        ",",
        "$i, $v :=",
        "\"unterminated",
        "#",
        "=",
    ];

    fn template() -> impl Strategy<Value = String> {
        proptest::collection::vec(0..PIECES.len(), 0..24).prop_map(|v| {
            v.into_iter()
                .map(|i| PIECES[i])
                .collect::<Vec<_>>()
                .join("")
        })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(3000))]

        /// Random templates never panic, and `check` fails exactly when
        /// parsing for execution fails, with the same text.
        #[test]
        fn check_agrees_with_expansion(text in template(), value in proptest::num::f64::ANY) {
            let checked = check("__alert_A", &text);
            let expanded = expand(&text, value);
            let parse_error = expanded
                .as_ref()
                .err()
                .and_then(|e| e.strip_prefix("error parsing template __alert_A: "))
                .map(str::to_string);
            prop_assert_eq!(checked.err(), parse_error);
        }
    }
}
