// Command promcompact is the Prometheus (v3.16.0, as a library) side of the
// block benchmarks run by scripts/bench-blocks (interop/cmd/blockbench); the
// Ferrite side is `ferrite debug bench-compact` / `bench-open`. It also
// generates the benchmarks' data with the Prometheus TSDB.
//
//	promcompact [compact] DIR
//	    Opens DIR as the server does (tsdb.Open, compactions disabled), then
//	    persists the whole head into blocks, one per aligned block range:
//	    db.CompactHead(tsdb.NewRangeHead(head, lo, hi-1)) from the head's min
//	    time, each range ending at the next multiple of 2 h (the last one right
//	    after the newest sample). Prints
//	    open_s=.. compact_s=.. rss_open_mb=.. peak_open_mb=.. peak_compact_mb=.. peak_mb=.. blocks=.. samples=..
//	promcompact open DIR [--name N --instance I [--read-runs K]]
//	    Opens DIR the same way and prints open_s=.. rss_open_mb=.. peak_open_mb=.. blocks=..;
//	    with --name/--instance it then reads that one series over all time
//	    K times (a new querier each time) and adds
//	    read_s=<median> read_runs=<s,..> read_series=.. read_samples=..
//	promcompact gen-node --dir D --targets N --hours H [--interval-ms 15000]
//	    Writes a node_exporter-like data set (node.go) through the head of a
//	    Prometheus TSDB (WAL + chunks_head, no blocks), like promgen.
//	promcompact gen-blocks --dir D --blocks N --targets T [--interval-ms 60000]
//	    Writes N consecutive 2 h blocks of the node_exporter-like data with
//	    Prometheus' block writer (tsdb.NewBlockWriter), one per range.
//
// Memory comes from /proc/self/status: VmRSS (resident now) and VmHWM (peak).
// Writing 5 to /proc/self/clear_refs resets VmHWM to the current RSS, which
// is done after the open, so peak_compact_mb is the peak of the compaction
// alone; peak_mb is the whole process' (max of the open's and compaction's).
// The garbage collector runs as the server's: GOGC=75 unless GOGC is set.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"math"
	"os"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/storage"
	"github.com/prometheus/prometheus/tsdb"
	"github.com/prometheus/prometheus/tsdb/chunkenc"
	"github.com/prometheus/prometheus/util/compression"

	"ferrite.dev/interop/internal/promtsdb"
)

// blockRange is Prometheus' default block duration (and head chunk range).
const blockRange = int64(2 * time.Hour / time.Millisecond)

// startMs is the default first timestamp: 2023-11-14T21:20:00Z, a multiple
// of 2 h, so H hours of data make H/2 full blocks.
const startMs = int64(1699999200000)

func main() {
	promtsdb.ServerGC()
	args := os.Args[1:]
	cmd := "compact"
	if len(args) > 0 {
		switch args[0] {
		case "compact", "merge", "open", "gen-node", "gen-blocks":
			cmd, args = args[0], args[1:]
		}
	}
	var err error
	switch cmd {
	case "compact":
		err = compactMain(args)
	case "merge":
		err = mergeMain(args)
	case "open":
		err = openMain(args)
	case "gen-node":
		err = genNodeMain(args)
	case "gen-blocks":
		err = genBlocksMain(args)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "promcompact %s: %v\n", cmd, err)
		os.Exit(1)
	}
}

func logger() *slog.Logger { return promtsdb.Logger }

// statusMB returns a field of /proc/self/status in MB.
func statusMB(field string) (float64, error) {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0, err
	}
	for _, l := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(l, field+":"); ok {
			kb, err := strconv.ParseFloat(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 64)
			return kb / 1024, err
		}
	}
	return 0, fmt.Errorf("no %s in /proc/self/status", field)
}

func mustStatusMB(field string) float64 {
	v, err := statusMB(field)
	if err != nil {
		fmt.Fprintln(os.Stderr, "promcompact:", err)
		os.Exit(1)
	}
	return v
}

// resetPeakRSS resets VmHWM to the current RSS.
func resetPeakRSS() error {
	return os.WriteFile("/proc/self/clear_refs", []byte("5"), 0)
}

