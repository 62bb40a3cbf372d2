//! The protobuf parser allocates per scrape, not per sample: a series'
//! bytes, its `le`/`quantile` value and a native histogram are built in
//! reused buffers. Counted with an allocator that counts this thread's
//! allocations.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

use ferrite_model::{FloatHistogram, Histogram};
use ferrite_textparse::protobuf::{ProtoEntry, ProtoOptions, ProtoParser};

struct Counting;

thread_local! {
    static ALLOCATIONS: Cell<u64> = const { Cell::new(0) };
}

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let _ = ALLOCATIONS.try_with(|a| a.set(a.get() + 1));
        // SAFETY: forwarded as given.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: forwarded as given.
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let _ = ALLOCATIONS.try_with(|a| a.set(a.get() + 1));
        // SAFETY: forwarded as given.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

fn varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

fn field(out: &mut Vec<u8>, n: u64, bytes: &[u8]) {
    varint(out, n << 3 | 2);
    varint(out, bytes.len() as u64);
    out.extend_from_slice(bytes);
}

fn double(out: &mut Vec<u8>, n: u64, f: f64) {
    varint(out, n << 3 | 1);
    out.extend_from_slice(&f.to_le_bytes());
}

/// A body of one histogram family with `n` metrics, each with two labels,
/// four classic buckets and native buckets.
fn body(n: usize) -> Vec<u8> {
    let mut fam = Vec::new();
    field(&mut fam, 1, b"http_request_duration_seconds");
    varint(&mut fam, 3 << 3);
    varint(&mut fam, 4); // HISTOGRAM
    for i in 0..n {
        let mut m = Vec::new();
        for (name, value) in [("path", format!("/{i}")), ("code", "200".to_string())] {
            let mut l = Vec::new();
            field(&mut l, 1, name.as_bytes());
            field(&mut l, 2, value.as_bytes());
            field(&mut m, 1, &l);
        }
        let mut h = Vec::new();
        varint(&mut h, 1 << 3);
        varint(&mut h, 10); // sample_count
        double(&mut h, 2, 1.5);
        for (k, upper) in [0.1, 0.25, 1e-7, 1e6].into_iter().enumerate() {
            let mut b = Vec::new();
            varint(&mut b, 1 << 3);
            varint(&mut b, k as u64);
            double(&mut b, 2, upper);
            field(&mut h, 3, &b);
        }
        double(&mut h, 6, 0.001);
        let mut span = Vec::new();
        varint(&mut span, 2 << 3);
        varint(&mut span, 3);
        field(&mut h, 12, &span);
        field(&mut h, 13, &[4, 0, 3]);
        field(&mut m, 7, &h);
        field(&mut fam, 4, &m);
    }
    let mut out = Vec::new();
    varint(&mut out, fam.len() as u64);
    out.extend_from_slice(&fam);
    out
}

/// The allocations of reading every entry of `body`, each series' bytes
/// and each histogram.
fn allocations(body: &[u8]) -> (u64, usize) {
    let (mut h, mut fh) = (Histogram::default(), FloatHistogram::default());
    let opts = ProtoOptions {
        ignore_native_histograms: false,
        keep_classic_histograms: true,
        convert_classic_histograms_to_nhcb: false,
    };
    let before = ALLOCATIONS.with(Cell::get);
    let mut p = ProtoParser::new(body, opts);
    let mut entries = 0;
    let mut key_bytes = 0;
    while let Some(e) = p.next_entry().expect("valid") {
        entries += 1;
        key_bytes += p.series().len();
        if let ProtoEntry::Histogram { .. } = e {
            p.histogram(&mut h, &mut fh);
        }
    }
    assert!(key_bytes > 0);
    (ALLOCATIONS.with(Cell::get) - before, entries)
}

#[test]
fn samples_do_not_allocate() {
    let (small, small_entries) = allocations(&body(10));
    let (large, large_entries) = allocations(&body(2000));
    assert_eq!(large_entries, 2 + 2000 * 8);
    assert!(small_entries < large_entries);
    // Only vectors growing (a doubling each) separate the two.
    assert!(
        large <= small + 12,
        "{small} allocations for {small_entries} entries, {large} for {large_entries}"
    );
}
