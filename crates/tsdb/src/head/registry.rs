//! The head's series registry: series ref -> series, and label set -> ref.
//!
//! Both maps are striped (many independent locks) so concurrent appenders
//! rarely wait on each other. The label-set map is keyed by a hash of the
//! label strings; the rare hash collision keeps a list of refs.

use std::hash::{BuildHasher, Hasher};
use std::sync::Arc;

use parking_lot::{Mutex, RwLock};

use super::series::MemSeries;
use crate::prefetch::prefetch;
use crate::symbols::{Resolver, SymbolId, SymbolTable};

type FastMap<K, V> = std::collections::HashMap<K, V, foldhash::fast::RandomState>;

const STRIPES: usize = 512;
/// Fewer stripes for the label-set map: readers share them, and a batch
/// lookup locks each stripe once for all its sets (see `lookup_batch`),
/// which wants many sets per stripe. Series creation, the only writer,
/// is serialised by the postings lock anyway.
const HASH_STRIPES: usize = 32;

/// A series: immutable interned labels (name, value, name, value, ...) and its data.
pub struct SeriesEntry {
    pub labels: Box<[SymbolId]>,
    pub data: Mutex<MemSeries>,
}

/// The series under one label-set hash: almost always one.
enum HashSlot {
    One((u64, Arc<SeriesEntry>)),
    Many(Vec<(u64, Arc<SeriesEntry>)>),
}

impl HashSlot {
    fn as_slice(&self) -> &[(u64, Arc<SeriesEntry>)] {
        match self {
            HashSlot::One(p) => std::slice::from_ref(p),
            HashSlot::Many(v) => v,
        }
    }
}

type RefStripe = RwLock<FastMap<u64, Arc<SeriesEntry>>>;
type HashStripe = RwLock<FastMap<u64, HashSlot>>;

/// Both maps of the head's series.
pub struct SeriesRegistry {
    by_ref: Box<[RefStripe]>,
    by_hash: Box<[HashStripe]>,
}

/// Hash of a label set given as (name, value) pairs of strings or bytes
/// (both hash alike).
pub fn hash_labels<N: AsRef<[u8]>, V: AsRef<[u8]>>(pairs: impl Iterator<Item = (N, V)>) -> u64 {
    let mut h = foldhash::fast::FixedState::with_seed(0x0066_6572_7269_7465).build_hasher();
    for (n, v) in pairs {
        h.write(n.as_ref());
        h.write_u8(0xff);
        h.write(v.as_ref());
        h.write_u8(0xff);
    }
    h.finish()
}

/// Records series `r` under `hash` in a hash stripe.
fn add_to_slot(hs: &mut FastMap<u64, HashSlot>, hash: u64, r: u64, e: Arc<SeriesEntry>) {
    match hs.remove(&hash) {
        None => {
            hs.insert(hash, HashSlot::One((r, e)));
        }
        Some(HashSlot::One(o)) => {
            hs.insert(hash, HashSlot::Many(vec![o, (r, e)]));
        }
        Some(HashSlot::Many(mut v)) => {
            v.push((r, e));
            hs.insert(hash, HashSlot::Many(v));
        }
    }
}

impl Default for SeriesRegistry {
    fn default() -> Self {
        Self::new()
    }
}

impl SeriesRegistry {
    /// References to a series the registry itself holds (both maps).
    pub const HELD_REFS: usize = 2;

    pub fn new() -> Self {
        SeriesRegistry {
            by_ref: (0..STRIPES).map(|_| RwLock::default()).collect(),
            by_hash: (0..HASH_STRIPES).map(|_| RwLock::default()).collect(),
        }
    }

    fn ref_stripe(&self, r: u64) -> &RefStripe {
        &self.by_ref[(r as usize) % STRIPES]
    }

    fn hash_stripe(&self, h: u64) -> &HashStripe {
        &self.by_hash[(h as usize) % HASH_STRIPES]
    }

    pub fn get(&self, r: u64) -> Option<Arc<SeriesEntry>> {
        self.ref_stripe(r).read().get(&r).cloned()
    }

    /// Finds the series of a label set. `same` tells whether a candidate's
    /// interned labels equal the wanted ones.
    pub fn lookup(
        &self,
        hash: u64,
        same: impl Fn(&[SymbolId]) -> bool,
    ) -> Option<(u64, Arc<SeriesEntry>)> {
        let hs = self.hash_stripe(hash).read();
        hs.get(&hash)?
            .as_slice()
            .iter()
            .find(|(_, e)| same(&e.labels))
            .cloned()
    }

