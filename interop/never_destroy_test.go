package interop_test

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"ferrite.dev/interop/internal/promtsdb"
)

// TestPrometheusDirsOfEveryKind (issue 10): Prometheus v3.16.0 writes five
// data dirs, each holding one kind of data beyond plain floats next to
// ordinary float series (promtsdb.GenerateUnsupported, which checks that the
// data sits where the kind says):
//
//   - wal-histograms: integer native histograms (exponential schemas) in the
//     WAL only;
//   - head-float-histograms: float native histograms, full chunks m-mapped
//     into chunks_head/;
//   - nhcb: custom-bucket histograms (schema -53), integer and float, in the
//     WAL and chunks_head/;
//   - block-histograms: integer and float histograms in four aligned 2 h
//     blocks written by Prometheus' compactor (the first three fill a 6 h
//     range, so the leveled planner merges them), floats only in the head;
//   - ooo: out-of-order floats, histograms and float histograms, some in
//     out-of-order blocks (from Prometheus' out-of-order compaction), the
//     rest in wbl/ and out-of-order chunks in chunks_head/.
//
// Ferrite reads every dir whole: `ferrite tsdb dump` prints what
// promtool's prints (histograms as their String()), and on a fresh copy of
// each (and, where chunks_head/ holds histogram or out-of-order chunks, on
// a copy without it, so the WAL's histogram records and the WBL are all
// replayed), `ferrite tsdb census` must
// print exactly what Prometheus' read-only census of the same copy prints
// (series, samples per kind, sums, and a hash of every series and sample:
// timestamps, float bits, histograms' schema, counts, sums, bounds and
// non-empty buckets). Then `ferrite tsdb compact` (head persisted into
// blocks, the WAL checkpointed and truncated, the leveled compactions run)
// must succeed, and afterwards both Prometheus and Ferrite must still read
// exactly what was written.
func TestPrometheusDirsOfEveryKind(t *testing.T) {
	bin := ferriteBin(t)
	pt := promtoolBin(t)
	root := t.TempDir()
	start := time.Now()
	// What Prometheus reads from each dir as written: the census must be
	// what was written; its hash is what every copy must still give.
	orig := map[string]promtsdb.Census{}
	var dirs []promtsdb.UnsupportedDir
	for _, kind := range promtsdb.UnsupportedKinds {
		u, err := promtsdb.GenerateUnsupported(kind, filepath.Join(root, "gen", kind))
		if err != nil {
			t.Fatalf("prometheus: %v", err)
		}
		c, err := promtsdb.CensusReadOnly(u.Dir)
		if err != nil {
			t.Fatalf("prometheus cannot read the %s dir it wrote: %v", kind, err)
		}
		if !c.Equal(u.Want) {
			t.Fatalf("prometheus reads from the %s dir it wrote\n  %s\nwant (as written)\n  %s", kind, c, u.Want)
		}
		orig[kind] = c
		t.Logf("%s: %s\n%s", kind, c, u.Files)
		dirs = append(dirs, u)
	}
	t.Logf("generated %d dirs in %.2fs", len(dirs), time.Since(start).Seconds())

	for _, u := range dirs {
		t.Run(u.Kind, func(t *testing.T) {
			// The census of Ferrite equals Prometheus' of the same copy.
			copies := []string{filepath.Join(root, "run", u.Kind+"-census")}
			copyDir(t, u.Dir, copies[0])
			if u.Kind == promtsdb.UnsupportedHeadFloatHistograms || u.Kind == promtsdb.UnsupportedNHCB || u.Kind == promtsdb.UnsupportedOOO {
				c := filepath.Join(root, "run", u.Kind+"-census-no-chunks-head")
				copyWithoutChunksHead(t, u.Dir, c)
				copies = append(copies, c)
			}
			for _, dir := range copies {
				want, err := promtsdb.CensusReadOnly(dir)
				if err != nil {
					t.Fatalf("prometheus cannot read %s: %v", dir, err)
				}
				checkFerriteCensus(t, bin, dir, want, filepath.Base(dir))
			}
			// promtool's dump, histograms printed as their String().
			// promtool's read-only open starts the head after the newest
			// block, out-of-order ones included, so under an out-of-order
			// block it drops head samples (its server open does not):
			// there, Ferrite's dump must print every sample instead.
			f, p := runBoth(t, bin, pt, copies[0], "tsdb", "dump", copies[0])
			fl, pl := sortedLines(f), sortedLines(p)
			if u.Kind == promtsdb.UnsupportedOOO {
				c := orig[u.Kind]
				if want := c.Floats + c.Histograms + c.FloatHistograms; int64(len(fl)) != want {
					t.Errorf("tsdb dump: ferrite printed %d samples, want %d", len(fl), want)
				}
			} else if strings.Join(fl, "\n") != strings.Join(pl, "\n") {
				t.Errorf("tsdb dump: ferrite %d lines, promtool %d:\n%s", len(fl), len(pl),
					lineDiff(strings.Join(pl, "\n"), strings.Join(fl, "\n")))
			}

			// Compacted by Ferrite, the dir still holds exactly what was
			// written, for Prometheus and for Ferrite.
			dir := filepath.Join(root, "run", u.Kind+"-compact")
			copyDir(t, u.Dir, dir)
			r := run(bin, nil, "tsdb", "compact", dir)
			checkNoPanicOrTimeout(t, "tsdb compact", r)
			if r.err != nil {
				t.Fatalf("ferrite tsdb compact failed on %s: %v\n%s", u.Kind, r.err, tail(r.stdout+r.stderr, 10))
			}
			t.Logf("ferrite tsdb compact:\n%s", tail(r.stdout+r.stderr, 4))
			got, err := promtsdb.CensusReadOnly(dir)
			if err != nil {
				t.Fatalf("after ferrite tsdb compact, prometheus cannot read the dir: %v", err)
			}
			if want := orig[u.Kind]; !got.Equal(want) || got.Hash != want.Hash {
				t.Errorf("after ferrite tsdb compact, prometheus reads\n  %s\nwant (as written)\n  %s", got, want)
			}
			checkFerriteCensus(t, bin, dir, orig[u.Kind], "after compact")
		})
	}
}

// checkFerriteCensus runs `ferrite tsdb census dir` and compares its line
// with Prometheus' census, hash included.
func checkFerriteCensus(t *testing.T, bin, dir string, want promtsdb.Census, what string) {
	t.Helper()
	r := run(bin, nil, "tsdb", "census", dir)
	checkNoPanicOrTimeout(t, "tsdb census", r)
	if r.err != nil {
		t.Errorf("%s: ferrite tsdb census failed: %v\n%s", what, r.err, tail(r.stdout+r.stderr, 10))
		return
	}
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	got := lines[len(lines)-1]
	if got != want.String() {
		t.Errorf("%s: ferrite tsdb census\n  %s\nprometheus\n  %s", what, got, want.String())
	}
}

func checkNoPanicOrTimeout(t *testing.T, what string, r cmdResult) {
	t.Helper()
	if strings.Contains(r.stderr, "panicked at") {
		t.Fatalf("ferrite %s panicked:\n%s", what, tail(r.stderr, 30))
	}
	if r.err != nil && strings.Contains(r.err.Error(), "timed out") {
		t.Fatalf("ferrite %s: %v", what, r.err)
	}
}
