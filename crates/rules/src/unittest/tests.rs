use super::*;

const RULES: &str = r#"groups:
  - name: g
    rules:
      - record: job:up:sum
        expr: sum by (job) (up)
      - alert: InstanceDown
        expr: up == 0
        for: 2m
        keep_firing_for: 1m
        labels:
          severity: page
        annotations:
          summary: "Instance {{ $labels.instance }} down, value {{ $value }}"
"#;

/// Writes the rule file and `test` into a temp dir and runs the test.
fn run(test: &str, run: Option<&dyn Fn(&str) -> bool>) -> Result<(), Vec<String>> {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(dir.path().join("rules.yml"), RULES).expect("write");
    let path = dir.path().join("test.yml");
    std::fs::write(&path, test).expect("write");
    let opts = Options {
        run,
        ..Options::default()
    };
    test_file(&path.display().to_string(), &opts)
}

const HEAD: &str = "rule_files: [rules.yml]\nevaluation_interval: 1m\ntests:\n";

#[test]
fn unittest_passing_alerts_and_records() {
    let t = format!(
        "{HEAD}  - interval: 1m
    input_series:
      - series: 'up{{job=\"a\", instance=\"x\"}}'
        values: '1 0 0 0 0 1 1 1 1'
    alert_rule_test:
      - eval_time: 2m
        alertname: InstanceDown
        exp_alerts: []
      - eval_time: 3m
        alertname: InstanceDown
        exp_alerts:
          - exp_labels: {{severity: page, job: a, instance: x}}
            exp_annotations: {{summary: 'Instance x down, value 0'}}
      # keep_firing_for: still firing one minute after it cleared.
      - eval_time: 5m
        alertname: InstanceDown
        exp_alerts:
          - exp_labels: {{severity: page, job: a, instance: x}}
            exp_annotations: {{summary: 'Instance x down, value 0'}}
      - eval_time: 6m
        alertname: InstanceDown
        exp_alerts: []
    promql_expr_test:
      - expr: job:up:sum
        eval_time: 5m
        exp_samples:
          - labels: 'job:up:sum{{job=\"a\"}}'
            value: 1
"
    );
    assert_eq!(run(&t, None), Ok(()));
}

#[test]
fn unittest_failing_messages() {
    let t = format!(
        "{HEAD}  - name: bad
    input_series:
      - series: 'up{{job=\"a\", instance=\"x\"}}'
        values: '0x5'
    alert_rule_test:
      - eval_time: 5m
        alertname: InstanceDown
        exp_alerts: []
    promql_expr_test:
      - expr: job:up:sum
        eval_time: 1m
        exp_samples:
          - labels: 'job:up:sum{{job=\"a\"}}'
            value: 1.5
"
    );
    let errs = run(&t, None).expect_err("fails");
    assert_eq!(
        errs,
        vec![
            "    name: bad,\n    alertname: InstanceDown, time: 5m, \n        exp:[], \n        got:[\n            0:\n              Labels:{alertname=\"InstanceDown\", instance=\"x\", job=\"a\", severity=\"page\"}\n              Annotations:{summary=\"Instance x down, value 0\"}\n            ]".to_string(),
            "    expr: \"job:up:sum\", time: 1m,\n        exp: {__name__=\"job:up:sum\", job=\"a\"} 1.5E+00\n        got: {__name__=\"job:up:sum\", job=\"a\"} 0E+00".to_string(),
        ]
    );
}

#[test]
fn unittest_run_filter_skips_groups() {
    let t = format!(
        "{HEAD}  - name: wrong
    input_series:
      - series: x
        values: 0
    promql_expr_test:
      - expr: x
        eval_time: 0
        exp_samples:
          - labels: x
            value: 1
"
    );
    assert!(run(&t, None).is_err());
    let only_other = |n: &str| n == "other";
    assert_eq!(run(&t, Some(&only_other)), Ok(()));
}

#[test]
fn unittest_bad_series_and_missing_alertname() {
    let t = format!(
        "{HEAD}  - input_series:
      - series: 'up{{job=\"a\"'
        values: 0
"
    );
    assert_eq!(
        run(&t, None),
        Err(vec![
            "2:12: parse error: unexpected character inside braces: '0'".to_string()
        ])
    );
    let t = format!("{HEAD}  - name: n\n    alert_rule_test:\n      - eval_time: 1m\n");
    assert_eq!(
        run(&t, None),
        Err(vec![
            "an item under alert_rule_test misses required attribute alertname at eval_time 1m (in TestGroup n)".to_string()
        ])
    );
}

