package interop_test

// Remote read from Ferrite with Prometheus' own remote read client
// (storage/remote, both response types) gives, series for series and
// sample for sample, what Prometheus' TSDB reads from the same data dir
// (written by Prometheus: blocks, WAL and chunks_head).

import (
	"context"
	"fmt"
	"math"
	"net/url"
	"os"
	"path/filepath"
	"testing"
	"time"

	config_util "github.com/prometheus/common/config"
	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/config"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/prompb"
	"github.com/prometheus/prometheus/storage"
	"github.com/prometheus/prometheus/storage/remote"
	"github.com/prometheus/prometheus/tsdb"
	"github.com/prometheus/prometheus/tsdb/chunkenc"

	"ferrite.dev/interop/internal/e2e"
	"ferrite.dev/interop/internal/promtsdb"
)

type readSeries struct {
	labels  string
	samples [][2]float64
}

// collect reads a series set. A series split over several frames of a
// streamed response comes as consecutive series with the same labels (as
// from Prometheus' own server); they are joined here, as Prometheus'
// merging querier joins them.
func collect(t *testing.T, ss storage.SeriesSet) []readSeries {
	t.Helper()
	var out []readSeries
	var it chunkenc.Iterator
	for ss.Next() {
		s := ss.At()
		name := s.Labels().String()
		if n := len(out); n == 0 || out[n-1].labels != name {
			out = append(out, readSeries{labels: name})
		}
		rs := &out[len(out)-1]
		it = s.Iterator(it)
		for vt := it.Next(); vt != chunkenc.ValNone; vt = it.Next() {
			if vt != chunkenc.ValFloat {
				t.Fatalf("%s: value type %v", rs.labels, vt)
			}
			ts, v := it.At()
			if n := len(rs.samples); n > 0 && rs.samples[n-1][0] >= float64(ts) {
				t.Fatalf("%s: sample at %d after %v", rs.labels, ts, rs.samples[n-1][0])
			}
			rs.samples = append(rs.samples, [2]float64{float64(ts), v})
		}
		if err := it.Err(); err != nil {
			t.Fatalf("%s: %v", rs.labels, err)
		}
	}
	if err := ss.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

func sameSeries(t *testing.T, what string, got, want []readSeries) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d series, want %d", what, len(got), len(want))
	}
	for i := range want {
		if got[i].labels != want[i].labels {
			t.Fatalf("%s: series %d is %s, want %s", what, i, got[i].labels, want[i].labels)
		}
		if len(got[i].samples) != len(want[i].samples) {
			t.Fatalf("%s: %s has %d samples, want %d", what, want[i].labels, len(got[i].samples), len(want[i].samples))
		}
		for k, s := range want[i].samples {
			g := got[i].samples[k]
			if g[0] != s[0] || math.Float64bits(g[1]) != math.Float64bits(s[1]) {
				t.Fatalf("%s: %s sample %d is %v, want %v", what, want[i].labels, k, g, s)
			}
		}
	}
}

