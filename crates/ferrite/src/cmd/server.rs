//! The server's flags: every flag of Prometheus v3.9.1's `prometheus`
//! server, so a Prometheus systemd unit or container command starts Ferrite
//! unchanged.
//!
//! The flags are a table ([`FLAGS`]): name, kind, Prometheus' default and
//! whether Ferrite acts on it. Flags Ferrite has no use for (scraping,
//! rules, Alertmanager, the web UI, Go runtime tuning) are accepted, listed
//! in `/api/v1/status/flags` and, when given, logged once at startup as
//! having no effect. As with Prometheus (kingpin), a boolean flag also takes
//! the `--no-<flag>` form, and the last of the two wins; `--<flag>=false`
//! is accepted too. Unknown flags are refused by clap.

use std::collections::BTreeMap;
use std::net::{SocketAddr, ToSocketAddrs};
use std::path::PathBuf;
use std::time::Duration;

use anyhow::{bail, Context, Result};
use clap::builder::PossibleValuesParser;
use clap::{Arg, ArgAction, ArgMatches, Args, FromArgMatches};
use ferrite_server::{ServerOptions, WebOptions};
use ferrite_tsdb::DbOptions;
use ferrite_wal::Compression;

use ferrite_config::Config;
use ferrite_model::units::{
    format_base2_bytes, format_duration_ms, parse_base2_bytes, parse_duration_ms,
};

/// What a flag's value is, for validation and for how it is reported.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// `--flag`, `--no-flag`, `--flag=true|false`.
    Bool,
    /// Any string.
    Str,
    /// A string that may be repeated; reported comma-joined.
    Strings,
    /// An integer (kingpin parses it as a float: `5e7` is accepted).
    Int,
    Float,
    /// A Prometheus duration (`2h`, `1d12h`), reported normalised.
    Duration,
    /// A Go duration (`2ms`, `1m30s`), reported as given.
    GoDuration,
    /// A base-2 byte size (`512MB`), reported as Go's units do (`512MiB`).
    Bytes,
    /// One of a fixed list.
    Enum(&'static [&'static str]),
    /// One of a fixed list, repeatable; reported comma-joined.
    Enums(&'static [&'static str]),
}

/// What Ferrite does with a flag.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Effect {
    /// Ferrite acts on it.
    Used,
    /// Accepted for compatibility; has no effect in Ferrite.
    Compat,
    /// Prometheus' agent mode only: refused, as Prometheus refuses it in
    /// server mode.
    Agent,
}

/// One Prometheus flag.
#[derive(Debug)]
pub struct FlagSpec {
    pub name: &'static str,
    pub kind: Kind,
    /// The value `/api/v1/status/flags` reports when the flag is not given
    /// (Prometheus' default as its flag value prints).
    pub default: &'static str,
    pub help: &'static str,
    /// Hidden from `--help` (Prometheus hides it too, or it has no effect).
    pub hidden: bool,
    pub effect: Effect,
}

const fn flag(
    name: &'static str,
    kind: Kind,
    default: &'static str,
    effect: Effect,
    hidden: bool,
    help: &'static str,
) -> FlagSpec {
    FlagSpec {
        name,
        kind,
        default,
        help,
        hidden: hidden || !matches!(effect, Effect::Used),
        effect,
    }
}

use Effect::{Agent, Compat, Used};
use Kind::{Bool, Bytes, Enum, Enums, Float, GoDuration, Int, Str, Strings};

const RW_MESSAGES: &[&str] = &["prometheus.WriteRequest", "io.prometheus.write.v2.Request"];
const WAL_COMPRESSIONS: &[&str] = &["snappy", "zstd"];

