//! Postings: for each label pair, the sorted list of series refs that carry it.
//!
//! This is the inverted index that turns label matchers into series. The head
//! keeps it in memory ([`MemPostings`]); the set operations ([`intersect`],
//! [`merge`], [`subtract`]) work on sorted ref lists and are shared with the
//! block index reader.

use crate::symbols::SymbolId;

type FastMap<K, V> = std::collections::HashMap<K, V, foldhash::fast::RandomState>;

/// The in-memory inverted index of the head.
#[derive(Default)]
pub struct MemPostings {
    by_name: FastMap<SymbolId, FastMap<SymbolId, Vec<u64>>>,
    all: Vec<u64>,
}

fn insert_sorted(list: &mut Vec<u64>, r: u64) {
    match list.last() {
        Some(&last) if last >= r => {
            if let Err(i) = list.binary_search(&r) {
                list.insert(i, r);
            }
        }
        _ => list.push(r),
    }
}

impl MemPostings {
    pub fn new() -> Self {
        Self::default()
    }

    /// Indexes series `r` under each of its (name, value) pairs.
    pub fn add(&mut self, r: u64, pairs: &[SymbolId]) {
        for p in pairs.chunks_exact(2) {
            let values = self.by_name.entry(p[0]).or_default();
            insert_sorted(values.entry(p[1]).or_default(), r);
        }
        insert_sorted(&mut self.all, r);
    }

    /// Removes series refs for which `drop` is true (head truncation).
    pub fn remove_if(&mut self, mut drop: impl FnMut(u64) -> bool) {
        for values in self.by_name.values_mut() {
            for list in values.values_mut() {
                list.retain(|r| !drop(*r));
            }
            values.retain(|_, l| !l.is_empty());
        }
        self.by_name.retain(|_, v| !v.is_empty());
        self.all.retain(|r| !drop(*r));
    }

    pub fn get(&self, name: SymbolId, value: SymbolId) -> &[u64] {
        self.by_name
            .get(&name)
            .and_then(|v| v.get(&value))
            .map_or(&[], |l| l.as_slice())
    }

    /// All series refs, sorted.
    pub fn all(&self) -> &[u64] {
        &self.all
    }

    /// The (value id, postings) pairs of a label name.
    pub fn values(&self, name: SymbolId) -> impl Iterator<Item = (SymbolId, &[u64])> {
        self.by_name
            .get(&name)
            .into_iter()
            .flat_map(|v| v.iter().map(|(k, l)| (*k, l.as_slice())))
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
pub fn merge(lists: &[&[u64]]) -> Vec<u64> {
    match lists.len() {
        0 => Vec::new(),
        1 => lists[0].to_vec(),
        _ => {
            let mut out: Vec<u64> = Vec::with_capacity(lists.iter().map(|l| l.len()).sum());
            for l in lists {
                out.extend_from_slice(l);
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
        assert_eq!(p.get(0, 1), &[2, 5]);
        assert_eq!(p.all(), &[2, 5, 9]);
        assert_eq!(p.get(7, 7), &[] as &[u64]);
        p.remove_if(|r| r == 5);
        assert_eq!(p.get(2, 3), &[] as &[u64]);
        assert_eq!(p.all(), &[2, 9]);
        assert_eq!(p.num_pairs(), 2);
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
            prop_assert_eq!(merge(&[&a, &b, &c]), want);
            let want: Vec<u64> = sa.difference(&sb).copied().collect();
            prop_assert_eq!(subtract(&a, &b), want);
        }
    }
}
