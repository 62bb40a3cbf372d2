//! Go's text formatting, as promtool's output uses it.
//!
//! Users diff `ferrite tsdb` output against promtool's and feed it to the
//! same scripts, so the values are spelled as Go spells them: `%g` floats
//! (`1e+06`, `+Inf`), `strconv.Quote`d label values, `time.Duration` and
//! `time.Time` strings, `units.Base2Bytes` sizes, and `text/tabwriter`
//! columns. Each helper is small and tested against strings Go printed.

use ferrite_model::Labels;

/// Go's `strconv.Quote` (see [`ferrite_model::goquote`]).
pub fn go_quote(s: &str, out: &mut String) {
    ferrite_model::goquote::quote_into(s, out);
}

/// Prometheus' `labels.Labels.String()`: `{a="1", b="2"}`.
pub fn labels_string(ls: &Labels) -> String {
    let mut out = String::with_capacity(64);
    out.push('{');
    for (i, l) in ls.iter().enumerate() {
        if i > 0 {
            out.push_str(", ");
        }
        if ferrite_model::is_legacy_label_name(l.name.as_bytes()) {
            out.push_str(&l.name);
        } else {
            go_quote(&l.name, &mut out);
        }
        out.push('=');
        go_quote(&l.value, &mut out);
    }
    out.push('}');
    out
}

/// Go's `time.Duration.String()` (see [`ferrite_model::gotime`]).
pub use ferrite_model::gotime::format_duration_ns as go_duration;

/// Go's `time.Unix(ms/1000, 0).UTC().String()`: `2023-11-14 22:13:20 +0000 UTC`.
pub fn go_utc_time(ms: i64) -> String {
    // Go divides toward zero, as Rust does.
    use chrono::Datelike;
    match chrono::DateTime::from_timestamp(ms / 1000, 0) {
        // Go writes the year as a plain number (no `+` past 9999), at least
        // four digits.
        Some(t) => {
            let y = t.year();
            let year = if y < 0 {
                format!("-{:04}", y.unsigned_abs())
            } else {
                format!("{y:04}")
            };
            format!("{year}-{}", t.format("%m-%d %H:%M:%S +0000 UTC"))
        }
        None => format!("{ms}ms"),
    }
}

/// Lays out rows as Go's `text/tabwriter` does with promtool's settings
/// (`minwidth` 13, padding 2, spaces, left-aligned) for rows of equally
/// many cells: every cell but a row's last is padded to its column's width,
/// the widest cell plus the padding, at least `minwidth`.
pub fn tabwrite(rows: &[Vec<String>], minwidth: usize, padding: usize) -> String {
    let cols = rows.iter().map(Vec::len).max().unwrap_or(0);
    let mut widths = vec![minwidth; cols.saturating_sub(1)];
    for row in rows {
        for (i, cell) in row.iter().enumerate().take(widths.len()) {
            widths[i] = widths[i].max(cell.chars().count() + padding);
        }
    }
    let mut out = String::new();
    for row in rows {
        for (i, cell) in row.iter().enumerate() {
            out.push_str(cell);
            if let Some(&w) = widths.get(i) {
                if i + 1 < row.len() {
                    out.push_str(&" ".repeat(w - cell.chars().count()));
                }
            }
        }
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    // The expected strings were printed by Go 1.26 (fmt, strconv, time,
    // text/tabwriter, alecthomas/units).

    #[test]
    fn quoting() {
        let q = |s: &str| {
            let mut out = String::new();
            go_quote(s, &mut out);
            out
        };
        assert_eq!(q("host-1"), r#""host-1""#);
        assert_eq!(q("a\"b\\c"), r#""a\"b\\c""#);
        assert_eq!(q("tab\tnl\n\u{7}\u{0}\u{7f}"), r#""tab\tnl\n\a\x00\x7f""#);
        assert_eq!(q("héllo ✓ 日本"), "\"héllo ✓ 日本\"");
        assert_eq!(q("e\u{301}"), "\"e\u{301}\"");
        assert_eq!(q("\u{a0}\u{200b}\u{feff}"), r#""\u00a0\u200b\ufeff""#);
        assert_eq!(q("\u{e0001}\u{1f600}"), "\"\\U000e0001\u{1f600}\"");
        assert_eq!(q("'"), r#""'""#);
    }

    #[test]
    fn labels() {
        let ls = Labels::from_pairs(&[("__name__", "up"), ("job", "a\"b"), ("service.name", "x")]);
        assert_eq!(
            labels_string(&ls),
            r#"{__name__="up", job="a\"b", "service.name"="x"}"#
        );
        assert_eq!(labels_string(&Labels::default()), "{}");
    }

    #[test]
    fn utc_times() {
        assert_eq!(
            go_utc_time(1_700_000_000_000),
            "2023-11-14 22:13:20 +0000 UTC"
        );
        assert_eq!(go_utc_time(0), "1970-01-01 00:00:00 +0000 UTC");
        assert_eq!(
            go_utc_time(1_700_000_000_999),
            "2023-11-14 22:13:20 +0000 UTC"
        );
        assert_eq!(go_utc_time(-1), "1970-01-01 00:00:00 +0000 UTC");
        assert_eq!(go_utc_time(-1_500), "1969-12-31 23:59:59 +0000 UTC");
        assert_eq!(
            go_utc_time(951_782_400_000),
            "2000-02-29 00:00:00 +0000 UTC"
        );
        assert_eq!(
            go_utc_time(253_402_300_800_000),
            "10000-01-01 00:00:00 +0000 UTC"
        );
    }

    #[test]
    fn tabwriter() {
        let rows = vec![
            vec!["BLOCK ULID".to_string(), "MIN".into(), "SIZE".into()],
            vec![
                "01ABCDEFGHJKMNPQRSTVWXYZ00".into(),
                "1".into(),
                "123".into(),
            ],
        ];
        assert_eq!(
            tabwrite(&rows, 13, 2),
            "BLOCK ULID                  MIN          SIZE\n\
             01ABCDEFGHJKMNPQRSTVWXYZ00  1            123\n"
        );
    }
}
