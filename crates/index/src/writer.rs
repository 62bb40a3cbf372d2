//! Streaming index writer, byte-identical to Prometheus' `index.NewWriter`.
//!
//! Call order: [`IndexWriter::add_symbol`] for every label name and value
//! (sorted, unique), then [`IndexWriter::add_series`] for every series in
//! label-set order, then [`IndexWriter::close`]. Series go straight to the
//! file; postings are derived at close by reading the series section back.
//!
//! # Memory
//!
//! The writer never holds the series. What it keeps:
//!
//! * the file offset of every 32nd symbol (8 bytes per 32 symbols); symbols
//!   are looked up in a read-only map of the file's symbol table (binary
//!   search over the samples, then at most 31 strings), with a one-series
//!   cache: consecutive series share most label pairs, so most lookups are
//!   a comparison with the previous series;
//! * the previous series' label set, and one counter per label name;
//! * at close, postings for one *batch* of label names at a time: names are
//!   grouped so that a batch's total postings never exceed the number of
//!   series (one name per batch if it alone is larger), then the series
//!   section is rescanned per batch. That is 4 bytes per series plus map
//!   overhead at most, as in Prometheus. The all-postings list is streamed
//!   straight from the scan, not collected.
//! * the postings offset table is spooled to a temporary file next to the
//!   index (`<index>_tmp_po`, removed at close) and copied in at the end.
//!
//! Postings are written directly into the index (Prometheus spools them to
//! `<index>_tmp_p` first; the bytes that reach the index are the same, since
//! both pad each list to 4 bytes from a 4-aligned start).
//!
//! Beyond what Prometheus checks, label names within a set must be non-empty
//! and strictly increasing (Prometheus' `Labels` guarantees this by
//! construction); a set that violates it is refused.

use std::cmp::Ordering;
use std::collections::BTreeMap;
use std::fs::{self, File, OpenOptions};
use std::io::{self, BufWriter, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use memmap2::Mmap;

use crate::encoding::{put_uvarint, put_uvarint_bytes, put_varint, uvarint, Dec};
use crate::error::{IndexError, Result};
use crate::reader::Toc;
use crate::{
    ChunkMeta, SeriesRef, FORMAT_V2, MAGIC, MAX_INDEX_SIZE, POSTINGS_ALIGN, SAMPLE_RATE,
    SERIES_ALIGN,
};

const BUF_SIZE: usize = 1 << 20;

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Stage {
    None,
    Symbols,
    Series,
    Done,
}

/// Writes one index file. See the module docs for the call order.
pub struct IndexWriter {
    path: PathBuf,
    out: BufWriter<File>,
    pos: u64,
    stage: Stage,
    toc: Toc,
    buf: Vec<u8>,

    num_symbols: u32,
    last_symbol: Vec<u8>,
    /// File offset of every 32nd symbol.
    symbol_offsets: Vec<u64>,
    /// End of the symbol strings (where the symbol table's CRC sits).
    symbols_end: u64,
    /// The finished symbol table, mapped read-only.
    symbol_map: Option<Mmap>,

    last_labels: Vec<(Vec<u8>, Vec<u8>)>,
    last_ids: Vec<(u32, u32)>,
    last_chunk_ref: u64,
    num_series: u64,
    /// Label name symbol -> number of series carrying it.
    name_usage: BTreeMap<u32, u64>,
}

impl std::fmt::Debug for IndexWriter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("IndexWriter")
            .field("path", &self.path)
            .field("pos", &self.pos)
            .field("symbols", &self.num_symbols)
            .field("series", &self.num_series)
            .finish()
    }
}

impl IndexWriter {
    /// Creates the index at `path`, replacing any file there, and writes the
    /// header.
    pub fn create(path: impl AsRef<Path>) -> Result<IndexWriter> {
        let path = path.as_ref().to_path_buf();
        match fs::remove_file(&path) {
            Err(e) if e.kind() != io::ErrorKind::NotFound => return Err(e.into()),
            _ => {}
        }
        let f = OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .open(&path)?;
        let mut w = IndexWriter {
            path,
            out: BufWriter::with_capacity(BUF_SIZE, f),
            pos: 0,
            stage: Stage::None,
            toc: Toc::default(),
            buf: Vec::with_capacity(4096),
            num_symbols: 0,
            last_symbol: Vec::new(),
            symbol_offsets: Vec::new(),
            symbols_end: 0,
            symbol_map: None,
            last_labels: Vec::new(),
            last_ids: Vec::new(),
            last_chunk_ref: 0,
            num_series: 0,
            name_usage: BTreeMap::new(),
        };
        let mut header = MAGIC.to_be_bytes().to_vec();
        header.push(FORMAT_V2);
        w.write(&header)?;
        Ok(w)
    }

