use super::*;
use crate::{Config, ScrapeConfig};

fn job(http: &str) -> Result<ScrapeConfig, String> {
    let text = format!("scrape_configs:\n  - job_name: a\n{http}");
    Config::parse(&text, "p.yml")
        .map(|mut c| c.scrape_configs.remove(0))
        .map_err(|e| {
            e.to_string()
                .trim_start_matches("parsing YAML file p.yml: ")
                .to_string()
        })
}

fn client(http: &str) -> HttpClientConfig {
    job(http).expect(http).http_client
}

fn err(http: &str) -> String {
    job(http).expect_err(http)
}

#[test]
fn defaults_follow_redirects_and_offer_http2() {
    let c = client("");
    assert_eq!(c, HttpClientConfig::default());
    assert!(c.follow_redirects && c.enable_http2);
    assert!(c.basic_auth.is_none() && c.authorization.is_none() && c.oauth2.is_none());
    // Null is Go's zero value: false.
    let c = client("    follow_redirects: null\n    enable_http2: false\n");
    assert!(!c.follow_redirects && !c.enable_http2);
}

#[test]
fn settings_are_read() {
    let c = client(
        "    basic_auth: {username: u, password_file: pw}\n    tls_config: {ca_file: ca.pem, server_name: x, min_version: TLS12, max_version: TLS13, insecure_skip_verify: true}\n    proxy_url: http://user:pa%40ss@proxy:3128\n    no_proxy: localhost\n    proxy_connect_header: {X-A: [s1, null]}\n    http_headers: {X-Tenant: {values: [a], secrets: [s], files: [f]}}\n",
    );
    let b = c.basic_auth.as_ref().expect("basic_auth");
    assert_eq!(b.username_source(), Some(SecretSource::Inline("u")));
    assert_eq!(b.password_source(), Some(SecretSource::File("pw")));
    let t = &c.tls_config;
    assert_eq!(t.ca_source(), Some(SecretSource::File("ca.pem")));
    assert_eq!(t.server_name, "x");
    assert!(t.insecure_skip_verify);
    assert_eq!(
        (t.min_version, t.max_version),
        (Some(TlsVersion::Tls12), Some(TlsVersion::Tls13))
    );
    let url = c.proxy.url().expect("proxy");
    assert_eq!(
        (url.scheme(), url.host(), url.user()),
        ("http", "proxy:3128", Some(("user", Some("pa@ss"))))
    );
    assert_eq!(c.proxy.no_proxy, "localhost");
    assert_eq!(
        c.proxy.proxy_connect_header["X-A"],
        vec![Secret::new("s1"), Secret::default()]
    );
    let h = &c.http_headers.as_ref().expect("headers")["X-Tenant"];
    assert_eq!(
        (
            h.values.as_slice(),
            h.secrets.as_slice(),
            h.files.as_slice()
        ),
        (
            ["a".to_string()].as_slice(),
            [Secret::new("s")].as_slice(),
            ["f".to_string()].as_slice()
        )
    );
}

#[test]
fn bearer_tokens_become_an_authorization() {
    let a = client("    bearer_token: tok\n")
        .authorization
        .expect("auth");
    assert_eq!(a.auth_type, "Bearer");
    assert_eq!(a.credentials_source(), Some(SecretSource::Inline("tok")));
    let a = client("    bearer_token_file: t.txt\n")
        .authorization
        .expect("auth");
    assert_eq!(
        (a.auth_type.as_str(), a.credentials_source()),
        ("Bearer", Some(SecretSource::File("t.txt")))
    );
    let a = client("    authorization: {type: \" Custom \"}\n")
        .authorization
        .expect("auth");
    assert_eq!(
        (a.auth_type.as_str(), a.credentials_source()),
        ("Custom", None)
    );
    let a = client("    authorization: {}\n")
        .authorization
        .expect("auth");
    assert_eq!(a.auth_type, "Bearer");
}

#[test]
fn errors_read_as_prometheus_errors() {
    for (http, want) in [
        ("    tls_config: {foo: 1}\n", "yaml: unmarshal errors:\n  line 3: field foo not found in type config.plain"),
        ("    authorization: {foo: 1}\n", "yaml: unmarshal errors:\n  line 3: field foo not found in type config.Authorization"),
        ("    http_headers: {X-A: {foo: 1}}\n", "yaml: unmarshal errors:\n  line 3: field foo not found in type config.Header"),
        ("    tls_config: {min_version: TLS14}\n", "unknown TLS version: TLS14"),
        ("    tls_config: {ca: a, ca_file: b}\n", "at most one of ca, ca_file & ca_ref must be configured"),
        ("    tls_config: {cert: a}\n", "exactly one of key or key_file must be configured when a client certificate is configured"),
        ("    tls_config: {key_file: a}\n", "exactly one of cert or cert_file must be configured when a client key is configured"),
        ("    proxy_url: \"http://[::1\"\n", "parse \"http://[::1\": missing ']' in host"),
        ("    no_proxy: a\n", "if no_proxy is configured, proxy_url must also be configured"),
        ("    proxy_connect_header: {a: [b]}\n", "if proxy_connect_header is configured, proxy_url or proxy_from_environment must also be configured"),
        ("    proxy_from_environment: true\n    proxy_url: http://p\n", "if proxy_from_environment is configured, proxy_url must not be configured"),
        ("    bearer_token: a\n    bearer_token_file: b\n", "at most one of bearer_token & bearer_token_file must be configured"),
        ("    bearer_token: a\n    basic_auth: {}\n", "at most one of basic_auth, oauth2, bearer_token & bearer_token_file must be configured"),
        ("    authorization: {}\n    bearer_token: b\n", "authorization is not compatible with bearer_token & bearer_token_file"),
        ("    authorization: {type: \" Basic \"}\n", "authorization type cannot be set to \"basic\", use \"basic_auth\" instead"),
        ("    authorization: {}\n    basic_auth: {}\n", "at most one of basic_auth, oauth2 & authorization must be configured"),
        ("    basic_auth: {password: a, password_file: b}\n", "at most one of basic_auth password, password_file & password_ref must be configured"),
        ("    oauth2: {}\n", "oauth2 client_id must be configured"),
        ("    oauth2: {client_id: a}\n", "oauth2 token_url must be configured"),
        ("    oauth2: {client_id: a, token_url: t, client_secret: s, client_secret_file: f}\n", "at most one of oauth2 client_secret, client_secret_file & client_secret_ref must be configured using grant-type=client_credentials"),
        ("    oauth2: {client_id: a, token_url: t, proxy_url: http://p, proxy_from_environment: true}\n", "if proxy_from_environment is configured, proxy_url must not be configured"),
        ("    http_headers: {user-agent: {values: [a]}}\n", "setting header \"User-Agent\" is not allowed"),
        // The job's name first, the client next, static targets last.
        ("    tls_config: {cert: a, key: b}\n    authorization: {type: basic}\n    static_configs: [{targets: [\"http://x/y\"]}]\n", "authorization type cannot be set to \"basic\", use \"basic_auth\" instead"),
    ] {
        assert_eq!(err(http), want, "{http}");
    }
}

