package interop_test

// Ferrite's OpenMetrics parser (crates/textparse) against Prometheus' own
// (textparse.NewOpenMetricsParser, as promtool's backfill uses it): the same
// inputs through `omdump` (Rust, from OMDUMP_BIN) and `promtextparse` (Go,
// built here) must give the same dump — the samples promtool would append,
// with labels, millisecond timestamps and value bits — or both an error, on
// the same line. The deliberate differences (documented in the crate) are
// checked to still be differences, and recognised in the random cases.

import (
	"bytes"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
)

// omResult is one tool's verdict on one input.
type omResult struct {
	ok   bool
	dump string // whole dump when ok
	line int    // error line (0: Prometheus panicked)
	msg  string // error reason
}

// dumpAll runs one tool over all inputs (one process) and splits its output.
func dumpAll(t *testing.T, bin string, dir string, inputs [][]byte) []omResult {
	t.Helper()
	files := make([]string, len(inputs))
	for i, in := range inputs {
		files[i] = filepath.Join(dir, fmt.Sprintf("case%05d.om", i))
		if err := os.WriteFile(files[i], in, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// Two files at least, so the output always has `== FILE` headers.
	args := files
	if len(files) == 1 {
		args = []string{files[0], files[0]}
	}
	r := run(bin, nil, args...)
	if r.err != nil {
		t.Fatalf("%s: %v\nstderr:\n%s", bin, r.err, tail(r.stderr, 20))
	}
	parts := strings.Split(r.stdout, "== ")[1:]
	if len(parts) < len(files) {
		t.Fatalf("%s: %d dumps for %d files", bin, len(parts), len(files))
	}
	res := make([]omResult, len(files))
	for i := range files {
		header, body, _ := strings.Cut(parts[i], "\n")
		if header != files[i] {
			t.Fatalf("%s: dump %d is for %q, want %q", bin, i, header, files[i])
		}
		if strings.HasPrefix(body, "ok ") {
			res[i] = omResult{ok: true, dump: body}
			continue
		}
		first, _, _ := strings.Cut(body, "\n")
		var line int
		var msg string
		if _, err := fmt.Sscanf(first, "error line=%d", &line); err != nil {
			t.Fatalf("%s: bad dump for %s: %q", bin, files[i], first)
		}
		if _, m, ok := strings.Cut(first, " "); ok {
			_, msg, _ = strings.Cut(m, " ")
		}
		res[i] = omResult{line: line, msg: msg}
	}
	return res
}

// omCase is an input and, for hand-made ones, what Prometheus must say.
type omCase struct {
	name  string
	input string
	want  string // "ok", "err", or "" (random: anything)
}

// omCompare runs both parsers over the cases and reports mismatches;
// deviation classifies a Prometheus-accepts / Ferrite-rejects pair as one of
// the documented differences (returns its name, or "").
func omCompare(t *testing.T, cases []omCase) (same, deviations int, prom []omResult) {
	t.Helper()
	dir := t.TempDir()
	inputs := make([][]byte, len(cases))
	for i, c := range cases {
		inputs[i] = []byte(c.input)
	}
	promBin := goCmdBin(t, "promtextparse")
	prom = dumpAll(t, promBin, dir, inputs)
	fer := dumpAll(t, exampleBin(t, "OMDUMP_BIN", "ferrite-textparse", "omdump"), dir, inputs)
	bad := 0
	for i, c := range cases {
		p, f := prom[i], fer[i]
		fail := func(format string, args ...any) {
			bad++
			if bad <= 15 {
				t.Errorf("%s: %s\ninput: %q\nprometheus: %+v\nferrite:    %+v", c.name, fmt.Sprintf(format, args...), c.input, p, f)
			}
		}
		switch c.want {
		case "ok":
			if !p.ok {
				fail("Prometheus rejects a case meant to be valid")
				continue
			}
		case "err":
			if p.ok {
				fail("Prometheus accepts a case meant to be invalid")
				continue
			}
		}
		switch {
		case p.ok && f.ok:
			if p.dump != f.dump {
				fail("different samples")
				continue
			}
		case !p.ok && !f.ok:
			if p.line != 0 && p.line != f.line {
				// A deviation (Ferrite rejecting earlier, or Prometheus'
				// lexer skipping a NUL) can move the error.
				if d := knownDeviation(c.input, f.msg); d != "" {
					deviations++
					t.Logf("%s: known deviation (%s) moves the error: %q", c.name, d, c.input)
					continue
				}
				fail("both reject, on different lines")
				continue
			}
		case !p.ok && f.ok:
			if p.line == 0 {
				fail("Prometheus panics, Ferrite accepts")
			} else {
				fail("Prometheus rejects, Ferrite accepts")
			}
			continue
		default:
			if d := knownDeviation(c.input, f.msg); d != "" {
				deviations++
				t.Logf("%s: known deviation (%s): %q", c.name, d, c.input)
				continue
			}
			fail("Prometheus accepts, Ferrite rejects")
			continue
		}
		same++
	}
	if bad > 15 {
		t.Errorf("... %d mismatches in all", bad)
	}
	return same, deviations, prom
}

// knownDeviation names the documented difference that explains Ferrite
// rejecting what Prometheus accepts, judged from Ferrite's reason and the
// input.
func knownDeviation(input, ferriteMsg string) string {
	switch {
	case strings.Contains(ferriteMsg, "Ferrite keeps names as UTF-8"):
		return "quoted name not UTF-8"
	case nulQuirk(input):
		return "NUL byte where Prometheus' lexer skips it"
	}
	return ""
}

// nulQuirk: a NUL right after a quote, a backslash, a newline or another
// NUL, or on a `#` line before its text.
func nulQuirk(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] != 0 {
			continue
		}
		if i > 0 && strings.ContainsRune("\"\\\n\x00", rune(s[i-1])) {
			return true
		}
		lineStart := strings.LastIndexByte(s[:i], '\n') + 1
		if strings.HasPrefix(s[lineStart:], "#") && strings.Count(s[lineStart:i], " ") < 3 {
			return true
		}
	}
	return false
}

