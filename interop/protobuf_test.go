package interop_test

// Ferrite's protobuf scrape parser (crates/textparse, protobuf) against
// Prometheus' own (textparse.New for an application/vnd.google.protobuf
// body: NewProtobufParser, no type and unit labels): the same bodies
// through `protodump` (Rust, from PROTODUMP_BIN) and `promproto` (Go, built
// here), each read six times — native histograms ignored, scraped, and
// scraped with always_scrape_classic_histograms, each without and with
// convert_classic_histograms_to_nhcb — must give the same entries: HELP, UNIT and TYPE with their bytes, every
// series' bytes (the scrape cache's key), sorted labels, value bits and
// timestamp, every native histogram (kind, hint, schema, zero threshold,
// counts, sum, spans and buckets as the parser compacts them), up to the
// same first error with the same message.
//
// The bodies are hand-made (every quirk of the streaming decoder and the
// parser, every error gogo-protobuf's code and the parser can give) and
// random: MetricFamily messages of client_model's types, marshalled and
// delimited as a target writes them, and the same bytes mutated.

import (
	"fmt"
	"math"
	"math/rand"
	"strings"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"
)

// protoErrors are the messages (a part each) Prometheus' protobuf parser
// can give, most specific first; the hand-made cases must hit each one.
var protoErrors = []string{
	"clientpb: invalid varint encountered",
	"clientpb: insufficient length of buffer",
	"unexpected EOF",
	"proto: integer overflow",
	"proto: negative length found during unmarshaling",
	"proto: illegal wireType",
	"wiretype end group for non-group",
	"illegal tag",
	"proto: wrong wireType",
	"invalid metric name",
	"invalid help for metric",
	"unknown metric type for metric",
	"invalid label name",
	"invalid label value",
	"spans require",
	// The conversion of classic histograms to NHCB.
	"count is not cumulative",
	"count mismatch",
	"bucket count must be non-negative",
	"count must be non-negative",
	"bucket boundary must not be NaN",
	"invalid float histogram",
	"invalid histogram",
}

// protoErrorKind is which of protoErrors an `ERR` line is ("" for another
// line).
func protoErrorKind(line string) string {
	msg, ok := strings.CutPrefix(line, "ERR ")
	if !ok {
		return ""
	}
	for _, e := range protoErrors {
		if strings.Contains(msg, e) {
			return e
		}
	}
	return "other: " + msg
}

// Wire-format builders for the hand-made bodies.

func cat(parts ...[]byte) []byte {
	var b []byte
	for _, p := range parts {
		b = append(b, p...)
	}
	return b
}

func pbTag(n int, t protowire.Type) []byte { return protowire.AppendTag(nil, protowire.Number(n), t) }

// pbMsg is field n holding the concatenated parts (a message or bytes).
func pbMsg(n int, parts ...[]byte) []byte {
	return protowire.AppendBytes(pbTag(n, protowire.BytesType), cat(parts...))
}

func pbStr(n int, s string) []byte { return pbMsg(n, []byte(s)) }

func pbVarint(n int, v uint64) []byte {
	return protowire.AppendVarint(pbTag(n, protowire.VarintType), v)
}

func pbZigzag(n int, v int64) []byte { return pbVarint(n, protowire.EncodeZigZag(v)) }

func pbDouble(n int, f float64) []byte {
	return protowire.AppendFixed64(pbTag(n, protowire.Fixed64Type), math.Float64bits(f))
}

// pbRawTag is a tag of any wire type (6 and 7 too).
func pbRawTag(n uint64, wireType uint64) []byte { return protowire.AppendVarint(nil, n<<3|wireType) }

// delimited is a body of these MetricFamily messages, each after its length.
func delimited(families ...[]byte) string {
	var b []byte
	for _, f := range families {
		b = protowire.AppendVarint(b, uint64(len(f)))
		b = append(b, f...)
	}
	return string(b)
}

// Message builders: a family, a metric, label pairs, values.
func pbFamily(name string, typ int, metrics ...[]byte) []byte {
	parts := [][]byte{pbStr(1, name), pbStr(2, "help"), pbVarint(3, uint64(typ))}
	for _, m := range metrics {
		parts = append(parts, pbMsg(4, m))
	}
	return cat(parts...)
}

func pbLabel(name, value string) []byte { return pbMsg(1, pbStr(1, name), pbStr(2, value)) }
func pbGauge(v float64) []byte          { return pbMsg(2, pbDouble(1, v)) }
func pbCounter(v float64) []byte        { return pbMsg(3, pbDouble(1, v)) }
func pbUntyped(v float64) []byte        { return pbMsg(5, pbDouble(1, v)) }
func pbSpan(n int, offset int32, length uint32) []byte {
	return pbMsg(n, pbZigzag(1, int64(offset)), pbVarint(2, uint64(length)))
}
func pbBucket(upper float64, count uint64) []byte {
	return pbMsg(3, pbVarint(1, count), pbDouble(2, upper))
}

// pbNative is a native integer histogram (field 7 of a Metric) of schema
// 0 with a zero threshold, and the given fields after.
func pbNative(parts ...[]byte) []byte {
	return pbMsg(7, cat(pbVarint(1, 3), pbDouble(2, 1.5), pbZigzag(5, 0), pbDouble(6, 0.001)), cat(parts...))
}

// pbPacked is a packed field of varints.
func pbPacked(n int, vs ...int64) []byte {
	var b []byte
	for _, v := range vs {
		b = protowire.AppendVarint(b, protowire.EncodeZigZag(v))
	}
	return pbMsg(n, b)
}

