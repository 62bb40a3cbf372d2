// Command serverbench compares Ferrite's server with Prometheus v3.16.0 and
// single-node VictoriaMetrics on loopback (issue 4). Every tool runs alone on
// a fresh data dir, one after another, fed by the remote write load of
// internal/rw (the same code as cmd/rwload, run in this process):
//
//   - ingest: -ingest-series active series, pushed as fast as the server
//     accepts for -ingest-duration (after -warmup rounds of series creation);
//     sustained samples/s accepted, request latencies, server CPU.
//
//   - memory: -mem-series active series for -mem-rounds simulated scrape
//     rounds (15 s apart in sample time); VmRSS and VmHWM of the server
//     process afterwards, before any query.
//
//   - query: -query-days of -query-targets x 50 series in simulated time,
//     then each query -query-runs times through the HTTP API (median, p90).
//
//   - hist-ingest (not in the default set): as ingest, but every series
//     carries integer native histograms (prompb.Histogram, exponential
//     schema 3, 16 buckets in 2 spans, counter-like) instead of float
//     samples, -hist-series series; histogram samples/s, server CPU, VmRSS
//     and VmHWM afterwards. Prometheus and Ferrite only: VictoriaMetrics
//     (v1.151.0) converts native histograms received by remote write into
//     classic _count/_sum/_bucket{vmrange} float series and stores no native
//     histograms, so it is left out of this scenario.
//
// After every ingest it checks that the server holds exactly the series and
// samples the load had accepted (count(count_over_time(...)) and
// sum(count_over_time(...)) over the whole range) and exits non-zero if a tool
// lost data or a query's answer has the wrong size.
package main

import (
	"context"
	"flag"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"syscall"
	"time"

	"ferrite.dev/bench/internal/rw"
)

var (
	flagFerrite  = flag.String("ferrite", "", "ferrite binary")
	flagProm     = flag.String("prometheus", "", "prometheus v3.16.0 binary")
	flagVM       = flag.String("victoriametrics", "", "victoria-metrics binary")
	flagVMVer    = flag.String("vm-version", "", "VictoriaMetrics module version (for the report)")
	flagTools    = flag.String("tools", "prometheus,ferrite,victoriametrics", "tools to run, in this order")
	flagScen     = flag.String("scenarios", "ingest,memory,query", "scenarios to run: ingest, memory, query, hist-ingest (not in the default set)")
	flagData     = flag.String("data", "bench-data/server", "scratch directory (data dirs, logs)")
	flagQuick    = flag.Bool("quick", false, "small sizes (smoke test, under 3 minutes)")
	flagConc     = flag.Int("concurrency", 4, "remote write shards")
	flagBatch    = flag.Int("batch", 2000, "samples per remote write request")
	flagIngSer   = flag.Int("ingest-series", 0, "ingest: active series (default 200000, quick 10000)")
	flagIngDur   = flag.Duration("ingest-duration", 0, "ingest: measured wall time (default 60s, quick 8s)")
	flagHistSer  = flag.Int("hist-series", 0, "hist-ingest: active native histogram series (default 50000, quick 2000)")
	flagWarmup   = flag.Int64("warmup", 2, "ingest: rounds excluded from the rate (series creation)")
	flagPreMB    = flag.Int64("preencode-mb", 3072, "ingest, hist-ingest: encode the load once before the runs, at most this many MiB compressed (0: encode while sending)")
	flagMemSer   = flag.Int("mem-series", 0, "memory: active series (default 1000000, quick 100000)")
	flagMemRnd   = flag.Int64("mem-rounds", 0, "memory: scrape rounds (default 4, quick 3)")
	flagQTargets = flag.Int("query-targets", 0, "query: simulated targets of 50 series (default 20, quick 2)")
	flagQDays    = flag.Int("query-days", 7, "query: simulated days of history")
	flagQRuns    = flag.Int("query-runs", 0, "query: runs per query (default 10, quick 5)")
	flagQStep    = flag.Duration("query-step", 5*time.Minute, "query: step of the dashboard range query")
	flagCmdline  = flag.String("cmdline", "", "command line to print with the results")
)

const intervalMs = 15000

