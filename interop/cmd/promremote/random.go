package main

import (
	"fmt"
	"math"
	"math/rand"
)

// randomSpecs are random valid-and-invalid requests for the interop test:
// labels from pools with UTF-8 names, empty values, duplicates, missing
// names and invalid UTF-8; odd and out-of-range 2.0 refs; NaN/Inf values,
// start timestamps, exemplars, metadata; some content-type variants. No
// native histograms (Ferrite refuses them on purpose) and no invalid UTF-8
// in exemplars or metadata (kept as bytes by Prometheus, lossily by Ferrite).
func randomSpecs(seed int64, n int) []Spec {
	r := rand.New(rand.NewSource(seed))
	names := []string{"__name__", "job", "instance", "a.b", "le", "x", "日本", "_", "", "__name__"}
	values := []string{"up", "a", "", "b c", "ünï", "\"q\"", "\\", "x\ny", "\xff\xfe", "http_requests_total", "9"}
	metrics := []string{"up", "go_gc", "http.requests", "", "\xff", "a:b", "1x"}
	pick := func(s []string) string { return s[r.Intn(len(s))] }
	floats := []uint64{0, math.Float64bits(1.5), math.Float64bits(-2), 0x7ff8000000000001, 0x7ff0000000000002,
		math.Float64bits(math.Inf(1)), math.Float64bits(math.Inf(-1)), 0x8000000000000000}
	var out []Spec
	for i := 0; i < n; i++ {
		s := Spec{Name: fmt.Sprintf("r%04d", i), Version: 1 + r.Intn(2)}
		switch r.Intn(12) {
		case 0:
			// absent headers: 1.0
		case 1:
			ct := "application/x-protobuf;proto=prometheus.WriteRequest"
			s.ContentType = &ct
		default:
			ct := "application/x-protobuf"
			if s.Version == 2 {
				ct += ";proto=io.prometheus.write.v2.Request"
			}
			s.ContentType = &ct
			if r.Intn(2) == 0 {
				ce := "snappy"
				s.ContentEncoding = &ce
			}
		}
		if s.ContentType == nil || *s.ContentType == "application/x-protobuf;proto=prometheus.WriteRequest" {
			s.Version = 1
		}
		nSeries := r.Intn(5)
		for j := 0; j < nSeries; j++ {
			var ss SeriesSpec
			if r.Intn(8) != 0 {
				ss.Labels = append(ss.Labels, [2]string{"__name__", pick(metrics)})
			}
			for k := r.Intn(4); k > 0; k-- {
				ss.Labels = append(ss.Labels, [2]string{pick(names), pick(values)})
			}
			r.Shuffle(len(ss.Labels), func(a, b int) { ss.Labels[a], ss.Labels[b] = ss.Labels[b], ss.Labels[a] })
			for k := r.Intn(4); k > 0; k-- {
				t := int64(1_600_000_000_000 + r.Intn(100_000_000))
				x := SampleSpec{T: t, VBits: fmt.Sprintf("%016x", floats[r.Intn(len(floats))])}
				if r.Intn(3) == 0 {
					x.ST = t - int64(r.Intn(5000))
				}
				if r.Intn(10) == 0 {
					x.T = 0
				}
				ss.Samples = append(ss.Samples, x)
			}
			for k := r.Intn(3); k > 0; k-- {
				e := ExemplarSpec{T: int64(1_600_000_000_000 + r.Intn(1000)), V: float64(r.Intn(100)) / 4}
				for m := r.Intn(3); m > 0; m-- {
					e.Labels = append(e.Labels, [2]string{pick([]string{"trace_id", "span", "z"}), pick([]string{"abc", "", "ü"})})
				}
				if s.Version == 2 && r.Intn(8) == 0 {
					e.Refs = []uint32{0, 1, 2}[:1+r.Intn(2)]
					if len(e.Refs) == 2 {
						e.Refs[1] = 999
					}
				}
				ss.Exemplars = append(ss.Exemplars, e)
			}
			if s.Version == 2 {
				if r.Intn(2) == 0 {
					ss.Meta = &MetaSpec{Type: pick([]string{"counter", "gauge", "", "summary", "info"}), Help: pick([]string{"", "help me", "ä \"x\""}), Unit: pick([]string{"", "seconds"})}
					if r.Intn(15) == 0 {
						big := uint32(500)
						ss.Meta.UnitRef = &big
					}
				}
				switch r.Intn(15) {
				case 0:
					ss.Refs = []uint32{0}
				case 1:
					ss.Refs = []uint32{1, 2, 700, 3}
				}
			}
			s.Series = append(s.Series, ss)
		}
		if s.Version == 1 && r.Intn(3) == 0 {
			s.Metadata = append(s.Metadata, MetaSpec{Family: pick(metrics[:3]), Type: "counter", Help: "h"})
		}
		out = append(out, s)
	}
	return out
}
