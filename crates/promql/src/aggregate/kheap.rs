//! The heap topk and bottomk keep a group's k samples in, with Prometheus'
//! choice among equal values.
//!
//! Prometheus offers a group's samples, in input order, to a binary heap of
//! at most k entries whose root is the weakest kept value (the smallest for
//! topk, the largest for bottomk; NaN is weaker than anything). While the
//! heap is not full, a sample is appended and sifted up; once it is full, a
//! sample replaces the root only if it is strictly better than the root, or
//! a number where the root is NaN, and is then sifted down. A sample equal
//! to the root is dropped, and a better one displaces whichever of the tied
//! values the sifts left at the root: not necessarily the first or the last
//! offered (`topk(2)` of 1 1 1 5 keeps the 5 and the second 1). The heap
//! here is that heap, sift for sift; [`KHeap::into_ranked`] then sorts as
//! Prometheus sorts its heap for the result (Go's `sort.Sort`, see
//! [`super::gosort`]).

use super::gosort::go_sort;

/// Which end of the values a [`KHeap`] keeps.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Keep {
    /// topk
    Largest,
    /// bottomk
    Smallest,
}

impl Keep {
    /// Whether `a` is weaker than `b`: nearer the heap's root. A NaN is
    /// weaker than anything, another NaN included (Prometheus' `Less`).
    fn weaker(self, a: f64, b: f64) -> bool {
        a.is_nan()
            || match self {
                Keep::Largest => a < b,
                Keep::Smallest => a > b,
            }
    }

    /// Whether a new value takes the place of the weakest kept one.
    fn displaces(self, new: f64, weakest: f64) -> bool {
        let better = match self {
            Keep::Largest => weakest < new,
            Keep::Smallest => weakest > new,
        };
        better || (weakest.is_nan() && !new.is_nan())
    }
}

/// Up to `k` items with the best values offered, kept as Prometheus keeps
/// them.
pub(crate) struct KHeap<T> {
    keep: Keep,
    k: usize,
    /// A binary heap (children of `i` at `2i+1`, `2i+2`), weakest on top.
    slots: Vec<(f64, T)>,
}

impl<T> KHeap<T> {
    /// A heap keeping up to `k` items (none if `k` is 0).
    pub(crate) fn new(keep: Keep, k: usize) -> Self {
        KHeap {
            keep,
            k,
            slots: Vec::with_capacity(k.min(64)),
        }
    }

    /// Offers an item with its value: kept if the heap has room, or if it
    /// displaces the weakest kept item (which is then dropped).
    pub(crate) fn offer(&mut self, value: f64, item: T) {
        if self.slots.len() < self.k {
            self.slots.push((value, item));
            self.sift_up(self.slots.len() - 1);
            return;
        }
        match self.slots.first() {
            Some(&(weakest, _)) if self.keep.displaces(value, weakest) => {
                self.slots[0] = (value, item);
                self.sift_down(0);
            }
            _ => {}
        }
    }

    /// The kept items, best first, in the order Prometheus returns them
    /// for an instant query (ties in the order Go's sort leaves them).
    pub(crate) fn into_ranked(self) -> Vec<T> {
        let keep = self.keep;
        let mut slots = self.slots;
        go_sort(&mut slots, |a, b| keep.weaker(b.0, a.0));
        slots.into_iter().map(|(_, item)| item).collect()
    }

    fn weaker_at(&self, i: usize, j: usize) -> bool {
        self.keep.weaker(self.slots[i].0, self.slots[j].0)
    }

    fn sift_up(&mut self, mut child: usize) {
        while child > 0 {
            let parent = (child - 1) / 2;
            if !self.weaker_at(child, parent) {
                return;
            }
            self.slots.swap(child, parent);
            child = parent;
        }
    }

