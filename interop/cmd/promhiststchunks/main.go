// Command promhiststchunks writes golden vectors of Prometheus' native
// histogram chunk encodings with start timestamps: histogramST (encoding 5)
// and floathistogramST (encoding 6), made by the real Prometheus code
// (module v0.316.0, Prometheus v3.16.0).
//
// Regenerate from interop/ with:
//
//	go run ./cmd/promhiststchunks int ../crates/chunkenc/testdata/prometheus_histogram_vectors.txt \
//	    > ../crates/chunkenc/testdata/prometheus_histogram_st_vectors.txt
//	go run ./cmd/promhiststchunks float ../crates/chunkenc/testdata/prometheus_histogram_vectors.txt \
//	    > ../crates/chunkenc/testdata/prometheus_float_histogram_st_vectors.txt
//
// (one file per encoding keeps each under 1 MB).
// The histogram sequences are not generated again: they are read from the
// plain histogram vectors (written by ./cmd/promhistchunks; only their
// vector, cut and sample lines), which cover the edge cases (schemas, zero
// thresholds, custom buckets, stale markers, counter resets, gauges,
// bucket growth and recoding, size cuts). A selection of them is crossed
// with start timestamp patterns (stPatterns below), and a few long
// sequences of one small histogram test the ST header's 127-sample limit.
// Everything is deterministic (fixed seeds, input order).
// crates/chunkenc/tests/histogram_st_golden.rs replays every sequence with
// Ferrite's encoder and asserts byte-identical chunks, the same outcomes
// and append-only verdicts, and that decoding Prometheus' bytes gives what
// Prometheus' iterators give, start timestamps included.
//
// Each sequence is appended as Prometheus' head does at chunk level:
// AppendHistogram(prev, st, t, h, false) (or AppendFloatHistogram) on the
// current chunk's appender, prev being the previous chunk's appender for
// the first append after a cut; cuts as in the input, and before a sample
// when the chunk is at least 2*TargetBytesPerHistogramChunk bytes and holds
// at least MinSamplesPerHistogramChunk samples.
//
// Format, one record per line (records as in promhistchunks):
//
//	vector <name> int|float <st pattern>
//	cut explicit|size
//	sample <st> <t> <H|F record>
//	outcome appended|recoded|new
//	appendonly ok|<error>        AppendHistogram(nil, st, t, h, true) on a
//	                             reopened copy of the chunk before the append
//	                             (omitted for the first sample of a chunk)
//	chunk <hex>                  every chunk, in order, after the last sample
//	decoded <st> <t> <H|F record>
//	end
package main

import (
	"bufio"
	"encoding/hex"
	"fmt"
	"math/rand"
	"os"
	"strconv"
	"strings"

	"github.com/prometheus/prometheus/model/histogram"
	"github.com/prometheus/prometheus/tsdb/chunkenc"

	"ferrite.dev/interop/internal/histrecord"
)

type step struct {
	cut bool
	t   int64
	st  int64
	h   *histogram.Histogram
	fh  *histogram.FloatHistogram
}

type sequence struct {
	name    string
	float   bool
	pattern string
	steps   []step
}

var out *bufio.Writer

func main() {
	if len(os.Args) != 3 || (os.Args[1] != "int" && os.Args[1] != "float") {
		fmt.Fprintln(os.Stderr, "usage: promhiststchunks int|float <prometheus_histogram_vectors.txt>")
		os.Exit(2)
	}
	float := os.Args[1] == "float"
	seqs := readSequences(os.Args[2])
	out = bufio.NewWriter(os.Stdout)
	defer out.Flush()
	fmt.Fprintf(out, "# Prometheus v3.16.0 (module v0.316.0) %s chunks, written by interop/cmd/promhiststchunks; see its doc for the format.\n", enc(float))
	rng := rand.New(rand.NewSource(20260516))
	n := 0
	for _, s := range seqs {
		if s.float != float {
			continue
		}
		for _, p := range patternsFor(s.name, &n) {
			c := s
			c.pattern = p
			if len(c.steps) > maxSteps {
				c.steps = c.steps[:maxSteps]
			}
			c.steps = withStartTimestamps(rng, p, s.steps)
			run(c)
		}
	}
	for _, long := range []struct {
		float    bool
		patterns []string
	}{{false, []string{"none", "late_change", "resets"}}, {true, []string{"none", "late_change"}}} {
		if long.float != float {
			continue
		}
		for _, p := range long.patterns {
			s := longSequence(long.float)
			s.pattern = p
			s.steps = withStartTimestamps(rng, p, s.steps)
			run(s)
		}
	}
}

