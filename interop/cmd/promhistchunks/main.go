// Command promhistchunks writes golden vectors of Prometheus' native
// histogram chunk encodings (integer, encoding 2, and float, encoding 3)
// made by the real Prometheus code (module v0.316.0, Prometheus v3.16.0).
//
// Regenerate from interop/ with:
//
//	go run ./cmd/promhistchunks > ../crates/chunkenc/testdata/prometheus_histogram_vectors.txt
//
// The output is deterministic (fixed seeds). crates/chunkenc/tests/
// histogram_golden.rs replays every sequence with Ferrite's encoder and
// asserts byte-identical chunks, the same append outcomes and append-only
// verdicts, and that decoding Prometheus' bytes gives what Prometheus'
// iterators give.
//
// Each sequence is appended as Prometheus' head does at chunk level:
// AppendHistogram(prev, 0, t, h, false) on the current chunk's appender,
// where prev is the previous chunk's appender only for the first append
// after a cut, and a returned chunk either replaces the current one
// (recoded) or becomes the new current one. A cut happens at `cut` events
// of the sequence and, as in the head, before a sample when the chunk is
// at least 2*TargetBytesPerHistogramChunk bytes and holds at least
// MinSamplesPerHistogramChunk samples.
//
// Format, one record per line:
//
//	vector <name> int|float
//	cut explicit|size            a new chunk was started
//	sample <t> <H|F record>      the histogram appended (as given)
//	outcome appended|recoded|new
//	appendonly ok|<error>        AppendHistogram(nil, 0, t, h, true) on a
//	                             reopened copy of the chunk before the append
//	                             (omitted for the first sample of a chunk)
//	chunk <hex>                  every chunk, in order, after the last sample
//	decoded <t> <H|F record>     what Prometheus' iterator gives for it
//	decodedf <t> <F record>      AtFloatHistogram on an integer chunk (for
//	                             some vectors)
//	end
//
// Records: `H hint schema zt count zerocount sum pspans nspans pbuckets
// nbuckets custom` with zt, sum and every float as 16 hex digits of its
// bits, integer counts and buckets in decimal, spans as offset:length,
// lists comma-separated and `-` when empty. `F` records have the same
// fields with counts and buckets as float bits.
package main

import (
	"bufio"
	"encoding/hex"
	"fmt"
	"math"
	"math/rand"
	"os"
	"sort"
	"strings"

	"github.com/prometheus/prometheus/model/histogram"
	"github.com/prometheus/prometheus/model/value"
	"github.com/prometheus/prometheus/tsdb/chunkenc"

	"ferrite.dev/interop/internal/histrecord"
)

// event is one step of a sequence: a cut or a sample.
type event struct {
	cut bool
	t   int64
	h   *histogram.Histogram
	fh  *histogram.FloatHistogram
}

type vector struct {
	name   string
	float  bool
	events []event
}

var out *bufio.Writer

func main() {
	out = bufio.NewWriter(os.Stdout)
	defer out.Flush()
	fmt.Fprintln(out, "# Prometheus v3.16.0 (module v0.316.0) native histogram chunks, written by interop/cmd/promhistchunks; see its doc for the format.")
	for _, v := range vectors() {
		run(v)
	}
}

// ---------------------------------------------------------------------------
// Running a sequence through Prometheus' appenders.