    fn sift_down(&mut self, mut parent: usize) {
        let len = self.slots.len();
        loop {
            let left = 2 * parent + 1;
            if left >= len {
                return;
            }
            let right = left + 1;
            let child = if right < len && self.weaker_at(right, left) {
                right
            } else {
                left
            };
            if !self.weaker_at(child, parent) {
                return;
            }
            self.slots.swap(parent, child);
            parent = child;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn kept(keep: Keep, k: usize, values: &[f64]) -> Vec<usize> {
        let mut h = KHeap::new(keep, k);
        for (id, &v) in values.iter().enumerate() {
            h.offer(v, id);
        }
        h.into_ranked()
    }

    #[test]
    fn keeps_the_best_and_ranks_them() {
        let v = [3.0, 1.0, 4.0, 1.0, 5.0, 9.0, 2.0, 6.0];
        assert_eq!(kept(Keep::Largest, 3, &v), [5, 7, 4]);
        assert_eq!(kept(Keep::Smallest, 3, &v), [1, 3, 6]);
        assert_eq!(kept(Keep::Largest, 20, &v).len(), v.len());
    }

    #[test]
    fn equal_values_first_offered_stay_when_the_heap_is_full() {
        // A full heap of equal values never takes another equal value.
        assert_eq!(kept(Keep::Largest, 2, &[1.0; 6]), [0, 1]);
        assert_eq!(kept(Keep::Smallest, 3, &[1.0; 6]), [0, 1, 2]);
    }

    #[test]
    fn the_heap_shape_decides_which_tie_goes() {
        // topk(2) of 1 1 1 5: ids 0 and 1 fill the heap with 0 at the root;
        // 2 is not better than the root and is dropped; 5 displaces the
        // root, id 0. So the first tie offered goes and the second stays.
        assert_eq!(kept(Keep::Largest, 2, &[1.0, 1.0, 1.0, 5.0]), [3, 1]);
        // topk(3) of 1 2 1 1 2: the heap is [0 1 2] (values 1 2 1); 3 is
        // not better than the root; 4 displaces the root and sifts down
        // past the weaker child, id 2: [2 1 4]. Ranked by Go's insertion
        // sort: 1, 4 (the 2s, in heap order), then 2.
        assert_eq!(
            kept(Keep::Largest, 3, &[1.0, 2.0, 1.0, 1.0, 2.0]),
            [1, 4, 2]
        );
    }

    #[test]
    fn nan_is_weakest_and_displaced_by_any_number() {
        let nan = f64::NAN;
        // A NaN pushed under a NaN moves up (NaN is weaker even than NaN):
        // the second NaN is at the root and is the one 1 displaces.
        assert_eq!(kept(Keep::Largest, 2, &[nan, nan, 1.0, nan]), [2, 0]);
        assert_eq!(kept(Keep::Smallest, 2, &[nan, 5.0, nan, 7.0]), [1, 3]);
        // Only NaNs: the first ones offered, in Go's order.
        assert_eq!(kept(Keep::Largest, 2, &[nan, nan, nan]).len(), 2);
        // -Inf is kept by topk over NaN.
        assert_eq!(kept(Keep::Largest, 1, &[nan, f64::NEG_INFINITY]), [1]);
    }

    proptest! {
        // Whatever ties the heap breaks, the kept values are the k best
        // (NaN only when there are fewer numbers than k), ranked best first.
        #[test]
        fn keeps_k_best_values(
            values in proptest::collection::vec(prop_oneof![4 => (0u8..4).prop_map(f64::from), 1 => Just(f64::NAN)], 0..60),
            k in 1usize..25,
            top in any::<bool>(),
        ) {
            let keep = if top { Keep::Largest } else { Keep::Smallest };
            let ids = kept(keep, k, &values);
            prop_assert_eq!(ids.len(), k.min(values.len()));
            let got: Vec<f64> = ids.iter().map(|&i| values[i]).collect();
            let mut numbers: Vec<f64> = values.iter().copied().filter(|v| !v.is_nan()).collect();
            numbers.sort_by(|a, b| if top { b.total_cmp(a) } else { a.total_cmp(b) });
            for (i, want) in numbers.iter().take(k).enumerate() {
                prop_assert_eq!(got[i], *want, "rank {} of {:?}", i, got);
            }
            prop_assert!(got.iter().skip(numbers.len().min(k)).all(|v| v.is_nan()));
        }
    }
}
