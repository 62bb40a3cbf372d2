//! Postings: sorted lists of series references, and set operations on them.
//!
//! A query like `{job="api", status!="500"}` becomes set algebra over
//! postings lists: [`intersect`] the lists of the equality matchers,
//! [`merge`] (union) the lists of the values a regex matches, and subtract
//! negative matchers with [`without`]. All of them work on any mix of
//! [`Postings`] implementations through trait objects and stream: they never
//! materialise their inputs, and `seek` lets an intersection skip over long
//! runs of a large list in O(log n) on an on-disk list.
//!
//! Lists read from an index are CRC-checked and length-checked when the
//! reader opens them, so iterating can no longer fail and the trait carries
//! no error channel.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// A series reference: for a v2 index, the series entry's offset / 16.
pub type SeriesRef = u64;

/// An iterator over a strictly increasing list of series references.
pub trait Postings {
    /// Advances to the next reference and returns it, or `None` at the end.
    fn next(&mut self) -> Option<SeriesRef>;

    /// Advances to the first reference `>= target` and returns it. A
    /// postings list never moves backwards: if the current reference is
    /// already `>= target` it is returned again.
    fn seek(&mut self, target: SeriesRef) -> Option<SeriesRef>;

    /// The current reference: `None` before the first `next`/`seek` and after
    /// the end.
    fn at(&self) -> Option<SeriesRef>;
}

impl<P: Postings + ?Sized> Postings for Box<P> {
    fn next(&mut self) -> Option<SeriesRef> {
        (**self).next()
    }
    fn seek(&mut self, target: SeriesRef) -> Option<SeriesRef> {
        (**self).seek(target)
    }
    fn at(&self) -> Option<SeriesRef> {
        (**self).at()
    }
}

/// A boxed postings iterator borrowing from an index reader.
pub type BoxPostings<'a> = Box<dyn Postings + 'a>;

/// Collects the remaining references.
pub fn expand(p: &mut dyn Postings) -> Vec<SeriesRef> {
    let mut out = Vec::new();
    while let Some(r) = p.next() {
        out.push(r);
    }
    out
}

/// Where a list-backed iterator stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Cursor {
    Start,
    At(usize),
    Done,
}

/// The empty list.
#[derive(Debug, Default, Clone, Copy)]
pub struct EmptyPostings;

impl Postings for EmptyPostings {
    fn next(&mut self) -> Option<SeriesRef> {
        None
    }
    fn seek(&mut self, _: SeriesRef) -> Option<SeriesRef> {
        None
    }
    fn at(&self) -> Option<SeriesRef> {
        None
    }
}

/// Postings over a sorted in-memory list.
#[derive(Debug, Clone)]
pub struct ListPostings<'a> {
    list: std::borrow::Cow<'a, [SeriesRef]>,
    cur: Cursor,
}

impl<'a> ListPostings<'a> {
    /// `list` must be strictly increasing.
    pub fn new(list: impl Into<std::borrow::Cow<'a, [SeriesRef]>>) -> Self {
        ListPostings {
            list: list.into(),
            cur: Cursor::Start,
        }
    }
}

impl Postings for ListPostings<'_> {
    fn next(&mut self) -> Option<SeriesRef> {
        let i = match self.cur {
            Cursor::Start => 0,
            Cursor::At(i) => i + 1,
            Cursor::Done => return None,
        };
        self.cur = if i < self.list.len() {
            Cursor::At(i)
        } else {
            Cursor::Done
        };
        self.at()
    }

    fn seek(&mut self, target: SeriesRef) -> Option<SeriesRef> {
        let from = match self.cur {
            Cursor::Start => 0,
            Cursor::At(i) if self.list[i] >= target => return Some(self.list[i]),
            Cursor::At(i) => i + 1,
            Cursor::Done => return None,
        };
        let i = from + self.list[from..].partition_point(|&v| v < target);
        self.cur = if i < self.list.len() {
            Cursor::At(i)
        } else {
            Cursor::Done
        };
        self.at()
    }

    fn at(&self) -> Option<SeriesRef> {
        match self.cur {
            Cursor::At(i) => Some(self.list[i]),
            _ => None,
        }
    }
}

/// Postings over a raw on-disk list of big-endian u32 references (the body
/// of a postings section after its count). Seeks binary-search the bytes.
#[derive(Debug, Clone)]
pub struct BigEndianPostings<'a> {
    list: &'a [u8],
    cur: Cursor,
}

impl<'a> BigEndianPostings<'a> {
    /// `list.len()` must be a multiple of 4 (a trailing partial entry is
    /// ignored).
    pub fn new(list: &'a [u8]) -> Self {
        BigEndianPostings {
            list,
            cur: Cursor::Start,
        }
    }

    /// Number of references in the list.
    pub fn len(&self) -> usize {
        self.list.len() / 4
    }

    /// True when the list holds no reference.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn get(&self, i: usize) -> SeriesRef {
        let b = &self.list[4 * i..4 * i + 4];
        u64::from(u32::from_be_bytes([b[0], b[1], b[2], b[3]]))
    }

    fn settle(&mut self, i: usize) -> Option<SeriesRef> {
        self.cur = if i < self.len() {
            Cursor::At(i)
        } else {
            Cursor::Done
        };
        self.at()
    }
}

