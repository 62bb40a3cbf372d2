package main

import (
	"bytes"
	"compress/gzip"
	"errors"
	"io"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/textparse"
)

// parsed is one body as Prometheus' text parser reads it.
type parsed struct {
	values map[string]float64 // series (labels string) -> value
	names  map[string]string  // series -> metric name
	types  map[string]string  // family -> TYPE
}

func parse(t *testing.T, body []byte) parsed {
	t.Helper()
	p, err := textparse.New(body, contentType, labels.NewSymbolTable(), textparse.ParserOptions{})
	if err != nil {
		t.Fatalf("textparse.New: %v", err)
	}
	out := parsed{values: map[string]float64{}, names: map[string]string{}, types: map[string]string{}}
	for {
		e, err := p.Next()
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatalf("parse: %v", err)
		}
		switch e {
		case textparse.EntryType:
			name, typ := p.Type()
			if _, dup := out.types[string(name)]; dup {
				t.Fatalf("family %s: TYPE twice (families must be contiguous)", name)
			}
			out.types[string(name)] = string(typ)
		case textparse.EntrySeries:
			_, ts, v := p.Series()
			if ts != nil {
				t.Fatalf("sample with a timestamp")
			}
			var l labels.Labels
			p.Labels(&l)
			if _, dup := out.values[l.String()]; dup {
				t.Fatalf("series %s twice", l)
			}
			out.values[l.String()] = v
			out.names[l.String()] = l.Get(labels.MetricName)
		}
	}
}

func TestExpositionSizes(t *testing.T) {
	for _, n := range []int{1, 7, 50, 200, 999, 1000, 1001, 5000} {
		e, err := newExposition(n)
		if err != nil {
			t.Fatalf("%d: %v", n, err)
		}
		got := parse(t, e.render(0, 0, time.Now()))
		if len(got.values) != n {
			t.Errorf("%d series wanted, body has %d", n, len(got.values))
		}
	}
	if _, err := newExposition(0); err == nil {
		t.Errorf("0 series: no error")
	}
}

// Counters grow between scrapes; every variant differs; gzip decodes to the plain body.
func TestBodies(t *testing.T) {
	e, err := newExposition(1000)
	if err != nil {
		t.Fatal(err)
	}
	c := newBodyCache(e, 2)
	var prev parsed
	for gen := int64(0); gen < 6; gen++ {
		b, err := c.get(0, gen)
		if err != nil {
			t.Fatal(err)
		}
		zr, err := gzip.NewReader(bytes.NewReader(b.gz))
		if err != nil {
			t.Fatal(err)
		}
		unz, err := io.ReadAll(zr)
		if err != nil || !bytes.Equal(unz, b.plain) {
			t.Fatalf("gen %d: gzip body does not decode to the plain one (%v)", gen, err)
		}
		cur := parse(t, b.plain)
		if gen > 0 {
			grew := 0
			for s, v := range cur.values {
				name := cur.names[s]
				typ := cur.types[name]
				if typ == "" && cur.types[trimSuffixes(name)] == "summary" {
					typ = "counter" // a summary's _sum and _count
				}
				if typ != "counter" {
					continue
				}
				if v < prev.values[s] {
					t.Fatalf("gen %d: counter %s went down: %v -> %v", gen, s, prev.values[s], v)
				}
				if v > prev.values[s] {
					grew++
				}
			}
			if grew < 100 {
				t.Errorf("gen %d: only %d counters grew", gen, grew)
			}
		}
		prev = cur
	}
	b0, _ := c.get(0, 3)
	b1, _ := c.get(1, 3)
	if bytes.Equal(b0.plain, b1.plain) {
		t.Errorf("variants 0 and 1 serve the same body")
	}
}

func trimSuffixes(name string) string {
	for _, suf := range []string{"_sum", "_count"} {
		if len(name) > len(suf) && name[len(name)-len(suf):] == suf {
			return name[:len(name)-len(suf)]
		}
	}
	return name
}

func TestAcceptsGzip(t *testing.T) {
	for h, want := range map[string]bool{
		"gzip": true, "identity": false, "": false, "deflate, gzip;q=1.0, *;q=0.5": true, "gzip;q=0": false, "br, gzip": true,
	} {
		if got := acceptsGzip(h); got != want {
			t.Errorf("acceptsGzip(%q) = %v, want %v", h, got, want)
		}
	}
}

func TestQuietPhase(t *testing.T) {
	ts := &targetSet{interval: 10 * time.Second}
	base := time.Unix(1_700_000_000, 0)
	for _, off := range []time.Duration{time.Second, 2 * time.Second, 8 * time.Second} {
		ts.targets = append(ts.targets, &target{prev: base.Add(off)})
	}
	// Gaps: 1s-2s, 2s-8s (longest: middle 5s), 8s-11s.
	if got := ts.quietPhase(); got != 5*time.Second {
		t.Errorf("quietPhase = %v, want 5s", got)
	}
	for now, want := range map[time.Duration]time.Duration{4 * time.Second: 5 * time.Second, 4500 * time.Millisecond: 15 * time.Second, 0: 5 * time.Second} {
		if at := ts.nextAtPhase(base.Add(now), time.Second, 5*time.Second); !at.Equal(base.Add(want)) {
			t.Errorf("nextAtPhase(base+%v) = base+%v, want base+%v", now, at.Sub(base), want)
		}
	}
}
