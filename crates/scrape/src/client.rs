//! A job's HTTP client, built from its settings
//! ([`ferrite_config::HttpClientConfig`]) as Prometheus builds one with
//! `NewClientFromConfig`:
//!
//! - TLS ([`tls`]): rustls with the job's CA certificates (else the
//!   system's), client certificate, `server_name`, `insecure_skip_verify`
//!   and versions; CA, certificate and key files are read again before
//!   each request and a change rebuilds the connection pool, as
//!   Prometheus' TLS round tripper does;
//! - authentication, added to each request: `basic_auth`, `authorization`
//!   (and the `bearer_token*` it stands for), `oauth2` ([`oauth2`]:
//!   client credentials, tokens cached until they expire); files
//!   (`password_file`, `credentials_file`, `client_secret_file`) are read
//!   for every request, so a rotated secret is used at once;
//! - `http_headers`: values, secrets and files' contents (read for every
//!   request);
//! - proxies ([`proxy`]): `proxy_url`, `no_proxy`,
//!   `proxy_from_environment`, `proxy_connect_header`;
//! - `follow_redirects` (at most 10, as Go's client; credentials are not
//!   sent to another host), `enable_http2` (HTTP/2 offered over TLS);
//!   idle connections kept 5 minutes.
//!
//! Failures read as Prometheus': building fails with `error creating HTTP
//! client: ...` (a `*_ref` secret, a CA file that does not read or hold a
//! certificate, a bad client certificate, versions that do not fit); a
//! request fails with the reason (`unable to read authorization
//! credentials: ...`), which [`crate::http::fetch`] reports as
//! `Get "<url>": <reason>`.
//!
//! A scrape loop holds a [`JobClient`]; [`crate::http::fetch`] takes
//! anything that is a [`ScrapeClient`] (a bare `reqwest::Client` adds
//! nothing to requests).

mod oauth2;
mod proxy;
mod tls;

use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use base64::Engine as _;
use ferrite_config::http_client::{HttpClientConfig, SecretSource};
use reqwest::header::{HeaderMap, HeaderName, HeaderValue, AUTHORIZATION};
use reqwest::RequestBuilder;
use tracing::warn;

pub(crate) use crate::http::error_chain;

/// Why a job's client was not built (Prometheus' `error creating HTTP
/// client: ...`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("error creating HTTP client: {0}")]
pub struct ClientError(pub String);

/// What scrapes go through: the HTTP client and what it adds to each
/// request.
pub trait ScrapeClient: Send + Sync {
    /// The HTTP client for the next request (rebuilt when TLS files
    /// changed); an error fails the request.
    fn http(&self) -> Result<reqwest::Client, String>;

    /// Adds the job's headers and credentials to a request, once the
    /// scrape's own headers are set (`timeout` bounds a token request).
    fn prepare(
        &self,
        request: RequestBuilder,
        timeout: Duration,
    ) -> impl Future<Output = Result<RequestBuilder, String>> + Send;
}

impl ScrapeClient for reqwest::Client {
    fn http(&self) -> Result<reqwest::Client, String> {
        Ok(self.clone())
    }

    async fn prepare(
        &self,
        request: RequestBuilder,
        _timeout: Duration,
    ) -> Result<RequestBuilder, String> {
        Ok(request)
    }
}

/// A job's HTTP client; see the module documentation. Clones share it.
#[derive(Clone)]
pub struct JobClient {
    inner: Arc<Inner>,
}

struct Inner {
    cfg: HttpClientConfig,
    /// Whether TLS material comes from files (read before each request).
    tls_files: bool,
    /// The client and the TLS material it was built with.
    transport: Mutex<(tls::TlsMaterial, reqwest::Client)>,
    oauth2: Option<oauth2::TokenSource>,
}

impl std::fmt::Debug for JobClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("JobClient")
            .field("config", &self.inner.cfg)
            .finish_non_exhaustive()
    }
}

impl JobClient {
    /// Builds the client for a job's settings, checking what Prometheus
    /// checks then (in its order).
    pub fn new(cfg: &HttpClientConfig) -> Result<JobClient, ClientError> {
        Self::build(cfg).map_err(ClientError)
    }

