package interop_test

// topk and bottomk among tied values: Prometheus' own engine (v3.16.0, as a
// library) evaluates the queries over data full of equal values, NaNs and
// histograms; its answers are written as a promqltest file and `ferrite
// promql-test` must reproduce them exactly: the same series at every step,
// and for instant queries the same order.
//
// Which of several equal values topk keeps depends on the order of its input.
// Prometheus reads a selector's series in the order its storage gives them:
// a head-only TSDB gives them in the order the series were created, a TSDB
// with blocks sorted by labels. Ferrite's storage gives them sorted by labels,
// so the test creates Prometheus' series in label order. Range queries are
// only compared where Prometheus' input order is deterministic (selectors and
// range functions over them: an operator's range result comes out of a Go
// map, in random order); instant queries over operators keep their order.

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/histogram"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/value"
	"github.com/prometheus/prometheus/promql"
	"github.com/prometheus/prometheus/tsdb"
)

// tiedSteps is the number of one-minute steps the data covers.
const tiedSteps = 30

type tiedKind int

const (
	tiedAbsent tiedKind = iota // no sample: the previous one is still seen
	tiedFloat
	tiedStale
	tiedHistogram
)

type tiedPoint struct {
	kind tiedKind
	f    float64
}

type tiedSeries struct {
	labels labels.Labels
	points [tiedSteps]tiedPoint
}

// tiedValues are the floats samples take: few, so that most are tied.
var tiedValues = []float64{0, 1, 1, 1, 2, 2, 3, -1, math.NaN(), math.NaN(), math.Inf(1), math.Inf(-1)}

// kSteps are the values the per-step k (series `kparam`) takes.
var kSteps = []float64{0, 0.5, 1, 1, 2, 3, 4, 5, 7, 9, 13, 20, 40, 2.7}

// tiedData builds the series, sorted by labels: groups g0..g5 of 1 to 40
// series each, some with a `j` label (longer label sets sort after shorter
// ones with the same prefix), some holding histograms at some steps, and the
// per-step k.
func tiedData(rng *rand.Rand) []tiedSeries {
	var out []tiedSeries
	for g := range 6 {
		n := 1 + rng.IntN(40)
		if g == 0 {
			n = 40
		}
		for i := range n {
			b := labels.NewBuilder(labels.EmptyLabels())
			b.Set(labels.MetricName, "tied")
			b.Set("g", fmt.Sprintf("g%d", g))
			b.Set("i", strconv.Itoa(i))
			if rng.IntN(3) == 0 {
				b.Set("j", []string{"x", "y"}[rng.IntN(2)])
			}
			hist := rng.IntN(8) == 0
			s := tiedSeries{labels: b.Labels()}
			for step := range tiedSteps {
				s.points[step] = tiedPointAt(rng, hist, step)
			}
			out = append(out, s)
		}
	}
	k := tiedSeries{labels: labels.FromStrings(labels.MetricName, "kparam")}
	for step := range tiedSteps {
		k.points[step] = tiedPoint{kind: tiedFloat, f: kSteps[rng.IntN(len(kSteps))]}
	}
	out = append(out, k)
	slices.SortFunc(out, func(a, b tiedSeries) int { return labels.Compare(a.labels, b.labels) })
	return out
}

func tiedPointAt(rng *rand.Rand, hist bool, step int) tiedPoint {
	r := rng.IntN(100)
	switch {
	case hist && r < 50:
		return tiedPoint{kind: tiedHistogram}
	case step > 0 && r < 60:
		return tiedPoint{kind: tiedStale}
	case step > 0 && r < 68:
		return tiedPoint{kind: tiedAbsent}
	}
	return tiedPoint{kind: tiedFloat, f: tiedValues[rng.IntN(len(tiedValues))]}
}

// tiedHistogramSample is the one native histogram the data holds.
func tiedHistogramSample() *histogram.Histogram {
	return &histogram.Histogram{
		Schema:          0,
		Count:           4,
		Sum:             5,
		PositiveSpans:   []histogram.Span{{Offset: 0, Length: 3}},
		PositiveBuckets: []int64{1, 1, -1}, // 1 2 1
	}
}

const tiedHistogramText = "{{schema:0 sum:5 count:4 buckets:[1 2 1]}}"

// appendTied writes the series into Prometheus' TSDB, one series after the
// other, so that the head creates them in label order.
func appendTied(t *testing.T, db *tsdb.DB, data []tiedSeries) {
	t.Helper()
	app := db.Appender(context.Background())
	for _, s := range data {
		for step, p := range s.points {
			ts := int64(step) * time.Minute.Milliseconds()
			var err error
			switch p.kind {
			case tiedAbsent:
				continue
			case tiedFloat:
				_, err = app.Append(0, s.labels, ts, p.f)
			case tiedStale:
				_, err = app.Append(0, s.labels, ts, math.Float64frombits(value.StaleNaN))
			case tiedHistogram:
				_, err = app.AppendHistogram(0, s.labels, ts, tiedHistogramSample(), nil)
			}
			if err != nil {
				t.Fatalf("append %s at %d: %v", s.labels, ts, err)
			}
		}
	}
	if err := app.Commit(); err != nil {
		t.Fatal(err)
	}
}