// openServer opens dir as a Prometheus server does (tsdb.Open with the
// default options: head loaded from chunks_head and the WAL, blocks opened),
// with background compactions disabled and time retention off (the
// benchmark data is old and spans up to weeks).
func openServer(dir string) (*tsdb.DB, float64, error) {
	opts := tsdb.DefaultOptions()
	opts.WALCompression = compression.Snappy // the server's default
	opts.RetentionDuration = 0
	start := time.Now()
	db, err := tsdb.Open(dir, logger(), nil, opts, nil)
	if err != nil {
		return nil, 0, err
	}
	db.DisableCompactions()
	return db, time.Since(start).Seconds(), nil
}

// oneDir parses a command line of flags and exactly one DIR, in any order.
func oneDir(fs *flag.FlagSet, args []string) (string, error) {
	var dirs []string
	for {
		if err := fs.Parse(args); err != nil {
			return "", err
		}
		if fs.NArg() == 0 {
			break
		}
		dirs = append(dirs, fs.Arg(0))
		args = fs.Args()[1:]
	}
	if len(dirs) != 1 {
		return "", fmt.Errorf("want one DIR, have %q", dirs)
	}
	return dirs[0], nil
}

func compactMain(args []string) error {
	fs := flag.NewFlagSet("compact", flag.ExitOnError)
	dir, err := oneDir(fs, args)
	if err != nil {
		return err
	}
	db, openS, err := openServer(dir)
	if err != nil {
		return err
	}
	defer db.Close()
	rssOpen, peakOpen := mustStatusMB("VmRSS"), mustStatusMB("VmHWM")
	had := map[string]bool{}
	for _, b := range db.Blocks() {
		had[b.Meta().ULID.String()] = true
	}
	if err := resetPeakRSS(); err != nil {
		return fmt.Errorf("resetting the peak RSS: %w", err)
	}
	start := time.Now()
	head := db.Head()
	for {
		mint, maxt := head.MinTime(), head.MaxTime()
		if head.NumSeries() == 0 || mint > maxt {
			break
		}
		lo := mint / blockRange * blockRange
		if lo > mint { // floor for negative times
			lo -= blockRange
		}
		hi := min(lo+blockRange, maxt+1)
		// RangeHead's maxt is inclusive; the block is [mint, hi).
		if err := db.CompactHead(tsdb.NewRangeHead(head, mint, hi-1)); err != nil {
			return fmt.Errorf("compacting [%d, %d): %w", mint, hi, err)
		}
		if hi > maxt {
			break
		}
	}
	compactS := time.Since(start).Seconds()
	peakCompact := mustStatusMB("VmHWM")
	var blocks int
	var samples uint64
	for _, b := range db.Blocks() {
		if !had[b.Meta().ULID.String()] {
			blocks++
			samples += b.Meta().Stats.NumSamples
		}
	}
	fmt.Printf("open_s=%.3f compact_s=%.3f rss_open_mb=%.1f peak_open_mb=%.1f peak_compact_mb=%.1f peak_mb=%.1f blocks=%d samples=%d\n",
		openS, compactS, rssOpen, peakOpen, peakCompact, max(peakOpen, peakCompact), blocks, samples)
	return nil
}

// mergeMain opens DIR (blocks only) and runs the leveled compaction a
// server with the default 15 d retention runs (block ranges 2 h, 6 h, 18 h:
// the max block duration is a tenth of the retention) until it has nothing
// left to plan: DB.Compact, with retention off.
func mergeMain(args []string) error {
	fs := flag.NewFlagSet("merge", flag.ExitOnError)
	dir, err := oneDir(fs, args)
	if err != nil {
		return err
	}
	opts := tsdb.DefaultOptions()
	opts.WALCompression = compression.Snappy
	opts.RetentionDuration = 0
	opts.MaxBlockDuration = int64(36 * time.Hour / time.Millisecond)
	start := time.Now()
	db, err := tsdb.Open(dir, logger(), nil, opts, nil)
	if err != nil {
		return err
	}
	db.DisableCompactions()
	defer db.Close()
	openS := time.Since(start).Seconds()
	rssOpen, peakOpen := mustStatusMB("VmRSS"), mustStatusMB("VmHWM")
	before := len(db.Blocks())
	if err := resetPeakRSS(); err != nil {
		return fmt.Errorf("resetting the peak RSS: %w", err)
	}
	start = time.Now()
	if err := db.Compact(context.Background()); err != nil {
		return fmt.Errorf("compacting: %w", err)
	}
	compactS := time.Since(start).Seconds()
	peakCompact := mustStatusMB("VmHWM")
	var samples uint64
	for _, b := range db.Blocks() {
		samples += b.Meta().Stats.NumSamples
	}
	fmt.Printf("open_s=%.3f compact_s=%.3f rss_open_mb=%.1f peak_open_mb=%.1f peak_compact_mb=%.1f peak_mb=%.1f blocks_before=%d blocks=%d samples=%d\n",
		openS, compactS, rssOpen, peakOpen, peakCompact, max(peakOpen, peakCompact), before, len(db.Blocks()), samples)
	return nil
}

