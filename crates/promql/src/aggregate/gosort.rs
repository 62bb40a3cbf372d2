//! Go's `sort.Sort`: pattern-defeating quicksort as Go's standard library
//! implements it (Go 1.19 and later), insertion sort for up to 12 elements.
//!
//! It is not stable, and Prometheus sorts topk's and bottomk's kept samples
//! with it, with a comparison that is not even a strict weak order when NaNs
//! are present. The order of equal (or NaN) values in an instant query's
//! result is whatever this algorithm's exact sequence of comparisons and
//! swaps leaves, so it is reproduced step for step: the same pivots, the same
//! partitioning, the same pattern breaking (a xorshift generator seeded with
//! the length), every comparison and swap in the same order. The tests check
//! the results against permutations Go printed.

/// Sorts `v` as Go's `sort.Sort` does, `less(a, b)` being `Less(i, j)` on
/// the elements at `i` and `j`.
pub(crate) fn go_sort<T, F: FnMut(&T, &T) -> bool>(v: &mut [T], less: F) {
    let n = v.len();
    if n <= 1 {
        return;
    }
    let mut sorter = Sorter { v, less };
    sorter.pdqsort(0, n, bit_len(n));
}

/// Subslices of at most this many elements are insertion sorted.
const MAX_INSERTION: usize = 12;
/// From this length on, a pivot candidate is the median of three neighbours.
const SHORTEST_NINTHER: usize = 50;
/// The number of swaps choosing a pivot makes when the candidates are in
/// decreasing order.
const MAX_PIVOT_SWAPS: usize = 4 * 3;
/// At most this many out-of-order neighbours are shifted in place before
/// giving up on a partial insertion sort.
const PARTIAL_INSERTION_STEPS: usize = 5;
/// Partial insertion sort shifts nothing in shorter subslices.
const SHORTEST_SHIFTING: usize = 50;

