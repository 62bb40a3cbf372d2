package interop_test

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"net/url"
	"path/filepath"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"ferrite.dev/interop/internal/e2e"
)

// TestHistogramsThroughRemoteWrite: a real Prometheus v3.16.0 scrapes
// native histograms — from a test exporter (client_golang, protobuf
// exposition: schema 0 with negative and zero observations, schema 3, a
// classic histogram converted to custom buckets) and from itself
// (prometheus_http_request_duration_seconds) — and remote-writes them to
// two Ferrites, one over remote write 1.0 and one over 2.0
// (send_native_histograms on both). The same queries (raw selectors,
// histogram_count/sum/quantile/fraction, rate, sum by) must answer the
// same JSON on all three: raw samples exactly, computed values within 1e-9
// relative (Ferrite's PromQL may round differently). Custom-bucket
// histograms reach only the 2.0 Ferrite: Prometheus' 1.0 sender drops them.
func TestHistogramsThroughRemoteWrite(t *testing.T) {
	fer := ferriteBin(t)
	prom, _ := e2eBinaries(t)
	tmp := t.TempDir()

	// The exporter: deterministic observations every 50 ms.
	reg := prometheus.NewRegistry()
	exp0 := prometheus.NewHistogram(prometheus.HistogramOpts{
		Name: "hist_exp0", Help: "Schema 0.", NativeHistogramBucketFactor: 2,
	})
	exp3 := prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name: "hist_exp3_seconds", Help: "Schema 3.", NativeHistogramBucketFactor: 1.1,
	}, []string{"kind"})
	classic := prometheus.NewHistogram(prometheus.HistogramOpts{
		Name: "hist_classic_seconds", Help: "Classic buckets, converted to NHCB by Prometheus.",
		Buckets: []float64{0.1, 0.5, 1, 2.5, 10},
	})
	reg.MustRegister(exp0, exp3, classic)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		tick := time.NewTicker(50 * time.Millisecond)
		defer tick.Stop()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			case <-tick.C:
			}
			x := float64(i%37) / 7
			exp0.Observe(x - 2) // negative, zero and positive
			if i%5 == 0 {
				exp0.Observe(0)
			}
			exp3.WithLabelValues("a").Observe(x * 0.01)
			exp3.WithLabelValues("b").Observe(x * 3)
			classic.Observe(x)
		}
	}()
	t.Cleanup(func() { close(stop); wg.Wait() })
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: promhttp.HandlerFor(reg, promhttp.HandlerOpts{})}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })

	ports := make([]int, 0, 3)
	for len(ports) < 3 {
		p, err := e2e.FreePort()
		if err != nil {
			t.Fatal(err)
		}
		dup := false
		for _, q := range ports {
			dup = dup || q == p
		}
		if !dup {
			ports = append(ports, p)
		}
	}
	promURL := fmt.Sprintf("http://127.0.0.1:%d", ports[0])
	ferURLs := map[string]string{
		"1.0": fmt.Sprintf("http://127.0.0.1:%d", ports[1]),
		"2.0": fmt.Sprintf("http://127.0.0.1:%d", ports[2]),
	}
	var procs []*e2e.Proc
	t.Cleanup(func() {
		for _, p := range procs {
			p.Kill()
		}
	})
	for i, v := range []string{"1.0", "2.0"} {
		p, err := e2e.Start("ferrite-"+v, fer, tmp, filepath.Join(tmp, "ferrite-"+v+".log"),
			"--storage.tsdb.path", filepath.Join(tmp, "ferrite-"+v), "--web.listen-address",
			fmt.Sprintf("127.0.0.1:%d", ports[i+1]), "--web.enable-remote-write-receiver", noScrapeConfig(t, tmp))
		if err != nil {
			t.Fatal(err)
		}
		procs = append(procs, p)
		if err := p.WaitReady(ferURLs[v]+"/-/ready", 30*time.Second); err != nil {
			t.Fatal(err)
		}
	}

	cfg := filepath.Join(tmp, "prometheus.yml")
	queue := `{batch_send_deadline: 1s, min_shards: 1, max_shards: 1, min_backoff: 50ms, max_backoff: 1s}`
	e2eWriteFile(t, cfg, fmt.Sprintf(`global:
  scrape_interval: 1s
  scrape_timeout: 1s
  scrape_native_histograms: true
scrape_configs:
  - job_name: exporter
    convert_classic_histograms_to_nhcb: true
    static_configs: [{targets: [%q]}]
  - job_name: prometheus
    static_configs: [{targets: ["127.0.0.1:%d"]}]
remote_write:
  - url: %s/api/v1/write
    send_native_histograms: true
    queue_config: %s
  - url: %s/api/v1/write
    protobuf_message: io.prometheus.write.v2.Request
    send_native_histograms: true
    queue_config: %s
`, ln.Addr().String(), ports[0], ferURLs["1.0"], queue, ferURLs["2.0"], queue))
	promProc, err := e2e.Start("prometheus", prom, tmp, filepath.Join(tmp, "prometheus.log"),
		"--config.file="+cfg, "--storage.tsdb.path="+filepath.Join(tmp, "prom-data"),
		fmt.Sprintf("--web.listen-address=127.0.0.1:%d", ports[0]))
	if err != nil {
		t.Fatal(err)
	}
	procs = append(procs, promProc)
	if err := promProc.WaitReady(promURL+"/-/ready", 30*time.Second); err != nil {
		t.Fatal(err)
	}
	logs := func() string {
		var b strings.Builder
		for _, p := range procs {
			fmt.Fprintf(&b, "--- %s:\n%s\n", p.Name, p.LogTail(20))
		}
		return b.String()
	}

	for _, v := range []string{"1.0", "2.0"} {
		e2eWaitFor(t, 40*time.Second, "ferrite "+v+" to have exporter histograms", promProc, func() (bool, string) {
			val, ok, err := e2e.QueryScalar(ferURLs[v], `count(histogram_count(hist_exp0))`, time.Now())
			if err != nil {
				return false, err.Error()
			}
			return ok && val > 0, fmt.Sprintf("count=%v (present %v)", val, ok)
		})
	}
	start := time.Now()
	e2eSleepUntil(start.Add(13 * time.Second))
	T := time.Unix(time.Now().Add(-3*time.Second).Unix(), 0)
	S := time.Unix(start.Unix()+1, 0)
	for _, u := range ferURLs {
		e2eWaitFlushed(t, u, promProc, T)
	}

	const tol = 1e-9
	at := func(expr string, tolerance float64) histQuery {
		return histQuery{expr: expr, params: url.Values{"query": {expr}, "time": {e2eUnixArg(T)}}, tol: tolerance}
	}
	over := func(expr string, tolerance float64) histQuery {
		return histQuery{expr: expr + " (range)", params: url.Values{"query": {expr}, "start": {e2eUnixArg(S)},
			"end": {e2eUnixArg(T)}, "step": {"1"}}, tol: tolerance, rangeQuery: true}
	}
	// Prometheus' remote write 1.0 sender drops custom-bucket histograms
	// ("remote write v1 does not support it"): those are compared for
	// 2.0 only.
	v2Only := func(q histQuery) histQuery {
		q.v2Only = true
		return q
	}
	queries := []histQuery{
		at(`{job="exporter", __name__!="hist_classic_seconds"}`, 0),
		at(`{job="exporter", __name__!="hist_classic_seconds"}[10s]`, 0),
		v2Only(at(`{job="exporter"}`, 0)),
		v2Only(at(`{job="exporter"}[10s]`, 0)),
		at(`prometheus_http_request_duration_seconds`, 0),
		at(`prometheus_http_request_duration_seconds[5s]`, 0),
		at(`histogram_count(hist_exp0)`, 0),
		at(`histogram_sum(hist_exp3_seconds)`, 0),
		at(`histogram_count(hist_exp3_seconds offset 2s)`, 0),
		at(`hist_exp3_seconds{kind="b"} + ignoring(kind) group_left hist_exp3_seconds{kind="a"}`, tol),
		at(`rate(hist_exp0[10s])`, tol),
		v2Only(at(`rate(hist_classic_seconds[10s])`, tol)),
		at(`sum by (job) (rate(hist_exp3_seconds[10s]))`, tol),
		at(`sum by (handler) (rate(prometheus_http_request_duration_seconds[10s]))`, tol),
		at(`histogram_count(rate(hist_exp3_seconds[10s]))`, tol),
		at(`histogram_quantile(0.9, rate(hist_exp0[10s]))`, tol),
		at(`histogram_quantile(0.5, rate(hist_exp3_seconds[10s]))`, tol),
		v2Only(at(`histogram_quantile(0.75, rate(hist_classic_seconds[10s]))`, tol)),
		at(`histogram_quantile(0.9, sum by (job) (rate(prometheus_http_request_duration_seconds[10s])))`, tol),
		at(`histogram_fraction(-1, 1, rate(hist_exp0[10s]))`, tol),
		v2Only(at(`histogram_avg(rate(hist_classic_seconds[10s]))`, tol)),
		at(`increase(hist_exp0[10s])`, tol),
		over(`hist_exp0`, 0),
		v2Only(over(`hist_classic_seconds`, 0)),
		over(`rate(hist_exp3_seconds[5s])`, tol),
		over(`histogram_quantile(0.9, rate(hist_exp0[5s]))`, tol),
	}
	for round := 0; ; round++ {
		var failed []string
		for _, q := range queries {
			want := histQueryData(t, promURL, q)
			if len(want.Result) == 0 {
				t.Errorf("%s: prometheus has nothing: the comparison would be vacuous", q.expr)
				continue
			}
			for _, v := range []string{"1.0", "2.0"} {
				if q.v2Only && v == "1.0" {
					continue
				}
				got := histQueryData(t, ferURLs[v], q)
				c := &histCompare{tol: q.tol}
				c.value("", want.ResultType, got.ResultType)
				c.results(want.Result, got.Result)
				if len(c.diffs) > 0 {
					failed = append(failed, fmt.Sprintf("remote write %s: %s (tolerance %g): %d differences, first: %s",
						v, q.expr, q.tol, len(c.diffs), strings.Join(c.diffs[:min(3, len(c.diffs))], "; ")))
					continue
				}
				t.Logf("remote write %s: %s: agrees (%d series, %d values within tolerance only)",
					v, q.expr, len(want.Result), c.inexact)
			}
		}
		if len(failed) == 0 {
			break
		}
		if round == 2 {
			for _, f := range failed {
				t.Error(f)
			}
			t.Logf("logs:\n%s", logs())
			break
		}
		t.Logf("round %d: %d answers differ, asking again in 3 s (remote write lag?); first: %s", round, len(failed), failed[0])
		time.Sleep(3 * time.Second)
	}

	// Series that hold only histograms are listed alike.
	for _, v := range []string{"1.0", "2.0"} {
		all := `{__name__=~"hist_.*"}`
		if v == "1.0" {
			all = `{__name__=~"hist_exp.*"}`
		}
		for _, m := range []string{`hist_exp0`, all, `prometheus_http_request_duration_seconds`} {
			p := url.Values{"match[]": {m}, "start": {e2eUnixArg(S)}, "end": {e2eUnixArg(T)}}
			want := histSeries(t, promURL, p)
			got := histSeries(t, ferURLs[v], p)
			if len(want) == 0 || !reflect.DeepEqual(want, got) {
				t.Errorf("remote write %s: series %s: prometheus %v, ferrite %v", v, m, want, got)
			}
		}
	}

	for _, p := range procs {
		if p.Name != "prometheus" {
			e2eCheckNoPanic(t, p)
		}
	}
}

