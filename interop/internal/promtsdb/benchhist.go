package promtsdb

// The histogram-heavy data of the replay and block benchmarks (shape h):
// native histogram series written next to (or instead of) the synth model's
// float series by Generate, with GenOptions.HistogramSeries and
// GenOptions.GaugeHistogramSeries.
//
//   - integer counter histograms: exponential schema 3, 16 populated
//     positive buckets in 2 spans (10 + 6, a gap of 3 empty buckets), a zero
//     bucket; every bucket grows by a jittered amount per sample, the bucket
//     layout never changes (no counter resets, no recoding);
//   - float gauge histograms (CounterResetHint GaugeType): schema 2, 8
//     buckets in 2 spans, counts in quarters that go up and down.
//
// Series i of the integer histograms is
// {__name__="synth_histogram_<i%10>", instance="host-<i/10>", job="synth"},
// of the gauge histograms {__name__="synth_gauge_histogram_<i%10>", ...};
// sample j is at synth.Timestamp(i, j, start, interval), like the floats.

import (
	"fmt"

	"github.com/prometheus/prometheus/model/histogram"
	"github.com/prometheus/prometheus/model/labels"
)

// benchBucketWeights shape the per-sample increase of the 16 buckets: a bell
// around the middle of the first span, a smaller bump in the second.
var benchBucketWeights = [16]int64{1, 2, 4, 7, 11, 15, 18, 20, 18, 15, 9, 6, 4, 2, 1, 1}

// benchZeroThreshold is client_golang's default zero bucket width
// (DefNativeHistogramZeroThreshold, 2^-128).
const benchZeroThreshold = 2.938735877055719e-39

// mix64 is a deterministic pseudo-random 64-bit number for (a, b, c).
func mix64(a, b, c int64) uint64 {
	x := uint64(a)*0x9E3779B97F4A7C15 ^ uint64(b+1)*0xC2B2AE3D27D4EB4F ^ uint64(c+7)*0x165667B19E3779F9
	x ^= x >> 31
	x *= 0xBF58476D1CE4E5B9
	x ^= x >> 29
	return x
}

// BenchHistogramLabels are the labels of integer histogram series i.
func BenchHistogramLabels(i int64) labels.Labels {
	return labels.FromStrings("__name__", fmt.Sprintf("synth_histogram_%d", i%10), "instance", fmt.Sprintf("host-%d", i/10), "job", "synth")
}

// BenchGaugeHistogramLabels are the labels of gauge float histogram series i.
func BenchGaugeHistogramLabels(i int64) labels.Labels {
	return labels.FromStrings("__name__", fmt.Sprintf("synth_gauge_histogram_%d", i%10), "instance", fmt.Sprintf("host-%d", i/10), "job", "synth")
}

// BenchHistogram is sample j of integer counter histogram series i. Bucket
// k's count is j*a + floor(a*u), a = weight*(1+i%4) >= 1 and u in [0, 1) a
// hash of (i, j, k): it grows by 1 to 2a-1 per sample, never decreases.
func BenchHistogram(i, j int64) *histogram.Histogram {
	var abs [16]int64
	scale := 1 + i%4
	count := uint64(0)
	for k, w := range benchBucketWeights {
		a := w * scale
		abs[k] = j*a + int64(mix64(i, j, int64(k))%uint64(a))
		count += uint64(abs[k])
	}
	zero := uint64(j + int64(mix64(i, j, 99)%2))
	count += zero
	return &histogram.Histogram{
		Schema:          3,
		ZeroThreshold:   benchZeroThreshold,
		ZeroCount:       zero,
		Count:           count,
		Sum:             float64(count)*0.0371 + float64(j)*0.0001,
		PositiveSpans:   []histogram.Span{{Offset: int32(-12 + i%5), Length: 10}, {Offset: 3, Length: 6}},
		PositiveBuckets: Deltas(abs[:]),
	}
}

// BenchGaugeFloatHistogram is sample j of gauge float histogram series i.
func BenchGaugeFloatHistogram(i, j int64) *histogram.FloatHistogram {
	b := make([]float64, 8)
	count := 0.0
	for k := range b {
		b[k] = float64(benchBucketWeights[2*k]*4+int64(mix64(i, j, int64(k))%16)) / 4
		count += b[k]
	}
	zero := float64(mix64(i, j, 99)%8) / 4
	count += zero
	return &histogram.FloatHistogram{
		CounterResetHint: histogram.GaugeType,
		Schema:           2,
		ZeroThreshold:    benchZeroThreshold,
		ZeroCount:        zero,
		Count:            count,
		Sum:              count * 0.5,
		PositiveSpans:    []histogram.Span{{Offset: int32(-4 + i%3), Length: 5}, {Offset: 2, Length: 3}},
		PositiveBuckets:  b,
	}
}
