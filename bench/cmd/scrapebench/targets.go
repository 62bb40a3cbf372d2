package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// The load program: -targets node_exporter-like targets, each on its own
// loopback port (so each is a target of its own, instance "127.0.0.1:port",
// with no relabeling), all served by one http.Server in this process. A
// target's n-th scrape gets the body of scrape number n (counters grow
// every scrape); bodies are rendered once per variant and scrape number and
// served gzip-compressed when the scraper asks for it, as node_exporter
// (client_golang's promhttp) does.

const contentType = "text/plain; version=0.0.4; charset=utf-8"

// target is one served target and what the load saw of its scrapes.
type target struct {
	addr   string
	served atomic.Int64 // bodies served since start: the next body's scrape number

	mu    sync.Mutex
	first time.Time // first scrape of the run
	prev  time.Time // last scrape
	acc   accuracy  // scrapes inside the window
}

// accuracy is what one target's scrapes inside the measured window show.
type accuracy struct {
	times     []int64 // arrival of each scrape request inside the window, Unix µs
	gzipped   int64   // bodies sent gzip-compressed
	bytes     int64   // bytes sent inside the window (as sent: compressed or not)
	errorsRsp int64   // bodies that could not be rendered
}

// window is the measured window, (start, end].
type window struct{ start, end time.Time }

// targetSet serves all targets.
type targetSet struct {
	targets  []*target
	byPort   map[int]int // local port -> target index
	cache    *bodyCache
	exp      *exposition
	variants int
	interval time.Duration
	win      atomic.Pointer[window]
	srv      *http.Server
	serveErr chan error
}

// startTargets listens on n loopback ports and serves exp's bodies there.
func startTargets(n int, exp *exposition, variants int, interval time.Duration) (*targetSet, error) {
	if n < 1 {
		return nil, fmt.Errorf("targets must be at least 1, got %d", n)
	}
	if variants < 1 {
		return nil, fmt.Errorf("variants must be at least 1, got %d", variants)
	}
	ts := &targetSet{byPort: map[int]int{}, cache: newBodyCache(exp, variants), exp: exp, variants: variants,
		interval: interval, serveErr: make(chan error, n)}
	ts.srv = &http.Server{Handler: ts, ReadHeaderTimeout: time.Minute}
	var ls []net.Listener
	for i := range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			for _, l := range ls {
				l.Close()
			}
			return nil, fmt.Errorf("listening for target %d of %d: %w (raise the open files limit, ulimit -n)", i+1, n, err)
		}
		ls = append(ls, l)
		port := l.Addr().(*net.TCPAddr).Port
		ts.byPort[port] = i
		ts.targets = append(ts.targets, &target{addr: l.Addr().String()})
	}
	for _, l := range ls {
		go func(l net.Listener) {
			if err := ts.srv.Serve(l); err != nil && !errors.Is(err, http.ErrServerClosed) {
				ts.serveErr <- err
			}
		}(l)
	}
	return ts, nil
}

// close stops serving.
func (ts *targetSet) close() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = ts.srv.Shutdown(ctx)
}

// addrs lists the targets' host:port, in target order.
func (ts *targetSet) addrs() []string {
	a := make([]string, len(ts.targets))
	for i, t := range ts.targets {
		a[i] = t.addr
	}
	return a
}

// ServeHTTP serves a target's /metrics.
func (ts *targetSet) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	now := time.Now()
	idx := ts.index(r)
	if idx < 0 || r.URL.Path != "/metrics" {
		http.NotFound(w, r)
		return
	}
	t := ts.targets[idx]
	gen := t.served.Add(1) - 1
	b, err := ts.cache.get(idx%ts.variants, gen)
	if err != nil {
		t.mu.Lock()
		t.acc.errorsRsp++
		t.mu.Unlock()
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	out, gz := b.plain, acceptsGzip(r.Header.Get("Accept-Encoding"))
	h := w.Header()
	h.Set("Content-Type", contentType)
	if gz {
		out = b.gz
		h.Set("Content-Encoding", "gzip")
	}
	h.Set("Content-Length", strconv.Itoa(len(out)))
	_, _ = w.Write(out)
	ts.record(t, now, gz, len(out))
}

