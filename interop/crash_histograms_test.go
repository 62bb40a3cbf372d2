package interop_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/gogo/protobuf/proto"
	"github.com/golang/snappy"
	"github.com/prometheus/prometheus/model/histogram"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/prompb"
	writev2 "github.com/prometheus/prometheus/prompb/io/prometheus/write/v2"

	"ferrite.dev/interop/internal/e2e"
	"ferrite.dev/interop/internal/promtsdb"
)

// TestRemoteWriteHistogramsSurviveKill9 (item 7d): two senders remote-write
// small requests (one sample per series each) into a Ferrite server, one
// over remote write 1.0 (a float, an integer histogram of schema 3, a float
// histogram of schema 1), one over 2.0 (a float, an integer histogram of
// schema 12 and a float one of schema 20, which the receiver reduces to
// schema 8, and integer and float histograms with custom buckets), counts
// growing with counter resets and buckets appearing, while the server is
// killed with SIGKILL at seeded random moments (INTEROP_CRASH_TRIALS
// times, default 6), and restarted on the same directory.
//
// After every kill, the killed directory is read by `ferrite tsdb dump`
// and by Prometheus (a server-style open of a copy, which repairs a torn
// WAL tail): every sample of every acknowledged (2xx) request must be
// there, exactly as promtool's dump prints it (counts, sum and every
// non-empty bucket with its bounds; reserved schemas as Prometheus'
// ReduceResolution makes them), each once, and nothing else but samples of
// the requests in flight at the kill. At the end the server is started
// again, takes more requests and stops cleanly, and the same holds.
func TestRemoteWriteHistogramsSurviveKill9(t *testing.T) {
	bin := ferriteBin(t)
	rounds := crashTrials()
	tmp := t.TempDir()
	data := filepath.Join(tmp, "data")
	rng := rand.New(rand.NewSource(20260316))
	// 10 ms apart from an hour ago: thousands of requests a round stay
	// well before the receiver's limit of 10 minutes into the future.
	base := time.Now().Add(-time.Hour).UnixMilli()
	senders := []*crashSender{
		{name: "rw1", v2: false, series: crashSeriesV1(), base: base},
		{name: "rw2", v2: true, series: crashSeriesV2(), base: base},
	}
	ledger := &crashLedger{acked: map[string]bool{}, possible: map[string]bool{}}
	var procs []*e2e.Proc
	t.Cleanup(func() {
		for _, p := range procs {
			p.Kill()
		}
	})
	for round := 0; round <= rounds; round++ {
		p, url := startFerriteServer(t, bin, data, filepath.Join(tmp, fmt.Sprintf("ferrite-%d.log", round)))
		procs = append(procs, p)
		last := round == rounds
		stop := make(chan struct{})
		var wg sync.WaitGroup
		for _, s := range senders {
			wg.Add(1)
			go func(s *crashSender) {
				defer wg.Done()
				s.run(url, ledger, stop, last)
			}(s)
		}
		if last {
			// More requests after the last restart, then a clean stop.
			time.Sleep(300 * time.Millisecond)
			close(stop)
			wg.Wait()
			if err := p.Stop(30 * time.Second); err != nil {
				t.Errorf("clean stop: %v\n%s", err, p.LogTail(20))
			}
		} else {
			time.Sleep(time.Duration(150+rng.Intn(600)) * time.Millisecond)
			p.Kill()
			close(stop)
			wg.Wait()
		}
		e2eCheckNoPanic(t, p)
		if ledger.failed != "" {
			t.Fatalf("round %d: %s", round, ledger.failed)
		}
		t.Logf("round %d: %d samples acknowledged so far, %d requests in flight at kills", round, len(ledger.acked), ledger.inFlight)
		what := fmt.Sprintf("round %d (after a kill)", round)
		if last {
			what = "after the clean stop"
		}
		checkDumpHolds(t, what+": ferrite tsdb dump", ferriteDumpLines(t, data), ledger.acked, ledger.possible)
		promLines, err := promtsdb.DumpRepairedCopy(data, filepath.Join(tmp, "prom-copy"))
		if err != nil {
			t.Fatalf("%s: prometheus cannot open a copy of the dir: %v", what, err)
		}
		checkDumpHolds(t, what+": prometheus", promLines, ledger.acked, ledger.possible)
		if t.Failed() {
			t.FailNow()
		}
	}
	if ledger.inFlight == 0 {
		t.Errorf("no kill landed during a request in %d rounds", rounds)
	}
}

