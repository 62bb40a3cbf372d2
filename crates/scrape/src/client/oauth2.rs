//! `oauth2` with the client credentials grant, as Prometheus' client (Go's
//! `x/oauth2` `clientcredentials`) does it: a token from `token_url`
//! (`grant_type=client_credentials`, `scope` from `scopes`, the
//! `endpoint_params`), the client's id and secret first as HTTP basic
//! authentication, then, if the endpoint refuses that, as form parameters
//! (the way that worked is kept); the token reused until 10 s before it
//! expires; the secret file re-read before each request, a new secret
//! dropping the token. The token requests use the block's own
//! `tls_config` and proxy settings.

use std::time::{Duration, Instant};

use ferrite_config::http_client::{OAuth2, SecretSource};
use ferrite_model::goquote::{query_escape, quote as go_quote};
use tokio::sync::Mutex;

use super::{error_chain, read_secret_file, tls};
use crate::http::USER_AGENT;

/// A job's OAuth 2.0 tokens.
pub(crate) struct TokenSource {
    cfg: OAuth2,
    client: reqwest::Client,
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    /// The secret the token was got with.
    secret: Option<String>,
    token: Option<Token>,
    /// Whether the endpoint takes the client's credentials as form
    /// parameters (`None`: not known yet).
    in_params: Option<bool>,
}

struct Token {
    access_token: String,
    token_type: String,
    expiry: Option<Instant>,
}

impl Token {
    /// Valid until 10 s before it expires (Go's `expiryDelta`).
    fn valid(&self) -> bool {
        self.expiry
            .is_none_or(|e| Instant::now() + Duration::from_secs(10) < e)
    }

    /// The `Authorization` header's value.
    fn header(&self) -> String {
        let t = match self.token_type.to_ascii_lowercase().as_str() {
            "" | "bearer" => "Bearer",
            "mac" => "MAC",
            "basic" => "Basic",
            _ => self.token_type.as_str(),
        };
        format!("{t} {}", self.access_token)
    }
}

impl TokenSource {
    /// Checks the settings and builds the token requests' client.
    pub(crate) fn new(cfg: &OAuth2) -> Result<TokenSource, String> {
        if cfg.is_jwt_bearer() {
            return Err("oauth2: the JWT bearer grant is not supported by Ferrite".to_string());
        }
        if let Some(SecretSource::Ref(_)) = cfg.client_secret_source() {
            return Err(
                "unable to use client secret: cannot use secret ref without manager".to_string(),
            );
        }
        let material = tls::read_material(&cfg.tls_config)?;
        let tls = tls::client_config(&cfg.tls_config, &material, false)?;
        let mut builder = reqwest::Client::builder()
            .use_preconfigured_tls(tls)
            .http1_only()
            .no_proxy()
            .user_agent(USER_AGENT);
        if let Some(p) = super::proxy::proxy(&cfg.proxy)? {
            builder = builder.proxy(p);
        }
        let client = builder.build().map_err(|e| error_chain(&e))?;
        Ok(TokenSource {
            cfg: cfg.clone(),
            client,
            state: Mutex::new(State::default()),
        })
    }

    /// The `Authorization` header for a request: the cached token, or a
    /// new one (within `timeout`).
    pub(crate) async fn authorization(&self, timeout: Duration) -> Result<String, String> {
        let secret = match self.cfg.client_secret_source() {
            None | Some(SecretSource::Ref(_)) => String::new(),
            Some(SecretSource::Inline(s)) => s.to_string(),
            Some(SecretSource::File(f)) => read_secret_file(f)
                .map_err(|e| format!("unable to read oauth2 client secret: {e}"))?,
        };
        let mut state = self.state.lock().await;
        if state.secret.as_deref() != Some(secret.as_str()) {
            *state = State {
                secret: Some(secret.clone()),
                ..State::default()
            };
        }
        if let Some(t) = state.token.as_ref().filter(|t| t.valid()) {
            return Ok(t.header());
        }
        let token = match state.in_params {
            Some(in_params) => self.fetch(&secret, in_params, timeout).await?,
            None => match self.fetch(&secret, false, timeout).await {
                Ok(t) => {
                    state.in_params = Some(false);
                    t
                }
                Err(_) => {
                    let t = self.fetch(&secret, true, timeout).await?;
                    state.in_params = Some(true);
                    t
                }
            },
        };
        let header = token.header();
        state.token = Some(token);
        Ok(header)
    }

