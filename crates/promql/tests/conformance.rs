//! Runs Prometheus' PromQL test files (`/work/shared/promql-tests`, or
//! `$PROMQL_TESTS_DIR`) and guards against regressions: every case listed in
//! `tests/passing.txt` must still pass. `PROMQL_UPDATE_PASSING=1` rewrites
//! the list from the current results; `PROMQL_VERBOSE=1` prints failures.

use std::path::PathBuf;

use ferrite_promql::promqltest::{run_files, test_files};

fn tests_dir() -> PathBuf {
    match std::env::var_os("PROMQL_TESTS_DIR") {
        Some(d) => PathBuf::from(d),
        None => PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/promql-tests"),
    }
}

#[test]
fn conformance_regression_guard() {
    let dir = tests_dir();
    let Ok(files) = test_files(&dir) else {
        eprintln!("no PromQL test files at {}; skipping", dir.display());
        return;
    };
    if files.is_empty() {
        eprintln!("no PromQL test files at {}; skipping", dir.display());
        return;
    }
    let report = run_files(&files);
    let verbose = std::env::var_os("PROMQL_VERBOSE").is_some();
    eprintln!("{}", report.summary(verbose));
    let list = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/passing.txt");
    let passing = report.passing_ids();
    if std::env::var_os("PROMQL_UPDATE_PASSING").is_some() {
        std::fs::write(&list, passing.join("\n") + "\n").expect("writing passing.txt");
        return;
    }
    let listed = std::fs::read_to_string(&list).unwrap_or_default();
    let now: std::collections::HashSet<&str> = passing.iter().map(String::as_str).collect();
    let regressed: Vec<&str> = listed
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !now.contains(l))
        .collect();
    if !regressed.is_empty() {
        let mut msg = String::from("cases listed in tests/passing.txt no longer pass:\n");
        for id in &regressed {
            let (file, line) = id.rsplit_once(':').unwrap_or((id, "0"));
            let reason = report
                .files
                .iter()
                .filter(|f| f.file == file)
                .flat_map(|f| f.failed.iter())
                .find(|x| x.line.to_string() == line)
                .map(|x| format!("{}: {}", x.expr, x.reason))
                .unwrap_or_else(|| "not run (skipped or missing)".into());
            msg.push_str(&format!("  {id} {reason}\n"));
        }
        panic!("{msg}");
    }
}
