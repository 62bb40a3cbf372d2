package interop_test

// convert_classic_histograms_to_nhcb side by side: a real Prometheus
// v3.16.0 and Ferrite scrape the same scripted classic histograms (the
// Prometheus text format, OpenMetrics and protobuf) with the conversion on,
// with and without always_scrape_classic_histograms, native histograms
// scraped or not, a bucket limit, and the conversion switched on by a
// target label; their data directories are read back with Prometheus' TSDB
// and compared scrape for scrape as TestScrapeSideBySideWithPrometheus
// compares them (same helpers).
//
// The payloads hold the awkward cases: buckets out of order, no +Inf bucket,
// no _count, float counts, a histogram that is not cumulative on every
// other scrape (lost, or kept as classic series; in protobuf, one on every
// fourth scrape fails it), a +Inf bucket other than the count, bounds
// that change between scrapes, a histogram that comes and goes, label sets
// interleaved (converted in pieces), explicit timestamps (the converted
// histogram takes the one of the line that ends it), an OpenMetrics gauge
// histogram (not converted) with _created series and exemplars, a protobuf
// gauge histogram (converted, gauge hint) and a protobuf histogram that is
// both native and classic. TestNHCBRandomSideBySideWithPrometheus compares
// the two on random text and OpenMetrics bodies (nhcbGen), a new one every
// scrape.

import (
	"fmt"
	"math"
	"math/rand"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
)

// nhcbTargets serves the NHCB payloads, each scraper (and each URL, query
// included) walking its own sequence as scriptedTargets does.
type nhcbTargets struct {
	scriptedTargets
}

func (s *nhcbTargets) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	n := s.next(r)
	switch r.URL.Path {
	case "/text":
		w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
		fmt.Fprint(w, nhcbTextPayload(n, r.URL.Query().Get("stamp") != "", s.base))
	case "/om":
		w.Header().Set("Content-Type", "application/openmetrics-text; version=1.0.0; charset=utf-8")
		fmt.Fprint(w, nhcbOMPayload(n, s.base))
	case "/proto":
		w.Header().Set("Content-Type", "application/vnd.google.protobuf; proto=io.prometheus.client.MetricFamily; encoding=delimited")
		w.Write(nhcbProtoPayload(n))
	case "/random":
		// A random body, the same for both scrapers' n-th scrape of a URL.
		seed, _ := strconv.ParseInt(r.URL.Query().Get("seed"), 10, 64)
		om := r.URL.Query().Get("om") != ""
		g := nhcbGen{rng: rand.New(rand.NewSource(seed*1000 + int64(n))), om: om}
		if om {
			w.Header().Set("Content-Type", "application/openmetrics-text; version=1.0.0; charset=utf-8")
		} else {
			w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
		}
		fmt.Fprint(w, g.body())
	default:
		http.NotFound(w, r)
	}
}

