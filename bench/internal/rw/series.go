// Package rw generates Prometheus remote write 1.0 load: N active series with
// node_exporter-like label sets, one sample per series per simulated scrape
// round (15 s apart in sample time, not in wall-clock time), sent by a number
// of shards in batches, and measures what the server accepts.
package rw

import (
	"fmt"
	"math"
	"sort"

	"github.com/prometheus/prometheus/prompb"
)

// SeriesPerTarget is how many series one simulated node_exporter target has.
const SeriesPerTarget = 50

// Jobs are assigned to targets round-robin (target i has Jobs[i%len(Jobs)]).
var Jobs = []string{"node", "node-db", "node-web", "node-cache"}

// kind of a series' values.
type kind uint8

const (
	counter kind = iota // increases by rate*15s*(0.5..1.5) per round
	gauge               // wanders around a level
)

// tmpl is one series of a target, without instance/job/cluster.
type tmpl struct {
	labels []prompb.Label // sorted by name; instance/job/cluster values are filled per target
	inst   int            // index of the instance label in labels
	job    int            // index of the job label
	clus   int            // index of the cluster label
	kind   kind
	rate   float64 // counter: mean increase per second; gauge: level
}

var templates = buildTemplates()

// newTmpl is a template of the given kind, rate/level, metric name and
// extra label pairs; instance, job and cluster are filled per target.
func newTmpl(k kind, rate float64, name string, kv ...string) tmpl {
	ls := []prompb.Label{{Name: "__name__", Value: name}, {Name: "instance"}, {Name: "job"}, {Name: "cluster"}}
	for i := 0; i+1 < len(kv); i += 2 {
		ls = append(ls, prompb.Label{Name: kv[i], Value: kv[i+1]})
	}
	sort.Slice(ls, func(i, j int) bool { return ls[i].Name < ls[j].Name })
	t := tmpl{labels: ls, kind: k, rate: rate}
	for i, l := range ls {
		switch l.Name {
		case "instance":
			t.inst = i
		case "job":
			t.job = i
		case "cluster":
			t.clus = i
		}
	}
	return t
}

func buildTemplates() []tmpl {
	var ts []tmpl
	add := func(k kind, rate float64, name string, kv ...string) {
		ts = append(ts, newTmpl(k, rate, name, kv...))
	}
	modes := []struct {
		m string
		r float64
	}{{"idle", 0.8}, {"user", 0.1}, {"system", 0.05}, {"iowait", 0.01}, {"irq", 0.001}, {"softirq", 0.005}, {"steal", 0.0005}, {"nice", 0.0001}}
	for cpu := 0; cpu < 4; cpu++ {
		for _, m := range modes {
			add(counter, m.r, "node_cpu_seconds_total", "cpu", fmt.Sprint(cpu), "mode", m.m)
		}
	}
	add(gauge, 6e9, "node_memory_MemAvailable_bytes")
	add(gauge, 1e9, "node_memory_MemFree_bytes")
	add(gauge, 4e9, "node_memory_Cached_bytes")
	add(gauge, 2e8, "node_memory_Buffers_bytes")
	add(gauge, 0.7, "node_load1")
	add(gauge, 0.6, "node_load5")
	add(gauge, 0.5, "node_load15")
	for _, fs := range [][3]string{{"/dev/sda1", "ext4", "/"}, {"/dev/sdb1", "xfs", "/var/lib/data"}} {
		add(gauge, 4e10, "node_filesystem_avail_bytes", "device", fs[0], "fstype", fs[1], "mountpoint", fs[2])
		add(gauge, 1e11, "node_filesystem_size_bytes", "device", fs[0], "fstype", fs[1], "mountpoint", fs[2])
	}
	for _, dev := range []string{"eth0", "lo"} {
		add(counter, 2e5, "node_network_receive_bytes_total", "device", dev)
		add(counter, 1e5, "node_network_transmit_bytes_total", "device", dev)
	}
	add(counter, 3e5, "node_disk_read_bytes_total", "device", "sda")
	add(counter, 8e5, "node_disk_written_bytes_total", "device", "sda")
	add(counter, 4000, "node_context_switches_total")
	if len(ts) != SeriesPerTarget {
		panic(fmt.Sprintf("%d templates, want %d", len(ts), SeriesPerTarget))
	}
	return ts
}

// MetricNames are the metric names a target exposes, sorted.
func MetricNames() []string { return metricNames(templates) }

func metricNames(ts []tmpl) []string {
	seen := map[string]bool{}
	var ns []string
	for _, t := range ts {
		for _, l := range t.labels {
			if l.Name == "__name__" && !seen[l.Value] {
				seen[l.Value] = true
				ns = append(ns, l.Value)
			}
		}
	}
	sort.Strings(ns)
	return ns
}

// Instance is target t's instance label value.
func Instance(t int) string { return fmt.Sprintf("host-%06d:9100", t) }

// Labels fills buf with series s's labels (sorted by name) and returns it.
// Series s is template s%SeriesPerTarget of target s/SeriesPerTarget.
func Labels(buf []prompb.Label, s int, instances []string) []prompb.Label {
	return labelsOf(templates, buf, s, instances)
}

func labelsOf(ts []tmpl, buf []prompb.Label, s int, instances []string) []prompb.Label {
	t := &ts[s%SeriesPerTarget]
	target := s / SeriesPerTarget
	buf = append(buf[:0], t.labels...)
	buf[t.inst].Value = instances[target]
	buf[t.job].Value = Jobs[target%len(Jobs)]
	buf[t.clus].Value = clusters[target%len(clusters)]
	return buf
}

var clusters = []string{"eu-west-1", "eu-central-1", "us-east-1", "us-west-2", "ap-south-1"}

// hash01 is a deterministic pseudo-random number in [0, 1) for (s, r).
func hash01(s, r uint64) float64 {
	x := s*0x9E3779B97F4A7C15 ^ (r+1)*0xC2B2AE3D27D4EB4F
	x ^= x >> 31
	x *= 0xBF58476D1CE4E5B9
	x ^= x >> 29
	return float64(x>>11) / float64(1<<53)
}

// Value is series s's value at round r, given its value at round r-1
// (prev, ignored for r == 0). Counters grow by a jittered rate with a
// realistic number of significant digits; gauges wander around their level.
func Value(s int, r int64, prev float64) float64 {
	t := &templates[s%SeriesPerTarget]
	h := hash01(uint64(s), uint64(r))
	switch t.kind {
	case counter:
		if r == 0 {
			return math.Round(t.rate*86400*(1+hash01(uint64(s), 1<<40))*100) / 100
		}
		return math.Round((prev+t.rate*15*(0.5+h))*100) / 100
	default:
		lvl := t.rate * (0.9 + 0.2*hash01(uint64(s), 1<<41))
		if lvl > 100 {
			// byte gauges: integers, moving in pages
			return math.Round(lvl*(1+0.05*math.Sin(float64(r)/40)+0.01*h)/4096) * 4096
		}
		return math.Round(lvl*(1+0.5*math.Sin(float64(r)/20)+0.2*h)*100) / 100
	}
}
