//! Behaviour of the histogram chunk API beyond the golden vectors: typed
//! errors for bad bytes and bad histograms, header handling, append-only
//! mode, and buffer reuse while iterating.

use ferrite_chunkenc::{
    AppendError, AppendOutcome, ChunkError, CounterResetHeader, FloatHistogramChunk,
    HistogramChunk, HistogramIterator,
};
use ferrite_model::{CounterResetHint, Histogram, Span};

fn hist(count: u64, buckets: &[i64]) -> Histogram {
    Histogram {
        schema: 0,
        zero_threshold: 2f64.powi(-128),
        count,
        sum: count as f64 * 1.5,
        positive_spans: vec![Span {
            offset: 0,
            length: buckets.len() as u32,
        }],
        positive_buckets: buckets.to_vec(),
        ..Histogram::default()
    }
}

fn chunk_of(hs: &[Histogram]) -> HistogramChunk {
    let mut c = HistogramChunk::new();
    for (i, h) in hs.iter().enumerate() {
        match c.append(None, i as i64 * 1000, h) {
            Ok(AppendOutcome::Appended) => {}
            other => panic!("sample {i}: {other:?}"),
        }
    }
    c
}

#[test]
fn empty_chunks() {
    let c = HistogramChunk::new();
    assert_eq!(c.bytes(), [0, 0, 0]);
    assert!(HistogramChunk::from_bytes(vec![0, 0, 0]).is_ok());
    assert!(FloatHistogramChunk::from_bytes(vec![0, 0, 0xc0]).is_ok());
    assert_eq!(
        HistogramChunk::from_bytes(vec![0, 0]).err(),
        Some(ChunkError::ShortHeader { len: 2, need: 3 })
    );
    assert_eq!(
        HistogramChunk::from_bytes(vec![0, 0, 0, 0]).err(),
        Some(ChunkError::TrailingBytes {
            samples: 0,
            extra: 1
        })
    );
    let mut it = HistogramIterator::new(&[1]);
    assert_eq!(it.advance(), None);
    assert_eq!(
        it.error(),
        Some(&ChunkError::ShortHeader { len: 1, need: 3 })
    );
}

#[test]
fn bad_bytes_are_typed_errors() {
    let c = chunk_of(&[hist(2, &[1, 0]), hist(5, &[2, 1]), hist(9, &[4, 0])]);
    let bytes = c.bytes().to_vec();
    // Cut off the end: the last sample is truncated.
    let short = &bytes[..bytes.len() - 1];
    let mut it = HistogramIterator::new(short);
    let mut n = 0;
    while it.advance().is_some() {
        n += 1;
    }
    assert_eq!(n, 2);
    assert_eq!(
        it.error(),
        Some(&ChunkError::Truncated {
            sample: 2,
            total: 3
        })
    );
    assert!(HistogramChunk::from_bytes(short.to_vec()).is_err());
    // More samples announced than there are.
    let mut more = bytes.clone();
    more[1] = 200;
    assert!(matches!(
        HistogramChunk::from_bytes(more),
        Err(ChunkError::Truncated { total: 200, .. })
    ));
    // Non-zero padding bits: a lone stale marker takes 78 bits.
    let mut stale = HistogramChunk::new();
    let marker = Histogram {
        sum: ferrite_model::STALE_NAN,
        ..Histogram::default()
    };
    stale.append(None, 0, &marker).expect("appends");
    assert_eq!(stale.bytes().len(), 3 + 10);
    let mut padded = stale.bytes().to_vec();
    padded[12] |= 1;
    assert_eq!(
        HistogramChunk::from_bytes(padded).err(),
        Some(ChunkError::NonZeroPadding {
            samples: 1,
            bits: 2
        })
    );
    // A schema no Prometheus knows.
    let mut odd = HistogramChunk::new();
    let mut h = hist(1, &[1]);
    h.schema = 60;
    odd.append(None, 0, &h).expect("appends");
    let mut it = odd.iter();
    assert_eq!(it.advance(), None);
    assert_eq!(it.error(), Some(&ChunkError::UnknownSchema { schema: 60 }));
}

#[test]
fn headers_keep_other_flag_bits() {
    let c = HistogramChunk::from_bytes(vec![0, 0, 0x15]).expect("empty chunk");
    let mut c = c;
    c.set_counter_reset_header(CounterResetHeader::Gauge);
    assert_eq!(c.bytes(), [0, 0, 0xd5]);
    assert_eq!(c.counter_reset_header(), CounterResetHeader::Gauge);
    assert_eq!(
        CounterResetHeader::from_hint(CounterResetHint::NotCounterReset),
        CounterResetHeader::NotCounterReset
    );
}

