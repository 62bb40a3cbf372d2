//! Histograms kept from committed batches for receivers to read into.
//!
//! A receiver reads each histogram of a request into one buffer and lends
//! it to the appender, which keeps its contents in the batch and leaves a
//! spent histogram in its place; without a pool every sample would leave
//! a new, empty one (its vectors allocated at the next read) and every
//! commit would free the batch's. The head keeps a few lists of spent
//! histograms: an appender takes one list at its first lent histogram and
//! gives it back, refilled with its batches' histograms, when it commits
//! or rolls back. Bounded: [`MAX_LISTS`] lists of at most
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
    /// A spent integer histogram (vectors allocated when the list had
    /// one), or a new one.
    pub(super) fn spent_int(&mut self) -> Histogram {
        self.ints.pop().unwrap_or_default()
    }

    /// [`Spare::spent_int`] for a float histogram.
    pub(super) fn spent_float(&mut self) -> FloatHistogram {
        self.floats.pop().unwrap_or_default()
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
    fn spent_histograms_are_reused_and_the_pool_is_bounded() {
        let pool = HistogramPool::default();
        let mut spare = pool.take();
        assert_eq!(spare.spent_int(), Histogram::default());
        let spent = Histogram {
            positive_buckets: Vec::with_capacity(64),
            ..Histogram::default()
        };
        spare.keep(std::iter::once(spent), std::iter::empty());
        assert!(
            spare.spent_int().positive_buckets.capacity() >= 64,
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