// writeTiedLoad writes the data as a promqltest `load` block.
func writeTiedLoad(b *strings.Builder, data []tiedSeries) {
	b.WriteString("load 1m\n")
	for _, s := range data {
		fmt.Fprintf(b, "  %s", seriesText(s.labels))
		for _, p := range s.points {
			switch p.kind {
			case tiedAbsent:
				b.WriteString(" _")
			case tiedFloat:
				b.WriteString(" " + floatText(p.f))
			case tiedStale:
				b.WriteString(" stale")
			case tiedHistogram:
				b.WriteString(" " + tiedHistogramText)
			}
		}
		b.WriteString("\n")
	}
	b.WriteString("\n")
}

func seriesText(ls labels.Labels) string {
	name := ls.Get(labels.MetricName)
	rest := labels.NewBuilder(ls).Del(labels.MetricName).Labels()
	if rest.IsEmpty() {
		return name + "{}"
	}
	return name + rest.String()
}

func floatText(f float64) string {
	switch {
	case math.IsNaN(f):
		return "NaN"
	case math.IsInf(f, 1):
		return "Inf"
	case math.IsInf(f, -1):
		return "-Inf"
	}
	return strconv.FormatFloat(f, 'g', -1, 64)
}

// kPerStep is a k that changes from step to step (0 and fractions
// included). `or vector(2)` gives it a value before the data starts, where
// promqltest also evaluates instant cases (from a minute before to a minute
// after), so that the k is never NaN there.
const kPerStep = "scalar(kparam or vector(2))"

// topkQueries are the expressions compared at every instant and over whole
// ranges.
func topkQueries() []string {
	var qs []string
	for _, op := range []string{"topk", "bottomk"} {
		for _, k := range []string{"1", "2", "3", "4", "5", "8", "13", "20", "60", kPerStep} {
			for _, grouping := range []string{"", " by (g)", " without (i)", " by (j)", " without (g, i)"} {
				qs = append(qs, fmt.Sprintf("%s%s (%s, tied)", op, grouping, k))
			}
			qs = append(qs, fmt.Sprintf("%s by (g) (%s, last_over_time(tied[3m]))", op, k))
		}
	}
	return qs
}

// instantOnlyQueries keep a deterministic order in Prometheus only at one
// instant: their input comes from operators or functions evaluated over a
// range through a map.
func instantOnlyQueries() []string {
	var qs []string
	for _, op := range []string{"topk", "bottomk"} {
		for _, k := range []string{"2", "5", "13"} {
			qs = append(qs,
				fmt.Sprintf("%s(%s, tied * 1)", op, k),
				fmt.Sprintf("%s by (g) (%s, -tied)", op, k),
				fmt.Sprintf("%s without (i) (%s, abs(tied))", op, k),
				fmt.Sprintf("%s(%s, %s(9, tied))", op, k, op),
				fmt.Sprintf("%s(%s, sum by (g, j) (tied))", op, k),
			)
		}
	}
	qs = append(qs, "topk(-1e19, tied)", "bottomk(0.5, tied)", "topk(1e19, tied)")
	return qs
}

type tiedRange struct {
	from, to, step time.Duration
}

// promEval evaluates one query with Prometheus' engine and writes it as a
// promqltest case: the expected series (in order for an instant query), the
// error, and whether warnings and info annotations came with it.
func promEval(t *testing.T, engine *promql.Engine, db *tsdb.DB, b *strings.Builder, q string, at *time.Duration, r *tiedRange) {
	t.Helper()
	ctx := context.Background()
	var (
		qry  promql.Query
		err  error
		head string
	)
	if at != nil {
		qry, err = engine.NewInstantQuery(ctx, db, nil, q, time.UnixMilli(at.Milliseconds()))
		head = fmt.Sprintf("instant at %s %s", durText(*at), q)
	} else {
		qry, err = engine.NewRangeQuery(ctx, db, nil, q, time.UnixMilli(r.from.Milliseconds()),
			time.UnixMilli(r.to.Milliseconds()), r.step)
		head = fmt.Sprintf("range from %s to %s step %s %s", durText(r.from), durText(r.to), durText(r.step), q)
	}
	if err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	defer qry.Close()
	res := qry.Exec(ctx)
	if res.Err != nil {
		fmt.Fprintf(b, "eval_fail %s\n\n", head)
		return
	}
	fmt.Fprintf(b, "eval %s\n", head)
	warnings, infos := res.Warnings.AsStrings(q, 0, 0)
	if len(warnings) > 0 {
		b.WriteString("  expect warn\n")
	} else {
		b.WriteString("  expect no_warn\n")
	}
	if len(infos) > 0 {
		b.WriteString("  expect info\n")
	} else {
		b.WriteString("  expect no_info\n")
	}
	switch v := res.Value.(type) {
	case promql.Vector:
		if len(v) > 1 {
			b.WriteString("  expect ordered\n")
		}
		for _, s := range v {
			if s.H != nil {
				t.Fatalf("%s: a histogram in topk's result", q)
			}
			fmt.Fprintf(b, "  %s %s\n", seriesText(s.Metric), floatText(s.F))
		}
	case promql.Matrix:
		steps := int((r.to-r.from)/r.step) + 1
		for _, s := range v {
			if len(s.Histograms) > 0 {
				t.Fatalf("%s: a histogram in topk's result", q)
			}
			vals := make([]string, steps)
			for i := range vals {
				vals[i] = "_"
			}
			for _, p := range s.Floats {
				vals[(time.Duration(p.T)*time.Millisecond-r.from)/r.step] = floatText(p.F)
			}
			fmt.Fprintf(b, "  %s %s\n", seriesText(s.Metric), strings.Join(vals, " "))
		}
	default:
		t.Fatalf("%s: unexpected result type %T", q, res.Value)
	}
	b.WriteString("\n")
}

