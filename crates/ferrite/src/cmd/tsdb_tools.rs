//! `ferrite tsdb list | analyze | dump`: promtool's block tools.

use std::path::Path;

use anyhow::{bail, Result};

pub fn list(dir: &Path, _human_readable: bool) -> Result<()> {
    bail!("tsdb list is not built yet ({})", dir.display())
}

pub fn analyze(
    dir: &Path,
    _block_id: Option<&str>,
    _limit: usize,
    _extended: bool,
    _matchers: &str,
) -> Result<()> {
    bail!("tsdb analyze is not built yet ({})", dir.display())
}

pub fn dump(dir: &Path, _matchers: &[String], _min_time: i64, _max_time: i64) -> Result<()> {
    bail!("tsdb dump is not built yet ({})", dir.display())
}
