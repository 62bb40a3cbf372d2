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
	"testing"
	"time"

	"ferrite.dev/interop/internal/e2e"
)

// TestReloadUnderLoadLosesNoScrape: Ferrite scrapes 20 targets of 500
// series each every second while its configuration is reloaded every
// 700 ms for 15 s (`/-/reload`), alternating between two files that
// differ in another job and a rule file. The job under load is the same
// in both, so its targets keep their loops: every target has a sample
// every second over the reloads (no scrape lost, none doubled) and every
// reload succeeds.
func TestReloadUnderLoadLosesNoScrape(t *testing.T) {
	fer := ferriteBin(t)
	body := func(path string) string {
		var b strings.Builder
		for i := 0; i < 500; i++ {
			fmt.Fprintf(&b, "load_series{target=%q,i=\"%d\"} %d\n", path, i, i)
		}
		return b.String()
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, body(r.URL.Path))
	}))
	defer srv.Close()
	host := strings.TrimPrefix(srv.URL, "http://")
	tmp := t.TempDir()
	var targets []string
	for i := 0; i < 20; i++ {
		targets = append(targets, fmt.Sprintf(`{targets: ['%s'], labels: {__metrics_path__: '/t%d', instance: t%d}}`, host, i, i))
	}
	load := fmt.Sprintf("  - job_name: load\n    static_configs: [%s]\n", strings.Join(targets, ", "))
	e2eWriteFile(t, filepath.Join(tmp, "rules.yml"), "groups:\n  - name: r\n    rules:\n      - record: load:count\n        expr: count(load_series)\n")
	configs := []string{
		"global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\nscrape_configs:\n" + load,
		"global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\nrule_files: [rules.yml]\nscrape_configs:\n" + load +
			fmt.Sprintf("  - job_name: other\n    static_configs: [{targets: ['%s'], labels: {__metrics_path__: /other}}]\n", host),
	}
	cfg := filepath.Join(tmp, "prometheus.yml")
	if err := os.WriteFile(cfg, []byte(configs[0]), 0o644); err != nil {
		t.Fatal(err)
	}
	port, err := e2e.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	proc, err := e2e.Start("ferrite", fer, tmp, filepath.Join(tmp, "ferrite.log"), "--config.file="+cfg,
		"--storage.tsdb.path", filepath.Join(tmp, "data"), "--web.listen-address", fmt.Sprintf("127.0.0.1:%d", port),
		"--web.enable-lifecycle")
	if err != nil {
		t.Fatal(err)
	}
	defer proc.Kill()
	if err := proc.WaitReady(base+"/-/ready", 60*time.Second); err != nil {
		t.Fatalf("%v\n%s", err, proc.LogTail(20))
	}
	time.Sleep(3 * time.Second)
	start := time.Now()
	reloads := 0
	for i := 1; time.Since(start) < 15*time.Second; i++ {
		if err := os.WriteFile(cfg, []byte(configs[i%2]), 0o644); err != nil {
			t.Fatal(err)
		}
		resp, err := http.Post(base+"/-/reload", "", nil)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("reload %d: %s\n%s", i, resp.Status, proc.LogTail(20))
		}
		reloads++
		time.Sleep(700 * time.Millisecond)
	}
	end := time.Now()
	time.Sleep(2 * time.Second)
	// Every target: one sample a second over the reloads, all of them up.
	window := int(end.Sub(start).Seconds())
	q := fmt.Sprintf(`count_over_time(up{job="load"}[%ds])`, window)
	u := fmt.Sprintf("%s/api/v1/query?query=%s&time=%.3f", base, url.QueryEscape(q), float64(end.UnixMilli())/1000)
	for _, r := range queryVector(t, u) {
		if r.value < float64(window) || r.value > float64(window)+1 {
			t.Errorf("%s: %v scrapes in %ds of reloads", r.labels, r.value, window)
		}
	}
	if got := len(queryVector(t, u)); got != 20 {
		t.Errorf("%d targets answered, want 20", got)
	}
	q = fmt.Sprintf(`min_over_time(up{job="load"}[%ds])`, window)
	u = fmt.Sprintf("%s/api/v1/query?query=%s&time=%.3f", base, url.QueryEscape(q), float64(end.UnixMilli())/1000)
	for _, r := range queryVector(t, u) {
		if r.value != 1 {
			t.Errorf("%s: a failed scrape during the reloads", r.labels)
		}
	}
	if status, metrics, err := e2e.Get(base + "/metrics"); err != nil || status != 200 ||
		!strings.Contains(string(metrics), "\nprometheus_config_last_reload_successful 1\n") {
		t.Errorf("/metrics: %d %v: prometheus_config_last_reload_successful is not 1", status, err)
	}
	t.Logf("%d reloads in %ds, every target scraped every second", reloads, window)
	e2eCheckNoPanic(t, proc)
}

// vectorSample is one sample of an instant query's answer.
type vectorSample struct {
	labels string
	value  float64
}

// queryVector asks u (an instant query URL) and returns its samples.
func queryVector(t *testing.T, u string) []vectorSample {
	t.Helper()
	status, body, err := e2e.Get(u)
	if err != nil || status != 200 {
		t.Fatalf("%s: %d %v %s", u, status, err, body)
	}
	var ans struct {
		Data struct {
			Result []struct {
				Metric map[string]string `json:"metric"`
				Value  [2]any            `json:"value"`
			} `json:"result"`
		} `json:"data"`
	}
	if err := json.Unmarshal(body, &ans); err != nil {
		t.Fatal(err)
	}
	out := make([]vectorSample, 0, len(ans.Data.Result))
	for _, r := range ans.Data.Result {
		var v float64
		fmt.Sscan(fmt.Sprint(r.Value[1]), &v)
		out = append(out, vectorSample{labels: fmt.Sprint(r.Metric), value: v})
	}
	return out
}
