//! Go's float syntax and formatting: the one copy every crate uses.
//!
//! Prometheus reads every number in an exposition, a query parameter or a
//! PromQL string with Go's `strconv.ParseFloat`, writes sample values with
//! `strconv.FormatFloat(f, 'f', -1, 64)`, `le`/`quantile` label values and
//! messages with `%g`, and promtool's tables with `%g` and `%.12e`. To accept
//! exactly the same inputs and print exactly the same text, this module
//! reproduces them from their documented behaviour (written here from the
//! Go specification and observed results, not from Go's source).
//!
//! Parsing:
//!
//! * accepted: decimal (`1`, `-1.5`, `.5`, `5.`, `1e3`, `1E-3`), `_` between
//!   digits, hexadecimal with a mandatory binary exponent (`0x1.8p1`),
//!   `inf` / `infinity` with optional sign and `nan` without sign, all
//!   case-insensitive; the whole string must be the number;
//! * a result that overflows to infinity is an error (Go's `ErrRange`),
//!   underflow is not;
//! * Go keeps only the first digits of an explicit exponent once it reaches
//!   10000 (`1e123456` is read as `1e12345`), which is mirrored so even absurd
//!   inputs give the same value;
//! * NaN is always `0x7ff8000000000001`, Go's `math.NaN()` and Prometheus'
//!   "normal NaN" (Rust's `f64::NAN` has different bits).

/// The bit pattern of every NaN Prometheus parses (`value.NormalNaN`).
pub const NORMAL_NAN_BITS: u64 = 0x7ff8_0000_0000_0001;

/// Why a string is not a float for Go.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FloatError {
    /// Not the syntax of a Go float.
    Syntax,
    /// Well-formed, but its magnitude overflows `f64`.
    Range,
}

/// `strconv.ParseFloat(s, 64)` as Prometheus' text parsers call it: also
/// refuses `p`, `P` and `_` (Prometheus keeps to pre-Go 1.13 float formats).
pub fn parse_prom_float(s: &[u8]) -> Result<f64, FloatError> {
    if let Some(f) = exact_decimal(s) {
        return Ok(f);
    }
    if s.iter().any(|&c| matches!(c, b'p' | b'P' | b'_')) {
        return Err(FloatError::Syntax);
    }
    parse_go_float_full(s)
}

/// `strconv.ParseFloat(s, 64)`: Ok only where Go returns no error.
pub fn parse_go_float(s: &[u8]) -> Result<f64, FloatError> {
    match exact_decimal(s) {
        Some(f) => Ok(f),
        None => parse_go_float_full(s),
    }
}

