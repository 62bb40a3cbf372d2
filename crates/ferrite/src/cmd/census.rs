//! `ferrite tsdb census DIR`: what a data directory holds, per kind of
//! sample, in the form the interop suite's Prometheus side prints it
//! (`promtsdb.Census`), so the two can be compared as text.
//!
//! `series=<n> floats=<n> histograms=<n> float_histograms=<n>
//! custom_buckets=<n> float_sum=<%.12e> histogram_sum=<%.12e>
//! hash=<16 hex digits>`: counts of float, integer histogram and float
//! histogram samples, how many of the histograms have custom buckets, the
//! sum of the float values and of every histogram's count plus sum, and the
//! start of a SHA-256 over every series (its labels as Prometheus prints
//! them) and every sample exactly: kind, timestamp, float bits, and for
//! histograms (as float histograms) schema, zero threshold and count,
//! count, sum, custom bounds and each non-empty bucket's index and count,
//! so the hash does not depend on chunking, span layout or hints.

use std::path::Path;

use anyhow::{Context, Result};
use ferrite_model::gofloat::format_e_prec;
use ferrite_model::histogram::CUSTOM_BUCKETS_SCHEMA;
use ferrite_model::histogram_ops::indexed;
use ferrite_model::FloatHistogram;
use ferrite_tsdb::sample::SampleRef;
use ferrite_tsdb::Db;
use sha2::{Digest, Sha256};

use super::tsdb::tool_options;
use super::tsdb_tools::format::labels_string;

/// Prometheus' `chunkenc.ValueType` numbers, which the hash includes.
const VAL_FLOAT: u64 = 1;
const VAL_HISTOGRAM: u64 = 2;
const VAL_FLOAT_HISTOGRAM: u64 = 3;

/// The counts, sums and hash of a data directory.
#[derive(Default)]
struct Census {
    series: u64,
    floats: u64,
    histograms: u64,
    float_histograms: u64,
    custom_buckets: u64,
    float_sum: f64,
    histogram_sum: f64,
}

/// Little-endian words into a SHA-256, as the Go side writes them.
struct Hasher(Sha256);

impl Hasher {
    fn u64(&mut self, v: u64) {
        self.0.update(v.to_le_bytes());
    }

    fn f64(&mut self, v: f64) {
        self.u64(v.to_bits());
    }

    fn str(&mut self, s: &str) {
        self.u64(s.len() as u64);
        self.0.update(s.as_bytes());
    }

    /// What a histogram means, not how its buckets are laid out.
    fn histogram(&mut self, h: &FloatHistogram) {
        self.u64(i64::from(h.schema) as u64);
        self.f64(h.zero_threshold);
        self.f64(h.zero_count);
        self.f64(h.count);
        self.f64(h.sum);
        self.u64(h.custom_values.len() as u64);
        for &v in &h.custom_values {
            self.f64(v);
        }
        for (spans, buckets) in [
            (&h.positive_spans, &h.positive_buckets),
            (&h.negative_spans, &h.negative_buckets),
        ] {
            for (index, count) in indexed(spans, buckets) {
                if count != 0.0 {
                    self.u64(i64::from(index) as u64);
                    self.f64(count);
                }
            }
            self.u64(u64::MAX);
        }
    }
}

pub fn census(dir: &Path) -> Result<()> {
    let db = Db::open(dir, tool_options()).with_context(|| format!("opening {}", dir.display()))?;
    let mut c = Census::default();
    let mut hash = Hasher(Sha256::new());
    let q = db.querier(i64::MIN, i64::MAX);
    for s in q.select(&[]).context("selecting series")? {
        c.series += 1;
        hash.str(&labels_string(&s.labels));
        s.for_each_value(|t, v| match v {
            SampleRef::Float(f) => {
                c.floats += 1;
                c.float_sum += f;
                hash.u64(VAL_FLOAT);
                hash.u64(t as u64);
                hash.f64(f);
            }
            SampleRef::Histogram(h) => {
                c.histograms += 1;
                c.histogram_sum += h.count as f64 + h.sum;
                c.custom_buckets += u64::from(h.schema == CUSTOM_BUCKETS_SCHEMA);
                hash.u64(VAL_HISTOGRAM);
                hash.u64(t as u64);
                hash.histogram(&h.to_float());
            }
            SampleRef::FloatHistogram(h) => {
                c.float_histograms += 1;
                c.histogram_sum += h.count + h.sum;
                c.custom_buckets += u64::from(h.schema == CUSTOM_BUCKETS_SCHEMA);
                hash.u64(VAL_FLOAT_HISTOGRAM);
                hash.u64(t as u64);
                hash.histogram(h);
            }
        })
        .with_context(|| format!("reading {}", s.labels))?;
    }
    db.close()?;
    let digest = hash.0.finalize();
    let hex: String = digest.iter().take(8).map(|b| format!("{b:02x}")).collect();
    println!(
        "series={} floats={} histograms={} float_histograms={} custom_buckets={} float_sum={} histogram_sum={} hash={hex}",
        c.series,
        c.floats,
        c.histograms,
        c.float_histograms,
        c.custom_buckets,
        format_e_prec(c.float_sum, 12),
        format_e_prec(c.histogram_sum, 12),
    );
    Ok(())
}