    /// Looks up many label sets at once: `out[i]` gets the series whose
    /// hash is `hashes[i]` and for which `same(i, ids, resolver)` holds.
    /// Sets are grouped by stripe so that each stripe and the symbol table
    /// are read-locked once per group, not once per set: without atomic
    /// operations between them the lookups' cache misses overlap.
    pub fn lookup_batch(
        &self,
        hashes: &[u64],
        symbols: &SymbolTable,
        same: impl Fn(usize, &[SymbolId], &Resolver<'_>) -> bool,
        out: &mut Vec<Option<(u64, Arc<SeriesEntry>)>>,
    ) {
        out.clear();
        out.resize(hashes.len(), None);
        let mut order: Vec<(u32, u32)> = hashes
            .iter()
            .enumerate()
            .map(|(i, &h)| (((h as usize) % HASH_STRIPES) as u32, i as u32))
            .collect();
        order.sort_unstable();
        // Two passes per stripe. First every set's hash table slot, in a
        // tight loop whose probes are independent, so their cache misses
        // overlap. Then the comparisons, software-pipelined: the entry of
        // the set AHEAD places on is prefetched, then its labels HALF as
        // far on, so that by the time a set is compared both are (likely)
        // in cache.
        const AHEAD: usize = 6;
        const HALF: usize = 3;
        for group in order.chunk_by(|a, b| a.0 == b.0) {
            let hs = self.by_hash[group[0].0 as usize].read();
            let slots: Vec<Option<&HashSlot>> = group
                .iter()
                .map(|&(_, i)| hs.get(&hashes[i as usize]))
                .collect();
            let first = |k: usize| {
                let slot = (*slots.get(k)?)?;
                slot.as_slice().first().map(|(_, e)| e)
            };
            symbols.with_resolver(|res| {
                for (k, &(_, i)) in group.iter().enumerate() {
                    if let Some(e) = first(k + AHEAD) {
                        prefetch(Arc::as_ptr(e));
                    }
                    if let Some(e) = first(k + HALF) {
                        prefetch(e.labels.as_ptr());
                    }
                    let i = i as usize;
                    out[i] = slots[k].and_then(|slot| {
                        slot.as_slice()
                            .iter()
                            .find(|(_, e)| same(i, &e.labels, res))
                            .cloned()
                    });
                }
            });
        }
    }

    /// Returns the existing series of a label set or inserts a new one made
    /// by `make` (which returns its ref and entry). The hash stripe stays
    /// write-locked from the second look to the insert, so two appenders
    /// never create the same series twice.
    pub fn get_or_insert(
        &self,
        hash: u64,
        same: impl Fn(&[SymbolId]) -> bool,
        make: impl FnOnce() -> (u64, Arc<SeriesEntry>),
    ) -> (u64, Arc<SeriesEntry>, bool) {
        if let Some((r, e)) = self.lookup(hash, &same) {
            return (r, e, false);
        }
        let mut hs = self.hash_stripe(hash).write();
        if let Some((r, e)) = hs
            .get(&hash)
            .and_then(|slot| slot.as_slice().iter().find(|(_, e)| same(&e.labels)))
        {
            return (*r, e.clone(), false);
        }
        let (r, entry) = make();
        self.ref_stripe(r).write().insert(r, entry.clone());
        add_to_slot(&mut hs, hash, r, entry.clone());
        (r, entry, true)
    }

    /// Inserts a series under a known ref (replay). Returns false if the ref exists.
    pub fn insert(&self, hash: u64, r: u64, entry: Arc<SeriesEntry>) -> bool {
        {
            let mut rs = self.ref_stripe(r).write();
            if rs.contains_key(&r) {
                return false;
            }
            rs.insert(r, entry.clone());
        }
        let mut hs = self.hash_stripe(hash).write();
        add_to_slot(&mut hs, hash, r, entry);
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
        match hs.remove(&hash) {
            Some(HashSlot::One(o)) if o.0 != r => {
                hs.insert(hash, HashSlot::One(o));
            }
            Some(HashSlot::Many(mut v)) => {
                v.retain(|(x, _)| *x != r);
                match v.len() {
                    0 => {}
                    1 => {
                        if let Some(o) = v.pop() {
                            hs.insert(hash, HashSlot::One(o));
                        }
                    }
                    _ => {
                        hs.insert(hash, HashSlot::Many(v));
                    }
                }
            }
            _ => {}
        }
        true
    }

    pub fn len(&self) -> usize {
        self.by_ref.iter().map(|s| s.read().len()).sum()
    }
}