// crashTrials is INTEROP_CRASH_TRIALS (default 6).
func crashTrials() int {
	n := 6
	if v, err := fmt.Sscan(os.Getenv("INTEROP_CRASH_TRIALS"), &n); err != nil || v != 1 || n < 1 {
		n = 6
	}
	return n
}

// startFerriteServer starts a server on dir at a free port, retrying with
// another port (at most three times) if it does not come up.
func startFerriteServer(t *testing.T, bin, dir, logPath string) (*e2e.Proc, string) {
	t.Helper()
	var last error
	for attempt := 0; attempt < 3; attempt++ {
		port, err := e2e.FreePort()
		if err != nil {
			t.Fatal(err)
		}
		url := fmt.Sprintf("http://127.0.0.1:%d", port)
		p, err := e2e.Start("ferrite", bin, filepath.Dir(dir), logPath, "--storage.tsdb.path", dir,
			"--web.listen-address", fmt.Sprintf("127.0.0.1:%d", port), "--web.enable-remote-write-receiver",
			noScrapeConfig(t, filepath.Dir(dir)))
		if err != nil {
			t.Fatal(err)
		}
		if last = p.WaitReady(url+"/-/ready", 30*time.Second); last == nil {
			return p, url
		}
		p.Kill()
	}
	t.Fatalf("ferrite did not start in three attempts: %v", last)
	return nil, ""
}

// crashLedger holds the dump lines of what was sent: acknowledged, and
// in flight at a kill (which may or may not have been stored).
type crashLedger struct {
	mu       sync.Mutex
	acked    map[string]bool
	possible map[string]bool
	inFlight int // requests in flight at a kill, so far
	failed   string
}

func (l *crashLedger) record(lines []string, acked bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !acked {
		l.inFlight++
	}
	for _, s := range lines {
		if acked {
			l.acked[s] = true
		} else {
			l.possible[s] = true
		}
	}
}

func (l *crashLedger) fail(msg string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.failed == "" {
		l.failed = msg
	}
}

// crashSeries is one series a sender writes: its labels and its sample at
// request k, as sent and as promtool's dump prints what is stored.
type crashSeries struct {
	lset   labels.Labels
	sample func(k int64) crashValue
}

// crashValue is exactly one of a float, an integer or a float histogram.
type crashValue struct {
	f  *float64
	h  *histogram.Histogram
	fh *histogram.FloatHistogram
}

// stored is what the head keeps of the value: reserved exponential
// schemas (9..52) reduced to 8 by Prometheus' own ReduceResolution.
func (v crashValue) stored() fmt.Stringer {
	reserved := func(schema int32) bool {
		return schema > histogram.ExponentialSchemaMax && schema <= histogram.ExponentialSchemaMaxReserved
	}
	must := func(err error) {
		if err != nil {
			panic(err)
		}
	}
	switch {
	case v.h != nil:
		h := v.h.Copy()
		if reserved(h.Schema) {
			must(h.ReduceResolution(histogram.ExponentialSchemaMax))
		}
		return h
	case v.fh != nil:
		h := v.fh.Copy()
		if reserved(h.Schema) {
			must(h.ReduceResolution(histogram.ExponentialSchemaMax))
		}
		return h
	default:
		return promtsdb.Float(*v.f)
	}
}

func floatValue(f float64) crashValue { return crashValue{f: &f} }