func main() {
	flag.Parse()
	def := func(p *int, full, quick int) {
		if *p == 0 {
			*p = full
			if *flagQuick {
				*p = quick
			}
		}
	}
	def(flagIngSer, 200000, 10000)
	def(flagHistSer, 50000, 2000)
	def(flagMemSer, 1000000, 100000)
	def(flagQTargets, 20, 2)
	def(flagQRuns, 10, 5)
	if *flagIngDur == 0 {
		*flagIngDur = 60 * time.Second
		if *flagQuick {
			*flagIngDur = 8 * time.Second
		}
	}
	if *flagMemRnd == 0 {
		*flagMemRnd = 4
		if *flagQuick {
			*flagMemRnd = 3
		}
	}
	cmdline := *flagCmdline
	if cmdline == "" {
		cmdline = strings.Join(os.Args, " ")
	}

	all := map[string]*tool{
		"prometheus":      {name: "prometheus", title: "Prometheus", bin: *flagProm},
		"ferrite":         {name: "ferrite", title: "Ferrite", bin: *flagFerrite},
		"victoriametrics": {name: "victoriametrics", title: "VictoriaMetrics", bin: *flagVM},
	}
	var tools []*tool
	for _, n := range strings.Split(*flagTools, ",") {
		t, ok := all[strings.TrimSpace(n)]
		if !ok {
			fatalf("unknown tool %q", n)
		}
		if t.bin == "" {
			fatalf("no binary for %s (scripts/bench-server builds and passes them)", t.name)
		}
		t.bin = abs(t.bin)
		t.version = version(t)
		tools = append(tools, t)
	}
	scratch := abs(*flagData)
	must(os.MkdirAll(scratch, 0o755))

	memNote := ""
	if hasScenario("memory") {
		// Budget 6 KiB per series (Prometheus-like head) plus the load
		// generator; scale down when the machine cannot hold it.
		avail := memAvailableMB()
		need := float64(*flagMemSer) * 6 / 1024 * 1.5
		if avail > 0 && need > avail {
			old := *flagMemSer
			*flagMemSer = int(avail/1.5*1024/6) / rw.SeriesPerTarget * rw.SeriesPerTarget
			memNote = fmt.Sprintf("memory scenario scaled down from %d to %d series: %.0f MB available, ~%.0f MB needed", old, *flagMemSer, avail, need)
			logf("NOTE: %s", memNote)
		}
	}

	b := &bench{tools: tools, scratch: scratch, encoded: map[string]string{}}
	started := time.Now()
	if hasScenario("ingest") {
		b.ingestR = b.ingest("ingest", *flagIngSer, false)
	}
	if hasScenario("hist-ingest") {
		b.histR = b.ingest("hist-ingest", *flagHistSer, true)
	}
	if hasScenario("memory") {
		b.memory()
	}
	if hasScenario("query") {
		b.queries()
	}
	os.RemoveAll(scratch)
	b.report(cmdline, memNote, time.Since(started))
	if len(b.failures) > 0 {
		fmt.Println()
		for _, f := range b.failures {
			fmt.Println("FAILED:", f)
		}
		os.Exit(1)
	}
}

type bench struct {
	tools    []*tool
	scratch  string
	ingestR  map[string]ingestRun
	histR    map[string]ingestRun // hist-ingest
	encoded  map[string]string    // scenario -> how its load was pre-encoded (for the report)
	memR     map[string]memRun
	queryR   map[string]map[string]queryRun // tool -> query name -> run
	qList    []queryDef
	checks   []check
	failures []string
	qSeries  int
	qRounds  int64
}

type ingestRun struct {
	res            rw.Result
	cpuS           float64 // server CPU over the whole load
	loadCPUS       float64 // load generator (this process) CPU over the whole load
	rssMB, hwmMB   float64
	verifySeries   int64
	verifySamples  int64
	verifyDuration time.Duration
}

type memRun struct {
	res          rw.Result
	ingestS      float64
	rssMB, hwmMB float64
	idleS        float64
}

type queryDef struct {
	name, promql string
	at           float64 // instant queries
	start, end   float64 // range queries
	step         float64
	wantSeries   int
	wantPoints   int // 0: not checked
}

type queryRun struct {
	lats    []time.Duration
	series  int
	points  int
	bytes   int
	loadS   float64
	idleS   float64
	samples int64
}

type check struct {
	scenario, tool          string
	wantSeries, gotSeries   int64
	wantSamples, gotSamples int64
	ok                      bool
	note                    string
}

