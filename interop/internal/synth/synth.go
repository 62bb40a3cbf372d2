// Package synth is the synthetic data model shared with Ferrite's
// `ferrite tsdb synth` (crates/ferrite/src/cmd/synth.rs). Both sides generate
// exactly these series and samples in the same append order, so a data dir
// written by either side can be checked against the model's totals.
//
// Series i in [0,N): {__name__="synth_metric_<i%50>", instance="host-<i/50>", job="synth"}.
// Sample j in [0,M): t = start + j*interval + jitter, jitter = ((i*7919 + j*104729) % 11) - 5;
// the value depends on i%3 (see Value). Append order: for j { for i { append } },
// committing every 1000 appends and at the end of each j.
package synth

import "strconv"

// Defaults of the generators on both sides.
const (
	DefaultIntervalMs  = 15000
	DefaultStartMs     = 1700000000000
	DefaultCommitEvery = 1000
)

// Labels returns the label pairs of series i: name, value, name, value, ...
// (already sorted by label name).
func Labels(i int64) []string {
	return []string{
		"__name__", "synth_metric_" + strconv.FormatInt(i%50, 10),
		"instance", "host-" + strconv.FormatInt(i/50, 10),
		"job", "synth",
	}
}

// Timestamp of sample j of series i, in milliseconds.
func Timestamp(i, j, startMs, intervalMs int64) int64 {
	jitter := ((i*7919 + j*104729) % 11) - 5
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

// Totals are what a data dir holding the whole model digests to.
type Totals struct {
	Series, Samples int64
	Sum             float64
}

// Expected computes the totals of n series x m samples. The sum is
// compensated (Neumaier), so it is the exact sum rounded once; digests that
// add in another order agree with it to far better than 1e-9 relative.
func Expected(n, m int64) Totals {
	var s, c float64
	for j := int64(0); j < m; j++ {
		for i := int64(0); i < n; i++ {
			v := Value(i, j)
			t := s + v
			if abs(s) >= abs(v) {
				c += (s - t) + v
			} else {
				c += (v - t) + s
			}
			s = t
		}
	}
	return Totals{Series: n, Samples: n * m, Sum: s + c}
}

func abs(x float64) float64 {
	if x < 0 {
		return -x
	}
	return x
}
