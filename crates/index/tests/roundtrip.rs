//! Property tests: random label sets and chunk metas written, then read
//! back identical; arbitrary damage to a valid index never panics.

use std::collections::{BTreeMap, BTreeSet};

use ferrite_index::postings::expand;
use ferrite_index::text::{dump, Spec, SpecSeries};
use ferrite_index::{ChunkMeta, IndexError, IndexReader, IndexWriter};
use proptest::prelude::*;

type LabelSet = Vec<(Vec<u8>, Vec<u8>)>;

fn label_string() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        4 => "[a-c]{1,3}".prop_map(String::into_bytes),
        1 => prop::collection::vec(any::<u8>(), 0..6),
        1 => "[é日🦀 x]{0,4}".prop_map(String::into_bytes),
        1 => (200usize..400).prop_map(|n| vec![b'v'; n]),
    ]
}

fn label_set() -> impl Strategy<Value = LabelSet> {
    prop::collection::btree_map(
        label_string().prop_filter("non-empty", |n| !n.is_empty()),
        label_string(),
        1..5,
    )
    .prop_map(|m| m.into_iter().collect())
}

/// A sorted spec: unique label sets in Prometheus order, chunk refs that
/// never decrease, time ranges that never overlap.
fn spec() -> impl Strategy<Value = Spec> {
    (
        prop::collection::btree_set(label_set(), 0..60),
        prop::collection::vec(label_string(), 0..5),
        prop::collection::vec((0usize..4, any::<i32>(), 0u32..1000, 0u64..1 << 40), 0..60),
    )
        .prop_map(|(sets, extra, chunk_seeds)| {
            let mut chunk_ref = 0u64;
            let series = sets
                .into_iter()
                .enumerate()
                .map(|(i, labels)| {
                    let (n, start, width, step) =
                        chunk_seeds.get(i).copied().unwrap_or((1, 0, 10, 7));
                    let mut t = i64::from(start) * 1000;
                    let chunks = (0..n)
                        .map(|_| {
                            let c = ChunkMeta {
                                min_time: t,
                                max_time: t + i64::from(width),
                                chunk_ref,
                            };
                            t += i64::from(width) + 1;
                            chunk_ref += step;
                            c
                        })
                        .collect();
                    SpecSeries { labels, chunks }
                })
                .collect();
            Spec {
                symbols: extra,
                series,
            }
        })
}

