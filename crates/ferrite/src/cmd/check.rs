//! `ferrite check`: promtool's `check` for the files Ferrite reads.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{bail, Result};
use clap::Subcommand;
use ferrite_config::Config;

#[derive(Subcommand)]
pub enum CheckCommand {
    /// Checks configuration files as `promtool check config --syntax-only`
    /// does: each is read and validated as the server would load it.
    Config {
        /// Only check the files' syntax (the one mode so far: rule files
        /// and scrape configurations are not read yet).
        #[arg(long)]
        syntax_only: bool,
        #[arg(required = true)]
        files: Vec<PathBuf>,
    },
}

/// promtool's exit code for a file that failed its check.
const FAILURE_EXIT_CODE: u8 = 1;

pub fn run(c: CheckCommand) -> Result<ExitCode> {
    match c {
        CheckCommand::Config { syntax_only, files } => {
            if !syntax_only {
                bail!(
                    "checking a configuration's rule files and scrape configs is not supported yet: use --syntax-only"
                );
            }
            Ok(check_config(&files))
        }
    }
}

/// Prints what promtool prints for each file, in its words and streams.
fn check_config(files: &[PathBuf]) -> ExitCode {
    let mut failed = false;
    for f in files {
        println!("Checking {}", f.display());
        match Config::load(f) {
            Ok(_) => println!(
                " SUCCESS: {} is valid prometheus config file syntax",
                f.display()
            ),
            Err(e) => {
                eprintln!("  FAILED: {e}");
                failed = true;
            }
        }
        println!();
    }
    if failed {
        ExitCode::from(FAILURE_EXIT_CODE)
    } else {
        ExitCode::SUCCESS
    }
}
