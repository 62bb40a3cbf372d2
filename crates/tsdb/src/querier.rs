//! Reading the head: series selection by label matchers, label names and values.
//!
//! Matchers become postings lists as Prometheus computes them: a matcher that
//! does not match the empty string selects the union of the postings of its
//! matching values (and such lists are intersected); a matcher that does match
//! the empty string also selects series without the label, so it is applied
//! by subtracting the series whose value it rejects. A selection of only
//! empty-matching matchers starts from all series.
//!
//! Series come back sorted by label set, as PromQL and the block writer expect.

use std::sync::Arc;

use ferrite_chunkenc::XorIterator;

use crate::error::QueryError;
use crate::head::Head;
use crate::head_chunks::{ChunkDiskMapper, ChunkDiskMapperRef};
use crate::labels::{Labels, MatchType, Matcher};
use crate::postings::{intersect, merge, subtract};

/// A querier over the head for the time range [mint, maxt] (inclusive).
pub struct HeadQuerier<'h> {
    head: &'h Head,
    mint: i64,
    maxt: i64,
}

/// Where a chunk of a selected series lives.
enum ChunkHandle {
    Mapped {
        chunk_ref: ChunkDiskMapperRef,
        mint: i64,
        maxt: i64,
    },
    Memory {
        bytes: Vec<u8>,
        mint: i64,
        maxt: i64,
    },
}

impl ChunkHandle {
    fn range(&self) -> (i64, i64) {
        match self {
            ChunkHandle::Mapped { mint, maxt, .. } | ChunkHandle::Memory { mint, maxt, .. } => {
                (*mint, *maxt)
            }
        }
    }
}

/// A selected series: its labels and a snapshot of its chunks.
pub struct QuerySeries {
    pub series_ref: u64,
    pub labels: Labels,
    chunks: Vec<ChunkHandle>,
    tombstones: Vec<(i64, i64)>,
    mint: i64,
    maxt: i64,
    mapper: Arc<ChunkDiskMapper>,
}

impl QuerySeries {
    /// Calls `f` for every sample in the querier's range, oldest first.
    pub fn for_each_sample(&self, mut f: impl FnMut(i64, f64)) -> Result<(), QueryError> {
        for c in &self.chunks {
            let (cmin, cmax) = c.range();
            if cmax < self.mint || cmin > self.maxt {
                continue;
            }
            let mapped;
            let bytes: &[u8] = match c {
                ChunkHandle::Mapped { chunk_ref, .. } => {
                    mapped = self.mapper.chunk(*chunk_ref)?;
                    &mapped
                }
                ChunkHandle::Memory { bytes, .. } => bytes,
            };
            let mut it = XorIterator::new(bytes);
            for (t, v) in it.by_ref() {
                if t < self.mint {
                    continue;
                }
                if t > self.maxt {
                    break;
                }
                if self.tombstones.iter().any(|&(a, b)| t >= a && t <= b) {
                    continue;
                }
                f(t, v);
            }
            if let Some(e) = it.error() {
                return Err(QueryError::CorruptChunk {
                    series: self.labels.to_string(),
                    detail: e.to_string(),
                });
            }
        }
        Ok(())
    }

    /// All samples in range.
    pub fn samples(&self) -> Result<Vec<(i64, f64)>, QueryError> {
        let mut out = Vec::new();
        self.for_each_sample(|t, v| out.push((t, v)))?;
        Ok(out)
    }
}

impl<'h> HeadQuerier<'h> {
    pub fn new(head: &'h Head, mint: i64, maxt: i64) -> Self {
        HeadQuerier { head, mint, maxt }
    }

    /// Sorted refs of the series matching all matchers.
    pub fn postings(&self, matchers: &[Matcher]) -> Vec<u64> {
        let head = self.head;
        let postings = head.postings.read();
        let mut its: Vec<Vec<u64>> = Vec::new();
        let mut not_its: Vec<Vec<u64>> = Vec::new();
        if matchers.iter().all(|m| m.matches("")) {
            its.push(postings.all().to_vec());
        }
        for m in matchers {
            let Some(name) = head.symbols.lookup(&m.name) else {
                // No series has this label: it reads as "" everywhere.
                if !m.matches("") {
                    return Vec::new();
                }
                continue;
            };
            if m.kind == MatchType::Equal && !m.value.is_empty() {
                let list = head
                    .symbols
                    .lookup(&m.value)
                    .map_or(&[][..], |v| postings.get(name, v));
                its.push(list.to_vec());
                continue;
            }
            let matches_empty = m.matches("");
            let mut lists: Vec<&[u64]> = Vec::new();
            head.symbols.with_resolver(|res| {
                for (v, list) in postings.values(name) {
                    // Keep values the matcher accepts; for empty-matching
                    // matchers collect the rejected ones, to subtract.
                    if m.matches(res.get(v)) != matches_empty {
                        lists.push(list);
                    }
                }
            });
            if matches_empty {
                not_its.push(merge(&lists));
            } else {
                its.push(merge(&lists));
            }
        }
        let mut out = intersect(its);
        for n in &not_its {
            out = subtract(&out, n);
        }
        out
    }

