//! Go's `fmt` for template values: `Sprint`, `Sprintln` and `Sprintf` with
//! the verbs templates use (`%v %s %d %q %f %e %g %x %X %t %c %T %%`,
//! flags `+ - # 0 space`, width and precision, `*`), and Go's texts for
//! mistakes (`%!d(string=x)`, `%!d(MISSING)`, `%!(EXTRA int=1)`).

use std::fmt::Write as _;
use std::sync::Arc;

use ferrite_model::gofloat::{format_e_prec, format_g, format_g_prec};
use ferrite_model::goquote::quote as go_quote;

use crate::value::Value;

/// Whether `fmt` treats the value as a string operand (for `Sprint`'s
/// spacing).
fn is_string(v: &Value) -> bool {
    matches!(v, Value::Str(_) | Value::Html(_))
}

/// `fmt.Sprint`: operands in `%v`, a space between two non-strings.
pub(crate) fn sprint(args: &[Value]) -> String {
    let mut out = String::new();
    let mut prev_string = false;
    for (i, a) in args.iter().enumerate() {
        let s = is_string(a);
        if i > 0 && !s && !prev_string {
            out.push(' ');
        }
        out.push_str(&a.fmt_v());
        prev_string = s;
    }
    out
}

/// `fmt.Sprintln`: operands in `%v` separated by spaces, then a newline.
pub(crate) fn sprintln(args: &[Value]) -> String {
    let parts: Vec<String> = args.iter().map(Value::fmt_v).collect();
    let mut out = parts.join(" ");
    out.push('\n');
    out
}

/// A verb's flags, width and precision.
#[derive(Default, Clone, Copy)]
struct Spec {
    plus: bool,
    minus: bool,
    sharp: bool,
    space: bool,
    zero: bool,
    width: Option<usize>,
    prec: Option<usize>,
}

/// The longest width or precision accepted (Go refuses above 1e6).
const MAX_NUM: usize = 1_000_000;

/// `fmt.Sprintf(format, args...)`.
pub(crate) fn sprintf(format: &str, args: &[Value]) -> String {
    let mut out = String::new();
    let mut next = 0;
    let mut reordered = false;
    let b = format.as_bytes();
    let mut i = 0;
    while i < b.len() {
        let start = i;
        while i < b.len() && b[i] != b'%' {
            i += 1;
        }
        out.push_str(&format[start..i]);
        if i >= b.len() {
            break;
        }
        i += 1; // '%'
        let mut spec = Spec::default();
        while i < b.len() {
            match b[i] {
                b'+' => spec.plus = true,
                b'-' => spec.minus = true,
                b'#' => spec.sharp = true,
                b' ' => spec.space = true,
                b'0' => spec.zero = true,
                _ => break,
            }
            i += 1;
        }
        let mut bad_index = false;
        let mut after_index = arg_index(
            b,
            &mut i,
            &mut next,
            args.len(),
            &mut reordered,
            &mut bad_index,
        );
        // Width.
        if i < b.len() && b[i] == b'*' {
            i += 1;
            match args.get(next) {
                Some(Value::Int(n)) => {
                    let n = *n;
                    next += 1;
                    if n < 0 {
                        spec.minus = true;
                    }
                    if n.unsigned_abs() as usize > MAX_NUM {
                        out.push_str("%!(BADWIDTH)");
                    } else {
                        spec.width = Some(n.unsigned_abs() as usize);
                    }
                }
                _ => {
                    next += 1;
                    out.push_str("%!(BADWIDTH)");
                }
            }
        } else {
            let (n, j) = parse_num(b, i);
            if let Some(n) = n {
                spec.width = Some(n);
            }
            i = j;
        }
        // Precision.
        if i < b.len() && b[i] == b'.' {
            i += 1;
            if !after_index {
                after_index = arg_index(
                    b,
                    &mut i,
                    &mut next,
                    args.len(),
                    &mut reordered,
                    &mut bad_index,
                );
            }
            if i < b.len() && b[i] == b'*' {
                i += 1;
                match args.get(next) {
                    Some(Value::Int(n)) if *n >= 0 && (*n as usize) <= MAX_NUM => {
                        spec.prec = Some(*n as usize);
                        next += 1;
                    }
                    _ => {
                        next += 1;
                        out.push_str("%!(BADPREC)");
                    }
                }
            } else {
                let (n, j) = parse_num(b, i);
                spec.prec = Some(n.unwrap_or(0));
                i = j;
            }
        }
        if !spec.minus && spec.zero {
            // Zero padding only to the left.
        } else {
            spec.zero = spec.zero && !spec.minus;
        }
        if !after_index {
            arg_index(
                b,
                &mut i,
                &mut next,
                args.len(),
                &mut reordered,
                &mut bad_index,
            );
        }
        let Some(verb) = format[i..].chars().next() else {
            out.push_str("%!(NOVERB)");
            break;
        };
        i += verb.len_utf8();
        match verb {
            '%' => out.push('%'),
            _ if bad_index => {
                let _ = write!(out, "%!{verb}(BADINDEX)");
            }
            _ => match args.get(next) {
                None => {
                    let _ = write!(out, "%!{verb}(MISSING)");
                }
                Some(a) => {
                    next += 1;
                    format_arg(&mut out, a, verb, spec, 0);
                }
            },
        }
    }
    if !reordered && next < args.len() {
        out.push_str("%!(EXTRA ");
        for (k, a) in args[next..].iter().enumerate() {
            if k > 0 {
                out.push_str(", ");
            }
            if matches!(a, Value::Nil) {
                out.push_str("<nil>");
            } else {
                let _ = write!(out, "{}=", a.type_name());
                format_arg(&mut out, a, 'v', Spec::default(), 0);
            }
        }
        out.push(')');
    }
    out
}

