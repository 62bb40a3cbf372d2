package interop_test

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/prometheus/prompb"

	"ferrite.dev/interop/internal/e2e"
)

// TestAlertStateSurvivesKill9LikePrometheus: Ferrite and a real
// Prometheus v3.16.0 run the same alerting rules over the same
// remote-written data; after 12 s both are killed with SIGKILL, stay down
// 4 s, and restart on their data dirs. Then, as Prometheus restores alert
// state from ALERTS_FOR_STATE (`--rules.alert.for-grace-period=1m`):
//   - an alert that was firing (`for: 2s`) keeps its activeAt (to the
//     second, as ALERTS_FOR_STATE keeps it), the same on both;
//   - an alert pending in a long `for` (10m) has its activeAt moved on by
//     the time the server was down, on both (within 2 s of each other:
//     each restores at its own wall-clock time);
//   - the samples written before the kill are all there on both.
func TestAlertStateSurvivesKill9LikePrometheus(t *testing.T) {
	fer := ferriteBin(t)
	prom, _ := e2eBinaries(t)
	tmp := t.TempDir()
	e2eWriteFile(t, filepath.Join(tmp, "alerts.yml"), `groups:
  - name: restore
    rules:
      - alert: Firing
        expr: up{instance="c"} == 0
        for: 2s
      - alert: LongPending
        expr: up{instance="c"} == 0
        for: 10m
        labels: {severity: '{{ $labels.instance }}-slow'}
`)
	cfg := filepath.Join(tmp, "prometheus.yml")
	e2eWriteFile(t, cfg, "global:\n  evaluation_interval: 1s\nrule_files: [alerts.yml]\n")
	ports := alertsFreePorts(t, 2)
	ferURL := fmt.Sprintf("http://127.0.0.1:%d", ports[0])
	promURL := fmt.Sprintf("http://127.0.0.1:%d", ports[1])
	grace := "--rules.alert.for-grace-period=1m"
	startFerrite := func() *e2e.Proc {
		p, err := e2e.Start("ferrite", fer, tmp, filepath.Join(tmp, "ferrite.log"),
			"--config.file", cfg, "--storage.tsdb.path", filepath.Join(tmp, "ferrite-data"),
			"--web.listen-address", fmt.Sprintf("127.0.0.1:%d", ports[0]), grace)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(p.Kill)
		return p
	}
	startPrometheus := func() *e2e.Proc {
		p, err := e2e.Start("prometheus", prom, tmp, filepath.Join(tmp, "prometheus.log"),
			"--config.file="+cfg, "--storage.tsdb.path="+filepath.Join(tmp, "prom-data"),
			fmt.Sprintf("--web.listen-address=127.0.0.1:%d", ports[1]), "--web.enable-remote-write-receiver", grace)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(p.Kill)
		return p
	}
	waitReady := func(procs ...*e2e.Proc) {
		for i, p := range procs {
			url := []string{ferURL, promURL}[i]
			if err := p.WaitReady(url+"/-/ready", 60*time.Second); err != nil {
				t.Fatalf("%v\n%s", err, p.LogTail(20))
			}
		}
	}
	ferProc, promProc := startFerrite(), startPrometheus()
	waitReady(ferProc, promProc)

	// Samples every 250 ms to both, until the test ends; writes while a
	// server is down fail and are not retried (both miss the same ones).
	var mu sync.Mutex
	written := map[string]int{}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			case <-time.After(250 * time.Millisecond):
			}
			ms := time.Now().UnixMilli()
			req := &prompb.WriteRequest{Timeseries: []prompb.TimeSeries{{
				Labels:  []prompb.Label{{Name: "__name__", Value: "up"}, {Name: "instance", Value: "c"}, {Name: "job", Value: "node"}},
				Samples: []prompb.Sample{{Value: 0, Timestamp: ms}},
			}}}
			for _, base := range []string{ferURL, promURL} {
				if status, _, err := writeRequest(base, req); err == nil && status/100 == 2 {
					mu.Lock()
					written[base]++
					mu.Unlock()
				}
			}
		}
	}()
	defer func() {
		close(stop)
		wg.Wait()
	}()

	time.Sleep(12 * time.Second)
	before := map[string]map[string]alertState{promURL: alertStates(t, promURL), ferURL: alertStates(t, ferURL)}
	for base, states := range before {
		if states["Firing"].State != "firing" || states["LongPending"].State != "pending" {
			t.Fatalf("%s before the kill: %+v", base, states)
		}
	}
	if !before[promURL]["Firing"].ActiveAt.Equal(before[ferURL]["Firing"].ActiveAt) {
		t.Errorf("before the kill, activeAt differs: prometheus %+v, ferrite %+v", before[promURL], before[ferURL])
	}
	killedAt := time.Now()
	ferProc.Kill()
	promProc.Kill()
	time.Sleep(4 * time.Second)
	ferProc, promProc = startFerrite(), startPrometheus()
	waitReady(ferProc, promProc)
	// Two evaluations, then the restore; a few more for good measure.
	time.Sleep(6 * time.Second)
	after := map[string]map[string]alertState{promURL: alertStates(t, promURL), ferURL: alertStates(t, ferURL)}
	for _, base := range []string{promURL, ferURL} {
		b, a := before[base], after[base]
		// Restored from ALERTS_FOR_STATE, which keeps whole seconds.
		if a["Firing"].State != "firing" || !a["Firing"].ActiveAt.Equal(b["Firing"].ActiveAt.Truncate(time.Second)) {
			t.Errorf("%s: Firing after the restart %+v, before %+v", base, a["Firing"], b["Firing"])
		}
		moved := a["LongPending"].ActiveAt.Sub(b["LongPending"].ActiveAt)
		if a["LongPending"].State != "pending" || moved < 3*time.Second || moved > time.Since(killedAt) {
			t.Errorf("%s: LongPending's activeAt moved by %v (down since %v ago): after %+v, before %+v",
				base, moved, time.Since(killedAt), a["LongPending"], b["LongPending"])
		}
		if a["LongPending"].Labels["severity"] != "c-slow" {
			t.Errorf("%s: LongPending labels %v", base, a["LongPending"].Labels)
		}
	}
	if pf, ff := after[promURL]["Firing"].ActiveAt, after[ferURL]["Firing"].ActiveAt; !pf.Equal(ff) {
		t.Errorf("Firing's restored activeAt: prometheus %v, ferrite %v", pf, ff)
	}
	pa, fa := after[promURL]["LongPending"].ActiveAt, after[ferURL]["LongPending"].ActiveAt
	if d := pa.Sub(fa); d > 2*time.Second || d < -2*time.Second {
		t.Errorf("LongPending's restored activeAt: prometheus %v, ferrite %v", pa, fa)
	}
	t.Logf("restored: Firing since %v on both; LongPending moved to %v (prometheus) and %v (ferrite)",
		after[promURL]["Firing"].ActiveAt, pa, fa)

	// Every sample written before the kill is there on both.
	q := fmt.Sprintf(`count_over_time(up{instance="c"}[%ds])`, int(time.Since(killedAt).Seconds())+30)
	at := killedAt.Add(-time.Second)
	pv, pok, perr := e2e.QueryScalar(promURL, q, at)
	fv, fok, ferr := e2e.QueryScalar(ferURL, q, at)
	if perr != nil || ferr != nil || !pok || !fok || pv != fv || pv < 40 {
		t.Errorf("samples before the kill: prometheus %v (%v %v), ferrite %v (%v %v)", pv, pok, perr, fv, fok, ferr)
	}
	e2eCheckNoPanic(t, ferProc)
}

// alertState is one alert of /api/v1/alerts.
type alertState struct {
	Labels   map[string]string `json:"labels"`
	State    string            `json:"state"`
	ActiveAt time.Time         `json:"activeAt"`
}

// alertStates is /api/v1/alerts by alert name.
func alertStates(t *testing.T, base string) map[string]alertState {
	t.Helper()
	var ans struct {
		Data struct {
			Alerts []alertState `json:"alerts"`
		} `json:"data"`
	}
	status, body, err := e2e.Get(base + "/api/v1/alerts")
	if err != nil || status != 200 {
		t.Fatalf("%s/api/v1/alerts: %d %v %s", base, status, err, body)
	}
	if err := json.Unmarshal(body, &ans); err != nil {
		t.Fatal(err)
	}
	out := map[string]alertState{}
	for _, a := range ans.Data.Alerts {
		out[a.Labels["alertname"]] = a
	}
	return out
}
