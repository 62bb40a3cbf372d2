//! Go's `url.Parse` as far as `proxy_url` needs it: which texts it
//! refuses, with its messages (`parse "<url>": <reason>`), and the parts
//! Ferrite uses (scheme, user, host).
//!
//! Written from the behaviour of Go 1.26's `net/url`: control bytes, a
//! scheme starting with `:`, bad `%` escapes, bad hosts and ports, bad
//! user information and a colon in a relative URL's first segment are
//! errors; anything else parses (as Go's parser, it accepts relative
//! URLs).

use ferrite_model::goquote::{quote as go_quote, quote_bytes};

/// A parsed URL's parts Ferrite uses.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(crate) struct GoUrl {
    /// The scheme, lower-cased ("" for none).
    pub scheme: String,
    /// The user name and password of the authority, unescaped.
    pub user: Option<(String, Option<String>)>,
    /// The host (with its port), unescaped ("" for none).
    pub host: String,
    /// Whether Go's `URL.String()` is empty (the text is "" or "#").
    pub empty: bool,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Mode {
    Path,
    Host,
    Zone,
    UserPassword,
    Fragment,
}

/// Parses `raw` as `url.Parse` does.
pub(crate) fn parse(raw: &str) -> Result<GoUrl, String> {
    let (u, frag) = match raw.split_once('#') {
        Some((u, f)) => (u, Some(f)),
        None => (raw, None),
    };
    let mut url = parse_no_fragment(u).map_err(|e| format!("parse {}: {e}", go_quote(u)))?;
    if let Some(f) = frag {
        unescape(f.as_bytes(), Mode::Fragment)
            .map_err(|e| format!("parse {}: {e}", go_quote(raw)))?;
    }
    url.empty = u.is_empty() && frag.is_none_or(str::is_empty);
    Ok(url)
}

fn parse_no_fragment(raw: &str) -> Result<GoUrl, String> {
    if raw.bytes().any(|b| b < b' ' || b == 0x7f) {
        return Err("net/url: invalid control character in URL".to_string());
    }
    let mut url = GoUrl::default();
    if raw == "*" {
        return Ok(url);
    }
    let (scheme, rest) = scheme_of(raw)?;
    url.scheme = scheme.to_ascii_lowercase();
    let rest = if rest.ends_with('?') && rest.matches('?').count() == 1 {
        &rest[..rest.len() - 1]
    } else {
        rest.split_once('?').map_or(rest, |(before, _)| before)
    };
    if !rest.starts_with('/') {
        if !url.scheme.is_empty() {
            // An opaque URL (`scheme:rest`).
            return Ok(url);
        }
        let segment = rest.split_once('/').map_or(rest, |(s, _)| s);
        if segment.contains(':') {
            return Err("first path segment in URL cannot contain colon".to_string());
        }
    }
    let mut path = rest;
    if (!url.scheme.is_empty() || !rest.starts_with("///")) && rest.starts_with("//") {
        let authority_and_path = &rest[2..];
        let (authority, p) = match authority_and_path.find('/') {
            Some(i) => authority_and_path.split_at(i),
            None => (authority_and_path, ""),
        };
        path = p;
        let (user, host) = parse_authority(&url.scheme, authority)?;
        url.user = user;
        url.host = host;
    }
    unescape(path.as_bytes(), Mode::Path)?;
    Ok(url)
}

/// `scheme:rest`, or no scheme.
fn scheme_of(raw: &str) -> Result<(&str, &str), String> {
    for (i, c) in raw.bytes().enumerate() {
        match c {
            b'a'..=b'z' | b'A'..=b'Z' => {}
            b'0'..=b'9' | b'+' | b'-' | b'.' if i > 0 => {}
            b':' if i == 0 => return Err("missing protocol scheme".to_string()),
            b':' => return Ok((&raw[..i], &raw[i + 1..])),
            _ => return Ok(("", raw)),
        }
    }
    Ok(("", raw))
}

type User = Option<(String, Option<String>)>;

fn parse_authority(scheme: &str, authority: &str) -> Result<(User, String), String> {
    let at = authority.rfind('@');
    let host = parse_host(scheme, at.map_or(authority, |i| &authority[i + 1..]))?;
    let Some(at) = at else {
        return Ok((None, host));
    };
    let userinfo = &authority[..at];
    if !userinfo
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || "-._:~!$&'()*+,;=%@".contains(c))
    {
        return Err("net/url: invalid userinfo".to_string());
    }
    let text = |s: &str| -> Result<String, String> {
        let b = unescape(s.as_bytes(), Mode::UserPassword)?;
        Ok(String::from_utf8_lossy(&b).into_owned())
    };
    let user = match userinfo.split_once(':') {
        None => (text(userinfo)?, None),
        Some((name, password)) => (text(name)?, Some(text(password)?)),
    };
    Ok((Some(user), host))
}

