use super::*;
use crate::Config;

fn jobs(yaml: &str) -> Result<Vec<ScrapeConfig>, String> {
    Config::parse(yaml, "p.yml")
        .map(|c| c.scrape_configs)
        .map_err(|e| e.to_string())
}

fn job(yaml: &str) -> ScrapeConfig {
    let mut all = jobs(yaml).expect("loads");
    assert_eq!(all.len(), 1);
    all.remove(0)
}

fn err(yaml: &str) -> String {
    jobs(yaml)
        .expect_err(yaml)
        .trim_start_matches("parsing YAML file p.yml: ")
        .to_string()
}

#[test]
fn a_job_takes_prometheus_defaults() {
    let j = job("scrape_configs:\n  - job_name: node\n");
    assert_eq!(j.job_name, "node");
    assert_eq!(
        (j.scrape_interval_ms, j.scrape_timeout_ms),
        (60_000, 10_000)
    );
    assert_eq!(j.metrics_path, "/metrics");
    assert_eq!(j.scheme, "http");
    assert!(j.honor_timestamps && j.enable_compression && !j.honor_labels);
    assert_eq!(j.scrape_protocols, ScrapeProtocol::DEFAULT.to_vec());
    assert_eq!(j.metric_name_validation_scheme, ValidationScheme::Utf8);
    assert_eq!(j.metric_name_escaping_scheme, "allow-utf-8");
    assert!(j.static_configs.is_empty() && j.relabel_configs.is_empty());
}

#[test]
fn a_job_inherits_global_settings() {
    let j = job(
        "global:\n  scrape_interval: 5s\n  sample_limit: 7\n  scrape_native_histograms: true\n  body_size_limit: 1MB\n\
         scrape_configs:\n  - job_name: node\n    sample_limit: 0\n    target_limit: 3\n",
    );
    assert_eq!((j.scrape_interval_ms, j.scrape_timeout_ms), (5_000, 5_000));
    assert_eq!((j.limits.sample_limit, j.limits.target_limit), (7, 3));
    assert_eq!(j.limits.body_size_limit, 1 << 20);
    assert!(j.scrape_native_histograms);
    assert_eq!(
        j.scrape_protocols,
        ScrapeProtocol::PROTO_FIRST.to_vec(),
        "native histograms ask for protobuf first"
    );
    let j = job(
        "global:\n  scrape_protocols: [PrometheusText0.0.4]\n  scrape_native_histograms: true\n\
         scrape_configs:\n  - job_name: node\n",
    );
    assert_eq!(j.scrape_protocols, vec![ScrapeProtocol::PrometheusText004]);
}

#[test]
fn null_fields_are_go_zero_values() {
    let j = job("scrape_configs:\n  - job_name: node\n    metrics_path:\n    honor_timestamps:\n    enable_compression:\n");
    assert_eq!(j.metrics_path, "");
    assert!(!j.honor_timestamps && !j.enable_compression);
}

#[test]
fn escaping_follows_the_validation_scheme() {
    let j = job("scrape_configs:\n  - job_name: a\n    metric_name_validation_scheme: legacy\n");
    assert_eq!(j.metric_name_escaping_scheme, "underscores");
    let j =
        job("global:\n  metric_name_validation_scheme: legacy\nscrape_configs:\n  - job_name: a\n");
    assert_eq!(
        (
            j.metric_name_validation_scheme,
            j.metric_name_escaping_scheme.as_str()
        ),
        (ValidationScheme::Legacy, "underscores")
    );
    assert_eq!(
        err("scrape_configs:\n  - job_name: a\n    metric_name_validation_scheme: legacy\n    metric_name_escaping_scheme: allow-utf-8\n"),
        "utf8 metric names requested but validation scheme is not set to UTF8"
    );
    assert_eq!(
        err("scrape_configs:\n  - job_name: a\n    metric_name_escaping_scheme: bogus\n"),
        "unknown scrape config name escaping method specified, must be one of 'allow-utf-8', 'underscores', 'dots', or 'values', got \"bogus\""
    );
    assert_eq!(
        err("global:\n  metric_name_escaping_scheme: bogus\nscrape_configs:\n  - job_name: a\n"),
        "unknown global name escaping method specified, must be one of 'allow-utf-8', 'underscores', 'dots', or 'values', got \"bogus\""
    );
}

