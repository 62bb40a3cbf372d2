//! Postings: for each label pair, the sorted list of series refs that carry it.
//!
//! This is the inverted index that turns label matchers into series. The head
//! keeps it in memory ([`MemPostings`]), each list a [`RefList`]: 4 bytes a
//! ref while the refs fit in 32 bits (a head creates over 4 billion series
//! before they do not), so a million series of six labels index in ~30 MB
//! rather than ~60. The set operations ([`intersect`], [`merge`],
//! [`subtract`]) work on sorted `u64` lists.

use crate::symbols::SymbolId;

type FastMap<K, V> = std::collections::HashMap<K, V, foldhash::fast::RandomState>;

/// A sorted list of distinct series refs, stored narrow (`u32`) until a
/// ref needs more bits.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RefList {
    Narrow(Vec<u32>),
    Wide(Vec<u64>),
}

impl Default for RefList {
    fn default() -> Self {
        RefList::Narrow(Vec::new())
    }
}

fn insert_sorted<T: Ord + Copy>(list: &mut Vec<T>, r: T) {
    match list.last() {
        Some(&last) if last >= r => {
            if let Err(i) = list.binary_search(&r) {
                list.insert(i, r);
            }
        }
        _ => list.push(r),
    }
}

impl RefList {
    /// Adds `r`, keeping the list sorted and distinct.
    pub fn insert(&mut self, r: u64) {
        match self {
            RefList::Narrow(list) => match u32::try_from(r) {
                Ok(narrow) => insert_sorted(list, narrow),
                Err(_) => {
                    let mut wide: Vec<u64> = list.iter().map(|&x| u64::from(x)).collect();
                    insert_sorted(&mut wide, r);
                    *self = RefList::Wide(wide);
                }
            },
            RefList::Wide(list) => insert_sorted(list, r),
        }
    }

    /// Keeps the refs for which `keep` is true.
    pub fn retain(&mut self, mut keep: impl FnMut(u64) -> bool) {
        match self {
            RefList::Narrow(list) => list.retain(|&r| keep(u64::from(r))),
            RefList::Wide(list) => list.retain(|&r| keep(r)),
        }
    }

