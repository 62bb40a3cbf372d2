//! A target's metric metadata: the type, help and unit its exposition
//! gives each metric family (`# TYPE`, `# HELP`, `# UNIT`), kept for
//! `/api/v1/targets/metadata` and `/api/v1/metadata`.
//!
//! Shared between the target's scrape loop, which updates it while
//! appending (allocating only for a family that is new or changed), and
//! the APIs, which read it at any time. A family not exposed for more than
//! ten successful scrapes is forgotten, as in Prometheus. A family's
//! name, type, help and unit are interned process-wide as one value: the
//! targets of a job, which mostly give the same families alike, share one
//! copy of each, and a target keeps about 32 bytes a family.
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

/// A family as a target gives it, interned (see [`intern`]).
#[derive(Debug, PartialEq, Eq, Hash)]
struct Family {
    name: Box<[u8]>,
    kind: MetricType,
    help: Box<[u8]>,
    unit: Box<[u8]>,
}

/// A family shared by every target that gives it alike.
type Interned = Arc<Family>;

/// One family of a target.
#[derive(Debug)]
struct Entry {
    family: Interned,
    /// The last scrape that exposed it.
    last_iter: u32,
    /// The [`line_hash`] of the `# HELP` line that set the help (0: none).
    help_line: u64,
    /// The [`line_hash`] of the `# TYPE` line that set the type (0: none).
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
    families: OrderedTable<Entry>,
}

impl Indexed for Entry {
    fn index_hash(&self) -> u64 {
        hash_name(&self.family.name)
    }
}

/// The metadata as the loop and the APIs share it.
pub type SharedMetadata = Arc<Mutex<TargetMetadata>>;

/// Every interned family, with the count at which unused ones are next
/// dropped.
struct Interner {
    families: HashSet<Interned, foldhash::fast::RandomState>,
    sweep_at: usize,
}

static INTERNER: LazyLock<Mutex<Interner>> = LazyLock::new(|| {
    Mutex::new(Interner {
        families: HashSet::default(),
        sweep_at: 1024,
    })
});

/// The shared copy of `family`. Families no target holds any more are
/// dropped whenever the set has doubled since the last sweep.
fn intern(family: Family) -> Interned {
    let mut interner = INTERNER.lock().unwrap_or_else(|p| p.into_inner());
    if let Some(f) = interner.families.get(&family) {
        return f.clone();
    }
    if interner.families.len() >= interner.sweep_at {
        interner.families.retain(|f| Arc::strong_count(f) > 1);
        interner.sweep_at = (interner.families.len() * 2).max(1024);
    }
    let f = Arc::new(family);
    interner.families.insert(f.clone());
    f
}

