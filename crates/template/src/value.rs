//! Template values: what `.`, variables and function results hold, with the
//! Go type each stands for (named in error messages and by `%T`), Go's
//! truthiness and Go's `fmt` printing (`%v`).

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::sync::Arc;

use ferrite_model::gofloat::format_g;
use ferrite_model::{FloatHistogram, Labels};

/// One element of a query result (Prometheus' `*sample`): the series'
/// labels and its value (a float, or a histogram).
#[derive(Debug, Clone)]
pub struct Sample {
    /// The series' labels, by name.
    pub labels: BTreeMap<String, String>,
    /// `Value::Float` or `Value::Histogram`.
    pub value: Value,
}

/// The data of an alert's templates (Prometheus' `AlertTemplateData`).
#[derive(Debug, Clone)]
pub struct AlertData {
    /// `.Labels`.
    pub labels: BTreeMap<String, String>,
    /// `.ExternalLabels`.
    pub external_labels: BTreeMap<String, String>,
    /// `.ExternalURL`.
    pub external_url: String,
    /// `.Value`: `Value::Float` or `Value::Histogram`.
    pub value: Value,
}

/// A template value (what `.` and variables hold). Each variant stands for
/// the Go type Prometheus' templates see.
#[derive(Debug, Clone, Default)]
pub enum Value {
    /// No value (Go's invalid `reflect.Value` or a nil interface).
    #[default]
    Nil,
    /// `bool`.
    Bool(bool),
    /// `int` (number literals without a point or exponent).
    Int(i64),
    /// `float64`.
    Float(f64),
    /// `uint8` (a byte of a string, from `index`).
    Uint8(u8),
    /// `string`.
    Str(Arc<str>),
    /// `html/template.HTML` (what `safeHtml` returns).
    Html(Arc<str>),
    /// `map[string]string` (labels).
    StrMap(Arc<BTreeMap<String, String>>),
    /// `map[string]interface {}` (what `args` returns).
    Map(Arc<BTreeMap<String, Value>>),
    /// `template.queryResult` (`[]*sample`, what `query` returns).
    QueryResult(Arc<Vec<Arc<Sample>>>),
    /// `*template.sample`.
    Sample(Arc<Sample>),
    /// `*histogram.FloatHistogram`.
    Histogram(Arc<FloatHistogram>),
    /// `*time.Time`: nanoseconds since the epoch, UTC.
    Time(i64),
    /// `*time.Duration`: nanoseconds.
    Duration(i64),
    /// The alert template data struct.
    Alert(Arc<AlertData>),
}

/// The Go struct type of [`AlertData`] as `reflect` names it.
pub(crate) const ALERT_TYPE: &str = "struct { Labels map[string]string; ExternalLabels map[string]string; ExternalURL string; Value interface {} }";

impl Value {
    /// A `string`.
    pub fn str(s: &str) -> Value {
        Value::Str(Arc::from(s))
    }

    /// A `map[string]string` of labels.
    pub fn labels(l: &Labels) -> Value {
        Value::StrMap(Arc::new(labels_map(l)))
    }

