//! A scrape job's HTTP client settings, as Prometheus v3.16.0 reads them
//! (`HTTPClientConfig` of `github.com/prometheus/common` v0.72.1, inlined
//! in a scrape job):
//!
//! ```yaml
//! basic_auth: {username: u, password_file: pw}    # or username_file, password
//! authorization: {type: Bearer, credentials_file: token}   # or credentials
//! bearer_token_file: token      # deprecated, still accepted: authorization
//! oauth2: {client_id: c, client_secret_file: s, token_url: https://..., scopes: [a]}
//! tls_config: {ca_file: ca.pem, cert_file: c.pem, key_file: k.pem,
//!              server_name: x, insecure_skip_verify: false,
//!              min_version: TLS12, max_version: TLS13}
//! proxy_url: http://proxy:3128  # with no_proxy, or proxy_from_environment
//! proxy_connect_header: {X-A: [secret]}
//! follow_redirects: true        # default true
//! enable_http2: true            # default true
//! http_headers: {X-Tenant: {values: [a], secrets: [s], files: [f]}}
//! ```
//!
//! Checked as Prometheus checks them, with its messages and in its order:
//! a `tls_config`, a TLS version, a proxy URL and an `oauth2` block's proxy
//! settings while decoding (in file order with the other decoding errors),
//! the rest once the job is read ([`validate`], before the job's own
//! checks). `bearer_token` and `bearer_token_file` become an
//! `authorization` of type `Bearer`, as Prometheus turns them.
//!
//! Secrets (passwords, credentials, keys, client secrets, header secrets)
//! are [`Secret`]s: their `Debug` shows `<secret>`, never the text. File
//! names are made relative to the configuration file's directory by
//! [`crate::Config::load`] ([`HttpClientConfig::files_mut`]), as
//! Prometheus' `SetDirectory` does (not `oauth2.client_certificate_key_file`,
//! which Prometheus leaves as written either).
//!
//! The `*_ref` settings (secrets from a secret manager) are read: Prometheus
//! has no secret manager in its server, so a job using one fails when its
//! client is built, there and in Ferrite. What Ferrite cannot do at all is
//! named by [`HttpClientConfig::unsupported`].

pub(crate) mod gourl;

use std::collections::BTreeMap;

use serde::de::{self, Deserializer, IgnoredAny};
use serde::Deserialize;

use crate::relabel::go_quote;
use crate::yaml::GoString;

/// A secret setting's text: shown as `<secret>` (empty: `""`) by `Debug`.
#[derive(Clone, PartialEq, Eq, Default)]
pub struct Secret(String);

impl Secret {
    /// A secret holding `text`.
    pub fn new(text: impl Into<String>) -> Self {
        Secret(text.into())
    }

    /// The text itself, for the request that needs it.
    pub fn expose(&self) -> &str {
        &self.0
    }

    /// Whether it is empty (not set).
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(if self.0.is_empty() {
            "\"\""
        } else {
            "<secret>"
        })
    }
}

impl<'de> Deserialize<'de> for Secret {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        GoString::deserialize(d).map(|GoString(s)| Secret(s))
    }
}

/// Where a secret (or a user name) comes from: the one setting of its
/// inline text, file and reference that is set.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum SecretSource<'a> {
    /// Given in the file.
    Inline(&'a str),
    /// Read from this file, trimmed of white space, at each use.
    File(&'a str),
    /// A secret manager's reference (Prometheus' server has no manager).
    Ref(&'a str),
}

impl std::fmt::Debug for SecretSource<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SecretSource::Inline(_) => f.write_str("Inline(<secret>)"),
            SecretSource::File(file) => write!(f, "File({file:?})"),
            SecretSource::Ref(r) => write!(f, "Ref({r:?})"),
        }
    }
}

/// The source set among `inline`, `file` and `reference` (checked to be
/// at most one), in Prometheus' order of preference.
fn source_of<'a>(inline: &'a str, file: &'a str, reference: &'a str) -> Option<SecretSource<'a>> {
    if !inline.is_empty() {
        Some(SecretSource::Inline(inline))
    } else if !file.is_empty() {
        Some(SecretSource::File(file))
    } else if !reference.is_empty() {
        Some(SecretSource::Ref(reference))
    } else {
        None
    }
}

/// How many of `set` are true.
fn count(set: &[bool]) -> usize {
    set.iter().filter(|&&s| s).count()
}

fn text(v: Option<GoString>) -> String {
    v.map(|GoString(s)| s).unwrap_or_default()
}