fn write(spec: &Spec) -> (tempfile::TempDir, std::path::PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("index");
    spec.write_index(&path).unwrap();
    (dir, path)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, ..ProptestConfig::default() })]

    #[test]
    fn round_trip(spec in spec()) {
        let (_dir, path) = write(&spec);
        let r = IndexReader::open(&path).unwrap();

        let want_syms = spec.symbol_table();
        let syms: Vec<&[u8]> = r.symbols().collect::<Result<_, _>>().unwrap();
        prop_assert_eq!(&syms, &want_syms);
        for (i, s) in want_syms.iter().enumerate() {
            prop_assert_eq!(r.lookup_symbol(i as u32).unwrap(), *s);
            prop_assert_eq!(r.reverse_lookup(s).unwrap(), i as u32);
        }
        prop_assert!(matches!(r.lookup_symbol(want_syms.len() as u32), Err(IndexError::UnknownSymbol(_))));

        // Series come back in order, identical.
        let refs = expand(&mut *r.all_postings().unwrap());
        prop_assert_eq!(refs.len(), spec.series.len());
        let (mut labels, mut chunks) = (Vec::new(), Vec::new());
        // One cache across all series (and twice over) reads the same.
        let mut cache = ferrite_index::SymbolCache::default();
        let (mut cached, mut cached_chunks) = (Vec::new(), Vec::new());
        for id in refs.iter().chain(refs.iter().rev()) {
            r.series(*id, &mut labels, Some(&mut chunks)).unwrap();
            r.series_cached(*id, &mut cached, Some(&mut cached_chunks), i64::MAX, Some(&mut cache)).unwrap();
            prop_assert_eq!(&cached, &labels);
            prop_assert_eq!(&cached_chunks, &chunks);
        }
        let mut model: BTreeMap<(&[u8], &[u8]), BTreeSet<u64>> = BTreeMap::new();
        for (id, s) in refs.iter().zip(&spec.series) {
            r.series(*id, &mut labels, Some(&mut chunks)).unwrap();
            let got: Vec<(&[u8], &[u8])> = labels.iter().map(|l| (l.name, l.value)).collect();
            let want: Vec<(&[u8], &[u8])> = s.labels.iter().map(|(n, v)| (&n[..], &v[..])).collect();
            prop_assert_eq!(got, want);
            prop_assert_eq!(&chunks, &s.chunks);
            // Cut at every chunk start (and just before): the prefix of chunks
            // starting at or before the cut.
            let mut untils: Vec<i64> = s.chunks.iter().flat_map(|c| [c.min_time, c.min_time.wrapping_sub(1)]).collect();
            untils.push(i64::MIN);
            let mut cut = Vec::new();
            for until in untils {
                r.series_cached(*id, &mut labels, Some(&mut cut), until, None).unwrap();
                let want: Vec<_> = s.chunks.iter().take_while(|c| c.min_time <= until).cloned().collect();
                prop_assert_eq!(&cut, &want, "until {}", until);
            }
            for (n, v) in &s.labels {
                model.entry((n, v)).or_default().insert(*id);
            }
        }

        // Label names, values and postings match the model.
        let names: BTreeSet<&[u8]> = model.keys().map(|(n, _)| *n).collect();
        prop_assert_eq!(r.label_names(), names.iter().copied().collect::<Vec<_>>());
        for name in names {
            let values: Vec<&[u8]> = model.keys().filter(|(n, _)| *n == name).map(|(_, v)| *v).collect();
            prop_assert_eq!(r.label_values(name).unwrap(), values.clone());
            prop_assert_eq!(r.sorted_label_values(name).unwrap(), values.clone());
            let mut union = BTreeSet::new();
            for v in &values {
                let got = expand(&mut *r.postings(name, &[v]).unwrap());
                let want = &model[&(name, *v)];
                prop_assert_eq!(got, want.iter().copied().collect::<Vec<_>>());
                union.extend(want.iter().copied());
            }
            let got = expand(&mut *r.postings(name, &values).unwrap());
            prop_assert_eq!(got, union.into_iter().collect::<Vec<_>>());
        }

        // The dump is stable through the text form: re-reading the bytes gives
        // the same text, and the spec's text form parses back to the spec.
        let again = IndexReader::from_bytes(std::fs::read(&path).unwrap()).unwrap();
        prop_assert_eq!(dump(&r).unwrap(), dump(&again).unwrap());
        prop_assert_eq!(Spec::parse(&spec.to_text()).unwrap(), spec);
    }

    /// Flip, overwrite or truncate anywhere: opening and reading everything
    /// may fail, but only with an error.
    #[test]
    fn damage_never_panics(
        spec in spec(),
        edits in prop::collection::vec((any::<prop::sample::Index>(), any::<u8>(), 0u8..3), 1..6),
        cut in proptest::option::of(any::<prop::sample::Index>()),
    ) {
        let (_dir, path) = write(&spec);
        let mut bytes = std::fs::read(&path).unwrap();
        for (at, b, kind) in edits {
            let i = at.index(bytes.len());
            match kind {
                0 => bytes[i] ^= 1 << (b % 8),
                1 => bytes[i] = b,
                _ => bytes[i] = 0,
            }
        }
        if let Some(c) = cut {
            bytes.truncate(c.index(bytes.len() + 1));
        }
        exercise(&bytes);
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 128, ..ProptestConfig::default() })]

    /// Damage followed by recomputing every CRC, so the damage gets past the
    /// checksums and into the decoders (lengths, counts, varints, refs).
    #[test]
    fn damage_behind_valid_crcs_never_panics(
        spec in spec(),
        edits in prop::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..4),
    ) {
        let (_dir, path) = write(&spec);
        let mut bytes = std::fs::read(&path).unwrap();
        let body = bytes.len() - ferrite_index::TOC_LEN;
        for (at, b) in edits {
            bytes[at.index(body)] = b;
        }
        refresh_crcs(&mut bytes);
        exercise(&bytes);
    }
}

