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

/// Go's error for opening or reading the file `name`: `open <name>: no
/// such file or directory`, `read <name>: is a directory`, ...
pub fn go_open_error(name: &str, e: &std::io::Error) -> String {
    if e.kind() == std::io::ErrorKind::IsADirectory {
        return format!("read {name}: is a directory");
    }
    format!("open {name}: {}", go_os_reason(e))
}

/// The OS's reason for an I/O error as Go words it (its `syscall.Errno`
/// text): `no such file or directory`, `permission denied`, ...
pub fn go_os_reason(e: &std::io::Error) -> String {
    use std::io::ErrorKind as K;
    match e.kind() {
        K::NotFound => "no such file or directory".to_string(),
        K::PermissionDenied => "permission denied".to_string(),
        K::IsADirectory => "is a directory".to_string(),
        K::NotADirectory => "not a directory".to_string(),
        _ => {
            let text = e.to_string();
            let text = text.split(" (os error").next().unwrap_or_default();
            let mut chars = text.chars();
            match chars.next() {
                Some(c) => c.to_lowercase().chain(chars).collect(),
                None => String::new(),
            }
        }
    }
}
