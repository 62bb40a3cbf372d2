//! The out-of-order WAL (`wbl/`) records of one commit.
//!
//! Prometheus' WBL holds the out-of-order samples a commit stored and, each
//! time a series' in-memory out-of-order chunk was written to
//! `chunks_head/` and a new one started, an mmap marker: "this series'
//! samples before here are in chunk `mmap_ref`" (ref 0 when there was no
//! chunk to write). Replay uses the markers to drop the samples the chunk
//! files hold already. So a marker must follow the samples of the chunk it
//! names and precede the new chunk's: the records collected so far are cut
//! (markers first, then samples by kind) before each marker is added.

use ferrite_wal::record::{
    encode_mmap_markers, RefFloatHistogramSample, RefHistogramSample, RefMmapMarker, RefSample,
};

use super::appender::encode_sample_records;
use super::ooo::OooInsert;
use crate::sample::SampleRef;

/// WBL records being collected for one commit.
#[derive(Default)]
pub(super) struct WblBatch {
    markers: Vec<RefMmapMarker>,
    floats: Vec<RefSample>,
    histograms: Vec<RefHistogramSample>,
    float_histograms: Vec<RefFloatHistogramSample>,
    records: Vec<Vec<u8>>,
    /// Time range of the samples stored.
    pub mint: i64,
    pub maxt: i64,
    /// Samples stored.
    pub stored: u64,
}

impl WblBatch {
    pub fn new() -> Self {
        WblBatch {
            mint: i64::MAX,
            maxt: i64::MIN,
            ..Default::default()
        }
    }

    /// Records what inserting the sample `(t, v)` of `series_ref` did.
    pub fn add(&mut self, series_ref: u64, t: i64, v: SampleRef<'_>, res: &OooInsert) {
        if res.chunk_created {
            self.cut();
            if res.mmap_refs.is_empty() {
                self.markers.push(RefMmapMarker {
                    series_ref,
                    mmap_ref: 0,
                });
            }
            self.markers
                .extend(res.mmap_refs.iter().map(|r| RefMmapMarker {
                    series_ref,
                    mmap_ref: r.0,
                }));
        }
        if !res.inserted {
            return;
        }
        self.stored += 1;
        self.mint = self.mint.min(t);
        self.maxt = self.maxt.max(t);
        match v {
            SampleRef::Float(v) => self.floats.push(RefSample {
                series_ref,
                st: 0,
                t,
                v,
            }),
            SampleRef::Histogram(h) => self.histograms.push(RefHistogramSample {
                series_ref,
                st: 0,
                t,
                h: h.clone(),
            }),
            SampleRef::FloatHistogram(h) => self.float_histograms.push(RefFloatHistogramSample {
                series_ref,
                st: 0,
                t,
                h: h.clone(),
            }),
        }
    }

    /// Turns what was collected since the last cut into records.
    fn cut(&mut self) {
        if !self.markers.is_empty() {
            let mut rec = Vec::new();
            encode_mmap_markers(&mut rec, &self.markers);
            self.records.push(rec);
            self.markers.clear();
        }
        encode_sample_records(
            &self.floats,
            &self.histograms,
            &self.float_histograms,
            &mut self.records,
        );
        self.floats.clear();
        self.histograms.clear();
        self.float_histograms.clear();
    }

    /// All the records, in order.
    pub fn finish(mut self) -> Vec<Vec<u8>> {
        self.cut();
        self.records
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::head_chunks::ChunkDiskMapperRef;
    use ferrite_wal::record::{decode_mmap_markers, decode_samples, RecordType};

    #[test]
    fn markers_separate_the_samples_of_consecutive_chunks() {
        let mut b = WblBatch::new();
        let created = |refs: Vec<ChunkDiskMapperRef>| OooInsert {
            inserted: true,
            chunk_created: true,
            mmap_refs: refs,
        };
        let plain = OooInsert {
            inserted: true,
            ..Default::default()
        };
        b.add(1, 10, SampleRef::Float(1.0), &created(vec![]));
        b.add(1, 11, SampleRef::Float(2.0), &plain);
        b.add(
            1,
            5,
            SampleRef::Float(3.0),
            &created(vec![ChunkDiskMapperRef::new(1, 8)]),
        );
        let recs = b.finish();
        let kinds: Vec<RecordType> = recs.iter().map(|r| RecordType::of(r)).collect();
        assert_eq!(
            kinds,
            vec![
                RecordType::MmapMarkers,
                RecordType::Samples,
                RecordType::MmapMarkers,
                RecordType::Samples
            ]
        );
        let mut markers = Vec::new();
        decode_mmap_markers(&recs[2], &mut markers).unwrap();
        assert_eq!(markers[0].mmap_ref, ChunkDiskMapperRef::new(1, 8).0);
        let mut samples = Vec::new();
        decode_samples(&recs[1], &mut samples).unwrap();
        assert_eq!(samples.len(), 2);
    }
}
