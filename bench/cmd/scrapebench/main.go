// Command scrapebench compares Ferrite's scraping with Prometheus v3.16.0
// (issue 12, item 7): -targets node_exporter-like targets of -series series
// each, served by a load program in this process (targets.go, one loopback
// port per target, the Prometheus text format 0.0.4, gzip when asked),
// scraped every -interval by one server at a time, each alone on a fresh
// data dir with the same prometheus.yml.
//
// Per server: a warm-up (every target scraped once, then two more
// intervals: its series created), then a measured window of -duration
// (a whole number of intervals, its edges in the longest gap between the
// targets' scrape phases). Over the window it reports the samples scraped
// (the load's count of bodies served x -series, cross-checked with the
// server's sum_over_time(scrape_samples_scraped) and a count_over_time of
// every metric name), the server's CPU seconds per million samples
// (/proc/PID/stat), VmRSS at the end and VmHWM, and the scrape interval's
// accuracy: from the server's own up samples (the gaps between
// consecutive scrape timestamps of every target, failed and missed
// scrapes) and from the times the load was asked for each body.
//
// It exits non-zero if a server did not scrape every target once per
// interval inside the window, or holds fewer samples than it scraped.
package main

import (
	"flag"
	"fmt"
	"math"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"time"
)

var (
	flagFerrite  = flag.String("ferrite", "", "ferrite binary")
	flagProm     = flag.String("prometheus", "", "prometheus v3.16.0 binary")
	flagRev      = flag.String("ferrite-rev", "", "Ferrite's git revision (for the report)")
	flagTools    = flag.String("tools", "prometheus,ferrite", "tools to run, in this order")
	flagTargets  = flag.Int("targets", 0, "targets (default 1000, quick 50)")
	flagSeries   = flag.Int("series", 0, "series per target (default 1000, quick 200)")
	flagInterval = flag.Duration("interval", 15*time.Second, "scrape_interval")
	flagDuration = flag.Duration("duration", 0, "measured window, rounded up to whole intervals (default 5m, quick 1m)")
	flagVariants = flag.Int("variants", 4, "distinct bodies per scrape round (target i serves variant i mod this)")
	flagData     = flag.String("data", "bench-data/scrape", "scratch directory (prometheus.yml, data dirs, logs)")
	flagQuick    = flag.Bool("quick", false, "small sizes (smoke test, a few minutes)")
	flagServe    = flag.Bool("serve", false, "only serve the targets and write prometheus.yml, until interrupted")
	flagCmdline  = flag.String("cmdline", "", "command line to print with the results")
)

func main() {
	flag.Parse()
	if err := setDefaults(); err != nil {
		fatalf("%v", err)
	}
	cmdline := *flagCmdline
	if cmdline == "" {
		cmdline = strings.Join(os.Args, " ")
	}
	if err := raiseFileLimit(uint64(2**flagTargets + 1024)); err != nil {
		fatalf("%v", err)
	}
	exp, err := newExposition(*flagSeries)
	if err != nil {
		fatalf("%v", err)
	}
	ts, err := startTargets(*flagTargets, exp, *flagVariants, *flagInterval)
	if err != nil {
		fatalf("%v", err)
	}
	defer ts.close()
	scratch, err := filepath.Abs(*flagData)
	if err != nil {
		fatalf("%v", err)
	}
	if err := os.MkdirAll(scratch, 0o755); err != nil {
		fatalf("%v", err)
	}
	cfg := filepath.Join(scratch, "prometheus.yml")
	if err := writeConfig(cfg, ts.addrs(), *flagInterval); err != nil {
		fatalf("%v", err)
	}
	if *flagServe {
		serve(ts, cfg)
		return
	}
	tools, err := selectTools()
	if err != nil {
		fatalf("%v", err)
	}

	b := &bench{tools: tools, scratch: scratch, cfg: cfg, ts: ts, exp: exp, runs: map[string]*run{}}
	logf("== %d targets x %d series (%s), every %v, window %v; prometheus.yml: %s", *flagTargets, *flagSeries, exp.shape, *flagInterval, *flagDuration, cfg)
	started := time.Now()
	for _, t := range tools {
		b.runs[t.name] = b.run(t)
	}
	b.report(cmdline, time.Since(started))
	if len(b.failures) > 0 {
		fmt.Println()
		for _, f := range b.failures {
			fmt.Println("FAILED:", f)
		}
		ts.close()
		os.Exit(1)
	}
}

