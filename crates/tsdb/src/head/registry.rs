//! The head's series registry: series ref -> series, and label set -> ref.
//!
//! Both maps are striped (many independent locks) so concurrent appenders
//! rarely wait on each other. They are `hashbrown` tables of bare series
//! pointers ([`SeriesEntry`]), not maps, because a head holds millions of
//! series and every byte a bucket carries is paid per series (the registry
//! was ~105 bytes a series as two `HashMap`s, ~38 as these tables at the
//! same load): the series' ref and label-set hash are in its entry, where
//! they cost 16 bytes of its one allocation. Series whose label sets share a
//! hash (rare) are simply several entries under that hash.

use std::cell::Cell;
use std::hash::{BuildHasher, Hasher};

use hashbrown::HashTable;
use parking_lot::{Mutex, RwLock};
use triomphe::ThinArc;

use super::series::MemSeries;
use crate::counting_sort::group_by_slot;
use crate::symbols::{Resolver, SymbolId, SymbolTable};
use crate::varint::{put_uvarint, uvarint_len};
use ferrite_model::prefetch::prefetch;

const STRIPES: usize = 512;
/// Fewer stripes for the label-set map: readers share them, and a batch
/// lookup locks each stripe once for all its sets (see `lookup_batch`),
/// which wants many sets per stripe. Series creation, the only writer,
/// is serialised by the postings lock anyway.
const HASH_STRIPES: usize = 32;

/// What a series holds besides its labels: its ref, its labels' hash and
/// its data.
pub struct SeriesHeader {
    series_ref: u64,
    hash: u64,
    /// The series' samples and chunks.
    pub data: Mutex<MemSeries>,
}

/// A series of the head, shared: one allocation holding the count, the
/// [`SeriesHeader`] and the immutable interned labels (name, value, name,
/// value, ...), behind one pointer. (A `std::sync::Arc` of a struct would
/// need the labels in an allocation of their own, 16 to 32 bytes more per
/// series with its pointer and malloc's overhead.)
#[derive(Clone)]
pub struct SeriesEntry(ThinArc<SeriesHeader, SymbolId>);

impl std::ops::Deref for SeriesEntry {
    type Target = SeriesHeader;

    fn deref(&self) -> &SeriesHeader {
        &self.0.header.header
    }
}

impl SeriesEntry {
    /// A new, empty series `series_ref` with interned `labels`, whose
    /// strings hash to `hash` (see [`hash_labels`]).
    pub fn new(series_ref: u64, hash: u64, labels: &[SymbolId]) -> Self {
        let header = SeriesHeader {
            series_ref,
            hash,
            data: Mutex::new(MemSeries::new()),
        };
        SeriesEntry(ThinArc::from_header_and_slice(header, labels))
    }

    /// The series' ref (`HeadSeriesRef` in Prometheus).
    pub fn series_ref(&self) -> u64 {
        self.series_ref
    }

    /// Its interned labels: name, value, name, value, ...
    pub fn labels(&self) -> &[SymbolId] {
        &self.0.slice
    }

    /// How many hold the series (the registry holds it
    /// [`SeriesRegistry::HELD_REFS`] times).
    pub fn holders(&self) -> usize {
        ThinArc::strong_count(&self.0)
    }

    /// The start of its allocation (to prefetch it).
    pub fn as_ptr(&self) -> *const u8 {
        self.0.ptr().cast()
    }
}

// SAFETY: `ThinArc::into_raw` and `ThinArc::from_raw` are each other's
// inverse and leave the count as it is; the pointer stays valid while the
// series is held.
unsafe impl ferrite_model::erased::RawShared for SeriesEntry {
    fn into_raw(self) -> *const () {
        ThinArc::into_raw(self.0).cast()
    }

    unsafe fn from_raw(raw: *const ()) -> Self {
        // SAFETY: the caller gives a pointer of `into_raw` above.
        SeriesEntry(unsafe { ThinArc::from_raw(raw.cast()) })
    }
}

type RefStripe = RwLock<HashTable<SeriesEntry>>;
type HashStripe = RwLock<HashTable<SeriesEntry>>;

/// Both maps of the head's series.
pub struct SeriesRegistry {
    by_ref: Box<[RefStripe]>,
    by_hash: Box<[HashStripe]>,
}

