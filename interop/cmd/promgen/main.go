// Command promgen writes a data dir of the synth model with the real
// Prometheus TSDB (v3.9.1): WAL plus chunks_head, no blocks.
package main

import (
	"flag"
	"fmt"
	"os"

	"ferrite.dev/interop/internal/promtsdb"
	"ferrite.dev/interop/internal/synth"
)

func main() {
	var o promtsdb.GenOptions
	flag.StringVar(&o.Dir, "dir", "", "data dir to create")
	flag.Int64Var(&o.Series, "series", 1000, "number of series")
	flag.Int64Var(&o.Samples, "samples", 120, "samples per series")
	flag.Int64Var(&o.IntervalMs, "interval-ms", 15000, "sample interval")
	flag.Int64Var(&o.StartMs, "start-ms", 1700000000000, "first timestamp")
	flag.StringVar(&o.Compression, "wal-compression", "snappy", "none, snappy or zstd")
	flag.IntVar(&o.SegmentSize, "wal-segment-size", 0, "WAL segment size in bytes (0: default)")
	flag.BoolVar(&o.NoChunksHead, "no-chunks-head", false, "remove chunks_head/ after closing (forces a full WAL replay)")
	flag.BoolVar(&o.Checkpoint, "checkpoint", false, "checkpoint the first half of the WAL segments")
	flag.Parse()
	if o.Dir == "" {
		fmt.Fprintln(os.Stderr, "promgen: -dir is required")
		os.Exit(2)
	}
	if err := promtsdb.Generate(o); err != nil {
		fmt.Fprintln(os.Stderr, "promgen:", err)
		os.Exit(1)
	}
	t := synth.Expected(o.Series, o.Samples)
	fmt.Printf("series=%d samples=%d sum=%.12e\n", t.Series, t.Samples, t.Sum)
}