func crashSeriesV1() []crashSeries {
	return []crashSeries{
		{labels.FromStrings("__name__", "crash_float", "sender", "rw1"),
			func(k int64) crashValue { return floatValue(float64(k) * 0.5) }},
		{labels.FromStrings("__name__", "crash_histogram", "sender", "rw1", "schema", "3"),
			func(k int64) crashValue { return crashValue{h: crashIntHistogram(k, 3)} }},
		{labels.FromStrings("__name__", "crash_float_histogram", "sender", "rw1", "schema", "1"),
			func(k int64) crashValue { return crashValue{fh: crashFloatHistogram(k, 1)} }},
	}
}

func crashSeriesV2() []crashSeries {
	return []crashSeries{
		{labels.FromStrings("__name__", "crash_float", "sender", "rw2"),
			func(k int64) crashValue { return floatValue(1e6 - float64(k)*0.125) }},
		{labels.FromStrings("__name__", "crash_histogram", "sender", "rw2", "schema", "12"),
			func(k int64) crashValue { return crashValue{h: crashIntHistogram(k, 12)} }},
		{labels.FromStrings("__name__", "crash_float_histogram", "sender", "rw2", "schema", "20"),
			func(k int64) crashValue { return crashValue{fh: crashFloatHistogram(k, 20)} }},
		{labels.FromStrings("__name__", "crash_nhcb", "sender", "rw2"),
			func(k int64) crashValue { return crashValue{h: crashNHCB(k)} }},
		{labels.FromStrings("__name__", "crash_nhcb_float", "sender", "rw2"),
			func(k int64) crashValue { return crashValue{fh: crashNHCB(k).ToFloat(nil)} }},
	}
}

// crashIntHistogram: counts grow with k, reset every 300 requests; a
// third positive span appears in the second half of each cycle.
func crashIntHistogram(k int64, schema int32) *histogram.Histogram {
	j := k % 300
	pos := []int64{j + 1, 2 * j, j/3 + 1, 7, j % 5}
	spans := []histogram.Span{{Offset: -3, Length: 3}, {Offset: 2, Length: 2}}
	if j >= 150 {
		pos = append(pos, j-149)
		spans = append(spans, histogram.Span{Offset: 5, Length: 1})
	}
	neg := []int64{j / 2, 1}
	zero := uint64(j / 7)
	count := zero
	for _, c := range append(append([]int64{}, pos...), neg...) {
		count += uint64(c)
	}
	return &histogram.Histogram{
		Schema:          schema,
		ZeroThreshold:   1e-4,
		ZeroCount:       zero,
		Count:           count,
		Sum:             float64(j)*1.25 - 3,
		PositiveSpans:   spans,
		PositiveBuckets: promtsdb.Deltas(pos),
		NegativeSpans:   []histogram.Span{{Offset: 0, Length: 2}},
		NegativeBuckets: promtsdb.Deltas(neg),
	}
}

// crashFloatHistogram: quarter counts growing with k, reset every 250.
func crashFloatHistogram(k int64, schema int32) *histogram.FloatHistogram {
	j := float64(k % 250)
	pos := []float64{j + 0.25, j / 4, 3, j * 1.5}
	neg := []float64{j / 2, 0.75, j}
	zero := j/8 + 0.5
	count := zero
	for _, c := range append(append([]float64{}, pos...), neg...) {
		count += c
	}
	return &histogram.FloatHistogram{
		Schema:          schema,
		ZeroThreshold:   1e-3,
		ZeroCount:       zero,
		Count:           count,
		Sum:             j*0.75 + 1,
		PositiveSpans:   []histogram.Span{{Offset: 1, Length: 2}, {Offset: 7, Length: 2}},
		PositiveBuckets: pos,
		NegativeSpans:   []histogram.Span{{Offset: -4, Length: 3}},
		NegativeBuckets: neg,
	}
}

var crashNHCBBounds = []float64{0.1, 0.5, 1, 5}

