//! Times and durations as Go writes them (Prometheus' JSON, alert times,
//! template output, its own metrics' labels, its JSON log files): the
//! civil date of a Unix day, `time.Duration.String()`, and a UTC time in
//! `time.RFC3339Nano`.

use std::fmt::Write as _;

/// The proleptic Gregorian date (year, month 1-12, day 1-31) of a day
/// counted from 1970-01-01 (negative before).
pub fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m, d)
}

/// Appends `v`'s fraction of `prec` digits as Go does: trailing zeros
/// dropped, no point at all when the fraction is zero. Returns `v / 10^prec`.
fn frac(out: &mut String, v: u64, prec: u32) -> u64 {
    let scale = 10u64.pow(prec);
    let f = v % scale;
    if f != 0 {
        let digits = format!("{f:0width$}", width = prec as usize);
        out.push('.');
        out.push_str(digits.trim_end_matches('0'));
    }
    v / scale
}

/// Go's `time.Duration.String()` of `ns` nanoseconds: `2h0m0s`, `1m30.5s`,
/// `1.5ms`, `0s`.
pub fn format_duration_ns(ns: i64) -> String {
    let neg = ns < 0;
    let u = ns.unsigned_abs();
    let mut out = String::new();
    if neg {
        out.push('-');
    }
    if u < 1_000_000_000 {
        let (prec, unit) = match u {
            0 => return "0s".into(),
            1..1_000 => (0, "ns"),
            1_000..1_000_000 => (3, "µs"),
            _ => (6, "ms"),
        };
        let mut f = String::new();
        let whole = frac(&mut f, u, prec);
        let _ = write!(out, "{whole}{f}{unit}");
        return out;
    }
    let mut f = String::new();
    let secs = frac(&mut f, u, 9);
    let (h, m, s) = (secs / 3600, secs / 60 % 60, secs % 60);
    if h > 0 {
        let _ = write!(out, "{h}h");
    }
    if secs >= 60 {
        let _ = write!(out, "{m}m");
    }
    let _ = write!(out, "{s}{f}s");
    out
}

/// [`format_duration_ns`] of a [`std::time::Duration`] (`15s`, `1m0s`;
/// saturating past `i64::MAX` nanoseconds, as no Go duration goes further).
pub fn format_duration(d: std::time::Duration) -> String {
    format_duration_ns(i64::try_from(d.as_nanos()).unwrap_or(i64::MAX))
}

/// `t` in UTC as Go's `time.RFC3339Nano` formats it (the time of every
/// line `log/slog`'s JSON handler writes): `2027-01-15T08:00:00.04832181Z`,
/// nanoseconds without their trailing zeros, no fraction for a whole
/// second.
pub fn format_rfc3339_nano(t: std::time::SystemTime) -> String {
    let (secs, nanos) = match t.duration_since(std::time::UNIX_EPOCH) {
        Ok(d) => (
            i64::try_from(d.as_secs()).unwrap_or(i64::MAX),
            d.subsec_nanos(),
        ),
        Err(e) => {
            // Before 1970: a whole second earlier, plus the nanoseconds
            // from there.
            let d = e.duration();
            let secs = -i64::try_from(d.as_secs()).unwrap_or(i64::MAX);
            match d.subsec_nanos() {
                0 => (secs, 0),
                n => (secs - 1, 1_000_000_000 - n),
            }
        }
    };
    let (y, mo, d) = civil_from_days(secs.div_euclid(86_400));
    let of_day = secs.rem_euclid(86_400);
    let mut out = format!(
        "{y:04}-{mo:02}-{d:02}T{:02}:{:02}:{:02}",
        of_day / 3600,
        of_day / 60 % 60,
        of_day % 60
    );
    frac(&mut out, u64::from(nanos), 9);
    out.push('Z');
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, UNIX_EPOCH};

    #[test]
    fn rfc3339_nano_drops_trailing_zeros() {
        let at = |s: u64, n: u32| UNIX_EPOCH + Duration::new(s, n);
        assert_eq!(format_rfc3339_nano(at(0, 0)), "1970-01-01T00:00:00Z");
        assert_eq!(
            format_rfc3339_nano(at(1_800_000_000, 48_321_810)),
            "2027-01-15T08:00:00.04832181Z"
        );
        assert_eq!(
            format_rfc3339_nano(at(1_700_000_123, 500_000_000)),
            "2023-11-14T22:15:23.5Z"
        );
        assert_eq!(
            format_rfc3339_nano(UNIX_EPOCH - Duration::new(1, 250_000_000)),
            "1969-12-31T23:59:58.75Z"
        );
    }

    #[test]
    fn dates_of_days() {
        assert_eq!(civil_from_days(0), (1970, 1, 1));
        assert_eq!(civil_from_days(-1), (1969, 12, 31));
        assert_eq!(civil_from_days(19_723), (2024, 1, 1));
        assert_eq!(civil_from_days(19_782), (2024, 2, 29));
        assert_eq!(civil_from_days(-719_468), (0, 3, 1));
    }
    #[test]
    fn durations() {
        let ms = 1_000_000i64;
        let cases: &[(i64, &str)] = &[
            (0, "0s"),
            (1, "1ns"),
            (1_500, "1.5µs"),
            (500 * ms, "500ms"),
            (1_500_000, "1.5ms"),
            (1_000 * ms, "1s"),
            (1_500 * ms, "1.5s"),
            (60_000 * ms, "1m0s"),
            (90_500 * ms, "1m30.5s"),
            (7_200_000 * ms, "2h0m0s"),
            (7_199_999 * ms, "1h59m59.999s"),
            (14_985_000 * ms, "4h9m45s"),
            (-1_500 * ms, "-1.5s"),
            (i64::MIN, "-2562047h47m16.854775808s"),
            (i64::MAX, "2562047h47m16.854775807s"),
        ];
        for &(ns, want) in cases {
            assert_eq!(format_duration_ns(ns), want, "{ns}");
        }
    }
}