// nhcbTextPayload is the text-format exposition of scrape n; with stamp,
// a histogram with explicit timestamps too (named `stamped`, which the
// comparison takes by timestamp rather than by scrape).
func nhcbTextPayload(n int, stamp bool, base int64) string {
	var b strings.Builder
	b.WriteString("# HELP lat_seconds Latency.\n# TYPE lat_seconds histogram\n")
	// Out of order (four buckets on even scrapes, three on odd ones: over
	// and under text_limited's bucket limit), then one without +Inf whose
	// count comes first.
	low := n
	if n%2 == 1 {
		low = 0
	}
	fmt.Fprintf(&b, "lat_seconds_bucket{path=\"/a\",le=\"0.5\"} %d\n", 2*n)
	fmt.Fprintf(&b, "lat_seconds_bucket{path=\"/a\",le=\"0.1\"} %d\n", low)
	fmt.Fprintf(&b, "lat_seconds_bucket{path=\"/a\",le=\"+Inf\"} %d\n", 4*n)
	fmt.Fprintf(&b, "lat_seconds_bucket{path=\"/a\",le=\"1\"} %d\n", 3*n)
	fmt.Fprintf(&b, "lat_seconds_sum{path=\"/a\"} %g\n", 1.5*float64(n))
	fmt.Fprintf(&b, "lat_seconds_count{path=\"/a\"} %d\n", 4*n)
	fmt.Fprintf(&b, "lat_seconds_count{path=\"/b\"} %d\n", n+1)
	fmt.Fprintf(&b, "lat_seconds_bucket{path=\"/b\",le=\"1\"} %d\n", n)
	fmt.Fprintf(&b, "lat_seconds_bucket{path=\"/b\",le=\"5\"} %d\n", n)
	fmt.Fprintf(&b, "lat_seconds_sum{path=\"/b\"} %d\n", n)
	// No _count and no +Inf: the count is the highest bucket's.
	fmt.Fprintf(&b, "# TYPE noinf histogram\nnoinf_bucket{le=\"10\"} %d\nnoinf_bucket{le=\"20\"} %d\n", n, n)
	// Float counts.
	fmt.Fprintf(&b, "# TYPE floaty histogram\nfloaty_bucket{le=\"1\"} 0.5\nfloaty_bucket{le=\"+Inf\"} %g\nfloaty_count %g\nfloaty_sum 2.25\n",
		float64(n)+0.5, float64(n)+0.5)
	// Not cumulative on odd scrapes.
	second := 6
	if n%2 == 1 {
		second = 3
	}
	fmt.Fprintf(&b, "# TYPE broken histogram\nbroken_bucket{le=\"1\"} 5\nbroken_bucket{le=\"2\"} %d\nbroken_bucket{le=\"+Inf\"} 6\nbroken_count 6\n", second)
	// The +Inf bucket is not the count.
	b.WriteString("# TYPE mismatch histogram\nmismatch_bucket{le=\"+Inf\"} 4\nmismatch_count 5\n")
	// Bounds that change between scrapes.
	b.WriteString("# TYPE changing histogram\nchanging_bucket{le=\"1\"} 1\n")
	if n%2 == 0 {
		b.WriteString("changing_bucket{le=\"2\"} 2\n")
	}
	b.WriteString("changing_bucket{le=\"+Inf\"} 3\nchanging_count 3\n")
	// A histogram that comes and goes.
	if n%3 != 2 {
		fmt.Fprintf(&b, "# TYPE vanishing histogram\nvanishing_bucket{le=\"1\"} %d\nvanishing_bucket{le=\"+Inf\"} %d\nvanishing_count %d\nvanishing_sum 1\n", n, n, n)
	}
	// Label sets interleaved: converted piece by piece (the later pieces
	// are duplicates of the same series at the same time).
	b.WriteString("# TYPE interleaved histogram\n")
	fmt.Fprintf(&b, "interleaved_bucket{k=\"x\",le=\"1\"} %d\n", n)
	fmt.Fprintf(&b, "interleaved_bucket{k=\"y\",le=\"1\"} %d\n", n+1)
	fmt.Fprintf(&b, "interleaved_bucket{k=\"x\",le=\"+Inf\"} %d\n", n+2)
	fmt.Fprintf(&b, "interleaved_count{k=\"y\"} %d\n", n+1)
	// Empty buckets inside and at the ends, and a bucket without le.
	fmt.Fprintf(&b, "# TYPE sparse histogram\nsparse_bucket{le=\"0.1\"} 0\nsparse_bucket{le=\"0.2\"} %d\nsparse_bucket{le=\"0.3\"} %d\n", n, n)
	fmt.Fprintf(&b, "sparse_bucket{le=\"0.4\"} %d\nsparse_bucket{le=\"0.5\"} %d\nsparse_bucket{le=\"0.6\"} %d\nsparse_bucket %d\nsparse_bucket{le=\"+Inf\"} %d\nsparse_count %d\n",
		n, n, 2*n, n, 2*n, 2*n)
	if stamp {
		ts := base + int64(n)*1000
		b.WriteString("# TYPE stamped histogram\n")
		fmt.Fprintf(&b, "stamped_bucket{le=\"1\"} %d %d\nstamped_bucket{le=\"+Inf\"} %d %d\nstamped_count %d %d\n", n, ts, n, ts, n, ts)
		// Ends the histogram, which takes this line's timestamp.
		fmt.Fprintf(&b, "stamped{x=\"after\"} %d %d\n", n, ts+500)
	}
	b.WriteString("# TYPE plain gauge\nplain 1\n")
	return b.String()
}

