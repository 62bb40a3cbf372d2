//! The synthetic data model shared with the Go interoperability suite
//! (`interop/`): both sides generate exactly these series and samples, so a
//! data dir written by either can be checked against the model's totals.

/// Labels of synthetic series `i`.
pub fn labels(i: u64) -> [(&'static str, String); 3] {
    [
        ("__name__", format!("synth_metric_{}", i % 50)),
        ("instance", format!("host-{}", i / 50)),
        ("job", "synth".to_owned()),
    ]
}

/// Timestamp of sample `j` of series `i`.
pub fn timestamp(i: u64, j: u64, start_ms: i64, interval_ms: i64) -> i64 {
    let jitter = ((i.wrapping_mul(7919).wrapping_add(j.wrapping_mul(104_729))) % 11) as i64 - 5;
    start_ms + j as i64 * interval_ms + jitter
}

/// Value of sample `j` of series `i`.
pub fn value(i: u64, j: u64) -> f64 {
    match i % 3 {
        0 => (j * (i % 13 + 1)) as f64,
        1 => ((i * 31 + j * 17) % 1000) as f64 / 8.0,
        _ => {
            (i.wrapping_mul(2_654_435_761)
                .wrapping_add(j.wrapping_mul(40_503))
                % 100_000) as f64
                * 0.001
                + 0.1
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn model_values() {
        assert_eq!(labels(123)[1].1, "host-2");
        assert_eq!(value(0, 5), 5.0);
        assert_eq!(value(1, 1), 48.0 / 8.0);
        let t = timestamp(0, 0, 1000, 15_000);
        assert!((995..=1005).contains(&t));
    }
}