    fn build(cfg: &HttpClientConfig) -> Result<JobClient, String> {
        let material = tls::read_material(&cfg.tls_config)?;
        let client = build_reqwest(cfg, &material, HeaderMap::new())?;
        let no_manager =
            |what: &str| format!("unable to use {what}: cannot use secret ref without manager");
        if let Some(a) = &cfg.authorization {
            if let Some(SecretSource::Ref(_)) = a.credentials_source() {
                return Err(no_manager("credentials"));
            }
        }
        if let Some(b) = &cfg.basic_auth {
            if let Some(SecretSource::Ref(_)) = b.username_source() {
                return Err(no_manager("username"));
            }
            if let Some(SecretSource::Ref(_)) = b.password_source() {
                return Err(no_manager("password"));
            }
        }
        let oauth2 = match &cfg.oauth2 {
            Some(o) => Some(oauth2::TokenSource::new(o)?),
            None => None,
        };
        Ok(JobClient {
            inner: Arc::new(Inner {
                cfg: cfg.clone(),
                tls_files: tls::has_files(&cfg.tls_config),
                transport: Mutex::new((material, client)),
                oauth2,
            }),
        })
    }

    /// [`JobClient::new`] as a `T`: the client itself, or a bare
    /// `reqwest::Client` (see its `From`) where a `JobClient` cannot be
    /// held yet.
    pub fn new_as<T: From<JobClient>>(cfg: &HttpClientConfig) -> Result<T, ClientError> {
        JobClient::new(cfg).map(T::from)
    }

    /// The settings it was built from.
    pub fn config(&self) -> &HttpClientConfig {
        &self.inner.cfg
    }
}

/// The reqwest client for `cfg` with TLS from `material`.
fn build_reqwest(
    cfg: &HttpClientConfig,
    material: &tls::TlsMaterial,
    headers: HeaderMap,
) -> Result<reqwest::Client, String> {
    let tls = tls::client_config(&cfg.tls_config, material, cfg.enable_http2)?;
    let redirects = if cfg.follow_redirects {
        reqwest::redirect::Policy::limited(10)
    } else {
        reqwest::redirect::Policy::none()
    };
    let mut builder = reqwest::Client::builder()
        .use_preconfigured_tls(tls)
        .redirect(redirects)
        .pool_idle_timeout(Duration::from_secs(300))
        .default_headers(headers)
        .no_proxy();
    if !cfg.enable_http2 {
        builder = builder.http1_only();
    }
    if let Some(p) = proxy::proxy(&cfg.proxy)? {
        builder = builder.proxy(p);
    }
    builder.build().map_err(|e| error_chain(&e))
}

impl ScrapeClient for JobClient {
    fn http(&self) -> Result<reqwest::Client, String> {
        let inner = &self.inner;
        let mut transport = inner.transport.lock().unwrap_or_else(|p| p.into_inner());
        if inner.tls_files {
            let material = tls::read_material(&inner.cfg.tls_config)?;
            if material != transport.0 {
                let client = build_reqwest(&inner.cfg, &material, HeaderMap::new())?;
                *transport = (material, client);
            }
        }
        Ok(transport.1.clone())
    }

    async fn prepare(
        &self,
        mut request: RequestBuilder,
        timeout: Duration,
    ) -> Result<RequestBuilder, String> {
        let cfg = &self.inner.cfg;
        for (name, value) in header_values(cfg)? {
            request = request.header(name, value);
        }
        if let Some(value) = authorization(cfg)? {
            request = request.header(AUTHORIZATION, value);
        }
        if let Some(source) = &self.inner.oauth2 {
            let value = source.authorization(timeout).await?;
            request = request.header(AUTHORIZATION, sensitive(&value, "Authorization")?);
        }
        Ok(request)
    }
}

/// Without a [`JobClient`] to prepare each request, a bare client sends
/// what can be fixed now: credentials and headers as they read at this
/// moment (files are not read again; `oauth2` cannot be).
impl From<JobClient> for reqwest::Client {
    fn from(client: JobClient) -> reqwest::Client {
        let inner = &client.inner;
        let current = || {
            inner
                .transport
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .1
                .clone()
        };
        if inner.oauth2.is_some() {
            warn!("oauth2 needs the scrape loop to hold a JobClient: requests go without a token");
        }
        let mut headers = HeaderMap::new();
        let fixed = header_values(&inner.cfg).and_then(|hs| {
            headers.extend(hs);
            authorization(&inner.cfg)
        });
        match fixed {
            Ok(auth) => {
                if let Some(a) = auth {
                    headers.insert(AUTHORIZATION, a);
                }
            }
            Err(e) => warn!(error = %e, "a job's credentials or headers could not be read"),
        }
        let material = inner
            .transport
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .0
            .clone();
        build_reqwest(&inner.cfg, &material, headers).unwrap_or_else(|_| current())
    }
}

