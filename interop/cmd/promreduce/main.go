// Command promreduce records what Prometheus v3.16.0's ReduceResolution
// makes of integer and float native histograms, for crates/model's golden
// test of its own reduction: seeded random histograms of exponential
// schemas reduced to lower ones (mostly 9..52 to 8, what Prometheus does
// to histograms of a newer writer; also other pairs), and layouts the
// reduction refuses. One case a line, tab-separated:
//
//	<target schema> <H or F record of the input> <H or F record of the result, or "error: " and Prometheus' message>
//
// Records are interop/internal/histrecord's text form. Regenerate (from
// interop/):
//
//	go run ./cmd/promreduce > ../crates/model/testdata/prometheus_reduce_resolution.txt
package main

import (
	"fmt"
	"math"
	"math/rand"

	"github.com/prometheus/prometheus/model/histogram"

	"ferrite.dev/interop/internal/histrecord"
)

// layout is one side of a histogram: spans and absolute bucket counts.
type layout struct {
	spans  []histogram.Span
	counts []float64
}

// randomLayout draws spans (zero-length ones included) around a first
// index that is sometimes far from 0, and whole or fractional counts
// (zeros included).
func randomLayout(r *rand.Rand, whole bool) layout {
	var l layout
	n := r.Intn(5)
	for i := 0; i < n; i++ {
		var offset int32
		switch {
		case i > 0:
			offset = int32(r.Intn(40))
		case r.Intn(4) == 0:
			offset = int32(r.Intn(2_000_000_000)) - 1_000_000_000
		default:
			offset = int32(r.Intn(600)) - 300
		}
		length := uint32(r.Intn(9))
		l.spans = append(l.spans, histogram.Span{Offset: offset, Length: length})
		for j := uint32(0); j < length; j++ {
			c := float64(r.Intn(30))
			if r.Intn(5) == 0 {
				c = 0
			}
			if !whole {
				c = r.Float64() * 1000
			}
			l.counts = append(l.counts, c)
		}
	}
	return l
}

func deltas(counts []float64) []int64 {
	var out []int64
	prev := int64(0)
	for _, c := range counts {
		out = append(out, int64(c)-prev)
		prev = int64(c)
	}
	return out
}

func sum(counts []float64) float64 {
	s := 0.0
	for _, c := range counts {
		s += c
	}
	return s
}

func randomInt(r *rand.Rand, schema int32) *histogram.Histogram {
	pos, neg := randomLayout(r, true), randomLayout(r, true)
	zero := uint64(r.Intn(5))
	return &histogram.Histogram{
		CounterResetHint: histogram.CounterResetHint(r.Intn(4)),
		Schema:           schema,
		ZeroThreshold:    math.Ldexp(1, -r.Intn(20)),
		ZeroCount:        zero,
		Count:            zero + uint64(sum(pos.counts)+sum(neg.counts)),
		Sum:              r.NormFloat64() * 100,
		PositiveSpans:    pos.spans,
		NegativeSpans:    neg.spans,
		PositiveBuckets:  deltas(pos.counts),
		NegativeBuckets:  deltas(neg.counts),
	}
}

func randomFloat(r *rand.Rand, schema int32) *histogram.FloatHistogram {
	pos, neg := randomLayout(r, false), randomLayout(r, false)
	zero := r.Float64() * 10
	return &histogram.FloatHistogram{
		CounterResetHint: histogram.CounterResetHint(r.Intn(4)),
		Schema:           schema,
		ZeroThreshold:    math.Ldexp(1, -r.Intn(20)),
		ZeroCount:        zero,
		Count:            zero + sum(pos.counts) + sum(neg.counts),
		Sum:              r.NormFloat64() * 100,
		PositiveSpans:    pos.spans,
		NegativeSpans:    neg.spans,
		PositiveBuckets:  pos.counts,
		NegativeBuckets:  neg.counts,
	}
}

// schemas draws an origin schema and a lower target: mostly a reserved
// finer one to 8, else any exponential pair.
func schemas(r *rand.Rand) (from, to int32) {
	if r.Intn(3) > 0 {
		return 9 + int32(r.Intn(44)), 8
	}
	from = -3 + int32(r.Intn(56))
	to = -4 + int32(r.Intn(int(from)+4))
	return from, to
}

// reducible is either kind of Prometheus histogram.
type reducible[H any] interface {
	Copy() H
	ReduceResolution(targetSchema int32) error
}

// reduce prints one case: the target, the input's record, and the reduced
// histogram's record or Prometheus' error.
func reduce[H reducible[H]](h H, to int32, record func(H) string) {
	in := record(h)
	out := h.Copy()
	if err := out.ReduceResolution(to); err != nil {
		fmt.Printf("%d\t%s\terror: %s\n", to, in, err)
		return
	}
	fmt.Printf("%d\t%s\t%s\n", to, in, record(out))
}

func main() {
	r := rand.New(rand.NewSource(20260316))
	for i := 0; i < 250; i++ {
		from, to := schemas(r)
		reduce(randomInt(r, from), to, histrecord.Int)
		from, to = schemas(r)
		reduce(randomFloat(r, from), to, histrecord.Float)
	}
	// Layouts the reduction refuses: a later span with a negative offset,
	// too few buckets, too many.
	sp := func(offset int32, length uint32) histogram.Span {
		return histogram.Span{Offset: offset, Length: length}
	}
	reduce(&histogram.Histogram{Schema: 9, PositiveSpans: []histogram.Span{sp(0, 1), sp(-1, 1)}, PositiveBuckets: []int64{1, 1}}, 8, histrecord.Int)
	reduce(&histogram.Histogram{Schema: 12, NegativeSpans: []histogram.Span{sp(4, 3)}, NegativeBuckets: []int64{1, 1}}, 8, histrecord.Int)
	reduce(&histogram.Histogram{Schema: 52, PositiveSpans: []histogram.Span{sp(4, 1)}, PositiveBuckets: []int64{1, 1}}, 8, histrecord.Int)
	reduce(&histogram.FloatHistogram{Schema: 30, NegativeSpans: []histogram.Span{sp(2, 1), sp(-5, 2)}, NegativeBuckets: []float64{1, 2, 3}}, 8, histrecord.Float)
	reduce(&histogram.FloatHistogram{Schema: 9, PositiveSpans: []histogram.Span{sp(0, 2)}, PositiveBuckets: []float64{1}}, 8, histrecord.Float)
	reduce(&histogram.FloatHistogram{Schema: 9, PositiveSpans: []histogram.Span{sp(0, 1)}, PositiveBuckets: []float64{1, 2}}, 8, histrecord.Float)
	// Indices at the ends of int32, where the target index wraps.
	reduce(&histogram.Histogram{Schema: 20, PositiveSpans: []histogram.Span{sp(math.MaxInt32-2, 6)}, PositiveBuckets: []int64{1, 1, 1, 1, 1, 1}}, 8, histrecord.Int)
	reduce(&histogram.Histogram{Schema: 52, NegativeSpans: []histogram.Span{sp(math.MinInt32, 3), sp(7, 2)}, NegativeBuckets: []int64{5, -1, 2, 0, -3}}, 8, histrecord.Int)
	reduce(&histogram.FloatHistogram{Schema: 40, PositiveSpans: []histogram.Span{sp(math.MaxInt32-1, 4)}, PositiveBuckets: []float64{1, 2, 3, 4}}, 8, histrecord.Float)
}
