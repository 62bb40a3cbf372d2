package main

import (
	"math"
	"testing"
	"time"
)

func TestFittedInterval(t *testing.T) {
	iv := 15000.0
	steady := []float64{0, 15000, 30000, 45000, 60000}
	if got := fittedInterval(steady, iv); got != iv {
		t.Errorf("steady: %v", got)
	}
	drift := []float64{0, 15002, 30004, 45006, 60008}
	if got := fittedInterval(drift, iv); math.Abs(got-15002) > 1e-9 {
		t.Errorf("drift: %v, want 15002", got)
	}
	// A skipped scrape keeps the grid index.
	skip := []float64{0, 15000, 45000, 60000}
	if got := fittedInterval(skip, iv); got != iv {
		t.Errorf("skip: %v", got)
	}
}

func TestGapStats(t *testing.T) {
	var g gapStats
	g.add([]float64{0, 15000, 30040, 45000}, 4, 15*time.Second)
	g.add([]float64{0, 15000, 45000}, 4, 15*time.Second)
	if g.scrapes != 7 || g.missed != 1 || g.missedTargets != 1 || g.late != 1 {
		t.Errorf("got %+v", g)
	}
	if g.maxDev() != 15000 || len(g.devs) != 5 {
		t.Errorf("maxDev %v, devs %v", g.maxDev(), g.devs)
	}
}

func TestUpAccuracy(t *testing.T) {
	var res apiResult
	res.Data.ResultType = "matrix"
	res.Data.Result = append(res.Data.Result, struct {
		Metric map[string]string `json:"metric"`
		Value  []any             `json:"value"`
		Values [][]any           `json:"values"`
	}{Metric: map[string]string{"instance": "a:1"}, Values: [][]any{{1700000000.0, "1"}, {1700000015.0, "0"}}})
	st, err := upAccuracy(res, []string{"a:1", "b:2"}, 2, 15*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if st.failed != 1 || st.absent != 1 || st.gaps.missed != 2 || st.gaps.scrapes != 2 || st.unknown != 0 {
		t.Errorf("got %+v", st)
	}
}
