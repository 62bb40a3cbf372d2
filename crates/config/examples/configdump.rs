//! Ferrite's side of the configuration cross-check against Prometheus
//! (`interop/config_load_test.go`, whose `cmd/promconfig` is Prometheus'
//! side; the output is described there): each file loaded with
//! [`ferrite_config::Config::load`] and its modelled settings printed
//! (secrets as the first 8 hex digits of their MD5 sum).
//!
//! ```text
//! configdump FILE...
//! ```

mod dump;

use std::fmt::Write as _;
use std::path::Path;

use dump::escape;
use ferrite_config::discovery::DnsRecordType;
use ferrite_config::discovery::{DnsSdConfig, FileSdConfig, HttpSdConfig};
use ferrite_config::http_client::{HttpClientConfig, ProxyConfig, Secret, TlsConfig};
use ferrite_config::{
    AlertingConfig, Config, GlobalConfig, ScrapeConfig, ScrapeLimits, TargetGroup,
};
use ferrite_model::ValidationScheme;
use md5::{Digest, Md5};

fn main() {
    dump::each_file("configdump", |f, out| match Config::load(Path::new(f)) {
        Ok(cfg) => {
            out.push_str("ok\n");
            dump_global(out, &cfg.global);
            let files = |fs: &[String]| fs.iter().map(|f| escape(f)).collect::<Vec<_>>().join(",");
            let _ = writeln!(
                out,
                "rule_files={}\nscrape_config_files={}",
                files(&cfg.rule_files),
                files(&cfg.scrape_config_files)
            );
            for job in &cfg.scrape_configs {
                dump_scrape(out, job);
            }
            dump_alerting(out, &cfg.alerting);
        }
        Err(e) => {
            let _ = writeln!(out, "error {}", e.to_string().replace('\n', "\\n"));
        }
    });
}

/// The limits both `global:` and a job print, in Prometheus' field order
/// (`keep_dropped_targets` comes later in a job's).
fn limit_lines(l: &ScrapeLimits) -> [(&'static str, String); 6] {
    [
        ("body_size_limit", l.body_size_limit.to_string()),
        ("sample_limit", l.sample_limit.to_string()),
        ("target_limit", l.target_limit.to_string()),
        ("label_limit", l.label_limit.to_string()),
        (
            "label_name_length_limit",
            l.label_name_length_limit.to_string(),
        ),
        (
            "label_value_length_limit",
            l.label_value_length_limit.to_string(),
        ),
    ]
}

fn dump_global(out: &mut String, g: &GlobalConfig) {
    let mut p = |k: &str, v: String| {
        let _ = writeln!(out, "global.{k}={v}");
    };
    p("scrape_interval_ms", g.scrape_interval_ms.to_string());
    p("scrape_timeout_ms", g.scrape_timeout_ms.to_string());
    let protocols = match &g.scrape_protocols {
        None => "nil".to_string(),
        Some(ps) => ps.iter().map(|p| p.name()).collect::<Vec<_>>().join(","),
    };
    p("scrape_protocols", protocols);
    p(
        "evaluation_interval_ms",
        g.evaluation_interval_ms.to_string(),
    );
    p("rule_query_offset_ms", g.rule_query_offset_ms.to_string());
    p("query_log_file", escape(&g.query_log_file));
    p("query_max_series", g.query_max_series.to_string());
    p(
        "query_max_samples_read",
        g.query_max_samples_read.to_string(),
    );
    p("query_max_duration_ms", g.query_max_duration_ms.to_string());
    p(
        "scrape_failure_log_file",
        escape(&g.scrape_failure_log_file),
    );
    let labels: Vec<String> = g
        .external_labels
        .iter()
        .map(|l| format!("{}={}", escape(&l.name), escape(&l.value)))
        .collect();
    p("external_labels", labels.join(","));
    for (name, value) in limit_lines(&g.limits) {
        p(name, value);
    }
    p(
        "keep_dropped_targets",
        g.limits.keep_dropped_targets.to_string(),
    );
    let scheme = match g.metric_name_validation_scheme {
        ValidationScheme::Utf8 => "utf8",
        ValidationScheme::Legacy => "legacy",
    };
    p("metric_name_validation_scheme", scheme.to_string());
    p(
        "metric_name_escaping_scheme",
        escape(&g.metric_name_escaping_scheme),
    );
    p(
        "scrape_native_histograms",
        g.scrape_native_histograms.to_string(),
    );
    p(
        "convert_classic_histograms_to_nhcb",
        g.convert_classic_histograms_to_nhcb.to_string(),
    );
    p(
        "always_scrape_classic_histograms",
        g.always_scrape_classic_histograms.to_string(),
    );
    p("extra_scrape_metrics", g.extra_scrape_metrics.to_string());
}

fn scheme_name(s: ValidationScheme) -> &'static str {
    match s {
        ValidationScheme::Utf8 => "utf8",
        ValidationScheme::Legacy => "legacy",
    }
}

