// Command promrecords writes WAL records with Prometheus v3.16.0's own
// record.Encoder, start timestamps on (its `st-storage` feature), and v1
// records of mixed histogram kinds (start timestamps off), for crates/wal's
// byte-exact tests. The values are spelled out again in
// crates/wal/tests/records_v2.rs. Regenerate (from interop/):
//
//	go run ./cmd/promrecords ../crates/wal/testdata/records
package main

import (
	"fmt"
	"math"
	"os"
	"path/filepath"

	"github.com/prometheus/prometheus/model/histogram"
	"github.com/prometheus/prometheus/tsdb/record"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: promrecords DIR")
		os.Exit(2)
	}
	dir := os.Args[1]
	enc := record.Encoder{EnableSTStorage: true}
	write := func(name string, b []byte) {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
	}
	stale := math.Float64frombits(0x7ff0000000000002)
	// Refs up and down, times before the first, every start timestamp
	// case: explicit first, none, the previous one, explicit deltas of
	// both signs.
	samples := []record.RefSample{
		{Ref: 7, ST: 1000, T: 5000, V: 1.5},
		{Ref: 9, ST: 0, T: 5000, V: -2},
		{Ref: 3, ST: 0, T: 4000, V: stale},
		{Ref: 3, ST: 900, T: 6000, V: math.Inf(1)},
		{Ref: 1 << 40, ST: 900, T: 7000, V: 0},
		{Ref: 2, ST: -50, T: -100, V: math.NaN()},
	}
	write("samples_v2.bin", enc.Samples(samples, nil))
	write("samples_v2_empty.bin", enc.Samples(nil, nil))
	// A first sample without a start timestamp.
	write("samples_v2_no_st.bin", enc.Samples([]record.RefSample{
		{Ref: 1, ST: 0, T: 10, V: 1},
		{Ref: 1, ST: 5, T: 20, V: 2},
		{Ref: 1, ST: 5, T: 30, V: 3},
	}, nil))

	exp := &histogram.Histogram{
		CounterResetHint: histogram.CounterReset,
		Schema:           1,
		ZeroThreshold:    0.001,
		ZeroCount:        2,
		Count:            9,
		Sum:              -12.5,
		PositiveSpans:    []histogram.Span{{Offset: -2, Length: 2}, {Offset: 3, Length: 1}},
		PositiveBuckets:  []int64{1, 2, -1},
		NegativeSpans:    []histogram.Span{{Offset: 0, Length: 1}},
		NegativeBuckets:  []int64{2},
	}
	nhcb := &histogram.Histogram{
		CounterResetHint: histogram.NotCounterReset,
		Schema:           histogram.CustomBucketsSchema,
		Count:            4,
		Sum:              3.25,
		PositiveSpans:    []histogram.Span{{Offset: 0, Length: 3}},
		PositiveBuckets:  []int64{1, 1, -1},
		CustomValues:     []float64{0.5, 1, 10},
	}
	hs := []record.RefHistogramSample{
		{Ref: 4, ST: 100, T: 1000, H: exp},
		{Ref: 5, ST: 100, T: 1000, H: nhcb},
		{Ref: 4, ST: 0, T: 2000, H: &histogram.Histogram{Schema: 0, Sum: stale}},
		{Ref: 2, ST: 50, T: 900, H: exp},
	}
	rec, _ := enc.HistogramSamples(hs, nil)
	write("histogram_samples_v2.bin", rec)

	fexp := exp.ToFloat(nil)
	fexp.CounterResetHint = histogram.GaugeType
	fexp.PositiveBuckets[1] = 2.5
	fnhcb := nhcb.ToFloat(nil)
	fhs := []record.RefFloatHistogramSample{
		{Ref: 10, ST: 0, T: 3000, FH: fnhcb},
		{Ref: 11, ST: 2000, T: 3000, FH: fexp},
		{Ref: 11, ST: 2000, T: 4000, FH: fexp},
	}
	frec, _ := enc.FloatHistogramSamples(fhs, nil)
	write("float_histogram_samples_v2.bin", frec)

	// v1 records of a mix of kinds starting with a custom buckets one, as
	// Prometheus' head and checkpoint write them (start timestamps off):
	// the exponential record's base is the first sample of all.
	v1 := record.Encoder{}
	mixed := []record.RefHistogramSample{
		{Ref: 5, T: 1000, H: nhcb},
		{Ref: 4, T: 1500, H: exp},
		{Ref: 6, T: 900, H: nhcb},
		{Ref: 2, T: 2000, H: exp},
	}
	expRec, left := v1.HistogramSamples(mixed, nil)
	write("histogram_samples_mixed.bin", expRec)
	write("custom_buckets_histogram_samples_mixed.bin", v1.CustomBucketsHistogramSamples(left, nil))
	fmixed := []record.RefFloatHistogramSample{
		{Ref: 10, T: 3000, FH: fnhcb},
		{Ref: 11, T: 2500, FH: fexp},
	}
	fexpRec, fleft := v1.FloatHistogramSamples(fmixed, nil)
	write("float_histogram_samples_mixed.bin", fexpRec)
	write("custom_buckets_float_histogram_samples_mixed.bin", v1.CustomBucketsFloatHistogramSamples(fleft, nil))
}
