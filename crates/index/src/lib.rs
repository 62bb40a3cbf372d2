//! The index file of a Prometheus TSDB block (format v2).
//!
//! Every persisted block directory holds one `index` file: it maps label
//! sets to series, series to the chunks (time ranges and positions in the
//! `chunks/` segment files) that hold their samples, and label pairs to the
//! sorted lists of series that carry them (postings). Ferrite writes this file
//! byte for byte as Prometheus v3.9.1 (`tsdb/index`, `index.NewWriter`) does
//! and reads any index Prometheus writes, so blocks can move between the two.
//!
//! * [`IndexWriter`] streams an index to disk: symbols first, then series in
//!   label-set order, then `close` derives the postings.
//! * [`IndexReader`] memory-maps an index and decodes on demand.
//! * [`postings`] holds the postings iterators and the set operations
//!   (intersection, union, difference) queries are built from.
//! * [`text`] is the spec / dump text form used to cross-check against
//!   Prometheus (`ferrite debug index`, `interop/cmd/promindexgen`).
//!
//! ```
//! use ferrite_index::{postings, ChunkMeta, IndexReader, IndexWriter};
//!
//! let dir = tempfile::tempdir()?;
//! let path = dir.path().join("index");
//! let mut w = IndexWriter::create(&path)?;
//! for s in ["__name__", "a", "b", "job", "up"] {
//!     w.add_symbol(s)?; // sorted, unique
//! }
//! let chunk = ChunkMeta { min_time: 0, max_time: 999, chunk_ref: 8 };
//! let a = w.add_series(&[("__name__", "up"), ("job", "a")], &[chunk])?;
//! let b = w.add_series(&[("__name__", "up"), ("job", "b")], &[])?;
//! w.close()?;
//!
//! let r = IndexReader::open(&path)?;
//! let mut p = r.postings(b"job", &[b"a", b"b"])?;
//! assert_eq!(postings::expand(&mut *p), vec![a, b]);
//! let (mut labels, mut chunks) = (Vec::new(), Vec::new());
//! r.series(a, &mut labels, Some(&mut chunks))?;
//! assert_eq!((labels[1].name, labels[1].value), (&b"job"[..], &b"a"[..]));
//! assert_eq!(chunks, vec![chunk]);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # On-disk layout (version 2)
//!
//! All fixed-width integers are big-endian. `uvarint` is the LEB128 varint of
//! Go's `encoding/binary`, `varint` its zig-zag signed variant, and a
//! *string* is a `uvarint` byte length followed by the bytes (UTF-8 by
//! convention, not checked). Every checksum is CRC-32 with the Castagnoli
//! polynomial, stored as 4 big-endian bytes after the bytes it covers.
//!
//! ```text
//! header    magic 0xBAAAD700 (4) | version 2 (1)
//! symbols   len (4) | count (4) | string * count              | crc(count..end)
//! series    (zero padding to 16) entry, (padding) entry, ...
//! postings  (zero padding to 4) list, (padding to 4) list, ...
//! po-table  len (4) | count (4) | entry * count                | crc(count..end)
//! toc       6 x offset (8)                                     | crc(offsets)
//! ```
//!
//! **Symbols.** Every label name and value is stored once, in a table sorted
//! by byte order without duplicates; elsewhere a string is its position in
//! that table (symbol 0, 1, ...). `len` counts the bytes from `count` to the
//! end of the last string, which is also what the CRC covers.
//!
//! **Series.** One entry per series, in ascending label-set order (label
//! pairs compared one by one, name before value; a set that is a prefix of
//! another sorts first). Each entry starts at a multiple of 16 bytes: the
//! gap before it is zero-filled, and its *series reference* (the id postings
//! store) is its offset divided by 16, so sorted references mean sorted
//! label sets and a 32-bit reference reaches 64 GiB. An entry is
//!
//! ```text
//! len uvarint | body (len bytes) | crc(body)
//! body: label count uvarint | (name symbol uvarint, value symbol uvarint) * count
//!       | chunk count uvarint | chunk metas
//! chunk metas, first:  mint varint | maxt-mint uvarint | ref uvarint
//!              others: mint-prev_maxt uvarint | maxt-mint uvarint | ref-prev_ref varint
//! ```
//!
//! Chunks in an entry have strictly increasing, non-overlapping time ranges
//! (`mint <= maxt`), and chunk refs never decrease, within a series and from
//! one series to the next. The series section's TOC offset is where the
//! symbol table ended, i.e. before the padding of the first entry.
//!
//! **Label indices, label offset table.** Format v2 still reserves them,
//! but Prometheus has stopped writing or reading them: the TOC's "label
//! indices" offset equals the postings offset and the "label offset table"
//! offset equals the postings offset table's.
//!
//! **Postings.** One list per label pair, each starting at a multiple of 4
//! (zero padding in between):
//!
//! ```text
//! len (4) | count (4) | series ref (4) * count | crc(count..end)
//! ```
//!
//! `len` is `4 + 4*count`. The first list is the *all postings* list, every
//! series in the index, filed under the empty name and empty value. The
//! others follow in label name order, and values of one name in value order.
//! The TOC's postings offset is where the series ended, before the alignment
//! padding.
//!
//! **Postings offset table.** One entry per postings list, in the same
//! order (so the all-postings key comes first):
//!
//! ```text
//! 2 uvarint (number of strings) | name string | value string | list offset uvarint
//! ```
//!
//! The offset is absolute in the file. `len` counts from `count` to the end
//! of the last entry and the CRC covers the same bytes.
//!
//! **TOC.** The last 52 bytes: offsets of symbols, series, label indices,
//! label offset table, postings and postings offset table, then the CRC of
//! those 48 bytes. An offset of zero means "no such section".
//!
//! # What the reader checks
//!
//! Like Prometheus, [`IndexReader`] verifies magic, version and the TOC's CRC
//! on open, the symbol table's and the postings offset table's CRCs while it
//! samples them, a series entry's CRC whenever it is decoded, and a postings
//! list's CRC whenever it is opened. Nothing is trusted beyond that: every
//! length and offset is bounds-checked, and every problem is an
//! [`IndexError`]. Format version 3 (identical layout, accepted by
//! Prometheus) is read as version 2. Version 1 (byte-offset references,
//! unsorted offset table; written by Prometheus 2.0-2.7 only) is refused with
//! [`IndexError::UnsupportedVersion`].