/// Hash of a label set given as (name, value) pairs of strings or bytes
/// (both hash alike): [`hash_wire_labels`] of their [`encode_wire_labels`].
pub fn hash_labels<N: AsRef<[u8]>, V: AsRef<[u8]>>(pairs: impl Iterator<Item = (N, V)>) -> u64 {
    thread_local! {
        static WIRE: Cell<Vec<u8>> = const { Cell::new(Vec::new()) };
    }
    WIRE.with(|cell| {
        let mut wire = cell.take();
        wire.clear();
        encode_wire_labels(pairs, &mut wire);
        let hash = hash_wire_labels(&wire);
        cell.set(wire);
        hash
    })
}

/// Label pairs as a remote-write request carries them: the protobuf
/// encoding of `repeated Label labels = 1` (of 1.0's `TimeSeries`), each
/// pair a field of key `0x0a`, then the `Label` message's length, then
/// the message: the name as field 1, then the value as field 2 (each a
/// key, a length and the bytes), lengths as minimal varints. Senders
/// encode a series' labels so, which lets the receiver hash them where
/// they lie in the request ([`hash_wire_labels`]), in one pass over
/// contiguous bytes instead of a step per string.
pub fn encode_wire_labels<N: AsRef<[u8]>, V: AsRef<[u8]>>(
    pairs: impl Iterator<Item = (N, V)>,
    out: &mut Vec<u8>,
) {
    for (n, v) in pairs {
        let (n, v) = (n.as_ref(), v.as_ref());
        let (nl, vl) = (n.len() as u64, v.len() as u64);
        let message = 2 + uvarint_len(nl) + n.len() + uvarint_len(vl) + v.len();
        out.push(0x0a);
        put_uvarint(out, message as u64);
        out.push(0x0a);
        put_uvarint(out, nl);
        out.extend_from_slice(n);
        out.push(0x12);
        put_uvarint(out, vl);
        out.extend_from_slice(v);
    }
}

/// The hash of a label set from its [`encode_wire_labels`] bytes.
pub fn hash_wire_labels(wire: &[u8]) -> u64 {
    let mut h = foldhash::fast::FixedState::with_seed(0x0066_6572_7269_7465).build_hasher();
    h.write(wire);
    h.finish()
}

