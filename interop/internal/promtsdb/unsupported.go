package promtsdb

// Data dirs holding what Ferrite does not support yet (issue 10, item 1):
// native histograms (exponential and custom-bucket schemas, integer and float,
// in the WAL, in chunks_head/ and in blocks) and out-of-order samples (wbl/),
// each written by Prometheus v3.16.0's own TSDB next to ordinary float
// series, and the read-only census (samples per kind) that proves such a dir
// still holds everything that was written.

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/prometheus/prometheus/model/histogram"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/storage"
	"github.com/prometheus/prometheus/tsdb"
	"github.com/prometheus/prometheus/tsdb/chunkenc"
	"github.com/prometheus/prometheus/tsdb/chunks"
	"github.com/prometheus/prometheus/tsdb/record"
	"github.com/prometheus/prometheus/tsdb/wlog"
	"github.com/prometheus/prometheus/util/compression"
)

// The kinds of unsupported data GenerateUnsupported writes, one per dir.
const (
	// Integer native histograms (exponential schemas 0..2) in the WAL only:
	// too few samples per series for a histogram head chunk to be m-mapped.
	UnsupportedWALHistograms = "wal-histograms"
	// Float native histograms (exponential schema) with enough samples that
	// full histogram head chunks are m-mapped into chunks_head/.
	UnsupportedHeadFloatHistograms = "head-float-histograms"
	// Native histograms with custom buckets (NHCB, schema -53), integer and
	// float, in the WAL and in chunks_head/.
	UnsupportedNHCB = "nhcb"
	// Out-of-order floats, histograms and float histograms
	// (OutOfOrderTimeWindow set): some moved into out-of-order blocks by
	// Prometheus' out-of-order compaction, the rest in wbl/ segments and
	// out-of-order chunks m-mapped into chunks_head/.
	UnsupportedOOO = "ooo"
	// Integer and float native histograms compacted by Prometheus into four
	// aligned 2 h blocks (the first three fill a 6 h range, so the leveled
	// planner wants to merge them); the head (WAL, chunks_head/) holds floats
	// only.
	UnsupportedBlockHistograms = "block-histograms"
)

// UnsupportedKinds lists the kinds in the order the tests use.
var UnsupportedKinds = []string{
	UnsupportedWALHistograms,
	UnsupportedHeadFloatHistograms,
	UnsupportedNHCB,
	UnsupportedOOO,
	UnsupportedBlockHistograms,
}

// Census counts what a data dir holds, per kind of sample. HistogramSum adds
// up Count+Sum of every histogram sample (integer or float), FloatSum the
// float values; both are exact in float64 for the generated data. Hash (from
// CensusReadOnly; not compared by Equal) is a sha256 of every series' labels
// and every sample exactly: kind, timestamp, float bits, and for histograms
// schema, zero threshold and count, count, sum, custom bounds and every
// non-empty bucket (index and count), so it does not depend on how the
// samples are cut into chunks, on the spans' layout or on counter-reset hints.
type Census struct {
	Series          int64
	Floats          int64
	Histograms      int64 // integer histogram samples (any schema)
	FloatHistograms int64 // float histogram samples (any schema)
	CustomBuckets   int64 // of the histogram samples above, those with schema -53
	FloatSum        float64
	HistogramSum    float64
	Hash            string
}

func (c Census) String() string {
	s := fmt.Sprintf("series=%d floats=%d histograms=%d float_histograms=%d custom_buckets=%d float_sum=%.12e histogram_sum=%.12e",
		c.Series, c.Floats, c.Histograms, c.FloatHistograms, c.CustomBuckets, c.FloatSum, c.HistogramSum)
	if c.Hash != "" {
		s += " hash=" + c.Hash[:16]
	}
	return s
}

// Equal compares counts exactly and sums to 1e-9 relative.
func (c Census) Equal(o Census) bool {
	near := func(a, b float64) bool {
		return a == b || math.Abs(a-b) <= 1e-9*math.Max(math.Abs(a), math.Abs(b))
	}
	return c.Series == o.Series && c.Floats == o.Floats && c.Histograms == o.Histograms &&
		c.FloatHistograms == o.FloatHistograms && c.CustomBuckets == o.CustomBuckets &&
		near(c.FloatSum, o.FloatSum) && near(c.HistogramSum, o.HistogramSum)
}

func (c *Census) addFloat(v float64) {
	c.Floats++
	c.FloatSum += v
}

func (c *Census) addHistogram(h *histogram.Histogram) {
	c.Histograms++
	c.HistogramSum += float64(h.Count) + h.Sum
	if h.Schema == histogram.CustomBucketsSchema {
		c.CustomBuckets++
	}
}