    fn write(&mut self, b: &[u8]) -> Result<()> {
        self.out.write_all(b)?;
        self.pos += b.len() as u64;
        if self.pos > MAX_INDEX_SIZE {
            return Err(IndexError::TooLarge);
        }
        Ok(())
    }

    /// Overwrites already-written bytes at `at`.
    fn patch(&mut self, at: u64, b: &[u8]) -> Result<()> {
        self.out.flush()?;
        let f = self.out.get_mut();
        f.seek(SeekFrom::Start(at))?;
        f.write_all(b)?;
        f.seek(SeekFrom::Start(self.pos))?;
        Ok(())
    }

    fn pad_to(&mut self, align: u64) -> Result<()> {
        let r = self.pos % align;
        if r != 0 {
            let zeros = [0u8; 16];
            self.write(&zeros[..(align - r) as usize])?;
        }
        Ok(())
    }

    /// Moves through the stages in order, running the work of each one
    /// entered, as Prometheus does: skipping ahead runs the skipped stages.
    fn ensure_stage(&mut self, s: Stage) -> Result<()> {
        while self.stage < s {
            match self.stage {
                Stage::None => {
                    self.toc.symbols = self.pos;
                    // Length and count, patched when the table is finished.
                    self.write(&[0; 8])?;
                    self.stage = Stage::Symbols;
                }
                Stage::Symbols => {
                    self.finish_symbols()?;
                    self.toc.series = self.pos;
                    self.stage = Stage::Series;
                }
                Stage::Series => {
                    self.finish()?;
                    self.stage = Stage::Done;
                }
                Stage::Done => break,
            }
        }
        if self.stage > s {
            return Err(IndexError::Stage(match s {
                Stage::Symbols => "symbols must all be added before the first series",
                _ => "the index is already closed",
            }));
        }
        Ok(())
    }

    /// Adds the next symbol. Symbols must be strictly increasing (byte order).
    pub fn add_symbol(&mut self, sym: impl AsRef<[u8]>) -> Result<()> {
        let sym = sym.as_ref();
        self.ensure_stage(Stage::Symbols)?;
        if self.num_symbols != 0 && sym <= self.last_symbol.as_slice() {
            return Err(IndexError::SymbolOutOfOrder {
                symbol: lossy(sym),
                previous: lossy(&self.last_symbol),
            });
        }
        if (self.num_symbols as usize).is_multiple_of(SAMPLE_RATE) {
            self.symbol_offsets.push(self.pos);
        }
        self.num_symbols = self
            .num_symbols
            .checked_add(1)
            .ok_or(IndexError::TooLarge)?;
        self.last_symbol.clear();
        self.last_symbol.extend_from_slice(sym);
        let mut buf = std::mem::take(&mut self.buf);
        buf.clear();
        put_uvarint_bytes(&mut buf, sym);
        let r = self.write(&buf);
        self.buf = buf;
        r
    }

    fn finish_symbols(&mut self) -> Result<()> {
        let start = self.toc.symbols;
        let size = self.pos - start - 4;
        let size = u32::try_from(size).map_err(|_| IndexError::TooLarge)?;
        let mut head = [0u8; 8];
        head[..4].copy_from_slice(&size.to_be_bytes());
        head[4..].copy_from_slice(&self.num_symbols.to_be_bytes());
        self.patch(start, &head)?;
        self.symbols_end = self.pos;
        // SAFETY: the map covers bytes this writer already wrote and never
        // changes again; the file is private to the writer until close.
        let map = unsafe { Mmap::map(self.out.get_ref())? };
        let crc = crc32c::crc32c(&map[start as usize + 4..self.symbols_end as usize]);
        self.symbol_map = Some(map);
        self.write(&crc.to_be_bytes())
    }