impl Postings for BigEndianPostings<'_> {
    fn next(&mut self) -> Option<SeriesRef> {
        match self.cur {
            Cursor::Start => self.settle(0),
            Cursor::At(i) => self.settle(i + 1),
            Cursor::Done => None,
        }
    }

    fn seek(&mut self, target: SeriesRef) -> Option<SeriesRef> {
        let from = match self.cur {
            Cursor::Start => 0,
            Cursor::At(i) if self.get(i) >= target => return Some(self.get(i)),
            Cursor::At(i) => i + 1,
            Cursor::Done => return None,
        };
        // Binary search over [from, len).
        let (mut lo, mut hi) = (from, self.len());
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            if self.get(mid) < target {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        self.settle(lo)
    }

    fn at(&self) -> Option<SeriesRef> {
        match self.cur {
            Cursor::At(i) => Some(self.get(i)),
            _ => None,
        }
    }
}

/// References present in every input. No input: the empty list.
pub fn intersect<'a>(mut its: Vec<BoxPostings<'a>>) -> BoxPostings<'a> {
    match its.len() {
        0 => Box::new(EmptyPostings),
        1 => its.pop().unwrap_or_else(|| Box::new(EmptyPostings)),
        _ => Box::new(Intersect {
            its,
            cur: None,
            done: false,
        }),
    }
}

struct Intersect<'a> {
    its: Vec<BoxPostings<'a>>,
    cur: Option<SeriesRef>,
    done: bool,
}

impl Intersect<'_> {
    /// Finds the first reference `>= target` that every input holds.
    fn align(&mut self, mut target: SeriesRef) -> Option<SeriesRef> {
        'outer: loop {
            for it in self.its.iter_mut() {
                match it.seek(target) {
                    None => {
                        self.done = true;
                        self.cur = None;
                        return None;
                    }
                    Some(v) if v > target => {
                        target = v;
                        continue 'outer;
                    }
                    Some(_) => {}
                }
            }
            self.cur = Some(target);
            return self.cur;
        }
    }
}

impl Postings for Intersect<'_> {
    fn next(&mut self) -> Option<SeriesRef> {
        if self.done {
            return None;
        }
        let first = match self.cur {
            None => self.its[0].next(),
            Some(c) => match c.checked_add(1) {
                Some(t) => self.its[0].seek(t),
                None => None,
            },
        };
        match first {
            Some(t) => self.align(t),
            None => {
                self.done = true;
                self.cur = None;
                None
            }
        }
    }

    fn seek(&mut self, target: SeriesRef) -> Option<SeriesRef> {
        if self.done {
            return None;
        }
        match self.cur {
            Some(c) if c >= target => Some(c),
            _ => self.align(target),
        }
    }

    fn at(&self) -> Option<SeriesRef> {
        self.cur
    }
}

/// References present in any input (a union without duplicates).
pub fn merge<'a>(mut its: Vec<BoxPostings<'a>>) -> BoxPostings<'a> {
    match its.len() {
        0 => Box::new(EmptyPostings),
        1 => its.pop().unwrap_or_else(|| Box::new(EmptyPostings)),
        _ => Box::new(Merge {
            its,
            heap: BinaryHeap::new(),
            started: false,
            cur: None,
        }),
    }
}

/// A k-way union: a min-heap of (current reference, input index) holding
/// every input that is not exhausted.
struct Merge<'a> {
    its: Vec<BoxPostings<'a>>,
    heap: BinaryHeap<Reverse<(SeriesRef, usize)>>,
    started: bool,
    cur: Option<SeriesRef>,
}

impl Merge<'_> {
    fn top(&mut self) -> Option<SeriesRef> {
        self.cur = self.heap.peek().map(|Reverse((v, _))| *v);
        self.cur
    }
}

impl Postings for Merge<'_> {
    fn next(&mut self) -> Option<SeriesRef> {
        if !self.started {
            self.started = true;
            for (i, it) in self.its.iter_mut().enumerate() {
                if let Some(v) = it.next() {
                    self.heap.push(Reverse((v, i)));
                }
            }
            return self.top();
        }
        let cur = self.cur?;
        // Advance every input sitting on the current reference.
        while let Some(&Reverse((v, i))) = self.heap.peek() {
            if v != cur {
                break;
            }
            self.heap.pop();
            if let Some(n) = self.its[i].next() {
                self.heap.push(Reverse((n, i)));
            }
        }
        self.top()
    }

    fn seek(&mut self, target: SeriesRef) -> Option<SeriesRef> {
        if !self.started {
            self.started = true;
            for (i, it) in self.its.iter_mut().enumerate() {
                if let Some(v) = it.seek(target) {
                    self.heap.push(Reverse((v, i)));
                }
            }
            return self.top();
        }
        while let Some(&Reverse((v, i))) = self.heap.peek() {
            if v >= target {
                break;
            }
            self.heap.pop();
            if let Some(n) = self.its[i].seek(target) {
                self.heap.push(Reverse((n, i)));
            }
        }
        self.top()
    }

    fn at(&self) -> Option<SeriesRef> {
        self.cur
    }
}