func protoHandMade() []ptCase {
	c := func(name, input, want string) ptCase { return ptCase{name, input, want} }
	gauge := func(name string) []byte { return pbFamily(name, 1, pbGauge(1)) }
	tenBytes := []byte{0x81, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x7f} // 1, high bits dropped
	group := cat(pbRawTag(20, 3), pbVarint(1, 5), pbRawTag(21, 3), pbRawTag(21, 4), pbRawTag(20, 4))
	unknown := cat(pbVarint(30, 7), pbDouble(31, 1), pbStr(32, "x"),
		protowire.AppendFixed32(pbTag(33, protowire.Fixed32Type), 5), group)
	// A classic histogram (field 7 of a Metric): count, sum, buckets.
	classic := func(count uint64, buckets ...[]byte) []byte {
		return pbMsg(7, cat(pbVarint(1, count), pbDouble(2, 1.5)), cat(buckets...))
	}
	floatBucket := func(upper, count float64) []byte { return pbMsg(3, pbDouble(2, upper), pbDouble(4, count)) }
	return []ptCase{
		// Classic histograms converted to NHCB (the nhcb modes).
		c("nhcb out of order without +Inf", delimited(pbFamily("h", 4, classic(3, pbBucket(2, 2), pbBucket(1, 1)))),
			"HISTOGRAM h {__name__=h} - H 0 -53 0000000000000000 3 0 3ff8000000000000 0:3 - 1,0,0 - 3ff0000000000000,4000000000000000"),
		c("nhcb gauge histogram", delimited(pbFamily("g", 5, classic(1))), "HISTOGRAM g {__name__=g} - H 3 -53 "),
		c("nhcb float counts", delimited(pbFamily("h", 4, pbMsg(7, pbDouble(4, 2.5), floatBucket(1, 0.5)))), "HISTOGRAM h {__name__=h} - F 0 -53 "),
		c("nhcb not cumulative", delimited(pbFamily("h", 4, classic(2, pbBucket(1, 2), pbBucket(2, 1)))), "ERR count is not cumulative: 1 < 2"),
		c("nhcb above the next", delimited(pbFamily("h", 4, classic(3, pbBucket(1, 1), pbBucket(3, 2), pbBucket(2, 3)))), "ERR count is not cumulative: 3 > 2"),
		c("nhcb count mismatch", delimited(pbFamily("h", 4, classic(3, pbBucket(1, 1), pbBucket(math.Inf(1), 2)))), "ERR count mismatch: count=3 != le=+Inf count=2"),
		c("nhcb negative count", delimited(pbFamily("h", 4, pbMsg(7, pbDouble(4, -1)))), "ERR count must be non-negative: count=-1"),
		c("nhcb negative bucket", delimited(pbFamily("h", 4, pbMsg(7, pbDouble(4, 1), floatBucket(1, -1)))), "ERR bucket count must be non-negative: le=1, count=-1"),
		c("nhcb NaN bound", delimited(pbFamily("h", 4, classic(1, pbBucket(math.NaN(), 1)))), "ERR bucket boundary must not be NaN"),
		c("nhcb below the highest bucket", delimited(pbFamily("h", 4, classic(1, pbBucket(1, 2)))), "ERR invalid histogram: positive side: bucket number 2"),
		c("nhcb below the highest float bucket", delimited(pbFamily("h", 4, pbMsg(7, pbDouble(4, 1.5), floatBucket(1, 2.5)))), "ERR invalid float histogram: positive side"),
		// Valid bodies and their quirks.
		c("empty body", "", ""),
		c("empty family", delimited(pbStr(1, "a")), ""),
		c("empty families around", delimited(nil, gauge("a"), pbStr(1, "b")), "SERIES a {__name__=a} 3ff0000000000000 -"),
		c("all types", delimited(pbFamily("c", 0, pbCounter(1)), gauge("g"), pbFamily("s", 2, nil), pbFamily("u", 3, pbUntyped(2)),
			pbFamily("h", 4, nil), pbFamily("gh", 5, nil)), "TYPE gh gaugehistogram"),
		c("no type is a counter", delimited(cat(pbStr(1, "a"), pbMsg(4, pbCounter(2)))), "TYPE a counter"),
		c("help and unit", delimited(cat(pbFamily("a_s", 1, pbGauge(1)), pbStr(5, "s"))), "UNIT a_s s"),
		c("empty help", delimited(cat(pbStr(1, "a"), pbVarint(3, 1), pbMsg(4, pbGauge(1)))), "HELP a \n"),
		c("utf8 names", delimited(pbFamily("a.b ü", 1, cat(pbLabel("x.y", "日本"), pbGauge(1)))), "SERIES a.b\\x20\\xc3\\xbc\\xffx.y\\xff"),
		c("untyped value carries over", delimited(pbFamily("u", 3, pbUntyped(5), nil), gauge("g"), pbFamily("v", 3, pbLabel("a", "b"))),
			"SERIES v\\xffa\\xffb {__name__=v,a=b} 4014000000000000 -"),
		c("untyped field without value carries over", delimited(pbFamily("u", 3, pbUntyped(5), pbMsg(5))), "SERIES u {__name__=u} 4014000000000000 -\nSERIES u {__name__=u} 4014000000000000"),
		c("gauge is reset", delimited(pbFamily("g", 1, pbGauge(5), nil)), "SERIES g {__name__=g} 0000000000000000 -"),
		c("value of another type", delimited(pbFamily("g", 1, pbCounter(5))), "SERIES g {__name__=g} 0000000000000000 -"),
		c("timestamps", delimited(pbFamily("g", 1, cat(pbGauge(1), pbVarint(6, 1500)), cat(pbGauge(1), pbVarint(6, 0)),
			cat(pbGauge(1), pbVarint(6, uint64(1<<64-5))))), "3ff0000000000000 -5"),
		c("ten-byte varint", delimited(pbFamily("g", 1, cat(pbGauge(1), pbTag(6, protowire.VarintType), tenBytes))), "3ff0000000000000 -9223372036854775807"),
		c("type wraps to int32", delimited(cat(pbStr(1, "a"), pbVarint(3, 1<<32+1), pbMsg(4, pbGauge(1)))), "TYPE a gauge"),
		c("tag wraps to field 1", delimited(cat(pbRawTag(1<<32+1, 2), []byte{1, 'a'}, pbVarint(3, 1), pbMsg(4, pbGauge(1)))), "HELP a "),
		c("name twice, the last", delimited(cat(pbStr(1, "a"), pbFamily("b", 1, pbGauge(1)))), "HELP b help"),
		c("unknown fields skipped", delimited(cat(unknown, pbFamily("a", 4, cat(unknown, pbMsg(1, unknown, pbStr(1, "l"), pbStr(2, "v")),
			pbNative(unknown, pbSpan(12, 0, 1), pbPacked(13, 2), pbMsg(3, unknown, pbDouble(2, 1)))), pbGauge(1)))), "HISTOGRAM a\\xffl\\xffv"),
		c("label without name", delimited(pbFamily("a", 1, cat(pbMsg(1, pbStr(2, "v")), pbGauge(1)))), "{=v,__name__=a}"),
		c("label without value", delimited(pbFamily("a", 1, cat(pbMsg(1, pbStr(1, "n")), pbGauge(1)))), "{__name__=a,n=}"),
		c("__name__ label", delimited(pbFamily("a", 1, cat(pbLabel("__name__", "x"), pbGauge(1)))), "SERIES ax {__name__=a,__name__=x}"),
		c("repeated label names", delimited(pbFamily("a", 1, cat(pbLabel("b", "2"), pbLabel("b", "1"), pbLabel("a", "3"), pbGauge(1)))), "SERIES a\\xffa\\xff3\\xffb\\xff2\\xffb\\xff1"),
		c("thirteen labels", delimited(pbFamily("a", 1, cat(pbLabel("m", "1"), pbLabel("l", "1"), pbLabel("k", "1"), pbLabel("j", "1"),
			pbLabel("i", "1"), pbLabel("h", "1"), pbLabel("g", "1"), pbLabel("f", "1"), pbLabel("e", "1"), pbLabel("d", "1"),
			pbLabel("c", "1"), pbLabel("b", "1"), pbLabel("a", "1"), pbGauge(1)))), "SERIES a\\xffa\\xff1\\xffb"),
		c("summary", delimited(pbFamily("s", 2, pbMsg(4, pbVarint(1, 4), pbDouble(2, 10), pbMsg(3, pbDouble(1, 0.5), pbDouble(2, 2)),
			pbMsg(3, pbDouble(1, math.NaN()), pbDouble(2, 3))))), "SERIES s\\xffquantile\\xffNaN"),
		c("summary without quantiles", delimited(pbFamily("s", 2, pbMsg(4, pbVarint(1, 4)), pbMsg(4, pbDouble(2, 1)))), "SERIES s_sum {__name__=s_sum} 3ff0000000000000 -"),
		c("summary quantile label too", delimited(pbFamily("s", 2, cat(pbLabel("quantile", "x"), pbMsg(4, pbMsg(3, pbDouble(1, 1)))))), "{__name__=s,quantile=1.0,quantile=x}"),
		c("classic histogram", delimited(pbFamily("h", 4, pbMsg(7, pbVarint(1, 5), pbDouble(2, 2), pbBucket(0.1, 1), pbBucket(1e-7, 2), pbBucket(100000, 3)))),
			"SERIES h_bucket\\xffle\\xff+Inf {__name__=h_bucket,le=+Inf} 4014000000000000"),
		c("classic +Inf bucket ends it", delimited(pbFamily("h", 4, pbMsg(7, pbBucket(1, 1), pbBucket(math.Inf(1), 2), pbBucket(5, 3)))),
			"SERIES h_bucket\\xffle\\xff+Inf {__name__=h_bucket,le=+Inf} 4000000000000000"),
		c("classic float counts win", delimited(pbFamily("h", 4, pbMsg(7, pbVarint(1, 5), pbDouble(4, 2.5), pbMsg(3, pbVarint(1, 1), pbDouble(4, 0.5), pbDouble(2, 1))))),
			"SERIES h_count {__name__=h_count} 4004000000000000"),
		c("classic le label too", delimited(pbFamily("h", 5, cat(pbLabel("le", "x"), pbMsg(7)))), "{__name__=h_bucket,le=+Inf,le=x}"),
		c("native", delimited(pbFamily("n", 4, pbNative(pbSpan(12, -1, 3), pbPacked(13, 2, -2, 3), pbSpan(9, 0, 1), pbPacked(10, 1)))),
			"HISTOGRAM n {__name__=n} - H 0 0 3f50624dd2f1a9fc 3 0 3ff8000000000000 -1:1,1:1 0:1 2,1 1 -"),
		c("native unpacked deltas", delimited(pbFamily("n", 4, pbNative(pbSpan(12, 0, 2), pbZigzag(13, 1), pbZigzag(13, 1)))), "HISTOGRAM n {__name__=n} - H 0 0"),
		c("native packed run overreaching", delimited(pbFamily("n", 4, pbNative(pbSpan(12, 0, 1), pbTag(13, protowire.BytesType), []byte{1, 0x82, 0x01}))),
			"0:1 - 65 - -"),
		c("native float", delimited(pbFamily("n", 5, pbMsg(7, pbDouble(4, 3), pbSpan(12, 0, 4), pbDouble(14, 1), pbDouble(14, 0), pbDouble(14, 2),
			pbMsg(14, protowire.AppendFixed64(nil, math.Float64bits(-0.0)))))), "HISTOGRAM n {__name__=n} - F 3 0"),
		c("native float packed overreaching", delimited(pbFamily("n", 4, pbMsg(7, pbDouble(4, 3), pbSpan(12, 0, 1), pbTag(14, protowire.BytesType),
			[]byte{4}, protowire.AppendFixed64(nil, math.Float64bits(2))))), "HISTOGRAM n {__name__=n} - F 0 0"),
		c("native compaction", delimited(pbFamily("n", 4, pbNative(pbSpan(12, 2, 2), pbSpan(12, 0, 1), pbSpan(12, 3, 0), pbSpan(12, -2, 3), pbSpan(12, 1, 2),
			pbPacked(13, 0, 1, -1, 0, 0, 4, -4, 0)))), "HISTOGRAM n {__name__=n} - H 0 0"),
		c("native no-op span", delimited(pbFamily("n", 4, pbMsg(7, pbSpan(12, 0, 0)))), "HISTOGRAM n {__name__=n} - H 0 0 0000000000000000 0 0 0000000000000000 - - - - -"),
		c("native zero threshold only", delimited(pbFamily("n", 4, pbMsg(7, pbDouble(6, 1e-128)))), "HISTOGRAM"),
		c("zero threshold NaN is classic", delimited(pbFamily("n", 4, pbMsg(7, pbDouble(6, math.NaN())))), "SERIES n_count"),
		c("float zero count only is classic", delimited(pbFamily("n", 4, pbMsg(7, pbDouble(8, 2)))), "SERIES n_count"),
		c("native then its classic buckets", delimited(pbFamily("n", 4, pbNative(pbSpan(12, 0, 1), pbPacked(13, 3), pbBucket(1, 2)), pbMsg(7, pbBucket(1, 1)))),
			"SERIES n_bucket\\xffle\\xff1.0"),
		c("native without classic buckets", delimited(pbFamily("n", 4, pbNative(pbSpan(12, 0, 1), pbPacked(13, 3)), pbNative())), "HISTOGRAM"),
		c("native after native, spans unchecked", delimited(pbFamily("n", 4, pbNative(), pbNative(pbSpan(12, 0, 3), pbSpan(12, 0, 0), pbPacked(13, 0, 1)))), "HISTOGRAM"),
		c("native after native, more buckets", delimited(pbFamily("n", 4, pbNative(), pbNative(pbSpan(12, 1, 1), pbPacked(13, 0, 1, 0, 2)))), "HISTOGRAM"),
		c("native gauge histogram", delimited(pbFamily("n", 5, pbNative())), "- H 3 0"),
		c("native reserved schema", delimited(pbFamily("n", 4, pbMsg(7, pbZigzag(5, 20), pbSpan(12, 0, 1), pbPacked(13, 1)))), "H 0 20"),
		c("native twice merges", delimited(pbFamily("n", 4, cat(pbNative(pbSpan(12, 0, 1)), pbMsg(7, pbPacked(13, 1))))), "0:1 - 1 - -"),
		c("native exemplars", delimited(pbFamily("n", 4, pbNative(pbMsg(16, pbDouble(2, 1)), pbMsg(16, pbDouble(2, 1), pbMsg(3, pbVarint(1, 5))), pbBucket(1, 1),
			pbMsg(3, pbVarint(1, 2), pbDouble(2, 2), pbMsg(3, pbDouble(2, 1)))), pbNative(pbBucket(1, 1)))), "HISTOGRAM"),
		c("counter exemplar", delimited(pbFamily("c", 0, pbMsg(3, pbDouble(1, 1), pbMsg(2, pbMsg(1, pbStr(1, "\xff")), pbDouble(2, 1)), pbMsg(3, pbVarint(1, 1))))), "SERIES c"),

		// Every error.
		c("family length overlong", "\x80\x80\x80\x80\x80\x00", "ERR clientpb: invalid varint encountered"),
		c("family length cut", "\x80", "ERR clientpb: invalid varint encountered"),
		c("family cut", delimited(gauge("a"))[:5], "ERR clientpb: insufficient length of buffer, expected at least"),
		c("second family cut", delimited(gauge("a"), gauge("b"))[:30], "SERIES a {__name__=a} 3ff0000000000000 -\nERR clientpb: insufficient"),
		c("metric cut", delimited(cat(pbStr(1, "a"), pbTag(4, protowire.BytesType), []byte{2, 0x12, 5})), "ERR unexpected EOF"),
		c("double cut", delimited(cat(pbStr(1, "a"), pbMsg(4, pbMsg(2, pbTag(1, protowire.Fixed64Type), []byte{1, 2})))), "ERR unexpected EOF"),
		c("eleven-byte varint", delimited(cat(pbStr(1, "a"), pbTag(3, protowire.VarintType), []byte{0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x00})),
			"ERR proto: integer overflow"),
		c("negative length", delimited(cat(pbTag(1, protowire.BytesType), []byte{0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01})),
			"ERR proto: negative length found during unmarshaling"),
		c("negative length skipped", delimited(cat(pbTag(9, protowire.BytesType), []byte{0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01})),
			"ERR proto: negative length found during unmarshaling"),
		c("skipped field too long", delimited(cat(pbTag(9, protowire.BytesType), []byte{5, 1})), "ERR unexpected EOF"),
		c("skipped fixed64 too long", delimited(cat(pbStr(1, "a"), pbTag(9, protowire.Fixed64Type), []byte{5, 1})), "ERR unexpected EOF"),
		c("group not closed", delimited(cat(pbStr(1, "a"), pbRawTag(9, 3), pbVarint(1, 1))), "ERR unexpected EOF"),
		c("illegal wire type 6", delimited(cat(pbStr(1, "a"), pbRawTag(9, 6))), "ERR proto: illegal wireType 6"),
		c("illegal wire type 7 in a group", delimited(cat(pbStr(1, "a"), pbRawTag(9, 3), pbRawTag(9, 7))), "ERR proto: illegal wireType 7"),
		c("end group", delimited(cat(pbStr(1, "a"), pbRawTag(9, 4))), "ERR proto: MetricFamily: wiretype end group for non-group"),
		c("end group in a label", delimited(pbFamily("a", 1, cat(pbMsg(1, pbRawTag(3, 4)), pbGauge(1)))), "ERR proto: LabelPair: wiretype end group for non-group"),
		c("end group in a histogram", delimited(pbFamily("a", 4, pbMsg(7, pbRawTag(3, 4)))), "ERR proto: Histogram: wiretype end group for non-group"),
		c("illegal tag 0", delimited(cat(pbStr(1, "a"), []byte{0x02})), "ERR proto: MetricFamily: illegal tag 0 (wire type 2)"),
		c("illegal negative tag", delimited(cat(pbStr(1, "a"), pbRawTag(1<<31, 2))), "ERR proto: MetricFamily: illegal tag -2147483648 (wire type 17179869186)"),
		c("illegal tag in a span", delimited(pbFamily("a", 4, pbMsg(7, pbMsg(12, []byte{0x00})))), "ERR proto: BucketSpan: illegal tag 0 (wire type 0)"),
		c("illegal tag in an exemplar label", delimited(pbFamily("a", 0, pbMsg(3, pbMsg(2, pbMsg(1, []byte{0x07}))))), "ERR proto: LabelPair: illegal tag 0 (wire type 7)"),
		c("illegal tag in a timestamp", delimited(pbFamily("a", 2, pbMsg(4, pbMsg(4, []byte{0x00})))), "ERR proto: Timestamp: illegal tag 0"),
		c("wrong wire type name", delimited(pbVarint(1, 1)), "ERR proto: wrong wireType = 0 for field Name"),
		c("wrong wire type metric", delimited(cat(pbStr(1, "a"), pbVarint(4, 1))), "ERR proto: wrong wireType = 0 for field Metric"),
		c("wrong wire type 6 for a known field", delimited(cat(pbStr(1, "a"), pbRawTag(2, 6))), "ERR proto: wrong wireType = 6 for field Help"),
		c("wrong wire type deltas", delimited(pbFamily("a", 4, pbMsg(7, pbDouble(13, 1)))), "ERR proto: wrong wireType = 1 for field PositiveDelta"),
		c("wrong wire type counts", delimited(pbFamily("a", 4, pbMsg(7, pbVarint(11, 1)))), "ERR proto: wrong wireType = 0 for field NegativeCount"),
		c("wrong wire type schema", delimited(pbFamily("a", 4, pbMsg(7, pbDouble(5, 1)))), "ERR proto: wrong wireType = 1 for field Schema"),
		c("wrong wire type quantile", delimited(pbFamily("a", 2, pbMsg(4, pbMsg(3, pbVarint(1, 1))))), "ERR proto: wrong wireType = 0 for field Quantile"),
		c("wrong wire type timestamp ms", delimited(pbFamily("a", 1, pbDouble(6, 1))), "ERR proto: wrong wireType = 1 for field TimestampMs"),
		c("wrong wire type nanos", delimited(pbFamily("a", 0, pbMsg(3, pbMsg(3, pbDouble(2, 1))))), "ERR proto: wrong wireType = 1 for field Nanos"),
		c("wrong wire type label value", delimited(pbFamily("a", 1, pbMsg(1, pbVarint(2, 1)))), "ERR proto: wrong wireType = 0 for field Value"),
		c("invalid metric name, empty", delimited(gauge("")), "ERR invalid metric name: \n"),
		c("invalid metric name, not utf8", delimited(gauge("a\xff")), "ERR invalid metric name: a\\xff"),
		c("metric cut before the name check", delimited(cat(pbStr(1, ""), pbTag(4, protowire.BytesType), []byte{1, 0x12})), "ERR unexpected EOF"),
		c("empty family not checked", delimited(pbStr(1, "\xff")), ""),
		c("invalid help", delimited(cat(pbFamily("a", 1, pbGauge(1)), pbStr(2, "h\xffé"))), "ERR invalid help for metric \"a\": h\\xff\\xc3\\xa9"),
		c("unknown type", delimited(pbFamily("a", 6, pbGauge(1))), "ERR unknown metric type for metric \"a\": 6"),
		c("unknown type, negative", delimited(cat(pbStr(1, "a\u00a0"), pbVarint(3, 1<<64-1), pbMsg(4))), "ERR unknown metric type for metric \"a\\x5cu00a0\": -1"),
		c("invalid label name, empty", delimited(pbFamily("a", 1, pbLabel("", "v"))), "ERR invalid label name: \n"),
		c("invalid label name, not utf8", delimited(pbFamily("a", 1, pbLabel("\xc0", "v"))), "ERR invalid label name: \\xc0"),
		c("invalid label value", delimited(pbFamily("a", 1, pbLabel("n", "\xed\xa0\x80"))), "ERR invalid label value: \\xed\\xa0\\x80"),
		c("invalid label in a later metric", delimited(pbFamily("a", 1, pbGauge(1), pbLabel("n", "\xff"))), "SERIES a {__name__=a} 3ff0000000000000 -\nERR invalid label value"),
		c("spans require more", delimited(pbFamily("n", 4, pbNative(pbSpan(12, 0, 2), pbPacked(13, 1)))), "ERR histogram \"n\": positive side: spans require 2 buckets, have 1"),
		c("spans require fewer, negative side", delimited(pbFamily("n", 4, pbMsg(7, pbDouble(4, 1), pbSpan(9, 0, 1), pbDouble(11, 1), pbDouble(11, 1)))),
			"ERR histogram \"n\": negative side: spans require 1 buckets, have 2"),
		c("spans checked after a classic one", delimited(pbFamily("n", 4, pbMsg(7), pbNative(pbSpan(12, 0, 1)))), "SERIES n_bucket\\xffle\\xff+Inf {__name__=n_bucket,le=+Inf} 0000000000000000 -\nERR histogram"),
	}
}

