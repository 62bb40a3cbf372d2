//! How an open chunk's buffer grows: by an eighth (and at least 16
//! bytes), to whole malloc chunks, through buffers recycled per thread.
//!
//! A head holds millions of open chunks, so their buffers grow in small
//! steps (doubling would leave a third of them unused on average), and
//! every step of a fresh head's million growing chunks would be a
//! `realloc`: glibc's takes each from its arena's bins (its per-thread
//! cache is not used for `realloc`), with their sorting and consolidation,
//! which made a scraping server spend a tenth of its CPU in malloc.
//!
//! So capacities follow one fixed ladder ([`LADDER`]: each step at least
//! 16 bytes and an eighth more than the one below, each a size that fills
//! a glibc chunk whole, see [`malloc_fit`]), and a buffer that a chunk
//! grows out of is kept in a small per-thread pool for its rung, where the
//! next chunk growing to that rung takes it instead of allocating. The
//! series of a head grow at different rates, so chunks leave every rung
//! while others reach it. A step costs a copy, not an allocation, so the
//! steps can be small: an open chunk has on average half a step unused.
//! The pools hold at most [`pool_depth`] buffers a rung (32 KB of them,
//! about a megabyte a thread in all), the rest go back to malloc.

use std::cell::RefCell;

use ferrite_model::spare::{with_local, Spares};

/// The capacity to ask for when at least `bytes` are wanted: the most
/// that fits the same allocation. glibc's malloc hands out chunks of a
/// multiple of 16 bytes, 8 of them its own header, so a request of
/// `16k + 8` bytes uses a chunk whole; a smaller one leaves the rest
/// unused, and the buffer would be grown again before it is full.
const fn malloc_fit(bytes: usize) -> usize {
    (bytes + 8).next_multiple_of(16) - 8
}

/// The rung after a buffer of `len` bytes: an eighth more, at least 16
/// bytes more, to a whole malloc chunk.
const fn grown(len: usize) -> usize {
    let step = if len / 8 > 16 { len / 8 } else { 16 };
    malloc_fit(len + step)
}

/// Rungs of the ladder; a buffer past the last grows without the pools.
const RUNGS: usize = 32;

/// Capacities a chunk buffer grows through, from 40 bytes (the header, a
/// first sample and a few more) to about 4 KB (a chunk is cut at about
/// 1 KB, a histogram chunk may reach 2).
const LADDER: [usize; RUNGS] = {
    let mut ladder = [0; RUNGS];
    ladder[0] = malloc_fit(32);
    let mut i = 1;
    while i < RUNGS {
        ladder[i] = grown(ladder[i - 1]);
        i += 1;
    }
    ladder
};

/// Most buffers a thread keeps for `rung`: 32 KB of them, at least 4 and
/// at most 256.
const fn pool_depth(rung: usize) -> usize {
    let depth = (32 << 10) / LADDER[rung];
    if depth < 4 {
        4
    } else if depth > 256 {
        256
    } else {
        depth
    }
}

thread_local! {
    static POOLS: RefCell<[Spares<u8>; RUNGS]> = const { RefCell::new([const { Spares::new() }; RUNGS]) };
}

/// A new, empty chunk buffer of the ladder's first rung.
pub(crate) fn new_buffer() -> Vec<u8> {
    take(0)
}

/// Grows `buf` so that at least 8 more bytes fit: to the first rung at
/// least an eighth (and 16 bytes) above its length, its bytes copied into
/// a pooled buffer of that rung if there is one; the old buffer is pooled
/// if it was a rung's. Past the ladder, a plain reallocation.
#[cold]
pub(crate) fn grow(buf: &mut Vec<u8>) {
    let len = buf.len();
    let want = grown(len);
    let rung = LADDER.partition_point(|&c| c < want);
    if rung == RUNGS {
        buf.reserve_exact(want - len);
        return;
    }
    let mut bigger = take(rung);
    bigger.extend_from_slice(buf);
    give(std::mem::replace(buf, bigger));
}