    pub fn len(&self) -> usize {
        match self {
            RefList::Narrow(list) => list.len(),
            RefList::Wide(list) => list.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Appends the refs, in order, to `out`.
    pub fn extend_into(&self, out: &mut Vec<u64>) {
        match self {
            RefList::Narrow(list) => out.extend(list.iter().map(|&r| u64::from(r))),
            RefList::Wide(list) => out.extend_from_slice(list),
        }
    }

    /// The refs as a new vector.
    pub fn to_vec(&self) -> Vec<u64> {
        let mut out = Vec::with_capacity(self.len());
        self.extend_into(&mut out);
        out
    }
}

/// The in-memory inverted index of the head.
#[derive(Default)]
pub struct MemPostings {
    by_name: FastMap<SymbolId, FastMap<SymbolId, RefList>>,
    all: RefList,
}

/// The list of a pair no series carries.
static EMPTY: RefList = RefList::Narrow(Vec::new());

impl MemPostings {
    pub fn new() -> Self {
        Self::default()
    }

    /// Indexes series `r` under each of its (name, value) pairs.
    pub fn add(&mut self, r: u64, pairs: &[SymbolId]) {
        for p in pairs.chunks_exact(2) {
            let values = self.by_name.entry(p[0]).or_default();
            values.entry(p[1]).or_default().insert(r);
        }
        self.all.insert(r);
    }

    /// Removes series refs for which `drop` is true (head truncation).
    pub fn remove_if(&mut self, mut drop: impl FnMut(u64) -> bool) {
        for values in self.by_name.values_mut() {
            for list in values.values_mut() {
                list.retain(|r| !drop(r));
            }
            values.retain(|_, l| !l.is_empty());
        }
        self.by_name.retain(|_, v| !v.is_empty());
        self.all.retain(|r| !drop(r));
    }

    pub fn get(&self, name: SymbolId, value: SymbolId) -> &RefList {
        self.by_name
            .get(&name)
            .and_then(|v| v.get(&value))
            .unwrap_or(&EMPTY)
    }

    /// All series refs, sorted.
    pub fn all(&self) -> &RefList {
        &self.all
    }

    /// The (value id, postings) pairs of a label name.
    pub fn values(&self, name: SymbolId) -> impl Iterator<Item = (SymbolId, &RefList)> {
        self.by_name
            .get(&name)
            .into_iter()
            .flat_map(|v| v.iter().map(|(k, l)| (*k, l)))
    }

    /// Ids of all label names.
    pub fn names(&self) -> impl Iterator<Item = SymbolId> + '_ {
        self.by_name.keys().copied()
    }

    /// Number of distinct label pairs.
    pub fn num_pairs(&self) -> usize {
        self.by_name.values().map(|v| v.len()).sum()
    }
}

/// Intersection of sorted lists.
pub fn intersect(mut lists: Vec<Vec<u64>>) -> Vec<u64> {
    if lists.is_empty() {
        return Vec::new();
    }
    lists.sort_by_key(|l| l.len());
    let mut acc = std::mem::take(&mut lists[0]);
    for l in &lists[1..] {
        if acc.is_empty() {
            break;
        }
        let mut j = 0;
        acc.retain(|r| {
            // Gallop-free merge: both lists are sorted.
            while j < l.len() && l[j] < *r {
                j += 1;
            }
            j < l.len() && l[j] == *r
        });
    }
    acc
}

/// Union of sorted lists (deduplicated).
pub fn merge(lists: &[&RefList]) -> Vec<u64> {
    match lists.len() {
        0 => Vec::new(),
        1 => lists[0].to_vec(),
        _ => {
            let mut out: Vec<u64> = Vec::with_capacity(lists.iter().map(|l| l.len()).sum());
            for l in lists {
                l.extend_into(&mut out);
            }
            out.sort_unstable();
            out.dedup();
            out
        }
    }
}

/// Elements of sorted `a` not in sorted `b`.
pub fn subtract(a: &[u64], b: &[u64]) -> Vec<u64> {
    let mut out = Vec::with_capacity(a.len());
    let mut j = 0;
    for &r in a {
        while j < b.len() && b[j] < r {
            j += 1;
        }
        if j >= b.len() || b[j] != r {
            out.push(r);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::BTreeSet;

    #[test]
    fn mem_postings_keeps_lists_sorted() {
        let mut p = MemPostings::new();
        p.add(5, &[0, 1, 2, 3]);
        p.add(2, &[0, 1]);
        p.add(9, &[0, 4]);
        assert_eq!(p.get(0, 1).to_vec(), [2, 5]);
        assert_eq!(p.all().to_vec(), [2, 5, 9]);
        assert!(p.get(7, 7).is_empty());
        p.remove_if(|r| r == 5);
        assert!(p.get(2, 3).is_empty());
        assert_eq!(p.all().to_vec(), [2, 9]);
        assert_eq!(p.num_pairs(), 2);
    }

    #[test]
    fn ref_lists_widen_for_refs_beyond_32_bits() {
        let big = u64::from(u32::MAX) + 7;
        let mut p = MemPostings::new();
        p.add(3, &[0, 1]);
        p.add(big, &[0, 1]);
        p.add(1, &[0, 1]);
        p.add(u64::from(u32::MAX), &[0, 2]);
        assert_eq!(p.get(0, 1).to_vec(), [1, 3, big]);
        assert!(matches!(p.get(0, 1), RefList::Wide(_)));
        assert!(matches!(p.get(0, 2), RefList::Narrow(_)));
        assert_eq!(p.all().to_vec(), [1, 3, u64::from(u32::MAX), big]);
        p.remove_if(|r| r == 3);
        assert_eq!(p.get(0, 1).to_vec(), [1, big]);
        assert_eq!(
            merge(&[p.get(0, 1), p.get(0, 2)]),
            [1, u64::from(u32::MAX), big]
        );
    }

    fn ref_list(refs: &[u64]) -> RefList {
        let mut list = RefList::default();
        // Inserted in reverse, to go through the sorted inserts too.
        for &r in refs.iter().rev() {
            list.insert(r);
        }
        list
    }

    fn sorted(v: Vec<u64>) -> Vec<u64> {
        v.into_iter().collect::<BTreeSet<_>>().into_iter().collect()
    }

    proptest! {
        #[test]
        fn set_ops_match_btreeset(a in proptest::collection::vec(0u64..200, 0..100),
                                  b in proptest::collection::vec(0u64..200, 0..100),
                                  c in proptest::collection::vec(0u64..200, 0..100)) {
            let (a, b, c) = (sorted(a), sorted(b), sorted(c));
            let (sa, sb, sc): (BTreeSet<u64>, BTreeSet<u64>, BTreeSet<u64>) =
                (a.iter().copied().collect(), b.iter().copied().collect(), c.iter().copied().collect());
            let want: Vec<u64> = sa.iter().filter(|x| sb.contains(x) && sc.contains(x)).copied().collect();
            prop_assert_eq!(intersect(vec![a.clone(), b.clone(), c.clone()]), want);
            let want: Vec<u64> = sa.union(&sb).copied().collect::<BTreeSet<_>>().union(&sc).copied().collect();
            prop_assert_eq!(merge(&[&ref_list(&a), &ref_list(&b), &ref_list(&c)]), want);
            let want: Vec<u64> = sa.difference(&sb).copied().collect();
            prop_assert_eq!(subtract(&a, &b), want);
        }
    }
}
