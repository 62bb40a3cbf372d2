//! Go's literal syntax: `strconv.ParseInt`/`ParseFloat` with base prefixes
//! and `_`, and `strconv.Unquote`/`UnquoteChar`.

/// Go's `strconv.ParseInt`/`ParseUint` with base 0 (prefixes, `_`).
pub(crate) fn go_int(s: &str) -> Option<i128> {
    let (neg, body) = match s.as_bytes().first()? {
        b'-' => (true, &s[1..]),
        b'+' => (false, &s[1..]),
        _ => (false, s),
    };
    let lower = body.to_ascii_lowercase();
    let (radix, digits, prefixed) = if let Some(d) = lower.strip_prefix("0x") {
        (16, d, true)
    } else if let Some(d) = lower.strip_prefix("0o") {
        (8, d, true)
    } else if let Some(d) = lower.strip_prefix("0b") {
        (2, d, true)
    } else if lower.len() > 1 && lower.starts_with('0') {
        (8, &lower[1..], true)
    } else {
        (10, lower.as_str(), false)
    };
    if !underscores_ok(digits, prefixed) {
        return None;
    }
    let clean: String = digits.chars().filter(|&c| c != '_').collect();
    if clean.is_empty() {
        return None;
    }
    let v = u64::from_str_radix(&clean, radix).ok()?;
    let v = i128::from(v);
    if neg {
        (v <= 1 << 63).then_some(-v)
    } else {
        Some(v)
    }
}

/// Go's rule for `_` in number literals: only between digits (or after
/// a base prefix).
pub(crate) fn underscores_ok(digits: &str, prefixed: bool) -> bool {
    if !digits.contains('_') {
        return true;
    }
    let b = digits.as_bytes();
    if b.last() == Some(&b'_') || (!prefixed && b.first() == Some(&b'_')) {
        return false;
    }
    !digits.contains("__")
}

/// Go's `strconv.ParseFloat(s, 64)` (decimal and hexadecimal forms,
/// `inf`/`nan`, `_` between digits); out of range is an error.
pub(crate) fn go_float(s: &str) -> Option<f64> {
    let body = s.trim_start_matches(['+', '-']);
    let lower = body.to_ascii_lowercase();
    if matches!(lower.as_str(), "inf" | "infinity" | "nan") {
        return Some(0.0);
    }
    if let Some(hex) = lower.strip_prefix("0x") {
        let (mantissa, exp) = hex.split_once('p')?;
        let exp: i32 = exp.replace('_', "").parse().ok()?;
        let (int, frac) = mantissa.split_once('.').unwrap_or((mantissa, ""));
        let int = int.replace('_', "");
        let frac = frac.replace('_', "");
        if int.is_empty() && frac.is_empty() {
            return None;
        }
        let mut v = 0f64;
        for c in int.chars().chain(frac.chars()) {
            v = v * 16.0 + f64::from(c.to_digit(16)?);
        }
        let v = v * 2f64.powi(exp - 4 * frac.len() as i32);
        return v.is_finite().then_some(v);
    }
    if s.contains('_') {
        // Go allows `_` in decimal floats only with a base prefix.
        return None;
    }
    let f: f64 = s.parse().ok()?;
    if !f.is_finite() {
        return None;
    }
    // Rust also reads forms Go does not ("1." and ".5" Go reads too).
    Some(f)
}

/// Go's `strconv.UnquoteChar`: one character (or escape) of a literal
/// quoted by `quote`, and the rest.
pub(crate) fn unquote_char(s: &str, quote: char) -> Result<(char, &str), ()> {
    let mut chars = s.chars();
    let c = chars.next().ok_or(())?;
    if c == quote && (quote == '\'' || quote == '"') {
        return Err(());
    }
    if c != '\\' {
        return Ok((c, chars.as_str()));
    }
    let e = chars.next().ok_or(())?;
    let simple = match e {
        'a' => Some('\u{7}'),
        'b' => Some('\u{8}'),
        'f' => Some('\u{c}'),
        'n' => Some('\n'),
        'r' => Some('\r'),
        't' => Some('\t'),
        'v' => Some('\u{b}'),
        '\\' => Some('\\'),
        '\'' | '"' if e == quote => Some(e),
        _ => None,
    };
    if let Some(v) = simple {
        return Ok((v, chars.as_str()));
    }
    let rest = chars.as_str();
    let hex = |n: usize| -> Result<(char, &str), ()> {
        let digits = rest.get(..n).ok_or(())?;
        let v = u32::from_str_radix(digits, 16).map_err(|_| ())?;
        if !digits.chars().all(|c| c.is_ascii_hexdigit()) {
            return Err(());
        }
        Ok((char::from_u32(v).ok_or(())?, &rest[n..]))
    };
    match e {
        'x' => {
            let (c, r) = hex(2)?;
            Ok((c, r))
        }
        'u' => hex(4),
        'U' => hex(8),
        '0'..='7' => {
            let digits = s.get(1..4).ok_or(())?;
            if !digits.chars().all(|c| ('0'..='7').contains(&c)) {
                return Err(());
            }
            let v = u32::from_str_radix(digits, 8).map_err(|_| ())?;
            if v > 255 {
                return Err(());
            }
            Ok((char::from_u32(v).ok_or(())?, &s[4..]))
        }
        _ => Err(()),
    }
}

/// Go's `strconv.Unquote` for `"..."` and `` `...` `` strings.
pub(crate) fn go_unquote(text: &str) -> Option<String> {
    if let Some(raw) = text.strip_prefix('`').and_then(|t| t.strip_suffix('`')) {
        if raw.contains('`') {
            return None;
        }
        return Some(raw.replace('\r', ""));
    }
    let mut s = text.strip_prefix('"')?.strip_suffix('"')?;
    if s.contains('\n') {
        return None;
    }
    let mut out = String::new();
    while !s.is_empty() {
        let (c, rest) = unquote_char(s, '"').ok()?;
        out.push(c);
        s = rest;
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn go_literals() {
        assert_eq!(go_int("0x1F"), Some(31));
        assert_eq!(go_int("0o17"), Some(15));
        assert_eq!(go_int("017"), Some(15));
        assert_eq!(go_int("1_000"), Some(1000));
        assert_eq!(go_int("1__0"), None);
        assert_eq!(
            go_int("-9223372036854775808"),
            Some(-9_223_372_036_854_775_808)
        );
        assert!(go_float("1e3").is_some());
        assert!(go_float("0x1p-2").is_some());
        assert!(go_float("1e400").is_none());
        assert_eq!(go_unquote("\"a\\tb\""), Some("a\tb".into()));
        assert_eq!(go_unquote("`a\\tb`"), Some("a\\tb".into()));
        assert_eq!(go_unquote("\"\\q\""), None);
        assert_eq!(unquote_char("\\x41'", '\''), Ok(('A', "'")));
    }
}