    /// One token request.
    async fn fetch(
        &self,
        secret: &str,
        in_params: bool,
        timeout: Duration,
    ) -> Result<Token, String> {
        let mut params: Vec<(String, String)> =
            vec![("grant_type".into(), "client_credentials".into())];
        if !self.cfg.scopes.is_empty() {
            params.push(("scope".into(), self.cfg.scopes.join(" ")));
        }
        for (k, v) in &self.cfg.endpoint_params {
            if k != "grant_type" && params.iter().any(|(p, _)| p == k) {
                return Err(format!(
                    "oauth2: cannot overwrite parameter {}",
                    go_quote(k)
                ));
            }
            params.retain(|(p, _)| p != k);
            params.push((k.clone(), v.clone()));
        }
        let mut request = self
            .client
            .post(&self.cfg.token_url)
            .timeout(timeout)
            .header("Content-Type", "application/x-www-form-urlencoded");
        if in_params {
            if !self.cfg.client_id.is_empty() {
                params.push(("client_id".into(), self.cfg.client_id.clone()));
            }
            if !secret.is_empty() {
                params.push(("client_secret".into(), secret.to_string()));
            }
        } else {
            request = request.basic_auth(
                query_escape(&self.cfg.client_id),
                Some(query_escape(secret)),
            );
        }
        params.sort();
        let body: Vec<String> = params
            .iter()
            .map(|(k, v)| format!("{}={}", query_escape(k), query_escape(v)))
            .collect();
        let url = self.cfg.token_url.clone();
        let request_error =
            |e: reqwest::Error| format!("Post {}: {}", go_quote(&url), error_chain(&e));
        let response = request
            .body(body.join("&"))
            .send()
            .await
            .map_err(request_error)?;
        let status = response.status();
        let media_type = response
            .headers()
            .get("Content-Type")
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
            .split(';')
            .next()
            .unwrap_or("")
            .trim()
            .to_ascii_lowercase();
        let body = response
            .bytes()
            .await
            .map_err(|e| format!("oauth2: cannot fetch token: {}", error_chain(&e)))?;
        let body = &body[..body.len().min(1 << 20)];
        parse_token_response(status, &media_type, body)
    }
}

/// A token endpoint's answer, read as Go's `x/oauth2` reads it.
fn parse_token_response(
    status: reqwest::StatusCode,
    media_type: &str,
    body: &[u8],
) -> Result<Token, String> {
    let failed = !status.is_success();
    let retrieve_error = |code: &str, description: &str, uri: &str| {
        if code.is_empty() {
            let reason = status.canonical_reason().unwrap_or("");
            return format!(
                "oauth2: cannot fetch token: {} {reason}\nResponse: {}",
                status.as_u16(),
                String::from_utf8_lossy(body)
            );
        }
        let mut s = format!("oauth2: {}", go_quote(code));
        for extra in [description, uri] {
            if !extra.is_empty() {
                s.push(' ');
                s.push_str(&go_quote(extra));
            }
        }
        s
    };
    let fields = if media_type == "application/x-www-form-urlencoded" || media_type == "text/plain"
    {
        let pairs: Vec<(String, String)> = String::from_utf8_lossy(body)
            .split('&')
            .filter(|p| !p.is_empty())
            .map(|p| {
                let (k, v) = p.split_once('=').unwrap_or((p, ""));
                (query_unescape(k), query_unescape(v))
            })
            .collect();
        let get = |name: &str| {
            pairs
                .iter()
                .find(|(k, _)| k == name)
                .map(|(_, v)| v.clone())
                .unwrap_or_default()
        };
        TokenFields {
            access_token: get("access_token"),
            token_type: get("token_type"),
            expires_in: get("expires_in").parse().unwrap_or(0),
            error: get("error"),
            error_description: get("error_description"),
            error_uri: get("error_uri"),
        }
    } else {
        let json: serde_json::Value = match serde_json::from_slice(body) {
            Ok(v) => v,
            Err(_) if failed => return Err(retrieve_error("", "", "")),
            Err(e) => return Err(format!("oauth2: cannot parse json: {e}")),
        };
        let get = |name: &str| json[name].as_str().unwrap_or("").to_string();
        TokenFields {
            access_token: get("access_token"),
            token_type: get("token_type"),
            expires_in: match &json["expires_in"] {
                serde_json::Value::Number(n) => n.as_i64().unwrap_or(0),
                serde_json::Value::String(s) => s.parse().unwrap_or(0),
                _ => 0,
            },
            error: get("error"),
            error_description: get("error_description"),
            error_uri: get("error_uri"),
        }
    };
    if failed || !fields.error.is_empty() {
        return Err(retrieve_error(
            &fields.error,
            &fields.error_description,
            &fields.error_uri,
        ));
    }
    if fields.access_token.is_empty() {
        return Err("oauth2: server response missing access_token".to_string());
    }
    Ok(Token {
        access_token: fields.access_token,
        token_type: fields.token_type,
        expiry: (fields.expires_in != 0)
            .then(|| Instant::now() + Duration::from_secs(fields.expires_in.unsigned_abs())),
    })
}