/// Go's `argNumber`: an explicit argument index `[n]` at `i`.
fn arg_index(
    b: &[u8],
    i: &mut usize,
    next: &mut usize,
    n_args: usize,
    reordered: &mut bool,
    bad: &mut bool,
) -> bool {
    if b.get(*i) != Some(&b'[') {
        return false;
    }
    *reordered = true;
    let Some(close) = b[*i..].iter().position(|&c| c == b']') else {
        *bad = true;
        *i = b.len();
        return false;
    };
    let digits = &b[*i + 1..*i + close];
    let n = std::str::from_utf8(digits)
        .ok()
        .and_then(|d| d.parse::<usize>().ok());
    *i += close + 1;
    match n {
        Some(n)
            if n >= 1
                && n <= n_args
                && !digits.is_empty()
                && digits.iter().all(u8::is_ascii_digit) =>
        {
            *next = n - 1;
            true
        }
        _ => {
            *bad = true;
            false
        }
    }
}

/// A decimal number at `i` (capped), and the index after it.
fn parse_num(b: &[u8], mut i: usize) -> (Option<usize>, usize) {
    let start = i;
    let mut n: usize = 0;
    while i < b.len() && b[i].is_ascii_digit() {
        n = n
            .saturating_mul(10)
            .saturating_add(usize::from(b[i] - b'0'));
        if n > MAX_NUM {
            // Go stops reading and treats the rest as the verb.
            return (None, i);
        }
        i += 1;
    }
    if i == start {
        (None, i)
    } else {
        (Some(n), i)
    }
}

/// Pads `s` to the spec's width (zeros after a sign for numbers).
fn pad(out: &mut String, s: &str, spec: Spec, numeric: bool) {
    let len = s.chars().count();
    let width = spec.width.unwrap_or(0);
    if len >= width {
        out.push_str(s);
        return;
    }
    let fill = width - len;
    if spec.minus {
        out.push_str(s);
        out.extend(std::iter::repeat_n(' ', fill));
    } else if spec.zero && numeric {
        let (sign, rest) = match s.chars().next() {
            Some(c @ ('+' | '-' | ' ')) => (Some(c), &s[1..]),
            _ => (None, s),
        };
        if let Some(c) = sign {
            out.push(c);
        }
        out.extend(std::iter::repeat_n('0', fill));
        out.push_str(rest);
    } else if spec.zero {
        out.extend(std::iter::repeat_n('0', fill));
        out.push_str(s);
    } else {
        out.extend(std::iter::repeat_n(' ', fill));
        out.push_str(s);
    }
}

