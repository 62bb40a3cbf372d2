package interop_test

// scrape_failure_log_file, side by side with Prometheus v3.16.0: the JSON
// line each server writes for a failed scrape.

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// failureLine is what a scrape failure log line says, its time aside.
type failureLine struct {
	Job, Target, Msg, Level, Shape string
}

// readFailureLog reads a scrape failure log ("" lines if it does not
// exist), each line's keys without Prometheus' "source".
func readFailureLog(t *testing.T, path string) []failureLine {
	t.Helper()
	f, err := os.Open(path)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []failureLine
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var raw map[string]any
		if err := json.Unmarshal(sc.Bytes(), &raw); err != nil {
			t.Fatalf("%s: not a JSON line: %q: %v", path, sc.Text(), err)
		}
		delete(raw, "source")
		str := func(k string) string { s, _ := raw[k].(string); return s }
		out = append(out, failureLine{Job: str("job_name"), Target: str("target"),
			Msg: str("msg"), Level: str("level"), Shape: shapeOf(raw)})
	}
	return out
}

// distinctFailures is the lines' distinct (job, target, msg, level, keys),
// sorted.
func distinctFailures(lines []failureLine) []string {
	seen := map[string]bool{}
	var out []string
	for _, l := range lines {
		k := fmt.Sprintf("job=%s target=%s level=%s keys=[%s] msg=%s", l.Job, l.Target, l.Level, l.Shape, l.Msg)
		if !seen[k] {
			seen[k] = true
			out = append(out, k)
		}
	}
	sort.Strings(out)
	return out
}

// TestScrapeFailureLogMatchesPrometheus: a job scraping a port nothing
// listens on logs to the global scrape_failure_log_file, a job scraping a
// target answering 500 to its own; both servers, on the same
// configuration (its relative paths under each one's directory), write
// lines for the same jobs and targets with the same keys (Prometheus'
// "source" aside) and messages. A reload naming a file that cannot be
// opened fails on both.
func TestScrapeFailureLogMatchesPrometheus(t *testing.T) {
	failing := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusInternalServerError)
	}))
	defer failing.Close()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	refused := l.Addr().String()
	l.Close()

	base := t.TempDir()
	config := func(global string) string {
		return "global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\n" +
			"  scrape_failure_log_file: " + global + "\n" +
			"scrape_configs:\n" +
			"- job_name: refused\n  static_configs: [{targets: ['" + refused + "']}]\n" +
			"- job_name: status500\n  scrape_failure_log_file: own.log\n" +
			"  static_configs: [{targets: ['" + strings.TrimPrefix(failing.URL, "http://") + "']}]\n"
	}
	dirs := map[string]string{"ferrite": filepath.Join(base, "fer"), "prometheus": filepath.Join(base, "prom")}
	cfgs := map[string]string{}
	for name, dir := range dirs {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		cfgs[name] = filepath.Join(dir, "prometheus.yml")
		e2eWriteFile(t, cfgs[name], config("failures.log"))
	}
	p := startQueryLogPairConfigs(t, cfgs["ferrite"], cfgs["prometheus"], "",
		filepath.Join(dirs["ferrite"], "data"), filepath.Join(dirs["prometheus"], "data"))
	urls := map[string]string{"ferrite": p.ferURL, "prometheus": p.promURL}

	count := func(path, job string) int {
		n := 0
		for _, l := range readFailureLog(t, path) {
			if l.Job == job {
				n++
			}
		}
		return n
	}
	for name, dir := range dirs {
		global, own := filepath.Join(dir, "failures.log"), filepath.Join(dir, "own.log")
		waitFor(t, func() bool { return count(global, "refused") >= 3 && count(own, "status500") >= 3 },
			name+": three failed scrapes of each job logged")
	}
	for _, file := range []string{"failures.log", "own.log"} {
		fer := distinctFailures(readFailureLog(t, filepath.Join(dirs["ferrite"], file)))
		prom := distinctFailures(readFailureLog(t, filepath.Join(dirs["prometheus"], file)))
		if strings.Join(fer, "\n") != strings.Join(prom, "\n") {
			t.Errorf("%s differs:\nferrite:\n  %s\nprometheus:\n  %s", file,
				strings.Join(fer, "\n  "), strings.Join(prom, "\n  "))
		}
		if len(prom) != 1 {
			t.Errorf("%s: Prometheus wrote %d kinds of line, want 1: %v", file, len(prom), prom)
		}
		t.Logf("%s: %v", file, prom)
	}

	// A file that cannot be opened fails the reload on both.
	for name, cfg := range cfgs {
		e2eWriteFile(t, cfg, config("no/such/dir/failures.log"))
		resp, err := http.Post(urls[name]+"/-/reload", "", nil)
		if err != nil {
			t.Fatalf("%s reload: %v", name, err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK ||
			!strings.Contains(string(body), "one or more errors occurred while applying the new configuration") {
			t.Errorf("%s: a reload with an unopenable failure log: %s %s", name, resp.Status, body)
		}
	}
}
