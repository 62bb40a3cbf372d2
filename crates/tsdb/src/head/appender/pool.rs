//! Histograms kept from committed batches for later appenders to fill.
//!
//! A receiver reads each histogram of a request into one buffer and the
//! appender copies it into its batch; without a pool every copy allocates
//! its vectors and every commit frees them. The head keeps a few lists of
//! spent histograms: an appender takes one list at its first histogram
//! copy and gives it back, refilled with its batches' histograms, when it
//! commits or rolls back. Bounded: [`MAX_LISTS`] lists of at most
//! [`MAX_PER_LIST`] histograms of each kind.

use ferrite_model::{FloatHistogram, Histogram};
use parking_lot::Mutex;

/// Most lists the pool keeps (about one per appending thread).
const MAX_LISTS: usize = 4;

/// Most histograms of each kind a list keeps (Prometheus' senders put
/// 2,000 samples in a request by default).
const MAX_PER_LIST: usize = 2048;

/// Spent histograms, their vectors still allocated.
#[derive(Default)]
pub(crate) struct Spare {
    ints: Vec<Histogram>,
    floats: Vec<FloatHistogram>,
}

impl Spare {
    /// A copy of `h`, in a spent histogram's vectors when there is one.
    pub(super) fn copy_int(&mut self, h: &Histogram) -> Histogram {
        copy_into_spent(&mut self.ints, h)
    }

    /// [`Spare::copy_int`] for a float histogram.
    pub(super) fn copy_float(&mut self, h: &FloatHistogram) -> FloatHistogram {
        copy_into_spent(&mut self.floats, h)
    }

    /// Keeps spent histograms, up to the list's bound.
    pub(super) fn keep(
        &mut self,
        ints: impl Iterator<Item = Histogram>,
        floats: impl Iterator<Item = FloatHistogram>,
    ) {
        let room = MAX_PER_LIST.saturating_sub(self.ints.len());
        self.ints.extend(ints.take(room));
        let room = MAX_PER_LIST.saturating_sub(self.floats.len());
        self.floats.extend(floats.take(room));
    }
}

/// A copy of `h` made with `clone_from` into the last of `spent` (whose
/// vectors it reuses), or a new clone when `spent` is empty.
fn copy_into_spent<H: Clone>(spent: &mut Vec<H>, h: &H) -> H {
    match spent.pop() {
        Some(mut old) => {
            old.clone_from(h);
            old
        }
        None => h.clone(),
    }
}

/// The head's lists of spent histograms.
#[derive(Default)]
pub(crate) struct HistogramPool {
    lists: Mutex<Vec<Spare>>,
}

impl HistogramPool {
    /// A list to copy histograms into (empty if the pool has none).
    pub(super) fn take(&self) -> Spare {
        self.lists.lock().pop().unwrap_or_default()
    }

    /// Gives a list back (dropped if the pool is full).
    pub(super) fn give(&self, spare: Spare) {
        if spare.ints.is_empty() && spare.floats.is_empty() {
            return;
        }
        let mut lists = self.lists.lock();
        if lists.len() < MAX_LISTS {
            lists.push(spare);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn copies_reuse_spent_histograms_and_the_pool_is_bounded() {
        let pool = HistogramPool::default();
        let mut spare = pool.take();
        let h = Histogram {
            count: 3,
            positive_buckets: vec![1, 1, 1],
            ..Histogram::default()
        };
        assert_eq!(spare.copy_int(&h), h);
        let spent = Histogram {
            positive_buckets: Vec::with_capacity(64),
            ..Histogram::default()
        };
        spare.keep(std::iter::once(spent), std::iter::empty());
        let copy = spare.copy_int(&h);
        assert_eq!(copy, h);
        assert!(
            copy.positive_buckets.capacity() >= 64,
            "the spent vectors are reused"
        );
        spare.keep(
            std::iter::repeat_with(Histogram::default).take(MAX_PER_LIST + 10),
            std::iter::empty(),
        );
        assert_eq!(spare.ints.len(), MAX_PER_LIST);
        pool.give(spare);
        for _ in 0..MAX_LISTS + 2 {
            let mut s = Spare::default();
            s.keep(std::iter::once(Histogram::default()), std::iter::empty());
            pool.give(s);
        }
        assert_eq!(pool.lists.lock().len(), MAX_LISTS);
        // An empty list is not kept.
        for _ in 0..MAX_LISTS {
            drop(pool.take());
        }
        pool.give(Spare::default());
        assert!(pool.lists.lock().is_empty());
    }
}
