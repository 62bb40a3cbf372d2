//! The `storage:` section: TSDB and exemplar settings, as Prometheus
//! v3.16.0's `config.StorageConfig` reads and validates them.
//!
//! ```yaml
//! storage:
//!   tsdb:
//!     out_of_order_time_window: 30m   # default 0s: no out-of-order samples
//!     chunk_encoding:
//!       floats: xor2                  # 'xor' or 'xor2'; absent: the default (XOR)
//!     retention:
//!       time: 15d                     # precedence over --storage.tsdb.retention.time
//!       size: 512MB
//!       percentage: 0
//!     stale_series_compaction_threshold: 0
//!   exemplars:
//!     max_exemplars: 100000
//! ```

use serde::Deserialize;

use ferrite_model::gofloat::format_g;

use crate::yaml::{Base2Bytes, DurationMs};

/// The `storage:` section, defaults filled in.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct StorageConfig {
    /// `storage.tsdb`.
    pub tsdb: TsdbConfig,
    /// `storage.exemplars`.
    pub exemplars: ExemplarsConfig,
}

/// `storage.tsdb`.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct TsdbConfig {
    /// How far behind the newest sample of a series a sample may be and
    /// still be accepted (out of order); 0: none are.
    pub out_of_order_time_window_ms: i64,
    /// The fraction of stale series in the head that triggers their early
    /// compaction (experimental in Prometheus); 0: never.
    pub stale_series_compaction_threshold: f64,
    /// The encoding of new float chunks; `None`: the default (XOR).
    pub float_chunk_encoding: Option<FloatChunkEncoding>,
    /// `storage.tsdb.retention`, if the file has the section: it then
    /// replaces the command line's retention flags entirely (a field it
    /// lacks is 0, no limit), as in Prometheus.
    pub retention: Option<RetentionConfig>,
}

/// `storage.tsdb.chunk_encoding.floats`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FloatChunkEncoding {
    /// `xor`: Gorilla XOR chunks, readable by every Prometheus.
    Xor,
    /// `xor2`: Prometheus v3.16's denser encoding.
    Xor2,
}

/// `storage.tsdb.retention`: each 0 when not set.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct RetentionConfig {
    /// How long blocks are kept, in milliseconds.
    pub time_ms: i64,
    /// How many bytes blocks may take.
    pub size_bytes: i64,
    /// How much of the disk blocks may take, in percent.
    pub percentage: f64,
}

/// `storage.exemplars`.
#[derive(Debug, Clone, PartialEq)]
pub struct ExemplarsConfig {
    /// The size of the exemplar buffer; 0 or less disables it.
    pub max_exemplars: i64,
}

