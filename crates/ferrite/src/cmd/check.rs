//! `ferrite check`: promtool's `check` for the files Ferrite reads:
//! configuration files (`config`) and rule files (`rules`).

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{bail, Result};
use clap::Subcommand;
use ferrite_config::Config;
use ferrite_model::goquote::quote as go_quote;

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
    /// Checks rule files as `promtool check rules` does: each is read and
    /// validated as Prometheus reads rule files (standard input without
    /// files), then linted for duplicate rules.
    Rules {
        /// Linting checks: `duplicate-rules` (the default), `all` or
        /// `none`, comma-separated.
        #[arg(long, default_value = "duplicate-rules")]
        lint: String,
        /// Make lint errors exit with exit code 3.
        #[arg(long)]
        lint_fatal: bool,
        /// Ignore unknown fields in the rule files (the server refuses
        /// them).
        #[arg(long)]
        ignore_unknown_fields: bool,
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
        CheckCommand::Rules {
            lint,
            lint_fatal,
            ignore_unknown_fields,
            files,
        } => Ok(check_rules(
            &lint,
            lint_fatal,
            ignore_unknown_fields,
            &files,
        )),
    }
}

/// promtool's exit code for lint problems with `--lint-fatal`.
const LINT_ERROR_EXIT_CODE: u8 = 3;

/// Prints what `promtool check rules` prints for each file (or standard
/// input), in its words and streams, and exits as it does: 1 if a file
/// failed, 3 for lint problems with `--lint-fatal`, else 0.
fn check_rules(
    lint: &str,
    lint_fatal: bool,
    ignore_unknown_fields: bool,
    files: &[PathBuf],
) -> ExitCode {
    use ferrite_rules::file::{parse_file_with, parse_with, ParseOptions};
    let mut duplicates = false;
    for setting in lint.split(',') {
        match setting {
            "all" | "duplicate-rules" => duplicates = true,
            "none" => {}
            other => println!("WARNING: unknown lint option: {}", go_quote(other)),
        }
    }
    for f in files {
        if !f.exists() {
            eprintln!(
                "ferrite: error: path '{}' does not exist, try --help",
                f.display()
            );
            return ExitCode::from(FAILURE_EXIT_CODE);
        }
    }
    let opts = ParseOptions {
        ignore_unknown_fields,
        ..ParseOptions::default()
    };
    let (mut failed, mut has_errors) = (false, false);
    let inputs: Vec<Option<&PathBuf>> = if files.is_empty() {
        vec![None]
    } else {
        files.iter().map(Some).collect()
    };
    for input in inputs {
        let parsed = match input {
            Some(f) => {
                println!("Checking {}", f.display());
                parse_file_with(f, opts)
            }
            None => {
                println!("Checking standard input");
                let mut text = String::new();
                if let Err(e) = std::io::Read::read_to_string(&mut std::io::stdin(), &mut text) {
                    eprintln!("  FAILED: {e}");
                    return ExitCode::from(FAILURE_EXIT_CODE);
                }
                parse_with(&text, opts)
            }
        };
        let groups = match parsed {
            Ok(g) => g,
            Err(errs) => {
                failed = true;
                has_errors = true;
                eprintln!("  FAILED:");
                for e in errs {
                    eprintln!("{e}");
                }
                continue;
            }
        };
        let rules: usize = groups.groups.iter().map(|g| g.rules.len()).sum();
        match duplicates.then(|| duplicate_rules(&groups)).flatten() {
            Some(lint_error) => {
                failed = true;
                eprintln!("  FAILED:");
                eprintln!("{lint_error}");
            }
            None => println!("  SUCCESS: {rules} rules found"),
        }
        println!();
    }
    if failed && has_errors {
        ExitCode::from(FAILURE_EXIT_CODE)
    } else if failed && lint_fatal {
        ExitCode::from(LINT_ERROR_EXIT_CODE)
    } else {
        ExitCode::SUCCESS
    }
}

/// promtool's duplicate-rules lint: rules of the same name (alert or
/// record) and the same labels (the group's and its own), each reported
/// once, in name and label order.
fn duplicate_rules(groups: &ferrite_rules::file::RuleGroups) -> Option<String> {
    use std::collections::BTreeMap;
    let mut rules: Vec<(String, BTreeMap<String, String>)> = groups
        .groups
        .iter()
        .flat_map(|g| {
            g.rules.iter().map(move |r| {
                let mut labels = g.labels.clone();
                labels.extend(r.labels.clone());
                (r.name().to_string(), labels)
            })
        })
        .collect();
    rules.sort();
    let mut dups: Vec<&(String, BTreeMap<String, String>)> = Vec::new();
    for w in rules.windows(2) {
        if w[0] == w[1] && dups.last() != Some(&&w[1]) {
            dups.push(&w[1]);
        }
    }
    if dups.is_empty() {
        return None;
    }
    let mut msg = format!("lint error {} duplicate rule(s) found.\n", dups.len());
    for (metric, labels) in dups {
        msg.push_str(&format!("Metric: {metric}\nLabel(s):\n"));
        for (k, v) in labels {
            msg.push_str(&format!("\t{k}: {v}\n"));
        }
    }
    msg.push_str("Might cause inconsistency while recording expressions");
    Some(msg)
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
