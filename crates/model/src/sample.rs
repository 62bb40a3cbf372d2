//! Sample values: a float, an integer native histogram or a float native
//! histogram, and the staleness marker.

use crate::histogram::{FloatHistogram, Histogram};

/// The NaN bit pattern Prometheus writes to mark the end of a series.
pub const STALE_NAN_BITS: u64 = 0x7ff0_0000_0000_0002;

/// The staleness marker value.
pub const STALE_NAN: f64 = f64::from_bits(STALE_NAN_BITS);

/// Whether `v` is a staleness marker (not any NaN: only the marker's bits).
pub fn is_stale_nan(v: f64) -> bool {
    v.to_bits() == STALE_NAN_BITS
}

/// One sample's value. Histograms are boxed: a float sample stays small.
#[derive(Clone, Debug, PartialEq)]
pub enum SampleValue {
    /// A float sample.
    Float(f64),
    /// An integer native histogram.
    Histogram(Box<Histogram>),
    /// A float native histogram.
    FloatHistogram(Box<FloatHistogram>),
}

impl SampleValue {
    /// Whether this is a staleness marker of its kind.
    pub fn is_stale(&self) -> bool {
        match self {
            SampleValue::Float(v) => is_stale_nan(*v),
            SampleValue::Histogram(h) => h.is_stale(),
            SampleValue::FloatHistogram(h) => h.is_stale(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_marker_bits_are_stale() {
        assert!(is_stale_nan(STALE_NAN));
        assert!(!is_stale_nan(f64::NAN));
        assert!(SampleValue::Float(STALE_NAN).is_stale());
        let h = Histogram {
            sum: STALE_NAN,
            ..Histogram::default()
        };
        assert!(SampleValue::Histogram(Box::new(h.clone())).is_stale());
        assert!(SampleValue::FloatHistogram(Box::new(h.to_float())).is_stale());
        assert!(!SampleValue::Float(1.0).is_stale());
    }
}
