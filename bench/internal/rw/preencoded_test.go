package rw

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"sync"
	"testing"

	"github.com/golang/snappy"
	"github.com/prometheus/prometheus/prompb"
)

// receiver is a remote write endpoint that keeps every sample it gets, by
// series, in arrival order.
type receiver struct {
	mu     sync.Mutex
	series map[string][]string // labels -> "ts value" in arrival order
}

func (rc *receiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	comp, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	raw, err := snappy.Decode(nil, comp)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	var req prompb.WriteRequest
	if err := req.Unmarshal(raw); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	rc.mu.Lock()
	defer rc.mu.Unlock()
	for _, ts := range req.Timeseries {
		key := fmt.Sprint(ts.Labels)
		for _, s := range ts.Samples {
			rc.series[key] = append(rc.series[key], fmt.Sprint(s.Timestamp, " ", s.Value))
		}
		for _, h := range ts.Histograms {
			rc.series[key] = append(rc.series[key], fmt.Sprint(h.Timestamp, " ", h.GetCountInt(), " ", h.PositiveDeltas))
		}
	}
	w.WriteHeader(http.StatusNoContent)
}

func receive(t *testing.T, send func(url string) Result) (map[string][]string, Result) {
	t.Helper()
	rc := &receiver{series: map[string][]string{}}
	srv := httptest.NewServer(rc)
	defer srv.Close()
	res := send(srv.URL)
	if res.ErrorRequests > 0 {
		t.Fatalf("%d failed requests: %s", res.ErrorRequests, res.FirstError)
	}
	return rc.series, res
}

// A pre-encoded load delivers exactly what the live generator delivers:
// the same samples of the same series in the same order, whether a
// request spans rounds (shards smaller than a batch) or not.
func TestPreencodedLoadSendsTheLiveLoad(t *testing.T) {
	for _, hist := range []bool{false, true} {
		for _, batch := range []int{5, 16} {
			t.Run(fmt.Sprintf("histograms=%v/batch=%d", hist, batch), func(t *testing.T) {
				cfg := Config{Series: 30, Concurrency: 4, BatchSize: batch, StartMs: 1_700_000_000_000, Rounds: 7, Warmup: 1, Histograms: hist}
				live, liveRes := receive(t, func(url string) Result {
					c := cfg
					c.URL = url
					res, err := Run(context.Background(), c)
					if err != nil {
						t.Fatal(err)
					}
					return res
				})
				load, err := Encode(cfg, 1<<30)
				if err != nil {
					t.Fatal(err)
				}
				pre, preRes := receive(t, func(url string) Result {
					res, err := load.Run(context.Background(), Config{URL: url, Warmup: 1})
					if err != nil {
						t.Fatal(err)
					}
					return res
				})
				if len(live) != cfg.Series {
					t.Fatalf("live load: %d series, want %d", len(live), cfg.Series)
				}
				for k, ss := range live {
					if len(ss) != int(cfg.Rounds) {
						t.Fatalf("live load: series %s has %d samples, want %d", k, len(ss), cfg.Rounds)
					}
				}
				if !reflect.DeepEqual(live, pre) {
					t.Fatalf("the pre-encoded load delivered other samples than the live one")
				}
				if preRes.AcceptedSamples != liveRes.AcceptedSamples || preRes.Requests != liveRes.Requests || preRes.MaxTs != liveRes.MaxTs {
					t.Fatalf("results differ: live %+v, pre-encoded %+v", liveRes, preRes)
				}
				if !preRes.Exhausted || preRes.EncodedRounds != cfg.Rounds || preRes.MinRound != cfg.Rounds {
					t.Fatalf("pre-encoded run: exhausted %v, %d rounds encoded, %d sent by every shard; want all %d", preRes.Exhausted, preRes.EncodedRounds, preRes.MinRound, cfg.Rounds)
				}
			})
		}
	}
}

// The budget caps the rounds encoded (estimated from round 0's size), and
// the load still ends every series at the same round.
func TestPreencodedLoadKeepsToItsBudget(t *testing.T) {
	cfg := Config{Series: 100, Concurrency: 3, BatchSize: 20, StartMs: 1_700_000_000_000, Rounds: 1000, Histograms: true}
	one, err := Encode(Config{Series: 100, Concurrency: 3, BatchSize: 20, StartMs: 1_700_000_000_000, Rounds: 1, Histograms: true}, 1<<30)
	if err != nil {
		t.Fatal(err)
	}
	load, err := Encode(cfg, one.Bytes()*10)
	if err != nil {
		t.Fatal(err)
	}
	if load.Rounds() != 10 {
		t.Fatalf("%d rounds encoded within 10 rounds' bytes, want 10", load.Rounds())
	}
	got, res := receive(t, func(url string) Result {
		res, err := load.Run(context.Background(), Config{URL: url})
		if err != nil {
			t.Fatal(err)
		}
		return res
	})
	if res.AcceptedSamples != 100*10 || len(got) != 100 {
		t.Fatalf("%d samples of %d series sent, want 1000 of 100", res.AcceptedSamples, len(got))
	}
	for k, ss := range got {
		if len(ss) != 10 {
			t.Fatalf("series %s: %d samples, want 10", k, len(ss))
		}
	}
	if _, err := Encode(Config{Series: 10, BatchSize: 5}, 1<<20); err == nil {
		t.Fatal("Encode without a round count: no error")
	}
}
