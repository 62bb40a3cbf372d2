package interop_test

import (
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"ferrite.dev/interop/internal/e2e"
)

// TestE2EPrometheusRemoteWrite: a real Prometheus (v3.16.0, built from the
// module this suite pins; PROMETHEUS_BIN overrides) scrapes itself and
// Ferrite's /metrics (Ferrite may not serve it: then only up=0 and the
// scrape_* series of that target exist, the same on both sides), evaluates a
// recording rule, and remote-writes everything to Ferrite. promtool then asks
// both servers the same instant and range queries at fixed times in the past,
// and the answers must agree: Ferrite received, via remote write, exactly the
// samples Prometheus stored, so raw samples (the range-vector selectors)
// must be identical, and computed values equal up to 1e-9 relative (Ferrite's
// own PromQL engine may round differently).
//
// Then Ferrite is stopped with SIGTERM (exit 0 required) and restarted on the
// same dir and port while Prometheus keeps running: the same queries must
// give the same answers, and once remote write has retried what it could not
// send while Ferrite was down, a later time, whose windows span the restart,
// agrees with Prometheus too.
func TestE2EPrometheusRemoteWrite(t *testing.T) {
	fer := ferriteBin(t)
	prom, pt := e2eBinaries(t)

	tmp := t.TempDir()
	ferPort, err := e2e.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	promPort, err := e2e.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	for promPort == ferPort {
		if promPort, err = e2e.FreePort(); err != nil {
			t.Fatal(err)
		}
	}
	ferURL := fmt.Sprintf("http://127.0.0.1:%d", ferPort)
	promURL := fmt.Sprintf("http://127.0.0.1:%d", promPort)
	ferData := filepath.Join(tmp, "ferrite-data")
	ferArgs := []string{"--storage.tsdb.path", ferData, "--web.listen-address", fmt.Sprintf("127.0.0.1:%d", ferPort),
		"--web.enable-remote-write-receiver", noScrapeConfig(t, tmp)}

	var procs []*e2e.Proc
	t.Cleanup(func() {
		for _, p := range procs {
			p.Kill()
		}
	})
	startFerrite := func(log string) *e2e.Proc {
		t.Helper()
		p, err := e2e.Start("ferrite", fer, tmp, filepath.Join(tmp, log), ferArgs...)
		if err != nil {
			t.Fatal(err)
		}
		procs = append(procs, p)
		if err := p.WaitReady(ferURL+"/-/ready", 30*time.Second); err != nil {
			t.Fatal(err)
		}
		return p
	}
	began := time.Now()
	ferProc := startFerrite("ferrite-1.log")

	cfg := filepath.Join(tmp, "prometheus.yml")
	e2eWriteFile(t, cfg, fmt.Sprintf(`global:
  scrape_interval: 1s
  scrape_timeout: 1s
  evaluation_interval: 1s
rule_files: [%q]
scrape_configs:
  - job_name: prometheus
    static_configs: [{targets: ["127.0.0.1:%d"]}]
  - job_name: ferrite
    static_configs: [{targets: ["127.0.0.1:%d"]}]
remote_write:
  - url: %s/api/v1/write
    # One shard keeps the samples in WAL order on the wire; short deadlines
    # keep the lag (and the catch-up after Ferrite's restart) to about a second.
    queue_config: {batch_send_deadline: 1s, min_shards: 1, max_shards: 1, min_backoff: 50ms, max_backoff: 1s}
`, filepath.Join(tmp, "rules.yml"), promPort, ferPort, ferURL))
	e2eWriteFile(t, filepath.Join(tmp, "rules.yml"), `groups:
  - name: e2e
    rules:
      - record: job:up:sum
        expr: sum by (job) (up)
      - record: handler:prometheus_http_requests:rate5s
        expr: sum by (handler) (rate(prometheus_http_requests_total[5s]))
`)
	promProc, err := e2e.Start("prometheus", prom, tmp, filepath.Join(tmp, "prometheus.log"),
		"--config.file="+cfg, "--storage.tsdb.path="+filepath.Join(tmp, "prom-data"),
		fmt.Sprintf("--web.listen-address=127.0.0.1:%d", promPort))
	if err != nil {
		t.Fatal(err)
	}
	procs = append(procs, promProc)
	if err := promProc.WaitReady(promURL+"/-/ready", 30*time.Second); err != nil {
		t.Fatal(err)
	}

	// Ferrite must be getting data at all before we wait for more. (The
	// first scrapes come a few seconds after Prometheus is ready: service
	// discovery hands out its targets at most every 5 s.)
	e2eWaitFor(t, 30*time.Second, "ferrite to have `up` from remote write", promProc, func() (bool, string) {
		v, ok, err := e2e.QueryScalar(ferURL, `count(up)`, time.Now())
		if err != nil {
			return false, err.Error()
		}
		return ok && v > 0, fmt.Sprintf("count(up)=%v (present %v)", v, ok)
	})
	scrapeStart := time.Now()
	t.Logf("ferrite has remote-written data %v after the start", time.Since(began).Round(100*time.Millisecond))

	// Let ~10 s of history build up before T, so 10 s windows at T are
	// (nearly) full; the range queries run from S to T.
	e2eSleepUntil(scrapeStart.Add(13 * time.Second))
	T := time.Unix(time.Now().Add(-3*time.Second).Unix(), 0)
	S := time.Unix(scrapeStart.Unix()+1, 0)
	e2eWaitFlushed(t, ferURL, promProc, T)

	// Every sample since before Prometheus started, too.
	all := int64(math.Ceil(T.Sub(began).Seconds())) + 2
	queries := append(e2eQueries(T, S),
		e2eInstant("all raw samples", fmt.Sprintf(`{__name__=~".+"}[%ds]`, all), T, 0, true))
	promAns, ferAns := e2eCompareRounds(t, pt, promURL, ferURL, queries, promProc)
	if t.Failed() {
		t.Logf("ferrite log:\n%s\nprometheus log:\n%s", ferProc.LogTail(30), promProc.LogTail(30))
		t.FailNow()
	}

	// Restart Ferrite: a clean exit, then the same answers from the same dir.
	restartAt := time.Now()
	if err := ferProc.Stop(30 * time.Second); err != nil {
		t.Fatalf("ferrite did not exit cleanly on SIGTERM: %v\nlog:\n%s", err, ferProc.LogTail(30))
	}
	e2eCheckNoPanic(t, ferProc)
	stopped := time.Since(restartAt)
	// Stay down for a while, so remote write has to retry.
	time.Sleep(2 * time.Second)
	ferProc = startFerrite("ferrite-2.log")
	t.Logf("ferrite restart: SIGTERM to exit %v, down 2 s, start to ready %v", stopped.Round(time.Millisecond),
		(time.Since(restartAt) - stopped - 2*time.Second).Round(time.Millisecond))
	for _, q := range queries {
		got := e2ePromtoolQuery(t, pt, ferURL, q)
		if d, _ := e2e.Diff(promAns[q.name], got, q.tol); d != "" {
			t.Errorf("after restart, ferrite %s differs from prometheus:\n%s", q.name, d)
		}
		if d, _ := e2e.Diff(ferAns[q.name], got, 0); d != "" {
			t.Errorf("after restart, ferrite %s differs from its answer before:\n%s", q.name, d)
		}
	}

	// Remote write retried what failed while Ferrite was down: at a time
	// after the restart, windows reaching back before it agree.
	e2eSleepUntil(time.Now().Add(3 * time.Second))
	T2 := time.Unix(time.Now().Add(-2*time.Second).Unix(), 0)
	e2eWaitFlushed(t, ferURL, promProc, T2)
	w := int64(math.Ceil(T2.Sub(T).Seconds())) + 2
	after := []e2eQuery{
		e2eInstant("raw samples across the restart", fmt.Sprintf(`{__name__=~".+"}[%ds]`, w), T2, 0, true),
		e2eInstant("", fmt.Sprintf(`count_over_time(up[%ds])`, w), T2, 0, true),
		e2eInstant("", fmt.Sprintf(`count_over_time(prometheus_http_requests_total[%ds])`, w), T2, 0, true),
		e2eInstant("every series at T2", `{__name__=~".+"}`, T2, 0, true),
	}
	e2eCompareRounds(t, pt, promURL, ferURL, after, promProc)

	if err := promProc.Stop(30 * time.Second); err != nil {
		t.Logf("prometheus stop: %v", err)
	}
	if err := ferProc.Stop(30 * time.Second); err != nil {
		t.Errorf("ferrite did not exit cleanly on SIGTERM (second run): %v\nlog:\n%s", err, ferProc.LogTail(30))
	}
	e2eCheckNoPanic(t, ferProc)
	if t.Failed() {
		t.Logf("ferrite log:\n%s\nprometheus log:\n%s", ferProc.LogTail(30), promProc.LogTail(30))
	}
	// Not a failure, but worth seeing: what Prometheus complained about
	// (remote write retries while Ferrite restarted, a refused target).
	for _, l := range strings.Split(promProc.Log(), "\n") {
		if strings.Contains(l, "level=WARN") || strings.Contains(l, "level=ERROR") {
			t.Logf("prometheus: %s", l)
		}
	}
	t.Logf("total %v (T=%d, range %d..%d, T2=%d)", time.Since(began).Round(time.Millisecond), T.Unix(), S.Unix(), T.Unix(), T2.Unix())
}