/// An empty buffer of `rung`'s capacity, pooled if there is one.
fn take(rung: usize) -> Vec<u8> {
    with_local(&POOLS, |p| p[rung].take())
        .flatten()
        .unwrap_or_else(|| Vec::with_capacity(LADDER[rung]))
}

/// Keeps `buf` (emptied) for its rung if it is exactly one and the pool
/// has room; else frees it.
fn give(buf: Vec<u8>) {
    if let Ok(rung) = LADDER.binary_search(&buf.capacity()) {
        with_local(&POOLS, |p| p[rung].keep(buf, pool_depth(rung)));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn malloc_fit_fills_whole_glibc_chunks() {
        assert_eq!(malloc_fit(0), 8);
        assert_eq!(malloc_fit(24), 24);
        assert_eq!(malloc_fit(25), 40);
        assert_eq!(malloc_fit(40), 40);
        assert_eq!(malloc_fit(41), 56);
    }

    #[test]
    fn the_ladder_climbs_by_an_eighth_to_whole_chunks() {
        assert_eq!(&LADDER[..8], [40, 56, 72, 88, 104, 120, 136, 168]);
        for pair in LADDER.windows(2) {
            assert_eq!(pair[1] % 16, 8, "{LADDER:?}");
            assert!(pair[1] >= pair[0] + 16.max(pair[0] / 8), "{LADDER:?}");
            assert!(pair[1] < pair[0] + 16.max(pair[0] / 8) + 16, "{LADDER:?}");
        }
        assert!(LADDER[RUNGS - 1] > 3900, "{LADDER:?}");
    }

    #[test]
    fn buffers_grow_through_the_ladder_and_past_it() {
        let mut buf = new_buffer();
        let mut caps = vec![buf.capacity()];
        for i in 0..10_000u32 {
            if buf.capacity() - buf.len() < 8 {
                grow(&mut buf);
                caps.push(buf.capacity());
            }
            buf.push(i as u8);
        }
        assert_eq!(caps[..RUNGS], LADDER, "{caps:?}");
        assert!(caps[RUNGS] > LADDER[RUNGS - 1]);
        assert!(buf.iter().enumerate().all(|(i, &b)| b == i as u8));
    }

    #[test]
    fn a_buffer_grown_out_of_is_the_next_one_grown_into() {
        // A fresh thread: its pools are empty.
        std::thread::spawn(|| {
            let mut a = Vec::with_capacity(LADDER[2]);
            a.extend_from_slice(&[7; 70]);
            grow(&mut a);
            assert_eq!(a.capacity(), LADDER[3]);
            assert_eq!(a, [7; 70]);
            // `a`'s old buffer (rung 2) is pooled: the next growth into
            // rung 2 takes it.
            let mut b = Vec::with_capacity(LADDER[1]);
            b.extend_from_slice(&[9; 50]);
            grow(&mut b);
            assert_eq!(b.capacity(), LADDER[2]);
            assert_eq!(b, [9; 50]);
            POOLS.with_borrow(|p| {
                assert!(p[2].is_empty(), "rung 2's buffer was taken");
                assert_eq!(p[1].len(), 1, "b's old buffer is kept");
            });
            // A buffer of no rung is freed, not pooled.
            let mut odd = Vec::with_capacity(100);
            odd.extend_from_slice(&[1; 95]);
            grow(&mut odd);
            POOLS.with_borrow(|p| assert_eq!(p.iter().map(Spares::len).sum::<usize>(), 1));
        })
        .join()
        .unwrap();
    }

    #[test]
    fn pools_are_bounded() {
        std::thread::spawn(|| {
            for rung in [0, RUNGS - 1] {
                for _ in 0..pool_depth(rung) + 10 {
                    give(Vec::with_capacity(LADDER[rung]));
                }
            }
            POOLS.with_borrow(|p| {
                assert_eq!(p[0].len(), 256);
                assert_eq!(p[RUNGS - 1].len(), 8);
            });
        })
        .join()
        .unwrap();
    }
}