fn secret(v: Option<Secret>) -> Secret {
    v.unwrap_or_default()
}

/// `basic_auth`.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct BasicAuth {
    /// `username`.
    pub username: String,
    /// `username_file`.
    pub username_file: String,
    /// `username_ref`.
    pub username_ref: String,
    /// `password`.
    pub password: Secret,
    /// `password_file`.
    pub password_file: String,
    /// `password_ref`.
    pub password_ref: String,
}

impl BasicAuth {
    /// Where the user name comes from (`None`: empty).
    pub fn username_source(&self) -> Option<SecretSource<'_>> {
        source_of(&self.username, &self.username_file, &self.username_ref)
    }

    /// Where the password comes from (`None`: empty).
    pub fn password_source(&self) -> Option<SecretSource<'_>> {
        source_of(
            self.password.expose(),
            &self.password_file,
            &self.password_ref,
        )
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawBasicAuth {
    username: Option<GoString>,
    username_file: Option<GoString>,
    username_ref: Option<GoString>,
    password: Option<Secret>,
    password_file: Option<GoString>,
    password_ref: Option<GoString>,
}

impl<'de> Deserialize<'de> for BasicAuth {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let r = RawBasicAuth::deserialize(d)?;
        Ok(BasicAuth {
            username: text(r.username),
            username_file: text(r.username_file),
            username_ref: text(r.username_ref),
            password: secret(r.password),
            password_file: text(r.password_file),
            password_ref: text(r.password_ref),
        })
    }
}

/// `authorization` (and `bearer_token`, `bearer_token_file`, which become
/// one of type `Bearer`).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Authorization {
    /// `type`: the header's scheme, `Bearer` when not given (trimmed).
    pub auth_type: String,
    /// `credentials`.
    pub credentials: Secret,
    /// `credentials_file`.
    pub credentials_file: String,
    /// `credentials_ref`.
    pub credentials_ref: String,
}

impl Authorization {
    /// Where the credentials come from (`None`: empty).
    pub fn credentials_source(&self) -> Option<SecretSource<'_>> {
        source_of(
            self.credentials.expose(),
            &self.credentials_file,
            &self.credentials_ref,
        )
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawAuthorization {
    #[serde(rename = "type")]
    auth_type: Option<GoString>,
    credentials: Option<Secret>,
    credentials_file: Option<GoString>,
    credentials_ref: Option<GoString>,
}

impl<'de> Deserialize<'de> for Authorization {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let r = RawAuthorization::deserialize(d)?;
        Ok(Authorization {
            auth_type: text(r.auth_type),
            credentials: secret(r.credentials),
            credentials_file: text(r.credentials_file),
            credentials_ref: text(r.credentials_ref),
        })
    }
}

/// A TLS protocol version (`min_version`, `max_version`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum TlsVersion {
    /// `TLS10`.
    Tls10,
    /// `TLS11`.
    Tls11,
    /// `TLS12`.
    Tls12,
    /// `TLS13`.
    Tls13,
}

impl TlsVersion {
    /// The name in configuration files.
    pub fn name(self) -> &'static str {
        match self {
            TlsVersion::Tls10 => "TLS10",
            TlsVersion::Tls11 => "TLS11",
            TlsVersion::Tls12 => "TLS12",
            TlsVersion::Tls13 => "TLS13",
        }
    }
}

impl<'de> Deserialize<'de> for TlsVersion {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let GoString(name) = GoString::deserialize(d)?;
        [
            TlsVersion::Tls10,
            TlsVersion::Tls11,
            TlsVersion::Tls12,
            TlsVersion::Tls13,
        ]
        .into_iter()
        .find(|v| v.name() == name)
        .ok_or_else(|| de::Error::custom(format!("unknown TLS version: {name}")))
    }
}

/// `tls_config`.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct TlsConfig {
    /// `ca`: PEM text of the CA certificates.
    pub ca: String,
    /// `cert`: PEM text of the client certificate.
    pub cert: String,
    /// `key`: PEM text of the client key.
    pub key: Secret,
    /// `ca_file`.
    pub ca_file: String,
    /// `cert_file`.
    pub cert_file: String,
    /// `key_file`.
    pub key_file: String,
    /// `ca_ref`.
    pub ca_ref: String,
    /// `cert_ref`.
    pub cert_ref: String,
    /// `key_ref`.
    pub key_ref: String,
    /// `server_name`: the name the server's certificate must have.
    pub server_name: String,
    /// `insecure_skip_verify`.
    pub insecure_skip_verify: bool,
    /// `min_version`.
    pub min_version: Option<TlsVersion>,
    /// `max_version`.
    pub max_version: Option<TlsVersion>,
}

