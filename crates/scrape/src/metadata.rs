//! A target's metric metadata: the type, help and unit its exposition
//! gives each metric family (`# TYPE`, `# HELP`, `# UNIT`), kept for
//! `/api/v1/targets/metadata` and `/api/v1/metadata`.
//!
//! Shared between the target's scrape loop, which updates it while
//! appending (allocating only for a family that is new or changed), and
//! the APIs, which read it at any time. A family not exposed for more than
//! ten successful scrapes is forgotten, as in Prometheus. Names, help
//! texts and units are interned process-wide: the targets of a job share
//! one copy of each.

use std::collections::HashSet;
use std::sync::{Arc, LazyLock, Mutex};

use ferrite_textparse::MetricType;

use crate::ordered::{Indexed, OrderedTable};

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
    help: Interned,
    unit: Interned,
    /// The last scrape that exposed it.
    last_iter: u32,
}

/// A target's metadata; see the module documentation.
#[derive(Debug, Default)]
pub struct TargetMetadata {
    /// The families in the order the target first gave them: a scrape
    /// repeating that order finds each where it expects it (its TYPE line
    /// after its HELP line at the same place).
    families: OrderedTable<(Interned, Entry)>,
}

impl Indexed for (Interned, Entry) {
    fn index_hash(&self) -> u64 {
        hash_name(&self.0)
    }
}

/// The metadata as the loop and the APIs share it.
pub type SharedMetadata = Arc<Mutex<TargetMetadata>>;

/// A metadata string shared by every target that gives it: the targets
/// of a job mostly expose the same families with the same help, which
/// would otherwise be kept once per target (tens of kilobytes each).
type Interned = Arc<[u8]>;

/// Every interned string, with the count at which unused ones are next
/// dropped.
struct Interner {
    strings: HashSet<Interned, foldhash::fast::RandomState>,
    sweep_at: usize,
}

static INTERNER: LazyLock<Mutex<Interner>> = LazyLock::new(|| {
    Mutex::new(Interner {
        strings: HashSet::default(),
        sweep_at: 1024,
    })
});

/// The shared copy of `bytes`. Strings no target holds any more are
/// dropped whenever the set has doubled since the last sweep.
fn intern(bytes: &[u8]) -> Interned {
    let mut interner = INTERNER.lock().unwrap_or_else(|p| p.into_inner());
    if let Some(s) = interner.strings.get(bytes) {
        return s.clone();
    }
    if interner.strings.len() >= interner.sweep_at {
        interner.strings.retain(|s| Arc::strong_count(s) > 1);
        interner.sweep_at = (interner.strings.len() * 2).max(1024);
    }
    let s: Interned = Arc::from(bytes);
    interner.strings.insert(s.clone());
    s
}