// setDefaults fills the sizes -quick and the defaults leave open and
// checks them.
func setDefaults() error {
	def := func(p *int, full, quick int) {
		if *p == 0 {
			*p = full
			if *flagQuick {
				*p = quick
			}
		}
	}
	def(flagTargets, 1000, 50)
	def(flagSeries, 1000, 200)
	if *flagDuration == 0 {
		*flagDuration = 5 * time.Minute
		if *flagQuick {
			*flagDuration = time.Minute
		}
	}
	iv := *flagInterval
	switch {
	case *flagTargets < 1 || *flagTargets > 30000:
		return fmt.Errorf("-targets must be 1..30000, got %d", *flagTargets)
	case *flagSeries < 1:
		return fmt.Errorf("-series must be at least 1, got %d", *flagSeries)
	case *flagVariants < 1:
		return fmt.Errorf("-variants must be at least 1, got %d", *flagVariants)
	case iv < time.Second || iv%time.Millisecond != 0:
		return fmt.Errorf("-interval must be whole milliseconds, at least 1s, got %v", iv)
	case *flagDuration < iv:
		return fmt.Errorf("-duration (%v) must be at least one interval (%v)", *flagDuration, iv)
	}
	if r := *flagDuration % iv; r != 0 {
		*flagDuration += iv - r
		logf("NOTE: -duration rounded up to %v (whole intervals)", *flagDuration)
	}
	return nil
}

// selectTools resolves -tools.
func selectTools() ([]*tool, error) {
	all := map[string]*tool{
		"prometheus": {name: "prometheus", title: "Prometheus", bin: *flagProm},
		"ferrite":    {name: "ferrite", title: "Ferrite", bin: *flagFerrite},
	}
	var tools []*tool
	seen := map[string]bool{}
	for _, n := range strings.Split(*flagTools, ",") {
		n = strings.TrimSpace(n)
		t, ok := all[n]
		if !ok {
			return nil, fmt.Errorf("unknown tool %q (prometheus, ferrite)", n)
		}
		if seen[n] {
			return nil, fmt.Errorf("tool %q listed twice", n)
		}
		seen[n] = true
		if t.bin == "" {
			return nil, fmt.Errorf("no binary for %s (scripts/bench-scrape builds and passes them)", t.name)
		}
		bin, err := filepath.Abs(t.bin)
		if err != nil {
			return nil, err
		}
		t.bin = bin
		t.version = version(t)
		tools = append(tools, t)
	}
	return tools, nil
}

// writeConfig writes the one prometheus.yml both servers run with.
func writeConfig(path string, addrs []string, interval time.Duration) error {
	var b strings.Builder
	fmt.Fprintf(&b, "# scrapebench: %d node_exporter-like targets (the load program in scrapebench)\n", len(addrs))
	fmt.Fprintf(&b, "global:\n  scrape_interval: %s\n  scrape_timeout: %s\n", promDuration(interval), promDuration(min(interval, 10*time.Second)))
	fmt.Fprintf(&b, "scrape_configs:\n  - job_name: node\n    scrape_interval: %s\n    static_configs:\n      - targets:\n", promDuration(interval))
	for _, a := range addrs {
		fmt.Fprintf(&b, "          - %s\n", a)
	}
	return os.WriteFile(path, []byte(b.String()), 0o644)
}

// promDuration writes d as Prometheus' duration syntax (whole ms).
func promDuration(d time.Duration) string {
	if d%time.Second == 0 {
		return fmt.Sprintf("%ds", d/time.Second)
	}
	return fmt.Sprintf("%dms", d/time.Millisecond)
}

// serve runs the targets alone until SIGINT or SIGTERM.
func serve(ts *targetSet, cfg string) {
	logf("serving %d targets of %d series on 127.0.0.1 (first %s); configuration: %s; Ctrl-C stops", len(ts.targets), *flagSeries, ts.targets[0].addr, cfg)
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM)
	select {
	case <-sig:
	case err := <-ts.serveErr:
		logf("ERROR: serving: %v", err)
	}
}

// raiseFileLimit raises the soft open files limit to need (at most the
// hard limit): the load holds a listener and a connection per target. Set
// explicitly, the limit is inherited by the servers as well.
func raiseFileLimit(need uint64) error {
	var rl syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil {
		return fmt.Errorf("getrlimit: %w", err)
	}
	if rl.Cur >= need {
		return nil
	}
	if rl.Max < need {
		return fmt.Errorf("open files limit %d (hard %d) is below the %d needed for %d targets; raise it (ulimit -n)", rl.Cur, rl.Max, need, *flagTargets)
	}
	rl.Cur = need
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil {
		return fmt.Errorf("setrlimit: %w", err)
	}
	return nil
}

