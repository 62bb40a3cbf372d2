//! Go's `strconv.Quote` (and `%q` of a string): how Prometheus quotes
//! strings in its messages, in PromQL it prints and in promtool's output;
//! and the JSON strings of its `log/slog` JSON log files. One copy for
//! every crate that must spell strings as Prometheus does.

use std::fmt::Write as _;

/// Whether Go's `unicode.IsPrint` holds: letters, marks, numbers,
/// punctuation, symbols and the ASCII space. Rust's printable table
/// excludes exactly the other categories (controls, format, surrogates,
/// private use, unassigned, separators but ' '); `str::escape_debug` leaves
/// such a char alone when it is not first (where grapheme extenders would
/// be escaped too).
pub fn is_print(c: char) -> bool {
    match c {
        ' '..='~' => true,
        '\0'..='\u{7f}' => false,
        _ => {
            let mut buf = [0u8; 8];
            buf[0] = b'a';
            let s = c.encode_utf8(&mut buf[1..]).len() + 1;
            let probe = std::str::from_utf8(&buf[..s]).unwrap_or("");
            probe.escape_debug().eq(probe.chars())
        }
    }
}

/// `s` quoted as Go's `strconv.Quote` quotes it.
pub fn quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    quote_into(s, &mut out);
    out
}

/// Bytes quoted as `strconv.Quote` quotes a Go string holding them: bytes
/// that are not UTF-8 as `\xNN`.
pub fn quote_bytes(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len() + 2);
    quote_bytes_into(bytes, &mut out);
    out
}

/// Appends [`quote_bytes`] of `bytes`.
pub fn quote_bytes_into(bytes: &[u8], out: &mut String) {
    out.push('"');
    for chunk in bytes.utf8_chunks() {
        push_escaped(chunk.valid(), out);
        for b in chunk.invalid() {
            let _ = write!(out, "\\x{b:02x}");
        }
    }
    out.push('"');
}

/// Appends `s` quoted as Go's `strconv.Quote` quotes it.
pub fn quote_into(s: &str, out: &mut String) {
    out.push('"');
    push_escaped(s, out);
    out.push('"');
}

/// Go's escapes: `\"`, `\\`, `\a`..`\v`, non-printable runes as `\x..`,
/// `\u....` or `\U........`.
fn push_escaped(s: &str, out: &mut String) {
    for c in s.chars() {
        match c {
            '"' | '\\' => {
                out.push('\\');
                out.push(c);
            }
            c if is_print(c) => out.push(c),
            '\u{7}' => out.push_str("\\a"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{b}' => out.push_str("\\v"),
            c if c < ' ' || c == '\u{7f}' => {
                let _ = write!(out, "\\x{:02x}", c as u32);
            }
            c if (c as u32) < 0x10000 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => {
                let _ = write!(out, "\\U{:08x}", c as u32);
            }
        }
    }
}

/// Appends `s` as a JSON string the way Go's `log/slog` JSON handler
/// writes one (the strings of Prometheus' JSON log files): `"` and `\` as
/// `\"` and `\\`, `\n`, `\r` and `\t`, the other control bytes as `\u00xx`,
/// U+2028 and U+2029 as `\u2028` and `\u2029`, everything else (`<`,
/// `&`, any other rune) as it is.
pub fn slog_json_string_into(s: &str, out: &mut Vec<u8>) {
    out.reserve(s.len() + 2);
    out.push(b'"');
    let mut plain = 0;
    for (i, c) in s.char_indices() {
        let named: Option<&[u8]> = match c {
            '"' => Some(b"\\\""),
            '\\' => Some(b"\\\\"),
            '\n' => Some(b"\\n"),
            '\r' => Some(b"\\r"),
            '\t' => Some(b"\\t"),
            '\u{2028}' => Some(b"\\u2028"),
            '\u{2029}' => Some(b"\\u2029"),
            c if c < ' ' => None,
            _ => continue,
        };
        out.extend_from_slice(&s.as_bytes()[plain..i]);
        plain = i + c.len_utf8();
        match named {
            Some(escape) => out.extend_from_slice(escape),
            None => {
                // A control byte: `\u00` and its two lower-case hex digits.
                let hex = b"0123456789abcdef";
                let b = c as usize;
                out.extend_from_slice(b"\\u00");
                out.push(hex[b >> 4]);
                out.push(hex[b & 0xf]);
            }
        }
    }
    out.extend_from_slice(&s.as_bytes()[plain..]);
    out.push(b'"');
}

/// Go's `url.QueryEscape`: letters, digits and `-_.~` kept, a space as
/// `+`, every other byte as `%XX` (upper-case hex).
pub fn query_escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                out.push(char::from(b))
            }
            b' ' => out.push('+'),
            _ => {
                const HEX: &[u8; 16] = b"0123456789ABCDEF";
                out.push('%');
                out.push(char::from(HEX[usize::from(b >> 4)]));
                out.push(char::from(HEX[usize::from(b & 15)]));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quotes_as_go_does() {
        // Strings Go's strconv.Quote printed.
        for (s, want) in [
            ("a", r#""a""#),
            ("a\"b\\c", r#""a\"b\\c""#),
            ("\n\t\r\u{7}\u{8}\u{c}\u{b}", r#""\n\t\r\a\b\f\v""#),
            ("\u{0}\u{1f}\u{7f}", r#""\x00\x1f\x7f""#),
            ("é日本", r#""é日本""#),
            ("\u{200b}", r#""\u200b""#),
            ("\u{feff}", r#""\ufeff""#),
            ("\u{e000}", r#""\ue000""#),
            ("\u{10ffff}", r#""\U0010ffff""#),
        ] {
            assert_eq!(quote(s), want, "{s:?}");
        }
        assert_eq!(quote_bytes(b"a\xffb"), r#""a\xffb""#);
    }

    #[test]
    fn json_strings_as_slog_writes_them() {
        // Strings Go's log/slog JSON handler wrote.
        for (s, want) in [
            ("", r#""""#),
            ("a<b>&c", r#""a<b>&c""#),
            ("a\"b\\c", r#""a\"b\\c""#),
            (
                "\n\r\t\u{8}\u{c}\u{1b}\u{7f}",
                "\"\\n\\r\\t\\u0008\\u000c\\u001b\u{7f}\"",
            ),
            ("é\u{2028}x\u{2029}", r#""é\u2028x\u2029""#),
        ] {
            let mut out = Vec::new();
            slog_json_string_into(s, &mut out);
            assert_eq!(String::from_utf8_lossy(&out), want, "{s:?}");
        }
    }
}
