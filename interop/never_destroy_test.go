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

// TestUnsupportedDataIsNeverDestroyed (issue 10, item 1: never destroy what
// you don't understand): Prometheus v3.16.0 writes five data dirs, each
// holding one kind of data Ferrite does not support yet next to ordinary
// float series (promtsdb.GenerateUnsupported, which checks that the data
// sits where the kind says):
//
//   - wal-histograms: integer native histograms (exponential schemas) in the
//     WAL only;
//   - head-float-histograms: float native histograms, full chunks m-mapped
//     into chunks_head/;
//   - nhcb: custom-bucket histograms (schema -53), integer and float, in the
//     WAL and chunks_head/;
//   - ooo: out-of-order float samples (wbl/ and out-of-order chunks in
//     chunks_head/);
//   - block-histograms: integer and float histograms in four aligned 2 h
//     blocks written by Prometheus' compactor (the first three fill a 6 h
//     range, so the leveled planner wants to merge them), floats only in the
//     head.
//
// On a fresh copy of each, `ferrite tsdb digest` and `ferrite tsdb compact`
// (and, where chunks_head/ holds histogram chunks, which are read first,
// digest on a copy without chunks_head/, so the WAL's histogram records are
// met first) must each fail (non-zero exit, no panic), say "unsupported"
// and name the kind ("histogram"; for ooo "out-of-order", "out of order" or
// "wbl"; case does not matter), and leave every file byte-identical (path,
// size, sha256; only an empty top-level `lock` file left behind and added
// empty directories, such as the chunks_head/ an open creates before it
// refuses, are tolerated, and logged: they are no data). Then Prometheus'
// read-only open of the copy must still find every sample written, exactly
// (below).
//
// block-histograms is judged by what Ferrite can know when: it checks a
// block chunk's encoding when it reads the chunk, not when it opens the
// block (scanning every chunk file on each start would be costly), so the
// refusal comes after an ordinary open, which may already have done what
// opens do (a new empty WAL segment; for compact, the float head persisted
// as a block before the leveled compaction reaches the histogram blocks).
// There, what must hold is that every histogram block still there is
// byte-identical (rewriting a meta.json, e.g. marking its compaction failed,
// which would stop Prometheus from ever compacting it, is a failure), that
// none is gone unless the command succeeded, and that Prometheus still reads
// every sample exactly; digest reads every sample, so it must refuse as
// above; compact may exit 0 (having found nothing it had to decode those
// blocks for, or having merged their chunks without decoding them), and if it
// fails it must say "unsupported" and "histogram" as above. Other changes
// are logged.
//
// "Every sample exactly", for every dir and command: Prometheus' read-only
// census of the copy afterwards equals that of the dir as written (series,
// samples per kind, sums, and a hash of every series and sample: timestamps,
// float bits, histograms' schema, counts, sums, bounds and non-empty buckets;
// promtsdb.CensusReadOnly), which equals what the generator wrote.
func TestUnsupportedDataIsNeverDestroyed(t *testing.T) {
	bin := ferriteBin(t)
	root := t.TempDir()
	start := time.Now()
	// What Prometheus reads from each dir as written: the census must be
	// what was written; its hash is what every copy must still give.
	orig := map[string]promtsdb.Census{}
	gen := func(kind string) promtsdb.UnsupportedDir {
		t.Helper()
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
		return u
	}

	first := gen(promtsdb.UnsupportedWALHistograms)

	dirs := []promtsdb.UnsupportedDir{first}
	for _, kind := range promtsdb.UnsupportedKinds[1:] {
		dirs = append(dirs, gen(kind))
	}
	t.Logf("generated %d dirs in %.2fs", len(dirs), time.Since(start).Seconds())

	for _, u := range dirs {
		t.Run(u.Kind, func(t *testing.T) {
			type variant struct {
				cmd          string
				noChunksHead bool
			}
			variants := []variant{{"digest", false}, {"compact", false}}
			if u.Kind == promtsdb.UnsupportedHeadFloatHistograms || u.Kind == promtsdb.UnsupportedNHCB {
				// chunks_head/ is read before the WAL: without it, the
				// histogram WAL records (types 8, 9, 10) must be refused too.
				variants = append(variants, variant{"digest", true})
			}
			for _, v := range variants {
				cmd := v.cmd
				dir := filepath.Join(root, "run", u.Kind+"-"+cmd)
				if v.noChunksHead {
					dir += "-no-chunks-head"
					copyWithoutChunksHead(t, u.Dir, dir)
					cmd += " (no chunks_head/)"
				} else {
					copyDir(t, u.Dir, dir)
				}
				before := fileHashes(t, dir)
				r := run(bin, nil, "tsdb", v.cmd, dir)
				out := r.stdout + r.stderr
				t.Logf("ferrite tsdb %s (%v):\n%s", cmd, r.err, tail(out, 6))
				checkNoPanicOrTimeout(t, "tsdb "+cmd, r)
				after := fileHashes(t, dir)

				// See the doc comment for block-histograms.
				lazy := u.Kind == promtsdb.UnsupportedBlockHistograms
				switch {
				case r.err == nil && !(lazy && v.cmd == "compact"):
					t.Errorf("ferrite tsdb %s accepted a dir with %s (exit 0); want a refusal saying \"unsupported\"", cmd, u.Kind)
				case r.err != nil && (!containsFold(out, "unsupported") || !namesKind(u.Kind, out)):
					t.Errorf("ferrite tsdb %s refused the dir (%v) without saying \"unsupported\" and naming %s (%s); output:\n%s",
						cmd, r.err, u.Kind, strings.Join(kindWords(u.Kind), " or "), tail(out, 10))
				}
				changes, tolerated := diffHashes(before, after)
				if lazy {
					for _, b := range u.HistogramBlocks {
						bb, ba := subHashes(before, b+"/"), subHashes(after, b+"/")
						if len(ba) == 0 && r.err == nil {
							t.Logf("ferrite tsdb %s compacted histogram block %s away (its samples are checked below)", cmd, b)
							continue
						}
						if d, _ := diffHashes(bb, ba); d != "" {
							t.Errorf("ferrite tsdb %s (%v) changed histogram block %s:\n%s", cmd, r.err, b, d)
						}
					}
					if changes != "" {
						t.Logf("ferrite tsdb %s (%v) changed the dir (allowed outside the histogram blocks):\n%s", cmd, r.err, changes)
					}
				} else if changes != "" {
					t.Errorf("ferrite tsdb %s (%v) changed the dir:\n%s", cmd, r.err, changes)
				}
				if tolerated != "" {
					t.Logf("ferrite tsdb %s left (tolerated):\n%s", cmd, tolerated)
				}

				got, err := promtsdb.CensusReadOnly(dir)
				if err != nil {
					t.Errorf("after ferrite tsdb %s, prometheus (read-only) cannot read the dir: %v", cmd, err)
				} else if want := orig[u.Kind]; !got.Equal(want) || got.Hash != want.Hash {
					t.Errorf("after ferrite tsdb %s, prometheus reads\n  %s\nwant (as written)\n  %s", cmd, got, want)
				}
			}
		})
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
