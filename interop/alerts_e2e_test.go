package interop_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/prometheus/prompb"

	"ferrite.dev/interop/internal/e2e"
)

// alertRules is the rule file both servers run in
// TestAlertingRulesMatchPrometheus: alerts with `for`, `keep_firing_for`,
// templated labels and annotations (variables, `query`, `humanize`,
// `printf`, external labels and URL), an alert on a recording rule's
// output, and one that stays pending.
const alertRules = `groups:
  - name: availability
    rules:
      - alert: InstanceDown
        expr: up == 0
        for: 3s
        labels:
          severity: '{{ if eq $labels.instance "c" }}page{{ else }}ticket{{ end }}'
        annotations:
          summary: '{{ $labels.instance }} of {{ $labels.job }} is down'
          description: 'value {{ $value }}; {{ with query "up{instance=\"a\"}" }}{{ . | first | value | humanize }}{{ end }} for a; {{ with query "count(up)" }}{{ . | first | value }}{{ end }} targets; region {{ $externalLabels.region }}; see {{ $externalURL }}'
      - alert: AlwaysPending
        expr: up{instance="a"} == 1
        for: 1h
        annotations:
          since: '{{ range $k, $v := $labels }}{{ $k }}={{ $v }} {{ end }}'
      - record: job:up:sum
        expr: sum by (job) (up)
      - alert: FewUp
        expr: job:up:sum < 2
        for: 2s
        annotations:
          summary: 'only {{ $value | humanize }} up ({{ $value | humanizePercentage }})'
  - name: errors
    interval: 2s
    rules:
      - alert: HighErrorRate
        expr: rate(errors_total[3s]) > 10
        keep_firing_for: 4s
        labels: {team: backend}
        annotations:
          rate: '{{ printf "%.2f" $value }} errors/s, {{ humanizeDuration 90 }}, {{ toUpper "x" }}'
`

