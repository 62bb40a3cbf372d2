// Package histrecord is the text form of a native histogram that the chunk
// generators (cmd/promhistchunks, cmd/promhiststchunks), the resolution
// reduction generator (cmd/promreduce), the binary cross-check
// (chunkenc_test.go) and Ferrite (ferrite-model's histogram_record: `ferrite
// debug chunk-encode` and the golden tests) share:
//
//	H hint schema zero_threshold count zero_count sum pos_spans neg_spans pos_buckets neg_buckets custom_values
//	F (the same, counts and buckets as floats)
//
// Floats are the 16 hex digits of their bits, spans `offset:length`, lists
// comma-separated or `-` when empty; integer counts and bucket deltas are
// decimal.
package histrecord

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/prometheus/prometheus/model/histogram"
)

// Int is the H record of h.
func Int(h *histogram.Histogram) string {
	return fmt.Sprintf("H %d %d %s %d %d %s %s %s %s %s %s",
		h.CounterResetHint, h.Schema, Bits(h.ZeroThreshold), h.Count, h.ZeroCount, Bits(h.Sum),
		list(h.PositiveSpans, span), list(h.NegativeSpans, span),
		list(h.PositiveBuckets, decimal), list(h.NegativeBuckets, decimal), list(h.CustomValues, Bits))
}

// Float is the F record of h.
func Float(h *histogram.FloatHistogram) string {
	return fmt.Sprintf("F %d %d %s %s %s %s %s %s %s %s %s",
		h.CounterResetHint, h.Schema, Bits(h.ZeroThreshold), Bits(h.Count), Bits(h.ZeroCount), Bits(h.Sum),
		list(h.PositiveSpans, span), list(h.NegativeSpans, span),
		list(h.PositiveBuckets, Bits), list(h.NegativeBuckets, Bits), list(h.CustomValues, Bits))
}

// Bits is a float as the 16 hex digits of its bits.
func Bits(f float64) string { return fmt.Sprintf("%016x", math.Float64bits(f)) }

func span(s histogram.Span) string { return fmt.Sprintf("%d:%d", s.Offset, s.Length) }
func decimal(x int64) string       { return strconv.FormatInt(x, 10) }

func list[T any](xs []T, f func(T) string) string {
	if len(xs) == 0 {
		return "-"
	}
	parts := make([]string, len(xs))
	for i, x := range xs {
		parts[i] = f(x)
	}
	return strings.Join(parts, ",")
}

// parser reads fields, keeping the first error.
type parser struct{ err error }

func (p *parser) int(s string) int64 {
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil && p.err == nil {
		p.err = err
	}
	return v
}

func (p *parser) float(s string) float64 {
	v, err := strconv.ParseUint(s, 16, 64)
	if err != nil && p.err == nil {
		p.err = err
	}
	return math.Float64frombits(v)
}

func (p *parser) span(s string) histogram.Span {
	o, l, _ := strings.Cut(s, ":")
	return histogram.Span{Offset: int32(p.int(o)), Length: uint32(p.int(l))}
}

func parseList[T any](s string, f func(string) T) []T {
	if s == "-" {
		return nil
	}
	var res []T
	for _, part := range strings.Split(s, ",") {
		res = append(res, f(part))
	}
	return res
}

// ParseInt reads an H record's fields (the H included).
func ParseInt(f []string) (*histogram.Histogram, error) {
	if len(f) != 12 || f[0] != "H" {
		return nil, fmt.Errorf("not an H record: %q", strings.Join(f, " "))
	}
	var p parser
	h := &histogram.Histogram{
		CounterResetHint: histogram.CounterResetHint(p.int(f[1])),
		Schema:           int32(p.int(f[2])),
		ZeroThreshold:    p.float(f[3]),
		Count:            uint64(p.int(f[4])),
		ZeroCount:        uint64(p.int(f[5])),
		Sum:              p.float(f[6]),
		PositiveSpans:    parseList(f[7], p.span),
		NegativeSpans:    parseList(f[8], p.span),
		PositiveBuckets:  parseList(f[9], p.int),
		NegativeBuckets:  parseList(f[10], p.int),
		CustomValues:     parseList(f[11], p.float),
	}
	return h, p.err
}

// ParseFloat reads an F record's fields (the F included).
func ParseFloat(f []string) (*histogram.FloatHistogram, error) {
	if len(f) != 12 || f[0] != "F" {
		return nil, fmt.Errorf("not an F record: %q", strings.Join(f, " "))
	}
	var p parser
	h := &histogram.FloatHistogram{
		CounterResetHint: histogram.CounterResetHint(p.int(f[1])),
		Schema:           int32(p.int(f[2])),
		ZeroThreshold:    p.float(f[3]),
		Count:            p.float(f[4]),
		ZeroCount:        p.float(f[5]),
		Sum:              p.float(f[6]),
		PositiveSpans:    parseList(f[7], p.span),
		NegativeSpans:    parseList(f[8], p.span),
		PositiveBuckets:  parseList(f[9], p.float),
		NegativeBuckets:  parseList(f[10], p.float),
		CustomValues:     parseList(f[11], p.float),
	}
	return h, p.err
}
