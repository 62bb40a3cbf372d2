//! Arbitrary bytes as a floathistogramST chunk (encoding 6): iterating
//! (with start timestamps), seeking and reopening for appends must never
//! panic, iteration must stop at the header count or report an error, and
//! a chunk that `from_bytes` accepts must stay decodable, STs included,
//! after one more sample.

#![no_main]

use ferrite_chunkenc::{AppendOutcome, FloatHistogramIterator, FloatHistogramStChunk};
use ferrite_model::{FloatHistogram, Span};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let mut fh = FloatHistogram::default();
    let mut it = FloatHistogramIterator::new_st(data);
    let mut decoded = 0usize;
    let mut last_t = None;
    while let Some(t) = it.next_into(&mut fh) {
        let _ = it.start_timestamp();
        decoded += 1;
        last_t = Some(t);
    }
    let announced = usize::from(it.num_samples());
    assert!(announced <= usize::from(FloatHistogramStChunk::MAX_SAMPLES));
    assert!(decoded <= announced);
    assert!(decoded == announced || it.error().is_some());

    let target = data
        .get(3..11)
        .and_then(|b| <[u8; 8]>::try_from(b).ok())
        .map_or(0, i64::from_le_bytes);
    let mut it = FloatHistogramIterator::new_st(data);
    if let Some(t) = it.seek(target) {
        assert!(t >= target);
        assert_eq!(it.seek(i64::MIN), Some(t));
    }

    if let Ok(mut chunk) = FloatHistogramStChunk::from_bytes(data.to_vec()) {
        assert_eq!(chunk.bytes(), data);
        let mut it = chunk.iter();
        let mut last_st = 0;
        while it.next_into(&mut fh).is_some() {
            last_st = it.start_timestamp();
        }
        assert!(it.error().is_none());
        // One more sample with a new bucket and a changed ST.
        let mut next = fh.clone();
        if next.is_stale() || fh.positive_spans.iter().any(|s| s.offset < 0) {
            next = FloatHistogram::default();
        }
        next.count += 1.0;
        next.positive_spans.push(Span { offset: 3, length: 1 });
        next.positive_buckets.push(1.0);
        let t = last_t.unwrap_or(0).wrapping_add(15_000);
        let st = last_st.wrapping_sub(3);
        if let Ok(outcome) = chunk.append(None, st, t, &next) {
            let c = match &outcome {
                AppendOutcome::NewChunk(c) => c,
                AppendOutcome::Appended | AppendOutcome::Recoded => &chunk,
            };
            let mut it = c.iter();
            let mut last = None;
            while let Some(t) = it.next_into(&mut fh) {
                last = Some((it.start_timestamp(), t));
            }
            assert!(it.error().is_none());
            assert_eq!(last, Some((st, t)));
        }
    }
});
