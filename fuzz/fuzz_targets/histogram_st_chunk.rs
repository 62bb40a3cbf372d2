//! Arbitrary bytes as a histogramST chunk (encoding 5): iterating (with
//! start timestamps), seeking and reopening for appends must never panic,
//! iteration must stop at the header count or report an error, and a chunk
//! that `from_bytes` accepts must stay decodable, STs included, after one
//! more sample.

#![no_main]

use ferrite_chunkenc::{AppendOutcome, HistogramIterator, HistogramStChunk};
use ferrite_model::{FloatHistogram, Histogram, Span};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let mut h = Histogram::default();
    let mut fh = FloatHistogram::default();
    let mut it = HistogramIterator::new_st(data);
    let mut decoded = 0usize;
    let mut last_t = None;
    while let Some(t) = it.next_into(&mut h) {
        it.at_float(&mut fh);
        let _ = it.start_timestamp();
        decoded += 1;
        last_t = Some(t);
    }
    let announced = usize::from(it.num_samples());
    assert!(announced <= usize::from(HistogramStChunk::MAX_SAMPLES));
    assert!(decoded <= announced);
    assert!(decoded == announced || it.error().is_some());

    let target = data
        .get(3..11)
        .and_then(|b| <[u8; 8]>::try_from(b).ok())
        .map_or(0, i64::from_le_bytes);
    let mut it = HistogramIterator::new_st(data);
    if let Some(t) = it.seek(target) {
        assert!(t >= target);
        assert_eq!(it.seek(i64::MIN), Some(t));
    }

    if let Ok(mut chunk) = HistogramStChunk::from_bytes(data.to_vec()) {
        assert_eq!(chunk.bytes(), data);
        let mut it = chunk.iter();
        let mut last_st = 0;
        while it.next_into(&mut h).is_some() {
            last_st = it.start_timestamp();
        }
        assert!(it.error().is_none());
        // One more sample with a new bucket and a changed ST.
        let mut next = h.clone();
        if next.is_stale() || h.positive_spans.iter().any(|s| s.offset < 0) {
            next = Histogram::default();
        }
        next.count = next.count.wrapping_add(1);
        next.positive_spans.push(Span { offset: 3, length: 1 });
        next.positive_buckets.push(1);
        let t = last_t.unwrap_or(0).wrapping_add(15_000);
        let st = last_st.wrapping_add(7);
        if let Ok(outcome) = chunk.append(None, st, t, &next) {
            let c = match &outcome {
                AppendOutcome::NewChunk(c) => c,
                AppendOutcome::Appended | AppendOutcome::Recoded => &chunk,
            };
            let mut it = c.iter();
            let mut last = None;
            while let Some(t) = it.next_into(&mut h) {
                last = Some((it.start_timestamp(), t));
            }
            assert!(it.error().is_none());
            assert_eq!(last, Some((st, t)));
        }
    }
});