#[test]
fn debug_never_shows_secrets() {
    let c = client(
        "    basic_auth: {username: u, password: hunter2}\n    tls_config: {cert: c, key: keytext}\n    proxy_url: http://u:proxypw@p:1\n    proxy_connect_header: {X-A: [connectpw]}\n    http_headers: {X-A: {secrets: [headerpw]}}\n",
    );
    let shown = format!("{c:?}");
    for secret in ["hunter2", "keytext", "proxypw", "connectpw", "headerpw"] {
        assert!(!shown.contains(secret), "{secret} in {shown}");
    }
    assert!(shown.contains("<secret>"));
    let o = client("    oauth2: {client_id: i, client_secret: oauthpw, token_url: http://t}\n");
    assert!(!format!("{o:?}").contains("oauthpw"));
    let a = client("    bearer_token: bearerpw\n");
    assert!(!format!("{a:?}").contains("bearerpw"));
    let source = SecretSource::Inline("inlinepw");
    assert!(!format!("{source:?}").contains("inlinepw"));
}

#[test]
fn files_are_relative_to_the_configuration_file() {
    let dir = tempfile::tempdir().expect("tempdir");
    let sub = dir.path().join("sub");
    std::fs::create_dir(&sub).expect("mkdir");
    let p = sub.join("p.yml");
    std::fs::write(
        &p,
        "scrape_configs:\n  - job_name: a\n    basic_auth: {username_file: u, password_file: /abs/pw}\n    tls_config: {ca_file: ../ca.pem, cert_file: c, key_file: k}\n    http_headers: {X-A: {files: [h]}}\n  - job_name: b\n    bearer_token_file: t\n    oauth2: null\n  - job_name: c\n    oauth2: {client_id: i, token_url: t, client_secret_file: cs, client_certificate_key_file: kf, tls_config: {ca_file: oca}}\n",
    )
    .expect("write");
    let cfg = Config::load(&p).expect("loads");
    let d = sub.display().to_string();
    let top = dir.path().display().to_string();
    let a = &cfg.scrape_configs[0].http_client;
    let b = a.basic_auth.as_ref().expect("basic_auth");
    assert_eq!(b.username_file, format!("{d}/u"));
    assert_eq!(b.password_file, "/abs/pw");
    assert_eq!(a.tls_config.ca_file, format!("{top}/ca.pem"));
    assert_eq!(a.tls_config.cert_file, format!("{d}/c"));
    assert_eq!(a.tls_config.key_file, format!("{d}/k"));
    assert_eq!(
        a.http_headers.as_ref().expect("headers")["X-A"].files,
        vec![format!("{d}/h")]
    );
    let auth = cfg.scrape_configs[1].http_client.authorization.as_ref();
    assert_eq!(auth.expect("auth").credentials_file, format!("{d}/t"));
    let o = cfg.scrape_configs[2]
        .http_client
        .oauth2
        .as_ref()
        .expect("oauth2");
    assert_eq!(o.client_secret_file, format!("{d}/cs"));
    assert_eq!(o.tls_config.ca_file, format!("{d}/oca"));
    // As in Prometheus, the JWT key file stays as written.
    assert_eq!(o.client_certificate_key_file, "kf");
}

#[test]
fn unsupported_settings_are_named() {
    assert_eq!(client("").unsupported(), None);
    assert_eq!(
        client("    oauth2: {client_id: i, token_url: t}\n").unsupported(),
        None
    );
    let jwt = client(
        "    oauth2: {client_id: i, token_url: t, grant_type: \"urn:ietf:params:oauth:grant-type:jwt-bearer\"}\n",
    );
    assert_eq!(jwt.unsupported().map(|u| u.0), Some("oauth2.grant_type"));
    let old = client("    tls_config: {max_version: TLS11}\n");
    assert_eq!(
        old.unsupported().map(|u| u.0),
        Some("tls_config.max_version")
    );
    assert_eq!(
        client("    tls_config: {min_version: TLS10}\n").unsupported(),
        None
    );
}

#[test]
fn canonical_header_keys_are_gos() {
    for (name, want) in [
        ("x-my-header", "X-My-Header"),
        ("USER-AGENT", "User-Agent"),
        ("www-authenticate", "Www-Authenticate"),
        ("bad name", "bad name"),
    ] {
        assert_eq!(canonical_header_key(name), want);
    }
}