impl TlsConfig {
    /// Where the CA certificates come from (`None`: the system's).
    pub fn ca_source(&self) -> Option<SecretSource<'_>> {
        source_of(&self.ca, &self.ca_file, &self.ca_ref)
    }

    /// Where the client certificate comes from.
    pub fn cert_source(&self) -> Option<SecretSource<'_>> {
        source_of(&self.cert, &self.cert_file, &self.cert_ref)
    }

    /// Where the client key comes from.
    pub fn key_source(&self) -> Option<SecretSource<'_>> {
        source_of(self.key.expose(), &self.key_file, &self.key_ref)
    }

    /// Prometheus' `TLSConfig.Validate`.
    fn validate(&self) -> Result<(), String> {
        let set = |s: &str| !s.is_empty();
        if count(&[set(&self.ca), set(&self.ca_file), set(&self.ca_ref)]) > 1 {
            return Err("at most one of ca, ca_file & ca_ref must be configured".into());
        }
        if count(&[set(&self.cert), set(&self.cert_file), set(&self.cert_ref)]) > 1 {
            return Err("at most one of cert, cert_file & cert_ref must be configured".into());
        }
        if count(&[
            !self.key.is_empty(),
            set(&self.key_file),
            set(&self.key_ref),
        ]) > 1
        {
            return Err("at most one of key and key_file must be configured".into());
        }
        match (self.cert_source().is_some(), self.key_source().is_some()) {
            (true, false) => Err(
                "exactly one of key or key_file must be configured when a client certificate is configured"
                    .into(),
            ),
            (false, true) => Err(
                "exactly one of cert or cert_file must be configured when a client key is configured"
                    .into(),
            ),
            _ => Ok(()),
        }
    }

    fn files_mut(&mut self) -> [&mut String; 3] {
        [&mut self.ca_file, &mut self.cert_file, &mut self.key_file]
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawTls {
    ca: Option<GoString>,
    cert: Option<GoString>,
    key: Option<Secret>,
    ca_file: Option<GoString>,
    cert_file: Option<GoString>,
    key_file: Option<GoString>,
    ca_ref: Option<GoString>,
    cert_ref: Option<GoString>,
    key_ref: Option<GoString>,
    server_name: Option<GoString>,
    insecure_skip_verify: Option<bool>,
    min_version: Option<TlsVersion>,
    max_version: Option<TlsVersion>,
}

impl<'de> Deserialize<'de> for TlsConfig {
    /// Reads and checks a `tls_config` (Prometheus checks it while
    /// decoding).
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let r = RawTls::deserialize(d)?;
        let tls = TlsConfig {
            ca: text(r.ca),
            cert: text(r.cert),
            key: secret(r.key),
            ca_file: text(r.ca_file),
            cert_file: text(r.cert_file),
            key_file: text(r.key_file),
            ca_ref: text(r.ca_ref),
            cert_ref: text(r.cert_ref),
            key_ref: text(r.key_ref),
            server_name: text(r.server_name),
            insecure_skip_verify: r.insecure_skip_verify.unwrap_or(false),
            min_version: r.min_version,
            max_version: r.max_version,
        };
        tls.validate().map_err(de::Error::custom)?;
        Ok(tls)
    }
}

/// `proxy_url`: a URL as Go's `url.Parse` reads it (checked while
/// decoding). Its `Debug` hides a password in it.
#[derive(Clone, PartialEq, Eq)]
pub struct ProxyUrl {
    text: String,
    parsed: gourl::GoUrl,
}

impl ProxyUrl {
    /// Parses `text` as Go does.
    pub fn parse(text: &str) -> Result<ProxyUrl, String> {
        gourl::parse(text).map(|parsed| ProxyUrl {
            text: text.to_string(),
            parsed,
        })
    }

    /// The URL as written (with any password: not for logs).
    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// Its scheme, lower-cased.
    pub fn scheme(&self) -> &str {
        &self.parsed.scheme
    }

    /// Its host and port, unescaped.
    pub fn host(&self) -> &str {
        &self.parsed.host
    }

    /// Its user name and password, unescaped.
    pub fn user(&self) -> Option<(&str, Option<&str>)> {
        self.parsed
            .user
            .as_ref()
            .map(|(u, p)| (u.as_str(), p.as_deref()))
    }

    /// Whether it reads as nothing (Go's `URL.String()` is empty): set,
    /// but no proxy.
    pub fn is_empty(&self) -> bool {
        self.parsed.empty
    }
}

