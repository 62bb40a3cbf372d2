package synth

import (
	"strings"
	"testing"
)

// Pinned values of the model; the Rust side (crates/ferrite/src/cmd/synth.rs)
// pins the same ones, so a change to either side shows up here first.
func TestModelPinned(t *testing.T) {
	if got := strings.Join(Labels(123), ","); got != "__name__,synth_metric_23,instance,host-2,job,synth" {
		t.Errorf("Labels(123) = %s", got)
	}
	cases := []struct {
		i, j int64
		v    float64
		t    int64
	}{
		{0, 5, 5, 1700000000000 + 5*15000 + (5*104729)%11 - 5},
		{1, 1, 48.0 / 8.0, 1700000000000 + 15000 + (7919+104729)%11 - 5},
		{2, 3, float64((2*2654435761+3*40503)%100000)*0.001 + 0.1, 1700000000000 + 45000 + (2*7919+3*104729)%11 - 5},
		{12, 0, 0, 1700000000000 + (12*7919)%11 - 5},
		{13, 7, float64((13*31+7*17)%1000) / 8, 1700000000000 + 7*15000 + (13*7919+7*104729)%11 - 5},
	}
	for _, c := range cases {
		if v := Value(c.i, c.j); v != c.v {
			t.Errorf("Value(%d,%d) = %v, want %v", c.i, c.j, v, c.v)
		}
		if ts := Timestamp(c.i, c.j, DefaultStartMs, DefaultIntervalMs); ts != c.t {
			t.Errorf("Timestamp(%d,%d) = %d, want %d", c.i, c.j, ts, c.t)
		}
	}
	for i := int64(0); i < 1000; i++ {
		for j := int64(0); j < 50; j++ {
			d := Timestamp(i, j, 0, 0)
			if d < -5 || d > 5 {
				t.Fatalf("jitter(%d,%d) = %d", i, j, d)
			}
		}
	}
}

func TestExpectedSmall(t *testing.T) {
	var sum float64
	for i := int64(0); i < 7; i++ {
		for j := int64(0); j < 11; j++ {
			sum += Value(i, j)
		}
	}
	got := Expected(7, 11)
	if got.Series != 7 || got.Samples != 77 || got.Sum != sum {
		t.Errorf("Expected(7,11) = %+v, want sum %v", got, sum)
	}
}