/// The hash a table files `x` (a ref, or a label-set hash) under. The
/// stripe is chosen by `x`'s low bits, which the table also indexes
/// buckets by, and refs are sequential: `x` is mixed first (a bijection,
/// so distinct keys stay distinct).
fn spread(x: u64) -> u64 {
    let z = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    let z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

fn ref_key(e: &SeriesEntry) -> u64 {
    spread(e.series_ref)
}

fn hash_key(e: &SeriesEntry) -> u64 {
    spread(e.hash)
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

    pub fn get(&self, r: u64) -> Option<SeriesEntry> {
        self.ref_stripe(r)
            .read()
            .find(spread(r), |e| e.series_ref == r)
            .cloned()
    }

    /// Finds the series of a label set. `same` tells whether a candidate's
    /// interned labels equal the wanted ones.
    pub fn lookup(&self, hash: u64, same: impl Fn(&[SymbolId]) -> bool) -> Option<SeriesEntry> {
        let hs = self.hash_stripe(hash).read();
        hs.find(spread(hash), |e| e.hash == hash && same(e.labels()))
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
        out: &mut Vec<Option<SeriesEntry>>,
    ) {
        out.clear();
        out.resize(hashes.len(), None);
        let order = by_stripe(hashes);
        // Two passes per stripe. First every set's first candidate (the
        // first entry whose bucket tag matches its hash: the entry is not
        // read), in a tight loop whose probes are independent, so their
        // cache misses overlap. Then the comparisons, software-pipelined:
        // the entry of the set AHEAD places on is prefetched, then its
        // labels HALF as far on, so that by the time a set is compared
        // both are (likely) in cache.
        const AHEAD: usize = 6;
        const HALF: usize = 3;
        for group in order.chunk_by(|a, b| a.0 == b.0) {
            let hs = self.by_hash[group[0].0 as usize].read();
            let firsts: Vec<Option<&SeriesEntry>> = group
                .iter()
                .map(|&(_, i)| {
                    let e = hs.find(spread(hashes[i as usize]), |_| true);
                    if let Some(e) = e {
                        // The bucket itself (the entry's address), which
                        // the prefetch of the entry below reads.
                        prefetch(e as *const SeriesEntry);
                    }
                    e
                })
                .collect();
            let first = |k: usize| *firsts.get(k)?;
            symbols.with_resolver(|res| {
                for (k, &(_, i)) in group.iter().enumerate() {
                    if let Some(e) = first(k + AHEAD) {
                        prefetch(e.as_ptr());
                    }
                    if let Some(e) = first(k + HALF) {
                        prefetch(e.labels().as_ptr());
                    }
                    let i = i as usize;
                    let h = hashes[i];
                    out[i] = match firsts[k] {
                        None => None,
                        Some(e) if e.hash == h && same(i, e.labels(), res) => Some(e.clone()),
                        // Another series' tag or hash came first.
                        Some(_) => hs
                            .find(spread(h), |e| e.hash == h && same(i, e.labels(), res))
                            .cloned(),
                    };
                }
            });
        }
    }

    /// Returns the existing series of a label set or inserts a new one made
    /// by `make`, and whether it was made. The hash stripe stays
    /// write-locked from the second look to the insert, so two appenders
    /// never create the same series twice.
    pub fn get_or_insert(
        &self,
        hash: u64,
        same: impl Fn(&[SymbolId]) -> bool,
        make: impl FnOnce() -> SeriesEntry,
    ) -> (SeriesEntry, bool) {
        if let Some(e) = self.lookup(hash, &same) {
            return (e, false);
        }
        let mut hs = self.hash_stripe(hash).write();
        if let Some(e) = hs.find(spread(hash), |e| e.hash == hash && same(e.labels())) {
            return (e.clone(), false);
        }
        let entry = make();
        debug_assert_eq!(entry.hash, hash);
        self.ref_stripe(entry.series_ref).write().insert_unique(
            spread(entry.series_ref),
            entry.clone(),
            ref_key,
        );
        hs.insert_unique(spread(hash), entry.clone(), hash_key);
        (entry, true)
    }

    /// Inserts a series (replay). Returns false if its ref exists.
    pub fn insert(&self, entry: SeriesEntry) -> bool {
        let (r, hash) = (entry.series_ref, entry.hash);
        {
            let mut rs = self.ref_stripe(r).write();
            if rs.find(spread(r), |e| e.series_ref == r).is_some() {
                return false;
            }
            rs.insert_unique(spread(r), entry.clone(), ref_key);
        }
        let mut hs = self.hash_stripe(hash).write();
        hs.insert_unique(spread(hash), entry, hash_key);
        true
    }

    /// Removes `entry`'s series if `idle` says so while both of its
    /// stripes are locked, so no appender can find the series in between
    /// (head GC). Returns whether it was removed.
    pub fn remove_if(&self, entry: &SeriesEntry, idle: impl FnOnce(&SeriesEntry) -> bool) -> bool {
        let (r, hash) = (entry.series_ref, entry.hash);
        let mut hs = self.hash_stripe(hash).write();
        let mut rs = self.ref_stripe(r).write();
        match rs.find_entry(spread(r), |e| e.series_ref == r) {
            Ok(found) if idle(found.get()) => {
                found.remove();
            }
            _ => return false,
        }
        drop(rs);
        if let Ok(found) = hs.find_entry(spread(hash), |e| e.series_ref == r) {
            found.remove();
        }
        true
    }

    pub fn len(&self) -> usize {
        self.by_ref.iter().map(|s| s.read().len()).sum()
    }
}

/// (hash stripe, index) of each of `hashes`, ordered by stripe and, within
/// a stripe, by index (a counting sort), as `lookup_batch` takes each
/// stripe's lock once.
fn by_stripe(hashes: &[u64]) -> Vec<(u32, u32)> {
    let keyed: Vec<(u32, u32)> = hashes
        .iter()
        .enumerate()
        .map(|(i, &h)| (((h as usize) % HASH_STRIPES) as u32, i as u32))
        .collect();
    let (mut counts, mut order) = (Vec::new(), Vec::new());
    group_by_slot(&keyed, |m| m.0, HASH_STRIPES, &mut counts, &mut order);
    order
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_series_is_one_pointer_to_one_allocation() {
        // The count, the header, the labels' length, then the labels: with
        // glibc's 8 bytes of chunk overhead, a series of 4 label pairs
        // (8 ids) takes a 176-byte chunk, where an `Arc` of a struct and a
        // box of its labels took 160 + 48.
        assert_eq!(std::mem::size_of::<SeriesEntry>(), 8);
        assert!(std::mem::size_of::<SeriesHeader>() <= 120);
        let chunk = |ids: usize| (8 + 120 + 8 + 4 * ids + 8).div_ceil(16) * 16;
        assert_eq!(chunk(8), 176);
        let symbols = SymbolTable::default();
        let e = entry(&symbols, 7, 11, &["__name__", "up", "job", "node"]);
        assert_eq!((e.series_ref(), e.hash, e.labels().len()), (7, 11, 4));
        assert_eq!(e.holders(), 1);
        let held = e.clone();
        assert_eq!(held.holders(), 2);
        assert_eq!(e.as_ptr(), held.as_ptr());
    }

    #[test]
    fn a_series_held_erased_is_the_same_series() {
        use ferrite_model::erased::Erased;
        let symbols = SymbolTable::default();
        let e = entry(&symbols, 3, 5, &["a", "b"]);
        let erased = Erased::new(e.clone());
        assert_eq!(e.holders(), 2);
        let same = erased
            .with(|s: &SeriesEntry| (s.series_ref(), s.as_ptr() == e.as_ptr()))
            .expect("a series");
        assert_eq!(same, (3, true));
        assert_eq!(e.holders(), 2, "lending does not count");
        let copy = erased.clone();
        assert_eq!(e.holders(), 3);
        drop((erased, copy));
        assert_eq!(e.holders(), 1);
    }
    use proptest::prelude::*;

    fn entry(symbols: &SymbolTable, r: u64, hash: u64, labels: &[&str]) -> SeriesEntry {
        let mut ids = Vec::new();
        symbols.intern_all(labels.iter().copied(), &mut ids);
        SeriesEntry::new(r, hash, &ids)
    }

    fn same_as<'a>(
        symbols: &'a SymbolTable,
        labels: &'a [&str],
    ) -> impl Fn(&[SymbolId]) -> bool + 'a {
        move |ids| {
            ids.len() == labels.len()
                && symbols
                    .with_resolver(|res| ids.iter().zip(labels).all(|(&i, l)| res.get(i) == *l))
        }
    }

    proptest! {
        /// Series whose label sets share a hash, or whose hashes share a
        /// stripe and a bucket tag, are all kept and each found as itself,
        /// by every lookup, until removed.
        #[test]
        fn colliding_hashes_keep_every_series(
            hashes in proptest::collection::vec(prop_oneof![0u64..4, Just(u64::MAX), any::<u64>()], 1..40),
            removed in proptest::collection::vec(any::<bool>(), 40),
        ) {
            let symbols = SymbolTable::new();
            let registry = SeriesRegistry::new();
            let names: Vec<String> = (0..hashes.len()).map(|i| format!("s{i}")).collect();
            for (i, &h) in hashes.iter().enumerate() {
                let labels = ["__name__", names[i].as_str()];
                let r = (i as u64 + 1) * 7;
                let (e, made) = registry.get_or_insert(h, same_as(&symbols, &labels), || entry(&symbols, r, h, &labels));
                prop_assert!(made);
                prop_assert_eq!(e.series_ref(), r);
                // A second look finds it instead of making another.
                let (e, made) = registry.get_or_insert(h, same_as(&symbols, &labels), || unreachable!());
                prop_assert!(!made);
                prop_assert_eq!(e.series_ref(), r);
            }
            prop_assert_eq!(registry.len(), hashes.len());
            for i in (0..hashes.len()).filter(|&i| removed[i]) {
                let e = registry.get((i as u64 + 1) * 7).expect("present");
                prop_assert!(registry.remove_if(&e, |_| true));
                prop_assert!(!registry.remove_if(&e, |_| true));
            }
            let mut found = Vec::new();
            registry.lookup_batch(&hashes, &symbols, |i, ids, res| {
                ids.len() == 2 && res.get(ids[0]) == "__name__" && res.get(ids[1]) == names[i]
            }, &mut found);
            for (i, &h) in hashes.iter().enumerate() {
                let r = (i as u64 + 1) * 7;
                let labels = ["__name__", names[i].as_str()];
                let want = (!removed[i]).then_some(r);
                prop_assert_eq!(registry.get(r).map(|e| e.series_ref()), want);
                prop_assert_eq!(registry.lookup(h, same_as(&symbols, &labels)).map(|e| e.series_ref()), want);
                prop_assert_eq!(found[i].as_ref().map(|e| e.series_ref()), want);
            }
            // Replay's insert refuses a ref that is there.
            if let Some(i) = removed.iter().take(hashes.len()).position(|&x| !x) {
                let r = (i as u64 + 1) * 7;
                prop_assert!(!registry.insert(entry(&symbols, r, 5, &["a", "b"])));
            }
        }
    }

    #[test]
    fn by_stripe_orders_as_a_sort_would() {
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        for n in [0usize, 1, 7, 2000] {
            let hashes: Vec<u64> = (0..n)
                .map(|_| {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    x
                })
                .collect();
            let mut want: Vec<(u32, u32)> = hashes
                .iter()
                .enumerate()
                .map(|(i, &h)| (((h as usize) % HASH_STRIPES) as u32, i as u32))
                .collect();
            want.sort_unstable();
            assert_eq!(super::by_stripe(&hashes), want);
        }
    }
}