/// Every flag of Prometheus v3.16.0's server (`prometheus --help`, hidden
/// ones included), except kingpin's own `--help*`, `--version` and
/// `--completion-script-*`, in Prometheus' order; then Ferrite's own.
pub const FLAGS: &[FlagSpec] = &[
    flag("config.file", Str, "prometheus.yml", Used, false,
        "Prometheus configuration file path. Without the flag and without ./prometheus.yml, Prometheus' shipped example configuration is used, scraping this server every 15s. Its storage section, scrape jobs, recording and alerting rules are applied; the alerting section sets up the Alertmanagers; remote sections are read but not used yet."),
    flag("config.auto-reload", Bool, "false", Compat, false, ""),
    flag("config.auto-reload-interval", Kind::Duration, "30s", Compat, false, ""),
    flag("web.listen-address", Strings, "0.0.0.0:9090", Used, false,
        "Address to listen on for the API and telemetry (`:9090` listens on all interfaces). Only the first is used if repeated."),
    flag("auto-gomaxprocs", Bool, "true", Compat, false, ""),
    flag("auto-gomemlimit", Bool, "true", Compat, false, ""),
    flag("auto-gomemlimit.ratio", Float, "0.9", Compat, false, ""),
    flag("auto-gomemlimit.refresh-interval", Kind::Duration, "0s", Compat, false, ""),
    flag("web.config.file", Str, "", Compat, false, ""),
    flag("web.read-timeout", Kind::Duration, "5m", Used, false,
        "Maximum time to read a request body."),
    flag("web.max-connections", Int, "512", Used, false,
        "Maximum number of simultaneous connections (0: no limit)."),
    flag("web.max-notifications-subscribers", Int, "16", Compat, false, ""),
    flag("web.external-url", Str, "", Used, false,
        "The URL under which Ferrite is externally reachable; its path prefixes all endpoints unless --web.route-prefix is given."),
    flag("web.route-prefix", Str, "/", Used, false,
        "Prefix for the routes of the HTTP endpoints. Defaults to the path of --web.external-url."),
    flag("web.user-assets", Str, "", Compat, false, ""),
    flag("web.enable-lifecycle", Bool, "false", Used, false,
        "Enable shutdown via HTTP request (POST or PUT /-/quit)."),
    flag("web.enable-admin-api", Bool, "false", Used, false,
        "Enable the admin endpoints (snapshot, delete_series, clean_tombstones)."),
    flag("web.enable-remote-write-receiver", Bool, "true", Used, false,
        "Accept remote write requests (on by default in Ferrite; --no-web.enable-remote-write-receiver refuses them)."),
    flag("web.remote-write-receiver.accepted-protobuf-messages", Enums(RW_MESSAGES),
        "prometheus.WriteRequest,io.prometheus.write.v2.Request", Compat, false, ""),
    flag("web.enable-otlp-receiver", Bool, "false", Compat, false, ""),
    flag("web.console.templates", Str, "consoles", Compat, false, ""),
    flag("web.console.libraries", Str, "console_libraries", Compat, false, ""),
    flag("web.page-title", Str, "Prometheus Time Series Collection and Processing Server", Compat, false, ""),
    flag("web.cors.origin", Str, ".*", Compat, false, ""),
    flag("storage.tsdb.path", Str, "data/", Used, false, "Base path for metrics storage."),
    flag("storage.tsdb.min-block-duration", Kind::Duration, "2h", Used, true,
        "Minimum duration of a data block before being persisted (the head's chunk range)."),
    flag("storage.tsdb.max-block-duration", Kind::Duration, "1d12h", Used, false,
        "Maximum duration compacted blocks may span (default: a tenth of the retention, at most 31d)."),
    flag("storage.tsdb.max-block-chunk-segment-size", Bytes, "0B", Compat, false, ""),
    flag("storage.tsdb.wal-segment-size", Bytes, "0B", Used, true,
        "Size at which to split WAL segment files (10MB to 256MB, a multiple of 32KiB)."),
    flag("storage.tsdb.retention.time", Kind::Duration, "15d", Used, false,
        "How long to retain samples (default 15d, or none when a size limit is set)."),
    flag("storage.tsdb.retention.size", Bytes, "0B", Used, false,
        "Maximum number of bytes of blocks to retain (e.g. 512MB, 10GB; base 1024)."),
    flag("storage.tsdb.no-lockfile", Bool, "false", Used, false,
        "Do not create a lockfile in the data directory."),
    flag("storage.tsdb.allow-overlapping-compaction", Bool, "true", Compat, false, ""),
    flag("storage.tsdb.wal-compression", Bool, "true", Used, true,
        "Compress the WAL (--no-storage.tsdb.wal-compression writes it uncompressed)."),
    flag("storage.tsdb.wal-compression-type", Enum(WAL_COMPRESSIONS), "snappy", Used, true,
        "Compression algorithm of the WAL."),
    flag("storage.tsdb.head-chunks-write-queue-size", Int, "0", Compat, false, ""),
    flag("storage.tsdb.samples-per-chunk", Int, "120", Used, true,
        "Target number of samples per chunk."),
    flag("storage.tsdb.delayed-compaction.max-percent", Int, "10", Compat, false, ""),
    flag("storage.tsdb.delay-compact-file.path", Str, "", Compat, false, ""),
    flag("storage.tsdb.block-reload-interval", Kind::Duration, "1m", Compat, false, ""),
    flag("storage.agent.path", Str, "data-agent/", Agent, false, ""),
    flag("storage.agent.wal-segment-size", Bytes, "0B", Agent, false, ""),
    flag("storage.agent.wal-compression", Bool, "true", Agent, false, ""),
    flag("storage.agent.wal-compression-type", Enum(WAL_COMPRESSIONS), "snappy", Agent, false, ""),
    flag("storage.agent.wal-truncate-frequency", Kind::Duration, "0s", Agent, false, ""),
    flag("storage.agent.retention.min-time", Kind::Duration, "0s", Agent, false, ""),
    flag("storage.agent.retention.max-time", Kind::Duration, "0s", Agent, false, ""),
    flag("storage.agent.checkpoint-from-in-memory-series", Bool, "false", Agent, false, ""),
    flag("storage.agent.checkpoint-batch-size", Int, "1000", Agent, false, ""),
    flag("storage.agent.no-lockfile", Bool, "false", Agent, false, ""),
    flag("storage.remote.flush-deadline", Kind::Duration, "1m", Compat, false, ""),
    flag("storage.remote.read-sample-limit", Int, "50000000", Used, false,
        "Maximum overall number of samples to return via the remote read interface, in a single query. 0 means no limit. This limit is ignored for streamed response types."),
    flag("storage.remote.read-concurrent-limit", Int, "10", Used, false,
        "Maximum number of concurrent remote read calls. 0 means no limit."),
    flag("storage.remote.read-max-bytes-in-frame", Int, "1048576", Used, false,
        "Maximum number of bytes in a single frame for streaming remote read response types before marshalling."),
    flag("web.search.max-limit", Int, "10000", Compat, false, ""),
    flag("rules.alert.for-outage-tolerance", Kind::Duration, "1h", Used, false,
        "Max time to tolerate prometheus outage for restoring \"for\" state of alert."),
    flag("rules.alert.for-grace-period", Kind::Duration, "10m", Used, false,
        "Minimum duration between alert and restored \"for\" state. This is maintained only for alerts with configured \"for\" time greater than grace period."),
    flag("rules.alert.resend-delay", Kind::Duration, "1m", Used, false,
        "Minimum amount of time to wait before resending an alert to Alertmanager."),
    flag("rules.max-concurrent-evals", Int, "4", Compat, false, ""),
    flag("scrape.adjust-timestamps", Bool, "true", Compat, false, ""),
    flag("scrape.timestamp-tolerance", GoDuration, "2ms", Compat, false, ""),
    flag("alertmanager.notification-queue-capacity", Int, "10000", Used, false,
        "The capacity of the queue for pending Alertmanager notifications."),
    flag("alertmanager.notification-batch-size", Int, "256", Used, false,
        "The maximum number of notifications per batch to send to the Alertmanager."),
    flag("alertmanager.drain-notification-queue-on-shutdown", Bool, "true", Used, false,
        "Send any outstanding Alertmanager notifications when shutting down. If false, any outstanding Alertmanager notifications will be dropped when shutting down."),
    flag("query.lookback-delta", Kind::Duration, "5m", Used, false,
        "How far back PromQL looks for a sample of an instant selector."),
    flag("query.timeout", Kind::Duration, "2m", Used, false,
        "Maximum time a query may take before it is aborted."),
    flag("query.max-concurrency", Int, "20", Used, false,
        "Maximum number of queries executed concurrently; more wait."),
    flag("query.max-samples", Int, "50000000", Used, false,
        "Maximum number of samples a single query can load into memory."),
    flag("scrape.discovery-reload-interval", Kind::Duration, "5s", Compat, false, ""),
    flag("enable-feature", Strings, "", Used, false, ""),
    flag("agent", Bool, "false", Agent, false, ""),
    flag("log.level", Enum(&["debug", "info", "warn", "error"]), "info", Used, false,
        "Only log messages with the given severity or above (FERRITE_LOG, a tracing filter, overrides it)."),
    flag("log.format", Enum(&["logfmt", "json"]), "logfmt", Used, false,
        "Output format of log messages: logfmt (Ferrite's text lines) or json (one object per line)."),
    flag("write-documentation", Bool, "false", Compat, false, ""),
    // Ferrite's own.
    flag("storage.tsdb.compaction-write-rate", Int, "0", Used, false,
        "Cap on the rate compaction writes chunk data, bytes per second (0: no cap). Ferrite only."),
];