/// [`parse_go_float`] for what [`exact_decimal`] does not take.
fn parse_go_float_full(s: &[u8]) -> Result<f64, FloatError> {
    if let Some(f) = special(s) {
        return Ok(f);
    }
    let mut i = 0;
    let neg = match s.first() {
        Some(b'+') => {
            i = 1;
            false
        }
        Some(b'-') => {
            i = 1;
            true
        }
        _ => false,
    };
    let hex = s.len() > i + 2 && s[i] == b'0' && s[i + 1] | 0x20 == b'x';
    if hex {
        i += 2;
    }
    let is_digit = |c: u8| c.is_ascii_digit() || (hex && c.is_ascii_hexdigit());

    // Mantissa: digits with at most one '.', '_' anywhere (checked below).
    let mant_start = i;
    let mut saw_dot = false;
    let mut saw_digits = false;
    while i < s.len() {
        let c = s[i];
        if c == b'_' {
        } else if c == b'.' {
            if saw_dot {
                break;
            }
            saw_dot = true;
        } else if is_digit(c) {
            saw_digits = true;
        } else {
            break;
        }
        i += 1;
    }
    if !saw_digits {
        return Err(FloatError::Syntax);
    }
    let mant = &s[mant_start..i];

    // Exponent: 'e' for decimal, 'p' (mandatory) for hex.
    let exp_char = if hex { b'p' } else { b'e' };
    let mut exp: i64 = 0;
    let mut has_exp = false;
    if i < s.len() && s[i] | 0x20 == exp_char {
        i += 1;
        let mut esign = 1;
        match s.get(i) {
            Some(b'+') => i += 1,
            Some(b'-') => {
                esign = -1;
                i += 1
            }
            _ => {}
        }
        if !s.get(i).is_some_and(u8::is_ascii_digit) {
            return Err(FloatError::Syntax);
        }
        while i < s.len() && (s[i].is_ascii_digit() || s[i] == b'_') {
            if s[i] != b'_' && exp < 10000 {
                exp = exp * 10 + i64::from(s[i] - b'0');
            }
            i += 1;
        }
        exp *= esign;
        has_exp = true;
    } else if hex {
        return Err(FloatError::Syntax);
    }
    if i != s.len() {
        return Err(FloatError::Syntax);
    }
    if s.contains(&b'_') && !underscores_ok(s) {
        return Err(FloatError::Syntax);
    }

    let f = if hex {
        hex_value(mant, exp)?
    } else if exp.abs() < 10000 && !s.contains(&b'_') {
        // The digits as written (checked above: ASCII digits, one dot,
        // an exponent Rust reads as Go does), with no copy.
        let text = std::str::from_utf8(&s[mant_start..]).map_err(|_| FloatError::Syntax)?;
        let v: f64 = text.parse().map_err(|_| FloatError::Syntax)?;
        if v.is_infinite() {
            return Err(FloatError::Range);
        }
        v
    } else {
        // Rust's parser rounds correctly, as Go's does; hand it the digits
        // and Go's (possibly shortened) exponent.
        let mut t = String::with_capacity(mant.len() + 24);
        t.extend(mant.iter().filter(|&&c| c != b'_').map(|&c| c as char));
        if has_exp {
            t.push('e');
            t.push_str(&exp.to_string());
        }
        let v: f64 = t.parse().map_err(|_| FloatError::Syntax)?;
        if v.is_infinite() {
            return Err(FloatError::Range);
        }
        v
    };
    Ok(if neg { -f } else { f })
}

/// A plain decimal (`[+-]digits[.digits][e[+-]digits]`, no `_`) whose
/// digits fit 53 bits and whose power of ten is within 22: the value is
/// the digits times or over an exact power of ten, one correctly rounded
/// operation (Clinger's fast path), so it is what a full parse gives.
/// `None` for anything else (the full parse decides).
fn exact_decimal(s: &[u8]) -> Option<f64> {
    const POW10: [f64; 23] = [
        1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15, 1e16,
        1e17, 1e18, 1e19, 1e20, 1e21, 1e22,
    ];
    let (neg, mut i) = match s.first()? {
        b'-' => (true, 1),
        b'+' => (false, 1),
        _ => (false, 0),
    };
    let mut mantissa: u64 = 0;
    let mut digits = 0u32;
    let mut fraction_digits = 0i32;
    let mut seen_dot = false;
    while let Some(&c) = s.get(i) {
        match c {
            b'0'..=b'9' => {
                if mantissa >= 1 << 53 {
                    return None;
                }
                mantissa = mantissa * 10 + u64::from(c - b'0');
                digits += 1;
                if seen_dot {
                    fraction_digits += 1;
                }
            }
            b'.' if !seen_dot => seen_dot = true,
            _ => break,
        }
        i += 1;
    }
    if digits == 0 || mantissa >= 1 << 53 {
        return None;
    }
    let mut exponent = 0i32;
    if let Some(b'e' | b'E') = s.get(i) {
        i += 1;
        let negative = match s.get(i) {
            Some(b'-') => {
                i += 1;
                true
            }
            Some(b'+') => {
                i += 1;
                false
            }
            _ => false,
        };
        let start = i;
        while let Some(&c) = s.get(i).filter(|c| c.is_ascii_digit()) {
            if i - start >= 4 {
                return None;
            }
            exponent = exponent * 10 + i32::from(c - b'0');
            i += 1;
        }
        if i == start {
            return None;
        }
        if negative {
            exponent = -exponent;
        }
    }
    if i != s.len() {
        return None;
    }
    let power = exponent - fraction_digits;
    let m = mantissa as f64;
    let v = match power {
        0..=22 => m * POW10[power as usize],
        -22..=-1 => m / POW10[(-power) as usize],
        _ => return None,
    };
    Some(if neg { -v } else { v })
}