// crashNHCB: custom buckets, one empty bucket skipped by the spans.
func crashNHCB(k int64) *histogram.Histogram {
	j := k % 400
	abs := []int64{j + 1, 2*j + 1, j / 2, j % 7}
	var count uint64
	for _, c := range abs {
		count += uint64(c)
	}
	return &histogram.Histogram{
		Schema:          histogram.CustomBucketsSchema,
		Count:           count,
		Sum:             float64(j) * 0.5,
		PositiveSpans:   []histogram.Span{{Offset: 0, Length: 2}, {Offset: 1, Length: 2}},
		PositiveBuckets: promtsdb.Deltas(abs),
		CustomValues:    crashNHCBBounds,
	}
}

// crashSender sends one request per timestamp (10 ms apart), one sample
// per series, until stopped or a request fails.
type crashSender struct {
	name   string
	v2     bool
	series []crashSeries
	base   int64
	next   int64
}

var crashClient = &http.Client{Timeout: 10 * time.Second}

func (s *crashSender) run(url string, l *crashLedger, stop <-chan struct{}, mustSucceed bool) {
	for {
		select {
		case <-stop:
			return
		default:
		}
		k := s.next
		s.next++
		t := s.base + k*10
		body, lines, err := s.request(k, t)
		if err != nil {
			l.fail(fmt.Sprintf("%s: building request %d: %v", s.name, k, err))
			return
		}
		req, err := http.NewRequest(http.MethodPost, url+"/api/v1/write", bytes.NewReader(body))
		if err != nil {
			l.fail(err.Error())
			return
		}
		req.Header.Set("Content-Encoding", "snappy")
		if s.v2 {
			req.Header.Set("Content-Type", "application/x-protobuf;proto=io.prometheus.write.v2.Request")
			req.Header.Set("X-Prometheus-Remote-Write-Version", "2.0.0")
		} else {
			req.Header.Set("Content-Type", "application/x-protobuf")
			req.Header.Set("X-Prometheus-Remote-Write-Version", "0.1.0")
		}
		resp, err := crashClient.Do(req)
		if err != nil {
			if mustSucceed {
				l.fail(fmt.Sprintf("%s: request %d: %v", s.name, k, err))
			}
			// Killed under the request, it may or may not be stored; a
			// refused connection (the server already gone) delivered
			// nothing.
			if !errors.Is(err, syscall.ECONNREFUSED) {
				l.record(lines, false)
			}
			return
		}
		msg := new(bytes.Buffer)
		_, _ = msg.ReadFrom(resp.Body)
		resp.Body.Close()
		if resp.StatusCode/100 != 2 {
			l.record(lines, false)
			l.fail(fmt.Sprintf("%s: request %d: HTTP %d: %s", s.name, k, resp.StatusCode, msg))
			return
		}
		l.record(lines, true)
	}
}

// request is the snappy-compressed request for timestamp t and the dump
// lines of what it stores.
func (s *crashSender) request(k, t int64) ([]byte, []string, error) {
	var lines []string
	var raw []byte
	var err error
	if s.v2 {
		st := writev2.NewSymbolTable()
		var req writev2.Request
		for _, c := range s.series {
			v := c.sample(k)
			ts := writev2.TimeSeries{LabelsRefs: st.SymbolizeLabels(c.lset, nil)}
			switch {
			case v.h != nil:
				ts.Histograms = []writev2.Histogram{writev2.FromIntHistogram(0, t, v.h)}
			case v.fh != nil:
				ts.Histograms = []writev2.Histogram{writev2.FromFloatHistogram(0, t, v.fh)}
			default:
				ts.Samples = []writev2.Sample{{Timestamp: t, Value: *v.f}}
			}
			req.Timeseries = append(req.Timeseries, ts)
			lines = append(lines, promtsdb.DumpLine(c.lset, t, v.stored()))
		}
		req.Symbols = st.Symbols()
		raw, err = proto.Marshal(&req)
	} else {
		var req prompb.WriteRequest
		for _, c := range s.series {
			v := c.sample(k)
			ts := prompb.TimeSeries{}
			c.lset.Range(func(l labels.Label) {
				ts.Labels = append(ts.Labels, prompb.Label{Name: l.Name, Value: l.Value})
			})
			switch {
			case v.h != nil:
				ts.Histograms = []prompb.Histogram{prompb.FromIntHistogram(t, v.h)}
			case v.fh != nil:
				ts.Histograms = []prompb.Histogram{prompb.FromFloatHistogram(t, v.fh)}
			default:
				ts.Samples = []prompb.Sample{{Timestamp: t, Value: *v.f}}
			}
			req.Timeseries = append(req.Timeseries, ts)
			lines = append(lines, promtsdb.DumpLine(c.lset, t, v.stored()))
		}
		raw, err = proto.Marshal(&req)
	}
	return snappy.Encode(nil, raw), lines, err
}