func (c *Census) addFloatHistogram(h *histogram.FloatHistogram) {
	c.FloatHistograms++
	c.HistogramSum += h.Count + h.Sum
	if h.Schema == histogram.CustomBucketsSchema {
		c.CustomBuckets++
	}
}

// CensusReadOnly opens dir as DigestReadOnly does (tsdb.OpenDBReadOnly, dir
// untouched: blocks, chunks_head/, WAL and WBL replayed in a sandbox next to
// dir) and counts every sample by kind.
//
// Except for a dir holding blocks made by out-of-order compaction:
// Prometheus' read-only open starts the head after the newest block's end
// whatever the block, so it would drop the in-order head samples such a
// block overlaps (its server open leaves those blocks out, see
// inOrderBlocksMaxTime). Such a dir is copied into the sandbox and opened
// the way a server does (tsdb.Open, compactions off); dir stays untouched.
func CensusReadOnly(dir string) (Census, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return Census{}, err
	}
	if _, err := os.Stat(abs); err != nil {
		return Census{}, err
	}
	sandbox, err := os.MkdirTemp(filepath.Dir(abs), ".promcensus-sandbox-")
	if err != nil {
		return Census{}, err
	}
	defer os.RemoveAll(sandbox)
	var q storage.Querier
	if hasOutOfOrderBlock(abs) {
		cp := filepath.Join(sandbox, "copy")
		if err := CopyDir(abs, cp); err != nil {
			return Census{}, err
		}
		db, err := tsdb.Open(cp, Logger, nil, tsdb.DefaultOptions(), nil)
		if err != nil {
			return Census{}, err
		}
		db.DisableCompactions()
		defer db.Close()
		if q, err = db.Querier(math.MinInt64, math.MaxInt64); err != nil {
			return Census{}, err
		}
	} else {
		db, err := tsdb.OpenDBReadOnly(abs, sandbox, Logger)
		if err != nil {
			return Census{}, err
		}
		defer db.Close()
		if q, err = db.Querier(math.MinInt64, math.MaxInt64); err != nil {
			return Census{}, err
		}
	}
	defer q.Close()
	var c Census
	hw := &hashWriter{h: sha256.New()}
	ss := q.Select(context.Background(), true, nil, labels.MustNewMatcher(labels.MatchRegexp, "__name__", ".*"))
	var it chunkenc.Iterator
	for ss.Next() {
		s := ss.At()
		c.Series++
		hw.str(s.Labels().String())
		it = s.Iterator(it)
		for vt := it.Next(); vt != chunkenc.ValNone; vt = it.Next() {
			hw.u64(uint64(vt))
			switch vt {
			case chunkenc.ValFloat:
				t, v := it.At()
				c.addFloat(v)
				hw.u64(uint64(t))
				hw.f64(v)
			case chunkenc.ValHistogram:
				t, h := it.AtHistogram(nil)
				c.addHistogram(h)
				hw.u64(uint64(t))
				hw.histogram(h.ToFloat(nil))
			case chunkenc.ValFloatHistogram:
				t, h := it.AtFloatHistogram(nil)
				c.addFloatHistogram(h)
				hw.u64(uint64(t))
				hw.histogram(h)
			}
		}
		if err := it.Err(); err != nil {
			return c, fmt.Errorf("series %s: %w", s.Labels(), err)
		}
	}
	c.Hash = hex.EncodeToString(hw.h.Sum(nil))
	return c, ss.Err()
}

// hasOutOfOrderBlock reports whether a block of dir was made from
// out-of-order samples only (its meta carries the from-out-of-order hint).
func hasOutOfOrderBlock(dir string) bool {
	metas, _ := filepath.Glob(filepath.Join(dir, "*", "meta.json"))
	for _, m := range metas {
		b, err := os.ReadFile(m)
		if err != nil {
			continue
		}
		var meta tsdb.BlockMeta
		if json.Unmarshal(b, &meta) == nil && meta.Compaction.FromOutOfOrder() {
			return true
		}
	}
	return false
}

type hashWriter struct {
	h   hash.Hash
	buf [8]byte
}

func (w *hashWriter) u64(v uint64) {
	binary.LittleEndian.PutUint64(w.buf[:], v)
	w.h.Write(w.buf[:])
}

func (w *hashWriter) f64(v float64) { w.u64(math.Float64bits(v)) }

func (w *hashWriter) str(s string) {
	w.u64(uint64(len(s)))
	w.h.Write([]byte(s))
}