/// `inf`, `infinity` (signed or not) and `nan` (unsigned), any case.
fn special(s: &[u8]) -> Option<f64> {
    let (neg, body) = match s.first() {
        Some(b'+') => (false, &s[1..]),
        Some(b'-') => (true, &s[1..]),
        _ => (false, s),
    };
    if body.eq_ignore_ascii_case(b"inf") || body.eq_ignore_ascii_case(b"infinity") {
        return Some(if neg {
            f64::NEG_INFINITY
        } else {
            f64::INFINITY
        });
    }
    if body.len() == s.len() && s.eq_ignore_ascii_case(b"nan") {
        return Some(f64::from_bits(NORMAL_NAN_BITS));
    }
    None
}

/// Go's digit-separator rule: every `_` sits between two digits, or between
/// a base prefix and a digit.
fn underscores_ok(s: &[u8]) -> bool {
    let s = match s.first() {
        Some(b'+' | b'-') => &s[1..],
        _ => s,
    };
    let mut hex = false;
    let mut i = 0;
    // What came last: b'^' start, b'0' digit or prefix, b'_', b'!' other.
    let mut last = b'^';
    if s.len() >= 2 && s[0] == b'0' && matches!(s[1] | 0x20, b'b' | b'o' | b'x') {
        hex = s[1] | 0x20 == b'x';
        i = 2;
        last = b'0';
    }
    for &c in &s[i..] {
        if c.is_ascii_digit() || (hex && c.is_ascii_hexdigit()) {
            last = b'0';
        } else if c == b'_' {
            if last != b'0' {
                return false;
            }
            last = b'_';
        } else {
            if last == b'_' {
                return false;
            }
            last = b'!';
        }
    }
    last != b'_'
}

/// The value of a hexadecimal mantissa (digits and at most one '.', `_`
/// ignored) times 2^`pexp`, rounded to nearest-even. Only the first 16
/// significant hex digits are kept in the mantissa; a non-zero digit after
/// them counts as a remainder when rounding.
fn hex_value(mant: &[u8], pexp: i64) -> Result<f64, FloatError> {
    let mut m: u64 = 0;
    let mut kept: i64 = 0; // significant digits kept in m
    let mut point: i64 = 0; // hex digits before the '.', leading zeros excluded
    let mut seen_nonzero = false;
    let mut saw_dot = false;
    let mut sticky = false;
    for &c in mant {
        match c {
            b'_' => continue,
            b'.' => {
                saw_dot = true;
                continue;
            }
            _ => {}
        }
        let d = (c as char).to_digit(16).unwrap_or(0) as u64;
        if d == 0 && !seen_nonzero {
            if saw_dot {
                point -= 1;
            }
            continue;
        }
        seen_nonzero = true;
        if !saw_dot {
            point += 1;
        }
        if kept < 16 {
            m = m * 16 + d;
            kept += 1;
        } else if d != 0 {
            sticky = true;
        }
    }
    if m == 0 {
        return Ok(0.0);
    }
    // value = m * 2^e (+ a little if sticky)
    let e = (point - kept) * 4 + pexp;
    round_binary(m, e, sticky)
}

/// Rounds (m + ε) · 2^e to the nearest f64 (ties to even), where ε is a
/// positive amount below one unit of m when `sticky` and zero otherwise.
fn round_binary(m: u64, e: i64, sticky: bool) -> Result<f64, FloatError> {
    let len = 64 - i64::from(m.leading_zeros());
    // Bits to drop: keep 53 significant bits, but never go below 2^-1074.
    let drop = (len - 53).max(-1074 - e);
    let (mut sig, mut exp) = if drop <= 0 {
        (m << (-drop) as u32, e + drop)
    } else if drop > 64 {
        (0, e + drop)
    } else {
        let sig = if drop == 64 { 0 } else { m >> drop };
        let rem = if drop == 64 {
            m as u128
        } else {
            (m & ((1u64 << drop) - 1)) as u128
        };
        let half = 1u128 << (drop - 1);
        let up = rem > half || (rem == half && (sticky || sig & 1 == 1));
        (sig + u64::from(up), e + drop)
    };
    if sig == 1 << 53 {
        sig >>= 1;
        exp += 1;
    }
    if sig == 0 {
        return Ok(0.0);
    }
    if sig >= 1 << 52 {
        let biased = exp + 52 + 1023;
        if biased >= 2047 {
            return Err(FloatError::Range);
        }
        Ok(f64::from_bits(
            ((biased as u64) << 52) | (sig & ((1 << 52) - 1)),
        ))
    } else {
        // Subnormal: exp is -1074 here.
        Ok(f64::from_bits(sig))
    }
}

