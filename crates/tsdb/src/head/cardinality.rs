//! Cardinality statistics of the head's inverted index, as Prometheus'
//! `/api/v1/status/tsdb` lists them (its `MemPostings.Stats`):
//!
//! - series per value of one label (`__name__`: series per metric name);
//! - distinct values per label name;
//! - bytes of label strings per label name (Prometheus' `SizeOfLabels` of
//!   its default `stringlabels` build: each string plus its length prefix,
//!   times the series carrying the pair);
//! - series per `name=value` pair, every pair counted (`__name__` pairs
//!   included);
//!
//! each the `limit` largest, by count descending. Prometheus breaks ties in
//! Go map order, which is random; here ties sort by name, ascending, so the
//! answer is deterministic.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use super::Head;

/// One entry of a cardinality list.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CardinalityStat {
    pub name: String,
    pub count: u64,
}

/// The head's cardinality lists (each at most `limit` long, largest first)
/// and its number of distinct label pairs.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CardinalityStats {
    /// Series per value of the label asked for (`__name__`: per metric).
    pub series_count_by_value: Vec<CardinalityStat>,
    /// Distinct values per label name.
    pub label_value_count_by_label_name: Vec<CardinalityStat>,
    /// Bytes of label strings per label name.
    pub memory_in_bytes_by_label_name: Vec<CardinalityStat>,
    /// Series per `name=value` pair.
    pub series_count_by_label_value_pair: Vec<CardinalityStat>,
    /// Distinct label pairs in the head.
    pub num_label_pairs: u64,
}

/// The `k` largest counts, ties by name ascending. The heap's top is the
/// worst entry kept: lowest count, then greatest name.
struct TopK {
    k: usize,
    heap: BinaryHeap<(Reverse<u64>, String)>,
}

impl TopK {
    fn new(k: usize) -> Self {
        TopK {
            k,
            heap: BinaryHeap::with_capacity(k.min(1024) + 1),
        }
    }

    /// Whether an entry with `count` and a name built by `name` could enter;
    /// builds the name only then.
    fn offer(&mut self, count: u64, name: impl FnOnce() -> String) {
        if self.k == 0 {
            return;
        }
        if self.heap.len() == self.k {
            let Some((Reverse(worst), worst_name)) = self.heap.peek() else {
                return;
            };
            if count < *worst {
                return;
            }
            let name = name();
            if count == *worst && name >= *worst_name {
                return;
            }
            self.heap.pop();
            self.heap.push((Reverse(count), name));
        } else {
            self.heap.push((Reverse(count), name()));
        }
    }

    /// Largest first, ties by name.
    fn into_vec(self) -> Vec<CardinalityStat> {
        // Ascending (Reverse(count), name) is count descending, name ascending.
        self.heap
            .into_sorted_vec()
            .into_iter()
            .map(|(Reverse(count), name)| CardinalityStat { name, count })
            .collect()
    }
}

/// Bytes a string takes in Prometheus' `stringlabels` encoding: the
/// string and its length prefix (1 byte below 255, else 4).
fn encoded_len(s: &str) -> u64 {
    let n = s.len() as u64;
    n + if n < 255 { 1 } else { 4 }
}

/// Prometheus' `labels.SizeOfLabels(name, value, series)`.
pub fn size_of_labels(name: &str, value: &str, series: u64) -> u64 {
    (encoded_len(name) + encoded_len(value)).saturating_mul(series)
}

