//! Duration literals (`1h30m`, `500ms`) as Prometheus reads and writes
//! them: units `y` (365 days), `w`, `d`, `h`, `m`, `s`, `ms`, each at most
//! once, largest first.

const UNITS: [(&str, i64); 7] = [
    ("y", 365 * 24 * 3_600_000),
    ("w", 7 * 24 * 3_600_000),
    ("d", 24 * 3_600_000),
    ("h", 3_600_000),
    ("m", 60_000),
    ("s", 1_000),
    ("ms", 1),
];

/// Parses a duration literal to milliseconds.
pub fn parse_duration(s: &str) -> Result<i64, String> {
    if s.is_empty() {
        return Err("empty duration string".into());
    }
    if s == "0" {
        return Ok(0);
    }
    let invalid = || format!("not a valid duration string: {s:?}");
    let mut rest = s;
    let mut total: i64 = 0;
    let mut next_unit = 0;
    while !rest.is_empty() {
        let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
        if digits == 0 {
            return Err(invalid());
        }
        let n: i64 = rest[..digits].parse().map_err(|_| invalid())?;
        rest = &rest[digits..];
        let (i, unit) = UNITS
            .iter()
            .enumerate()
            .skip(next_unit)
            .filter(|(_, (u, _))| rest.starts_with(u))
            .max_by_key(|(_, (u, _))| u.len())
            .ok_or_else(invalid)?;
        rest = &rest[unit.0.len()..];
        next_unit = i + 1;
        total = n
            .checked_mul(unit.1)
            .and_then(|v| total.checked_add(v))
            .ok_or_else(|| "duration out of range".to_string())?;
    }
    Ok(total)
}

/// Writes milliseconds as a duration literal (`90000` → `1m30s`).
pub fn format_duration(ms: i64) -> String {
    if ms == 0 {
        return "0s".into();
    }
    let mut out = String::new();
    if ms < 0 {
        out.push('-');
    }
    let mut rest = ms.unsigned_abs();
    for (unit, size) in UNITS {
        let size = size as u64;
        if rest >= size {
            out.push_str(&(rest / size).to_string());
            out.push_str(unit);
            rest %= size;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips() {
        for (s, ms) in [
            ("1h30m", 5_400_000),
            ("500ms", 500),
            ("1y", 31_536_000_000),
            ("1m1s1ms", 61_001),
        ] {
            assert_eq!(parse_duration(s), Ok(ms), "{s}");
            assert_eq!(format_duration(ms), s);
        }
        for bad in ["", "1", "m", "1m1h", "1.5m", "1hh"] {
            assert!(parse_duration(bad).is_err(), "{bad}");
        }
    }
}