#[test]
fn unittest_histograms() {
    let t = format!(
        "{HEAD}  - input_series:
      - series: h
        values: '{{{{sum:3 count:2 buckets:[2]}}}}+{{{{sum:1 count:1 buckets:[1]}}}}x2'
    promql_expr_test:
      - expr: h
        eval_time: 2m
        exp_samples:
          - labels: h
            histogram: '{{{{count:4 sum:5 counter_reset_hint:not_reset buckets:[4]}}}}'
"
    );
    assert_eq!(run(&t, None), Ok(()));
}

#[test]
fn unittest_formats() {
    assert_eq!(go_duration(0), "0s");
    assert_eq!(go_duration(60_000_000_000), "1m0s");
    assert_eq!(go_duration(3_600_000_000_000), "1h0m0s");
    assert_eq!(go_duration(179_999_000_000), "2m59.999s");
    assert_eq!(go_duration(1_500_000), "1.5ms");
    assert_eq!(format_upper_e(1.0), "1E+00");
    assert_eq!(format_upper_e(2.9999999999999996), "2.9999999999999996E+00");
    assert_eq!(go_clean("./a/../b.yml"), "b.yml");
    assert_eq!(go_dir("x.yml"), ".");
    assert_eq!(go_dir("/t/x.yml"), "/t");
}

#[test]
fn unittest_diff_report() {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(dir.path().join("rules.yml"), RULES).expect("write");
    let path = dir.path().join("test.yml");
    let t = format!(
        "{HEAD}  - input_series:
      - series: 'up{{job=\"a\", instance=\"x\"}}'
        values: '0x5'
    alert_rule_test:
      - eval_time: 5m
        alertname: InstanceDown
        exp_alerts:
          - exp_labels: {{severity: warn, job: a, instance: x}}
            exp_annotations: {{summary: 'Instance x down, value 0'}}
"
    );
    std::fs::write(&path, t).expect("write");
    let opts = Options {
        diff: true,
        ..Options::default()
    };
    let errs = test_file(&path.display().to_string(), &opts).expect_err("fails");
    assert_eq!(
        errs,
        vec!["    alertname: InstanceDown, time: 5m, \n        diff: [\n                {\n                    \"Annotations\": {\n                        \"summary\": \"Instance x down, value 0\"\n                    },\n                    \"Labels\": {\n                        \"alertname\": \"InstanceDown\",\n                        \"instance\": \"x\",\n                        \"job\": \"a\",\n                        \"severity\": \x1b[0;33m\"warn\" => \"page\"\x1b[0m\n                    }\n                }\n            ]".to_string()]
    );
}

#[test]
fn unittest_junit() {
    let files = vec![
        (
            "a.yml".to_string(),
            FileResult {
                abort: None,
                timestamped: true,
                cases: vec![
                    CaseResult {
                        name: "ok".into(),
                        failures: vec![],
                    },
                    CaseResult {
                        name: "bad".into(),
                        failures: vec!["    expr: \"x\",\n<'&'>".into()],
                    },
                ],
            },
        ),
        (
            "b.yml".to_string(),
            FileResult {
                abort: Some("open b.yml: no such file or directory".into()),
                timestamped: false,
                cases: vec![],
            },
        ),
    ];
    assert_eq!(
        junit_xml(&files, "2026-01-02T03:04:05"),
        "<testsuites><testsuite name=\"a.yml\" tests=\"2\" failures=\"1\" errors=\"0\" skipped=\"0\" timestamp=\"2026-01-02T03:04:05\"><testcase name=\"ok\"></testcase><testcase name=\"bad\"><failure>    expr: &#34;x&#34;,&#xA;&lt;&#39;&amp;&#39;&gt;</failure></testcase></testsuite><testsuite name=\"b.yml\" tests=\"1\" failures=\"0\" errors=\"1\" skipped=\"0\" timestamp=\"\"><testcase name=\"unknown\"><error>open b.yml: no such file or directory</error></testcase></testsuite></testsuites>"
    );
}