// nhcbOMPayload is the OpenMetrics exposition of scrape n.
func nhcbOMPayload(n int, base int64) string {
	var b strings.Builder
	b.WriteString("# TYPE om_lat_seconds histogram\n# UNIT om_lat_seconds seconds\n# HELP om_lat_seconds Latency.\n")
	fmt.Fprintf(&b, "om_lat_seconds_bucket{le=\"0.1\"} %d # {trace_id=\"t%d\"} 0.05 %d.5\n", n, n, base/1000)
	fmt.Fprintf(&b, "om_lat_seconds_bucket{le=\"1\"} %d\nom_lat_seconds_bucket{le=\"+Inf\"} %d\n", 2*n, 3*n)
	fmt.Fprintf(&b, "om_lat_seconds_count %d\nom_lat_seconds_sum %g\nom_lat_seconds_created %d\n", 3*n, 1.5*float64(n), base/1000)
	fmt.Fprintf(&b, "# TYPE om_gauge_hist gaugehistogram\nom_gauge_hist_bucket{le=\"1\"} %d\nom_gauge_hist_bucket{le=\"+Inf\"} %d\nom_gauge_hist_gcount %d\nom_gauge_hist_gsum %d\n",
		n, 2*n, 2*n, n)
	second := 2
	if n%2 == 1 {
		second = 1
	}
	fmt.Fprintf(&b, "# TYPE om_broken histogram\nom_broken_bucket{le=\"1\"} 2\nom_broken_bucket{le=\"2\"} %d\nom_broken_bucket{le=\"+Inf\"} 2\nom_broken_count 2\n", second)
	fmt.Fprintf(&b, "# TYPE om_labelled histogram\n")
	for _, k := range []string{"a", "b"} {
		fmt.Fprintf(&b, "om_labelled_bucket{k=\"%s\",le=\"1.5\"} %d\nom_labelled_bucket{k=\"%s\",le=\"+Inf\"} %d\nom_labelled_count{k=\"%s\"} %d\nom_labelled_sum{k=\"%s\"} 0.5\n",
			k, n, k, n+1, k, n+1, k)
	}
	b.WriteString("# EOF\n")
	return b.String()
}

