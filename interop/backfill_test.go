package interop_test

import (
	"context"
	"fmt"
	"math"
	"math/rand"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/tsdb"
	"github.com/prometheus/prometheus/tsdb/chunkenc"

	"ferrite.dev/interop/internal/promtsdb"
)

// TestBackfillOpensInPrometheus: `ferrite tsdb create-blocks-from
// openmetrics` turns an OpenMetrics file (escaped label values, fractional
// second timestamps, several families, 9 hours) into blocks that Prometheus
// reads back sample for sample; a file with a bad line writes nothing.
func TestBackfillOpensInPrometheus(t *testing.T) {
	ferriteBin(t)
	base := t.TempDir()
	rng := rand.New(rand.NewSource(7))
	type key = string
	want := map[key][][2]float64{}
	var b strings.Builder
	const start = 1700000000.0
	b.WriteString("# HELP req_total Requests.\n# TYPE req_total counter\n")
	for j := 0; j < 1100; j++ {
		ts := start + float64(j)*30 + float64(rng.Intn(1000))/1000
		for i := 0; i < 12; i++ {
			v := float64(i*1000+j) + float64(rng.Intn(8))/8
			path := fmt.Sprintf(`/p\"%d\\x`, i%4) // escaped quote and backslash
			fmt.Fprintf(&b, "req_total{code=\"%d\",path=\"%s\"} %v %.3f\n", 200+i%3, path, v, ts)
			ls := labels.FromStrings("__name__", "req_total", "code", fmt.Sprint(200+i%3), "path", fmt.Sprintf(`/p"%d\x`, i%4))
			want[ls.String()] = append(want[ls.String()], [2]float64{float64(int64(math.Round(ts * 1000))), v})
		}
	}
	b.WriteString("# EOF\n")
	in := filepath.Join(base, "in.om")
	if err := os.WriteFile(in, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(base, "data")
	runFerrite(t, "tsdb", "create-blocks-from", "openmetrics", "--quiet", in, out)
	if n := len(blockDirs(out)); n < 5 {
		t.Fatalf("want a block per 2 h range (5+), have %d", n)
	}

	// Backfilled blocks are meant to be moved into a data dir; Prometheus'
	// read-only open wants a WAL directory there.
	if err := os.MkdirAll(filepath.Join(out, "wal"), 0o755); err != nil {
		t.Fatal(err)
	}
	got := promSamples(t, out)
	if len(got) != len(want) {
		t.Fatalf("prometheus reads %d series, want %d", len(got), len(want))
	}
	for k, w := range want {
		sort.Slice(w, func(i, j int) bool { return w[i][0] < w[j][0] })
		g := got[k]
		if len(g) != len(w) {
			t.Errorf("%s: %d samples, want %d", k, len(g), len(w))
			continue
		}
		for i := range w {
			if g[i] != w[i] {
				t.Errorf("%s: sample %d is %v, want %v", k, i, g[i], w[i])
				break
			}
		}
	}

	// A bad line: an error naming it, and no block written.
	bad := filepath.Join(base, "bad.om")
	os.WriteFile(bad, []byte("a 1 1700000000\na{b=\"c} 2 1700000001\n# EOF\n"), 0o644)
	badOut := filepath.Join(base, "bad-out")
	r := run(ferriteBin(t), nil, "tsdb", "create-blocks-from", "openmetrics", "--quiet", bad, badOut)
	if r.err == nil || !strings.Contains(r.stderr, "line 2") {
		t.Errorf("bad file: want an error naming line 2, got %v: %s", r.err, r.stderr)
	}
	if n := len(blockDirs(badOut)); n != 0 {
		t.Errorf("bad file: %d blocks written", n)
	}
}

// promSamples reads every float sample of dir with Prometheus, by series.
func promSamples(t testing.TB, dir string) map[string][][2]float64 {
	t.Helper()
	db, err := tsdb.OpenDBReadOnly(dir, t.TempDir(), promtsdb.Logger)
	if err != nil {
		t.Fatalf("prometheus cannot open %s: %v", dir, err)
	}
	defer db.Close()
	q, err := db.Querier(math.MinInt64, math.MaxInt64)
	if err != nil {
		t.Fatal(err)
	}
	defer q.Close()
	out := map[string][][2]float64{}
	ss := q.Select(context.Background(), false, nil, labels.MustNewMatcher(labels.MatchRegexp, "__name__", ".+"))
	var it chunkenc.Iterator
	for ss.Next() {
		s := ss.At()
		it = s.Iterator(it)
		for vt := it.Next(); vt != chunkenc.ValNone; vt = it.Next() {
			ts, v := it.At()
			out[s.Labels().String()] = append(out[s.Labels().String()], [2]float64{float64(ts), v})
		}
	}
	if err := ss.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}