/// References of `full` that are not in `drop`.
pub fn without<'a>(full: BoxPostings<'a>, drop: BoxPostings<'a>) -> BoxPostings<'a> {
    Box::new(Without {
        full,
        drop,
        drop_done: false,
    })
}

struct Without<'a> {
    full: BoxPostings<'a>,
    drop: BoxPostings<'a>,
    drop_done: bool,
}

impl Without<'_> {
    /// From `candidate` (the current reference of `full`) onwards, the first
    /// reference not in `drop`.
    fn skip_dropped(&mut self, mut candidate: Option<SeriesRef>) -> Option<SeriesRef> {
        while let Some(v) = candidate {
            if self.drop_done {
                return Some(v);
            }
            match self.drop.seek(v) {
                None => {
                    self.drop_done = true;
                    return Some(v);
                }
                Some(d) if d == v => candidate = self.full.next(),
                Some(_) => return Some(v),
            }
        }
        None
    }
}

impl Postings for Without<'_> {
    fn next(&mut self) -> Option<SeriesRef> {
        let c = self.full.next();
        self.skip_dropped(c)
    }

    fn seek(&mut self, target: SeriesRef) -> Option<SeriesRef> {
        let c = self.full.seek(target);
        self.skip_dropped(c)
    }

    fn at(&self) -> Option<SeriesRef> {
        self.full.at()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::BTreeSet;

    fn list(v: &BTreeSet<u64>) -> BoxPostings<'static> {
        Box::new(ListPostings::new(v.iter().copied().collect::<Vec<_>>()))
    }

    fn be(v: &BTreeSet<u64>) -> Vec<u8> {
        v.iter().flat_map(|&x| (x as u32).to_be_bytes()).collect()
    }

    #[test]
    fn seek_never_goes_back() {
        let mut p = ListPostings::new(vec![2, 4, 6]);
        assert_eq!(p.seek(3), Some(4));
        assert_eq!(p.seek(1), Some(4));
        assert_eq!(p.next(), Some(6));
        assert_eq!(p.seek(7), None);
        assert_eq!(p.next(), None);
        let bytes = [0, 0, 0, 2, 0, 0, 0, 4];
        let mut b = BigEndianPostings::new(&bytes);
        assert_eq!(b.at(), None);
        assert_eq!(b.seek(0), Some(2));
        assert_eq!(b.seek(3), Some(4));
        assert_eq!(b.next(), None);
    }

    #[test]
    fn empty_combinators() {
        assert_eq!(expand(&mut *intersect(vec![])), Vec::<u64>::new());
        assert_eq!(expand(&mut *merge(vec![])), Vec::<u64>::new());
    }

    fn sets() -> impl Strategy<Value = Vec<BTreeSet<u64>>> {
        prop::collection::vec(prop::collection::btree_set(0u64..200, 0..60), 1..5)
    }

    proptest! {
        #[test]
        fn set_operations_match_btreeset(sets in sets(), seeks in prop::collection::vec(0u64..220, 0..8)) {
            let inter = sets.iter().skip(1).fold(sets[0].clone(), |a, b| &a & b);
            let union = sets.iter().fold(BTreeSet::new(), |a, b| &a | b);
            let diff = if sets.len() > 1 { &sets[0] - &sets[1] } else { sets[0].clone() };

            let got = expand(&mut *intersect(sets.iter().map(list).collect()));
            prop_assert_eq!(got, inter.iter().copied().collect::<Vec<_>>());
            let got = expand(&mut *merge(sets.iter().map(list).collect()));
            prop_assert_eq!(got, union.iter().copied().collect::<Vec<_>>());
            let drop = if sets.len() > 1 { list(&sets[1]) } else { Box::new(EmptyPostings) as BoxPostings };
            let got = expand(&mut *without(list(&sets[0]), drop));
            prop_assert_eq!(got, diff.iter().copied().collect::<Vec<_>>());

            // Seeks (sorted, as queries issue them) agree with the model.
            let bes: Vec<Vec<u8>> = sets.iter().map(be).collect();
            let mut sorted = seeks.clone();
            sorted.sort_unstable();
            let mut ops: Vec<(BoxPostings, &BTreeSet<u64>)> = vec![
                (intersect(bes.iter().map(|b| Box::new(BigEndianPostings::new(b)) as BoxPostings).collect()), &inter),
                (merge(bes.iter().map(|b| Box::new(BigEndianPostings::new(b)) as BoxPostings).collect()), &union),
            ];
            for (p, model) in ops.iter_mut() {
                let mut last: Option<u64> = None;
                for &t in &sorted {
                    let t = t.max(last.unwrap_or(0));
                    let want = model.range(t..).next().copied();
                    let got = p.seek(t);
                    prop_assert_eq!(got, want);
                    if got.is_none() { break; }
                    let want = model.range(got.unwrap_or(0) + 1..).next().copied();
                    prop_assert_eq!(p.next(), want);
                    last = want;
                    if want.is_none() { break; }
                }
            }
        }
    }
}