/// Go's `bits.Len`: the number of bits needed to represent `n`.
fn bit_len(n: usize) -> u32 {
    usize::BITS - n.leading_zeros()
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum SortedHint {
    Unknown,
    Increasing,
    Decreasing,
}

/// Go's xorshift generator of `breakPatterns`.
struct XorShift(u64);

impl XorShift {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

struct Sorter<'a, T, F> {
    v: &'a mut [T],
    less: F,
}

impl<T, F: FnMut(&T, &T) -> bool> Sorter<'_, T, F> {
    fn less(&mut self, i: usize, j: usize) -> bool {
        (self.less)(&self.v[i], &self.v[j])
    }

    fn swap(&mut self, i: usize, j: usize) {
        self.v.swap(i, j);
    }

    fn pdqsort(&mut self, mut a: usize, mut b: usize, mut limit: u32) {
        let mut was_balanced = true;
        let mut was_partitioned = true;
        loop {
            let length = b - a;
            if length <= MAX_INSERTION {
                self.insertion_sort(a, b);
                return;
            }
            if limit == 0 {
                self.heap_sort(a, b);
                return;
            }
            if !was_balanced {
                self.break_patterns(a, b);
                limit -= 1;
            }
            let (mut pivot, mut hint) = self.choose_pivot(a, b);
            if hint == SortedHint::Decreasing {
                self.reverse_range(a, b);
                pivot = (b - 1) - (pivot - a);
                hint = SortedHint::Increasing;
            }
            if was_balanced
                && was_partitioned
                && hint == SortedHint::Increasing
                && self.partial_insertion_sort(a, b)
            {
                return;
            }
            // The element before the subslice is the previous pivot: when it
            // is not less than this pivot, the subslice starts with a run of
            // elements equal to it, which are put in place at once.
            if a > 0 && !self.less(a - 1, pivot) {
                a = self.partition_equal(a, b, pivot);
                continue;
            }
            let (mid, already_partitioned) = self.partition(a, b, pivot);
            was_partitioned = already_partitioned;
            let (left, right) = (mid - a, b - mid);
            let balance_threshold = length / 8;
            if left < right {
                was_balanced = left >= balance_threshold;
                self.pdqsort(a, mid, limit);
                a = mid + 1;
            } else {
                was_balanced = right >= balance_threshold;
                self.pdqsort(mid + 1, b, limit);
                b = mid;
            }
        }
    }

    fn insertion_sort(&mut self, a: usize, b: usize) {
        for i in a + 1..b {
            let mut j = i;
            while j > a && self.less(j, j - 1) {
                self.swap(j, j - 1);
                j -= 1;
            }
        }
    }

    /// Heap sort of `v[a..b]`: a max-heap built bottom up, then its root
    /// moved to the end, one element at a time.
    fn heap_sort(&mut self, a: usize, b: usize) {
        let len = b - a;
        for root in (0..=(len - 1) / 2).rev() {
            self.sift_down(a, root, len);
        }
        for end in (0..len).rev() {
            self.swap(a, a + end);
            self.sift_down(a, 0, end);
        }
    }

    /// Moves the element at `first + root` down the max-heap held in
    /// `v[first..first + len]`.
    fn sift_down(&mut self, first: usize, mut root: usize, len: usize) {
        loop {
            let mut child = 2 * root + 1;
            if child >= len {
                return;
            }
            if child + 1 < len && self.less(first + child, first + child + 1) {
                child += 1;
            }
            if !self.less(first + root, first + child) {
                return;
            }
            self.swap(first + root, first + child);
            root = child;
        }
    }

    /// Partitions `v[a..b]` around the pivot (moved to `a` first): elements
    /// less than it to its left. Returns the pivot's final place and whether
    /// nothing had to move.
    fn partition(&mut self, a: usize, b: usize, pivot: usize) -> (usize, bool) {
        self.swap(a, pivot);
        let (mut i, mut j) = (a + 1, b - 1);
        while i <= j && self.less(i, a) {
            i += 1;
        }
        while i <= j && !self.less(j, a) {
            j -= 1;
        }
        if i > j {
            self.swap(j, a);
            return (j, true);
        }
        self.swap(i, j);
        i += 1;
        j -= 1;
        loop {
            while i <= j && self.less(i, a) {
                i += 1;
            }
            while i <= j && !self.less(j, a) {
                j -= 1;
            }
            if i > j {
                break;
            }
            self.swap(i, j);
            i += 1;
            j -= 1;
        }
        self.swap(j, a);
        (j, false)
    }

    /// Partitions `v[a..b]` into elements equal to the pivot (none is less:
    /// see the caller) and greater ones; returns where the greater ones start.
    fn partition_equal(&mut self, a: usize, b: usize, pivot: usize) -> usize {
        self.swap(a, pivot);
        let (mut i, mut j) = (a + 1, b - 1);
        loop {
            while i <= j && !self.less(a, i) {
                i += 1;
            }
            while i <= j && self.less(a, j) {
                j -= 1;
            }
            if i > j {
                return i;
            }
            self.swap(i, j);
            i += 1;
            j -= 1;
        }
    }

    /// Sorts `v[a..b]` if it is nearly sorted (a few neighbours out of
    /// order); returns whether it is sorted now.
    fn partial_insertion_sort(&mut self, a: usize, b: usize) -> bool {
        let mut i = a + 1;
        for _ in 0..PARTIAL_INSERTION_STEPS {
            while i < b && !self.less(i, i - 1) {
                i += 1;
            }
            if i == b {
                return true;
            }
            if b - a < SHORTEST_SHIFTING {
                return false;
            }
            self.swap(i, i - 1);
            // The smaller element moves left, as far as it goes. Go walks
            // down to index 1 of the whole slice here, not of the subslice.
            if i - a >= 2 {
                let mut j = i - 1;
                while j >= 1 && self.less(j, j - 1) {
                    self.swap(j, j - 1);
                    j -= 1;
                }
            }
            // The greater element moves right.
            if b - i >= 2 {
                let mut j = i + 1;
                while j < b && self.less(j, j - 1) {
                    self.swap(j, j - 1);
                    j += 1;
                }
            }
        }
        false
    }

    /// Swaps three elements around the middle with pseudo-random others.
    fn break_patterns(&mut self, a: usize, b: usize) {
        let length = b - a;
        if length < 8 {
            return;
        }
        let mut random = XorShift(length as u64);
        let modulus = 1usize << bit_len(length);
        let middle = a + (length / 4) * 2;
        for idx in middle - 1..=middle + 1 {
            let mut other = (random.next() as usize) & (modulus - 1);
            if other >= length {
                other -= length;
            }
            self.swap(idx, a + other);
        }
    }

    /// The pivot (the median of three candidates, each the median of its
    /// neighbours in long subslices) and what the comparisons tell of the
    /// order.
    fn choose_pivot(&mut self, a: usize, b: usize) -> (usize, SortedHint) {
        let len = b - a;
        let mut swaps = 0;
        let mut i = a + len / 4;
        let mut j = a + len / 4 * 2;
        let mut k = a + len / 4 * 3;
        if len >= 8 {
            if len >= SHORTEST_NINTHER {
                i = self.median_adjacent(i, &mut swaps);
                j = self.median_adjacent(j, &mut swaps);
                k = self.median_adjacent(k, &mut swaps);
            }
            j = self.median(i, j, k, &mut swaps);
        }
        let hint = match swaps {
            0 => SortedHint::Increasing,
            MAX_PIVOT_SWAPS => SortedHint::Decreasing,
            _ => SortedHint::Unknown,
        };
        (j, hint)
    }

    fn order2(&mut self, a: usize, b: usize, swaps: &mut usize) -> (usize, usize) {
        if self.less(b, a) {
            *swaps += 1;
            (b, a)
        } else {
            (a, b)
        }
    }

    fn median(&mut self, a: usize, b: usize, c: usize, swaps: &mut usize) -> usize {
        let (a, b) = self.order2(a, b, swaps);
        let (b, _) = self.order2(b, c, swaps);
        let (_, b) = self.order2(a, b, swaps);
        b
    }

    fn median_adjacent(&mut self, at: usize, swaps: &mut usize) -> usize {
        self.median(at - 1, at, at + 1, swaps)
    }

    fn reverse_range(&mut self, a: usize, b: usize) {
        self.v[a..b].reverse();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// The keys of the golden cases: `len` elements, key of element `i`
    /// `(i * mul + add) % modulo`, a NaN where the key is `nan_key`.
    fn keys(len: usize, mul: usize, add: usize, modulo: usize, nan_key: Option<usize>) -> Vec<f64> {
        (0..len)
            .map(|i| {
                let k = (i * mul + add) % modulo;
                if Some(k) == nan_key {
                    f64::NAN
                } else {
                    k as f64
                }
            })
            .collect()
    }

    /// Prometheus' topk output comparison (`sort.Reverse` of its value heap).
    fn topk_less(a: &(f64, usize), b: &(f64, usize)) -> bool {
        b.0.is_nan() || b.0 < a.0
    }

    fn sorted_ids(keys: &[f64]) -> Vec<usize> {
        let mut v: Vec<(f64, usize)> = keys.iter().copied().zip(0..).collect();
        go_sort(&mut v, topk_less);
        v.into_iter().map(|(_, id)| id).collect()
    }

    // Golden permutations printed by Go 1.26's sort.Sort for the same keys
    // and comparison:
    //
    //   type s []struct{ k float64; id int }
    //   func (x s) Less(i, j int) bool { return math.IsNaN(x[j].k) || x[j].k < x[i].k }
    //
    // (the element ids in their sorted order).
    #[test]
    fn matches_go_on_ties() {
        let cases: &[(Vec<f64>, &[usize])] = &[
            (keys(13, 1, 0, 3, None), GOLDEN_13_MOD3),
            (keys(20, 7, 3, 4, None), GOLDEN_20_MOD4),
            (keys(64, 5, 1, 3, None), GOLDEN_64_MOD3),
            (keys(100, 1, 0, 1, None), GOLDEN_100_EQUAL),
            (keys(60, 11, 2, 5, Some(4)), GOLDEN_60_MOD5_NAN),
            (keys(120, 1, 0, 120, None), GOLDEN_120_INCREASING),
        ];
        for (keys, want) in cases {
            assert_eq!(&sorted_ids(keys), want, "keys {keys:?}");
        }
    }

    const GOLDEN_13_MOD3: &[usize] = &[8, 2, 11, 5, 1, 4, 10, 7, 6, 9, 0, 3, 12];
    const GOLDEN_20_MOD4: &[usize] = &[
        0, 16, 4, 12, 8, 1, 17, 5, 13, 9, 10, 6, 14, 2, 18, 11, 7, 15, 3, 19,
    ];
    const GOLDEN_64_MOD3: &[usize] = &[
        23, 62, 2, 59, 56, 5, 53, 50, 8, 47, 44, 11, 41, 38, 14, 35, 32, 17, 29, 26, 20, 33, 54,
        21, 24, 63, 60, 27, 3, 18, 30, 57, 45, 0, 6, 15, 36, 51, 48, 39, 9, 12, 42, 16, 10, 43, 46,
        40, 13, 49, 7, 37, 52, 34, 22, 55, 4, 31, 58, 28, 19, 61, 1, 25,
    ];
    const GOLDEN_100_EQUAL: &[usize] = &[
        0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24,
        25, 26, 27, 28, 29, 30, 31, 32, 33, 34, 35, 36, 37, 38, 39, 40, 41, 42, 43, 44, 45, 46, 47,
        48, 49, 50, 51, 52, 53, 54, 55, 56, 57, 58, 59, 60, 61, 62, 63, 64, 65, 66, 67, 68, 69, 70,
        71, 72, 73, 74, 75, 76, 77, 78, 79, 80, 81, 82, 83, 84, 85, 86, 87, 88, 89, 90, 91, 92, 93,
        94, 95, 96, 97, 98, 99,
    ];
    const GOLDEN_60_MOD5_NAN: &[usize] = &[
        16, 1, 56, 51, 46, 41, 6, 36, 31, 26, 21, 11, 30, 25, 55, 15, 50, 45, 5, 40, 20, 10, 35, 0,
        24, 39, 9, 59, 14, 29, 54, 49, 4, 44, 34, 19, 33, 8, 38, 28, 23, 18, 53, 48, 43, 3, 58, 13,
        7, 22, 42, 17, 2, 12, 37, 57, 27, 32, 52, 47,
    ];
    const GOLDEN_120_INCREASING: &[usize] = &[
        119, 118, 117, 116, 115, 114, 113, 112, 111, 110, 109, 108, 107, 106, 105, 104, 103, 102,
        101, 100, 99, 98, 97, 96, 95, 94, 93, 92, 91, 90, 89, 88, 87, 86, 85, 84, 83, 82, 81, 80,
        79, 78, 77, 76, 75, 74, 73, 72, 71, 70, 69, 68, 67, 66, 65, 64, 63, 62, 61, 60, 59, 58, 57,
        56, 55, 54, 53, 52, 51, 50, 49, 48, 47, 46, 45, 44, 43, 42, 41, 40, 39, 38, 37, 36, 35, 34,
        33, 32, 31, 30, 29, 28, 27, 26, 25, 24, 23, 22, 21, 20, 19, 18, 17, 16, 15, 14, 13, 12, 11,
        10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0,
    ];

    /// Go's ids of 400 sorted cases of `len` 0 to 300 (case `c` has
    /// `c * 37 % 301` elements), keys from a 64-bit LCG (`x = x *
    /// 6364136223846793005 + 1442695040888963407`, starting at 42; key
    /// `(x >> 33) % modulo`, NaN where it is 4), folded into FNV-1a 64.
    fn lcg_cases_hash(modulo: u64) -> u64 {
        let mut hash: u64 = 14695981039346656037;
        let mut x: u64 = 42;
        for case in 0..400 {
            let len = case * 37 % 301;
            let mut v: Vec<(f64, usize)> = (0..len)
                .map(|id| {
                    x = x
                        .wrapping_mul(6364136223846793005)
                        .wrapping_add(1442695040888963407);
                    let key = (x >> 33) % modulo;
                    (if key == 4 { f64::NAN } else { key as f64 }, id)
                })
                .collect();
            go_sort(&mut v, topk_less);
            for (_, id) in v {
                hash ^= id as u64;
                hash = hash.wrapping_mul(1099511628211);
            }
        }
        hash
    }

    #[test]
    fn matches_go_on_many_lengths() {
        // Printed by the same computation with Go 1.26's sort.Sort.
        assert_eq!(lcg_cases_hash(3), 0x2643cb9076ccfb9d, "ties only");
        assert_eq!(lcg_cases_hash(5), 0x7c0ba62a0a926a77, "ties and NaNs");
    }

    proptest! {
        // With a consistent comparison, the result is sorted and a
        // permutation of the input.
        #[test]
        fn sorts(v in proptest::collection::vec(0u8..6, 0..300)) {
            let mut s: Vec<(u8, usize)> = v.iter().copied().zip(0..).collect();
            go_sort(&mut s, |a, b| a.0 < b.0);
            prop_assert!(s.windows(2).all(|w| w[0].0 <= w[1].0));
            let mut ids: Vec<usize> = s.iter().map(|&(_, id)| id).collect();
            ids.sort_unstable();
            prop_assert_eq!(ids, (0..v.len()).collect::<Vec<_>>());
        }

        // A comparison that is not an order (NaNs in topk's) still ends
        // with a permutation, without panicking.
        #[test]
        fn permutes_with_nans(v in proptest::collection::vec(prop_oneof![0.0f64..3.0, Just(f64::NAN)], 0..300)) {
            let n = v.len();
            let mut s: Vec<(f64, usize)> = v.into_iter().zip(0..).collect();
            go_sort(&mut s, topk_less);
            let mut ids: Vec<usize> = s.iter().map(|&(_, id)| id).collect();
            ids.sort_unstable();
            prop_assert_eq!(ids, (0..n).collect::<Vec<_>>());
        }
    }
}
