//! Reducing the resolution of native histograms: merging the buckets of an
//! exponential schema into those of a lower (coarser) one, as Prometheus'
//! `model/histogram` `ReduceResolution` does, for integer histograms (whose
//! bucket counts are deltas) and float histograms (absolute counts) alike.
//!
//! Bucket `i` of schema `s` lands in bucket `((i - 1) >> (s - t)) + 1` of
//! schema `t`, computed in `i32` as Prometheus does (Go's `>>` by 32 or
//! more fills with the sign). Buckets are walked in span order; each target
//! bucket is the sum of the absolute counts merged into it, an integer
//! histogram's re-encoded as deltas. A target bucket below the previous one
//! (possible only when indices wrap around) is dropped, as in Prometheus.
//! Empty buckets stay (as count 0), as Prometheus keeps them.
//!
//! Where this is applied: Prometheus v3.16 reduces the schemas it reserves
//! for finer resolution (9..=52, [`is_reserved_finer_schema`]) to 8 when it
//! decodes WAL records, receives remote write and reads remote-read
//! responses and chunks, both kinds of histogram keeping their kind
//! ([`ReduceResolution::reduce_reserved_schema`]).

use crate::histogram::{
    is_custom_buckets_schema, FloatHistogram, Histogram, HistogramError, HistogramErrorKind, Span,
    EXPONENTIAL_SCHEMA_MAX, EXPONENTIAL_SCHEMA_MAX_RESERVED,
};

/// Whether `schema` is one Prometheus reserves for exponential buckets finer
/// than it stores (9..=52): histograms of it are reduced to schema 8.
pub fn is_reserved_finer_schema(schema: i32) -> bool {
    schema > EXPONENTIAL_SCHEMA_MAX && schema <= EXPONENTIAL_SCHEMA_MAX_RESERVED
}

/// How one kind of histogram stores its bucket counts.
pub trait BucketCount: Copy {
    /// The count 0.
    const ZERO: Self;
    /// The absolute count of a bucket, given the previous bucket's absolute
    /// count and this bucket's stored value.
    fn absolute(previous: Self, stored: Self) -> Self;
    /// The stored value of a bucket of absolute count `absolute` that
    /// follows one of absolute count `previous`.
    fn stored(previous: Self, absolute: Self) -> Self;
    /// `a + b`.
    fn add(a: Self, b: Self) -> Self;
}

/// Integer histograms: deltas (the first absolute), wrapping as Go's
/// `int64` does.
impl BucketCount for i64 {
    const ZERO: i64 = 0;
    fn absolute(previous: i64, stored: i64) -> i64 {
        previous.wrapping_add(stored)
    }
    fn stored(previous: i64, absolute: i64) -> i64 {
        absolute.wrapping_sub(previous)
    }
    fn add(a: i64, b: i64) -> i64 {
        a.wrapping_add(b)
    }
}

/// Float histograms: absolute counts.
impl BucketCount for f64 {
    const ZERO: f64 = 0.0;
    fn absolute(_previous: f64, stored: f64) -> f64 {
        stored
    }
    fn stored(_previous: f64, absolute: f64) -> f64 {
        absolute
    }
    fn add(a: f64, b: f64) -> f64 {
        a + b
    }
}

/// The index in exponential schema `to` of the bucket of index `idx` in the
/// higher schema `from`.
pub fn coarser_index(idx: i32, from: i32, to: i32) -> i32 {
    let below = idx.wrapping_sub(1);
    let shift = u32::try_from(from.wrapping_sub(to)).unwrap_or(0);
    let shifted = below
        .checked_shr(shift)
        .unwrap_or(if below < 0 { -1 } else { 0 });
    shifted.wrapping_add(1)
}