/// The table entry of a flag.
pub fn spec(name: &str) -> Option<&'static FlagSpec> {
    FLAGS.iter().find(|f| f.name == name)
}

/// The server's flags as given on the command line.
#[derive(Debug, Clone, Default)]
pub struct ServerFlags {
    /// Flags given on the command line, by name: their values in order
    /// (booleans as `true`/`false`, the `--no-` form included).
    given: BTreeMap<&'static str, Vec<String>>,
}

/// `no-<name>` of a boolean flag, as clap wants it (`&'static str`): built
/// once for the table and kept for the life of the process.
fn no_id(name: &str) -> &'static str {
    static IDS: std::sync::OnceLock<BTreeMap<&'static str, &'static str>> =
        std::sync::OnceLock::new();
    let ids = IDS.get_or_init(|| {
        FLAGS
            .iter()
            .filter(|f| f.kind == Bool)
            .map(|f| {
                let no: &'static str = Box::leak(format!("no-{}", f.name).into_boxed_str());
                (f.name, no)
            })
            .collect()
    });
    ids.get(name).copied().unwrap_or("no-")
}

/// Go's `strconv.ParseBool`.
fn parse_bool(s: &str) -> Option<bool> {
    match s {
        "1" | "t" | "T" | "true" | "TRUE" | "True" => Some(true),
        "0" | "f" | "F" | "false" | "FALSE" | "False" => Some(false),
        _ => None,
    }
}

fn bool_value(s: &str) -> Result<String, String> {
    parse_bool(s)
        .map(|b| b.to_string())
        .ok_or_else(|| format!("{s:?} is not a boolean"))
}

fn int_value(s: &str) -> Result<String, String> {
    // kingpin parses ints with ParseFloat and truncates: `5e7` is 50000000.
    match s.trim().parse::<f64>() {
        Ok(f) if f.is_finite() && f.abs() < 9.2e18 => Ok((f.trunc() as i64).to_string()),
        _ => Err(format!("{s:?} is not a number")),
    }
}

fn float_value(s: &str) -> Result<String, String> {
    match s.trim().parse::<f64>() {
        Ok(f) if f.is_finite() => Ok(f.to_string()),
        _ => Err(format!("{s:?} is not a number")),
    }
}

fn duration_value(s: &str) -> Result<String, String> {
    parse_duration_ms(s)
        .map(format_duration_ms)
        .map_err(|e| e.to_string())
}

fn go_duration_value(s: &str) -> Result<String, String> {
    // Go's time.ParseDuration: `0`, or numbers with units (`1m30s`, `2ms`).
    let body = s.strip_prefix(['+', '-']).unwrap_or(s);
    let mut rest = body;
    let ok = body == "0"
        || (!body.is_empty()
            && loop {
                let n = rest
                    .bytes()
                    .take_while(|b| b.is_ascii_digit() || *b == b'.')
                    .count();
                if n == 0 {
                    break false;
                }
                rest = &rest[n..];
                let u = rest
                    .find(|c: char| c.is_ascii_digit() || c == '.')
                    .unwrap_or(rest.len());
                if !matches!(
                    &rest[..u],
                    "ns" | "us" | "\u{b5}s" | "\u{3bc}s" | "ms" | "s" | "m" | "h"
                ) {
                    break false;
                }
                rest = &rest[u..];
                if rest.is_empty() {
                    break true;
                }
            });
    if ok {
        Ok(s.to_string())
    } else {
        Err(format!("{s:?} is not a duration"))
    }
}

fn bytes_value(s: &str) -> Result<String, String> {
    parse_base2_bytes(s)
        .map(format_base2_bytes)
        .map_err(|e| e.to_string())
}

impl FromArgMatches for ServerFlags {
    fn from_arg_matches(m: &ArgMatches) -> std::result::Result<Self, clap::Error> {
        let mut given = BTreeMap::new();
        for f in FLAGS {
            let mut values: Vec<String> = m
                .get_many::<String>(f.name)
                .map(|v| v.cloned().collect())
                .unwrap_or_default();
            if f.kind == Bool {
                // `overrides_with` keeps only the later of `--x` and `--no-x`.
                if m.get_flag(no_id(f.name)) {
                    values = vec!["false".to_string()];
                }
            }
            if !values.is_empty() {
                given.insert(f.name, values);
            }
        }
        Ok(ServerFlags { given })
    }

    fn update_from_arg_matches(&mut self, m: &ArgMatches) -> std::result::Result<(), clap::Error> {
        *self = Self::from_arg_matches(m)?;
        Ok(())
    }
}

