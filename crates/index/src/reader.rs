//! Lazy, memory-mapped index reader.
//!
//! Opening an index reads only what every query needs and keeps it small:
//! the TOC, every 32nd symbol's offset (so a symbol lookup walks at most 31
//! strings), and a *sampled* postings offset table: for each label name, its
//! 1st, 33rd, 65th, ... value and its last value, with their positions in the
//! on-disk table. A postings lookup binary-searches the samples and walks at
//! most 31 on-disk entries; label values are read by walking the table. Series
//! entries and postings lists are decoded from the map on demand, and their
//! CRCs are checked each time (as Prometheus does), so a flipped bit surfaces
//! as [`IndexError::Checksum`] on the query that touches it.
//!
//! The symbol table's and postings offset table's CRCs are checked once, on
//! open, while they are sampled; later walks over them trust the bytes but
//! still bounds-check everything.

use std::collections::{BTreeMap, HashMap};
use std::fs::File;
use std::ops::Deref;
use std::path::Path;

use memmap2::Mmap;

use crate::encoding::{be32, be64, check_crc, uvarint, Dec, MAX_VARINT_LEN32};
use crate::error::{IndexError, Result};
use crate::postings::{merge, BigEndianPostings, BoxPostings, EmptyPostings};
use crate::{ChunkMeta, SeriesRef, HEADER_LEN, MAGIC, SAMPLE_RATE, SERIES_ALIGN, TOC_LEN};

/// The table of contents: where each section starts (0 = absent).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Toc {
    pub symbols: u64,
    pub series: u64,
    pub label_indices: u64,
    pub label_indices_table: u64,
    pub postings: u64,
    pub postings_table: u64,
}

impl Toc {
    /// Parses and CRC-checks the TOC at the end of `data`.
    pub fn from_index_bytes(data: &[u8]) -> Result<Toc> {
        if data.len() < TOC_LEN {
            return Err(IndexError::TooShort { len: data.len() });
        }
        let start = data.len() - TOC_LEN;
        check_crc(data, start, data.len() - 4, "TOC")?;
        let at = |i: usize| be64(data, start + 8 * i).unwrap_or(0);
        Ok(Toc {
            symbols: at(0),
            series: at(1),
            label_indices: at(2),
            label_indices_table: at(3),
            postings: at(4),
            postings_table: at(5),
        })
    }
}

/// One label pair of a decoded series, borrowed from the index.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Label<'a> {
    pub name: &'a [u8],
    pub value: &'a [u8],
}

/// The bytes the reader works on.
enum Data {
    Mmap(Mmap),
    Owned(Vec<u8>),
}

impl Deref for Data {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        match self {
            Data::Mmap(m) => m,
            Data::Owned(v) => v,
        }
    }
}

/// A sampled entry of the postings offset table.
#[derive(Debug, Clone)]
struct Sample {
    value: Box<[u8]>,
    /// Position of the entry, relative to the start of the table's body.
    off: usize,
}

/// Recently resolved symbols of one reader (see
/// [`IndexReader::series_cached`]); direct-mapped by id, not shared
/// between threads.
pub struct SymbolCache<'a> {
    slots: Vec<(u32, &'a [u8])>,
}

impl Default for SymbolCache<'_> {
    fn default() -> Self {
        SymbolCache::with_slots(256)
    }
}

impl<'a> SymbolCache<'a> {
    /// A cache of `slots` entries (at least one): more for a reader that
    /// walks every series of a block, such as a compaction.
    pub fn with_slots(slots: usize) -> Self {
        SymbolCache {
            slots: vec![(u32::MAX, &[][..]); slots.max(1)],
        }
    }

