// Package promtsdb drives the real Prometheus TSDB (v3.16.0, used as a Go
// library): it writes data dirs of the synth model and digests data dirs the
// way `ferrite tsdb digest` does, as the oracle of the interop tests and the
// Prometheus side of the replay benchmark.
package promtsdb

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"time"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/storage"
	"github.com/prometheus/prometheus/tsdb"
	"github.com/prometheus/prometheus/tsdb/chunkenc"
	"github.com/prometheus/prometheus/tsdb/chunks"
	"github.com/prometheus/prometheus/tsdb/wlog"
	"github.com/prometheus/prometheus/util/compression"

	"ferrite.dev/interop/internal/synth"
)

// Logger is where the Prometheus TSDB logs; quiet unless PROMTSDB_LOG is set.
var Logger = newLogger()

func newLogger() *slog.Logger {
	if os.Getenv("PROMTSDB_LOG") != "" {
		return slog.New(slog.NewTextHandler(os.Stderr, nil))
	}
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}

// GenOptions describe a data dir to write with Prometheus.
type GenOptions struct {
	Dir          string
	Series       int64
	Samples      int64
	IntervalMs   int64  // 0: 15000
	StartMs      int64  // 0: 1700000000000
	Compression  string // none, snappy or zstd; "": snappy (the Prometheus server's default)
	SegmentSize  int    // WAL segment size in bytes, a multiple of 32 KiB; 0: Prometheus' default (128 MiB)
	NoChunksHead bool   // remove chunks_head/ after the clean close: forces a full WAL replay
	Checkpoint   bool   // after the close, checkpoint and truncate the first half of the WAL segments
	Compact      bool   // before the close, let Prometheus compact the head (blocks, WAL checkpoint, truncation)
	// Native histogram series (benchhist.go) appended after the float
	// series at every sample index, Samples samples each: integer counter
	// histograms and float gauge histograms.
	HistogramSeries      int64
	GaugeHistogramSeries int64
}

// WALCompression maps a flag value to Prometheus' WAL compression type.
func WALCompression(s string) (compression.Type, error) {
	switch s {
	case "", "snappy":
		return compression.Snappy, nil
	case "none":
		return compression.None, nil
	case "zstd":
		return compression.Zstd, nil
	}
	return "", fmt.Errorf("unknown WAL compression %q (want none, snappy or zstd)", s)
}

func (o *GenOptions) fill() error {
	if o.Dir == "" {
		return errors.New("no dir")
	}
	if o.Series < 0 || o.HistogramSeries < 0 || o.GaugeHistogramSeries < 0 || o.Series+o.HistogramSeries+o.GaugeHistogramSeries <= 0 || o.Samples <= 0 {
		return fmt.Errorf("want series > 0 and samples > 0, have %d (+ %d histogram + %d gauge histogram) and %d",
			o.Series, o.HistogramSeries, o.GaugeHistogramSeries, o.Samples)
	}
	if o.IntervalMs == 0 {
		o.IntervalMs = synth.DefaultIntervalMs
	}
	if o.StartMs == 0 {
		o.StartMs = synth.DefaultStartMs
	}
	if o.SegmentSize < 0 || o.SegmentSize%(32<<10) != 0 {
		return fmt.Errorf("WAL segment size %d is not a positive multiple of 32 KiB", o.SegmentSize)
	}
	if _, err := WALCompression(o.Compression); err != nil {
		return err
	}
	if entries, err := os.ReadDir(o.Dir); err == nil && len(entries) > 0 {
		return fmt.Errorf("%s exists and is not empty", o.Dir)
	}
	return nil
}

// Generate writes the synth model into a new data dir with the Prometheus
// TSDB: WAL plus chunks_head, no blocks. It returns the model's totals
// (before any checkpoint, which drops samples) of the float series only; the
// histogram series add o.HistogramSeries*o.Samples integer and
// o.GaugeHistogramSeries*o.Samples float histogram samples.
func Generate(o GenOptions) (synth.Totals, error) {
	if err := o.fill(); err != nil {
		return synth.Totals{}, err
	}
	comp, _ := WALCompression(o.Compression)
	opts := tsdb.DefaultOptions()
	opts.WALCompression = comp
	opts.WALSegmentSize = o.SegmentSize
	// tsdb.Open compacts only when asked to: by a commit that finds the head
	// compactable, or by the run loop's timer (every BlockReloadInterval,
	// 1 min). Compactions are disabled before the first commit, so none runs
	// and everything stays in the head: WAL + chunks_head.
	db, err := tsdb.Open(o.Dir, Logger, nil, opts, nil)
	if err != nil {
		return synth.Totals{}, err
	}
	db.DisableCompactions()
	if err := appendModel(db, o); err != nil {
		db.Close()
		return synth.Totals{}, err
	}
	if o.Compact {
		// What the server's run loop does: persist the head's oldest ranges
		// as blocks while it spans more than 1.5 block ranges, truncating
		// the head and the WAL (checkpoint) after each.
		db.EnableCompactions()
		if err := db.Compact(context.Background()); err != nil {
			db.Close()
			return synth.Totals{}, fmt.Errorf("compact: %w", err)
		}
		db.DisableCompactions()
	}
	// A clean close: the head m-maps all full head chunks into chunks_head/
	// (Head.Close calls mmapHeadChunks), flushes the chunk write queue and the
	// last WAL page.
	if err := db.Close(); err != nil {
		return synth.Totals{}, err
	}
	if blocks, _ := filepath.Glob(filepath.Join(o.Dir, "01*")); len(blocks) > 0 && !o.Compact {
		return synth.Totals{}, fmt.Errorf("prometheus wrote blocks %v, want head only", blocks)
	}
	if o.Checkpoint {
		if err := checkpointFirstHalf(o, comp); err != nil {
			return synth.Totals{}, fmt.Errorf("checkpoint: %w", err)
		}
	}
	if o.NoChunksHead {
		if err := os.RemoveAll(filepath.Join(o.Dir, "chunks_head")); err != nil {
			return synth.Totals{}, err
		}
	}
	return synth.Expected(o.Series, o.Samples), nil
}