// ferriteDumpLines is `ferrite tsdb dump dir`, one sample a line.
func ferriteDumpLines(t *testing.T, dir string) []string {
	t.Helper()
	out := runFerrite(t, "tsdb", "dump", dir)
	return strings.Split(strings.TrimRight(out, "\n"), "\n")
}

// checkDumpHolds: every acknowledged line once, nothing but acknowledged
// and possibly-stored lines.
func checkDumpHolds(t *testing.T, what string, lines []string, acked, possible map[string]bool) {
	t.Helper()
	seen := map[string]int{}
	var extra, dup, missing []string
	for _, l := range lines {
		if l == "" {
			continue
		}
		seen[l]++
		switch {
		case seen[l] == 2:
			dup = append(dup, l)
		case seen[l] == 1 && !acked[l] && !possible[l]:
			extra = append(extra, l)
		}
	}
	for l := range acked {
		if seen[l] == 0 {
			missing = append(missing, l)
		}
	}
	sort.Strings(missing)
	first := func(xs []string) string { return strings.Join(xs[:min(3, len(xs))], "\n    ") }
	if len(missing) > 0 {
		t.Errorf("%s: %d acknowledged samples missing, e.g.\n    %s", what, len(missing), first(missing))
	}
	if len(extra) > 0 {
		t.Errorf("%s: %d samples that were never acknowledged nor in flight, e.g.\n    %s", what, len(extra), first(extra))
	}
	if len(dup) > 0 {
		t.Errorf("%s: %d samples twice, e.g.\n    %s", what, len(dup), first(dup))
	}
}