/// `family` with one part changed by `change`, interned.
fn changed(family: &Family, change: impl FnOnce(&mut Family)) -> Interned {
    let mut f = Family {
        name: family.name.clone(),
        kind: family.kind,
        help: family.help.clone(),
        unit: family.unit.clone(),
    };
    change(&mut f);
    intern(f)
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
        let e = self.families.visit(i);
        e.last_iter = iter;
        e
    }

    /// A family's position.
    fn find(&self, name: &[u8]) -> Option<usize> {
        self.families
            .position(hash_name(name), |e| &e.family.name[..] == name)
    }

    /// A new family; its position.
    fn add(&mut self, name: &[u8], iter: u32) -> usize {
        let family = intern(Family {
            name: name.into(),
            kind: MetricType::Unknown,
            help: Box::default(),
            unit: Box::default(),
        });
        self.families.push(Entry {
            family,
            last_iter: iter,
            help_line: 0,
            type_line: 0,
        })
    }

    /// `# TYPE name kind` seen by scrape `iter`, from a text-format line
    /// of [`line_hash`] `line` (0: another format).
    pub fn set_type(&mut self, name: &[u8], kind: MetricType, iter: u32, line: u64) {
        let e = self.entry(name, iter);
        if e.family.kind != kind {
            e.family = changed(&e.family, |f| f.kind = kind);
        }
        e.type_line = line;
    }

    /// `# HELP name text` seen by scrape `iter`, from a text-format line
    /// of [`line_hash`] `line` (0: another format).
    pub fn set_help(&mut self, name: &[u8], help: &[u8], iter: u32, line: u64) {
        let e = self.entry(name, iter);
        if &e.family.help[..] != help {
            e.family = changed(&e.family, |f| f.help = help.into());
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
        let i = self.families.expected(|e| which(e) == line)?;
        let e = self.families.visit(i);
        e.last_iter = iter;
        Some(e.family.kind)
    }

    /// `# UNIT name unit` seen by scrape `iter` (OpenMetrics).
    pub fn set_unit(&mut self, name: &[u8], unit: &[u8], iter: u32) {
        let e = self.entry(name, iter);
        if &e.family.unit[..] != unit {
            e.family = changed(&e.family, |f| f.unit = unit.into());
        }
    }

    /// Forgets families not exposed for ten scrapes, after scrape `iter`
    /// succeeded.
    pub fn forget_old(&mut self, iter: u32) {
        self.families
            .retain(|e| iter.saturating_sub(e.last_iter) <= KEEP_SCRAPES);
    }

    /// How many families the target's metadata holds, and their size as
    /// Prometheus counts it for `prometheus_target_metadata_cache_bytes`
    /// (the lengths of the help text, the unit and the type's name).
    pub fn cache_size(&self) -> (usize, usize) {
        let families = self.families.items();
        let bytes = families
            .iter()
            .map(|e| e.family.help.len() + e.family.unit.len() + e.family.kind.as_str().len())
            .sum();
        (families.len(), bytes)
    }

    /// Every family's metadata, sorted by name.
    pub fn list(&self) -> Vec<MetricMetadata> {
        let mut out: Vec<MetricMetadata> = self
            .families
            .items()
            .iter()
            .map(|e| e.family.to_metadata())
            .collect();
        out.sort_by(|a, b| a.metric.cmp(&b.metric));
        out
    }

    /// One family's metadata.
    pub fn get(&self, metric: &str) -> Option<MetricMetadata> {
        let i = self.find(metric.as_bytes())?;
        Some(self.families.get(i)?.family.to_metadata())
    }
}

impl Family {
    fn to_metadata(&self) -> MetricMetadata {
        MetricMetadata {
            metric: text(&self.name),
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
    fn targets_share_one_copy_of_each_family() {
        let (mut a, mut b) = (TargetMetadata::default(), TargetMetadata::default());
        let help = b"Shared help of metadata_test_family.";
        for m in [&mut a, &mut b] {
            m.set_help(b"metadata_test_family", help, 1, 0);
            m.set_type(b"metadata_test_family", MetricType::Gauge, 1, 0);
        }
        let family_of = |m: &TargetMetadata| {
            let i = m.find(b"metadata_test_family").expect("the family");
            m.families.items()[i].family.clone()
        };
        assert!(Arc::ptr_eq(&family_of(&a), &family_of(&b)));
        // A changed text is another family; the same again is no change.
        b.set_help(b"metadata_test_family", b"Other help.", 2, 0);
        assert!(!Arc::ptr_eq(&family_of(&a), &family_of(&b)));
        let other = family_of(&b);
        b.set_help(b"metadata_test_family", b"Other help.", 3, 0);
        assert!(Arc::ptr_eq(&other, &family_of(&b)));
        assert_eq!(
            b.get("metadata_test_family").map(|e| (e.help, e.kind)),
            Some(("Other help.".into(), MetricType::Gauge))
        );
        // Families nobody holds go at a sweep.
        drop(a);
        let filler = |i: usize| Family {
            name: format!("metadata_test_filler_{i}").into_bytes().into(),
            kind: MetricType::Unknown,
            help: Box::default(),
            unit: Box::default(),
        };
        for i in 0..3000 {
            intern(filler(i));
        }
        let interner = INTERNER.lock().expect("interner");
        assert!(!interner.families.iter().any(|f| &f.help[..] == help));
        assert!(interner.families.contains(&other));
    }
}
