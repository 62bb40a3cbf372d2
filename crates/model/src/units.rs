//! Prometheus' durations (`model.Duration`: `90d`, `1h30m`, `500ms`) and
//! byte sizes (`units.Base2Bytes`: `512MB`, `1GiB`), as flags and the
//! configuration file spell them.

/// A duration or size that cannot be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum UnitsError {
    /// Nothing to read.
    #[error("empty duration string")]
    EmptyDuration,
    /// Not of the form `<int><unit>...` with units in descending order.
    #[error("not a valid duration string: {0:?}")]
    InvalidDuration(String),
    /// A unit that is not one of `y w d h m s ms`.
    #[error("unknown unit {unit:?} in duration {input:?}")]
    UnknownDurationUnit {
        /// The unit as written: everything between a number and the next.
        unit: String,
        /// The whole duration as written.
        input: String,
    },
    /// Beyond Go's `time.Duration` (64 bits of nanoseconds); the text
    /// does not name it, as in Prometheus.
    #[error("duration out of range")]
    DurationOutOfRange(String),
    /// Not a sequence of `<number><unit>`.
    #[error("units: invalid {0}")]
    InvalidSize(String),
    /// A unit that is not a byte unit (a number without one included).
    #[error("units: unknown unit {unit} in {input}")]
    UnknownUnit {
        /// The unit as written (empty when missing).
        unit: String,
        /// The whole size as written.
        input: String,
    },
    /// Beyond what 64 bits of bytes hold.
    #[error("units: overflow parsing unit")]
    SizeOverflow,
}

const SECOND: i64 = 1_000;
const MINUTE: i64 = 60 * SECOND;
const HOUR: i64 = 60 * MINUTE;
const DAY: i64 = 24 * HOUR;
const WEEK: i64 = 7 * DAY;
const YEAR: i64 = 365 * DAY;

/// The units of a duration, largest first, as they must appear.
const DURATION_UNITS: [(&str, i64); 7] = [
    ("y", YEAR),
    ("w", WEEK),
    ("d", DAY),
    ("h", HOUR),
    ("m", MINUTE),
    ("s", SECOND),
    ("ms", 1),
];

/// Parses a Prometheus duration into milliseconds as `model.ParseDuration`
/// (prometheus/common v0.72) does: `0`, or integers with units
/// `y w d h m s ms`, each at most once and largest first (`1d12h`, not
/// `12h1d`); the whole must fit in Go's `time.Duration` (nanoseconds in 64
/// bits, about 292 years). The errors are its texts.
pub fn parse_duration_ms(s: &str) -> Result<i64, UnitsError> {
    if s.is_empty() {
        return Err(UnitsError::EmptyDuration);
    }
    if s == "0" {
        return Ok(0);
    }
    let invalid = || UnitsError::InvalidDuration(s.to_string());
    let mut rest = s;
    let mut total_ns: u64 = 0;
    // Units must come in the table's order: the next one is searched from
    // after the last one used.
    let mut next_unit = 0;
    while !rest.is_empty() {
        let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
        if digits == 0 {
            return Err(invalid());
        }
        let n: u64 = rest[..digits].parse().map_err(|_| invalid())?;
        rest = &rest[digits..];
        // The unit is everything up to the next digit.
        let unit_len = rest.bytes().take_while(|b| !b.is_ascii_digit()).count();
        if unit_len == 0 {
            return Err(invalid());
        }
        let unit = &rest[..unit_len];
        let Some(index) = DURATION_UNITS.iter().position(|(u, _)| *u == unit) else {
            return Err(UnitsError::UnknownDurationUnit {
                unit: unit.to_string(),
                input: s.to_string(),
            });
        };
        if index < next_unit {
            return Err(invalid());
        }
        next_unit = index + 1;
        rest = &rest[unit_len..];
        let mult_ns = DURATION_UNITS[index].1 as u64 * 1_000_000;
        if n > (1u64 << 63) / mult_ns {
            return Err(UnitsError::DurationOutOfRange(s.to_string()));
        }
        total_ns += n * mult_ns;
        if total_ns > i64::MAX as u64 {
            return Err(UnitsError::DurationOutOfRange(s.to_string()));
        }
    }
    Ok((total_ns / 1_000_000) as i64)
}

