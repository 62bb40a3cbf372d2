//! Buffers a thread keeps for reuse: a hot path that needs a buffer of the
//! same kind over and over (a scrape's body, a chunk's next size) takes
//! one the thread gave back instead of allocating, and gives its old one
//! back, up to a bound.

use std::cell::RefCell;
use std::thread::LocalKey;

/// Emptied buffers kept for reuse.
#[derive(Debug, Default)]
pub struct Spares<T> {
    kept: Vec<Vec<T>>,
}

impl<T> Spares<T> {
    /// None kept.
    pub const fn new() -> Self {
        Spares { kept: Vec::new() }
    }

    /// A kept buffer (empty), if there is one.
    pub fn take(&mut self) -> Option<Vec<T>> {
        self.kept.pop()
    }

    /// Keeps `buf`, emptied, unless `most` are kept already (it is freed
    /// then).
    pub fn keep(&mut self, mut buf: Vec<T>, most: usize) {
        if self.kept.len() < most {
            buf.clear();
            self.kept.push(buf);
        }
    }

    /// How many are kept.
    pub fn len(&self) -> usize {
        self.kept.len()
    }

    /// Whether none is kept.
    pub fn is_empty(&self) -> bool {
        self.kept.is_empty()
    }
}

/// `f` on this thread's `key`; `None` (and `f` not run) while the thread's
/// value is borrowed already or being destroyed (a buffer given back then
/// is simply freed).
pub fn with_local<S: 'static, R>(
    key: &'static LocalKey<RefCell<S>>,
    f: impl FnOnce(&mut S) -> R,
) -> Option<R> {
    key.try_with(|cell| cell.try_borrow_mut().ok().map(|mut s| f(&mut s)))
        .ok()
        .flatten()
}

#[cfg(test)]
mod tests {
    use super::*;

    thread_local! {
        static KEPT: RefCell<Spares<u8>> = const { RefCell::new(Spares::new()) };
    }

    #[test]
    fn buffers_come_back_emptied_and_bounded() {
        with_local(&KEPT, |k| {
            k.keep(vec![1, 2, 3], 2);
            k.keep(Vec::with_capacity(10), 2);
            k.keep(vec![9], 2);
            assert_eq!(k.len(), 2);
        });
        let taken = with_local(&KEPT, Spares::take).flatten();
        assert_eq!(taken.map(|b| (b.len(), b.capacity())), Some((0, 10)));
        // Borrowed already: nothing runs.
        with_local(&KEPT, |_| assert_eq!(with_local(&KEPT, |k| k.len()), None));
    }
}
