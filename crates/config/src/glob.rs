//! `rule_files` and `scrape_config_files` patterns expanded as Go's
//! `filepath.Glob` expands them (Prometheus calls it on every pattern at
//! each (re)load).
//!
//! A pattern without magic characters (`*?[\`) names itself if the file
//! exists. Otherwise its last element is matched against the entries of
//! its directory (whose own magic characters are expanded first), in
//! lexical order: `*` is any run of characters but `/`, `?` one
//! character, `[a-z]`/`[^...]` a class, `\` escapes. I/O errors are
//! ignored (nothing matches); a malformed pattern is Go's
//! `syntax error in pattern`.

use std::path::Path;

/// Go's `filepath.ErrBadPattern` text.
pub const BAD_PATTERN: &str = "syntax error in pattern";

/// The paths `pattern` matches, in Go's order; the error is a malformed
/// pattern's.
pub fn glob(pattern: &str) -> Result<Vec<String>, &'static str> {
    glob_at_depth(pattern, 0)
}

fn glob_at_depth(pattern: &str, depth: usize) -> Result<Vec<String>, &'static str> {
    // Go's bound on the recursion through directories.
    if depth >= 10_000 {
        return Err(BAD_PATTERN);
    }
    validate(pattern)?;
    if !has_meta(pattern) {
        return Ok(match std::fs::symlink_metadata(pattern) {
            Ok(_) => vec![pattern.to_string()],
            Err(_) => Vec::new(),
        });
    }
    let (dir, file) = match pattern.rfind('/') {
        Some(i) => (&pattern[..=i], &pattern[i + 1..]),
        None => ("", pattern),
    };
    let dir = match dir {
        "" => ".",
        "/" => "/",
        d => &d[..d.len() - 1],
    };
    if !has_meta(dir) {
        return matches_in(dir, file);
    }
    if dir == pattern {
        return Err(BAD_PATTERN);
    }
    let mut out = Vec::new();
    for d in glob_at_depth(dir, depth + 1)? {
        out.extend(matches_in(&d, file)?);
    }
    Ok(out)
}

fn has_meta(s: &str) -> bool {
    s.contains(['*', '?', '[', '\\'])
}

/// The entries of `dir` whose names match `pattern`, sorted, joined to
/// `dir` (`dir/name`; just `name` in `.`).
fn matches_in(dir: &str, pattern: &str) -> Result<Vec<String>, &'static str> {
    let is_dir = std::fs::metadata(dir).is_ok_and(|m| m.is_dir());
    if !is_dir {
        return Ok(Vec::new());
    }
    let Ok(entries) = std::fs::read_dir(Path::new(dir)) else {
        return Ok(Vec::new());
    };
    let mut names: Vec<String> = entries
        .filter_map(|e| e.ok())
        .filter_map(|e| e.file_name().into_string().ok())
        .collect();
    names.sort();
    let mut out = Vec::new();
    for n in names {
        if matches(pattern, &n)? {
            out.push(match dir {
                "." => n,
                "/" => format!("/{n}"),
                d => format!("{d}/{n}"),
            });
        }
    }
    Ok(out)
}

/// One element of a pattern.
#[derive(Debug, Clone)]
enum Token {
    /// `*`
    Star,
    /// `?`
    Any,
    /// A character (escaped or not).
    Char(char),
    /// `[...]`: negated, and ranges (inclusive).
    Class(bool, Vec<(char, char)>),
}

/// Checks a pattern's syntax (as `filepath.Match(pattern, "")` does).
fn validate(pattern: &str) -> Result<(), &'static str> {
    tokens(pattern).map(drop)
}

fn tokens(pattern: &str) -> Result<Vec<Token>, &'static str> {
    let mut out = Vec::new();
    let mut chars = pattern.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '*' => out.push(Token::Star),
            '?' => out.push(Token::Any),
            '\\' => out.push(Token::Char(chars.next().ok_or(BAD_PATTERN)?)),
            '[' => {
                let negated = chars.next_if_eq(&'^').is_some();
                let mut ranges = Vec::new();
                loop {
                    if chars.peek() == Some(&']') && !ranges.is_empty() {
                        chars.next();
                        break;
                    }
                    let lo = class_char(&mut chars)?;
                    let hi = if chars.next_if_eq(&'-').is_some() {
                        class_char(&mut chars)?
                    } else {
                        lo
                    };
                    ranges.push((lo, hi));
                }
                out.push(Token::Class(negated, ranges));
            }
            c => out.push(Token::Char(c)),
        }
    }
    Ok(out)
}

