package interop_test

// Ferrite's Prometheus text format (0.0.4) parser (crates/textparse,
// promtext) against Prometheus' own (textparse.NewPromParser, as the
// scrape loop reads a text/plain body): the same inputs through
// `promtextdump` (Rust, from PROMTEXTDUMP_BIN) and `prompromtext` (Go,
// built here) must give the same entries — HELP, TYPE and comments with
// their bytes, every series' raw bytes, sorted labels, value bits and
// timestamp — up to the same first error, with the same message.
//
// One difference is deliberate (see crates/textparse/src/promtext.rs): a
// name given as a quoted string that is not UTF-8 (a label name, or the
// metric name in braces) is handed out by Prometheus, which rejects the
// series later when it validates it; Ferrite keeps labels as strings and
// reports it from `labels()`. It is checked to still be a difference, and
// recognised where the random cases hit it.

import (
	"fmt"
	"math/rand"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"
)

// promTextErrors are the messages (their start) Prometheus' parser can
// give; the hand-made cases must hit each one. ("expected text in HELP"
// and "linebreak expected after comment" cannot happen: its lexer always
// gives a text after a metadata name, and a comment always ends at a
// newline.)
var promTextErrors = []string{
	"expected a valid start token",
	"expected metric name after HELP",
	"expected metric name after TYPE",
	"invalid metric type",
	"help text",
	"linebreak expected after metadata",
	"expected label name",
	"metric name already set",
	"expected equal",
	"expected label value",
	"invalid UTF-8 label value",
	"metric name not set",
	"expected value after metric",
	"unsupported character in float",
	"strconv.ParseFloat",
	"strconv.ParseInt",
	"expected timestamp or new record",
	"expected next entry after timestamp",
}

