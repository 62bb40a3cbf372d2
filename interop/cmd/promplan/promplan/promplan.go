// Package promplan is the Prometheus side of `ferrite debug plan`: the
// compaction plan of Prometheus' leveled compactor over a directory of
// block dirs, and the blocks Prometheus' retention deletes when it opens a
// data dir, both computed by Prometheus' own code (v3.16.0). It also writes
// meta-only block dirs for planning scenarios.
package promplan

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/oklog/ulid/v2"
	"github.com/prometheus/prometheus/tsdb"

	"ferrite.dev/interop/internal/promtsdb"
)

// DefaultRanges are the server's ranges with default flags (15 d retention:
// 2 h, 6 h, 18 h), as `ferrite debug plan compact` defaults to.
var DefaultRanges = []int64{2 * 3600 * 1000, 6 * 3600 * 1000, 18 * 3600 * 1000}

// WriteMetaDir creates DIR/NAME/meta.json holding meta as Prometheus writes
// it (json.MarshalIndent with a tab, as tsdb's writeMetaFile). name "" means
// the meta's ULID.
func WriteMetaDir(dir, name string, meta *tsdb.BlockMeta) error {
	if name == "" {
		name = meta.ULID.String()
	}
	bd := filepath.Join(dir, name)
	if err := os.MkdirAll(bd, 0o777); err != nil {
		return err
	}
	b, err := json.MarshalIndent(meta, "", "\t")
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(bd, "meta.json"), b, 0o666)
}

// Plan runs Prometheus' LeveledCompactor.Plan over dir with these ranges
// and returns the planned block dirs' base names in Prometheus' order.
// overlapping is EnableOverlappingCompaction (always true in the server).
func Plan(dir string, ranges []int64, overlapping bool) ([]string, error) {
	c, err := tsdb.NewLeveledCompactorWithOptions(context.Background(), nil, promtsdb.Logger, ranges, nil,
		tsdb.LeveledCompactorOptions{EnableOverlappingCompaction: overlapping})
	if err != nil {
		return nil, err
	}
	dirs, err := c.Plan(dir)
	if err != nil {
		return nil, err
	}
	out := make([]string, 0, len(dirs))
	for _, d := range dirs {
		out = append(out, filepath.Base(d))
	}
	return out, nil
}

// BlockDirNames lists the entries of dir that Prometheus takes for blocks.
func BlockDirNames(dir string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range entries {
		if _, err := ulid.ParseStrict(e.Name()); err == nil && e.IsDir() {
			out = append(out, e.Name())
		}
	}
	return out, nil
}

// Retention opens dir as the server does (tsdb.Open) with the given time
// retention (ms, 0 = off) and size limit (bytes, <= 0 = off), closes it at
// once, and returns the block dirs that the open deleted, sorted. The open
// reloads the blocks, which applies retention before the head is replayed;
// nothing compacts (the run loop waits a minute before its first pass).
func Retention(dir string, retentionMs, maxBytes int64) ([]string, error) {
	before, err := BlockDirNames(dir)
	if err != nil {
		return nil, err
	}
	opts := tsdb.DefaultOptions()
	opts.RetentionDuration = retentionMs
	opts.MaxBytes = maxBytes
	db, err := tsdb.Open(dir, promtsdb.Logger, nil, opts, nil)
	if err != nil {
		return nil, err
	}
	db.DisableCompactions()
	if err := db.Close(); err != nil {
		return nil, err
	}
	after, err := BlockDirNames(dir)
	if err != nil {
		return nil, err
	}
	kept := map[string]bool{}
	for _, n := range after {
		kept[n] = true
	}
	var gone []string
	for _, n := range before {
		if !kept[n] {
			gone = append(gone, n)
		}
	}
	sort.Strings(gone)
	return gone, nil
}

// ParseRanges parses "MS,MS,...".
func ParseRanges(s string) ([]int64, error) {
	var out []int64
	for _, f := range strings.Split(s, ",") {
		v, err := strconv.ParseInt(strings.TrimSpace(f), 10, 64)
		if err != nil {
			return nil, fmt.Errorf("bad range %q: %w", f, err)
		}
		out = append(out, v)
	}
	return out, nil
}

// FormatRanges is the inverse of ParseRanges.
func FormatRanges(r []int64) string {
	s := make([]string, len(r))
	for i, v := range r {
		s[i] = strconv.FormatInt(v, 10)
	}
	return strings.Join(s, ",")
}

// Main runs the command line; it returns the exit code.
func Main(args []string, stdout, stderr io.Writer) int {
	usage := "usage: promplan compact DIR [--ranges MS,...] [--no-overlapping] | " +
		"retention DIR [--time-ms N] [--size-bytes N]"
	if len(args) < 2 {
		fmt.Fprintln(stderr, usage)
		return 2
	}
	cmd, dir := args[0], args[1]
	fs := flag.NewFlagSet("promplan "+cmd, flag.ContinueOnError)
	fs.SetOutput(stderr)
	ranges := fs.String("ranges", FormatRanges(DefaultRanges), "block ranges in ms")
	noOverlap := fs.Bool("no-overlapping", false, "disable vertical compaction")
	timeMs := fs.Int64("time-ms", 0, "time retention in ms")
	sizeBytes := fs.Int64("size-bytes", 0, "size retention in bytes")
	if err := fs.Parse(args[2:]); err != nil || fs.NArg() != 0 {
		fmt.Fprintln(stderr, usage)
		return 2
	}
	var lines []string
	var err error
	switch cmd {
	case "compact":
		var r []int64
		if r, err = ParseRanges(*ranges); err == nil {
			lines, err = Plan(dir, r, !*noOverlap)
		}
	case "retention":
		lines, err = Retention(dir, *timeMs, *sizeBytes)
	default:
		err = errors.New(usage)
	}
	if err != nil {
		fmt.Fprintln(stderr, "promplan:", err)
		return 1
	}
	for _, l := range lines {
		fmt.Fprintln(stdout, l)
	}
	return 0
}