// TestAlertingRulesMatchPrometheus: a real Prometheus v3.16.0 and Ferrite
// run the same alerting rules over the same remote-written data for 36 s,
// each sending its alerts to its own real Alertmanager. Target `b` is down
// from 4 s to 18 s, `c` all along; the error counter races from 8 s to
// 16 s. Evaluations read the data 3 s in the past (`rule_query_offset`),
// and both servers place their group's slots alike, so:
//   - ALERTS and ALERTS_FOR_STATE are the same series with the same
//     samples over a 20 s window (pending, firing, resolved, kept firing);
//   - /api/v1/alerts shows the same alerts (labels, expanded annotations,
//     state, activeAt, value) and /api/v1/rules the same alerting rules;
//   - each Alertmanager holds the same alerts (labels, annotations,
//     startsAt, endsAt, generatorURL).
func TestAlertingRulesMatchPrometheus(t *testing.T) {
	fer := ferriteBin(t)
	prom, _ := e2eBinaries(t)
	am := alertmanagerBin(t)
	tmp := t.TempDir()
	e2eWriteFile(t, filepath.Join(tmp, "alerts.yml"), alertRules)
	ports := alertsFreePorts(t, 4)
	ferURL := fmt.Sprintf("http://127.0.0.1:%d", ports[0])
	promURL := fmt.Sprintf("http://127.0.0.1:%d", ports[1])
	hooks := newAlertsWebhooks()
	hookServer := httptest.NewServer(hooks)
	t.Cleanup(hookServer.Close)
	ferAM := alertsStartAlertmanager(t, am, filepath.Join(tmp, "am-ferrite"), ports[2], hookServer.URL+"/ferrite")
	promAM := alertsStartAlertmanager(t, am, filepath.Join(tmp, "am-prometheus"), ports[3], hookServer.URL+"/prometheus")
	config := func(amPort int) string {
		path := filepath.Join(tmp, fmt.Sprintf("prometheus-%d.yml", amPort))
		e2eWriteFile(t, path, fmt.Sprintf(`global:
  evaluation_interval: 1s
  rule_query_offset: 3s
  external_labels: {region: eu}
rule_files: [alerts.yml]
alerting:
  alertmanagers:
    - static_configs:
        - targets: ['127.0.0.1:%d']
`, amPort))
		return path
	}
	const externalURL = "http://alerts.example:9090/"
	ferProc, err := e2e.Start("ferrite", fer, tmp, filepath.Join(tmp, "ferrite.log"),
		"--config.file", config(ports[2]), "--storage.tsdb.path", filepath.Join(tmp, "ferrite-data"),
		"--web.listen-address", fmt.Sprintf("127.0.0.1:%d", ports[0]), "--web.external-url", externalURL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(ferProc.Kill)
	promProc, err := e2e.Start("prometheus", prom, tmp, filepath.Join(tmp, "prometheus.log"),
		"--config.file="+config(ports[3]), "--storage.tsdb.path="+filepath.Join(tmp, "prom-data"),
		fmt.Sprintf("--web.listen-address=127.0.0.1:%d", ports[1]), "--web.enable-remote-write-receiver",
		"--web.external-url="+externalURL)
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

	series := func(name string, kv ...string) []prompb.Label {
		ls := []prompb.Label{{Name: "__name__", Value: name}}
		for i := 0; i+1 < len(kv); i += 2 {
			ls = append(ls, prompb.Label{Name: kv[i], Value: kv[i+1]})
		}
		return ls
	}
	start := time.Now()
	stop := start.Add(36 * time.Second)
	errors := 0.0
	for time.Now().Before(stop) {
		now := time.Now()
		at := now.Sub(start)
		ms := now.UnixMilli()
		ts := func(ls []prompb.Label, v float64) prompb.TimeSeries {
			return prompb.TimeSeries{Labels: ls, Samples: []prompb.Sample{{Value: v, Timestamp: ms}}}
		}
		b := 1.0
		if at >= 4*time.Second && at < 18*time.Second {
			b = 0
		}
		if at >= 8*time.Second && at < 16*time.Second {
			errors += 50
		} else {
			errors++
		}
		req := &prompb.WriteRequest{Timeseries: []prompb.TimeSeries{
			ts(series("up", "instance", "a", "job", "node"), 1),
			ts(series("up", "instance", "b", "job", "node"), b),
			ts(series("up", "instance", "c", "job", "node"), 0),
			ts(series("errors_total", "instance", "a", "job", "api"), errors),
		}}
		mustWrite(t, ferURL, req)
		mustWrite(t, promURL, req)
		time.Sleep(250 * time.Millisecond)
	}

	// The window's evaluations read samples 3-4 s older than their slot,
	// all written by now.
	T := stop.Add(-5 * time.Second).Truncate(time.Second)
	samples := 0
	for _, q := range []string{"ALERTS[20s]", "ALERTS_FOR_STATE[20s]", "job:up:sum[20s]"} {
		p := rangeAnswer(t, promURL, q, T)
		f := rangeAnswer(t, ferURL, q, T)
		if diff := compareMatrices(p, f); diff != "" {
			t.Errorf("%s at %s: %s\nprometheus: %v\nferrite: %v", q, T.Format(time.RFC3339), diff, p, f)
		}
		for _, s := range p {
			samples += len(s.points)
		}
	}
	t.Logf("%d alert samples equal over 20s before %s", samples, T.Format(time.RFC3339))
	if samples < 100 {
		t.Errorf("only %d samples compared", samples)
	}
	for _, state := range []string{"pending", "firing"} {
		q := fmt.Sprintf(`count(count_over_time(ALERTS{alertstate=%q}[40s]))`, state)
		if v, ok, err := e2e.QueryScalar(promURL, q, T); err != nil || !ok || v == 0 {
			t.Errorf("Prometheus wrote no %s alerts (%v %v %v)", state, v, ok, err)
		}
	}

	// Once the data stopped, every alert settles within a few slots
	// (HighErrorRate resolves, its keep_firing_for ran out).
	time.Sleep(8 * time.Second)
	pa, fa := alertsAPI(t, promURL), alertsAPI(t, ferURL)
	if pa != fa {
		t.Errorf("/api/v1/alerts:\nprometheus:\n%s\nferrite:\n%s", pa, fa)
	}
	if !strings.Contains(pa, "InstanceDown") || !strings.Contains(pa, "AlwaysPending") {
		t.Errorf("Prometheus' alerts lack InstanceDown or AlwaysPending:\n%s", pa)
	}
	if p, f := alertingRulesSummary(t, promURL), alertingRulesSummary(t, ferURL); p != f {
		t.Errorf("/api/v1/rules:\nprometheus:\n%s\nferrite:\n%s", p, f)
	}
	pm, fm := alertmanagerAlerts(t, promAM), alertmanagerAlerts(t, ferAM)
	if pm != fm {
		t.Errorf("Alertmanager's active alerts:\nfrom prometheus:\n%s\nfrom ferrite:\n%s", pm, fm)
	}
	pn, fn := hooks.seen("/prometheus"), hooks.seen("/ferrite")
	if pn != fn {
		t.Errorf("Alertmanager's notifications (firing and resolved):\nfrom prometheus:\n%s\nfrom ferrite:\n%s", pn, fn)
	}
	for _, name := range []string{"InstanceDown", "FewUp", "HighErrorRate"} {
		for _, status := range []string{"firing", "resolved"} {
			if !strings.Contains(pn, `"alertname":"`+name+`"`) || !strings.Contains(pn, `"status":"`+status+`"`) {
				t.Errorf("Prometheus' Alertmanager never notified %s %s:\n%s", status, name, pn)
			}
		}
	}
	t.Logf("Alertmanager holds the same %d active alerts and notified the same %d alert states from both",
		strings.Count(pm, "\n"), strings.Count(pn, "\n"))
	e2eCheckNoPanic(t, ferProc)
}

// alertsFreePorts returns n distinct free ports.
func alertsFreePorts(t *testing.T, n int) []int {
	t.Helper()
	seen := map[int]bool{}
	var ports []int
	for len(ports) < n {
		p, err := e2e.FreePort()
		if err != nil {
			t.Fatal(err)
		}
		if !seen[p] {
			seen[p] = true
			ports = append(ports, p)
		}
	}
	return ports
}

// alertsStartAlertmanager runs a real Alertmanager on port, no
// clustering, its data in dir, notifying every alert on its own, firing
// and resolved, to the webhook at hook; returns its URL.
func alertsStartAlertmanager(t *testing.T, bin, dir string, port int, hook string) string {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(dir, "alertmanager.yml")
	e2eWriteFile(t, cfg, fmt.Sprintf(`route:
  receiver: hook
  group_by: ['...']
  group_wait: 0s
  group_interval: 1s
  repeat_interval: 1h
receivers:
  - name: hook
    webhook_configs:
      - url: %q
        send_resolved: true
`, hook))
	url := fmt.Sprintf("http://127.0.0.1:%d", port)
	p, err := e2e.Start("alertmanager", bin, dir, filepath.Join(dir, "alertmanager.log"),
		"--config.file="+cfg, "--storage.path="+filepath.Join(dir, "data"),
		fmt.Sprintf("--web.listen-address=127.0.0.1:%d", port), "--cluster.listen-address=")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Kill)
	if err := p.WaitReady(url+"/-/ready", 60*time.Second); err != nil {
		t.Fatalf("%v\n%s", err, p.LogTail(20))
	}
	return url
}