// alignedStart is a round-0 timestamp: 15 s aligned, plus 7 s, so that no
// sample lies on a whole-minute query time; ends at least an hour before now
// (VictoriaMetrics treats the newest 30 s specially).
func alignedStart(rounds int64) int64 {
	t := time.Now().Add(-time.Hour).UnixMilli() - rounds*intervalMs
	return t - t%60000 + 7000
}

// withSender completes cfg with the sender's settings.
func withSender(cfg rw.Config) rw.Config {
	cfg.Concurrency = *flagConc
	cfg.BatchSize = *flagBatch
	cfg.IntervalMs = intervalMs
	cfg.Log = os.Stderr
	return cfg
}

// preencode encodes an ingest scenario's load once for every tool (nil
// with -preencode-mb 0: each run encodes while it sends).
func (b *bench) preencode(scenario string, cfg rw.Config) *rw.Load {
	if *flagPreMB <= 0 {
		return nil
	}
	load, err := rw.Encode(withSender(cfg), *flagPreMB<<20)
	must(err)
	b.encoded[scenario] = fmt.Sprintf("%d rounds of %d series (%d samples), %.0f MiB of snappy-compressed requests, encoded in %.1fs before the runs",
		load.Rounds(), cfg.Series, load.Rounds()*int64(cfg.Series), float64(load.Bytes())/(1<<20), load.EncodeSeconds())
	logf("== %s: load pre-encoded: %s", scenario, b.encoded[scenario])
	return load
}

// load sends cfg's load to s: the pre-encoded load when there is one,
// else generated while sent.
func (b *bench) load(s *server, cfg rw.Config, pre *rw.Load) rw.Result {
	cfg = withSender(cfg)
	cfg.URL = "http://" + s.addr + "/api/v1/write"
	var res rw.Result
	var err error
	if pre != nil {
		res, err = pre.Run(context.Background(), cfg)
	} else {
		res, err = rw.Run(context.Background(), cfg)
	}
	must(err)
	if res.ErrorRequests > 0 {
		b.fail("%s: %d of %d remote write requests failed (%d samples), first: %s", s.tool.name, res.ErrorRequests, res.Requests, res.ErrorSamples, res.FirstError)
	}
	return res
}

// hasScenario tells whether -scenarios lists name.
func hasScenario(name string) bool {
	for _, f := range strings.Split(*flagScen, ",") {
		if strings.TrimSpace(f) == name {
			return true
		}
	}
	return false
}

// verify checks that the server holds exactly what the load got accepted
// (for histograms: count_over_time counts histogram samples in both
// Prometheus and Ferrite).
func (b *bench) verify(scenario string, s *server, res rw.Result, wantSeries int64) (int64, int64, time.Duration) {
	names := rw.MetricNames()
	if res.Histograms {
		names = rw.HistMetricNames()
	}
	s.flush()
	t0 := time.Now()
	at := float64(res.MaxTs+1000) / 1000
	win := fmt.Sprintf("%ds", (res.MaxTs-res.MinTs)/1000+3600)
	var gotSer, gotSam int64
	var err error
	for {
		// One metric name at a time: count_over_time drops the name, and
		// Prometheus refuses {__name__=~".+"} there (same labelset twice).
		gotSer, gotSam, err = 0, 0, nil
		for _, name := range names {
			var r apiResult
			r, _, _, err = s.query("count(count_over_time("+name+"["+win+"]))", at, 0, 0, 0)
			if err != nil {
				break
			}
			gotSer += int64(scalarOf(r))
			r, _, _, err = s.query("sum(count_over_time("+name+"["+win+"]))", at, 0, 0, 0)
			if err != nil {
				break
			}
			gotSam += int64(scalarOf(r))
		}
		if err == nil && gotSer == wantSeries && gotSam == res.AcceptedSamples {
			break
		}
		if time.Since(t0) > 30*time.Second {
			break
		}
		time.Sleep(time.Second)
		s.flush()
	}
	c := check{scenario: scenario, tool: s.tool.name, wantSeries: wantSeries, gotSeries: gotSer,
		wantSamples: res.AcceptedSamples, gotSamples: gotSam}
	c.ok = err == nil && gotSer == wantSeries && gotSam == res.AcceptedSamples
	if err != nil {
		c.note = err.Error()
	}
	b.checks = append(b.checks, c)
	logf("%s, %s: verify: series %d (want %d), samples %d (want %d) in %.1fs%s", scenario, s.tool.name, gotSer, wantSeries, gotSam, res.AcceptedSamples, time.Since(t0).Seconds(), map[bool]string{true: "", false: " MISMATCH " + c.note}[c.ok])
	if !c.ok {
		b.fail("%s, %s: holds %d series / %d samples, the load had %d series / %d samples accepted %s", scenario, s.tool.name, gotSer, gotSam, wantSeries, res.AcceptedSamples, c.note)
	}
	return gotSer, gotSam, time.Since(t0)
}