/// A duration as Prometheus' `model.Duration` prints it: `0s`, `2h`,
/// `1d12h`, `90d` (years and weeks only when they divide it exactly).
pub fn format_duration_ms(ms: i64) -> String {
    if ms == 0 {
        return "0s".into();
    }
    let mut out = String::new();
    if ms < 0 {
        out.push('-');
    }
    let mut rest = ms.unsigned_abs();
    for (unit, mult) in DURATION_UNITS {
        let mult = mult.unsigned_abs();
        let exact_only = unit == "y" || unit == "w";
        if exact_only && !rest.is_multiple_of(mult) {
            continue;
        }
        let v = rest / mult;
        if v > 0 {
            out.push_str(&v.to_string());
            out.push_str(unit);
            rest -= v * mult;
        }
    }
    out
}

/// Parses a byte size as Go's `units.ParseBase2Bytes` does (the command
/// line's and the configuration's sizes): an optional sign, then one or
/// more `<number><unit>` (`1GiB512MiB`, `1.5GB`), the number possibly
/// fractional, the unit `B` or `KiB`..`EiB`, or else `B` or `KB`..`EB`
/// (both base 1024; exact case; `kB` is refused), or just `0`. A number
/// without a unit is refused, as in Prometheus. Errors read as Go's.
pub fn parse_base2_bytes(s: &str) -> Result<i64, UnitsError> {
    const IEC: [(&str, u32); 7] = [
        ("B", 0),
        ("KiB", 1),
        ("MiB", 2),
        ("GiB", 3),
        ("TiB", 4),
        ("PiB", 5),
        ("EiB", 6),
    ];
    const OLD: [(&str, u32); 7] = [
        ("B", 0),
        ("KB", 1),
        ("MB", 2),
        ("GB", 3),
        ("TB", 4),
        ("PB", 5),
        ("EB", 6),
    ];
    parse_units(s, &IEC).or_else(|_| parse_units(s, &OLD))
}

/// Go's `units.ParseUnit` over base-1024 units (`(name, power)`).
fn parse_units(input: &str, units: &[(&str, u32)]) -> Result<i64, UnitsError> {
    let invalid = || UnitsError::InvalidSize(input.to_string());
    let (neg, mut s) = match input.as_bytes().first() {
        Some(b'-') => (true, &input[1..]),
        Some(b'+') => (false, &input[1..]),
        _ => (false, input),
    };
    if s == "0" {
        return Ok(0);
    }
    if s.is_empty() {
        return Err(invalid());
    }
    let mut total = 0f64;
    while !s.is_empty() {
        if !s.starts_with(|c: char| c == '.' || c.is_ascii_digit()) {
            return Err(invalid());
        }
        let (whole, rest) = leading_int(s).ok_or_else(invalid)?;
        let had_whole = rest.len() != s.len();
        let mut number = whole as f64;
        s = rest;
        let mut had_fraction = false;
        if let Some(after_point) = s.strip_prefix('.') {
            let (digits, rest) = leading_int(after_point).ok_or_else(invalid)?;
            let scale = 10f64.powi((after_point.len() - rest.len()) as i32);
            number += digits as f64 / scale;
            had_fraction = rest.len() != after_point.len();
            s = rest;
        }
        if !had_whole && !had_fraction {
            return Err(invalid());
        }
        let unit_len = s
            .find(|c: char| c == '.' || c.is_ascii_digit())
            .unwrap_or(s.len());
        let (unit, rest) = s.split_at(unit_len);
        let Some(&(_, power)) = units.iter().find(|(name, _)| *name == unit) else {
            return Err(UnitsError::UnknownUnit {
                unit: unit.to_string(),
                input: input.to_string(),
            });
        };
        total += number * 1024f64.powi(power as i32);
        s = rest;
    }
    if neg {
        total = -total;
    }
    if total < -(2f64.powi(63)) || total > 2f64.powi(63) {
        return Err(UnitsError::SizeOverflow);
    }
    Ok(total as i64)
}

/// The decimal digits at the start of `s` and what follows; `None` past
/// what Go's `leadingInt` accepts (about 2^63 / 10).
fn leading_int(s: &str) -> Option<(i64, &str)> {
    let digits = s.bytes().take_while(u8::is_ascii_digit).count();
    let mut x: i64 = 0;
    for b in s[..digits].bytes() {
        if x >= (i64::MAX - 9) / 10 {
            return None;
        }
        x = x * 10 + i64::from(b - b'0');
    }
    Some((x, &s[digits..]))
}

