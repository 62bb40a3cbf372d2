package main

import (
	"fmt"
	"math"
	"sort"
	"time"
)

// Interval accuracy, from the server's up samples (its scrape timestamps)
// and from the load (the arrival of each scrape request).

// gapStats sums the scrape times of every target in the window.
type gapStats struct {
	scrapes       int64     // scrapes seen
	missed        int64     // scrapes missing against one per interval and target
	missedTargets int       // targets with fewer
	late          int64     // gaps over 1.5 intervals (a scrape skipped)
	devs          []float64 // |gap - interval| of every gap, ms
	maxDrift      float64   // ms per interval: max over targets of |fitted interval - interval|
}

// add takes one target's scrape times (Unix ms) inside the window.
func (g *gapStats) add(times []float64, expected int64, iv time.Duration) {
	ivMs := float64(iv) / 1e6
	sort.Float64s(times)
	n := int64(len(times))
	g.scrapes += n
	if n < expected {
		g.missedTargets++
		g.missed += expected - n
	}
	for i := 1; i < len(times); i++ {
		gap := times[i] - times[i-1]
		g.devs = append(g.devs, math.Abs(gap-ivMs))
		if gap > 1.5*ivMs {
			g.late++
		}
	}
	g.maxDrift = math.Max(g.maxDrift, math.Abs(fittedInterval(times, ivMs)-ivMs))
}

// fittedInterval is the slope of the scrape times against their grid
// index (least squares): a loop that drifts shows a slope other than the
// interval, where one late scrape barely moves it. ivMs when there are
// fewer than 2 times.
func fittedInterval(times []float64, ivMs float64) float64 {
	if len(times) < 2 {
		return ivMs
	}
	ks := make([]float64, len(times))
	var km, tm float64
	for i, t := range times {
		ks[i] = math.Round((t - times[0]) / ivMs)
		km += ks[i]
		tm += t - times[0]
	}
	km /= float64(len(times))
	tm /= float64(len(times))
	var num, den float64
	for i, t := range times {
		num += (ks[i] - km) * (t - times[0] - tm)
		den += (ks[i] - km) * (ks[i] - km)
	}
	if den == 0 {
		return ivMs
	}
	return num / den
}

// maxDev and p99Dev are the largest and the 99th percentile |gap - interval|, ms.
func (g *gapStats) maxDev() float64 { return g.pct(1) }
func (g *gapStats) p99Dev() float64 { return g.pct(0.99) }

func (g *gapStats) pct(p float64) float64 {
	if len(g.devs) == 0 {
		return 0
	}
	s := append([]float64(nil), g.devs...)
	sort.Float64s(s)
	return s[min(len(s)-1, int(math.Ceil(p*float64(len(s))))-1)]
}

// upStats is what a server's up samples in the window show.
type upStats struct {
	gaps    gapStats
	failed  int64 // up == 0
	absent  int   // targets without any up sample
	unknown int   // up series of instances that are no target
}

// upAccuracy reads the answer to up[W]: one series per target, one sample
// per interval, all 1, gaps of one interval.
func upAccuracy(res apiResult, addrs []string, expected int64, iv time.Duration) (upStats, error) {
	var st upStats
	if res.Data.ResultType != "matrix" {
		return st, fmt.Errorf("result type %q, want matrix", res.Data.ResultType)
	}
	want := map[string]bool{}
	for _, a := range addrs {
		want[a] = true
	}
	seen := map[string]bool{}
	for _, series := range res.Data.Result {
		inst := series.Metric["instance"]
		if !want[inst] || seen[inst] {
			st.unknown++
			continue
		}
		seen[inst] = true
		times := make([]float64, 0, len(series.Values))
		for _, p := range series.Values {
			ts, v, err := sampleOf(p)
			if err != nil {
				return st, fmt.Errorf("instance %s: %w", inst, err)
			}
			if v != 1 {
				st.failed++
			}
			times = append(times, float64(ts))
		}
		st.gaps.add(times, expected, iv)
	}
	for _, a := range addrs {
		if !seen[a] {
			st.absent++
			st.gaps.add(nil, expected, iv)
		}
	}
	return st, nil
}