func (b *bench) fail(format string, a ...any) {
	msg := fmt.Sprintf(format, a...)
	logf("ERROR: %s", msg)
	b.failures = append(b.failures, msg)
}

// ingest runs the sustained ingest of series active series (native
// histograms with hist) on every tool (VictoriaMetrics left out for
// histograms, see the package doc).
func (b *bench) ingest(scenario string, series int, hist bool) map[string]ingestRun {
	runs := map[string]ingestRun{}
	// Sample time: up to 2 days of rounds before now-1h.
	maxRounds := int64(48 * 3600 * 1000 / intervalMs)
	cfg := rw.Config{Series: series, StartMs: alignedStart(maxRounds), Rounds: maxRounds, Warmup: *flagWarmup, Histograms: hist}
	load := b.preencode(scenario, cfg)
	for _, t := range b.tools {
		if hist && t.name == "victoriametrics" {
			logf("== %s, %s: skipped (no native histogram storage: converted into classic float series)", scenario, t.name)
			continue
		}
		logf("== %s, %s: %d series, %v after %d warm-up rounds", scenario, t.name, series, *flagIngDur, *flagWarmup)
		s := start(t, b.scratch)
		cfg.Duration = *flagIngDur
		// The duration counts from the end of the warm-up rounds.
		cpu0, self0 := s.cpuS(), selfCPUS()
		res := b.load(s, cfg, load)
		cpu := s.cpuS() - cpu0
		selfCPU := selfCPUS() - self0
		rss, hwm := s.memMB()
		r := ingestRun{res: res, cpuS: cpu, loadCPUS: selfCPU, rssMB: rss, hwmMB: hwm}
		logf("%s, %s: %.0f samples/s over %.1fs (%d samples accepted, %d rounds, %d failed requests), p50 %.1f ms, p99 %.1f ms, server CPU %.1fs, RSS %.0f MB, HWM %.0f MB",
			scenario, t.name, res.SamplesPerS, res.MeasuredS, res.AcceptedSamples, res.MaxRound, res.ErrorRequests, res.LatP50Ms, res.LatP99Ms, cpu, rss, hwm)
		if res.MinRound < *flagWarmup {
			b.fail("%s, %s: the warm-up (%d rounds of %d series) did not finish within the time limit", scenario, t.name, *flagWarmup, series)
		}
		wantSer := int64(series)
		if res.AcceptedSamples < wantSer {
			wantSer = res.AcceptedSamples
		}
		r.verifySeries, r.verifySamples, r.verifyDuration = b.verify(scenario, s, res, wantSer)
		s.stop()
		runs[t.name] = r
	}
	return runs
}

func (b *bench) memory() {
	b.memR = map[string]memRun{}
	for _, t := range b.tools {
		logf("== memory, %s: %d series x %d rounds", t.name, *flagMemSer, *flagMemRnd)
		s := start(t, b.scratch)
		cfg := rw.Config{Series: *flagMemSer, StartMs: alignedStart(*flagMemRnd), Rounds: *flagMemRnd}
		t0 := time.Now()
		res := b.load(s, cfg, nil)
		ingS := time.Since(t0).Seconds()
		s.flush()
		idle := s.waitIdle(30 * time.Second)
		rss, hwm := s.memMB()
		logf("memory, %s: ingested in %.1fs, idle after %.1fs: VmRSS %.0f MB, VmHWM %.0f MB", t.name, ingS, idle.Seconds(), rss, hwm)
		b.memR[t.name] = memRun{res: res, ingestS: ingS, rssMB: rss, hwmMB: hwm, idleS: idle.Seconds()}
		b.verify("memory", s, res, int64(*flagMemSer))
		s.stop()
	}
}

