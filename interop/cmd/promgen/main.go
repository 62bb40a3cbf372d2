// Command promgen writes a data dir of the synth model (internal/synth) with
// the real Prometheus TSDB (v3.16.0): WAL plus chunks_head, no blocks. It prints
// the model's totals as `series=<n> samples=<n> sum=<%.12e>` (with
// --checkpoint, the dir holds fewer samples than that: the checkpoint drops
// the samples before its mint from the checkpointed segments).
//
// --histogram-series N and --gauge-histogram-series N add native histogram
// series (promtsdb/benchhist.go: integer counter histograms, exponential
// schema 3, 16 buckets in 2 spans; float gauge histograms), --samples samples
// each, appended after the float series at every sample index (--series 0:
// histograms only, the replay benchmark's shape h). The output line then
// goes on with ` histogram_series=<n> histograms=<n> float_histograms=<n>`;
// series= and samples= count the float series and samples only.
//
// With --unsupported KIND it writes instead one of the dirs of data Ferrite
// does not support yet (promtsdb.UnsupportedKinds: native histograms in the
// WAL, in chunks_head/ or in blocks, custom-bucket histograms, out-of-order
// samples), prints where that data sits and, last, the census of everything
// written (`series= floats= histograms= ...`).
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"ferrite.dev/interop/internal/promtsdb"
	"ferrite.dev/interop/internal/synth"
)

func main() {
	var o promtsdb.GenOptions
	flag.StringVar(&o.Dir, "dir", "", "data dir to create (must not exist or be empty)")
	flag.Int64Var(&o.Series, "series", 1000, "number of series")
	flag.Int64Var(&o.Samples, "samples", 120, "samples per series")
	flag.Int64Var(&o.IntervalMs, "interval-ms", synth.DefaultIntervalMs, "sample interval in ms")
	flag.Int64Var(&o.StartMs, "start-ms", synth.DefaultStartMs, "first timestamp in ms")
	flag.StringVar(&o.Compression, "wal-compression", "snappy", "WAL compression: none, snappy or zstd")
	flag.IntVar(&o.SegmentSize, "wal-segment-size", 0, "WAL segment size in bytes, a multiple of 32768 (0: Prometheus' default, 128 MiB)")
	flag.BoolVar(&o.NoChunksHead, "no-chunks-head", false, "remove chunks_head/ after the clean close (forces a full WAL replay)")
	flag.BoolVar(&o.Compact, "compact", false, "before closing, compact the head as the server would (blocks, WAL checkpoint)")
	flag.BoolVar(&o.Checkpoint, "checkpoint", false, "after the close, checkpoint and truncate the first half of the WAL segments (mint in the middle of the time range)")
	flag.Int64Var(&o.HistogramSeries, "histogram-series", 0, "integer native histogram series (counter-like, schema 3, 16 buckets) in addition to --series")
	flag.Int64Var(&o.GaugeHistogramSeries, "gauge-histogram-series", 0, "float gauge native histogram series in addition to --series")
	unsupported := flag.String("unsupported", "", "write a dir of one kind of data Ferrite does not support yet instead: "+strings.Join(promtsdb.UnsupportedKinds, ", "))
	flag.Parse()
	if o.Dir == "" || flag.NArg() > 0 {
		fmt.Fprintln(os.Stderr, "usage: promgen --dir DIR [flags]")
		flag.PrintDefaults()
		os.Exit(2)
	}
	start := time.Now()
	if *unsupported != "" {
		u, err := promtsdb.GenerateUnsupported(*unsupported, o.Dir)
		if err != nil {
			fmt.Fprintln(os.Stderr, "promgen:", err)
			os.Exit(1)
		}
		fmt.Fprintf(os.Stderr, "promgen: wrote %s (%s) in %.1fs\n%s\n", o.Dir, u.Kind, time.Since(start).Seconds(), u.Files)
		fmt.Println(u.Want)
		return
	}
	t, err := promtsdb.Generate(o)
	if err != nil {
		fmt.Fprintln(os.Stderr, "promgen:", err)
		os.Exit(1)
	}
	segs, _ := filepath.Glob(filepath.Join(o.Dir, "wal", "[0-9]*"))
	chunkFiles, _ := filepath.Glob(filepath.Join(o.Dir, "chunks_head", "[0-9]*"))
	fmt.Fprintf(os.Stderr, "promgen: wrote %s in %.1fs: %d WAL segments, %d chunks_head files\n",
		o.Dir, time.Since(start).Seconds(), len(segs), len(chunkFiles))
	line := fmt.Sprintf("series=%d samples=%d sum=%.12e", t.Series, t.Samples, t.Sum)
	if o.HistogramSeries+o.GaugeHistogramSeries > 0 {
		line += fmt.Sprintf(" histogram_series=%d histograms=%d float_histograms=%d",
			o.HistogramSeries+o.GaugeHistogramSeries, o.HistogramSeries*o.Samples, o.GaugeHistogramSeries*o.Samples)
	}
	fmt.Println(line)
}