fn dump_scrape(out: &mut String, c: &ScrapeConfig) {
    let mut p = |k: &str, v: String| {
        let _ = writeln!(out, "job.{k}={v}");
    };
    p("job_name", escape(&c.job_name));
    p("honor_labels", c.honor_labels.to_string());
    p("honor_timestamps", c.honor_timestamps.to_string());
    p(
        "track_timestamps_staleness",
        c.track_timestamps_staleness.to_string(),
    );
    let params: Vec<String> = c
        .params
        .iter()
        .map(|(k, vs)| {
            let vs: Vec<String> = vs.iter().map(|v| escape(v)).collect();
            format!("{}={}", escape(k), vs.join("|"))
        })
        .collect();
    p("params", params.join(","));
    p("scrape_interval_ms", c.scrape_interval_ms.to_string());
    p("scrape_timeout_ms", c.scrape_timeout_ms.to_string());
    let protocols: Vec<&str> = c.scrape_protocols.iter().map(|p| p.name()).collect();
    p("scrape_protocols", protocols.join(","));
    p(
        "fallback_scrape_protocol",
        c.fallback_scrape_protocol
            .map_or("", |p| p.name())
            .to_string(),
    );
    p(
        "scrape_native_histograms",
        c.scrape_native_histograms.to_string(),
    );
    p(
        "always_scrape_classic_histograms",
        c.always_scrape_classic_histograms.to_string(),
    );
    p(
        "convert_classic_histograms_to_nhcb",
        c.convert_classic_histograms_to_nhcb.to_string(),
    );
    p("extra_scrape_metrics", c.extra_scrape_metrics.to_string());
    p(
        "scrape_failure_log_file",
        escape(&c.scrape_failure_log_file),
    );
    p("metrics_path", escape(&c.metrics_path));
    p("scheme", escape(&c.scheme));
    p("enable_compression", c.enable_compression.to_string());
    for (name, value) in limit_lines(&c.limits) {
        p(name, value);
    }
    p(
        "native_histogram_bucket_limit",
        c.native_histogram_bucket_limit.to_string(),
    );
    p(
        "native_histogram_min_bucket_factor",
        ferrite_model::gofloat::format_g(c.native_histogram_min_bucket_factor),
    );
    p(
        "keep_dropped_targets",
        c.limits.keep_dropped_targets.to_string(),
    );
    p(
        "metric_name_validation_scheme",
        scheme_name(c.metric_name_validation_scheme).to_string(),
    );
    p(
        "metric_name_escaping_scheme",
        c.metric_name_escaping_scheme.clone(),
    );
    p("relabel_configs", c.relabel_configs.len().to_string());
    p(
        "metric_relabel_configs",
        c.metric_relabel_configs.len().to_string(),
    );
    dump_discovery(
        &mut p,
        &c.dns_sd_configs,
        &c.file_sd_configs,
        &c.http_sd_configs,
        &c.static_configs,
    );
    dump_http(out, "job.http.", &c.http_client);
}

