//! What a receiver answers.
//!
//! Success is 204 No Content for both versions. A 2.0 receiver must also
//! say what it wrote, in three headers (a missing header means 0 to a 2.0
//! sender); Prometheus sets them on every 2.0 answer that got as far as its
//! storage code, errors included, and never on 1.0 answers, where senders
//! could mistake them for a confirmed "nothing written".

/// The status of a successful write, 1.0 and 2.0 alike.
pub const SUCCESS_STATUS: u16 = 204;

pub const SAMPLES_WRITTEN_HEADER: &str = "X-Prometheus-Remote-Write-Samples-Written";
pub const HISTOGRAMS_WRITTEN_HEADER: &str = "X-Prometheus-Remote-Write-Histograms-Written";
pub const EXEMPLARS_WRITTEN_HEADER: &str = "X-Prometheus-Remote-Write-Exemplars-Written";

/// Counts of what a 2.0 request actually wrote.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct WriteStats {
    pub samples: usize,
    pub histograms: usize,
    pub exemplars: usize,
}

impl WriteStats {
    /// The response headers, in Prometheus' order.
    pub fn headers(&self) -> [(&'static str, String); 3] {
        [
            (SAMPLES_WRITTEN_HEADER, self.samples.to_string()),
            (HISTOGRAMS_WRITTEN_HEADER, self.histograms.to_string()),
            (EXEMPLARS_WRITTEN_HEADER, self.exemplars.to_string()),
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn headers() {
        let s = WriteStats {
            samples: 3,
            histograms: 0,
            exemplars: 1,
        };
        assert_eq!(
            s.headers(),
            [
                ("X-Prometheus-Remote-Write-Samples-Written", "3".to_owned()),
                (
                    "X-Prometheus-Remote-Write-Histograms-Written",
                    "0".to_owned()
                ),
                (
                    "X-Prometheus-Remote-Write-Exemplars-Written",
                    "1".to_owned()
                ),
            ]
        );
    }
}