// nhcbProtoPayload is the protobuf exposition of scrape n: classic
// histograms (out of order, float counts, labels), a classic gauge
// histogram, a histogram both native and classic, a native one only, and
// on every fourth scrape a histogram that is not cumulative (the scrape
// fails).
func nhcbProtoPayload(n int) []byte {
	lp := func(name, value string) *dto.LabelPair {
		return &dto.LabelPair{Name: proto.String(name), Value: proto.String(value)}
	}
	bucket := func(le float64, c uint64) *dto.Bucket {
		return &dto.Bucket{UpperBound: proto.Float64(le), CumulativeCount: proto.Uint64(c)}
	}
	u := uint64(n)
	span := &dto.BucketSpan{Offset: proto.Int32(0), Length: proto.Uint32(2)}
	families := []*dto.MetricFamily{
		{Name: proto.String("pb_lat_seconds"), Help: proto.String("Latency."), Type: dto.MetricType_HISTOGRAM.Enum(),
			Metric: []*dto.Metric{
				{Label: []*dto.LabelPair{lp("path", "/a")}, Histogram: &dto.Histogram{SampleCount: proto.Uint64(3 * u), SampleSum: proto.Float64(float64(n)),
					Bucket: []*dto.Bucket{bucket(1, 2*u), bucket(0.1, u), bucket(5, 2*u)}}},
				{Label: []*dto.LabelPair{lp("path", "/b")}, Histogram: &dto.Histogram{SampleCountFloat: proto.Float64(float64(n) + 0.5), SampleSum: proto.Float64(1),
					Bucket: []*dto.Bucket{{UpperBound: proto.Float64(0.5), CumulativeCountFloat: proto.Float64(0.5)},
						{UpperBound: proto.Float64(math.Inf(1)), CumulativeCountFloat: proto.Float64(float64(n) + 0.5)}}}},
			}},
		{Name: proto.String("pb_gauge_hist"), Type: dto.MetricType_GAUGE_HISTOGRAM.Enum(),
			Metric: []*dto.Metric{{Histogram: &dto.Histogram{SampleCount: proto.Uint64(u + 2), SampleSum: proto.Float64(-1),
				Bucket: []*dto.Bucket{bucket(-1, 1), bucket(1, u+1)}}}}},
		{Name: proto.String("pb_both"), Type: dto.MetricType_HISTOGRAM.Enum(),
			Metric: []*dto.Metric{{Histogram: &dto.Histogram{SampleCount: proto.Uint64(2*u + 1), SampleSum: proto.Float64(3),
				Schema: proto.Int32(0), ZeroThreshold: proto.Float64(0.001), ZeroCount: proto.Uint64(1),
				PositiveSpan: []*dto.BucketSpan{span}, PositiveDelta: []int64{int64(n), 0},
				Bucket: []*dto.Bucket{bucket(1, u+1), bucket(2, 2*u+1)}}}}},
		{Name: proto.String("pb_native_only"), Type: dto.MetricType_HISTOGRAM.Enum(),
			Metric: []*dto.Metric{{Histogram: &dto.Histogram{SampleCount: proto.Uint64(u), SampleSum: proto.Float64(2),
				Schema: proto.Int32(1), ZeroThreshold: proto.Float64(0.001),
				PositiveSpan: []*dto.BucketSpan{{Offset: proto.Int32(0), Length: proto.Uint32(1)}}, PositiveDelta: []int64{int64(n)}}}}},
		{Name: proto.String("pb_plain"), Type: dto.MetricType_GAUGE.Enum(),
			Metric: []*dto.Metric{{Gauge: &dto.Gauge{Value: proto.Float64(float64(n))}}}},
	}
	if n%4 == 3 {
		families = append(families, &dto.MetricFamily{Name: proto.String("pb_broken"), Type: dto.MetricType_HISTOGRAM.Enum(),
			Metric: []*dto.Metric{{Histogram: &dto.Histogram{SampleCount: proto.Uint64(2), Bucket: []*dto.Bucket{bucket(1, 2), bucket(2, 1)}}}}})
	}
	var b []byte
	for _, f := range families {
		m, err := proto.Marshal(f)
		if err != nil {
			panic(err)
		}
		b = protowire.AppendVarint(b, uint64(len(m)))
		b = append(b, m...)
	}
	return b
}

// nhcbGen writes random bodies of classic histograms for the conversion:
// families of every type (mostly histograms), label sets written in
// order, shuffled or interleaved, buckets with odd bounds, repeated,
// missing or not cumulative, counts that do or do not match, float
// counts, buckets without a usable `le`, and other lines (comments, HELP,
// plain series) in the middle of a histogram.
type nhcbGen struct {
	rng *rand.Rand
	om  bool
}

func (g *nhcbGen) chance(p float64) bool { return g.rng.Float64() < p }

func (g *nhcbGen) pick(s ...string) string { return s[g.rng.Intn(len(s))] }

