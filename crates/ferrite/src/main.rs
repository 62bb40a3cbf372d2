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
    /// Developer tools (format cross-checks).
    #[command(subcommand, hide = true)]
    Debug(cmd::debug::DebugCommand),
}

fn main() -> ExitCode {
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_env("FERRITE_LOG")
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info")),
        )
        .init();
    let cli = Cli::parse();
    let result = match cli.command {
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
