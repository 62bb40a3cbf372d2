package interop_test

import (
	"bytes"
	"fmt"
	"io"
	"math/rand"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gogo/protobuf/proto"
	"github.com/golang/snappy"
	"github.com/prometheus/prometheus/model/histogram"
	"github.com/prometheus/prometheus/prompb"

	"ferrite.dev/interop/internal/e2e"
	"ferrite.dev/interop/internal/promtsdb"
)

// TestOutOfOrderThroughTheServer (issue 10, items 4 and 7b/7d): Ferrite
// and a real Prometheus v3.16.0, both run with
// `storage.tsdb.out_of_order_time_window: 2h` from their config file, get
// the same remote-write requests: in-order floats and integer histograms,
// then out-of-order ones (between the in-order samples) in shuffled order.
// Ferrite is killed with SIGKILL three times while the out-of-order
// requests go in; a request that got no answer is sent again after the
// restart (the same samples: a duplicate is dropped), so every sample is
// acknowledged exactly once by the end. A sample older than the window
// gets Prometheus' 400 "too old sample" from both. Then both are stopped,
// Ferrite's dir is compacted by `ferrite tsdb compact` (its out-of-order
// samples moved into out-of-order blocks, merged with the in-order blocks),
// and Prometheus' census of Ferrite's dir (series, samples per kind, sums,
// and a hash of every sample) equals its census of its own dir.
func TestOutOfOrderThroughTheServer(t *testing.T) {
	fer := ferriteBin(t)
	prom, _ := e2eBinaries(t)
	tmp := t.TempDir()
	cfg := filepath.Join(tmp, "prometheus.yml")
	e2eWriteFile(t, cfg, "global:\n  scrape_interval: 1m\nstorage:\n  tsdb:\n    out_of_order_time_window: 2h\n")
	ferData := filepath.Join(tmp, "ferrite-data")
	promData := filepath.Join(tmp, "prom-data")

	ferPort, err := e2e.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	ferURL := fmt.Sprintf("http://127.0.0.1:%d", ferPort)
	startFerrite := func(n int) *e2e.Proc {
		p, err := e2e.Start("ferrite", fer, tmp, filepath.Join(tmp, fmt.Sprintf("ferrite-%d.log", n)),
			"--config.file", cfg, "--storage.tsdb.path", ferData,
			"--web.listen-address", fmt.Sprintf("127.0.0.1:%d", ferPort))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(p.Kill)
		if err := p.WaitReady(ferURL+"/-/ready", 60*time.Second); err != nil {
			t.Fatalf("%v\n%s", err, p.LogTail(20))
		}
		return p
	}
	ferProc := startFerrite(0)
	promPort, err := e2e.FreePort()
	for err == nil && promPort == ferPort {
		promPort, err = e2e.FreePort()
	}
	if err != nil {
		t.Fatal(err)
	}
	promURL := fmt.Sprintf("http://127.0.0.1:%d", promPort)
	promProc, err := e2e.Start("prometheus", prom, tmp, filepath.Join(tmp, "prometheus.log"),
		"--config.file="+cfg, "--storage.tsdb.path="+promData,
		"--web.enable-remote-write-receiver",
		fmt.Sprintf("--web.listen-address=127.0.0.1:%d", promPort))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(promProc.Kill)
	if err := promProc.WaitReady(promURL+"/-/ready", 60*time.Second); err != nil {
		t.Fatal(err)
	}

	// 1 h of in-order samples every 15 s, ending now, then out-of-order
	// ones 7 s before each of the last 140.
	end := time.Now().Truncate(15 * time.Second).UnixMilli()
	start := end - 240*15000
	var inOrder, outOfOrder []*prompb.WriteRequest
	for j := int64(0); j < 240; j++ {
		inOrder = append(inOrder, oooRequest(start+j*15000, j))
	}
	for j := int64(100); j < 240; j++ {
		outOfOrder = append(outOfOrder, oooRequest(start+j*15000-7000, 1000+j))
	}
	rand.New(rand.NewSource(7)).Shuffle(len(outOfOrder), func(a, b int) {
		outOfOrder[a], outOfOrder[b] = outOfOrder[b], outOfOrder[a]
	})
	for _, r := range inOrder {
		mustWrite(t, promURL, r)
		mustWrite(t, ferURL, r)
	}
	kills := map[int]bool{20: true, 61: true, 117: true}
	restarts := 0
	for i, r := range outOfOrder {
		mustWrite(t, promURL, r)
		if kills[i] {
			// Killed while this request may be in flight: it is sent
			// again if it got no answer.
			go func(p *e2e.Proc) {
				time.Sleep(time.Millisecond)
				p.Kill()
			}(ferProc)
			status, _, err := writeRequest(ferURL, r)
			ferProc.Kill()
			restarts++
			ferProc = startFerrite(restarts)
			if err != nil || status/100 != 2 {
				t.Logf("request %d: no answer before the kill (%v, %d): sent again", i, err, status)
				mustWrite(t, ferURL, r)
			}
			continue
		}
		mustWrite(t, ferURL, r)
	}

	// Older than the window: Prometheus' refusal from both.
	tooOld := oooRequest(end-3*3600*1000, 5)
	for _, base := range []string{promURL, ferURL} {
		status, body, err := writeRequest(base, tooOld)
		if err != nil {
			t.Fatal(err)
		}
		if status != http.StatusBadRequest || !strings.Contains(body, "too old sample") {
			t.Errorf("%s: a sample older than the window got %d %q, want 400 too old sample", base, status, body)
		}
	}

	if err := ferProc.Stop(60 * time.Second); err != nil {
		t.Fatalf("stopping ferrite: %v", err)
	}
	if err := promProc.Stop(60 * time.Second); err != nil {
		t.Fatalf("stopping prometheus: %v", err)
	}
	want, err := promtsdb.CensusReadOnly(promData)
	if err != nil {
		t.Fatalf("prometheus cannot read its own dir: %v", err)
	}
	if want.Floats != 380*10 || want.Histograms != 380*5 {
		t.Fatalf("prometheus holds %s, want 3800 floats and 1900 histograms", want)
	}
	got, err := promtsdb.CensusReadOnly(ferData)
	if err != nil {
		t.Fatalf("prometheus cannot read ferrite's dir: %v", err)
	}
	if !got.Equal(want) || got.Hash != want.Hash {
		t.Errorf("prometheus reads from ferrite's dir (after %d kills)\n  %s\nand from its own\n  %s", restarts, got, want)
	}
	out := runFerrite(t, "tsdb", "compact", ferData)
	t.Logf("ferrite tsdb compact:\n%s", tail(out, 4))
	got, err = promtsdb.CensusReadOnly(ferData)
	if err != nil {
		t.Fatalf("after ferrite tsdb compact, prometheus cannot read ferrite's dir: %v", err)
	}
	if !got.Equal(want) || got.Hash != want.Hash {
		t.Errorf("after ferrite tsdb compact, prometheus reads\n  %s\nwant\n  %s", got, want)
	}
}