// e2eQuery is one promtool query; tol is the relative tolerance on values
// (0: the printed values must be identical); nonEmpty requires Prometheus'
// answer to hold something, so the comparison is not vacuous.
type e2eQuery struct {
	name     string
	args     []string
	tol      float64
	nonEmpty bool
}

func e2eUnixArg(t time.Time) string { return strconv.FormatInt(t.Unix(), 10) }

func e2eInstant(name, expr string, at time.Time, tol float64, nonEmpty bool) e2eQuery {
	if name == "" {
		name = expr
	}
	return e2eQuery{name: "instant " + name, args: []string{"instant", "URL", expr, "--time", e2eUnixArg(at)}, tol: tol, nonEmpty: nonEmpty}
}

func e2eRange(expr string, start, end time.Time, tol float64) e2eQuery {
	return e2eQuery{name: "range " + expr, args: []string{"range", "URL", expr, "--start", e2eUnixArg(start),
		"--end", e2eUnixArg(end), "--step", "1s"}, tol: tol, nonEmpty: true}
}

// e2eQueries: raw data (exact), aggregations of it (exact: counts and sums
// of identical 0/1 values), and functions over windows (1e-9).
func e2eQueries(T, S time.Time) []e2eQuery {
	const tol = 1e-9
	return []e2eQuery{
		e2eInstant("", `up`, T, 0, true),
		e2eInstant("", `count(up)`, T, 0, true),
		e2eInstant("", `sum by (job) (up)`, T, 0, true),
		e2eInstant("", `prometheus_build_info`, T, 0, true),
		e2eInstant("", `job:up:sum`, T, 0, true),
		e2eInstant("", `handler:prometheus_http_requests:rate5s`, T, 0, true),
		e2eInstant("every series", `{__name__=~".+"}`, T, 0, true),
		e2eInstant("", `count({__name__=~".+"})`, T, 0, true),
		e2eInstant("", `count by (job) ({__name__=~".+"})`, T, 0, true),
		e2eInstant("raw samples", `{__name__=~".+"}[6s]`, T, 0, true),
		e2eInstant("", `timestamp(up)`, T, 0, true),
		e2eInstant("", `rate(prometheus_http_requests_total[10s])`, T, tol, true),
		e2eInstant("", `sum by (handler) (rate(prometheus_http_requests_total[10s]))`, T, tol, true),
		e2eInstant("", `increase(prometheus_tsdb_head_samples_appended_total[10s])`, T, tol, true),
		e2eInstant("", `max_over_time(scrape_duration_seconds[10s])`, T, 0, true),
		e2eInstant("", `histogram_quantile(0.9, sum by (le) (rate(prometheus_http_request_duration_seconds_bucket[10s])))`, T, tol, true),
		e2eRange(`up`, S, T, 0),
		e2eRange(`count({__name__=~".+"})`, S, T, 0),
		e2eRange(`sum by (job) (scrape_samples_scraped)`, S, T, 0),
		e2eRange(`rate(prometheus_http_requests_total[5s])`, S, T, tol),
		e2eRange(`job:up:sum`, S, T, 0),
	}
}

