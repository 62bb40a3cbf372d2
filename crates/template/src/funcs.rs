//! `text/template`'s built-in functions (`not`, `len`, `index`, `slice`,
//! the comparisons, `print`/`printf`/`println`, `html`, `js`, `urlquery`;
//! `and`, `or` and `call` are handled by the executor), with Go's errors.
//! Panics Go's template recovers from become their error text.

use std::sync::Arc;

use crate::printf::{sprint, sprintf, sprintln};
use crate::value::Value;
use ferrite_model::goquote::query_escape;

/// Calls the built-in `name`; `None` when it is not one of these.
pub(crate) fn call(name: &str, a: &[Value]) -> Option<Result<Value, String>> {
    let first = a.first().cloned().unwrap_or_default();
    Some(match name {
        "not" => Ok(Value::Bool(!first.truth())),
        "len" => length(&first),
        "index" => index(&first, &a[1.min(a.len())..]),
        "eq" => eq(&first, &a[1.min(a.len())..]).map(Value::Bool),
        "ne" => eq(&first, &a[1.min(a.len())..]).map(|b| Value::Bool(!b)),
        "lt" => lt(&first, a.get(1).unwrap_or(&Value::Nil)).map(Value::Bool),
        "le" => le(&first, a.get(1).unwrap_or(&Value::Nil)).map(Value::Bool),
        "gt" => le(&first, a.get(1).unwrap_or(&Value::Nil)).map(|b| Value::Bool(!b)),
        "ge" => lt(&first, a.get(1).unwrap_or(&Value::Nil)).map(|b| Value::Bool(!b)),
        "print" => Ok(Value::str(&sprint(a))),
        "println" => Ok(Value::str(&sprintln(a))),
        "printf" => {
            let format = match &first {
                Value::Str(s) => s.to_string(),
                _ => String::new(),
            };
            Ok(Value::str(&sprintf(&format, &a[1.min(a.len())..])))
        }
        "html" => Ok(Value::str(&html_escape(&eval_args(a)))),
        "js" => Ok(Value::str(&js_escape(&eval_args(a)))),
        "urlquery" => Ok(Value::str(&query_escape(&eval_args(a)))),
        _ => return None,
    })
}

/// The panic text of `reflect.Value.Type` on a zero value.
const ZERO_TYPE: &str = "reflect: call of reflect.Value.Type on zero Value";

/// The type a pointer points to (what `indirect` reaches).
fn elem_type(v: &Value) -> &'static str {
    match v {
        Value::Sample(_) => "template.sample",
        Value::Histogram(_) => "histogram.FloatHistogram",
        Value::Time(_) => "time.Time",
        Value::Duration(_) => "time.Duration",
        other => other.type_name(),
    }
}

fn length(v: &Value) -> Result<Value, String> {
    let n = match v {
        Value::Str(s) | Value::Html(s) => s.len(),
        Value::StrMap(m) => m.len(),
        Value::Map(m) => m.len(),
        Value::QueryResult(q) => q.len(),
        Value::Nil => return Err(ZERO_TYPE.into()),
        other => return Err(format!("len of type {}", elem_type(other))),
    };
    Ok(Value::Int(n as i64))
}

/// Go's `indexArg`: an index into something of capacity `cap`.
fn index_arg(i: &Value, cap: usize) -> Result<usize, String> {
    let x = match i {
        Value::Int(n) => *n,
        Value::Uint8(n) => i64::from(*n),
        Value::Nil => return Err("cannot index slice/array with nil".into()),
        other => {
            return Err(format!(
                "cannot index slice/array with type {}",
                other.type_name()
            ))
        }
    };
    if x < 0 || x as u64 > cap as u64 {
        return Err(format!("index out of range: {x}"));
    }
    Ok(x as usize)
}

fn index(item: &Value, indexes: &[Value]) -> Result<Value, String> {
    if matches!(item, Value::Nil) {
        return Err("index of untyped nil".into());
    }
    let mut item = item.clone();
    for i in indexes {
        item = match &item {
            Value::Str(s) | Value::Html(s) => {
                let x = index_arg(i, s.len())?;
                match s.as_bytes().get(x) {
                    Some(b) => Value::Uint8(*b),
                    None => return Err("reflect: string index out of range".into()),
                }
            }
            Value::QueryResult(q) => {
                let x = index_arg(i, q.len())?;
                match q.get(x) {
                    Some(s) => Value::Sample(Arc::clone(s)),
                    None => return Err("reflect: slice index out of range".into()),
                }
            }
            Value::StrMap(m) => {
                let key = map_key(i)?;
                Value::str(m.get(&key).map(String::as_str).unwrap_or(""))
            }
            Value::Map(m) => {
                let key = map_key(i)?;
                m.get(&key).cloned().unwrap_or(Value::Nil)
            }
            // Only a nil out of a map of interfaces gets here.
            Value::Nil => return Err("index of nil pointer".into()),
            other => return Err(format!("can't index item of type {}", elem_type(other))),
        };
    }
    Ok(item)
}