/// A byte count as Go's `units.Base2Bytes` prints it: every non-zero
/// base-1024 digit with its unit, largest first: `1KiB512B`, `2MiB`, `0B`.
pub fn format_base2_bytes(n: i64) -> String {
    const UNITS: [&str; 7] = ["B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"];
    if n == 0 {
        return "0B".into();
    }
    let mut parts = Vec::new();
    let mut rest = n;
    for unit in UNITS {
        if rest % 1024 != 0 {
            parts.push(format!("{}{unit}", rest % 1024));
        }
        rest /= 1024;
        if rest == 0 {
            break;
        }
    }
    parts.reverse();
    parts.concat()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_as_prometheus_reads_them() {
        assert_eq!(parse_duration_ms("2h"), Ok(7_200_000));
        assert_eq!(parse_duration_ms("1d12h"), Ok(129_600_000));
        assert_eq!(parse_duration_ms("90m"), Ok(5_400_000));
        assert_eq!(parse_duration_ms("1h30m15s500ms"), Ok(5_415_500));
        assert_eq!(parse_duration_ms("1y"), Ok(YEAR));
        assert_eq!(parse_duration_ms("0"), Ok(0));
        assert_eq!(parse_duration_ms("0s"), Ok(0));
        assert_eq!(parse_duration_ms(""), Err(UnitsError::EmptyDuration));
        for bad in ["h", "12h1d", "1h1h", "-1h", " 1h", "99999999999999999999s"] {
            assert!(
                matches!(parse_duration_ms(bad), Err(UnitsError::InvalidDuration(_))),
                "{bad:?}"
            );
        }
        assert!(matches!(
            parse_duration_ms("99999999999999999y"),
            Err(UnitsError::DurationOutOfRange(_))
        ));
        // Go's limit is nanoseconds: about 292 years.
        assert_eq!(parse_duration_ms("292y"), Ok(292 * YEAR));
        assert_eq!(
            parse_duration_ms("293y").map_err(|e| e.to_string()),
            Err("duration out of range".to_string())
        );
        for (bad, msg) in [
            ("2x", r#"unknown unit "x" in duration "2x""#),
            ("1h ", r#"unknown unit "h " in duration "1h ""#),
            ("5m s", r#"unknown unit "m s" in duration "5m s""#),
            ("1.5h", r#"unknown unit "." in duration "1.5h""#),
        ] {
            assert_eq!(
                parse_duration_ms(bad).map_err(|e| e.to_string()),
                Err(msg.to_string())
            );
        }
    }

    #[test]
    fn durations_print_as_prometheus_does() {
        assert_eq!(format_duration_ms(0), "0s");
        assert_eq!(format_duration_ms(15 * DAY), "15d");
        assert_eq!(format_duration_ms(14 * DAY), "2w");
        assert_eq!(format_duration_ms(36 * HOUR), "1d12h");
        assert_eq!(format_duration_ms(1_500), "1s500ms");
        assert_eq!(format_duration_ms(90 * DAY), "90d");
        assert_eq!(format_duration_ms(YEAR), "1y");
        assert_eq!(format_duration_ms(5_415_500), "1h30m15s500ms");
        for ms in [
            1,
            999,
            60_000,
            129_600_000,
            31 * DAY,
            3 * WEEK,
            2 * YEAR + DAY,
        ] {
            assert_eq!(parse_duration_ms(&format_duration_ms(ms)), Ok(ms));
        }
    }

    #[test]
    fn sizes() {
        assert_eq!(parse_base2_bytes("512MB"), Ok(512 << 20));
        assert_eq!(parse_base2_bytes("1GiB"), Ok(1 << 30));
        assert_eq!(parse_base2_bytes("0B"), Ok(0));
        assert_eq!(parse_base2_bytes("1.5KB"), Ok(1536));
        assert_eq!(parse_base2_bytes("1GiB512MiB"), Ok(3 << 29));
        assert_eq!(parse_base2_bytes("-0"), Ok(0));
        assert_eq!(parse_base2_bytes("-1KB"), Ok(-1024));
        let err = |s: &str| parse_base2_bytes(s).expect_err(s).to_string();
        assert_eq!(err("10"), "units: unknown unit  in 10");
        assert_eq!(err("1kB"), "units: unknown unit kB in 1kB");
        assert_eq!(err("1KiB1MB"), "units: unknown unit KiB in 1KiB1MB");
        assert_eq!(err("MB"), "units: invalid MB");
        assert_eq!(err(""), "units: invalid ");
        assert_eq!(err("."), "units: invalid .");
        assert_eq!(err("9EB"), "units: overflow parsing unit");
        assert_eq!(err("1 MB"), "units: unknown unit  MB in 1 MB");
        assert_eq!(format_base2_bytes(0), "0B");
        assert_eq!(format_base2_bytes(1536), "1KiB512B");
        assert_eq!(format_base2_bytes(512 << 20), "512MiB");
        assert_eq!(format_base2_bytes((3 << 30) + 5), "3GiB5B");
        assert_eq!(format_base2_bytes(1_234_567), "1MiB181KiB647B");
    }
}