#[test]
fn job_errors_read_as_prometheus_errors() {
    for (yaml, want) in [
        ("scrape_configs:\n  - job_name: \"\"\n", "job_name is empty"),
        ("scrape_configs:\n  - null\n", "empty or null scrape config section"),
        (
            "scrape_configs:\n  - job_name: a\n  - job_name: a\n",
            "found multiple scrape configs with job name \"a\"",
        ),
        (
            "scrape_configs:\n  - job_name: a\n    scrape_interval: 5s\n    scrape_timeout: 6s\n",
            "scrape timeout greater than scrape interval for scrape config with job name \"a\"",
        ),
        (
            "scrape_configs:\n  - job_name: a\n    static_configs: [{targets: [\"http://h:9100/x\"]}]\n",
            "\"http://h:9100/x\" is not a valid hostname",
        ),
        (
            "scrape_configs:\n  - job_name: a\n    relabel_configs: [null]\n",
            "empty or null target relabeling rule in scrape config",
        ),
        (
            "scrape_configs:\n  - job_name: a\n    fallback_scrape_protocol: Foo\n",
            "invalid fallback_scrape_protocol for scrape config with job name \"a\": unknown scrape protocol Foo, supported: [OpenMetricsText0.0.1 OpenMetricsText1.0.0 OpenMetricsText2.0.0 PrometheusProto PrometheusText0.0.4 PrometheusText1.0.0]",
        ),
        (
            "scrape_configs:\n  - job_name: a\n    static_configs: [{targets: [h], labels: {\"\": x}}]\n    metric_name_validation_scheme: bogus\n",
            "\"\" is not a valid label name",
        ),
        (
            "scrape_configs:\n  - job_name: a\n    metric_relabel_configs: [{action: hashmod, target_label: s}]\n",
            "relabel configuration for hashmod requires non-zero modulus",
        ),
        ("rule_files: [\"a/*/b.yml\"]\n", "invalid rule file path \"a/*/b.yml\""),
    ] {
        assert_eq!(err(yaml), want, "{yaml}");
    }
}

#[test]
fn urls_are_fine_as_targets_when_the_job_relabels() {
    let j = job(
        "scrape_configs:\n  - job_name: blackbox\n    static_configs: [{targets: [\"http://h/x\"], labels: {env: prod, gone: \"\"}}]\n    relabel_configs: [{source_labels: [__address__], target_label: __param_target}]\n",
    );
    assert_eq!(j.static_configs[0].targets, vec!["http://h/x".to_string()]);
    assert_eq!(
        j.static_configs[0].labels,
        Labels::from_pairs(&[("env", "prod")])
    );
}

#[test]
fn http_client_is_read_and_other_discoveries_are_accepted() {
    let j = job(
        "scrape_configs:\n  - job_name: a\n    tls_config: {insecure_skip_verify: true}\n    basic_auth: {username: u}\n    file_sd_configs: [{files: [x.json]}]\n    kubernetes_sd_configs: [{role: pod}]\n",
    );
    assert_eq!(j.job_name, "a");
    assert!(j.http_client.tls_config.insecure_skip_verify);
    assert_eq!(
        j.http_client
            .basic_auth
            .as_ref()
            .map(|b| b.username.as_str()),
        Some("u")
    );
    assert_eq!(
        err("scrape_configs:\n  - job_name: a\n    foo: 1\n"),
        "yaml: unmarshal errors:\n  line 3: field foo not found in type config.ScrapeConfig"
    );
    assert!(err("scrape_configs:\n  - job_name: a\n    tls_confg: {}\n")
        .contains("field tls_confg not found"));
}