/// A header value that logs never show.
fn sensitive(text: &str, name: &str) -> Result<HeaderValue, String> {
    let mut v = HeaderValue::from_str(text).map_err(|_| {
        format!(
            "net/http: invalid header field value for {}",
            ferrite_model::goquote::quote(name)
        )
    })?;
    v.set_sensitive(true);
    Ok(v)
}

/// `http_headers`' values, secrets and files' contents (read now), in
/// that order for each header.
fn header_values(cfg: &HttpClientConfig) -> Result<Vec<(HeaderName, HeaderValue)>, String> {
    let mut out = Vec::new();
    for (name, h) in cfg.http_headers.iter().flatten() {
        let header = HeaderName::from_bytes(name.as_bytes()).map_err(|_| {
            format!(
                "net/http: invalid header field name {}",
                ferrite_model::goquote::quote(name)
            )
        })?;
        let canonical = ferrite_config::http_client::canonical_header_key(name);
        for v in &h.values {
            let value = HeaderValue::from_str(v).map_err(|_| {
                format!(
                    "net/http: invalid header field value for {}",
                    ferrite_model::goquote::quote(&canonical)
                )
            })?;
            out.push((header.clone(), value));
        }
        for s in &h.secrets {
            out.push((header.clone(), sensitive(s.expose(), &canonical)?));
        }
        for f in &h.files {
            let text = read_file_trimmed(f)
                .map_err(|e| format!("unable to read headers file {f}: {e}"))?;
            out.push((header.clone(), sensitive(&text, &canonical)?));
        }
    }
    Ok(out)
}

/// The `Authorization` header of `authorization` or `basic_auth`, their
/// files read now.
fn authorization(cfg: &HttpClientConfig) -> Result<Option<HeaderValue>, String> {
    if let Some(a) = &cfg.authorization {
        let credentials = secret_text(a.credentials_source())
            .map_err(|e| format!("unable to read authorization credentials: {e}"))?;
        let value = format!("{} {credentials}", a.auth_type);
        return sensitive(&value, "Authorization").map(Some);
    }
    if let Some(b) = &cfg.basic_auth {
        let username = secret_text(b.username_source())
            .map_err(|e| format!("unable to read basic auth username: {e}"))?;
        let password = secret_text(b.password_source())
            .map_err(|e| format!("unable to read basic auth password: {e}"))?;
        let encoded =
            base64::engine::general_purpose::STANDARD.encode(format!("{username}:{password}"));
        return sensitive(&format!("Basic {encoded}"), "Authorization").map(Some);
    }
    Ok(None)
}

/// A secret's text now: inline, or its file's (trimmed); "" when unset.
fn secret_text(source: Option<SecretSource<'_>>) -> Result<String, String> {
    match source {
        None | Some(SecretSource::Ref(_)) => Ok(String::new()),
        Some(SecretSource::Inline(s)) => Ok(s.to_string()),
        Some(SecretSource::File(f)) => read_secret_file(f),
    }
}

/// A secret file's contents without surrounding white space (Prometheus'
/// `FileSecret`), or `unable to read file <f>: <Go's error>`.
pub(crate) fn read_secret_file(path: &str) -> Result<String, String> {
    read_file_trimmed(path).map_err(|e| format!("unable to read file {path}: {e}"))
}

/// A file's contents, trimmed; the error as Go's `os.ReadFile` words it.
fn read_file_trimmed(path: &str) -> Result<String, String> {
    match std::fs::read(path) {
        Ok(bytes) => Ok(String::from_utf8_lossy(&bytes).trim().to_string()),
        Err(e) => {
            let op = if e.raw_os_error() == Some(libc::EISDIR) {
                "read"
            } else {
                "open"
            };
            let text = e.to_string();
            let text = match text.find(" (os error") {
                Some(i) => &text[..i],
                None => &text,
            };
            let mut chars = text.chars();
            let reason = match chars.next() {
                Some(c) => c.to_lowercase().chain(chars).collect(),
                None => String::new(),
            };
            Err(format!("{op} {path}: {reason}"))
        }
    }
}

#[cfg(test)]
mod tests;
