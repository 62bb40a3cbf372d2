package interop_test

// The query log (global.query_log_file), the query API's `stats` parameter
// and the engine's metrics, side by side with Prometheus v3.16.0.

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"ferrite.dev/interop/internal/e2e"
	"ferrite.dev/interop/internal/promtsdb"
)

// queryLogPair is a Ferrite and a Prometheus started on the same
// configuration file, under the same route prefix.
type queryLogPair struct {
	fer, prom       *e2e.Proc
	ferURL, promURL string // with the route prefix
}

func startQueryLogPair(t *testing.T, cfg, prefix string, ferDir, promDir string) *queryLogPair {
	t.Helper()
	return startQueryLogPairConfigs(t, cfg, cfg, prefix, ferDir, promDir)
}

// startQueryLogPairConfigs starts Ferrite on ferCfg and Prometheus on
// promCfg.
func startQueryLogPairConfigs(t *testing.T, ferCfg, promCfg, prefix string, ferDir, promDir string) *queryLogPair {
	t.Helper()
	prom, _ := e2eBinaries(t)
	fer := ferriteBin(t)
	ports := alertsFreePorts(t, 2)
	tmp := t.TempDir()
	p := &queryLogPair{
		ferURL:  fmt.Sprintf("http://127.0.0.1:%d%s", ports[0], prefix),
		promURL: fmt.Sprintf("http://127.0.0.1:%d%s", ports[1], prefix),
	}
	args := func(cfg, dir string, port int) []string {
		a := []string{"--config.file=" + cfg, "--storage.tsdb.path=" + dir,
			fmt.Sprintf("--web.listen-address=127.0.0.1:%d", port),
			"--web.enable-lifecycle"}
		if prefix != "" {
			a = append(a, "--web.route-prefix="+prefix)
		}
		return a
	}
	var err error
	p.fer, err = e2e.Start("ferrite", fer, tmp, filepath.Join(tmp, "ferrite.log"), args(ferCfg, ferDir, ports[0])...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.fer.Kill)
	p.prom, err = e2e.Start("prometheus", prom, tmp, filepath.Join(tmp, "prometheus.log"), args(promCfg, promDir, ports[1])...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.prom.Kill)
	for _, s := range []struct {
		proc *e2e.Proc
		url  string
	}{{p.fer, p.ferURL}, {p.prom, p.promURL}} {
		if err := s.proc.WaitReady(s.url+"/-/ready", 60*time.Second); err != nil {
			t.Fatalf("%v\n%s", err, s.proc.LogTail(20))
		}
	}
	return p
}

// each runs f for Ferrite and for Prometheus.
func (p *queryLogPair) each(f func(name, base string)) {
	f("ferrite", p.ferURL)
	f("prometheus", p.promURL)
}

// queryStats asks base for q with stats=true and returns the stats object.
func queryStats(t *testing.T, base, path string, params url.Values) map[string]any {
	t.Helper()
	params.Set("stats", "true")
	status, body, err := e2e.Get(base + path + "?" + params.Encode())
	if err != nil || status != 200 {
		t.Fatalf("%s%s?%s: %d %v %s", base, path, params.Encode(), status, err, body)
	}
	var resp struct {
		Data struct {
			Stats map[string]any `json:"stats"`
		} `json:"data"`
	}
	if err := json.Unmarshal(body, &resp); err != nil {
		t.Fatalf("%s: %v", body, err)
	}
	if resp.Data.Stats == nil {
		t.Fatalf("%s%s: no stats in %s", base, path, body)
	}
	return resp.Data.Stats
}

// keyShape is the sorted paths of the keys of a decoded JSON object.
func keyShape(v any, prefix string, out *[]string) {
	m, ok := v.(map[string]any)
	if !ok {
		return
	}
	for k, sub := range m {
		*out = append(*out, prefix+k)
		keyShape(sub, prefix+k+".", out)
	}
}