func promTextHandMade() []ptCase {
	c := func(name, input, want string) ptCase { return ptCase{name, input, want} }
	return []ptCase{
		// Valid expositions and their quirks.
		c("empty", "", ""),
		c("only newlines", "\n\n\n", ""),
		c("minimal", "a 1\n", "SERIES a {__name__=a} 3ff0000000000000 -"),
		c("no final newline", "a 1", "SERIES a {"),
		c("no final newline after timestamp", "a 1 2", " 2\n"),
		c("metadata", "# HELP a Some help.\n# TYPE a counter\na 1\n", "HELP a Some\\x20help."),
		c("help escapes", "# HELP a x\\\\y\\nz\\t\\\"w\\\n", "HELP a x\\x5cy\\x0az\\x5ct\\x5c\\x22w\\x5c\n"),
		c("help empty", "# HELP a\n# HELP b \n# HELP c  \n", "HELP c \n"),
		c("help keeps blanks after the first", "# HELP a \t two  \n", "HELP a \\x09\\x20two\\x20\\x20"),
		c("help utf8", "# HELP a é 日本 🙂\n", ""),
		c("help with NUL", "# HELP a x\x00y\n", "x\\x00y"),
		c("help NULs after name and blanks", "# HELP a \x00\x00x\n", "HELP a \\x00\\x00x"),
		c("help text not after a blank", "# HELP \"a\"xyz w\n", "HELP a yz\\x20w"),
		c("quoted metadata names", "# HELP \"a.b\" x\n# TYPE \"a\\\"b\" gauge\n", "TYPE a\\x5c\\x22b gauge"),
		c("quoted metadata name with newline", "# HELP \"a\nb\" x\n", "HELP a\\x0ab x"),
		c("all types", "# TYPE a counter\n# TYPE a gauge\n# TYPE a histogram\n# TYPE a summary\n# TYPE a untyped\n", "TYPE a unknown"),
		c("tabs and blanks in metadata", "#\t HELP\t a\t x\n#  TYPE  a gauge\n", "TYPE a gauge"),
		c("keyword NUL stepped over", "# HE\x00LP a x\n# TYPE\x00 b gauge\n", "HELP a x"),
		c("comments", "# just a comment\n#\n#comment\n# HELPx\n# HELP\n# TYPE\n# HEL\n# help a b\n", "COMMENT #\\x20HELP\n"),
		c("comment with NULs", "# a\x00b\x00\n", "COMMENT #\\x20a\\x00b\\x00"),
		c("comment keyword then NUL", "# H\x00ELPx\n", "COMMENT"),
		c("hash NUL ends input", "a 1\n#\x00 b 2\nc 3\n", ""),
		c("hash blank NUL ends input", "a 1\n# \x00b 2\nc 3\n", ""),
		c("hash no blank NUL ends input", "a 1\n#x\x00y\nc 3\n", ""),
		c("NUL at line start ends input", "a 1\n\x00garbage {{{\n", ""),
		c("NUL after blanks ends input", "a 1\n  \x00garbage\n", ""),
		c("blank lines and blank-only lines", "\na 1\n   \n\t\nb 2\n", "SERIES b"),
		c("blanks before name are part of it", "  a 1\n\tb 2\n", "{__name__=\\x20\\x20a}"),
		c("blanks before brace", "  {\"a\"} 1\n", "SERIES \\x20\\x20\\x7b"),
		c("blanks before comment", "  # c\n", "COMMENT #\\x20c"),
		c("blanks before metadata", " \t# HELP a x\n", "HELP a x"),
		c("labels", "a{b=\"c\",d=\"e\"} 1\n", "{__name__=a,b=c,d=e}"),
		c("labels unsorted", "a{z=\"1\",b=\"2\",_x=\"3\",A=\"4\"} 1\n", ""),
		c("no commas", "a{b=\"1\" c=\"2\"d=\"3\"} 1\n", "{__name__=a,b=1,c=2,d=3}"),
		c("trailing comma", "a{b=\"1\",} 1\n", "{__name__=a,b=1}"),
		c("empty braces", "a{} 1\n", "SERIES a\\x7b\\x7d {__name__=a}"),
		c("blanks inside braces", "a{ b = \"1\" , c\t=\t\"2\" , } 1\n", "{__name__=a,b=1,c=2}"),
		c("blank before brace", "a {b=\"1\"} 1\n", "SERIES a\\x20\\x7bb"),
		c("label value escapes", "a{b=\"\\\\ \\\" \\n \\t \\x \\\\n\"} 1\n", ""),
		c("label value utf8", "a{b=\"é 日本 🙂\"} 1\n", ""),
		c("multi-line label value", "a{b=\"x\ny\n\"} 1\nc 2\n", "b=x\\x0ay\\x0a"),
		c("NUL in label value", "a{b=\"x\x00y\"} 1\n", "b=x\\x00y"),
		c("NULs at the start of a label value", "a{b=\"\x00\x00x\"} 1\n", ""),
		c("NUL after backslash in label value", "a{b=\"\\\x00n\"} 1\n", ""),
		c("NUL before label value", "a{b= \x00\"x\"} 1\n", "b=x"),
		c("NUL after label value", "a{b=\"x\"\x00} 1\n", "b=x\\x22"),
		c("NULs after label value", "a{b=\"x\"\x00\x00,c=\"y\"} 1\n", "b=x\\x22\\x00"),
		c("NUL after empty label value", "a{b=\"\"\x00} 1\n", "b=\\x22"),
		c("quoted metric name", "{\"a.b\"} 1\n{\"c d\",e=\"f\"} 2\n{e=\"f\",\"g\"} 3\n", "__name__=c\\x20d"),
		c("quoted metric name escapes", "{\"a\\\"b\\\\c\\nd\\q\"} 1\n", ""),
		c("quoted metric name with newline", "{\"a\nb\"} 1\n", ""),
		c("quoted metric name NUL after it", "{\"a\"\x00} 1\n", ""),
		c("quoted metric name, trailing comma", "{\"a\",} 1\n", ""),
		c("quoted label names", "a{\"b.c\"=\"1\",\"d e\"=\"2\",\"\"=\"3\"} 1\n", ""),
		c("quoted label name escapes", "a{\"b\\\"c\"=\"1\"} 1\n", ""),
		c("quoted label name with newline", "a{\"b\nc\"=\"1\"} 1\n", ""),
		c("empty quoted metric name", "{\"\"} 1\n", "{__name__=}"),
		c("duplicate labels", "a{b=\"2\",b=\"1\",b=\"1\"} 1\n", "{__name__=a,b=1,b=1,b=2}"),
		c("__name__ label", "a{__name__=\"b\"} 1\n", ""),
		c("values", "a 1\na -0\na .5\na 5.\na 1E5\na +1e-5\na 1e-400\na 1.7976931348623157e308\na 4.9e-324\na 0001.000\na 0x10p0\n", ""),
		c("hex float without p", "a 0x1F\n", "strconv.ParseFloat"),
		c("special values", "a NaN\na nan\na NAN\na +Inf\na -Inf\na inf\na Infinity\na -infinity\na +INF\n", "7ff8000000000001"),
		c("value with odd bytes", "a 1\x01\nb 2\xff\n", ""),
		c("value right after brace", "a{}1\n", "{__name__=a} 3ff0"),
		c("timestamps", "a 1 0\na 1 0000\na 1 1700000000000\na 1 9223372036854775807\n", "9223372036854775807"),
		c("tabs as separators", "a\t1\t2\n", " 2\n"),
		c("several blanks", "a  \t 1 \t 2 \t\n", ""),
		c("trailing blanks", "a 1 \nb 2 3 \n", ""),
		c("le normalised", "# TYPE h histogram\nh_bucket{le=\"1\"} 1\nh_bucket{le=\"0.10\"} 1\nh_bucket{le=\"1e6\"} 1\nh_bucket{le=\"+inf\"} 1\nh_bucket{le=\"0x1p-3\"} 1\nh_bucket{le=\"1_0\"} 1\nh_bucket{le=\"x\"} 1\nh_bucket{le=\"1e999\"} 1\nh_bucket{le=\"-0\"} 1\nh_bucket{le=\"NaN\"} 1\nh_bucket{quantile=\"1\"} 1\n", "le=1.0}"),
		c("quantile normalised", "# TYPE s summary\ns{quantile=\"0.5000\"} 1\ns{quantile=\"1e-7\"} 1\ns{quantile=\"100000000\"} 1\ns{le=\"1\"} 1\n", "quantile=0.5}"),
		c("normalised after the last TYPE, whatever it names", "# TYPE x histogram\nother{le=\"1\"} 1\n# TYPE y gauge\nother{le=\"1\"} 1\n", "le=1.0}"),
		c("normalised with escapes", "# TYPE h histogram\nh{le=\"1\\\\\"} 1\n", ""),
		c("invalid TYPE keeps the last type", "# TYPE h histogram\nh{le=\"1\"} 1\n# TYPE h foo\n", "le=1.0"),
		c("metric name chars", "a:b:c 1\n:x 1\n_ 1\na0_Z9 1\n", ""),
		c("label value, comma and brace", "a{b=\",\",c=\"}\",d=\"{\"} 1\n", ""),

		// Every error.
		c("invalid start", "1a 1\n", "ERR expected a valid start token"),
		c("invalid start byte", "\xff 1\n", "ERR expected a valid start token"),
		c("invalid start after a series", "a 1\n-\n", "ERR expected a valid start token"),
		c("closing brace at start", "} 1\n", "ERR expected a valid start token"),
		c("help without name", "# HELP \n", "ERR expected metric name after HELP"),
		c("help name digit", "# HELP 1a x\n", "ERR expected metric name after HELP"),
		c("help name NUL", "# HELP \x00a x\n", ""),
		c("type without name", "# TYPE  \n", "ERR expected metric name after TYPE"),
		c("type name unterminated", "# TYPE \"a b\n", "ERR expected metric name after TYPE"),
		c("type name NUL in quotes", "# TYPE \"a\x00b\" gauge\n", "ERR expected metric name after TYPE"),
		c("type name backslash newline", "# TYPE \"a\\\nb\" gauge\n", "ERR expected metric name after TYPE"),
		c("bad type", "# TYPE a foo\n", "ERR invalid metric type \"foo\""),
		c("type unknown", "# TYPE a unknown\n", "ERR invalid metric type"),
		c("type trailing blank", "# TYPE a counter \n", "ERR invalid metric type \"counter \""),
		c("type two blanks", "# TYPE a  counter\n", "ERR invalid metric type \" counter\""),
		c("type missing", "# TYPE a\n", "ERR invalid metric type \"\""),
		c("type NUL in word", "# TYPE a coun\x00ter\n", "ERR invalid metric type"),
		c("help not utf8", "# HELP a \xff\n", "ERR help text \"\\xff\" is not a valid utf8 string"),
		c("help NUL right after name", "# HELP a\x00 x\n", "ERR linebreak expected after metadata"),
		c("type NUL right after name", "# TYPE a\x00gauge\n", "ERR invalid metric type"),
		c("brace then junk", "a{1=\"b\"} 1\n", "ERR expected label name"),
		c("label name dash", "a{b-c=\"d\"} 1\n", "ERR expected equal"),
		c("label name colon", "a{b:c=\"d\"} 1\n", "ERR expected equal"),
		c("double comma", "a{b=\"c\",,} 1\n", "ERR expected label name"),
		c("leading comma", "a{,b=\"c\"} 1\n", "ERR expected label name"),
		c("unterminated braces", "a{b=\"c\" 1\n", "ERR expected label name"),
		c("unterminated label value", "a{b=\"c} 1\n", "ERR expected label value"),
		c("unterminated label value at the end", "a{b=\"c", "ERR expected label value"),
		c("backslash at the end", "a{b=\"c\\", "ERR expected label value"),
		c("backslash newline in value", "a{b=\"c\\\nd\"} 1\n", "ERR expected label value"),
		c("unquoted label value", "a{b=c} 1\n", "ERR expected label value"),
		c("single quotes", "a{b='c'} 1\n", "ERR expected label value"),
		c("NUL right after equal", "a{b=\x00\"c\"} 1\n", "ERR expected label value"),
		c("label without value", "a{b} 1\n", "ERR expected equal"),
		c("label, then comma", "a{b,c=\"d\"} 1\n", "ERR expected equal"),
		c("equal twice", "a{b==\"c\"} 1\n", "ERR expected label value"),
		c("quoted label name without value", "a{\"b\"=} 1\n", "ERR expected label value"),
		c("quoted string then label name", "a{\"b\" c=\"d\"} 1\n", "ERR expected equal"),
		c("unterminated quoted name", "{\"a} 1\n", "ERR expected label name"),
		c("NUL in quoted name", "{\"a\x00b\"} 1\n", "ERR expected label name"),
		c("label value not utf8", "a{b=\"\xff\"} 1\n", "ERR invalid UTF-8 label value: \"\\\"\\xff\\\"\""),
		c("label value surrogate", "a{b=\"\xed\xa0\x80\"} 1\n", "ERR invalid UTF-8 label value"),
		c("label value overlong", "a{b=\"\xc0\xaf\"} 1\n", "ERR invalid UTF-8 label value"),
		c("label value not utf8, NUL after", "a{b=\"\xff\"\x00} 1\n", "ERR invalid UTF-8 label value"),
		c("name twice", "a{\"b\"} 1\n", "ERR metric name already set while parsing: \"a{\\\"b\\\"}\""),
		c("quoted name twice", "{\"a\",\"b\"} 1\n", "ERR metric name already set"),
		c("no name", "{b=\"c\"} 1\n", "ERR metric name not set while parsing: \"{b=\\\"c\\\"} 1\""),
		c("empty braces, no name", "{} 1\n", "ERR metric name not set"),
		c("no name, no value", "{}\n", "ERR metric name not set"),
		c("missing value", "a\n", "ERR expected value after metric"),
		c("missing value after labels", "a{b=\"c\"}\n", "ERR expected value after metric"),
		c("missing value, blank", "a \n", "ERR expected value after metric"),
		c("braces twice", "a{}{} 1\n", "ERR expected value after metric"),
		c("NUL after name", "a\x00 1\n", "ERR expected value after metric"),
		c("NUL after blank", "a \x001\n", "ERR expected value after metric"),
		c("bad value", "a abc\n", "ERR strconv.ParseFloat: parsing \"abc\": invalid syntax while parsing: \"a abc\""),
		c("value overflows", "a 1e400\n", "value out of range"),
		c("signed NaN", "a -NaN\n", "ERR strconv.ParseFloat"),
		c("hex value", "a 0x1p3\n", "ERR unsupported character in float while parsing: \"a 0x1p3\""),
		c("underscore value", "a 1_000\n", "ERR unsupported character in float"),
		c("P in value", "a 1P\n", "ERR unsupported character in float"),
		c("value with brace", "a 1}\n", "ERR strconv.ParseFloat"),
		c("value not utf8", "a \xff\n", "ERR strconv.ParseFloat: parsing \"\\xff\""),
		c("negative timestamp", "a 1 -5\n", "ERR expected timestamp or new record, got \"-\" (\"INVALID\") while parsing: \"a 1 -\""),
		c("float timestamp", "a 1 1.5\n", "ERR expected next entry after timestamp"),
		c("timestamp with letter", "a 1 12x\n", "ERR expected next entry after timestamp"),
		c("timestamp overflows", "a 1 9223372036854775808\n", "ERR strconv.ParseInt: parsing \"9223372036854775808\": value out of range"),
		c("timestamp overflows a lot", "a 1 99999999999999999999999\n", "ERR strconv.ParseInt"),
		c("two timestamps", "a 1 2 3\n", "ERR expected next entry after timestamp, got \"3"),
		c("brace after value", "a 1 {\n", "ERR expected timestamp or new record"),
		c("NUL after value", "a 1\x00\n", "ERR expected timestamp or new record"),
		c("NUL after timestamp", "a 1 2\x00\n", "ERR expected next entry after timestamp"),
		c("crlf", "a 1\r\n", "ERR strconv.ParseFloat"),
		c("crlf after timestamp", "a 1 2\r\n", "ERR expected next entry after timestamp"),
		c("error after entries", "# HELP a x\n# TYPE a gauge\n# c\na 1\nb{ 2\n", "SERIES a"),
		c("error on a later line of a multi-line value", "a{b=\"x\ny\"} 1 2 3\n", "ERR expected next entry"),
		c("error message at the end without newline", "a", "ERR expected value after metric, got \"\\n\" (\"INVALID\") while parsing: \"a\\n\""),
		c("error message at the end, after a value", "a 1 x", "ERR expected timestamp or new record, got \"x\" (\"INVALID\") while parsing: \"a 1 x\""),
		c("error message, unterminated at the end", "a{b=\"x\ny", "ERR expected label value"),
		c("error message, blank after metadata name", "# TYPE a\t\n", "ERR invalid metric type"),
		c("error message holding `== `", "# TYPE a == x\n", "ERR invalid metric type \"== x\""),
		c("brace after value, no blank", "a 1{\n", "ERR expected timestamp or new record, got \"{\""),
		c("value then NULs", "a 1 2\n\x00\x00", ""),
	}
}

