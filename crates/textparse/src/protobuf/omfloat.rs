//! `le` and `quantile` values as Prometheus writes them
//! (`labels.FormatOpenMetricsFloat`, the text of
//! [`ferrite_model::gofloat::format_om_float`]), appended to a reused
//! buffer: a classic histogram's bucket series is built without
//! allocating.

/// Appends `f` in OpenMetrics' canonical form: `1.0`, `0.0`, `-1.0`,
/// `NaN`, `+Inf`, `-Inf`, else Go's shortest `%g`, with `.0` appended
/// when it has neither a point nor an exponent.
pub(super) fn write_om_float(out: &mut Vec<u8>, f: f64) {
    let special: Option<&[u8]> = if f == 1.0 {
        Some(b"1.0")
    } else if f == 0.0 {
        Some(b"0.0")
    } else if f == -1.0 {
        Some(b"-1.0")
    } else if f.is_nan() {
        Some(b"NaN")
    } else if f == f64::INFINITY {
        Some(b"+Inf")
    } else if f == f64::NEG_INFINITY {
        Some(b"-Inf")
    } else {
        None
    };
    if let Some(s) = special {
        out.extend_from_slice(s);
        return;
    }
    if f < 0.0 {
        out.push(b'-');
    }
    // The shortest digits that read back (Ryū's, which Go's are), without
    // leading or trailing zeros, and the decimal point's place.
    let mut ryu_buf = ryu::Buffer::new();
    let text = ryu_buf.format_finite(f.abs()).as_bytes();
    let (mantissa, exp) = match text.iter().position(|&b| b == b'e') {
        Some(i) => (&text[..i], parse_exp(&text[i + 1..])),
        None => (text, 0),
    };
    let mut digits = [0u8; 24];
    let mut nd = 0usize;
    let mut point = None;
    for &b in mantissa {
        if b == b'.' {
            point = Some(nd);
        } else if nd < digits.len() {
            digits[nd] = b;
            nd += 1;
        }
    }
    let mut point = point.unwrap_or(nd) as i32 + exp;
    let lead = digits[..nd].iter().take_while(|&&b| b == b'0').count();
    point -= lead as i32;
    digits.copy_within(lead..nd, 0);
    nd -= lead;
    while nd > 1 && digits[nd - 1] == b'0' {
        nd -= 1;
    }
    let d = &digits[..nd];
    let exp = point - 1;
    if !(-4..6).contains(&exp) {
        out.push(d[0]);
        if nd > 1 {
            out.push(b'.');
            out.extend_from_slice(&d[1..]);
        }
        out.push(b'e');
        out.push(if exp < 0 { b'-' } else { b'+' });
        let e = exp.unsigned_abs();
        if e < 10 {
            out.push(b'0');
        }
        let mut tmp = [0u8; 10];
        let mut n = 0;
        let mut v = e;
        loop {
            tmp[n] = b'0' + (v % 10) as u8;
            n += 1;
            v /= 10;
            if v == 0 {
                break;
            }
        }
        out.extend(tmp[..n].iter().rev());
        return;
    }
    if point <= 0 {
        out.extend_from_slice(b"0.");
        out.resize(out.len() + point.unsigned_abs() as usize, b'0');
        out.extend_from_slice(d);
    } else if point as usize >= nd {
        out.extend_from_slice(d);
        out.resize(out.len() + point as usize - nd, b'0');
        out.extend_from_slice(b".0");
    } else {
        out.extend_from_slice(&d[..point as usize]);
        out.push(b'.');
        out.extend_from_slice(&d[point as usize..]);
    }
}

/// Ryū's exponent (`21`, `-7`).
fn parse_exp(b: &[u8]) -> i32 {
    let (neg, digits) = match b.split_first() {
        Some((b'-', rest)) => (true, rest),
        _ => (false, b),
    };
    let v = digits
        .iter()
        .fold(0i32, |v, &c| v * 10 + i32::from(c.wrapping_sub(b'0')));
    if neg {
        -v
    } else {
        v
    }
}

#[cfg(test)]
mod tests {
    use ferrite_model::gofloat::format_om_float;
    use proptest::prelude::*;

    use super::*;

    fn text(f: f64) -> String {
        let mut out = Vec::new();
        write_om_float(&mut out, f);
        String::from_utf8(out).unwrap_or_default()
    }

    #[test]
    fn known_values() {
        for (f, want) in [
            (1.0, "1.0"),
            (0.0, "0.0"),
            (-0.0, "0.0"),
            (-1.0, "-1.0"),
            (f64::NAN, "NaN"),
            (f64::INFINITY, "+Inf"),
            (f64::NEG_INFINITY, "-Inf"),
            (0.5, "0.5"),
            (100000.0, "100000.0"),
            (1e6, "1e+06"),
            (0.0001, "0.0001"),
            (1e-5, "1e-05"),
            (2.5e-7, "2.5e-07"),
            (1e100, "1e+100"),
            (-123.25, "-123.25"),
            (5e-324, "5e-324"),
        ] {
            assert_eq!(text(f), want, "{f}");
            assert_eq!(text(f), format_om_float(f), "{f}");
        }
    }

    proptest! {
        #[test]
        fn same_as_the_models(bits in any::<u64>(), small in -1e7f64..1e7, scale in -30i32..30) {
            let f = f64::from_bits(bits);
            prop_assert_eq!(text(f), format_om_float(f));
            let g = small * 10f64.powi(scale);
            prop_assert_eq!(text(g), format_om_float(g));
        }
    }
}
