package interop_test

// Scraping side by side: a real Prometheus v3.16.0 and Ferrite run the same
// prometheus.yml against the same scripted targets (served by this test),
// then their data directories are read back with Prometheus' own TSDB code
// and compared, and so are their /api/v1/targets answers.
//
// Each scraper gets its own copy of every target's payload sequence (the
// n-th scrape of a target by Prometheus gets the same body as Ferrite's
// n-th), so the data must be equal scrape for scrape: the same series, the
// same values, the same stale markers (vanished series, failed scrapes),
// the same report series. Timestamps are compared through their phase in
// the interval: both must scrape each target at the same moments (the same
// hash-derived offset) within a few milliseconds (Prometheus' own timer
// latency).
//
// One target serves the protobuf format with native histograms, scraped
// three ways (native histograms scraped; with classic buckets kept, a
// bucket limit and a minimum bucket factor; classic buckets only): the
// histograms are compared whole (internal/histrecord).

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/value"
	"github.com/prometheus/prometheus/tsdb"
	"github.com/prometheus/prometheus/tsdb/chunkenc"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"ferrite.dev/interop/internal/e2e"
	"ferrite.dev/interop/internal/histrecord"
	"ferrite.dev/interop/internal/promtsdb"
)

const sideBySideInterval = time.Second

// scriptedTargets serves every test target; each scraper (told apart by
// its User-Agent) walks its own copy of each target's payload sequence.
type scriptedTargets struct {
	mu    sync.Mutex
	count map[string]int // scraper + URL → scrapes so far
	base  int64          // explicit timestamps start here (ms)
}

