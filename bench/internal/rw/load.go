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

// withDefaults checks cfg and fills its zero fields.
func (cfg Config) withDefaults() (Config, error) {
	if cfg.Series <= 0 || cfg.BatchSize <= 0 {
		return cfg, fmt.Errorf("series and batch size must be positive")
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
	return cfg, nil
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
	// A pre-encoded load (Encode): the rounds it holds, their compressed
	// size, and whether every round was sent before the duration ran out
	// (then the window ends with the last request).
	EncodedRounds int64 `json:"encoded_rounds,omitempty"`
	EncodedBytes  int64 `json:"encoded_bytes,omitempty"`
	Exhausted     bool  `json:"exhausted,omitempty"`
}

// Run generates the load while it sends it: each shard encodes a request,
// sends it, waits for the answer, encodes the next.
func Run(ctx context.Context, cfg Config) (Result, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return Result{}, err
	}
	if cfg.Rounds <= 0 && cfg.Duration <= 0 {
		return Result{}, fmt.Errorf("need a round count or a duration")
	}
	d := newDriver(ctx, cfg)
	defer d.cancel()
	instances := instancesFor(cfg.Series)
	d.runShards(func(j int) {
		enc := newShardEncoder(&cfg, j, instances)
		send := func(rq request) bool { return d.send(j, rq) }
		for r := int64(0); cfg.Rounds <= 0 || r < cfg.Rounds; r++ {
			if !d.waitTurn(r) || !enc.round(r, cfg.Rounds > 0 && r == cfg.Rounds-1, send) {
				return
			}
			d.roundDone(j, r+1)
		}
	})
	return d.result(), nil
}

type reqStat struct {
	done    time.Time
	lat     time.Duration
	samples int
	ok      bool
}

// driver sends the shards' requests and keeps the books of a run: rounds
// completed per shard (no shard runs more than MaxLag rounds ahead), the
// end of the warm-up, the duration, and every request's outcome.
type driver struct {
	cfg    Config
	client *http.Client
	cancel context.CancelFunc
	stop   chan struct{} // closed when the run stops

	mu      sync.Mutex
	cond    *sync.Cond
	done    []int64   // rounds shard j completed
	warmEnd time.Time // when every shard finished the warm-up rounds
	start   time.Time
	lastLog time.Time // shard 0's last progress line

	// Per shard, written only by the shard.
	stats    [][]reqStat
	firstErr []string
	maxTs    []int64
}

func newDriver(ctx context.Context, cfg Config) *driver {
	ctx, cancel := context.WithCancel(ctx)
	d := &driver{
		cfg:    cfg,
		cancel: cancel,
		stop:   make(chan struct{}),
		client: &http.Client{
			Timeout:   cfg.Timeout,
			Transport: &http.Transport{MaxIdleConnsPerHost: cfg.Concurrency, MaxConnsPerHost: cfg.Concurrency, DisableCompression: true},
		},
		done:     make([]int64, cfg.Concurrency),
		stats:    make([][]reqStat, cfg.Concurrency),
		firstErr: make([]string, cfg.Concurrency),
		maxTs:    make([]int64, cfg.Concurrency),
		start:    time.Now(),
	}
	d.lastLog = d.start
	d.cond = sync.NewCond(&d.mu)
	if cfg.Warmup <= 0 {
		d.warmEnd = d.start
	}
	if cfg.Duration > 0 {
		go d.stopAfterDuration(ctx)
	}
	go func() {
		<-ctx.Done()
		d.mu.Lock()
		close(d.stop)
		d.cond.Broadcast()
		d.mu.Unlock()
	}()
	return d
}

