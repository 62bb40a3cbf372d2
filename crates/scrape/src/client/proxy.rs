//! A job's proxy settings as Go's HTTP transport applies them:
//!
//! - `proxy_url` alone: every request goes through it;
//! - `proxy_url` with `no_proxy`, and `proxy_from_environment`
//!   (`http_proxy`/`HTTP_PROXY`, `https_proxy`/`HTTPS_PROXY`,
//!   `no_proxy`/`NO_PROXY`, read when the client is built): the rules of
//!   Go's `x/net/http/httpproxy`: `localhost` and loopback addresses are
//!   never proxied; `no_proxy` holds `*`, IP addresses, CIDR networks and
//!   domains (`example.com` is it and its subdomains, `.example.com` only
//!   its subdomains), each with an optional port;
//! - `proxy_connect_header`: headers of the proxy requests.
//!
//! Nothing set: no proxy at all (reqwest's own reading of the environment
//! is switched off).

use std::net::IpAddr;

use ferrite_config::http_client::ProxyConfig;
use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
use reqwest::Url;

/// The proxy for a job's requests, if any.
pub(crate) fn proxy(cfg: &ProxyConfig) -> Result<Option<reqwest::Proxy>, String> {
    let proxy = if cfg.proxy_from_environment {
        let env = |names: [&str; 2]| {
            names
                .iter()
                .filter_map(|n| std::env::var(n).ok())
                .find(|v| !v.is_empty())
                .unwrap_or_default()
        };
        let rules = Rules::new(
            parse_env_proxy(&env(["http_proxy", "HTTP_PROXY"])),
            parse_env_proxy(&env(["https_proxy", "HTTPS_PROXY"])),
            &env(["no_proxy", "NO_PROXY"]),
        );
        reqwest::Proxy::custom(move |url| rules.proxy_for(url))
    } else if let Some(url) = cfg.url() {
        let parsed = Url::parse(url.as_str())
            .map_err(|e| format!("invalid proxy_url {}: {e}", redacted(url.host())))?;
        if cfg.no_proxy.is_empty() {
            reqwest::Proxy::all(parsed).map_err(|e| format!("invalid proxy_url: {e}"))?
        } else {
            let rules = Rules::new(Some(parsed.clone()), Some(parsed), &cfg.no_proxy);
            reqwest::Proxy::custom(move |url| rules.proxy_for(url))
        }
    } else {
        return Ok(None);
    };
    if cfg.proxy_connect_header.is_empty() {
        return Ok(Some(proxy));
    }
    let mut headers = HeaderMap::new();
    for (name, values) in &cfg.proxy_connect_header {
        let name = HeaderName::from_bytes(name.as_bytes()).map_err(|_| {
            format!(
                "net/http: invalid header field name {}",
                ferrite_model::goquote::quote(name)
            )
        })?;
        for v in values {
            let mut value = HeaderValue::from_str(v.expose())
                .map_err(|_| format!("net/http: invalid header field value for {name:?}"))?;
            value.set_sensitive(true);
            headers.append(name.clone(), value);
        }
    }
    Ok(Some(proxy.headers(headers)))
}

fn redacted(host: &str) -> String {
    format!("with host {host:?}")
}

/// An environment variable's proxy, as Go reads one: a URL, or a host
/// (and port) taken as an `http://` URL.
fn parse_env_proxy(text: &str) -> Option<Url> {
    if text.is_empty() {
        return None;
    }
    match Url::parse(text) {
        Ok(u) if u.has_host() => Some(u),
        _ => Url::parse(&format!("http://{text}")).ok(),
    }
}

/// Go's `httpproxy` rules: which proxy a request's URL goes through.
struct Rules {
    http: Option<Url>,
    https: Option<Url>,
    all: bool,
    networks: Vec<(IpAddr, u8)>,
    ips: Vec<(IpAddr, String)>,
    /// `.domain`, port, and whether the domain itself matches too.
    domains: Vec<(String, String, bool)>,
}

impl Rules {
    fn new(http: Option<Url>, https: Option<Url>, no_proxy: &str) -> Rules {
        let mut rules = Rules {
            http,
            https,
            all: false,
            networks: Vec::new(),
            ips: Vec::new(),
            domains: Vec::new(),
        };
        for entry in no_proxy.split(',') {
            let p = entry.trim().to_lowercase();
            if p.is_empty() {
                continue;
            }
            if p == "*" {
                rules.all = true;
                return rules;
            }
            if let Some(net) = parse_cidr(&p) {
                rules.networks.push(net);
                continue;
            }
            let (host, port) = match split_host_port(&p) {
                Some(("", _)) => continue,
                Some((h, port)) => (h.to_string(), port.to_string()),
                None => (p.clone(), String::new()),
            };
            if let Ok(ip) = host.parse::<IpAddr>() {
                rules.ips.push((ip, port));
                continue;
            }
            let host = host
                .strip_prefix("*.")
                .map_or(host.clone(), |h| format!(".{h}"));
            let (domain, match_host) = if host.starts_with('.') {
                (host, false)
            } else {
                (format!(".{host}"), true)
            };
            rules.domains.push((domain, port, match_host));
        }
        rules
    }