/// One side's spans and buckets of exponential schema `from` merged into
/// the lower schema `to`. Fails, with Prometheus' texts, where the spans do
/// not fit the buckets in a way the merge notices: a span after the first
/// with a negative offset, or fewer or more buckets than the spans cover.
pub fn reduce_buckets<C: BucketCount>(
    spans: &[Span],
    buckets: &[C],
    from: i32,
    to: i32,
) -> Result<(Vec<Span>, Vec<C>), HistogramError> {
    let mut out_spans: Vec<Span> = Vec::new();
    let mut out: Vec<C> = Vec::with_capacity(buckets.len());
    let mut idx: i32 = 0;
    let mut pos = 0usize;
    // The absolute counts of the last bucket merged and of the last target
    // bucket, and that bucket's index.
    let (mut last_absolute, mut last_target_absolute) = (C::ZERO, C::ZERO);
    let mut last_target: i32 = 0;
    for (n, span) in spans.iter().enumerate() {
        if n > 0 && span.offset < 0 {
            let detail = format!("span number {} with offset {}", n + 1, span.offset);
            return Err(HistogramError::new(
                HistogramErrorKind::SpanNegativeOffset,
                Some(detail),
            ));
        }
        idx = idx.wrapping_add(span.offset);
        for _ in 0..span.length {
            let Some(&stored) = buckets.get(pos) else {
                let detail = format!("have {} buckets but spans need more", buckets.len());
                return Err(HistogramError::new(
                    HistogramErrorKind::SpansBucketsMismatch,
                    Some(detail),
                ));
            };
            let target = coarser_index(idx, from, to);
            let absolute = C::absolute(last_absolute, stored);
            if out_spans.is_empty() {
                out_spans.push(Span {
                    offset: target,
                    length: 1,
                });
                out.push(absolute);
                (last_target, last_target_absolute) = (target, absolute);
                last_absolute = absolute;
            } else if target == last_target {
                if let Some(merged) = out.last_mut() {
                    *merged = C::add(*merged, absolute);
                }
                last_target_absolute = C::add(last_target_absolute, absolute);
                last_absolute = absolute;
            } else if last_target.wrapping_add(1) <= target {
                let gap = target.wrapping_sub(last_target).wrapping_sub(1);
                match out_spans.last_mut() {
                    Some(span) if gap == 0 => span.length += 1,
                    _ => out_spans.push(Span {
                        offset: gap,
                        length: 1,
                    }),
                }
                out.push(C::stored(last_target_absolute, absolute));
                (last_target, last_target_absolute) = (target, absolute);
                last_absolute = absolute;
            }
            idx = idx.wrapping_add(1);
            pos += 1;
        }
    }
    if pos != buckets.len() {
        let detail = format!("spans need {pos} buckets, have {} buckets", buckets.len());
        return Err(HistogramError::new(
            HistogramErrorKind::SpansBucketsMismatch,
            Some(detail),
        ));
    }
    Ok((out_spans, out))
}

/// Whether a histogram of `from` has anything to reduce to `to`: both
/// exponential, `to` lower.
fn reduces(from: i32, to: i32) -> bool {
    !is_custom_buckets_schema(from) && !is_custom_buckets_schema(to) && to < from
}

/// One side of a histogram: its spans and bucket counts.
pub type Side<'a, C> = (&'a mut Vec<Span>, &'a mut Vec<C>);

/// Reducing the resolution of either kind of histogram.
pub trait ReduceResolution {
    /// How its buckets count.
    type Count: BucketCount;

    /// Its schema and its positive and negative sides.
    fn schema_and_sides(&mut self) -> (&mut i32, Side<'_, Self::Count>, Side<'_, Self::Count>);

    /// The histogram with its buckets merged into those of the lower
    /// exponential `schema` (Prometheus' `ReduceResolution`), with
    /// Prometheus' checks of the layout (see [`reduce_buckets`]); unchanged
    /// when it has custom buckets, when `schema` is not lower, and on an
    /// error. (A float histogram's [`FloatHistogram::reduce_resolution`]
    /// is the arithmetic's, on histograms already checked.)
    fn try_reduce_resolution(&mut self, schema: i32) -> Result<(), HistogramError> {
        let (current, positive, negative) = self.schema_and_sides();
        if !reduces(*current, schema) {
            return Ok(());
        }
        let reduced_positive = reduce_buckets(positive.0, positive.1, *current, schema)?;
        let reduced_negative = reduce_buckets(negative.0, negative.1, *current, schema)?;
        (*positive.0, *positive.1) = reduced_positive;
        (*negative.0, *negative.1) = reduced_negative;
        *current = schema;
        Ok(())
    }

    /// What Prometheus does with a histogram of a newer writer: a schema
    /// of 9..=52 ([`is_reserved_finer_schema`]) reduced to 8, the kind
    /// kept; any other left as it is.
    fn reduce_reserved_schema(&mut self) -> Result<(), HistogramError> {
        let (schema, _, _) = self.schema_and_sides();
        if !is_reserved_finer_schema(*schema) {
            return Ok(());
        }
        self.try_reduce_resolution(EXPONENTIAL_SCHEMA_MAX)
    }
}

/// The one implementation, for both kinds (the same fields, other counts).
macro_rules! reduce_resolution_for {
    ($histogram:ty, $count:ty) => {
        impl ReduceResolution for $histogram {
            type Count = $count;

            fn schema_and_sides(&mut self) -> (&mut i32, Side<'_, $count>, Side<'_, $count>) {
                (
                    &mut self.schema,
                    (&mut self.positive_spans, &mut self.positive_buckets),
                    (&mut self.negative_spans, &mut self.negative_buckets),
                )
            }
        }
    };
}

