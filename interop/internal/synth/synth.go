// Package synth is the synthetic data model shared with Ferrite's
// `ferrite tsdb synth` (crates/ferrite/src/cmd/synth.rs): both sides generate
// exactly these series and samples, so either side's data dir can be checked
// against the model's totals.
package synth

import "fmt"

// Labels returns the label pairs of series i (name, value, name, value...).
func Labels(i int64) []string {
	return []string{
		"__name__", fmt.Sprintf("synth_metric_%d", i%50),
		"instance", fmt.Sprintf("host-%d", i/50),
		"job", "synth",
	}
}

// Timestamp of sample j of series i.
func Timestamp(i, j, startMs, intervalMs int64) int64 {
	jitter := int64((uint64(i)*7919+uint64(j)*104729)%11) - 5
	return startMs + j*intervalMs + jitter
}

// Value of sample j of series i.
func Value(i, j int64) float64 {
	switch i % 3 {
	case 0:
		return float64(j * (i%13 + 1))
	case 1:
		return float64((i*31+j*17)%1000) / 8.0
	default:
		return float64((uint64(i)*2654435761+uint64(j)*40503)%100000)*0.001 + 0.1
	}
}

// Totals are what a data dir holding the model must digest to.
type Totals struct {
	Series, Samples int64
	Sum             float64
}

// Expected computes the totals of n series x m samples.
func Expected(n, m int64) Totals {
	t := Totals{Series: n, Samples: n * m}
	for j := int64(0); j < m; j++ {
		for i := int64(0); i < n; i++ {
			t.Sum += Value(i, j)
		}
	}
	return t
}
