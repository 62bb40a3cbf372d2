package interop_test

import (
	"encoding/json"
	"fmt"
	"math"
	"net/url"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/value"
	"github.com/prometheus/prometheus/prompb"

	"ferrite.dev/interop/internal/e2e"
)

// TestRecordingRulesMatchPrometheus: a real Prometheus v3.16.0 (built from
// the module; PROMETHEUS_BIN overrides) and Ferrite read the same
// prometheus.yml and rule file and get the same samples by remote write,
// stamped with the wall clock as they are sent, for 30 s: up series of
// three targets (one of which goes stale halfway), a counter, a gauge.
// The rule groups cover aggregation, rate, a rule reading the previous
// rule's output, rule labels, a scalar result, a filter that empties,
// a group with its own interval and query offset, and a group over its
// `limit` until the stale target drops out. Evaluations read the data 3 s
// in the past (`rule_query_offset`), so both servers have every sample
// they read whatever the delivery delay.
//
// Then every recorded series over a 20 s window must be the same on both:
// the same series, the same timestamps (the group's slots, which both
// place from a hash of the group's name and file), the same values (up to
// 1e-9 relative: each server's PromQL engine computes them). The series of
// the stale target must be stale (absent at the end, present before) on
// both, and /api/v1/rules must list the same groups and rules.
func TestRecordingRulesMatchPrometheus(t *testing.T) {
	fer := ferriteBin(t)
	prom, _ := e2eBinaries(t)
	tmp := t.TempDir()
	cfg := filepath.Join(tmp, "prometheus.yml")
	e2eWriteFile(t, cfg, "global:\n  evaluation_interval: 1s\n  rule_query_offset: 3s\nrule_files: [rules.yml]\n")
	e2eWriteFile(t, filepath.Join(tmp, "rules.yml"), `groups:
  - name: basic
    rules:
      - record: job:up:sum
        expr: sum by (job) (up)
      - record: job:requests:rate5s
        expr: sum by (job) (rate(requests_total[5s]))
        labels: {source: rules}
      - record: job:requests:rate5s:doubled
        expr: job:requests:rate5s * 2
      - record: up:count
        expr: count(up)
      - record: temp:max3s
        expr: max_over_time(temp[3s])
      - record: up:scalar
        expr: scalar(sum(up))
      - record: nothing
        expr: up > 5
  - name: offset
    interval: 2s
    query_offset: 4s
    labels: {group: offset}
    rules:
      - record: instance:up
        expr: up
      - record: instance:requests:increase
        expr: increase(requests_total[4s])
  - name: limited
    limit: 2
    rules:
      - record: up:limited
        expr: up
`)

	ports := make([]int, 0, 2)
	for len(ports) < 2 {
		p, err := e2e.FreePort()
		if err != nil {
			t.Fatal(err)
		}
		if len(ports) == 0 || ports[0] != p {
			ports = append(ports, p)
		}
	}
	ferURL := fmt.Sprintf("http://127.0.0.1:%d", ports[0])
	promURL := fmt.Sprintf("http://127.0.0.1:%d", ports[1])
	ferProc, err := e2e.Start("ferrite", fer, tmp, filepath.Join(tmp, "ferrite.log"),
		"--config.file", cfg, "--storage.tsdb.path", filepath.Join(tmp, "ferrite-data"),
		"--web.listen-address", fmt.Sprintf("127.0.0.1:%d", ports[0]))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(ferProc.Kill)
	promProc, err := e2e.Start("prometheus", prom, tmp, filepath.Join(tmp, "prometheus.log"),
		"--config.file="+cfg, "--storage.tsdb.path="+filepath.Join(tmp, "prom-data"),
		fmt.Sprintf("--web.listen-address=127.0.0.1:%d", ports[1]), "--web.enable-remote-write-receiver")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(promProc.Kill)
	for _, s := range []struct {
		p   *e2e.Proc
		url string
	}{{ferProc, ferURL}, {promProc, promURL}} {
		if err := s.p.WaitReady(s.url+"/-/ready", 60*time.Second); err != nil {
			t.Fatalf("%v\n%s", err, s.p.LogTail(20))
		}
	}

	// 30 s of samples, every 250 ms, to both servers.
	series := func(name string, kv ...string) []prompb.Label {
		ls := []prompb.Label{{Name: "__name__", Value: name}}
		for i := 0; i+1 < len(kv); i += 2 {
			ls = append(ls, prompb.Label{Name: kv[i], Value: kv[i+1]})
		}
		return ls
	}
	start := time.Now()
	stop := start.Add(30 * time.Second)
	staleAt := start.Add(15 * time.Second)
	counter := 0.0
	dbStale := false
	for i := 0; time.Now().Before(stop); i++ {
		now := time.Now().UnixMilli()
		counter += float64(1 + i%7)
		ts := func(ls []prompb.Label, v float64) prompb.TimeSeries {
			return prompb.TimeSeries{Labels: ls, Samples: []prompb.Sample{{Value: v, Timestamp: now}}}
		}
		req := &prompb.WriteRequest{Timeseries: []prompb.TimeSeries{
			ts(series("up", "instance", "a", "job", "api"), 1),
			ts(series("up", "instance", "b", "job", "api"), float64(i/8%2)),
			ts(series("requests_total", "instance", "a", "job", "api"), counter),
			ts(series("temp", "room", "x"), 20+math.Sin(float64(i)/5)*3),
		}}
		switch {
		case time.Now().Before(staleAt):
			req.Timeseries = append(req.Timeseries, ts(series("up", "instance", "c", "job", "db"), 1))
		case !dbStale:
			req.Timeseries = append(req.Timeseries, ts(series("up", "instance", "c", "job", "db"), math.Float64frombits(value.StaleNaN)))
			dbStale = true
		}
		mustWrite(t, ferURL, req)
		mustWrite(t, promURL, req)
		time.Sleep(250 * time.Millisecond)
	}

	// The window: evaluations of slots up to T read samples 3-4 s older,
	// all written; its start is well after the first samples.
	T := stop.Add(-5 * time.Second).Truncate(time.Second)
	window := "20s"
	recorded := []string{"job:up:sum", "job:requests:rate5s", "job:requests:rate5s:doubled", "up:count",
		"temp:max3s", "up:scalar", "nothing", "instance:up", "instance:requests:increase", "up:limited"}
	samples := 0
	for _, name := range recorded {
		q := fmt.Sprintf("%s[%s]", name, window)
		p := rangeAnswer(t, promURL, q, T)
		f := rangeAnswer(t, ferURL, q, T)
		if diff := compareMatrices(p, f); diff != "" {
			t.Errorf("%s at %s: %s\nprometheus: %v\nferrite: %v", q, T.Format(time.RFC3339), diff, p, f)
		}
		for _, s := range p {
			samples += len(s.points)
		}
		if name != "nothing" && name != "up:limited" && len(p) == 0 {
			t.Errorf("%s: Prometheus recorded nothing", q)
		}
	}
	t.Logf("%d recorded samples equal over %s before %s", samples, window, T.Format(time.RFC3339))
	if samples < 150 {
		t.Errorf("only %d recorded samples compared", samples)
	}

	// The db target went stale: its sum is stale on both, not just old.
	for _, base := range []string{promURL, ferURL} {
		now := rangeAnswer(t, base, `job:up:sum{job="db"}`, T)
		before := rangeAnswer(t, base, `count_over_time(job:up:sum{job="db"}[30s])`, T)
		if len(now) != 0 || len(before) != 1 {
			t.Errorf("%s: job:up:sum{job=\"db\"} should be stale at T: now %v, in the last 30s %v", base, now, before)
		}
	}

	// The same groups and rules in the API.
	if p, f := rulesSummary(t, promURL), rulesSummary(t, ferURL); p != f {
		t.Errorf("/api/v1/rules:\nprometheus:\n%s\nferrite:\n%s", p, f)
	}
	e2eCheckNoPanic(t, ferProc)
}

