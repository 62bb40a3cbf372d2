//! The `ferrite` binary: the server (no subcommand) and the command-line
//! tools that work on a data directory.

mod cmd;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

#[derive(Parser)]
#[command(
    name = "ferrite",
    version,
    about = "Ferrite: a Prometheus-compatible time series database"
)]
struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
    /// With no subcommand: run the server (flags named as Prometheus').
    #[command(flatten)]
    server: cmd::server::ServerFlags,
}

#[derive(Subcommand)]
enum Command {
    /// Tools for a TSDB data directory.
    #[command(subcommand)]
    Tsdb(cmd::tsdb::TsdbCommand),
    /// Runs PromQL test files (Prometheus' promqltest format) against
    /// Ferrite's engine; prints failing cases and `<n> passed, <n> failed`.
    PromqlTest {
        #[arg(required = true)]
        files: Vec<std::path::PathBuf>,
    },
    /// Checks files as promtool's `check` does.
    #[command(subcommand)]
    Check(cmd::check::CheckCommand),
    /// Runs unit tests as promtool's `test` does.
    Test(cmd::test_rules::TestArgs),
    /// Developer tools (format cross-checks).
    #[command(subcommand, hide = true)]
    Debug(cmd::debug::DebugCommand),
}

/// Logs go to stderr: at `--log.level` (the server's flag; `info` for the
/// tools) unless `FERRITE_LOG` gives a tracing filter, as text lines or, with
/// `--log.format=json`, one JSON object per line.
fn init_logging(cli: &Cli) {
    let (level, json) = match cli.command {
        None => (cli.server.log_level(), cli.server.log_json()),
        Some(_) => ("info", false),
    };
    let filter = tracing_subscriber::EnvFilter::try_from_env("FERRITE_LOG").unwrap_or_else(|_| {
        // At debug, the HTTP stack's own debug lines would drown Ferrite's.
        let quiet_deps = if level == "debug" {
            ",hyper=info,hyper_util=info,h2=info,tower=info,tower_http=info,axum=info,mio=info"
        } else {
            ""
        };
        tracing_subscriber::EnvFilter::new(format!("{level}{quiet_deps}"))
    });
    let logger = tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .with_env_filter(filter);
    if json {
        logger.json().init();
    } else {
        logger.init();
    }
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    init_logging(&cli);
    let result = match cli.command {
        Some(Command::Check(c)) => match cmd::check::run(c) {
            Ok(code) => return code,
            Err(e) => Err(e),
        },
        Some(Command::Test(c)) => match cmd::test_rules::run(c) {
            Ok(code) => return code,
            Err(e) => Err(e),
        },
        Some(Command::Tsdb(c)) => cmd::tsdb::run(c),
        Some(Command::Debug(c)) => cmd::debug::run(c),
        Some(Command::PromqlTest { files }) => cmd::promql_test::run(files),
        None => cmd::server::run(cli.server),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::FAILURE
        }
    }
}