    /// The string of symbol `id`, read from the mapped symbol table.
    fn symbol(&self, id: u32) -> Result<&[u8]> {
        let map = self
            .symbol_map
            .as_deref()
            .ok_or(IndexError::Stage("symbol table not finished"))?;
        let start = *self
            .symbol_offsets
            .get(id as usize / SAMPLE_RATE)
            .ok_or(IndexError::UnknownSymbol(id))?;
        let mut d = Dec::new(map, start as usize, self.symbols_end as usize, "symbols");
        for _ in 0..id as usize % SAMPLE_RATE {
            d.uvarint_bytes()?;
        }
        d.uvarint_bytes()
    }

    /// The id of symbol `sym`: binary search over the sampled offsets, then
    /// a walk of at most 31 strings.
    fn symbol_id(&self, sym: &[u8]) -> Result<u32> {
        let missing = || IndexError::MissingSymbol(lossy(sym));
        let map = self
            .symbol_map
            .as_deref()
            .ok_or(IndexError::Stage("symbol table not finished"))?;
        let end = self.symbols_end as usize;
        let (mut lo, mut hi) = (0, self.symbol_offsets.len());
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            let s =
                Dec::new(map, self.symbol_offsets[mid] as usize, end, "symbols").uvarint_bytes()?;
            if s <= sym {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        if lo == 0 {
            return Err(missing());
        }
        let block = lo - 1;
        let mut d = Dec::new(map, self.symbol_offsets[block] as usize, end, "symbols");
        let first = block * SAMPLE_RATE;
        let last = (first + SAMPLE_RATE).min(self.num_symbols as usize);
        for id in first..last {
            match d.uvarint_bytes()?.cmp(sym) {
                Ordering::Equal => return Ok(id as u32),
                Ordering::Greater => break,
                Ordering::Less => {}
            }
        }
        Err(missing())
    }

    /// Symbol id of the `i`-th label's name (`which` = 0) or value (1),
    /// reusing the previous series' ids when the string is the same.
    fn cached_id(&self, i: usize, which: u8, s: &[u8]) -> Result<u32> {
        if let (Some((n, v)), Some(&(ni, vi))) = (self.last_labels.get(i), self.last_ids.get(i)) {
            if which == 0 && n.as_slice() == s {
                return Ok(ni);
            }
            if which == 1 && v.as_slice() == s {
                return Ok(vi);
            }
        }
        self.symbol_id(s)
    }

    /// Adds the next series and returns its reference (offset / 16).
    ///
    /// Label sets must come in strictly increasing order; within a set,
    /// names must be non-empty and strictly increasing. Every name and value
    /// must have been added as a symbol. Chunk metas must have
    /// `min_time <= max_time`, strictly increasing non-overlapping ranges,
    /// and chunk refs that never decrease, also across series.
    pub fn add_series<N, V>(&mut self, labels: &[(N, V)], chunks: &[ChunkMeta]) -> Result<SeriesRef>
    where
        N: AsRef<[u8]>,
        V: AsRef<[u8]>,
    {
        self.ensure_stage(Stage::Series)?;
        if compare_labels(labels, &self.last_labels) != Ordering::Greater {
            return Err(IndexError::SeriesOutOfOrder {
                series: fmt_labels(labels.iter().map(|(n, v)| (n.as_ref(), v.as_ref()))),
                previous: fmt_labels(
                    self.last_labels
                        .iter()
                        .map(|(n, v)| (n.as_slice(), v.as_slice())),
                ),
            });
        }
        for (i, (n, _)) in labels.iter().enumerate() {
            let n = n.as_ref();
            let reason = if n.is_empty() {
                Some("empty label name")
            } else if i > 0 && labels[i - 1].0.as_ref() >= n {
                Some("label names not sorted and unique")
            } else {
                None
            };
            if let Some(reason) = reason {
                return Err(IndexError::InvalidLabels {
                    series: fmt_labels(labels.iter().map(|(n, v)| (n.as_ref(), v.as_ref()))),
                    reason: reason.into(),
                });
            }
        }
        let mut last_ref = self.last_chunk_ref;
        for (i, c) in chunks.iter().enumerate() {
            if c.chunk_ref < last_ref {
                return Err(IndexError::InvalidChunks(format!(
                    "unsorted chunk reference: {}, previous: {}",
                    c.chunk_ref, last_ref
                )));
            }
            last_ref = c.chunk_ref;
            if i > 0 && c.min_time <= chunks[i - 1].max_time {
                return Err(IndexError::InvalidChunks(format!(
                    "chunk minT {} is not higher than previous chunk maxT {}",
                    c.min_time,
                    chunks[i - 1].max_time
                )));
            }
            if c.max_time < c.min_time {
                return Err(IndexError::InvalidChunks(format!(
                    "chunk maxT {} is less than minT {}",
                    c.max_time, c.min_time
                )));
            }
        }

        self.pad_to(SERIES_ALIGN)?;
        let series_ref = self.pos / SERIES_ALIGN;

        let mut ids = Vec::with_capacity(labels.len());
        for (i, (n, v)) in labels.iter().enumerate() {
            ids.push((
                self.cached_id(i, 0, n.as_ref())?,
                self.cached_id(i, 1, v.as_ref())?,
            ));
        }

        let mut body = std::mem::take(&mut self.buf);
        body.clear();
        put_uvarint(&mut body, labels.len() as u64);
        for &(n, v) in &ids {
            put_uvarint(&mut body, n.into());
            put_uvarint(&mut body, v.into());
        }
        put_uvarint(&mut body, chunks.len() as u64);
        if let Some(first) = chunks.first() {
            // Go computes these in int64 and reinterprets; wrapping matches.
            put_varint(&mut body, first.min_time);
            put_uvarint(
                &mut body,
                first.max_time.wrapping_sub(first.min_time) as u64,
            );
            put_uvarint(&mut body, first.chunk_ref);
            let (mut t0, mut r0) = (first.max_time, first.chunk_ref as i64);
            for c in &chunks[1..] {
                put_uvarint(&mut body, c.min_time.wrapping_sub(t0) as u64);
                put_uvarint(&mut body, c.max_time.wrapping_sub(c.min_time) as u64);
                put_varint(&mut body, (c.chunk_ref as i64).wrapping_sub(r0));
                t0 = c.max_time;
                r0 = c.chunk_ref as i64;
            }
        }
        let mut head = Vec::with_capacity(10);
        put_uvarint(&mut head, body.len() as u64);
        let crc = crc32c::crc32c(&body);
        let r = self
            .write(&head)
            .and_then(|_| self.write(&body))
            .and_then(|_| self.write(&crc.to_be_bytes()));
        self.buf = body;
        r?;

        for &(n, _) in &ids {
            *self.name_usage.entry(n).or_insert(0) += 1;
        }
        self.last_labels.truncate(labels.len());
        for (i, (n, v)) in labels.iter().enumerate() {
            if i == self.last_labels.len() {
                self.last_labels.push((Vec::new(), Vec::new()));
            }
            let slot = &mut self.last_labels[i];
            slot.0.clear();
            slot.0.extend_from_slice(n.as_ref());
            slot.1.clear();
            slot.1.extend_from_slice(v.as_ref());
        }
        self.last_ids = ids;
        self.last_chunk_ref = last_ref;
        self.num_series += 1;
        Ok(series_ref)
    }

    /// Writes postings, the postings offset table and the TOC, and syncs
    /// the file. Works at any stage: a writer with no symbols or no series
    /// produces a valid, empty index, as Prometheus' does.
    pub fn close(mut self) -> Result<()> {
        let po_path = tmp_po_path(&self.path);
        let r = self.ensure_stage(Stage::Done);
        let _ = fs::remove_file(&po_path);
        r?;
        self.out.flush()?;
        self.out.get_ref().sync_all()?;
        Ok(())
    }

    /// The close-time work: everything after the series.
    fn finish(&mut self) -> Result<()> {
        self.toc.label_indices = self.pos;
        self.toc.postings = self.pos;
        self.out.flush()?;
        // SAFETY: as for the symbol table: bytes already written and never
        // rewritten (later writes only append past the mapped length).
        let map = unsafe { Mmap::map(self.out.get_ref())? };
        let series = (self.toc.series as usize, self.toc.label_indices as usize);

        let po_path = tmp_po_path(&self.path);
        let mut po = PoSpool {
            out: BufWriter::with_capacity(
                BUF_SIZE,
                OpenOptions::new()
                    .read(true)
                    .write(true)
                    .create(true)
                    .truncate(true)
                    .open(&po_path)?,
            ),
            count: 0,
            len: 0,
            buf: Vec::new(),
        };

        self.pad_to(POSTINGS_ALIGN)?;
        self.write_all_postings(&map, series, &mut po)?;

        // Batches of names whose postings together fit in the number of
        // series (a name alone always fits: it is used once per series).
        let names: Vec<(u32, u64)> = self.name_usage.iter().map(|(&n, &c)| (n, c)).collect();
        let mut i = 0;
        while i < names.len() {
            let (lo, mut hi, mut total) = (names[i].0, names[i].0, names[i].1);
            i += 1;
            while i < names.len() && total + names[i].1 <= self.num_series {
                total += names[i].1;
                hi = names[i].0;
                i += 1;
            }
            self.write_batch(&map, series, lo..=hi, &mut po)?;
        }
        drop(map);

        // Postings offset table: len, count, entries, CRC.
        po.out.flush()?;
        let mut f = po.out.into_inner().map_err(|e| e.into_error())?;
        f.seek(SeekFrom::Start(0))?;
        self.toc.label_indices_table = self.pos;
        self.toc.postings_table = self.pos;
        let len = u32::try_from(4 + po.len).map_err(|_| IndexError::TooLarge)?;
        self.write(&len.to_be_bytes())?;
        let count = u32::try_from(po.count).map_err(|_| IndexError::TooLarge)?;
        let mut crc = crc32c::crc32c(&count.to_be_bytes());
        self.write(&count.to_be_bytes())?;
        let mut chunk = vec![0u8; 64 * 1024];
        let mut copied = 0u64;
        loop {
            let n = f.read(&mut chunk)?;
            if n == 0 {
                break;
            }
            crc = crc32c::crc32c_append(crc, &chunk[..n]);
            self.write(&chunk[..n])?;
            copied += n as u64;
        }
        if copied != po.len {
            return Err(IndexError::Io(io::Error::other(format!(
                "postings offset spool: wrote {} bytes, read back {copied}",
                po.len
            ))));
        }
        self.write(&crc.to_be_bytes())?;

        let t = self.toc;
        let mut toc = Vec::with_capacity(crate::TOC_LEN);
        for v in [
            t.symbols,
            t.series,
            t.label_indices,
            t.label_indices_table,
            t.postings,
            t.postings_table,
        ] {
            toc.extend_from_slice(&v.to_be_bytes());
        }
        let crc = crc32c::crc32c(&toc);
        toc.extend_from_slice(&crc.to_be_bytes());
        self.write(&toc)
    }

    /// The all-postings list, streamed from a scan of the series section.
    fn write_all_postings(
        &mut self,
        map: &[u8],
        series: (usize, usize),
        po: &mut PoSpool,
    ) -> Result<()> {
        let n = u32::try_from(self.num_series).map_err(|_| IndexError::TooLarge)?;
        let len = 4u64 + 4 * u64::from(n);
        let len = u32::try_from(len).map_err(|_| IndexError::TooLarge)?;
        po.add(b"", b"", self.pos)?;
        self.write(&len.to_be_bytes())?;
        let mut crc = crc32c::crc32c(&n.to_be_bytes());
        self.write(&n.to_be_bytes())?;
        let mut seen = 0u64;
        let mut chunk = Vec::with_capacity(4096);
        let mut scan = SeriesScan::new(map, series);
        while let Some((sref, _)) = scan.next_series()? {
            chunk.extend_from_slice(&(sref as u32).to_be_bytes());
            seen += 1;
            if chunk.len() >= 4096 {
                crc = crc32c::crc32c_append(crc, &chunk);
                self.write(&chunk)?;
                chunk.clear();
            }
        }
        crc = crc32c::crc32c_append(crc, &chunk);
        self.write(&chunk)?;
        if seen != self.num_series {
            return Err(IndexError::corrupt(
                "series",
                series.0,
                format!(
                    "rescan found {seen} series, {} were written",
                    self.num_series
                ),
            ));
        }
        self.write(&crc.to_be_bytes())
    }

    /// Postings of every label name whose symbol is in `names`.
    fn write_batch(
        &mut self,
        map: &[u8],
        series: (usize, usize),
        names: std::ops::RangeInclusive<u32>,
        po: &mut PoSpool,
    ) -> Result<()> {
        let mut lists: BTreeMap<(u32, u32), Vec<u32>> = BTreeMap::new();
        let mut scan = SeriesScan::new(map, series);
        while let Some((sref, mut d)) = scan.next_series()? {
            let n = d.uvarint()?;
            for _ in 0..n {
                let name = d.uvarint32()?;
                let value = d.uvarint32()?;
                if names.contains(&name) {
                    lists.entry((name, value)).or_default().push(sref as u32);
                }
            }
        }
        let mut buf = Vec::new();
        for ((name, value), refs) in lists {
            self.pad_to(POSTINGS_ALIGN)?;
            let off = self.pos;
            po.add(self.symbol(name)?, self.symbol(value)?, off)?;
            let len = u32::try_from(4 + 4 * refs.len() as u64).map_err(|_| IndexError::TooLarge)?;
            buf.clear();
            buf.extend_from_slice(&len.to_be_bytes());
            buf.extend_from_slice(&(refs.len() as u32).to_be_bytes());
            for r in &refs {
                buf.extend_from_slice(&r.to_be_bytes());
            }
            let crc = crc32c::crc32c(&buf[4..]);
            buf.extend_from_slice(&crc.to_be_bytes());
            self.write(&buf)?;
        }
        Ok(())
    }
}

/// The postings offset table's entries, spooled to a temporary file.
struct PoSpool {
    out: BufWriter<File>,
    count: u64,
    len: u64,
    buf: Vec<u8>,
}

impl PoSpool {
    fn add(&mut self, name: &[u8], value: &[u8], off: u64) -> Result<()> {
        self.buf.clear();
        put_uvarint(&mut self.buf, 2);
        put_uvarint_bytes(&mut self.buf, name);
        put_uvarint_bytes(&mut self.buf, value);
        put_uvarint(&mut self.buf, off);
        self.out.write_all(&self.buf)?;
        self.count += 1;
        self.len += self.buf.len() as u64;
        Ok(())
    }
}

/// Walks the series section this writer wrote: skips the zero padding,
/// yields each entry's reference and a cursor over its body.
struct SeriesScan<'a> {
    map: &'a [u8],
    pos: usize,
    end: usize,
}