func appendModel(db *tsdb.DB, o GenOptions) error {
	lsets := make([]labels.Labels, o.Series)
	for i := range lsets {
		lsets[i] = labels.FromStrings(synth.Labels(int64(i))...)
	}
	refs := make([]storage.SeriesRef, o.Series)
	hists := make([]*genSeries, 0, o.HistogramSeries+o.GaugeHistogramSeries)
	for i := int64(0); i < o.HistogramSeries; i++ {
		hists = append(hists, &genSeries{lset: BenchHistogramLabels(i)})
	}
	for i := int64(0); i < o.GaugeHistogramSeries; i++ {
		hists = append(hists, &genSeries{lset: BenchGaugeHistogramLabels(i)})
	}
	ctx := context.Background()
	app := db.Appender(ctx)
	n := 0
	// next counts an append, committing every synth.DefaultCommitEvery.
	next := func() error {
		if n++; n%synth.DefaultCommitEvery == 0 {
			if err := app.Commit(); err != nil {
				return err
			}
			app = db.Appender(ctx)
		}
		return nil
	}
	for j := int64(0); j < o.Samples; j++ {
		for i := int64(0); i < o.Series; i++ {
			ref, err := app.Append(refs[i], lsets[i], synth.Timestamp(i, j, o.StartMs, o.IntervalMs), synth.Value(i, j))
			if err != nil {
				app.Rollback()
				return fmt.Errorf("append series %d sample %d: %w", i, j, err)
			}
			refs[i] = ref
			if err := next(); err != nil {
				return err
			}
		}
		for k, s := range hists {
			var (
				ref storage.SeriesRef
				err error
			)
			if i := int64(k); i < o.HistogramSeries {
				ref, err = app.AppendHistogram(s.ref, s.lset, synth.Timestamp(i, j, o.StartMs, o.IntervalMs), BenchHistogram(i, j), nil)
			} else {
				i -= o.HistogramSeries
				ref, err = app.AppendHistogram(s.ref, s.lset, synth.Timestamp(i, j, o.StartMs, o.IntervalMs), nil, BenchGaugeFloatHistogram(i, j))
			}
			if err != nil {
				app.Rollback()
				return fmt.Errorf("append %s sample %d: %w", s.lset, j, err)
			}
			s.ref = ref
			if err := next(); err != nil {
				return err
			}
		}
		if err := app.Commit(); err != nil {
			return err
		}
		app = db.Appender(ctx)
	}
	return app.Commit()
}

// checkpointFirstHalf does to the WAL what Prometheus' head truncation
// (Head.truncateWAL) does, with a mint in the middle of the time range:
// checkpoint the oldest segments (here the first half; Prometheus takes 2/3),
// keeping series records and the samples at or after mint, then delete those
// segments and older checkpoints. Opening the WAL for writing first starts a
// new, empty segment, as a restarting Prometheus does; it is never
// checkpointed (Prometheus never checkpoints the segment being written).
func checkpointFirstHalf(o GenOptions, comp compression.Type) error {
	walDir := filepath.Join(o.Dir, "wal")
	segSize := o.SegmentSize
	if segSize == 0 {
		segSize = wlog.DefaultSegmentSize
	}
	w, err := wlog.NewSize(Logger, nil, walDir, segSize, comp)
	if err != nil {
		return err
	}
	defer w.Close()
	first, last, err := wlog.Segments(walDir)
	if err != nil {
		return err
	}
	last-- // the new segment being written
	to := first + (last-first)/2
	if to <= first {
		return fmt.Errorf("need at least 3 written segments to checkpoint half of them, have %d..%d", first, last)
	}
	mint := o.StartMs + (o.Samples/2)*o.IntervalMs
	keepAll := func(chunks.HeadSeriesRef) bool { return true }
	// As Head.truncateWAL calls it: no start-timestamp storage (a feature
	// flag), and with the min-valid-time record (type 14, since v3.16) as the
	// checkpoint's first record.
	if _, err := wlog.Checkpoint(Logger, w, first, to, keepAll, mint, false, true); err != nil {
		return err
	}
	if err := w.Truncate(to + 1); err != nil {
		return err
	}
	return wlog.DeleteCheckpoints(walDir, to)
}