func TestTextparseHandMade(t *testing.T) {
	ok := func(name, in string) omCase { return omCase{name, in, "ok"} }
	bad := func(name, in string) omCase { return omCase{name, in, "err"} }
	cases := []omCase{
		ok("minimal", "a 1 1\n# EOF\n"),
		ok("eof without newline", "a 1 1\n# EOF"),
		ok("empty file with eof", "# EOF\n"),
		ok("metadata", "# TYPE a counter\n# HELP a some help \\\\ \\n \\\" \\t ü\n# UNIT a_seconds seconds\na_seconds_total 1 1\n# EOF\n"),
		ok("empty unit and help", "# UNIT a \n# HELP a \na 1 1\n# EOF\n"),
		ok("quoted metadata name", "# HELP \"a.b\" x\n# TYPE \"a.b\" gauge\n{\"a.b\"} 1 1\n# EOF\n"),
		ok("all types", "# TYPE a counter\n# TYPE a gauge\n# TYPE a histogram\n# TYPE a gaugehistogram\n# TYPE a summary\n# TYPE a info\n# TYPE a stateset\n# TYPE a unknown\na 1 1\n# EOF\n"),
		ok("labels sorted", "a{z=\"1\",b=\"2\",__x=\"3\",A=\"4\"} 1 1\n# EOF\n"),
		ok("trailing comma", "a{b=\"1\",} 1 1\n# EOF\n"),
		ok("empty braces", "a{} 1 1\n# EOF\n"),
		ok("escapes", "a{b=\"\\\\ \\\" \\n \\t \\x é 日本 🙂\"} 1 1\n# EOF\n"),
		ok("nul in value and help", "# HELP a x\x00y\na{b=\"x\x00y\"} 1 1\n# EOF\n"),
		ok("empty value dropped", "a{b=\"\",c=\"1\"} 1 1\n# EOF\n"),
		ok("duplicate with empty", "a{b=\"\",b=\"1\"} 1 1\n# EOF\n"),
		ok("quoted everything", "{\"a b\",\"c.d\"=\"e\",f=\"g\"} 1 1\n{h=\"i\",\"j k\"} 2 2\n# EOF\n"),
		ok("quoted name with raw newline", "{\"a\nb\",c=\"d\"} 1 1\n# EOF\n"),
		ok("quoted label name escapes", "{\"a\",\"x\\\"y\\\\z\\nw\\q\"=\"1\"} 1 1\n# EOF\n"),
		ok("values", "a 1 1\na -0 1\na .5 1\na 5. 1\na 1E5 1\na +1e-5 1\na NaN 1\na nan 1\na +Inf 1\na -Inf 1\na inf 1\na -infinity 1\na InFiNiTy 1\na 1e-400 1\na 1.7976931348623157e308 1\na 0000.1000 1\n# EOF\n"),
		ok("timestamps", "a 1 0\na 1 1.5\na 1 -1.5\na 1 1.001\na 1 1700000000.123456\na 1 1e3\na 1 -0\na 1 .001\na 1 0.0009\na 1 -0.0009\na 1 9007199254740.993\n# EOF\n"),
		ok("exemplars", "a 1 1 # {} 1\na 1 1 # {t=\"x\"} 1 2\na 2 3 # {t=\"x\",\"q r\"=\"y\"} NaN -1\nb 1 1 # {a=\"\\\"\"} -Inf 1.5\n# EOF\n"),
		ok("le and quantile normalised", "# TYPE h histogram\nh_bucket{le=\"1\"} 1 1\nh_bucket{le=\"0.10\"} 1 1\nh_bucket{le=\"1e6\"} 1 1\nh_bucket{le=\"+inf\"} 1 1\nh_bucket{le=\"0x1p-3\"} 1 1\nh_bucket{le=\"1_0\"} 1 1\nh_bucket{le=\"x\"} 1 1\nh_bucket{le=\"1e999\"} 1 1\nh_bucket{quantile=\"1\"} 1 1\n# TYPE s summary\ns{quantile=\"0.5000\"} 1 1\ns{quantile=\"1e-7\"} 1 1\ns{le=\"1\"} 1 1\nother{quantile=\"1\"} 1 1\n# TYPE g gaugehistogram\ng_bucket{le=\"1\"} 1 1\n# EOF\n"),
		ok("created lines are samples", "# TYPE c counter\nc_total 1 10\nc_created 5 10\n# EOF\n"),
		ok("interleaved families", "a 1 1\nb 1 1\na 2 2\n# TYPE a gauge\na 3 3\n# EOF\n"),
		ok("metric name colons", "a:b:c 1 1\n:x 1 1\n_ 1 1\n# EOF\n"),

		bad("no eof", "a 1 1\n"),
		bad("no eof, no newline", "a 1 1"),
		bad("empty input", ""),
		bad("data after eof", "a 1 1\n# EOF\na 1 1\n"),
		bad("blank after eof", "# EOF\n\n"),
		bad("eof with text", "# EOF x\n"),
		bad("eofx", "# EOFx\n"),
		bad("blank line", "a 1 1\n\n# EOF\n"),
		bad("comment", "# a comment\na 1 1\n# EOF\n"),
		bad("hash no space", "#HELP a x\n# EOF\n"),
		bad("bad type", "# TYPE a foo\n# EOF\n"),
		bad("type trailing space", "# TYPE a counter \n# EOF\n"),
		bad("help without text", "# HELP a\n# EOF\n"),
		bad("help invalid utf8", "# HELP a \xff\n# EOF\n"),
		bad("unit not suffix", "# UNIT a_seconds bytes\n# EOF\n"),
		bad("unit without underscore", "# UNIT aseconds seconds\n# EOF\n"),
		bad("unit is the name", "# UNIT seconds seconds\n# EOF\n"),
		bad("missing value", "a\n# EOF\n"),
		bad("missing value after labels", "a{b=\"c\"}\n# EOF\n"),
		bad("missing timestamp", "a 1\n# EOF\n"),
		bad("missing timestamp, exemplar", "a 1 # {t=\"x\"} 1\n# EOF\n"),
		bad("missing timestamp later", "a 1 1\nb 2\n# EOF\n"),
		bad("two spaces", "a  1 1\n# EOF\n"),
		bad("two spaces before ts", "a 1  1\n# EOF\n"),
		bad("trailing space", "a 1 1 \n# EOF\n"),
		bad("trailing space after value", "a 1 \n# EOF\n"),
		bad("tab", "a\t1 1\n# EOF\n"),
		bad("crlf", "a 1 1\r\n# EOF\n"),
		bad("extra field", "a 1 1 1\n# EOF\n"),
		bad("bad value", "a x 1\n# EOF\n"),
		bad("hex value", "a 0x1p3 1\n# EOF\n"),
		bad("underscore value", "a 1_0 1\n# EOF\n"),
		bad("overflow value", "a 1e309 1\n# EOF\n"),
		bad("signed nan", "a -NaN 1\n# EOF\n"),
		bad("nan timestamp", "a 1 NaN\n# EOF\n"),
		bad("inf timestamp", "a 1 +Inf\n# EOF\n"),
		bad("overflow timestamp", "a 1 1e400\n# EOF\n"),
		bad("bad timestamp", "a 1 12x\n# EOF\n"),
		bad("duplicate label", "a{b=\"1\",b=\"2\"} 1 1\n# EOF\n"),
		bad("duplicate name label", "{\"a\",__name__=\"b\"} 1 1\n# EOF\n"),
		bad("name twice", "a{\"b\"} 1 1\n# EOF\n"),
		bad("quoted name twice", "{\"a\",\"b\"} 1 1\n# EOF\n"),
		bad("no name", "{b=\"c\"} 1 1\n# EOF\n"),
		bad("__name__ label only", "{__name__=\"a\"} 1 1\n# EOF\n"),
		bad("empty label set", "{\"\"} 1 1\n# EOF\n"),
		bad("label name digit", "a{1=\"b\"} 1 1\n# EOF\n"),
		bad("label name colon", "a{b:c=\"d\"} 1 1\n# EOF\n"),
		bad("label name dash", "a{b-c=\"d\"} 1 1\n# EOF\n"),
		bad("metric name dash", "a-b 1 1\n# EOF\n"),
		bad("metric name digit", "1a 1 1\n# EOF\n"),
		bad("space in braces", "a{b=\"c\", d=\"e\"} 1 1\n# EOF\n"),
		bad("space before brace", "a {b=\"c\"} 1 1\n# EOF\n"),
		bad("unquoted value", "a{b=c} 1 1\n# EOF\n"),
		bad("single quotes", "a{b='c'} 1 1\n# EOF\n"),
		bad("double comma", "a{b=\"c\",,} 1 1\n# EOF\n"),
		bad("leading comma", "a{,b=\"c\"} 1 1\n# EOF\n"),
		bad("missing comma", "a{b=\"c\"d=\"e\"} 1 1\n# EOF\n"),
		bad("unterminated braces", "a{b=\"c\" 1 1\n# EOF\n"),
		bad("unterminated value", "a{b=\"c} 1 1\n# EOF\n"),
		bad("raw newline in value", "a{b=\"c\nd\"} 1 1\n# EOF\n"),
		bad("backslash newline in value", "a{b=\"c\\\nd\"} 1 1\n# EOF\n"),
		bad("backslash newline in quoted name", "{\"a\\\nb\"} 1 1\n# EOF\n"),
		bad("backslash at end", "a{b=\"c\\"),
		bad("invalid utf8 value", "a{b=\"\xff\"} 1 1\n# EOF\n"),
		bad("surrogate utf8 value", "a{b=\"\xed\xa0\x80\"} 1 1\n# EOF\n"),
		bad("overlong utf8 value", "a{b=\"\xc0\xaf\"} 1 1\n# EOF\n"),
		bad("nul in name", "a\x00b 1 1\n# EOF\n"),
		bad("nul after value", "a 1\x00 1\n# EOF\n"),
		bad("nul in quoted name", "{\"a\x00b\"} 1 1\n# EOF\n"),
		bad("nul in exemplar value", "a 1 1 # {t=\"x\x00\"} 1\n# EOF\n"),
		bad("exemplar without value", "a 1 1 # {t=\"x\"}\n# EOF\n"),
		bad("exemplar two spaces", "a 1 1 #  {t=\"x\"} 1\n# EOF\n"),
		bad("exemplar no braces", "a 1 1 # t 1\n# EOF\n"),
		bad("exemplar bad label", "a 1 1 # {1=\"x\"} 1\n# EOF\n"),
		bad("exemplar quoted name alone", "a 1 1 # {\"x\"} 1\n# EOF\n"),
		bad("exemplar nan ts", "a 1 1 # {} 1 NaN\n# EOF\n"),
		bad("exemplar extra", "a 1 1 # {} 1 1 1\n# EOF\n"),
		bad("exemplar trailing space", "a 1 1 # {} 1 \n# EOF\n"),
		bad("exemplar bad value", "a 1 1 # {} x\n# EOF\n"),
		bad("exemplar invalid utf8", "a 1 1 # {t=\"\xff\"} 1\n# EOF\n"),
		bad("hash junk after value", "a 1 1 #\n# EOF\n"),
		bad("error line 3", "a 1 1\nb 1 1\nc{ 1 1\n# EOF\n"),
		bad("error after multiline name", "{\"a\nb\nc\",d} 1 1\n# EOF\n"),
		bad("unterminated multiline name", "a 1 1\n{\"a\nb\nc"),
		bad("multiline name at eof", "a 1 1\n{\"a\nb\""),
		bad("help name multiline at eof", "# HELP \"a\nb\""),
		bad("eof in help", "# HELP a b"),
		bad("eof after type", "# TYPE a counter\n"),
		// An unquoted word in braces with no `=`: Prometheus up to v3.9.1
		// took it as the metric name (cut by a character at each end) or
		// panicked on a one-letter word; since v3.16.0 it rejects it too.
		bad("unquoted word in braces", "{abc} 1 1\n# EOF\n"),
		bad("unquoted word in braces, then a label", "{abc,d=\"e\"} 1 1\n# EOF\n"),
		bad("one-letter word in braces", "{a} 1 1\n# EOF\n"),
	}
	if runtime.GOARCH == "amd64" {
		// Go's float-to-int conversion of an out-of-range ms value is
		// CPU-specific; Ferrite follows amd64.
		cases = append(cases, ok("huge timestamps", "a 1 1e17\na 1 -1e17\na 1 9223372036854775.807\na 1 -9223372036854775.808\na 1 9223372036854775.0\n# EOF\n"))
	}
	same, dev, _ := omCompare(t, cases)
	if dev != 0 {
		t.Errorf("%d hand-made cases hit a known deviation; none should", dev)
	}
	t.Logf("%d hand-made cases agree", same)
}

