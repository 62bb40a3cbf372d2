//! A stable counting sort by a small integer key, for the loops that take
//! many items grouped by series slot (replay) or by lock stripe (series
//! lookup).

/// Counting sort of `items` by their slot (below `slots`) into `grouped`,
/// stable: the items of one slot keep their order. `counts` is scratch.
pub(crate) fn group_by_slot<T: Copy>(
    items: &[T],
    slot: impl Fn(&T) -> u32,
    slots: usize,
    counts: &mut Vec<u32>,
    grouped: &mut Vec<T>,
) {
    counts.clear();
    counts.resize(slots + 1, 0);
    for m in items {
        counts[slot(m) as usize + 1] += 1;
    }
    for k in 1..counts.len() {
        counts[k] += counts[k - 1];
    }
    grouped.clear();
    grouped.extend_from_slice(items);
    for &m in items {
        let at = &mut counts[slot(&m) as usize];
        grouped[*at as usize] = m;
        *at += 1;
    }
}