impl Head {
    /// The cardinality lists of the head's index, each at most `limit`
    /// long; `by_label` picks the label of the first list (Prometheus
    /// passes `__name__`).
    pub fn cardinality_stats(&self, by_label: &str, limit: usize) -> CardinalityStats {
        let mut by_value = TopK::new(limit);
        let mut values_per_name = TopK::new(limit);
        let mut bytes_per_name = TopK::new(limit);
        let mut per_pair = TopK::new(limit);
        let mut num_pairs = 0u64;
        // Same lock order as the querier: postings, then symbols.
        let postings = self.postings.read();
        self.symbols.with_resolver(|res| {
            for name_id in postings.names() {
                let name = res.get(name_id);
                if name.is_empty() {
                    continue;
                }
                let mut distinct = 0u64;
                let mut bytes = 0u64;
                for (value_id, refs) in postings.values(name_id) {
                    let value = res.get(value_id);
                    let series = refs.len() as u64;
                    distinct += 1;
                    bytes = bytes.saturating_add(size_of_labels(name, value, series));
                    if name == by_label {
                        by_value.offer(series, || value.to_owned());
                    }
                    per_pair.offer(series, || format!("{name}={value}"));
                }
                num_pairs += distinct;
                values_per_name.offer(distinct, || name.to_owned());
                bytes_per_name.offer(bytes, || name.to_owned());
            }
        });
        CardinalityStats {
            series_count_by_value: by_value.into_vec(),
            label_value_count_by_label_name: values_per_name.into_vec(),
            memory_in_bytes_by_label_name: bytes_per_name.into_vec(),
            series_count_by_label_value_pair: per_pair.into_vec(),
            num_label_pairs: num_pairs,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::head::HeadOptions;
    use ferrite_model::Labels;
    use proptest::prelude::*;
    use std::collections::BTreeMap;

    fn labels(pairs: &[(&str, &str)]) -> Labels {
        Labels::from_pairs(pairs)
    }

    fn head_with(series: &[Vec<(&str, &str)>]) -> (tempfile::TempDir, Head) {
        let dir = tempfile::tempdir().unwrap();
        let opts = HeadOptions {
            wal: None,
            ..HeadOptions::default()
        };
        let head = Head::new(opts, &dir.path().join("chunks_head")).unwrap();
        let mut app = head.appender();
        for (i, s) in series.iter().enumerate() {
            app.append(&labels(s), 1000 + i as i64, 1.0).unwrap();
        }
        app.commit().unwrap();
        (dir, head)
    }

    fn stat(name: &str, count: u64) -> CardinalityStat {
        CardinalityStat {
            name: name.into(),
            count,
        }
    }

    #[test]
    fn lists_like_prometheus() {
        let (_d, head) = head_with(&[
            vec![("__name__", "up"), ("job", "a"), ("instance", "1")],
            vec![("__name__", "up"), ("job", "a"), ("instance", "2")],
            vec![("__name__", "up"), ("job", "b"), ("instance", "3")],
            vec![("__name__", "go_goroutines"), ("job", "a")],
        ]);
        let s = head.cardinality_stats("__name__", 10);
        assert_eq!(
            s.series_count_by_value,
            [stat("up", 3), stat("go_goroutines", 1)]
        );
        assert_eq!(
            s.label_value_count_by_label_name,
            [stat("instance", 3), stat("__name__", 2), stat("job", 2)]
        );
        assert_eq!(
            s.series_count_by_label_value_pair,
            [
                stat("__name__=up", 3),
                stat("job=a", 3),
                stat("__name__=go_goroutines", 1),
                stat("instance=1", 1),
                stat("instance=2", 1),
                stat("instance=3", 1),
                stat("job=b", 1),
            ]
        );
        // Each string plus a 1-byte length, times the series with the pair.
        // __name__: (9 + 3) * 3 + (9 + 14) * 1; instance: (9 + 2) * 3;
        // job: (4 + 2) * 3 + (4 + 2) * 1.
        assert_eq!(
            s.memory_in_bytes_by_label_name,
            [stat("__name__", 59), stat("instance", 33), stat("job", 24)]
        );
        assert_eq!(s.num_label_pairs, 7);

        let s = head.cardinality_stats("__name__", 1);
        assert_eq!(s.series_count_by_value, [stat("up", 3)]);
        assert_eq!(s.label_value_count_by_label_name, [stat("instance", 3)]);
        assert_eq!(s.series_count_by_label_value_pair, [stat("__name__=up", 3)]);
        assert_eq!(s.num_label_pairs, 7);
        let s = head.cardinality_stats("job", 10);
        assert_eq!(s.series_count_by_value, [stat("a", 3), stat("b", 1)]);
        let s = head.cardinality_stats("__name__", 0);
        assert!(s.series_count_by_value.is_empty());
        assert!(s.series_count_by_label_value_pair.is_empty());
    }

    fn sorted(mut v: Vec<CardinalityStat>) -> Vec<CardinalityStat> {
        v.sort_by(|a, b| b.count.cmp(&a.count).then_with(|| a.name.cmp(&b.name)));
        v
    }

    #[test]
    fn empty_head() {
        let (_d, head) = head_with(&[]);
        assert_eq!(
            head.cardinality_stats("__name__", 10),
            CardinalityStats::default()
        );
    }

    #[test]
    fn label_sizes() {
        assert_eq!(size_of_labels("a", "bc", 2), (2 + 3) * 2);
        let long = "x".repeat(300);
        assert_eq!(size_of_labels("a", &long, 1), 2 + 304);
    }

    proptest! {
        /// The bounded top-k equals sorting everything and truncating.
        #[test]
        fn top_k_is_sort_and_truncate(
            entries in proptest::collection::vec(("[a-e]{1,3}", 0u64..5), 0..60),
            k in 0usize..12,
        ) {
            let mut dedup = BTreeMap::new();
            for (n, c) in entries {
                dedup.insert(n, c);
            }
            let mut top = TopK::new(k);
            for (n, c) in &dedup {
                top.offer(*c, || n.clone());
            }
            let mut want = sorted(dedup.iter().map(|(n, c)| stat(n, *c)).collect());
            want.truncate(k);
            prop_assert_eq!(top.into_vec(), want);
        }
    }
}