// promTextKnownDifferences: Prometheus hands out a name that is not UTF-8;
// Ferrite's labels() reports it.
var promTextKnownDifferences = []string{
	"{\"\xff\"} 1\n",
	"a{\"b\xff\"=\"c\"} 1\n",
	"a 1\n{\"x\",\"\xc0\"=\"\"} 2 3\nb 4\n",
}

func TestPromTextMatchesPrometheus(t *testing.T) {
	ferBin := exampleBin(t, "PROMTEXTDUMP_BIN", "ferrite-textparse", "promtextdump")
	hand := promTextHandMade()
	rng := rand.New(rand.NewSource(20261202))
	const nRandom = 2000
	var random []ptCase
	for i := 0; i < nRandom; i++ {
		g := ptGen{rng: rng}
		text := g.exposition()
		random = append(random, ptCase{name: fmt.Sprintf("valid#%d", i), input: text})
		random = append(random, ptCase{name: fmt.Sprintf("mutated#%d", i), input: g.mutate(text, 1+rng.Intn(3))})
		// A short input, edited harder: token boundaries.
		small := g.exposition()
		if k := strings.IndexByte(small, '\n'); k >= 0 {
			small = small[:k+1]
		}
		random = append(random, ptCase{name: fmt.Sprintf("small#%d", i), input: g.mutate(small, 1+rng.Intn(4))})
		if i%2 == 0 {
			// A number as a value and as `le` and `quantile`.
			n := g.number()
			random = append(random, ptCase{name: fmt.Sprintf("number#%d", i), input: "a " + n +
				"\n# TYPE h histogram\nh{le=\"" + n + "\"} 1\n# TYPE s summary\ns{quantile=\"" + n + "\"} 1\n"})
		}
	}
	all := withKnownDifferences(hand, promTextKnownDifferences, random)
	pc := runParserCheck(t, ferBin, "prompromtext", "txt", all, 15)

	// Hand-made cases: equal dumps, the quirk named still there, every
	// error met.
	errSeen := map[string]int{}
	for i := range hand {
		if !pc.handOK(i) {
			continue
		}
		for _, e := range promTextErrors {
			if strings.Contains(pc.prom[i], "\nERR "+e) || strings.HasPrefix(pc.prom[i], "ERR "+e) {
				errSeen[e]++
			}
		}
	}
	checkHandErrors(t, promTextErrors, errSeen)
	// The known differences still differ, and only as documented.
	pc.knownDifferences(len(hand), len(promTextKnownDifferences))
	// Random cases.
	lines := map[string]int{}
	errs := map[string]int{}
	deviations, acceptedValid := pc.random(len(hand)+len(promTextKnownDifferences), func(dump string) {
		countLines(lines, dump, func(l string) {
			if rest, ok := strings.CutPrefix(l, "ERR "); ok {
				errs[promTextErrorKind(rest)]++
			}
		})
	})
	pc.finish()
	// The generator must mostly produce what Prometheus accepts, and the
	// mutations must reach the errors.
	if acceptedValid < nRandom*3/5 {
		t.Errorf("Prometheus accepts only %d of %d generated expositions", acceptedValid, nRandom)
	}
	checkLineKinds(t, lines, []string{"HELP", "TYPE", "COMMENT", "SERIES", "ERR"}, 300, " in the random cases")
	logRandomErrors(t, promTextErrors, errs)
	t.Logf("%d hand-made, %d known differences, %d random cases (%d differ only by a name that is not UTF-8); "+
		"Prometheus accepted %d of %d unmutated; lines %v; errors: %s",
		len(hand), len(promTextKnownDifferences), len(random), deviations, acceptedValid, nRandom, lines, errorCounts(errs))
}

