//! The configuration as `/api/v1/status/config` shows it: the loaded file
//! with every secret replaced by `<secret>`, as Prometheus marshals its
//! `Secret` fields, and passwords in URLs by `xxxxx`, as Go's
//! `url.URL.Redacted` writes them.
//!
//! Prometheus writes its parsed configuration back out (every default
//! filled in); this writes the file's own settings back out, in YAML, so
//! both parse to the same configuration and neither shows a secret.
//! Secrets are found by the keys Prometheus' secret fields have:
//! `password`, `credentials`, `bearer_token`, `client_secret`,
//! `secret_key` (also `sigv4`'s in `alerting:`), `token`, a `tls_config`'s `key`, an `http_headers`
//! entry's `secrets`, and every value of `proxy_connect_header`.

use serde_json::{Map, Value};

/// The text shown for a secret.
pub const SECRET: &str = "<secret>";

/// Keys whose scalar value is a secret wherever they are.
const SECRET_KEYS: [&str; 6] = [
    "password",
    "credentials",
    "bearer_token",
    "client_secret",
    "secret_key",
    "token",
];

/// The configuration text with its secrets replaced; an error if the text
/// does not parse as YAML (a loaded file always does).
pub fn redacted_yaml(source: &str) -> Result<String, String> {
    if source.trim().is_empty() {
        return Ok(String::new());
    }
    let mut tree: Value = crate::yaml::from_str(source)?;
    redact(&mut tree, None);
    serde_saphyr::to_string(&tree).map_err(|e| e.to_string())
}

/// Redacts `v`, the value under key `parent` (if in a mapping).
fn redact(v: &mut Value, parent: Option<&str>) {
    match v {
        Value::Object(map) => redact_map(map, parent),
        Value::Array(items) => {
            for item in items {
                redact(item, parent);
            }
        }
        _ => {}
    }
}

fn redact_map(map: &mut Map<String, Value>, parent: Option<&str>) {
    for (key, value) in map.iter_mut() {
        let secret = SECRET_KEYS.contains(&key.as_str())
            || (key == "key" && parent == Some("tls_config"))
            || key == "secrets"
            || parent == Some("proxy_connect_header");
        if secret {
            hide(value);
        } else if key.ends_with("url") {
            if let Value::String(url) = value {
                *url = redacted_url(url);
            }
        } else {
            redact(value, Some(key.as_str()));
        }
    }
}

/// Replaces a scalar (or each element of a list) by the secret text.
fn hide(v: &mut Value) {
    match v {
        Value::Array(items) => items.iter_mut().for_each(hide),
        Value::Null => {}
        other => *other = Value::String(SECRET.to_string()),
    }
}

/// A URL with the password of its user info replaced by `xxxxx`.
fn redacted_url(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_string();
    };
    let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let (authority, tail) = rest.split_at(end);
    match authority.rsplit_once('@') {
        Some((userinfo, host)) => match userinfo.split_once(':') {
            Some((user, _)) => format!("{scheme}://{user}:xxxxx@{host}{tail}"),
            None => url.to_string(),
        },
        None => url.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secrets_are_hidden() {
        let text = "scrape_configs:\n  - job_name: b\n    authorization: {credentials: tok}\n  \
                    - job_name: a\n    basic_auth: {username: u, password: hunter2}\n    tls_config: {key: PRIVATE, cert_file: c.pem}\n    \
                    proxy_url: http://me:pw@proxy:3128/\n    http_headers: {X-A: {values: [v], secrets: [s1, s2]}}\n    \
                    proxy_connect_header: {P: [p1]}\n    static_configs: [{targets: ['h:1']}]\n";
        let out = redacted_yaml(text).expect("parses");
        for secret in ["hunter2", "tok", "PRIVATE", "pw@", "s1", "s2", "p1"] {
            assert!(!out.contains(secret), "{secret} in:\n{out}");
        }
        for kept in [
            "username: u",
            "cert_file: c.pem",
            "http://me:xxxxx@proxy:3128/",
            "h:1",
            "<secret>",
        ] {
            assert!(out.contains(kept), "{kept} missing in:\n{out}");
        }
        // The result reads back as the same configuration.
        let again = crate::Config::parse(&out, "redacted").expect("loads");
        assert_eq!(again.scrape_configs[1].job_name, "a");
        assert_eq!(redacted_yaml("").expect("empty"), "");
    }

    #[test]
    fn alertmanager_secrets_are_hidden() {
        let text = "alerting:\n  alertmanagers:\n    - basic_auth: {username: u, password: hunter2}\n      \
                    static_configs: [{targets: ['am:9093']}]\n    - authorization: {credentials: CREDTOK}\n      \
                    tls_config: {key: PRIVATE}\n    - sigv4: {region: r, access_key: AK, secret_key: SK}\n      \
                    oauth2: {client_id: c, client_secret: CS, token_url: 'http://t'}\n";
        let out = redacted_yaml(text).expect("parses");
        for secret in ["hunter2", "CREDTOK", "PRIVATE", "SK", "CS"] {
            assert!(!out.contains(secret), "{secret} in:\n{out}");
        }
        for kept in ["username: u", "am:9093", "client_id: c", "region: r"] {
            assert!(out.contains(kept), "{kept} missing in:\n{out}");
        }
    }
}
