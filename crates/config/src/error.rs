//! Configuration errors, worded as Prometheus words them.

use std::path::PathBuf;

/// Why a configuration file was not loaded.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// The file could not be read (Go's `open <file>: <reason>`).
    #[error("open {}: {source}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// The OS's reason.
        #[source]
        source: std::io::Error,
    },
    /// The file's contents are not a valid configuration.
    #[error("parsing YAML file {file}: {reason}")]
    Parse {
        /// The file as named to the loader.
        file: String,
        /// What is wrong, in Prometheus' words where it has them.
        reason: String,
    },
}