// promTextErrorKind is which of promTextErrors a message is.
func promTextErrorKind(msg string) string {
	for _, e := range promTextErrors {
		if strings.HasPrefix(msg, e) {
			return e
		}
	}
	return "other: " + msg
}

// explainedByNames reports whether two dumps differ only in series lines
// where Ferrite could not read the labels and Prometheus' labels hold a
// name (or a metric name) that is not UTF-8; n is how many such lines.
func explainedByNames(prom, fer string) (n int, ok bool) {
	p := strings.Split(prom, "\n")
	f := strings.Split(fer, "\n")
	if len(p) != len(f) {
		return 0, false
	}
	for i := range p {
		if p[i] == f[i] {
			continue
		}
		pf := strings.Split(p[i], " ")
		ff := strings.Split(f[i], " ")
		if len(pf) != 5 || len(ff) != 6 || pf[0] != "SERIES" || ff[0] != "SERIES" || ff[2] != "!labels" ||
			pf[1] != ff[1] || pf[3] != ff[4] || pf[4] != ff[5] || !hasNonUTF8Name(pf[2]) {
			return 0, false
		}
		n++
	}
	return n, true
}

// hasNonUTF8Name: a dumped label set `{n=v,...}` with a name, or a
// `__name__` value, that is not UTF-8.
func hasNonUTF8Name(set string) bool {
	set = strings.TrimSuffix(strings.TrimPrefix(set, "{"), "}")
	for _, l := range strings.Split(set, ",") {
		name, value, _ := strings.Cut(l, "=")
		if !utf8.ValidString(unescapeDump(name)) || (name == "__name__" && !utf8.ValidString(unescapeDump(value))) {
			return true
		}
	}
	return false
}

