package promtsdb

import (
	"context"
	"fmt"
	"math"
	"os"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/tsdb"
	"github.com/prometheus/prometheus/tsdb/chunkenc"
	"github.com/prometheus/prometheus/util/compression"
)

// DumpLine is one sample as promtool's `tsdb dump` prints it (and
// `ferrite tsdb dump`): `<labels> <value> <timestamp>`, a float with %g,
// a histogram as its String() (count, sum and every non-empty bucket with
// its bounds).
func DumpLine(lset labels.Labels, t int64, value fmt.Stringer) string {
	return fmt.Sprintf("%s %s %d", lset, value, t)
}

// Float is a float value as promtool's dump prints it.
type Float float64

func (f Float) String() string { return fmt.Sprintf("%g", float64(f)) }

// DumpRepairedCopy copies dir to scratch and opens the copy as a
// Prometheus server does (tsdb.Open: chunks_head/ and WAL replayed, a
// damaged WAL tail repaired; compactions off), returning every sample as
// DumpLine prints it. What a killed writer left may end in a torn WAL
// record, which the read-only open refuses rather than repairs.
func DumpRepairedCopy(dir, scratch string) ([]string, error) {
	if err := CopyDir(dir, scratch); err != nil {
		return nil, err
	}
	defer os.RemoveAll(scratch)
	opts := tsdb.DefaultOptions()
	opts.WALCompression = compression.Snappy
	db, err := tsdb.Open(scratch, Logger, nil, opts, nil)
	if err != nil {
		return nil, err
	}
	db.DisableCompactions()
	defer db.Close()
	q, err := db.Querier(math.MinInt64, math.MaxInt64)
	if err != nil {
		return nil, err
	}
	defer q.Close()
	var out []string
	ss := q.Select(context.Background(), true, nil, labels.MustNewMatcher(labels.MatchRegexp, "__name__", ".*"))
	var it chunkenc.Iterator
	for ss.Next() {
		s := ss.At()
		it = s.Iterator(it)
		for vt := it.Next(); vt != chunkenc.ValNone; vt = it.Next() {
			switch vt {
			case chunkenc.ValFloat:
				t, v := it.At()
				out = append(out, DumpLine(s.Labels(), t, Float(v)))
			case chunkenc.ValHistogram:
				t, h := it.AtHistogram(nil)
				out = append(out, DumpLine(s.Labels(), t, h))
			case chunkenc.ValFloatHistogram:
				t, h := it.AtFloatHistogram(nil)
				out = append(out, DumpLine(s.Labels(), t, h))
			}
		}
		if err := it.Err(); err != nil {
			return out, fmt.Errorf("series %s: %w", s.Labels(), err)
		}
	}
	return out, ss.Err()
}
