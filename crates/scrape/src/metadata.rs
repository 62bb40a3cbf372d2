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
//!
//! A family also keeps a 64-bit hash of the text-format `# HELP` and
//! `# TYPE` lines that set it last (seeded as the scrape cache's keys):
//! a scrape whose line hashes the same at the family expected there
//! takes it as known without reading it ([`TargetMetadata::known_help`],
//! [`TargetMetadata::known_type`]). Only those one or two families are
//! compared, so two different lines would have to share 64 bits for a
//! family to keep a help text or type its target no longer gives.

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
    /// The [`line_hash`] of the `# HELP` line that set `help` (0: none).
    help_line: u64,
    /// The [`line_hash`] of the `# TYPE` line that set `kind` (0: none).
    type_line: u64,
}

/// The hash a family keeps of a text-format metadata line (the whole
/// line, without its newline).
pub fn line_hash(line: &[u8]) -> u64 {
    xxhash_rust::xxh3::xxh3_64_with_seed(line, crate::cache::seed())
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
            help_line: 0,
            type_line: 0,
        };
        self.families.push((intern(name), entry))
    }

    /// `# TYPE name kind` seen by scrape `iter`, from a text-format line
    /// of [`line_hash`] `line` (0: another format).
    pub fn set_type(&mut self, name: &[u8], kind: MetricType, iter: u32, line: u64) {
        let e = self.entry(name, iter);
        e.kind = kind;
        e.type_line = line;
    }

    /// `# HELP name text` seen by scrape `iter`, from a text-format line
    /// of [`line_hash`] `line` (0: another format).
    pub fn set_help(&mut self, name: &[u8], help: &[u8], iter: u32, line: u64) {
        let e = self.entry(name, iter);
        if &e.help[..] != help {
            e.help = intern(help);
        }
        e.help_line = line;
    }

    /// Whether the `# HELP` line of [`line_hash`] `line` is the one that
    /// set the help of the family expected next (or the last one seen):
    /// if so, that family is seen by scrape `iter`, and the line need not
    /// be read.
    pub fn known_help(&mut self, line: u64, iter: u32) -> bool {
        self.known_line(line, iter, |e| e.help_line).is_some()
    }

    /// [`TargetMetadata::known_help`] for a `# TYPE` line: the type it
    /// gives.
    pub fn known_type(&mut self, line: u64, iter: u32) -> Option<MetricType> {
        self.known_line(line, iter, |e| e.type_line)
    }

    /// The kind of the expected family whose `which` line hash is
    /// `line`, marked seen by scrape `iter`.
    fn known_line(&mut self, line: u64, iter: u32, which: fn(&Entry) -> u64) -> Option<MetricType> {
        if line == 0 {
            return None;
        }
        let i = self.families.expected(|(_, e)| which(e) == line)?;
        let e = &mut self.families.visit(i).1;
        e.last_iter = iter;
        Some(e.kind)
    }

    /// `# UNIT name unit` seen by scrape `iter` (OpenMetrics).
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
        m.set_help(b"a", b"An a.", 1, 0);
        m.set_type(b"a", MetricType::Counter, 1, 0);
        m.set_unit(b"b", b"seconds", 1);
        let list = m.list();
        assert_eq!(list.len(), 2);
        assert_eq!(list[0].kind, MetricType::Counter);
        assert_eq!(list[0].help, "An a.");
        assert_eq!(list[1].kind, MetricType::Unknown);
        m.set_type(b"a", MetricType::Gauge, 12, 0);
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
                m.set_help(n.as_bytes(), format!("help {n} {iter}").as_bytes(), iter, 0);
                m.set_type(n.as_bytes(), MetricType::Gauge, iter, 0);
            }
            m.forget_old(iter);
        }
        assert_eq!(m.families.items().len(), 20);
        assert_eq!(m.list().len(), 20);
        assert_eq!(m.get("f7").map(|e| e.help), Some("help f7 3".into()));
    }

    #[test]
    fn lines_that_set_a_family_are_known_where_expected() {
        let mut m = TargetMetadata::default();
        let lines = |f: &str| {
            (
                line_hash(format!("# HELP {f} Help of {f}.").as_bytes()),
                line_hash(format!("# TYPE {f} gauge").as_bytes()),
            )
        };
        for f in ["a", "b", "c"] {
            let (help, kind) = lines(f);
            m.set_help(f.as_bytes(), format!("Help of {f}.").as_bytes(), 1, help);
            m.set_type(f.as_bytes(), MetricType::Gauge, 1, kind);
        }
        m.forget_old(1);
        // Scrape 2 repeats a and b, in order, and changes c's help.
        for f in ["a", "b"] {
            let (help, kind) = lines(f);
            assert!(m.known_help(help, 2), "{f}");
            assert_eq!(m.known_type(kind, 2), Some(MetricType::Gauge), "{f}");
        }
        let changed = line_hash(b"# HELP c Changed.");
        assert!(!m.known_help(changed, 2));
        m.set_help(b"c", b"Changed.", 2, changed);
        assert_eq!(m.known_type(lines("c").1, 2), Some(MetricType::Gauge));
        // A known line away from where it is expected is read instead;
        // no hash is not a hash.
        assert!(!m.known_help(lines("a").0, 2));
        assert!(!m.known_help(0, 2));
        m.forget_old(12);
        assert_eq!(m.list().len(), 3, "every family seen by scrape 2");
        assert_eq!(m.get("c").map(|e| e.help), Some("Changed.".into()));
        // Scrape 3: the changed line is now the known one.
        assert!(m.known_help(lines("a").0, 3));
        assert!(m.known_type(lines("a").1, 3).is_some());
        assert!(m.known_help(lines("b").0, 3));
        assert!(m.known_type(lines("b").1, 3).is_some());
        assert!(m.known_help(changed, 3));
        assert!(!m.known_help(lines("c").0, 3));
    }

    #[test]
    fn targets_share_one_copy_of_each_text() {
        let (mut a, mut b) = (TargetMetadata::default(), TargetMetadata::default());
        let help = b"Shared help of metadata_test_family.";
        a.set_help(b"metadata_test_family", help, 1, 0);
        b.set_help(b"metadata_test_family", help, 1, 0);
        let help_of = |m: &TargetMetadata| {
            let i = m.find(b"metadata_test_family").expect("the family");
            m.families.items()[i].1.help.clone()
        };
        assert!(Arc::ptr_eq(&help_of(&a), &help_of(&b)));
        // A changed text is a new string; the same again is no change.
        b.set_help(b"metadata_test_family", b"Other help.", 2, 0);
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