// unescapeDump undoes dumpfmt.Escape.
func unescapeDump(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) && s[i+1] == 'x' {
			if v, err := strconv.ParseUint(s[i+2:i+4], 16, 8); err == nil {
				b.WriteByte(byte(v))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// ptGen writes random text-format expositions: mostly valid, with every
// feature the format has (metadata, comments, blank lines, quoted names,
// labels with and without commas, multi-line values, NUL bytes where they
// are allowed, timestamps) and the odd invalid choice.
type ptGen struct {
	rng *rand.Rand
}

func (g *ptGen) pick(s ...string) string { return s[g.rng.Intn(len(s))] }
func (g *ptGen) chance(p float64) bool   { return g.rng.Float64() < p }

const (
	ptLetters   = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ_"
	ptMetricRst = ptLetters + "0123456789:"
	ptLabelRst  = ptLetters + "0123456789"
)

func (g *ptGen) plainName(first, rest string) string { return genPlainName(g.rng, first, rest) }

// text is random quoted-string content, escaped; newline allows raw
// newlines, nul NUL bytes.
func (g *ptGen) text(newline, nul bool) string {
	var b strings.Builder
	for i := g.rng.Intn(10); i > 0; i-- {
		switch g.rng.Intn(14) {
		case 0:
			b.WriteString(`\\`)
		case 1:
			b.WriteString(`\"`)
		case 2:
			b.WriteString(`\n`)
		case 3:
			b.WriteString(g.pick(`\t`, `\x`, `\u`, `\a`, `\0`))
		case 4:
			b.WriteString(g.pick("é", "日本", "🙂", "ß", "\u00a0", "Ω"))
		case 5:
			b.WriteString(g.pick(" ", ",", "=", "{", "}", "#", "'", ".", "\t"))
		case 6:
			if newline && g.chance(0.4) {
				b.WriteByte('\n')
			}
		case 7:
			if nul && !strings.HasSuffix(b.String(), `\`) {
				b.WriteByte(0)
			}
		default:
			b.WriteByte(ptLabelRst[g.rng.Intn(len(ptLabelRst))])
		}
	}
	return b.String()
}

// helpText is random `# HELP` text: escapes, blanks, UTF-8, NULs.
func (g *ptGen) helpText() string {
	var b strings.Builder
	for i := g.rng.Intn(12); i > 0; i-- {
		switch g.rng.Intn(10) {
		case 0:
			b.WriteString(g.pick(`\\`, `\n`, `\"`, `\t`, `\`))
		case 1:
			b.WriteString(g.pick(" ", "  ", "\t"))
		case 2:
			b.WriteString(g.pick("é", "日本", "🙂"))
		case 3:
			if g.chance(0.3) {
				b.WriteByte(0)
			}
		case 4:
			b.WriteString(g.pick("#", "{", "}", "\"", "=", ","))
		default:
			b.WriteByte(ptLabelRst[g.rng.Intn(len(ptLabelRst))])
		}
	}
	return b.String()
}

func (g *ptGen) blank() string {
	if g.chance(0.9) {
		return " "
	}
	return g.pick("\t", "  ", " \t", "\t ")
}

func (g *ptGen) float() string {
	return genFloat(g.rng, 0.2, "0x1p3", "1_0", "1e309", "-nan", "x", "1..2", "+", "1e", "0x10", "∞", "1,5")
}

// number is a random decimal or hexadecimal number, or a random string
// of the bytes numbers are made of.
func (g *ptGen) number() string {
	var b []byte
	switch g.rng.Intn(4) {
	case 0:
		for k := 1 + g.rng.Intn(9); k > 0; k-- {
			b = append(b, "0123456789.eE+-xXpP_infatyINFATY"[g.rng.Intn(32)])
		}
	case 1:
		b = fmt.Appendf(b, "0x%x.%xp%d", g.rng.Int63(), g.rng.Intn(1000), g.rng.Intn(2200)-1100)
	default:
		if g.chance(0.3) {
			b = append(b, "+-"[g.rng.Intn(2)])
		}
		n := 1 + g.rng.Intn(40)
		dot := g.rng.Intn(n + 2)
		for k := 0; k < n; k++ {
			if k == dot {
				b = append(b, '.')
			}
			b = append(b, byte('0'+g.rng.Intn(10)))
			if g.chance(0.03) {
				b = append(b, '_')
			}
		}
		if g.chance(0.5) {
			b = append(b, "eE"[g.rng.Intn(2)])
			if g.chance(0.5) {
				b = append(b, "+-"[g.rng.Intn(2)])
			}
			b = strconv.AppendInt(b, int64(g.rng.Intn(700)), 10)
		}
	}
	return string(b)
}

func (g *ptGen) timestamp() string {
	switch g.rng.Intn(8) {
	case 0:
		return g.pick("0", "00012", "9223372036854775807", "1")
	case 1:
		if g.chance(0.2) {
			return g.pick("9223372036854775808", "-1", "1.5", "1e3", "+1")
		}
		return "1700000000000"
	default:
		return strconv.FormatInt(1_700_000_000_000+g.rng.Int63n(1_000_000_000), 10)
	}
}

func (g *ptGen) labelPairs(mtype string) []string {
	var pairs []string
	for i := g.rng.Intn(4); i > 0; i-- {
		name := g.plainName(ptLetters, ptLabelRst)
		if g.chance(0.1) {
			name = `"` + g.pick("a.b", "c d", "ü", "") + g.text(g.chance(0.2), false) + `"`
		}
		value := g.text(g.chance(0.1), true)
		if g.chance(0.1) {
			value = ""
		}
		eq := "="
		if g.chance(0.05) {
			eq = g.blank() + "=" + g.blank()
		}
		pairs = append(pairs, name+eq+`"`+value+`"`)
	}
	switch {
	case mtype == "histogram" && g.chance(0.7), mtype != "summary" && g.chance(0.05):
		pairs = append(pairs, `le="`+g.pick("1", "0.5", "+Inf", "1e6", "0.0001", "1e-05", "10", "0x1p-2", "1_0", "100000000", g.float())+`"`)
	case mtype == "summary" && g.chance(0.7), g.chance(0.05):
		pairs = append(pairs, `quantile="`+g.pick("0.5", "0.99", "1", "0", "1e-7", g.float())+`"`)
	}
	if len(pairs) > 0 && g.chance(0.05) {
		pairs = append(pairs, pairs[0]) // a repeated name
	}
	g.rng.Shuffle(len(pairs), func(i, j int) { pairs[i], pairs[j] = pairs[j], pairs[i] })
	return pairs
}

// braces joins label pairs the ways Prometheus allows: commas, blanks,
// nothing, a trailing comma.
func (g *ptGen) braces(pairs []string) string {
	var b strings.Builder
	b.WriteByte('{')
	if g.chance(0.05) {
		b.WriteString(g.blank())
	}
	for i, p := range pairs {
		if i > 0 {
			switch {
			case g.chance(0.85):
				b.WriteString(",")
			case g.chance(0.5):
				b.WriteString(g.pick(" ", ", ", " , ", "\t,"))
			}
		}
		b.WriteString(p)
	}
	if len(pairs) > 0 && g.chance(0.1) {
		b.WriteString(",")
	}
	if g.chance(0.05) {
		b.WriteString(g.blank())
	}
	b.WriteByte('}')
	return b.String()
}

func (g *ptGen) comment() string {
	switch g.rng.Intn(6) {
	case 0:
		return "#"
	case 1:
		return "#" + g.helpText()
	case 2:
		return g.pick("# HELP", "# TYPE", "# HELPx y", "# TYPEy", "#HELP a b", "# help a b", "# HEL", "# TYP a")
	default:
		return "#" + g.blank() + g.helpText()
	}
}

func (g *ptGen) exposition() string {
	var b strings.Builder
	for f := g.rng.Intn(6); f > 0; f-- {
		name := g.plainName(ptLetters+":", ptMetricRst)
		quoted := g.chance(0.15)
		if quoted {
			name = g.pick("my.metric", "a b", "ü", "x-y", "") + g.text(g.chance(0.1), false)
		}
		mname := name
		if quoted {
			mname = `"` + name + `"`
		}
		mtype := g.pick("counter", "gauge", "histogram", "summary", "untyped")
		if g.chance(0.1) {
			b.WriteString(g.comment() + "\n")
		}
		if g.chance(0.5) {
			fmt.Fprintf(&b, "#%sHELP%s%s%s%s\n", g.blank(), g.blank(), mname, g.blank(), g.helpText())
		}
		if g.chance(0.7) {
			t := mtype
			if g.chance(0.03) {
				t = g.pick("Counter", "unknown", "", "gauge ", "info")
			}
			sep := " " // more than one blank is part of the type, an error
			if g.chance(0.03) {
				sep = g.blank()
			}
			fmt.Fprintf(&b, "#%sTYPE%s%s%s%s\n", g.blank(), g.blank(), mname, sep, t)
		}
		if g.chance(0.1) {
			b.WriteString(g.pick("\n", " \n", "\t\n"))
		}
		for s := g.rng.Intn(5); s > 0; s-- {
			if g.chance(0.03) {
				b.WriteString(g.blank())
			}
			sname := name
			if !quoted {
				sname += g.pick("", "", "_total", "_bucket", "_count", "_sum")
			}
			pairs := g.labelPairs(mtype)
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
					if g.chance(0.05) {
						b.WriteString(g.blank())
					}
					b.WriteString(g.braces(pairs))
				}
			}
			b.WriteString(g.blank() + g.float())
			if g.chance(0.4) {
				b.WriteString(g.blank() + g.timestamp())
			}
			if g.chance(0.05) {
				b.WriteString(g.blank())
			}
			b.WriteString("\n")
		}
	}
	s := b.String()
	if g.chance(0.05) {
		s = strings.TrimSuffix(s, "\n")
	}
	return s
}

// ptBytes are the bytes the mutator inserts or writes over others.
var ptBytes = []byte("{}\"=,# \t\n\x00\\0123456789abcdzABCZeE+-.xXpP_\xff")

// mutate applies k random byte edits: deletions, insertions and
// replacements with bytes that matter to the grammar.
func (g *ptGen) mutate(s string, k int) string {
	b := []byte(s)
	for ; k > 0; k-- {
		c := ptBytes[g.rng.Intn(len(ptBytes))]
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
