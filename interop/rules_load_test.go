package interop_test

// Ferrite's reading of rule files (crates/rules) against Prometheus' own
// rulefmt.ParseFile: the same files through `rulesdump` (Rust, from
// RULESDUMP_BIN) and `promrules` (Go, built here) must give the same
// groups and rules (every field, and the expression as each parser prints
// it), or the same errors in the same order. Two allowances:
//
//   - Prometheus walks label and annotation maps in Go's random order, so
//     runs of errors about labels, annotations and their templates are
//     compared sorted;
//   - where either message is a YAML syntax error (`yaml: ...` other
//     than type errors), only the refusal is compared: Ferrite's YAML
//     parser words those its own way (and on mangled YAML may stop at
//     another fault than libyaml, which reads ahead less);
//   - in the mutated files (one in eight, edited at random places with
//     bytes that matter to YAML), a few are read by one YAML parser and
//     refused by the other: libyaml (YAML 1.1) refuses `?` and ` :` in
//     some plain scalars that YAML 1.2 allows, and reads a quoted scalar
//     continued on a line indented less than its key, which Ferrite's
//     parser refuses ("invalid indentation in multiline quoted scalar")
//     as the YAML specification has it. They are counted, and must stay
//     rare (at most one file in 200);
//   - in the mutated files, PromQL parse errors are compared without
//     their message (a mutated expression finds the PromQL parsers'
//     remaining differences in wording, which crates/promql's own
//     conformance tests track);
//   - for the few expressions whose parse error Ferrite's PromQL parser
//     words or places differently (promqlMessageDeviations, hand-made
//     cases only), the message after "could not parse expression:" is
//     left out, and checked to still differ, so that a fix of the parser
//     shows here.
//
// Type errors, unknown and duplicate keys (yaml.v3's `unmarshal errors`),
// bad durations and every validation message are compared exactly.

import (
	"errors"
	"fmt"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
)