func (b *bench) queries() {
	b.queryR = map[string]map[string]queryRun{}
	series := *flagQTargets * rw.SeriesPerTarget
	rounds := int64(*flagQDays) * 86400 * 1000 / intervalMs
	b.qSeries, b.qRounds = series, rounds
	startMs := alignedStart(rounds)
	endMs := startMs + (rounds-1)*intervalMs
	// Query times on whole minutes (samples are at :07, :22, :37, :52).
	endQ := float64(endMs-endMs%60000+60000) / 1000
	startQ := float64(startMs-startMs%60000+60000) / 1000
	mid := float64((startMs+endMs)/2-(startMs+endMs)/2%60000) / 1000
	jobs := min(*flagQTargets, len(rw.Jobs))
	b.qList = []queryDef{
		{name: "one series, whole range (raw samples)", promql: fmt.Sprintf(`node_load1{instance=%q}[%dd]`, rw.Instance(0), *flagQDays+1), at: endQ, wantSeries: 1, wantPoints: int(rounds)},
		{name: "all series at one instant (mid-range)", promql: `{__name__=~"node_.+"}`, at: mid, wantSeries: series, wantPoints: series},
		{name: fmt.Sprintf("dashboard: sum by (job) (rate(cpu[5m])), %dd, step %v", *flagQDays, *flagQStep), promql: `sum by (job) (rate(node_cpu_seconds_total[5m]))`,
			start: startQ, end: endQ, step: flagQStep.Seconds(), wantSeries: jobs},
	}
	for _, t := range b.tools {
		logf("== query, %s: loading %d series x %d days (%d samples)", t.name, series, *flagQDays, int64(series)*rounds)
		s := start(t, b.scratch)
		t0 := time.Now()
		res := b.load(s, rw.Config{Series: series, StartMs: startMs, Rounds: rounds}, nil)
		loadS := time.Since(t0).Seconds()
		b.verify("query", s, res, int64(series))
		idle := s.waitIdle(2 * time.Minute)
		logf("query, %s: loaded in %.1fs (%.0f samples/s), idle after %.1fs", t.name, loadS, float64(res.AcceptedSamples)/loadS, idle.Seconds())
		b.queryR[t.name] = map[string]queryRun{}
		for _, q := range b.qList {
			qr := queryRun{loadS: loadS, idleS: idle.Seconds(), samples: res.AcceptedSamples}
			for i := 0; i <= *flagQRuns; i++ { // run 0 warms caches, not counted
				r, el, n, err := s.query(q.promql, q.at, q.start, q.end, q.step)
				if err != nil {
					b.fail("query %q on %s: %v", q.promql, t.name, err)
					break
				}
				if i == 0 {
					qr.series, qr.points, qr.bytes = len(r.Data.Result), points(r), n
					if qr.series != q.wantSeries || (q.wantPoints > 0 && qr.points != q.wantPoints) {
						b.fail("query %q on %s: %d series / %d points, want %d / %d", q.promql, t.name, qr.series, qr.points, q.wantSeries, q.wantPoints)
					}
					continue
				}
				qr.lats = append(qr.lats, el)
			}
			logf("query, %s: %s: median %.1f ms (%d series, %d points)", t.name, q.name, ms(pct(qr.lats, 0.5)), qr.series, qr.points)
			b.queryR[t.name][q.name] = qr
		}
		s.stop()
	}
}