func shapeOf(v any) string {
	var keys []string
	keyShape(v, "", &keys)
	sort.Strings(keys)
	return strings.Join(keys, " ")
}

// TestQueryStatsMatchPrometheus opens one generated data dir (float
// series, counter and gauge histograms) with both servers and asks both
// the same queries with stats=true: the statistics have the same keys,
// and the sample counts Prometheus defines by what was read
// (totalQueryableSamples, samplesRead, seriesTouched) are equal.
// peakSamples is Ferrite's own (see crates/promql/src/stats.rs).
func TestQueryStatsMatchPrometheus(t *testing.T) {
	base := t.TempDir()
	src := filepath.Join(base, "src")
	generate(t, promtsdb.GenOptions{Dir: src, Series: 100, Samples: 480, HistogramSeries: 20,
		GaugeHistogramSeries: 10, SegmentSize: 1 << 20})
	ferDir, promDir := filepath.Join(base, "ferrite"), filepath.Join(base, "prometheus")
	copyDir(t, src, ferDir)
	copyDir(t, src, promDir)
	cfg := filepath.Join(base, "prometheus.yml")
	e2eWriteFile(t, cfg, "global: {}\n")
	p := startQueryLogPair(t, cfg, "", ferDir, promDir)

	// The data: 480 samples every 15 s from 1700000000 (2 h).
	T := int64(1700000000 + 100*60)
	at := fmt.Sprint(T)
	instant := []string{
		"synth_metric_1",
		"synth_metric_1 offset 10m",
		fmt.Sprintf("synth_metric_1 @ %d", T-3600),
		"synth_metric_3[2m]",
		"rate(synth_metric_1[5m])",
		"sum by (instance) (rate(synth_metric_2[5m]))",
		"max_over_time(synth_metric_2[10m])",
		"synth_histogram_1",
		"synth_histogram_1[1m]",
		"rate(synth_histogram_1[5m])",
		"histogram_quantile(0.9, sum by (le) (rate(synth_histogram_2[5m])))",
		"sum_over_time(synth_gauge_histogram_1[5m])",
		"count_over_time(synth_metric_1[30m:1m])",
		"max_over_time(rate(synth_metric_4[5m])[20m:2m])",
		"synth_metric_1 / on(instance) synth_metric_2",
		"no_such_metric",
		"vector(1)",
	}
	type rangeQuery struct{ q, step string }
	ranges := []rangeQuery{
		{"synth_metric_1", "60"},
		{"rate(synth_metric_1[5m])", "60"},
		{"rate(synth_metric_1[1m])", "120"},
		{"rate(synth_metric_1[10m])", "30"},
		{"synth_histogram_1", "60"},
		{"rate(synth_histogram_3[10m])", "45"},
		{"sum(increase(synth_gauge_histogram_2[2m]))", "60"},
		{fmt.Sprintf("rate(synth_metric_5[5m] @ %d)", T-600), "60"},
	}
	compare := func(what string, fer, prom map[string]any) {
		if fs, ps := shapeOf(fer), shapeOf(prom); fs != ps {
			t.Errorf("%s: stats keys differ:\nferrite    %s\nprometheus %s", what, fs, ps)
		}
		fs, _ := fer["samples"].(map[string]any)
		ps, _ := prom["samples"].(map[string]any)
		for _, k := range []string{"totalQueryableSamples", "samplesRead", "seriesTouched"} {
			if fs[k] != ps[k] {
				t.Errorf("%s: %s: ferrite %v, prometheus %v", what, k, fs[k], ps[k])
			}
		}
		t.Logf("%s: prometheus %v, ferrite %v", what, ps, fs)
	}
	read := 0.0
	for _, q := range instant {
		params := url.Values{"query": {q}, "time": {at}}
		fer := queryStats(t, p.ferURL, "/api/v1/query", params)
		prom := queryStats(t, p.promURL, "/api/v1/query", params)
		compare("instant "+q, fer, prom)
		if s, ok := prom["samples"].(map[string]any); ok {
			read += s["samplesRead"].(float64)
		}
	}
	for _, r := range ranges {
		params := url.Values{"query": {r.q}, "start": {fmt.Sprint(T - 1800)}, "end": {at}, "step": {r.step}}
		fer := queryStats(t, p.ferURL, "/api/v1/query_range", params)
		prom := queryStats(t, p.promURL, "/api/v1/query_range", params)
		compare(fmt.Sprintf("range %s step %s", r.q, r.step), fer, prom)
	}
	if read == 0 {
		t.Fatal("the queries read no samples: the comparison is of nothing")
	}
	// The samples counters moved on both.
	p.each(func(name, base string) {
		s := selfSeries(t, base, "prometheus_engine_query_samples_total")
		if s["prometheus_engine_query_samples_total"] == "0" || len(s) == 0 {
			t.Errorf("%s: prometheus_engine_query_samples_total %v after the queries", name, s)
		}
	})
}