/// Go's `badVerb`: `%!d(string=x)`, the value printed with `%v` and the
/// verb's flags, width and precision (pointers without their methods).
fn bad_verb(out: &mut String, v: &Value, verb: char, spec: Spec) {
    let _ = write!(out, "%!{verb}(");
    match v {
        Value::Nil => out.push_str("<nil>"),
        Value::Duration(_) => out.push_str("*time.Duration=0xc000001000"),
        Value::Time(_) => {
            out.push_str("*time.Time=");
            time_struct(out, v, 'v', spec);
        }
        _ => {
            let _ = write!(out, "{}=", v.type_name());
            format_arg(out, v, 'v', spec, 0);
        }
    }
    out.push(')');
}

/// A `*time.Time` printed without its `String` method: `&{wall ext loc}`.
fn time_struct(out: &mut String, v: &Value, verb: char, spec: Spec) {
    let Value::Time(ns) = v else { return };
    let secs = ns.div_euclid(1_000_000_000);
    let nsec = ns.rem_euclid(1_000_000_000);
    out.push_str("&{");
    for (i, (n, ty)) in [(nsec, "uint64"), (secs + 62_135_596_800, "int64")]
        .into_iter()
        .enumerate()
    {
        if i > 0 {
            out.push(' ');
        }
        if matches!(
            verb,
            'v' | 'd' | 'o' | 'O' | 'b' | 'x' | 'X' | 'c' | 'q' | 'U'
        ) {
            fmt_int(out, n, verb, spec, &Value::Int(n));
        } else {
            let _ = write!(out, "%!{verb}({ty}=");
            fmt_int(out, n, 'v', spec, &Value::Int(n));
            out.push(')');
        }
    }
    match verb {
        'v' => out.push_str(" <nil>"),
        'd' | 'o' | 'b' | 'x' | 'X' => out.push_str(" 0"),
        _ => {
            let _ = write!(out, " %!{verb}(*time.Location=");
            pad(out, "<nil>", spec, false);
            out.push(')');
        }
    }
    out.push('}');
}