fn be32_at(b: &[u8], at: usize) -> Option<usize> {
    Some(u32::from_be_bytes(b.get(at..at.checked_add(4)?)?.try_into().ok()?) as usize)
}

/// Rewrites the CRC of every section it can still find.
fn refresh_crcs(b: &mut [u8]) {
    let n = b.len();
    let toc = n - ferrite_index::TOC_LEN;
    let off =
        |i: usize| u64::from_be_bytes(b[toc + 8 * i..toc + 8 * i + 8].try_into().unwrap()) as usize;
    let (symbols, series, postings, po) = (off(0), off(1), off(4), off(5));
    let fix_framed = |b: &mut [u8], at: usize| -> Option<usize> {
        let len = be32_at(b, at)?;
        let end = at.checked_add(4)?.checked_add(len)?;
        if end.checked_add(4)? > toc {
            return None;
        }
        let crc = crc32c::crc32c(&b[at + 4..end]);
        b[end..end + 4].copy_from_slice(&crc.to_be_bytes());
        Some(end + 4)
    };
    fix_framed(b, symbols);
    // Series entries: padding, uvarint length, body, CRC.
    let mut p = series;
    while p < postings.min(toc) {
        while p < postings && b[p] == 0 {
            p += 1;
        }
        if p >= postings {
            break;
        }
        let (mut len, mut shift, mut q) = (0usize, 0, p);
        while q < toc && b[q] >= 0x80 && shift < 28 {
            len |= ((b[q] & 0x7f) as usize) << shift;
            shift += 7;
            q += 1;
        }
        if q >= toc {
            break;
        }
        len |= (b[q] as usize) << shift;
        let end = q + 1 + len;
        if end + 4 > toc {
            break;
        }
        let crc = crc32c::crc32c(&b[q + 1..end]);
        b[end..end + 4].copy_from_slice(&crc.to_be_bytes());
        p = end + 4;
    }
    // Postings lists, each 4-aligned.
    let mut p = postings.next_multiple_of(4);
    while p < po.min(toc) {
        match fix_framed(b, p) {
            Some(next) => p = next.next_multiple_of(4),
            None => break,
        }
    }
    fix_framed(b, po);
    let crc = crc32c::crc32c(&b[toc..n - 4]);
    b[n - 4..].copy_from_slice(&crc.to_be_bytes());
}

/// Runs every read path over `bytes`; errors are fine, panics are not.
fn exercise(bytes: &[u8]) {
    let Ok(r) = IndexReader::from_bytes(bytes.to_vec()) else {
        return;
    };
    let _ = dump(&r);
    let _ = r.symbols().count();
    for id in [0, 1, 31, 32, 33, u32::MAX] {
        let _ = r.lookup_symbol(id);
    }
    let (mut labels, mut chunks) = (Vec::new(), Vec::new());
    for id in [0, 1, 2, 5, 100, u64::MAX / 16, u64::MAX] {
        let _ = r.series(id, &mut labels, Some(&mut chunks));
    }
    for name in r.label_names() {
        if let Ok(values) = r.label_values(name) {
            let _ = r.postings(name, &values).map(|mut p| expand(&mut *p));
        }
    }
}

