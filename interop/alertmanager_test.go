package interop_test

// Ferrite's notifier (crates/notifier) against a real Alertmanager
// (v0.35.0, built from its Go module): alerts sent through `notifysend`
// (a Rust example driving ferrite_notifier::Notifier with a configuration
// file, from NOTIFYSEND_BIN) must arrive with their labels (external
// labels added, an alert's own label winning, relabeling applied, alerts
// dropped by relabeling absent), annotations, startsAt/endsAt and
// generatorURL, as Alertmanager's API v2 shows them; an alert sent again
// with an end in the past arrives as resolved.
//
// alertmanagerBin is the helper other tests reuse: it builds Alertmanager
// once per test binary run into a temporary directory.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// alertmanagerVersion is the Alertmanager release the tests run.
const alertmanagerVersion = "v0.35.0"

var (
	alertmanagerOnce  sync.Once
	alertmanagerPath  string
	alertmanagerError error
)

// alertmanagerBin is the path of an Alertmanager binary of
// alertmanagerVersion, built from its Go module on first use (the module
// from the module proxy, its web UI replaced by an empty page: the module
// ships without the built UI the binary embeds). The binary is kept in a
// temporary directory for the rest of the test binary's run.
func alertmanagerBin(t *testing.T) string {
	t.Helper()
	alertmanagerOnce.Do(func() {
		alertmanagerPath, alertmanagerError = buildAlertmanager()
	})
	if alertmanagerError != nil {
		t.Fatalf("building Alertmanager %s: %v", alertmanagerVersion, alertmanagerError)
	}
	return alertmanagerPath
}

func buildAlertmanager() (string, error) {
	return buildModuleBinary("github.com/prometheus/alertmanager", alertmanagerVersion, "./cmd/alertmanager",
		func(src string) error {
			for _, ui := range []string{"elm", "mantine"} {
				d := filepath.Join(src, "ui", "app", "dist", ui)
				if err := os.MkdirAll(d, 0o755); err != nil {
					return err
				}
				if err := os.WriteFile(filepath.Join(d, "index.html"), []byte("<html></html>\n"), 0o644); err != nil {
					return err
				}
			}
			return nil
		})
}

// buildModuleBinary builds the command pkg of module at version, from a
// writable copy of the module as the proxy serves it (built with its own
// go.mod and go.sum, so the interop module's go.mod is left alone);
// prepare may change the copy first. The binary is kept in a temporary
// directory.
func buildModuleBinary(module, version, pkg string, prepare func(src string) error) (string, error) {
	dir, err := os.MkdirTemp("", "ferrite-"+filepath.Base(module)+"-")
	if err != nil {
		return "", err
	}
	env := append(os.Environ(), "GO111MODULE=on", "GOWORK=off", "GOFLAGS=-mod=mod")
	dl := exec.Command("go", "mod", "download", "-json", module+"@"+version)
	dl.Dir, dl.Env = dir, env
	out, err := dl.Output()
	if err != nil {
		return "", fmt.Errorf("go mod download: %v\n%s", err, out)
	}
	var mod struct{ Dir, Error string }
	if err := json.Unmarshal(out, &mod); err != nil || mod.Dir == "" {
		return "", fmt.Errorf("go mod download: %v %s\n%s", err, mod.Error, out)
	}
	src := filepath.Join(dir, "src")
	if err := copyTree(mod.Dir, src); err != nil {
		return "", err
	}
	if prepare != nil {
		if err := prepare(src); err != nil {
			return "", err
		}
	}
	bin := filepath.Join(dir, filepath.Base(module))
	build := exec.Command("go", "build", "-o", bin, pkg)
	build.Dir, build.Env = src, env
	if out, err := build.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build: %v\n%s", err, out)
	}
	return bin, nil
}

// copyTree copies a module's files (read-only in the module cache) into a
// writable tree.
func copyTree(from, to string) error {
	return filepath.WalkDir(from, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(from, path)
		if err != nil {
			return err
		}
		target := filepath.Join(to, rel)
		if d.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		return os.WriteFile(target, data, 0o644)
	})
}

// freeTCPAddr is a 127.0.0.1 address with a port free just now.
func freeTCPAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr
}

// startAlertmanager runs an Alertmanager with a minimal configuration
// (every alert to a receiver that does nothing) and a temporary storage
// directory, until the test ends; it returns its address once ready.
func startAlertmanager(t *testing.T) string {
	t.Helper()
	bin := alertmanagerBin(t)
	dir := t.TempDir()
	cfg := filepath.Join(dir, "alertmanager.yml")
	if err := os.WriteFile(cfg, []byte("route:\n  receiver: blackhole\nreceivers:\n  - name: blackhole\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	addr := freeTCPAddr(t)
	var logs bytes.Buffer
	cmd := exec.Command(bin, "--config.file="+cfg, "--storage.path="+filepath.Join(dir, "data"),
		"--web.listen-address="+addr, "--cluster.listen-address=")
	cmd.Stdout, cmd.Stderr = &logs, &logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		if t.Failed() {
			t.Logf("alertmanager log:\n%s", tail(logs.String(), 30))
		}
	})
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		resp, err := http.Get("http://" + addr + "/-/ready")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return addr
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("alertmanager on %s not ready:\n%s", addr, logs.String())
	return ""
}