func TestProtobufMatchesPrometheus(t *testing.T) {
	ferBin := exampleBin(t, "PROTODUMP_BIN", "ferrite-textparse", "protodump")
	hand := protoHandMade()
	rng := rand.New(rand.NewSource(20261205))
	const nRandom = 1500
	var random []ptCase
	for i := 0; i < nRandom; i++ {
		g := protoGen{rng: rng}
		body := g.body(1 + rng.Intn(4))
		random = append(random, ptCase{name: fmt.Sprintf("valid#%d", i), input: string(body)})
		random = append(random, ptCase{name: fmt.Sprintf("mutated#%d", i), input: string(g.mutate(body, 1+rng.Intn(3)))})
		small := g.body(1)
		random = append(random, ptCase{name: fmt.Sprintf("small#%d", i), input: string(g.mutate(small, 1+rng.Intn(4)))})
	}
	all := append(append([]ptCase{}, hand...), random...)
	pc := runParserCheck(t, ferBin, "promproto", "pb", all, 10)

	lines := map[string]int{}
	errs := map[string]int{}
	count := func(dump string, errSeen map[string]int) {
		countLines(lines, dump, func(l string) {
			if e := protoErrorKind(l); e != "" {
				errSeen[e]++
			}
		})
	}
	handErrs := map[string]int{}
	for i, c := range hand {
		if !pc.wantOK(i) {
			continue
		}
		if c.want == "" && pc.prom[i] != "-- classic\n-- native\n-- native+classic\n-- classic nhcb\n-- native nhcb\n-- native+classic nhcb\n" {
			pc.fail(i, "Prometheus gives entries for a case that should have none")
		}
		if pc.prom[i] != pc.fer[i] {
			pc.fail(i, "different dumps")
		}
		count(pc.prom[i], handErrs)
	}
	checkHandErrors(t, protoErrors, handErrs)
	acceptedValid := 0
	for i, c := range random {
		k := len(hand) + i
		count(pc.prom[k], errs)
		if strings.HasPrefix(c.name, "valid#") && !strings.Contains(pc.prom[k], "\nERR ") {
			acceptedValid++
		}
		if pc.prom[k] != pc.fer[k] {
			pc.fail(k, "different dumps")
		}
	}
	pc.finish()
	if lines["PANIC"] > 0 {
		t.Errorf("Prometheus panicked %d times", lines["PANIC"])
	}
	// The generator must mostly write what Prometheus accepts, and the
	// mutations must reach the errors.
	if acceptedValid < nRandom/2 {
		t.Errorf("Prometheus accepts only %d of %d generated bodies", acceptedValid, nRandom)
	}
	checkLineKinds(t, lines, []string{"HELP", "UNIT", "TYPE", "SERIES", "HISTOGRAM", "ERR"}, 1000, "")
	t.Logf("%d hand-made and %d random bodies, each read 6 ways; Prometheus accepted %d of %d unmutated; lines %v; random errors: %s",
		len(hand), len(random), acceptedValid, nRandom, lines, errorCounts(errs))
}