fn format_arg(out: &mut String, v: &Value, verb: char, spec: Spec, depth: usize) {
    if verb == 'v' && spec.sharp {
        match v {
            Value::Str(s) | Value::Html(s) => return pad(out, &go_quote(s), spec, false),
            Value::Nil if depth > 0 => return out.push_str("interface {}(nil)"),
            Value::StrMap(m) => {
                out.push_str("map[string]string{");
                for (i, (k, val)) in m.iter().enumerate() {
                    if i > 0 {
                        out.push_str(", ");
                    }
                    let _ = write!(out, "{}:{}", go_quote(k), go_quote(val));
                }
                out.push('}');
                return;
            }
            Value::Map(m) => {
                out.push_str("map[string]interface {}{");
                for (i, (k, val)) in m.iter().enumerate() {
                    if i > 0 {
                        out.push_str(", ");
                    }
                    out.push_str(&go_quote(k));
                    out.push(':');
                    format_arg(out, val, 'v', spec, depth + 1);
                }
                out.push('}');
                return;
            }
            _ => {}
        }
    }
    if verb == 'T' {
        pad(out, v.type_name(), spec, false);
        return;
    }
    match v {
        Value::Nil => match verb {
            'v' => pad(out, "<nil>", spec, false),
            _ => bad_verb(out, v, verb, spec),
        },
        Value::Bool(b) => match verb {
            't' | 'v' => pad(out, if *b { "true" } else { "false" }, spec, false),
            _ => bad_verb(out, v, verb, spec),
        },
        Value::Int(n) => fmt_int(out, *n, verb, spec, v),
        Value::Uint8(n) => fmt_int(out, i64::from(*n), verb, spec, v),
        Value::Float(f) => fmt_float(out, *f, verb, spec, v),
        Value::Str(s) | Value::Html(s) => fmt_str(out, s, verb, spec, v),
        Value::Time(_) | Value::Duration(_) | Value::Histogram(_)
            if matches!(verb, 'v' | 's' | 'q' | 'x' | 'X') =>
        {
            fmt_str(out, &v.fmt_v(), verb, spec, v)
        }
        Value::StrMap(m) => {
            out.push_str("map[");
            for (i, (k, val)) in m.iter().enumerate() {
                if i > 0 {
                    out.push(' ');
                }
                fmt_str(out, k, verb, spec, &Value::str(k));
                out.push(':');
                fmt_str(out, val, verb, spec, &Value::str(val));
            }
            out.push(']');
        }
        Value::Map(m) => {
            out.push_str("map[");
            for (i, (k, val)) in m.iter().enumerate() {
                if i > 0 {
                    out.push(' ');
                }
                fmt_str(out, k, verb, spec, &Value::str(k));
                out.push(':');
                format_arg(out, val, verb, spec, depth + 1);
            }
            out.push(']');
        }
        Value::QueryResult(q) if verb != 'v' => {
            out.push('[');
            for (i, smp) in q.iter().enumerate() {
                if i > 0 {
                    out.push(' ');
                }
                if verb == 'd' {
                    out.push_str("824633724928");
                } else if matches!(verb, 'x' | 'X' | 'o' | 'b') {
                    out.push_str("c000001000");
                } else {
                    bad_verb(out, &Value::Sample(smp.clone()), verb, spec);
                }
            }
            out.push(']');
        }
        Value::Duration(_) => {
            if matches!(verb, 'd' | 'o' | 'b') {
                out.push_str("824633724928");
            } else {
                bad_verb(out, v, verb, spec);
            }
        }
        Value::Time(_) => time_struct(out, v, verb, spec),
        Value::Alert(a) => {
            out.push('{');
            format_arg(
                out,
                &Value::StrMap(Arc::new(a.labels.clone())),
                verb,
                spec,
                1,
            );
            out.push(' ');
            format_arg(
                out,
                &Value::StrMap(Arc::new(a.external_labels.clone())),
                verb,
                spec,
                1,
            );
            out.push(' ');
            format_arg(out, &Value::str(&a.external_url), verb, spec, 1);
            out.push(' ');
            format_arg(out, &a.value, verb, spec, 1);
            out.push('}');
        }
        Value::Sample(s) if depth == 0 => {
            out.push_str("&{");
            format_arg(
                out,
                &Value::StrMap(Arc::new(s.labels.clone())),
                verb,
                spec,
                1,
            );
            out.push(' ');
            format_arg(out, &s.value, verb, spec, 1);
            out.push('}');
        }
        _ => {
            if verb == 'v' {
                pad(out, &v.fmt_v(), spec, false);
            } else {
                // Pointers and the like: Go prints addresses; no stand-in
                // can match, `%v` is as good as any.
                out.push_str(&v.fmt_v());
            }
        }
    }
}

fn fmt_str(out: &mut String, s: &str, verb: char, spec: Spec, v: &Value) {
    let s: String = match spec.prec {
        Some(p) if matches!(verb, 'v' | 's' | 'x' | 'X' | 'q') => s.chars().take(p).collect(),
        _ => s.to_string(),
    };
    match verb {
        'v' | 's' => pad(out, &s, spec, false),
        'q' => {
            let q = if spec.sharp
                && !s.contains('`')
                && s.chars().all(|c| c == '\t' || !c.is_control())
            {
                format!("`{s}`")
            } else {
                go_quote(&s)
            };
            pad(out, &q, spec, false)
        }
        'x' | 'X' => {
            let mut h = String::new();
            for (i, byte) in s.bytes().enumerate() {
                if spec.space && i > 0 {
                    h.push(' ');
                }
                if spec.sharp && (spec.space || i == 0) {
                    h.push_str(if verb == 'x' { "0x" } else { "0X" });
                }
                if verb == 'x' {
                    let _ = write!(h, "{byte:02x}");
                } else {
                    let _ = write!(h, "{byte:02X}");
                }
            }
            pad(out, &h, spec, false)
        }
        _ => bad_verb(out, v, verb, spec),
    }
}

