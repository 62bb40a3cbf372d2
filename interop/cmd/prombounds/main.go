// Command prombounds prints the bucket bounds of Prometheus v3.16.0's
// exponential native histogram schemas, as its bucket iterators report
// them: for each schema -4..8, the upper bounds of the buckets with
// indices -2^(s+1)..2^(s+1) (two powers of two on each side of 1), one
// `<schema> <index> <upper bound as 16 hex digits of its bits>` per line.
// crates/model's test compares its own bounds with these. Regenerate (from
// interop/):
//
//	go run ./cmd/prombounds > ../crates/model/testdata/prometheus_bucket_bounds.txt
package main

import (
	"fmt"
	"math"

	"github.com/prometheus/prometheus/model/histogram"
)

func main() {
	for schema := int32(-4); schema <= 8; schema++ {
		n := int32(1)
		if schema > 0 {
			n = 1 << schema
		}
		lo, hi := -2*n-1, 2*n+1
		// One histogram with a bucket at every index in [lo, hi].
		h := &histogram.FloatHistogram{
			Schema:          schema,
			PositiveSpans:   []histogram.Span{{Offset: lo, Length: uint32(hi - lo + 1)}},
			PositiveBuckets: make([]float64, hi-lo+1),
		}
		for i := range h.PositiveBuckets {
			h.PositiveBuckets[i] = 1
		}
		for it := h.PositiveBucketIterator(); it.Next(); {
			b := it.At()
			fmt.Printf("%d %d %016x\n", schema, b.Index, math.Float64bits(b.Upper))
		}
	}
}