impl std::fmt::Debug for ProxyUrl {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let user = match self.user() {
            Some((u, Some(_))) => format!("{u}:xxxxx@"),
            Some((u, None)) => format!("{u}@"),
            None => String::new(),
        };
        write!(f, "ProxyUrl({}://{user}{})", self.scheme(), self.host())
    }
}

impl<'de> Deserialize<'de> for ProxyUrl {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let GoString(text) = GoString::deserialize(d)?;
        ProxyUrl::parse(&text).map_err(de::Error::custom)
    }
}

/// The proxy settings (of a job, and of its `oauth2` token requests).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ProxyConfig {
    /// `proxy_url` (`None`: not set, or null).
    pub proxy_url: Option<ProxyUrl>,
    /// `no_proxy`: hosts, domains and networks not to proxy, comma-separated.
    pub no_proxy: String,
    /// `proxy_from_environment`: `HTTP_PROXY`, `HTTPS_PROXY`, `NO_PROXY`.
    pub proxy_from_environment: bool,
    /// `proxy_connect_header`: headers of the proxy's `CONNECT` requests.
    pub proxy_connect_header: BTreeMap<String, Vec<Secret>>,
}

impl ProxyConfig {
    fn from_raw(
        proxy_url: Option<ProxyUrl>,
        no_proxy: Option<GoString>,
        proxy_from_environment: Option<bool>,
        proxy_connect_header: Option<RawHeaderLists>,
    ) -> ProxyConfig {
        ProxyConfig {
            proxy_url,
            no_proxy: text(no_proxy),
            proxy_from_environment: proxy_from_environment.unwrap_or(false),
            proxy_connect_header: proxy_connect_header
                .unwrap_or_default()
                .into_iter()
                .map(|(GoString(name), values)| {
                    let values = values.unwrap_or_default().into_iter().map(secret);
                    (name, values.collect())
                })
                .collect(),
        }
    }

    /// The URL to proxy through, when one is set (and not empty).
    pub fn url(&self) -> Option<&ProxyUrl> {
        self.proxy_url.as_ref().filter(|u| !u.is_empty())
    }

    /// Prometheus' `ProxyConfig.Validate`.
    fn validate(&self) -> Result<(), String> {
        if !self.proxy_connect_header.is_empty()
            && !self.proxy_from_environment
            && self.url().is_none()
        {
            return Err("if proxy_connect_header is configured, proxy_url or proxy_from_environment must also be configured".into());
        }
        if self.proxy_from_environment && self.url().is_some() {
            return Err(
                "if proxy_from_environment is configured, proxy_url must not be configured".into(),
            );
        }
        if self.proxy_from_environment && !self.no_proxy.is_empty() {
            return Err(
                "if proxy_from_environment is configured, no_proxy must not be configured".into(),
            );
        }
        if self.proxy_url.is_none() && !self.no_proxy.is_empty() {
            return Err("if no_proxy is configured, proxy_url must also be configured".into());
        }
        Ok(())
    }
}

/// `proxy_connect_header` as written: name → secrets (either may be null).
pub(crate) type RawHeaderLists = BTreeMap<GoString, Option<Vec<Option<Secret>>>>;

/// The `urn:ietf:params:oauth:grant-type:jwt-bearer` grant type.
pub const JWT_BEARER_GRANT: &str = "urn:ietf:params:oauth:grant-type:jwt-bearer";

/// `oauth2`: a token from an OAuth 2.0 token endpoint for each request.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct OAuth2 {
    /// `client_id`.
    pub client_id: String,
    /// `client_secret`.
    pub client_secret: Secret,
    /// `client_secret_file`.
    pub client_secret_file: String,
    /// `client_secret_ref`.
    pub client_secret_ref: String,
    /// `client_certificate_key_id` (JWT bearer grant).
    pub client_certificate_key_id: String,
    /// `client_certificate_key` (JWT bearer grant).
    pub client_certificate_key: Secret,
    /// `client_certificate_key_file` (JWT bearer grant).
    pub client_certificate_key_file: String,
    /// `client_certificate_key_ref` (JWT bearer grant).
    pub client_certificate_key_ref: String,
    /// `grant_type`: client credentials unless [`JWT_BEARER_GRANT`].
    pub grant_type: String,
    /// `signature_algorithm` (JWT bearer grant).
    pub signature_algorithm: String,
    /// `iss` (JWT bearer grant).
    pub iss: String,
    /// `audience` (JWT bearer grant).
    pub audience: String,
    /// Whether `claims` (JWT bearer grant) are given.
    pub has_claims: bool,
    /// `scopes`.
    pub scopes: Vec<String>,
    /// `token_url`.
    pub token_url: String,
    /// `endpoint_params`: more parameters of the token request.
    pub endpoint_params: BTreeMap<String, String>,
    /// `tls_config` of the token requests.
    pub tls_config: TlsConfig,
    /// Proxy settings of the token requests.
    pub proxy: ProxyConfig,
}