func run(v vector) {
	kind := "int"
	enc := chunkenc.EncHistogram
	if v.float {
		kind = "float"
		enc = chunkenc.EncFloatHistogram
	}
	fmt.Fprintf(out, "vector %s %s\n", v.name, kind)
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
	for _, e := range v.events {
		if e.cut {
			cut("explicit")
			continue
		}
		if len(cur.Bytes()) >= 2*chunkenc.TargetBytesPerHistogramChunk && cur.NumSamples() >= chunkenc.MinSamplesPerHistogramChunk {
			cut("size")
		}
		if v.float {
			fmt.Fprintf(out, "sample %d %s\n", e.t, histrecord.Float(e.fh))
		} else {
			fmt.Fprintf(out, "sample %d %s\n", e.t, histrecord.Int(e.h))
		}
		if cur.NumSamples() > 0 {
			c, err := chunkenc.FromData(enc, append([]byte(nil), cur.Bytes()...))
			must(err)
			a, err := c.Appender()
			must(err)
			if v.float {
				_, _, _, err = a.AppendFloatHistogram(nil, 0, e.t, e.fh.Copy(), true)
			} else {
				_, _, _, err = a.AppendHistogram(nil, 0, e.t, e.h.Copy(), true)
			}
			if err != nil {
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
		var (
			nc      chunkenc.Chunk
			recoded bool
			err     error
		)
		if v.float {
			nc, recoded, app, err = app.AppendFloatHistogram(p, 0, e.t, e.fh.Copy(), false)
		} else {
			nc, recoded, app, err = app.AppendHistogram(p, 0, e.t, e.h.Copy(), false)
		}
		must(err)
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
		for {
			vt := it.Next()
			if vt == chunkenc.ValNone {
				break
			}
			if v.float {
				t, fh := it.AtFloatHistogram(nil)
				fmt.Fprintf(out, "decoded %d %s\n", t, histrecord.Float(fh))
			} else {
				t, h := it.AtHistogram(nil)
				fmt.Fprintf(out, "decoded %d %s\n", t, histrecord.Int(h))
				if withFloatView(v.name) {
					t, fh := it.AtFloatHistogram(nil)
					fmt.Fprintf(out, "decodedf %d %s\n", t, histrecord.Float(fh))
				}
			}
		}
		must(it.Err())
	}
	fmt.Fprintln(out, "end")
	fmt.Fprintln(out)
}

// withFloatView says for which integer vectors the float view of the
// decoded samples is recorded too (for all, the file would be big).
func withFloatView(name string) bool {
	for _, n := range []string{"_schema_", "_large", "_stale", "_empty_and_zero", "_random_0", "_random_1", "_growth"} {
		if strings.Contains(name, n) {
			return true
		}
	}
	return false
}

func must(err error) {
	if err != nil {
		panic(err)
	}
}

// ---------------------------------------------------------------------------
// Records.

// ---------------------------------------------------------------------------
// A histogram model: absolute counts by bucket index. Buckets present in
// the maps are in the layout even when empty.

type model struct {
	hint    histogram.CounterResetHint
	schema  int32
	zt      float64
	zc      float64
	pos     map[int32]float64
	neg     map[int32]float64
	sum     float64
	nan     float64 // Observations in no bucket (NaN observations).
	custom  []float64
	integer bool
}

func newModel(schema int32, zt float64, integer bool) *model {
	return &model{schema: schema, zt: zt, pos: map[int32]float64{}, neg: map[int32]float64{}, integer: integer}
}

func (m *model) clone() *model {
	c := *m
	c.pos = map[int32]float64{}
	c.neg = map[int32]float64{}
	for k, v := range m.pos {
		c.pos[k] = v
	}
	for k, v := range m.neg {
		c.neg[k] = v
	}
	c.custom = append([]float64(nil), m.custom...)
	return &c
}

func (m *model) count() float64 {
	c := m.zc + m.nan
	for _, b := range []map[int32]float64{m.pos, m.neg} {
		for _, k := range sortedKeys(b) {
			c += b[k]
		}
	}
	return c
}

func sortedKeys(b map[int32]float64) []int32 {
	keys := make([]int32, 0, len(b))
	for k := range b {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return keys[i] < keys[j] })
	return keys
}

func spansOf(keys []int32) []histogram.Span {
	var spans []histogram.Span
	var last int32
	for i, k := range keys {
		switch {
		case i == 0:
			spans = append(spans, histogram.Span{Offset: k, Length: 1})
		case k == last+1:
			spans[len(spans)-1].Length++
		default:
			spans = append(spans, histogram.Span{Offset: k - last - 1, Length: 1})
		}
		last = k
	}
	return spans
}

func (m *model) intHist() *histogram.Histogram {
	h := &histogram.Histogram{
		CounterResetHint: m.hint,
		Schema:           m.schema,
		ZeroThreshold:    m.zt,
		ZeroCount:        uint64(m.zc),
		Count:            uint64(m.count()),
		Sum:              m.sum,
		CustomValues:     append([]float64(nil), m.custom...),
	}
	if len(h.CustomValues) == 0 {
		h.CustomValues = nil
	}
	deltas := func(b map[int32]float64) ([]histogram.Span, []int64) {
		keys := sortedKeys(b)
		var out []int64
		var prev int64
		for _, k := range keys {
			v := int64(b[k])
			out = append(out, v-prev)
			prev = v
		}
		return spansOf(keys), out
	}
	h.PositiveSpans, h.PositiveBuckets = deltas(m.pos)
	h.NegativeSpans, h.NegativeBuckets = deltas(m.neg)
	return h
}

func (m *model) floatHist() *histogram.FloatHistogram {
	h := &histogram.FloatHistogram{
		CounterResetHint: m.hint,
		Schema:           m.schema,
		ZeroThreshold:    m.zt,
		ZeroCount:        m.zc,
		Count:            m.count(),
		Sum:              m.sum,
		CustomValues:     append([]float64(nil), m.custom...),
	}
	if len(h.CustomValues) == 0 {
		h.CustomValues = nil
	}
	abs := func(b map[int32]float64) ([]histogram.Span, []float64) {
		keys := sortedKeys(b)
		var out []float64
		for _, k := range keys {
			out = append(out, b[k])
		}
		return spansOf(keys), out
	}
	h.PositiveSpans, h.PositiveBuckets = abs(m.pos)
	h.NegativeSpans, h.NegativeBuckets = abs(m.neg)
	return h
}

// seq builds the events of a sequence from a model.
type seq struct {
	float  bool
	events []event
	t      int64
}

func (s *seq) add(m *model) {
	e := event{t: s.t}
	if s.float {
		e.fh = m.floatHist()
	} else {
		e.h = m.intHist()
	}
	s.events = append(s.events, e)
}

func (s *seq) addInt(h *histogram.Histogram) {
	s.events = append(s.events, event{t: s.t, h: h})
}

func (s *seq) addFloat(h *histogram.FloatHistogram) {
	s.events = append(s.events, event{t: s.t, fh: h})
}

func (s *seq) stale() {
	if s.float {
		s.events = append(s.events, event{t: s.t, fh: &histogram.FloatHistogram{Sum: math.Float64frombits(value.StaleNaN)}})
	} else {
		s.events = append(s.events, event{t: s.t, h: &histogram.Histogram{Sum: math.Float64frombits(value.StaleNaN)}})
	}
}

func (s *seq) cut() { s.events = append(s.events, event{cut: true}) }

// step moves time on by a regular interval with optional jitter.
func (s *seq) step(r *rand.Rand, jitter int64) {
	s.t += 15000
	if jitter > 0 {
		s.t += r.Int63n(2*jitter+1) - jitter
	}
}

// incr adds an observation-like amount to a count.
func incr(r *rand.Rand, integer bool, max int) float64 {
	if integer {
		return float64(r.Intn(max + 1))
	}
	switch r.Intn(4) {
	case 0:
		return float64(r.Intn(max + 1))
	case 1:
		return r.Float64() * float64(max)
	case 2:
		return float64(r.Intn(max+1)) / 3
	default:
		return math.Round(r.Float64()*float64(max)*10) / 10
	}
}

// observe increments the buckets of m (and the sum).
func observe(r *rand.Rand, m *model, max int) {
	for _, b := range []map[int32]float64{m.pos, m.neg} {
		for _, k := range sortedKeys(b) {
			if r.Intn(3) > 0 {
				d := incr(r, m.integer, max)
				b[k] += d
				m.sum += d * (float64(k) + r.Float64())
			}
		}
	}
	if m.custom == nil && r.Intn(2) == 0 {
		m.zc += incr(r, m.integer, max)
	}
}

// ---------------------------------------------------------------------------
// The sequences.

const t0 = int64(1_700_000_000_000)

func vectors() []vector {
	var vs []vector
	for _, float := range []bool{false, true} {
		prefix := "int"
		if float {
			prefix = "float"
		}
		add := func(name string, s *seq) {
			vs = append(vs, vector{name: prefix + "_" + name, float: float, events: s.events})
		}
		for schema := int32(-4); schema <= 8; schema++ {
			add(fmt.Sprintf("schema_%d", schema), schemaSeq(float, schema))
		}
		add("growth", growthSeq(float))
		add("missing_empty", missingSeq(float))
		add("resets", resetSeq(float))
		add("gauge", gaugeSeq(float))
		add("gauge_counter_switch", switchSeq(float))
		add("stale", staleSeq(float))
		add("nhcb", nhcbSeq(float))
		add("large", largeSeq(float))
		add("zero_thresholds", ztSeq(float))
		add("cuts", cutSeq(float))
		add("noncanonical_spans", noncanonicalSeq(float))
		add("schema_12", schema12Seq(float))
		add("size_cut", sizeCutSeq(float))
		add("empty_and_zero", emptySeq(float))
		for i := 0; i < 8; i++ {
			add(fmt.Sprintf("random_%d", i), randomSeq(float, int64(i)))
		}
	}
	return vs
}

func seed(float bool, n int64) *rand.Rand {
	if float {
		n += 1000
	}
	return rand.New(rand.NewSource(n))
}

func schemaSeq(float bool, schema int32) *seq {
	r := seed(float, int64(schema)+100)
	s := &seq{float: float, t: t0}
	m := newModel(schema, math.Ldexp(1, -128), !float)
	for _, k := range []int32{-3, -2, 0, 1, 2, 5, 6, 9} {
		m.pos[k] = 0
	}
	for _, k := range []int32{0, 1, 4} {
		m.neg[k] = 0
	}
	for i := 0; i < 40; i++ {
		observe(r, m, 6)
		s.add(m)
		s.step(r, 20)
	}
	return s
}

// growthSeq adds buckets before, between and after the existing ones on
// both sides, alone and several at once.
func growthSeq(float bool) *seq {
	r := seed(float, 1)
	s := &seq{float: float, t: t0}
	m := newModel(0, math.Ldexp(1, -128), !float)
	m.pos[3] = 1
	m.pos[4] = 2
	for i := 0; i < 60; i++ {
		if i%3 == 1 {
			switch r.Intn(4) {
			case 0:
				m.pos[int32(r.Intn(30)-10)] += 1
			case 1:
				m.neg[int32(r.Intn(20)-5)] += 2
			case 2:
				m.pos[int32(r.Intn(40)-20)] += 0
				m.pos[int32(r.Intn(40)-20)] += 3
			default:
				m.neg[int32(r.Intn(6))] += 1
				m.pos[int32(r.Intn(6)+20)] += 1
			}
		}
		observe(r, m, 3)
		s.add(m)
		s.step(r, 0)
	}
	return s
}

// missingSeq: the chunk has empty buckets some samples omit, alone and
// together with new buckets.
func missingSeq(float bool) *seq {
	r := seed(float, 2)
	s := &seq{float: float, t: t0}
	m := newModel(1, math.Ldexp(1, -128), !float)
	for _, k := range []int32{0, 1, 2, 5, 6} {
		m.pos[k] = 0
	}
	m.pos[1] = 4
	m.neg[-1] = 0
	m.neg[0] = 2
	s.add(m)
	for i := 0; i < 30; i++ {
		s.step(r, 0)
		m.pos[1] += incr(r, !float, 3)
		m.neg[0] += incr(r, !float, 2)
		m.sum += 3
		v := m.clone()
		switch i % 5 {
		case 0: // Omit empty positive buckets.
			if v.pos[0] == 0 {
				delete(v.pos, 0)
			}
			if v.pos[6] == 0 {
				delete(v.pos, 6)
			}
		case 1: // Omit an empty negative bucket.
			if v.neg[-1] == 0 {
				delete(v.neg, -1)
			}
		case 2: // Omit empty buckets and bring new ones.
			for k, c := range v.pos {
				if c == 0 {
					delete(v.pos, k)
				}
			}
			v.pos[9] = 0
			v.neg[3] = 1
			m.pos[9] = 0
			m.neg[3] = 1
		case 3: // As the chunk.
		default: // Only the populated buckets.
			for k, c := range v.pos {
				if c == 0 {
					delete(v.pos, k)
				}
			}
			for k, c := range v.neg {
				if c == 0 {
					delete(v.neg, k)
				}
			}
		}
		s.add(v)
	}
	return s
}

func resetSeq(float bool) *seq {
	r := seed(float, 3)
	s := &seq{float: float, t: t0}
	m := newModel(2, math.Ldexp(1, -128), !float)
	for _, k := range []int32{0, 1, 2, 3} {
		m.pos[k] = 1
	}
	m.neg[0] = 1
	m.zc = 1
	for i := 0; i < 100; i++ {
		observe(r, m, 4)
		m.pos[1]++
		m.zc++
		switch i {
		case 10: // The count goes down.
			m = m.clone()
			for k := range m.pos {
				m.pos[k] = 0
			}
			m.pos[0] = 1
		case 20: // Only the zero count goes down.
			m.zc = 0
			m.pos[3] += 1000
		case 30: // One bucket goes down, the count up.
			m.pos[2] = 0
			m.pos[0] += 500
		case 40: // A populated bucket vanishes.
			m.pos[7] += m.pos[3] + 10
			delete(m.pos, 3)
		case 50: // Explicit reset hint.
			m.hint = histogram.CounterReset
		case 51:
			m.hint = histogram.UnknownCounterReset
		case 60: // Schema change.
			m.schema = 3
		case 70: // Zero threshold change.
			m.zt = 0.001
		case 80: // Not a reset, hinted so.
			m.hint = histogram.NotCounterReset
		case 90: // A NaN observation: the count exceeds the buckets.
			m.nan++
			m.sum = math.NaN()
		}
		s.add(m)
		s.step(r, 0)
	}
	return s
}

func gaugeSeq(float bool) *seq {
	r := seed(float, 4)
	s := &seq{float: float, t: t0}
	m := newModel(0, math.Ldexp(1, -128), !float)
	m.hint = histogram.GaugeType
	m.pos[0] = 3
	m.pos[1] = 2
	m.neg[2] = 5
	for i := 0; i < 80; i++ {
		for _, b := range []map[int32]float64{m.pos, m.neg} {
			for _, k := range sortedKeys(b) {
				v := b[k] + float64(r.Intn(5)-2)
				if float {
					v += r.Float64() - 0.5
				}
				if v < 0 {
					v = 0
				}
				b[k] = v
			}
		}
		switch r.Intn(6) {
		case 0: // A bucket appears.
			m.pos[int32(r.Intn(12)-4)] += 1
		case 1: // A bucket vanishes.
			for _, k := range sortedKeys(m.pos) {
				if len(m.pos) > 1 {
					delete(m.pos, k)
					break
				}
			}
		case 2: // Both.
			m.neg[int32(r.Intn(8))] += 2
			for _, k := range sortedKeys(m.neg) {
				if len(m.neg) > 2 {
					delete(m.neg, k)
					break
				}
			}
		case 3:
			m.zc = float64(r.Intn(4))
		}
		m.sum = float64(r.Intn(1000)) - 300
		if i == 40 {
			m.schema = 1 // Needs a new chunk.
		}
		if i == 60 {
			m.zt = 0.5
		}
		s.add(m)
		s.step(r, 100)
	}
	return s
}

func switchSeq(float bool) *seq {
	r := seed(float, 5)
	s := &seq{float: float, t: t0}
	m := newModel(0, 0, !float)
	m.pos[0] = 1
	m.pos[1] = 1
	for i := 0; i < 40; i++ {
		m.hint = histogram.UnknownCounterReset
		if (i/8)%2 == 0 {
			m.hint = histogram.GaugeType
		}
		if i == 20 {
			m.hint = histogram.CounterReset // A counter sample after gauges.
		}
		observe(r, m, 2)
		s.add(m)
		s.step(r, 0)
	}
	return s
}

func staleSeq(float bool) *seq {
	r := seed(float, 6)
	s := &seq{float: float, t: t0}
	m := newModel(0, math.Ldexp(1, -128), !float)
	m.pos[0] = 1
	m.neg[0] = 1
	for i := 0; i < 30; i++ {
		switch {
		case i == 5 || i == 6 || i == 7:
			s.stale()
		case i == 12:
			s.cut()
			s.stale() // Stale as the first sample of a chunk.
		case i == 13:
			s.stale()
		case i == 20:
			s.stale()
			s.step(r, 0)
			m.hint = histogram.GaugeType
			s.add(m) // A gauge after a stale counter.
			s.step(r, 0)
			s.stale()
			m.hint = histogram.UnknownCounterReset
		default:
			observe(r, m, 3)
			s.add(m)
		}
		s.step(r, 0)
	}
	// Stale with the reset hint, and gauge stale markers.
	s.events = append(s.events, event{t: s.t})
	last := &s.events[len(s.events)-1]
	if float {
		last.fh = &histogram.FloatHistogram{Sum: math.Float64frombits(value.StaleNaN), CounterResetHint: histogram.CounterReset}
	} else {
		last.h = &histogram.Histogram{Sum: math.Float64frombits(value.StaleNaN), CounterResetHint: histogram.CounterReset}
	}
	s.step(r, 0)
	m.hint = histogram.GaugeType
	s.add(m)
	s.step(r, 0)
	s.events = append(s.events, event{t: s.t})
	last = &s.events[len(s.events)-1]
	if float {
		last.fh = &histogram.FloatHistogram{Sum: math.Float64frombits(value.StaleNaN), CounterResetHint: histogram.GaugeType}
	} else {
		last.h = &histogram.Histogram{Sum: math.Float64frombits(value.StaleNaN), CounterResetHint: histogram.GaugeType}
	}
	return s
}

func nhcbSeq(float bool) *seq {
	r := seed(float, 7)
	s := &seq{float: float, t: t0}
	m := newModel(histogram.CustomBucketsSchema, 0, !float)
	m.custom = []float64{-5, 0.005, 0.01, 0.025, 0.1, 0.1234567, 1, 2.5, 10, 33554.43, 33554.431, 50000, 1e300}
	m.pos[1] = 1
	m.pos[3] = 2
	for i := 0; i < 50; i++ {
		if i == 10 || i == 15 {
			m.pos[int32(r.Intn(14))] += 1 // New buckets.
		}
		if i == 25 { // Changed bounds: a counter reset.
			m.custom = []float64{0.5, 1, 2}
			m.pos = map[int32]float64{0: 1, 2: 1}
		}
		if i == 35 { // Back to the first bounds, and a gauge.
			m.custom = []float64{-5, 0.005, 0.01}
			m.pos = map[int32]float64{0: 1, 3: 1}
		}
		if i >= 35 {
			m.hint = histogram.GaugeType
			if i == 40 {
				m.custom = []float64{-5, 0.005, 0.02}
			}
		}
		observe(r, m, 5)
		s.add(m)
		s.step(r, 0)
	}
	return s
}

func largeSeq(float bool) *seq {
	r := seed(float, 8)
	s := &seq{float: float, t: -1_000_000}
	m := newModel(-2, math.Ldexp(1, -128), !float)
	big := math.Ldexp(1, 61)
	if float {
		big = 1e300
	}
	m.pos[0] = big
	m.pos[1] = 1
	m.neg[0] = big / 2
	m.zc = math.Ldexp(1, 40)
	for i := 0; i < 40; i++ {
		if float {
			m.pos[0] *= 1.0000001
			m.pos[1] += 1e-300
			m.neg[0] += math.Ldexp(1, r.Intn(900))
			m.sum = math.Inf(1)
			if i%3 == 0 {
				m.sum = math.MaxFloat64
			}
		} else {
			m.pos[0] += math.Ldexp(1, r.Intn(40))
			m.pos[1] += math.Ldexp(1, r.Intn(58))
			m.neg[0] += float64(r.Int63n(1 << 30))
			m.sum = r.NormFloat64() * 1e18
		}
		m.zc += float64(r.Intn(1 << 20))
		s.add(m)
		// Gaps from milliseconds to years, backwards too.
		switch i % 4 {
		case 0:
			s.t += 1
		case 1:
			s.t += r.Int63n(1 << 40)
		case 2:
			s.t -= r.Int63n(1 << 20)
		default:
			s.t += 15000
		}
	}
	return s
}

func ztSeq(float bool) *seq {
	r := seed(float, 9)
	s := &seq{float: float, t: t0}
	m := newModel(0, 0, !float)
	m.pos[0] = 1
	for i, zt := range []float64{0, math.Ldexp(1, -128), 0.001, 1024, 2048, math.Ldexp(1, -243), math.Ldexp(1, -244), 1e-300, 0.25} {
		m.zt = zt
		for j := 0; j < 3+i%2; j++ {
			observe(r, m, 2)
			s.add(m)
			s.step(r, 0)
		}
	}
	return s
}

// cutSeq: new chunks started by the head (as at a time boundary), so
// that the first sample's header comes from the previous chunk.
func cutSeq(float bool) *seq {
	r := seed(float, 10)
	s := &seq{float: float, t: t0}
	m := newModel(0, math.Ldexp(1, -128), !float)
	m.pos[0] = 1
	m.pos[2] = 1
	m.neg[1] = 1
	next := func(n int) {
		for i := 0; i < n; i++ {
			observe(r, m, 3)
			s.add(m)
			s.step(r, 0)
		}
	}
	next(5)
	s.cut() // Continues: NotCounterReset.
	next(5)
	s.cut() // The count drops: CounterReset.
	m = m.clone()
	m.pos[0] = 0
	m.pos[2] = 0
	m.neg[1] = 0
	next(3)
	s.cut() // New buckets: not a reset.
	m.pos[5] = 2
	next(3)
	s.cut() // Schema change: Unknown (float: NotCounterReset).
	m.schema = 1
	next(3)
	s.cut() // Reset hint.
	m.hint = histogram.CounterReset
	next(1)
	m.hint = histogram.UnknownCounterReset
	next(2)
	m.hint = histogram.GaugeType
	s.cut() // Gauge: Gauge.
	next(3)
	m.hint = histogram.UnknownCounterReset
	s.cut() // Counter after gauges: NotCounterReset.
	next(3)
	s.stale()
	s.step(r, 0)
	s.cut() // After a stale marker: Unknown (float: NotCounterReset).
	next(3)
	s.cut() // A populated bucket vanishes: CounterReset.
	m = m.clone()
	delete(m.pos, 5)
	m.pos[6] += 100
	next(2)
	s.cut() // An empty cut: nothing appended before the next cut.
	s.cut()
	next(2)
	return s
}

// noncanonicalSpans: spans with zero lengths and zero offsets, as clients
// may send them.
func noncanonicalSeq(float bool) *seq {
	r := seed(float, 11)
	s := &seq{float: float, t: t0}
	sp := func(xs ...int32) []histogram.Span {
		var out []histogram.Span
		for i := 0; i < len(xs); i += 2 {
			out = append(out, histogram.Span{Offset: xs[i], Length: uint32(xs[i+1])})
		}
		return out
	}
	layouts := [][]histogram.Span{
		sp(0, 2, 0, 0, 0, 3), // 0..4
		sp(0, 5),             // same buckets
		sp(-1, 0, 1, 2, 0, 3),
		sp(0, 1, 0, 1, 0, 3, 2, 1), // adds 7
		sp(0, 0, 0, 8),             // 0..7: adds 5, 6
		sp(0, 3, 1, 4),             // lacks 3 (empty)
		sp(0, 3, 1, 5),             // lacks 3, adds 8
	}
	counts := []float64{1, 2, 3, 0, 5, 0, 0, 0, 0}
	for i := 0; i < 84; i++ {
		if i == 42 {
			s.cut()
		}
		hint := histogram.UnknownCounterReset
		if i >= 42 {
			hint = histogram.GaugeType // Buckets come and go.
		}
		spans := layouts[(i/3)%len(layouts)]
		if i >= 42 {
			spans = layouts[(i*5)%len(layouts)]
		}
		var idx []int32
		var k int32
		for j, s := range spans {
			if j == 0 {
				k = s.Offset
			} else {
				k += s.Offset
			}
			for l := uint32(0); l < s.Length; l++ {
				idx = append(idx, k)
				k++
			}
		}
		for j := range counts {
			if j != 3 {
				counts[j] += float64(r.Intn(3))
			}
		}
		var sum, total float64
		if float {
			var b []float64
			for _, x := range idx {
				b = append(b, counts[x])
				total += counts[x]
			}
			sum = total * 1.5
			s.addFloat(&histogram.FloatHistogram{CounterResetHint: hint, Count: total, Sum: sum, PositiveSpans: spans, PositiveBuckets: b, NegativeSpans: sp(0, 0)})
		} else {
			var b []int64
			var prev int64
			for _, x := range idx {
				b = append(b, int64(counts[x])-prev)
				prev = int64(counts[x])
				total += counts[x]
			}
			sum = total * 1.5
			s.addInt(&histogram.Histogram{CounterResetHint: hint, Count: uint64(total), Sum: sum, PositiveSpans: spans, PositiveBuckets: b, NegativeSpans: sp(0, 0)})
		}
		s.step(r, 0)
	}
	return s
}

// schema12Seq: a schema of a future Prometheus, which readers reduce to 8.
func schema12Seq(float bool) *seq {
	r := seed(float, 12)
	s := &seq{float: float, t: t0}
	m := newModel(12, math.Ldexp(1, -128), !float)
	for _, k := range []int32{-20, -17, -16, 1, 2, 15, 16, 17, 40, 300} {
		m.pos[k] = 1
	}
	for _, k := range []int32{3, 4, 5} {
		m.neg[k] = 2
	}
	for i := 0; i < 8; i++ {
		observe(r, m, 4)
		s.add(m)
		s.step(r, 0)
	}
	return s
}

func sizeCutSeq(float bool) *seq {
	r := seed(float, 13)
	s := &seq{float: float, t: t0}
	m := newModel(3, math.Ldexp(1, -128), !float)
	n := int32(30)
	if float {
		n = 12
	}
	for k := -n; k < n; k++ {
		m.pos[k] = 0
	}
	for k := int32(0); k < n/3; k++ {
		m.neg[k] = 0
	}
	for i := 0; i < 100; i++ {
		observe(r, m, 9)
		s.add(m)
		s.step(r, 50)
	}
	return s
}

// emptySeq: histograms without buckets, zero counts, a zero bucket only.
func emptySeq(float bool) *seq {
	r := seed(float, 14)
	s := &seq{float: float, t: 0}
	m := newModel(0, 0, !float)
	for i := 0; i < 8; i++ {
		s.add(m)
		s.t += 1
	}
	m.zt = math.Ldexp(1, -128)
	for i := 0; i < 8; i++ {
		m.zc += incr(r, !float, 3)
		m.sum += 0.5
		s.add(m)
		s.t += 1000
	}
	m.sum = math.Copysign(0, -1)
	s.add(m)
	s.t += 1000
	m.sum = math.Inf(-1)
	s.add(m)
	return s
}

// randomSeq mixes everything: growth, missing empty buckets, resets,
// stale markers, gauges, schema and threshold changes, cuts.
func randomSeq(float bool, n int64) *seq {
	r := seed(float, 500+n)
	s := &seq{float: float, t: t0 + r.Int63n(1_000_000)}
	schema := int32(r.Intn(13) - 4)
	custom := r.Intn(5) == 0
	m := newModel(schema, math.Ldexp(1, -128), !float)
	if custom {
		m.schema = histogram.CustomBucketsSchema
		m.zt = 0
		m.custom = []float64{0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30.001, 60}
	}
	gauge := r.Intn(4) == 0
	if gauge {
		m.hint = histogram.GaugeType
	}
	maxIdx := 20
	if custom {
		maxIdx = 10
	}
	for i := 0; i < 3; i++ {
		m.pos[int32(r.Intn(maxIdx))] = float64(r.Intn(5))
	}
	samples := 40 + r.Intn(60)
	for i := 0; i < samples; i++ {
		switch x := r.Intn(100); {
		case x < 8: // New bucket.
			m.pos[int32(r.Intn(maxIdx))] += incr(r, !float, 3)
		case x < 12 && !custom: // New negative bucket.
			m.neg[int32(r.Intn(maxIdx)-5)] += incr(r, !float, 3)
		case x < 14: // Counter reset.
			m = m.clone()
			for k := range m.pos {
				m.pos[k] = 0
			}
			for k := range m.neg {
				m.neg[k] = 0
			}
			m.zc = 0
			m.sum = 0
		case x < 16:
			s.stale()
			s.step(r, 0)
		case x < 17:
			s.cut()
		case x < 18 && !custom:
			m.schema = int32(r.Intn(13) - 4)
			m = m.clone()
			m.pos = map[int32]float64{int32(r.Intn(5)): 1}
			m.neg = map[int32]float64{}
		case x < 19 && !custom:
			m.zt = []float64{0, 0.001, math.Ldexp(1, -128)}[r.Intn(3)]
		case x < 20:
			if m.hint == histogram.GaugeType {
				m.hint = histogram.UnknownCounterReset
			} else {
				m.hint = histogram.GaugeType
			}
		}
		if m.hint == histogram.GaugeType {
			for _, b := range []map[int32]float64{m.pos, m.neg} {
				for _, k := range sortedKeys(b) {
					switch r.Intn(4) {
					case 0:
						b[k] = math.Max(0, b[k]-incr(r, !float, 3))
					case 1:
						b[k] += incr(r, !float, 3)
					case 2:
						if len(b) > 1 && r.Intn(3) == 0 {
							delete(b, k)
						}
					}
				}
			}
			m.sum = r.NormFloat64() * 100
		} else {
			observe(r, m, 4)
		}
		v := m
		if r.Intn(6) == 0 {
			// Omit empty buckets from this sample.
			v = m.clone()
			for k, c := range v.pos {
				if c == 0 {
					delete(v.pos, k)
				}
			}
			for k, c := range v.neg {
				if c == 0 {
					delete(v.neg, k)
				}
			}
		}
		s.add(v)
		s.step(r, 30)
	}
	return s
}