impl Args for ServerFlags {
    fn augment_args(mut cmd: clap::Command) -> clap::Command {
        cmd = cmd.after_help(
            "Every other flag of Prometheus v3.9.1's server is accepted as well (boolean ones \
             also as --no-<flag>) and listed in /api/v1/status/flags; those Ferrite has no use \
             for are logged at startup as having no effect.",
        );
        for f in FLAGS {
            let mut arg = Arg::new(f.name)
                .long(f.name)
                .hide(f.hidden)
                .value_name(value_name(f.kind));
            if !f.help.is_empty() {
                arg = arg.help(f.help);
            }
            arg = match f.kind {
                Bool => arg
                    .num_args(0..=1)
                    .require_equals(true)
                    .default_missing_value("true")
                    .action(ArgAction::Set)
                    .value_parser(bool_value)
                    .overrides_with(no_id(f.name)),
                Str => arg.action(ArgAction::Set).allow_hyphen_values(true),
                Strings => arg.action(ArgAction::Append),
                Int => arg.action(ArgAction::Set).value_parser(int_value),
                Float => arg.action(ArgAction::Set).value_parser(float_value),
                Kind::Duration => arg.action(ArgAction::Set).value_parser(duration_value),
                GoDuration => arg.action(ArgAction::Set).value_parser(go_duration_value),
                Bytes => arg.action(ArgAction::Set).value_parser(bytes_value),
                Enum(vs) => arg
                    .action(ArgAction::Set)
                    .value_parser(PossibleValuesParser::new(vs.iter().copied())),
                Enums(vs) => arg
                    .action(ArgAction::Append)
                    .value_parser(PossibleValuesParser::new(vs.iter().copied())),
            };
            cmd = cmd.arg(arg);
            if f.kind == Bool {
                cmd = cmd.arg(
                    Arg::new(no_id(f.name))
                        .long(no_id(f.name))
                        .action(ArgAction::SetTrue)
                        .hide(true)
                        .overrides_with(f.name),
                );
            }
        }
        cmd
    }

    fn augment_args_for_update(cmd: clap::Command) -> clap::Command {
        Self::augment_args(cmd)
    }
}

fn value_name(kind: Kind) -> &'static str {
    match kind {
        Bool => "BOOL",
        Str | Strings | Enum(_) | Enums(_) => "VALUE",
        Int => "INT",
        Float => "FLOAT",
        Kind::Duration | GoDuration => "DURATION",
        Bytes => "BYTES",
    }
}

/// Go's `net.Listen` addresses: `host:port`, `:port` (all interfaces),
/// `[v6]:port`, or a host name.
pub fn parse_listen_address(s: &str) -> Result<SocketAddr> {
    if let Some(port) = s.strip_prefix(':') {
        let port: u16 = port
            .parse()
            .with_context(|| format!("invalid port in {s:?}"))?;
        return Ok(SocketAddr::from(([0, 0, 0, 0], port)));
    }
    if let Ok(a) = s.parse::<SocketAddr>() {
        return Ok(a);
    }
    s.to_socket_addrs()
        .with_context(|| format!("cannot resolve {s:?}"))?
        .next()
        .with_context(|| format!("{s:?} resolves to no address"))
}

/// Prometheus' route prefix: `/` + the path without surrounding slashes.
fn route_prefix(route_prefix: Option<&str>, external_url: &str) -> String {
    let path = match route_prefix {
        Some(p) => p.to_string(),
        None => {
            // The path of the URL (Go's url.Parse): after `scheme://host`,
            // before `?` or `#`; a string without a scheme is all path.
            let url = external_url.split(['?', '#']).next().unwrap_or("");
            match url.split_once("://") {
                Some((_, r)) => r.find('/').map_or("", |i| &r[i..]).to_string(),
                None => url.to_string(),
            }
        }
    };
    format!("/{}", path.trim_matches('/'))
}

impl ServerFlags {
    /// Parses flags from a command line (without the program name); for
    /// tests.
    #[cfg(test)]
    pub fn try_parse_from<I, T>(args: I) -> std::result::Result<ServerFlags, clap::Error>
    where
        I: IntoIterator<Item = T>,
        T: Into<std::ffi::OsString> + Clone,
    {
        let cmd = ServerFlags::augment_args(clap::Command::new("ferrite").no_binary_name(true));
        let m = cmd.try_get_matches_from(args)?;
        ServerFlags::from_arg_matches(&m)
    }

    /// Whether the flag was given on the command line.
    pub fn is_set(&self, name: &str) -> bool {
        self.given.contains_key(name)
    }

    /// The flag's last value as given, if given.
    fn given(&self, name: &str) -> Option<&str> {
        self.given
            .get(name)
            .and_then(|v| v.last())
            .map(String::as_str)
    }

    /// The flag's value: as given, else Prometheus' default.
    fn value(&self, name: &str) -> &str {
        self.given(name)
            .or_else(|| spec(name).map(|f| f.default))
            .unwrap_or("")
    }

    fn bool(&self, name: &str) -> bool {
        parse_bool(self.value(name)).unwrap_or(false)
    }

    /// `--log.level`: the lowest severity logged.
    pub fn log_level(&self) -> &str {
        self.value("log.level")
    }

    /// `--log.format=json`.
    pub fn log_json(&self) -> bool {
        self.value("log.format") == "json"
    }

    fn duration_ms(&self, name: &str) -> Result<i64> {
        parse_duration_ms(self.value(name)).with_context(|| format!("--{name}"))
    }

    fn bytes(&self, name: &str) -> Result<i64> {
        parse_base2_bytes(self.value(name)).with_context(|| format!("--{name}"))
    }

    fn int(&self, name: &str) -> Result<i64> {
        int_value(self.value(name))
            .map_err(anyhow::Error::msg)
            .and_then(|s| Ok(s.parse::<i64>()?))
            .with_context(|| format!("--{name}"))
    }

    /// `--enable-feature` values (repeatable, each comma-separated).
    pub fn features(&self) -> Vec<&str> {
        self.given
            .get("enable-feature")
            .into_iter()
            .flatten()
            .flat_map(|v| v.split(','))
            .map(str::trim)
            .filter(|f| !f.is_empty())
            .collect()
    }

    /// Features given that Ferrite does not act on.
    pub fn features_without_effect(&self) -> Vec<&str> {
        self.features()
            .into_iter()
            .filter(|f| !FEATURES_USED.contains(f))
            .collect()
    }

    /// Flags given that have no effect in Ferrite, with their values.
    pub fn compat_only_given(&self) -> Vec<(&'static str, String)> {
        FLAGS
            .iter()
            .filter(|f| f.effect == Compat)
            .filter_map(|f| self.given.get(f.name).map(|v| (f.name, v.join(","))))
            .collect()
    }