func openMain(args []string) error {
	fs := flag.NewFlagSet("open", flag.ExitOnError)
	name := fs.String("name", "", "__name__ of the series to read")
	instance := fs.String("instance", "", "instance of the series to read")
	runs := fs.Int("read-runs", 7, "reads of the series")
	dir, err := oneDir(fs, args)
	if err != nil {
		return err
	}
	db, openS, err := openServer(dir)
	if err != nil {
		return err
	}
	defer db.Close()
	rssOpen, peakOpen := mustStatusMB("VmRSS"), mustStatusMB("VmHWM")
	line := fmt.Sprintf("open_s=%.3f rss_open_mb=%.1f peak_open_mb=%.1f blocks=%d", openS, rssOpen, peakOpen, len(db.Blocks()))
	if (*name == "") != (*instance == "") {
		return errors.New("give both --name and --instance, or neither")
	}
	if *name != "" {
		if *runs < 1 {
			return errors.New("--read-runs must be at least 1")
		}
		ms := []*labels.Matcher{
			labels.MustNewMatcher(labels.MatchEqual, "__name__", *name),
			labels.MustNewMatcher(labels.MatchEqual, "instance", *instance),
		}
		var times []float64
		var series, samples int
		for range *runs {
			start := time.Now()
			s, n, err := readSeries(db, ms)
			if err != nil {
				return err
			}
			times = append(times, time.Since(start).Seconds())
			series, samples = s, n
		}
		var rs []string
		for _, t := range times {
			rs = append(rs, fmt.Sprintf("%.6f", t))
		}
		line += fmt.Sprintf(" read_s=%.6f read_runs=%s read_series=%d read_samples=%d", median(times), strings.Join(rs, ","), series, samples)
	}
	fmt.Println(line)
	return nil
}

// readSeries selects the matching series over all time with a new querier
// and reads every sample.
func readSeries(db *tsdb.DB, ms []*labels.Matcher) (int, int, error) {
	q, err := db.Querier(math.MinInt64, math.MaxInt64)
	if err != nil {
		return 0, 0, err
	}
	defer q.Close()
	ss := q.Select(context.Background(), false, nil, ms...)
	var it chunkenc.Iterator
	var series, samples int
	var sum float64
	for ss.Next() {
		series++
		it = ss.At().Iterator(it)
		for vt := it.Next(); vt != chunkenc.ValNone; vt = it.Next() {
			_, v := it.At()
			sum += v
			samples++
		}
		if err := it.Err(); err != nil {
			return 0, 0, err
		}
	}
	_ = sum
	return series, samples, ss.Err()
}