func durText(d time.Duration) string {
	if d == 0 {
		return "0"
	}
	if d%time.Minute == 0 {
		return fmt.Sprintf("%dm", d/time.Minute)
	}
	return fmt.Sprintf("%ds", d/time.Second)
}

// tiedTestFile builds the data, evaluates every query with Prometheus and
// returns the promqltest file holding its answers, and the number of cases.
func tiedTestFile(t *testing.T, seed uint64) (string, int) {
	t.Helper()
	data := tiedData(rand.New(rand.NewPCG(seed, 0x70e4)))
	opts := tsdb.DefaultOptions()
	db, err := tsdb.Open(t.TempDir(), nil, nil, opts, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	appendTied(t, db, data)
	engine := promql.NewEngine(promql.EngineOpts{
		MaxSamples:               50_000_000,
		Timeout:                  time.Minute,
		LookbackDelta:            5 * time.Minute,
		NoStepSubqueryIntervalFn: func(int64) int64 { return time.Minute.Milliseconds() },
		EnableAtModifier:         true,
		EnableNegativeOffset:     true,
	})

	var b strings.Builder
	fmt.Fprintf(&b, "# Generated by interop/topk_test.go (seed %d) from Prometheus v3.16.0's answers.\n\n", seed)
	writeTiedLoad(&b, data)
	cases := 0
	ranges := []tiedRange{
		{0, (tiedSteps - 1) * time.Minute, time.Minute},
		{2 * time.Minute, (tiedSteps - 1) * time.Minute, 3 * time.Minute},
	}
	instants := func(q string) {
		for step := range tiedSteps {
			at := time.Duration(step) * time.Minute
			promEval(t, engine, db, &b, q, &at, nil)
			cases++
		}
	}
	for _, q := range topkQueries() {
		instants(q)
		for _, r := range ranges {
			promEval(t, engine, db, &b, q, nil, &r)
			cases++
		}
	}
	for _, q := range instantOnlyQueries() {
		instants(q)
	}
	return b.String(), cases
}

var promqlTestSummary = regexp.MustCompile(`(?m)^(\d+) passed, (\d+) failed$`)

// TestTopkTiesMatchPrometheus: for every query, at every instant and over
// whole ranges, Ferrite selects the same series as Prometheus and, at an
// instant, returns them in the same order. TOPK_TEST_KEEP=DIR keeps the
// generated files.
func TestTopkTiesMatchPrometheus(t *testing.T) {
	bin := ferriteBin(t)
	for _, seed := range []uint64{1, 2, 3} {
		t.Run(fmt.Sprintf("seed%d", seed), func(t *testing.T) {
			text, cases := tiedTestFile(t, seed)
			dir := t.TempDir()
			if keep := os.Getenv("TOPK_TEST_KEEP"); keep != "" {
				dir = keep
			}
			path := filepath.Join(dir, fmt.Sprintf("topk_ties_seed%d.test", seed))
			if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
				t.Fatal(err)
			}
			r := run(bin, nil, "promql-test", path)
			m := promqlTestSummary.FindStringSubmatch(r.stdout)
			if m == nil {
				t.Fatalf("ferrite promql-test %s: no summary (%v)\nstdout:\n%s\nstderr:\n%s",
					path, r.err, tail(r.stdout, 20), tail(r.stderr, 20))
			}
			passed, _ := strconv.Atoi(m[1])
			failed, _ := strconv.Atoi(m[2])
			if failed > 0 || passed != cases {
				t.Fatalf("ferrite disagrees with Prometheus on %d of %d cases (%d passed; file %s):\n%s",
					failed, cases, passed, path, firstLines(r.stdout, 15))
			}
			t.Logf("%d cases agree", cases)
		})
	}
}

func firstLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = append(lines[:n], fmt.Sprintf("... (%d more lines)", len(lines)-n))
	}
	return strings.Join(lines, "\n")
}
