//! A target's metric metadata: the type, help and unit its exposition
//! gives each metric family (`# TYPE`, `# HELP`, `# UNIT`), kept for
//! `/api/v1/targets/metadata` and `/api/v1/metadata`.
//!
//! Shared between the target's scrape loop, which updates it while
//! appending (allocating only for a family that is new or changed), and
//! the APIs, which read it at any time. A family not exposed for more than
//! ten successful scrapes is forgotten, as in Prometheus.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use ferrite_textparse::MetricType;

/// How many scrapes a family may be missing before it is forgotten.
const KEEP_SCRAPES: u32 = 10;

/// One family's metadata.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MetricMetadata {
    /// The family's name.
    pub metric: String,
    /// Its type (`unknown` when only help or unit was given).
    pub kind: MetricType,
    /// Its help text.
    pub help: String,
    /// Its unit.
    pub unit: String,
}

#[derive(Debug)]
struct Entry {
    kind: MetricType,
    help: String,
    unit: String,
    /// The last scrape that exposed it.
    last_iter: u32,
}

/// A target's metadata; see the module documentation.
#[derive(Debug, Default)]
pub struct TargetMetadata {
    families: HashMap<Box<[u8]>, Entry, foldhash::fast::RandomState>,
}

/// The metadata as the loop and the APIs share it.
pub type SharedMetadata = Arc<Mutex<TargetMetadata>>;

impl TargetMetadata {
    /// A family's entry, marked seen by scrape `iter`; a key is allocated
    /// only for a family not seen before (metadata lines come every scrape).
    fn entry(&mut self, name: &[u8], iter: u32) -> &mut Entry {
        // Looked up first, so that a known family (every scrape's case)
        // costs no allocation.
        if !self.families.contains_key(name) {
            self.families.insert(
                name.into(),
                Entry {
                    kind: MetricType::Unknown,
                    help: String::new(),
                    unit: String::new(),
                    last_iter: iter,
                },
            );
        }
        let e = self
            .families
            .get_mut(name)
            .expect("the family was inserted just above");
        e.last_iter = iter;
        e
    }

    /// `# TYPE name kind` seen by scrape `iter`.
    pub fn set_type(&mut self, name: &[u8], kind: MetricType, iter: u32) {
        self.entry(name, iter).kind = kind;
    }

    /// `# HELP name text` seen by scrape `iter`.
    pub fn set_help(&mut self, name: &[u8], help: &[u8], iter: u32) {
        let e = self.entry(name, iter);
        if e.help.as_bytes() != help {
            e.help = String::from_utf8_lossy(help).into_owned();
        }
    }

    /// `# UNIT name unit` seen by scrape `iter`.
    pub fn set_unit(&mut self, name: &[u8], unit: &[u8], iter: u32) {
        let e = self.entry(name, iter);
        if e.unit.as_bytes() != unit {
            e.unit = String::from_utf8_lossy(unit).into_owned();
        }
    }

    /// Forgets families not exposed for ten scrapes, after scrape `iter`
    /// succeeded.
    pub fn forget_old(&mut self, iter: u32) {
        self.families
            .retain(|_, e| iter.saturating_sub(e.last_iter) <= KEEP_SCRAPES);
    }

    /// Every family's metadata, sorted by name.
    pub fn list(&self) -> Vec<MetricMetadata> {
        let mut out: Vec<MetricMetadata> = self
            .families
            .iter()
            .map(|(name, e)| MetricMetadata {
                metric: String::from_utf8_lossy(name).into_owned(),
                kind: e.kind,
                help: e.help.clone(),
                unit: e.unit.clone(),
            })
            .collect();
        out.sort_by(|a, b| a.metric.cmp(&b.metric));
        out
    }

    /// One family's metadata.
    pub fn get(&self, metric: &str) -> Option<MetricMetadata> {
        self.families
            .get(metric.as_bytes())
            .map(|e| MetricMetadata {
                metric: metric.to_string(),
                kind: e.kind,
                help: e.help.clone(),
                unit: e.unit.clone(),
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn families_are_kept_and_forgotten() {
        let mut m = TargetMetadata::default();
        m.set_help(b"a", b"An a.", 1);
        m.set_type(b"a", MetricType::Counter, 1);
        m.set_unit(b"b", b"seconds", 1);
        let list = m.list();
        assert_eq!(list.len(), 2);
        assert_eq!(list[0].kind, MetricType::Counter);
        assert_eq!(list[0].help, "An a.");
        assert_eq!(list[1].kind, MetricType::Unknown);
        m.set_type(b"a", MetricType::Gauge, 12);
        m.forget_old(12);
        assert_eq!(m.list().len(), 1, "b was last seen 11 scrapes ago");
        assert_eq!(m.get("a").map(|e| e.kind), Some(MetricType::Gauge));
    }
}