func (g *nhcbGen) body() string {
	var b strings.Builder
	for f, n := 0, 1+g.rng.Intn(4); f < n; f++ {
		g.family(&b)
	}
	if g.om {
		b.WriteString("# EOF\n")
	}
	return b.String()
}

// family writes one family: its metadata, then its series.
func (g *nhcbGen) family(b *strings.Builder) {
	name := g.pick("h", "h2", "lat_seconds")
	typ := "histogram"
	switch r := g.rng.Float64(); {
	case r < 0.1 && g.om:
		typ = "gaugehistogram"
	case r < 0.15:
		typ = "gauge"
	case r < 0.2:
		typ = "summary"
	case r < 0.25:
		typ = ""
	}
	if g.chance(0.3) {
		fmt.Fprintf(b, "# HELP %s Some help.\n", name)
	}
	if typ != "" {
		fmt.Fprintf(b, "# TYPE %s %s\n", name, typ)
	}
	var sets [][]string
	for _, ls := range []string{"", `a="1"`, `a="2",b="x"`} {
		if len(sets) == 0 || g.chance(0.5) {
			sets = append(sets, g.series(name, ls))
		}
	}
	var lines []string
	switch r := g.rng.Float64(); {
	case r < 0.5: // in order
		for _, s := range sets {
			lines = append(lines, s...)
		}
	case r < 0.75: // each set shuffled
		for _, s := range sets {
			g.rng.Shuffle(len(s), func(i, j int) { s[i], s[j] = s[j], s[i] })
			lines = append(lines, s...)
		}
	default: // sets interleaved
		for len(sets) > 0 {
			i := g.rng.Intn(len(sets))
			lines = append(lines, sets[i][0])
			if sets[i] = sets[i][1:]; len(sets[i]) == 0 {
				sets = append(sets[:i], sets[i+1:]...)
			}
		}
	}
	for _, l := range lines {
		if g.chance(0.05) {
			switch {
			case !g.om && g.chance(0.5):
				b.WriteString("# a comment\n")
			case g.chance(0.5):
				fmt.Fprintf(b, "other_%d 1\n", g.rng.Intn(2))
			case !g.om:
				fmt.Fprintf(b, "# HELP %s Help again.\n", name)
			}
		}
		b.WriteString(l + "\n")
	}
}

// series writes one label set's classic histogram series.
func (g *nhcbGen) series(name, ls string) []string {
	with := func(extra string) string {
		switch {
		case ls == "" && extra == "":
			return ""
		case ls == "":
			return "{" + extra + "}"
		case extra == "":
			return "{" + ls + "}"
		}
		return "{" + ls + "," + extra + "}"
	}
	half := g.chance(0.2) // float counts
	count := func(c int) string {
		if half {
			return fmt.Sprintf("%g", float64(c)+0.5)
		}
		return strconv.Itoa(c)
	}
	var out []string
	total := 0
	for _, le := range []string{"-Inf", "0.1", "0.5", "1", "1e3", "2.5", "+Inf"} {
		if !g.chance(0.5) && le != "+Inf" || le == "+Inf" && g.chance(0.2) {
			continue
		}
		total += g.rng.Intn(3)
		c := total
		if g.chance(0.05) {
			c = total - 2 // not cumulative
		}
		out = append(out, fmt.Sprintf("%s_bucket%s %s", name, with(`le="`+le+`"`), count(c)))
		if g.chance(0.05) {
			out = append(out, fmt.Sprintf("%s_bucket%s %s", name, with(`le="`+le+`"`), count(c+1))) // repeated
		}
	}
	if g.chance(0.05) {
		out = append(out, fmt.Sprintf("%s_bucket%s 1", name, with(`le="`+g.pick("x", "NaN", "")+`"`)))
	}
	if g.chance(0.8) {
		c := total
		if g.chance(0.1) {
			c = total + 1
		}
		out = append(out, fmt.Sprintf("%s_count%s %s", name, with(""), count(c)))
	}
	if g.chance(0.8) {
		out = append(out, fmt.Sprintf("%s_sum%s %d", name, with(""), g.rng.Intn(10)))
	}
	if len(out) == 0 {
		out = append(out, fmt.Sprintf("%s%s 1", name, with("")))
	}
	return out
}