fn fmt_int(out: &mut String, n: i64, verb: char, spec: Spec, v: &Value) {
    let sign = if n < 0 {
        "-"
    } else if spec.plus {
        "+"
    } else if spec.space {
        " "
    } else {
        ""
    };
    let u = n.unsigned_abs();
    let digits = match verb {
        'd' | 'v' => u.to_string(),
        'b' => format!("{u:b}"),
        'o' => {
            if spec.sharp {
                format!("0{u:o}")
            } else {
                format!("{u:o}")
            }
        }
        'O' => format!("0o{u:o}"),
        'x' => {
            if spec.sharp {
                format!("0x{u:x}")
            } else {
                format!("{u:x}")
            }
        }
        'X' => {
            if spec.sharp {
                format!("0X{u:X}")
            } else {
                format!("{u:X}")
            }
        }
        'c' => {
            let c = u32::try_from(n)
                .ok()
                .and_then(char::from_u32)
                .unwrap_or('\u{FFFD}');
            return pad(out, &c.to_string(), spec, false);
        }
        'q' => {
            let c = u32::try_from(n)
                .ok()
                .and_then(char::from_u32)
                .unwrap_or('\u{FFFD}');
            return pad(out, &quote_rune(c), spec, false);
        }
        'U' => {
            let s = format!("U+{u:04X}");
            return pad(out, &s, spec, false);
        }
        _ => return bad_verb(out, v, verb, spec),
    };
    let digits = match spec.prec {
        Some(0) if u == 0 => String::new(),
        Some(p) if digits.len() < p => format!("{}{digits}", "0".repeat(p - digits.len())),
        _ => digits,
    };
    let mut sp = spec;
    if spec.prec.is_some() {
        sp.zero = false;
    }
    pad(out, &format!("{sign}{digits}"), sp, true);
}

/// Go's `%q` of a rune: `'a'`, `'\n'`.
fn quote_rune(c: char) -> String {
    let q = go_quote(&c.to_string());
    let inner = &q[1..q.len() - 1];
    let inner = inner.replace("\\\"", "\"");
    if c == '\'' {
        return "'\\''".into();
    }
    format!("'{inner}'")
}

fn fmt_float(out: &mut String, f: f64, verb: char, spec: Spec, v: &Value) {
    let body = match verb {
        'v' | 'g' | 'G' => match spec.prec {
            Some(p) => format_g_prec(f, p.max(1)),
            None => format_g(f),
        },
        'e' | 'E' => {
            if f.is_finite() {
                format_e_prec(f, spec.prec.unwrap_or(6))
            } else {
                format_g(f)
            }
        }
        'f' | 'F' => {
            if f.is_finite() {
                format!("{:.*}", spec.prec.unwrap_or(6), f)
            } else {
                format_g(f)
            }
        }
        'x' | 'X' => {
            if f.is_finite() {
                let h = hex_float(f, spec.prec);
                if verb == 'X' {
                    h.to_uppercase()
                } else {
                    h
                }
            } else {
                format_g(f)
            }
        }
        _ => return bad_verb(out, v, verb, spec),
    };
    let body = if matches!(verb, 'E' | 'G') {
        body.to_uppercase()
            .replace("INF", "Inf")
            .replace("NAN", "NaN")
    } else {
        body
    };
    let body = if f.is_nan() {
        if spec.plus {
            "+NaN".to_string()
        } else if spec.space {
            " NaN".to_string()
        } else {
            "NaN".to_string()
        }
    } else if f == f64::INFINITY && !spec.plus {
        if spec.space {
            " Inf".to_string()
        } else {
            "+Inf".to_string()
        }
    } else if !body.starts_with(['-', '+']) && spec.plus {
        format!("+{body}")
    } else if !body.starts_with(['-', '+']) && spec.space {
        format!(" {body}")
    } else {
        body
    };
    let mut sp = spec;
    if !f.is_finite() {
        sp.zero = false;
    }
    pad(out, &body, sp, true);
}

