//! Buffers that travel from the decoders to the append workers and back.
//!
//! Replay decodes millions of samples a second, so nothing it hands from
//! thread to thread is allocated per sample: float samples go in pooled
//! vectors, and histogram samples of both kinds in a [`HistogramBatch`]:
//! flat arrays (no vector per histogram), about 90 bytes a histogram plus
//! its spans and buckets, reused once the pools are warm.

use ferrite_model::resolution::ReduceResolution;
use ferrite_model::{CounterResetHint, FloatHistogram, Histogram, HistogramError, Span};
use ferrite_wal::record::{RefFloatHistogramSample, RefHistogramSample, RefSample};
use parking_lot::Mutex;

use crate::sample::SampleRef;
use ferrite_model::prefetch::prefetch_lines;

/// Buffers a pool keeps at most; more are dropped when given back.
const POOL_CAP: usize = 64;

/// A buffer that can be emptied for reuse, keeping its allocations.
pub(super) trait Recycle: Default {
    fn recycle(&mut self);
    fn is_empty(&self) -> bool;
}

impl Recycle for Vec<RefSample> {
    fn recycle(&mut self) {
        self.clear();
    }
    fn is_empty(&self) -> bool {
        <[RefSample]>::is_empty(self)
    }
}

/// Buffers handed back by their last user for the next one.
#[derive(Default)]
pub(super) struct Pool<T> {
    free: Mutex<Vec<T>>,
}

impl<T: Recycle> Pool<T> {
    /// An empty buffer, reused when one is free.
    pub(super) fn take(&self) -> T {
        self.free.lock().pop().unwrap_or_default()
    }

    pub(super) fn give(&self, mut v: T) {
        v.recycle();
        let mut free = self.free.lock();
        if free.len() < POOL_CAP {
            free.push(v);
        }
    }
}

/// The pools of one replay.
#[derive(Default)]
pub(super) struct Pools {
    pub(super) samples: Pool<Vec<RefSample>>,
    pub(super) histograms: Pool<HistogramBatch>,
}

/// One histogram sample's fixed part; its spans, buckets and custom
/// bounds are runs of the batch's shared arrays.
#[derive(Clone, Copy, Debug)]
struct Entry {
    series_ref: u64,
    t: i64,
    /// Integer counts, or a float histogram's counts as `f64` bits.
    count: u64,
    zero_count: u64,
    sum: f64,
    zero_threshold: f64,
    schema: i32,
    /// First span (positive ones, then negative ones).
    spans_at: u32,
    /// First bucket (positive ones, then negative ones).
    buckets_at: u32,
    custom_at: u32,
    positive_spans: u32,
    negative_spans: u32,
    positive_buckets: u32,
    negative_buckets: u32,
    custom_values: u32,
    hint: CounterResetHint,
    float: bool,
}

/// Histogram samples, integer and float, in WAL order, in flat arrays.
#[derive(Default)]
pub(super) struct HistogramBatch {
    entries: Vec<Entry>,
    spans: Vec<Span>,
    /// Integer bucket deltas, or float bucket counts as `f64` bits.
    buckets: Vec<u64>,
    custom: Vec<f64>,
}

impl Recycle for HistogramBatch {
    fn recycle(&mut self) {
        self.entries.clear();
        self.spans.clear();
        self.buckets.clear();
        self.custom.clear();
    }
    fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

/// Where one worker rebuilds a batch's histograms to append them.
#[derive(Default)]
pub(super) struct Scratch {
    integer: Histogram,
    float: FloatHistogram,
}

impl HistogramBatch {
    pub(super) fn len(&self) -> usize {
        self.entries.len()
    }

    /// Heap bytes in use (not capacity), for bounding what is pending.
    pub(super) fn bytes(&self) -> usize {
        self.entries.len() * std::mem::size_of::<Entry>()
            + self.spans.len() * std::mem::size_of::<Span>()
            + (self.buckets.len() + self.custom.len()) * 8
    }