/// OpenMetrics' canonical float text, as Prometheus writes `le` and
/// `quantile` values (`labels.FormatOpenMetricsFloat`): `1.0`, `0.0`,
/// `-1.0`, `NaN`, `+Inf`, `-Inf`, otherwise Go's shortest `%g` with `.0`
/// appended when it has neither `.` nor an exponent.
pub fn format_om_float(f: f64) -> String {
    if f == 1.0 {
        return "1.0".into();
    }
    if f == 0.0 {
        return "0.0".into();
    }
    if f == -1.0 {
        return "-1.0".into();
    }
    if f.is_nan() {
        return "NaN".into();
    }
    if f.is_infinite() {
        return if f > 0.0 { "+Inf" } else { "-Inf" }.into();
    }
    let s = format_g(f);
    if s.contains(['e', '.']) {
        s
    } else {
        s + ".0"
    }
}

/// Go's `strconv.FormatFloat(f, 'g', -1, 64)` and `fmt`'s `%g`: the
/// shortest digits that read back as `f`, in exponent form when the decimal
/// exponent is below -4 or at least 6 (`1e+06`, `1.5e-07`: a sign and two
/// digits at least); `NaN`, `+Inf`, `-Inf` for the specials.
pub fn format_g(f: f64) -> String {
    format_g_impl(f, None)
}

/// Go's `%.<prec>g`: `prec` significant digits (at least one), trailing
/// zeros dropped, exponent form when the exponent is below -4 or at least
/// `prec`.
pub fn format_g_prec(f: f64, prec: usize) -> String {
    format_g_impl(f, Some(prec))
}

/// Go's `strconv.FormatFloat(f, 'f', -1, 64)`: the shortest digits that
/// read back as `f`, never in exponent form (`1e+21` is written out in
/// full); `NaN`, `+Inf`, `-Inf`. Prometheus' JSON sample values.
pub fn format_f(f: f64) -> String {
    let mut out = Vec::with_capacity(24);
    write_f(&mut out, f);
    // Only ASCII digits, signs, points and the specials' letters.
    String::from_utf8(out).unwrap_or_default()
}

/// [`format_f`] appended to `out` (no allocation of its own).
pub fn write_f(out: &mut Vec<u8>, f: f64) {
    if let Some(s) = special_text(f) {
        out.extend_from_slice(s.as_bytes());
        return;
    }
    if f.is_sign_negative() {
        out.push(b'-');
    }
    if f == 0.0 {
        out.push(b'0');
        return;
    }
    let d = Shortest::of(f);
    let digits = d.digits();
    let point = d.point;
    if point <= 0 {
        out.extend_from_slice(b"0.");
        out.resize(out.len() + point.unsigned_abs() as usize, b'0');
        out.extend_from_slice(digits);
    } else if point as usize >= digits.len() {
        out.extend_from_slice(digits);
        out.resize(out.len() + point as usize - digits.len(), b'0');
    } else {
        out.extend_from_slice(&digits[..point as usize]);
        out.push(b'.');
        out.extend_from_slice(&digits[point as usize..]);
    }
}

/// The shortest decimal digits that read back as a finite, non-zero `|f|`,
/// as Go picks them (Ryū's choice: of equally short candidates the closest,
/// ties to even; Rust's own formatter can pick the other one), and where
/// the decimal point goes: `digits × 10^(point - len)`.
struct Shortest {
    buf: [u8; 24],
    len: usize,
    point: i32,
}