// oooRequest is one request: 10 float series and 5 integer histogram
// series, one sample each at t, values from k.
func oooRequest(t, k int64) *prompb.WriteRequest {
	req := &prompb.WriteRequest{}
	for i := int64(0); i < 10; i++ {
		req.Timeseries = append(req.Timeseries, prompb.TimeSeries{
			Labels:  []prompb.Label{{Name: "__name__", Value: "ooo_float"}, {Name: "series", Value: fmt.Sprint(i)}},
			Samples: []prompb.Sample{{Value: float64(k*10+i) / 4, Timestamp: t}},
		})
	}
	for i := int64(0); i < 5; i++ {
		h := &histogram.Histogram{
			Schema:          1,
			ZeroThreshold:   0.001,
			ZeroCount:       uint64(k % 7),
			Count:           uint64(k%7 + 3*k + 4 + i),
			Sum:             float64(k) * 1.5,
			PositiveSpans:   []histogram.Span{{Offset: int32(i), Length: 2}},
			PositiveBuckets: []int64{k + 1, k + 2 + i},
		}
		req.Timeseries = append(req.Timeseries, prompb.TimeSeries{
			Labels:     []prompb.Label{{Name: "__name__", Value: "ooo_histogram"}, {Name: "series", Value: fmt.Sprint(i)}},
			Histograms: []prompb.Histogram{prompb.FromIntHistogram(t, h)},
		})
	}
	return req
}

// writeRequest sends req by remote write 1.0; the status and body, or the
// transport's error.
func writeRequest(base string, req *prompb.WriteRequest) (int, string, error) {
	raw, err := proto.Marshal(req)
	if err != nil {
		return 0, "", err
	}
	httpReq, err := http.NewRequest("POST", base+"/api/v1/write", bytes.NewReader(snappy.Encode(nil, raw)))
	if err != nil {
		return 0, "", err
	}
	httpReq.Header.Set("Content-Type", "application/x-protobuf")
	httpReq.Header.Set("Content-Encoding", "snappy")
	httpReq.Header.Set("X-Prometheus-Remote-Write-Version", "0.1.0")
	resp, err := http.DefaultClient.Do(httpReq)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body), nil
}

func mustWrite(t *testing.T, base string, req *prompb.WriteRequest) {
	t.Helper()
	status, body, err := writeRequest(base, req)
	if err != nil {
		t.Fatalf("remote write to %s: %v", base, err)
	}
	if status/100 != 2 {
		t.Fatalf("remote write to %s: %d %s", base, status, body)
	}
}