// histogram hashes what the histogram means, not how its buckets are laid
// out: the non-empty buckets by index.
func (w *hashWriter) histogram(h *histogram.FloatHistogram) {
	w.u64(uint64(int64(h.Schema)))
	w.f64(h.ZeroThreshold)
	w.f64(h.ZeroCount)
	w.f64(h.Count)
	w.f64(h.Sum)
	w.u64(uint64(len(h.CustomValues)))
	for _, v := range h.CustomValues {
		w.f64(v)
	}
	for _, it := range []histogram.BucketIterator[float64]{h.PositiveBucketIterator(), h.NegativeBucketIterator()} {
		for it.Next() {
			b := it.At()
			if b.Count != 0 {
				w.u64(uint64(int64(b.Index)))
				w.f64(b.Count)
			}
		}
		w.u64(math.MaxUint64) // end of the positive (negative) buckets
	}
}

// UnsupportedDir is what GenerateUnsupported wrote.
type UnsupportedDir struct {
	Kind string
	Dir  string
	// Want is the census of everything written.
	Want Census
	// Files describes where the unsupported data sits, as checked after
	// writing (WAL/WBL records per type, chunks_head/ chunks per encoding,
	// blocks with their histogram sample counts).
	Files string
	// HistogramBlocks are the block dirs (ULIDs) holding histogram samples.
	HistogramBlocks []string
}

const (
	unsupportedStartMs int64 = 1699984800000 // 2023-11-14T18:00:00Z: a multiple of 6 h
	blockRangeMs       int64 = 2 * 60 * 60 * 1000
)

// GenerateUnsupported writes a new data dir of one kind (one of
// UnsupportedKinds) with Prometheus v3.16.0 and checks that the unsupported
// data is where the kind says (so a failure is attributable to it).
func GenerateUnsupported(kind, dir string) (UnsupportedDir, error) {
	if entries, err := os.ReadDir(dir); err == nil && len(entries) > 0 {
		return UnsupportedDir{}, fmt.Errorf("%s exists and is not empty", dir)
	}
	u := UnsupportedDir{Kind: kind, Dir: dir}
	var err error
	switch kind {
	case UnsupportedWALHistograms:
		err = genWALHistograms(&u)
	case UnsupportedHeadFloatHistograms:
		err = genHeadFloatHistograms(&u)
	case UnsupportedNHCB:
		err = genNHCB(&u)
	case UnsupportedOOO:
		err = genOOO(&u)
	case UnsupportedBlockHistograms:
		err = genBlockHistograms(&u)
	default:
		err = fmt.Errorf("unknown kind %q (want one of %s)", kind, strings.Join(UnsupportedKinds, ", "))
	}
	if err != nil {
		return u, fmt.Errorf("%s: %w", kind, err)
	}
	files, err := describeFiles(dir)
	if err != nil {
		return u, fmt.Errorf("%s: %w", kind, err)
	}
	u.Files = files.String()
	if err := files.check(kind); err != nil {
		return u, fmt.Errorf("%s: the dir does not hold what it should: %w\n%s", kind, err, u.Files)
	}
	u.HistogramBlocks = files.histogramBlocks
	return u, nil
}

// A series of the generated data: labels and what to append at sample j.
type genSeries struct {
	lset labels.Labels
	ref  storage.SeriesRef
	// exactly one of these is set
	float  func(j int64) float64
	hist   func(j int64) *histogram.Histogram
	fhist  func(j int64) *histogram.FloatHistogram
	census *Census
}

func floatSeries(name string, n int64) []*genSeries {
	out := make([]*genSeries, n)
	for i := range out {
		i64 := int64(i)
		out[i] = &genSeries{
			lset: labels.FromStrings("__name__", name, "instance", fmt.Sprintf("host-%d", i/10), "series", fmt.Sprint(i)),
			// counters, eighths and small gauges: exact sums
			float: func(j int64) float64 {
				switch i64 % 3 {
				case 0:
					return float64(j * (i64 + 1))
				case 1:
					return float64(j%97) / 8
				default:
					return float64((i64*31+j*17)%1000) - 500
				}
			},
		}
	}
	return out
}

// expHistogram is a counter-like integer histogram with an exponential
// schema (0..2 by series), a zero bucket and positive and negative buckets
// in two spans each; all counts grow with j.
func expHistogram(i, j int64) *histogram.Histogram {
	pos := []int64{j + 1, 2*j + 3, i%4 + j, 5, j/2 + 1}
	neg := []int64{j/3 + 1, 2, i%3 + j/4}
	zero := uint64(j/5 + 1)
	count := zero
	for _, v := range pos {
		count += uint64(v)
	}
	for _, v := range neg {
		count += uint64(v)
	}
	return &histogram.Histogram{
		Schema:          int32(i % 3),
		ZeroThreshold:   0.001,
		ZeroCount:       zero,
		Count:           count,
		Sum:             float64(j*(i+3)) + 0.25,
		PositiveSpans:   []histogram.Span{{Offset: -2, Length: 3}, {Offset: 4, Length: 2}},
		PositiveBuckets: Deltas(pos),
		NegativeSpans:   []histogram.Span{{Offset: 1, Length: 2}, {Offset: 2, Length: 1}},
		NegativeBuckets: Deltas(neg),
	}
}

