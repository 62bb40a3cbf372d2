//! Go's `slices.SortFunc`, step for step.
//!
//! Prometheus sorts with Go's pattern-defeating quicksort (Go's
//! `slices/zsortanyfunc.go`: pdqsort without block partitioning). It is not
//! stable, and it copes with comparisons that are not a total order, such
//! as `exemplar.Compare` on NaN values (a NaN is neither below nor above
//! any value, so the labels decide): it still ends, with some definite
//! order. To put elements in exactly Prometheus' order, ties and NaNs
//! included, [`sort_func`] replays that algorithm — the same pivot
//! choices, partitions, pattern breaking and heapsort fallback, hence the
//! same swaps. Rust's own sorts would not do: they are stable where Go is
//! not (slices over 12 elements), and may panic on a comparison that is
//! not a total order. This one never panics (indices stay in bounds
//! whatever the comparison answers) and takes O(n log n) comparisons.
//!
//! `less(a, b)` stands for Go's `cmp(a, b) < 0`, the only use Go makes of
//! its comparison.

/// Sorts `v` as Go's `slices.SortFunc(v, cmp)` does, `less(a, b)` being
/// `cmp(a, b) < 0`.
pub(crate) fn sort_func<T, F: FnMut(&T, &T) -> bool>(v: &mut [T], mut less: F) {
    let n = v.len();
    pdqsort(v, 0, n, bits_len(n), &mut less);
}