impl Shortest {
    fn of(f: f64) -> Shortest {
        let mut ryu_buf = ryu::Buffer::new();
        let text = ryu_buf.format_finite(f.abs()).as_bytes();
        let (mantissa, exp) = match text.iter().position(|&b| b == b'e' || b == b'E') {
            Some(i) => (&text[..i], parse_exp(&text[i + 1..])),
            None => (text, 0),
        };
        let mut d = Shortest {
            buf: [0; 24],
            len: 0,
            point: 0,
        };
        let mut point = None;
        for &b in mantissa {
            if b == b'.' {
                point = Some(d.len);
            } else if d.len < d.buf.len() {
                d.buf[d.len] = b;
                d.len += 1;
            }
        }
        let mut point = point.unwrap_or(d.len) as i32 + exp;
        let first = d.buf[..d.len].iter().take_while(|&&b| b == b'0').count();
        point -= first as i32;
        d.buf.copy_within(first..d.len, 0);
        d.len -= first;
        while d.len > 1 && d.buf[d.len - 1] == b'0' {
            d.len -= 1;
        }
        d.point = point;
        d
    }

    fn digits(&self) -> &[u8] {
        &self.buf[..self.len]
    }
}

/// Ryū's exponent digits (`21`, `-7`).
fn parse_exp(b: &[u8]) -> i32 {
    let (neg, b) = match b.split_first() {
        Some((b'-', rest)) => (true, rest),
        Some((b'+', rest)) => (false, rest),
        _ => (false, b),
    };
    let e = b
        .iter()
        .fold(0i32, |acc, &c| acc * 10 + i32::from(c - b'0'));
    if neg {
        -e
    } else {
        e
    }
}

/// Go's `strconv.FormatFloat(f, 'e', -1, 64)` (`1e+00`, `1.5e-07`): the
/// shortest digits that read back as `f`, an exponent of two digits at
/// least; Prometheus' alert values in `/api/v1/alerts`.
pub fn format_e(f: f64) -> String {
    if let Some(s) = special_text(f) {
        return s.into();
    }
    go_exponent(&format!("{f:e}"))
}

/// Go's `%.<prec>e` (`1.234567890123e+06`): `prec` digits after the point,
/// an exponent of two digits at least.
pub fn format_e_prec(f: f64, prec: usize) -> String {
    if let Some(s) = special_text(f) {
        return s.into();
    }
    go_exponent(&format!("{f:.prec$e}"))
}