// TestHistogramCompactionSurvivesKill9 (item 7d): `ferrite tsdb compact` of
// the data dirs Prometheus v3.16.0 writes with native histograms (integer
// and float histograms in blocks the leveled planner merges, custom-bucket
// histograms in the WAL and chunks_head/, float histograms m-mapped into
// chunks_head/, integer histograms in the WAL only; promtsdb's
// GenerateUnsupported) killed with SIGKILL at seeded random moments
// (INTEROP_CRASH_TRIALS, default 6; every other trial with the compaction's
// write rate capped, so kills land inside block writes). Each time
// Prometheus' read-only open and `ferrite tsdb census` must read exactly
// what was written (samples per kind, sums, and the hash of every sample),
// and after a second compaction too, its blocks not overlapping.
func TestHistogramCompactionSurvivesKill9(t *testing.T) {
	bin := ferriteBin(t)
	trials := crashTrials()
	root := t.TempDir()
	kinds := []string{promtsdb.UnsupportedBlockHistograms, promtsdb.UnsupportedNHCB,
		promtsdb.UnsupportedHeadFloatHistograms, promtsdb.UnsupportedWALHistograms}
	type source struct {
		dir  string
		want promtsdb.Census
		full [2]time.Duration // an uninterrupted compaction, unlimited and rate-capped
	}
	const rate = "200000" // bytes per second
	sources := map[string]*source{}
	for _, kind := range kinds {
		u, err := promtsdb.GenerateUnsupported(kind, filepath.Join(root, "gen", kind))
		if err != nil {
			t.Fatalf("prometheus: %v", err)
		}
		want, err := promtsdb.CensusReadOnly(u.Dir)
		if err != nil || !want.Equal(u.Want) {
			t.Fatalf("prometheus reads %s from the %s dir it wrote (%v), want %s", want, kind, err, u.Want)
		}
		s := &source{dir: u.Dir, want: want}
		for i, args := range [][]string{nil, {"--write-rate", rate}} {
			probe := filepath.Join(root, "probe", fmt.Sprintf("%s-%d", kind, i))
			copyDir(t, u.Dir, probe)
			start := time.Now()
			runFerrite(t, append([]string{"tsdb", "compact", probe}, args...)...)
			s.full[i] = time.Since(start)
		}
		t.Logf("%s: %s; compaction takes %v, %v at %s B/s", kind, want, s.full[0], s.full[1], rate)
		sources[kind] = s
	}

	rng := rand.New(rand.NewSource(7))
	killedMidway := 0
	for i := 0; i < trials; i++ {
		kind := kinds[i%len(kinds)]
		s := sources[kind]
		capped := i%2 == 1
		args := []string{"tsdb", "compact"}
		full := s.full[0]
		if capped {
			args = append(args, "--write-rate", rate)
			full = s.full[1]
		}
		dir := filepath.Join(root, fmt.Sprintf("trial-%d-%s", i, kind))
		copyDir(t, s.dir, dir)
		delay := time.Duration(rng.Int63n(int64(full) + 1))
		stderr, err := runKilledAfter(t, delay, bin, append(args, dir)...)
		if err != nil {
			killedMidway++
		}
		if strings.Contains(stderr, "panicked at") {
			t.Errorf("trial %d: compaction panicked:\n%s", i, tail(stderr, 20))
		}
		what := fmt.Sprintf("trial %d (%s, capped %v, kill after %v of %v, exit %v, %d blocks)", i, kind, capped, delay, full, err, len(blockDirs(dir)))
		t.Log(what)
		checkCensusBoth(t, bin, dir, s.want, what+": killed dir")
		runFerrite(t, "tsdb", "compact", dir)
		checkCensusBoth(t, bin, dir, s.want, what+": after a second compaction")
		checkNoOverlappingBlocks(t, dir, what)
	}
	if killedMidway == 0 {
		t.Errorf("no kill landed during a compaction in %d trials", trials)
	}
}

// checkCensusBoth: Prometheus' read-only census first (dir unchanged),
// then Ferrite's, each exactly the one of what was written, hash included.
func checkCensusBoth(t *testing.T, bin, dir string, want promtsdb.Census, what string) {
	t.Helper()
	got, err := promtsdb.CensusReadOnly(dir)
	if err != nil {
		t.Errorf("%s: prometheus cannot read the dir: %v", what, err)
	} else if !got.Equal(want) || got.Hash != want.Hash {
		t.Errorf("%s: prometheus reads\n  %s\nwant (as written)\n  %s", what, got, want)
	}
	checkFerriteCensus(t, bin, dir, want, what)
}

// checkNoOverlappingBlocks: no two blocks' [minTime, maxTime) overlap.
func checkNoOverlappingBlocks(t *testing.T, dir, what string) {
	t.Helper()
	type span struct {
		id         string
		mint, maxt int64
	}
	var spans []span
	for _, id := range blockDirs(dir) {
		b, err := os.ReadFile(filepath.Join(dir, id, "meta.json"))
		if err != nil {
			t.Errorf("%s: %v", what, err)
			continue
		}
		var m struct {
			MinTime int64 `json:"minTime"`
			MaxTime int64 `json:"maxTime"`
		}
		if err := json.Unmarshal(b, &m); err != nil {
			t.Errorf("%s: %s/meta.json: %v", what, id, err)
			continue
		}
		spans = append(spans, span{id, m.MinTime, m.MaxTime})
	}
	sort.Slice(spans, func(i, j int) bool { return spans[i].mint < spans[j].mint })
	for i := 1; i < len(spans); i++ {
		if spans[i].mint < spans[i-1].maxt {
			t.Errorf("%s: blocks %s [%d, %d) and %s [%d, %d) overlap", what,
				spans[i-1].id, spans[i-1].mint, spans[i-1].maxt, spans[i].id, spans[i].mint, spans[i].maxt)
		}
	}
}