impl OAuth2 {
    /// Where the client secret comes from (client credentials grant).
    pub fn client_secret_source(&self) -> Option<SecretSource<'_>> {
        source_of(
            self.client_secret.expose(),
            &self.client_secret_file,
            &self.client_secret_ref,
        )
    }

    /// Whether it uses the JWT bearer grant rather than client
    /// credentials.
    pub fn is_jwt_bearer(&self) -> bool {
        self.grant_type == JWT_BEARER_GRANT
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawOAuth2 {
    client_id: Option<GoString>,
    client_secret: Option<Secret>,
    client_secret_file: Option<GoString>,
    client_secret_ref: Option<GoString>,
    client_certificate_key_id: Option<GoString>,
    client_certificate_key: Option<Secret>,
    client_certificate_key_file: Option<GoString>,
    client_certificate_key_ref: Option<GoString>,
    grant_type: Option<GoString>,
    signature_algorithm: Option<GoString>,
    iss: Option<GoString>,
    audience: Option<GoString>,
    claims: Option<IgnoredAny>,
    scopes: Option<Vec<Option<GoString>>>,
    token_url: Option<GoString>,
    endpoint_params: Option<BTreeMap<GoString, Option<GoString>>>,
    tls_config: Option<TlsConfig>,
    proxy_url: Option<ProxyUrl>,
    no_proxy: Option<GoString>,
    proxy_from_environment: Option<bool>,
    proxy_connect_header: Option<RawHeaderLists>,
}

impl<'de> Deserialize<'de> for OAuth2 {
    /// Reads an `oauth2` block and checks its proxy settings (Prometheus
    /// does while decoding).
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let r = RawOAuth2::deserialize(d)?;
        let o = OAuth2 {
            client_id: text(r.client_id),
            client_secret: secret(r.client_secret),
            client_secret_file: text(r.client_secret_file),
            client_secret_ref: text(r.client_secret_ref),
            client_certificate_key_id: text(r.client_certificate_key_id),
            client_certificate_key: secret(r.client_certificate_key),
            client_certificate_key_file: text(r.client_certificate_key_file),
            client_certificate_key_ref: text(r.client_certificate_key_ref),
            grant_type: text(r.grant_type),
            signature_algorithm: text(r.signature_algorithm),
            iss: text(r.iss),
            audience: text(r.audience),
            has_claims: r.claims.is_some(),
            scopes: r.scopes.unwrap_or_default().into_iter().map(text).collect(),
            token_url: text(r.token_url),
            endpoint_params: r
                .endpoint_params
                .unwrap_or_default()
                .into_iter()
                .map(|(GoString(k), v)| (k, text(v)))
                .collect(),
            tls_config: r.tls_config.unwrap_or_default(),
            proxy: ProxyConfig::from_raw(
                r.proxy_url,
                r.no_proxy,
                r.proxy_from_environment,
                r.proxy_connect_header,
            ),
        };
        o.proxy.validate().map_err(de::Error::custom)?;
        Ok(o)
    }
}

/// One header of `http_headers`: each value is sent (in this order:
/// values, secrets, files' contents).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct HeaderConfig {
    /// `values`.
    pub values: Vec<String>,
    /// `secrets`.
    pub secrets: Vec<Secret>,
    /// `files`: read, trimmed of white space, for each request.
    pub files: Vec<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawHeader {
    values: Option<Vec<Option<GoString>>>,
    secrets: Option<Vec<Option<Secret>>>,
    files: Option<Vec<Option<GoString>>>,
}

impl<'de> Deserialize<'de> for HeaderConfig {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let r = RawHeader::deserialize(d)?;
        let texts = |v: Option<Vec<Option<GoString>>>| -> Vec<String> {
            v.unwrap_or_default().into_iter().map(text).collect()
        };
        Ok(HeaderConfig {
            values: texts(r.values),
            secrets: r
                .secrets
                .unwrap_or_default()
                .into_iter()
                .map(secret)
                .collect(),
            files: texts(r.files),
        })
    }
}

