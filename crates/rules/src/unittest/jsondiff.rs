//! The colored JSON diff `promtool test rules --diff` prints for alerts
//! (`github.com/nsf/jsondiff` with its console options: every item
//! shown, removed ones red, added ones green, changed values yellow as
//! `old => new`, object keys sorted, four spaces a level). Only what the
//! alert lists hold is supported: strings, objects and arrays.

use std::collections::BTreeMap;

use ferrite_model::goquote::quote as go_quote;

/// A JSON value.
#[derive(Debug, Clone, PartialEq)]
pub enum Json {
    /// A string.
    Str(String),
    /// An object.
    Obj(BTreeMap<String, Json>),
    /// An array.
    Arr(Vec<Json>),
}

/// How the documents compare.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Difference {
    /// Equal.
    FullMatch,
    /// The first has more.
    SupersetMatch,
    /// They differ.
    NoMatch,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Tag {
    Normal,
    Added,
    Removed,
    Changed,
}

impl Tag {
    fn begin(self) -> &'static str {
        match self {
            Tag::Normal => "",
            Tag::Added => "\x1b[0;32m",
            Tag::Removed => "\x1b[0;31m",
            Tag::Changed => "\x1b[0;33m",
        }
    }

    fn end(self) -> &'static str {
        match self {
            Tag::Normal => "",
            _ => "\x1b[0m",
        }
    }
}

struct Ctx {
    level: usize,
    last: Option<Tag>,
    diff: Difference,
}

/// Compares `a` (expected) with `b` (got): the verdict and the diff text.
pub fn compare(a: &Json, b: &Json) -> (Difference, String) {
    let mut ctx = Ctx {
        level: 0,
        last: None,
        diff: Difference::FullMatch,
    };
    let text = ctx.print_diff(a, b);
    (ctx.diff, text)
}

impl Ctx {
    fn finalize(&mut self, buf: String) -> String {
        let mut buf = buf;
        if let Some(t) = self.last.take() {
            buf.push_str(t.end());
        }
        buf
    }

    fn newline(&mut self, buf: &mut String, s: &str) {
        buf.push_str(s);
        if let Some(t) = self.last {
            buf.push_str(t.end());
        }
        buf.push('\n');
        for _ in 0..self.level {
            buf.push_str("    ");
        }
        if let Some(t) = self.last {
            buf.push_str(t.begin());
        }
    }

    fn tag(&mut self, buf: &mut String, t: Tag) {
        if self.last == Some(t) {
            return;
        }
        if let Some(l) = self.last {
            buf.push_str(l.end());
        }
        buf.push_str(t.begin());
        self.last = Some(t);
    }

    fn result(&mut self, d: Difference) {
        match d {
            Difference::NoMatch => self.diff = Difference::NoMatch,
            Difference::SupersetMatch if self.diff != Difference::NoMatch => {
                self.diff = Difference::SupersetMatch
            }
            _ => {}
        }
    }

    fn write_value(&mut self, buf: &mut String, v: &Json, full: bool) {
        match v {
            Json::Str(s) => buf.push_str(&go_quote(s)),
            Json::Arr(items) if full => {
                if items.is_empty() {
                    buf.push('[');
                } else {
                    self.level += 1;
                    self.newline(buf, "[");
                }
                for (i, item) in items.iter().enumerate() {
                    self.write_value(buf, item, true);
                    if i + 1 != items.len() {
                        self.newline(buf, ",");
                    } else {
                        self.level -= 1;
                        self.newline(buf, "");
                    }
                }
                buf.push(']');
            }
            Json::Arr(_) => buf.push_str("[]"),
            Json::Obj(m) if full => {
                if m.is_empty() {
                    buf.push('{');
                } else {
                    self.level += 1;
                    self.newline(buf, "{");
                }
                for (i, (k, item)) in m.iter().enumerate() {
                    buf.push_str(&go_quote(k));
                    buf.push_str(": ");
                    self.write_value(buf, item, true);
                    if i + 1 != m.len() {
                        self.newline(buf, ",");
                    } else {
                        self.level -= 1;
                        self.newline(buf, "");
                    }
                }
                buf.push('}');
            }
            Json::Obj(_) => buf.push_str("{}"),
        }
    }

    fn print_mismatch(&mut self, buf: &mut String, a: &Json, b: &Json) {
        self.tag(buf, Tag::Changed);
        self.write_value(buf, a, false);
        buf.push_str(" => ");
        self.write_value(buf, b, false);
    }