/// The alerting section: the number of alert relabeling rules, then each
/// Alertmanager set.
fn dump_alerting(out: &mut String, a: &AlertingConfig) {
    let _ = writeln!(
        out,
        "alerting.alert_relabel_configs={}",
        a.alert_relabel_configs.len()
    );
    for am in &a.alertmanagers {
        let mut p = |k: &str, v: String| {
            let _ = writeln!(out, "am.{k}={v}");
        };
        p("api_version", escape(&am.api_version));
        p("path_prefix", escape(&am.path_prefix));
        p("scheme", escape(&am.scheme));
        p("timeout_ms", am.timeout_ms.to_string());
        p("sigv4", am.sigv4.to_string());
        p("relabel_configs", am.relabel_configs.len().to_string());
        p(
            "alert_relabel_configs",
            am.alert_relabel_configs.len().to_string(),
        );
        dump_discovery(
            &mut p,
            &am.dns_sd_configs,
            &am.file_sd_configs,
            &am.http_sd_configs,
            &am.static_configs,
        );
        dump_http(out, "am.http.", &am.http_client);
    }
}

/// DNS, file and HTTP discoveries, then the static target groups.
fn dump_discovery(
    p: &mut dyn FnMut(&str, String),
    dns: &[DnsSdConfig],
    files: &[FileSdConfig],
    http: &[HttpSdConfig],
    statics: &[TargetGroup],
) {
    for d in dns {
        let typ = match d.record_type {
            DnsRecordType::Srv => "SRV",
            DnsRecordType::A => "A",
            DnsRecordType::Aaaa => "AAAA",
            DnsRecordType::Mx => "MX",
            DnsRecordType::Ns => "NS",
        };
        p(
            "dns",
            format!(
                "{} {typ} {} {}",
                d.names.join(","),
                d.port,
                d.refresh_interval_ms
            ),
        );
    }
    for f in files {
        p(
            "file",
            format!("{} {}", f.files.join(","), f.refresh_interval_ms),
        );
    }
    for h in http {
        p(
            "http",
            format!("{} {}", escape(&h.url), h.refresh_interval_ms),
        );
    }
    for g in statics {
        let targets: Vec<String> = g.targets.iter().map(|t| escape(t)).collect();
        let labels: Vec<String> = g
            .labels
            .iter()
            .map(|l| format!("{}={}", escape(&l.name), escape(&l.value)))
            .collect();
        p(
            "static",
            format!("{} {{{}}}", targets.join(","), labels.join(",")),
        );
    }
}

/// A secret's stand-in: the start of its MD5 sum ("" when empty).
fn secret_text(s: &str) -> String {
    if s.is_empty() {
        return String::new();
    }
    let sum = Md5::digest(s.as_bytes());
    sum.iter().take(4).map(|b| format!("{b:02x}")).collect()
}

fn secret(s: &Secret) -> String {
    secret_text(s.expose())
}

fn dump_tls(t: &TlsConfig) -> String {
    let version = |v: Option<ferrite_config::http_client::TlsVersion>| v.map_or("", |v| v.name());
    format!(
        "ca={},ca_file={},ca_ref={},cert={},cert_file={},cert_ref={},key={},key_file={},key_ref={},server_name={},insecure_skip_verify={},min_version={},max_version={}",
        secret_text(&t.ca),
        escape(&t.ca_file),
        escape(&t.ca_ref),
        secret_text(&t.cert),
        escape(&t.cert_file),
        escape(&t.cert_ref),
        secret(&t.key),
        escape(&t.key_file),
        escape(&t.key_ref),
        escape(&t.server_name),
        t.insecure_skip_verify,
        version(t.min_version),
        version(t.max_version),
    )
}

