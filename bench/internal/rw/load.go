package rw

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"sort"
	"sync"
	"time"

	"github.com/golang/snappy"
	"github.com/prometheus/prometheus/prompb"
)

// Config describes one load run.
type Config struct {
	URL         string        // remote write endpoint, e.g. http://127.0.0.1:9090/api/v1/write
	Series      int           // active series
	Concurrency int           // shards sending in parallel; series s belongs to shard s%Concurrency
	BatchSize   int           // samples per request (max_samples_per_send)
	StartMs     int64         // timestamp of round 0
	IntervalMs  int64         // simulated scrape interval (15000)
	Rounds      int64         // stop after this many rounds (0: no limit)
	Duration    time.Duration // stop this much wall time after the warm-up (0: no limit)
	Warmup      int64         // rounds excluded from the rate and latencies (series creation)
	MaxLag      int64         // a shard waits before running more than MaxLag rounds ahead of the slowest (0: 20)
	Timeout     time.Duration // per request (0: 60s)
	Log         io.Writer     // progress lines (nil: none)
	Histograms  bool          // send integer native histograms (histograms.go) instead of float samples
}

// Result is what a run measured.
type Result struct {
	Series          int     `json:"series"`
	Concurrency     int     `json:"concurrency"`
	BatchSize       int     `json:"batch_size"`
	Requests        int64   `json:"requests"`
	Histograms      bool    `json:"histograms,omitempty"` // samples are native histograms
	AcceptedSamples int64   `json:"accepted_samples"`     // in 2xx requests, whole run
	ErrorRequests   int64   `json:"error_requests"`
	ErrorSamples    int64   `json:"error_samples"`
	FirstError      string  `json:"first_error,omitempty"`
	MinRound        int64   `json:"min_round"` // rounds every shard completed
	MaxRound        int64   `json:"max_round"` // rounds the fastest shard completed
	MinTs           int64   `json:"min_ts"`
	MaxTs           int64   `json:"max_ts"` // newest timestamp sent
	WallS           float64 `json:"wall_s"`
	MeasuredS       float64 `json:"measured_s"`       // window after warm-up
	MeasuredSamples int64   `json:"measured_samples"` // accepted within the window
	SamplesPerS     float64 `json:"samples_per_s"`    // MeasuredSamples / MeasuredS
	LatP50Ms        float64 `json:"lat_p50_ms"`
	LatP90Ms        float64 `json:"lat_p90_ms"`
	LatP99Ms        float64 `json:"lat_p99_ms"`
	LatMaxMs        float64 `json:"lat_max_ms"`
}

type reqStat struct {
	done    time.Time
	lat     time.Duration
	samples int
	ok      bool
}

