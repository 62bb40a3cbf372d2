//! Empty buckets cut out of a scraped native histogram, as Prometheus'
//! parser does before handing it out (`Histogram.Compact(0)`), with its
//! results also for layouts the head later refuses (spans after the first
//! with a negative offset, spans that do not cover the buckets exactly):
//! a span of offset 0 after the first is merged into the one before, a
//! span of length 0 is dropped (its offset moving to the next), and every
//! run of empty buckets is cut, splitting its span. Integer histograms
//! hold deltas: a bucket is empty when its running sum is 0, and the
//! delta after a cut run takes the run's deltas in. Integer arithmetic
//! wraps, as Go's does.

use ferrite_model::Span;

/// A bucket count: an integer delta or a float count.
pub(super) trait Count: Copy {
    /// Whether a bucket of this absolute count is empty.
    fn is_zero(self) -> bool;
    /// `a + b` (wrapping for integers).
    fn plus(self, b: Self) -> Self;
    /// `-a` (wrapping for integers).
    fn negated(self) -> Self;
    /// 0.
    const ZERO: Self;
}

impl Count for i64 {
    fn is_zero(self) -> bool {
        self == 0
    }
    fn plus(self, b: i64) -> i64 {
        self.wrapping_add(b)
    }
    fn negated(self) -> i64 {
        self.wrapping_neg()
    }
    const ZERO: i64 = 0;
}

impl Count for f64 {
    fn is_zero(self) -> bool {
        self == 0.0
    }
    fn plus(self, b: f64) -> f64 {
        self + b
    }
    fn negated(self) -> f64 {
        -self
    }
    const ZERO: f64 = 0.0;
}

/// Compacts one side of a histogram in place; `deltas`: the buckets are
/// an integer histogram's deltas.
pub(super) fn compact<C: Count>(buckets: &mut Vec<C>, spans: &mut Vec<Span>, deltas: bool) {
    let absolute = |running: C, b: C| if deltas { running.plus(b) } else { b };
    // Nothing to do without an empty bucket, a span of offset 0 or less
    // (the first span's too) or a span of length 0.
    let mut running = C::ZERO;
    let has_empty = buckets.iter().any(|&b| {
        running = absolute(running, b);
        running.is_zero()
    });
    if !has_empty && spans.iter().all(|s| s.offset > 0 && s.length > 0) {
        return;
    }

    // Spans of offset 0 after the first join the one before.
    if spans.len() > 1 {
        let mut w = 0;
        for i in 1..spans.len() {
            let s = spans[i];
            if s.offset == 0 {
                spans[w].length = spans[w].length.wrapping_add(s.length);
                continue;
            }
            w += 1;
            spans[w] = s;
        }
        spans.truncate(w + 1);
    }
    // Spans of length 0 go, their offset to the next one.
    let mut w = 0;
    for i in 0..spans.len() {
        let s = spans[i];
        if s.length == 0 {
            if let Some(next) = spans.get_mut(i + 1) {
                next.offset = next.offset.wrapping_add(s.offset);
            }
            continue;
        }
        spans[w] = s;
        w += 1;
    }
    spans.truncate(w);
    if spans.is_empty() {
        buckets.clear();
        return;
    }

    // Cut out every run of empty buckets.
    let (mut ib, mut is, mut pos) = (0usize, 0usize, 0u32);
    let mut current = C::ZERO;
    while ib < buckets.len() && is < spans.len() {
        current = absolute(current, buckets[ib]);
        // The empty buckets from here to the end of the span (later ones
        // are judged by their stored value: deltas after an empty bucket
        // are absolute counts).
        let mut empty = 0usize;
        let mut abs = current;
        while (empty as u32).wrapping_add(pos) < spans[is].length && abs.is_zero() {
            empty += 1;
            match buckets.get(ib + empty) {
                Some(&b) => abs = b,
                None => break,
            }
        }
        if empty == 0 {
            ib += 1;
            pos += 1;
            if pos >= spans[is].length {
                pos = 0;
                is += 1;
            }
            continue;
        }
        if deltas && ib + empty < buckets.len() {
            current = buckets[ib].negated();
            buckets[ib + empty] = buckets[ib + empty].plus(buckets[ib]);
        }
        buckets.drain(ib..ib + empty);
        let n = empty as u32;
        if pos == 0 {
            if empty == spans[is].length as usize {
                // The whole span was empty.
                let offset = spans[is].offset;
                spans.remove(is);
                if let Some(next) = spans.get_mut(is) {
                    next.offset = next.offset.wrapping_add(offset).wrapping_add(n as i32);
                }
                continue;
            }
            spans[is].length = spans[is].length.wrapping_sub(n);
            spans[is].offset = spans[is].offset.wrapping_add(n as i32);
            continue;
        }
        // In the middle or at the end of the span: split it.
        let rest = spans[is].length.wrapping_sub(pos).wrapping_sub(n);
        spans[is].length = pos;
        is += 1;
        pos = 0;
        if rest == 0 {
            if let Some(next) = spans.get_mut(is) {
                next.offset = next.offset.wrapping_add(n as i32);
            }
            continue;
        }
        spans.insert(
            is,
            Span {
                offset: n as i32,
                length: rest,
            },
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spans(v: &[(i32, u32)]) -> Vec<Span> {
        v.iter()
            .map(|&(offset, length)| Span { offset, length })
            .collect()
    }

    #[test]
    fn empty_buckets_are_cut_and_spans_split() {
        // Absolute counts 1 0 0 2 | 0 3: deltas 1 -1 0 2 -2 3.
        let mut b = vec![1i64, -1, 0, 2, -2, 3];
        let mut s = spans(&[(0, 4), (2, 2)]);
        compact(&mut b, &mut s, true);
        assert_eq!(s, spans(&[(0, 1), (2, 1), (3, 1)]));
        assert_eq!(b, vec![1, 1, 1]);
        let mut f = vec![1.0, 0.0, 0.0, 2.0, 0.0, 3.0];
        let mut s = spans(&[(0, 4), (2, 2)]);
        compact(&mut f, &mut s, false);
        assert_eq!(s, spans(&[(0, 1), (2, 1), (3, 1)]));
        assert_eq!(f, vec![1.0, 2.0, 3.0]);
    }

    #[test]
    fn zero_offsets_and_lengths_merge() {
        let mut b = vec![1.0, 2.0, 3.0];
        let mut s = spans(&[(-2, 1), (0, 1), (4, 0), (1, 1)]);
        compact(&mut b, &mut s, false);
        assert_eq!(s, spans(&[(-2, 2), (5, 1)]));
        assert_eq!(b, vec![1.0, 2.0, 3.0]);
        // All spans of length 0: no buckets remain.
        let mut b = vec![1i64];
        let mut s = spans(&[(1, 0)]);
        compact(&mut b, &mut s, true);
        assert!(s.is_empty() && b.is_empty());
    }

    #[test]
    fn nothing_to_do_is_left_alone() {
        let mut b = vec![1i64, 1];
        let mut s = spans(&[(3, 2)]);
        compact(&mut b, &mut s, true);
        assert_eq!((b, s), (vec![1, 1], spans(&[(3, 2)])));
    }
}