reduce_resolution_for!(Histogram, i64);
reduce_resolution_for!(FloatHistogram, f64);

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use proptest::prelude::*;

    use super::*;
    use crate::histogram::CounterResetHint;
    use crate::histogram_record::{float_record, int_record, parse_float_record, parse_int_record};

    fn spans(v: &[(i32, u32)]) -> Vec<Span> {
        v.iter()
            .map(|&(offset, length)| Span { offset, length })
            .collect()
    }

    /// Prometheus' results (`interop/cmd/promreduce`), line by line: the
    /// same histogram, or the same error text, bit for bit.
    #[test]
    fn reductions_are_prometheus_reductions() {
        let golden = include_str!("../testdata/prometheus_reduce_resolution.txt");
        let (mut ints, mut floats, mut errors) = (0, 0, 0);
        for (n, line) in golden.lines().enumerate() {
            let mut f = line.split('\t');
            let (Some(target), Some(input), Some(want), None) =
                (f.next(), f.next(), f.next(), f.next())
            else {
                panic!("line {}: want 3 tab-separated fields", n + 1);
            };
            let target: i32 = target.parse().unwrap();
            let got = if input.starts_with('H') {
                ints += 1;
                let mut h = parse_int_record(input).unwrap();
                h.try_reduce_resolution(target).map(|()| int_record(&h))
            } else {
                floats += 1;
                let mut h = parse_float_record(input).unwrap();
                h.try_reduce_resolution(target).map(|()| float_record(&h))
            };
            let got = got.unwrap_or_else(|e| {
                errors += 1;
                format!("error: {e}")
            });
            assert_eq!(got, want, "line {}", n + 1);
        }
        assert!(
            ints > 200 && floats > 200 && errors >= 6,
            "{ints} {floats} {errors}"
        );
    }

    #[test]
    fn deltas_are_reencoded() {
        // Schema 10 to 8: index i goes to ((i - 1) >> 2) + 1, so 1..=4
        // merge into 1 and 5 goes to 2.
        let mut h = Histogram {
            schema: 10,
            count: 15,
            positive_spans: spans(&[(1, 5)]),
            positive_buckets: vec![1, 1, 1, 1, 1], // 1 2 3 4 5
            ..Histogram::default()
        };
        h.reduce_reserved_schema().unwrap();
        assert_eq!(h.schema, 8);
        assert_eq!(h.positive_spans, spans(&[(1, 2)]));
        // Absolute 10 then 5: deltas 10, -5.
        assert_eq!(h.positive_buckets, [10, -5]);
        assert_eq!(h.validate(), Ok(()));
    }

    #[test]
    fn buckets_across_a_gap_merge_and_gaps_shrink() {
        // Schema 52 to 8: a shift of 44, so every index in 1..=2^44 lands
        // in 1 and -3 in 0, however far apart.
        let mut h = FloatHistogram {
            schema: 52,
            count: 3.0,
            negative_spans: spans(&[(-3, 1), (100, 1)]),
            negative_buckets: vec![1.0, 2.0],
            ..FloatHistogram::default()
        };
        h.reduce_reserved_schema().unwrap();
        assert_eq!(h.schema, 8);
        assert_eq!(h.negative_spans, spans(&[(0, 2)]));
        assert_eq!(h.negative_buckets, [1.0, 2.0]);

        // Two target buckets apart stay apart, in a second span.
        let mut h = Histogram {
            schema: 9,
            positive_spans: spans(&[(1, 2), (4, 1)]),
            positive_buckets: vec![3, -1, 4], // 3 2 6 at 1 2 7
            ..Histogram::default()
        };
        h.try_reduce_resolution(8).unwrap();
        assert_eq!(h.positive_spans, spans(&[(1, 1), (2, 1)]));
        assert_eq!(h.positive_buckets, [5, 1]); // 5 at 1, 6 at 4
    }

    #[test]
    fn what_is_not_reduced_is_left_alone() {
        for schema in [
            8,
            0,
            -4,
            -9,
            53,
            100,
            crate::histogram::CUSTOM_BUCKETS_SCHEMA,
        ] {
            let mut h = Histogram {
                schema,
                // A layout the reduction would refuse.
                positive_spans: spans(&[(0, 1), (-1, 1)]),
                ..Histogram::default()
            };
            let before = h.clone();
            h.reduce_reserved_schema().unwrap();
            assert_eq!(h, before);
            let mut f = before.to_float();
            let before = f.clone();
            f.reduce_reserved_schema().unwrap();
            assert_eq!(f, before);
        }
        // Not lower, or custom buckets either side: unchanged.
        let mut h = Histogram {
            schema: 3,
            positive_spans: spans(&[(0, 1)]),
            positive_buckets: vec![1],
            ..Histogram::default()
        };
        let before = h.clone();
        for target in [3, 4, crate::histogram::CUSTOM_BUCKETS_SCHEMA] {
            h.try_reduce_resolution(target).unwrap();
            assert_eq!(h, before);
        }
    }

    #[test]
    fn a_refused_layout_leaves_the_histogram_unchanged() {
        let mut h = Histogram {
            schema: 12,
            positive_spans: spans(&[(0, 2)]),
            positive_buckets: vec![1, 1],
            negative_spans: spans(&[(0, 3)]),
            negative_buckets: vec![1],
            ..Histogram::default()
        };
        let before = h.clone();
        let err = h.reduce_reserved_schema().unwrap_err();
        assert_eq!(err.kind, HistogramErrorKind::SpansBucketsMismatch);
        assert_eq!(h, before);
    }

    /// An integer histogram of exponential `schema` whose absolute counts
    /// stay well within a double's integers.
    fn int_histogram(schema: i32) -> impl Strategy<Value = Histogram> {
        let side = || {
            (
                -2000i32..2000,
                prop::collection::vec((0i32..50, 0u32..8), 0..5),
                prop::collection::vec(0i64..1_000_000, 0..40),
            )
                .prop_map(|(first, rest, counts)| {
                    let mut spans: Vec<Span> = rest
                        .into_iter()
                        .map(|(offset, length)| Span { offset, length })
                        .collect();
                    if let Some(s) = spans.first_mut() {
                        s.offset = first;
                    }
                    let need = spans.iter().map(|s| s.length as usize).sum::<usize>();
                    let mut counts = counts;
                    counts.resize(need, 7);
                    let deltas = counts
                        .iter()
                        .scan(0i64, |prev, &c| {
                            let d = c - *prev;
                            *prev = c;
                            Some(d)
                        })
                        .collect::<Vec<_>>();
                    (spans, deltas)
                })
        };
        (side(), side(), 0u64..100, 0u8..4).prop_map(move |((ps, pb), (ns, nb), zero, hint)| {
            Histogram {
                counter_reset_hint: CounterResetHint::from_bits(hint),
                schema,
                zero_threshold: 0.001,
                zero_count: zero,
                count: 0,
                sum: 1.5,
                positive_spans: ps,
                negative_spans: ns,
                positive_buckets: pb,
                negative_buckets: nb,
                custom_values: Vec::new(),
            }
        })
    }

    fn schemas() -> impl Strategy<Value = (i32, i32)> {
        (-3i32..=52).prop_flat_map(|from| (Just(from), -4i32..from))
    }

    proptest! {
        /// Reducing an integer histogram and then converting it to float
        /// gives what converting and then reducing gives.
        #[test]
        fn integer_reduction_commutes_with_conversion(
            (h, to) in schemas().prop_flat_map(|(from, to)| (int_histogram(from), Just(to)))
        ) {
            let mut reduced = h.clone();
            reduced.try_reduce_resolution(to).unwrap();
            let mut converted = h.to_float();
            converted.try_reduce_resolution(to).unwrap();
            prop_assert_eq!(reduced.to_float(), converted.clone());
            // The arithmetic's reduction agrees on checked layouts.
            prop_assert_eq!(h.to_float().copy_to_schema(to), converted);
        }

        /// Reduction keeps the total of each side, and a valid histogram
        /// valid.
        #[test]
        fn reduction_keeps_counts(
            (h, to) in schemas().prop_flat_map(|(from, to)| (int_histogram(from), Just(to)))
        ) {
            let total = |b: &[i64]| b.iter().scan(0i64, |a, &d| { *a += d; Some(*a) }).sum::<i64>();
            let mut h = h;
            let count = h.zero_count as i64 + total(&h.positive_buckets) + total(&h.negative_buckets);
            h.count = count as u64;
            h.schema = h.schema.min(8);
            let to = to.min(h.schema - 1).max(-4);
            prop_assume!(to < h.schema);
            prop_assert_eq!(h.validate(), Ok(()));
            let mut r = h.clone();
            r.try_reduce_resolution(to).unwrap();
            prop_assert_eq!(total(&r.positive_buckets), total(&h.positive_buckets));
            prop_assert_eq!(total(&r.negative_buckets), total(&h.negative_buckets));
            prop_assert_eq!(r.validate(), Ok(()));
        }
    }
}