// amAlert is an alert as Alertmanager's GET /api/v2/alerts shows it.
type amAlert struct {
	Labels       map[string]string `json:"labels"`
	Annotations  map[string]string `json:"annotations"`
	StartsAt     time.Time         `json:"startsAt"`
	EndsAt       time.Time         `json:"endsAt"`
	GeneratorURL string            `json:"generatorURL"`
	Status       struct {
		State string `json:"state"`
	} `json:"status"`
}

func getAMAlerts(t *testing.T, addr string) map[string]amAlert {
	t.Helper()
	resp, err := http.Get("http://" + addr + "/api/v2/alerts")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var list []amAlert
	if err := json.NewDecoder(resp.Body).Decode(&list); err != nil {
		t.Fatal(err)
	}
	byName := map[string]amAlert{}
	for _, a := range list {
		byName[a.Labels["alertname"]] = a
	}
	return byName
}

// receivedAlerts is Alertmanager's alertmanager_alerts_received_total for
// a status (firing or resolved).
func receivedAlerts(t *testing.T, addr, status string) int {
	t.Helper()
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	re := regexp.MustCompile(`(?m)^alertmanager_alerts_received_total\{[^}]*status="` + status + `"[^}]*\} (\S+)$`)
	total := 0
	for _, m := range re.FindAllStringSubmatch(string(body), -1) {
		v, _ := strconv.ParseFloat(m[1], 64)
		total += int(v)
	}
	return total
}

// notifySend runs notifysend with the configuration text and alerts (JSON
// lines) and returns its report.
func notifySend(t *testing.T, bin, config string, alerts []map[string]any) string {
	t.Helper()
	dir := t.TempDir()
	cfg := filepath.Join(dir, "prometheus.yml")
	if err := os.WriteFile(cfg, []byte(config), 0o644); err != nil {
		t.Fatal(err)
	}
	var in bytes.Buffer
	for _, a := range alerts {
		line, err := json.Marshal(a)
		if err != nil {
			t.Fatal(err)
		}
		in.Write(line)
		in.WriteByte('\n')
	}
	cmd := exec.Command(bin, "--batch-size", "2", cfg)
	cmd.Stdin = &in
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("notifysend: %v\n%s", err, stderr.String())
	}
	return stdout.String()
}