fn dump_proxy(c: &ProxyConfig) -> String {
    let url = match &c.proxy_url {
        None => "nil".to_string(),
        Some(u) if u.is_empty() => "empty".to_string(),
        Some(u) => {
            let user = match u.user() {
                None => String::new(),
                Some((name, None)) => format!("{}@", escape(name)),
                Some((name, Some(pw))) => format!("{}:{}@", escape(name), secret_text(pw)),
            };
            format!("{}://{user}{}", escape(u.scheme()), escape(u.host()))
        }
    };
    let headers: Vec<String> = c
        .proxy_connect_header
        .iter()
        .map(|(k, vs)| {
            let vs: Vec<String> = vs.iter().map(secret).collect();
            format!("{}:{}", escape(k), vs.join("|"))
        })
        .collect();
    format!(
        "url={url},no_proxy={},from_environment={},connect_header={}",
        escape(&c.no_proxy),
        c.proxy_from_environment,
        headers.join(";")
    )
}

fn dump_http(out: &mut String, prefix: &str, c: &HttpClientConfig) {
    let mut p = |k: &str, v: String| {
        let _ = writeln!(out, "{prefix}{k}={v}");
    };
    let e = |s: &str| escape(s);
    p(
        "basic_auth",
        c.basic_auth.as_ref().map_or("nil".to_string(), |b| {
            format!(
                "username={},username_file={},username_ref={},password={},password_file={},password_ref={}",
                e(&b.username),
                e(&b.username_file),
                e(&b.username_ref),
                secret(&b.password),
                e(&b.password_file),
                e(&b.password_ref)
            )
        }),
    );
    p(
        "authorization",
        c.authorization.as_ref().map_or("nil".to_string(), |a| {
            format!(
                "type={},credentials={},credentials_file={},credentials_ref={}",
                e(&a.auth_type),
                secret(&a.credentials),
                e(&a.credentials_file),
                e(&a.credentials_ref)
            )
        }),
    );
    p("bearer_token", ",".to_string());
    match &c.oauth2 {
        None => p("oauth2", "nil".to_string()),
        Some(o) => {
            let scopes: Vec<String> = o.scopes.iter().map(|s| e(s)).collect();
            let params: Vec<String> = o
                .endpoint_params
                .iter()
                .map(|(k, v)| format!("{}:{}", e(k), e(v)))
                .collect();
            p(
                "oauth2",
                format!(
                    "client_id={},client_secret={},client_secret_file={},client_secret_ref={},key_id={},key={},key_file={},key_ref={},grant_type={},signature_algorithm={},iss={},audience={},claims={},scopes={},token_url={},endpoint_params={}",
                    e(&o.client_id),
                    secret(&o.client_secret),
                    e(&o.client_secret_file),
                    e(&o.client_secret_ref),
                    e(&o.client_certificate_key_id),
                    secret(&o.client_certificate_key),
                    e(&o.client_certificate_key_file),
                    e(&o.client_certificate_key_ref),
                    e(&o.grant_type),
                    e(&o.signature_algorithm),
                    e(&o.iss),
                    e(&o.audience),
                    o.has_claims,
                    scopes.join("|"),
                    e(&o.token_url),
                    params.join("|")
                ),
            );
            p("oauth2.tls", dump_tls(&o.tls_config));
            p("oauth2.proxy", dump_proxy(&o.proxy));
        }
    }
    p("tls", dump_tls(&c.tls_config));
    p("follow_redirects", c.follow_redirects.to_string());
    p("enable_http2", c.enable_http2.to_string());
    p("proxy", dump_proxy(&c.proxy));
    let headers = c.http_headers.as_ref().map_or("nil".to_string(), |hs| {
        hs.iter()
            .map(|(k, h)| {
                let list = |xs: &[String]| xs.iter().map(|x| e(x)).collect::<Vec<_>>().join("|");
                let secrets: Vec<String> = h.secrets.iter().map(secret).collect();
                format!(
                    "{}:values={};secrets={};files={}",
                    e(k),
                    list(&h.values),
                    secrets.join("|"),
                    list(&h.files)
                )
            })
            .collect::<Vec<_>>()
            .join(",")
    });
    p("headers", headers);
}