// protoGen writes random bodies: MetricFamily messages of every type, with
// labels (odd names, repeated names, UTF-8 and not), timestamps, exemplars,
// start timestamps, classic buckets and native parts (integer and float,
// spans of every shape, empty buckets, the odd inconsistent layout), and
// the odd invalid name, help or type.
type protoGen struct {
	rng *rand.Rand
}

func (g *protoGen) chance(p float64) bool { return g.rng.Float64() < p }

func (g *protoGen) pick(s ...string) string { return s[g.rng.Intn(len(s))] }

func (g *protoGen) pickF(f ...float64) float64 { return f[g.rng.Intn(len(f))] }

func (g *protoGen) body(families int) []byte {
	var b []byte
	for i := 0; i < families; i++ {
		m, err := proto.MarshalOptions{Deterministic: true}.Marshal(g.family())
		if err != nil {
			panic(err)
		}
		b = protowire.AppendVarint(b, uint64(len(m)))
		b = append(b, m...)
	}
	return b
}

func (g *protoGen) text() string {
	var b strings.Builder
	for i := g.rng.Intn(8); i > 0; i-- {
		switch g.rng.Intn(8) {
		case 0:
			b.WriteString(g.pick("é", "日本", "🙂", " ", "\n", "\"", "\\", "\x00", "{", "="))
		default:
			b.WriteByte("abcxyz_0189"[g.rng.Intn(11)])
		}
	}
	return b.String()
}

