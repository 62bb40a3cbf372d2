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
    /// Beyond what 64 bits of milliseconds hold.
    #[error("duration out of range: {0:?}")]
    DurationOutOfRange(String),
    /// Not of the form `<int><unit>`.
    #[error("invalid size {0:?}")]
    InvalidSize(String),
    /// Beyond what 64 bits of bytes hold.
    #[error("size {0:?} is too large")]
    SizeOutOfRange(String),
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

/// Parses a Prometheus duration into milliseconds: `0`, or integers with
/// units `y w d h m s ms`, each at most once and largest first (`1d12h`,
/// not `12h1d`), as `model.ParseDuration` accepts them.
pub fn parse_duration_ms(s: &str) -> Result<i64, UnitsError> {
    if s.is_empty() {
        return Err(UnitsError::EmptyDuration);
    }
    if s == "0" {
        return Ok(0);
    }
    let invalid = || UnitsError::InvalidDuration(s.to_string());
    let mut rest = s;
    let mut total: i64 = 0;
    // Units must come in the table's order: the next one is searched from
    // after the last one used.
    let mut next_unit = 0;
    while !rest.is_empty() {
        let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
        if digits == 0 {
            return Err(invalid());
        }
        let n: i64 = rest[..digits]
            .parse()
            .map_err(|_| UnitsError::DurationOutOfRange(s.to_string()))?;
        rest = &rest[digits..];
        let unit_len = rest.bytes().take_while(|b| b.is_ascii_alphabetic()).count();
        let unit = &rest[..unit_len];
        let Some(pos) = DURATION_UNITS[next_unit..]
            .iter()
            .position(|(u, _)| *u == unit)
        else {
            return Err(invalid());
        };
        let (_, mult) = DURATION_UNITS[next_unit + pos];
        next_unit += pos + 1;
        rest = &rest[unit_len..];
        total = n
            .checked_mul(mult)
            .and_then(|v| total.checked_add(v))
            .ok_or_else(|| UnitsError::DurationOutOfRange(s.to_string()))?;
    }
    Ok(total)
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

/// Parses a byte size: an integer and a unit `B`, `KB`..`EB` or
/// `KiB`..`EiB`, all base 1024 (`units.ParseBase2Bytes`), case-insensitive.
pub fn parse_base2_bytes(s: &str) -> Result<i64, UnitsError> {
    let t = s.trim();
    let digits = t.bytes().take_while(u8::is_ascii_digit).count();
    if digits == 0 {
        return Err(UnitsError::InvalidSize(s.to_string()));
    }
    let n: i64 = t[..digits]
        .parse()
        .map_err(|_| UnitsError::SizeOutOfRange(s.to_string()))?;
    let shift = match t[digits..].to_ascii_uppercase().as_str() {
        "" | "B" => 0,
        "KB" | "KIB" => 10,
        "MB" | "MIB" => 20,
        "GB" | "GIB" => 30,
        "TB" | "TIB" => 40,
        "PB" | "PIB" => 50,
        "EB" | "EIB" => 60,
        _ => return Err(UnitsError::InvalidSize(s.to_string())),
    };
    n.checked_mul(1i64 << shift)
        .ok_or_else(|| UnitsError::SizeOutOfRange(s.to_string()))
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
        for bad in ["2x", "h", "12h1d", "1h1h", "-1h", " 1h", "1.5h", "1h "] {
            assert!(
                matches!(parse_duration_ms(bad), Err(UnitsError::InvalidDuration(_))),
                "{bad:?}"
            );
        }
        assert!(matches!(
            parse_duration_ms("99999999999999999y"),
            Err(UnitsError::DurationOutOfRange(_))
        ));
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
        assert_eq!(parse_base2_bytes("10"), Ok(10));
        assert!(parse_base2_bytes("MB").is_err());
        assert!(parse_base2_bytes("1XB").is_err());
        assert!(parse_base2_bytes("9EB").is_err());
        assert_eq!(format_base2_bytes(0), "0B");
        assert_eq!(format_base2_bytes(1536), "1KiB512B");
        assert_eq!(format_base2_bytes(512 << 20), "512MiB");
        assert_eq!(format_base2_bytes((3 << 30) + 5), "3GiB5B");
        assert_eq!(format_base2_bytes(1_234_567), "1MiB181KiB647B");
    }
}