// bench is the whole run.
type bench struct {
	tools    []*tool
	scratch  string
	cfg      string
	ts       *targetSet
	exp      *exposition
	runs     map[string]*run
	failures []string
}

// run is one server's measured window.
type run struct {
	ok             bool // the window was measured
	warmupS        float64
	start, end     time.Time
	expected       int64 // scrapes per target in the window
	cpuS, loadCPUS float64
	rssMB, hwmMB   float64
	load           loadStats
	loadSamples    int64 // bodies served in the window x series
	srv            upStats
	serverScraped  int64 // sum(sum_over_time(scrape_samples_scraped[W]))
	lastScraped    int64 // sum(scrape_samples_scraped) at the end
	stored         int64 // sum over names of sum(count_over_time(name[W]))
	storedSeries   int64 // sum over names of count(count_over_time(name[W]))
	intervalOK     bool
	checkNotes     []string
	queryDurationS float64
}

func (b *bench) fail(format string, a ...any) {
	msg := fmt.Sprintf(format, a...)
	logf("ERROR: %s", msg)
	b.failures = append(b.failures, msg)
}

// run measures one server: start, warm-up, window, checks, stop.
func (b *bench) run(t *tool) *run {
	r := &run{}
	iv := *flagInterval
	b.ts.reset()
	logf("== %s: starting (%s)", t.name, t.version)
	s, err := start(t, b.scratch, b.cfg)
	if err != nil {
		b.fail("%s: %v", t.name, err)
		return r
	}
	defer os.RemoveAll(s.dir)
	defer s.stop() // before the data dir goes
	t0 := time.Now()
	if err := b.warmUp(s); err != nil {
		b.fail("%s: warm-up: %v", t.name, err)
		return r
	}
	r.warmupS = time.Since(t0).Seconds()
	r.start = b.ts.nextAtPhase(time.Now(), time.Second, b.ts.quietPhase())
	r.end = r.start.Add(*flagDuration)
	r.expected = int64(*flagDuration / iv)
	b.ts.win.Store(&window{start: r.start, end: r.end})
	logf("%s: warm-up done in %.1fs; window %s .. %s", t.name, r.warmupS, r.start.Format("15:04:05.000"), r.end.Format("15:04:05.000"))
	if err := sleepUntil(s, r.start); err != nil {
		b.fail("%s: %v", t.name, err)
		return r
	}
	cpu0, err := s.cpuS()
	if err != nil {
		b.fail("%s: %v", t.name, err)
		return r
	}
	self0 := selfCPUS()
	if err := sleepUntil(s, r.end); err != nil {
		b.fail("%s: %v", t.name, err)
		return r
	}
	cpu1, err := s.cpuS()
	if err == nil {
		r.rssMB, r.hwmMB, err = s.memMB()
	}
	if err != nil {
		b.fail("%s: %v", t.name, err)
		return r
	}
	r.cpuS, r.loadCPUS = cpu1-cpu0, selfCPUS()-self0
	r.ok = true
	// Scrapes inside the window have finished by now: let the load's
	// last ones be counted and the server append them.
	time.Sleep(2 * time.Second)
	r.load = b.ts.stats(r.expected)
	r.loadSamples = r.load.bodies * int64(*flagSeries)
	logf("%s: window: %d bodies served (%d samples), server CPU %.2fs, VmRSS %.0f MB, VmHWM %.0f MB, load CPU %.2fs",
		t.name, r.load.bodies, r.loadSamples, r.cpuS, r.rssMB, r.hwmMB, r.loadCPUS)
	q0 := time.Now()
	if b.checkServer(t, s, r) {
		b.judge(t, r)
	}
	r.queryDurationS = time.Since(q0).Seconds()
	logf("== %s: stopping", t.name)
	return r
}