func (g *protoGen) name() string {
	switch {
	case g.chance(0.005):
		return g.pick("", "a\xff", "\xc0")
	case g.chance(0.1):
		return g.pick("a.b", "ü", "x y", "with-dash") + g.text()
	}
	var b strings.Builder
	b.WriteByte("abcdefghijklmnopqrstuvwxyz_"[g.rng.Intn(27)])
	for i := g.rng.Intn(8); i > 0; i-- {
		b.WriteByte("abcdefghijklmnopqrstuvwxyz_0123456789:"[g.rng.Intn(38)])
	}
	return b.String()
}

func (g *protoGen) float() float64 {
	switch g.rng.Intn(8) {
	case 0:
		return g.pickF(0, math.Copysign(0, -1), 1, -1, math.NaN(), math.Inf(1), math.Inf(-1), math.MaxFloat64, 5e-324)
	case 1:
		return math.Float64frombits(g.rng.Uint64())
	case 2:
		return float64(g.rng.Intn(100))
	default:
		return g.rng.NormFloat64() * math.Pow(10, float64(g.rng.Intn(20)-10))
	}
}

func (g *protoGen) timestamp() *timestamppb.Timestamp {
	return &timestamppb.Timestamp{Seconds: g.rng.Int63n(2e9) - 1e9, Nanos: g.rng.Int31n(1e9)}
}