/// Headers Prometheus sets itself or that change the connection:
/// `http_headers` may not set them.
pub const RESERVED_HEADERS: [&str; 18] = [
    "Authorization",
    "Host",
    "Content-Encoding",
    "Content-Length",
    "Content-Type",
    "User-Agent",
    "Connection",
    "Keep-Alive",
    "Proxy-Authenticate",
    "Proxy-Authorization",
    "Www-Authenticate",
    "Accept-Encoding",
    "X-Prometheus-Remote-Write-Version",
    "X-Prometheus-Remote-Read-Version",
    "X-Prometheus-Scrape-Timeout-Seconds",
    "X-Amz-Date",
    "X-Amz-Security-Token",
    "X-Amz-Content-Sha256",
];

/// Go's `http.CanonicalHeaderKey`: `x-my-header` → `X-My-Header`; a name
/// with a byte that is not a token byte stays as it is.
pub fn canonical_header_key(name: &str) -> String {
    let token = |b: u8| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b);
    if !name.bytes().all(token) {
        return name.to_string();
    }
    let mut upper = true;
    name.bytes()
        .map(|b| {
            let c = if upper {
                b.to_ascii_uppercase()
            } else {
                b.to_ascii_lowercase()
            };
            upper = b == b'-';
            char::from(c)
        })
        .collect()
}

/// A job's HTTP client settings; see the module documentation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HttpClientConfig {
    /// `basic_auth`.
    pub basic_auth: Option<BasicAuth>,
    /// `authorization`, or what `bearer_token`/`bearer_token_file` give.
    pub authorization: Option<Authorization>,
    /// `oauth2`.
    pub oauth2: Option<OAuth2>,
    /// `tls_config`.
    pub tls_config: TlsConfig,
    /// `follow_redirects` (default true).
    pub follow_redirects: bool,
    /// `enable_http2` (default true).
    pub enable_http2: bool,
    /// `proxy_url`, `no_proxy`, `proxy_from_environment`,
    /// `proxy_connect_header`.
    pub proxy: ProxyConfig,
    /// `http_headers` by name as written (`None`: not set).
    pub http_headers: Option<BTreeMap<String, HeaderConfig>>,
}

impl Default for HttpClientConfig {
    /// Prometheus' `DefaultHTTPClientConfig`: redirects followed, HTTP/2
    /// offered.
    fn default() -> Self {
        HttpClientConfig {
            basic_auth: None,
            authorization: None,
            oauth2: None,
            tls_config: TlsConfig::default(),
            follow_redirects: true,
            enable_http2: true,
            proxy: ProxyConfig::default(),
            http_headers: None,
        }
    }
}

impl HttpClientConfig {
    /// The file names in the settings, to be made relative to the
    /// configuration file's directory (Prometheus' `SetDirectory`).
    pub fn files_mut(&mut self) -> Vec<&mut String> {
        let mut files: Vec<&mut String> = Vec::new();
        files.extend(self.tls_config.files_mut());
        if let Some(b) = &mut self.basic_auth {
            files.push(&mut b.password_file);
            files.push(&mut b.username_file);
        }
        if let Some(a) = &mut self.authorization {
            files.push(&mut a.credentials_file);
        }
        if let Some(o) = &mut self.oauth2 {
            files.push(&mut o.client_secret_file);
            files.extend(o.tls_config.files_mut());
        }
        for h in self.http_headers.iter_mut().flat_map(|h| h.values_mut()) {
            files.extend(h.files.iter_mut());
        }
        files
    }

    /// A setting Prometheus honours that Ferrite cannot: its name and why,
    /// for a server to refuse the file with (`None`: all are supported).
    pub fn unsupported(&self) -> Option<(&'static str, &'static str)> {
        if self.oauth2.as_ref().is_some_and(OAuth2::is_jwt_bearer) {
            return Some((
                "oauth2.grant_type",
                "the JWT bearer grant (urn:ietf:params:oauth:grant-type:jwt-bearer) is not supported by Ferrite; use the client credentials grant",
            ));
        }
        let below_tls12 = |t: &TlsConfig| t.max_version.is_some_and(|v| v < TlsVersion::Tls12);
        if below_tls12(&self.tls_config) {
            return Some((
                "tls_config.max_version",
                "TLS versions below 1.2 are not supported by Ferrite; set max_version to TLS12 or TLS13, or remove it",
            ));
        }
        if self
            .oauth2
            .as_ref()
            .is_some_and(|o| below_tls12(&o.tls_config))
        {
            return Some((
                "oauth2.tls_config.max_version",
                "TLS versions below 1.2 are not supported by Ferrite; set max_version to TLS12 or TLS13, or remove it",
            ));
        }
        None
    }
}