mod encoding;
pub mod error;
pub mod postings;
pub mod reader;
pub mod text;
pub mod writer;

pub use error::IndexError;
pub use postings::{Postings, SeriesRef};
pub use reader::{IndexReader, Label, SymbolCache, Symbols, Toc};
pub use writer::IndexWriter;

/// First four bytes of every index file (big-endian).
pub const MAGIC: u32 = 0xBAAA_D700;
/// The format version this crate writes.
pub const FORMAT_V2: u8 = 2;
/// Magic and version.
pub const HEADER_LEN: usize = 5;
/// Series entries start at multiples of this; a series ref is offset / 16.
pub const SERIES_ALIGN: u64 = 16;
/// Postings lists start at multiples of this.
pub const POSTINGS_ALIGN: u64 = 4;
/// Six section offsets and a CRC.
pub const TOC_LEN: usize = 6 * 8 + 4;
/// The reader keeps every `SAMPLE_RATE`-th symbol offset and postings offset
/// table entry (per label name, plus each name's last value) in memory.
pub const SAMPLE_RATE: usize = 32;
/// Prometheus refuses to write an index larger than 16 * 2^32 - 1 bytes, so
/// every series ref fits 32 bits.
pub const MAX_INDEX_SIZE: u64 = 16 * u32::MAX as u64;

/// One chunk of a series as the index records it: its time range and where
/// its bytes live (a `chunks/` segment reference, opaque here).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct ChunkMeta {
    /// Timestamp of the first sample, in ms.
    pub min_time: i64,
    /// Timestamp of the last sample, in ms.
    pub max_time: i64,
    /// Position of the chunk in the block's chunk segment files.
    pub chunk_ref: u64,
}