func (b *bench) report(cmdline, memNote string, took time.Duration) {
	var others []*tool
	var prom *tool
	for _, t := range b.tools {
		if t.name == "prometheus" {
			prom = t
		} else {
			others = append(others, t)
		}
	}
	fmt.Println()
	fmt.Println("## Servers on loopback: Prometheus vs Ferrite vs VictoriaMetrics")
	fmt.Println()
	for _, t := range b.tools {
		fmt.Printf("- %s: `%s` (%s)\n", t.title, t.version, t.bin)
	}
	ratioHdr := func(what string) string {
		h := ""
		for _, t := range others {
			if prom != nil {
				h += fmt.Sprintf(" %s %s |", t.title, what)
			}
		}
		return h
	}
	if b.ingestR != nil {
		fmt.Println()
		fmt.Printf("### Sustained ingest: %d active series, %v measured after %d warm-up rounds, %d shards x %d samples/request\n\n", *flagIngSer, *flagIngDur, *flagWarmup, *flagConc, *flagBatch)
		b.loadNote("ingest")
		b.ingestTable(b.ingestR, false)
	}
	if b.histR != nil {
		fmt.Println()
		fmt.Printf("### Sustained native histogram ingest: %d active series of integer native histograms (schema 3, 16 buckets in 2 spans), %v measured after %d warm-up rounds, %d shards x %d histograms/request\n\n", *flagHistSer, *flagIngDur, *flagWarmup, *flagConc, *flagBatch)
		fmt.Printf("VictoriaMetrics is left out: v1.151.0 converts native histograms received by remote write into classic `_count`/`_sum`/`_bucket{vmrange}` float series and stores no native histograms.\n\n")
		b.loadNote("hist-ingest")
		b.ingestTable(b.histR, true)
	}
	if b.memR != nil {
		fmt.Println()
		fmt.Printf("### Memory: %d active series x %d rounds (15 s apart), RSS after ingest, before any query\n\n", *flagMemSer, *flagMemRnd)
		if memNote != "" {
			fmt.Printf("NOTE: %s.\n\n", memNote)
		}
		fmt.Printf("| tool | ingest s | VmRSS MB | VmHWM MB | RSS bytes/series | Prometheus RSS / tool RSS | Prometheus HWM / tool HWM |\n")
		fmt.Printf("|---|---:|---:|---:|---:|---:|---:|\n")
		for _, t := range b.tools {
			r, ok := b.memR[t.name]
			if !ok {
				continue
			}
			vr, vh := "-", "-"
			if p, ok := b.memR["prometheus"]; ok && t.name != "prometheus" {
				vr, vh = ratio(p.rssMB, r.rssMB), ratio(p.hwmMB, r.hwmMB)
			}
			fmt.Printf("| %s | %.1f | %.0f | %.0f | %.0f | %s | %s |\n", t.title, r.ingestS, r.rssMB, r.hwmMB, r.rssMB*(1<<20)/float64(*flagMemSer), vr, vh)
		}
	}
	if b.queryR != nil {
		fmt.Println()
		fmt.Printf("### Query latency: %d series x %d days (%d samples each), %d runs per query (after one unmeasured run), ms median / p90\n\n", b.qSeries, *flagQDays, int64(b.qSeries)*b.qRounds, *flagQRuns)
		hdr := "| query |"
		sep := "|---|"
		for _, t := range b.tools {
			hdr += " " + t.title + " ms |"
			sep += "---:|"
		}
		hdr += ratioHdr("speedup")
		for range others {
			if prom != nil {
				sep += "---:|"
			}
		}
		fmt.Println(hdr + " result |")
		fmt.Println(sep + "---|")
		for _, q := range b.qList {
			line := "| " + q.name + " `" + q.promql + "` |"
			for _, t := range b.tools {
				r := b.queryR[t.name][q.name]
				line += fmt.Sprintf(" %.1f / %.1f |", ms(pct(r.lats, 0.5)), ms(pct(r.lats, 0.9)))
			}
			if prom != nil {
				p := b.queryR[prom.name][q.name]
				for _, t := range others {
					line += " " + ratio(ms(pct(p.lats, 0.5)), ms(pct(b.queryR[t.name][q.name].lats, 0.5))) + " |"
				}
			}
			var res []string
			for _, t := range b.tools {
				r := b.queryR[t.name][q.name]
				res = append(res, fmt.Sprintf("%d/%d/%dkB", r.series, r.points, r.bytes/1024))
			}
			line += " " + strings.Join(res, ", ") + " |"
			fmt.Println(line)
		}
		fmt.Println()
		fmt.Println("History load before the queries (not a measurement of its own: many samples per series per request):")
		fmt.Println()
		for _, t := range b.tools {
			r := b.queryR[t.name][b.qList[0].name]
			fmt.Printf("- %s: %d samples in %.1fs (%.0f samples/s), idle %.1fs later\n", t.title, r.samples, r.loadS, float64(r.samples)/r.loadS, r.idleS)
		}
	}
	fmt.Println()
	fmt.Println("### Data check after every ingest")
	fmt.Println()
	fmt.Println("| scenario | tool | series expected | series held | samples expected | samples held | ok |")
	fmt.Println("|---|---|---:|---:|---:|---:|---|")
	for _, c := range b.checks {
		fmt.Printf("| %s | %s | %d | %d | %d | %d | %s |\n", c.scenario, c.tool, c.wantSeries, c.gotSeries, c.wantSamples, c.gotSamples, map[bool]string{true: "yes", false: "NO " + c.note}[c.ok])
	}
	fmt.Println()
	fmt.Println("### Raw runs")
	fmt.Println()
	for _, t := range b.tools {
		for _, sc := range []struct {
			name string
			runs map[string]ingestRun
		}{{"ingest", b.ingestR}, {"hist-ingest", b.histR}} {
			r, ok := sc.runs[t.name]
			if !ok {
				continue
			}
			x := r.res
			fmt.Printf("- %s, %s: measured %.0f samples in %.2fs; whole run %d requests, %d samples accepted, %d failed requests (%d samples), rounds %d..%d, wall %.2fs, server CPU %.2fs, load generator CPU %.2fs, VmRSS %.0f MB, VmHWM %.0f MB; latency p50/p90/p99/max %.1f/%.1f/%.1f/%.1f ms\n",
				sc.name, t.name, float64(x.MeasuredSamples), x.MeasuredS, x.Requests, x.AcceptedSamples, x.ErrorRequests, x.ErrorSamples, x.MinRound, x.MaxRound, x.WallS, r.cpuS, r.loadCPUS, r.rssMB, r.hwmMB, x.LatP50Ms, x.LatP90Ms, x.LatP99Ms, x.LatMaxMs)
		}
	}
	for _, t := range b.tools {
		if r, ok := b.memR[t.name]; ok {
			fmt.Printf("- memory, %s: %d samples in %d requests, %.2fs (%.0f samples/s incl. series creation), idle wait %.1fs, VmRSS %.0f MB, VmHWM %.0f MB\n",
				t.name, r.res.AcceptedSamples, r.res.Requests, r.ingestS, float64(r.res.AcceptedSamples)/r.ingestS, r.idleS, r.rssMB, r.hwmMB)
		}
	}
	for _, t := range b.tools {
		for _, q := range b.qList {
			if r, ok := b.queryR[t.name][q.name]; ok {
				var xs []string
				for _, l := range r.lats {
					xs = append(xs, fmt.Sprintf("%.1f", ms(l)))
				}
				fmt.Printf("- query, %s, `%s`: %s ms\n", t.name, q.promql, strings.Join(xs, ", "))
			}
		}
	}
	fmt.Println()
	fmt.Println("samples/s: samples in 2xx remote write 1.0 requests (snappy protobuf, one sample per series per simulated 15 s round) completed after every shard finished the warm-up rounds, divided by the wall time from then to the end. " +
		"server CPU s: user+sys of the server process over the whole ingest (warm-up included); samples per CPU s = all accepted samples / that. " +
		"VmRSS/VmHWM: /proc/PID/status of the server process (HWM = peak RSS since start). MB = 2^20 bytes. " +
		"Ratios: throughput tool/Prometheus; memory and latency Prometheus/tool (higher is better for the tool). " +
		"Query latency: wall time of the HTTP request through decoding the JSON body, loopback, one client. " +
		"Each tool ran alone on a fresh data dir; the load generator (the sender, and the encoder unless the load was pre-encoded) shares the machine with the server. VictoriaMetrics ran with its result cache disabled (-search.disableCache).")
	if b.histR != nil {
		fmt.Println("Native histogram ingest: one integer native histogram (prompb.Histogram with 16 bucket deltas in 2 spans, a zero bucket, count and sum) per series per round instead of a float sample; -batch histograms per request; " +
			"the data check counts histogram samples with count_over_time, which counts them in both servers.")
	}
	fmt.Printf("Machine: %d CPUs (GOMAXPROCS %d), %.0f GiB RAM, %s/%s, %s; total %s.\n", runtime.NumCPU(), runtime.GOMAXPROCS(0), memTotalGiB(), runtime.GOOS, runtime.GOARCH, time.Now().UTC().Format("2006-01-02"), took.Round(time.Second))
	fmt.Printf("Command: `%s`\n", cmdline)
}