const (
	nhcbConvert = "    convert_classic_histograms_to_nhcb: true\n"
	nhcbKeep    = "    always_scrape_classic_histograms: true\n"
)

// nhcbJob is a job of the NHCB tests' configuration scraping `path` of
// the target.
func nhcbJob(target, name, path, extra string) string {
	return fmt.Sprintf("  - job_name: %s\n    metrics_path: %s\n    static_configs: [{targets: [%q]}]\n%s", name, path, target, extra)
}

const nhcbGlobal = "global:\n  scrape_interval: 1s\n  scrape_timeout: 800ms\nscrape_configs:\n"

// nhcbConfig is the configuration of the scripted cases' jobs.
func nhcbConfig(target string) string {
	job := func(name, path, extra string) string { return nhcbJob(target, name, path, extra) }
	convert, keep := nhcbConvert, nhcbKeep
	return nhcbGlobal +
		job("text", "/text", "    params: {stamp: [yes]}\n"+convert) +
		job("text_keep", "/text", "    params: {copy: [keep]}\n"+convert+keep) +
		job("text_limited", "/text", "    params: {copy: [limited]}\n"+convert+
			"    native_histogram_bucket_limit: 3\n    sample_limit: 40\n"+
			"    metric_relabel_configs:\n      - {source_labels: [__name__], regex: 'lat_seconds', target_label: relabelled, replacement: 'yes'}\n") +
		job("text_by_label", "/text", "    params: {copy: [label]}\n"+
			"    relabel_configs:\n      - {target_label: __convert_classic_histograms_to_nhcb__, replacement: 'true'}\n") +
		job("om", "/om", convert) +
		job("om_keep", "/om", "    params: {copy: [keep]}\n"+convert+keep) +
		job("proto", "/proto", convert) +
		job("proto_native", "/proto", "    params: {copy: [native]}\n"+convert+"    scrape_native_histograms: true\n") +
		job("proto_keep", "/proto", "    params: {copy: [keep]}\n"+convert+keep+"    scrape_native_histograms: true\n") +
		job("proto_keep_classic", "/proto", "    params: {copy: [keepclassic]}\n"+convert+keep)
}

// nhcbRandomConfig is the configuration of jobs scraping random bodies
// (nhcbGen), text and OpenMetrics, with and without the classic series
// kept, from several seeds.
func nhcbRandomConfig(target string) string {
	convert, keep := nhcbConvert, nhcbKeep
	var b strings.Builder
	b.WriteString(nhcbGlobal)
	for seed := 1; seed <= 4; seed++ {
		for _, om := range []bool{false, true} {
			for _, k := range []bool{false, true} {
				name := fmt.Sprintf("random_%d", seed)
				params := fmt.Sprintf("    params: {seed: ['%d']", seed)
				if om {
					name += "_om"
					params += ", om: [yes]"
				}
				extra := convert
				if k {
					name += "_keep"
					params += ", copy: [keep]"
					extra += keep
				}
				b.WriteString(nhcbJob(target, name, "/random", params+"}\n"+extra))
			}
		}
	}
	return b.String()
}

