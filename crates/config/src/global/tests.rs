use super::*;
use crate::Config;

fn global_with_env(yaml: &str, env: &[(&str, &str)]) -> Result<GlobalConfig, String> {
    let lookup = |name: &str| {
        env.iter()
            .find(|(k, _)| *k == name)
            .map(|(_, v)| v.to_string())
    };
    Config::parse_with_env(yaml, "p.yml", &lookup)
        .map(|c| c.global)
        .map_err(|e| e.to_string())
}

fn global(yaml: &str) -> Result<GlobalConfig, String> {
    global_with_env(yaml, &[])
}

#[test]
fn defaults_with_and_without_a_section() {
    let absent = global("").expect("loads");
    assert_eq!(absent, GlobalConfig::default());
    assert_eq!(absent.scrape_interval_ms, 60_000);
    assert_eq!(absent.scrape_timeout_ms, 10_000);
    assert_eq!(absent.evaluation_interval_ms, 60_000);
    assert_eq!(absent.metric_name_escaping_scheme, "allow-utf-8");
    assert_eq!(global("global:\n").expect("null"), absent);
    // A written section starts from Go's zero value: no escaping scheme.
    let empty = global("global: {}\n").expect("empty mapping");
    assert_eq!(empty.metric_name_escaping_scheme, "");
    assert_eq!(empty.scrape_interval_ms, 60_000);
}

#[test]
fn timeout_defaults_to_the_shorter_of_10s_and_the_interval() {
    let g = global("global:\n  scrape_interval: 5s\n").expect("loads");
    assert_eq!((g.scrape_interval_ms, g.scrape_timeout_ms), (5_000, 5_000));
    let g = global("global:\n  scrape_interval: 15s\n").expect("loads");
    assert_eq!(g.scrape_timeout_ms, 10_000);
    assert_eq!(
        global("global:\n  scrape_interval: 10s\n  scrape_timeout: 11s\n"),
        Err(
            "parsing YAML file p.yml: global scrape timeout greater than scrape interval"
                .to_string()
        )
    );
}

#[test]
fn scrape_protocols_are_checked() {
    let g = global("global:\n  scrape_protocols: [PrometheusProto, PrometheusText0.0.4]\n")
        .expect("loads");
    assert_eq!(
        g.scrape_protocols,
        Some(vec![
            ScrapeProtocol::PrometheusProto,
            ScrapeProtocol::PrometheusText004
        ])
    );
    for (list, want) in [
        ("[]", "scrape_protocols cannot be empty for global config"),
        (
            "[PrometheusProto, prometheusproto]",
            "duplicated protocol in scrape_protocols, got [PrometheusProto prometheusproto] for global config",
        ),
        (
            "[Foo]",
            "scrape_protocols: unknown scrape protocol Foo, supported: [OpenMetricsText0.0.1 OpenMetricsText1.0.0 OpenMetricsText2.0.0 PrometheusProto PrometheusText0.0.4 PrometheusText1.0.0] for global config",
        ),
    ] {
        let err = global(&format!("global:\n  scrape_protocols: {list}\n")).expect_err(list);
        assert_eq!(err, format!("parsing YAML file p.yml: {want}"));
    }
}

#[test]
fn external_labels_expand_the_environment_and_are_checked() {
    let g = global_with_env(
        "global:\n  external_labels: {region: \"eu-${REGION}\", cost: \"$$5\", bad: \"${\", gone: \"$UNSET\", keep: \"a$\"}\n",
        &[("REGION", "west")],
    )
    .expect("loads");
    assert_eq!(
        g.external_labels,
        Labels::from_pairs(&[("cost", "$5"), ("keep", "a$"), ("region", "eu-west")])
    );
    assert_eq!(
        global("global:\n  metric_name_validation_scheme: legacy\n  external_labels: {\"a-b\": x, \"\": y}\n"),
        Err("parsing YAML file p.yml: \"\" is not a valid label name".to_string()),
        "checked in name order"
    );
    assert_eq!(
        global("global:\n  metric_name_validation_scheme: UTF8\n"),
        Err("parsing YAML file p.yml: unrecognized ValidationScheme: \"UTF8\"".to_string())
    );
}

#[test]
fn os_expand_follows_go() {
    let env = |name: &str| (name == "A").then(|| "x".to_string());
    for (input, want) in [
        ("$A", "x"),
        ("${A}", "x"),
        ("$A$A", "xx"),
        ("$$", "$"),
        ("${$}", "$"),
        ("$1", ""),
        ("${", ""),
        ("a${}b", "ab"),
        ("a$", "a$"),
        ("$-x", "x"),
        ("$é", "$é"),
        ("${A", "A"), // bad syntax: `${` is dropped
    ] {
        assert_eq!(os_expand(input, &env), want, "{input:?}");
    }
}

#[test]
fn sizes_limits_and_flags() {
    let g = global(
        "global:\n  body_size_limit: 10MB\n  sample_limit: 5\n  keep_dropped_targets: 7\n  scrape_native_histograms: true\n  metric_name_validation_scheme: legacy\n",
    )
    .expect("loads");
    assert_eq!(g.limits.body_size_limit, 10 << 20);
    assert_eq!(
        (g.limits.sample_limit, g.limits.keep_dropped_targets),
        (5, 7)
    );
    assert!(g.scrape_native_histograms);
    assert_eq!(g.metric_name_validation_scheme, ValidationScheme::Legacy);
    assert_eq!(
        global("global:\n  body_size_limit: 512\n"),
        Err("parsing YAML file p.yml: units: unknown unit  in 512".to_string())
    );
}

#[test]
fn relative_log_files_are_relative_to_the_file() {
    let dir = tempfile::tempdir().expect("tempdir");
    let p = dir.path().join("prometheus.yml");
    std::fs::write(
        &p,
        "global:\n  query_log_file: logs/../q.log\n  scrape_failure_log_file: /var/log/s.log\n",
    )
    .expect("write");
    let cfg = Config::load(&p).expect("loads");
    assert_eq!(
        cfg.global.query_log_file,
        format!("{}/q.log", dir.path().display())
    );
    assert_eq!(cfg.global.scrape_failure_log_file, "/var/log/s.log");
}