// index is the target a request came to, by the local port (-1: none).
func (ts *targetSet) index(r *http.Request) int {
	a, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr)
	if !ok {
		return -1
	}
	ta, ok := a.(*net.TCPAddr)
	if !ok {
		return -1
	}
	i, ok := ts.byPort[ta.Port]
	if !ok {
		return -1
	}
	return i
}

// acceptsGzip tells whether an Accept-Encoding header asks for gzip (and
// does not refuse it with q=0).
func acceptsGzip(h string) bool {
	for _, part := range strings.Split(h, ",") {
		enc, params, _ := strings.Cut(strings.TrimSpace(part), ";")
		if strings.TrimSpace(enc) != "gzip" {
			continue
		}
		q := strings.ReplaceAll(params, " ", "")
		return q != "q=0" && q != "q=0.0" && q != "q=0.00" && q != "q=0.000"
	}
	return false
}

// record notes a scrape of t at now.
func (ts *targetSet) record(t *target, now time.Time, gz bool, n int) {
	w := ts.win.Load()
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.first.IsZero() {
		t.first = now
	}
	if w != nil && now.After(w.start) && !now.After(w.end) {
		a := &t.acc
		a.times = append(a.times, now.UnixMicro())
		a.bytes += int64(n)
		if gz {
			a.gzipped++
		}
	}
	t.prev = now
}

// reset forgets the scrapes seen so far (a new server's run).
func (ts *targetSet) reset() {
	ts.win.Store(nil)
	for _, t := range ts.targets {
		t.mu.Lock()
		t.first, t.prev, t.acc = time.Time{}, time.Time{}, accuracy{}
		t.mu.Unlock()
	}
}

// firstScrapes tells how many targets were scraped since the last reset,
// and when the last of them was scraped first.
func (ts *targetSet) firstScrapes() (int, time.Time) {
	n, last := 0, time.Time{}
	for _, t := range ts.targets {
		t.mu.Lock()
		if !t.first.IsZero() {
			n++
			if t.first.After(last) {
				last = t.first
			}
		}
		t.mu.Unlock()
	}
	return n, last
}

// quietPhase is the middle of the longest gap between the targets' scrape
// phases in the interval grid (phases of the last scrapes, Unix time modulo
// the interval): window edges there fall between scrapes, so every target
// has exactly one scrape per interval inside the window.
func (ts *targetSet) quietPhase() time.Duration {
	iv := ts.interval.Nanoseconds()
	var ph []int64
	for _, t := range ts.targets {
		t.mu.Lock()
		if !t.prev.IsZero() {
			ph = append(ph, t.prev.UnixNano()%iv)
		}
		t.mu.Unlock()
	}
	if len(ph) == 0 {
		return 0
	}
	sort.Slice(ph, func(i, j int) bool { return ph[i] < ph[j] })
	bestGap, bestMid := int64(-1), int64(0)
	for i, p := range ph {
		next := iv + ph[0] // wrap around
		if i+1 < len(ph) {
			next = ph[i+1]
		}
		if gap := next - p; gap > bestGap {
			bestGap, bestMid = gap, (p+gap/2)%iv
		}
	}
	return time.Duration(bestMid)
}

// nextAtPhase is the first time at least lead after now whose Unix time
// modulo the interval is phase.
func (ts *targetSet) nextAtPhase(now time.Time, lead, phase time.Duration) time.Time {
	iv := ts.interval.Nanoseconds()
	at := now.UnixNano() - now.UnixNano()%iv + phase.Nanoseconds()
	for at < now.Add(lead).UnixNano() {
		at += iv
	}
	return time.Unix(0, at)
}

// loadStats sums the targets' window accuracy.
type loadStats struct {
	bodies, gzipped, bytes int64
	errors                 int64
	gaps                   gapStats
}

func (ts *targetSet) stats(expected int64) loadStats {
	var s loadStats
	for _, t := range ts.targets {
		t.mu.Lock()
		a := t.acc
		t.mu.Unlock()
		s.bodies += int64(len(a.times))
		s.gzipped += a.gzipped
		s.bytes += a.bytes
		s.errors += a.errorsRsp
		ms := make([]float64, len(a.times))
		for i, us := range a.times {
			ms[i] = float64(us) / 1000
		}
		s.gaps.add(ms, expected, ts.interval)
	}
	return s
}