func (s *scriptedTargets) next(r *http.Request) int {
	who := "ferrite"
	if strings.HasPrefix(r.UserAgent(), "Prometheus/") {
		who = "prometheus"
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	key := who + " " + r.URL.String()
	n := s.count[key]
	s.count[key] = n + 1
	return n
}

// payload is the exposition of scrape n: a counter, gauges with awkward
// label values, series that come and go, a NaN, and labels that collide
// with the target's.
func payload(n int) string {
	var b strings.Builder
	b.WriteString("# HELP c_total A counter.\n# TYPE c_total counter\n")
	fmt.Fprintf(&b, "c_total{path=\"/\"} %d\n", n*10)
	fmt.Fprintf(&b, "c_total{path=\"/x\",job=\"inner\",instance=\"in:1\"} %d\n", n)
	b.WriteString("# TYPE g gauge\n")
	fmt.Fprintf(&b, "g{k=\"quote \\\" and \\\\ and \\n\",e=\"\"} %g\n", float64(n)/3)
	fmt.Fprintf(&b, "g{k=\"utf8 ü ✓\"} -%d\n", n)
	if n%3 != 2 {
		fmt.Fprintf(&b, "vanishing{i=\"%d\"} 1\n", n%2)
	}
	b.WriteString("nan_value NaN\n")
	fmt.Fprintf(&b, "# TYPE h histogram\nh_bucket{le=\"1\"} %d\nh_bucket{le=\"+Inf\"} %d\nh_sum %d\nh_count %d\n", n, 2*n, 3*n, 2*n)
	return b.String()
}

// protoPayload is the protobuf exposition of scrape n: a counter with an
// exemplar, a gauge, a classic histogram, a summary, native histograms
// (integer with classic buckets and empty buckets, float, gauge, one of
// schema 5 with many buckets for the limits, one that comes and goes).
func protoPayload(n int) []byte {
	lp := func(name, value string) *dto.LabelPair {
		return &dto.LabelPair{Name: proto.String(name), Value: proto.String(value)}
	}
	span := func(offset int32, length uint32) *dto.BucketSpan {
		return &dto.BucketSpan{Offset: proto.Int32(offset), Length: proto.Uint32(length)}
	}
	// A native integer histogram; its count is its buckets' (as it must).
	native := func(schema int32, spans []*dto.BucketSpan, deltas []int64) *dto.Histogram {
		count, abs := uint64(n%3), int64(0)
		for _, d := range deltas {
			abs += d
			count += uint64(abs)
		}
		return &dto.Histogram{
			SampleCount: proto.Uint64(count), SampleSum: proto.Float64(float64(n) * 1.5),
			Schema: proto.Int32(schema), ZeroThreshold: proto.Float64(0.001), ZeroCount: proto.Uint64(uint64(n % 3)),
			PositiveSpan: spans, PositiveDelta: deltas,
		}
	}
	u := uint64(n)
	withClassic := native(3, []*dto.BucketSpan{span(-2, 3), span(2, 2)}, []int64{int64(n % 2), 1, -1, 2, int64(n)})
	withClassic.Bucket = []*dto.Bucket{
		{UpperBound: proto.Float64(0.5), CumulativeCount: proto.Uint64(u)},
		{UpperBound: proto.Float64(2), CumulativeCount: proto.Uint64(2 * u)},
	}
	wide := native(5, []*dto.BucketSpan{span(0, 12), span(3, 6)},
		[]int64{1, 1, -1, 0, 2, -2, 1, 0, 0, 1, int64(n), -int64(n), 3, -1, 0, 0, 1, -2})
	families := []*dto.MetricFamily{
		{Name: proto.String("proto_requests_total"), Help: proto.String("Requests."), Type: dto.MetricType_COUNTER.Enum(),
			Metric: []*dto.Metric{{Label: []*dto.LabelPair{lp("path", "/"), lp("job", "inner")},
				Counter: &dto.Counter{Value: proto.Float64(float64(n * 3)),
					Exemplar: &dto.Exemplar{Label: []*dto.LabelPair{lp("trace_id", fmt.Sprint(n))}, Value: proto.Float64(1)}}}}},
		{Name: proto.String("proto_temp_celsius"), Unit: proto.String("celsius"), Type: dto.MetricType_GAUGE.Enum(),
			Metric: []*dto.Metric{{Gauge: &dto.Gauge{Value: proto.Float64(20 + float64(n)/4)}}}},
		{Name: proto.String("proto_lat_seconds"), Type: dto.MetricType_HISTOGRAM.Enum(),
			Metric: []*dto.Metric{{Histogram: &dto.Histogram{SampleCount: proto.Uint64(3 * u), SampleSum: proto.Float64(float64(n)),
				Bucket: []*dto.Bucket{{UpperBound: proto.Float64(0.1), CumulativeCount: proto.Uint64(u)},
					{UpperBound: proto.Float64(1), CumulativeCount: proto.Uint64(2 * u)}}}}}},
		{Name: proto.String("proto_rpc_seconds"), Type: dto.MetricType_SUMMARY.Enum(),
			Metric: []*dto.Metric{{Summary: &dto.Summary{SampleCount: proto.Uint64(u), SampleSum: proto.Float64(float64(n) / 2),
				Quantile: []*dto.Quantile{{Quantile: proto.Float64(0.5), Value: proto.Float64(0.25)}, {Quantile: proto.Float64(0.99), Value: proto.Float64(float64(n))}}}}}},
		{Name: proto.String("proto_native_seconds"), Help: proto.String("A native histogram."), Type: dto.MetricType_HISTOGRAM.Enum(),
			Metric: []*dto.Metric{
				{Label: []*dto.LabelPair{lp("kind", "int")}, Histogram: withClassic},
				{Label: []*dto.LabelPair{lp("kind", "float")}, Histogram: &dto.Histogram{
					SampleCountFloat: proto.Float64(4.5 + float64(n)), SampleSum: proto.Float64(2), Schema: proto.Int32(0),
					ZeroThreshold: proto.Float64(0.001), ZeroCountFloat: proto.Float64(0.5),
					PositiveSpan: []*dto.BucketSpan{span(0, 3)}, PositiveCount: []float64{1, 0, 3 + float64(n)}}},
				{Label: []*dto.LabelPair{lp("kind", "wide")}, Histogram: wide},
			}},
		{Name: proto.String("proto_gauge_hist"), Type: dto.MetricType_GAUGE_HISTOGRAM.Enum(),
			Metric: []*dto.Metric{{Histogram: native(0, []*dto.BucketSpan{span(1, 2)}, []int64{2, int64(n % 3)})}}},
	}
	if n%3 != 2 {
		families = append(families, &dto.MetricFamily{Name: proto.String("proto_vanishing"), Type: dto.MetricType_HISTOGRAM.Enum(),
			Metric: []*dto.Metric{{Histogram: native(1, []*dto.BucketSpan{span(0, 1)}, []int64{2})}}})
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

func (s *scriptedTargets) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	n := s.next(r)
	text := "text/plain; version=0.0.4; charset=utf-8"
	switch r.URL.Path {
	case "/plain":
		w.Header().Set("Content-Type", text)
		fmt.Fprint(w, payload(n))
	case "/gzip":
		w.Header().Set("Content-Type", text)
		if strings.Contains(r.Header.Get("Accept-Encoding"), "gzip") {
			w.Header().Set("Content-Encoding", "gzip")
			zw := gzip.NewWriter(w)
			fmt.Fprint(zw, payload(n))
			zw.Close()
			return
		}
		fmt.Fprint(w, payload(n))
	case "/errors":
		if n%4 == 2 {
			http.Error(w, "scripted failure", http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", text)
		fmt.Fprint(w, payload(n))
	case "/timestamps":
		w.Header().Set("Content-Type", text)
		fmt.Fprintf(w, "stamped %d %d\nunstamped %d\n", n, s.base+int64(n)*1000, n)
	case "/om":
		// OpenMetrics with units, created series and exemplars; what a
		// scraper that asks for it gets.
		if !strings.Contains(r.Header.Get("Accept"), "application/openmetrics-text") {
			http.Error(w, "asked for no OpenMetrics", http.StatusNotAcceptable)
			return
		}
		w.Header().Set("Content-Type", "application/openmetrics-text; version=1.0.0; charset=utf-8")
		fmt.Fprintf(w, "# TYPE req counter\n# UNIT req requests\n# HELP req Requests.\n")
		fmt.Fprintf(w, "req_total{code=\"200\"} %d # {trace_id=\"t%d\"} 1 %d.5\n", n*3, n, s.base/1000)
		fmt.Fprintf(w, "req_created{code=\"200\"} %d\n", s.base/1000)
		fmt.Fprintf(w, "# TYPE temp_celsius gauge\n# UNIT temp_celsius celsius\ntemp_celsius %g\n", 20+float64(n)/4)
		if n%2 == 0 {
			fmt.Fprintf(w, "# TYPE info_thing info\ninfo_thing_info{version=\"v%d\"} 1\n", n%3)
		}
		fmt.Fprint(w, "# EOF\n")
	case "/proto":
		// The protobuf format, with native histograms; what a scraper
		// that asks for it gets.
		if !strings.Contains(r.Header.Get("Accept"), "application/vnd.google.protobuf") {
			http.Error(w, "asked for no protobuf", http.StatusNotAcceptable)
			return
		}
		w.Header().Set("Content-Type", "application/vnd.google.protobuf; proto=io.prometheus.client.MetricFamily; encoding=delimited")
		w.Write(protoPayload(n))
	case "/html":
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprint(w, payload(n))
	case "/broken":
		w.Header().Set("Content-Type", text)
		if n%2 == 1 {
			fmt.Fprint(w, "ok 1\nbroken{ 2\n")
			return
		}
		fmt.Fprint(w, "ok 1\n")
	default:
		http.NotFound(w, r)
	}
}

func sideBySideConfig(target string) string {
	job := func(name, path string, extra string) string {
		return fmt.Sprintf("  - job_name: %s\n    metrics_path: %s\n    static_configs: [{targets: [%q], labels: {env: side}}]\n%s", name, path, target, extra)
	}
	return "global:\n  scrape_interval: 1s\n  scrape_timeout: 800ms\nscrape_configs:\n" +
		job("plain", "/plain", "") +
		job("honor", "/plain", "    honor_labels: true\n    params: {copy: [honor]}\n") +
		job("relabel", "/plain", "    params: {copy: [relabel]}\n    metric_relabel_configs:\n"+
			"      - {source_labels: [__name__], regex: g, action: drop}\n"+
			"      - {source_labels: [path], target_label: route, replacement: 'r$1'}\n") +
		job("limited", "/plain", "    params: {copy: [limited]}\n    sample_limit: 5\n") +
		job("gzip", "/gzip", "") +
		job("openmetrics", "/om", "") +
		job("errors", "/errors", "") +
		job("timestamps", "/timestamps", "") +
		job("html", "/html", "") +
		job("fallback", "/html", "    params: {copy: [fallback]}\n    fallback_scrape_protocol: PrometheusText0.0.4\n") +
		job("broken", "/broken", "") +
		job("native", "/proto", "    scrape_native_histograms: true\n") +
		job("native_limits", "/proto", "    params: {copy: [limits]}\n    scrape_native_histograms: true\n"+
			"    always_scrape_classic_histograms: true\n    native_histogram_bucket_limit: 6\n    native_histogram_min_bucket_factor: 1.1\n") +
		job("proto_classic", "/proto", "    params: {copy: [classic]}\n    scrape_protocols: [PrometheusProto]\n") +
		"  - job_name: dead\n    static_configs: [{targets: [\"127.0.0.1:1\"]}]\n" +
		"  - job_name: dropper\n    static_configs: [{targets: [\"a:1\", \"b:2\"]}]\n" +
		"    relabel_configs: [{source_labels: [__address__], regex: 'a:1', action: drop}]\n"
}

// sample is one stored sample, its value as compared: a float's `%g`
// (`stale` for a stale marker), a native histogram's record
// (internal/histrecord).
type sample struct {
	t   int64
	val string
}

// readSamples opens a data directory with Prometheus' TSDB (WAL replayed)
// and returns every sample (float or native histogram) by series.
func readSamples(t *testing.T, dir string) map[string][]sample {
	t.Helper()
	scratch := filepath.Join(t.TempDir(), "copy")
	if err := promtsdb.CopyDir(dir, scratch); err != nil {
		t.Fatal(err)
	}
	db, err := tsdb.OpenDBReadOnly(scratch, "", promtsdb.Logger)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	q, err := db.Querier(math.MinInt64, math.MaxInt64)
	if err != nil {
		t.Fatal(err)
	}
	defer q.Close()
	out := map[string][]sample{}
	ss := q.Select(context.Background(), true, nil, labels.MustNewMatcher(labels.MatchRegexp, "__name__", ".+"))
	var it chunkenc.Iterator
	for ss.Next() {
		s := ss.At()
		key := s.Labels().String()
		it = s.Iterator(it)
		for vt := it.Next(); vt != chunkenc.ValNone; vt = it.Next() {
			switch vt {
			case chunkenc.ValFloat:
				ts, v := it.At()
				text := fmt.Sprintf("%g", v)
				if value.IsStaleNaN(v) {
					text = "stale"
				}
				out[key] = append(out[key], sample{ts, text})
			// A stale marker of a histogram series is a histogram in
			// Prometheus' head (its commit turns the scrape's float
			// marker into one) and a float in Ferrite's: both are
			// `stale`, as queries see them.
			case chunkenc.ValHistogram:
				ts, h := it.AtHistogram(nil)
				text := histrecord.Int(h)
				if value.IsStaleNaN(h.Sum) {
					text = "stale"
				}
				out[key] = append(out[key], sample{ts, text})
			case chunkenc.ValFloatHistogram:
				ts, fh := it.AtFloatHistogram(nil)
				text := histrecord.Float(fh)
				if value.IsStaleNaN(fh.Sum) {
					text = "stale"
				}
				out[key] = append(out[key], sample{ts, text})
			default:
				t.Fatalf("%s: a %v sample", key, vt)
			}
		}
	}
	if err := ss.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// scrapeIndexed turns one server's samples into (scrape number, value)
// by series: a sample's scrape is counted from its target's first `up`.
// Explicitly stamped samples keep their own time. Report values that
// measure the scraper (durations) are left out.
func scrapeIndexed(t *testing.T, name, target string, data map[string][]sample) (map[string]map[int]string, map[string]int64, int) {
	t.Helper()
	first := map[string]int64{} // job/instance → first scrape time
	lastIndex := math.MaxInt
	for key, ss := range data {
		if strings.HasPrefix(key, "{__name__=\"up\"") {
			lbls := seriesTarget(key)
			first[lbls] = ss[0].t
			if n := len(ss) - 1; n < lastIndex {
				lastIndex = n
			}
		}
	}
	interval := sideBySideInterval.Milliseconds()
	out := map[string]map[int]string{}
	for key, ss := range data {
		if strings.HasPrefix(key, "{__name__=\"scrape_duration_seconds\"") {
			continue
		}
		start, ok := first[seriesTarget(key)]
		if !ok && strings.Contains(key, `job="inner"`) {
			// The honor_labels job keeps the exposition's job and instance.
			start, ok = first["\"honor\"/\""+target+"\""]
		}
		if !ok {
			t.Fatalf("%s: %s has no up series", name, key)
		}
		m := map[int]string{}
		for _, s := range ss {
			idx := int(s.t)
			if !strings.HasPrefix(key, "{__name__=\"stamped\"") {
				d := s.t - start
				idx = int((d + interval/2) / interval)
				if off := d - int64(idx)*interval; off < -50 || off > 50 {
					t.Errorf("%s: %s at %d is %d ms off its scrape grid", name, key, s.t, off)
				}
			}
			m[idx] = s.val
		}
		out[key] = m
	}
	return out, first, lastIndex
}

// seriesTarget is the job and instance a series was scraped from.
func seriesTarget(key string) string {
	var job, inst string
	for _, part := range strings.Split(strings.Trim(key, "{}"), ", ") {
		if v, ok := strings.CutPrefix(part, "job="); ok {
			job = v
		}
		if v, ok := strings.CutPrefix(part, "instance="); ok {
			inst = v
		}
	}
	return job + "/" + inst
}

// sideBySide is a Ferrite and a Prometheus v3.16.0 started on the same
// prometheus.yml, each on a data dir of its own, both ready.
type sideBySide struct {
	fer, prom       *e2e.Proc
	ferURL, promURL string
	ferDir, promDir string
}

// startSideBySide starts the two servers (binaries fer and prom) on cfg,
// their data dirs and logs in tmp, and waits until both are ready.
func startSideBySide(t *testing.T, fer, prom, tmp, cfg string) *sideBySide {
	t.Helper()
	var ports [2]int
	for i := range ports {
		p, err := e2e.FreePort()
		if err != nil {
			t.Fatal(err)
		}
		ports[i] = p
	}
	if ports[0] == ports[1] {
		t.Skip("no two free ports")
	}
	s := &sideBySide{
		ferURL:  fmt.Sprintf("http://127.0.0.1:%d", ports[0]),
		promURL: fmt.Sprintf("http://127.0.0.1:%d", ports[1]),
		ferDir:  filepath.Join(tmp, "ferrite-data"),
		promDir: filepath.Join(tmp, "prom-data"),
	}
	var err error
	s.fer, err = e2e.Start("ferrite", fer, tmp, filepath.Join(tmp, "ferrite.log"), "--config.file="+cfg,
		"--storage.tsdb.path", s.ferDir, "--web.listen-address", fmt.Sprintf("127.0.0.1:%d", ports[0]))
	if err != nil {
		t.Fatal(err)
	}
	s.prom, err = e2e.Start("prometheus", prom, tmp, filepath.Join(tmp, "prometheus.log"), "--config.file="+cfg,
		"--storage.tsdb.path="+s.promDir, fmt.Sprintf("--web.listen-address=127.0.0.1:%d", ports[1]))
	if err != nil {
		s.fer.Kill()
		t.Fatal(err)
	}
	for _, p := range []struct {
		proc *e2e.Proc
		url  string
	}{{s.fer, s.ferURL}, {s.prom, s.promURL}} {
		if err := p.proc.WaitReady(p.url+"/-/ready", 60*time.Second); err != nil {
			s.kill()
			t.Fatalf("%v\n%s", err, p.proc.LogTail(20))
		}
	}
	return s
}

// kill kills both servers (a no-op for one already stopped).
func (s *sideBySide) kill() {
	s.fer.Kill()
	s.prom.Kill()
}

// stopAndRead stops both servers and reads the samples of their data dirs.
func (s *sideBySide) stopAndRead(t *testing.T) (fer, prom map[string][]sample) {
	t.Helper()
	if err := s.fer.Stop(30 * time.Second); err != nil {
		t.Fatalf("ferrite: %v\n%s", err, s.fer.LogTail(20))
	}
	if err := s.prom.Stop(30 * time.Second); err != nil {
		t.Fatalf("prometheus: %v", err)
	}
	return readSamples(t, s.ferDir), readSamples(t, s.promDir)
}

// compareAllScrapes compares every series of either side scrape by scrape
// up to scrape last (compareScrapes), reporting the first maxErrors
// differences, and returns the series' keys, sorted.
func compareAllScrapes(t *testing.T, fer, prom map[string]map[int]string, last, maxErrors int) []string {
	t.Helper()
	keys := map[string]bool{}
	for k := range fer {
		keys[k] = true
	}
	for k := range prom {
		keys[k] = true
	}
	sorted := make([]string, 0, len(keys))
	for k := range keys {
		sorted = append(sorted, k)
	}
	sort.Strings(sorted)
	bad := 0
	for _, k := range sorted {
		if diff := compareScrapes(k, fer[k], prom[k], last); diff != "" {
			bad++
			if bad <= maxErrors {
				t.Errorf("%s", diff)
			}
		}
	}
	if bad > maxErrors {
		t.Errorf("... %d series differ in all", bad)
	}
	return sorted
}

func TestScrapeSideBySideWithPrometheus(t *testing.T) {
	fer := ferriteBin(t)
	prom, _ := e2eBinaries(t)
	targets := &scriptedTargets{count: map[string]int{}, base: time.Now().UnixMilli()}
	srv := httptest.NewServer(targets)
	defer srv.Close()
	target := strings.TrimPrefix(srv.URL, "http://")

	tmp := t.TempDir()
	cfg := filepath.Join(tmp, "prometheus.yml")
	if err := os.WriteFile(cfg, []byte(sideBySideConfig(target)), 0o644); err != nil {
		t.Fatal(err)
	}
	pair := startSideBySide(t, fer, prom, tmp, cfg)
	defer pair.kill()
	ferURL, promURL := pair.ferURL, pair.promURL

	// Both have scraped every target several times (more than the
	// vanishing and failing cycles). Prometheus starts its scrapes up to
	// 5 s late: its discovery hands out targets every 5 s
	// (--scrape.discovery-reload-interval).
	time.Sleep(15 * time.Second)
	compareTargetsAPI(t, ferURL, promURL)
	compareScrapeMetrics(t, ferURL, promURL)

	ferData, promData := pair.stopAndRead(t)
	fer2, ferFirst, ferLast := scrapeIndexed(t, "ferrite", target, ferData)
	prom2, promFirst, promLast := scrapeIndexed(t, "prometheus", target, promData)
	last := min(ferLast, promLast) - 1 // the last scrape may have raced the stop
	if last < 6 {
		t.Fatalf("only %d common scrapes", last)
	}

	// The same moments in the interval, target by target.
	for tgt, f := range ferFirst {
		p, ok := promFirst[tgt]
		if !ok {
			t.Errorf("target %s: scraped by Ferrite only", tgt)
			continue
		}
		interval := sideBySideInterval.Milliseconds()
		phase := ((f-p)%interval + interval) % interval
		if phase > 10 && phase < interval-10 {
			t.Errorf("target %s: Ferrite scrapes %d ms off Prometheus' phase (first scrapes at %d and %d)", tgt, phase, f, p)
		}
	}
	// The same series, and scrape for scrape the same values.
	sorted := compareAllScrapes(t, fer2, prom2, last, 15)
	histograms := 0
	for _, k := range sorted {
		for _, v := range prom2[k] {
			if strings.HasPrefix(v, "H ") || strings.HasPrefix(v, "F ") {
				histograms++
				break
			}
		}
	}
	t.Logf("%d series (%d of native histograms), %d common scrapes each", len(sorted), histograms, last+1)
}

// compareScrapes compares one series' values scrape by scrape up to
// scrape `last` (explicitly stamped series: every common timestamp).
func compareScrapes(key string, f, p map[int]string, last int) string {
	stamped := strings.HasPrefix(key, "{__name__=\"stamped\"")
	show := func(m map[int]string) string {
		var idx []int
		for i := range m {
			if stamped || i <= last {
				idx = append(idx, i)
			}
		}
		sort.Ints(idx)
		var b bytes.Buffer
		for _, i := range idx {
			fmt.Fprintf(&b, " %d:%s", i, m[i])
		}
		return b.String()
	}
	if stamped {
		// Explicit timestamps: compare the stamps both have up to the
		// earlier one's last.
		lastF, lastP := math.MinInt, math.MinInt
		for i := range f {
			lastF = max(lastF, i)
		}
		for i := range p {
			lastP = max(lastP, i)
		}
		cut := min(lastF, lastP)
		trim := func(m map[int]string) map[int]string {
			o := map[int]string{}
			for i, v := range m {
				if i <= cut {
					o[i] = v
				}
			}
			return o
		}
		f, p, last = trim(f), trim(p), math.MaxInt
	}
	if fs, ps := show(f), show(p); fs != ps {
		return fmt.Sprintf("%s:\n  prometheus:%s\n  ferrite:   %s", key, ps, fs)
	}
	return ""
}

// compareTargetsAPI compares /api/v1/targets of both servers once times,
// durations and the URL under which each server is reached are dropped;
// a scrape landing between the two requests is retried.
func compareTargetsAPI(t *testing.T, ferURL, promURL string) {
	t.Helper()
	var ferText, promText string
	for attempt := 0; attempt < 10; attempt++ {
		ferText, promText = normalizedTargets(t, ferURL), normalizedTargets(t, promURL)
		if ferText == promText {
			return
		}
		time.Sleep(150 * time.Millisecond)
	}
	t.Errorf("/api/v1/targets differ:\nprometheus:\n%s\nferrite:\n%s", promText, ferText)
}

func normalizedTargets(t *testing.T, base string) string {
	t.Helper()
	resp, err := http.Get(base + "/api/v1/targets")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var body struct {
		Data struct {
			ActiveTargets       []map[string]any `json:"activeTargets"`
			DroppedTargets      []map[string]any `json:"droppedTargets"`
			DroppedTargetCounts map[string]int   `json:"droppedTargetCounts"`
		} `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		t.Fatal(err)
	}
	var lines []string
	for _, a := range body.Data.ActiveTargets {
		for _, k := range []string{"lastScrape", "lastScrapeDuration", "globalUrl"} {
			delete(a, k)
		}
		// Connection errors are worded by each HTTP client.
		if e, _ := a["lastError"].(string); strings.HasPrefix(e, "Get \"") {
			a["lastError"] = "request failed"
		}
		// Targets that fail every other scrape: the two servers may be one
		// scrape apart at any moment (their data is compared scrape by
		// scrape below).
		if pool := a["scrapePool"]; pool == "broken" || pool == "errors" {
			delete(a, "health")
			delete(a, "lastError")
		}
		b, _ := json.Marshal(a)
		lines = append(lines, "active "+string(b))
	}
	for _, d := range body.Data.DroppedTargets {
		b, _ := json.Marshal(d)
		lines = append(lines, "dropped "+string(b))
	}
	sort.Strings(lines)
	counts, _ := json.Marshal(body.Data.DroppedTargetCounts)
	return strings.Join(lines, "\n") + "\ncounts " + string(counts)
}