fn hash_name(name: &[u8]) -> u64 {
    use std::hash::BuildHasher;
    static HASHER: LazyLock<foldhash::fast::RandomState> = LazyLock::new(Default::default);
    HASHER.hash_one(name)
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

impl TargetMetadata {
    /// A family's entry, marked seen by scrape `iter`; the name is looked
    /// up in the interner only for a family not seen before (metadata
    /// lines come every scrape).
    fn entry(&mut self, name: &[u8], iter: u32) -> &mut Entry {
        let i = match self.find(name) {
            Some(i) => i,
            None => self.add(name, iter),
        };
        let e = &mut self.families.visit(i).1;
        e.last_iter = iter;
        e
    }

    /// A family's position.
    fn find(&self, name: &[u8]) -> Option<usize> {
        self.families
            .position(hash_name(name), |(n, _)| &n[..] == name)
    }

    /// A new family; its position.
    fn add(&mut self, name: &[u8], iter: u32) -> usize {
        let empty = intern(b"");
        let entry = Entry {
            kind: MetricType::Unknown,
            help: empty.clone(),
            unit: empty,
            last_iter: iter,
        };
        self.families.push((intern(name), entry))
    }

    /// `# TYPE name kind` seen by scrape `iter`.
    pub fn set_type(&mut self, name: &[u8], kind: MetricType, iter: u32) {
        self.entry(name, iter).kind = kind;
    }

    /// `# HELP name text` seen by scrape `iter`.
    pub fn set_help(&mut self, name: &[u8], help: &[u8], iter: u32) {
        let e = self.entry(name, iter);
        if &e.help[..] != help {
            e.help = intern(help);
        }
    }

    /// `# UNIT name unit` seen by scrape `iter`.
    pub fn set_unit(&mut self, name: &[u8], unit: &[u8], iter: u32) {
        let e = self.entry(name, iter);
        if &e.unit[..] != unit {
            e.unit = intern(unit);
        }
    }

    /// Forgets families not exposed for ten scrapes, after scrape `iter`
    /// succeeded.
    pub fn forget_old(&mut self, iter: u32) {
        self.families
            .retain(|(_, e)| iter.saturating_sub(e.last_iter) <= KEEP_SCRAPES);
    }

    /// Every family's metadata, sorted by name.
    pub fn list(&self) -> Vec<MetricMetadata> {
        let mut out: Vec<MetricMetadata> = self
            .families
            .items()
            .iter()
            .map(|(name, e)| e.to_metadata(text(name)))
            .collect();
        out.sort_by(|a, b| a.metric.cmp(&b.metric));
        out
    }

    /// One family's metadata.
    pub fn get(&self, metric: &str) -> Option<MetricMetadata> {
        let i = self.find(metric.as_bytes())?;
        let (_, e) = self.families.get(i)?;
        Some(e.to_metadata(metric.to_string()))
    }
}

impl Entry {
    fn to_metadata(&self, metric: String) -> MetricMetadata {
        MetricMetadata {
            metric,
            kind: self.kind,
            help: text(&self.help),
            unit: text(&self.unit),
        }
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

    #[test]
    fn families_in_any_order_are_one_entry_each() {
        let mut m = TargetMetadata::default();
        let names: Vec<String> = (0..20).map(|i| format!("f{i}")).collect();
        for (iter, order) in [(1, false), (2, true), (3, false)] {
            let mut list: Vec<&String> = names.iter().collect();
            if order {
                list.reverse();
            }
            for n in list {
                m.set_help(n.as_bytes(), format!("help {n} {iter}").as_bytes(), iter);
                m.set_type(n.as_bytes(), MetricType::Gauge, iter);
            }
            m.forget_old(iter);
        }
        assert_eq!(m.families.items().len(), 20);
        assert_eq!(m.list().len(), 20);
        assert_eq!(m.get("f7").map(|e| e.help), Some("help f7 3".into()));
    }

    #[test]
    fn targets_share_one_copy_of_each_text() {
        let (mut a, mut b) = (TargetMetadata::default(), TargetMetadata::default());
        let help = b"Shared help of metadata_test_family.";
        a.set_help(b"metadata_test_family", help, 1);
        b.set_help(b"metadata_test_family", help, 1);
        let help_of = |m: &TargetMetadata| {
            let i = m.find(b"metadata_test_family").expect("the family");
            m.families.items()[i].1.help.clone()
        };
        assert!(Arc::ptr_eq(&help_of(&a), &help_of(&b)));
        // A changed text is a new string; the same again is no change.
        b.set_help(b"metadata_test_family", b"Other help.", 2);
        assert!(!Arc::ptr_eq(&help_of(&a), &help_of(&b)));
        assert_eq!(
            b.get("metadata_test_family").map(|e| e.help),
            Some("Other help.".into())
        );
        // Texts nobody holds go at a sweep.
        drop(a);
        for i in 0..3000 {
            intern(format!("metadata_test_filler_{i}").as_bytes());
        }
        let interner = INTERNER.lock().expect("interner");
        assert!(!interner.strings.contains(&help[..]));
        assert!(interner.strings.contains(&b"Other help."[..]));
    }
}
