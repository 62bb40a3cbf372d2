//! Interned label strings.
//!
//! Millions of series share a few thousand distinct label names and values.
//! The head stores each distinct string once and refers to it by a `u32` id,
//! so a series' label set costs 8 bytes per pair instead of two heap strings.
//! Ids are stable for the life of the table; strings are never removed yet
//! (head truncation will rebuild the table when it drops series).

use std::sync::Arc;

use parking_lot::RwLock;

type FastMap<K, V> = std::collections::HashMap<K, V, foldhash::fast::RandomState>;

/// Id of an interned string.
pub type SymbolId = u32;

#[derive(Default)]
struct Inner {
    ids: FastMap<Arc<str>, SymbolId>,
    strings: Vec<Arc<str>>,
}

/// Resolves ids while the table's read lock is held.
pub struct Resolver<'a> {
    strings: &'a [Arc<str>],
}

impl<'a> Resolver<'a> {
    /// The string of `id` (empty for an unknown id, which would be a bug).
    pub fn get(&self, id: SymbolId) -> &'a str {
        self.strings.get(id as usize).map_or("", |s| s)
    }
}

/// A thread-safe string interner.
#[derive(Default)]
pub struct SymbolTable {
    inner: RwLock<Inner>,
}

impl SymbolTable {
    pub fn new() -> Self {
        Self::default()
    }

    /// Returns the id of `s`, adding it if new.
    pub fn intern(&self, s: &str) -> SymbolId {
        if let Some(&id) = self.inner.read().ids.get(s) {
            return id;
        }
        let mut w = self.inner.write();
        if let Some(&id) = w.ids.get(s) {
            return id;
        }
        let id = w.strings.len() as SymbolId;
        let a: Arc<str> = Arc::from(s);
        w.strings.push(a.clone());
        w.ids.insert(a, id);
        id
    }

    /// Interns many strings under one lock; `out` receives their ids in order.
    pub fn intern_all<'a>(&self, strs: impl Iterator<Item = &'a str>, out: &mut Vec<SymbolId>) {
        out.clear();
        let mut w = self.inner.write();
        for s in strs {
            let id = match w.ids.get(s) {
                Some(&id) => id,
                None => {
                    let id = w.strings.len() as SymbolId;
                    let a: Arc<str> = Arc::from(s);
                    w.strings.push(a.clone());
                    w.ids.insert(a, id);
                    id
                }
            };
            out.push(id);
        }
    }

    /// The id of `s` if it is interned.
    pub fn lookup(&self, s: &str) -> Option<SymbolId> {
        self.inner.read().ids.get(s).copied()
    }

    /// The string of an id. Ids come only from this table, so a miss is a
    /// bug; it yields the empty string rather than a panic.
    pub fn resolve(&self, id: SymbolId) -> Arc<str> {
        self.inner
            .read()
            .strings
            .get(id as usize)
            .cloned()
            .unwrap_or_else(|| Arc::from(""))
    }

    /// Runs `f` with a resolver that holds the read lock once for many lookups.
    pub fn with_resolver<R>(&self, f: impl FnOnce(&Resolver<'_>) -> R) -> R {
        let r = self.inner.read();
        f(&Resolver {
            strings: &r.strings,
        })
    }

    pub fn len(&self) -> usize {
        self.inner.read().strings.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn intern_is_stable() {
        let t = SymbolTable::new();
        let a = t.intern("a");
        let b = t.intern("b");
        assert_ne!(a, b);
        assert_eq!(t.intern("a"), a);
        assert_eq!(&*t.resolve(b), "b");
        let mut ids = Vec::new();
        t.intern_all(["b", "c", "a"].into_iter(), &mut ids);
        assert_eq!(ids[0], b);
        assert_eq!(ids[2], a);
        assert_eq!(t.len(), 3);
        assert_eq!(t.with_resolver(|r| r.get(ids[1]).to_owned()), "c");
    }
}