    pub fn to_options(&self) -> Result<ServerOptions> {
        let agent: Vec<String> = FLAGS
            .iter()
            .filter(|f| f.effect == Agent && f.name != "agent" && self.is_set(f.name))
            .map(|f| format!("--{}", f.name))
            .collect();
        if self.bool("agent") {
            bail!("--agent: Prometheus' agent mode is not supported by Ferrite");
        }
        if !agent.is_empty() {
            bail!(
                "the following flag(s) can only be used in agent mode: {}",
                agent.join(", ")
            );
        }
        if !self.value("web.config.file").is_empty() {
            // Serving without the TLS or authentication it asks for would
            // expose the server; refuse rather than ignore.
            bail!("--web.config.file (TLS and authentication) is not supported by Ferrite yet");
        }
        let ratio: f64 = self.value("auto-gomemlimit.ratio").parse().unwrap_or(0.0);
        if !(ratio > 0.0 && ratio <= 1.0) {
            bail!("--auto-gomemlimit.ratio must be greater than 0 and less than or equal to 1");
        }

        let addrs = self
            .given
            .get("web.listen-address")
            .cloned()
            .unwrap_or_else(|| vec!["0.0.0.0:9090".into()]);
        let first = addrs.first().map_or("0.0.0.0:9090", String::as_str);
        let listen = parse_listen_address(first).context("--web.listen-address")?;
        if addrs.len() > 1 {
            tracing::warn!(
                used = first,
                ignored = %addrs[1..].join(","),
                "Ferrite listens on one --web.listen-address; the others are ignored"
            );
        }

        let mut db = DbOptions {
            no_lockfile: self.bool("storage.tsdb.no-lockfile"),
            ..DbOptions::default()
        };
        let retention_set = self.is_set("storage.tsdb.retention.time");
        if retention_set {
            db.retention_ms = self.duration_ms("storage.tsdb.retention.time")?;
        }
        db.retention_bytes = self.bytes("storage.tsdb.retention.size")?;
        let config = self.load_config(listen.port())?;
        ferrite_server::config::apply_storage(&config, &mut db).with_context(|| {
            format!(
                "Error loading config (--config.file={})",
                self.value("config.file")
            )
        })?;
        if self.is_set("storage.tsdb.max-block-duration") {
            db.max_block_duration_ms = self.duration_ms("storage.tsdb.max-block-duration")?;
        }
        let min_block = self.duration_ms("storage.tsdb.min-block-duration")?;
        if min_block <= 0 {
            bail!("--storage.tsdb.min-block-duration must be positive");
        }
        db.head.chunk_range = min_block;
        let spc = self.int("storage.tsdb.samples-per-chunk")?;
        db.head.samples_per_chunk =
            u16::try_from(spc)
                .ok()
                .filter(|&n| n > 0)
                .with_context(|| {
                    format!("--storage.tsdb.samples-per-chunk {spc}: must be 1 to 65535")
                })?;
        if let Some(wal) = db.head.wal.as_mut() {
            wal.compression = if !self.bool("storage.tsdb.wal-compression") {
                Compression::None
            } else if self.value("storage.tsdb.wal-compression-type") == "zstd" {
                Compression::Zstd
            } else {
                Compression::Snappy
            };
            let size = self.bytes("storage.tsdb.wal-segment-size")?;
            if size != 0 {
                if !(10 << 20..=256 << 20).contains(&size) {
                    bail!("--storage.tsdb.wal-segment-size must be between 10MB and 256MB");
                }
                if !(size as usize).is_multiple_of(ferrite_wal::PAGE_SIZE) {
                    bail!("--storage.tsdb.wal-segment-size must be a multiple of 32KiB");
                }
                wal.segment_size = size as usize;
            }
        }
        db.compaction_write_bytes_per_sec = match self.int("storage.tsdb.compaction-write-rate")? {
            n if n > 0 => Some(n as u64),
            _ => None,
        };

        let engine = ferrite_promql::EngineOptions {
            lookback_delta_ms: self.duration_ms("query.lookback-delta")?,
            max_samples: usize::try_from(self.int("query.max-samples")?.max(0))
                .unwrap_or(usize::MAX),
            timeout: Duration::from_millis(self.duration_ms("query.timeout")?.max(0) as u64),
            delayed_name_removal: self.features().contains(&"promql-delayed-name-removal"),
            ..ferrite_promql::EngineOptions::default()
        };
        let external_url = self.value("web.external-url").to_string();
        let web = WebOptions {
            route_prefix: route_prefix(self.given("web.route-prefix"), &external_url),
            max_connections: usize::try_from(self.int("web.max-connections")?.max(0))
                .unwrap_or(usize::MAX),
            read_timeout: Duration::from_millis(self.duration_ms("web.read-timeout")?.max(0) as u64),
            max_concurrent_queries: usize::try_from(self.int("query.max-concurrency")?.max(1))
                .unwrap_or(usize::MAX),
            external_url: external_url.clone(),
        };
        if web.route_prefix.contains(['{', '}', '*']) {
            bail!(
                "--web.route-prefix {:?}: '{{', '}}' and '*' are not supported in a route prefix",
                web.route_prefix
            );
        }
        let remote_write_receiver = self.bool("web.enable-remote-write-receiver");
        let admin_api = self.bool("web.enable-admin-api");
        let lifecycle_api = self.bool("web.enable-lifecycle");
        let nonneg = |name: &str| -> Result<usize> {
            let n = self.int(name)?;
            usize::try_from(n).with_context(|| format!("--{name} {n}: must not be negative"))
        };
        let remote_read = ferrite_server::read::RemoteReadOptions {
            sample_limit: nonneg("storage.remote.read-sample-limit")?,
            concurrent_limit: nonneg("storage.remote.read-concurrent-limit")?,
            max_bytes_in_frame: nonneg("storage.remote.read-max-bytes-in-frame")?,
        };
        let defaults = ferrite_server::NotifierOptions::default();
        let notifier = ferrite_server::NotifierOptions {
            queue_capacity: nonneg("alertmanager.notification-queue-capacity")?,
            // As Prometheus: 0 or less is the default.
            batch_size: usize::try_from(self.int("alertmanager.notification-batch-size")?)
                .ok()
                .filter(|&n| n > 0)
                .unwrap_or(defaults.batch_size),
            drain_on_shutdown: self.bool("alertmanager.drain-notification-queue-on-shutdown"),
            ..defaults
        };
        let positive_duration = |name: &str| -> Result<Duration> {
            Ok(Duration::from_millis(self.duration_ms(name)?.max(0) as u64))
        };
        let alert_rules = ferrite_server::AlertRuleOptions {
            resend_delay: positive_duration("rules.alert.resend-delay")?,
            for_grace_period: positive_duration("rules.alert.for-grace-period")?,
            outage_tolerance: positive_duration("rules.alert.for-outage-tolerance")?,
        };
        let flags = self.status_flags(&db, &web);
        Ok(ServerOptions {
            data_dir: PathBuf::from(self.value("storage.tsdb.path")),
            listen,
            db,
            remote_write_receiver,
            admin_api,
            lifecycle_api,
            remote_read,
            engine,
            flags,
            web,
            config,
            notifier,
            alert_rules,
        })
    }

