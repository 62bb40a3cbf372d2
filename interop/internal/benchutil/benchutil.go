// Package benchutil holds what the side-by-side benchmark drivers
// (cmd/replaybench, cmd/blockbench) share: page-cache warming, machine
// facts, small formatting helpers, fatal errors and the replay shapes.
package benchutil

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// Name prefixes fatal messages.
var Name = "bench"

// Ratio formats a/b as "2.5x", "-" when b is 0.
func Ratio(a, b float64) string {
	if b == 0 {
		return "-"
	}
	return fmt.Sprintf("%.1fx", a/b)
}

// Warm reads every file of dir once, so runs start from a warm page cache.
func Warm(dir string) {
	filepath.Walk(dir, func(p string, info os.FileInfo, err error) error {
		if err == nil && info.Mode().IsRegular() {
			if f, err := os.Open(p); err == nil {
				io.Copy(io.Discard, f)
				f.Close()
			}
		}
		return nil
	})
}

// MemTotal is the machine's RAM as "24 GiB RAM".
func MemTotal() string {
	b, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return "? GiB"
	}
	for _, l := range strings.Split(string(b), "\n") {
		f := strings.Fields(l)
		if len(f) >= 2 && f[0] == "MemTotal:" {
			kb, _ := strconv.ParseFloat(f[1], 64)
			return fmt.Sprintf("%.0f GiB RAM", kb/(1<<20))
		}
	}
	return "? GiB"
}

// ContainsField reports whether the comma-separated list holds name.
func ContainsField(list, name string) bool {
	for _, f := range strings.Split(list, ",") {
		if strings.TrimSpace(f) == name {
			return true
		}
	}
	return false
}

// Abs is filepath.Abs, fatal on error.
func Abs(p string) string {
	a, err := filepath.Abs(p)
	Must(err)
	return a
}

// LastLines keeps the last n lines of s.
func LastLines(s string, n int) string {
	l := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(l) > n {
		l = l[len(l)-n:]
	}
	return strings.Join(l, "\n")
}

// Must exits on a non-nil error.
func Must(err error) {
	if err != nil {
		Fatalf("%v", err)
	}
}

// Fatalf prints "<Name>: message" and exits 1.
func Fatalf(format string, a ...any) {
	fmt.Fprintf(os.Stderr, Name+": "+format+"\n", a...)
	os.Exit(1)
}

// Shape is a data dir of the replay benchmark, written by promgen and reused
// by the block benchmark: Series float series of the synth model plus, for
// the histogram-heavy shape h, HistSeries integer counter histogram series
// and GaugeHistSeries float gauge histogram series, Samples samples each at
// 15 s, snappy WAL.
type Shape struct {
	Name                        string
	Series, Samples             int64
	HistSeries, GaugeHistSeries int64
}

// HistShape is shape h with the given sizes.
func HistShape(hist, gauge, samples int64) Shape {
	return Shape{Name: "h", HistSeries: hist, GaugeHistSeries: gauge, Samples: samples}
}

// TotalSeries counts the series of every kind.
func (s Shape) TotalSeries() int64 { return s.Series + s.HistSeries + s.GaugeHistSeries }

// TotalSamples counts the samples of every kind.
func (s Shape) TotalSamples() int64 { return s.TotalSeries() * s.Samples }

// Label describes the shape in a table row.
func (s Shape) Label() string {
	if s.HistSeries+s.GaugeHistSeries == 0 {
		return fmt.Sprintf("(%s) %d series x %d samples", s.Name, s.Series, s.Samples)
	}
	l := fmt.Sprintf("(%s) %d histogram + %d gauge float histogram", s.Name, s.HistSeries, s.GaugeHistSeries)
	if s.Series > 0 {
		l += fmt.Sprintf(" + %d float", s.Series)
	}
	return l + fmt.Sprintf(" series x %d samples", s.Samples)
}

// Dir is the shape's data dir under data (the float shapes' names are
// unchanged from before shape h, so their generated dirs are reused).
func (s Shape) Dir(data string) string {
	if s.HistSeries+s.GaugeHistSeries == 0 {
		return filepath.Join(data, fmt.Sprintf("%s-%dx%d-snappy", s.Name, s.Series, s.Samples))
	}
	return filepath.Join(data, fmt.Sprintf("%s-%df-%dh-%dg-x%d-snappy", s.Name, s.Series, s.HistSeries, s.GaugeHistSeries, s.Samples))
}

// PromgenArgs are promgen's flags (without --dir) that write the shape.
func (s Shape) PromgenArgs() []string {
	args := []string{"--series", fmt.Sprint(s.Series), "--samples", fmt.Sprint(s.Samples), "--interval-ms", "15000", "--wal-compression", "snappy"}
	if s.HistSeries+s.GaugeHistSeries > 0 {
		args = append(args, "--histogram-series", fmt.Sprint(s.HistSeries), "--gauge-histogram-series", fmt.Sprint(s.GaugeHistSeries))
	}
	return args
}