func (g *protoGen) labels(many bool) []*dto.LabelPair {
	var ls []*dto.LabelPair
	n := g.rng.Intn(4)
	if many {
		// More than Prometheus' stable sort handles: distinct names.
		for i := 0; i < 13; i++ {
			ls = append(ls, &dto.LabelPair{Name: proto.String(fmt.Sprintf("l%02d", g.rng.Intn(100)*13+i)), Value: proto.String(g.text())})
		}
		g.rng.Shuffle(len(ls), func(i, j int) { ls[i], ls[j] = ls[j], ls[i] })
		return ls
	}
	for i := 0; i < n; i++ {
		l := &dto.LabelPair{
			Name:  proto.String(g.pick("a", "b", "code", "job", "instance", "le", "quantile", "__name__", "x.y", "ü", "a")),
			Value: proto.String(g.text()),
		}
		switch {
		case g.chance(0.01):
			l.Name = proto.String(g.pick("", "\xff"))
		case g.chance(0.01):
			l.Name = nil
		case g.chance(0.01):
			l.Value = nil
		case g.chance(0.01):
			l.Value = proto.String("bad\xed\xa0\x80")
		}
		ls = append(ls, l)
	}
	return ls
}

func (g *protoGen) exemplar() *dto.Exemplar {
	e := &dto.Exemplar{Label: []*dto.LabelPair{{Name: proto.String("trace_id"), Value: proto.String(g.text())}}, Value: proto.Float64(g.float())}
	if g.chance(0.6) {
		e.Timestamp = g.timestamp()
	}
	return e
}