func TestNotifierSendsToAlertmanager(t *testing.T) {
	bin := os.Getenv("NOTIFYSEND_BIN")
	if bin == "" {
		t.Skip("NOTIFYSEND_BIN not set: build it with `cargo build --release -p ferrite-notifier --example notifysend`")
	}
	addr := startAlertmanager(t)
	config := fmt.Sprintf(`global:
  external_labels:
    region: eu-1
    cluster: c1
alerting:
  alert_relabel_configs:
    - source_labels: [alertname]
      regex: Dropped
      action: drop
    - source_labels: [severity]
      target_label: priority
      regex: page
      replacement: high
  alertmanagers:
    - static_configs:
        - targets: [%q]
      timeout: 5s
      alert_relabel_configs:
        - target_label: via
          replacement: ferrite
`, addr)
	now := time.Now().Truncate(time.Millisecond)
	ms := func(t time.Time) int64 { return t.UnixMilli() }
	starts := now.Add(-time.Minute)
	ends := now.Add(time.Hour)
	alerts := []map[string]any{
		{"labels": map[string]string{"alertname": "Firing", "severity": "page"},
			"annotations": map[string]string{"summary": "load <high> & rising", "runbook": "http://r/x"},
			"startsAtMs":  ms(starts), "endsAtMs": ms(ends),
			"generatorURL": "http://ferrite.example:9090/graph?g0.expr=up%3D%3D0&g0.tab=1"},
		{"labels": map[string]string{"alertname": "OwnRegion", "region": "us-2"},
			"startsAtMs": ms(starts), "endsAtMs": ms(ends)},
		{"labels": map[string]string{"alertname": "Dropped"},
			"startsAtMs": ms(starts), "endsAtMs": ms(ends)},
		{"labels": map[string]string{"alertname": "Resolving", "severity": "ticket"},
			"startsAtMs": ms(starts), "endsAtMs": ms(ends)},
		{"labels": map[string]string{"alertname": "Unicode", "service": "café ☕"},
			"annotations": map[string]string{"description": "line one\nline \"two\""},
			"startsAtMs":  ms(starts), "endsAtMs": ms(ends)},
	}
	report := notifySend(t, bin, config, alerts)
	wantURL := "http://" + addr + "/api/v2/alerts"
	if want := wantURL + " sent=4 errors=0 dropped=0\n"; report != want {
		t.Fatalf("notifysend reported %q, want %q", report, want)
	}
	got := getAMAlerts(t, addr)
	if len(got) != 4 {
		t.Fatalf("alertmanager holds %d alerts, want 4: %v", len(got), got)
	}
	if _, ok := got["Dropped"]; ok {
		t.Errorf("the alert dropped by alert_relabel_configs reached Alertmanager")
	}
	check := func(name string, labels, annotations map[string]string, generatorURL string) {
		t.Helper()
		a, ok := got[name]
		if !ok {
			t.Errorf("%s: missing", name)
			return
		}
		if fmt.Sprint(a.Labels) != fmt.Sprint(labels) {
			t.Errorf("%s: labels %v, want %v", name, a.Labels, labels)
		}
		if annotations == nil {
			annotations = map[string]string{}
		}
		if fmt.Sprint(a.Annotations) != fmt.Sprint(annotations) {
			t.Errorf("%s: annotations %v, want %v", name, a.Annotations, annotations)
		}
		if !a.StartsAt.Equal(starts) || !a.EndsAt.Equal(ends) {
			t.Errorf("%s: startsAt %v endsAt %v, want %v and %v", name, a.StartsAt, a.EndsAt, starts, ends)
		}
		if a.GeneratorURL != generatorURL {
			t.Errorf("%s: generatorURL %q, want %q", name, a.GeneratorURL, generatorURL)
		}
		if a.Status.State != "active" {
			t.Errorf("%s: state %q, want active", name, a.Status.State)
		}
	}
	check("Firing", map[string]string{"alertname": "Firing", "severity": "page", "priority": "high",
		"region": "eu-1", "cluster": "c1", "via": "ferrite"},
		map[string]string{"summary": "load <high> & rising", "runbook": "http://r/x"},
		"http://ferrite.example:9090/graph?g0.expr=up%3D%3D0&g0.tab=1")
	check("OwnRegion", map[string]string{"alertname": "OwnRegion", "region": "us-2", "cluster": "c1", "via": "ferrite"}, nil, "")
	check("Resolving", map[string]string{"alertname": "Resolving", "severity": "ticket", "region": "eu-1",
		"cluster": "c1", "via": "ferrite"}, nil, "")
	check("Unicode", map[string]string{"alertname": "Unicode", "service": "café ☕", "region": "eu-1",
		"cluster": "c1", "via": "ferrite"}, map[string]string{"description": "line one\nline \"two\""}, "")
	if n := receivedAlerts(t, addr, "firing"); n != 4 {
		t.Errorf("alertmanager counted %d firing alerts received, want 4", n)
	}

	// The same alert again, ended a while ago: resolved.
	resolved := []map[string]any{
		{"labels": map[string]string{"alertname": "Resolving", "severity": "ticket"},
			"startsAtMs": ms(starts), "endsAtMs": ms(now.Add(-10 * time.Second))},
	}
	if report := notifySend(t, bin, config, resolved); !strings.Contains(report, " sent=1 errors=0 dropped=0") {
		t.Fatalf("notifysend reported %q", report)
	}
	if n := receivedAlerts(t, addr, "resolved"); n != 1 {
		t.Errorf("alertmanager counted %d resolved alerts received, want 1", n)
	}
	got = getAMAlerts(t, addr)
	if _, ok := got["Resolving"]; ok {
		t.Errorf("the resolved alert is still listed as active: %+v", got["Resolving"])
	}
	if len(got) != 3 {
		t.Errorf("alertmanager lists %d alerts after the resolve, want 3", len(got))
	}
}

// A configured Alertmanager that refuses (here: nothing listens) counts
// the batch as errors and drops it; the other Alertmanager of the same
// set still gets every alert.
func TestNotifierCountsAlertmanagerErrors(t *testing.T) {
	bin := os.Getenv("NOTIFYSEND_BIN")
	if bin == "" {
		t.Skip("NOTIFYSEND_BIN not set: build it with `cargo build --release -p ferrite-notifier --example notifysend`")
	}
	addr := startAlertmanager(t)
	dead := freeTCPAddr(t)
	config := fmt.Sprintf("alerting:\n  alertmanagers:\n    - static_configs: [{targets: [%q, %q]}]\n      timeout: 2s\n", addr, dead)
	now := time.Now()
	var alerts []map[string]any
	for i := 0; i < 5; i++ {
		alerts = append(alerts, map[string]any{"labels": map[string]string{"alertname": fmt.Sprintf("A%d", i)},
			"startsAtMs": now.UnixMilli(), "endsAtMs": now.Add(time.Hour).UnixMilli()})
	}
	report := notifySend(t, bin, config, alerts)
	want := fmt.Sprintf("http://%s/api/v2/alerts sent=5 errors=0 dropped=0\nhttp://%s/api/v2/alerts sent=0 errors=5 dropped=5\n", addr, dead)
	if report != want {
		t.Fatalf("notifysend reported %q, want %q", report, want)
	}
	if got := getAMAlerts(t, addr); len(got) != 5 {
		t.Fatalf("alertmanager holds %d alerts, want 5", len(got))
	}
}