func median(v []float64) float64 {
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

func genNodeMain(args []string) error {
	fs := flag.NewFlagSet("gen-node", flag.ExitOnError)
	dir := fs.String("dir", "", "data dir to create (must not exist or be empty)")
	targets := fs.Int("targets", 100, "node_exporter targets")
	hours := fs.Float64("hours", 4, "hours of data")
	interval := fs.Int64("interval-ms", 15000, "scrape interval")
	start := fs.Int64("start-ms", startMs, "start of the first scrape interval")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *dir == "" || fs.NArg() > 0 || *targets < 1 || *interval < 10 {
		return errors.New("usage: promcompact gen-node --dir D [--targets N] [--hours H] [--interval-ms MS]")
	}
	if entries, err := os.ReadDir(*dir); err == nil && len(entries) > 0 {
		return fmt.Errorf("%s exists and is not empty", *dir)
	}
	t0 := time.Now()
	opts := tsdb.DefaultOptions()
	opts.WALCompression = compression.Snappy
	opts.RetentionDuration = 0
	db, err := tsdb.Open(*dir, logger(), nil, opts, nil)
	if err != nil {
		return err
	}
	// Nothing is compacted: a commit would only signal the run loop, and
	// auto-compaction is off before the first one.
	db.DisableCompactions()
	ts := newNodeTargets(*targets)
	scrapes := int64(*hours * 3600e3 / float64(*interval))
	refs := make([][]storage.SeriesRef, len(ts))
	for i, t := range ts {
		refs[i] = make([]storage.SeriesRef, len(t.series))
	}
	var samples int64
	var sum float64
	ctx := context.Background()
	for j := range scrapes {
		for i, t := range ts {
			tm := t.scrapeTime(*start, *interval, j)
			app := db.Appender(ctx)
			for k := range t.series {
				s := &t.series[k]
				v := s.next(float64(*interval)/1000, tm)
				ref, err := app.Append(refs[i][k], s.lset, tm, v)
				if err != nil {
					app.Rollback()
					db.Close()
					return fmt.Errorf("append %s at %d: %w", s.lset, tm, err)
				}
				refs[i][k] = ref
				samples++
				sum += v
			}
			if err := app.Commit(); err != nil {
				db.Close()
				return err
			}
		}
	}
	if err := db.Close(); err != nil {
		return err
	}
	series := len(ts) * len(ts[0].series)
	fmt.Fprintf(os.Stderr, "promcompact gen-node: wrote %s in %.1fs\n", *dir, time.Since(t0).Seconds())
	fmt.Printf("series=%d samples=%d sum=%.12e\n", series, samples, sum)
	return nil
}

func genBlocksMain(args []string) error {
	fs := flag.NewFlagSet("gen-blocks", flag.ExitOnError)
	dir := fs.String("dir", "", "directory to create the blocks in (must not exist or be empty)")
	nblocks := fs.Int("blocks", 144, "number of consecutive 2 h blocks")
	targets := fs.Int("targets", 4, "node_exporter targets")
	interval := fs.Int64("interval-ms", 60000, "scrape interval")
	start := fs.Int64("start-ms", startMs, "start of the first block")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *dir == "" || fs.NArg() > 0 || *targets < 1 || *nblocks < 1 || *interval < 10 || blockRange%*interval != 0 {
		return errors.New("usage: promcompact gen-blocks --dir D [--blocks N] [--targets T] [--interval-ms MS, dividing 2h]")
	}
	if entries, err := os.ReadDir(*dir); err == nil && len(entries) > 0 {
		return fmt.Errorf("%s exists and is not empty", *dir)
	}
	if err := os.MkdirAll(*dir, 0o755); err != nil {
		return err
	}
	t0 := time.Now()
	ts := newNodeTargets(*targets)
	perBlock := blockRange / *interval
	var samples int64
	ctx := context.Background()
	for b := range int64(*nblocks) {
		w, err := tsdb.NewBlockWriter(logger(), *dir, blockRange)
		if err != nil {
			return err
		}
		refs := make([][]storage.SeriesRef, len(ts))
		for i, t := range ts {
			refs[i] = make([]storage.SeriesRef, len(t.series))
		}
		for jj := range perBlock {
			j := b*perBlock + jj
			for i, t := range ts {
				tm := t.scrapeTime(*start, *interval, j)
				app := w.Appender(ctx)
				for k := range t.series {
					s := &t.series[k]
					ref, err := app.Append(refs[i][k], s.lset, tm, s.next(float64(*interval)/1000, tm))
					if err != nil {
						app.Rollback()
						w.Close()
						return err
					}
					refs[i][k] = ref
					samples++
				}
				if err := app.Commit(); err != nil {
					w.Close()
					return err
				}
			}
		}
		if _, err := w.Flush(ctx); err != nil {
			w.Close()
			return err
		}
		if err := w.Close(); err != nil {
			return err
		}
	}
	fmt.Fprintf(os.Stderr, "promcompact gen-blocks: wrote %d blocks into %s in %.1fs\n", *nblocks, *dir, time.Since(t0).Seconds())
	fmt.Printf("blocks=%d series=%d samples=%d samples_per_series=%d\n", *nblocks, len(ts)*len(ts[0].series), samples, int64(*nblocks)*perBlock)
	return nil
}