// queryLogLine is the part of a query log line both servers must agree on.
type queryLogLine struct {
	Params struct {
		Query string `json:"query"`
		Step  int    `json:"step"`
		Start string `json:"start"`
		End   string `json:"end"`
	} `json:"params"`
	Request *struct {
		Path     string `json:"path"`
		ClientIP string `json:"clientIP"`
		Method   string `json:"method"`
	} `json:"httpRequest"`
	RuleGroup *struct {
		File string `json:"file"`
		Name string `json:"name"`
	} `json:"ruleGroup"`
	Error string         `json:"error"`
	raw   map[string]any // the whole line
}

func readQueryLogLines(t *testing.T, path string) []queryLogLine {
	t.Helper()
	data, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	var out []queryLogLine
	for _, line := range strings.Split(strings.TrimSuffix(string(data), "\n"), "\n") {
		if line == "" {
			continue
		}
		var l queryLogLine
		if err := json.Unmarshal([]byte(line), &l); err != nil {
			t.Fatalf("%s: not JSON: %v\n%s", path, err, line)
		}
		if err := json.Unmarshal([]byte(line), &l.raw); err != nil {
			t.Fatal(err)
		}
		out = append(out, l)
	}
	return out
}

// lastLogged waits until path has a line for query (and at least min
// lines) and returns the newest such line and the line count.
func lastLogged(t *testing.T, path, query string, min int) (queryLogLine, int) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		lines := readQueryLogLines(t, path)
		if len(lines) >= min {
			for i := len(lines) - 1; i >= 0; i-- {
				if lines[i].Params.Query == query {
					return lines[i], len(lines)
				}
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: no line for %q among %d (want at least %d)", path, query, len(lines), min)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// countLogged is how many lines of path are for query.
func countLogged(t *testing.T, path, query string) int {
	n := 0
	for _, l := range readQueryLogLines(t, path) {
		if l.Params.Query == query {
			n++
		}
	}
	return n
}

// TestQueryLogMatchesPrometheus runs Prometheus' own query log scenario
// (cmd/prometheus/query_log_test.go) on both servers under a route prefix:
// API and rule queries are logged with their parameters and origin, a
// reload turns the log off and on, and a log file moved away is written to
// until the next reload opens the configured path again. The two servers'
// lines have the same keys (Prometheus' "source", its Go file and line,
// aside) and the same values where they must agree.
func TestQueryLogMatchesPrometheus(t *testing.T) {
	base := t.TempDir()
	rules := filepath.Join(base, "rules.yml")
	e2eWriteFile(t, rules, "groups:\n- name: querylogtest\n  interval: 1s\n  rules:\n  - record: x\n    expr: query_in_rule\n")
	logs := map[string]string{"ferrite": filepath.Join(base, "ferrite-query.log"),
		"prometheus": filepath.Join(base, "prometheus-query.log")}
	cfgs := map[string]string{"ferrite": filepath.Join(base, "ferrite.yml"),
		"prometheus": filepath.Join(base, "prometheus.yml")}
	writeConfigs := func(logged bool) {
		for name, cfg := range cfgs {
			text := "global:\n  evaluation_interval: 1s\n"
			if logged {
				text += "  query_log_file: " + logs[name] + "\n"
			}
			e2eWriteFile(t, cfg, text+"rule_files:\n- "+rules+"\n")
		}
	}
	writeConfigs(true)
	// One configuration file per server (their log paths differ): start
	// each on its own.
	prefix := "/foobar"
	ferDir, promDir := filepath.Join(base, "fer-data"), filepath.Join(base, "prom-data")
	p := startQueryLogPairConfigs(t, cfgs["ferrite"], cfgs["prometheus"], prefix, ferDir, promDir)
	urls := map[string]string{"ferrite": p.ferURL, "prometheus": p.promURL}
	apiQuery := func(name string) {
		params := url.Values{"query": {"query_with_api"}, "start": {"0"}, "end": {"3600"}, "step": {"5"}}
		status, body, err := e2e.Get(urls[name] + "/api/v1/query_range?" + params.Encode())
		if err != nil || status != 200 {
			t.Fatalf("%s query_range: %d %v %s", name, status, err, body)
		}
	}
	reload := func(name string) {
		resp, err := http.Post(urls[name]+"/-/reload", "", nil)
		if err != nil {
			t.Fatalf("%s reload: %v", name, err)
		}
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("%s reload: %s", name, resp.Status)
		}
	}

	// 1. Both kinds of query are logged.
	got := map[string][2]queryLogLine{}
	for name := range logs {
		apiQuery(name)
		api, _ := lastLogged(t, logs[name], "query_with_api", 1)
		rule, _ := lastLogged(t, logs[name], "query_in_rule", 1)
		got[name] = [2]queryLogLine{api, rule}
	}
	for i, what := range []string{"API query", "rule query"} {
		fer, prom := got["ferrite"][i], got["prometheus"][i]
		delete(prom.raw, "source")
		if fs, ps := shapeOf(fer.raw), shapeOf(prom.raw); fs != ps {
			t.Errorf("%s: keys differ:\nferrite    %s\nprometheus %s", what, fs, ps)
		}
		// A rule's evaluation time is its own slot on each server.
		fp, pp := fer.Params, prom.Params
		if i == 1 {
			fp.Start, fp.End, pp.Start, pp.End = "", "", "", ""
			if fer.Params.Start != fer.Params.End || len(fer.Params.Start) != len(prom.Params.Start) {
				t.Errorf("%s: start and end: ferrite %+v, prometheus %+v", what, fer.Params, prom.Params)
			}
		}
		if fp != pp {
			t.Errorf("%s: params: ferrite %+v, prometheus %+v", what, fer.Params, prom.Params)
		}
		for _, k := range []string{"time", "level", "msg"} {
			if (fer.raw[k] == nil) != (prom.raw[k] == nil) || (k != "time" && fer.raw[k] != prom.raw[k]) {
				t.Errorf("%s: %s: ferrite %v, prometheus %v", what, k, fer.raw[k], prom.raw[k])
			}
		}
	}
	api := got["ferrite"][0]
	if api.Request == nil || *api.Request != *got["prometheus"][0].Request {
		t.Errorf("httpRequest: ferrite %+v, prometheus %+v", api.Request, got["prometheus"][0].Request)
	} else if api.Request.Path != prefix+"/api/v1/query_range" || api.Request.ClientIP != "127.0.0.1" {
		t.Errorf("httpRequest %+v", *api.Request)
	}
	if api.Params.Step != 5 || api.Params.Start != "1970-01-01T00:00:00.000Z" || api.Params.End != "1970-01-01T01:00:00.000Z" {
		t.Errorf("API query params %+v", api.Params)
	}
	rule := got["ferrite"][1]
	if rule.RuleGroup == nil || rule.RuleGroup.Name != "querylogtest" || rule.RuleGroup.File != rules {
		t.Errorf("ruleGroup %+v, want querylogtest in %s", rule.RuleGroup, rules)
	}
	if rule.Params.Step != 0 {
		t.Errorf("rule query step %d", rule.Params.Step)
	}

	// 2. A reload without query_log_file stops the log; one with it
	// starts it again.
	writeConfigs(false)
	for name := range logs {
		reload(name)
		if selfSeries(t, urls[name], "prometheus_engine_query_log_enabled")["prometheus_engine_query_log_enabled"] != "0" {
			t.Errorf("%s: prometheus_engine_query_log_enabled is not 0 with no query log", name)
		}
		before := countLogged(t, logs[name], "query_with_api")
		apiQuery(name)
		time.Sleep(300 * time.Millisecond)
		if after := countLogged(t, logs[name], "query_with_api"); after != before {
			t.Errorf("%s: a query was logged with the log off (%d -> %d lines)", name, before, after)
		}
	}
	writeConfigs(true)
	for name := range logs {
		reload(name)
		before := countLogged(t, logs[name], "query_with_api")
		apiQuery(name)
		lastLogged(t, logs[name], "query_with_api", 1)
		waitFor(t, func() bool { return countLogged(t, logs[name], "query_with_api") == before+1 },
			name+": the query after turning the log on again")
	}

	// 3. A log moved away is still written to until a reload opens the
	// configured path again.
	for name, path := range logs {
		moved := path + ".moved"
		if err := os.Rename(path, moved); err != nil {
			t.Fatal(err)
		}
		before := countLogged(t, moved, "query_with_api")
		apiQuery(name)
		waitFor(t, func() bool { return countLogged(t, moved, "query_with_api") == before+1 },
			name+": the moved file takes the next query")
		reload(name)
		apiQuery(name)
		waitFor(t, func() bool { return countLogged(t, path, "query_with_api") == 1 },
			name+": after the reload the configured path takes the query")
	}
	compareEngineMetrics(t, p.ferURL, p.promURL)

	// Both counted the same query_range requests under Prometheus' handler
	// name (without the route prefix).
	series := []string{
		`prometheus_http_requests_total{code="200",handler="/api/v1/query_range"}`,
		`prometheus_http_request_duration_seconds_count{handler="/api/v1/query_range"}`,
		`prometheus_http_response_size_bytes_count{handler="/api/v1/query_range"}`,
	}
	fer := selfSeries(t, p.ferURL, "prometheus_http_")
	prom := selfSeries(t, p.promURL, "prometheus_http_")
	for _, s := range series {
		if fer[s] == "" || fer[s] != prom[s] {
			t.Errorf("%s: ferrite %q, prometheus %q", s, fer[s], prom[s])
		}
	}
}

// compareEngineMetrics checks that both servers show the same
// prometheus_engine_* series (names and labels) with the configuration's
// values equal.
func compareEngineMetrics(t *testing.T, ferURL, promURL string) {
	t.Helper()
	fer := selfSeries(t, ferURL, "prometheus_engine_")
	prom := selfSeries(t, promURL, "prometheus_engine_")
	var problems []string
	for s, pv := range prom {
		fv, ok := fer[s]
		switch {
		case !ok:
			problems = append(problems, "Ferrite has no "+s)
		case selfMetricsExact.MatchString(s) && fv != pv:
			problems = append(problems, fmt.Sprintf("%s: prometheus %s, ferrite %s", s, pv, fv))
		}
	}
	for s := range fer {
		if _, ok := prom[s]; !ok {
			problems = append(problems, "Prometheus has no "+s)
		}
	}
	sort.Strings(problems)
	if len(problems) > 0 {
		t.Errorf("engine metrics differ:\n%s", strings.Join(problems, "\n"))
	}
	if len(prom) < 10 {
		t.Errorf("Prometheus shows only %d engine series: %v", len(prom), prom)
	}
}

// waitFor polls cond for up to 15 s.
func waitFor(t *testing.T, cond func() bool, what string) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out: %s", what)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