func (g *protoGen) family() *dto.MetricFamily {
	typ := dto.MetricType(g.rng.Intn(6))
	if g.chance(0.005) {
		typ = dto.MetricType(g.pick("6", "9")[0] - '0')
	}
	f := &dto.MetricFamily{Name: proto.String(g.name()), Type: typ.Enum()}
	if g.chance(0.8) {
		f.Help = proto.String(g.text())
		if g.chance(0.005) {
			f.Help = proto.String("bad\xff")
		}
	}
	if g.chance(0.25) {
		f.Unit = proto.String(g.pick("seconds", "bytes", "", "ratio"))
	}
	if g.chance(0.05) {
		f.Type = nil
	}
	n := g.rng.Intn(5)
	for i := 0; i < n; i++ {
		f.Metric = append(f.Metric, g.metric(typ))
	}
	return f
}

func (g *protoGen) metric(typ dto.MetricType) *dto.Metric {
	m := &dto.Metric{Label: g.labels(g.chance(0.05))}
	if g.chance(0.3) {
		switch g.rng.Intn(4) {
		case 0:
			m.TimestampMs = proto.Int64(0)
		case 1:
			m.TimestampMs = proto.Int64(g.rng.Int63() - g.rng.Int63())
		default:
			m.TimestampMs = proto.Int64(1_700_000_000_000 + g.rng.Int63n(1e9))
		}
	}
	if g.chance(0.05) {
		typ = dto.MetricType(g.rng.Intn(6)) // the value of another type
	}
	switch typ {
	case dto.MetricType_COUNTER:
		c := &dto.Counter{Value: proto.Float64(g.float())}
		if g.chance(0.2) {
			c.Exemplar = g.exemplar()
		}
		if g.chance(0.1) {
			c.CreatedTimestamp = g.timestamp()
		}
		m.Counter = c
	case dto.MetricType_GAUGE:
		m.Gauge = &dto.Gauge{Value: proto.Float64(g.float())}
	case dto.MetricType_UNTYPED:
		if g.chance(0.8) {
			m.Untyped = &dto.Untyped{Value: proto.Float64(g.float())}
		}
	case dto.MetricType_SUMMARY:
		s := &dto.Summary{SampleCount: proto.Uint64(uint64(g.rng.Intn(1000))), SampleSum: proto.Float64(g.float())}
		for i := g.rng.Intn(4); i > 0; i-- {
			s.Quantile = append(s.Quantile, &dto.Quantile{Quantile: proto.Float64(g.pickF(0.5, 0.9, 0.99, 0, 1, math.NaN(), g.float())), Value: proto.Float64(g.float())})
		}
		if g.chance(0.1) {
			s.CreatedTimestamp = g.timestamp()
		}
		m.Summary = s
	default:
		m.Histogram = g.histogram()
	}
	return m
}