    /// The Go type name (`%T`, and `reflect.Type.String()` in errors).
    pub fn type_name(&self) -> &'static str {
        match self {
            Value::Nil => "<nil>",
            Value::Bool(_) => "bool",
            Value::Int(_) => "int",
            Value::Uint8(_) => "uint8",
            Value::Float(_) => "float64",
            Value::Str(_) => "string",
            Value::Html(_) => "template.HTML",
            Value::StrMap(_) => "map[string]string",
            Value::Map(_) => "map[string]interface {}",
            Value::QueryResult(_) => "template.queryResult",
            Value::Sample(_) => "*template.sample",
            Value::Histogram(_) => "*histogram.FloatHistogram",
            Value::Time(_) => "*time.Time",
            Value::Duration(_) => "*time.Duration",
            Value::Alert(_) => ALERT_TYPE,
        }
    }

    /// Go's `reflect.Kind` name of the value.
    pub(crate) fn kind_name(&self) -> &'static str {
        match self {
            Value::Nil => "invalid",
            Value::Bool(_) => "bool",
            Value::Int(_) => "int",
            Value::Uint8(_) => "uint8",
            Value::Float(_) => "float64",
            Value::Str(_) | Value::Html(_) => "string",
            Value::StrMap(_) | Value::Map(_) => "map",
            Value::QueryResult(_) => "slice",
            Value::Sample(_) | Value::Histogram(_) | Value::Time(_) | Value::Duration(_) => "ptr",
            Value::Alert(_) => "struct",
        }
    }

    /// Go's truth (`if`, `with`, `and`, `or`, `not`): not the zero value.
    pub(crate) fn truth(&self) -> bool {
        match self {
            Value::Nil => false,
            Value::Bool(b) => *b,
            Value::Int(i) => *i != 0,
            Value::Uint8(i) => *i != 0,
            Value::Float(f) => *f != 0.0,
            Value::Str(s) | Value::Html(s) => !s.is_empty(),
            Value::StrMap(m) => !m.is_empty(),
            Value::Map(m) => !m.is_empty(),
            Value::QueryResult(v) => !v.is_empty(),
            Value::Sample(_)
            | Value::Histogram(_)
            | Value::Time(_)
            | Value::Duration(_)
            | Value::Alert(_) => true,
        }
    }

    /// The text `{{ value }}` prints (`fmt.Fprint` of the value with
    /// pointers followed): `<no value>` for nil.
    pub(crate) fn print(&self) -> String {
        match self {
            Value::Nil => "<no value>".into(),
            Value::Sample(s) => sample_struct(s),
            _ => self.fmt_v(),
        }
    }

    /// Go's `%v` of the value as an argument (`fmt.Sprint`, `printf`).
    pub(crate) fn fmt_v(&self) -> String {
        let mut out = String::new();
        self.write_v(&mut out, 0);
        out
    }

    fn write_v(&self, out: &mut String, depth: usize) {
        match self {
            Value::Nil => out.push_str("<nil>"),
            Value::Bool(b) => {
                let _ = write!(out, "{b}");
            }
            Value::Int(i) => {
                let _ = write!(out, "{i}");
            }
            Value::Uint8(i) => {
                let _ = write!(out, "{i}");
            }
            Value::Float(f) => out.push_str(&format_g(*f)),
            Value::Str(s) | Value::Html(s) => out.push_str(s),
            Value::StrMap(m) => {
                out.push_str("map[");
                for (i, (k, v)) in m.iter().enumerate() {
                    if i > 0 {
                        out.push(' ');
                    }
                    let _ = write!(out, "{k}:{v}");
                }
                out.push(']');
            }
            Value::Map(m) => {
                out.push_str("map[");
                for (i, (k, v)) in m.iter().enumerate() {
                    if i > 0 {
                        out.push(' ');
                    }
                    out.push_str(k);
                    out.push(':');
                    v.write_v(out, depth + 1);
                }
                out.push(']');
            }
            Value::QueryResult(v) => {
                // Go prints the pointers' addresses; any stand-in will do.
                out.push('[');
                for (i, _) in v.iter().enumerate() {
                    if i > 0 {
                        out.push(' ');
                    }
                    let _ = write!(out, "0xc{:09x}", 0x1000 + i * 0x10);
                }
                out.push(']');
            }
            Value::Sample(s) => {
                if depth == 0 {
                    out.push('&');
                    out.push_str(&sample_struct(s));
                } else {
                    out.push_str("0xc000001000");
                }
            }
            Value::Histogram(h) => out.push_str(&h.go_string()),
            Value::Time(ns) => out.push_str(&time_string(*ns)),
            Value::Duration(ns) => out.push_str(&duration_string(*ns)),
            Value::Alert(a) => {
                let _ = write!(
                    out,
                    "{{{} {} {} ",
                    Value::StrMap(Arc::new(a.labels.clone())).fmt_v(),
                    Value::StrMap(Arc::new(a.external_labels.clone())).fmt_v(),
                    a.external_url
                );
                a.value.write_v(out, depth + 1);
                out.push('}');
            }
        }
    }
}

/// A sample struct as `fmt` prints it: `{map[a:b] 1}`.
fn sample_struct(s: &Sample) -> String {
    let mut out = String::from("{");
    out.push_str(&Value::StrMap(Arc::new(s.labels.clone())).fmt_v());
    out.push(' ');
    s.value.write_v(&mut out, 1);
    out.push('}');
    out
}

