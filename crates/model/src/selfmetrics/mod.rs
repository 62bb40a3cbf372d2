//! A server's own metrics as `/metrics` shows them: families of samples
//! with Prometheus' names, types and help texts. The components that keep
//! such metrics (discovery, the notifier) hand them to the server in this
//! form; the server writes them in the text format.

/// One sample of a family.
#[derive(Debug, Clone, PartialEq)]
pub struct Sample {
    /// The sample's name: the family's, or with `_bucket`, `_sum`,
    /// `_count`.
    pub name: String,
    /// Its labels, in order.
    pub labels: Vec<(&'static str, String)>,
    /// Its value.
    pub value: f64,
}

/// A metric family as `/metrics` shows it.
#[derive(Debug, Clone, PartialEq)]
pub struct Family {
    /// Its name.
    pub name: &'static str,
    /// `counter`, `gauge`, `histogram` or `summary`.
    pub kind: &'static str,
    /// Prometheus' help text.
    pub help: &'static str,
    /// Its samples.
    pub samples: Vec<Sample>,
}