fn parse_host(scheme: &str, host: &str) -> Result<String, String> {
    match host.rfind('[') {
        Some(i) if i > 0 => Err("invalid IP-literal".to_string()),
        Some(_) => {
            let close = host.rfind(']').ok_or("missing ']' in host")?;
            let colon_port = &host[close + 1..];
            if !valid_optional_port(colon_port) {
                return Err(format!("invalid port {} after host", go_quote(colon_port)));
            }
            let port = unescape(colon_port.as_bytes(), Mode::Host)?;
            let inner = &host[1..close];
            let (addr, zone) = match inner.find("%25") {
                Some(z) => (
                    unescape(&inner.as_bytes()[..z], Mode::Host)?,
                    unescape(&inner.as_bytes()[z..], Mode::Zone)?,
                ),
                None => (unescape(inner.as_bytes(), Mode::Host)?, Vec::new()),
            };
            let addr_text = String::from_utf8_lossy(&addr).into_owned();
            let zone_text = String::from_utf8_lossy(&zone).into_owned();
            if addr_text.parse::<std::net::Ipv4Addr>().is_ok() {
                return Err("invalid IP-literal".to_string());
            }
            if addr_text.parse::<std::net::Ipv6Addr>().is_err() {
                return Err(format!(
                    "invalid host: ParseAddr({}): unable to parse IP",
                    go_quote(&format!("{addr_text}{zone_text}"))
                ));
            }
            Ok(format!(
                "[{addr_text}{zone_text}]{}",
                String::from_utf8_lossy(&port)
            ))
        }
        None => {
            if let Some(first) = host.find(':') {
                let last = host.rfind(':').unwrap_or(first);
                // Go is strict about colons for http and https hosts only.
                let i = if scheme == "http" || scheme == "https" {
                    first
                } else {
                    last
                };
                let colon_port = &host[i..];
                if !valid_optional_port(colon_port) {
                    return Err(format!("invalid port {} after host", go_quote(colon_port)));
                }
            }
            let b = unescape(host.as_bytes(), Mode::Host)?;
            Ok(String::from_utf8_lossy(&b).into_owned())
        }
    }
}

/// "" or `:` and digits.
fn valid_optional_port(port: &str) -> bool {
    port.is_empty()
        || port
            .strip_prefix(':')
            .is_some_and(|p| p.bytes().all(|b| b.is_ascii_digit()))
}

/// Whether Go's URL encoder escapes `c` in a host (or zone).
fn host_escapes(c: u8) -> bool {
    !(c.is_ascii_alphanumeric() || b"!$&'()*+,;=:[]<>\"-_.~".contains(&c))
}

fn hex_value(c: u8) -> Option<u8> {
    match c {
        b'0'..=b'9' => Some(c - b'0'),
        b'a'..=b'f' => Some(c - b'a' + 10),
        b'A'..=b'F' => Some(c - b'A' + 10),
        _ => None,
    }
}

/// Decodes `%XX` escapes, refusing bad ones as Go does for `mode`.
fn unescape(s: &[u8], mode: Mode) -> Result<Vec<u8>, String> {
    let escape_error = |bytes: &[u8]| format!("invalid URL escape {}", quote_bytes(bytes));
    let mut out = Vec::with_capacity(s.len());
    let mut i = 0;
    while i < s.len() {
        let c = s[i];
        if c == b'%' {
            let digits = (s.get(i + 1).copied().and_then(hex_value))
                .zip(s.get(i + 2).copied().and_then(hex_value));
            let Some((hi, lo)) = digits else {
                return Err(escape_error(&s[i..(i + 3).min(s.len())]));
            };
            let seq = &s[i..i + 3];
            let v = hi << 4 | lo;
            if mode == Mode::Host && hi < 8 && seq != b"%25" {
                return Err(escape_error(seq));
            }
            if mode == Mode::Zone && seq != b"%25" && v != b' ' && host_escapes(v) {
                return Err(escape_error(seq));
            }
            out.push(v);
            i += 3;
            continue;
        }
        if matches!(mode, Mode::Host | Mode::Zone) && c < 0x80 && host_escapes(c) {
            return Err(format!(
                "invalid character {} in host name",
                quote_bytes(&s[i..i + 1])
            ));
        }
        out.push(c);
        i += 1;
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn go_url_errors() {
        for (raw, want) in [
            ("http://[::1", "parse \"http://[::1\": missing ']' in host"),
            (":foo", "parse \":foo\": missing protocol scheme"),
            (
                "http://a b",
                "parse \"http://a b\": invalid character \" \" in host name",
            ),
            ("%zz", "parse \"%zz\": invalid URL escape \"%zz\""),
            ("a%2", "parse \"a%2\": invalid URL escape \"%2\""),
            (
                "http://h:x",
                "parse \"http://h:x\": invalid port \":x\" after host",
            ),
            (
                "http://h:1:2",
                "parse \"http://h:1:2\": invalid port \":1:2\" after host",
            ),
            (
                "1a:b/c",
                "parse \"1a:b/c\": first path segment in URL cannot contain colon",
            ),
            (
                "http://u\"s@h",
                "parse \"http://u\\\"s@h\": net/url: invalid userinfo",
            ),
            (
                "http://h\n",
                "parse \"http://h\\n\": net/url: invalid control character in URL",
            ),
            (
                "http://x[::1]",
                "parse \"http://x[::1]\": invalid IP-literal",
            ),
            (
                "http://h/#%zz",
                "parse \"http://h/#%zz\": invalid URL escape \"%zz\"",
            ),
        ] {
            assert_eq!(parse(raw).expect_err(raw), want, "{raw}");
        }
    }

    #[test]
    fn go_url_parts() {
        let u = parse("HTTP://user:p%40ss@proxy.example:3128/x?y#z").expect("parses");
        assert_eq!(u.scheme, "http");
        assert_eq!(u.host, "proxy.example:3128");
        assert_eq!(u.user, Some(("user".to_string(), Some("p@ss".to_string()))));
        assert!(!u.empty);
        assert!(parse("").expect("empty").empty);
        assert!(parse("#").expect("empty").empty);
        assert_eq!(parse("socks5://[::1]:1080").expect("v6").host, "[::1]:1080");
        // Relative and opaque URLs parse, as in Go.
        for ok in ["5", "a:b", "/x", "http:x", "a%C3%A9"] {
            parse(ok).expect(ok);
        }
    }
}
