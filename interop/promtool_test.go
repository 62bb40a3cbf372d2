package interop_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"ferrite.dev/interop/internal/promtsdb"
)

// TestPromtool: `ferrite tsdb list | analyze | dump` print what the real
// promtool (built from the Prometheus module this suite pins, v3.16.0) prints
// for the same data dir: a dir Ferrite wrote and compacted, the same dir
// while everything is still in the head, a dir Prometheus wrote with
// blocks and a head, and Prometheus' blocks of native histograms (list and
// analyze). Ferrite's tools must not change the dir.
//
// Where promtool's output order is unspecified (ties in analyze's ranked
// lists, which Go sorts unstably from map order; dump's series order), the
// comparison allows any order among equals. PROMTOOL_BIN overrides the
// promtool build.
func TestPromtool(t *testing.T) {
	fer := ferriteBin(t)
	pt := promtoolBin(t)

	t.Run("FerriteDir", func(t *testing.T) {
		dir := filepath.Join(t.TempDir(), "data")
		runFerrite(t, "tsdb", "synth", dir, "--series", "300", "--samples", "1000")
		// Head only: list shows no block, dump replays the WAL.
		compareList(t, fer, pt, dir)
		compareDumps(t, fer, pt, dir)
		runFerrite(t, "tsdb", "compact", dir)
		if n := len(blockDirs(dir)); n < 2 {
			t.Fatalf("ferrite compact wrote %d blocks, want several", n)
		}
		compareList(t, fer, pt, dir)
		compareAnalyzes(t, fer, pt, dir)
		compareDumps(t, fer, pt, dir)
	})

	// Blocks of integer and float native histograms written by
	// Prometheus' compactor: analyze --extended's histogram chunk figures.
	t.Run("PrometheusHistogramBlocks", func(t *testing.T) {
		u, err := promtsdb.GenerateUnsupported(promtsdb.UnsupportedBlockHistograms, filepath.Join(t.TempDir(), "prom"))
		if err != nil {
			t.Fatalf("prometheus: %v", err)
		}
		compareList(t, fer, pt, u.Dir)
		compareAnalyzes(t, fer, pt, u.Dir)
	})

	t.Run("PrometheusDir", func(t *testing.T) {
		dir := filepath.Join(t.TempDir(), "prom")
		generate(t, promtsdb.GenOptions{Dir: dir, Series: 300, Samples: 1000,
			SegmentSize: 128 << 10, Compact: true})
		if len(blockDirs(dir)) == 0 {
			t.Fatal("prometheus wrote no block")
		}
		compareList(t, fer, pt, dir)
		compareAnalyzes(t, fer, pt, dir)
		compareDumps(t, fer, pt, dir)
	})
}

// promtoolBin builds promtool into the test's temp dir (or takes PROMTOOL_BIN).
func promtoolBin(t *testing.T) string {
	t.Helper()
	if bin := os.Getenv("PROMTOOL_BIN"); bin != "" {
		abs, err := filepath.Abs(bin)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := os.Stat(abs); err != nil {
			t.Fatalf("PROMTOOL_BIN=%q: %v", bin, err)
		}
		return abs
	}
	bin := filepath.Join(t.TempDir(), "promtool")
	cmd := exec.Command("go", "build", "-o", bin, "github.com/prometheus/prometheus/cmd/promtool")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("building promtool (go build github.com/prometheus/prometheus/cmd/promtool, "+
			"a tool of this module): %v\n%s", err, tail(string(out), 30))
	}
	return bin
}