/// A token response's fields.
struct TokenFields {
    access_token: String,
    token_type: String,
    expires_in: i64,
    error: String,
    error_description: String,
    error_uri: String,
}

/// Go's `url.QueryUnescape`, lenient: a bad escape stays as it is.
fn query_unescape(s: &str) -> String {
    let hex = |c: u8| {
        char::from(c)
            .to_digit(16)
            .and_then(|d| u8::try_from(d).ok())
    };
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        let escaped = match (b[i], b.get(i + 1), b.get(i + 2)) {
            (b'%', Some(&h), Some(&l)) => hex(h).zip(hex(l)).map(|(h, l)| h << 4 | l),
            _ => None,
        };
        match (b[i], escaped) {
            (_, Some(v)) => {
                out.push(v);
                i += 3;
            }
            (b'+', None) => {
                out.push(b' ');
                i += 1;
            }
            (c, None) => {
                out.push(c);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn token_responses_are_read_as_go_reads_them() {
        let ok = reqwest::StatusCode::OK;
        let t = parse_token_response(
            ok,
            "application/json",
            br#"{"access_token":"abc","token_type":"bearer","expires_in":3600}"#,
        )
        .expect("token");
        assert_eq!(t.header(), "Bearer abc");
        assert!(t.valid());
        let t = parse_token_response(ok, "text/plain", b"access_token=a%2Bb&token_type=mac")
            .expect("form");
        assert_eq!(t.header(), "MAC a+b");
        assert!(t.expiry.is_none());
        let soon = parse_token_response(
            ok,
            "application/json",
            br#"{"access_token":"x","expires_in":"5"}"#,
        )
        .expect("token");
        assert!(!soon.valid(), "expires within 10 s");
        assert_eq!(
            parse_token_response(ok, "application/json", br#"{"token_type":"bearer"}"#)
                .err()
                .as_deref(),
            Some("oauth2: server response missing access_token")
        );
        assert_eq!(
            parse_token_response(
                reqwest::StatusCode::UNAUTHORIZED,
                "application/json",
                br#"{"error":"invalid_client","error_description":"bad secret"}"#
            )
            .err()
            .as_deref(),
            Some("oauth2: \"invalid_client\" \"bad secret\"")
        );
        assert_eq!(
            parse_token_response(reqwest::StatusCode::FORBIDDEN, "text/html", b"no")
                .err()
                .as_deref(),
            Some("oauth2: cannot fetch token: 403 Forbidden\nResponse: no")
        );
    }

    #[test]
    fn query_escaping_is_gos() {
        assert_eq!(query_escape("a b&c~*"), "a+b%26c~%2A");
        assert_eq!(query_unescape("a+b%26c%zz"), "a b&c%zz");
    }
}