// expFloatHistogram is expHistogram as a float histogram with quarter counts.
func expFloatHistogram(i, j int64) *histogram.FloatHistogram {
	pos := []float64{float64(j) + 0.25, float64(2*j) + 1.5, float64(i%4) + 3, float64(j) / 4}
	neg := []float64{float64(j)/2 + 1, 0.75}
	zero := float64(j%7) + 0.5
	count := zero
	for _, v := range pos {
		count += v
	}
	for _, v := range neg {
		count += v
	}
	return &histogram.FloatHistogram{
		Schema:          int32(1 + i%2),
		ZeroThreshold:   0.001,
		ZeroCount:       zero,
		Count:           count,
		Sum:             float64(j)*1.5 - float64(i),
		PositiveSpans:   []histogram.Span{{Offset: 0, Length: 2}, {Offset: 3, Length: 2}},
		PositiveBuckets: pos,
		NegativeSpans:   []histogram.Span{{Offset: -1, Length: 2}},
		NegativeBuckets: neg,
	}
}

// nhcbBounds are the custom bucket upper bounds (the last bucket is +Inf).
var nhcbBounds = []float64{0.005, 0.05, 0.5, 1, 5, 30}

// nhcbHistogram is a classic-histogram-like integer histogram with custom
// buckets (schema -53).
func nhcbHistogram(i, j int64) *histogram.Histogram {
	abs := make([]int64, len(nhcbBounds)+1)
	var count uint64
	for k := range abs {
		abs[k] = (j+1)*int64(k%3+1) + i%5
		count += uint64(abs[k])
	}
	return &histogram.Histogram{
		Schema:          histogram.CustomBucketsSchema,
		Count:           count,
		Sum:             float64(j*(i+1)) * 0.5,
		PositiveSpans:   []histogram.Span{{Offset: 0, Length: uint32(len(abs))}},
		PositiveBuckets: Deltas(abs),
		CustomValues:    nhcbBounds,
	}
}

// nhcbFloatHistogram: custom buckets, float counts, one empty bucket skipped
// by the spans.
func nhcbFloatHistogram(i, j int64) *histogram.FloatHistogram {
	b := []float64{float64(j) + 0.5, float64(i%3) + 1, float64(2*j) + 0.25, 4, float64(j) / 2}
	var count float64
	for _, v := range b {
		count += v
	}
	return &histogram.FloatHistogram{
		Schema:          histogram.CustomBucketsSchema,
		Count:           count,
		Sum:             float64(j) * 0.75,
		PositiveSpans:   []histogram.Span{{Offset: 0, Length: 3}, {Offset: 1, Length: 2}},
		PositiveBuckets: b,
		CustomValues:    nhcbBounds,
	}
}

// Deltas are absolute integer bucket counts as an integer histogram holds
// them: the first absolute, each later one the change from the one before.
func Deltas(abs []int64) []int64 {
	out := make([]int64, len(abs))
	prev := int64(0)
	for k, v := range abs {
		out[k] = v - prev
		prev = v
	}
	return out
}

func histSeries(name string, n int64, mk func(i, j int64) *histogram.Histogram) []*genSeries {
	out := make([]*genSeries, n)
	for i := range out {
		i64 := int64(i)
		out[i] = &genSeries{
			lset: labels.FromStrings("__name__", name, "series", fmt.Sprint(i)),
			hist: func(j int64) *histogram.Histogram { return mk(i64, j) },
		}
	}
	return out
}

func floatHistSeries(name string, n int64, mk func(i, j int64) *histogram.FloatHistogram) []*genSeries {
	out := make([]*genSeries, n)
	for i := range out {
		i64 := int64(i)
		out[i] = &genSeries{
			lset:  labels.FromStrings("__name__", name, "series", fmt.Sprint(i)),
			fhist: func(j int64) *histogram.FloatHistogram { return mk(i64, j) },
		}
	}
	return out
}

