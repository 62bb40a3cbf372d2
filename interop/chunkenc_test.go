package interop_test

import (
	"bufio"
	"fmt"
	"math"
	"math/rand"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/prometheus/prometheus/model/histogram"
	"github.com/prometheus/prometheus/tsdb/chunkenc"

	"ferrite.dev/interop/internal/histrecord"
)

// TestChunkEncodingsByteIdentical checks XOR2 (with start timestamps) and
// the four histogram chunk encodings end to end through the ferrite
// binary: random sequences are encoded by Prometheus' chunkenc and by
// `ferrite debug chunk-encode`, and every chunk must be byte-identical,
// including the chunks that appends cut and the recoded ones.
func TestChunkEncodingsByteIdentical(t *testing.T) {
	ferriteBin(t)
	for _, enc := range []chunkenc.Encoding{
		chunkenc.EncXOR2, chunkenc.EncHistogram, chunkenc.EncFloatHistogram,
		chunkenc.EncHistogramST, chunkenc.EncFloatHistogramST,
	} {
		t.Run(enc.String(), func(t *testing.T) { checkEncoding(t, enc) })
	}
}

// ferriteEncodingName is chunk-encode's --encoding for enc.
func ferriteEncodingName(enc chunkenc.Encoding) string {
	switch enc {
	case chunkenc.EncXOR2:
		return "xor2"
	case chunkenc.EncHistogram:
		return "histogram"
	case chunkenc.EncFloatHistogram:
		return "floathistogram"
	case chunkenc.EncHistogramST:
		return "histogram-st"
	default:
		return "floathistogram-st"
	}
}