    fn proxy_for(&self, url: &Url) -> Option<Url> {
        let proxy = match url.scheme() {
            "https" => self.https.as_ref(),
            "http" => self.http.as_ref(),
            _ => None,
        }?;
        let host = url
            .host_str()?
            .trim_start_matches('[')
            .trim_end_matches(']');
        let port = url
            .port_or_known_default()
            .map_or(String::new(), |p| p.to_string());
        self.use_proxy(host, &port).then(|| proxy.clone())
    }

    fn use_proxy(&self, host: &str, port: &str) -> bool {
        if host == "localhost" {
            return false;
        }
        let ip = host.parse::<IpAddr>().ok();
        if ip.is_some_and(|ip| ip.is_loopback()) {
            return false;
        }
        if self.all {
            return false;
        }
        let host = host.trim().to_lowercase();
        if let Some(ip) = ip {
            if self
                .networks
                .iter()
                .any(|&(net, bits)| in_network(ip, net, bits))
            {
                return false;
            }
            if self
                .ips
                .iter()
                .any(|(rule, p)| *rule == ip && (p.is_empty() || p == port))
            {
                return false;
            }
            return true;
        }
        !self.domains.iter().any(|(domain, p, match_host)| {
            (host.ends_with(domain.as_str()) || (*match_host && host == domain[1..]))
                && (p.is_empty() || p == port)
        })
    }
}

/// `host:port` or `[host]:port` (Go's `net.SplitHostPort`), brackets off.
fn split_host_port(s: &str) -> Option<(&str, &str)> {
    if let Some(rest) = s.strip_prefix('[') {
        let (host, after) = rest.split_once(']')?;
        return Some((host, after.strip_prefix(':')?));
    }
    let (host, port) = s.rsplit_once(':')?;
    (!host.contains(':')).then_some((host, port))
}

fn parse_cidr(s: &str) -> Option<(IpAddr, u8)> {
    let (addr, bits) = s.split_once('/')?;
    let ip: IpAddr = addr.parse().ok()?;
    let bits: u8 = bits.parse().ok()?;
    let max = if ip.is_ipv4() { 32 } else { 128 };
    (bits <= max).then_some((ip, bits))
}

fn in_network(ip: IpAddr, net: IpAddr, bits: u8) -> bool {
    let (ip, net, width) = match (ip, net) {
        (IpAddr::V4(a), IpAddr::V4(n)) => (u32::from(a) as u128, u32::from(n) as u128, 32),
        (IpAddr::V6(a), IpAddr::V6(n)) => (u128::from(a), u128::from(n), 128),
        (IpAddr::V4(a), IpAddr::V6(n)) => (u128::from(a.to_ipv6_mapped()), u128::from(n), 128),
        (IpAddr::V6(a), IpAddr::V4(n)) => match a.to_ipv4_mapped() {
            Some(a) => (u32::from(a) as u128, u32::from(n) as u128, 32),
            None => return false,
        },
    };
    let shift = width - u32::from(bits);
    if shift >= 128 {
        return true;
    }
    (ip >> shift) == (net >> shift)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn url(s: &str) -> Url {
        Url::parse(s).expect(s)
    }

    #[test]
    fn no_proxy_rules_are_gos() {
        let proxy = url("http://proxy:3128");
        let rules = Rules::new(
            Some(proxy.clone()),
            Some(proxy.clone()),
            "example.com, .sub.org,10.0.0.0/8, 192.168.1.1, host:9100, *.star.net,[::2]:80",
        );
        for (target, proxied) in [
            ("http://localhost:9100/metrics", false),
            ("http://127.0.0.1:9100/metrics", false),
            ("http://[::1]:9100/metrics", false),
            ("http://example.com/", false),
            ("http://a.example.com/", false),
            ("http://notexample.com/", true),
            ("http://sub.org/", true),
            ("http://x.sub.org/", false),
            ("http://10.1.2.3:80/", false),
            ("http://11.1.2.3:80/", true),
            ("http://192.168.1.1:9100/", false),
            ("https://host:9100/", false),
            ("https://host:9200/", true),
            ("http://a.star.net/", false),
            ("http://star.net/", true),
            ("http://[::2]/", false),
            ("http://[::2]:81/", true),
            ("http://other/", true),
        ] {
            assert_eq!(rules.proxy_for(&url(target)).is_some(), proxied, "{target}");
        }
        let all = Rules::new(Some(proxy.clone()), None, "*");
        assert!(all.proxy_for(&url("http://other/")).is_none());
        // HTTP_PROXY serves http, HTTPS_PROXY https.
        let http_only = Rules::new(Some(proxy), None, "");
        assert!(http_only.proxy_for(&url("http://other/")).is_some());
        assert!(http_only.proxy_for(&url("https://other/")).is_none());
    }

    #[test]
    fn environment_proxies_may_lack_a_scheme() {
        assert_eq!(
            parse_env_proxy("proxy:3128").map(|u| u.to_string()),
            Some("http://proxy:3128/".to_string())
        );
        assert_eq!(
            parse_env_proxy("https://p:1").map(|u| u.to_string()),
            Some("https://p:1/".to_string())
        );
        assert_eq!(parse_env_proxy(""), None);
    }
}