// TestTextparseKnownDeviations keeps the documented differences honest:
// Prometheus accepts each of these, Ferrite rejects it.
func TestTextparseKnownDeviations(t *testing.T) {
	inputs := []string{
		"{\"\xff\"} 1 1\n# EOF\n",         // quoted metric name not UTF-8
		"a{\"b\xff\"=\"c\"} 1 1\n# EOF\n", // quoted label name not UTF-8
		"a{b=\"c\"\x00} 1 1\n# EOF\n",     // NUL after a closing quote
		"# HELP a b\n\x00a 1 1\n# EOF\n",  // NUL at a line start after HELP
		"# EOF\n\x00",                     // NUL after # EOF
		"# E\x00OF\n",                     // NUL inside a keyword
		"# HELP \x00a b\na 1 1\n# EOF\n",  // NUL before a metadata name
	}
	dir := t.TempDir()
	raw := make([][]byte, len(inputs))
	for i, s := range inputs {
		raw[i] = []byte(s)
	}
	prom := dumpAll(t, goCmdBin(t, "promtextparse"), dir, raw)
	fer := dumpAll(t, exampleBin(t, "OMDUMP_BIN", "ferrite-textparse", "omdump"), dir, raw)
	for i, in := range inputs {
		p, f := prom[i], fer[i]
		if !(p.ok || p.line == 0) {
			t.Errorf("%q: Prometheus now rejects it (%+v): update the crate docs", in, p)
		}
		if f.ok {
			t.Errorf("%q: Ferrite accepts it: %s", in, f.dump)
		}
	}
}