/// Go's `bits.Len`: the number of bits needed to represent `n`.
fn bits_len(n: usize) -> usize {
    (usize::BITS - n.leading_zeros()) as usize
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Hint {
    Unknown,
    Increasing,
    Decreasing,
}

fn insertion_sort<T, F: FnMut(&T, &T) -> bool>(v: &mut [T], a: usize, b: usize, less: &mut F) {
    for i in a + 1..b {
        let mut j = i;
        while j > a && less(&v[j], &v[j - 1]) {
            v.swap(j, j - 1);
            j -= 1;
        }
    }
}

/// Restores the heap property of `v[first + lo .. first + hi]` from `lo` down.
fn sift_down<T, F: FnMut(&T, &T) -> bool>(
    v: &mut [T],
    lo: usize,
    hi: usize,
    first: usize,
    less: &mut F,
) {
    let mut root = lo;
    loop {
        let mut child = 2 * root + 1;
        if child >= hi {
            return;
        }
        if child + 1 < hi && less(&v[first + child], &v[first + child + 1]) {
            child += 1;
        }
        if !less(&v[first + root], &v[first + child]) {
            return;
        }
        v.swap(first + root, first + child);
        root = child;
    }
}

fn heap_sort<T, F: FnMut(&T, &T) -> bool>(v: &mut [T], a: usize, b: usize, less: &mut F) {
    let (first, hi) = (a, b - a);
    if hi == 0 {
        return;
    }
    // The greatest element on top, then popped to the end one by one.
    for i in (0..=(hi - 1) / 2).rev() {
        sift_down(v, i, hi, first, less);
    }
    for i in (0..hi).rev() {
        v.swap(first, first + i);
        sift_down(v, 0, i, first, less);
    }
}

/// Sorts `v[a..b]`; `limit` is how many very unbalanced partitions are
/// allowed before falling back to heapsort.
fn pdqsort<T, F: FnMut(&T, &T) -> bool>(
    v: &mut [T],
    mut a: usize,
    mut b: usize,
    mut limit: usize,
    less: &mut F,
) {
    const MAX_INSERTION: usize = 12;
    let mut was_balanced = true;
    let mut was_partitioned = true;
    loop {
        let length = b - a;
        if length <= MAX_INSERTION {
            insertion_sort(v, a, b, less);
            return;
        }
        if limit == 0 {
            heap_sort(v, a, b, less);
            return;
        }
        if !was_balanced {
            break_patterns(v, a, b);
            limit -= 1;
        }
        let (mut pivot, mut hint) = choose_pivot(v, a, b, less);
        if hint == Hint::Decreasing {
            v[a..b].reverse();
            // The pivot was pivot-a after the start; now it is as far
            // before the end.
            pivot = (b - 1) - (pivot - a);
            hint = Hint::Increasing;
        }
        // Probably sorted already.
        if was_balanced
            && was_partitioned
            && hint == Hint::Increasing
            && partial_insertion_sort(v, a, b, less)
        {
            return;
        }
        // Nothing here is below the element before the range (the pivot of
        // an earlier partition): many duplicates likely; set apart the
        // elements equal to the pivot.
        if a > 0 && !less(&v[a - 1], &v[pivot]) {
            a = partition_equal(v, a, b, pivot, less);
            continue;
        }
        let (mid, already_partitioned) = partition(v, a, b, pivot, less);
        was_partitioned = already_partitioned;
        let (left, right) = (mid - a, b - mid);
        let balance_threshold = length / 8;
        if left < right {
            was_balanced = left >= balance_threshold;
            pdqsort(v, a, mid, limit, less);
            a = mid + 1;
        } else {
            was_balanced = right >= balance_threshold;
            pdqsort(v, mid + 1, b, limit, less);
            b = mid;
        }
    }
}

/// One quicksort partition of `v[a..b]` around `v[pivot]`: returns where
/// the pivot ends (below it only elements less than it, from it on none)
/// and whether nothing had to move.
fn partition<T, F: FnMut(&T, &T) -> bool>(
    v: &mut [T],
    a: usize,
    b: usize,
    pivot: usize,
    less: &mut F,
) -> (usize, bool) {
    v.swap(a, pivot);
    // i and j bound (inclusively) what is left to partition; i > a, so j
    // never goes below a (and never underflows).
    let (mut i, mut j) = (a + 1, b - 1);
    while i <= j && less(&v[i], &v[a]) {
        i += 1;
    }
    while i <= j && !less(&v[j], &v[a]) {
        j -= 1;
    }
    if i > j {
        v.swap(j, a);
        return (j, true);
    }
    v.swap(i, j);
    i += 1;
    j -= 1;
    loop {
        while i <= j && less(&v[i], &v[a]) {
            i += 1;
        }
        while i <= j && !less(&v[j], &v[a]) {
            j -= 1;
        }
        if i > j {
            break;
        }
        v.swap(i, j);
        i += 1;
        j -= 1;
    }
    v.swap(j, a);
    (j, false)
}

/// Partitions `v[a..b]` (nothing in it less than `v[pivot]`) into the
/// elements equal to the pivot, then the greater ones; returns where the
/// greater ones start.
fn partition_equal<T, F: FnMut(&T, &T) -> bool>(
    v: &mut [T],
    a: usize,
    b: usize,
    pivot: usize,
    less: &mut F,
) -> usize {
    v.swap(a, pivot);
    let (mut i, mut j) = (a + 1, b - 1);
    loop {
        while i <= j && !less(&v[a], &v[i]) {
            i += 1;
        }
        while i <= j && less(&v[a], &v[j]) {
            j -= 1;
        }
        if i > j {
            return i;
        }
        v.swap(i, j);
        i += 1;
        j -= 1;
    }
}

/// Moves a few out-of-order elements into place; true if `v[a..b]` ends
/// up sorted.
fn partial_insertion_sort<T, F: FnMut(&T, &T) -> bool>(
    v: &mut [T],
    a: usize,
    b: usize,
    less: &mut F,
) -> bool {
    const MAX_STEPS: usize = 5;
    const SHORTEST_SHIFTING: usize = 50;
    let mut i = a + 1;
    for _ in 0..MAX_STEPS {
        while i < b && !less(&v[i], &v[i - 1]) {
            i += 1;
        }
        if i == b {
            return true;
        }
        if b - a < SHORTEST_SHIFTING {
            return false;
        }
        v.swap(i, i - 1);
        // The smaller one to the left. (Go bounds this by the start of the
        // whole slice, not by a; so does this.)
        if i - a >= 2 {
            let mut j = i - 1;
            while j >= 1 {
                if !less(&v[j], &v[j - 1]) {
                    break;
                }
                v.swap(j, j - 1);
                j -= 1;
            }
        }
        // The greater one to the right.
        if b - i >= 2 {
            let mut j = i + 1;
            while j < b {
                if !less(&v[j], &v[j - 1]) {
                    break;
                }
                v.swap(j, j - 1);
                j += 1;
            }
        }
    }
    false
}

/// Swaps three elements around the middle of `v[a..b]` with pseudo-random
/// others (Go's xorshift seeded with the length), against patterns that
/// make partitions unbalanced.
fn break_patterns<T>(v: &mut [T], a: usize, b: usize) {
    let length = b - a;
    if length < 8 {
        return;
    }
    let mut random = length as u64;
    let modulus = 1usize << bits_len(length);
    let mid = a + (length / 4) * 2;
    for idx in mid - 1..=mid + 1 {
        random ^= random << 13;
        random ^= random >> 7;
        random ^= random << 17;
        let mut other = (random as usize) & (modulus - 1);
        if other >= length {
            other -= length;
        }
        v.swap(idx, a + other);
    }
}

/// Picks a pivot in `v[a..b]`: fixed below 8 elements, the median of three
/// below 50, Tukey's ninther from 50 on. The hint says whether the probes
/// were all in order (increasing) or all reversed (decreasing).
fn choose_pivot<T, F: FnMut(&T, &T) -> bool>(
    v: &mut [T],
    a: usize,
    b: usize,
    less: &mut F,
) -> (usize, Hint) {
    const SHORTEST_NINTHER: usize = 50;
    const MAX_SWAPS: usize = 4 * 3;
    let l = b - a;
    let mut swaps = 0;
    let mut i = a + l / 4;
    let mut j = a + l / 4 * 2;
    let mut k = a + l / 4 * 3;
    if l >= 8 {
        if l >= SHORTEST_NINTHER {
            i = median(v, i - 1, i, i + 1, &mut swaps, less);
            j = median(v, j - 1, j, j + 1, &mut swaps, less);
            k = median(v, k - 1, k, k + 1, &mut swaps, less);
        }
        j = median(v, i, j, k, &mut swaps, less);
    }
    let hint = match swaps {
        0 => Hint::Increasing,
        MAX_SWAPS => Hint::Decreasing,
        _ => Hint::Unknown,
    };
    (j, hint)
}

/// `(a, b)` or `(b, a)`, whichever puts the smaller element first
/// (counting a swap for the latter).
fn order2<T, F: FnMut(&T, &T) -> bool>(
    v: &[T],
    a: usize,
    b: usize,
    swaps: &mut usize,
    less: &mut F,
) -> (usize, usize) {
    if less(&v[b], &v[a]) {
        *swaps += 1;
        (b, a)
    } else {
        (a, b)
    }
}

/// The index, among `a`, `b` and `c`, of the median element.
fn median<T, F: FnMut(&T, &T) -> bool>(
    v: &[T],
    a: usize,
    b: usize,
    c: usize,
    swaps: &mut usize,
    less: &mut F,
) -> usize {
    let (a, b) = order2(v, a, b, swaps, less);
    let (b, _c) = order2(v, b, c, swaps, less);
    let (_a, b) = order2(v, a, b, swaps, less);
    b
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Go's results: `testdata/gosort/main.go` (see there) sorted the same
    /// inputs with Go's own code and printed a hash of each order.
    const GO: &str = include_str!("../testdata/gosort/go_orders.txt");

    /// splitmix64, as the Go program has it.
    struct SplitMix(u64);

    impl SplitMix {
        fn next(&mut self) -> u64 {
            self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
            let mut z = self.0;
            z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
            z ^ (z >> 31)
        }
    }

    /// The Go program's inputs: (key, id) pairs, keys with duplicates,
    /// runs, and NaNs (pattern 4).
    fn input(n: usize, pattern: u64) -> Vec<(f64, u32)> {
        let mut r = SplitMix(n as u64 * 31 + pattern);
        let mut v: Vec<(f64, u32)> = (0..n)
            .map(|i| {
                let k = match pattern {
                    0 => (r.next() % (n as u64 / 3 + 1)) as f64,
                    1 => (i / 2) as f64,
                    2 => (n - i) as f64,
                    3 => 1.0,
                    4 => {
                        if r.next().is_multiple_of(4) {
                            f64::NAN
                        } else {
                            (r.next() % 10) as f64
                        }
                    }
                    5 => (i % 7) as f64,
                    6 => i as f64,
                    _ => (r.next() % 1_000_000) as f64,
                };
                (k, i as u32)
            })
            .collect();
        if pattern == 6 && n > 1 {
            for _ in 0..3 {
                let a = (r.next() % n as u64) as usize;
                let b = (r.next() % n as u64) as usize;
                v.swap(a, b);
            }
        }
        v
    }

    fn fnv(v: &[(f64, u32)]) -> u64 {
        let mut h = 0xcbf2_9ce4_8422_2325u64;
        for (_, id) in v {
            for b in id.to_le_bytes() {
                h ^= u64::from(b);
                h = h.wrapping_mul(0x100_0000_01b3);
            }
        }
        h
    }

    #[test]
    fn orders_like_go() {
        let mut n_cases = 0;
        for line in GO.lines().filter(|l| !l.starts_with('#') && !l.is_empty()) {
            let f: Vec<&str> = line.split_whitespace().collect();
            let (n, pattern, limit): (usize, u64, i64) = (
                f[0].parse().unwrap(),
                f[1].parse().unwrap(),
                f[2].parse().unwrap(),
            );
            let want = u64::from_str_radix(f[3].trim_start_matches("0x"), 16).unwrap();
            let mut v = input(n, pattern);
            let mut less = |a: &(f64, u32), b: &(f64, u32)| a.0 < b.0;
            if limit < 0 {
                sort_func(&mut v, less);
            } else {
                // Go's internal entry point with a smaller limit: reaches
                // the pattern breaking and the heapsort fallback.
                pdqsort(&mut v, 0, n, limit as usize, &mut less);
            }
            assert_eq!(fnv(&v), want, "{line}");
            if pattern != 4 {
                assert!(v.windows(2).all(|w| w[0].0 <= w[1].0), "{line}");
            }
            n_cases += 1;
        }
        assert!(n_cases >= 200, "{n_cases}");
    }

    #[test]
    fn small_slices_are_stable() {
        // Up to 12 elements Go sorts by insertion: equal elements keep
        // their order.
        let mut v = [(2, 'a'), (1, 'b'), (2, 'c'), (1, 'd'), (0, 'e')];
        sort_func(&mut v, |a, b| a.0 < b.0);
        assert_eq!(v, [(0, 'e'), (1, 'b'), (1, 'd'), (2, 'a'), (2, 'c')]);
    }

    #[test]
    fn any_comparison_terminates_in_bounds() {
        // Comparisons that are no order at all: answers from a generator.
        for n in [0, 1, 13, 50, 51, 200, 1000] {
            let mut r = SplitMix(n as u64);
            let mut v: Vec<usize> = (0..n).collect();
            sort_func(&mut v, |_, _| r.next().is_multiple_of(3));
            v.sort_unstable();
            assert!(v.iter().copied().eq(0..n));
            let mut v: Vec<usize> = (0..n).collect();
            sort_func(&mut v, |_, _| true);
            v.sort_unstable();
            assert!(v.iter().copied().eq(0..n));
        }
    }
}