// warmUp waits until every target was scraped, then two more intervals.
func (b *bench) warmUp(s *server) error {
	iv := *flagInterval
	deadline := time.Now().Add(iv + 2*time.Minute)
	for {
		n, last := b.ts.firstScrapes()
		if n == len(b.ts.targets) {
			return sleepUntil(s, last.Add(2*iv))
		}
		if err := s.exited(); err != nil {
			return err
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("only %d of %d targets scraped %v after the start", n, len(b.ts.targets), iv+2*time.Minute)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// sleepUntil sleeps until at, checking every second that the server runs.
func sleepUntil(s *server, at time.Time) error {
	for {
		if err := s.exited(); err != nil {
			return err
		}
		d := time.Until(at)
		if d <= 0 {
			return nil
		}
		time.Sleep(min(d, time.Second))
	}
}

// checkServer reads the window back from the server: its up samples, its
// scrape_samples_scraped and the samples it stored under every name;
// false (a failure recorded) when a query fails.
func (b *bench) checkServer(t *tool, s *server, r *run) bool {
	rng := promDuration(*flagDuration)
	up, err := s.query("up["+rng+"]", r.end)
	if err != nil {
		b.fail("%s: %v", t.name, err)
		return false
	}
	r.srv, err = upAccuracy(up, b.ts.addrs(), r.expected, *flagInterval)
	if err != nil {
		b.fail("%s: up[%s]: %v", t.name, rng, err)
		return false
	}
	for _, q := range []struct {
		promql string
		dst    *int64
	}{
		{"sum(sum_over_time(scrape_samples_scraped[" + rng + "]))", &r.serverScraped},
		{"sum(scrape_samples_scraped)", &r.lastScraped},
	} {
		res, err := s.query(q.promql, r.end)
		if err != nil {
			b.fail("%s: %v", t.name, err)
			return false
		}
		*q.dst = int64(scalarOf(res))
	}
	// One metric name at a time: count_over_time drops the name, and the
	// series of two names with the same labels would collide.
	for _, name := range b.exp.names {
		res, err := s.query("sum(count_over_time("+name+"["+rng+"]))", r.end)
		if err != nil {
			b.fail("%s: %v", t.name, err)
			return false
		}
		r.stored += int64(scalarOf(res))
		res, err = s.query("count(count_over_time("+name+"["+rng+"]))", r.end)
		if err != nil {
			b.fail("%s: %v", t.name, err)
			return false
		}
		r.storedSeries += int64(scalarOf(res))
	}
	logf("%s: server: %d samples scraped (sum_over_time(scrape_samples_scraped)), %d stored in %d series; up: %d scrapes of %d expected, %d failed, %d missed, max |gap - interval| %.1f ms",
		t.name, r.serverScraped, r.stored, r.storedSeries, r.srv.gaps.scrapes, r.expected*int64(len(b.ts.targets)), r.srv.failed, r.srv.gaps.missed, r.srv.gaps.maxDev())
	return true
}

// judge records the run's failures.
func (b *bench) judge(t *tool, r *run) {
	want := int64(*flagTargets) * int64(*flagSeries)
	srv, g := r.srv, r.srv.gaps
	r.intervalOK = g.missed == 0 && g.late == 0 && srv.failed == 0 && srv.unknown == 0 && g.scrapes > 0
	if !r.intervalOK {
		b.fail("%s: did not scrape every target every interval in the window: %d scrapes of %d expected (%d targets short, %d not seen), %d failed (up=0), %d gaps over 1.5 intervals, %d unexpected instances",
			t.name, g.scrapes, r.expected*int64(*flagTargets), g.missedTargets, srv.absent, srv.failed, g.late, srv.unknown)
	}
	if r.load.gaps.late > 0 {
		b.fail("%s: the load saw %d gaps over 1.5 intervals between a target's scrapes", t.name, r.load.gaps.late)
	}
	if r.load.errors > 0 {
		b.fail("%s: the load failed to render %d bodies", t.name, r.load.errors)
	}
	if r.stored < r.serverScraped || r.serverScraped == 0 {
		b.fail("%s: stored %d samples in the window, scraped %d (sum_over_time(scrape_samples_scraped))", t.name, r.stored, r.serverScraped)
	}
	if r.lastScraped != want {
		r.checkNotes = append(r.checkNotes, fmt.Sprintf("sum(scrape_samples_scraped) %d, want %d", r.lastScraped, want))
	}
	if r.serverScraped != r.loadSamples {
		r.checkNotes = append(r.checkNotes, fmt.Sprintf("server counted %+d samples against the load (scrapes at the window's edges)", r.serverScraped-r.loadSamples))
	}
	if r.storedSeries != want {
		r.checkNotes = append(r.checkNotes, fmt.Sprintf("%d series stored, want %d", r.storedSeries, want))
	}
}

func (b *bench) report(cmdline string, took time.Duration) {
	iv, w := *flagInterval, *flagDuration
	fmt.Println()
	title := fmt.Sprintf("## Scrape: %d targets x %d series, every %v, window %v", *flagTargets, *flagSeries, iv, w)
	if *flagQuick {
		title += " (--quick: a smoke run, not a measurement)"
	}
	fmt.Println(title)
	fmt.Println()
	fmt.Printf("Versions: %s", strings.Join(b.versions(), "; "))
	fmt.Println(".")
	fmt.Printf("Machine: %d CPUs (nproc), %.1f GiB RAM, %s/%s, %s; total %s.\n", runtime.NumCPU(), memTotalGiB(), runtime.GOOS, runtime.GOARCH, time.Now().UTC().Format("2006-01-02"), took.Round(time.Second))
	fmt.Printf("Command: `%s`\n", cmdline)
	fmt.Println()
	fmt.Println("| tool | samples scraped (load) | samples scraped (server) | samples stored | series stored | server CPU s | CPU s per 1M samples | Ferrite / Prometheus CPU | VmRSS end MB | VmHWM MB | Ferrite / Prometheus RSS | load CPU s |")
	fmt.Println("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
	prom, havePromRun := b.runs["prometheus"]
	havePromRun = havePromRun && prom.ok
	for _, t := range b.tools {
		r := b.runs[t.name]
		if r == nil || !r.ok {
			fmt.Printf("| %s | not measured | | | | | | | | | | |\n", t.title)
			continue
		}
		rc, rr := "-", "-"
		if havePromRun && t.name != "prometheus" {
			rc, rr = ratio(cpuPerM(r), cpuPerM(prom)), ratio(r.rssMB, prom.rssMB)
		}
		fmt.Printf("| %s | %d | %d | %d | %d | %.2f | %.3f | %s | %.0f | %.0f | %s | %.2f |\n", t.title, r.loadSamples, r.serverScraped, r.stored, r.storedSeries,
			r.cpuS, cpuPerM(r), rc, r.rssMB, r.hwmMB, rr, r.loadCPUS)
	}
	fmt.Println()
	fmt.Println("### Scrape interval over the window")
	fmt.Println()
	fmt.Println("| tool | times of | scrapes expected | scrapes seen | missed | gaps > 1.5 intervals | failed (up=0) | p99 abs(gap - interval) ms | max abs(gap - interval) ms | max drift ms per interval | every target every interval |")
	fmt.Println("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---|")
	for _, t := range b.tools {
		r := b.runs[t.name]
		if r == nil || !r.ok {
			continue
		}
		exp := r.expected * int64(*flagTargets)
		g := r.srv.gaps
		fmt.Printf("| %s | up samples (server) | %d | %d | %d | %d | %d | %.1f | %.1f | %.3f | %s |\n", t.title, exp, g.scrapes, g.missed, g.late, r.srv.failed,
			g.p99Dev(), g.maxDev(), g.maxDrift, map[bool]string{true: "yes", false: "NO"}[r.intervalOK])
		g = r.load.gaps
		fmt.Printf("| %s | requests (load) | %d | %d | %d | %d | - | %.1f | %.1f | %.3f | %s |\n", t.title, exp, g.scrapes, g.missed, g.late,
			g.p99Dev(), g.maxDev(), g.maxDrift, map[bool]string{true: "yes", false: "NO"}[g.late == 0 && g.missed == 0])
	}
	if havePromRun {
		if f, ok := b.runs["ferrite"]; ok && f.ok {
			fmt.Println()
			cpuR, rssR := cpuPerM(f)/math.Max(cpuPerM(prom), 1e-9), f.rssMB/math.Max(prom.rssMB, 1e-9)
			fmt.Printf("Target (at most a third of Prometheus): CPU per sample %.2fx (%s), RSS %.2fx (%s), interval kept: %s.\n",
				cpuR, meets(cpuR), rssR, meets(rssR), map[bool]string{true: "yes", false: "no"}[f.intervalOK && f.load.gaps.late == 0])
		}
	}
	fmt.Println()
	fmt.Println("### Raw runs")
	fmt.Println()
	for _, t := range b.tools {
		r := b.runs[t.name]
		if r == nil || !r.ok {
			continue
		}
		gz := "none"
		if r.load.bodies > 0 {
			gz = fmt.Sprintf("%d of %d", r.load.gzipped, r.load.bodies)
		}
		fmt.Printf("- %s: warm-up %.1fs; window %s .. %s (%d intervals); bodies gzip-compressed: %s, %.1f KiB sent per body on average; sum(scrape_samples_scraped) at the end %d; server CPU %.2fs, load CPU %.2fs; check queries %.1fs",
			t.name, r.warmupS, r.start.UTC().Format("15:04:05.000"), r.end.UTC().Format("15:04:05.000"), r.expected, gz, float64(r.load.bytes)/math.Max(float64(r.load.bodies), 1)/1024,
			r.lastScraped, r.cpuS, r.loadCPUS, r.queryDurationS)
		if len(r.checkNotes) > 0 {
			fmt.Printf("; NOTE: %s", strings.Join(r.checkNotes, "; "))
		}
		fmt.Println()
	}
	fmt.Println()
	plain := b.exp.render(0, 1, time.Now())
	fmt.Printf("Targets: %d, each on its own 127.0.0.1 port (instance = host:port, no relabeling), served by the load program in the benchmark process; "+
		"%d series per target (node_exporter-like: %s), text format 0.0.4 (%s), %.1f KiB per body, gzip-compressed when the scraper asks (both do by default); "+
		"counters grow every scrape; %d distinct bodies per round (target i serves variant i mod %d), each rendered and compressed once. "+
		"One prometheus.yml for both (job node, static_configs, scrape_interval %s), each server alone on a fresh data dir.\n",
		*flagTargets, *flagSeries, b.exp.shape, contentType, float64(len(plain))/1024, *flagVariants, *flagVariants, promDuration(iv))
	fmt.Println("Window: a whole number of intervals after the warm-up (every target scraped once, then two intervals), its edges in the longest gap between the targets' scrape phases. " +
		"samples scraped (load): bodies served in the window x series per target; (server): sum(sum_over_time(scrape_samples_scraped[window])); stored: the sum over every metric name of sum(count_over_time(name[window])), series stored likewise with count. " +
		"server CPU s: user+sys of the server process over the window (/proc/PID/stat); CPU s per 1M samples = that / (samples scraped (load) / 1e6). " +
		"VmRSS at the end of the window and VmHWM (peak since start): /proc/PID/status, MB = 2^20 bytes. load CPU s: the benchmark process (load program) over the window, not charged to the servers. " +
		"Interval: the gaps between consecutive scrapes of each target in the window, from the timestamps of its up samples (both servers snap a timestamp within 2 ms of the interval grid to it) and from the arrivals of its scrape requests at the load; " +
		"missed: scrapes short of one per interval and target; drift: |the interval fitted to a target's scrape times (least squares) - interval|, the worst target.")
	if *flagQuick {
		fmt.Println("This was a --quick smoke run on a shared machine: take the full run (scripts/bench-scrape) on a quiet machine for the numbers.")
	}
}

func (b *bench) versions() []string {
	var vs []string
	for _, t := range b.tools {
		v := t.version
		if t.name == "ferrite" && *flagRev != "" {
			v += " (git " + *flagRev + ")"
		}
		vs = append(vs, v)
	}
	return vs
}

func meets(r float64) string {
	if r <= 1.0/3 {
		return "met"
	}
	return "not met"
}

func cpuPerM(r *run) float64 {
	if r.loadSamples == 0 {
		return 0
	}
	return r.cpuS / (float64(r.loadSamples) / 1e6)
}

func ratio(a, b float64) string {
	if b == 0 || a == 0 {
		return "-"
	}
	return fmt.Sprintf("%.2fx", a/b)
}

func version(t *tool) string {
	out, err := exec.Command(t.bin, "--version").Output()
	if err != nil {
		return t.name + " (--version failed: " + err.Error() + ")"
	}
	return strings.TrimSpace(strings.SplitN(strings.TrimSpace(string(out)), "\n", 2)[0])
}

// selfCPUS is this process' user+system CPU seconds so far.
func selfCPUS() float64 {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return float64(ru.Utime.Nano()+ru.Stime.Nano()) / 1e9
}

func memTotalGiB() float64 {
	b, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return 0
	}
	for _, l := range strings.Split(string(b), "\n") {
		f := strings.Fields(l)
		if len(f) >= 2 && f[0] == "MemTotal:" {
			var kb float64
			if _, err := fmt.Sscan(f[1], &kb); err != nil {
				return 0
			}
			return kb / 1024 / 1024
		}
	}
	return 0
}

func logf(format string, a ...any) {
	fmt.Fprintf(os.Stderr, "[%s] %s\n", time.Now().Format("15:04:05"), fmt.Sprintf(format, a...))
}

func fatalf(format string, a ...any) {
	fmt.Fprintf(os.Stderr, "scrapebench: "+format+"\n", a...)
	os.Exit(1)
}