// TestTextparseRandom: seeded random expositions, valid and mutated.
func TestTextparseRandom(t *testing.T) {
	const n = 3000
	rng := rand.New(rand.NewSource(20261123))
	cases := make([]omCase, 0, 3*n)
	for i := 0; i < n; i++ {
		g := omGen{rng: rng, hugeTS: runtime.GOARCH == "amd64"}
		text := g.exposition()
		cases = append(cases, omCase{name: fmt.Sprintf("valid#%d", i), input: text})
		cases = append(cases, omCase{name: fmt.Sprintf("mutated#%d", i), input: g.mutate(text)})
		// A short input, edited harder: token boundaries.
		small := g.exposition()
		if k := strings.IndexByte(small, '\n'); k >= 0 && g.chance(0.7) {
			small = small[:k+1] + "# EOF\n"
		}
		for k := g.rng.Intn(3); k >= 0; k-- {
			small = g.mutate(small)
		}
		cases = append(cases, omCase{name: fmt.Sprintf("small#%d", i), input: small})
	}
	same, dev, promRes := omCompare(t, cases)
	// The generator must mostly produce input Prometheus accepts, or the
	// comparison of samples would be thin.
	accepted := 0
	for i := 0; i < len(cases); i += 3 {
		if promRes[i].ok {
			accepted++
		}
	}
	if accepted < n/2 {
		t.Errorf("Prometheus accepts only %d of %d generated valid expositions", accepted, n)
	}
	t.Logf("%d cases agree (%d known deviations); Prometheus accepted %d of %d unmutated", same, dev, accepted, n)
}

