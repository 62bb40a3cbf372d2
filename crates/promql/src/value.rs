//! Query results, in Prometheus' four types.

use std::fmt;

use crate::storage::{FloatHistogram, Labels};

/// One sample of an instant vector: a float, or a native histogram (then
/// `f` is 0 and meaningless).
#[derive(Clone, Debug, PartialEq)]
pub struct Sample {
    pub labels: Labels,
    pub t: i64,
    pub f: f64,
    pub h: Option<FloatHistogram>,
}

/// One series of a range vector (matrix): float points and histogram
/// points, each in time order (a series may have both, at different times).
#[derive(Clone, Debug, PartialEq)]
pub struct SeriesResult {
    pub labels: Labels,
    pub points: Vec<(i64, f64)>,
    pub histograms: Vec<(i64, FloatHistogram)>,
}

/// The result of a query.
#[derive(Clone, Debug, PartialEq)]
pub enum Value {
    Scalar {
        t: i64,
        v: f64,
    },
    String {
        t: i64,
        v: String,
    },
    /// In the engine's output order (unsorted unless the query sorts).
    Vector(Vec<Sample>),
    /// Sorted by labels.
    Matrix(Vec<SeriesResult>),
}

impl Value {
    pub fn type_name(&self) -> &'static str {
        match self {
            Value::Scalar { .. } => "scalar",
            Value::String { .. } => "string",
            Value::Vector(_) => "vector",
            Value::Matrix(_) => "matrix",
        }
    }
}

impl fmt::Display for Value {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Value::Scalar { t, v } => write!(f, "scalar: {v} @[{t}]"),
            Value::String { t, v } => write!(f, "string: {v:?} @[{t}]"),
            Value::Vector(vs) => {
                for s in vs {
                    match &s.h {
                        Some(h) => {
                            writeln!(f, "{} => {} @[{}]", s.labels, h.test_expression(), s.t)?
                        }
                        None => writeln!(f, "{} => {} @[{}]", s.labels, s.f, s.t)?,
                    }
                }
                Ok(())
            }
            Value::Matrix(ms) => {
                for s in ms {
                    write!(f, "{} =>", s.labels)?;
                    for (t, v) in &s.points {
                        write!(f, " {v} @[{t}]")?;
                    }
                    for (t, h) in &s.histograms {
                        write!(f, " {} @[{t}]", h.test_expression())?;
                    }
                    writeln!(f)?;
                }
                Ok(())
            }
        }
    }
}
