package interop_test

import (
	"fmt"
	"math"
	"math/rand"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/oklog/ulid/v2"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/storage"
	"github.com/prometheus/prometheus/tsdb"
	"github.com/prometheus/prometheus/tsdb/chunks"

	"ferrite.dev/interop/cmd/promplan/promplan"
	"ferrite.dev/interop/internal/promtsdb"
)

// Compaction planning and retention (crates/tsdb/src/compact/planner.rs,
// crates/tsdb/src/retention.rs) against Prometheus' own decisions:
//
//   - TestPlanMatchesPrometheus: seeded random directories of meta-only
//     block dirs (levels, gaps, overlaps, misaligned and oversized blocks,
//     tombstone stats, failed flags, few and many blocks, several range
//     sets, vertical compaction on and off, non-block entries, broken
//     metas); `ferrite debug plan compact` must print exactly what
//     tsdb.LeveledCompactor.Plan returns, in the same order, or both fail.
//   - TestRetentionMatchesPrometheus: data dirs of real blocks (copies of
//     one block made by tsdb.CreateBlock, with rewritten metas and padded
//     chunk files for varied sizes, parents and deletable flags), with or
//     without a head (WAL + chunks_head); `ferrite debug plan retention`
//     must name exactly the blocks that tsdb.Open with the same retention
//     time and size deletes.
//
// INTEROP_PLAN_SEED=N runs other scenarios than the pinned ones.

const (
	planScenarios      = 600
	retentionScenarios = 80
)

// planRangeSets are the range sets the plan scenarios draw from: toy sets
// in small units (as Prometheus' own tests), the server's defaults, all ten
// exponential ranges, and odd ones (non-multiples, unsorted, one range).
var planRangeSets = [][]int64{
	{20},
	{20, 60},
	{20, 60, 180},
	{20, 60, 180, 540, 1620},
	{10, 30, 90, 270},
	{20, 60, 240, 720, 2160},
	{7200000, 21600000, 64800000},
	tsdb.ExponentialBlockRanges(7200000, 10, 3),
	{20, 40, 120},
	{100, 1000},
	{60, 20, 180},
}

// planSeed is the scenarios' seed: INTEROP_PLAN_SEED when set (to explore
// further), else def.
func planSeed(t *testing.T, def int64) int64 {
	if v := os.Getenv("INTEROP_PLAN_SEED"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			t.Fatalf("INTEROP_PLAN_SEED=%q: %v", v, err)
		}
		t.Logf("seed %d", n)
		return n
	}
	return def
}

type planScenario struct {
	ranges      []int64
	overlapping bool
	metas       []tsdb.BlockMeta
	names       []string // dir name per meta
	extras      func(dir string) error
	desc        string
}

func newULID(rng *rand.Rand) ulid.ULID {
	return ulid.MustNew(uint64(rng.Int63n(1<<40)), rng)
}