// appendSamples appends samples j in [from, to) of every series at
// start + j*interval (+offset), j outer, series inner, committing every 1000
// appends, and adds what was appended to c.
func appendSamples(app func() storage.Appender, series []*genSeries, from, to, start, interval, offset int64, c *Census) error {
	a := app()
	n := 0
	for j := from; j < to; j++ {
		t := start + j*interval + offset
		for _, s := range series {
			var (
				ref storage.SeriesRef
				err error
			)
			switch {
			case s.float != nil:
				v := s.float(j)
				ref, err = a.Append(s.ref, s.lset, t, v)
				if err == nil {
					c.addFloat(v)
				}
			case s.hist != nil:
				h := s.hist(j)
				ref, err = a.AppendHistogram(s.ref, s.lset, t, h, nil)
				if err == nil {
					c.addHistogram(h)
				}
			default:
				h := s.fhist(j)
				ref, err = a.AppendHistogram(s.ref, s.lset, t, nil, h)
				if err == nil {
					c.addFloatHistogram(h)
				}
			}
			if err != nil {
				a.Rollback()
				return fmt.Errorf("append %s at %d: %w", s.lset, t, err)
			}
			s.ref = ref
			if n++; n%1000 == 0 {
				if err := a.Commit(); err != nil {
					return err
				}
				a = app()
			}
		}
	}
	return a.Commit()
}

// openForGen opens dir writable with the server's WAL compression and no
// compactions (everything stays in the head: WAL + chunks_head/).
func openForGen(dir string, oooWindow int64) (*tsdb.DB, error) {
	opts := tsdb.DefaultOptions()
	opts.WALCompression = compression.Snappy
	opts.OutOfOrderTimeWindow = oooWindow
	db, err := tsdb.Open(dir, Logger, nil, opts, nil)
	if err != nil {
		return nil, err
	}
	db.DisableCompactions()
	return db, nil
}

func appenderOf(db *tsdb.DB) func() storage.Appender {
	return func() storage.Appender { return db.Appender(context.Background()) }
}

func countSeries(groups ...[]*genSeries) int64 {
	var n int64
	for _, g := range groups {
		n += int64(len(g))
	}
	return n
}

// genWALHistograms: 100 float series x 300 samples (15 s; chunks_head/ holds
// their full XOR chunks) and 20 integer histogram series x 30 samples in the
// same 2 h chunk range (one open head chunk each: never m-mapped, so the
// histograms are in the WAL only).
func genWALHistograms(u *UnsupportedDir) error {
	db, err := openForGen(u.Dir, 0)
	if err != nil {
		return err
	}
	floats := floatSeries("unsup_float", 100)
	hists := histSeries("unsup_histogram", 20, expHistogram)
	if err := appendSamples(appenderOf(db), append(floats, hists...), 0, 30, unsupportedStartMs, 15000, 0, &u.Want); err != nil {
		db.Close()
		return err
	}
	if err := appendSamples(appenderOf(db), floats, 30, 300, unsupportedStartMs, 15000, 0, &u.Want); err != nil {
		db.Close()
		return err
	}
	u.Want.Series = countSeries(floats, hists)
	return db.Close()
}

// genHeadFloatHistograms: 100 float series x 300 samples and 20 float
// histogram series x 400 samples (15 s, 100 min): histogram chunks are cut at
// about 1 KiB, so each series has several full chunks, m-mapped into
// chunks_head/ on the clean close; the open chunk stays in the WAL.
func genHeadFloatHistograms(u *UnsupportedDir) error {
	db, err := openForGen(u.Dir, 0)
	if err != nil {
		return err
	}
	floats := floatSeries("unsup_float", 100)
	fh := floatHistSeries("unsup_float_histogram", 20, expFloatHistogram)
	if err := appendSamples(appenderOf(db), append(floats, fh...), 0, 300, unsupportedStartMs, 15000, 0, &u.Want); err != nil {
		db.Close()
		return err
	}
	if err := appendSamples(appenderOf(db), fh, 300, 400, unsupportedStartMs, 15000, 0, &u.Want); err != nil {
		db.Close()
		return err
	}
	u.Want.Series = countSeries(floats, fh)
	return db.Close()
}

// genNHCB: 100 float series and 10 integer + 10 float custom-bucket
// histogram series, 600 samples each (15 s, 150 min: crossing a 2 h chunk
// range, where even the small integer histogram chunks are cut): NHCB
// records in the WAL and NHCB chunks in chunks_head/.
func genNHCB(u *UnsupportedDir) error {
	db, err := openForGen(u.Dir, 0)
	if err != nil {
		return err
	}
	floats := floatSeries("unsup_float", 100)
	h := histSeries("unsup_nhcb", 10, nhcbHistogram)
	fh := floatHistSeries("unsup_nhcb_float", 10, nhcbFloatHistogram)
	all := append(append(floats, h...), fh...)
	if err := appendSamples(appenderOf(db), all, 0, 600, unsupportedStartMs, 15000, 0, &u.Want); err != nil {
		db.Close()
		return err
	}
	u.Want.Series = countSeries(floats, h, fh)
	return db.Close()
}