/// A character inside a class: escaped, or anything but `-` and `]`.
fn class_char(chars: &mut std::iter::Peekable<std::str::Chars<'_>>) -> Result<char, &'static str> {
    match chars.next() {
        None | Some('-') | Some(']') => Err(BAD_PATTERN),
        Some('\\') => chars.next().ok_or(BAD_PATTERN),
        Some(c) => Ok(c),
    }
}

/// Whether `name` (one path element) matches `pattern`.
pub fn matches(pattern: &str, name: &str) -> Result<bool, &'static str> {
    let toks = tokens(pattern)?;
    let name: Vec<char> = name.chars().collect();
    Ok(match_from(&toks, &name))
}

/// Backtracking match: at each star, the shortest run that lets the rest
/// match (`*` never spans a `/`).
fn match_from(toks: &[Token], name: &[char]) -> bool {
    // Positions to resume from after a star: (token index, name index).
    let (mut t, mut n) = (0, 0);
    let mut resume: Option<(usize, usize)> = None;
    loop {
        if t < toks.len() {
            match &toks[t] {
                Token::Star => {
                    resume = Some((t, n));
                    t += 1;
                    continue;
                }
                tok if n < name.len() && one(tok, name[n]) => {
                    t += 1;
                    n += 1;
                    continue;
                }
                _ => {}
            }
        } else if n == name.len() {
            return true;
        }
        // Mismatch: let the last star take one more character.
        match resume {
            Some((st, sn)) if sn < name.len() && name[sn] != '/' => {
                resume = Some((st, sn + 1));
                t = st + 1;
                n = sn + 1;
            }
            _ => return false,
        }
    }
}

fn one(tok: &Token, c: char) -> bool {
    match tok {
        Token::Any => c != '/',
        Token::Char(x) => *x == c,
        Token::Class(negated, ranges) => {
            let inside = ranges.iter().any(|&(lo, hi)| lo <= c && c <= hi);
            c != '/' && inside != *negated
        }
        Token::Star => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matching_as_go_matches() {
        for (p, n, want) in [
            ("*.yml", "a.yml", true),
            ("*.yml", ".yml", true),
            ("*.yml", "a.yaml", false),
            ("a*b*c", "abc", true),
            ("a*b*c", "axxbyyc", true),
            ("a*b*c", "axxbyy", false),
            ("?", "é", true),
            ("[a-c]x", "bx", true),
            ("[^a-c]x", "bx", false),
            ("[^a-c]x", "dx", true),
            ("\\*", "*", true),
            ("\\*", "a", false),
            ("*", "", true),
        ] {
            assert_eq!(matches(p, n), Ok(want), "{p} {n}");
        }
        for bad in ["[", "[]", "[a-", "\\", "[^]", "a[-b]"] {
            assert_eq!(matches(bad, "x"), Err(BAD_PATTERN), "{bad}");
        }
    }

    #[test]
    fn globs_a_directory() {
        let dir = tempfile::tempdir().expect("tempdir");
        let d = dir.path().display().to_string();
        for f in ["b.yml", "a.yml", "c.txt"] {
            std::fs::write(dir.path().join(f), "").expect("write");
        }
        std::fs::create_dir(dir.path().join("sub")).expect("mkdir");
        std::fs::write(dir.path().join("sub/x.yml"), "").expect("write");
        assert_eq!(
            glob(&format!("{d}/*.yml")),
            Ok(vec![format!("{d}/a.yml"), format!("{d}/b.yml")])
        );
        assert_eq!(
            glob(&format!("{d}/s?b/*.yml")),
            Ok(vec![format!("{d}/sub/x.yml")])
        );
        assert_eq!(glob(&format!("{d}/a.yml")), Ok(vec![format!("{d}/a.yml")]));
        assert_eq!(glob(&format!("{d}/none.yml")), Ok(vec![]));
        assert_eq!(glob(&format!("{d}/[.yml")), Err(BAD_PATTERN));
    }
}
