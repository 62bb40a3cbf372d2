//! Query results, in Prometheus' four types.

use std::fmt;

use crate::storage::Labels;

/// One sample of an instant vector.
#[derive(Clone, Debug, PartialEq)]
pub struct Sample {
    pub labels: Labels,
    pub t: i64,
    pub f: f64,
}

/// One series of a range vector (matrix): points in time order.
#[derive(Clone, Debug, PartialEq)]
pub struct SeriesResult {
    pub labels: Labels,
    pub points: Vec<(i64, f64)>,
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
                    writeln!(f, "{} => {} @[{}]", s.labels, s.f, s.t)?;
                }
                Ok(())
            }
            Value::Matrix(ms) => {
                for s in ms {
                    write!(f, "{} =>", s.labels)?;
                    for (t, v) in &s.points {
                        write!(f, " {v} @[{t}]")?;
                    }
                    writeln!(f)?;
                }
                Ok(())
            }
        }
    }
}
