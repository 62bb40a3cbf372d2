package interop_test

// Ferrite's OpenMetrics scrape parser (crates/textparse, omtext) against
// Prometheus' own (textparse.New for an application/openmetrics-text body
// with the scrape loop's default options, i.e. NewOpenMetricsParser): the
// same inputs through `omtextdump` (Rust, from OMTEXTDUMP_BIN) and
// `promomtext` (Go, built here) must give the same entries — HELP, TYPE
// and UNIT with their bytes, every series' raw bytes, sorted labels, value
// bits and timestamp, every exemplar's labels, value bits and timestamp —
// up to the same first error, with the same message.
//
// One difference is deliberate (see crates/textparse/src/omtext.rs), as
// for the text format: a name given as a quoted string that is not UTF-8
// is handed out by Prometheus, which rejects the series later when it
// validates it; Ferrite's `labels()` reports it. It is checked to still be
// a difference, and recognised where the random cases hit it.

import (
	"fmt"
	"math/rand"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// omTextErrors are the messages (their start) Prometheus' OpenMetrics
// parser can give; the hand-made cases must hit each one.
var omTextErrors = []string{
	"data does not end with # EOF",
	"unexpected data after # EOF",
	"expected a valid start token",
	"expected metric name after HELP",
	"expected metric name after TYPE",
	"expected metric name after UNIT",
	"expected text in HELP",
	"expected text in TYPE",
	"expected text in UNIT",
	"invalid metric type",
	"help text",
	"unit ",
	"expected label name",
	"metric name already set",
	"expected equal",
	"expected label value",
	"invalid UTF-8 label value",
	"expected comma or brace close",
	"metric name not set",
	"expected value after metric",
	"expected value after exemplar labels",
	"unsupported character in float",
	"strconv.ParseFloat",
	"invalid timestamp",
	"invalid exemplar timestamp",
	"expected next entry after timestamp",
	"expected next entry after exemplar timestamp",
	"expected timestamp or comment",
}

func omTextHandMade() []ptCase {
	c := func(name, input, want string) ptCase { return ptCase{name, input, want} }
	return []ptCase{
		// Valid expositions and their quirks.
		c("only eof", "# EOF\n", ""),
		c("eof without newline", "# EOF", ""),
		c("minimal", "a 1\n# EOF\n", "SERIES a {__name__=a} 3ff0000000000000 -"),
		c("metadata", "# HELP a Some help.\n# TYPE a counter\n# UNIT a_seconds seconds\na_total 1\n# EOF\n", "UNIT a_seconds seconds"),
		c("all types", "# TYPE a counter\n# TYPE a gauge\n# TYPE a histogram\n# TYPE a gaugehistogram\n# TYPE a summary\n# TYPE a info\n# TYPE a stateset\n# TYPE a unknown\n# EOF\n", "TYPE a stateset"),
		c("help escapes", "# HELP a x\\\\y\\nz\\t\\\"w\\\n# EOF\n", "HELP a x\\x5cy\\x0az\\x5ct\\x22w\\x5c\n"),
		c("help empty", "# HELP a \n# EOF\n", "HELP a \n"),
		c("help keeps blanks", "# HELP a  two  \n# EOF\n", "HELP a \\x20two\\x20\\x20"),
		c("help utf8", "# HELP a é 日本 🙂\n# EOF\n", ""),
		c("help with NUL", "# HELP a x\x00y\n# EOF\n", "x\\x00y"),
		c("help NULs after the space", "# HELP a \x00\x00x\n# EOF\n", "HELP a \\x00\\x00x"),
		c("NULs after a metadata line are its text", "# HELP a x\n\x00b 1\n# EOF\n", "HELP a x\\x0a\n"),
		c("NULs after a metadata line, several", "# TYPE a gauge\n\x00\x00a 1\n# EOF\n", "ERR invalid metric type \"gauge\\n\\x00\""),
		c("quoted metadata names", "# HELP \"a.b\" x\n# TYPE \"a\\\"b\" gauge\n# UNIT \"a b_s\" s\n# EOF\n", "TYPE a\\x5c\\x22b gauge"),
		c("quoted metadata name with newline", "# HELP \"a\nb\" x\n# EOF\n", "HELP a\\x0ab x"),
		c("empty quoted metadata name", "# HELP \"\" x\n# EOF\n", "HELP  x"),
		c("metadata name escapes kept", "# TYPE \"a\\nb\" gauge\n# EOF\n", "TYPE a\\x5cnb gauge"),
		c("keyword with NULs", "# HE\x00LP a x\n# TYPE\x00\x00 b gauge\n# EOF\n", "HELP a x"),
		c("keyword NUL after its space", "# UNIT \x00a_s s\n# EOF\n", "UNIT a_s s"),
		c("unit empty", "# UNIT a \n# EOF\n", "UNIT a \n"),
		c("unit quoted name", "# UNIT \"a.b_s\" s\n# EOF\n", "UNIT a.b_s s"),
		c("eof NULs", "a 1\n# EOF\x00\x00", "SERIES a"),
		c("eof newline NULs", "a 1\n# EOF\n\x00", "SERIES a"),
		c("eof NUL then newline", "a 1\n# E\x00OF\x00\n", "SERIES a"),
		c("labels", "a{b=\"c\",d=\"e\"} 1\n# EOF\n", "{__name__=a,b=c,d=e}"),
		c("labels unsorted", "a{z=\"1\",b=\"2\",_x=\"3\",A=\"4\"} 1\n# EOF\n", ""),
		c("trailing comma", "a{b=\"1\",} 1\n# EOF\n", "{__name__=a,b=1}"),
		c("empty braces", "a{} 1\n# EOF\n", "SERIES a\\x7b\\x7d {__name__=a}"),
		c("label value escapes", "a{b=\"\\\\ \\\" \\n \\t \\x \\\\n\"} 1\n# EOF\n", ""),
		c("label value utf8", "a{b=\"é 日本 🙂\"} 1\n# EOF\n", ""),
		c("NUL in label value", "a{b=\"x\x00y\"} 1\n# EOF\n", "b=x\\x00y"),
		c("NULs at the start of a label value", "a{b=\"\x00\x00x\"} 1\n# EOF\n", ""),
		c("NUL after backslash in label value", "a{b=\"\\\x00n\"} 1\n# EOF\n", ""),
		c("NUL after backslash before quote", "a{b=\"\\\x00\"\"} 1\n# EOF\n", ""),
		c("NUL after label value", "a{b=\"x\"\x00} 1\n# EOF\n", "b=x\\x22"),
		c("NULs after label value", "a{b=\"x\"\x00\x00,c=\"y\"} 1\n# EOF\n", "b=x\\x22\\x00"),
		c("NUL after empty label value", "a{b=\"\"\x00} 1\n# EOF\n", "b=\\x22"),
		c("quoted metric name", "{\"a.b\"} 1\n{\"c d\",e=\"f\"} 2\n{e=\"f\",\"g\"} 3\n# EOF\n", "__name__=c\\x20d"),
		c("quoted metric name escapes", "{\"a\\\"b\\\\c\\nd\\q\"} 1\n# EOF\n", ""),
		c("quoted metric name with newline", "{\"a\nb\"} 1\n# EOF\n", ""),
		c("quoted metric name, trailing comma", "{\"a\",} 1\n# EOF\n", ""),
		c("quoted label names", "a{\"b.c\"=\"1\",\"d e\"=\"2\",\"\"=\"3\"} 1\n# EOF\n", ""),
		c("quoted label name escapes", "a{\"b\\\"c\"=\"1\"} 1\n# EOF\n", ""),
		c("quoted label name with newline", "a{\"b\nc\"=\"1\"} 1\n# EOF\n", ""),
		c("empty quoted metric name", "{\"\"} 1\n# EOF\n", "{__name__=}"),
		c("duplicate labels", "a{b=\"2\",b=\"1\",b=\"1\"} 1\n# EOF\n", "{__name__=a,b=1,b=1,b=2}"),
		c("__name__ label", "a{__name__=\"b\"} 1\n# EOF\n", ""),
		c("values", "a 1\na -0\na .5\na 5.\na 1E5\na +1e-5\na 1e-400\na 1.7976931348623157e308\na 4.9e-324\na 0001.000\n# EOF\n", ""),
		c("special values", "a NaN\na nan\na +Inf\na -Inf\na inf\na Infinity\na -infinity\n# EOF\n", "7ff8000000000001"),
		c("value with odd bytes", "a 1\x01\n# EOF\n", "ERR strconv.ParseFloat"),
		c("value with tab", "a 1\t2\n# EOF\n", "ERR strconv.ParseFloat: parsing \"1\\t2\""),
		c("timestamps", "a 1 0\na 1 1700000000\na 1 1700000000.123\na 1 -1.5\na 1 1e3\na 1 .001\na 1 0.0009\na 1 -0.0009\n# EOF\n", "1700000000123"),
		c("timestamp overflows ms", "a 1 1e17\na 1 -1e300\n# EOF\n", "-9223372036854775808"),
		c("created series kept", "# TYPE c counter\nc_total 1\nc_created 1700000000\n# EOF\n", "SERIES c_created"),
		c("le normalised", "# TYPE h histogram\nh_bucket{le=\"1\"} 1\nh_bucket{le=\"0.10\"} 1\nh_bucket{le=\"1e6\"} 1\nh_bucket{le=\"+inf\"} 1\nh_bucket{le=\"0x1p-3\"} 1\nh_bucket{le=\"1_0\"} 1\nh_bucket{le=\"x\"} 1\nh_bucket{le=\"1e999\"} 1\nh_bucket{le=\"-0\"} 1\nh_bucket{le=\"NaN\"} 1\nh_bucket{quantile=\"1\"} 1\n# EOF\n", "le=1.0}"),
		c("quantile normalised", "# TYPE s summary\ns{quantile=\"0.5000\"} 1\ns{quantile=\"1e-7\"} 1\ns{le=\"1\"} 1\n# EOF\n", "quantile=0.5}"),
		c("gaugehistogram not normalised", "# TYPE g gaugehistogram\ng_bucket{le=\"1\"} 1\n# EOF\n", "le=1}"),
		c("normalised after the last TYPE, whatever it names", "# TYPE x histogram\nother{le=\"1\"} 1\n# TYPE y gauge\nother{le=\"1\"} 1\n# EOF\n", "le=1.0}"),
		c("normalised name after unescaping", "# TYPE h histogram\nh{\"l\\e\"=\"1\"} 1\n# EOF\n", ""),
		c("metric name chars", "a:b:c 1\n:x 1\n_ 1\na0_Z9 1\n# EOF\n", ""),
		c("label value, comma and brace", "a{b=\",\",c=\"}\",d=\"{\"} 1\n# EOF\n", ""),
		c("exemplar", "a 1 # {b=\"c\"} 2 3\n# EOF\n", "EXEMPLAR {b=c} 4000000000000000 3000"),
		c("exemplar after timestamp", "a 1 5 # {b=\"c\",d=\"e\"} 2\n# EOF\n", "EXEMPLAR {b=c,d=e} 4000000000000000 -"),
		c("exemplar empty labels", "a 1 # {} NaN\n# EOF\n", "EXEMPLAR {} 7ff8000000000001 -"),
		c("exemplar escapes kept", "a 1 # {b=\"x\\\"y\\\\z\\n\",\"q\\\"n\"=\"1\"} 1\n# EOF\n", "EXEMPLAR {b=x\\x5c\\x22y\\x5c\\x5cz\\x5cn,q\\x5c\\x22n=1}"),
		c("exemplar trailing comma", "a 1 # {b=\"c\",} 1\n# EOF\n", ""),
		c("exemplar repeated name", "a 1 # {b=\"2\",b=\"1\"} 1\n# EOF\n", "EXEMPLAR {b=1,b=2}"),
		c("exemplar timestamp forms", "a 1 # {} 1 1.5\na 1 # {} 1 -2\na 1 # {} 1 1e17\n# EOF\n", ""),
		c("exemplar on histogram bucket", "# TYPE h histogram\nh_bucket{le=\"1\"} 1 # {trace_id=\"abc\"} 0.5 1700000000.5\n# EOF\n", "EXEMPLAR {trace_id=abc}"),
		c("exemplar label value utf8", "a 1 # {b=\"é\"} 1\n# EOF\n", ""),
		c("exemplar label value after brace", "a 1 # {}\"x\" 1\n# EOF\n", "ERR expected value after exemplar labels"),
		c("hash timestamp", "a 1 #\n# EOF\n", "ERR strconv.ParseFloat: parsing \"#\""),
		c("hash word timestamp", "a 1 #x\n# EOF\n", "ERR strconv.ParseFloat"),
		c("sample handed out before a trailing blank", "a 1 \n# EOF\n", "SERIES a {__name__=a} 3ff0000000000000 -\nERR expected a valid start token, got \"\\n#\" (\"LINEBREAK\")"),
		c("sample handed out before two blanks", "a 1  2\n# EOF\n", "ERR expected a valid start token, got \" 2\\n\" (\"TIMESTAMP\")"),
		c("sample handed out before a NUL", "a 1\x00\n# EOF\n", "SERIES a"),
		c("sample handed out before a hash", "a 1 # x\n# EOF\n", "ERR expected a valid start token, got \"x\""),
		c("sample handed out before hash brace-less", "a 1 # \n# EOF\n", "SERIES a"),
		c("sample handed out, then the end", "a 1 ", "ERR data does not end with # EOF"),
		c("crlf", "a 1\r\n# EOF\n", "ERR strconv.ParseFloat"),

		// Every error.
		c("empty", "", "ERR data does not end with # EOF"),
		c("no eof", "a 1\n", "ERR data does not end with # EOF"),
		c("no eof, no newline", "a 1", "ERR data does not end with # EOF"),
		c("no eof after timestamp", "a 1 2\n", "ERR data does not end with # EOF"),
		c("no eof after exemplar", "a 1 # {} 1\n", "ERR data does not end with # EOF"),
		c("eof missing after value at the end", "a 1 2 # {} 3", "ERR data does not end with # EOF"),
		c("exemplar value at the end", "a 1 # {} 3", "ERR data does not end with # EOF"),
		c("data after eof", "# EOF\na 1\n", "ERR unexpected data after # EOF"),
		c("blank line after eof", "a 1\n# EOF\n\n", "ERR unexpected data after # EOF"),
		c("eof with trailing blank", "# EOF \n", "ERR unexpected data after # EOF"),
		c("eof word longer", "# EOFx\n", "ERR unexpected data after # EOF"),
		c("blank line", "\na 1\n# EOF\n", "ERR expected a valid start token, got \"\\n\" (\"INVALID\") while parsing: \"\\n\""),
		c("blank before name", " a 1\n# EOF\n", "ERR expected a valid start token"),
		c("comment", "# a comment\n# EOF\n", "ERR expected a valid start token, got \"# a\" (\"INVALID\")"),
		c("hash without blank", "#HELP a b\n# EOF\n", "ERR expected a valid start token"),
		c("hash NUL", "#\x00 HELP a b\n# EOF\n", "ERR expected a valid start token"),
		c("hash blank NUL", "# \x00HELP a b\n# EOF\n", "ERR expected a valid start token"),
		c("lowercase help", "# help a b\n# EOF\n", "ERR expected a valid start token"),
		c("help without blank", "# HELP\n# EOF\n", "ERR expected a valid start token"),
		c("two blanks after hash", "#  HELP a b\n# EOF\n", "ERR expected a valid start token"),
		c("invalid start", "1a 1\n# EOF\n", "ERR expected a valid start token"),
		c("invalid start byte", "\xff 1\n# EOF\n", "ERR expected a valid start token"),
		c("closing brace at start", "} 1\n# EOF\n", "ERR expected a valid start token"),
		c("NUL at line start", "a 1\n\x00b 1\n# EOF\n", "ERR expected a valid start token"),
		c("help without name", "# HELP \n# EOF\n", "ERR expected metric name after HELP"),
		c("help name digit", "# HELP 1a x\n# EOF\n", "ERR expected metric name after HELP"),
		c("help name NUL", "# HELP \x00a x\n# EOF\n", ""),
		c("type without name", "# TYPE  counter\n# EOF\n", "ERR expected metric name after TYPE"),
		c("type name unterminated", "# TYPE \"a b\n", "ERR expected metric name after TYPE"),
		c("type name NUL in quotes", "# TYPE \"a\x00b\" gauge\n# EOF\n", "ERR expected metric name after TYPE"),
		c("type name backslash newline", "# TYPE \"a\\\nb\" gauge\n# EOF\n", "ERR expected metric name after TYPE"),
		c("unit without name", "# UNIT {a} s\n# EOF\n", "ERR expected metric name after UNIT"),
		c("help without text", "# HELP a\n# EOF\n", "ERR expected text in HELP"),
		c("help at the end", "# HELP a x", "ERR expected text in HELP"),
		c("help tab after name", "# HELP a\tx\n# EOF\n", "ERR expected text in HELP"),
		c("help NUL after name", "# HELP a\x00 x\n# EOF\n", "ERR expected text in HELP"),
		c("type without text", "# TYPE a\n# EOF\n", "ERR expected text in TYPE"),
		c("type name then quote", "# TYPE \"a\"b gauge\n# EOF\n", "ERR expected text in TYPE"),
		c("unit without text", "# UNIT a_s", "ERR expected text in UNIT"),
		c("bad type", "# TYPE a foo\n# EOF\n", "ERR invalid metric type \"foo\""),
		c("untyped is not a type", "# TYPE a untyped\n# EOF\n", "ERR invalid metric type \"untyped\""),
		c("type trailing blank", "# TYPE a counter \n# EOF\n", "ERR invalid metric type \"counter \""),
		c("type two blanks", "# TYPE a  counter\n# EOF\n", "ERR invalid metric type \" counter\""),
		c("type empty", "# TYPE a \n# EOF\n", "ERR invalid metric type \"\""),
		c("type uppercase", "# TYPE a Counter\n# EOF\n", "ERR invalid metric type"),
		c("type NUL in word", "# TYPE a coun\x00ter\n# EOF\n", "ERR invalid metric type \"coun\\x00ter\""),
		c("help not utf8", "# HELP a \xff\n# EOF\n", "ERR help text \"\\xff\" is not a valid utf8 string"),
		c("help surrogate", "# HELP a \xed\xa0\x80\n# EOF\n", "ERR help text"),
		c("unit not a suffix", "# UNIT a_seconds bytes\n# EOF\n", "ERR unit \"bytes\" not a suffix of metric \"a_seconds\""),
		c("unit without underscore", "# UNIT aseconds seconds\n# EOF\n", "ERR unit \"seconds\" not a suffix"),
		c("unit is the name", "# UNIT seconds seconds\n# EOF\n", "ERR unit \"seconds\" not a suffix"),
		c("unit is the name after underscore", "# UNIT _s s\n# EOF\n", "UNIT _s s"),
		c("unit with blank", "# UNIT a_s  s\n# EOF\n", "ERR unit \" s\" not a suffix"),
		c("unit quoted name", "# UNIT \"a.s\" s\n# EOF\n", "ERR unit \"s\" not a suffix of metric \"a.s\""),
		c("brace then junk", "a{1=\"b\"} 1\n# EOF\n", "ERR expected label name"),
		c("double comma", "a{b=\"c\",,} 1\n# EOF\n", "ERR expected label name"),
		c("leading comma", "a{,b=\"c\"} 1\n# EOF\n", "ERR expected label name"),
		c("blank in braces", "a{ b=\"c\"} 1\n# EOF\n", "ERR expected label name"),
		c("unterminated braces", "a{b=\"c\",", "ERR expected label name"),
		c("unterminated quoted name", "{\"a} 1\n", "ERR expected label name"),
		c("NUL in quoted name", "{\"a\x00b\"} 1\n# EOF\n", "ERR expected label name"),
		c("exemplar quoted name alone", "a 1 # {\"b\"} 1\n# EOF\n", "ERR expected label name, got \"} \" (\"BCLOSE\")"),
		c("exemplar quoted name then comma", "a 1 # {\"b\",c=\"d\"} 1\n# EOF\n", "ERR expected label name"),
		c("exemplar bad label name", "a 1 # {1=\"d\"} 1\n# EOF\n", "ERR expected label name"),
		c("exemplar quoted name with newline", "a 1 # {\"b\nc\"=\"d\"} 1\n# EOF\n", "ERR expected label name"),
		c("name twice", "a{\"b\"} 1\n# EOF\n", "ERR metric name already set while parsing: \"a{\\\"b\\\"}\""),
		c("quoted name twice", "{\"a\",\"b\"} 1\n# EOF\n", "ERR metric name already set"),
		c("label name dash", "a{b-c=\"d\"} 1\n# EOF\n", "ERR expected equal"),
		c("label name colon", "a{b:c=\"d\"} 1\n# EOF\n", "ERR expected equal"),
		c("label without value", "a{b} 1\n# EOF\n", "ERR expected equal"),
		c("label, then comma", "a{b,c=\"d\"} 1\n# EOF\n", "ERR expected equal"),
		c("blank before equal", "a{b =\"c\"} 1\n# EOF\n", "ERR expected equal"),
		c("exemplar label without value", "a 1 # {b} 1\n# EOF\n", "ERR expected equal"),
		c("unterminated label value", "a{b=\"c} 1\n# EOF\n", "ERR expected label value"),
		c("unterminated label value at the end", "a{b=\"c", "ERR expected label value"),
		c("backslash at the end", "a{b=\"c\\", "ERR expected label value"),
		c("newline in label value", "a{b=\"c\nd\"} 1\n# EOF\n", "ERR expected label value"),
		c("backslash newline in value", "a{b=\"c\\\nd\"} 1\n# EOF\n", "ERR expected label value"),
		c("unquoted label value", "a{b=c} 1\n# EOF\n", "ERR expected label value"),
		c("blank after equal", "a{b= \"c\"} 1\n# EOF\n", "ERR expected label value"),
		c("NUL right after equal", "a{b=\x00\"c\"} 1\n# EOF\n", "ERR expected label value"),
		c("equal twice", "a{b==\"c\"} 1\n# EOF\n", "ERR expected label value"),
		c("exemplar NUL in value", "a 1 # {b=\"x\x00\"} 1\n# EOF\n", "ERR expected label value"),
		c("exemplar newline in value", "a 1 # {b=\"x\ny\"} 1\n# EOF\n", "ERR expected label value"),
		c("exemplar blank after equal", "a 1 # {b= 1}\n# EOF\n", "ERR expected label value, got \" 1}\\n\" (\"VALUE\")"),
		c("label value not utf8", "a{b=\"\xff\"} 1\n# EOF\n", "ERR invalid UTF-8 label value: \"\\\"\\xff\\\"\""),
		c("label value overlong", "a{b=\"\xc0\xaf\"} 1\n# EOF\n", "ERR invalid UTF-8 label value"),
		c("label value not utf8, NUL after", "a{b=\"\xff\"\x00} 1\n# EOF\n", "ERR invalid UTF-8 label value: \"\\\"\\xff\\\"\\x00\""),
		c("exemplar label value not utf8", "a 1 # {b=\"\xff\"} 1\n# EOF\n", "ERR invalid UTF-8 label value"),
		c("no commas", "a{b=\"1\" c=\"2\"} 1\n# EOF\n", "ERR expected comma or brace close, got \" \""),
		c("no comma, no blank", "a{b=\"1\"c=\"2\"} 1\n# EOF\n", "ERR expected comma or brace close"),
		c("exemplar no commas", "a 1 # {b=\"1\" c=\"2\"} 1\n# EOF\n", "ERR expected comma or brace close"),
		c("no name", "{b=\"c\"} 1\n# EOF\n", "ERR metric name not set while parsing: \"{b=\\\"c\\\"} 1\""),
		c("empty braces, no name", "{} 1\n# EOF\n", "ERR metric name not set"),
		c("no name, no value", "{}\n# EOF\n", "ERR metric name not set"),
		c("missing value", "a\n# EOF\n", "ERR expected value after metric, got \"\\n\" (\"INVALID\") while parsing: \"a\\n\""),
		c("missing value at the end", "a", "ERR expected value after metric, got \"a\" (\"EOF\")"),
		c("missing value after labels", "a{b=\"c\"}\n# EOF\n", "ERR expected value after metric"),
		c("missing value, blank", "a \n# EOF\n", "ERR expected value after metric"),
		c("two blanks before value", "a  1\n# EOF\n", "ERR expected value after metric"),
		c("tab before value", "a\t1\n# EOF\n", "ERR expected value after metric"),
		c("braces twice", "a{}{} 1\n# EOF\n", "ERR expected value after metric"),
		c("NUL after name", "a\x00 1\n# EOF\n", "ERR expected value after metric"),
		c("NUL after blank", "a \x001\n# EOF\n", "ERR expected value after metric"),
		c("exemplar without value", "a 1 # {b=\"c\"}\n# EOF\n", "ERR expected value after exemplar labels"),
		c("exemplar two blanks before value", "a 1 # {}  1\n# EOF\n", "ERR expected value after exemplar labels"),
		c("bad value", "a abc\n# EOF\n", "ERR strconv.ParseFloat: parsing \"abc\": invalid syntax while parsing: \"a abc\""),
		c("value overflows", "a 1e400\n# EOF\n", "value out of range"),
		c("signed NaN", "a -NaN\n# EOF\n", "ERR strconv.ParseFloat"),
		c("hex value without p", "a 0x1F\n# EOF\n", "ERR strconv.ParseFloat"),
		c("hex value", "a 0x1p3\n# EOF\n", "ERR unsupported character in float while parsing: \"a 0x1p3\""),
		c("underscore value", "a 1_000\n# EOF\n", "ERR unsupported character in float"),
		c("P in timestamp", "a 1 1P\n# EOF\n", "ERR unsupported character in float while parsing: \"a 1 1P\""),
		c("P in exemplar value", "a 1 # {} 1P\n# EOF\n", "ERR unsupported character in float"),
		c("value with brace", "a 1}\n# EOF\n", "ERR strconv.ParseFloat"),
		c("value not utf8", "a \xff\n# EOF\n", "ERR strconv.ParseFloat: parsing \"\\xff\""),
		c("blank before brace", "a {b=\"c\"} 1\n# EOF\n", "ERR strconv.ParseFloat: parsing \"{b=\\\"c\\\"}\""),
		c("bad timestamp", "a 1 x\n# EOF\n", "ERR strconv.ParseFloat: parsing \"x\": invalid syntax while parsing: \"a 1 x\""),
		c("timestamp overflows", "a 1 1e400\n# EOF\n", "ERR strconv.ParseFloat: parsing \"1e400\": value out of range"),
		c("bad exemplar value", "a 1 # {} x\n# EOF\n", "ERR strconv.ParseFloat: parsing \"x\""),
		c("bad exemplar timestamp", "a 1 # {} 1 x\n# EOF\n", "ERR strconv.ParseFloat: parsing \"x\""),
		c("NaN timestamp", "a 1 NaN\n# EOF\n", "ERR invalid timestamp NaN"),
		c("Inf timestamp", "a 1 +Inf\n# EOF\n", "ERR invalid timestamp +Inf"),
		c("-Inf timestamp", "a 1 -inf\n# EOF\n", "ERR invalid timestamp -Inf"),
		c("NaN exemplar timestamp", "a 1 # {} 1 nan\n# EOF\n", "ERR invalid exemplar timestamp NaN"),
		c("Inf exemplar timestamp", "a 1 # {} 1 Inf\n# EOF\n", "ERR invalid exemplar timestamp +Inf"),
		c("two timestamps", "a 1 2 3\n# EOF\n", "ERR expected next entry after timestamp, got \" 3\\n\" (\"TIMESTAMP\")"),
		c("trailing blank after timestamp", "a 1 2 \n# EOF\n", "ERR expected next entry after timestamp"),
		c("NUL after timestamp", "a 1 2\x00\n# EOF\n", "ERR expected next entry after timestamp"),
		c("timestamp then hash", "a 1 2 # x\n# EOF\n", "ERR expected next entry after timestamp"),
		c("timestamp at the end", "a 1 2", "ERR expected next entry after timestamp, got \" 2\" (\"EOF\")"),
		c("exemplar, two timestamps", "a 1 # {} 1 2 3\n# EOF\n", "ERR expected next entry after exemplar timestamp"),
		c("exemplar, blank after timestamp", "a 1 # {} 1 2 \n# EOF\n", "ERR expected next entry after exemplar timestamp"),
		c("exemplar timestamp at the end", "a 1 # {} 1 2", "ERR expected next entry after exemplar timestamp"),
		c("exemplar, blank after value", "a 1 # {} 1 \n# EOF\n", "ERR expected timestamp or comment"),
		c("exemplar, NUL after value", "a 1 # {} 1\x00\n# EOF\n", "ERR expected timestamp or comment"),
		c("two exemplars", "a 1 # {} 1 # {} 2\n# EOF\n", "ERR strconv.ParseFloat: parsing \"#\": invalid syntax while parsing: \"a 1 # {} 1 #\""),
		c("error after entries", "# HELP a x\n# TYPE a gauge\na 1\nb{ 2\n# EOF\n", "SERIES a"),
		c("error on a later line of a multi-line name", "{\"a\nb\"} 1 2 3\n# EOF\n", "ERR expected next entry"),
		c("error message holding `== `", "# TYPE a == x\n# EOF\n", "ERR invalid metric type \"== x\""),
	}
}

// omTextKnownDifferences: Prometheus hands out a name that is not UTF-8;
// Ferrite's labels() reports it.
var omTextKnownDifferences = []string{
	"{\"\xff\"} 1\n# EOF\n",
	"a{\"b\xff\"=\"c\"} 1\n# EOF\n",
	"a 1\n{\"x\",\"\xc0\"=\"\"} 2 3 # {a=\"b\"} 1\nb 4\n# EOF\n",
}

func TestOMTextMatchesPrometheus(t *testing.T) {
	ferBin := exampleBin(t, "OMTEXTDUMP_BIN", "ferrite-textparse", "omtextdump")
	hand := omTextHandMade()
	rng := rand.New(rand.NewSource(20261128))
	const nRandom = 1500
	var random []ptCase
	for i := 0; i < nRandom; i++ {
		g := omtGen{ptGen{rng: rng}}
		text := g.exposition()
		random = append(random, ptCase{name: fmt.Sprintf("valid#%d", i), input: text})
		random = append(random, ptCase{name: fmt.Sprintf("mutated#%d", i), input: g.omtMutate(text, 1+rng.Intn(3))})
		// A short input, edited harder: token boundaries.
		lines := strings.SplitAfter(g.exposition(), "\n")
		small := lines[rng.Intn(len(lines))] + "# EOF\n"
		random = append(random, ptCase{name: fmt.Sprintf("small#%d", i), input: g.omtMutate(small, 1+rng.Intn(4))})
		if i%3 == 0 {
			// A number as a value, timestamp, exemplar value and
			// timestamp, and as `le` and `quantile`.
			n := g.number()
			random = append(random, ptCase{name: fmt.Sprintf("number#%d", i), input: "a " + n + "\n# EOF\n"})
			random = append(random, ptCase{name: fmt.Sprintf("number ts#%d", i), input: "a 1 " + n + " # {a=\"b\"} " + n + " " + n + "\n# EOF\n"})
			random = append(random, ptCase{name: fmt.Sprintf("number le#%d", i), input: "# TYPE h histogram\nh{le=\"" + n +
				"\"} 1\n# TYPE s summary\ns{quantile=\"" + n + "\"} 1\n# EOF\n"})
		}
	}
	all := withKnownDifferences(hand, omTextKnownDifferences, random)
	pc := runParserCheck(t, ferBin, "promomtext", "om", all, 15)

	// Hand-made cases: equal dumps, the quirk named still there, every
	// error met.
	errSeen := map[string]int{}
	for i := range hand {
		if !pc.handOK(i) {
			continue
		}
		if e := omTextErrorKind(lastLine(pc.prom[i])); e != "" {
			errSeen[e]++
		}
	}
	checkHandErrors(t, omTextErrors, errSeen)
	// The known differences still differ, and only as documented.
	pc.knownDifferences(len(hand), len(omTextKnownDifferences))
	// Random cases.
	lines := map[string]int{}
	errs := map[string]int{}
	deviations, acceptedValid := pc.random(len(hand)+len(omTextKnownDifferences), func(dump string) {
		countLines(lines, dump, nil)
		if e := omTextErrorKind(lastLine(dump)); e != "" {
			errs[e]++
		}
	})
	pc.finish()
	// The generator must mostly produce what Prometheus accepts, and the
	// mutations must reach the errors.
	if acceptedValid < nRandom*3/5 {
		t.Errorf("Prometheus accepts only %d of %d generated expositions", acceptedValid, nRandom)
	}
	checkLineKinds(t, lines, []string{"HELP", "TYPE", "UNIT", "SERIES", "EXEMPLAR", "ERR"}, 300, " in the random cases")
	logRandomErrors(t, omTextErrors, errs)
	t.Logf("%d hand-made, %d known differences, %d random cases (%d differ only by a name that is not UTF-8); "+
		"Prometheus accepted %d of %d unmutated; lines %v; errors: %s",
		len(hand), len(omTextKnownDifferences), len(random), deviations, acceptedValid, nRandom, lines, errorCounts(errs))
}

// lastLine is a dump's last line.
func lastLine(dump string) string {
	dump = strings.TrimSuffix(dump, "\n")
	return dump[strings.LastIndexByte(dump, '\n')+1:]
}

// omTextErrorKind is which of omTextErrors an `ERR` line is ("" for
// another line); the longest match wins.
func omTextErrorKind(line string) string {
	msg, ok := strings.CutPrefix(line, "ERR ")
	if !ok {
		return ""
	}
	best := ""
	for _, e := range omTextErrors {
		if strings.HasPrefix(msg, e) && len(e) > len(best) {
			best = e
		}
	}
	if best == "" {
		return "other: " + msg
	}
	return best
}

// omtGen writes random OpenMetrics expositions: mostly valid, with every
// feature the format has (HELP, TYPE, UNIT, quoted names, labels,
// timestamps, exemplars, `# EOF`) and the odd invalid choice. It reuses
// the text format generator's names, strings and numbers.
type omtGen struct {
	ptGen
}

// omtTypes are the OpenMetrics types and the suffixes of their samples.
var omtTypes = map[string][]string{
	"counter":        {"_total", "_created", ""},
	"gauge":          {""},
	"histogram":      {"_bucket", "_bucket", "_count", "_sum", "_created"},
	"gaugehistogram": {"_bucket", "_gcount", "_gsum"},
	"summary":        {"", "_count", "_sum", "_created"},
	"info":           {"_info"},
	"stateset":       {""},
	"unknown":        {""},
}

func (g *omtGen) typeName() string {
	names := make([]string, 0, len(omtTypes))
	for n := range omtTypes {
		names = append(names, n)
	}
	sort.Strings(names)
	return names[g.rng.Intn(len(names))]
}

// sep is the single space between tokens, rarely something else.
func (g *omtGen) sep() string {
	if g.chance(0.995) {
		return " "
	}
	return g.pick("  ", "\t", "")
}

// seconds is a random timestamp in seconds.
func (g *omtGen) seconds() string {
	switch g.rng.Intn(8) {
	case 0:
		return g.pick("0", "1", "-1.5", ".5", "1e3", "1700000000", "1e17", "-1e300", "0.0009")
	case 1:
		if g.chance(0.1) {
			return g.pick("NaN", "+Inf", "-Inf", "x", "1_0", "0x1p3", "1e400", "")
		}
		return strconv.FormatFloat(g.rng.NormFloat64()*1e9, g.pick("g", "e", "f")[0], -1, 64)
	default:
		return strconv.FormatFloat(1.7e9+g.rng.Float64()*1e6, 'f', g.rng.Intn(4), 64)
	}
}

func (g *omtGen) labelPairs(mtype string, exemplar bool) []string {
	var pairs []string
	for i := g.rng.Intn(4); i > 0; i-- {
		name := g.plainName(ptLetters, ptLabelRst)
		if g.chance(0.1) {
			name = `"` + g.pick("a.b", "c d", "ü", "") + g.text(!exemplar && g.chance(0.2), false) + `"`
		}
		value := g.text(false, !exemplar || g.chance(0.05))
		if g.chance(0.1) {
			value = ""
		}
		pairs = append(pairs, name+"="+`"`+value+`"`)
	}
	if !exemplar {
		switch {
		case mtype == "histogram" && g.chance(0.7), mtype == "gaugehistogram" && g.chance(0.7), mtype != "summary" && g.chance(0.05):
			pairs = append(pairs, `le="`+g.pick("1", "0.5", "+Inf", "1e6", "0.0001", "1e-05", "10", "0x1p-2", "1_0", "100000000", g.float())+`"`)
		case mtype == "summary" && g.chance(0.7), g.chance(0.05):
			pairs = append(pairs, `quantile="`+g.pick("0.5", "0.99", "1", "0", "1e-7", g.float())+`"`)
		}
	}
	if len(pairs) > 0 && g.chance(0.05) {
		pairs = append(pairs, pairs[0]) // a repeated name
	}
	g.rng.Shuffle(len(pairs), func(i, j int) { pairs[i], pairs[j] = pairs[j], pairs[i] })
	return pairs
}

// braces joins label pairs with commas, sometimes one after the last.
func (g *omtGen) braces(pairs []string) string {
	s := "{" + strings.Join(pairs, ",")
	if len(pairs) > 0 && g.chance(0.1) {
		s += ","
	}
	return s + "}"
}

func (g *omtGen) exemplar() string {
	s := " # " + g.braces(g.labelPairs("", true)) + g.sep() + g.float()
	if g.chance(0.5) {
		s += g.sep() + g.seconds()
	}
	return s
}

func (g *omtGen) exposition() string {
	var b strings.Builder
	for f := g.rng.Intn(6); f > 0; f-- {
		name := g.plainName(ptLetters+":", ptMetricRst)
		quoted := g.chance(0.15)
		if quoted {
			name = g.pick("my.metric", "a b", "ü", "x-y", "") + g.text(g.chance(0.1), false)
		}
		mtype := g.typeName()
		unit := ""
		if g.chance(0.3) {
			unit = g.pick("seconds", "bytes", "ratio", "s")
			name += "_" + unit
			if g.chance(0.05) {
				unit = g.pick("x", "", name, "_"+unit)
			}
		}
		mname := name
		if quoted {
			mname = `"` + name + `"`
		}
		if g.chance(0.6) {
			fmt.Fprintf(&b, "# HELP %s%s%s\n", mname, g.sep(), g.helpText())
		}
		if g.chance(0.8) {
			t := mtype
			if g.chance(0.02) {
				t = g.pick("Counter", "untyped", "", "gauge ", " gauge")
			}
			fmt.Fprintf(&b, "# TYPE %s%s%s\n", mname, g.sep(), t)
		}
		if unit != "" || g.chance(0.05) {
			fmt.Fprintf(&b, "# UNIT %s%s%s\n", mname, g.sep(), unit)
		}
		suffixes := omtTypes[mtype]
		for s := g.rng.Intn(5); s > 0; s-- {
			sname := name
			if !quoted || g.chance(0.5) {
				sname += suffixes[g.rng.Intn(len(suffixes))]
			}
			pairs := g.labelPairs(mtype, false)
			switch {
			case g.chance(0.01): // no name: an error
				b.WriteString(g.braces(pairs))
			case g.chance(0.01): // two names: an error
				b.WriteString(sname + g.braces(append(pairs, `"`+sname+`"`)))
			case quoted || g.chance(0.05):
				// The name inside the braces, anywhere.
				q := `"` + sname + `"`
				at := g.rng.Intn(len(pairs) + 1)
				pairs = append(pairs[:at], append([]string{q}, pairs[at:]...)...)
				b.WriteString(g.braces(pairs))
			default:
				b.WriteString(sname)
				if len(pairs) > 0 || g.chance(0.2) {
					b.WriteString(g.braces(pairs))
				}
			}
			b.WriteString(g.sep() + g.float())
			if g.chance(0.4) {
				b.WriteString(g.sep() + g.seconds())
			}
			if g.chance(0.25) {
				b.WriteString(g.exemplar())
			}
			b.WriteString("\n")
		}
	}
	switch {
	case g.chance(0.95):
		b.WriteString("# EOF\n")
	case g.chance(0.5):
		b.WriteString("# EOF")
	case g.chance(0.5):
		b.WriteString(g.pick("# EOF\n\n", "# EOF\na 1\n", "# EOF\x00", "#EOF\n", "# EOF \n"))
	}
	return b.String()
}

// omtBytes are the bytes the mutator inserts or writes over others.
var omtBytes = []byte("{}\"=,# \t\n\x00\\0123456789abcdzABCZeEOFHLPTUNIY+-.xXpP_\xff")

// omtMutate applies k random byte edits, as the text format's mutate does,
// with the bytes of OpenMetrics' keywords too.
func (g *omtGen) omtMutate(s string, k int) string {
	b := []byte(s)
	for ; k > 0; k-- {
		c := omtBytes[g.rng.Intn(len(omtBytes))]
		if len(b) == 0 {
			b = append(b, c)
			continue
		}
		i := g.rng.Intn(len(b))
		switch g.rng.Intn(3) {
		case 0:
			b = append(b[:i], b[i+1:]...)
		case 1:
			b = append(b[:i], append([]byte{c}, b[i:]...)...)
		default:
			b[i] = c
		}
	}
	return string(b)
}