type histQuery struct {
	expr       string
	params     url.Values
	tol        float64
	rangeQuery bool
	v2Only     bool
}

type histData struct {
	ResultType string `json:"resultType"`
	Result     []any  `json:"result"`
}

func histGet(t *testing.T, u string) []byte {
	t.Helper()
	resp, err := http.Get(u)
	if err != nil {
		t.Fatalf("GET %s: %v", u, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("GET %s: %v", u, err)
	}
	if resp.StatusCode != 200 {
		t.Fatalf("GET %s: %d %s", u, resp.StatusCode, b)
	}
	return b
}

// histQueryData: a query's `data`, its series sorted by their labels.
func histQueryData(t *testing.T, base string, q histQuery) histData {
	t.Helper()
	path := "/api/v1/query?"
	if q.rangeQuery {
		path = "/api/v1/query_range?"
	}
	var body struct {
		Status string   `json:"status"`
		Data   histData `json:"data"`
	}
	b := histGet(t, base+path+q.params.Encode())
	if err := json.Unmarshal(b, &body); err != nil || body.Status != "success" {
		t.Fatalf("%s %s: %v %s", base, q.expr, err, b)
	}
	sort.Slice(body.Data.Result, func(i, j int) bool {
		return histMetric(body.Data.Result[i]) < histMetric(body.Data.Result[j])
	})
	return body.Data
}

func histMetric(r any) string {
	m, _ := r.(map[string]any)
	b, _ := json.Marshal(m["metric"])
	return string(b)
}

func histSeries(t *testing.T, base string, p url.Values) []string {
	t.Helper()
	var body struct {
		Data []map[string]string `json:"data"`
	}
	b := histGet(t, base+"/api/v1/series?"+p.Encode())
	if err := json.Unmarshal(b, &body); err != nil {
		t.Fatalf("%s series: %v %s", base, err, b)
	}
	var out []string
	for _, s := range body.Data {
		j, _ := json.Marshal(s)
		out = append(out, string(j))
	}
	sort.Strings(out)
	return out
}

// histCompare walks Prometheus' answer and Ferrite's side by side: the
// shapes (keys, lengths, timestamps, labels) must be identical; number
// strings equal, or within tol relative when tol > 0; bucket bounds
// exactly.
type histCompare struct {
	tol     float64
	diffs   []string
	inexact int
}

func (c *histCompare) fail(path string, want, got any) {
	c.diffs = append(c.diffs, fmt.Sprintf("%s: prometheus %v, ferrite %v", path, want, got))
}

func (c *histCompare) results(want, got []any) {
	if len(want) != len(got) {
		c.fail("result length", len(want), len(got))
		return
	}
	for i := range want {
		c.value(fmt.Sprintf("result[%d]", i), want[i], got[i])
	}
}

func (c *histCompare) value(path string, want, got any) {
	switch w := want.(type) {
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok || len(g) != len(w) {
			c.fail(path, want, got)
			return
		}
		for k, wv := range w {
			gv, ok := g[k]
			if !ok {
				c.fail(path+"."+k, wv, "(absent)")
				continue
			}
			if k == "metric" {
				if !reflect.DeepEqual(wv, gv) {
					c.fail(path+".metric", wv, gv)
				}
				continue
			}
			if k == "buckets" {
				c.buckets(path+".buckets", wv, gv)
				continue
			}
			c.value(path+"."+k, wv, gv)
		}
	case []any:
		g, ok := got.([]any)
		if !ok || len(g) != len(w) {
			c.fail(path, want, got)
			return
		}
		for i := range w {
			c.value(fmt.Sprintf("%s[%d]", path, i), w[i], g[i])
		}
	case string:
		g, ok := got.(string)
		if !ok {
			c.fail(path, want, got)
			return
		}
		c.number(path, w, g)
	default: // timestamps (numbers), bucket rules
		if !reflect.DeepEqual(want, got) {
			c.fail(path, want, got)
		}
	}
}

// buckets: [rule, lower, upper, count] each; bounds get the one-ulp
// allowance, counts the query's tolerance.
func (c *histCompare) buckets(path string, want, got any) {
	w, _ := want.([]any)
	g, ok := got.([]any)
	if !ok || len(w) != len(g) {
		c.fail(path, want, got)
		return
	}
	for i := range w {
		wb, _ := w[i].([]any)
		gb, ok := g[i].([]any)
		p := fmt.Sprintf("%s[%d]", path, i)
		if !ok || len(wb) != 4 || len(gb) != 4 {
			c.fail(p, w[i], g[i])
			continue
		}
		if !reflect.DeepEqual(wb[0], gb[0]) {
			c.fail(p+" rule", wb[0], gb[0])
		}
		for j := 1; j <= 2; j++ {
			ws, _ := wb[j].(string)
			gs, _ := gb[j].(string)
			if ws != gs {
				c.fail(p+" bound", ws, gs)
			}
		}
		ws, _ := wb[3].(string)
		gs, _ := gb[3].(string)
		c.number(p+" count", ws, gs)
	}
}

func (c *histCompare) number(path, want, got string) {
	if want == got {
		return
	}
	wf, err1 := strconv.ParseFloat(want, 64)
	gf, err2 := strconv.ParseFloat(got, 64)
	if c.tol > 0 && err1 == nil && err2 == nil {
		if math.Abs(wf-gf) <= c.tol*math.Max(math.Abs(wf), math.Abs(gf)) {
			c.inexact++
			return
		}
	}
	c.fail(path, want, got)
}