/// Declares a configuration struct as read from YAML: the given fields
/// followed by the HTTP client's settings, which Prometheus inlines
/// (`HTTPClientConfig`, `yaml:",inline"`) in scrape jobs, Alertmanager
/// sets and discoveries; and its `take_http_client`, which hands them to
/// [`validate`].
macro_rules! raw_with_http_client {
    ($(#[$meta:meta])* $vis:vis struct $name:ident { $($fields:tt)* }) => {
        $(#[$meta])*
        $vis struct $name {
            $($fields)*
            basic_auth: Option<$crate::http_client::BasicAuth>,
            authorization: Option<$crate::http_client::Authorization>,
            oauth2: Option<$crate::http_client::OAuth2>,
            bearer_token: Option<$crate::http_client::Secret>,
            bearer_token_file: Option<$crate::yaml::GoString>,
            tls_config: Option<$crate::http_client::TlsConfig>,
            #[serde(default, deserialize_with = "crate::yaml::present")]
            follow_redirects: Option<Option<bool>>,
            #[serde(default, deserialize_with = "crate::yaml::present")]
            enable_http2: Option<Option<bool>>,
            http_headers: Option<
                std::collections::BTreeMap<
                    $crate::yaml::GoString,
                    Option<$crate::http_client::HeaderConfig>,
                >,
            >,
            proxy_url: Option<$crate::http_client::ProxyUrl>,
            no_proxy: Option<$crate::yaml::GoString>,
            proxy_from_environment: Option<bool>,
            proxy_connect_header: Option<$crate::http_client::RawHeaderLists>,
        }

        impl $name {
            /// The HTTP client's settings, taken out for validation.
            fn take_http_client(&mut self) -> $crate::http_client::RawHttpClient {
                $crate::http_client::RawHttpClient {
                    basic_auth: self.basic_auth.take(),
                    authorization: self.authorization.take(),
                    oauth2: self.oauth2.take(),
                    bearer_token: self.bearer_token.take(),
                    bearer_token_file: self.bearer_token_file.take(),
                    tls_config: self.tls_config.take(),
                    follow_redirects: self.follow_redirects.take(),
                    enable_http2: self.enable_http2.take(),
                    http_headers: self.http_headers.take(),
                    proxy_url: self.proxy_url.take(),
                    no_proxy: self.no_proxy.take(),
                    proxy_from_environment: self.proxy_from_environment.take(),
                    proxy_connect_header: self.proxy_connect_header.take(),
                }
            }
        }
    };
}
pub(crate) use raw_with_http_client;

/// A job's HTTP client settings as written, decoded with the job.
#[derive(Default)]
pub(crate) struct RawHttpClient {
    pub basic_auth: Option<BasicAuth>,
    pub authorization: Option<Authorization>,
    pub oauth2: Option<OAuth2>,
    pub bearer_token: Option<Secret>,
    pub bearer_token_file: Option<GoString>,
    pub tls_config: Option<TlsConfig>,
    /// `Some(None)`: given as null (false, as Go decodes it).
    pub follow_redirects: Option<Option<bool>>,
    /// `Some(None)`: given as null (false).
    pub enable_http2: Option<Option<bool>>,
    pub http_headers: Option<BTreeMap<GoString, Option<HeaderConfig>>>,
    pub proxy_url: Option<ProxyUrl>,
    pub no_proxy: Option<GoString>,
    pub proxy_from_environment: Option<bool>,
    pub proxy_connect_header: Option<RawHeaderLists>,
}

/// Prometheus' `HTTPClientConfig.Validate`, its checks in its order, and
/// `bearer_token`/`bearer_token_file` turned into an `authorization`.
pub(crate) fn validate(raw: RawHttpClient) -> Result<HttpClientConfig, String> {
    let bearer_token = secret(raw.bearer_token);
    let bearer_token_file = text(raw.bearer_token_file);
    let bearer = !bearer_token.is_empty() || !bearer_token_file.is_empty();
    if !bearer_token.is_empty() && !bearer_token_file.is_empty() {
        return Err("at most one of bearer_token & bearer_token_file must be configured".into());
    }
    if (raw.basic_auth.is_some() || raw.oauth2.is_some()) && bearer {
        return Err("at most one of basic_auth, oauth2, bearer_token & bearer_token_file must be configured".into());
    }
    if let Some(b) = &raw.basic_auth {
        let set = |s: &str| !s.is_empty();
        if count(&[
            set(&b.username),
            set(&b.username_file),
            set(&b.username_ref),
        ]) > 1
        {
            return Err("at most one of basic_auth username, username_file & username_ref must be configured".into());
        }
        if count(&[
            !b.password.is_empty(),
            set(&b.password_file),
            set(&b.password_ref),
        ]) > 1
        {
            return Err("at most one of basic_auth password, password_file & password_ref must be configured".into());
        }
    }
    let mut authorization = raw.authorization;
    if let Some(a) = &mut authorization {
        if bearer {
            return Err(
                "authorization is not compatible with bearer_token & bearer_token_file".into(),
            );
        }
        if count(&[
            !a.credentials.is_empty(),
            !a.credentials_file.is_empty(),
            !a.credentials_ref.is_empty(),
        ]) > 1
        {
            return Err(
                "at most one of authorization credentials & credentials_file must be configured"
                    .into(),
            );
        }
        a.auth_type = match a.auth_type.trim() {
            "" => "Bearer".to_string(),
            t => t.to_string(),
        };
        if a.auth_type.to_lowercase() == "basic" {
            return Err(
                "authorization type cannot be set to \"basic\", use \"basic_auth\" instead".into(),
            );
        }
        if raw.basic_auth.is_some() || raw.oauth2.is_some() {
            return Err(
                "at most one of basic_auth, oauth2 & authorization must be configured".into(),
            );
        }
    } else if !bearer_token.is_empty() {
        authorization = Some(Authorization {
            auth_type: "Bearer".into(),
            credentials: bearer_token,
            ..Authorization::default()
        });
    } else if !bearer_token_file.is_empty() {
        authorization = Some(Authorization {
            auth_type: "Bearer".into(),
            credentials_file: bearer_token_file,
            ..Authorization::default()
        });
    }
    if let Some(o) = &raw.oauth2 {
        validate_oauth2(o, raw.basic_auth.is_some())?;
    }
    let proxy = ProxyConfig::from_raw(
        raw.proxy_url,
        raw.no_proxy,
        raw.proxy_from_environment,
        raw.proxy_connect_header,
    );
    proxy.validate()?;
    let http_headers = raw.http_headers.map(|hs| {
        hs.into_iter()
            .map(|(GoString(name), h)| (name, h.unwrap_or_default()))
            .collect::<BTreeMap<_, _>>()
    });
    for name in http_headers.iter().flat_map(|h| h.keys()) {
        let canonical = canonical_header_key(name);
        if RESERVED_HEADERS.contains(&canonical.as_str()) {
            return Err(format!(
                "setting header {} is not allowed",
                go_quote(&canonical)
            ));
        }
    }
    Ok(HttpClientConfig {
        basic_auth: raw.basic_auth,
        authorization,
        oauth2: raw.oauth2,
        tls_config: raw.tls_config.unwrap_or_default(),
        follow_redirects: raw.follow_redirects.is_none_or(|v| v.unwrap_or(false)),
        enable_http2: raw.enable_http2.is_none_or(|v| v.unwrap_or(false)),
        proxy,
        http_headers,
    })
}

fn validate_oauth2(o: &OAuth2, basic_auth: bool) -> Result<(), String> {
    if basic_auth {
        return Err("at most one of basic_auth, oauth2 & authorization must be configured".into());
    }
    if o.client_id.is_empty() {
        return Err("oauth2 client_id must be configured".into());
    }
    if o.token_url.is_empty() {
        return Err("oauth2 token_url must be configured".into());
    }
    if o.is_jwt_bearer() {
        if count(&[
            !o.client_certificate_key.is_empty(),
            !o.client_certificate_key_file.is_empty(),
            !o.client_certificate_key_ref.is_empty(),
        ]) > 1
        {
            return Err(format!("at most one of oauth2 client_certificate_key, client_certificate_key_file & client_certificate_key_ref must be configured using grant-type={JWT_BEARER_GRANT}"));
        }
        if !o.signature_algorithm.is_empty()
            && !["RS256", "RS384", "RS512"].contains(&o.signature_algorithm.as_str())
        {
            return Err("valid signature algorithms are RS256, RS384 and RS512".into());
        }
    } else if count(&[
        !o.client_secret.is_empty(),
        !o.client_secret_file.is_empty(),
        !o.client_secret_ref.is_empty(),
    ]) > 1
    {
        return Err("at most one of oauth2 client_secret, client_secret_file & client_secret_ref must be configured using grant-type=client_credentials".into());
    }
    Ok(())
}

#[cfg(test)]
mod tests;