/// Go's `prepareArg` for a `string` map key.
fn map_key(i: &Value) -> Result<String, String> {
    match i {
        Value::Str(s) => Ok(s.to_string()),
        Value::Nil => Err("value is nil; should be of type string".into()),
        other => Err(format!(
            "value has type {}; should be string",
            other.type_name()
        )),
    }
}

/// `slice item indexes...`; `ifaces[i]` tells that argument `i` is a
/// field of type `interface {}`, which Go refuses as an index.
pub(crate) fn slice(a: &[Value], ifaces: &[bool]) -> Result<Value, String> {
    let item = a.first().unwrap_or(&Value::Nil);
    let indexes = &a[1.min(a.len())..];
    if matches!(item, Value::Nil) {
        return Err("slice of untyped nil".into());
    }
    if indexes.len() > 3 {
        return Err(format!("too many slice indexes: {}", indexes.len()));
    }
    let len = match item {
        Value::Str(s) | Value::Html(s) => {
            if indexes.len() == 3 {
                return Err("cannot 3-index slice a string".into());
            }
            s.len()
        }
        Value::QueryResult(q) => q.len(),
        other => return Err(format!("can't slice item of type {}", elem_type(other))),
    };
    let mut idx = [0, len, len];
    for (k, i) in indexes.iter().enumerate() {
        if ifaces.get(k + 1).copied().unwrap_or(false) {
            return Err("cannot index slice/array with type interface {}".into());
        }
        idx[k] = index_arg(i, len)?;
    }
    if idx[0] > idx[1] {
        return Err(format!("invalid slice index: {} > {}", idx[0], idx[1]));
    }
    if indexes.len() == 3 && idx[1] > idx[2] {
        return Err(format!("invalid slice index: {} > {}", idx[1], idx[2]));
    }
    Ok(match item {
        Value::Str(s) => Value::str(&String::from_utf8_lossy(&s.as_bytes()[idx[0]..idx[1]])),
        Value::Html(s) => Value::Html(Arc::from(
            String::from_utf8_lossy(&s.as_bytes()[idx[0]..idx[1]]).as_ref(),
        )),
        Value::QueryResult(q) => Value::QueryResult(Arc::new(q[idx[0]..idx[1]].to_vec())),
        _ => Value::Nil,
    })
}

/// Go's `basicKind` classes.
#[derive(PartialEq, Eq, Clone, Copy)]
enum Basic {
    Invalid,
    Bool,
    Int,
    Uint,
    Float,
    Str,
}

fn basic(v: &Value) -> Basic {
    match v {
        Value::Bool(_) => Basic::Bool,
        Value::Int(_) => Basic::Int,
        Value::Uint8(_) => Basic::Uint,
        Value::Float(_) => Basic::Float,
        Value::Str(_) | Value::Html(_) => Basic::Str,
        _ => Basic::Invalid,
    }
}

fn str_of(v: &Value) -> &str {
    match v {
        Value::Str(s) | Value::Html(s) => s,
        _ => "",
    }
}

fn eq(a: &Value, others: &[Value]) -> Result<bool, String> {
    if others.is_empty() {
        return Err("missing argument for comparison".into());
    }
    let k1 = basic(a);
    for b in others {
        let k2 = basic(b);
        let truth =
            if let (Value::Int(x), Value::Uint8(y)) | (Value::Uint8(y), Value::Int(x)) = (a, b) {
                *x == i64::from(*y)
            } else if k1 != k2 {
                if !matches!(a, Value::Nil) && !matches!(b, Value::Nil) {
                    return Err(format!(
                        "incompatible types for comparison: {} and {}",
                        a.type_name(),
                        b.type_name()
                    ));
                }
                false
            } else {
                match (a, b) {
                    (Value::Bool(x), Value::Bool(y)) => x == y,
                    (Value::Int(x), Value::Int(y)) => x == y,
                    (Value::Uint8(x), Value::Uint8(y)) => x == y,
                    (Value::Float(x), Value::Float(y)) => x == y,
                    _ if k1 == Basic::Str => str_of(a) == str_of(b),
                    _ => {
                        let (ka, kb) = (a.kind_name(), b.kind_name());
                        if ka != kb && ka != "invalid" && kb != "invalid" {
                            return Err(format!(
                                "non-comparable types {}: {}, {}: {}",
                                sprintf("%s", std::slice::from_ref(a)),
                                a.type_name(),
                                b.type_name(),
                                b.fmt_v()
                            ));
                        }
                        match (a, b) {
                            (Value::Nil, Value::Nil) => true,
                            (Value::Nil, _) | (_, Value::Nil) => false,
                            (
                                Value::StrMap(_)
                                | Value::Map(_)
                                | Value::QueryResult(_)
                                | Value::Alert(_),
                                _,
                            ) => {
                                return Err(format!(
                                    "non-comparable type {}: {}",
                                    sprintf("%s", std::slice::from_ref(b)),
                                    b.type_name()
                                ))
                            }
                            (Value::Sample(x), Value::Sample(y)) => Arc::ptr_eq(x, y),
                            (Value::Histogram(x), Value::Histogram(y)) => Arc::ptr_eq(x, y),
                            _ => false,
                        }
                    }
                }
            };
        if truth {
            return Ok(true);
        }
    }
    Ok(false)
}