// stopAfterDuration cancels the run Duration after the warm-up ended.
func (d *driver) stopAfterDuration(ctx context.Context) {
	for ctx.Err() == nil {
		d.mu.Lock()
		we := d.warmEnd
		d.mu.Unlock()
		if !we.IsZero() && time.Since(we) >= d.cfg.Duration {
			d.cancel()
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func (d *driver) stopped() bool {
	select {
	case <-d.stop:
		return true
	default:
		return false
	}
}

// minDone is the number of rounds every shard completed; d.mu held.
func (d *driver) minDone() int64 {
	m := d.done[0]
	for _, n := range d.done[1:] {
		m = min(m, n)
	}
	return m
}

// runShards runs shard(j) for every shard in parallel and waits for them.
func (d *driver) runShards(shard func(j int)) {
	var wg sync.WaitGroup
	for j := 0; j < d.cfg.Concurrency; j++ {
		wg.Add(1)
		go func(j int) {
			defer wg.Done()
			shard(j)
		}(j)
	}
	wg.Wait()
}

// waitTurn waits until shard may start round r (at most MaxLag rounds
// ahead of the slowest shard); false when the run stopped.
func (d *driver) waitTurn(r int64) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	for !d.stopped() && r-d.minDone() > d.cfg.MaxLag {
		d.cond.Wait()
	}
	return !d.stopped()
}

// roundDone records that shard j completed its first rounds rounds.
func (d *driver) roundDone(j int, rounds int64) {
	d.mu.Lock()
	d.done[j] = rounds
	if d.cfg.Warmup > 0 && d.warmEnd.IsZero() && d.minDone() >= d.cfg.Warmup {
		d.warmEnd = time.Now()
	}
	d.cond.Broadcast()
	d.mu.Unlock()
	if d.cfg.Log != nil && j == 0 && time.Since(d.lastLog) > 10*time.Second {
		d.lastLog = time.Now()
		fmt.Fprintf(d.cfg.Log, "  rwload: round %d (%.0fs)\n", rounds, time.Since(d.start).Seconds())
	}
}

// send posts shard j's request and records its outcome; false when the
// run stopped.
func (d *driver) send(j int, rq request) bool {
	hr, err := http.NewRequest(http.MethodPost, d.cfg.URL, bytes.NewReader(rq.body))
	if err != nil {
		panic(err) // the URL was checked by the first request's caller
	}
	hr.Header.Set("Content-Encoding", "snappy")
	hr.Header.Set("Content-Type", "application/x-protobuf")
	hr.Header.Set("X-Prometheus-Remote-Write-Version", "0.1.0")
	hr.Header.Set("User-Agent", "ferrite-rwload")
	t0 := time.Now()
	resp, err := d.client.Do(hr)
	ok := false
	if err == nil {
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		ok = resp.StatusCode/100 == 2
		if !ok && d.firstErr[j] == "" {
			d.firstErr[j] = fmt.Sprintf("HTTP %d: %s", resp.StatusCode, bytes.TrimSpace(body[:min(len(body), 300)]))
		}
	} else if d.firstErr[j] == "" {
		d.firstErr[j] = err.Error()
	}
	now := time.Now()
	d.stats[j] = append(d.stats[j], reqStat{done: now, lat: now.Sub(t0), samples: rq.samples, ok: ok})
	if ok {
		d.maxTs[j] = max(d.maxTs[j], rq.newest)
	}
	return !d.stopped()
}

// result sums up the run; called after runShards returned.
func (d *driver) result() Result {
	end := time.Now()
	cfg := d.cfg
	res := Result{Series: cfg.Series, Concurrency: cfg.Concurrency, BatchSize: cfg.BatchSize, Histograms: cfg.Histograms, MinTs: cfg.StartMs, WallS: end.Sub(d.start).Seconds()}
	d.mu.Lock()
	res.MinRound = d.minDone()
	for _, n := range d.done {
		res.MaxRound = max(res.MaxRound, n)
	}
	we := d.warmEnd
	d.mu.Unlock()
	for _, e := range d.firstErr {
		if e != "" {
			res.FirstError = e
			break
		}
	}
	for _, t := range d.maxTs {
		res.MaxTs = max(res.MaxTs, t)
	}
	var lats []time.Duration
	for _, ss := range d.stats {
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
	return res
}