// compareRounds asks both servers every query and compares. Remote write
// lags, and waitFlushed's test is a heuristic, so a mismatch is asked again
// (Prometheus too) up to twice, 3 s apart, before it counts.
func e2eCompareRounds(t *testing.T, pt, promURL, ferURL string, queries []e2eQuery, promProc *e2e.Proc) (promAns, ferAns map[string]e2e.Result) {
	t.Helper()
	promAns, ferAns = map[string]e2e.Result{}, map[string]e2e.Result{}
	pending := queries
	for round := 0; ; round++ {
		var failed []e2eQuery
		var msgs []string
		for _, q := range pending {
			p := e2ePromtoolQuery(t, pt, promURL, q)
			f := e2ePromtoolQuery(t, pt, ferURL, q)
			promAns[q.name], ferAns[q.name] = p, f
			if q.nonEmpty && len(p.Series) == 0 {
				t.Errorf("prometheus has nothing for %s: the comparison would be vacuous", q.name)
				continue
			}
			d, inexact := e2e.Diff(p, f, q.tol)
			if d != "" {
				failed = append(failed, q)
				msgs = append(msgs, fmt.Sprintf("%s: ferrite differs from prometheus (%d series, %d samples):\n%s",
					q.name, len(p.Series), p.Samples(), d))
				continue
			}
			t.Logf("%s: agree (%d series, %d samples, %d values within tolerance only)", q.name, len(p.Series), p.Samples(), inexact)
		}
		if len(failed) == 0 {
			return promAns, ferAns
		}
		if round == 2 {
			for _, m := range msgs {
				t.Error(m)
			}
			return promAns, ferAns
		}
		t.Logf("round %d: %d queries differ, asking again in 3 s (remote write lag?); first:\n%s", round, len(failed), msgs[0])
		if ok, err := promProc.Exited(); ok {
			t.Fatalf("prometheus exited: %v\n%s", err, promProc.LogTail(30))
		}
		time.Sleep(3 * time.Second)
		pending = failed
	}
}