// Run sends the load and returns what was accepted.
func Run(ctx context.Context, cfg Config) (Result, error) {
	if cfg.Series <= 0 || cfg.BatchSize <= 0 {
		return Result{}, fmt.Errorf("series and batch size must be positive")
	}
	if cfg.Concurrency <= 0 {
		cfg.Concurrency = 1
	}
	if cfg.Concurrency > cfg.Series {
		cfg.Concurrency = cfg.Series
	}
	if cfg.IntervalMs <= 0 {
		cfg.IntervalMs = 15000
	}
	if cfg.MaxLag <= 0 {
		cfg.MaxLag = 20
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = 60 * time.Second
	}
	if cfg.Rounds <= 0 && cfg.Duration <= 0 {
		return Result{}, fmt.Errorf("need a round count or a duration")
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	instances := make([]string, cfg.Series/SeriesPerTarget+1)
	for i := range instances {
		instances[i] = Instance(i)
	}
	labelsFn := Labels
	if cfg.Histograms {
		labelsFn = HistLabels
	}
	client := &http.Client{
		Timeout:   cfg.Timeout,
		Transport: &http.Transport{MaxIdleConnsPerHost: cfg.Concurrency, MaxConnsPerHost: cfg.Concurrency, DisableCompression: true},
	}

	// Round bookkeeping: done[j] = rounds shard j completed.
	var mu sync.Mutex
	cond := sync.NewCond(&mu)
	done := make([]int64, cfg.Concurrency)
	minDone := func() int64 {
		m := done[0]
		for _, d := range done[1:] {
			m = min(m, d)
		}
		return m
	}
	var warmEnd time.Time // when every shard finished the warm-up rounds
	start := time.Now()
	if cfg.Warmup <= 0 {
		warmEnd = start
	}
	if cfg.Duration > 0 {
		// The duration counts from the end of the warm-up.
		go func() {
			for ctx.Err() == nil {
				mu.Lock()
				we := warmEnd
				mu.Unlock()
				if !we.IsZero() && time.Since(we) >= cfg.Duration {
					cancel()
					return
				}
				time.Sleep(5 * time.Millisecond)
			}
		}()
	}
	stop := make(chan struct{})
	go func() {
		<-ctx.Done()
		mu.Lock()
		close(stop)
		cond.Broadcast()
		mu.Unlock()
	}()
	stopped := func() bool {
		select {
		case <-stop:
			return true
		default:
			return false
		}
	}

	stats := make([][]reqStat, cfg.Concurrency)
	firstErr := make([]string, cfg.Concurrency)
	maxTs := make([]int64, cfg.Concurrency)
	var wg sync.WaitGroup
	for j := 0; j < cfg.Concurrency; j++ {
		wg.Add(1)
		go func(j int) {
			defer wg.Done()
			var mine []int
			for s := j; s < cfg.Series; s += cfg.Concurrency {
				mine = append(mine, s)
			}
			prev := make([]float64, len(mine))
			pos := make([]int32, len(mine)) // index of series i in the batch, -1: absent
			for i := range pos {
				pos[i] = -1
			}
			var (
				req      prompb.WriteRequest
				nSamples int
				touched  []int
				lblBufs  [][]prompb.Label
				raw      []byte
				comp     []byte
				pending  int64 = -1 // newest ts in the batch
				lastLog        = time.Now()
			)
			flush := func() bool {
				if nSamples == 0 {
					return true
				}
				size := req.Size()
				if cap(raw) < size {
					raw = make([]byte, size)
				}
				raw = raw[:size]
				n, err := req.MarshalToSizedBuffer(raw)
				if err != nil {
					panic(err)
				}
				comp = snappy.Encode(comp[:cap(comp)], raw[size-n:])
				hr, _ := http.NewRequest(http.MethodPost, cfg.URL, bytes.NewReader(comp))
				hr.Header.Set("Content-Encoding", "snappy")
				hr.Header.Set("Content-Type", "application/x-protobuf")
				hr.Header.Set("X-Prometheus-Remote-Write-Version", "0.1.0")
				hr.Header.Set("User-Agent", "ferrite-rwload")
				t0 := time.Now()
				resp, err := client.Do(hr)
				ok := false
				if err == nil {
					body, _ := io.ReadAll(resp.Body)
					resp.Body.Close()
					ok = resp.StatusCode/100 == 2
					if !ok && firstErr[j] == "" {
						firstErr[j] = fmt.Sprintf("HTTP %d: %s", resp.StatusCode, bytes.TrimSpace(body[:min(len(body), 300)]))
					}
				} else if firstErr[j] == "" {
					firstErr[j] = err.Error()
				}
				now := time.Now()
				stats[j] = append(stats[j], reqStat{done: now, lat: now.Sub(t0), samples: nSamples, ok: ok})
				if ok {
					maxTs[j] = max(maxTs[j], pending)
				}
				for _, i := range touched {
					pos[i] = -1
				}
				touched = touched[:0]
				req.Timeseries = req.Timeseries[:0]
				nSamples = 0
				return !stopped()
			}
			for r := int64(0); cfg.Rounds <= 0 || r < cfg.Rounds; r++ {
				mu.Lock()
				for !stopped() && r-minDone() > cfg.MaxLag {
					cond.Wait()
				}
				mu.Unlock()
				if stopped() {
					return
				}
				ts := cfg.StartMs + r*cfg.IntervalMs
				for i, s := range mine {
					if pos[i] < 0 {
						k := len(req.Timeseries)
						if k < cap(req.Timeseries) {
							req.Timeseries = req.Timeseries[:k+1]
						} else {
							req.Timeseries = append(req.Timeseries, prompb.TimeSeries{})
						}
						if k >= len(lblBufs) {
							lblBufs = append(lblBufs, nil)
						}
						lblBufs[k] = labelsFn(lblBufs[k], s, instances)
						req.Timeseries[k].Labels = lblBufs[k]
						req.Timeseries[k].Samples = req.Timeseries[k].Samples[:0]
						req.Timeseries[k].Histograms = req.Timeseries[k].Histograms[:0]
						pos[i] = int32(k)
						touched = append(touched, i)
					}
					t := &req.Timeseries[pos[i]]
					if cfg.Histograms {
						k := len(t.Histograms)
						if k < cap(t.Histograms) {
							t.Histograms = t.Histograms[:k+1]
						} else {
							t.Histograms = append(t.Histograms, prompb.Histogram{})
						}
						FillHistogram(&t.Histograms[k], s, r, ts)
					} else {
						v := Value(s, r, prev[i])
						prev[i] = v
						t.Samples = append(t.Samples, prompb.Sample{Value: v, Timestamp: ts})
					}
					nSamples++
					pending = ts
					if nSamples >= cfg.BatchSize && !flush() {
						return
					}
				}
				if cfg.Rounds > 0 && r == cfg.Rounds-1 && !flush() {
					return
				}
				// A batch may span rounds only while the shard has fewer
				// series than a batch; otherwise send what the round left.
				if len(mine) >= cfg.BatchSize && !flush() {
					return
				}
				mu.Lock()
				done[j] = r + 1
				if cfg.Warmup > 0 && warmEnd.IsZero() && minDone() >= cfg.Warmup {
					warmEnd = time.Now()
				}
				cond.Broadcast()
				mu.Unlock()
				if cfg.Log != nil && j == 0 && time.Since(lastLog) > 10*time.Second {
					lastLog = time.Now()
					fmt.Fprintf(cfg.Log, "  rwload: round %d of %d (%.0fs)\n", r+1, cfg.Rounds, time.Since(start).Seconds())
				}
			}
			// Round-bounded and the last round sent: fully done.
			mu.Lock()
			done[j] = cfg.Rounds
			cond.Broadcast()
			mu.Unlock()
		}(j)
	}
	wg.Wait()
	end := time.Now()

	res := Result{Series: cfg.Series, Concurrency: cfg.Concurrency, BatchSize: cfg.BatchSize, Histograms: cfg.Histograms, MinTs: cfg.StartMs, WallS: end.Sub(start).Seconds()}
	mu.Lock()
	res.MinRound = minDone()
	for _, d := range done {
		res.MaxRound = max(res.MaxRound, d)
	}
	we := warmEnd
	mu.Unlock()
	for _, e := range firstErr {
		if e != "" {
			res.FirstError = e
			break
		}
	}
	for _, t := range maxTs {
		res.MaxTs = max(res.MaxTs, t)
	}
	var lats []time.Duration
	for _, ss := range stats {
		for _, s := range ss {
			res.Requests++
			if s.ok {
				res.AcceptedSamples += int64(s.samples)
			} else {
				res.ErrorRequests++
				res.ErrorSamples += int64(s.samples)
			}
			if !we.IsZero() && s.done.After(we) {
				lats = append(lats, s.lat)
				if s.ok {
					res.MeasuredSamples += int64(s.samples)
				}
			}
		}
	}
	if !we.IsZero() {
		res.MeasuredS = end.Sub(we).Seconds()
		if res.MeasuredS > 0 {
			res.SamplesPerS = float64(res.MeasuredSamples) / res.MeasuredS
		}
	}
	sort.Slice(lats, func(a, b int) bool { return lats[a] < lats[b] })
	pct := func(p float64) float64 {
		if len(lats) == 0 {
			return 0
		}
		return float64(lats[min(len(lats)-1, int(p*float64(len(lats))))]) / 1e6
	}
	res.LatP50Ms, res.LatP90Ms, res.LatP99Ms = pct(0.5), pct(0.9), pct(0.99)
	if len(lats) > 0 {
		res.LatMaxMs = float64(lats[len(lats)-1]) / 1e6
	}
	return res, nil
}