/// Labels as a Go `map[string]string`.
pub(crate) fn labels_map(l: &Labels) -> BTreeMap<String, String> {
    l.iter()
        .map(|l| (l.name.to_string(), l.value.to_string()))
        .collect()
}

/// Go's `time.Time.String()` of a UTC time:
/// `2006-01-02 15:04:05.999999999 +0000 UTC`.
pub(crate) fn time_string(ns: i64) -> String {
    let secs = ns.div_euclid(1_000_000_000);
    let frac = ns.rem_euclid(1_000_000_000);
    let days = secs.div_euclid(86_400);
    let sod = secs.rem_euclid(86_400);
    let (y, m, d) = ferrite_model::gotime::civil_from_days(days);
    let mut out = String::new();
    if y < 0 {
        let _ = write!(out, "-{:04}", -y);
    } else {
        let _ = write!(out, "{y:04}");
    }
    let _ = write!(
        out,
        "-{m:02}-{d:02} {:02}:{:02}:{:02}",
        sod / 3600,
        sod / 60 % 60,
        sod % 60
    );
    if frac != 0 {
        let f = format!("{frac:09}");
        out.push('.');
        out.push_str(f.trim_end_matches('0'));
    }
    out.push_str(" +0000 UTC");
    out
}

/// Go's `time.Duration.String()`: `1h2m3.5s`, `1.5ms`, `0s`.
pub(crate) fn duration_string(ns: i64) -> String {
    if ns == 0 {
        return "0s".into();
    }
    let neg = ns < 0;
    let u = ns.unsigned_abs();
    let mut out = String::new();
    if u < 1_000_000_000 {
        let (unit, div) = if u < 1_000 {
            ("ns", 1)
        } else if u < 1_000_000 {
            ("µs", 1_000)
        } else {
            ("ms", 1_000_000)
        };
        out.push_str(&frac_digits(u, div));
        out.push_str(unit);
    } else {
        let secs = u / 1_000_000_000;
        let h = secs / 3600;
        let m = secs / 60 % 60;
        if h > 0 {
            let _ = write!(out, "{h}h");
        }
        if h > 0 || m > 0 {
            let _ = write!(out, "{m}m");
        }
        out.push_str(&frac_digits(u % 60_000_000_000, 1_000_000_000));
        out.push('s');
    }
    if neg {
        out.insert(0, '-');
    }
    out
}

/// `v / div` with the fraction's significant digits.
fn frac_digits(v: u64, div: u64) -> String {
    let int = v / div;
    let frac = v % div;
    if frac == 0 {
        return int.to_string();
    }
    let width = div.to_string().len() - 1;
    let f = format!("{frac:0width$}");
    format!("{int}.{}", f.trim_end_matches('0'))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prints_as_go() {
        assert_eq!(Value::Float(1e6).print(), "1e+06");
        assert_eq!(Value::Float(0.1).print(), "0.1");
        assert_eq!(Value::Float(f64::NAN).print(), "NaN");
        assert_eq!(Value::Float(f64::INFINITY).print(), "+Inf");
        assert_eq!(Value::Nil.print(), "<no value>");
        let mut m = BTreeMap::new();
        m.insert("b".to_string(), "2".to_string());
        m.insert("a".to_string(), "1".to_string());
        assert_eq!(Value::StrMap(Arc::new(m)).print(), "map[a:1 b:2]");
    }

    #[test]
    fn times_and_durations() {
        assert_eq!(time_string(0), "1970-01-01 00:00:00 +0000 UTC");
        assert_eq!(
            time_string(1_500_000_000),
            "1970-01-01 00:00:01.5 +0000 UTC"
        );
        assert_eq!(time_string(-1), "1969-12-31 23:59:59.999999999 +0000 UTC");
        assert_eq!(duration_string(1_000_000_000), "1s");
        assert_eq!(duration_string(3_723_500_000_000), "1h2m3.5s");
        assert_eq!(duration_string(1_500_000), "1.5ms");
        assert_eq!(duration_string(-60_000_000_000), "-1m0s");
        assert_eq!(duration_string(1), "1ns");
    }
}