// matrixSeries is one series of a query answer: its labels (canonical
// text) and points (timestamp text, value text).
type matrixSeries struct {
	labels string
	points [][2]string
}

// rangeAnswer asks base for q at t and returns the series, sorted by
// labels (a vector answer gives one point per series).
func rangeAnswer(t *testing.T, base, q string, at time.Time) []matrixSeries {
	t.Helper()
	u := fmt.Sprintf("%s/api/v1/query?query=%s&time=%d", base, url.QueryEscape(q), at.Unix())
	status, body, err := e2e.Get(u)
	if err != nil || status != 200 {
		t.Fatalf("%s: %d %v %s", u, status, err, body)
	}
	var ans struct {
		Data struct {
			Result []struct {
				Metric map[string]string `json:"metric"`
				Values [][2]any          `json:"values"`
				Value  [2]any            `json:"value"`
			} `json:"result"`
		} `json:"data"`
	}
	if err := json.Unmarshal(body, &ans); err != nil {
		t.Fatalf("%s: %v", u, err)
	}
	var out []matrixSeries
	for _, r := range ans.Data.Result {
		keys := make([]string, 0, len(r.Metric))
		for k := range r.Metric {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		var b strings.Builder
		for _, k := range keys {
			fmt.Fprintf(&b, "%s=%q,", k, r.Metric[k])
		}
		s := matrixSeries{labels: b.String()}
		points := r.Values
		if len(points) == 0 && r.Value[0] != nil {
			points = [][2]any{r.Value}
		}
		for _, p := range points {
			s.points = append(s.points, [2]string{fmt.Sprint(p[0]), fmt.Sprint(p[1])})
		}
		out = append(out, s)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].labels < out[j].labels })
	return out
}