// alertsAPI is /api/v1/alerts, one alert a line, sorted.
func alertsAPI(t *testing.T, base string) string {
	t.Helper()
	var ans struct {
		Data struct {
			Alerts []json.RawMessage `json:"alerts"`
		} `json:"data"`
	}
	alertsGetJSON(t, base+"/api/v1/alerts", &ans)
	return alertsSortedJSON(ans.Data.Alerts)
}

// alertingRulesSummary is /api/v1/rules' alerting rules without timing:
// name, query, durations, labels, annotations, state, health.
func alertingRulesSummary(t *testing.T, base string) string {
	t.Helper()
	var ans struct {
		Data struct {
			Groups []struct {
				Name  string `json:"name"`
				Rules []struct {
					Type          string            `json:"type"`
					Name          string            `json:"name"`
					Query         string            `json:"query"`
					Duration      float64           `json:"duration"`
					KeepFiringFor float64           `json:"keepFiringFor"`
					Labels        map[string]string `json:"labels"`
					Annotations   map[string]string `json:"annotations"`
					State         string            `json:"state"`
					Health        string            `json:"health"`
					Alerts        []json.RawMessage `json:"alerts"`
				} `json:"rules"`
			} `json:"groups"`
		} `json:"data"`
	}
	alertsGetJSON(t, base+"/api/v1/rules?type=alert", &ans)
	var b strings.Builder
	for _, g := range ans.Data.Groups {
		fmt.Fprintf(&b, "group %s\n", g.Name)
		for _, r := range g.Rules {
			fmt.Fprintf(&b, "  %s %s %q for=%v keep=%v labels=%v annotations=%v state=%s health=%s alerts=%d\n",
				r.Type, r.Name, r.Query, r.Duration, r.KeepFiringFor, r.Labels, r.Annotations, r.State, r.Health, len(r.Alerts))
		}
	}
	return b.String()
}