    fn get_or(
        &mut self,
        id: u32,
        resolve: impl FnOnce(u32) -> Result<&'a [u8]>,
    ) -> Result<&'a [u8]> {
        if id == u32::MAX {
            // The empty slots' marker: never cached.
            return resolve(id);
        }
        let len = self.slots.len();
        let slot = &mut self.slots[id as usize % len];
        if slot.0 != id {
            *slot = (id, resolve(id)?);
        }
        Ok(slot.1)
    }
}

/// A reader over one index file.
pub struct IndexReader {
    data: Data,
    version: u8,
    toc: Toc,
    /// Symbol count, and the file offset of every 32nd symbol.
    num_symbols: u32,
    symbol_offsets: Vec<usize>,
    /// Label name -> sampled values; the empty name is the all-postings key.
    postings: BTreeMap<Box<[u8]>, Vec<Sample>>,
    /// Body of the postings offset table: `[start, end)` in the file.
    po_body: (usize, usize),
    /// Label name symbols, resolved once (they make up half of all
    /// lookups), sorted by id.
    name_symbols: Vec<(u32, Box<[u8]>)>,
    /// End of the symbol table in the file.
    symbols_end: usize,
}

impl std::fmt::Debug for IndexReader {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("IndexReader")
            .field("len", &self.data.len())
            .field("version", &self.version)
            .field("toc", &self.toc)
            .field("symbols", &self.num_symbols)
            .field("label_names", &self.postings.len())
            .finish()
    }
}

impl IndexReader {
    /// Memory-maps and opens the index file at `path`.
    pub fn open(path: impl AsRef<Path>) -> Result<IndexReader> {
        let f = File::open(path.as_ref())?;
        // SAFETY: block index files are immutable once written; the map is
        // only read, and every access is bounds-checked against its length.
        let map = unsafe { Mmap::map(&f)? };
        let r = Self::new(Data::Mmap(map))?;
        if let Data::Mmap(map) = &r.data {
            // Opening walked the symbol and postings offset tables; what it
            // needs is in the sampled tables now. Dropping those pages from
            // this process (they stay in the page cache) keeps an open
            // block's resident memory to the tables, not the file.
            // SAFETY: the mapping is private and read-only: discarding its
            // pages only makes the next access fault them in from the file
            // again, unchanged.
            let _ = unsafe { map.unchecked_advise(memmap2::UncheckedAdvice::DontNeed) };
        }
        Ok(r)
    }

    /// Opens an index held in memory (tests, fuzzing).
    pub fn from_bytes(bytes: impl Into<Vec<u8>>) -> Result<IndexReader> {
        Self::new(Data::Owned(bytes.into()))
    }

    fn new(data: Data) -> Result<IndexReader> {
        let b: &[u8] = &data;
        if b.len() < HEADER_LEN {
            return Err(IndexError::TooShort { len: b.len() });
        }
        let magic = be32(b, 0).unwrap_or(0);
        if magic != MAGIC {
            return Err(IndexError::BadMagic(magic));
        }
        let version = b[4];
        if version != 2 && version != 3 {
            return Err(IndexError::UnsupportedVersion(version));
        }
        let toc = Toc::from_index_bytes(b)?;
        let (num_symbols, symbol_offsets) = sample_symbols(b, toc.symbols)?;
        let (postings, po_body) = sample_postings_table(b, toc.postings_table)?;
        let mut r = IndexReader {
            data,
            version,
            toc,
            num_symbols,
            symbol_offsets,
            postings,
            po_body,
            name_symbols: Vec::new(),
            symbols_end: 0,
        };
        r.symbols_end = r.compute_symbols_end();
        // As Prometheus does, every label name must be a symbol.
        let mut names = HashMap::with_capacity(r.postings.len());
        for name in r.postings.keys().filter(|n| !n.is_empty()) {
            names.insert(r.reverse_lookup(name)?, name.clone());
        }
        let mut names: Vec<(u32, Box<[u8]>)> = names.into_iter().collect();
        names.sort_unstable_by_key(|(id, _)| *id);
        r.name_symbols = names;
        Ok(r)
    }