    /// The series ref of every sample, in order.
    pub(super) fn refs(&self) -> impl Iterator<Item = u64> + '_ {
        self.entries.iter().map(|e| e.series_ref)
    }

    /// The series ref of sample `k`.
    pub(super) fn series_ref(&self, k: usize) -> Option<u64> {
        self.entries.get(k).map(|e| e.series_ref)
    }

    /// The time of sample `k`.
    pub(super) fn time(&self, k: usize) -> Option<i64> {
        self.entries.get(k).map(|e| e.t)
    }

    /// Sets the series ref of sample `k`.
    pub(super) fn set_ref(&mut self, k: usize, series_ref: u64) {
        if let Some(e) = self.entries.get_mut(k) {
            e.series_ref = series_ref;
        }
    }

    pub(super) fn push_integer(&mut self, series_ref: u64, t: i64, h: &Histogram) {
        let (count, zero_count) = (h.count, h.zero_count);
        let e = self.entry(
            series_ref,
            t,
            h.schema,
            h.zero_threshold,
            h.sum,
            h.counter_reset_hint,
        );
        let e = Entry {
            count,
            zero_count,
            float: false,
            ..e
        };
        let bits = |b: &i64| *b as u64;
        let e = self.push_buckets(
            e,
            h.positive_buckets.iter().map(bits),
            h.negative_buckets.iter().map(bits),
        );
        self.push_layout(e, &h.positive_spans, &h.negative_spans, &h.custom_values);
    }

    pub(super) fn push_float(&mut self, series_ref: u64, t: i64, h: &FloatHistogram) {
        let (count, zero_count) = (h.count.to_bits(), h.zero_count.to_bits());
        let e = self.entry(
            series_ref,
            t,
            h.schema,
            h.zero_threshold,
            h.sum,
            h.counter_reset_hint,
        );
        let e = Entry {
            count,
            zero_count,
            float: true,
            ..e
        };
        let bits = |b: &f64| b.to_bits();
        let e = self.push_buckets(
            e,
            h.positive_buckets.iter().map(bits),
            h.negative_buckets.iter().map(bits),
        );
        self.push_layout(e, &h.positive_spans, &h.negative_spans, &h.custom_values);
    }

    /// An entry whose runs start at the arrays' ends; its counts and run
    /// lengths are set by the caller, [`Self::push_buckets`] and
    /// [`Self::push_layout`].
    fn entry(
        &self,
        series_ref: u64,
        t: i64,
        schema: i32,
        zero_threshold: f64,
        sum: f64,
        hint: CounterResetHint,
    ) -> Entry {
        Entry {
            series_ref,
            t,
            count: 0,
            zero_count: 0,
            sum,
            zero_threshold,
            schema,
            spans_at: self.spans.len() as u32,
            buckets_at: self.buckets.len() as u32,
            custom_at: self.custom.len() as u32,
            positive_spans: 0,
            negative_spans: 0,
            positive_buckets: 0,
            negative_buckets: 0,
            custom_values: 0,
            hint,
            float: false,
        }
    }

    /// Appends `e`'s buckets (as `u64` bits) and returns `e` with their
    /// counts.
    fn push_buckets(
        &mut self,
        mut e: Entry,
        positive: impl ExactSizeIterator<Item = u64>,
        negative: impl ExactSizeIterator<Item = u64>,
    ) -> Entry {
        (e.positive_buckets, e.negative_buckets) = (positive.len() as u32, negative.len() as u32);
        self.buckets.extend(positive.chain(negative));
        e
    }

    /// Adds `e` with its spans and custom bounds.
    fn push_layout(&mut self, mut e: Entry, positive: &[Span], negative: &[Span], custom: &[f64]) {
        e.positive_spans = positive.len() as u32;
        e.negative_spans = negative.len() as u32;
        e.custom_values = custom.len() as u32;
        self.spans.extend_from_slice(positive);
        self.spans.extend_from_slice(negative);
        self.custom.extend_from_slice(custom);
        self.entries.push(e);
    }