// alertmanagerAlerts is Alertmanager's /api/v2/alerts without what it
// sets itself (fingerprint, status, receivers, updatedAt): one alert a
// line, sorted.
func alertmanagerAlerts(t *testing.T, base string) string {
	t.Helper()
	var alerts []struct {
		Labels       map[string]string `json:"labels"`
		Annotations  map[string]string `json:"annotations"`
		StartsAt     string            `json:"startsAt"`
		EndsAt       string            `json:"endsAt"`
		GeneratorURL string            `json:"generatorURL"`
	}
	alertsGetJSON(t, base+"/api/v2/alerts", &alerts)
	lines := make([]json.RawMessage, 0, len(alerts))
	for _, a := range alerts {
		line, err := json.Marshal(a)
		if err != nil {
			t.Fatal(err)
		}
		lines = append(lines, line)
	}
	return alertsSortedJSON(lines)
}

func alertsGetJSON(t *testing.T, url string, into any) {
	t.Helper()
	status, body, err := e2e.Get(url)
	if err != nil || status != 200 {
		t.Fatalf("%s: %d %v %s", url, status, err, body)
	}
	if err := json.Unmarshal(body, into); err != nil {
		t.Fatalf("%s: %v\n%s", url, err, body)
	}
}

// alertsSortedJSON re-encodes each JSON value canonically (maps sorted by
// key), one a line, the lines sorted.
func alertsSortedJSON(values []json.RawMessage) string {
	lines := make([]string, 0, len(values))
	for _, v := range values {
		var x any
		if err := json.Unmarshal(v, &x); err != nil {
			lines = append(lines, string(v))
			continue
		}
		canon, _ := json.Marshal(x)
		lines = append(lines, string(canon))
	}
	sort.Strings(lines)
	return strings.Join(lines, "\n") + "\n"
}

// alertsWebhooks collects the alerts of Alertmanager's webhook
// notifications by path: each alert's labels, annotations, status,
// startsAt, generatorURL, and endsAt once resolved (a firing alert's
// endsAt is its validity, which moves with every resend).
type alertsWebhooks struct {
	mu     sync.Mutex
	byPath map[string]map[string]bool
}

func newAlertsWebhooks() *alertsWebhooks {
	return &alertsWebhooks{byPath: map[string]map[string]bool{}}
}

func (h *alertsWebhooks) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var msg struct {
		Alerts []struct {
			Status       string            `json:"status"`
			Labels       map[string]string `json:"labels"`
			Annotations  map[string]string `json:"annotations"`
			StartsAt     string            `json:"startsAt"`
			EndsAt       string            `json:"endsAt"`
			GeneratorURL string            `json:"generatorURL"`
		} `json:"alerts"`
	}
	if err := json.NewDecoder(r.Body).Decode(&msg); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.byPath[r.URL.Path] == nil {
		h.byPath[r.URL.Path] = map[string]bool{}
	}
	for _, a := range msg.Alerts {
		if a.Status != "resolved" {
			a.EndsAt = ""
		}
		line, err := json.Marshal(a)
		if err == nil {
			h.byPath[r.URL.Path][string(line)] = true
		}
	}
}

// seen is what the webhook at path got, one alert state a line, sorted.
func (h *alertsWebhooks) seen(path string) string {
	h.mu.Lock()
	defer h.mu.Unlock()
	lines := make([]string, 0, len(h.byPath[path]))
	for l := range h.byPath[path] {
		lines = append(lines, l)
	}
	sort.Strings(lines)
	return strings.Join(lines, "\n") + "\n"
}