// genOOO: out-of-order window 2 h; 100 float, 10 integer and 10 float
// histogram series x 300 in-order samples (15 s), then out-of-order samples
// half-way between in-order ones (t - 7.5 s): 40 per series that
// Prometheus' out-of-order compaction moves into blocks (marked
// from-out-of-order, overlapping the head), then 60 more that stay in the
// WBL (wbl/) and the out-of-order head chunks (32 samples each) m-mapped
// into chunks_head/.
func genOOO(u *UnsupportedDir) error {
	db, err := openForGen(u.Dir, blockRangeMs)
	if err != nil {
		return err
	}
	floats := floatSeries("unsup_float", 100)
	h := histSeries("unsup_ooo_histogram", 10, expHistogram)
	fh := floatHistSeries("unsup_ooo_float_histogram", 10, expFloatHistogram)
	all := append(append(floats, h...), fh...)
	steps := []struct {
		from, to, offset int64
		compactOOO       bool
	}{
		{0, 300, 0, false},
		// Out of order, then moved into out-of-order blocks.
		{200, 240, -7500, true},
		// Out of order, left in the WBL and chunks_head/.
		{240, 300, -7500, false},
	}
	for _, st := range steps {
		if err := appendSamples(appenderOf(db), all, st.from, st.to, unsupportedStartMs, 15000, st.offset, &u.Want); err != nil {
			db.Close()
			return err
		}
		if st.compactOOO {
			if err := db.CompactOOOHead(context.Background()); err != nil {
				db.Close()
				return fmt.Errorf("compact out-of-order head: %w", err)
			}
		}
	}
	u.Want.Series = countSeries(all)
	return db.Close()
}

// genBlockHistograms: in a scratch dir, Prometheus writes 50 float series, 10
// integer and 10 float histogram series x 480 samples (60 s, 8 h from a 6 h
// boundary) and compacts its head into four aligned 2 h blocks
// (DB.CompactHead per range, as head compaction cuts them); the blocks are
// moved into the dir, then Prometheus opens the dir and appends 1 h more of
// the float series only (WAL + chunks_head/, no compaction). So histograms
// are only in the blocks' chunks.
func genBlockHistograms(u *UnsupportedDir) error {
	// A sibling of the dir: the blocks are renamed into it.
	parent := filepath.Dir(filepath.Clean(u.Dir))
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return err
	}
	scratch, err := os.MkdirTemp(parent, ".promgen-scratch-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(scratch)
	db, err := openForGen(scratch, 0)
	if err != nil {
		return err
	}
	floats := floatSeries("unsup_float", 50)
	h := histSeries("unsup_histogram", 10, expHistogram)
	fh := floatHistSeries("unsup_float_histogram", 10, expFloatHistogram)
	all := append(append(floats, h...), fh...)
	if err := appendSamples(appenderOf(db), all, 0, 480, unsupportedStartMs, 60000, 0, &u.Want); err != nil {
		db.Close()
		return err
	}
	for b := int64(0); b < 4; b++ {
		mint := unsupportedStartMs + b*blockRangeMs
		if err := db.CompactHead(tsdb.NewRangeHead(db.Head(), mint, mint+blockRangeMs-1)); err != nil {
			db.Close()
			return fmt.Errorf("compact head [%d, %d): %w", mint, mint+blockRangeMs, err)
		}
	}
	blocks := db.Blocks()
	if len(blocks) != 4 {
		db.Close()
		return fmt.Errorf("prometheus wrote %d blocks, want 4", len(blocks))
	}
	if err := db.Close(); err != nil {
		return err
	}
	if err := os.MkdirAll(u.Dir, 0o755); err != nil {
		return err
	}
	for _, b := range blocks {
		id := b.Meta().ULID.String()
		if err := os.Rename(filepath.Join(scratch, id), filepath.Join(u.Dir, id)); err != nil {
			return err
		}
	}
	db, err = openForGen(u.Dir, 0)
	if err != nil {
		return err
	}
	for _, s := range floats {
		s.ref = 0
	}
	// 240 samples at 15 s from the end of the last block: 2 full XOR chunks
	// per series m-mapped, 1 h of head (less than the 3 h a head compaction
	// needs).
	headStart := int64(unsupportedStartMs + 4*blockRangeMs)
	if err := appendSamples(appenderOf(db), floats, 0, 240, headStart, 15000, 0, &u.Want); err != nil {
		db.Close()
		return err
	}
	if n := len(db.Blocks()); n != 4 {
		db.Close()
		return fmt.Errorf("after reopening, prometheus has %d blocks, want 4", n)
	}
	u.Want.Series = countSeries(floats, h, fh)
	return db.Close()
}

// dirFiles is where a dir's data sits.
type dirFiles struct {
	wal, wbl        map[record.Type]walCount
	headChunks      map[string]int // "XOR", "histogram", ... ("ooo " prefix for out-of-order chunks)
	blocks          []string       // "ULID [mint,maxt) level=N floats=F histograms=H chunks=C"
	histogramBlocks []string
}

