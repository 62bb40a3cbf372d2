//! `ferrite promql-test FILE...`: runs PromQL test files in Prometheus'
//! `promqltest` format (`load`, `eval instant|range`, ...) against
//! Ferrite's engine: each failing case, then `<n> passed, <n> failed`.

use std::path::PathBuf;

use anyhow::{bail, Result};
use ferrite_promql::promqltest::run_files;

pub fn run(files: Vec<PathBuf>) -> Result<()> {
    if files.is_empty() {
        bail!("no test files given");
    }
    let report = run_files(&files);
    let (mut passed, mut failed, mut skipped) = (0, 0, 0);
    for f in &report.files {
        for fail in &f.failed {
            println!(
                "FAIL {}:{} {}: {}",
                f.file, fail.line, fail.expr, fail.reason
            );
        }
        for (line, reason) in &f.skipped {
            eprintln!("skip {}:{line}: {reason}", f.file);
        }
        passed += f.passed.len();
        failed += f.failed.len();
        skipped += f.skipped.len();
    }
    if skipped > 0 {
        eprintln!("{skipped} skipped (features Ferrite does not evaluate yet)");
    }
    println!("{passed} passed, {failed} failed");
    if failed > 0 {
        std::process::exit(1);
    }
    Ok(())
}