func genPlanScenario(rng *rand.Rand) planScenario {
	s := planScenario{
		ranges:      planRangeSets[rng.Intn(len(planRangeSets))],
		overlapping: rng.Intn(7) != 0,
	}
	unit := s.ranges[0]
	for _, r := range s.ranges {
		unit = min(unit, r)
	}
	maxRange := slicesMax(s.ranges)

	n := rng.Intn(13)
	if rng.Intn(4) == 0 {
		n = 13 + rng.Intn(12)
	}
	mode := rng.Intn(10)
	type span struct{ min, max int64 }
	var spans []span
	switch {
	case mode < 7: // leveled: mostly aligned blocks of the ranges, in time order
		cursor := unit * (rng.Int63n(30) - 8)
		for range n {
			j := 0
			for j < len(s.ranges)-1 && rng.Intn(3) == 0 {
				j++
			}
			size := s.ranges[j]
			start := cursor
			if rng.Intn(10) < 7 { // align up to the block's own range
				start = ceilDiv(cursor, size) * size
			}
			if rng.Intn(6) == 0 { // a gap
				start += unit * (1 + rng.Int63n(3))
			}
			if rng.Intn(10) == 0 { // an overlap with what came before
				start -= 1 + rng.Int63n(size)
			}
			length := size
			if rng.Intn(5) == 0 { // a partial block
				length = 1 + rng.Int63n(size)
			}
			spans = append(spans, span{start, start + length})
			cursor = start + length
		}
	case mode < 9: // random spans: many overlaps
		for range n {
			start := unit*(rng.Int63n(40)-5) + rng.Int63n(unit)*int64(rng.Intn(2))
			spans = append(spans, span{start, start + 1 + rng.Int63n(3*maxRange)})
		}
	default: // extreme times: Go's int64 arithmetic wraps
		n = min(n, 12)
		for range n {
			var start int64
			switch rng.Intn(3) {
			case 0:
				start = math.MaxInt64 - rng.Int63n(4*maxRange)
			case 1:
				start = math.MinInt64 + rng.Int63n(4*maxRange)
			default:
				start = -rng.Int63n(4 * maxRange)
			}
			length := 1 + rng.Int63n(2*maxRange)
			if start > math.MaxInt64-length {
				length = math.MaxInt64 - start
			}
			spans = append(spans, span{start, start + length})
		}
	}
	// Degenerate blocks (maxTime <= minTime) only where Go's sort is stable.
	if n <= 12 {
		for i := range spans {
			if rng.Intn(30) == 0 {
				spans[i].max = spans[i].min - rng.Int63n(3)
			}
		}
	} else {
		// Distinct min times: Go's unstable sort orders ties its own way.
		seen := map[int64]bool{}
		for i := range spans {
			for seen[spans[i].min] {
				spans[i].min++
				spans[i].max++
			}
			seen[spans[i].min] = true
		}
	}

	for _, sp := range spans {
		id := newULID(rng)
		m := tsdb.BlockMeta{ULID: id, MinTime: sp.min, MaxTime: sp.max, Version: 1}
		m.Compaction.Level = 1 + rng.Intn(4)
		m.Compaction.Sources = []ulid.ULID{id}
		switch rng.Intn(5) {
		case 0:
		case 1:
			m.Stats.NumSeries = uint64(rng.Int63n(1000))
		default:
			m.Stats.NumSeries = uint64(1 + rng.Int63n(200))
		}
		switch rng.Intn(8) {
		case 0: // everything deleted
			m.Stats.NumTombstones = m.Stats.NumSeries + uint64(rng.Intn(3))
		case 1: // around the 5% threshold
			m.Stats.NumTombstones = (m.Stats.NumSeries+1)/20 + uint64(rng.Intn(3))
		case 2:
			m.Stats.NumTombstones = uint64(rng.Int63n(50))
		}
		if rng.Intn(200) == 0 {
			m.Stats.NumSeries = math.MaxUint64
			m.Stats.NumTombstones = 1
		}
		m.Stats.NumSamples = uint64(rng.Int63n(1e6))
		m.Compaction.Failed = rng.Intn(12) == 0
		m.Compaction.Deletable = rng.Intn(20) == 0
		if rng.Intn(10) == 0 {
			m.Compaction.SetOutOfOrder()
		}
		name := id.String()
		if rng.Intn(40) == 0 {
			name = strings.ToLower(name) // ParseStrict accepts lower case
		}
		s.metas = append(s.metas, m)
		s.names = append(s.names, name)
	}

	var extras []func(dir string) error
	if rng.Intn(5) == 0 {
		junkULID := newULID(rng).String()
		tmpName := newULID(rng).String() + ".tmp-for-creation"
		extras = append(extras,
			func(d string) error { return os.MkdirAll(filepath.Join(d, "wal"), 0o777) },
			func(d string) error { return os.WriteFile(filepath.Join(d, "lock"), nil, 0o666) },
			func(d string) error { return os.WriteFile(filepath.Join(d, junkULID), []byte("x"), 0o666) },
			func(d string) error { return os.MkdirAll(filepath.Join(d, tmpName), 0o777) })
	}
	if rng.Intn(50) == 0 {
		broken := newULID(rng).String()
		content := []string{"{", `{"version":2}`, `{"ulid":"x","version":1}`, ""}[rng.Intn(4)]
		extras = append(extras, func(d string) error {
			bd := filepath.Join(d, broken)
			if err := os.MkdirAll(bd, 0o777); err != nil {
				return err
			}
			if content == "" {
				return nil // no meta.json at all
			}
			return os.WriteFile(filepath.Join(bd, "meta.json"), []byte(content), 0o666)
		})
	}
	s.extras = func(d string) error {
		for _, f := range extras {
			if err := f(d); err != nil {
				return err
			}
		}
		return nil
	}
	s.desc = describePlan(s)
	return s
}

func ceilDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && (a > 0) == (b > 0) {
		q++
	}
	return q
}

func slicesMax(v []int64) int64 {
	m := v[0]
	for _, x := range v {
		m = max(m, x)
	}
	return m
}