type walCount struct{ records, samples int }

func (f dirFiles) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "wal: %s\n", walString(f.wal))
	if f.wbl != nil {
		fmt.Fprintf(&b, "wbl: %s\n", walString(f.wbl))
	}
	keys := make([]string, 0, len(f.headChunks))
	for k := range f.headChunks {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	b.WriteString("chunks_head:")
	for _, k := range keys {
		fmt.Fprintf(&b, " %s=%d", k, f.headChunks[k])
	}
	b.WriteString("\n")
	for _, bl := range f.blocks {
		fmt.Fprintf(&b, "block %s\n", bl)
	}
	return strings.TrimRight(b.String(), "\n")
}

func walString(m map[record.Type]walCount) string {
	types := make([]int, 0, len(m))
	for t := range m {
		types = append(types, int(t))
	}
	sort.Ints(types)
	var parts []string
	for _, t := range types {
		c := m[record.Type(t)]
		p := fmt.Sprintf("%s(%d)=%d records", record.Type(t), t, c.records)
		if c.samples > 0 {
			p += fmt.Sprintf("/%d samples", c.samples)
		}
		parts = append(parts, p)
	}
	if len(parts) == 0 {
		return "(empty)"
	}
	return strings.Join(parts, ", ")
}

func (f dirFiles) walSamples(types ...record.Type) int {
	n := 0
	for _, t := range types {
		n += f.wal[t].samples
	}
	return n
}

var (
	histogramRecordTypes = []record.Type{
		record.HistogramSamples, record.FloatHistogramSamples,
		record.CustomBucketsHistogramSamples, record.CustomBucketsFloatHistogramSamples,
		record.HistogramSamplesV2, record.FloatHistogramSamplesV2,
	}
	histogramEncodings = []string{"histogram", "floathistogram", "histogramst", "floathistogramst"}
)

func (f dirFiles) headChunkCount(names ...string) int {
	n := 0
	for _, name := range names {
		n += f.headChunks[name]
	}
	return n
}

// check that the unsupported data of kind sits where the kind says, and
// nowhere else.
func (f dirFiles) check(kind string) error {
	walHist := f.walSamples(histogramRecordTypes...)
	headHist := f.headChunkCount(histogramEncodings...)
	var errs []error
	want := func(ok bool, format string, args ...any) {
		if !ok {
			errs = append(errs, fmt.Errorf(format, args...))
		}
	}
	want(f.headChunkCount("XOR") > 0, "no float chunks in chunks_head/")
	if kind != UnsupportedOOO {
		want(f.wbl == nil, "a wbl/ dir")
	}
	if kind != UnsupportedBlockHistograms && kind != UnsupportedOOO {
		want(len(f.blocks) == 0, "blocks")
	}
	switch kind {
	case UnsupportedWALHistograms:
		want(f.wal[record.HistogramSamples].samples > 0, "no integer histogram samples in the WAL")
		want(headHist == 0, "histogram chunks in chunks_head/")
	case UnsupportedHeadFloatHistograms:
		want(f.headChunks["floathistogram"] > 0, "no float histogram chunks in chunks_head/")
		want(f.wal[record.FloatHistogramSamples].samples > 0, "no float histogram samples in the WAL")
	case UnsupportedNHCB:
		want(f.wal[record.CustomBucketsHistogramSamples].samples > 0, "no custom-bucket histogram samples in the WAL")
		want(f.wal[record.CustomBucketsFloatHistogramSamples].samples > 0, "no custom-bucket float histogram samples in the WAL")
		want(f.headChunks["histogram"] > 0 && f.headChunks["floathistogram"] > 0, "no integer and float histogram chunks in chunks_head/")
	case UnsupportedOOO:
		want(f.wbl != nil && f.wbl[record.Samples].samples > 0, "no samples in wbl/")
		want(f.wbl != nil && f.wbl[record.HistogramSamples].samples > 0, "no histograms in wbl/")
		want(f.wbl != nil && f.wbl[record.FloatHistogramSamples].samples > 0, "no float histograms in wbl/")
		want(f.wbl != nil && f.wbl[record.MmapMarkers].records > 0, "no mmap markers in wbl/")
		want(f.headChunkCount("XOR") > 0 && headHist > 0, "no float and histogram chunks in chunks_head/")
		want(len(f.blocks) > 0, "no out-of-order blocks")
	case UnsupportedBlockHistograms:
		want(walHist == 0 && headHist == 0, "histograms in the head")
		want(len(f.histogramBlocks) == 4, "%d blocks with histograms, want 4", len(f.histogramBlocks))
	}
	return errors.Join(errs...)
}

