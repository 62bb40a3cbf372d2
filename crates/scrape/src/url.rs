//! A target's scrape URL, written as Go's `url.URL.String()` writes the
//! URL Prometheus' `Target.URL()` builds: scheme, address and metrics path
//! from the target's labels, the query from the job's `params` with each
//! `__param_<name>` label replacing its first value.

use std::collections::BTreeMap;

use ferrite_model::Labels;

use crate::target::{ADDRESS_LABEL, METRICS_PATH_LABEL, PARAM_LABEL_PREFIX, SCHEME_LABEL};

/// The scrape URL of a target with final labels `labels` in a job with
/// `params`.
pub fn scrape_url(labels: &Labels, params: &BTreeMap<String, Vec<String>>) -> String {
    let mut query = params.clone();
    for l in labels.iter() {
        let Some(name) = l.name.strip_prefix(PARAM_LABEL_PREFIX) else {
            continue;
        };
        match query.get_mut(name) {
            Some(values) if !values.is_empty() => values[0] = l.value.to_string(),
            _ => {
                query.insert(name.to_string(), vec![l.value.to_string()]);
            }
        }
    }
    let mut url = String::new();
    let scheme = labels.get(SCHEME_LABEL);
    let host = labels.get(ADDRESS_LABEL);
    let path = labels.get(METRICS_PATH_LABEL);
    if !scheme.is_empty() {
        url.push_str(scheme);
        url.push(':');
    }
    if !scheme.is_empty() || !host.is_empty() {
        url.push_str("//");
        url.push_str(host);
    }
    if !path.is_empty() && !path.starts_with('/') && !host.is_empty() {
        url.push('/');
    }
    escape_into(path, false, &mut url);
    let mut first = true;
    for (name, values) in &query {
        for v in values {
            url.push(if first { '?' } else { '&' });
            first = false;
            escape_into(name, true, &mut url);
            url.push('=');
            escape_into(v, true, &mut url);
        }
    }
    url
}

/// Go's URL escaping: of a path (`url.URL.EscapedPath`) or of a query
/// component (`url.QueryEscape`, a space as `+`).
fn escape_into(s: &str, query: bool, out: &mut String) {
    const HEX: &[u8; 16] = b"0123456789ABCDEF";
    for &c in s.as_bytes() {
        let keep = c.is_ascii_alphanumeric()
            || matches!(c, b'-' | b'_' | b'.' | b'~')
            || (!query
                && matches!(
                    c,
                    b'$' | b'&' | b'+' | b',' | b'/' | b':' | b';' | b'=' | b'@'
                ));
        if keep {
            out.push(c as char);
        } else if query && c == b' ' {
            out.push('+');
        } else {
            out.push('%');
            out.push(HEX[usize::from(c >> 4)] as char);
            out.push(HEX[usize::from(c & 15)] as char);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_as_go_writes_them() {
        let labels = Labels::new([
            ("__address__", "h:9100"),
            ("__metrics_path__", "/a b!"),
            ("__scheme__", "http"),
            ("__param_module", "x&y"),
        ]);
        let mut params = BTreeMap::new();
        params.insert(
            "module".to_string(),
            vec!["old".to_string(), "2".to_string()],
        );
        params.insert("a".to_string(), vec!["1 2".to_string()]);
        assert_eq!(
            scrape_url(&labels, &params),
            "http://h:9100/a%20b%21?a=1+2&module=x%26y&module=2"
        );
        let labels = Labels::new([
            ("__address__", "h"),
            ("__metrics_path__", "m"),
            ("__scheme__", "https"),
        ]);
        assert_eq!(scrape_url(&labels, &BTreeMap::new()), "https://h/m");
    }
}