func (g *protoGen) histogram() *dto.Histogram {
	h := &dto.Histogram{}
	if g.chance(0.8) {
		h.SampleCount = proto.Uint64(uint64(g.rng.Intn(1000)))
	}
	if g.chance(0.2) {
		h.SampleCountFloat = proto.Float64(g.pickF(0, 2.5, -1, math.NaN(), g.float()))
	}
	if g.chance(0.9) {
		h.SampleSum = proto.Float64(g.float())
	}
	// Classic buckets.
	upper := -2.0
	var cum uint64
	for i := g.rng.Intn(5); i > 0; i-- {
		upper += g.pickF(0.5, 1, 1e-7, 1e6, 0.1)
		cum += uint64(g.rng.Intn(5))
		b := &dto.Bucket{UpperBound: proto.Float64(upper), CumulativeCount: proto.Uint64(cum)}
		if g.chance(0.05) {
			b.UpperBound = proto.Float64(math.Inf(1))
		}
		if g.chance(0.1) {
			b.CumulativeCountFloat = proto.Float64(float64(cum) + 0.5)
		}
		if g.chance(0.2) {
			b.Exemplar = g.exemplar()
		}
		h.Bucket = append(h.Bucket, b)
	}
	if g.chance(0.3) {
		h.Bucket = append(h.Bucket, &dto.Bucket{UpperBound: proto.Float64(math.Inf(1)), CumulativeCount: proto.Uint64(cum + 1)})
	}
	if g.chance(0.1) {
		h.CreatedTimestamp = g.timestamp()
	}
	if g.chance(0.45) {
		return h // classic only
	}
	// Native parts.
	h.Schema = proto.Int32(int32(g.rng.Intn(13) - 4))
	if g.chance(0.05) {
		h.Schema = proto.Int32(int32(g.pickF(9, 20, 52, -5, -9, -53, 100, -100)))
	}
	if g.chance(0.6) {
		h.ZeroThreshold = proto.Float64(g.pickF(1e-128, 0.001, 2.938735877055719e-39, math.NaN(), -1, 1))
	}
	float := g.chance(0.3)
	if float {
		h.ZeroCountFloat = proto.Float64(g.pickF(0, 1, 2.5))
		if g.chance(0.5) {
			h.SampleCountFloat = proto.Float64(g.pickF(0, 10, 3.5))
		}
	} else if g.chance(0.5) {
		h.ZeroCount = proto.Uint64(uint64(g.rng.Intn(3)))
	}
	side := func() ([]*dto.BucketSpan, []int64, []float64) {
		var spans []*dto.BucketSpan
		need := 0
		for i := g.rng.Intn(4); i > 0; i-- {
			offset := int32(g.rng.Intn(11) - 5)
			if len(spans) > 0 {
				offset = int32(g.pickF(0, 1, 2, 5, 1, 1))
				if g.chance(0.03) {
					offset = -1
				}
			}
			length := uint32(g.rng.Intn(4))
			if g.chance(0.1) {
				length = 0
			}
			need += int(length)
			spans = append(spans, &dto.BucketSpan{Offset: proto.Int32(offset), Length: proto.Uint32(length)})
		}
		if g.chance(0.05) {
			need += g.rng.Intn(3) - 1
		}
		var deltas []int64
		var counts []float64
		prev := int64(0)
		for i := 0; i < need; i++ {
			abs := int64(g.rng.Intn(4))
			if g.chance(0.3) {
				abs = 0
			}
			deltas = append(deltas, abs-prev)
			prev = abs
			counts = append(counts, float64(abs)*g.pickF(1, 0.5, 1))
		}
		return spans, deltas, counts
	}
	var pd, nd []int64
	var pc, nc []float64
	h.PositiveSpan, pd, pc = side()
	if g.chance(0.4) {
		h.NegativeSpan, nd, nc = side()
	}
	if float {
		h.PositiveCount, h.NegativeCount = pc, nc
	} else {
		h.PositiveDelta, h.NegativeDelta = pd, nd
	}
	if g.chance(0.05) {
		h.PositiveSpan = append(h.PositiveSpan, &dto.BucketSpan{Offset: proto.Int32(0), Length: proto.Uint32(0)})
	}
	for i := g.rng.Intn(3); i > 0 && g.chance(0.3); i-- {
		h.Exemplars = append(h.Exemplars, g.exemplar())
	}
	return h
}

// mutate edits k random bytes of b: flips, insertions, deletions, a cut,
// a repeated run.
func (g *protoGen) mutate(b []byte, k int) []byte {
	b = append([]byte{}, b...)
	for ; k > 0; k-- {
		if len(b) == 0 {
			return append(b, byte(g.rng.Intn(256)))
		}
		i := g.rng.Intn(len(b))
		switch g.rng.Intn(6) {
		case 0:
			b[i] ^= 1 << g.rng.Intn(8)
		case 1:
			b[i] = []byte{0x00, 0x01, 0x07, 0x08, 0x0a, 0x12, 0x1a, 0x22, 0x7f, 0x80, 0xff, byte(g.rng.Intn(256))}[g.rng.Intn(12)]
		case 2:
			b = append(b[:i], append([]byte{byte(g.rng.Intn(256))}, b[i:]...)...)
		case 3:
			b = append(b[:i], b[i+1:]...)
		case 4:
			b = b[:i]
		default:
			j := i + g.rng.Intn(len(b)-i)
			b = append(b[:j], append(append([]byte{}, b[i:j]...), b[j:]...)...)
		}
	}
	return b
}