// runBoth runs the same arguments through ferrite and promtool; both must
// succeed, ferrite without a panic, and ferrite must leave dir unchanged.
func runBoth(t *testing.T, fer, pt, dir string, args ...string) (ferOut, ptOut string) {
	t.Helper()
	before := dirState(t, dir)
	f := run(fer, nil, args...)
	if strings.Contains(f.stderr, "panicked at") {
		t.Fatalf("ferrite %s panicked:\n%s", strings.Join(args, " "), tail(f.stderr, 30))
	}
	if f.err != nil {
		t.Fatalf("ferrite %s: %v\nstderr:\n%s", strings.Join(args, " "), f.err, tail(f.stderr, 30))
	}
	if after := dirState(t, dir); after != before {
		t.Fatalf("ferrite %s changed %s:\nbefore:\n%s\nafter:\n%s", strings.Join(args, " "), dir, before, after)
	}
	p := run(pt, nil, args...)
	if p.err != nil {
		t.Fatalf("promtool %s: %v\nstderr:\n%s", strings.Join(args, " "), p.err, tail(p.stderr, 30))
	}
	return f.stdout, p.stdout
}

func compareList(t *testing.T, fer, pt, dir string) {
	t.Helper()
	for _, args := range [][]string{{"tsdb", "list", dir}, {"tsdb", "list", "-r", dir}} {
		f, p := runBoth(t, fer, pt, dir, args...)
		if f != p {
			t.Errorf("%s: ferrite and promtool differ:\n%s", strings.Join(args, " "), lineDiff(p, f))
		}
	}
}

// compareAnalyzes runs analyze on the newest block and on each block, with
// and without a matcher and --extended, at the default limit and at one
// that shows every entry.
func compareAnalyzes(t *testing.T, fer, pt, dir string) {
	t.Helper()
	variants := [][]string{
		{},
		{"--extended"},
		{"--limit", "5", "--match", `{instance="host-1"}`},
		{"--extended", "--match", `synth_metric_7{job=~"syn.*"}`},
		{"--match", `{__name__=~"synth_metric_1.*", instance!="host-0"}`},
	}
	targets := [][]string{{}}
	for _, b := range blockDirs(dir) {
		targets = append(targets, []string{b})
	}
	for _, target := range targets {
		for _, v := range variants {
			args := append(append([]string{"tsdb", "analyze", dir}, target...), v...)
			f, p := runBoth(t, fer, pt, dir, args...)
			// The same without a limit (ferrite, like clap, takes a flag once).
			var full []string
			for i := 0; i < len(args); i++ {
				if args[i] == "--limit" {
					i++
					continue
				}
				full = append(full, args[i])
			}
			full = append(full, "--limit", "1000000")
			ff, pf := runBoth(t, fer, pt, dir, full...)
			what := strings.Join(args[2:], " ")
			if err := sameAnalyze(pf, ff, pf); err != nil {
				t.Errorf("analyze %s --limit 1000000: %v\npromtool:\n%s\nferrite:\n%s", what, err, head(pf, 60), head(ff, 60))
			}
			if err := sameAnalyze(p, f, pf); err != nil {
				t.Errorf("analyze %s: %v\npromtool:\n%s\nferrite:\n%s", what, err, p, f)
			}
		}
	}
}

// analyzeOut is analyze's output cut into its parts: the header lines, the
// ranked lists ("value key" lines under a title), and the extended tail.
type analyzeOut struct {
	header []string
	titles []string
	lists  map[string][][2]string
	tail   string
}

func parseAnalyze(s string) analyzeOut {
	a := analyzeOut{lists: map[string][][2]string{}}
	if i := strings.Index(s, "\nCompaction analysis:\n"); i >= 0 {
		s, a.tail = s[:i], s[i:]
	}
	parts := strings.Split(strings.TrimRight(s, "\n"), "\n\n")
	a.header = strings.Split(parts[0], "\n")
	for _, part := range parts[1:] {
		lines := strings.Split(part, "\n")
		title := lines[0]
		a.titles = append(a.titles, title)
		a.lists[title] = [][2]string{}
		for _, l := range lines[1:] {
			v, k, _ := strings.Cut(l, " ")
			a.lists[title] = append(a.lists[title], [2]string{v, k})
		}
	}
	return a
}