func TestRuleFilesMatchPrometheus(t *testing.T) {
	cases := handMadeRuleFiles()
	seed := int64(20261204)
	if s := os.Getenv("INTEROP_RULES_SEED"); s != "" {
		fmt.Sscan(s, &seed)
	}
	rng := rand.New(rand.NewSource(seed))
	mutated := map[int]bool{}
	for i := 0; i < 4000; i++ {
		c := randomRuleFile(rng)
		if i%8 == 7 {
			c = mutateYAML(rng, c)
			mutated[len(cases)] = true
		}
		cases = append(cases, c)
	}
	dir := t.TempDir()
	files := make([]string, len(cases))
	for i, c := range cases {
		files[i] = filepath.Join(dir, fmt.Sprintf("rules%05d.yml", i))
		if err := os.WriteFile(files[i], []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	deviating := map[int]bool{}
	for i, c := range cases {
		for _, e := range promqlMessageDeviations {
			if strings.Contains(c, e) {
				deviating[i] = true
			}
		}
	}
	prom := dumpResults(t, goCmdBin(t, "promrules"), nil, files)
	fer := dumpResults(t, exampleBin(t, "RULESDUMP_BIN", "ferrite-rules", "rulesdump"), nil, files)
	oks, errs, bad, syntax, order, lenient := 0, 0, 0, 0, 0, 0
	for i := range cases {
		p, f := prom[i], fer[i]
		if strings.HasPrefix(p, "ok") {
			oks++
		} else {
			errs++
		}
		if mutated[i] {
			p, f = withoutParseMessages(p), withoutParseMessages(f)
		}
		switch {
		case p == f:
		case mutated[i] && (isYAMLSyntaxError(p) && strings.HasPrefix(f, "ok") ||
			strings.HasPrefix(p, "ok") && strings.Contains(f, `invalid\x20indentation\x20in\x20multiline\x20quoted\x20scalar`)):
			// Mangled YAML one parser reads and the other refuses.
			lenient++
			continue
		case isYAMLSyntaxError(p) || isYAMLSyntaxError(f):
			syntax++
		case !deviating[i]:
			order++
		}
		if deviating[i] {
			if p == f {
				t.Errorf("case %d: the PromQL parser now words this as Prometheus does: drop it from promqlMessageDeviations\n%s", i, cases[i])
			}
			p, f = withoutParseMessages(p), withoutParseMessages(f)
		}
		if !sameRuleDump(p, f) {
			bad++
			if bad <= 12 {
				t.Errorf("case %d:\n%s\nprometheus:\n%s\nferrite:\n%s", i, cases[i], p, f)
			}
		}
	}
	if bad > 12 {
		t.Errorf("... %d mismatches in all", bad)
	}
	t.Logf("%d files: %d load, %d refused; %d YAML syntax errors (compared as refusals), %d with map-order errors (compared sorted), %d mangled files one YAML parser reads",
		len(cases), oks, errs, syntax, order, lenient)
	if lenient > len(cases)/200 {
		t.Errorf("%d mangled files read by one YAML parser only: more than expected", lenient)
	}
	if oks < len(cases)/5 || errs < len(cases)/5 {
		t.Errorf("the random files should both load and fail often: %d load, %d refused", oks, errs)
	}
}

// promqlMessageDeviations are expressions that Ferrite's PromQL parser
// refuses with another message or position than Prometheus' parser:
// an invalid regular expression in a matcher (Go's regexp message, at the
// selector), a second colon in a subquery, a stray `)` (one column
// further in Prometheus) and an unclosed grouping list.
var promqlMessageDeviations = []string{`up{job=~\"(\"}`, `up{job=~"("}`, "rate(up[5m:1m:])", "expr: up)", "sum by (job (up)"}

var parseMessage = regexp.MustCompile(`could\\x20not\\x20parse\\x20expression:.*`)

// withoutParseMessages drops the parser's message from each error line.
func withoutParseMessages(d string) string {
	return parseMessage.ReplaceAllString(d, "could not parse expression: ...")
}

// mapOrderError matches the errors Prometheus reports in Go's map order:
// invalid label or annotation names and values, and template errors.
var mapOrderError = regexp.MustCompile(`^error .*?(: |\\x20)(invalid\\x20label\\x20name|invalid\\x20label\\x20value|invalid\\x20annotation\\x20name|label\\x20\\x22|annotation\\x20\\x22)`)

// sameRuleDump compares two dumps with the allowances the file's comment
// lists.
func sameRuleDump(p, f string) bool {
	if p == f {
		return true
	}
	if strings.HasPrefix(p, "error ") && strings.HasPrefix(f, "error ") &&
		(isYAMLSyntaxError(p) || isYAMLSyntaxError(f)) {
		return true
	}
	return canonicalRuleDump(p) == canonicalRuleDump(f)
}

// isYAMLSyntaxError is whether a dump's first error is yaml.v3's parser
// refusing the text (not a type error: those Ferrite words exactly).
func isYAMLSyntaxError(d string) bool {
	first, _, _ := strings.Cut(d, "\n")
	return strings.HasPrefix(first, "error ") && strings.Contains(first, `yaml:\x20`) &&
		!strings.Contains(first, `yaml:\x20unmarshal\x20errors`)
}

// canonicalRuleDump sorts each run of consecutive map-order errors.
func canonicalRuleDump(d string) string {
	lines := strings.Split(d, "\n")
	for i := 0; i < len(lines); {
		j := i
		for j < len(lines) && mapOrderError.MatchString(lines[j]) {
			j++
		}
		if j > i {
			sort.Strings(lines[i:j])
			i = j
		} else {
			i++
		}
	}
	return strings.Join(lines, "\n")
}

func handMadeRuleFiles() []string {
	return []string{
		"",
		"# only a comment\n",
		"---\n",
		"groups:\n",
		"groups: []\n",
		"groups: {}\n",
		"foo\n",
		"- a\n",
		"groups:\n  - name: g\n    rules:\n      - record: job:up:sum\n        expr: sum by (job) (up)\n",
		"groups:\n  - name: ''\n    rules: []\n  - rules: []\n",
		"groups:\n  - null\n  - name: g\n    rules:\n      - null\n      - {record: x, expr: up}\n",
		"groups:\n  - name: g\n    name: h\n    rules: []\n",
		"groups:\n  - name: g\n    interval: abc\n    rules: []\n",
		"groups:\n  - name: g\n    limit: abc\n    foo: 1\n    rules:\n      - record: [1]\n        expr: up\n        bar: 2\n",
		"groups:\n  - name: g\n    rules:\n      - record: a\n        expr: |\n          sum(\n            up\n          ) by (\n",
		"groups:\n  - name: g\n    rules:\n      - expr: up\n      - record: a\n        alert: b\n        expr: ''\n",
		"groups:\n  - name: g\n    labels: {'': x, __name__: y, ok: z}\n    rules:\n      - record: x\n        expr: up\n        labels: {'': x, a: ~}\n",
		"groups:\n  - name: g\n    rules:\n      - record: 'a{b}'\n        expr: up\n        for: 5m\n        keep_firing_for: 1m\n        annotations: {a: b}\n",
		"groups:\n  - name: g\n    rules:\n      - record: a\n        expr: sort_by_label(up, \"a\")\n      - record: b\n        expr: limitk(2, up)\n",
		"groups:\n  - name: g\n    rules:\n      - record: a\n        expr: sum(ts_of_max_over_time(up[5m])) + sort_by_label(up, \"a\")\n",
		"groups:\n  - name: g\n    query_offset: ~\n    limit: ~\n    interval: ~\n    rules:\n      - record: a\n        expr: up\n        for: ''\n",
		"groups:\n  - name: g\n    rules:\n      - record: a\n        expr: up\n---\ngroups: [\n",
		"groups:\n  - &g\n    name: g\n    rules:\n      - &r {record: a, expr: up}\n      - *r\n  - name: h\n    rules: [*r]\n",
		"groups:\n  - name: g\n    labels: &l {a: b}\n    rules:\n      - record: a\n        expr: up\n        labels:\n          <<: *l\n          c: d\n",
		"groups:\n  - name: g\n    rules:\n      - <<: {record: a, expr: up}\n        labels: {x: y}\n      - <<: [{record: b}, {expr: down, record: c}]\n",
		"groups:\n  - name: g\n    rules:\n      - <<: 5\n",
		"groups:\n  - name: g\n    limit: 1.7\n    rules: []\n  - name: h\n    limit: 0x10\n    rules: []\n  - name: i\n    limit: 1_000\n    rules: []\n  - name: j\n    limit: 010\n    rules: []\n",
		"groups:\n  - name: g\n    limit: '10'\n    rules: []\n",
		"groups:\n  - name: g\n    limit: 2001-12-14\n    rules: []\n",
		"groups:\n  - name: g\n    interval: 5\n    rules: []\n",
		"groups:\n  - name: g\n    interval: 5x\n    rules: []\n",
		"groups:\n  - name: g\n    interval: 300y\n    rules: []\n",
		"groups:\n  - name: g\n    interval: [1m]\n    rules: []\n",
		"groups:\n  - name: g\n    query_offset: 0s\n    rules: []\n",
		"groups:\n  - name: 1\n    rules:\n      - record: true\n        expr: 1\n",
		"groups:\n  - name: g\n    rules:\n      - record: a\n        expr: up\n        labels: [a]\n        annotations: x\n",
		"groups:\n  - name: g\n    rules:\n      - record: a\n        expr: up\n        labels: {a: [1], b: {c: d}}\n",
		"groups:\n  - name: g\n    rules: {}\n",
		"groups:\n  - name: g\n    rules:\n      - 5\n      - [a]\n",
		"groups:\n  - name: g\n    rules:\n      - record: a\n        record: b\n        expr: up\n",
		"groups:\n  - {name: g, rules: [{record: \"a b\", expr: up}, {alert: A, expr: up > 0, for: 5m, keep_firing_for: 1m, labels: {severity: page}, annotations: {summary: \"{{ $labels.job }} is down\"}}]}\n",
		"groups:\n  - name: g\n    rules:\n      - alert: A\n        expr: up\n        annotations: {'': x, ok: y}\n",
		"groups:\n  - name: é\n    rules:\n      - record: é:x\n        expr: up\n",
		"groups:\n- name: g\n  rules:\n  - record: a\n    expr: \"sum(\\n up)\"\n",
		"groups:\n  - name: g\n    rules:\n      - record: a\n        expr: 'rate(x[5m]'\n",
		"groups:\n  - name: g\n    unknown: 1\n    rules:\n      - record: a\n        expr: up\n",
		"groups:\n  - name: g\n    rules:\n      - record: a\n        expr: up\n    labels:\n      a: 1\n      a: 2\n",
		"unknown: 1\ngroups: []\n",
		"groups:\n  - name: g\n    rules:\n      - record: a\n        expr: 'up{job=~\"(\"}'\n",
		"groups:\n  - name: g\n    rules:\n      - record: a\n        expr: rate(up[5m:1m:])\n",
		"groups:\n  - name: g\n    rules:\n      - record: a\n        expr: up)\n",
		"groups:\n  - name: g\n    rules:\n      - record: a\n        expr: sum by (job (up)\n",
		"groups:\n  - name: g\n    rules:\n      - record: a\n        expr: '\"just a string\"'\n      - record: b\n        expr: 'up[5m]'\n",
	}
}

// mutateYAML edits a file at 1-3 random places with bytes that matter to
// YAML (indentation, indicators, quotes, anchors, tags): most edits break
// the syntax, others change the structure or a value's type.
func mutateYAML(rng *rand.Rand, s string) string {
	if s == "" {
		return s
	}
	pieces := []string{" ", "  ", "\n", ":", "- ", "[", "]", "{", "}", ",", "'", "\"", "#", "&a ", "*a", "!!str ", "? ", "|", "~", "<<: "}
	b := []byte(s)
	for n := 1 + rng.Intn(3); n > 0; n-- {
		at := rng.Intn(len(b))
		switch rng.Intn(3) {
		case 0: // delete a byte
			b = append(b[:at], b[at+1:]...)
		default: // insert a piece
			p := pieces[rng.Intn(len(pieces))]
			b = append(b[:at], append([]byte(p), b[at:]...)...)
		}
		if len(b) == 0 {
			break
		}
	}
	return string(b)
}

// randomTemplate is a label or annotation template: text and actions
// made of Go template tokens, mostly well formed, often not.
func randomTemplate(rng *rand.Rand) string {
	pick := func(xs ...string) string { return xs[rng.Intn(len(xs))] }
	operands := []string{"$labels", "$value", "$labels.job", ".Foo", ".", "$", "$x", "$externalURL", "1", "1.5",
		"0x1F", "-2", "'c'", `"s"`, "`raw`", "true", "nil", "humanize $value", `printf "%.2f" $value`,
		"(humanize $value)", `index $labels "a"`, "bogus", "3x", "1__0", `"\q"`, "'ab'", "é", ".a.b", "$labels.a.b"}
	action := func() string {
		switch rng.Intn(12) {
		case 0:
			return "{{ if " + pick(operands...) + " }}" + pick("a", "", "{{ $value }}") + pick("{{ end }}", "{{ else }}b{{ end }}",
				"{{ else if 1 }}c{{ end }}", "", "{{ else }}{{ else }}{{ end }}")
		case 1:
			return "{{ range " + pick("$k, $v := ", "$v := ", "", "$a, $b, $c := ", "$a, 1 ") + pick(operands...) + " }}" +
				pick("{{ $k }}", "{{ break }}", "{{ continue }}", "x", "{{ $v }}") + pick("{{ end }}", "")
		case 2:
			return "{{ with " + pick("$x := ", "") + pick(operands...) + " }}{{ . }}" + pick("{{ end }}", "{{ else with 1 }}{{ end }}", "")
		case 3:
			return "{{- " + pick(operands...) + " -}}"
		case 4:
			return "{{/* " + pick("c", "", "*/") + " */}}"
		case 5:
			return "{{ " + pick(operands...) + " | " + pick("humanize", "printf \"%s\"", "len", "1", "toUpper") + " }}"
		case 6:
			return "{{ $x := " + pick(operands...) + " }}{{ $x }}"
		case 7:
			return "{{ " + pick("define", "template", "block", "end", "else", "break", "continue") + " " + pick(`"t"`, "", "x", ".") + " }}"
		case 8:
			return "{{" + pick("", " ", "-", "- ") + pick(operands...) + pick("", " ", " -", ")", "(", "}", ",", ":=") + "}}"
		case 9:
			return pick("{{", "}}", "{{ ", " }}", "{{{", "}}}")
		default:
			return "{{ " + pick(operands...) + " }}"
		}
	}
	var b strings.Builder
	for n := rng.Intn(4); n >= 0; n-- {
		if rng.Intn(2) == 0 {
			b.WriteString(pick("text ", "a\nb ", "", " ", "100%"))
		}
		b.WriteString(action())
	}
	return b.String()
}

// randomRuleFile is a rule file with 0-3 groups of 0-4 rules: mostly
// valid values, an invalid one now and then (names, durations, limits,
// label names, expressions, misplaced fields, unknown keys), in block or
// flow style, quoted or not.
func randomRuleFile(rng *rand.Rand) string {
	pick := func(xs ...string) string { return xs[rng.Intn(len(xs))] }
	maybeBad := func(good []string, bad ...string) string {
		if rng.Intn(12) == 0 {
			return pick(bad...)
		}
		return pick(good...)
	}
	durations := []string{"5m", "1h", "30s", "0s", "0", "1m30s", "100ms", "2h", "1d"}
	badDurations := []string{"abc", "5", "-1m", "1.5h", "5x", "''", "~", "[1m]", "300y"}
	goodExprs := []string{
		"up", "sum by (job) (up)", "rate(http_requests_total[5m])", "up == 1", "vector(1)", "1",
		"histogram_quantile(0.9, sum by (le) (rate(b[5m])))", "up offset 5m", "avg_over_time(up[1h:5m])",
		`label_replace(up, "a", "$1", "job", "(.*)")`, "time()", `{__name__="up"}`, "count(up) > 3",
		"topk(3, up)", "-up", "up and on (job) up", "absent(up)", "sum without (instance) (rate(x[1m])) / 2",
		`sum(rate(http_requests_total{code=~"5.."}[5m])) by (job)`, "max(up) by (job) > bool 0",
		"quantile(0.5, up)", "count_values(\"v\", up)", "up @ 1700000000", "deriv(x[10m])",
		"sum(up) / count(up)", "1 + 2 * 3", "(up)", "changes(x[1h]) > 0",
	}
	badExprs := []string{
		"sum(", "up[", "rate(up)", "foo bar", "{}", "1 +", "unknown_fn(up)", "topk(up)",
		`sort_by_label(up, "a")`, "limitk(2, up)", "ts_of_max_over_time(up[5m])", "sum(up) by", "(up",
		"up[5m] + 1", "rate(up[5m:])", `up{job="a"`, "up{job=}", "sum(up) without ()", "abs(up, up)",
		"up offset", "1 / on() 2", "up @ end()", "x[1m] offset 1d",
	}
	// expr is an expression written as a YAML value: quoted in either
	// style, a block scalar (not in flow style), or plain where YAML
	// reads it back as it is.
	expr := func(flow bool) string {
		e := maybeBad(goodExprs, badExprs...)
		switch rng.Intn(6) {
		case 0:
			return fmt.Sprintf("%q", e)
		case 1:
			if !flow {
				return "|\n          " + e
			}
		case 2:
			if !strings.ContainsAny(e, "'") {
				return "'" + e + "'"
			}
		}
		special := ":#{}[],&*!|>'\"%@`"
		if flow && strings.ContainsAny(e, special) || strings.ContainsAny(e[:1], special+"-?(") ||
			strings.Contains(e, ": ") || strings.Contains(e, " #") {
			return fmt.Sprintf("%q", e)
		}
		return e
	}
	labelNames := []string{"severity", "team", "job", "a_b", `"a-b"`, `"é"`, "x1"}
	badLabelNames := []string{`""`, "__name__"}
	labelValues := []string{"page", `""`, "'1'", "1", "x y", "~", `"a\tb"`, "true"}
	labels := func(indent string) string {
		n := rng.Intn(3)
		var pairs []string
		for _, k := range rng.Perm(len(labelNames))[:n] {
			pairs = append(pairs, labelNames[k]+": "+pick(labelValues...))
		}
		if rng.Intn(15) == 0 {
			pairs = append(pairs, pick(badLabelNames...)+": x")
		}
		return "{" + strings.Join(pairs, ", ") + "}"
	}
	var b strings.Builder
	if rng.Intn(40) == 0 {
		return pick("foo\n", "[]\n", "groups: {}\n", "groups: 5\n", "", "groups: ~\n", "unknown: 1\n")
	}
	b.WriteString("groups:\n")
	groups := rng.Intn(4)
	names := []string{"g1", "g2", "recorded", `"with space"`, "'1'", "1", "true"}
	for g := 0; g < groups; g++ {
		if rng.Intn(50) == 0 {
			b.WriteString("  - null\n")
			continue
		}
		name := maybeBad(names, `""`, "~")
		if rng.Intn(30) == 0 {
			b.WriteString("  - rules: []\n")
			continue
		}
		fmt.Fprintf(&b, "  - name: %s\n", name)
		field := func(key, value string) {
			if rng.Intn(4) == 0 {
				fmt.Fprintf(&b, "    %s: %s\n", key, value)
			}
		}
		field("interval", maybeBad(durations, badDurations...))
		field("query_offset", maybeBad(durations, badDurations...))
		field("limit", maybeBad([]string{"0", "10", "1", "100"}, "-1", "'10'", "abc", "1.5", "0x10", "1e3", "~", "[]"))
		if rng.Intn(5) == 0 {
			fmt.Fprintf(&b, "    labels: %s\n", labels("      "))
		}
		if rng.Intn(60) == 0 {
			b.WriteString("    unknown_field: 1\n")
		}
		rules := rng.Intn(5)
		if rules == 0 && rng.Intn(3) == 0 {
			b.WriteString(pick("    rules: []\n", "    rules:\n", "    rules: ~\n"))
			continue
		}
		b.WriteString("    rules:\n")
		for r := 0; r < rules; r++ {
			if rng.Intn(60) == 0 {
				b.WriteString(pick("      - null\n", "      - 5\n", "      - [a]\n"))
				continue
			}
			var fields []string
			flow := rng.Intn(4) == 0
			alerting := rng.Intn(4) == 0
			recordNames := []string{"job:up:sum", "x", "instance:cpu:rate5m", `"a.b"`, `"é:x"`, "up_total"}
			if alerting {
				fields = append(fields, "alert: "+maybeBad([]string{"HighLatency", "Down", `"Disk full"`}, `""`))
			} else if rng.Intn(40) != 0 {
				fields = append(fields, "record: "+maybeBad(recordNames, "'a{b}'", `""`, "'x}'"))
			}
			if rng.Intn(40) == 0 {
				fields = append(fields, pick("record: also", "alert: Also"))
			}
			if rng.Intn(30) != 0 {
				fields = append(fields, "expr: "+expr(flow))
			}
			if alerting || rng.Intn(25) == 0 {
				if rng.Intn(2) == 0 {
					fields = append(fields, "for: "+maybeBad(durations, badDurations...))
				}
				if rng.Intn(4) == 0 {
					fields = append(fields, "keep_firing_for: "+maybeBad(durations, badDurations...))
				}
			}
			if rng.Intn(3) == 0 {
				fields = append(fields, "labels: "+labels("        "))
			}
			if alerting && rng.Intn(3) == 0 {
				// Random templates: Go's text/template parser's every path.
				var pairs []string
				for k := rng.Intn(3); k >= 0; k-- {
					pairs = append(pairs, fmt.Sprintf("%s: %q", pick("summary", "description", "x", "severity"), randomTemplate(rng)))
				}
				key := "annotations"
				if rng.Intn(3) == 0 {
					key = "labels"
				}
				fields = append(fields, key+": {"+strings.Join(pairs, ", ")+"}")
			} else if alerting || rng.Intn(25) == 0 {
				if rng.Intn(2) == 0 {
					fields = append(fields, "annotations: "+pick(
						`{summary: "{{ $labels.job }} is down"}`,
						`{description: "value {{ $value }}", runbook: "https://x/y"}`,
						`{}`, `{"": x}`,
						`{a: "{{ humanize $value }}", b: "{{ if gt $value 1.0 }}big{{ end }}"}`,
					))
				}
			}
			if rng.Intn(60) == 0 {
				fields = append(fields, "unknown: 1")
			}
			rng.Shuffle(len(fields), func(i, j int) { fields[i], fields[j] = fields[j], fields[i] })
			if len(fields) == 0 {
				b.WriteString("      - {}\n")
				continue
			}
			if flow {
				fmt.Fprintf(&b, "      - {%s}\n", strings.Join(fields, ", "))
				continue
			}
			for k, f := range fields {
				if k == 0 {
					fmt.Fprintf(&b, "      - %s\n", f)
				} else {
					fmt.Fprintf(&b, "        %s\n", f)
				}
			}
		}
	}
	return b.String()
}

// TestCheckRulesMatchesPromtool runs `ferrite check rules` and `promtool
// check rules` on the same files, one at a time and several together,
// with the lint settings, and on standard input: the same standard
// output, standard error and exit code. Files whose errors Prometheus
// reports in Go's map order have one such error at most, so the streams
// compare exactly.
func TestCheckRulesMatchesPromtool(t *testing.T) {
	fer := ferriteBin(t)
	pt := promtoolBin(t)
	dir := t.TempDir()
	write := func(name, text string) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}
	good := write("good.yml", "groups:\n  - name: g\n    rules:\n      - record: job:up:sum\n        expr: sum by (job) (up)\n      - alert: Down\n        expr: up == 0\n        for: 5m\n        annotations: {summary: '{{ $labels.job }} is down'}\n")
	dup := write("dup.yml", "groups:\n  - name: g\n    labels: {team: a}\n    rules:\n      - record: x\n        expr: up\n      - record: x\n        expr: up + 1\n  - name: h\n    rules:\n      - record: x\n        expr: up\n        labels: {team: a}\n      - alert: y\n        expr: up\n      - alert: y\n        expr: down\n")
	bad := write("bad.yml", "groups:\n  - name: g\n    rules:\n      - expr: up\n      - record: a\n        alert: b\n        expr: 'sum('\n        for: 5m\n")
	unknown := write("unknown.yml", "groups:\n  - name: g\n    owner: me\n    rules:\n      - record: a\n        expr: up\n        note: x\n")
	yamlBad := write("type.yml", "groups:\n  - name: g\n    limit: abc\n    interval: 1m\n    rules: []\n")
	empty := write("empty.yml", "")
	missing := filepath.Join(dir, "missing.yml")
	cases := [][]string{
		{good}, {dup}, {bad}, {unknown}, {yamlBad}, {empty},
		{good, bad, dup}, {dup, good},
		{"--lint=none", dup}, {"--lint=all", dup}, {"--lint-fatal", dup}, {"--lint-fatal", dup, bad},
		{"--lint=bogus,duplicate-rules", good}, {"--ignore-unknown-fields", unknown},
		{missing}, {good, missing},
	}
	for _, args := range cases {
		full := append([]string{"check", "rules"}, args...)
		p := run(pt, nil, full...)
		f := run(fer, nil, full...)
		// promtool and ferrite name themselves in usage errors.
		pErr := strings.ReplaceAll(p.stderr, "promtool:", "ferrite:")
		if p.stdout != f.stdout || pErr != f.stderr || exitCode(p.err) != exitCode(f.err) {
			t.Errorf("check rules %v:\npromtool (exit %d):\n%s\n%s\nferrite (exit %d):\n%s\n%s",
				args, exitCode(p.err), p.stdout, p.stderr, exitCode(f.err), f.stdout, f.stderr)
		}
	}
	// Standard input.
	for _, file := range []string{good, dup, bad} {
		text, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		outputs := map[string]string{}
		for name, bin := range map[string]string{"promtool": pt, "ferrite": fer} {
			cmd := exec.Command(bin, "check", "rules")
			cmd.Stdin = strings.NewReader(string(text))
			var out, errb strings.Builder
			cmd.Stdout, cmd.Stderr = &out, &errb
			err := cmd.Run()
			outputs[name] = fmt.Sprintf("exit %d\n%s\n%s", exitCode(err), out.String(), errb.String())
		}
		if outputs["promtool"] != outputs["ferrite"] {
			t.Errorf("check rules < %s:\npromtool: %s\nferrite: %s", file, outputs["promtool"], outputs["ferrite"])
		}
	}
}

// exitCode is a finished command's exit code (0 without error).
func exitCode(err error) int {
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode()
	}
	if err != nil {
		return -1
	}
	return 0
}
