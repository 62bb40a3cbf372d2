package interop_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"ferrite.dev/interop/internal/e2e"
)

// httpSD serves target groups at /sd in phases, and a metric at every
// other path; it records the discovery requests' headers by client.
type httpSD struct {
	mu      sync.Mutex
	phase   int
	target  string
	headers map[string]string
}

func (s *httpSD) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/sd" {
		fmt.Fprintf(w, "sd_test_metric{path=%q} 1\n", r.URL.Path)
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	client := "prometheus"
	if strings.HasPrefix(r.UserAgent(), "Ferrite") {
		client = "ferrite"
	}
	s.headers[client] = fmt.Sprintf("accept=%s refresh=%s", r.Header.Get("Accept"),
		r.Header.Get("X-Prometheus-Refresh-Interval-Seconds"))
	switch s.phase {
	case 0:
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `[{"targets":[%q],"labels":{"env":"a","__metrics_path__":"/one"}},
			{"targets":[%q],"labels":{"env":"b","__metrics_path__":"/two","drop":"yes"}}]`, s.target, s.target)
	case 1:
		w.Header().Set("Content-Type", "application/json; charset=utf-8")
		fmt.Fprintf(w, `[{"targets":[%q],"labels":{"env":"c","__metrics_path__":"/three"}}]`, s.target)
	default:
		// A failing discovery keeps the last groups.
		http.Error(w, "down", http.StatusInternalServerError)
	}
}