// compareMatrices: the same series with the same timestamps, values equal
// up to 1e-9 relative; "" when they agree.
func compareMatrices(p, f []matrixSeries) string {
	if len(p) != len(f) {
		return fmt.Sprintf("%d series against %d", len(p), len(f))
	}
	for i := range p {
		if p[i].labels != f[i].labels {
			return fmt.Sprintf("series %s against %s", p[i].labels, f[i].labels)
		}
		if len(p[i].points) != len(f[i].points) {
			return fmt.Sprintf("%s: %d points against %d", p[i].labels, len(p[i].points), len(f[i].points))
		}
		for j, pp := range p[i].points {
			fp := f[i].points[j]
			if pp[0] != fp[0] {
				return fmt.Sprintf("%s: point %d at %s against %s", p[i].labels, j, pp[0], fp[0])
			}
			a, errA := strconv.ParseFloat(pp[1], 64)
			b, errB := strconv.ParseFloat(fp[1], 64)
			if pp[1] != fp[1] && (errA != nil || errB != nil || !closeRel(a, b, 1e-9)) {
				return fmt.Sprintf("%s: value at %s %s against %s", p[i].labels, pp[0], pp[1], fp[1])
			}
		}
	}
	return ""
}

// rulesSummary is /api/v1/rules without what depends on timing: each
// group's name, file, interval and limit, each rule's type, name, query
// and labels.
func rulesSummary(t *testing.T, base string) string {
	t.Helper()
	status, body, err := e2e.Get(base + "/api/v1/rules")
	if err != nil || status != 200 {
		t.Fatalf("%s/api/v1/rules: %d %v %s", base, status, err, body)
	}
	var ans struct {
		Data struct {
			Groups []struct {
				Name     string  `json:"name"`
				File     string  `json:"file"`
				Interval float64 `json:"interval"`
				Limit    int     `json:"limit"`
				Rules    []struct {
					Type   string            `json:"type"`
					Name   string            `json:"name"`
					Query  string            `json:"query"`
					Labels map[string]string `json:"labels"`
				} `json:"rules"`
			} `json:"groups"`
		} `json:"data"`
	}
	if err := json.Unmarshal(body, &ans); err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for _, g := range ans.Data.Groups {
		fmt.Fprintf(&b, "group %s %s %v %d\n", g.Name, g.File, g.Interval, g.Limit)
		for _, r := range g.Rules {
			fmt.Fprintf(&b, "  %s %s %q %v\n", r.Type, r.Name, r.Query, r.Labels)
		}
	}
	return b.String()
}
