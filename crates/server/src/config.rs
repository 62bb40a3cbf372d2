//! The configuration file's settings that reach the storage, and the
//! reload of the file (`/-/reload`, SIGHUP).
//!
//! What the `storage:` section sets, and where it goes:
//! - `tsdb.retention` (`time`, `size`): replaces the retention flags when
//!   the section is present, as in Prometheus v3.16;
//! - `tsdb.chunk_encoding.floats`: the encoding of new float chunks, XOR
//!   (the default) or XOR2;
//! - `tsdb.out_of_order_time_window`: how far behind the newest sample an
//!   out-of-order sample is accepted (0, the default, refuses them); a
//!   reload applies it at once, as Prometheus' does;
//! - `tsdb.retention.percentage`, `tsdb.stale_series_compaction_threshold`:
//!   Ferrite does not implement these yet, and a file that sets them is
//!   refused (at start and on reload) with a message naming the setting,
//!   rather than run without what it asks for;
//! - `exemplars.max_exemplars`: Ferrite keeps no exemplars (remote write
//!   accepts and drops them, `/api/v1/query_exemplars` answers empty), so
//!   the size of a buffer it does not have is read and has no effect.
//!
//! A reload re-reads and re-validates the file; of the storage settings,
//! the out-of-order window takes effect at once ([`apply_on_reload`]), the
//! others at the next start.

use ferrite_config::{Config, FloatChunkEncoding};
use ferrite_tsdb::DbOptions;

/// A setting in the file that Ferrite cannot honour.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{setting}: {reason}")]
pub struct UnsupportedSetting {
    /// The setting's path in the file.
    pub setting: String,
    /// Why it is refused.
    pub reason: &'static str,
}

/// Checks that every storage setting of `cfg` is one Ferrite honours.
pub fn check_supported(cfg: &Config) -> Result<(), UnsupportedSetting> {
    let tsdb = &cfg.storage.tsdb;
    if tsdb.retention.as_ref().is_some_and(|r| r.percentage > 0.0) {
        return Err(UnsupportedSetting {
            setting: "storage.tsdb.retention.percentage".into(),
            reason: "retention by percentage of the disk is not supported by Ferrite; use storage.tsdb.retention.size",
        });
    }
    if tsdb.stale_series_compaction_threshold > 0.0 {
        return Err(UnsupportedSetting {
            setting: "storage.tsdb.stale_series_compaction_threshold".into(),
            reason: "stale series compaction is not supported by Ferrite; remove the setting (or set it to 0) to run",
        });
    }
    check_scrape_jobs(cfg)?;
    ferrite_notifier::check_supported(cfg).map_err(|e| match e {
        ferrite_notifier::Error::Unsupported { setting, reason } => {
            UnsupportedSetting { setting, reason }
        }
        other => UnsupportedSetting {
            setting: format!("alerting: {other}"),
            reason: "not supported by Ferrite",
        },
    })
}

/// Refuses a job Ferrite cannot scrape as asked: a service discovery it
/// does not run (its targets would silently be missing), or an HTTP client
/// setting it cannot honour.
fn check_scrape_jobs(cfg: &Config) -> Result<(), UnsupportedSetting> {
    for job in &cfg.scrape_configs {
        if let Some(sd) = job.unsupported_discovery.first() {
            return Err(UnsupportedSetting {
                setting: format!("scrape_configs[job_name={:?}].{sd}", job.job_name),
                reason: ferrite_config::discovery::UNSUPPORTED_DISCOVERY,
            });
        }
        if let Some((setting, reason)) = job.http_client.unsupported() {
            return Err(UnsupportedSetting {
                setting: format!("scrape_configs[job_name={:?}].{setting}", job.job_name),
                reason,
            });
        }
    }
    Ok(())
}

/// Applies the file's storage settings over the flags' (`db` as the
/// flags set it): a `retention` section replaces the retention flags.
pub fn apply_storage(cfg: &Config, db: &mut DbOptions) -> Result<(), UnsupportedSetting> {
    check_supported(cfg)?;
    if let Some(e) = cfg.storage.tsdb.float_chunk_encoding {
        db.head.float_chunk_encoding = match e {
            FloatChunkEncoding::Xor => ferrite_chunkenc::Encoding::Xor,
            FloatChunkEncoding::Xor2 => ferrite_chunkenc::Encoding::Xor2,
        };
    }
    if let Some(r) = &cfg.storage.tsdb.retention {
        db.retention_ms = r.time_ms;
        db.retention_bytes = r.size_bytes;
    }
    db.head.out_of_order_time_window = cfg.storage.tsdb.out_of_order_time_window_ms.max(0);
    Ok(())
}