func TestRemoteReadMatchesPrometheusTSDB(t *testing.T) {
	fer := ferriteBin(t)
	tmp := t.TempDir()
	src := filepath.Join(tmp, "prom")
	// 40 series x 2000 samples every 15 s (8.3 h): blocks after compaction,
	// the rest in the head.
	if _, err := promtsdb.Generate(promtsdb.GenOptions{Dir: src, Series: 40, Samples: 2000, Compact: true}); err != nil {
		t.Fatal(err)
	}
	if blocks, _ := filepath.Glob(filepath.Join(src, "01*")); len(blocks) == 0 {
		t.Fatal("the generated dir has no blocks")
	}
	ferDir := filepath.Join(tmp, "ferrite")
	copyDir(t, src, ferDir)

	port, err := e2e.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	startFerrite := func(log string, extra ...string) *e2e.Proc {
		t.Helper()
		args := append([]string{"--storage.tsdb.path", ferDir, "--web.listen-address", fmt.Sprintf("127.0.0.1:%d", port), noScrapeConfig(t, tmp)}, extra...)
		p, err := e2e.Start("ferrite", fer, tmp, filepath.Join(tmp, log), args...)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(p.Kill)
		if err := p.WaitReady(base+"/-/ready", 60*time.Second); err != nil {
			t.Fatal(err)
		}
		return p
	}
	// Small frames: series are split over several (Prometheus' client
	// reads each frame as a series; collect joins them).
	p := startFerrite("ferrite-1.log", "--storage.remote.read-max-bytes-in-frame", "2000")

	// What Prometheus' TSDB reads from the dir (opened read-only afresh for
	// each read: its head loads into a sandbox once).
	promRead := func(mint, maxt int64, ms []*labels.Matcher) []readSeries {
		t.Helper()
		sandbox, err := os.MkdirTemp(tmp, "ro-")
		if err != nil {
			t.Fatal(err)
		}
		db, err := tsdb.OpenDBReadOnly(src, sandbox, promtsdb.Logger)
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		q, err := db.Querier(mint, maxt)
		if err != nil {
			t.Fatal(err)
		}
		defer q.Close()
		return collect(t, q.Select(context.Background(), true, nil, ms...))
	}

	u, err := url.Parse(base + "/api/v1/read")
	if err != nil {
		t.Fatal(err)
	}
	client := func(types ...prompb.ReadRequest_ResponseType) remote.ReadClient {
		c, err := remote.NewReadClient("ferrite", &remote.ClientConfig{
			URL:                   &config_util.URL{URL: u},
			Timeout:               model.Duration(60 * time.Second),
			ChunkedReadLimit:      config.DefaultChunkedReadLimit,
			AcceptedResponseTypes: types,
		})
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	streamed := client(prompb.ReadRequest_STREAMED_XOR_CHUNKS, prompb.ReadRequest_SAMPLES)
	samples := client(prompb.ReadRequest_SAMPLES)

	const start = int64(1_700_000_000_000)
	const end = start + 2000*15_000
	cases := []struct {
		name       string
		mint, maxt int64
		matchers   []*labels.Matcher
	}{
		{"everything", math.MinInt64 / 2, math.MaxInt64 / 2, []*labels.Matcher{labels.MustNewMatcher(labels.MatchRegexp, "__name__", ".+")}},
		{"a window across blocks and head", start + 3*3600_000 + 7, end - 1800_000, []*labels.Matcher{labels.MustNewMatcher(labels.MatchRegexp, "__name__", ".+")}},
		{"some series", start, end, []*labels.Matcher{
			labels.MustNewMatcher(labels.MatchRegexp, "__name__", ".+"),
			labels.MustNewMatcher(labels.MatchNotRegexp, "__name__", ".*[13579]"),
		}},
	}
	for _, c := range cases {
		want := promRead(c.mint, c.maxt, c.matchers)
		if len(want) == 0 {
			t.Fatalf("%s: prometheus reads nothing", c.name)
		}
		pq, err := remote.ToQuery(c.mint, c.maxt, c.matchers, nil)
		if err != nil {
			t.Fatal(err)
		}
		for name, rc := range map[string]remote.ReadClient{"streamed chunks": streamed, "samples": samples} {
			ss, err := rc.Read(context.Background(), pq, true)
			if err != nil {
				t.Fatalf("%s, %s: %v\nferrite log:\n%s", c.name, name, err, p.LogTail(20))
			}
			sameSeries(t, c.name+", "+name, collect(t, ss), want)
		}
	}
	if err := p.Stop(30 * time.Second); err != nil {
		t.Errorf("ferrite did not exit cleanly: %v", err)
	}

	// A real Prometheus v3.16.0 server with Ferrite as its remote_read, and
	// nothing of its own, answers PromQL as Ferrite does. (With the default
	// 1 MiB frames: Prometheus' querier does not join a series split over
	// frames, whichever server split it.)
	p = startFerrite("ferrite-2.log")
	prom, _ := e2eBinaries(t)
	promPort, err := e2e.FreePort()
	for err == nil && promPort == port {
		promPort, err = e2e.FreePort()
	}
	if err != nil {
		t.Fatal(err)
	}
	promURL := fmt.Sprintf("http://127.0.0.1:%d", promPort)
	cfg := filepath.Join(tmp, "prometheus.yml")
	e2eWriteFile(t, cfg, fmt.Sprintf("remote_read:\n  - url: %s/api/v1/read\n    read_recent: true\n", base))
	pp, err := e2e.Start("prometheus", prom, tmp, filepath.Join(tmp, "prometheus.log"),
		"--config.file="+cfg, "--storage.tsdb.path="+filepath.Join(tmp, "prom-local"),
		fmt.Sprintf("--web.listen-address=127.0.0.1:%d", promPort))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pp.Kill)
	if err := pp.WaitReady(promURL+"/-/ready", 60*time.Second); err != nil {
		t.Fatal(err)
	}
	at := time.UnixMilli(end - 600_000)
	for _, q := range []string{
		`count({__name__=~".+"})`,
		`sum({__name__=~".+"})`,
		`count_over_time(synth_metric_7[3h])`,
		`max_over_time(synth_metric_3[6h])`,
		`rate(synth_metric_5[1h])`,
	} {
		want, ok, err := e2e.QueryScalar(base, q, at)
		if err != nil || !ok {
			t.Fatalf("ferrite %s: %v (present %v)", q, err, ok)
		}
		got, ok, err := e2e.QueryScalar(promURL, q, at)
		if err != nil || !ok {
			t.Fatalf("prometheus over remote read, %s: %v (present %v)\nprometheus log:\n%s", q, err, ok, pp.LogTail(20))
		}
		if !closeRel(got, want, 1e-12) {
			t.Errorf("%s: prometheus over remote read %v, ferrite %v", q, got, want)
		}
	}
	if err := pp.Stop(30 * time.Second); err != nil {
		t.Logf("prometheus stop: %v", err)
	}
	if err := p.Stop(30 * time.Second); err != nil {
		t.Errorf("ferrite did not exit cleanly: %v", err)
	}
}