/// Go's `%x` of a finite float (`strconv.FormatFloat(f, 'x', prec, 64)`):
/// `-0x1.8p+01`; `prec` hexadecimal digits after the point, or the fewest.
fn hex_float(f: f64, prec: Option<usize>) -> String {
    let sign = if f.is_sign_negative() { "-" } else { "" };
    let bits = f.to_bits();
    let mut exp = ((bits >> 52) & 0x7ff) as i32;
    let mut mant = bits & ((1u64 << 52) - 1);
    if exp == 0 {
        if mant == 0 {
            let zeros = match prec {
                Some(p) if p > 0 => format!(".{}", "0".repeat(p)),
                _ => String::new(),
            };
            return format!("{sign}0x0{zeros}p+00");
        }
        exp = -1022;
        while mant & (1u64 << 52) == 0 {
            mant <<= 1;
            exp -= 1;
        }
    } else {
        mant |= 1u64 << 52;
        exp -= 1023;
    }
    let mut digits = match prec {
        Some(p) if p < 13 => {
            let shift = 52 - 4 * p as u32;
            let keep = mant >> shift;
            let rem = mant & ((1u64 << shift) - 1);
            let half = 1u64 << (shift - 1);
            let mut r = keep;
            if rem > half || (rem == half && keep & 1 == 1) {
                r += 1;
            }
            if r >> (4 * p as u32) >= 2 {
                r >>= 1;
                exp += 1;
            }
            let frac = r & ((1u64 << (4 * p as u32)) - 1);
            if p == 0 {
                String::new()
            } else {
                format!("{frac:0width$x}", width = p)
            }
        }
        Some(p) => {
            let mut d = format!("{:013x}", mant & ((1u64 << 52) - 1));
            d.push_str(&"0".repeat(p - 13));
            d
        }
        None => format!("{:013x}", mant & ((1u64 << 52) - 1))
            .trim_end_matches('0')
            .to_string(),
    };
    if !digits.is_empty() {
        digits.insert(0, '.');
    }
    let (es, ea) = if exp < 0 { ('-', -exp) } else { ('+', exp) };
    format!("{sign}0x1{digits}p{es}{ea:02}")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn f(fmt: &str, args: &[Value]) -> String {
        sprintf(fmt, args)
    }

    #[test]
    fn verbs() {
        assert_eq!(f("%d", &[Value::Int(42)]), "42");
        assert_eq!(
            f(
                "%5d|%-5d|%05d",
                &[Value::Int(1), Value::Int(2), Value::Int(-3)]
            ),
            "    1|2    |-0003"
        );
        assert_eq!(f("%.2f", &[Value::Float(1.23456)]), "1.23");
        assert_eq!(f("%s", &[Value::str("x")]), "x");
        assert_eq!(f("%q", &[Value::str("a\"b")]), "\"a\\\"b\"");
        assert_eq!(f("%d", &[Value::str("x")]), "%!d(string=x)");
        assert_eq!(f("%s", &[Value::Float(1.5)]), "%!s(float64=1.5)");
        assert_eq!(f("%d %d", &[Value::Int(1)]), "1 %!d(MISSING)");
        assert_eq!(
            f("%d", &[Value::Int(1), Value::str("x")]),
            "1%!(EXTRA string=x)"
        );
        assert_eq!(
            f("%v %t %%", &[Value::Nil, Value::Bool(true)]),
            "<nil> true %"
        );
        assert_eq!(f("%e", &[Value::Float(1234.5678)]), "1.234568e+03");
        assert_eq!(f("%g", &[Value::Float(1e21)]), "1e+21");
        assert_eq!(f("%x", &[Value::Int(255)]), "ff");
        assert_eq!(f("%x", &[Value::str("hi")]), "6869");
        assert_eq!(f("%f", &[Value::Float(f64::INFINITY)]), "+Inf");
        assert_eq!(f("%", &[]), "%!(NOVERB)");
        assert_eq!(f("%x", &[Value::Float(1.0)]), "0x1p+00");
        assert_eq!(f("%x", &[Value::Float(-0.001)]), "-0x1.0624dd2f1a9fcp-10");
        assert_eq!(f("%x", &[Value::Float(1000.0)]), "0x1.f4p+09");
        assert_eq!(f("%x", &[Value::Float(0.0)]), "0x0p+00");
    }

    #[test]
    fn sprint_spacing() {
        assert_eq!(sprint(&[Value::Int(1), Value::Int(2)]), "1 2");
        assert_eq!(
            sprint(&[Value::str("a"), Value::Int(2), Value::str("b")]),
            "a2b"
        );
        assert_eq!(sprintln(&[Value::str("a"), Value::str("b")]), "a b\n");
    }
}