    /// The format version in the header (2, or 3 which has the same layout).
    pub fn version(&self) -> u8 {
        self.version
    }

    /// The table of contents.
    pub fn toc(&self) -> Toc {
        self.toc
    }

    /// Size of the index in bytes.
    pub fn len(&self) -> usize {
        self.data.len()
    }

    /// Never true for an index that opened (the header alone is 5 bytes).
    pub fn is_empty(&self) -> bool {
        self.data.is_empty()
    }

    /// Number of symbols in the symbol table.
    pub fn num_symbols(&self) -> u32 {
        self.num_symbols
    }

    /// All symbols, in table (sorted) order.
    pub fn symbols(&self) -> Symbols<'_> {
        let start = self.symbol_offsets.first().copied().unwrap_or(0);
        let end = self.symbols_end();
        Symbols {
            dec: Dec::new(&self.data, start.min(end), end, "symbols"),
            left: self.num_symbols,
        }
    }

    fn symbols_end(&self) -> usize {
        self.symbols_end
    }

    fn compute_symbols_end(&self) -> usize {
        // The symbol table was bounds-checked on open.
        let off = self.toc.symbols as usize;
        off + 4 + be32(&self.data, off).unwrap_or(0) as usize
    }

    /// The string of symbol `id`.
    pub fn lookup_symbol(&self, id: u32) -> Result<&[u8]> {
        if id >= self.num_symbols {
            return Err(IndexError::UnknownSymbol(id));
        }
        let start = self.symbol_offsets[id as usize / SAMPLE_RATE];
        let mut d = Dec::new(&self.data, start, self.symbols_end(), "symbols");
        for _ in 0..id as usize % SAMPLE_RATE {
            d.uvarint_bytes()?;
        }
        d.uvarint_bytes()
    }

    /// The id of symbol `sym`, if the table holds it.
    pub fn reverse_lookup(&self, sym: &[u8]) -> Result<u32> {
        let missing = || IndexError::MissingSymbol(crate::error::shown(sym));
        let end = self.symbols_end();
        let at = |off: usize| Dec::new(&self.data, off, end, "symbols").uvarint_bytes();
        // Last sample <= sym.
        let (mut lo, mut hi) = (0, self.symbol_offsets.len());
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            if at(self.symbol_offsets[mid])? <= sym {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        if lo == 0 {
            return Err(missing());
        }
        let block = lo - 1;
        let mut d = Dec::new(&self.data, self.symbol_offsets[block], end, "symbols");
        let first = block * SAMPLE_RATE;
        let last = (first + SAMPLE_RATE).min(self.num_symbols as usize);
        for id in first..last {
            let s = d.uvarint_bytes()?;
            if s == sym {
                return Ok(id as u32);
            }
            if s > sym {
                break;
            }
        }
        Err(missing())
    }

    fn symbol(&self, id: u32) -> Result<&[u8]> {
        match self.name_symbols.binary_search_by_key(&id, |(i, _)| *i) {
            Ok(i) => Ok(&self.name_symbols[i].1),
            Err(_) => self.lookup_symbol(id),
        }
    }

    /// Decodes series `id` into `labels` and, if given, `chunks` (both are
    /// cleared first). The entry's CRC is checked.
    pub fn series<'a>(
        &'a self,
        id: SeriesRef,
        labels: &mut Vec<Label<'a>>,
        chunks: Option<&mut Vec<ChunkMeta>>,
    ) -> Result<()> {
        self.series_cached(id, labels, chunks, i64::MAX, None)
    }

    /// [`IndexReader::series`] keeping only the chunks that start at or
    /// before `until` (decoding stops at the first chunk after it: chunks
    /// are sorted by time, and a query over the start of a long block is
    /// spared the rest of the list), and remembering resolved label values
    /// in `cache` (if given), for a caller reading many series in turn:
    /// neighbouring series (sorted by labels) share most values, and
    /// resolving one otherwise scans up to 31 symbols.
    pub fn series_cached<'a>(
        &'a self,
        id: SeriesRef,
        labels: &mut Vec<Label<'a>>,
        chunks: Option<&mut Vec<ChunkMeta>>,
        until: i64,
        mut cache: Option<&mut SymbolCache<'a>>,
    ) -> Result<()> {
        labels.clear();
        let mut d = self.series_entry(id)?;
        let n = d.uvarint()?;
        for _ in 0..n {
            let name = d.uvarint32()?;
            let value = d.uvarint32()?;
            let value = match cache.as_deref_mut() {
                Some(c) => c.get_or(value, |v| self.symbol(v))?,
                None => self.symbol(value)?,
            };
            labels.push(Label {
                name: self.symbol(name)?,
                value,
            });
        }
        let Some(chunks) = chunks else {
            return Ok(());
        };
        chunks.clear();
        let n = d.uvarint()?;
        if n == 0 {
            return Ok(());
        }
        // Go's int64 arithmetic wraps; so does ours, so garbage decodes to
        // the same garbage instead of panicking.
        let mut mint = d.varint()?;
        let mut maxt = (d.uvarint()? as i64).wrapping_add(mint);
        let mut cref = d.uvarint()? as i64;
        if mint > until {
            return Ok(());
        }
        chunks.push(ChunkMeta {
            min_time: mint,
            max_time: maxt,
            chunk_ref: cref as u64,
        });
        for _ in 1..n {
            mint = (d.uvarint()? as i64).wrapping_add(maxt);
            maxt = (d.uvarint()? as i64).wrapping_add(mint);
            cref = cref.wrapping_add(d.varint()?);
            if mint > until {
                break;
            }
            chunks.push(ChunkMeta {
                min_time: mint,
                max_time: maxt,
                chunk_ref: cref as u64,
            });
        }
        Ok(())
    }

    /// The CRC-checked body of series entry `id`.
    fn series_entry(&self, id: SeriesRef) -> Result<Dec<'_>> {
        let b: &[u8] = &self.data;
        let off = id
            .checked_mul(SERIES_ALIGN)
            .and_then(|o| usize::try_from(o).ok())
            .filter(|&o| {
                o.checked_add(MAX_VARINT_LEN32)
                    .is_some_and(|e| e <= b.len())
            })
            .ok_or(IndexError::SeriesRefOutOfRange(id))?;
        let (len, n) = match uvarint(&b[off..off + MAX_VARINT_LEN32]) {
            Some(v) => v,
            None => return Err(IndexError::corrupt("series", off, "bad entry length")),
        };
        let body = off + n;
        let end = usize::try_from(len)
            .ok()
            .and_then(|l| body.checked_add(l))
            .filter(|&e| e.checked_add(4).is_some_and(|c| c <= b.len()))
            .ok_or_else(|| {
                IndexError::corrupt(
                    "series",
                    off,
                    format!("entry of {len} bytes runs past end of file"),
                )
            })?;
        check_crc(b, body, end, "series")?;
        Ok(Dec::new(b, body, end, "series"))
    }

    /// All label names, sorted (the all-postings key excluded).
    pub fn label_names(&self) -> Vec<&[u8]> {
        self.postings
            .keys()
            .filter(|n| !n.is_empty())
            .map(|n| &**n)
            .collect()
    }

    /// All values of label `name`, in table order (sorted, for v2).
    pub fn label_values(&self, name: &[u8]) -> Result<Vec<&[u8]>> {
        let Some(samples) = self.postings.get(name) else {
            return Ok(Vec::new());
        };
        let (Some(first), Some(last)) = (samples.first(), samples.last()) else {
            return Ok(Vec::new());
        };
        let mut out = Vec::with_capacity(samples.len() * SAMPLE_RATE);
        let mut walk = self.po_walk(first.off);
        while let Some((n, v, _)) = walk.next_entry()? {
            if n != name {
                break;
            }
            out.push(v);
            if v == &*last.value {
                break;
            }
        }
        Ok(out)
    }

    /// Label values, sorted. Same as [`Self::label_values`] for v2, whose
    /// table is sorted; kept for parity with Prometheus' reader.
    pub fn sorted_label_values(&self, name: &[u8]) -> Result<Vec<&[u8]>> {
        let mut v = self.label_values(name)?;
        if v.windows(2).any(|w| w[0] > w[1]) {
            v.sort_unstable();
        }
        Ok(v)
    }

    /// The series carrying `name` with any of `values` (a union). Unknown
    /// names and values contribute nothing. Every list's CRC is checked now.
    pub fn postings(&self, name: &[u8], values: &[&[u8]]) -> Result<BoxPostings<'_>> {
        let Some(samples) = self.postings.get(name) else {
            return Ok(Box::new(EmptyPostings));
        };
        let mut values: Vec<&[u8]> = values.to_vec();
        values.sort_unstable();
        values.dedup();
        let mut lists: Vec<BoxPostings<'_>> = Vec::with_capacity(values.len());
        for value in values {
            // The last sample at or before `value` starts the walk.
            let i = samples.partition_point(|s| &*s.value <= value);
            if i == 0 {
                continue;
            }
            let mut walk = self.po_walk(samples[i - 1].off);
            for _ in 0..SAMPLE_RATE {
                let Some((n, v, off)) = walk.next_entry()? else {
                    break;
                };
                if n != name || v > value {
                    break;
                }
                if v == value {
                    lists.push(Box::new(self.postings_list(off)?));
                    break;
                }
            }
        }
        Ok(merge(lists))
    }

    /// The union of the postings of every value of `name` that `matches`
    /// accepts (how regex and negative matchers are answered): one walk
    /// over the name's part of the offset table.
    pub fn postings_for_label_matching(
        &self,
        name: &[u8],
        mut matches: impl FnMut(&[u8]) -> bool,
    ) -> Result<BoxPostings<'_>> {
        let Some(samples) = self.postings.get(name) else {
            return Ok(Box::new(EmptyPostings));
        };
        let (Some(first), Some(last)) = (samples.first(), samples.last()) else {
            return Ok(Box::new(EmptyPostings));
        };
        let mut lists: Vec<BoxPostings<'_>> = Vec::new();
        let mut walk = self.po_walk(first.off);
        while let Some((n, v, off)) = walk.next_entry()? {
            if n != name {
                break;
            }
            if matches(v) {
                lists.push(Box::new(self.postings_list(off)?));
            }
            if v == &*last.value {
                break;
            }
        }
        Ok(merge(lists))
    }

    /// Every series in the index (the all-postings list).
    pub fn all_postings(&self) -> Result<BoxPostings<'_>> {
        self.postings(b"", &[b""])
    }

    /// Opens the postings list at file offset `off`, checking its CRC and
    /// that its count matches its length.
    fn postings_list(&self, off: u64) -> Result<BigEndianPostings<'_>> {
        let mut d = Dec::framed(&self.data, off, "postings", true)?;
        let n = d.be32()? as usize;
        if d.remaining() != 4 * n {
            return Err(d.err(format!(
                "postings list of {n} entries has {} bytes, want {}",
                d.remaining(),
                4 * n
            )));
        }
        Ok(BigEndianPostings::new(&self.data[d.pos..d.end]))
    }

    fn po_walk(&self, off: usize) -> PoWalk<'_> {
        let (start, end) = self.po_body;
        let pos = start.saturating_add(off).min(end);
        PoWalk {
            dec: Dec::new(&self.data, pos, end, "postings offset table"),
        }
    }
}

