package interop_test

import (
	"crypto/sha256"
	"fmt"
	"os"
	"path/filepath"
	"sort"
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
//   - ooo: out-of-order float samples (wbl/ and out-of-order chunks in
//     chunks_head/).
//
// The histogram dirs Ferrite reads whole: `ferrite tsdb dump` prints what
// promtool's prints (histograms as their String()), and on a fresh copy of
// each (and,
// where chunks_head/ holds histogram chunks, on a copy without it, so the
// WAL's histogram records are all replayed), `ferrite tsdb census` must
// print exactly what Prometheus' read-only census of the same copy prints
// (series, samples per kind, sums, and a hash of every series and sample:
// timestamps, float bits, histograms' schema, counts, sums, bounds and
// non-empty buckets). Then `ferrite tsdb compact` (head persisted into
// blocks, the WAL checkpointed and truncated, the leveled compactions run)
// must succeed, and afterwards both Prometheus and Ferrite must still read
// exactly what was written.
//
// Out-of-order samples Ferrite does not store yet: `ferrite tsdb census`
// and `ferrite tsdb compact` must each fail (non-zero exit, no panic), say
// "unsupported" and name the kind ("out-of-order", "out of order" or "wbl";
// case does not matter), and leave every file byte-identical (an empty
// top-level `lock` file and added empty directories are tolerated and
// logged), and Prometheus must still read every sample exactly.
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
			if u.Kind == promtsdb.UnsupportedOOO {
				checkRefusedUnchanged(t, bin, u, orig[u.Kind], filepath.Join(root, "run"))
				return
			}
			// The census of Ferrite equals Prometheus' of the same copy.
			copies := []string{filepath.Join(root, "run", u.Kind+"-census")}
			copyDir(t, u.Dir, copies[0])
			if u.Kind == promtsdb.UnsupportedHeadFloatHistograms || u.Kind == promtsdb.UnsupportedNHCB {
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
			f, p := runBoth(t, bin, pt, copies[0], "tsdb", "dump", copies[0])
			if fl, pl := sortedLines(f), sortedLines(p); strings.Join(fl, "\n") != strings.Join(pl, "\n") {
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

// checkRefusedUnchanged runs census and compact on fresh copies of a dir
// Ferrite must refuse: each must fail naming the kind and change nothing.
func checkRefusedUnchanged(t *testing.T, bin string, u promtsdb.UnsupportedDir, want promtsdb.Census, runRoot string) {
	t.Helper()
	for _, cmd := range []string{"census", "compact"} {
		dir := filepath.Join(runRoot, u.Kind+"-"+cmd)
		copyDir(t, u.Dir, dir)
		before := fileHashes(t, dir)
		r := run(bin, nil, "tsdb", cmd, dir)
		out := r.stdout + r.stderr
		t.Logf("ferrite tsdb %s (%v):\n%s", cmd, r.err, tail(out, 6))
		checkNoPanicOrTimeout(t, "tsdb "+cmd, r)
		switch {
		case r.err == nil:
			t.Errorf("ferrite tsdb %s accepted a dir with %s (exit 0); want a refusal saying \"unsupported\"", cmd, u.Kind)
		case !containsFold(out, "unsupported") || !namesKind(u.Kind, out):
			t.Errorf("ferrite tsdb %s refused the dir (%v) without saying \"unsupported\" and naming %s (%s); output:\n%s",
				cmd, r.err, u.Kind, strings.Join(kindWords(u.Kind), " or "), tail(out, 10))
		}
		changes, tolerated := diffHashes(before, fileHashes(t, dir))
		if changes != "" {
			t.Errorf("ferrite tsdb %s (%v) changed the dir:\n%s", cmd, r.err, changes)
		}
		if tolerated != "" {
			t.Logf("ferrite tsdb %s left (tolerated):\n%s", cmd, tolerated)
		}
		got, err := promtsdb.CensusReadOnly(dir)
		if err != nil {
			t.Errorf("after ferrite tsdb %s, prometheus (read-only) cannot read the dir: %v", cmd, err)
		} else if !got.Equal(want) || got.Hash != want.Hash {
			t.Errorf("after ferrite tsdb %s, prometheus reads\n  %s\nwant (as written)\n  %s", cmd, got, want)
		}
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

func containsFold(s, sub string) bool {
	return strings.Contains(strings.ToLower(s), strings.ToLower(sub))
}

// kindWords are the words of which the refusal must contain one.
func kindWords(kind string) []string {
	if kind == promtsdb.UnsupportedOOO {
		return []string{"out-of-order", "out of order", "wbl"}
	}
	return []string{"histogram"}
}

func namesKind(kind, out string) bool {
	for _, w := range kindWords(kind) {
		if containsFold(out, w) {
			return true
		}
	}
	return false
}

// fileHashes maps every file of dir (relative path) to its size and sha256;
// directories map to "dir".
func fileHashes(t *testing.T, dir string) map[string]string {
	t.Helper()
	m := map[string]string{}
	for _, line := range strings.Split(dirStateFull(t, dir), "\n") {
		if line == "" {
			continue
		}
		path, rest, _ := strings.Cut(line, " ")
		m[path] = rest
	}
	return m
}

// dirStateFull is dirState with the whole sha256.
func dirStateFull(t *testing.T, dir string) string {
	t.Helper()
	var b strings.Builder
	err := filepath.Walk(dir, func(p string, info os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		if rel == "." {
			return nil
		}
		if info.IsDir() {
			fmt.Fprintf(&b, "%s/ dir\n", rel)
			return nil
		}
		sum, size, err := sha256File(p)
		if err != nil {
			return err
		}
		fmt.Fprintf(&b, "%s %d %s\n", rel, size, sum)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return b.String()
}

func sha256File(p string) (string, int, error) {
	data, err := os.ReadFile(p)
	if err != nil {
		return "", 0, err
	}
	return fmt.Sprintf("%x", sha256.Sum256(data)), len(data), nil
}

func subHashes(m map[string]string, prefix string) map[string]string {
	out := map[string]string{}
	for k, v := range m {
		if strings.HasPrefix(k, prefix) {
			out[k] = v
		}
	}
	return out
}

// diffHashes lists the files added, removed or changed (and the directories
// removed). Not changes, but listed in tolerated: an empty top-level lock file
// left behind, and directories added (empty ones: files added in them are
// changes), e.g. the empty chunks_head/ an open creates before it refuses.
func diffHashes(before, after map[string]string) (changes, tolerated string) {
	var lines, notes []string
	for k, v := range before {
		if w, ok := after[k]; !ok {
			lines = append(lines, fmt.Sprintf("  removed %s (%s)", k, v))
		} else if w != v {
			lines = append(lines, fmt.Sprintf("  changed %s (%s -> %s)", k, v, w))
		}
	}
	for k, v := range after {
		if _, ok := before[k]; !ok {
			line := fmt.Sprintf("  added %s (%s)", k, v)
			if (k == "lock" && strings.HasPrefix(v, "0 ")) || v == "dir" {
				notes = append(notes, line)
				continue
			}
			lines = append(lines, line)
		}
	}
	sort.Strings(lines)
	sort.Strings(notes)
	return strings.Join(lines, "\n"), strings.Join(notes, "\n")
}