    /// Hints the CPU to load sample `k`'s fixed part (`deep`: and its
    /// spans and buckets, which reads the fixed part).
    pub(super) fn prefetch(&self, k: usize, deep: bool) {
        let Some(e) = self.entries.get(k) else { return };
        if !deep {
            prefetch_lines(e as *const Entry, 2);
            return;
        }
        let buckets = self.buckets.as_ptr().wrapping_add(e.buckets_at as usize);
        let n = (e.positive_buckets + e.negative_buckets) as usize;
        prefetch_lines(buckets, (n * 8).div_ceil(64).clamp(1, 4));
        prefetch_lines(self.spans.as_ptr().wrapping_add(e.spans_at as usize), 1);
    }

    /// Sample `k`'s ref, time and histogram, rebuilt in `scratch`.
    pub(super) fn load<'s>(
        &self,
        k: usize,
        scratch: &'s mut Scratch,
    ) -> Option<(u64, i64, SampleRef<'s>)> {
        let e = *self.entries.get(k)?;
        let spans_end = e.spans_at as usize + (e.positive_spans + e.negative_spans) as usize;
        let spans = self.spans.get(e.spans_at as usize..spans_end)?;
        let (positive_spans, negative_spans) = spans.split_at(e.positive_spans as usize);
        let buckets_end =
            e.buckets_at as usize + (e.positive_buckets + e.negative_buckets) as usize;
        let buckets = self.buckets.get(e.buckets_at as usize..buckets_end)?;
        let (positive, negative) = buckets.split_at(e.positive_buckets as usize);
        let custom_end = e.custom_at as usize + e.custom_values as usize;
        let custom = self.custom.get(e.custom_at as usize..custom_end)?;
        let v = if e.float {
            let h = &mut scratch.float;
            (h.counter_reset_hint, h.schema, h.zero_threshold, h.sum) =
                (e.hint, e.schema, e.zero_threshold, e.sum);
            (h.count, h.zero_count) = (f64::from_bits(e.count), f64::from_bits(e.zero_count));
            refill(&mut h.positive_spans, positive_spans.iter().copied());
            refill(&mut h.negative_spans, negative_spans.iter().copied());
            refill(
                &mut h.positive_buckets,
                positive.iter().map(|&b| f64::from_bits(b)),
            );
            refill(
                &mut h.negative_buckets,
                negative.iter().map(|&b| f64::from_bits(b)),
            );
            refill(&mut h.custom_values, custom.iter().copied());
            SampleRef::FloatHistogram(h)
        } else {
            let h = &mut scratch.integer;
            (h.counter_reset_hint, h.schema, h.zero_threshold, h.sum) =
                (e.hint, e.schema, e.zero_threshold, e.sum);
            (h.count, h.zero_count) = (e.count, e.zero_count);
            refill(&mut h.positive_spans, positive_spans.iter().copied());
            refill(&mut h.negative_spans, negative_spans.iter().copied());
            refill(&mut h.positive_buckets, positive.iter().map(|&b| b as i64));
            refill(&mut h.negative_buckets, negative.iter().map(|&b| b as i64));
            refill(&mut h.custom_values, custom.iter().copied());
            SampleRef::Histogram(h)
        };
        Some((e.series_ref, e.t, v))
    }

    /// Appends every sample of `other`.
    pub(super) fn append(&mut self, other: &HistogramBatch) {
        let (spans, buckets, custom) = (
            self.spans.len() as u32,
            self.buckets.len() as u32,
            self.custom.len() as u32,
        );
        self.entries.extend(other.entries.iter().map(|e| Entry {
            spans_at: e.spans_at + spans,
            buckets_at: e.buckets_at + buckets,
            custom_at: e.custom_at + custom,
            ..*e
        }));
        self.spans.extend_from_slice(&other.spans);
        self.buckets.extend_from_slice(&other.buckets);
        self.custom.extend_from_slice(&other.custom);
    }

    /// Copies sample `k` of `from` to the end of this batch.
    pub(super) fn push_from(&mut self, from: &HistogramBatch, k: usize, scratch: &mut Scratch) {
        match from.load(k, scratch) {
            Some((r, t, SampleRef::Histogram(h))) => self.push_integer(r, t, h),
            Some((r, t, SampleRef::FloatHistogram(h))) => self.push_float(r, t, h),
            _ => {}
        }
    }

    /// Forgets the samples from `len` on.
    pub(super) fn truncate(&mut self, len: usize) {
        if let Some(e) = self.entries.get(len) {
            self.spans.truncate(e.spans_at as usize);
            self.buckets.truncate(e.buckets_at as usize);
            self.custom.truncate(e.custom_at as usize);
            self.entries.truncate(len);
        }
    }
}