    /// The configuration file: `--config.file` if given (it must load),
    /// else `./prometheus.yml` if there is one, else the embedded default
    /// (Prometheus' shipped example, its job scraping this server on
    /// `port`).
    fn load_config(&self, port: u16) -> Result<Config> {
        let path = PathBuf::from(self.value("config.file"));
        if !self.is_set("config.file") && !path.exists() {
            tracing::info!(
                port,
                "no --config.file and no ./prometheus.yml: using the default configuration (Prometheus' shipped example), scraping this server"
            );
            return Ok(Config::default_file_for_port(port));
        }
        let cfg = Config::load(&path)
            .with_context(|| format!("Error loading config (--config.file={})", path.display()))?;
        // As Prometheus: the jobs of `scrape_config_files` are read and
        // validated at start-up too.
        cfg.with_scrape_config_files().map_err(|e| {
            anyhow::anyhow!(
                "Error loading dynamic scrape config files from config (--config.file={:?}): {e}",
                path.display().to_string()
            )
        })
    }

    /// Every flag and its value as `/api/v1/status/flags` shows them:
    /// as given (normalised as Prometheus prints it) or Prometheus' default,
    /// with the values Prometheus derives (retention, max block duration,
    /// route prefix) filled in the same way.
    fn status_flags(&self, db: &DbOptions, web: &WebOptions) -> Vec<(String, String)> {
        let derived_retention = match (db.retention_ms, db.retention_bytes) {
            (0, 0) => 15 * 86_400_000,
            (ms, _) => ms,
        };
        let max_block = match db.max_block_duration_ms {
            0 => {
                let cap = 31 * 86_400_000;
                if derived_retention != 0 && derived_retention / 10 < cap {
                    derived_retention / 10
                } else {
                    cap
                }
            }
            ms => ms,
        };
        FLAGS
            .iter()
            .map(|f| {
                let v = match f.name {
                    "storage.tsdb.retention.time" => format_duration_ms(derived_retention),
                    "storage.tsdb.max-block-duration" => format_duration_ms(max_block),
                    "web.route-prefix" => web.route_prefix.clone(),
                    _ => match self.given.get(f.name) {
                        Some(vs) => vs.join(","),
                        None => f.default.to_string(),
                    },
                };
                (f.name.to_string(), v)
            })
            .collect()
    }
}

/// `--enable-feature` values Ferrite acts on.
const FEATURES_USED: &[&str] = &["promql-delayed-name-removal"];