// TestHTTPDiscoveryLikePrometheus: Ferrite and a real Prometheus v3.16.0
// run the same job, from a file of `scrape_config_files` (the scrape
// interval from the main file's `global:`), with `http_sd_configs` against one discovery endpoint
// that changes its groups, then fails: both ask with the same headers,
// and /api/v1/targets agrees in every phase (targets, discovered labels
// with `__meta_url`, relabeling, dropped targets; the failing endpoint
// leaves the last targets in place), and /api/v1/targets/relabel_steps
// answers the same.
func TestHTTPDiscoveryLikePrometheus(t *testing.T) {
	fer := ferriteBin(t)
	prom, _ := e2eBinaries(t)
	sd := &httpSD{headers: map[string]string{}}
	srv := httptest.NewServer(sd)
	defer srv.Close()
	sd.target = strings.TrimPrefix(srv.URL, "http://")
	tmp := t.TempDir()
	cfg := filepath.Join(tmp, "prometheus.yml")
	// The job lives in a file of `scrape_config_files`.
	if err := os.MkdirAll(filepath.Join(tmp, "jobs"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(cfg, []byte("global:\n  scrape_interval: 1s\nscrape_config_files: [jobs/*.yml]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg2 := filepath.Join(tmp, "jobs", "httpsd.yml")
	config := fmt.Sprintf(`scrape_configs:
  - job_name: httpsd
    http_sd_configs:
      - url: %s/sd
        refresh_interval: 1s
    relabel_configs:
      - {source_labels: [drop], regex: 'yes', action: drop}
      - {source_labels: [__meta_url], target_label: sd}
`, srv.URL)
	if err := os.WriteFile(cfg2, []byte(config), 0o644); err != nil {
		t.Fatal(err)
	}
	ports := alertsFreePorts(t, 2)
	ferURL, promURL := fmt.Sprintf("http://127.0.0.1:%d", ports[0]), fmt.Sprintf("http://127.0.0.1:%d", ports[1])
	ferProc, err := e2e.Start("ferrite", fer, tmp, filepath.Join(tmp, "ferrite.log"), "--config.file="+cfg,
		"--storage.tsdb.path", filepath.Join(tmp, "ferrite-data"), "--web.listen-address", fmt.Sprintf("127.0.0.1:%d", ports[0]))
	if err != nil {
		t.Fatal(err)
	}
	defer ferProc.Kill()
	promProc, err := e2e.Start("prometheus", prom, tmp, filepath.Join(tmp, "prometheus.log"), "--config.file="+cfg,
		"--storage.tsdb.path="+filepath.Join(tmp, "prom-data"), fmt.Sprintf("--web.listen-address=127.0.0.1:%d", ports[1]))
	if err != nil {
		t.Fatal(err)
	}
	defer promProc.Kill()
	for _, p := range []struct {
		proc *e2e.Proc
		url  string
	}{{ferProc, ferURL}, {promProc, promURL}} {
		if err := p.proc.WaitReady(p.url+"/-/ready", 60*time.Second); err != nil {
			t.Fatalf("%v\n%s", err, p.proc.LogTail(20))
		}
	}
	for phase, want := range []string{`"env":"a"`, `"env":"c"`, `"env":"c"`} {
		sd.mu.Lock()
		sd.phase = phase
		sd.mu.Unlock()
		// Prometheus hands discovered targets to its scrape pools at most
		// every 5 s: wait until both show the phase's targets, scraped.
		deadline := time.Now().Add(20 * time.Second)
		var p, f string
		for time.Now().Before(deadline) {
			time.Sleep(500 * time.Millisecond)
			p, f = normalizedTargets(t, promURL), normalizedTargets(t, ferURL)
			if p == f && strings.Contains(p, want) && strings.Contains(p, "__meta_url") && !strings.Contains(p, `"unknown"`) {
				break
			}
		}
		if p != f || !strings.Contains(p, want) {
			t.Errorf("phase %d: /api/v1/targets differ or lack %s:\nprometheus:\n%s\nferrite:\n%s", phase, want, p, f)
		}
		if phase == 2 {
			// The failing discovery has been asked several times by now.
			time.Sleep(3 * time.Second)
			compareTargetsAPI(t, ferURL, promURL)
		}
	}
	// /api/v1/targets/relabel_steps for a kept and a dropped target, and
	// its errors.
	for _, q := range []string{
		"scrapePool=httpsd&labels=" + url.QueryEscape(`{"__address__":"h:1","env":"a","__meta_url":"http://sd/"}`),
		"scrapePool=httpsd&labels=" + url.QueryEscape(`{"__address__":"h:1","drop":"yes"}`),
		"scrapePool=nope&labels=" + url.QueryEscape(`{"a":"b"}`),
		"scrapePool=httpsd&labels=" + url.QueryEscape(`{"a":`),
		"scrapePool=httpsd",
		"labels=" + url.QueryEscape("{}"),
	} {
		u := "/api/v1/targets/relabel_steps?" + q
		ps, pb, _ := e2e.Get(promURL + u)
		fs, fb, _ := e2e.Get(ferURL + u)
		canon := func(b []byte) string {
			var x any
			if json.Unmarshal(b, &x) != nil {
				return string(b)
			}
			// The JSON decoder's own wording of a parse error differs.
			if m, ok := x.(map[string]any); ok && strings.HasPrefix(fmt.Sprint(m["error"]), "error parsing labels: ") {
				m["error"] = "error parsing labels"
			}
			out, _ := json.Marshal(x)
			return string(out)
		}
		if ps != fs || canon(pb) != canon(fb) {
			t.Errorf("%s:\nprometheus %d %s\nferrite %d %s", u, ps, pb, fs, fb)
		}
	}
	// The discovery metrics: the same series (names and labels) for every
	// family Ferrite keeps, the same discovered targets and failed
	// configs, HTTP failures counted on both.
	pm, fm := sdMetrics(t, promURL), sdMetrics(t, ferURL)
	for series, fv := range fm {
		pv, ok := pm[series]
		if !ok {
			t.Errorf("Prometheus has no %s (ferrite %s)", series, fv)
			continue
		}
		exact := strings.HasPrefix(series, "prometheus_sd_discovered_targets") || strings.HasPrefix(series, "prometheus_sd_failed_configs")
		if exact && pv != fv {
			t.Errorf("%s: prometheus %s, ferrite %s", series, pv, fv)
		}
	}
	families := map[string]bool{}
	for series := range fm {
		families[strings.SplitN(series, "{", 2)[0]] = true
	}
	for series := range pm {
		if families[strings.SplitN(series, "{", 2)[0]] {
			if _, ok := fm[series]; !ok {
				t.Errorf("Ferrite has no %s (prometheus %s)", series, pm[series])
			}
		}
	}
	if fm["prometheus_sd_http_failures_total"] == "0" || pm["prometheus_sd_http_failures_total"] == "0" {
		t.Errorf("HTTP discovery failures not counted: prometheus %s, ferrite %s",
			pm["prometheus_sd_http_failures_total"], fm["prometheus_sd_http_failures_total"])
	}
	sd.mu.Lock()
	defer sd.mu.Unlock()
	if sd.headers["ferrite"] != sd.headers["prometheus"] || sd.headers["prometheus"] == "" {
		t.Errorf("discovery request headers: prometheus %q, ferrite %q", sd.headers["prometheus"], sd.headers["ferrite"])
	}
	e2eCheckNoPanic(t, ferProc)
}

// sdMetrics is every prometheus_sd_* series of base's /metrics (summary
// quantiles and histogram buckets included), by name and labels, with its
// value.
func sdMetrics(t *testing.T, base string) map[string]string {
	t.Helper()
	status, body, err := e2e.Get(base + "/metrics")
	if err != nil || status != 200 {
		t.Fatalf("%s/metrics: %d %v", base, status, err)
	}
	out := map[string]string{}
	for _, line := range strings.Split(string(body), "\n") {
		if !strings.HasPrefix(line, "prometheus_sd_") || strings.Contains(line, "kubernetes") {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		if i < 0 {
			continue
		}
		out[line[:i]] = line[i+1:]
	}
	return out
}