// omGen writes random OpenMetrics text, mostly valid, with the odd invalid
// choice (bad float, missing timestamp, missing # EOF, ...).
type omGen struct {
	rng    *rand.Rand
	hugeTS bool
}

func (g *omGen) pick(s ...string) string { return s[g.rng.Intn(len(s))] }
func (g *omGen) chance(p float64) bool   { return g.rng.Float64() < p }

func (g *omGen) plainName(first, rest string) string { return genPlainName(g.rng, first, rest) }

const (
	omLetters   = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ_"
	omMetricRst = omLetters + "0123456789:"
	omLabelRst  = omLetters + "0123456789"
)

// text is random string content already escaped for a quoted string;
// newline allows a raw newline (quoted names), nul a NUL (label values).
func (g *omGen) text(newline, nul bool) string {
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
			b.WriteString(g.pick(`\t`, `\x`, `\u`, `\a`))
		case 4:
			b.WriteString(g.pick("é", "日本", "🙂", "ß", "\u00a0", "Ω"))
		case 5:
			b.WriteString(g.pick(" ", ",", "=", "{", "}", "#", "'", "."))
		case 6:
			if newline && g.chance(0.3) {
				b.WriteByte('\n')
			}
		case 7:
			if nul && b.Len() > 0 && !strings.HasSuffix(b.String(), `\`) {
				b.WriteByte(0)
			}
		default:
			b.WriteByte(omLabelRst[g.rng.Intn(len(omLabelRst))])
		}
	}
	return b.String()
}

func (g *omGen) metricName() (raw string, quoted bool) {
	if g.chance(0.8) {
		return g.plainName(omLetters+":", omMetricRst), false
	}
	return g.pick("my.metric", "a b", "ü", "x-y") + g.text(g.chance(0.1), false), true
}

func (g *omGen) float() string {
	return genFloat(g.rng, 0.15, "0x1p3", "1_0", "1e309", "-nan", "x", "1..2", "+", "1e", "0x10", "∞")
}

func (g *omGen) timestamp() string {
	switch g.rng.Intn(10) {
	case 0:
		return strconv.FormatInt(1_700_000_000+g.rng.Int63n(1_000_000), 10)
	case 1:
		return strconv.FormatFloat(1.7e9+g.rng.Float64()*1e6, 'f', g.rng.Intn(10), 64)
	case 2:
		return strconv.FormatFloat((g.rng.Float64()-0.5)*1e6, 'g', -1, 64)
	case 3:
		return g.pick("0", "-0", "1.001", "0.0009", "-0.0009", ".001", "1e3", "1.7e9", "9007199254740.993", "-1.5")
	case 4:
		if g.hugeTS && g.chance(0.3) {
			return g.pick("1e17", "-1e17", "9223372036854775.807", "-9223372036854775.808", "1e300")
		}
		return strconv.FormatFloat(g.rng.Float64()*1e9, 'e', -1, 64)
	case 5:
		if g.chance(0.1) {
			return g.pick("NaN", "+Inf", "1e400", "x", "0x1p3")
		}
		return "1"
	default:
		return strconv.FormatInt(g.rng.Int63n(4_000_000_000)-1_000_000_000, 10)
	}
}

func (g *omGen) labelPairs(lmetric string, mtype string) []string {
	var pairs []string
	for i := g.rng.Intn(4); i > 0; i-- {
		name := g.plainName(omLetters, omLabelRst)
		if g.chance(0.15) {
			name = `"` + g.pick("a.b", "c d", "ü", "") + g.text(g.chance(0.1), false) + `"`
		}
		value := g.text(false, true)
		if g.chance(0.1) {
			value = ""
		}
		pairs = append(pairs, name+`="`+value+`"`)
	}
	switch {
	case mtype == "histogram" && g.chance(0.7), mtype != "summary" && g.chance(0.05):
		pairs = append(pairs, `le="`+g.pick("1", "0.5", "+Inf", "1e6", "0.0001", "1e-05", "10", "0x1p-2", "1_0", g.float())+`"`)
	case mtype == "summary" && g.chance(0.7), g.chance(0.05):
		pairs = append(pairs, `quantile="`+g.pick("0.5", "0.99", "1", "0", "1e-7", g.float())+`"`)
	}
	if len(pairs) > 0 && g.chance(0.05) {
		pairs = append(pairs, pairs[0]) // duplicate
	}
	g.rng.Shuffle(len(pairs), func(i, j int) { pairs[i], pairs[j] = pairs[j], pairs[i] })
	return pairs
}

func (g *omGen) exposition() string {
	var b strings.Builder
	for f := g.rng.Intn(6); f > 0; f-- {
		name, quoted := g.metricName()
		mname := name
		if quoted {
			mname = `"` + name + `"`
		}
		mtype := g.pick("counter", "gauge", "histogram", "gaugehistogram", "summary", "info", "stateset", "unknown")
		if g.chance(0.7) {
			t := mtype
			if g.chance(0.03) {
				t = g.pick("Counter", "foo", "")
			}
			fmt.Fprintf(&b, "# TYPE %s %s\n", mname, t)
		}
		if g.chance(0.5) {
			fmt.Fprintf(&b, "# HELP %s %s\n", mname, g.text(false, true))
		}
		if g.chance(0.3) && !quoted {
			unit := ""
			if i := strings.LastIndexByte(name, '_'); i >= 0 && i < len(name)-1 {
				unit = name[i+1:]
			}
			if g.chance(0.1) {
				unit = "bytes"
			}
			fmt.Fprintf(&b, "# UNIT %s %s\n", mname, unit)
		}
		for s := g.rng.Intn(5); s > 0; s-- {
			sname := name + g.pick("", "", "_total", "_bucket", "_count", "_sum", "_created")
			pairs := g.labelPairs(sname, mtype)
			if quoted || g.chance(0.1) {
				// Name inside the braces, anywhere.
				q := `"` + sname + `"`
				at := g.rng.Intn(len(pairs) + 1)
				pairs = append(pairs[:at], append([]string{q}, pairs[at:]...)...)
				b.WriteString("{" + strings.Join(pairs, ","))
				if g.chance(0.1) {
					b.WriteString(",")
				}
				b.WriteString("}")
			} else {
				b.WriteString(sname)
				if len(pairs) > 0 || g.chance(0.2) {
					b.WriteString("{" + strings.Join(pairs, ","))
					if len(pairs) > 0 && g.chance(0.1) {
						b.WriteString(",")
					}
					b.WriteString("}")
				}
			}
			b.WriteString(" " + g.float())
			if !g.chance(0.03) {
				b.WriteString(" " + g.timestamp())
			}
			if g.chance(0.15) {
				var ex []string
				for i := g.rng.Intn(3); i > 0; i-- {
					ex = append(ex, g.plainName(omLetters, omLabelRst)+`="`+g.text(false, false)+`"`)
				}
				b.WriteString(" # {" + strings.Join(ex, ",") + "} " + g.float())
				if g.chance(0.5) {
					b.WriteString(" " + g.timestamp())
				}
			}
			b.WriteString("\n")
		}
	}
	switch {
	case g.chance(0.03):
	case g.chance(0.03):
		b.WriteString("# EOF")
	case g.chance(0.03):
		b.WriteString("# EOF\n" + g.pick("\n", "a 1 1\n", " ", "# EOF\n"))
	default:
		b.WriteString("# EOF\n")
	}
	return b.String()
}

// mutate applies 1-3 random byte edits.
func (g *omGen) mutate(s string) string {
	b := []byte(s)
	interesting := []byte(" \n\"\\{}=,#x0.-+e\xff\x00")
	for k := 1 + g.rng.Intn(3); k > 0; k-- {
		if len(b) == 0 {
			b = append(b, interesting[g.rng.Intn(len(interesting))])
			continue
		}
		i := g.rng.Intn(len(b))
		switch g.rng.Intn(4) {
		case 0:
			b = append(b[:i], b[i+1:]...)
		case 1:
			c := interesting[g.rng.Intn(len(interesting))]
			b = append(b[:i], append([]byte{c}, b[i:]...)...)
		case 2:
			b[i] = interesting[g.rng.Intn(len(interesting))]
		default:
			// Repeat a line.
			start := bytes.LastIndexByte(b[:i], '\n') + 1
			end := bytes.IndexByte(b[i:], '\n')
			if end < 0 {
				continue
			}
			line := append([]byte{}, b[start:i+end+1]...)
			b = append(b[:start], append(line, b[start:]...)...)
		}
	}
	return string(b)
}