/// Rust's `1.5e-7` as Go writes it: `1.5e-07`.
fn go_exponent(s: &str) -> String {
    let (mant, exp) = s.split_once('e').unwrap_or((s, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    let sign = if exp < 0 { '-' } else { '+' };
    format!("{mant}e{sign}{:02}", exp.unsigned_abs())
}

fn special_text(f: f64) -> Option<&'static str> {
    if f.is_nan() {
        Some("NaN")
    } else if f == f64::INFINITY {
        Some("+Inf")
    } else if f == f64::NEG_INFINITY {
        Some("-Inf")
    } else {
        None
    }
}

/// The significant digits (no trailing zeros) and decimal-point position of
/// a finite, non-zero `|f|`: `prec` significant digits correctly rounded,
/// or the shortest round-tripping ones (those Go picks, see [`Shortest`]).
fn digits(f: f64, prec: Option<usize>) -> (String, i32) {
    let Some(p) = prec else {
        let d = Shortest::of(f);
        return (String::from_utf8_lossy(d.digits()).into_owned(), d.point);
    };
    let s = format!("{:.*e}", p.max(1) - 1, f.abs());
    let (mant, exp) = s.split_once('e').unwrap_or((&s, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    let mut d: String = mant.chars().filter(|c| *c != '.').collect();
    while d.len() > 1 && d.ends_with('0') {
        d.pop();
    }
    (d, exp + 1)
}

fn format_g_impl(f: f64, prec: Option<usize>) -> String {
    if let Some(s) = special_text(f) {
        return s.into();
    }
    let sign = if f.is_sign_negative() { "-" } else { "" };
    if f == 0.0 {
        return format!("{sign}0");
    }
    let (d, dp) = digits(f, prec);
    let nd = d.len() as i32;
    let eprec = match prec {
        None => 6,
        Some(p) => {
            let p = p.max(1) as i32;
            if p > nd && nd >= dp {
                nd
            } else {
                p
            }
        }
    };
    let exp = dp - 1;
    if exp < -4 || exp >= eprec {
        let mut out = format!("{sign}{}", &d[..1]);
        if nd > 1 {
            out.push('.');
            out.push_str(&d[1..]);
        }
        let (es, ea) = if exp < 0 { ('-', -exp) } else { ('+', exp) };
        out.push_str(&format!("e{es}{ea:02}"));
        return out;
    }
    let mut out = String::from(sign);
    if dp <= 0 {
        out.push_str("0.");
        out.push_str(&"0".repeat((-dp) as usize));
        out.push_str(&d);
    } else if dp >= nd {
        out.push_str(&d);
        out.push_str(&"0".repeat((dp - nd) as usize));
    } else {
        out.push_str(&d[..dp as usize]);
        out.push('.');
        out.push_str(&d[dp as usize..]);
    }
    out
}

/// OpenMetrics timestamp (float seconds) to milliseconds as Prometheus
/// computes it: `int64(ts * 1000)`, truncating toward zero. Go leaves an
/// out-of-range conversion to the CPU; on amd64, where Prometheus' release
/// binaries run, it yields `i64::MIN`, which is what this returns (Rust's
/// `as` would saturate instead). Callers reject NaN and infinities first.
pub fn seconds_to_millis(ts: f64) -> i64 {
    let ms = ts * 1000.0;
    // 2^63 is exactly representable; every float below it fits.
    if ms.is_nan() || !(-9_223_372_036_854_775_808.0..9_223_372_036_854_775_808.0).contains(&ms) {
        i64::MIN
    } else {
        ms as i64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(20_000))]

        /// The fast path gives what Rust's full parse gives, bit for bit.
        #[test]
        fn exact_decimals_parse_as_the_full_parse(
            s in "[-+]?[0-9]{0,18}(\\.[0-9]{0,18})?([eE][-+]?[0-9]{1,5})?"
        ) {
            if let Some(fast) = exact_decimal(s.as_bytes()) {
                let full: f64 = s.parse().expect("a decimal Rust reads");
                proptest::prop_assert_eq!(fast.to_bits(), full.to_bits(), "{}", s);
            }
        }

        /// Values as Go's `%g` and `%f` print them.
        #[test]
        fn printed_floats_parse_back(v in proptest::num::f64::NORMAL | proptest::num::f64::ZERO | proptest::num::f64::SUBNORMAL) {
            for text in [format!("{v:e}"), format!("{v}"), format!("{v:.3}")] {
                let got = parse_go_float(text.as_bytes()).expect("parses");
                let full: f64 = text.parse().expect("parses");
                proptest::prop_assert_eq!(got.to_bits(), full.to_bits(), "{}", text);
            }
        }
    }

    fn ok(s: &str) -> f64 {
        parse_go_float(s.as_bytes()).unwrap_or_else(|e| panic!("{s}: {e:?}"))
    }
    fn bad(s: &str) -> FloatError {
        parse_go_float(s.as_bytes()).expect_err(s)
    }

    #[test]
    fn decimal_forms() {
        assert_eq!(ok("1"), 1.0);
        assert_eq!(ok("-1.5"), -1.5);
        assert_eq!(ok(".5"), 0.5);
        assert_eq!(ok("5."), 5.0);
        assert_eq!(ok("1e3"), 1000.0);
        assert_eq!(ok("1E-3"), 0.001);
        assert_eq!(ok("+0"), 0.0);
        assert_eq!(ok("-0").to_bits(), (-0.0f64).to_bits());
        assert_eq!(ok("1_000"), 1000.0);
        assert_eq!(ok("1e-400"), 0.0);
        // Go stops reading exponent digits at 10000 and up.
        assert_eq!(
            ok("0.00000000000000000001e000000000000000000000000300"),
            1e280
        );
        assert_eq!(bad("1e123456"), FloatError::Range);
        for s in [
            "", ".", "e1", "1e", "1e+", "--1", "1..2", "1.2.3", "0x", "0x1", "1_", "_1", "1__0",
            "1 ", "+nan", "nan1", "infin", "1f",
        ] {
            assert_eq!(bad(s), FloatError::Syntax, "{s:?}");
        }
        assert_eq!(bad("1e309"), FloatError::Range);
        assert_eq!(bad("-1e309"), FloatError::Range);
    }

    #[test]
    fn specials() {
        for s in ["inf", "+Inf", "INFINITY", "+infinity"] {
            assert_eq!(ok(s), f64::INFINITY);
        }
        assert_eq!(ok("-Inf"), f64::NEG_INFINITY);
        assert_eq!(ok("NaN").to_bits(), NORMAL_NAN_BITS);
        assert_eq!(ok("nan").to_bits(), NORMAL_NAN_BITS);
        assert_eq!(bad("-nan"), FloatError::Syntax);
    }

    #[test]
    fn hex_forms() {
        assert_eq!(ok("0x1p-2"), 0.25);
        assert_eq!(ok("0x1.8p1"), 3.0);
        assert_eq!(ok("0X.8P1"), 1.0);
        assert_eq!(ok("-0x10p0"), -16.0);
        assert_eq!(ok("0x_1p0"), 1.0);
        assert_eq!(ok("0x1p-1074"), f64::from_bits(1));
        assert_eq!(ok("0x1p-1075"), 0.0); // tie to even: 0
        assert_eq!(ok("0x1.8p-1074"), f64::from_bits(2)); // tie to even: 2
        assert_eq!(ok("0x1.fffffffffffffp1023"), f64::MAX);
        assert_eq!(bad("0x1p1024"), FloatError::Range);
        assert_eq!(bad("0x1"), FloatError::Syntax);
        // 53 significant bits plus an exact half: ties to even...
        assert_eq!(ok("0x1.00000000000008p0"), 1.0);
        // ...unless a non-zero digit follows, even past 16 digits.
        assert_eq!(ok("0x1.0000000000000800p0"), 1.0);
        assert_eq!(ok("0x1.0000000000000801p0"), 1.0 + f64::EPSILON);
        assert!(parse_prom_float(b"0x1p0").is_err());
        assert!(parse_prom_float(b"1_0").is_err());
    }

    #[test]
    fn om_float_text() {
        let cases = [
            (1.0, "1.0"),
            (0.0, "0.0"),
            (-0.0, "0.0"),
            (-1.0, "-1.0"),
            (0.25, "0.25"),
            (100000.0, "100000.0"),
            (1e6, "1e+06"),
            (123456789.0, "1.23456789e+08"),
            (0.0001, "0.0001"),
            (0.00001, "1e-05"),
            (1.5e-7, "1.5e-07"),
            (2.5e300, "2.5e+300"),
            (-12.5, "-12.5"),
            (f64::INFINITY, "+Inf"),
            (f64::NEG_INFINITY, "-Inf"),
        ];
        for (f, s) in cases {
            assert_eq!(format_om_float(f), s, "{f}");
        }
        assert_eq!(format_om_float(f64::NAN), "NaN");
    }

    #[test]
    fn g_formats_as_go() {
        let cases = [
            (0.5, "0.5"),
            (2.0, "2"),
            (-1.0, "-1"),
            (0.0, "0"),
            (-0.0, "-0"),
            (1000.0, "1000"),
            (123456.0, "123456"),
            (999999.0, "999999"),
            (1e6, "1e+06"),
            (1234567.0, "1.234567e+06"),
            (0.0001, "0.0001"),
            (0.00001, "1e-05"),
            (0.000123456, "0.000123456"),
            (1e21, "1e+21"),
            (1e100, "1e+100"),
            (5e-324, "5e-324"),
            (f64::MAX, "1.7976931348623157e+308"),
            (0.1 + 0.2, "0.30000000000000004"),
            (12345.678, "12345.678"),
            (f64::INFINITY, "+Inf"),
            (f64::NEG_INFINITY, "-Inf"),
            (f64::NAN, "NaN"),
            (f64::from_bits(0x7ff0000000000002), "NaN"),
        ];
        for (f, want) in cases {
            assert_eq!(format_g(f), want, "{f:?}");
        }
        assert_eq!(format_g_prec(1.0, 2), "1");
        assert_eq!(format_g_prec(10.0, 2), "10");
        assert_eq!(format_g_prec(100.0, 2), "1e+02");
        assert_eq!(format_g_prec(0.123, 2), "0.12");
        assert_eq!(format_g_prec(4.56, 2), "4.6");
    }

    #[test]
    fn f_and_e_format_as_go() {
        let cases = [
            (1.0, "1"),
            (-0.5, "-0.5"),
            (1e21, "1000000000000000000000"),
            (1e-7, "0.0000001"),
            (0.1 + 0.2, "0.30000000000000004"),
            (f64::INFINITY, "+Inf"),
            (f64::NEG_INFINITY, "-Inf"),
            (f64::NAN, "NaN"),
        ];
        for (f, want) in cases {
            assert_eq!(format_f(f), want, "{f:?}");
        }
        // A tie between two shortest forms, as Go prints it.
        assert_eq!(
            format_f(f64::from_bits(0x430e_d5d9_3b06_b032)),
            "1084922284529158.2"
        );
        assert_eq!(format_f(-0.0), "-0");
        assert_eq!(format_f(5e-324).len(), 326);
        assert_eq!(format_e_prec(1234567.0, 12), "1.234567000000e+06");
        assert_eq!(format_e_prec(0.000123, 12), "1.230000000000e-04");
        assert_eq!(format_e_prec(0.0, 12), "0.000000000000e+00");
        assert_eq!(format_e_prec(-5e100, 12), "-5.000000000000e+100");
        assert_eq!(format_e_prec(-0.00025, 3), "-2.500e-04");
        assert_eq!(format_e_prec(1e100, 1), "1.0e+100");
        assert_eq!(format_e_prec(f64::NAN, 3), "NaN");
        assert_eq!(format_e(1.0), "1e+00");
        assert_eq!(format_e(0.0), "0e+00");
        assert_eq!(format_e(-1.5e-7), "-1.5e-07");
        assert_eq!(format_e(123456.0), "1.23456e+05");
        assert_eq!(format_e(f64::INFINITY), "+Inf");
    }

    /// The shortest digits, positioned: as long as Rust's, and reading back
    /// exactly (they differ only in ties between two shortest forms).
    #[test]
    fn f_reads_back_exactly() {
        let check = |v: f64| {
            if !v.is_finite() {
                return;
            }
            let got = format_f(v);
            let rust = format!("{v}");
            assert_eq!(got.len(), rust.len(), "{v:e}: {got} vs {rust}");
            assert_eq!(
                got.parse::<f64>().ok().map(f64::to_bits),
                Some(v.to_bits()),
                "{v:e}: {got}"
            );
        };
        let edges = [
            0.0,
            1.0,
            0.1,
            0.7,
            1e21,
            1e22,
            1e-7,
            1.5e-7,
            5e-324,
            1e300,
            123.456,
            f64::MAX,
            f64::MIN_POSITIVE,
            9007199254740993.0,
            1e15,
            1e16,
            1e17,
            0.3,
        ];
        for v in edges {
            check(v);
            check(-v);
        }
        // A fixed xorshift sequence of bit patterns and small fractions.
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
        for _ in 0..200_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            check(f64::from_bits(x));
            check((x % 2000) as f64 / 8.0 - 125.0);
            check((x >> 11) as f64 / (1u64 << 53) as f64);
        }
    }

    #[test]
    fn millis_like_amd64_go() {
        assert_eq!(seconds_to_millis(1.5), 1500);
        assert_eq!(seconds_to_millis(-1.5), -1500);
        assert_eq!(seconds_to_millis(1.001), 1000); // 1000.9999999999999
        assert_eq!(seconds_to_millis(-0.0009), 0);
        assert_eq!(seconds_to_millis(1e17), i64::MIN);
        assert_eq!(seconds_to_millis(-1e17), i64::MIN);
        assert_eq!(seconds_to_millis(-9_223_372_036_854_775.808), i64::MIN);
    }
}
