//! String literals decoded as Prometheus (Go's `strconv.Unquote`) does.

/// Decodes a PromQL string literal (quotes included) to bytes as Go's
/// `strconv.Unquote` does: `\x` and octal escapes are raw bytes, so the
/// result need not be UTF-8.
pub fn go_unquote_bytes(lit: &str) -> Option<Vec<u8>> {
    let b = lit.as_bytes();
    let q = *b.first()?;
    if b.len() < 2 || b[b.len() - 1] != q {
        return None;
    }
    let inner = &b[1..b.len() - 1];
    if q == b'`' {
        return Some(inner.to_vec());
    }
    let mut out = Vec::with_capacity(inner.len());
    let mut i = 0;
    let hex = |s: &[u8]| -> Option<u32> {
        let s = std::str::from_utf8(s).ok()?;
        u32::from_str_radix(s, 16).ok()
    };
    while i < inner.len() {
        if inner[i] != b'\\' {
            out.push(inner[i]);
            i += 1;
            continue;
        }
        let c = *inner.get(i + 1)?;
        i += 2;
        match c {
            b'a' => out.push(0x07),
            b'b' => out.push(0x08),
            b'f' => out.push(0x0c),
            b'n' => out.push(b'\n'),
            b'r' => out.push(b'\r'),
            b't' => out.push(b'\t'),
            b'v' => out.push(0x0b),
            b'\\' | b'\'' | b'"' => out.push(c),
            b'x' => {
                out.push(hex(inner.get(i..i + 2)?)? as u8);
                i += 2;
            }
            b'u' | b'U' => {
                let n = if c == b'u' { 4 } else { 8 };
                let ch = char::from_u32(hex(inner.get(i..i + n)?)?)?;
                let mut buf = [0u8; 4];
                out.extend_from_slice(ch.encode_utf8(&mut buf).as_bytes());
                i += n;
            }
            b'0'..=b'7' => {
                let s = std::str::from_utf8(inner.get(i - 1..i + 2)?).ok()?;
                let v = u32::from_str_radix(s, 8).ok()?;
                out.push(u8::try_from(v).ok()?);
                i += 2;
            }
            _ => return None,
        }
    }
    Some(out)
}

/// A string literal's value, and its bytes if they are not UTF-8 (which
/// become U+FFFD in the value); `None` if the literal is malformed.
pub fn unquote_literal(lit: &str) -> Option<(String, Option<Vec<u8>>)> {
    let bytes = go_unquote_bytes(lit)?;
    Some(match String::from_utf8(bytes) {
        Ok(s) => (s, None),
        Err(e) => (
            String::from_utf8_lossy(e.as_bytes()).into_owned(),
            Some(e.into_bytes()),
        ),
    })
}

/// A string literal's value (see [`unquote_literal`]).
pub fn unquote(lit: &str) -> Option<String> {
    unquote_literal(lit).map(|(s, _)| s)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn go_unquoting() {
        assert_eq!(go_unquote_bytes(r#""\xff""#), Some(vec![0xff]));
        assert_eq!(go_unquote_bytes(r#""\377a""#), Some(vec![0xff, b'a']));
        assert_eq!(
            go_unquote_bytes(r#"'\u00ff'"#),
            Some("ÿ".as_bytes().to_vec())
        );
        assert_eq!(go_unquote_bytes(r"`\x`"), Some(br"\x".to_vec()));
        assert_eq!(go_unquote_bytes(r#""\q""#), None);
    }

    #[test]
    fn escapes_decode_as_go_does() {
        assert_eq!(unquote(r#""a\nb""#).as_deref(), Some("a\nb"));
        assert_eq!(unquote(r#""\xc3\xbf""#).as_deref(), Some("\u{ff}"));
        assert_eq!(unquote("`a\\n`").as_deref(), Some("a\\n"));
        assert_eq!(unquote(r#"'\u00e9'"#).as_deref(), Some("\u{e9}"));
        assert_eq!(go_unquote_bytes(r#""\xff""#), Some(vec![0xff]));
        assert!(unquote(r#""\q""#).is_none());
    }
}