    fn print_diff(&mut self, a: &Json, b: &Json) -> String {
        let mut buf = String::new();
        match (a, b) {
            (Json::Str(x), Json::Str(y)) if x != y => {
                self.print_mismatch(&mut buf, a, b);
                self.result(Difference::NoMatch);
                self.finalize(buf)
            }
            (Json::Str(_), Json::Str(_)) => {
                self.tag(&mut buf, Tag::Normal);
                self.write_value(&mut buf, a, true);
                self.result(Difference::FullMatch);
                self.finalize(buf)
            }
            (Json::Arr(x), Json::Arr(y)) => {
                let n = x.len().max(y.len());
                let items: Vec<(Option<&str>, Option<&Json>, Option<&Json>)> =
                    (0..n).map(|i| (None, x.get(i), y.get(i))).collect();
                self.print_collection("[", "]", &items)
            }
            (Json::Obj(x), Json::Obj(y)) => {
                let keys: std::collections::BTreeSet<&String> = x.keys().chain(y.keys()).collect();
                let items: Vec<(Option<&str>, Option<&Json>, Option<&Json>)> = keys
                    .into_iter()
                    .map(|k| (Some(k.as_str()), x.get(k), y.get(k)))
                    .collect();
                self.print_collection("{", "}", &items)
            }
            _ => {
                self.print_mismatch(&mut buf, a, b);
                self.result(Difference::NoMatch);
                self.finalize(buf)
            }
        }
    }

    #[allow(clippy::type_complexity)]
    fn print_collection(
        &mut self,
        open: &str,
        close: &str,
        items: &[(Option<&str>, Option<&Json>, Option<&Json>)],
    ) -> String {
        // The items' own diffs first, one level deeper.
        self.level += 1;
        let diffs: Vec<String> = items
            .iter()
            .map(|(_, a, b)| match (a, b) {
                (Some(a), Some(b)) => self.print_diff(a, b),
                _ => String::new(),
            })
            .collect();
        self.level -= 1;

        let mut buf = String::new();
        self.tag(&mut buf, Tag::Normal);
        if items.is_empty() {
            buf.push_str(open);
            buf.push_str(close);
            return self.finalize(buf);
        }
        self.level += 1;
        self.newline(&mut buf, open);
        for (i, ((key, a, b), diff)) in items.iter().zip(&diffs).enumerate() {
            let write_key = |buf: &mut String| {
                if let Some(k) = key {
                    buf.push_str(&go_quote(k));
                    buf.push_str(": ");
                }
            };
            match (a, b) {
                (Some(_), Some(_)) => {
                    write_key(&mut buf);
                    buf.push_str(diff);
                }
                (Some(a), None) => {
                    self.tag(&mut buf, Tag::Removed);
                    write_key(&mut buf);
                    self.write_value(&mut buf, a, true);
                    self.result(Difference::SupersetMatch);
                }
                (None, Some(b)) => {
                    self.tag(&mut buf, Tag::Added);
                    write_key(&mut buf);
                    self.write_value(&mut buf, b, true);
                    self.result(Difference::NoMatch);
                }
                (None, None) => {}
            }
            if i + 1 < items.len() {
                self.tag(&mut buf, Tag::Normal);
                self.newline(&mut buf, ",");
            } else {
                self.level -= 1;
                self.tag(&mut buf, Tag::Normal);
                self.newline(&mut buf, "");
            }
        }
        buf.push_str(close);
        self.finalize(buf)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn obj(pairs: &[(&str, Json)]) -> Json {
        Json::Obj(
            pairs
                .iter()
                .map(|(k, v)| (k.to_string(), v.clone()))
                .collect(),
        )
    }

    #[test]
    fn unittest_jsondiff_removed_key() {
        let s = |v: &str| Json::Str(v.into());
        let exp = Json::Arr(vec![obj(&[
            ("Labels", obj(&[("alertname", s("Test"))])),
            ("Annotations", obj(&[])),
        ])]);
        let got = Json::Arr(vec![obj(&[
            ("Labels", obj(&[])),
            ("Annotations", obj(&[])),
        ])]);
        let (d, text) = compare(&exp, &got);
        assert_eq!(d, Difference::SupersetMatch);
        assert_eq!(
            text,
            "[\n    {\n        \"Annotations\": {},\n        \"Labels\": {\n            \x1b[0;31m\"alertname\": \"Test\"\x1b[0m\n        }\n    }\n]"
        );
        assert_eq!(compare(&exp, &exp).0, Difference::FullMatch);
    }
}