#[test]
fn bad_histograms_are_refused_without_change() {
    let mut c = chunk_of(&[hist(2, &[1, 0])]);
    let before = c.bytes().to_vec();
    let mut h = hist(3, &[1, 0]);
    h.positive_buckets.push(1);
    assert_eq!(
        c.append(None, 5000, &h).err(),
        Some(AppendError::SpansBucketsMismatch {
            side: "positive",
            in_spans: 2,
            buckets: 3
        })
    );
    let mut h = hist(3, &[1, 0]);
    h.positive_spans = vec![
        Span {
            offset: 0,
            length: 1,
        },
        Span {
            offset: -3,
            length: 1,
        },
    ];
    assert!(matches!(
        c.append(None, 5000, &h),
        Err(AppendError::NegativeSpanOffset { span: 2, .. })
    ));
    assert_eq!(c.bytes(), &before[..]);
}

#[test]
fn append_only_mode() {
    let mut c = chunk_of(&[hist(2, &[1, 0]), hist(4, &[2, 0])]);
    let before = c.bytes().to_vec();
    assert_eq!(
        c.append_only(3000, &hist(1, &[1, -1])),
        Err(AppendError::CounterReset)
    );
    assert_eq!(
        c.append_only(3000, &hist(6, &[2, 0, 2])),
        Err(AppendError::LayoutChange)
    );
    let mut other_schema = hist(6, &[2, 0]);
    other_schema.schema = 1;
    assert_eq!(
        c.append_only(3000, &other_schema),
        Err(AppendError::SchemaChange)
    );
    assert_eq!(c.bytes(), &before[..]);
    assert_eq!(c.append_only(3000, &hist(6, &[3, 0])), Ok(()));
    assert_eq!(c.num_samples(), 3);
}

#[test]
fn outcomes_and_headers() {
    let mut c = chunk_of(&[hist(2, &[1, 0]), hist(4, &[2, 0])]);
    // A new bucket: recoded in place.
    assert!(matches!(
        c.append(None, 2000, &hist(7, &[2, 0, 1])),
        Ok(AppendOutcome::Recoded)
    ));
    let mut h = Histogram::default();
    let mut it = c.iter();
    assert_eq!(it.next_into(&mut h), Some(0));
    assert_eq!(h.positive_buckets, [1, 0, -1]);
    // A reset: a new chunk, marked so.
    let new = match c.append(None, 3000, &hist(1, &[1])) {
        Ok(AppendOutcome::NewChunk(n)) => n,
        other => panic!("{other:?}"),
    };
    assert_eq!(new.counter_reset_header(), CounterResetHeader::CounterReset);
    assert_eq!(c.num_samples(), 3);
    // A chunk the head cut: its header comes from the previous chunk.
    let mut next = HistogramChunk::new();
    next.append(Some(&c), 3000, &hist(8, &[2, 0, 2]))
        .expect("appends");
    assert_eq!(
        next.counter_reset_header(),
        CounterResetHeader::NotCounterReset
    );
    let mut next = HistogramChunk::new();
    next.append(Some(&c), 3000, &hist(3, &[3]))
        .expect("appends");
    assert_eq!(
        next.counter_reset_header(),
        CounterResetHeader::CounterReset
    );
}

#[test]
fn iterating_reuses_the_callers_vectors() {
    let hs: Vec<_> = (0..50)
        .map(|i| hist(2 * i + 2, &[i as i64 + 1, 0, -(i as i64), 1]))
        .collect();
    let c = chunk_of(&hs);
    let mut it = c.iter();
    let mut h = Histogram::default();
    assert_eq!(it.next_into(&mut h), Some(0));
    let ptrs = (h.positive_buckets.as_ptr(), h.positive_spans.as_ptr());
    let mut n = 1;
    while it.next_into(&mut h).is_some() {
        assert_eq!(
            (h.positive_buckets.as_ptr(), h.positive_spans.as_ptr()),
            ptrs
        );
        assert_eq!(h.positive_buckets, hs[n].positive_buckets);
        n += 1;
    }
    assert_eq!(n, 50);
    // Seeking never goes back.
    let mut it = c.iter();
    assert_eq!(it.seek(10_500), Some(11_000));
    assert_eq!(it.seek(0), Some(11_000));
    assert_eq!(it.seek(100_000), None);
}