// maxSteps bounds the events taken from each plain vector, to keep the
// output small: the edge cases of the vectors come early.
const maxSteps = 30

// stPatterns are the start timestamp shapes sequences are crossed with.
var stPatterns = []string{"none", "constant", "prev_t", "resets", "jitter", "arbitrary", "appears", "sparse", "equals_t", "late_change"}

// patternsFor picks the patterns a plain vector is run with: every pattern
// for the vectors whose chunk-level decisions matter most, one (in turn)
// for most others, none for near-duplicates.
func patternsFor(name string, n *int) []string {
	for _, skip := range []string{"_schema_-3", "_schema_-2", "_schema_-1", "_schema_1", "_schema_2", "_schema_4", "_schema_5", "_schema_6", "_schema_7", "_random_3", "_random_5", "_random_6", "_random_7", "_size_cut"} {
		if strings.HasSuffix(name, skip) {
			return nil
		}
	}
	for _, all := range []string{"_resets", "_growth", "_gauge_counter_switch", "_stale", "_cuts"} {
		if strings.HasSuffix(name, all) {
			if strings.HasPrefix(name, "float") {
				return []string{"resets"}
			}
			return []string{"constant", "jitter", "arbitrary"}
		}
	}
	*n++
	return []string{stPatterns[*n%len(stPatterns)]}
}

// withStartTimestamps gives the samples of steps start timestamps of one
// pattern (cuts keep their place).
func withStartTimestamps(rng *rand.Rand, pattern string, steps []step) []step {
	res := make([]step, len(steps))
	copy(res, steps)
	var ts []int64
	for _, s := range steps {
		if !s.cut {
			ts = append(ts, s.t)
		}
	}
	if len(ts) == 0 {
		return res
	}
	origin := ts[0] - 1 - rng.Int63n(1<<22)
	change := rng.Intn(len(ts))
	var last int64
	i := 0
	for k := range res {
		if res[k].cut {
			continue
		}
		t := ts[i]
		var st int64
		switch pattern {
		case "none":
		case "constant":
			st = origin
		case "prev_t": // delta temporality
			st = t - 15000
			if i > 0 {
				st = ts[i-1]
			}
		case "resets": // a new origin now and then, just before the sample
			st = last
			if i == 0 {
				st = origin
			} else if rng.Intn(12) == 0 {
				st = t - 1 - rng.Int63n(500)
			}
		case "jitter":
			st = t - rng.Int63n(1<<uint(1+rng.Intn(36)))
		case "arbitrary":
			st = int64(rng.Uint64())
		case "appears": // 0, then constant from a random sample on
			if i >= change {
				st = ts[change] - 250
			}
		case "sparse":
			if rng.Intn(16) == 0 {
				st = t - rng.Int63n(1<<20)
			}
		case "equals_t":
			st = t
		case "late_change": // constant, changing once after sample 127
			st = origin
			if i >= 130 {
				st = origin + 12345
			}
		}
		res[k].st = st
		last = st
		i++
	}
	return res
}

// longSequence is 200 samples of a small histogram: a chunk takes more
// than 127 of them before its size cut.
func longSequence(float bool) sequence {
	s := sequence{name: "long_int", float: float}
	if float {
		s.name = "long_float"
	}
	for i := 0; i < 200; i++ {
		h := &histogram.Histogram{
			Schema:          1,
			ZeroThreshold:   0.001,
			Count:           uint64(3 * i),
			ZeroCount:       uint64(i),
			Sum:             float64(i) * 1.5,
			PositiveSpans:   []histogram.Span{{Offset: 0, Length: 2}},
			PositiveBuckets: []int64{int64(i), 0},
		}
		st := step{t: 1700000000000 + int64(i)*15000}
		if float {
			st.fh = h.ToFloat(nil)
		} else {
			st.h = h
		}
		s.steps = append(s.steps, st)
	}
	return s
}

// ---------------------------------------------------------------------------
// Running a sequence through Prometheus' appenders.

func enc(float bool) chunkenc.Encoding {
	if float {
		return chunkenc.EncFloatHistogramST
	}
	return chunkenc.EncHistogramST
}

