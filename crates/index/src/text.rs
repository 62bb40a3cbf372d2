//! A text form of index contents, shared with the Go cross-check tool.
//!
//! `interop/cmd/promindexgen` implements the same two formats on top of
//! Prometheus' own writer and reader, so an index written by either side
//! can be compared line by line (and byte by byte).
//!
//! **Strings** (label names, values, symbols) are written byte-exact: bytes
//! `0x21..=0x7e` stand for themselves except `%`, `=` and `~`; every other
//! byte is `%XX` (two uppercase hex digits); the empty string is `~`. So a
//! string is never empty and never contains a space.
//!
//! **Spec** (input of `write`): one item per line, `#` starts a comment line.
//!
//! ```text
//! symbol <string>                        an extra symbol (optional)
//! series <name>=<value> <name>=<value>   the next series, in index order
//! chunk <mint> <maxt> <ref>              a chunk of the series above
//! ```
//!
//! The symbol table is every `symbol` string plus every label name and value,
//! sorted and unique. Series are added in the order given, so an unsorted
//! spec is an error on both sides.
//!
//! **Dump** (output of `dump`): deterministic, in this order:
//!
//! ```text
//! version <v>
//! toc symbols=<o> series=<o> label_indices=<o> label_indices_table=<o> postings=<o> postings_table=<o>
//! symbols <count>
//! symbol <string>                                      (each, in table order)
//! label_names <count>
//! label <name> values <count>                          (each name, sorted)
//! value <value> postings <n> <ref> ...                 (each value, sorted)
//! union <name> postings <n> <ref> ...                  (all values at once)
//! all_postings <n>
//! series <ref> <name>=<value> ...                      (each series of all postings)
//! chunk <mint> <maxt> <ref>
//! ```

use std::fmt::Write as _;
use std::path::Path;

use crate::error::{IndexError, Result};
use crate::postings::expand;
use crate::reader::IndexReader;
use crate::writer::IndexWriter;
use crate::ChunkMeta;

/// Appends the text form of `b` to `out`.
pub fn escape_into(b: &[u8], out: &mut String) {
    if b.is_empty() {
        out.push('~');
        return;
    }
    for &c in b {
        if (0x21..=0x7e).contains(&c) && !matches!(c, b'%' | b'=' | b'~') {
            out.push(c as char);
        } else {
            let _ = write!(out, "%{c:02X}");
        }
    }
}

/// The text form of `b`.
pub fn escape(b: &[u8]) -> String {
    let mut s = String::with_capacity(b.len());
    escape_into(b, &mut s);
    s
}

/// Inverse of [`escape`]; `None` if `s` is not a valid text form.
pub fn unescape(s: &str) -> Option<Vec<u8>> {
    if s == "~" {
        return Some(Vec::new());
    }
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'%' => {
                let hex = s.get(i + 1..i + 3)?;
                if !hex
                    .bytes()
                    .all(|c| c.is_ascii_digit() || (b'A'..=b'F').contains(&c))
                {
                    return None;
                }
                out.push(u8::from_str_radix(hex, 16).ok()?);
                i += 3;
            }
            c if (0x21..=0x7e).contains(&c) && c != b'=' && c != b'~' => {
                out.push(c);
                i += 1;
            }
            _ => return None,
        }
    }
    if out.is_empty() {
        return None;
    }
    Some(out)
}

/// One series of a spec.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SpecSeries {
    pub labels: Vec<(Vec<u8>, Vec<u8>)>,
    pub chunks: Vec<ChunkMeta>,
}

/// What to write into an index.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Spec {
    /// Extra symbols, beyond the label names and values.
    pub symbols: Vec<Vec<u8>>,
    pub series: Vec<SpecSeries>,
}

impl Spec {
    /// Parses the spec text format.
    pub fn parse(text: &str) -> Result<Spec> {
        let mut spec = Spec::default();
        for (i, line) in text.lines().enumerate() {
            let bad = |reason: &str| IndexError::Spec {
                line: i + 1,
                reason: reason.to_string(),
            };
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let mut f = line.split_whitespace();
            match f.next() {
                Some("symbol") => {
                    let s = f
                        .next()
                        .and_then(unescape)
                        .ok_or_else(|| bad("bad symbol"))?;
                    if f.next().is_some() {
                        return Err(bad("trailing fields"));
                    }
                    spec.symbols.push(s);
                }
                Some("series") => {
                    let mut labels = Vec::new();
                    for pair in f {
                        let (n, v) = pair
                            .split_once('=')
                            .ok_or_else(|| bad("label without '='"))?;
                        let n = unescape(n).ok_or_else(|| bad("bad label name"))?;
                        let v = unescape(v).ok_or_else(|| bad("bad label value"))?;
                        labels.push((n, v));
                    }
                    spec.series.push(SpecSeries {
                        labels,
                        chunks: Vec::new(),
                    });
                }
                Some("chunk") => {
                    let mut num = || f.next().ok_or_else(|| bad("chunk needs mint maxt ref"));
                    let min_time = num()?.parse().map_err(|_| bad("bad mint"))?;
                    let max_time = num()?.parse().map_err(|_| bad("bad maxt"))?;
                    let chunk_ref = num()?.parse().map_err(|_| bad("bad ref"))?;
                    if f.next().is_some() {
                        return Err(bad("trailing fields"));
                    }
                    let s = spec
                        .series
                        .last_mut()
                        .ok_or_else(|| bad("chunk before any series"))?;
                    s.chunks.push(ChunkMeta {
                        min_time,
                        max_time,
                        chunk_ref,
                    });
                }
                _ => return Err(bad("expected symbol, series or chunk")),
            }
        }
        Ok(spec)
    }