/// A postings offset table entry: name, value, postings list offset.
type PoEntry<'a> = (&'a [u8], &'a [u8], u64);

/// Walks entries of the postings offset table from a sampled position.
struct PoWalk<'a> {
    dec: Dec<'a>,
}

impl<'a> PoWalk<'a> {
    /// The next `(name, value, postings offset)`, or `None` at the end.
    fn next_entry(&mut self) -> Result<Option<PoEntry<'a>>> {
        if self.dec.remaining() == 0 {
            return Ok(None);
        }
        read_po_entry(&mut self.dec).map(Some)
    }
}

fn read_po_entry<'a>(d: &mut Dec<'a>) -> Result<PoEntry<'a>> {
    let at = d.pos;
    let keys = d.uvarint()?;
    if keys != 2 {
        return Err(IndexError::corrupt(
            d.section,
            at,
            format!("unexpected number of keys for postings offset table {keys}"),
        ));
    }
    let name = d.uvarint_bytes()?;
    let value = d.uvarint_bytes()?;
    let off = d.uvarint()?;
    Ok((name, value, off))
}

/// Checks the symbol table and records every 32nd symbol's offset.
fn sample_symbols(b: &[u8], off: u64) -> Result<(u32, Vec<usize>)> {
    let mut d = Dec::framed(b, off, "symbols", true)?;
    let count = d.be32()?;
    // Each symbol takes at least one byte: cap the allocation by the data.
    if count as usize > d.remaining() {
        return Err(d.err(format!(
            "{count} symbols cannot fit in {} bytes",
            d.remaining()
        )));
    }
    let mut offsets = Vec::with_capacity(count as usize / SAMPLE_RATE + 1);
    for i in 0..count as usize {
        if i % SAMPLE_RATE == 0 {
            offsets.push(d.pos);
        }
        d.uvarint_bytes()?;
    }
    Ok((count, offsets))
}