// Digest is what promdigest and `ferrite tsdb digest` print.
type Digest struct {
	OpenS   float64
	Series  int64
	Samples int64
	Sum     float64
}

// Line formats the digest as the tools' last stdout line.
func (d Digest) Line(openOnly bool) string {
	if openOnly {
		return fmt.Sprintf("open_s=%.3f series=%d", d.OpenS, d.Series)
	}
	return fmt.Sprintf("open_s=%.3f series=%d samples=%d sum=%.12e", d.OpenS, d.Series, d.Samples, d.Sum)
}

// DigestReadOnly opens dir the read-only way (tsdb.OpenDBReadOnly: it replays
// chunks_head and the WAL into an in-memory head, as a restart does, without
// changing dir) and reads every sample back. OpenS covers opening and loading
// the head.
func DigestReadOnly(dir string, openOnly bool) (Digest, error) {
	// The read-only head hard-links chunks_head/ into a sandbox and may cut
	// chunk files there; keep the sandbox next to dir (same file system, so
	// the hard links work) rather than inside it, so dir is left untouched.
	abs, err := filepath.Abs(dir)
	if err != nil {
		return Digest{}, err
	}
	if _, err := os.Stat(abs); err != nil {
		return Digest{}, err
	}
	sandbox, err := os.MkdirTemp(filepath.Dir(abs), ".promdigest-sandbox-")
	if err != nil {
		sandbox, err = os.MkdirTemp("", "promdigest-sandbox-")
		if err != nil {
			return Digest{}, err
		}
	}
	defer os.RemoveAll(sandbox)

	start := time.Now()
	db, err := tsdb.OpenDBReadOnly(abs, sandbox, Logger)
	if err != nil {
		return Digest{}, err
	}
	defer db.Close()
	// OpenDBReadOnly is lazy: the querier loads the head (WAL replay).
	q, err := db.Querier(math.MinInt64, math.MaxInt64)
	if err != nil {
		return Digest{}, err
	}
	defer q.Close()
	openS := time.Since(start).Seconds()
	d, err := readAll(q, openOnly)
	d.OpenS = openS
	return d, err
}

// DigestRepair opens dir writable, as a Prometheus server does on startup
// (tsdb.Open: head.Init replays chunks_head and the WAL, and on a WAL read
// error runs Prometheus' own WAL repair, keeping what was replayed before the
// damage), then reads every sample back. Compactions are disabled right after
// the open; tsdb.Open itself never compacts (compaction is triggered by
// commits or the run loop's 1-minute timer), so no block is written.
// This modifies dir (the repair; a new WAL segment).
func DigestRepair(dir string, openOnly bool) (Digest, error) {
	opts := tsdb.DefaultOptions()
	opts.WALCompression = compression.Snappy // the server's default
	start := time.Now()
	db, err := tsdb.Open(dir, Logger, nil, opts, nil)
	if err != nil {
		return Digest{}, err
	}
	db.DisableCompactions()
	defer db.Close()
	openS := time.Since(start).Seconds()
	q, err := db.Querier(math.MinInt64, math.MaxInt64)
	if err != nil {
		return Digest{}, err
	}
	defer q.Close()
	d, err := readAll(q, openOnly)
	d.OpenS = openS
	return d, err
}

// readAll counts series and float samples and sums the float values, series
// in label order, samples in time order.
func readAll(q storage.Querier, openOnly bool) (Digest, error) {
	var d Digest
	var hints *storage.SelectHints
	if openOnly {
		// Only the series: no chunks are read.
		hints = &storage.SelectHints{Start: math.MinInt64, End: math.MaxInt64, Func: "series"}
	}
	ss := q.Select(context.Background(), true, hints, labels.MustNewMatcher(labels.MatchRegexp, "__name__", ".*"))
	var it chunkenc.Iterator
	for ss.Next() {
		s := ss.At()
		d.Series++
		if openOnly {
			continue
		}
		it = s.Iterator(it)
		for vt := it.Next(); vt != chunkenc.ValNone; vt = it.Next() {
			if vt != chunkenc.ValFloat {
				continue
			}
			_, v := it.At()
			d.Samples++
			d.Sum += v
		}
		if err := it.Err(); err != nil {
			return d, fmt.Errorf("series %s: %w", s.Labels(), err)
		}
	}
	return d, ss.Err()
}
