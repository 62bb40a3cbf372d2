package interop_test

import (
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"ferrite.dev/interop/internal/e2e"
)

// nodeExporterVersion is the node_exporter release the tests scrape.
const nodeExporterVersion = "v1.12.1"

var (
	nodeExporterOnce  sync.Once
	nodeExporterPath  string
	nodeExporterError error
)

// nodeExporterBin is a node_exporter of nodeExporterVersion, built from
// its Go module on first use.
func nodeExporterBin(t *testing.T) string {
	t.Helper()
	nodeExporterOnce.Do(func() {
		nodeExporterPath, nodeExporterError = buildModuleBinary(
			"github.com/prometheus/node_exporter", nodeExporterVersion, ".", nil)
	})
	if nodeExporterError != nil {
		t.Fatalf("building node_exporter %s: %v", nodeExporterVersion, nodeExporterError)
	}
	return nodeExporterPath
}

// TestNodeExporterScrapedLikePrometheus: Ferrite and a real Prometheus
// v3.16.0 scrape the same real node_exporter every second for 10 s.
// Both scrape it at the same moments (timestamps within a few ms, as the
// machine's load allows), and at the end both hold the same series with
// the same labels (node_exporter's whole output: every collector that
// runs here), the same `scrape_samples_scraped` and `up`; Ferrite
// scrapes at least as often as Prometheus in the last 5 s.
func TestNodeExporterScrapedLikePrometheus(t *testing.T) {
	fer := ferriteBin(t)
	prom, _ := e2eBinaries(t)
	node := nodeExporterBin(t)
	tmp := t.TempDir()
	ports := alertsFreePorts(t, 3)
	nodeAddr := fmt.Sprintf("127.0.0.1:%d", ports[2])
	nodeProc, err := e2e.Start("node_exporter", node, tmp, filepath.Join(tmp, "node_exporter.log"),
		"--web.listen-address="+nodeAddr)
	if err != nil {
		t.Fatal(err)
	}
	defer nodeProc.Kill()
	if err := nodeProc.WaitReady("http://"+nodeAddr+"/metrics", 30*time.Second); err != nil {
		t.Fatalf("%v\n%s", err, nodeProc.LogTail(20))
	}
	cfg := filepath.Join(tmp, "prometheus.yml")
	config := fmt.Sprintf("global:\n  scrape_interval: 1s\nscrape_configs:\n  - job_name: node\n    static_configs: [{targets: ['%s']}]\n", nodeAddr)
	if err := os.WriteFile(cfg, []byte(config), 0o644); err != nil {
		t.Fatal(err)
	}
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
	time.Sleep(10 * time.Second)
	// A moment both have scraped past, half a second into a second (both
	// scrape at the target's phase, so at any moment their latest scrapes
	// are the same one unless a scrape lands right then; then ask again).
	var pSeries, fSeries []string
	var at time.Time
	for attempt := 0; attempt < 5; attempt++ {
		at = time.Now().Add(-2 * time.Second)
		pSeries, fSeries = nodeSeriesAt(t, promURL, at), nodeSeriesAt(t, ferURL, at)
		if strings.Join(pSeries, "\n") == strings.Join(fSeries, "\n") {
			break
		}
		time.Sleep(700 * time.Millisecond)
	}
	if len(pSeries) < 100 {
		t.Fatalf("Prometheus holds only %d node_exporter series", len(pSeries))
	}
	if p, f := strings.Join(pSeries, "\n"), strings.Join(fSeries, "\n"); p != f {
		t.Errorf("series at %s differ (%d against %d):\n%s", at.Format(time.RFC3339Nano), len(pSeries), len(fSeries),
			lineDiff(p, f))
	}
	value := func(base, q string) float64 {
		v, ok, err := e2e.QueryScalar(base, q, at)
		if err != nil || !ok {
			t.Fatalf("%s at %s: %v %v", q, at.Format(time.RFC3339Nano), ok, err)
		}
		return v
	}
	for _, q := range []string{`up{job="node"}`, `scrape_samples_scraped{job="node"}`} {
		if p, f := value(promURL, q), value(ferURL, q); p != f {
			t.Errorf("%s at %s: prometheus %v, ferrite %v", q, at.Format(time.RFC3339Nano), p, f)
		}
	}
	// The same scrape moment (the phase both derive from the target);
	// under this machine's load a scrape may start a few ms late.
	pt, ft := value(promURL, `timestamp(up{job="node"})`), value(ferURL, `timestamp(up{job="node"})`)
	if d := pt - ft; d > 0.05 || d < -0.05 {
		t.Errorf("latest scrape at %.3f (prometheus) and %.3f (ferrite)", pt, ft)
	}
	// Ferrite keeps its interval: at least as many scrapes as Prometheus.
	q := `count_over_time(up{job="node"}[5s])`
	if p, f := value(promURL, q), value(ferURL, q); f < p || f < 4 {
		t.Errorf("%s: prometheus %v, ferrite %v", q, p, f)
	} else {
		t.Logf("scrapes in the last 5 s: prometheus %v, ferrite %v", p, f)
	}
	t.Logf("%d node_exporter series the same on both", len(pSeries))
	e2eCheckNoPanic(t, ferProc)
}

// nodeSeriesAt is every series of job "node" at t (labels, sorted), from
// an instant query.
func nodeSeriesAt(t *testing.T, base string, at time.Time) []string {
	t.Helper()
	u := fmt.Sprintf("%s/api/v1/query?query=%s&time=%.3f", base, url.QueryEscape(`{job="node"}`), float64(at.UnixMilli())/1000)
	status, body, err := e2e.Get(u)
	if err != nil || status != 200 {
		t.Fatalf("%s: %d %v %s", u, status, err, body)
	}
	var ans struct {
		Data struct {
			Result []struct {
				Metric map[string]string `json:"metric"`
			} `json:"result"`
		} `json:"data"`
	}
	if err := json.Unmarshal(body, &ans); err != nil {
		t.Fatal(err)
	}
	out := make([]string, 0, len(ans.Data.Result))
	for _, r := range ans.Data.Result {
		b, _ := json.Marshal(r.Metric)
		out = append(out, string(b))
	}
	sort.Strings(out)
	return out
}