func checkEncoding(t *testing.T, enc chunkenc.Encoding) {
	seed := int64(20260517 + int(enc))
	rng := rand.New(rand.NewSource(seed))
	var input strings.Builder
	var want []string // every sequence's chunks, one a line, then ""
	samples := 0
	lengths := []int{1, 2, 3, 127, 128, 129, 200}
	for s := 0; s < 150; s++ {
		n := 1 + rng.Intn(60)
		if s < len(lengths) {
			n = lengths[s]
		} else if rng.Intn(8) == 0 {
			n = 100 + rng.Intn(200)
		}
		chunks := encodeSequence(t, rng, enc, n, &input)
		input.WriteString("\n")
		samples += n
		for _, c := range chunks {
			want = append(want, fmt.Sprintf("%x", c.Bytes()))
		}
		want = append(want, "")
	}
	file := filepath.Join(t.TempDir(), "samples.txt")
	if err := os.WriteFile(file, []byte(input.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	out := runFerrite(t, "debug", "chunk-encode", "--encoding", ferriteEncodingName(enc), file)
	var got []string
	sc := bufio.NewScanner(strings.NewReader(out))
	sc.Buffer(make([]byte, 1<<20), 1<<26)
	for sc.Scan() {
		got = append(got, strings.TrimSpace(sc.Text()))
	}
	if len(got) != len(want) {
		t.Fatalf("ferrite printed %d lines, want %d (input %s)", len(got), len(want), file)
	}
	bad := 0
	for i := range want {
		if got[i] != want[i] {
			bad++
			if bad <= 3 {
				t.Errorf("line %d (seed %d) differs at hex digit %d:\n ferrite    %s\n prometheus %s",
					i, seed, firstDiff(got[i], want[i]), got[i], want[i])
			}
		}
	}
	if bad > 0 {
		t.Errorf("%d of %d lines differ (input %s)", bad, len(want), file)
	}
	t.Logf("%d chunk lines, %d samples", len(want), samples)
}

// encodeSequence makes one random sequence of n samples, writes it to
// input in chunk-encode's format and returns Prometheus' chunks for it,
// appended as the head does (no previous chunk; appends may cut or recode).
func encodeSequence(t *testing.T, rng *rand.Rand, enc chunkenc.Encoding, n int, input *strings.Builder) []chunkenc.Chunk {
	c, err := chunkenc.NewEmptyChunk(enc)
	if err != nil {
		t.Fatal(err)
	}
	app, err := c.Appender()
	if err != nil {
		t.Fatal(err)
	}
	chunks := []chunkenc.Chunk{c}
	withST := enc == chunkenc.EncXOR2 || enc == chunkenc.EncHistogramST || enc == chunkenc.EncFloatHistogramST
	if enc == chunkenc.EncXOR2 {
		ts, vs := xorSequence(rng, n)
		sts := randomStartTimestamps(rng, ts)
		for i := range ts {
			app.Append(sts[i], ts[i], vs[i])
			fmt.Fprintf(input, "%d %d %016x\n", sts[i], ts[i], math.Float64bits(vs[i]))
		}
		return chunks
	}
	ts, hs := histogramSequence(rng, n)
	sts := make([]int64, n)
	if withST {
		sts = randomStartTimestamps(rng, ts)
	}
	float := enc == chunkenc.EncFloatHistogram || enc == chunkenc.EncFloatHistogramST
	for i, h := range hs {
		var (
			nc      chunkenc.Chunk
			recoded bool
		)
		if float {
			fh := h.ToFloat(nil)
			fmt.Fprintf(input, "%d %d %s\n", sts[i], ts[i], histrecord.Float(fh))
			nc, recoded, app, err = app.AppendFloatHistogram(nil, sts[i], ts[i], fh, false)
		} else {
			fmt.Fprintf(input, "%d %d %s\n", sts[i], ts[i], histrecord.Int(h))
			nc, recoded, app, err = app.AppendHistogram(nil, sts[i], ts[i], h.Copy(), false)
		}
		if err != nil {
			t.Fatal(err)
		}
		switch {
		case nc == nil:
		case recoded:
			chunks[len(chunks)-1] = nc
		default:
			chunks = append(chunks, nc)
		}
	}
	return chunks
}

// randomStartTimestamps gives samples start timestamps in one of several
// shapes: none, constant, changing now and then, delta temporality,
// arbitrary, or appearing late (after sample 127 for long sequences).
func randomStartTimestamps(rng *rand.Rand, ts []int64) []int64 {
	sts := make([]int64, len(ts))
	if len(ts) == 0 {
		return sts
	}
	shape := rng.Intn(7)
	origin := ts[0] - rng.Int63n(1<<30)
	late := rng.Intn(len(ts))
	if len(ts) > 130 {
		late = 120 + rng.Intn(len(ts)-120)
	}
	for i, t := range ts {
		switch shape {
		case 1:
			sts[i] = origin
		case 2:
			if i > 0 && rng.Intn(10) != 0 {
				sts[i] = sts[i-1]
			} else {
				sts[i] = t - rng.Int63n(1<<uint(1+rng.Intn(40)))
			}
		case 3:
			sts[i] = t - 1
			if i > 0 {
				sts[i] = ts[i-1]
			}
		case 4:
			sts[i] = int64(rng.Uint64())
		case 5:
			if i >= late {
				sts[i] = origin
			}
		case 6:
			if rng.Intn(4) == 0 {
				sts[i] = t
			}
		}
	}
	return sts
}

// histogramSequence makes n integer histograms of one series: a counter
// (or, sometimes, a gauge) with a random schema (custom buckets included)
// and zero threshold whose buckets grow, shrink, appear and vanish, with
// occasional counter resets, schema changes and stale markers.
func histogramSequence(rng *rand.Rand, n int) ([]int64, []*histogram.Histogram) {
	schemas := []int32{-4, -1, 0, 3, 8, histogram.CustomBucketsSchema}
	schema := schemas[rng.Intn(len(schemas))]
	zts := []float64{0, 1e-128, 0.001, 0.25}
	zt := zts[rng.Intn(len(zts))]
	gauge := rng.Intn(5) == 0
	pos, neg := map[int32]uint64{}, map[int32]uint64{}
	var zc uint64
	addBucket := func(m map[int32]uint64) {
		idx := int32(rng.Intn(24)) - 8
		if schema == histogram.CustomBucketsSchema {
			idx = int32(rng.Intn(6))
		}
		m[idx] += uint64(rng.Intn(5))
	}
	for i := rng.Intn(6); i > 0; i-- {
		addBucket(pos)
		if schema != histogram.CustomBucketsSchema && rng.Intn(2) == 0 {
			addBucket(neg)
		}
	}
	custom := []float64{0.1, 0.5, 1, 2.5, 5, 10}
	t := 1700000000000 + rng.Int63n(1<<30)
	sum := 0.0
	var ts []int64
	var hs []*histogram.Histogram
	for i := 0; i < n; i++ {
		t += 15000 + rng.Int63n(41) - 20
		if rng.Intn(40) == 0 {
			t += rng.Int63n(1 << 32)
		}
		switch r := rng.Intn(100); {
		case r < 3: // counter reset
			for _, m := range []map[int32]uint64{pos, neg} {
				for _, k := range bucketIndices(m) {
					m[k] = uint64(rng.Intn(2))
				}
			}
			zc, sum = 0, 0
		case r < 10: // a new bucket
			addBucket(pos)
		case r < 13 && schema != histogram.CustomBucketsSchema:
			addBucket(neg)
		case r < 15: // a bucket vanishes (a reset for counters)
			if keys := bucketIndices(pos); len(keys) > 0 {
				delete(pos, keys[rng.Intn(len(keys))])
			}
		case r < 17 && schema != histogram.CustomBucketsSchema: // schema change
			schema = schemas[rng.Intn(len(schemas)-1)]
		}
		for _, m := range []map[int32]uint64{pos, neg} {
			for _, k := range bucketIndices(m) {
				if gauge {
					m[k] = uint64(rng.Intn(20))
				} else {
					m[k] += uint64(rng.Intn(4))
				}
			}
		}
		if gauge {
			zc = uint64(rng.Intn(10))
			sum = rng.Float64() * 100
		} else {
			zc += uint64(rng.Intn(3))
			sum += rng.Float64() * 10
		}
		h := &histogram.Histogram{Schema: schema, ZeroThreshold: zt, ZeroCount: zc, Sum: sum}
		if gauge {
			h.CounterResetHint = histogram.GaugeType
		}
		if schema == histogram.CustomBucketsSchema {
			h.ZeroThreshold, h.ZeroCount = 0, 0
			h.CustomValues = custom
		}
		h.PositiveSpans, h.PositiveBuckets = spansAndDeltas(pos)
		if schema != histogram.CustomBucketsSchema {
			h.NegativeSpans, h.NegativeBuckets = spansAndDeltas(neg)
		}
		h.Count = h.ZeroCount
		for _, m := range []map[int32]uint64{pos, neg} {
			for _, c := range m {
				h.Count += c
			}
		}
		if rng.Intn(30) == 0 {
			h = &histogram.Histogram{Sum: math.Float64frombits(staleNaNBits)}
		}
		ts = append(ts, t)
		hs = append(hs, h)
	}
	return ts, hs
}

// bucketIndices are the keys of m in order (Go's map order is random, and
// the sequences must follow from the seed alone).
func bucketIndices(m map[int32]uint64) []int32 {
	keys := make([]int32, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return keys[i] < keys[j] })
	return keys
}

// spansAndDeltas lays out buckets by index as spans and delta-encoded counts.
func spansAndDeltas(m map[int32]uint64) ([]histogram.Span, []int64) {
	keys := bucketIndices(m)
	var spans []histogram.Span
	var deltas []int64
	var prevKey int32
	var prevCount int64
	for i, k := range keys {
		if i > 0 && k == prevKey+1 {
			spans[len(spans)-1].Length++
		} else {
			off := k
			if i > 0 {
				off = k - prevKey - 1
			}
			spans = append(spans, histogram.Span{Offset: off, Length: 1})
		}
		deltas = append(deltas, int64(m[k])-prevCount)
		prevKey, prevCount = k, int64(m[k])
	}
	return spans, deltas
}