fn lt(a: &Value, b: &Value) -> Result<bool, String> {
    let k1 = basic(a);
    if k1 == Basic::Invalid {
        return Err("invalid type for comparison".into());
    }
    let k2 = basic(b);
    if k2 == Basic::Invalid {
        return Err("invalid type for comparison".into());
    }
    match (a, b) {
        (Value::Int(x), Value::Uint8(y)) => return Ok(*x < i64::from(*y)),
        (Value::Uint8(x), Value::Int(y)) => return Ok(i64::from(*x) < *y),
        (Value::Uint8(x), Value::Uint8(y)) => return Ok(x < y),
        _ => {}
    }
    if k1 != k2 {
        return Err(format!(
            "incompatible types for comparison: {} and {}",
            a.type_name(),
            b.type_name()
        ));
    }
    Ok(match (a, b) {
        (Value::Int(x), Value::Int(y)) => x < y,
        (Value::Float(x), Value::Float(y)) => x < y,
        _ if k1 == Basic::Str => str_of(a) < str_of(b),
        _ => return Err("invalid type for comparison".into()),
    })
}

fn le(a: &Value, b: &Value) -> Result<bool, String> {
    if lt(a, b)? {
        return Ok(true);
    }
    eq(a, std::slice::from_ref(b))
}

/// Go's `evalArgs` for `html`, `js`, `urlquery`: one string as is,
/// otherwise the printed values joined as `fmt.Sprint` does.
fn eval_args(a: &[Value]) -> String {
    if let [Value::Str(s)] = a {
        return s.to_string();
    }
    let printed: Vec<Value> = a
        .iter()
        .map(|v| match v {
            Value::Nil => Value::str("<no value>"),
            Value::Sample(_) | Value::Time(_) | Value::Duration(_) => Value::str(&v.print()),
            other => other.clone(),
        })
        .collect();
    sprint(&printed)
}

/// Go's `template.HTMLEscapeString`.
pub(crate) fn html_escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '\0' => out.push('\u{FFFD}'),
            '"' => out.push_str("&#34;"),
            '\'' => out.push_str("&#39;"),
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            c => out.push(c),
        }
    }
    out
}

/// Go's `template.JSEscapeString`.
pub(crate) fn js_escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\'' => out.push_str("\\'"),
            '"' => out.push_str("\\\""),
            '<' => out.push_str("\\u003C"),
            '>' => out.push_str("\\u003E"),
            '&' => out.push_str("\\u0026"),
            '=' => out.push_str("\\u003D"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u00{:02X}", c as u32)),
            c if (c as u32) >= 0x80 => {
                if ferrite_model::goquote::is_print(c) {
                    out.push(c);
                } else {
                    out.push_str(&format!("\\u{:04X}", c as u32));
                }
            }
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn comparisons() {
        assert!(matches!(eq(&Value::Int(1), &[Value::Int(1)]), Ok(true)));
        assert_eq!(
            lt(&Value::Float(1.0), &Value::Int(1)).expect_err("types"),
            "incompatible types for comparison: float64 and int"
        );
        assert_eq!(
            lt(&Value::Bool(true), &Value::Bool(false)).expect_err("bools"),
            "invalid type for comparison"
        );
        assert!(matches!(
            eq(&Value::str("a"), &[Value::Html(Arc::from("a"))]),
            Ok(true)
        ));
        assert!(matches!(eq(&Value::Nil, &[Value::Int(1)]), Ok(false)));
    }

    #[test]
    fn escapes() {
        assert_eq!(
            html_escape("<a href='x'>&\"</a>"),
            "&lt;a href=&#39;x&#39;&gt;&amp;&#34;&lt;/a&gt;"
        );
        assert_eq!(js_escape("a'b=<\n"), "a\\'b\\u003D\\u003C\\u000A");
    }
}