// nhcbSideBySide runs Prometheus and Ferrite with the configuration
// `config` makes for the NHCB targets, compares their data scrape for
// scrape (and, with metrics, their scrape pools' metrics: not for bodies
// that change every scrape, as the two are some scrapes apart at any
// moment), and returns Prometheus' data by series, scrape by scrape, and
// the target's address.
func nhcbSideBySide(t *testing.T, config func(target string) string, metrics bool) (map[string]map[int]string, string) {
	t.Helper()
	fer := ferriteBin(t)
	prom, _ := e2eBinaries(t)
	targets := &nhcbTargets{scriptedTargets{count: map[string]int{}, base: time.Now().UnixMilli()}}
	srv := httptest.NewServer(targets)
	defer srv.Close()
	target := strings.TrimPrefix(srv.URL, "http://")

	tmp := t.TempDir()
	cfg := filepath.Join(tmp, "prometheus.yml")
	if err := os.WriteFile(cfg, []byte(config(target)), 0o644); err != nil {
		t.Fatal(err)
	}
	pair := startSideBySide(t, fer, prom, tmp, cfg)
	defer pair.kill()

	time.Sleep(14 * time.Second)
	if metrics {
		// The scrape pools' metrics too (the bucket limit's counter).
		compareScrapeMetrics(t, pair.ferURL, pair.promURL)
	}
	ferData, promData := pair.stopAndRead(t)
	fer2, _, ferLast := scrapeIndexed(t, "ferrite", target, ferData)
	prom2, _, promLast := scrapeIndexed(t, "prometheus", target, promData)
	last := min(ferLast, promLast) - 1 // the last scrape may have raced the stop
	if last < 6 {
		t.Fatalf("only %d common scrapes", last)
	}
	sorted := compareAllScrapes(t, fer2, prom2, last, 20)
	t.Logf("%d series, %d common scrapes each", len(sorted), last+1)
	return prom2, target
}

// nhcbConvertedByJob counts, by job, the series Prometheus stored
// converted histograms in (custom-buckets schema).
func nhcbConvertedByJob(data map[string]map[int]string) map[string]int {
	converted := map[string]int{}
	for k, m := range data {
		for _, v := range m {
			if (strings.HasPrefix(v, "H ") || strings.HasPrefix(v, "F ")) && strings.Contains(v, " -53 ") {
				job, _, _ := strings.Cut(seriesTarget(k), "/")
				converted[strings.Trim(job, `"`)]++
				break
			}
		}
	}
	return converted
}

func TestNHCBSideBySideWithPrometheus(t *testing.T) {
	prom, _ := nhcbSideBySide(t, nhcbConfig, true)
	// Prometheus did convert, in every job: the comparison is not of two
	// empty sets.
	converted := nhcbConvertedByJob(prom)
	for _, job := range []string{"text", "text_keep", "text_limited", "text_by_label", "om", "om_keep",
		"proto", "proto_native", "proto_keep", "proto_keep_classic"} {
		if converted[job] == 0 {
			t.Errorf("job %s: Prometheus stored no converted histogram (%v)", job, converted)
		}
	}
	t.Logf("converted histogram series by job: %v", converted)
}

// TestNHCBRandomSideBySideWithPrometheus is the same comparison on random
// bodies (nhcbGen): a new one every scrape, the same for both servers.
func TestNHCBRandomSideBySideWithPrometheus(t *testing.T) {
	prom, _ := nhcbSideBySide(t, nhcbRandomConfig, false)
	converted := nhcbConvertedByJob(prom)
	for job, n := range converted {
		if n == 0 {
			t.Errorf("job %s: Prometheus stored no converted histogram", job)
		}
	}
	if len(converted) < 16 {
		t.Errorf("only %d of 16 jobs have converted histograms: %v", len(converted), converted)
	}
	// Most bodies parse: the conversion, not the parsers' errors, is
	// compared.
	for k, m := range prom {
		if !strings.HasPrefix(k, `{__name__="up"`) {
			continue
		}
		up := 0
		for _, v := range m {
			if v == "1" {
				up++
			}
		}
		if up*2 < len(m) {
			t.Errorf("%s: up in only %d of %d scrapes", k, up, len(m))
		}
	}
	t.Logf("converted histogram series by job: %v", converted)
}