func describePlan(s planScenario) string {
	var b strings.Builder
	fmt.Fprintf(&b, "ranges=%v overlapping=%v blocks (by min time):\n", s.ranges, s.overlapping)
	idx := make([]int, len(s.metas))
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(a, c int) bool { return s.metas[idx[a]].MinTime < s.metas[idx[c]].MinTime })
	for _, i := range idx {
		m := s.metas[i]
		fmt.Fprintf(&b, "  %s [%d, %d) series=%d tombstones=%d failed=%v\n",
			s.names[i], m.MinTime, m.MaxTime, m.Stats.NumSeries, m.Stats.NumTombstones, m.Compaction.Failed)
	}
	return b.String()
}

func TestPlanMatchesPrometheus(t *testing.T) {
	bin := ferriteBin(t)
	rng := rand.New(rand.NewSource(planSeed(t, 20240601)))
	base := t.TempDir()
	var empty, single, multi, bothFail, mismatches int
	reasons := map[string]int{}
	for i := range planScenarios {
		s := genPlanScenario(rng)
		dir := filepath.Join(base, fmt.Sprintf("s%04d", i))
		if err := os.MkdirAll(dir, 0o777); err != nil {
			t.Fatal(err)
		}
		for k := range s.metas {
			if err := promplan.WriteMetaDir(dir, s.names[k], &s.metas[k]); err != nil {
				t.Fatal(err)
			}
		}
		if err := s.extras(dir); err != nil {
			t.Fatal(err)
		}

		want, promErr := promplan.Plan(dir, s.ranges, s.overlapping)
		args := []string{"debug", "plan", "compact", dir, "--ranges=" + promplan.FormatRanges(s.ranges)}
		if !s.overlapping {
			args = append(args, "--no-overlapping")
		}
		r := run(bin, nil, args...)
		if strings.Contains(r.stderr, "panicked at") {
			t.Fatalf("scenario %d: ferrite panicked:\n%s\n%s", i, tail(r.stderr, 20), s.desc)
		}
		var got []string
		if r.err == nil {
			got = strings.Fields(r.stdout)
		}
		switch {
		case promErr != nil && r.err != nil:
			bothFail++
			continue
		case promErr != nil:
			t.Errorf("scenario %d: Prometheus fails (%v), Ferrite plans %v\n%s", i, promErr, got, s.desc)
		case r.err != nil:
			t.Errorf("scenario %d: Ferrite fails (%v: %s), Prometheus plans %v\n%s",
				i, r.err, tail(r.stderr, 3), want, s.desc)
		case strings.Join(got, " ") != strings.Join(want, " "):
			t.Errorf("scenario %d: plans differ\nprometheus: %v\nferrite:    %v\n%s", i, want, got, s.desc)
		default:
			for _, l := range strings.Split(r.stderr, "\n") {
				if f := strings.Fields(strings.TrimPrefix(l, "reason: ")); strings.HasPrefix(l, "reason: ") && len(f) > 0 {
					reasons[f[0]]++
				}
			}
			switch len(want) {
			case 0:
				empty++
			case 1:
				single++
			default:
				multi++
			}
			continue
		}
		if mismatches++; mismatches >= 10 {
			t.Fatal("too many mismatches")
		}
	}
	t.Logf("%d scenarios: %d empty plans, %d single-block (tombstones), %d multi-block, %d failing on both sides; "+
		"rules (ferrite's account): %v", planScenarios, empty, single, multi, bothFail, reasons)
	// The generator must exercise every outcome and every rule.
	if empty < planScenarios/10 || single < 10 || multi < planScenarios/5 || bothFail < 2 ||
		reasons["overlapping"] < planScenarios/10 || reasons["leveled"] < planScenarios/10 || reasons["tombstones"] < 10 {
		t.Errorf("scenario mix too narrow: empty=%d single=%d multi=%d bothFail=%d rules=%v",
			empty, single, multi, bothFail, reasons)
	}
}

// retentionFixture holds a real block and a real head to copy from.
type retentionFixture struct {
	block string // a block dir made by tsdb.CreateBlock
	head  string // a data dir with wal/ and chunks_head/, no blocks
}

