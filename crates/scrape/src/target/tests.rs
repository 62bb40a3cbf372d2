use super::*;
use ferrite_config::{Config, ScrapeConfig};
use ferrite_model::Labels;

fn job(yaml: &str) -> ScrapeConfig {
    let mut cfg = Config::parse(yaml, "p.yml").expect("config loads");
    cfg.scrape_configs.remove(0)
}

fn targets(yaml: &str) -> Vec<Result<Option<Labels>, String>> {
    let cfg = job(yaml);
    cfg.static_configs
        .iter()
        .flat_map(|g| {
            g.targets.iter().map(|t| {
                populate_labels(
                    &Labels::from_pairs(&[("__address__", t.as_str())]),
                    &g.labels,
                    &cfg,
                )
                .map_err(|e| e.to_string())
            })
        })
        .collect()
}

#[test]
fn a_static_target_gets_the_job_settings_and_an_instance() {
    let got = targets(
        "scrape_configs:\n  - job_name: node\n    scrape_interval: 15s\n    params: {module: [a, b]}\n    static_configs: [{targets: [\"h:9100\"], labels: {env: prod}}]\n",
    );
    let want = Labels::from_pairs(&[
        ("__address__", "h:9100"),
        ("__always_scrape_classic_histograms__", "false"),
        ("__convert_classic_histograms_to_nhcb__", "false"),
        ("__metrics_path__", "/metrics"),
        ("__param_module", "a"),
        ("__scheme__", "http"),
        ("__scrape_interval__", "15s"),
        ("__scrape_native_histograms__", "false"),
        ("__scrape_timeout__", "10s"),
        ("env", "prod"),
        ("instance", "h:9100"),
        ("job", "node"),
    ]);
    assert_eq!(got, vec![Ok(Some(want))]);
}

#[test]
fn relabeling_can_drop_rewrite_and_break_targets() {
    let yaml = "scrape_configs:\n  - job_name: j\n    static_configs: [{targets: [keep:1, drop:1, \"http://x/y\"]}]\n    relabel_configs:\n      - {source_labels: [__address__], regex: 'drop:.*', action: drop}\n      - {source_labels: [__address__], target_label: __meta_x}\n      - {source_labels: [__address__], target_label: instance, regex: '([^:]+):.*', replacement: '$1'}\n";
    let got = targets(yaml);
    assert_eq!(got.len(), 3);
    let kept = got[0].clone().expect("kept").expect("not dropped");
    assert_eq!(kept.get("instance"), "keep");
    assert_eq!(kept.get("__meta_x"), "", "meta labels go after relabeling");
    assert_eq!(got[1], Ok(None));
    assert_eq!(
        got[2],
        Err("\"http://x/y\" is not a valid hostname".to_string())
    );
}

#[test]
fn settings_set_by_rules_are_checked() {
    let with_rule = |rule: &str| {
        targets(&format!(
            "scrape_configs:\n  - job_name: j\n    static_configs: [{{targets: [\"h:1\"]}}]\n    relabel_configs:\n      - {rule}\n"
        ))
        .remove(0)
    };
    for (rule, want) in [
        ("{target_label: __address__, replacement: ''}", "no address"),
        ("{target_label: __scrape_interval__, replacement: '0s'}", "scrape interval cannot be 0"),
        ("{target_label: __scrape_timeout__, replacement: '0'}", "scrape timeout cannot be 0"),
        ("{target_label: __scrape_interval__, replacement: 'x'}", "error parsing scrape interval: not a valid duration string: \"x\""),
        ("{target_label: __scrape_timeout__, replacement: '2m'}", "scrape timeout cannot be greater than scrape interval (\"2m\" > \"1m\")"),
        ("{target_label: __scrape_native_histograms__, replacement: 'yes'}", "error parsing scrape native histograms: strconv.ParseBool: parsing \"yes\": invalid syntax"),
    ] {
        assert_eq!(with_rule(rule), Err(want.to_string()), "{rule}");
    }
    let ok = with_rule("{target_label: __scrape_native_histograms__, replacement: 'T'}")
        .expect("T is a Go boolean")
        .expect("kept");
    assert_eq!(ok.get("__scrape_native_histograms__"), "T");
}

#[test]
fn target_labels_win_over_group_labels_and_settings() {
    let cfg = job("scrape_configs:\n  - job_name: j\n");
    let target = Labels::from_pairs(&[("__address__", "h:1"), ("job", "mine"), ("env", "t")]);
    let group = Labels::from_pairs(&[("env", "g"), ("team", "a")]);
    let ls = discovered_labels(&target, &group, &cfg);
    assert_eq!(
        (ls.get("job"), ls.get("env"), ls.get("team")),
        ("mine", "t", "a")
    );
}
