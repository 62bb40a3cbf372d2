package interop_test

import (
	"bytes"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/tsdb/chunks"

	"ferrite.dev/interop/cmd/promindexgen/indexgen"
)

// indexShape describes one seeded random index spec.
type indexShape struct {
	name       string
	seed       int64
	series     int     // label sets drawn (duplicates are dropped)
	names      int     // label names besides __name__
	values     int     // values per name (pool size)
	pLabel     float64 // chance a series carries a given name
	longValues bool    // some values of 200..3000 bytes
	weird      bool    // unicode, spaces, %, =, ~, control and invalid UTF-8 bytes, empty values
	maxChunks  int
	extraSyms  int
}

var indexShapes = []indexShape{
	{name: "tiny", seed: 1, series: 12, names: 3, values: 4, pLabel: 0.7, maxChunks: 3},
	{name: "empty", seed: 2},
	{name: "symbols-only", seed: 3, extraSyms: 70},
	{name: "boundary-32", seed: 4, series: 400, names: 1, values: 32, pLabel: 1, maxChunks: 1},
	{name: "boundary-33", seed: 5, series: 400, names: 2, values: 33, pLabel: 1, maxChunks: 2},
	{name: "boundary-65", seed: 6, series: 600, names: 1, values: 65, pLabel: 1, maxChunks: 1},
	{name: "many-values", seed: 7, series: 3000, names: 4, values: 700, pLabel: 0.8, maxChunks: 4, extraSyms: 10},
	{name: "many-series", seed: 8, series: 20000, names: 6, values: 40, pLabel: 0.9, maxChunks: 3},
	{name: "long-unicode", seed: 9, series: 800, names: 5, values: 60, pLabel: 0.6, longValues: true, weird: true, maxChunks: 6, extraSyms: 5},
	{name: "weird-bytes", seed: 10, series: 500, names: 8, values: 90, pLabel: 0.5, weird: true, maxChunks: 5},
}

func randString(rng *rand.Rand, s indexShape) string {
	const alpha = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-./:"
	n := 1 + rng.Intn(16)
	if s.longValues && rng.Intn(8) == 0 {
		n = 200 + rng.Intn(2800)
	}
	var b strings.Builder
	for b.Len() < n {
		if s.weird && rng.Intn(6) == 0 {
			pieces := []string{"é", "日本語", "🦀", "ü", " ", "%", "=", "~", "\n", "\t", "\x00", "\xff", "\xc3", "{", "\"", "\\"}
			b.WriteString(pieces[rng.Intn(len(pieces))])
		} else {
			b.WriteByte(alpha[rng.Intn(len(alpha))])
		}
	}
	return b.String()
}

// randomIndexSpec draws label sets from per-name value pools, sorts them as
// Prometheus does (labels.Compare), and gives each series chunk metas with
// increasing times and globally non-decreasing refs.
func randomIndexSpec(s indexShape) *indexgen.Spec {
	rng := rand.New(rand.NewSource(s.seed))
	spec := &indexgen.Spec{}
	for range s.extraSyms {
		spec.Symbols = append(spec.Symbols, randString(rng, s))
	}
	nameSet := map[string]bool{}
	for len(nameSet) < s.names {
		n := randString(rng, indexShape{weird: s.weird})
		if n != "__name__" {
			nameSet[n] = true
		}
	}
	names := append([]string{"__name__"}, mapKeys(nameSet)...)
	slices.Sort(names)
	pools := map[string][]string{}
	for _, n := range names {
		seen := map[string]bool{}
		for len(pools[n]) < max(s.values, 1) {
			v := randString(rng, s)
			if s.weird && rng.Intn(20) == 0 {
				v = ""
			}
			if n == "__name__" {
				v = fmt.Sprintf("metric_%d", rng.Intn(max(s.values, 1)*3))
			}
			if !seen[v] {
				seen[v] = true
				pools[n] = append(pools[n], v)
			}
		}
	}
	var sets []labels.Labels
	seen := map[string]bool{}
	var b labels.ScratchBuilder
	for range s.series {
		b.Reset()
		for _, n := range names {
			if n == "__name__" || rng.Float64() < s.pLabel {
				b.Add(n, pools[n][rng.Intn(len(pools[n]))])
			}
		}
		ls := b.Labels()
		if k := ls.String(); !seen[k] {
			seen[k] = true
			sets = append(sets, ls)
		}
	}
	slices.SortFunc(sets, labels.Compare)
	ref := uint64(rng.Int63n(1 << 20))
	for _, ls := range sets {
		var se indexgen.Series
		ls.Range(func(l labels.Label) { se.Labels = append(se.Labels, [2]string{l.Name, l.Value}) })
		t := rng.Int63n(1<<44) - (1 << 43)
		if rng.Intn(10) == 0 {
			t = -(1 << 61) + rng.Int63n(1<<20) // huge varints
		}
		for range rng.Intn(s.maxChunks + 1) {
			mint := t + rng.Int63n(1<<uint(1+rng.Intn(40)))
			maxt := mint + rng.Int63n(1<<uint(1+rng.Intn(40)))
			if rng.Intn(8) == 0 {
				maxt = mint
			}
			se.Chunks = append(se.Chunks, chunks.Meta{MinTime: mint, MaxTime: maxt, Ref: chunks.ChunkRef(ref)})
			t = maxt + 1
			if rng.Intn(6) > 0 {
				ref += uint64(rng.Int63n(1 << uint(1+rng.Intn(34))))
			}
		}
		spec.Series = append(spec.Series, se)
	}
	return spec
}

func mapKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}

// indexFirstDiff describes where two texts first differ.
func indexFirstDiff(a, b string) string {
	la, lb := strings.Split(a, "\n"), strings.Split(b, "\n")
	for i := 0; i < len(la) && i < len(lb); i++ {
		if la[i] != lb[i] {
			return fmt.Sprintf("line %d:\n  prometheus: %.300s\n  ferrite:    %.300s", i+1, la[i], lb[i])
		}
	}
	return fmt.Sprintf("line counts differ: prometheus %d, ferrite %d", len(la), len(lb))
}

func TestIndexSpecsAgreeWithPrometheus(t *testing.T) {
	ferriteBin(t) // fail early, once, if the binary is missing
	for _, shape := range indexShapes {
		t.Run(shape.name, func(t *testing.T) {
			dir := t.TempDir()
			spec := randomIndexSpec(shape)
			specPath := filepath.Join(dir, "spec.txt")
			if err := os.WriteFile(specPath, []byte(spec.Text()), 0o644); err != nil {
				t.Fatal(err)
			}
			// The text format round-trips on the Go side.
			if back, err := indexgen.ParseSpec(spec.Text()); err != nil || back.Text() != spec.Text() {
				t.Fatalf("spec text does not round-trip: %v", err)
			}

			promPath := filepath.Join(dir, "prom.index")
			if err := spec.Write(promPath); err != nil {
				t.Fatalf("prometheus writer: %v", err)
			}
			promDump, err := indexgen.Dump(promPath)
			if err != nil {
				t.Fatalf("prometheus reader: %v", err)
			}

			// (a) Ferrite reads Prometheus' index exactly as Prometheus does.
			got := runFerrite(t, "debug", "index", "dump", promPath)
			if got != promDump {
				t.Fatalf("ferrite's dump of the Prometheus index differs at %s", indexFirstDiff(promDump, got))
			}

			// (b) Ferrite writes the very same bytes, and Prometheus reads them back.
			ferritePath := filepath.Join(dir, "ferrite.index")
			runFerrite(t, "debug", "index", "write", specPath, ferritePath)
			pb, err := os.ReadFile(promPath)
			if err != nil {
				t.Fatal(err)
			}
			fb, err := os.ReadFile(ferritePath)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(pb, fb) {
				i := 0
				for i < len(pb) && i < len(fb) && pb[i] == fb[i] {
					i++
				}
				t.Fatalf("ferrite's index differs from Prometheus' at byte %d (sizes %d vs %d)", i, len(fb), len(pb))
			}
			back, err := indexgen.Dump(ferritePath)
			if err != nil {
				t.Fatalf("prometheus cannot read ferrite's index: %v", err)
			}
			if back != promDump {
				t.Fatalf("prometheus' dump of ferrite's index differs at %s", indexFirstDiff(promDump, back))
			}
			if _, err := os.Stat(ferritePath + "_tmp_po"); !os.IsNotExist(err) {
				t.Errorf("ferrite left its temporary file behind: %v", err)
			}
			t.Logf("%d series, %d symbols, %d bytes", len(spec.Series), len(spec.SymbolTable()), len(pb))
		})
	}
}

// TestIndexBadSpecsRejectedByBoth: input Prometheus' writer refuses, Ferrite
// refuses too (no partial index is accepted as a success).
func TestIndexBadSpecsRejectedByBoth(t *testing.T) {
	bin := ferriteBin(t)
	cases := map[string]string{
		"series-out-of-order":  "series a=2\nseries a=1\n",
		"duplicate-series":     "series a=1\nseries a=1\n",
		"chunk-ref-decreasing": "series a=1\nchunk 0 10 100\nseries a=2\nchunk 20 30 50\n",
		"chunk-overlap":        "series a=1\nchunk 0 10 1\nchunk 10 20 2\n",
		"chunk-maxt-before":    "series a=1\nchunk 10 5 1\n",
		"empty-label-set":      "series\n",
	}
	for name, text := range cases {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			spec, err := indexgen.ParseSpec(text)
			if err != nil {
				t.Fatal(err)
			}
			if err := spec.Write(filepath.Join(dir, "prom.index")); err == nil {
				t.Fatalf("prometheus accepted %q", text)
			}
			specPath := filepath.Join(dir, "spec.txt")
			if err := os.WriteFile(specPath, []byte(text), 0o644); err != nil {
				t.Fatal(err)
			}
			r := run(bin, nil, "debug", "index", "write", specPath, filepath.Join(dir, "ferrite.index"))
			if strings.Contains(r.stderr, "panicked at") {
				t.Fatalf("ferrite panicked: %s", tail(r.stderr, 20))
			}
			if r.err == nil {
				t.Fatalf("ferrite accepted %q", text)
			}
		})
	}
}