func run(s sequence) {
	kind := "int"
	enc := chunkenc.EncHistogramST
	if s.float {
		kind = "float"
		enc = chunkenc.EncFloatHistogramST
	}
	fmt.Fprintf(out, "vector %s %s %s\n", s.name, kind, s.pattern)
	newChunk := func() (chunkenc.Chunk, chunkenc.Appender) {
		c, err := chunkenc.NewEmptyChunk(enc)
		must(err)
		a, err := c.Appender()
		must(err)
		return c, a
	}
	cur, app := newChunk()
	chunks := []chunkenc.Chunk{cur}
	var prev chunkenc.Appender
	justCut := false
	cut := func(why string) {
		fmt.Fprintf(out, "cut %s\n", why)
		prev = app
		cur, app = newChunk()
		chunks = append(chunks, cur)
		justCut = true
	}
	appendTo := func(a, p chunkenc.Appender, e step, appendOnly bool) (chunkenc.Chunk, bool, chunkenc.Appender, error) {
		if s.float {
			return a.AppendFloatHistogram(p, e.st, e.t, e.fh.Copy(), appendOnly)
		}
		return a.AppendHistogram(p, e.st, e.t, e.h.Copy(), appendOnly)
	}
	for _, e := range s.steps {
		if e.cut {
			cut("explicit")
			continue
		}
		if len(cur.Bytes()) >= 2*chunkenc.TargetBytesPerHistogramChunk && cur.NumSamples() >= chunkenc.MinSamplesPerHistogramChunk {
			cut("size")
		}
		if s.float {
			fmt.Fprintf(out, "sample %d %d %s\n", e.st, e.t, histrecord.Float(e.fh))
		} else {
			fmt.Fprintf(out, "sample %d %d %s\n", e.st, e.t, histrecord.Int(e.h))
		}
		if cur.NumSamples() > 0 {
			c, err := chunkenc.FromData(enc, append([]byte(nil), cur.Bytes()...))
			must(err)
			a, err := c.Appender()
			must(err)
			if _, _, _, err := appendTo(a, nil, e, true); err != nil {
				fmt.Fprintf(out, "appendonly %s\n", err)
			} else {
				fmt.Fprintln(out, "appendonly ok")
			}
		}
		p := chunkenc.Appender(nil)
		if justCut {
			p = prev
		}
		justCut = false
		nc, recoded, a, err := appendTo(app, p, e, false)
		must(err)
		app = a
		switch {
		case nc == nil:
			fmt.Fprintln(out, "outcome appended")
		case recoded:
			fmt.Fprintln(out, "outcome recoded")
			cur = nc
			chunks[len(chunks)-1] = nc
		default:
			fmt.Fprintln(out, "outcome new")
			cur = nc
			chunks = append(chunks, nc)
		}
	}
	for _, c := range chunks {
		fmt.Fprintf(out, "chunk %s\n", hex.EncodeToString(c.Bytes()))
		it := c.Iterator(nil)
		for it.Next() != chunkenc.ValNone {
			if s.float {
				t, fh := it.AtFloatHistogram(nil)
				fmt.Fprintf(out, "decoded %d %d %s\n", it.AtST(), t, histrecord.Float(fh))
			} else {
				t, h := it.AtHistogram(nil)
				fmt.Fprintf(out, "decoded %d %d %s\n", it.AtST(), t, histrecord.Int(h))
			}
		}
		must(it.Err())
	}
	fmt.Fprintln(out, "end")
	fmt.Fprintln(out)
}

func must(err error) {
	if err != nil {
		panic(err)
	}
}

// ---------------------------------------------------------------------------
// Reading the plain vectors.

func readSequences(path string) []sequence {
	f, err := os.Open(path)
	must(err)
	defer f.Close()
	var seqs []sequence
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) == 0 {
			continue
		}
		switch fields[0] {
		case "vector":
			seqs = append(seqs, sequence{name: fields[1], float: fields[2] == "float"})
		case "cut":
			if fields[1] == "explicit" {
				last := &seqs[len(seqs)-1]
				last.steps = append(last.steps, step{cut: true})
			}
		case "sample":
			last := &seqs[len(seqs)-1]
			e := step{t: atoi(fields[1])}
			if last.float {
				fh, err := histrecord.ParseFloat(fields[2:])
				must(err)
				e.fh = fh
			} else {
				h, err := histrecord.ParseInt(fields[2:])
				must(err)
				e.h = h
			}
			last.steps = append(last.steps, e)
		}
	}
	must(sc.Err())
	return seqs
}

func atoi(s string) int64 {
	v, err := strconv.ParseInt(s, 10, 64)
	must(err)
	return v
}

// ---------------------------------------------------------------------------
// Records, as promhistchunks writes them.
