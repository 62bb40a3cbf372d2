//! A table of items kept in the order a target first gives them, with an
//! index by hash beside them, for what a scrape looks up once per line in
//! the target's own order (series lines in the scrape cache, metadata
//! families): a scrape that repeats the last one's order finds each item
//! at a cursor just after the last one found (or at the last one again),
//! walking the items in order, with no probe of the index and no cache
//! miss the hardware does not see coming.
//!
//! The index is built only when a lookup misses the cursor, and dropped
//! after a scrape that never needed it: a target that repeats its order
//! keeps no index at all (about 10 bytes an item).

use std::cell::{Cell, OnceCell};

use hashbrown::HashTable;

/// An item of an [`OrderedTable`]: the hash it is indexed by.
pub(crate) trait Indexed {
    /// The item's hash (the same for items that compare equal).
    fn index_hash(&self) -> u64;
}

/// See the module documentation.
#[derive(Debug)]
pub(crate) struct OrderedTable<T> {
    items: Vec<T>,
    /// An item's hash to its index in `items`, while a scrape needs it.
    index: OnceCell<HashTable<u32>>,
    /// Whether the index was asked since the last [`OrderedTable::retain`].
    probed: Cell<bool>,
    /// Where the next item is expected: after the last one found.
    cursor: usize,
}

impl<T> Default for OrderedTable<T> {
    fn default() -> Self {
        OrderedTable {
            items: Vec::new(),
            index: OnceCell::new(),
            probed: Cell::new(false),
            cursor: 0,
        }
    }
}

impl<T: Indexed> OrderedTable<T> {
    /// The position of the item for which `eq` holds (its hash is
    /// `hash`): the expected one, the last one found, else the index's.
    pub(crate) fn position(&self, hash: u64, eq: impl Fn(&T) -> bool) -> Option<usize> {
        if let Some(i) = self.expected(&eq) {
            return Some(i);
        }
        self.probed.set(true);
        let items = &self.items;
        self.index
            .get_or_init(|| index_of(items))
            .find(hash, |&i| eq(&items[i as usize]))
            .map(|&i| i as usize)
    }

    /// The position of the item for which `eq` holds if it is the
    /// expected one or the last one found (no probe of the index).
    pub(crate) fn expected(&self, eq: impl Fn(&T) -> bool) -> Option<usize> {
        [self.cursor, self.cursor.wrapping_sub(1)]
            .into_iter()
            .find(|&i| self.items.get(i).is_some_and(&eq))
    }

    /// The item at `i`, found by this scrape: the next one is expected
    /// after it.
    pub(crate) fn visit(&mut self, i: usize) -> &mut T {
        self.cursor = i + 1;
        &mut self.items[i]
    }

    /// Adds an item (found by this scrape); its position.
    pub(crate) fn push(&mut self, item: T) -> usize {
        let i = self.items.len();
        let hash = item.index_hash();
        self.items.push(item);
        if let Some(index) = self.index.get_mut() {
            let items = &self.items;
            index.insert_unique(hash, i as u32, |&j| items[j as usize].index_hash());
        }
        self.cursor = i + 1;
        i
    }

    /// Keeps the items `keep` holds for, gives back memory the table no
    /// longer needs (the index too, if this scrape did not ask it or
    /// items went), and expects the next scrape to start at the first
    /// item.
    pub(crate) fn retain(&mut self, keep: impl Fn(&T) -> bool) {
        self.cursor = 0;
        if !self.probed.replace(false) || !self.items.iter().all(&keep) {
            self.index = OnceCell::new();
        }
        self.items.retain(keep);
        let len = self.items.len();
        if self.items.capacity() > len + len / 4 + 16 {
            self.items.shrink_to_fit();
        }
        if let Some(index) = self.index.get_mut() {
            if index.capacity() > 4 * len.max(64) {
                let items = &self.items;
                index.shrink_to_fit(|&j| items[j as usize].index_hash());
            }
        }
    }

    /// Whether the index is built (for tests).
    #[cfg(test)]
    pub(crate) fn has_index(&self) -> bool {
        self.index.get().is_some()
    }
    /// The items, in order.
    pub(crate) fn items(&self) -> &[T] {
        &self.items
    }

    /// The items, in order, to change (not in what they are indexed by).
    pub(crate) fn items_mut(&mut self) -> &mut [T] {
        &mut self.items
    }

    /// The item at `i`.
    pub(crate) fn get(&self, i: usize) -> Option<&T> {
        self.items.get(i)
    }

    /// Replaces the item at `i`.
    pub(crate) fn set(&mut self, i: usize, item: T) {
        self.items[i] = item;
    }

    /// The position just after the last item found.
    #[cfg(test)]
    pub(crate) fn cursor(&self) -> usize {
        self.cursor
    }
}

/// The index of `items`.
fn index_of<T: Indexed>(items: &[T]) -> HashTable<u32> {
    let mut index = HashTable::with_capacity(items.len());
    for (i, item) in items.iter().enumerate() {
        index.insert_unique(item.index_hash(), i as u32, |&j| {
            items[j as usize].index_hash()
        });
    }
    index
}

#[cfg(test)]
mod tests {
    use super::*;

    impl Indexed for (u64, u32) {
        fn index_hash(&self) -> u64 {
            self.0
        }
    }

    #[test]
    fn items_are_found_in_order_out_of_order_and_after_removals() {
        let mut t = OrderedTable::default();
        for k in 0..100u64 {
            // Colliding hashes on purpose: `eq` decides.
            t.push((k % 7, k as u32));
        }
        let find =
            |t: &OrderedTable<(u64, u32)>, k: u32| t.position(u64::from(k) % 7, |e| e.1 == k);
        t.retain(|_| true);
        assert_eq!(t.cursor(), 0);
        // In order: each at the cursor.
        for k in 0..100u32 {
            assert_eq!(find(&t, k), Some(k as usize));
            assert_eq!(t.cursor(), k as usize);
            t.visit(k as usize);
        }
        // Out of order, and the same one twice.
        assert_eq!(find(&t, 40), Some(40));
        t.visit(40);
        assert_eq!(find(&t, 40), Some(40));
        assert_eq!(find(&t, 3), Some(3));
        assert_eq!(find(&t, 1000), None);
        // The odd ones go; the rest are found at their new places.
        t.retain(|e| e.1 % 2 == 0);
        assert_eq!(t.items().len(), 50);
        assert_eq!(find(&t, 41), None);
        assert_eq!(find(&t, 42), Some(21));
    }

    #[test]
    fn the_index_is_kept_only_while_scrapes_need_it() {
        let mut t = OrderedTable::default();
        for k in 0..100u64 {
            assert_eq!(t.position(k, |e: &(u64, u32)| e.0 == k), None);
            t.push((k, k as u32));
        }
        assert!(t.has_index(), "new items were looked up");
        t.retain(|_| true);
        // A scrape in order: found at the cursor; the index goes after it.
        for k in 0..100u64 {
            let i = t.position(k, |e| e.0 == k).expect("found");
            t.visit(i);
        }
        assert!(t.has_index());
        t.retain(|_| true);
        assert!(!t.has_index());
        // Out of order: built again, and found.
        assert_eq!(t.position(70, |e| e.0 == 70), Some(70));
        assert!(t.has_index());
        t.visit(70);
        t.push((1000, 1000));
        assert_eq!(t.position(1000, |e| e.0 == 1000), Some(100));
        t.retain(|e| e.0 != 5);
        assert!(!t.has_index(), "rebuilt when asked next");
        assert_eq!(t.position(1000, |e| e.0 == 1000), Some(99));
    }
}