// sameAnalyze compares analyze outputs: header, titles and the extended
// tail exactly; each list's values in order, and the keys among equal
// values as sets. Where the limit cuts a group of equal values, the keys
// shown may differ: each of ferrite's must hold that value in promtool's
// full list (full).
func sameAnalyze(prom, fer, full string) error {
	p, f, all := parseAnalyze(prom), parseAnalyze(fer), parseAnalyze(full)
	if strings.Join(p.header, "\n") != strings.Join(f.header, "\n") {
		return fmt.Errorf("headers differ:\n%s", lineDiff(strings.Join(p.header, "\n"), strings.Join(f.header, "\n")))
	}
	if strings.Join(p.titles, "|") != strings.Join(f.titles, "|") {
		return fmt.Errorf("sections differ: %q vs %q", p.titles, f.titles)
	}
	if p.tail != f.tail {
		return fmt.Errorf("compaction analysis differs:\n%s", lineDiff(p.tail, f.tail))
	}
	for _, title := range p.titles {
		pl, fl := p.lists[title], f.lists[title]
		if len(pl) != len(fl) {
			return fmt.Errorf("%s: %d lines vs %d", title, len(pl), len(fl))
		}
		full := map[string]string{}
		for _, e := range all.lists[title] {
			full[e[1]] = e[0]
		}
		group := func(l [][2]string, v string) []string {
			var keys []string
			for _, e := range l {
				if e[0] == v {
					keys = append(keys, e[1])
				}
			}
			sort.Strings(keys)
			return keys
		}
		for i := range pl {
			if pl[i][0] != fl[i][0] {
				return fmt.Errorf("%s: line %d has value %s, promtool %s", title, i+1, fl[i][0], pl[i][0])
			}
			v := pl[i][0]
			cut := v == pl[len(pl)-1][0] && len(pl) < len(all.lists[title])
			if !cut {
				if pk, fk := group(pl, v), group(fl, v); strings.Join(pk, "\n") != strings.Join(fk, "\n") {
					return fmt.Errorf("%s: keys with value %s differ: promtool %q, ferrite %q", title, v, pk, fk)
				}
			} else if full[fl[i][1]] != v {
				return fmt.Errorf("%s: ferrite shows %s %s, promtool's full list has %q", title, v, fl[i][1], full[fl[i][1]])
			}
		}
	}
	return nil
}

// compareDumps compares dump for several selectors and time ranges, the
// lines as sorted sets (promtool's series order is unspecified).
func compareDumps(t *testing.T, fer, pt, dir string) {
	t.Helper()
	const start = 1_700_000_000_000
	cases := [][]string{
		{},
		{"--match", `{instance="host-1"}`},
		{"--match", `synth_metric_7{job=~"syn.*"}`, "--min-time", fmt.Sprint(start + 3_000_000), "--max-time", fmt.Sprint(start + 10_000_000)},
		{"--match", `{__name__=~"synth_metric_1.*"}`, "--match", `{instance="host-2"}`},
		{"--match", `{__name__=~'(?s:.*)'}`, "--min-time", fmt.Sprint(start + 7_200_000)},
		{"--min-time", fmt.Sprint(start + 7_200_000), "--max-time", fmt.Sprint(start + 7_200_000)},
		{"--max-time", fmt.Sprint(start + 60_000)},
		{"--match", `{instance=~"host-[3-5]", __name__!~"synth_metric_4.*"}`, "--min-time", fmt.Sprint(start + 14_000_000)},
		{"--match", `{job="nope"}`},
	}
	total := 0
	for _, c := range cases {
		args := append([]string{"tsdb", "dump", dir}, c...)
		f, p := runBoth(t, fer, pt, dir, args...)
		fl, pl := sortedLines(f), sortedLines(p)
		if strings.Join(fl, "\n") != strings.Join(pl, "\n") {
			t.Errorf("dump %s: ferrite %d lines, promtool %d:\n%s", strings.Join(c, " "), len(fl), len(pl),
				lineDiff(strings.Join(pl, "\n"), strings.Join(fl, "\n")))
		}
		total += len(pl)
	}
	if total == 0 {
		t.Fatal("the dumps printed nothing")
	}
}

func sortedLines(s string) []string {
	s = strings.TrimRight(s, "\n")
	if s == "" {
		return nil
	}
	l := strings.Split(s, "\n")
	sort.Strings(l)
	return l
}