func newRetentionFixture(t *testing.T, base string) retentionFixture {
	t.Helper()
	var series []storage.Series
	for i := range 3 {
		series = append(series, storage.NewListSeries(
			labels.FromStrings("__name__", "plan_metric", "i", fmt.Sprint(i)),
			chunks.GenerateSamples(0, 200)))
	}
	bdir := filepath.Join(base, "tmpl-block")
	if err := os.MkdirAll(bdir, 0o777); err != nil {
		t.Fatal(err)
	}
	path, err := tsdb.CreateBlock(series, bdir, 0, promtsdb.Logger)
	if err != nil {
		t.Fatal(err)
	}
	head := filepath.Join(base, "tmpl-head")
	generate(t, promtsdb.GenOptions{Dir: head, Series: 30, Samples: 400})
	return retentionFixture{block: path, head: head}
}

// copyBlock copies the fixture block to dir/<meta.ULID> with meta as its
// meta.json (Prometheus' JSON) and pad extra bytes at the end of
// chunks/000001 (Prometheus' chunk reader checks only the header and counts
// the file length).
func (f retentionFixture) copyBlock(t *testing.T, dir string, meta *tsdb.BlockMeta, pad int) {
	t.Helper()
	dst := filepath.Join(dir, meta.ULID.String())
	if err := promtsdb.CopyDir(f.block, dst); err != nil {
		t.Fatal(err)
	}
	if err := promplan.WriteMetaDir(dir, "", meta); err != nil {
		t.Fatal(err)
	}
	if pad > 0 {
		fh, err := os.OpenFile(filepath.Join(dst, "chunks", "000001"), os.O_APPEND|os.O_WRONLY, 0)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := fh.Write(make([]byte, pad)); err != nil {
			t.Fatal(err)
		}
		if err := fh.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

func TestRetentionMatchesPrometheus(t *testing.T) {
	ferriteBin(t)
	base := t.TempDir()
	fx := newRetentionFixture(t, base)
	rng := rand.New(rand.NewSource(planSeed(t, 77)))
	const unit = 1000
	var deletedSome, keptAll, deletedAll, mismatches int
	for i := range retentionScenarios {
		dir := filepath.Join(base, fmt.Sprintf("r%03d", i))
		if err := os.MkdirAll(dir, 0o777); err != nil {
			t.Fatal(err)
		}
		withHead := rng.Intn(2) == 0
		if withHead {
			for _, sub := range []string{"wal", "chunks_head"} {
				if err := promtsdb.CopyDir(filepath.Join(fx.head, sub), filepath.Join(dir, sub)); err != nil {
					t.Fatal(err)
				}
			}
		}
		flags := rng.Intn(2) == 0 // deletable flags and parents in this scenario
		n := 1 + rng.Intn(12)
		if rng.Intn(5) == 0 {
			n = 13 + rng.Intn(4)
		}
		var metas []tsdb.BlockMeta
		cursor := int64(rng.Intn(5)) * unit
		seenMax := map[int64]bool{}
		for range n {
			start := cursor
			if rng.Intn(6) == 0 {
				start -= rng.Int63n(2 * unit) // overlap
			}
			if rng.Intn(5) == 0 {
				start += rng.Int63n(3 * unit) // gap
			}
			length := unit * (1 + rng.Int63n(3))
			if rng.Intn(4) == 0 {
				length = 1 + rng.Int63n(3*unit)
			}
			maxT := start + length
			if n > 12 { // Go's sort is unstable beyond 12: no max time ties
				for seenMax[maxT] {
					maxT++
				}
			} else if rng.Intn(8) == 0 && len(metas) > 0 {
				maxT = metas[rng.Intn(len(metas))].MaxTime // a tie
			}
			seenMax[maxT] = true
			id := newULID(rng)
			m := tsdb.BlockMeta{ULID: id, MinTime: start, MaxTime: maxT, Version: 1}
			m.Compaction.Level = 1
			m.Compaction.Sources = []ulid.ULID{id}
			m.Stats.NumSeries = 3
			m.Compaction.Deletable = flags && rng.Intn(10) == 0
			metas = append(metas, m)
			cursor = max(cursor, maxT)
		}
		// Parents: a few blocks name others (or missing ones, or
		// themselves) as compacted into them.
		for k := range metas {
			if !flags || rng.Intn(4) != 0 {
				continue
			}
			for range 1 + rng.Intn(2) {
				var p tsdb.BlockDesc
				switch rng.Intn(5) {
				case 0:
					p.ULID = newULID(rng) // gone already
				case 1:
					p.ULID = metas[k].ULID
				default:
					p.ULID = metas[rng.Intn(len(metas))].ULID
				}
				metas[k].Compaction.Parents = append(metas[k].Compaction.Parents, p)
				metas[k].Compaction.Level = 2
			}
		}
		for k := range metas {
			pad := 0
			if rng.Intn(3) != 0 {
				pad = rng.Intn(6000)
			}
			fx.copyBlock(t, dir, &metas[k], pad)
		}
		var blocksBytes, headBytes int64
		sizes := map[string]int64{}
		for _, name := range mustBlockNames(t, dir) {
			sizes[name] = dirBytes(t, filepath.Join(dir, name))
			blocksBytes += sizes[name]
		}
		if withHead {
			headBytes = dirBytes(t, filepath.Join(dir, "wal")) + dirBytes(t, filepath.Join(dir, "chunks_head"))
		}
		total := blocksBytes + headBytes
		var span int64
		for _, m := range metas {
			span = max(span, m.MaxTime-metas[0].MinTime)
		}
		// Newest first, for limits exactly on a block boundary.
		byMax := append([]tsdb.BlockMeta(nil), metas...)
		sort.SliceStable(byMax, func(a, b int) bool { return byMax[a].MaxTime > byMax[b].MaxTime })

		var timeMs, sizeBytes int64
		switch rng.Intn(10) {
		case 0, 1, 2:
		case 3:
			timeMs = -1 - rng.Int63n(unit) // the TSDB accepts it: all but the newest go
		case 4, 5, 6: // exactly the distance from the newest block to another
			timeMs = byMax[0].MaxTime - byMax[rng.Intn(len(byMax))].MaxTime
		default:
			timeMs = 1 + rng.Int63n(span+unit)
		}
		switch rng.Intn(10) {
		case 0, 1, 2:
		case 3:
			sizeBytes = -rng.Int63n(1000) // disabled
		case 4:
			sizeBytes = rng.Int63n(total + 2000)
		case 5, 6: // exactly the head and the k newest blocks
			sizeBytes = headBytes
			for _, m := range byMax[:rng.Intn(len(byMax)+1)] {
				sizeBytes += sizes[m.ULID.String()]
			}
		default: // mostly a cut among the blocks
			sizeBytes = headBytes + rng.Int63n(blocksBytes+2000)
		}

		out := runFerrite(t, "debug", "plan", "retention", dir,
			fmt.Sprintf("--time-ms=%d", timeMs), fmt.Sprintf("--size-bytes=%d", sizeBytes))
		var got []string
		for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
			if f := strings.Fields(l); len(f) > 0 {
				got = append(got, f[0])
			}
		}
		sort.Strings(got)
		want, err := promplan.Retention(dir, timeMs, sizeBytes)
		if err != nil {
			t.Fatalf("scenario %d: prometheus open: %v", i, err)
		}
		if strings.Join(got, " ") != strings.Join(want, " ") {
			t.Errorf("scenario %d (time=%d size=%d head=%v, %d blocks, %d bytes): deleted blocks differ\n"+
				"prometheus: %v\nferrite:    %v\nferrite said:\n%s\n%s",
				i, timeMs, sizeBytes, withHead, len(metas), total, want, got, out, describeRetention(metas))
			if mismatches++; mismatches >= 5 {
				t.Fatal("too many mismatches")
			}
			continue
		}
		switch len(want) {
		case 0:
			keptAll++
		case len(metas):
			deletedAll++
		default:
			deletedSome++
		}
	}
	t.Logf("%d scenarios: %d kept all blocks, %d deleted some, %d deleted all",
		retentionScenarios, keptAll, deletedSome, deletedAll)
	if keptAll < 5 || deletedSome < retentionScenarios/3 {
		t.Errorf("scenario mix too narrow: kept all=%d, deleted some=%d, deleted all=%d", keptAll, deletedSome, deletedAll)
	}
}

func describeRetention(metas []tsdb.BlockMeta) string {
	var b strings.Builder
	for _, m := range metas {
		var parents []string
		for _, p := range m.Compaction.Parents {
			parents = append(parents, p.ULID.String())
		}
		fmt.Fprintf(&b, "  %s [%d, %d) deletable=%v parents=%v\n", m.ULID, m.MinTime, m.MaxTime, m.Compaction.Deletable, parents)
	}
	return b.String()
}

func mustBlockNames(t *testing.T, dir string) []string {
	t.Helper()
	names, err := promplan.BlockDirNames(dir)
	if err != nil {
		t.Fatal(err)
	}
	return names
}

// dirBytes sums the sizes of the files under path.
func dirBytes(t *testing.T, path string) int64 {
	t.Helper()
	var n int64
	err := filepath.Walk(path, func(_ string, info os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		if !info.IsDir() {
			n += info.Size()
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return n
}
