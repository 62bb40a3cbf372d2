// Command rwload sends Prometheus remote write 1.0 load (protobuf + snappy,
// prompb types) to a server: -series active series with node_exporter-like
// labels (50 series per simulated target), one sample per series per
// simulated scrape round. Sample time advances -interval per round, not with
// the wall clock, so a long history can be sent quickly. -concurrency shards
// (series s belongs to shard s % concurrency, so each series' samples arrive in
// order) send batches of -batch samples as fast as the server accepts them.
//
// It stops after -rounds rounds or -duration of wall time, and prints one JSON
// object: accepted samples (2xx), errors, the sustained rate after the
// -warmup rounds (series creation) and request latency percentiles.
//
// With -histograms every series carries integer native histograms
// (prompb.Histogram: exponential schema 3, 16 buckets in 2 spans, counter-like;
// latency and size histograms of an HTTP/gRPC service, 50 per target) instead
// of float samples; -batch then counts histogram samples.
//
// With -preencode-mb N (and -rounds) the whole load is encoded before the
// first request, at most N MiB compressed (fewer rounds when more would not
// fit), so the sender spends no CPU encoding while the server is measured.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"time"

	"ferrite.dev/bench/internal/rw"
)

func main() {
	var cfg rw.Config
	start := flag.String("start", "", "timestamp of round 0, RFC 3339 (default: now - rounds*interval - 1h, or now - 48h with -duration)")
	flag.StringVar(&cfg.URL, "url", "http://127.0.0.1:9090/api/v1/write", "remote write endpoint")
	flag.IntVar(&cfg.Series, "series", 100000, "active series")
	flag.IntVar(&cfg.Concurrency, "concurrency", 4, "shards sending in parallel")
	flag.IntVar(&cfg.BatchSize, "batch", 2000, "samples per request")
	interval := flag.Duration("interval", 15*time.Second, "simulated scrape interval (sample time per round)")
	flag.Int64Var(&cfg.Rounds, "rounds", 0, "rounds to send (0: until -duration)")
	flag.DurationVar(&cfg.Duration, "duration", 0, "wall time to send for after the warm-up rounds (0: until -rounds)")
	flag.Int64Var(&cfg.Warmup, "warmup", 1, "rounds excluded from the rate and latencies")
	flag.BoolVar(&cfg.Histograms, "histograms", false, "send integer native histograms instead of float samples")
	preMB := flag.Int64("preencode-mb", 0, "encode the load before sending, at most this many MiB compressed (needs -rounds; 0: encode while sending)")
	flag.Parse()
	cfg.IntervalMs = interval.Milliseconds()
	cfg.Log = os.Stderr
	if *start != "" {
		t, err := time.Parse(time.RFC3339, *start)
		if err != nil {
			fmt.Fprintln(os.Stderr, "rwload: -start:", err)
			os.Exit(2)
		}
		cfg.StartMs = t.UnixMilli()
	} else if cfg.Rounds > 0 {
		cfg.StartMs = time.Now().Add(-time.Hour).UnixMilli() - cfg.Rounds*cfg.IntervalMs
	} else {
		cfg.StartMs = time.Now().Add(-48 * time.Hour).UnixMilli()
	}
	var res rw.Result
	var err error
	if *preMB > 0 {
		var load *rw.Load
		if load, err = rw.Encode(cfg, *preMB<<20); err == nil {
			fmt.Fprintf(os.Stderr, "rwload: pre-encoded %d rounds, %.0f MiB, in %.1fs\n", load.Rounds(), float64(load.Bytes())/(1<<20), load.EncodeSeconds())
			res, err = load.Run(context.Background(), cfg)
		}
	} else {
		res, err = rw.Run(context.Background(), cfg)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "rwload:", err)
		os.Exit(2)
	}
	b, _ := json.MarshalIndent(res, "", "  ")
	fmt.Println(string(b))
	if res.ErrorRequests > 0 {
		os.Exit(1)
	}
}
