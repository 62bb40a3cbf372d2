//! `ferrite test rules`: promtool's `test rules`, the rule unit tests of
//! Prometheus' test file format (see `ferrite_rules::unittest`), printed
//! in promtool's words and streams, with its exit codes.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{bail, Result};
use clap::Subcommand;
use ferrite_rules::unittest::{junit_xml, run_file, FileResult, Options};

#[derive(Subcommand)]
pub enum TestCommand {
    /// Unit tests for rules, as `promtool test rules` runs them.
    Rules {
        /// Only run test groups whose names match the regular expression
        /// (may be given several times).
        #[arg(long)]
        run: Vec<String>,
        /// Print a colored differential output between expected and
        /// received alerts.
        #[arg(long)]
        diff: bool,
        /// Enable unit test debugging.
        #[arg(long)]
        debug: bool,
        /// Ignore unknown fields in the rule files (not in the test
        /// files, which promtool always reads strictly).
        #[arg(long)]
        ignore_unknown_fields: bool,
        /// The test files.
        #[arg(required = true)]
        files: Vec<PathBuf>,
    },
}

/// The flags of `test` itself (promtool's `test --junit FILE rules ...`).
#[derive(clap::Args)]
pub struct TestArgs {
    /// File path to store JUnit XML test results.
    #[arg(long)]
    junit: Option<PathBuf>,
    #[command(subcommand)]
    command: TestCommand,
}

/// promtool's exit code for a failed test file.
const FAILURE_EXIT_CODE: u8 = 1;

pub fn run(args: TestArgs) -> Result<ExitCode> {
    // kingpin opens (and truncates) the file while reading the flags.
    let mut junit = match &args.junit {
        None => None,
        Some(path) => match std::fs::File::create(path) {
            Ok(f) => Some(f),
            Err(e) => {
                let name = path.display().to_string();
                eprintln!(
                    "ferrite: error: {}, try --help",
                    ferrite_rules::file::go_io_error(&name, &e)
                );
                return Ok(ExitCode::from(FAILURE_EXIT_CODE));
            }
        },
    };
    match args.command {
        TestCommand::Rules {
            run,
            diff,
            debug,
            ignore_unknown_fields,
            files,
        } => {
            // kingpin's `ExistingFiles`, checked before anything runs.
            for f in &files {
                match std::fs::metadata(f) {
                    Err(_) => {
                        eprintln!(
                            "ferrite: error: path '{}' does not exist, try --help",
                            f.display()
                        );
                        return Ok(ExitCode::from(FAILURE_EXIT_CODE));
                    }
                    Ok(m) if m.is_dir() => {
                        eprintln!(
                            "ferrite: error: '{}' is a directory, try --help",
                            f.display()
                        );
                        return Ok(ExitCode::from(FAILURE_EXIT_CODE));
                    }
                    Ok(_) => {}
                }
            }
            // Go's `regexp.MatchString` of the patterns joined with `|`:
            // a match anywhere in the name.
            let re = if run.is_empty() {
                None
            } else {
                let joined = run.join("|");
                match ferrite_model::matcher::compile_anchored(&format!(".*(?-s:(?:{joined})).*")) {
                    Ok(re) => Some(re),
                    Err(e) => bail!("invalid --run regular expression {joined:?}: {e}"),
                }
            };
            let matches = |name: &str| re.as_ref().is_some_and(|re| re.is_match(name));
            let opts = Options {
                run: re.as_ref().map(|_| &matches as &dyn Fn(&str) -> bool),
                diff,
                debug,
                ignore_unknown_fields,
            };
            // promtool's rule manager logs nothing (a no-op logger): the
            // failures are in the report.
            let quiet = tracing::subscriber::NoSubscriber::default();
            Ok(tracing::subscriber::with_default(quiet, || {
                test_rules(&files, &opts, junit.as_mut())
            }))
        }
    }
}

/// Runs each file as promtool does: `Processing test file: <f>`, then
/// `  SUCCESS` or `  FAILED:` and each error (on standard error, each
/// followed by an empty line on standard output); 1 if any failed.
fn test_rules(
    files: &[PathBuf],
    opts: &Options<'_>,
    junit: Option<&mut std::fs::File>,
) -> ExitCode {
    let mut failed = false;
    let mut results: Vec<(String, FileResult)> = Vec::new();
    for f in files {
        let name = f.display().to_string();
        println!("Processing test file: {name}");
        let result = run_file(&name, opts);
        let errs = result.errors();
        if errs.is_empty() {
            println!("  SUCCESS");
        } else {
            eprintln!("  FAILED:");
            for e in errs {
                eprintln!("{e}");
                println!();
            }
            failed = true;
        }
        println!();
        results.push((name, result));
    }
    if let Some(out) = junit {
        // Go's `time.Now().Format("2006-01-02T15:04:05")`.
        let now = chrono::DateTime::<chrono::Utc>::from(std::time::SystemTime::now())
            .format("%Y-%m-%dT%H:%M:%S")
            .to_string();
        if let Err(e) = std::io::Write::write_all(out, junit_xml(&results, &now).as_bytes()) {
            eprintln!("failed to write JUnit XML: {e}");
        }
    }
    if failed {
        ExitCode::from(FAILURE_EXIT_CODE)
    } else {
        ExitCode::SUCCESS
    }
}