impl Default for ExemplarsConfig {
    fn default() -> Self {
        ExemplarsConfig {
            max_exemplars: 100_000,
        }
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct StorageSection {
    tsdb: Option<TsdbSection>,
    exemplars: Option<ExemplarsSection>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct TsdbSection {
    out_of_order_time_window: Option<DurationMs>,
    stale_series_compaction_threshold: Option<f64>,
    chunk_encoding: Option<ChunkEncodingSection>,
    retention: Option<RetentionSection>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ChunkEncodingSection {
    floats: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RetentionSection {
    time: Option<DurationMs>,
    size: Option<Base2Bytes>,
    percentage: Option<f64>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ExemplarsSection {
    max_exemplars: Option<i64>,
}

impl StorageSection {
    /// The typed section, or Prometheus' message for what is invalid.
    pub(crate) fn validate(self) -> Result<StorageConfig, String> {
        let tsdb = match self.tsdb {
            Some(t) => t.validate()?,
            None => TsdbConfig::default(),
        };
        let exemplars = match self.exemplars {
            // An empty `exemplars:` mapping means 0, as in Go.
            Some(e) => ExemplarsConfig {
                max_exemplars: e.max_exemplars.unwrap_or(0),
            },
            None => ExemplarsConfig::default(),
        };
        Ok(StorageConfig { tsdb, exemplars })
    }
}

impl TsdbSection {
    fn validate(self) -> Result<TsdbConfig, String> {
        let float_chunk_encoding = match self.chunk_encoding.and_then(|c| c.floats).as_deref() {
            None | Some("") => None,
            Some("xor") => Some(FloatChunkEncoding::Xor),
            Some("xor2") => Some(FloatChunkEncoding::Xor2),
            Some(other) => {
                return Err(format!(
                    "'storage.tsdb.chunk_encoding.floats' must be 'xor' or 'xor2', or the field must be omitted entirely, got {other:?}"
                ))
            }
        };
        let retention = match self.retention {
            Some(r) => {
                let percentage = r.percentage.unwrap_or(0.0);
                if !(0.0..=100.0).contains(&percentage) {
                    return Err(format!(
                        "'storage.tsdb.retention.percentage' must be in the range [0, 100], got {}",
                        format_g(percentage)
                    ));
                }
                Some(RetentionConfig {
                    time_ms: r.time.map_or(0, |d| d.0),
                    size_bytes: r.size.map_or(0, |b| b.0),
                    percentage,
                })
            }
            None => None,
        };
        Ok(TsdbConfig {
            out_of_order_time_window_ms: self.out_of_order_time_window.map_or(0, |d| d.0),
            stale_series_compaction_threshold: self
                .stale_series_compaction_threshold
                .unwrap_or(0.0),
            float_chunk_encoding,
            retention,
        })
    }
}

#[cfg(test)]
mod tests {
    use crate::{Config, FloatChunkEncoding, RetentionConfig};

    fn parse(text: &str) -> Result<Config, String> {
        Config::parse(text, "p.yml").map_err(|e| e.to_string())
    }

    #[test]
    fn every_setting() {
        let cfg = parse(
            "storage:
  tsdb:
    out_of_order_time_window: 30m
    chunk_encoding:
      floats: xor2
    retention:
      time: 90d
      size: 512MB
      percentage: 12.5
    stale_series_compaction_threshold: 0.5
  exemplars:
    max_exemplars: 7
",
        )
        .expect("valid");
        let t = &cfg.storage.tsdb;
        assert_eq!(t.out_of_order_time_window_ms, 1_800_000);
        assert_eq!(t.float_chunk_encoding, Some(FloatChunkEncoding::Xor2));
        assert_eq!(
            t.retention,
            Some(RetentionConfig {
                time_ms: 90 * 86_400_000,
                size_bytes: 512 << 20,
                percentage: 12.5
            })
        );
        assert_eq!(t.stale_series_compaction_threshold, 0.5);
        assert_eq!(cfg.storage.exemplars.max_exemplars, 7);
    }

    #[test]
    fn defaults() {
        let cfg = parse("storage:\n  tsdb: {}\n").expect("valid");
        assert_eq!(cfg.storage.tsdb.out_of_order_time_window_ms, 0);
        assert_eq!(cfg.storage.tsdb.float_chunk_encoding, None);
        assert_eq!(cfg.storage.tsdb.retention, None);
        assert_eq!(cfg.storage.exemplars.max_exemplars, 100_000);
        let cfg = parse("storage:\n  tsdb:\n    retention:\n      size: 1GB\n").expect("valid");
        assert_eq!(
            cfg.storage.tsdb.retention,
            Some(RetentionConfig {
                time_ms: 0,
                size_bytes: 1 << 30,
                percentage: 0.0
            })
        );
        let cfg =
            parse("storage:\n  tsdb:\n    chunk_encoding:\n      floats: xor\n").expect("valid");
        assert_eq!(
            cfg.storage.tsdb.float_chunk_encoding,
            Some(FloatChunkEncoding::Xor)
        );
    }

    #[test]
    fn prometheus_messages() {
        assert_eq!(
            parse("storage:\n  tsdb:\n    chunk_encoding:\n      floats: gorilla\n"),
            Err("parsing YAML file p.yml: 'storage.tsdb.chunk_encoding.floats' must be 'xor' or 'xor2', or the field must be omitted entirely, got \"gorilla\"".into())
        );
        assert_eq!(
            parse("storage:\n  tsdb:\n    retention:\n      percentage: 101\n"),
            Err("parsing YAML file p.yml: 'storage.tsdb.retention.percentage' must be in the range [0, 100], got 101".into())
        );
        assert_eq!(
            parse("storage:\n  tsdb:\n    out_of_order_time_window: 30\n"),
            Err("parsing YAML file p.yml: not a valid duration string: \"30\"".into())
        );
        assert_eq!(
            parse("storage:\n  tsdb:\n    out_of_order_window: 30m\n"),
            Err("parsing YAML file p.yml: yaml: unmarshal errors:\n  line 3: field out_of_order_window not found in type config.plain".into())
        );
        assert_eq!(
            parse("storage:\n  tsdb:\n    chunk_encoding:\n      histograms: x\n"),
            Err("parsing YAML file p.yml: yaml: unmarshal errors:\n  line 4: field histograms not found in type config.ChunkEncodingConfig".into())
        );
        assert_eq!(
            parse("storage:\n  wal: {}\n"),
            Err("parsing YAML file p.yml: yaml: unmarshal errors:\n  line 2: field wal not found in type config.StorageConfig".into())
        );
    }
}