type SampledTable = (BTreeMap<Box<[u8]>, Vec<Sample>>, (usize, usize));

/// Checks the postings offset table and keeps, per label name, every 32nd
/// value and the last one.
fn sample_postings_table(b: &[u8], off: u64) -> Result<SampledTable> {
    let mut d = Dec::framed(b, off, "postings offset table", true)?;
    let body_start = d.pos;
    let mut count = d.be32()?;
    let mut table: BTreeMap<Box<[u8]>, Vec<Sample>> = BTreeMap::new();
    // The previous entry, if it was not sampled: it becomes its name's last
    // sample when the name changes.
    let mut pending: Option<(&[u8], Sample)> = None;
    let mut value_count = 0usize;
    while d.remaining() > 0 && count > 0 {
        let entry_off = d.pos - body_start;
        let (name, value, _) = read_po_entry(&mut d)?;
        if !table.contains_key(name) {
            table.insert(name.into(), Vec::new());
            if let Some((n, s)) = pending.take() {
                if let Some(v) = table.get_mut(n) {
                    v.push(s);
                }
            }
            value_count = 0;
        }
        let sample = Sample {
            value: value.into(),
            off: entry_off,
        };
        if value_count.is_multiple_of(SAMPLE_RATE) {
            if let Some(v) = table.get_mut(name) {
                v.push(sample);
            }
            pending = None;
        } else {
            pending = Some((name, sample));
        }
        value_count += 1;
        count -= 1;
    }
    if let Some((n, s)) = pending {
        if let Some(v) = table.get_mut(n) {
            v.push(s);
        }
    }
    Ok((table, (body_start, d.end)))
}

/// Iterator over the symbol table.
pub struct Symbols<'a> {
    dec: Dec<'a>,
    left: u32,
}

impl<'a> Iterator for Symbols<'a> {
    type Item = Result<&'a [u8]>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.left == 0 {
            return None;
        }
        self.left -= 1;
        match self.dec.uvarint_bytes() {
            Ok(s) => Some(Ok(s)),
            Err(e) => {
                self.left = 0;
                Some(Err(e))
            }
        }
    }
}
