package rw

import (
	"context"
	"fmt"
	"sync"
	"time"
)

// Load is a pre-encoded load: every request of every round, compressed,
// in each shard's sending order. Sending it costs the sender no encoding
// while the server is measured, and every server gets the same bytes.
type Load struct {
	cfg     Config // the load's shape (series, shards, batch, timestamps, kind)
	rounds  int64
	bytes   int64
	encodeS float64
	shards  []encodedShard
}

// encodedShard is one shard's requests: their bodies back to back in data,
// and the steps that cut them apart.
type encodedShard struct {
	data  []byte
	steps []step
}

// step is one request (body data[previous end:end], empty when the step
// only ends a round) and, when rounds > 0, the end of that many rounds.
type step struct {
	end     int
	samples int32
	newest  int64
	rounds  int64
}

// Rounds is how many rounds the load holds.
func (l *Load) Rounds() int64 { return l.rounds }

// Bytes is the load's compressed size.
func (l *Load) Bytes() int64 { return l.bytes }

// EncodeSeconds is the wall time Encode took.
func (l *Load) EncodeSeconds() float64 { return l.encodeS }

// Encode encodes cfg's load in advance: cfg.Rounds rounds (all of them
// when 0 would be unbounded, so 0 is refused), or fewer when they would
// exceed budget bytes (compressed), estimated from the size of round 0.
// Shards encode in parallel.
func Encode(cfg Config, budget int64) (*Load, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	if cfg.Rounds <= 0 {
		return nil, fmt.Errorf("a pre-encoded load needs a round count")
	}
	t0 := time.Now()
	instances := instancesFor(cfg.Series)
	// Round 0, encoded and thrown away, sizes a round.
	perRound := make([]int64, cfg.Concurrency)
	var first int64
	for j := range perRound {
		newShardEncoder(&cfg, j, instances).round(0, true, func(rq request) bool {
			perRound[j] += int64(len(rq.body))
			return true
		})
		first += perRound[j]
	}
	l := &Load{cfg: cfg, shards: make([]encodedShard, cfg.Concurrency)}
	l.rounds = min(cfg.Rounds, max(1, budget/max(first, 1)))
	var wg sync.WaitGroup
	for j := range l.shards {
		sh := &l.shards[j]
		sh.data = make([]byte, 0, perRound[j]*l.rounds*21/20)
		wg.Add(1)
		go func(enc *shardEncoder) {
			defer wg.Done()
			sh.encode(enc, l.rounds)
		}(newShardEncoder(&cfg, j, instances))
	}
	wg.Wait()
	for _, sh := range l.shards {
		l.bytes += int64(len(sh.data))
	}
	l.encodeS = time.Since(t0).Seconds()
	return l, nil
}

// encode appends the shard's requests of rounds [0, rounds), each round's
// end marked on its last step.
func (sh *encodedShard) encode(enc *shardEncoder, rounds int64) {
	keep := func(rq request) bool {
		sh.data = append(sh.data, rq.body...)
		sh.steps = append(sh.steps, step{end: len(sh.data), samples: int32(rq.samples), newest: rq.newest})
		return true
	}
	for r := int64(0); r < rounds; r++ {
		enc.round(r, r == rounds-1, keep)
		if n := len(sh.steps); n > 0 && sh.steps[n-1].rounds == 0 {
			sh.steps[n-1].rounds = r + 1
		} else {
			sh.steps = append(sh.steps, step{end: len(sh.data), rounds: r + 1})
		}
	}
}

// Run sends the load to cfg.URL. The load's shape (series, shards, batch,
// timestamps, kind) is its own; cfg gives the endpoint and the run's
// limits (Duration, Warmup, MaxLag, Timeout, Log). The run ends after
// Duration or when every round was sent, whichever comes first.
func (l *Load) Run(ctx context.Context, cfg Config) (Result, error) {
	run := l.cfg
	run.URL, run.Duration, run.Warmup, run.MaxLag, run.Timeout, run.Log = cfg.URL, cfg.Duration, cfg.Warmup, cfg.MaxLag, cfg.Timeout, cfg.Log
	run.Rounds = l.rounds
	run, err := run.withDefaults()
	if err != nil {
		return Result{}, err
	}
	d := newDriver(ctx, run)
	defer d.cancel()
	var mu sync.Mutex
	finished := 0
	d.runShards(func(j int) {
		if l.sendShard(d, j) {
			mu.Lock()
			finished++
			mu.Unlock()
		}
	})
	res := d.result()
	res.EncodedRounds, res.EncodedBytes = l.rounds, l.bytes
	res.Exhausted = finished == run.Concurrency
	return res, nil
}

// sendShard sends shard j's requests in order, keeping the round books;
// true when it sent every one.
func (l *Load) sendShard(d *driver, j int) bool {
	sh := &l.shards[j]
	off := 0
	for _, st := range sh.steps {
		if st.end > off {
			if !d.send(j, request{body: sh.data[off:st.end], samples: int(st.samples), newest: st.newest}) {
				return false
			}
			off = st.end
		}
		if st.rounds > 0 {
			d.roundDone(j, st.rounds)
			if st.rounds < l.rounds && !d.waitTurn(st.rounds) {
				return false
			}
		}
	}
	return true
}