// loadNote says how a scenario's load was generated, and which runs sent
// all of a pre-encoded load before the duration ran out.
func (b *bench) loadNote(scenario string) {
	note, ok := b.encoded[scenario]
	if !ok {
		fmt.Printf("Load encoded while sent, by the benchmark process on the same machine.\n\n")
		return
	}
	fmt.Printf("Pre-encoded load, the same bytes to every server: %s.", note)
	runs := map[string]map[string]ingestRun{"ingest": b.ingestR, "hist-ingest": b.histR}[scenario]
	for _, t := range b.tools {
		if r, ok := runs[t.name]; ok && r.res.Exhausted {
			fmt.Printf(" %s sent all of it before the duration ran out: measured over %.1fs.", t.title, r.res.MeasuredS)
		}
	}
	fmt.Printf("\n\n")
}

// ingestTable prints the ingest runs as a markdown table; for histograms
// (hist) the columns name histogram samples and VmHWM is added.
func (b *bench) ingestTable(runs map[string]ingestRun, hist bool) {
	if hist {
		fmt.Printf("| tool | histogram samples/s | vs Prometheus | req p50 ms | req p90 ms | req p99 ms | failed req | server CPU s | histogram samples per CPU s | VmRSS after MB | VmHWM MB | Prometheus HWM / tool HWM |\n")
		fmt.Printf("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	} else {
		fmt.Printf("| tool | samples/s | vs Prometheus | req p50 ms | req p90 ms | req p99 ms | failed req | server CPU s | samples per CPU s | RSS after MB |\n")
		fmt.Printf("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	}
	for _, t := range b.tools {
		r, ok := runs[t.name]
		if !ok {
			continue
		}
		vs, vh := "-", "-"
		if p, ok := runs["prometheus"]; ok && t.name != "prometheus" {
			vs, vh = ratio(r.res.SamplesPerS, p.res.SamplesPerS), ratio(p.hwmMB, r.hwmMB)
		}
		line := fmt.Sprintf("| %s | %.0f | %s | %.1f | %.1f | %.1f | %d | %.1f | %.0f | %.0f |", t.title, r.res.SamplesPerS, vs, r.res.LatP50Ms, r.res.LatP90Ms, r.res.LatP99Ms,
			r.res.ErrorRequests, r.cpuS, float64(r.res.AcceptedSamples)/math.Max(r.cpuS, 0.01), r.rssMB)
		if hist {
			line += fmt.Sprintf(" %.0f | %s |", r.hwmMB, vh)
		}
		fmt.Println(line)
	}
}

func version(t *tool) string {
	arg := "--version"
	if t.name == "victoriametrics" {
		arg = "-version"
	}
	out, _ := exec.Command(t.bin, arg).Output()
	v := strings.TrimSpace(strings.SplitN(strings.TrimSpace(string(out)), "\n", 2)[0])
	if t.name == "victoriametrics" && *flagVMVer != "" {
		v += " (module " + *flagVMVer + ")"
	}
	return v
}

// selfCPUS is this process' user+system CPU seconds so far.
func selfCPUS() float64 {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return float64(ru.Utime.Nano()+ru.Stime.Nano()) / 1e9
}

func pct(ls []time.Duration, p float64) time.Duration {
	if len(ls) == 0 {
		return 0
	}
	s := append([]time.Duration(nil), ls...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	if p == 0.5 && len(s)%2 == 0 {
		return (s[len(s)/2-1] + s[len(s)/2]) / 2
	}
	return s[min(len(s)-1, int(math.Ceil(p*float64(len(s))))-1)]
}

func ms(d time.Duration) float64 { return float64(d) / 1e6 }

func ratio(a, b float64) string {
	if b == 0 || a == 0 {
		return "-"
	}
	return fmt.Sprintf("%.2fx", a/b)
}

func memField(field string) float64 {
	b, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return 0
	}
	for _, l := range strings.Split(string(b), "\n") {
		f := strings.Fields(l)
		if len(f) >= 2 && f[0] == field {
			var kb float64
			fmt.Sscan(f[1], &kb)
			return kb / 1024
		}
	}
	return 0
}

func memAvailableMB() float64 { return memField("MemAvailable:") }
func memTotalGiB() float64    { return memField("MemTotal:") / 1024 }

func abs(p string) string {
	a, err := filepath.Abs(p)
	must(err)
	return a
}

func readFile(p string) string {
	b, _ := os.ReadFile(p)
	return string(b)
}

func lastLines(s string, n int) string {
	l := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(l) > n {
		l = l[len(l)-n:]
	}
	return strings.Join(l, "\n")
}

func logf(format string, a ...any) {
	fmt.Fprintf(os.Stderr, "[%s] %s\n", time.Now().Format("15:04:05"), fmt.Sprintf(format, a...))
}

func fatalf(format string, a ...any) {
	fmt.Fprintf(os.Stderr, "serverbench: "+format+"\n", a...)
	os.Exit(1)
}

func must(err error) {
	if err != nil {
		fatalf("%v", err)
	}
}