/// Runs the server until SIGTERM or SIGINT.
pub fn run(flags: ServerFlags) -> Result<()> {
    let opts = flags.to_options()?;
    for (name, value) in flags.compat_only_given() {
        tracing::warn!(
            flag = name,
            value = %value,
            "--{name} accepted for compatibility, has no effect in Ferrite"
        );
    }
    for feature in flags.features_without_effect() {
        tracing::warn!(
            feature,
            "--enable-feature={feature} accepted for compatibility, has no effect in Ferrite"
        );
    }
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("starting the async runtime")?;
    rt.block_on(ferrite_server::run_until_signal(opts))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(args: &[&str]) -> ServerFlags {
        ServerFlags::try_parse_from(args).unwrap_or_else(|e| panic!("{args:?}: {e}"))
    }

    fn status(opts: &ServerOptions) -> BTreeMap<String, String> {
        opts.flags.iter().cloned().collect()
    }

    #[test]
    fn clap_accepts_the_definition() {
        ServerFlags::augment_args(clap::Command::new("ferrite")).debug_assert();
    }

    #[test]
    fn table_is_consistent() {
        let mut names: Vec<_> = FLAGS.iter().map(|f| f.name).collect();
        names.sort_unstable();
        let n = names.len();
        names.dedup();
        assert_eq!(names.len(), n, "duplicate flag");
        // Every default passes its own validation.
        for f in FLAGS {
            let ok = match f.kind {
                Bool => bool_value(f.default).is_ok(),
                Int => int_value(f.default).is_ok(),
                Float => float_value(f.default).is_ok(),
                Kind::Duration => duration_value(f.default).is_ok(),
                GoDuration => go_duration_value(f.default).is_ok(),
                Bytes => bytes_value(f.default).is_ok(),
                Enum(vs) => vs.contains(&f.default),
                Enums(vs) => f.default.split(',').all(|d| vs.contains(&d)),
                Str | Strings => true,
            };
            assert!(ok, "default of --{} is invalid", f.name);
        }
    }

    /// The official Docker image's CMD and the Debian unit's flags.
    #[test]
    fn prometheus_command_lines_parse() {
        // The configuration file these command lines name, here in a
        // temporary directory.
        let dir = tempfile::tempdir().unwrap();
        let config = dir.path().join("prometheus.yml");
        std::fs::write(&config, ferrite_config::DEFAULT_CONFIG).unwrap();
        let config = config.display().to_string();
        let config_flag = format!("--config.file={config}");
        let docker = [
            config_flag.as_str(),
            "--storage.tsdb.path=/prometheus",
            "--web.console.libraries=/usr/share/prometheus/console_libraries",
            "--web.console.templates=/usr/share/prometheus/consoles",
        ];
        let f = parse(&docker);
        let opts = f.to_options().unwrap();
        assert_eq!(opts.data_dir, PathBuf::from("/prometheus"));
        assert_eq!(opts.listen, "0.0.0.0:9090".parse().unwrap());
        let compat: Vec<_> = f.compat_only_given().into_iter().map(|(n, _)| n).collect();
        assert_eq!(compat, ["web.console.templates", "web.console.libraries"]);
        let st = status(&opts);
        assert_eq!(st["config.file"], config);
        assert_eq!(
            st["web.console.templates"],
            "/usr/share/prometheus/consoles"
        );

        // A systemd unit in the style of Debian's, separate values and a
        // Go-style listen address.
        let unit = [
            "--config.file",
            config.as_str(),
            "--storage.tsdb.path",
            "/var/lib/prometheus/metrics2/",
            "--web.listen-address=:9090",
            "--web.external-url=http://example.com:9090/prometheus/",
            "--storage.tsdb.retention.time=30d",
            "--web.enable-lifecycle",
            "--log.level=warn",
            "--enable-feature=exemplar-storage",
            "--enable-feature=memory-snapshot-on-shutdown",
            "--query.max-concurrency=4",
            "--storage.tsdb.wal-compression-type=zstd",
        ];
        let opts = parse(&unit).to_options().unwrap();
        assert_eq!(opts.listen, "0.0.0.0:9090".parse().unwrap());
        assert_eq!(opts.db.retention_ms, 30 * 86_400_000);
        assert_eq!(opts.web.route_prefix, "/prometheus");
        assert_eq!(opts.web.max_concurrent_queries, 4);
        assert!(opts.lifecycle_api);
        assert!(!opts.db.no_lockfile);
        assert_eq!(parse(&unit).log_level(), "warn");
        assert!(!parse(&unit).log_json());
        assert!(parse(&["--log.format=json"]).log_json());
        assert!(
            parse(&["--storage.tsdb.no-lockfile"])
                .to_options()
                .unwrap()
                .db
                .no_lockfile
        );
        assert_eq!(
            opts.db.head.wal.as_ref().unwrap().compression,
            Compression::Zstd
        );
        let st = status(&opts);
        assert_eq!(st["storage.tsdb.retention.time"], "30d");
        assert_eq!(st["storage.tsdb.max-block-duration"], "3d");
        assert_eq!(
            st["enable-feature"],
            "exemplar-storage,memory-snapshot-on-shutdown"
        );
        assert_eq!(st["web.route-prefix"], "/prometheus");
    }

    #[test]
    fn the_configuration_file_is_loaded_and_its_storage_section_applied() {
        // No flag, no ./prometheus.yml (tests run in the crate's dir): the
        // shipped example.
        let opts = parse(&[]).to_options().unwrap();
        assert_eq!(opts.config, ferrite_config::Config::default_file());

        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("p.yml");
        let arg = format!("--config.file={}", file.display());
        // Given but missing: an error naming the flag.
        let err = parse(&[arg.as_str()]).to_options().unwrap_err();
        assert!(
            format!("{err:#}").contains("Error loading config (--config.file="),
            "{err:#}"
        );

        std::fs::write(
            &file,
            "storage:\n  tsdb:\n    retention:\n      time: 30d\n",
        )
        .unwrap();
        let opts = parse(&[arg.as_str(), "--storage.tsdb.retention.size=1GB"])
            .to_options()
            .unwrap();
        // The section replaces both retention flags.
        assert_eq!(
            (opts.db.retention_ms, opts.db.retention_bytes),
            (30 * 86_400_000, 0)
        );
        assert_eq!(status(&opts)["storage.tsdb.retention.time"], "30d");
        assert_eq!(opts.config.path.as_deref(), Some(file.as_path()));

        std::fs::write(
            &file,
            "storage:\n  tsdb:\n    out_of_order_time_window: 1h\n",
        )
        .unwrap();
        let opts = parse(&[arg.as_str()]).to_options().unwrap();
        assert_eq!(opts.db.head.out_of_order_time_window, 3_600_000);
        std::fs::write(&file, "storage:\n  tsdb:\n    bogus: 1\n").unwrap();
        let err = parse(&[arg.as_str()]).to_options().unwrap_err();
        assert!(
            format!("{err:#}").contains("field bogus not found in type config.plain"),
            "{err:#}"
        );
    }

    #[test]
    fn status_lists_every_flag_with_prometheus_defaults() {
        let opts = parse(&[]).to_options().unwrap();
        let st = status(&opts);
        assert_eq!(st.len(), FLAGS.len());
        for (k, v) in [
            ("storage.tsdb.retention.time", "15d"),
            ("storage.tsdb.retention.size", "0B"),
            ("storage.tsdb.max-block-duration", "1d12h"),
            ("storage.tsdb.min-block-duration", "2h"),
            ("web.listen-address", "0.0.0.0:9090"),
            ("web.route-prefix", "/"),
            ("web.external-url", ""),
            ("query.max-samples", "50000000"),
            ("query.max-concurrency", "20"),
            ("storage.remote.read-sample-limit", "50000000"),
            ("auto-gomemlimit.ratio", "0.9"),
            ("log.level", "info"),
            ("enable-feature", ""),
            ("agent", "false"),
            (
                "web.remote-write-receiver.accepted-protobuf-messages",
                "prometheus.WriteRequest,io.prometheus.write.v2.Request",
            ),
        ] {
            assert_eq!(st[k], v, "{k}");
        }
        assert_eq!(opts.data_dir, PathBuf::from("data/"));
        assert!(opts.remote_write_receiver);
        assert!(!opts.admin_api);
        assert!(!opts.lifecycle_api);
        // Only a size limit: no time retention, 31d blocks at most.
        let st = status(
            &parse(&["--storage.tsdb.retention.size=10GB"])
                .to_options()
                .unwrap(),
        );
        assert_eq!(st["storage.tsdb.retention.time"], "0s");
        assert_eq!(st["storage.tsdb.retention.size"], "10GiB");
        assert_eq!(st["storage.tsdb.max-block-duration"], "31d");
    }

    #[test]
    fn features_are_acted_on_or_reported() {
        let f = parse(&[
            "--enable-feature=exemplar-storage,promql-delayed-name-removal",
            "--enable-feature=memory-snapshot-on-shutdown",
        ]);
        assert!(f.to_options().unwrap().engine.delayed_name_removal);
        assert_eq!(
            f.features_without_effect(),
            ["exemplar-storage", "memory-snapshot-on-shutdown"]
        );
        assert!(!parse(&[]).to_options().unwrap().engine.delayed_name_removal);
    }

    #[test]
    fn booleans_take_the_no_form() {
        let opts = parse(&["--web.enable-admin-api"]).to_options().unwrap();
        assert!(opts.admin_api);
        let opts = parse(&["--web.enable-admin-api", "--no-web.enable-admin-api"])
            .to_options()
            .unwrap();
        assert!(!opts.admin_api);
        let opts = parse(&["--no-web.enable-admin-api", "--web.enable-admin-api"])
            .to_options()
            .unwrap();
        assert!(opts.admin_api);
        let opts = parse(&["--web.enable-admin-api=false"])
            .to_options()
            .unwrap();
        assert!(!opts.admin_api);
        let opts = parse(&["--no-web.enable-remote-write-receiver"])
            .to_options()
            .unwrap();
        assert!(!opts.remote_write_receiver);
        assert_eq!(status(&opts)["web.enable-remote-write-receiver"], "false");
        let opts = parse(&["--no-storage.tsdb.wal-compression"])
            .to_options()
            .unwrap();
        assert_eq!(
            opts.db.head.wal.as_ref().unwrap().compression,
            Compression::None
        );
        // Every boolean has its `--no-` form; no value flag has one.
        for f in FLAGS.iter().filter(|f| f.kind == Bool) {
            let no = format!("--no-{}", f.name);
            let fl = parse(&[no.as_str()]);
            assert_eq!(fl.value(f.name), "false", "{no}");
        }
        assert!(ServerFlags::try_parse_from(["--no-storage.tsdb.path"]).is_err());
    }

    #[test]
    fn implemented_flags_reach_the_options() {
        let opts = parse(&[
            "--storage.tsdb.min-block-duration=1h",
            "--storage.tsdb.max-block-duration=12h",
            "--storage.tsdb.samples-per-chunk=240",
            "--storage.tsdb.wal-segment-size=64MB",
            "--storage.tsdb.retention.size=512MB",
            "--web.max-connections=7",
            "--web.read-timeout=30s",
            "--web.route-prefix=/api-root/",
            "--query.lookback-delta=1m",
            "--query.timeout=10s",
            "--query.max-samples=5e7",
            "--web.listen-address=127.0.0.1:9999",
        ])
        .to_options()
        .unwrap();
        assert_eq!(opts.db.head.chunk_range, 3_600_000);
        assert_eq!(opts.db.max_block_duration_ms, 12 * 3_600_000);
        assert_eq!(opts.db.head.samples_per_chunk, 240);
        assert_eq!(opts.db.head.wal.as_ref().unwrap().segment_size, 64 << 20);
        assert_eq!(opts.db.retention_bytes, 512 << 20);
        assert_eq!(opts.web.max_connections, 7);
        assert_eq!(opts.web.read_timeout, Duration::from_secs(30));
        assert_eq!(opts.web.route_prefix, "/api-root");
        assert_eq!(opts.engine.lookback_delta_ms, 60_000);
        assert_eq!(opts.engine.timeout, Duration::from_secs(10));
        assert_eq!(opts.engine.max_samples, 50_000_000);
        assert_eq!(opts.listen, "127.0.0.1:9999".parse().unwrap());
        let st = status(&opts);
        assert_eq!(st["storage.tsdb.retention.size"], "512MiB");
        assert_eq!(st["query.max-samples"], "50000000");
    }

    #[test]
    fn bad_flags_are_refused() {
        let err = ServerFlags::try_parse_from(["--storage.tsdb.nonsense=1"]).unwrap_err();
        assert_eq!(err.kind(), clap::error::ErrorKind::UnknownArgument);
        assert!(ServerFlags::try_parse_from(["--web.enable-admin-apii"]).is_err());
        assert!(ServerFlags::try_parse_from(["--query.timeout=soon"]).is_err());
        assert!(ServerFlags::try_parse_from(["--web.max-connections=many"]).is_err());
        assert!(ServerFlags::try_parse_from(["--log.level=loud"]).is_err());
        assert!(ServerFlags::try_parse_from(["--web.enable-admin-api=maybe"]).is_err());
        // Repeating a single-valued flag is an error, as in kingpin.
        assert!(ServerFlags::try_parse_from(["--query.timeout=1m", "--query.timeout=2m"]).is_err());
        // Accepted by the parser, refused at startup.
        assert!(parse(&["--agent"]).to_options().is_err());
        assert!(parse(&["--storage.agent.path=/x"]).to_options().is_err());
        assert!(parse(&["--web.config.file=/etc/web.yml"])
            .to_options()
            .is_err());
        assert!(parse(&["--web.route-prefix=/{x}"]).to_options().is_err());
        assert!(parse(&["--storage.tsdb.wal-segment-size=1MB"])
            .to_options()
            .is_err());
    }

    #[test]
    fn flags_new_in_prometheus_3_16_are_accepted() {
        let opts = parse(&[
            "--config.auto-reload",
            "--auto-gomemlimit.refresh-interval=1m",
            "--web.search.max-limit=500",
        ])
        .to_options()
        .unwrap();
        let st = status(&opts);
        assert_eq!(st["config.auto-reload"], "true");
        assert_eq!(st["web.search.max-limit"], "500");
        assert_eq!(st["storage.agent.checkpoint-batch-size"], "1000");
    }

    #[test]
    fn listen_addresses() {
        assert_eq!(
            parse_listen_address(":9090").unwrap(),
            "0.0.0.0:9090".parse().unwrap()
        );
        assert_eq!(
            parse_listen_address("[::1]:80").unwrap(),
            "[::1]:80".parse().unwrap()
        );
        assert!(parse_listen_address("localhost:9090").is_ok());
        assert!(parse_listen_address(":http").is_err());
    }

    #[test]
    fn route_prefixes() {
        assert_eq!(route_prefix(None, ""), "/");
        assert_eq!(route_prefix(None, "http://h:9090"), "/");
        assert_eq!(route_prefix(None, "https://h/a/b/?x=1"), "/a/b");
        assert_eq!(route_prefix(Some("/"), "http://h/a"), "/");
        assert_eq!(route_prefix(Some("x/"), ""), "/x");
        assert_eq!(route_prefix(None, "prom/"), "/prom");
    }

    #[test]
    fn go_durations() {
        for ok in ["0", "2ms", "1m30s", "1.5h", "-3s"] {
            assert!(go_duration_value(ok).is_ok(), "{ok}");
        }
        for bad in ["", "2", "ms", "1x", "1m3"] {
            assert!(go_duration_value(bad).is_err(), "{bad}");
        }
    }
}