#[test]
fn writer_misuse_is_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let mut w = IndexWriter::create(dir.path().join("index")).unwrap();
    w.add_symbol("a").unwrap();
    assert!(matches!(
        w.add_symbol("a"),
        Err(IndexError::SymbolOutOfOrder { .. })
    ));
    w.add_symbol("b").unwrap();
    assert!(matches!(
        w.add_series(&[("a", "c")], &[]),
        Err(IndexError::MissingSymbol(_))
    ));
    assert!(matches!(
        w.add_series(&[("b", "a"), ("a", "b")], &[]),
        Err(IndexError::InvalidLabels { .. })
    ));
    assert!(matches!(
        w.add_series(&[("", "a")], &[]),
        Err(IndexError::InvalidLabels { .. })
    ));
    assert!(matches!(
        w.add_series::<&str, &str>(&[], &[]),
        Err(IndexError::SeriesOutOfOrder { .. })
    ));
    // Header 5, symbol table 8 + 4 + 4: the first entry is padded to 32.
    assert_eq!(w.add_series(&[("a", "b")], &[]).unwrap(), 2);
    assert!(matches!(
        w.add_series(&[("a", "a")], &[]),
        Err(IndexError::SeriesOutOfOrder { .. })
    ));
    assert!(matches!(w.add_symbol("c"), Err(IndexError::Stage(_))));
    let bad = ChunkMeta {
        min_time: 5,
        max_time: 4,
        chunk_ref: 0,
    };
    assert!(matches!(
        w.add_series(&[("b", "a")], &[bad]),
        Err(IndexError::InvalidChunks(_))
    ));
    w.add_series(&[("b", "a")], &[]).unwrap();
    w.close().unwrap();
    let r = IndexReader::open(dir.path().join("index")).unwrap();
    assert_eq!(expand(&mut *r.all_postings().unwrap()).len(), 2);
}

#[test]
fn not_an_index() {
    let empty = IndexReader::from_bytes(Vec::new()).unwrap_err();
    assert!(matches!(empty, IndexError::TooShort { .. }), "{empty}");
    let magic = IndexReader::from_bytes(vec![0u8; 100]).unwrap_err();
    assert!(matches!(magic, IndexError::BadMagic(0)), "{magic}");
    let golden =
        std::fs::read(concat!(env!("CARGO_MANIFEST_DIR"), "/testdata/basic.index")).unwrap();
    let mut v1 = golden.clone();
    v1[4] = 1;
    let e = IndexReader::from_bytes(v1).unwrap_err();
    assert!(matches!(e, IndexError::UnsupportedVersion(1)), "{e}");
    let mut v3 = golden.clone();
    v3[4] = 3;
    assert_eq!(IndexReader::from_bytes(v3).unwrap().version(), 3);
    let mut toc = golden.clone();
    let n = toc.len();
    toc[n - 10] ^= 1;
    let e = IndexReader::from_bytes(toc).unwrap_err();
    assert!(
        matches!(e, IndexError::Checksum { section: "TOC", .. }),
        "{e}"
    );
}

#[test]
fn series_and_postings_crcs_are_checked() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/testdata/basic.index");
    let good = IndexReader::open(path).unwrap();
    let first = expand(&mut *good.all_postings().unwrap())[0];
    let toc = good.toc();
    let golden = std::fs::read(path).unwrap();

    // A byte inside the first series entry (after its length varint).
    let mut bytes = golden.clone();
    bytes[first as usize * 16 + 2] ^= 0x40;
    let r = IndexReader::from_bytes(bytes).unwrap();
    let e = r.series(first, &mut Vec::new(), None).unwrap_err();
    assert!(
        matches!(
            e,
            IndexError::Checksum {
                section: "series",
                ..
            }
        ),
        "{e}"
    );

    // A byte inside the all-postings list (the first list, 4-aligned).
    let mut bytes = golden.clone();
    let list = (toc.postings as usize).next_multiple_of(4);
    bytes[list + 9] ^= 0x01;
    let r = IndexReader::from_bytes(bytes).unwrap();
    let e = r.all_postings().err().unwrap();
    assert!(
        matches!(
            e,
            IndexError::Checksum {
                section: "postings",
                ..
            }
        ),
        "{e}"
    );
}
