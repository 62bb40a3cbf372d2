//! The head's series registry: series ref -> series, and label set -> ref.
//!
//! Both maps are striped (many independent locks) so concurrent appenders
//! rarely wait on each other. The label-set map is keyed by a hash of the
//! label strings; the rare hash collision keeps a list of refs.

use std::hash::{BuildHasher, Hasher};
use std::sync::Arc;

use parking_lot::{Mutex, RwLock};

use super::series::MemSeries;
use crate::symbols::SymbolId;

type FastMap<K, V> = std::collections::HashMap<K, V, foldhash::fast::RandomState>;

const STRIPES: usize = 512;

/// A series: immutable interned labels (name, value, name, value, ...) and its data.
pub struct SeriesEntry {
    pub labels: Box<[SymbolId]>,
    pub data: Mutex<MemSeries>,
}

enum RefList {
    One(u64),
    Many(Vec<u64>),
}

impl RefList {
    fn iter(&self) -> impl Iterator<Item = u64> + '_ {
        let (one, many): (Option<u64>, &[u64]) = match self {
            RefList::One(r) => (Some(*r), &[]),
            RefList::Many(v) => (None, v.as_slice()),
        };
        one.into_iter().chain(many.iter().copied())
    }
}

type RefStripe = RwLock<FastMap<u64, Arc<SeriesEntry>>>;
type HashStripe = RwLock<FastMap<u64, RefList>>;

pub struct SeriesRegistry {
    by_ref: Box<[RefStripe]>,
    by_hash: Box<[HashStripe]>,
}

/// Hash of a label set given as (name, value) string pairs.
pub fn hash_labels<'a>(pairs: impl Iterator<Item = (&'a str, &'a str)>) -> u64 {
    let mut h = foldhash::fast::FixedState::with_seed(0x0066_6572_7269_7465).build_hasher();
    for (n, v) in pairs {
        h.write(n.as_bytes());
        h.write_u8(0xff);
        h.write(v.as_bytes());
        h.write_u8(0xff);
    }
    h.finish()
}

/// Records `r` under `hash` in a hash stripe.
fn add_ref(hs: &mut FastMap<u64, RefList>, hash: u64, r: u64) {
    match hs.get_mut(&hash) {
        None => {
            hs.insert(hash, RefList::One(r));
        }
        Some(RefList::One(o)) => {
            let o = *o;
            hs.insert(hash, RefList::Many(vec![o, r]));
        }
        Some(RefList::Many(v)) => v.push(r),
    }
}

impl Default for SeriesRegistry {
    fn default() -> Self {
        Self::new()
    }
}

impl SeriesRegistry {
    pub fn new() -> Self {
        SeriesRegistry {
            by_ref: (0..STRIPES).map(|_| RwLock::default()).collect(),
            by_hash: (0..STRIPES).map(|_| RwLock::default()).collect(),
        }
    }

    fn ref_stripe(&self, r: u64) -> &RefStripe {
        &self.by_ref[(r as usize) % STRIPES]
    }

    fn hash_stripe(&self, h: u64) -> &HashStripe {
        &self.by_hash[(h as usize) % STRIPES]
    }

    pub fn get(&self, r: u64) -> Option<Arc<SeriesEntry>> {
        self.ref_stripe(r).read().get(&r).cloned()
    }

    /// Finds the ref of a label set. `same` tells whether a candidate's
    /// interned labels equal the wanted ones.
    pub fn lookup(&self, hash: u64, same: impl Fn(&[SymbolId]) -> bool) -> Option<u64> {
        let hs = self.hash_stripe(hash).read();
        let list = hs.get(&hash)?;
        let found = list
            .iter()
            .find(|&r| self.get(r).is_some_and(|e| same(&e.labels)));
        found
    }

    /// Returns the existing ref of a label set or inserts a new series made by
    /// `make` (which returns its ref and entry). The hash stripe stays locked
    /// in between, so two appenders never create the same series twice.
    pub fn get_or_insert(
        &self,
        hash: u64,
        same: impl Fn(&[SymbolId]) -> bool,
        make: impl FnOnce() -> (u64, Arc<SeriesEntry>),
    ) -> (u64, Arc<SeriesEntry>, bool) {
        let mut hs = self.hash_stripe(hash).write();
        if let Some(list) = hs.get(&hash) {
            for r in list.iter() {
                if let Some(e) = self.get(r) {
                    if same(&e.labels) {
                        return (r, e, false);
                    }
                }
            }
        }
        let (r, entry) = make();
        self.ref_stripe(r).write().insert(r, entry.clone());
        add_ref(&mut hs, hash, r);
        (r, entry, true)
    }

    /// Inserts a series under a known ref (replay). Returns false if the ref exists.
    pub fn insert(&self, hash: u64, r: u64, entry: Arc<SeriesEntry>) -> bool {
        {
            let mut rs = self.ref_stripe(r).write();
            if rs.contains_key(&r) {
                return false;
            }
            rs.insert(r, entry);
        }
        let mut hs = self.hash_stripe(hash).write();
        add_ref(&mut hs, hash, r);
        true
    }

    /// Removes series `r` if `idle` says so while both of its stripes are
    /// locked, so no appender can find the series in between (head GC).
    /// Returns whether it was removed.
    pub fn remove_if(
        &self,
        hash: u64,
        r: u64,
        idle: impl FnOnce(&Arc<SeriesEntry>) -> bool,
    ) -> bool {
        let mut hs = self.hash_stripe(hash).write();
        let mut rs = self.ref_stripe(r).write();
        match rs.get(&r) {
            Some(e) if idle(e) => {}
            _ => return false,
        }
        rs.remove(&r);
        drop(rs);
        let now_empty = match hs.get_mut(&hash) {
            Some(RefList::One(o)) => *o == r,
            Some(RefList::Many(v)) => {
                v.retain(|&x| x != r);
                v.is_empty()
            }
            None => false,
        };
        if now_empty {
            hs.remove(&hash);
        }
        true
    }

    pub fn len(&self) -> usize {
        self.by_ref.iter().map(|s| s.read().len()).sum()
    }
}