// promtoolQuery runs `promtool query -o json ARGS` with URL replaced by base.
func e2ePromtoolQuery(t *testing.T, pt, base string, q e2eQuery) e2e.Result {
	t.Helper()
	args := []string{"query", "-o", "json"}
	for _, a := range q.args {
		if a == "URL" {
			a = base
		}
		args = append(args, a)
	}
	r := run(pt, nil, args...)
	if r.err != nil {
		t.Fatalf("promtool %s: %v\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), r.err, tail(r.stdout, 10), tail(r.stderr, 10))
	}
	res, err := e2e.ParseResult(r.stdout)
	if err != nil {
		t.Fatalf("promtool %s: %v", strings.Join(args, " "), err)
	}
	return res
}

// waitFlushed waits until Ferrite has `up` of the prometheus job at least 2 s
// past T. With one remote-write shard samples arrive in WAL order, and a 1 s
// scrape interval puts every sample up to T in the WAL before those.
func e2eWaitFlushed(t *testing.T, ferURL string, promProc *e2e.Proc, T time.Time) {
	t.Helper()
	want := float64(T.Unix() + 2)
	e2eWaitFor(t, 20*time.Second, fmt.Sprintf("ferrite to have samples past %d", T.Unix()+2), promProc, func() (bool, string) {
		v, ok, err := e2e.QueryScalar(ferURL, `max(timestamp(up{job="prometheus"}))`, time.Now())
		if err != nil {
			return false, err.Error()
		}
		return ok && v >= want, fmt.Sprintf("latest up at %v", v)
	})
}

func e2eWaitFor(t *testing.T, timeout time.Duration, what string, promProc *e2e.Proc, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		ok, last := cond()
		if ok {
			return
		}
		if exited, err := promProc.Exited(); exited {
			t.Fatalf("prometheus exited while waiting for %s: %v\n%s", what, err, promProc.LogTail(30))
		}
		if time.Now().After(deadline) {
			t.Fatalf("waited %v for %s; last: %s\nprometheus log:\n%s", timeout, what, last, promProc.LogTail(20))
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func e2eSleepUntil(at time.Time) {
	if d := time.Until(at); d > 0 {
		time.Sleep(d)
	}
}

func e2eCheckNoPanic(t *testing.T, p *e2e.Proc) {
	t.Helper()
	if strings.Contains(p.Log(), "panicked at") {
		t.Errorf("%s panicked:\n%s", p.Name, p.LogTail(30))
	}
}

func e2eWriteFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// prometheusAndPromtool returns the Prometheus server and promtool binaries.
// Prometheus is built from the module (a tool of it, like promtool) while
// promtool builds; PROMETHEUS_BIN overrides. Only if that build fails and a
// distribution's /usr/bin/prometheus exists is that used instead (logged).
func e2eBinaries(t *testing.T) (prom, pt string) {
	t.Helper()
	if bin := os.Getenv("PROMETHEUS_BIN"); bin != "" {
		abs, err := filepath.Abs(bin)
		if err != nil {
			t.Fatal(err)
		}
		if st, err := os.Stat(abs); err != nil || st.IsDir() {
			t.Fatalf("PROMETHEUS_BIN=%q: not a file (%v)", bin, err)
		}
		return abs, promtoolBin(t)
	}
	prom = filepath.Join(t.TempDir(), "prometheus")
	cmd := exec.Command("go", "build", "-o", prom,
		"-ldflags", "-s -w -X github.com/prometheus/common/version.Version=3.16.0",
		"github.com/prometheus/prometheus/cmd/prometheus")
	var out strings.Builder
	cmd.Stdout = &out
	cmd.Stderr = &out
	started := time.Now()
	startErr := cmd.Start()
	if startErr == nil {
		// If promtool's build fails the test, do not leave this one running.
		t.Cleanup(func() {
			if cmd.ProcessState == nil {
				_ = cmd.Process.Kill()
				_ = cmd.Wait()
			}
		})
	}
	pt = promtoolBin(t)
	err := startErr
	if err == nil {
		err = cmd.Wait()
	}
	if err == nil {
		t.Logf("built prometheus v3.16.0 from the module in %v", time.Since(started).Round(time.Second))
		return prom, pt
	}
	const distro = "/usr/bin/prometheus"
	if st, serr := os.Stat(distro); serr == nil && !st.IsDir() {
		t.Logf("WARNING: building prometheus failed (%v), using the distribution's %s instead:\n%s", err, distro, tail(out.String(), 10))
		return distro, pt
	}
	t.Fatalf("building prometheus (go build github.com/prometheus/prometheus/cmd/prometheus, a tool of this module) failed, "+
		"and there is no %s; set PROMETHEUS_BIN: %v\n%s", distro, err, tail(out.String(), 30))
	return "", ""
}