    /// The spec in its text format.
    pub fn to_text(&self) -> String {
        let mut out = String::new();
        for s in &self.symbols {
            out.push_str("symbol ");
            escape_into(s, &mut out);
            out.push('\n');
        }
        for s in &self.series {
            out.push_str("series");
            for (n, v) in &s.labels {
                out.push(' ');
                escape_into(n, &mut out);
                out.push('=');
                escape_into(v, &mut out);
            }
            out.push('\n');
            for c in &s.chunks {
                let _ = writeln!(out, "chunk {} {} {}", c.min_time, c.max_time, c.chunk_ref);
            }
        }
        out
    }

    /// The symbol table: extra symbols and all label strings, sorted, unique.
    pub fn symbol_table(&self) -> Vec<&[u8]> {
        let mut all: Vec<&[u8]> = self.symbols.iter().map(|s| s.as_slice()).collect();
        for s in &self.series {
            for (n, v) in &s.labels {
                all.push(n);
                all.push(v);
            }
        }
        all.sort_unstable();
        all.dedup();
        all
    }

    /// Writes the spec as an index at `path`.
    pub fn write_index(&self, path: &Path) -> Result<()> {
        let mut w = IndexWriter::create(path)?;
        for s in self.symbol_table() {
            w.add_symbol(s)?;
        }
        for s in &self.series {
            w.add_series(&s.labels, &s.chunks)?;
        }
        w.close()
    }
}

fn push_refs(out: &mut String, refs: &[u64]) {
    let _ = write!(out, "postings {}", refs.len());
    for r in refs {
        let _ = write!(out, " {r}");
    }
    out.push('\n');
}

/// The dump text of an index (see the module docs).
pub fn dump(r: &IndexReader) -> Result<String> {
    let mut out = String::new();
    let t = r.toc();
    let _ = writeln!(out, "version {}", r.version());
    let _ = writeln!(
        out,
        "toc symbols={} series={} label_indices={} label_indices_table={} postings={} postings_table={}",
        t.symbols, t.series, t.label_indices, t.label_indices_table, t.postings, t.postings_table
    );
    let symbols = r.symbols().collect::<Result<Vec<_>>>()?;
    let _ = writeln!(out, "symbols {}", symbols.len());
    for s in symbols {
        out.push_str("symbol ");
        escape_into(s, &mut out);
        out.push('\n');
    }
    let names = r.label_names();
    let _ = writeln!(out, "label_names {}", names.len());
    for name in names {
        let values = r.sorted_label_values(name)?;
        out.push_str("label ");
        escape_into(name, &mut out);
        let _ = writeln!(out, " values {}", values.len());
        for v in &values {
            out.push_str("value ");
            escape_into(v, &mut out);
            out.push(' ');
            push_refs(&mut out, &expand(&mut *r.postings(name, &[v])?));
        }
        out.push_str("union ");
        escape_into(name, &mut out);
        out.push(' ');
        push_refs(&mut out, &expand(&mut *r.postings(name, &values)?));
    }
    let all = expand(&mut *r.all_postings()?);
    let _ = writeln!(out, "all_postings {}", all.len());
    let (mut labels, mut chunks) = (Vec::new(), Vec::new());
    for id in all {
        r.series(id, &mut labels, Some(&mut chunks))?;
        let _ = write!(out, "series {id}");
        for l in &labels {
            out.push(' ');
            escape_into(l.name, &mut out);
            out.push('=');
            escape_into(l.value, &mut out);
        }
        out.push('\n');
        for c in &chunks {
            let _ = writeln!(out, "chunk {} {} {}", c.min_time, c.max_time, c.chunk_ref);
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn escape_examples() {
        assert_eq!(escape(b""), "~");
        assert_eq!(escape(b"a b=c%~"), "a%20b%3Dc%25%7E");
        assert_eq!(escape("é".as_bytes()), "%C3%A9");
        assert_eq!(unescape("%c3"), None);
        assert_eq!(unescape(""), None);
    }

    proptest! {
        #[test]
        fn escape_round_trips(b in prop::collection::vec(any::<u8>(), 0..40)) {
            let e = escape(&b);
            prop_assert!(!e.is_empty() && !e.contains(char::is_whitespace));
            prop_assert_eq!(unescape(&e), Some(b));
        }
    }
}