fn refill<T>(v: &mut Vec<T>, items: impl Iterator<Item = T>) {
    v.clear();
    v.extend(items);
}

/// What replay needs of a decoded histogram sample of either kind.
pub(super) trait DecodedHistogram {
    fn series_ref(&self) -> u64;
    fn t(&self) -> i64;
    fn schema(&self) -> i32;
    /// Brings a schema reserved for finer resolution (9..=52) down to 8.
    fn reduce_reserved_schema(&mut self) -> Result<(), HistogramError>;
    fn push_into(&self, batch: &mut HistogramBatch);
}

/// Both sample kinds have the same fields; only the batch's push differs.
macro_rules! decoded_histogram {
    ($sample:ty, $push:ident) => {
        impl DecodedHistogram for $sample {
            fn series_ref(&self) -> u64 {
                self.series_ref
            }
            fn t(&self) -> i64 {
                self.t
            }
            fn schema(&self) -> i32 {
                self.h.schema
            }
            fn reduce_reserved_schema(&mut self) -> Result<(), HistogramError> {
                self.h.reduce_reserved_schema()
            }
            fn push_into(&self, batch: &mut HistogramBatch) {
                batch.$push(self.series_ref, self.t, &self.h);
            }
        }
    };
}

decoded_histogram!(RefHistogramSample, push_integer);
decoded_histogram!(RefFloatHistogramSample, push_float);

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn spans() -> impl Strategy<Value = Vec<Span>> {
        proptest::collection::vec((-3..3i32, 0..4u32), 0..3).prop_map(|v| {
            v.into_iter()
                .map(|(offset, length)| Span { offset, length })
                .collect()
        })
    }

    /// Any field values: the batch stores, it does not validate.
    fn integer() -> impl Strategy<Value = Histogram> {
        (
            (
                -53..9i32,
                any::<f64>(),
                any::<u64>(),
                any::<u64>(),
                any::<f64>(),
            ),
            (spans(), spans()),
            (
                proptest::collection::vec(any::<i64>(), 0..6),
                proptest::collection::vec(any::<i64>(), 0..6),
                proptest::collection::vec(any::<f64>(), 0..3),
            ),
            0..4u8,
        )
            .prop_map(
                |((schema, zt, zc, count, sum), (ps, ns), (pb, nb, cv), hint)| Histogram {
                    counter_reset_hint: match hint {
                        0 => CounterResetHint::Unknown,
                        1 => CounterResetHint::CounterReset,
                        2 => CounterResetHint::NotCounterReset,
                        _ => CounterResetHint::Gauge,
                    },
                    schema,
                    zero_threshold: zt,
                    zero_count: zc,
                    count,
                    sum,
                    positive_spans: ps,
                    negative_spans: ns,
                    positive_buckets: pb,
                    negative_buckets: nb,
                    custom_values: cv,
                },
            )
    }

    fn float(h: &Histogram, salt: u64) -> FloatHistogram {
        FloatHistogram {
            counter_reset_hint: h.counter_reset_hint,
            schema: h.schema,
            zero_threshold: h.zero_threshold,
            zero_count: h.zero_count as f64 + salt as f64,
            count: f64::from_bits(h.count),
            sum: h.sum,
            positive_spans: h.positive_spans.clone(),
            negative_spans: h.negative_spans.clone(),
            positive_buckets: h
                .positive_buckets
                .iter()
                .map(|&b| f64::from_bits(b as u64))
                .collect(),
            negative_buckets: h.negative_buckets.iter().map(|&b| b as f64).collect(),
            custom_values: h.custom_values.clone(),
        }
    }

    #[derive(Debug, PartialEq)]
    enum Owned {
        Integer(u64, i64, Histogram),
        Float(u64, i64, FloatHistogram),
    }

    fn load_all(b: &HistogramBatch) -> Vec<Owned> {
        let mut scratch = Scratch::default();
        (0..b.len())
            .map(|k| match b.load(k, &mut scratch) {
                Some((r, t, SampleRef::Histogram(h))) => Owned::Integer(r, t, h.clone()),
                Some((r, t, SampleRef::FloatHistogram(h))) => Owned::Float(r, t, h.clone()),
                other => panic!("sample {k}: {other:?}"),
            })
            .collect()
    }

    /// Compares float histograms by bits (NaN counts included).
    fn bits(v: &[Owned]) -> Vec<String> {
        v.iter()
            .map(|o| match o {
                Owned::Integer(..) => format!("{o:?}"),
                Owned::Float(r, t, h) => format!(
                    "{r} {t} {:?} {} {} {} {} {} {:?} {:?} {:?} {:?} {:?}",
                    h.counter_reset_hint,
                    h.schema,
                    h.zero_threshold.to_bits(),
                    h.zero_count.to_bits(),
                    h.count.to_bits(),
                    h.sum.to_bits(),
                    h.positive_spans,
                    h.negative_spans,
                    h.positive_buckets
                        .iter()
                        .map(|b| b.to_bits())
                        .collect::<Vec<_>>(),
                    h.negative_buckets
                        .iter()
                        .map(|b| b.to_bits())
                        .collect::<Vec<_>>(),
                    h.custom_values
                        .iter()
                        .map(|b| b.to_bits())
                        .collect::<Vec<_>>(),
                ),
            })
            .collect()
    }

    proptest! {
        /// What goes in comes out, bit for bit, in order: pushed, appended
        /// from another batch, copied one by one, and after truncation.
        #[test]
        fn batches_keep_every_field(
            samples in proptest::collection::vec((any::<bool>(), 0..50u64, any::<i64>(), integer()), 0..12),
            cut in 0..14usize,
        ) {
            let mut batch = HistogramBatch::default();
            let mut want = Vec::new();
            for (k, (is_float, r, t, h)) in samples.iter().enumerate() {
                if *is_float {
                    let f = float(h, k as u64);
                    batch.push_float(*r, *t, &f);
                    want.push(Owned::Float(*r, *t, f));
                } else {
                    batch.push_integer(*r, *t, h);
                    want.push(Owned::Integer(*r, *t, h.clone()));
                }
            }
            prop_assert_eq!(bits(&load_all(&batch)), bits(&want));
            prop_assert_eq!(batch.refs().collect::<Vec<_>>(), samples.iter().map(|s| s.1).collect::<Vec<_>>());

            let mut appended = HistogramBatch::default();
            appended.push_integer(7, 7, &Histogram::default());
            appended.append(&batch);
            let mut copied = HistogramBatch::default();
            let mut scratch = Scratch::default();
            for k in 0..batch.len() {
                copied.push_from(&batch, k, &mut scratch);
            }
            let mut with_first = vec![Owned::Integer(7, 7, Histogram::default())];
            with_first.extend(load_all(&batch));
            prop_assert_eq!(bits(&load_all(&appended)), bits(&with_first));
            prop_assert_eq!(bits(&load_all(&copied)), bits(&want));

            batch.truncate(cut);
            want.truncate(cut);
            prop_assert_eq!(bits(&load_all(&batch)), bits(&want));
            // What follows a truncation starts where it cut.
            batch.push_integer(1, 2, &Histogram::default());
            want.push(Owned::Integer(1, 2, Histogram::default()));
            prop_assert_eq!(bits(&load_all(&batch)), bits(&want));
            batch.recycle();
            prop_assert!(batch.is_empty() && batch.bytes() == 0);
        }
    }
}