func describeFiles(dir string) (dirFiles, error) {
	var f dirFiles
	var err error
	if f.wal, err = walRecords(filepath.Join(dir, "wal")); err != nil {
		return f, fmt.Errorf("wal: %w", err)
	}
	if _, err := os.Stat(filepath.Join(dir, wlog.WblDirName)); err == nil {
		if f.wbl, err = walRecords(filepath.Join(dir, wlog.WblDirName)); err != nil {
			return f, fmt.Errorf("wbl: %w", err)
		}
	}
	if f.headChunks, err = headChunkEncodings(dir); err != nil {
		return f, fmt.Errorf("chunks_head: %w", err)
	}
	metas, _ := filepath.Glob(filepath.Join(dir, "*", "meta.json"))
	sort.Strings(metas)
	for _, m := range metas {
		b, err := os.ReadFile(m)
		if err != nil {
			return f, err
		}
		var meta tsdb.BlockMeta
		if err := json.Unmarshal(b, &meta); err != nil {
			return f, fmt.Errorf("%s: %w", m, err)
		}
		id := filepath.Base(filepath.Dir(m))
		f.blocks = append(f.blocks, fmt.Sprintf("%s [%d,%d) level=%d series=%d floats=%d histograms=%d chunks=%d",
			id, meta.MinTime, meta.MaxTime, meta.Compaction.Level, meta.Stats.NumSeries,
			meta.Stats.NumFloatSamples, meta.Stats.NumHistogramSamples, meta.Stats.NumChunks))
		if meta.Stats.NumHistogramSamples > 0 {
			f.histogramBlocks = append(f.histogramBlocks, id)
		}
	}
	return f, nil
}

// walRecords counts the records (and the samples of sample records) of every
// segment and checkpoint in a WAL or WBL dir, read-only.
func walRecords(dir string) (map[record.Type]walCount, error) {
	out := map[record.Type]walCount{}
	var dirs []string
	cps, _ := filepath.Glob(filepath.Join(dir, "checkpoint.*"))
	dirs = append(dirs, cps...)
	dirs = append(dirs, dir)
	dec := record.NewDecoder(labels.NewSymbolTable(), Logger)
	for _, d := range dirs {
		if segs, _ := filepath.Glob(filepath.Join(d, "[0-9]*")); len(segs) == 0 {
			continue
		}
		rc, err := wlog.NewSegmentsReader(d)
		if err != nil {
			return nil, err
		}
		r := wlog.NewReader(rc)
		for r.Next() {
			rec := r.Record()
			t := dec.Type(rec)
			c := out[t]
			c.records++
			switch t {
			case record.Samples, record.SamplesV2:
				s, err := dec.Samples(rec, nil)
				if err != nil {
					rc.Close()
					return nil, err
				}
				c.samples += len(s)
			case record.HistogramSamples, record.CustomBucketsHistogramSamples, record.HistogramSamplesV2:
				s, err := dec.HistogramSamples(rec, nil)
				if err != nil {
					rc.Close()
					return nil, err
				}
				c.samples += len(s)
			case record.FloatHistogramSamples, record.CustomBucketsFloatHistogramSamples, record.FloatHistogramSamplesV2:
				s, err := dec.FloatHistogramSamples(rec, nil)
				if err != nil {
					rc.Close()
					return nil, err
				}
				c.samples += len(s)
			}
			out[t] = c
		}
		err = r.Err()
		rc.Close()
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

// headChunkEncodings counts the chunks of chunks_head/ per encoding, with
// Prometheus' own chunk disk mapper run on a copy (opening the mapper may
// repair or remove files).
func headChunkEncodings(dir string) (map[string]int, error) {
	out := map[string]int{}
	src := filepath.Join(dir, "chunks_head")
	if _, err := os.Stat(src); err != nil {
		return out, nil
	}
	tmp, err := os.MkdirTemp("", "chunks-head-copy-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	cp := filepath.Join(tmp, "chunks_head")
	if err := CopyDir(src, cp); err != nil {
		return nil, err
	}
	cdm, err := chunks.NewChunkDiskMapper(nil, cp, chunkenc.NewPool(), chunks.DefaultWriteBufferSize, chunks.DefaultWriteQueueSize)
	if err != nil {
		return nil, err
	}
	defer cdm.Close()
	err = cdm.IterateAllChunks(func(_ chunks.HeadSeriesRef, _ chunks.ChunkDiskMapperRef, _, _ int64, _ uint16, enc chunkenc.Encoding, isOOO bool) error {
		name := strings.ToLower(enc.String())
		if enc == chunkenc.EncXOR {
			name = "XOR"
		}
		if isOOO {
			name = "ooo " + name
		}
		out[name]++
		return nil
	})
	return out, err
}