    /// Series matching all matchers that have samples in range, sorted by labels.
    pub fn select(&self, matchers: &[Matcher]) -> Vec<QuerySeries> {
        let head = self.head;
        let mut out: Vec<QuerySeries> = Vec::new();
        for r in self.postings(matchers) {
            let Some(entry) = head.series.get(r) else {
                continue;
            };
            let mut chunks = Vec::new();
            {
                let d = entry.data.lock();
                for c in &d.mmapped {
                    if c.maxt >= self.mint && c.mint <= self.maxt {
                        chunks.push(ChunkHandle::Mapped {
                            chunk_ref: c.chunk_ref,
                            mint: c.mint,
                            maxt: c.maxt,
                        });
                    }
                }
                for c in d.unmapped.iter().flat_map(|u| u.iter()) {
                    if c.maxt >= self.mint && c.mint <= self.maxt {
                        chunks.push(ChunkHandle::Memory {
                            bytes: c.bytes.clone(),
                            mint: c.mint,
                            maxt: c.maxt,
                        });
                    }
                }
                if let Some(c) = &d.open {
                    if c.chunk.num_samples() > 0 && c.maxt >= self.mint && c.mint <= self.maxt {
                        chunks.push(ChunkHandle::Memory {
                            bytes: c.chunk.bytes().to_vec(),
                            mint: c.mint,
                            maxt: c.maxt,
                        });
                    }
                }
            }
            if chunks.is_empty() {
                continue;
            }
            chunks.sort_by_key(|c| c.range().0);
            out.push(QuerySeries {
                series_ref: r,
                labels: head.resolve_labels(&entry.labels),
                chunks,
                tombstones: head.tombstones_of(r),
                mint: self.mint,
                maxt: self.maxt,
                mapper: head.mapper.clone(),
            });
        }
        out.sort_by(|a, b| a.labels.cmp(&b.labels));
        out
    }

    /// Sorted label names of the series matching `matchers` (all series if none).
    pub fn label_names(&self, matchers: &[Matcher]) -> Vec<String> {
        let head = self.head;
        let mut names: Vec<String> = if matchers.is_empty() {
            let postings = head.postings.read();
            head.symbols
                .with_resolver(|res| postings.names().map(|n| res.get(n).to_owned()).collect())
        } else {
            let mut ids: Vec<u32> = Vec::new();
            for r in self.postings(matchers) {
                if let Some(e) = head.series.get(r) {
                    ids.extend(e.labels.chunks_exact(2).map(|p| p[0]));
                }
            }
            ids.sort_unstable();
            ids.dedup();
            head.symbols
                .with_resolver(|res| ids.iter().map(|&i| res.get(i).to_owned()).collect())
        };
        names.sort();
        names.dedup();
        names
    }

    /// Sorted values of label `name` among the series matching `matchers`.
    pub fn label_values(&self, name: &str, matchers: &[Matcher]) -> Vec<String> {
        let head = self.head;
        let Some(name_id) = head.symbols.lookup(name) else {
            return Vec::new();
        };
        let mut values: Vec<String> = if matchers.is_empty() {
            let postings = head.postings.read();
            head.symbols.with_resolver(|res| {
                postings
                    .values(name_id)
                    .filter(|(_, l)| !l.is_empty())
                    .map(|(v, _)| res.get(v).to_owned())
                    .collect()
            })
        } else {
            let mut ids: Vec<u32> = Vec::new();
            for r in self.postings(matchers) {
                if let Some(e) = head.series.get(r) {
                    ids.extend(
                        e.labels
                            .chunks_exact(2)
                            .filter(|p| p[0] == name_id)
                            .map(|p| p[1]),
                    );
                }
            }
            ids.sort_unstable();
            ids.dedup();
            head.symbols
                .with_resolver(|res| ids.iter().map(|&i| res.get(i).to_owned()).collect())
        };
        values.sort();
        values
    }
}

impl Head {
    /// A querier over [mint, maxt].
    pub fn querier(&self, mint: i64, maxt: i64) -> HeadQuerier<'_> {
        HeadQuerier::new(self, mint, maxt)
    }
}
