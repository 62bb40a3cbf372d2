package rw

// Native histogram load (Config.Histograms): the same targets, 50 series
// each, but every series is an integer native histogram (prompb.Histogram,
// exponential schema 3, a zero bucket and 16 populated positive buckets in 2
// spans) sent instead of a float sample: latency and size histograms of an
// HTTP/gRPC service, counter-like (every bucket grows each round, the bucket
// layout never changes).

import (
	"fmt"

	"github.com/prometheus/prometheus/prompb"
)

var histTemplates = buildHistTemplates()

// histWeights shape the per-round growth of the 16 buckets (a bell in the
// first span of 10, a bump in the second of 6).
var histWeights = [16]int64{1, 2, 4, 7, 11, 15, 18, 20, 18, 15, 9, 6, 4, 2, 1, 1}

// histRound0 is how many rounds of history a histogram already has at round
// 0 (one day): the counts look like those of a long-running process.
const histRound0 = 5760

func buildHistTemplates() []tmpl {
	var ts []tmpl
	// rate: bucket growth per round = weight * rate; the level of
	// observations (for the sum) is derived from the metric.
	for h := 0; h < 10; h++ {
		for _, m := range []string{"GET", "POST"} {
			rate := float64(1 + (h*7)%5)
			if m == "POST" {
				rate = 1
			}
			ts = append(ts, newTmpl(counter, rate, "http_request_duration_seconds", "handler", fmt.Sprintf("/api/v1/h%d", h), "method", m))
		}
		ts = append(ts, newTmpl(counter, float64(1+h%3), "http_response_size_bytes", "handler", fmt.Sprintf("/api/v1/h%d", h), "method", "GET"))
		ts = append(ts, newTmpl(counter, float64(1+h%2), "grpc_server_handling_seconds", "grpc_method", fmt.Sprintf("Method%d", h), "grpc_service", "bench.Service"))
		ts = append(ts, newTmpl(counter, 1, "db_query_duration_seconds", "query", fmt.Sprintf("q%d", h)))
	}
	if len(ts) != SeriesPerTarget {
		panic(fmt.Sprintf("%d histogram templates, want %d", len(ts), SeriesPerTarget))
	}
	return ts
}

// HistMetricNames are the metric names of the histogram load, sorted.
func HistMetricNames() []string { return metricNames(histTemplates) }

// HistLabels fills buf with histogram series s's labels (sorted by name).
func HistLabels(buf []prompb.Label, s int, instances []string) []prompb.Label {
	return labelsOf(histTemplates, buf, s, instances)
}

// FillHistogram sets h to series s's histogram at round r, timestamp ts,
// reusing h's slices. Bucket k holds (histRound0+r)*a + floor(a*u), a =
// weight*rate >= 1 and u in [0, 1) a hash of (s, r, k): it grows by 1 to
// 2a-1 per round and never decreases.
func FillHistogram(h *prompb.Histogram, s int, r int64, ts int64) {
	t := &histTemplates[s%SeriesPerTarget]
	scale := int64(t.rate)
	n := histRound0 + r
	var count, prev uint64
	h.PositiveDeltas = h.PositiveDeltas[:0]
	for k, w := range histWeights {
		a := w * scale
		c := uint64(n*a + int64(float64(a)*hash01(uint64(s), uint64(r)<<5|uint64(k))))
		h.PositiveDeltas = append(h.PositiveDeltas, int64(c-prev))
		prev = c
		count += c
	}
	zero := uint64(n) + uint64(2*hash01(uint64(s), uint64(r)<<5|31))
	count += zero
	h.PositiveSpans = append(h.PositiveSpans[:0],
		prompb.BucketSpan{Offset: int32(-12 + s%5), Length: 10}, prompb.BucketSpan{Offset: 3, Length: 6})
	if c, ok := h.Count.(*prompb.Histogram_CountInt); ok {
		c.CountInt = count
	} else {
		h.Count = &prompb.Histogram_CountInt{CountInt: count}
	}
	if z, ok := h.ZeroCount.(*prompb.Histogram_ZeroCountInt); ok {
		z.ZeroCountInt = zero
	} else {
		h.ZeroCount = &prompb.Histogram_ZeroCountInt{ZeroCountInt: zero}
	}
	h.Sum = float64(count)*0.0371 + float64(r)*0.0001
	h.Schema = 3
	h.ZeroThreshold = 2.938735877055719e-39 // client_golang's default
	h.Timestamp = ts
}