impl<'a> SeriesScan<'a> {
    fn new(map: &'a [u8], (start, end): (usize, usize)) -> Self {
        SeriesScan {
            map,
            pos: start,
            end,
        }
    }

    fn next_series(&mut self) -> Result<Option<(SeriesRef, Dec<'a>)>> {
        while self.pos < self.end && self.map[self.pos] == 0 {
            self.pos += 1;
        }
        if self.pos >= self.end {
            return Ok(None);
        }
        let start = self.pos;
        if !(start as u64).is_multiple_of(SERIES_ALIGN) {
            return Err(IndexError::corrupt(
                "series",
                start,
                "series not 16-byte aligned",
            ));
        }
        let (len, n) = uvarint(&self.map[start..self.end])
            .ok_or_else(|| IndexError::corrupt("series", start, "bad entry length"))?;
        let body = start + n;
        let end = usize::try_from(len)
            .ok()
            .and_then(|l| body.checked_add(l))
            .filter(|&e| e + 4 <= self.end)
            .ok_or_else(|| IndexError::corrupt("series", start, "entry runs past the section"))?;
        self.pos = end + 4;
        Ok(Some((
            start as u64 / SERIES_ALIGN,
            Dec::new(self.map, body, end, "series"),
        )))
    }
}

fn tmp_po_path(path: &Path) -> PathBuf {
    let mut s = path.as_os_str().to_owned();
    s.push("_tmp_po");
    PathBuf::from(s)
}

/// Label sets compared as Prometheus' `labels.Compare` does: pair by pair,
/// name then value; a prefix sorts first.
fn compare_labels<N, V, M, W>(a: &[(N, V)], b: &[(M, W)]) -> Ordering
where
    N: AsRef<[u8]>,
    V: AsRef<[u8]>,
    M: AsRef<[u8]>,
    W: AsRef<[u8]>,
{
    for ((an, av), (bn, bv)) in a.iter().zip(b) {
        let o = an
            .as_ref()
            .cmp(bn.as_ref())
            .then_with(|| av.as_ref().cmp(bv.as_ref()));
        if o != Ordering::Equal {
            return o;
        }
    }
    a.len().cmp(&b.len())
}

fn lossy(b: &[u8]) -> String {
    crate::error::shown(b)
}

fn fmt_labels<'a>(labels: impl Iterator<Item = (&'a [u8], &'a [u8])>) -> String {
    let parts: Vec<String> = labels
        .map(|(n, v)| format!("{}={:?}", lossy(n), lossy(v)))
        .collect();
    format!("{{{}}}", parts.join(", "))
}