/// Applies what a reloaded file changes at once: the out-of-order window
/// (opening the WBL if it was not open).
pub fn apply_on_reload(cfg: &Config, db: &ferrite_tsdb::Db) -> Result<(), String> {
    let window = cfg.storage.tsdb.out_of_order_time_window_ms.max(0);
    db.head()
        .set_out_of_order_time_window(window, &db.dir().join("wbl"))
        .map_err(|e| format!("opening the out-of-order WAL: {e}"))
}

/// Re-reads the configuration file as a reload does: `Ok` if it loads and
/// every setting is one Ferrite honours, else Prometheus' reload error
/// text (`failed to reload config: ...` is added by the caller).
pub fn reload(cfg: &Config) -> Result<Config, String> {
    let Some(path) = &cfg.path else {
        // The embedded default: nothing to re-read.
        return Ok(cfg.clone());
    };
    let fresh = Config::load(path).map_err(|e| {
        format!(
            "couldn't load configuration (--config.file={:?}): {e}",
            path.display().to_string()
        )
    })?;
    // The jobs of `scrape_config_files`, re-read on every reload; as in
    // Prometheus, their error is logged and the reload fails as one whose
    // configuration did not apply.
    let fresh = fresh.with_scrape_config_files().map_err(|e| {
        tracing::error!(err = %e, "Failed to apply configuration");
        format!(
            "one or more errors occurred while applying the new configuration (--config.file={:?})",
            path.display().to_string()
        )
    })?;
    check_supported(&fresh).map_err(|e| e.to_string())?;
    Ok(fresh)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(text: &str) -> Config {
        Config::parse(text, "p.yml").expect("valid")
    }

    #[test]
    fn retention_section_replaces_the_flags() {
        let mut db = DbOptions {
            retention_ms: 7,
            retention_bytes: 9,
            ..DbOptions::default()
        };
        apply_storage(&config(""), &mut db).expect("supported");
        assert_eq!((db.retention_ms, db.retention_bytes), (7, 9));
        apply_storage(
            &config("storage:\n  tsdb:\n    retention:\n      size: 1KB\n"),
            &mut db,
        )
        .expect("supported");
        assert_eq!((db.retention_ms, db.retention_bytes), (0, 1024));
    }

    #[test]
    fn out_of_order_window_is_applied() {
        let mut db = DbOptions::default();
        apply_storage(
            &config("storage:\n  tsdb:\n    out_of_order_time_window: 30m\n"),
            &mut db,
        )
        .expect("supported");
        assert_eq!(db.head.out_of_order_time_window, 1_800_000);
    }

    #[test]
    fn float_chunk_encoding_is_applied() {
        let mut db = DbOptions::default();
        apply_storage(
            &config("storage:\n  tsdb:\n    chunk_encoding:\n      floats: xor2\n"),
            &mut db,
        )
        .expect("supported");
        assert_eq!(
            db.head.float_chunk_encoding,
            ferrite_chunkenc::Encoding::Xor2
        );
        apply_storage(&config(""), &mut db).expect("supported");
        assert_eq!(
            db.head.float_chunk_encoding,
            ferrite_chunkenc::Encoding::Xor2
        );
    }

    #[test]
    fn unsupported_settings_are_refused_by_name() {
        for (text, setting) in [
            (
                "storage:\n  tsdb:\n    retention:\n      percentage: 50\n",
                "storage.tsdb.retention.percentage",
            ),
            (
                "storage:\n  tsdb:\n    stale_series_compaction_threshold: 0.5\n",
                "storage.tsdb.stale_series_compaction_threshold",
            ),
        ] {
            let err = check_supported(&config(text)).expect_err(text);
            assert_eq!(err.setting, setting);
        }
        let ok = "storage:\n  tsdb:\n    out_of_order_time_window: 0s\n    chunk_encoding:\n      floats: xor\n";
        assert_eq!(check_supported(&config(ok)), Ok(()));
    }
}
