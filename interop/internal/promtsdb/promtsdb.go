// Package promtsdb drives the real Prometheus TSDB (v3.9.1, as a Go library):
// it writes data dirs from the synth model and digests data dirs the way
// `ferrite tsdb digest` does, as the oracle for the interop tests.
package promtsdb

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"time"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/tsdb"
	"github.com/prometheus/prometheus/tsdb/chunkenc"
	"github.com/prometheus/prometheus/tsdb/chunks"
	"github.com/prometheus/prometheus/tsdb/wlog"
	"github.com/prometheus/prometheus/storage"

	"ferrite.dev/interop/internal/synth"
)

// GenOptions describe a data dir to write with Prometheus.
type GenOptions struct {
	Dir            string
	Series         int64
	Samples        int64
	IntervalMs     int64
	StartMs        int64
	Compression    string // none, snappy, zstd
	SegmentSize    int    // 0: Prometheus' default
	NoChunksHead   bool   // remove chunks_head/ after a clean close
	Checkpoint     bool   // checkpoint the first half of the segments
	CommitEvery    int
}

func quietLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// Generate writes the synth model into a fresh data dir with the Prometheus TSDB.
func Generate(o GenOptions) error {
	if o.IntervalMs == 0 {
		o.IntervalMs = 15000
	}
	if o.StartMs == 0 {
		o.StartMs = 1700000000000
	}
	if o.CommitEvery == 0 {
		o.CommitEvery = 1000
	}
	opts := tsdb.DefaultOptions()
	opts.WALCompression = o.Compression
	if o.Compression == "" {
		opts.WALCompression = "snappy"
	}
	opts.WALSegmentSize = o.SegmentSize
	db, err := tsdb.Open(o.Dir, quietLogger(), nil, opts, nil)
	if err != nil {
		return err
	}
	// Keep everything in the head: no blocks, WAL + chunks_head only.
	db.DisableCompactions()
	lsets := make([]labels.Labels, o.Series)
	for i := range lsets {
		lsets[i] = labels.FromStrings(synth.Labels(int64(i))...)
	}
	refs := make([]storage.SeriesRef, o.Series)
	ctx := context.Background()
	app := db.Appender(ctx)
	n := 0
	for j := int64(0); j < o.Samples; j++ {
		for i := int64(0); i < o.Series; i++ {
			ref, err := app.Append(refs[i], lsets[i], synth.Timestamp(i, j, o.StartMs, o.IntervalMs), synth.Value(i, j))
			if err != nil {
				return fmt.Errorf("append series %d sample %d: %w", i, j, err)
			}
			refs[i] = ref
			n++
			if n%o.CommitEvery == 0 {
				if err := app.Commit(); err != nil {
					return err
				}
				app = db.Appender(ctx)
			}
		}
		if err := app.Commit(); err != nil {
			return err
		}
		app = db.Appender(ctx)
	}
	if err := app.Commit(); err != nil {
		return err
	}
	if err := db.Close(); err != nil {
		return err
	}
	if o.Checkpoint {
		if err := checkpointHalf(o); err != nil {
			return fmt.Errorf("checkpoint: %w", err)
		}
	}
	if o.NoChunksHead {
		if err := os.RemoveAll(filepath.Join(o.Dir, "chunks_head")); err != nil {
			return err
		}
	}
	return nil
}

// checkpointHalf does what Prometheus' head truncation does to the WAL:
// checkpoint the first half of the segments, keeping samples from the middle
// of the time range on, and delete those segments.
func checkpointHalf(o GenOptions) error {
	walDir := filepath.Join(o.Dir, "wal")
	first, last, err := wlog.Segments(walDir)
	if err != nil {
		return err
	}
	if last-first < 2 {
		return fmt.Errorf("need at least 3 segments to checkpoint, have %d..%d", first, last)
	}
	comp := o.Compression
	if comp == "" {
		comp = "snappy"
	}
	w, err := wlog.NewSize(quietLogger(), nil, walDir, o.SegmentSize, comp)
	if err != nil {
		return err
	}
	defer w.Close()
	to := first + (last-first)/2
	mint := o.StartMs + (o.Samples/2)*o.IntervalMs
	keepAll := func(chunks.HeadSeriesRef) bool { return true }
	if _, err := wlog.Checkpoint(quietLogger(), w, first, to, keepAll, mint); err != nil {
		return err
	}
	return w.Truncate(to + 1)
}

// Digest is what both digest tools print.
type Digest struct {
	OpenS   float64
	Series  int64
	Samples int64
	Sum     float64
}

func (d Digest) String(openOnly bool) string {
	if openOnly {
		return fmt.Sprintf("open_s=%.3f series=%d", d.OpenS, d.Series)
	}
	return fmt.Sprintf("open_s=%.3f series=%d samples=%d sum=%.12e", d.OpenS, d.Series, d.Samples, d.Sum)
}

// DigestReadOnly opens dir read-only (Prometheus' OpenDBReadOnly replays the
// WAL and chunks_head into memory without changing dir) and reads it back.
func DigestReadOnly(dir string, openOnly bool) (Digest, error) {
	sandbox, err := os.MkdirTemp("", "promdigest-sandbox")
	if err != nil {
		return Digest{}, err
	}
	defer os.RemoveAll(sandbox)
	start := time.Now()
	db, err := tsdb.OpenDBReadOnly(dir, sandbox, quietLogger())
	if err != nil {
		return Digest{}, err
	}
	defer db.Close()
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

// DigestRepair opens dir as a Prometheus server does on startup (writable,
// so Prometheus' own WAL repair runs), with compactions disabled, and reads it back.
func DigestRepair(dir string) (Digest, error) {
	opts := tsdb.DefaultOptions()
	start := time.Now()
	db, err := tsdb.Open(dir, quietLogger(), nil, opts, nil)
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
	d, err := readAll(q, false)
	d.OpenS = openS
	return d, err
}

func readAll(q storage.Querier, openOnly bool) (Digest, error) {
	var d Digest
	ss := q.Select(context.Background(), true, nil, labels.MustNewMatcher(labels.MatchRegexp, "__name__", ".*"))
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
			return d, err
		}
	}
	return d, ss.Err()
}
