package interop_test

// Ferrite's relabeling (crates/config/src/relabel.rs) against Prometheus'
// own model/relabel: the same case files through `relabeldump` (Rust, from
// RELABELDUMP_BIN) and `promrelabel` (Go, built here) must give the same
// relabeled labels, the same drops and the same validation messages, or
// both fail to decode. Hand-made cases pin the subtle rules (Go's template
// expansion, labelmap order, hashmod's hash, keepequal's written regex);
// random ones cover the combinations.

import (
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

type relabelCase struct {
	name string
	yaml string
	want string // for hand-made cases: Prometheus' result ("" for random)
}

func TestRelabelMatchesPrometheus(t *testing.T) {
	cases := handRelabelCases()
	rng := rand.New(rand.NewSource(20261127))
	for i := 0; i < 6000; i++ {
		cases = append(cases, relabelCase{name: fmt.Sprintf("random %d", i), yaml: randomRelabelCase(rng)})
	}
	dir := t.TempDir()
	files := make([]string, len(cases))
	for i, c := range cases {
		files[i] = filepath.Join(dir, fmt.Sprintf("case%05d.yml", i))
		if err := os.WriteFile(files[i], []byte(c.yaml), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	prom := dumpResults(t, goCmdBin(t, "promrelabel"), nil, files)
	fer := dumpResults(t, exampleBin(t, "RELABELDUMP_BIN", "ferrite-config", "relabeldump"), nil, files)
	for i := range prom {
		prom[i], fer[i] = strings.TrimSuffix(prom[i], "\n"), strings.TrimSuffix(fer[i], "\n")
	}
	kinds := map[string]int{}
	bad := 0
	for i, c := range cases {
		kind, _, _ := strings.Cut(prom[i], " ")
		kinds[kind]++
		if c.want != "" && prom[i] != c.want {
			t.Errorf("%s: Prometheus says %q, the case expects %q (update the case)\n%s", c.name, prom[i], c.want, c.yaml)
		}
		if prom[i] != fer[i] {
			bad++
			if bad <= 15 {
				t.Errorf("%s:\n%s\nprometheus: %s\nferrite:    %s", c.name, c.yaml, prom[i], fer[i])
			}
		}
	}
	if bad > 15 {
		t.Errorf("... %d mismatches in all", bad)
	}
	t.Logf("%d cases (%d hand-made): %v", len(cases), len(handRelabelCases()), kinds)
	// The random cases must reach every outcome, or they test little.
	for _, k := range []string{"keep", "drop", "invalid", "unparsable"} {
		if kinds[k] < 20 {
			t.Errorf("only %d cases end %q", kinds[k], k)
		}
	}
}

func handRelabelCases() []relabelCase {
	return []relabelCase{
		{name: "address split, labelmap, hashmod, templates, uppercase", yaml: `
labels: {__address__: "host:9100", __meta_x: "1", job: node, a: "x"}
configs:
  - source_labels: [__address__]
    regex: "([^:]+):([0-9]+)"
    target_label: host
  - regex: "__meta_(.+)"
    action: labelmap
  - source_labels: [job]
    target_label: shard
    modulus: 7
    action: hashmod
  - source_labels: [a, job]
    separator: "-"
    target_label: "up_$1"
    regex: "(x)-node"
    replacement: "${1}y$$z$1x"
  - action: Uppercase
    source_labels: [job]
    target_label: J
`, want: `keep J=NODE,__address__=host:9100,__meta_x=1,a=x,host=host,job=node,shard=6,up_x=xy$z,x=1`},
		{name: "labelmap onto one name keeps the last in builder order", yaml: `
labels: {b: "2", a: "1", c: "3"}
configs:
  - source_labels: [c]
    target_label: z
  - regex: "(.*)"
    replacement: "m"
    action: labelmap
`, want: `keep a=1,b=2,c=3,m=3,z=3`},
		{name: "keepequal refuses a written regex, even the default", yaml: `
labels: {a: "1"}
configs:
  - {action: keepequal, source_labels: [a], target_label: b, regex: "(.*)"}
`, want: "invalid keepequal action requires only 'source_labels' and `target_label`, and no other fields"},
		{name: "null action", yaml: "labels: {a: \"1\"}\nconfigs:\n  - action:\n", want: "invalid relabel action cannot be empty"},
		{name: "null separator joins with nothing", yaml: `
labels: {a: "1", b: "2"}
configs:
  - {source_labels: [a, b], separator: , target_label: c}
`, want: "keep a=1,b=2,c=12"},
		{name: "an empty replacement deletes the target", yaml: `
labels: {a: "1", b: "2"}
configs:
  - {source_labels: [a], target_label: b, replacement: ""}
`, want: "keep a=1"},
		{name: "legacy target templates", yaml: `
scheme: legacy
labels: {a: "1"}
configs:
  - {source_labels: [a], target_label: "1$a"}
`, want: `invalid "1$a" is invalid 'target_label' for replace action`},
		{name: "a template naming an invalid label skips the rule", yaml: `
scheme: legacy
labels: {a: "x-y"}
configs:
  - {source_labels: [a], target_label: "$1"}
`, want: "keep a=x-y"},
		{name: "Go's case mapping keeps sharp s", yaml: `
labels: {a: "straße İ ᾳ"}
configs:
  - {source_labels: [a], target_label: u, action: uppercase}
  - {source_labels: [a], target_label: l, action: lowercase}
`, want: `keep a=stra\xc3\x9fe\x20\xc4\xb0\x20\xe1\xbe\xb3,l=stra\xc3\x9fe\x20i\x20\xe1\xbe\xb3,u=STRA\xc3\x9fE\x20\xc4\xb0\x20\xe1\xbe\xbc`},
		{name: "unknown action", yaml: "labels: {a: \"1\"}\nconfigs:\n  - {action: rename}\n", want: "unparsable"},
		{name: "labeldrop with a target", yaml: "labels: {a: \"1\"}\nconfigs:\n  - {action: labeldrop, regex: a, target_label: b}\n", want: "invalid labeldrop action requires only 'regex', and no other fields"},
	}
}

var (
	rlNames = []string{"__address__", "__meta_a", "__meta_b_c", "job", "a", "b", "x_1", "é", "a-b",
		"__name__", "instance", "missing"}
	rlValues = []string{"1", "x", "host:9100", "node", "a;b", "ÉCOLE", "straße", "İi", "ᾳ", "ǅ", "ΣΑΣ",
		"x\ny", "  ", "$1", "0123", "a-b", "Node"}
	rlRegexes = []string{"(.*)", "", ".*", "(.+)", "a(.*)", "__meta_(.+)", "__meta_([a-z]+)_([a-z]+)",
		"(?P<n>[a-z]+)([0-9]*)", "([^:]+):([0-9]+)", "x|node", "(a)?(b)?", "[A-Z]+", "(?i)NODE",
		".+;.+", "(.*);(.*)", "[a-z_]+", "(?P<name>.)(.*)"}
	rlTemplates = []string{"new", "$1", "${1}", "$1x", "${1}x", "$2", "$$", "$", "$n", "${n}", "",
		"lit", "$0", "$10", "${1", "a-b", "$é", "up_$1", "$01", "${ n}", "_$1_", "$name", "${name}_x",
		"$1$2", "instance", "__meta_z"}
	rlSeparators = []string{";", "", "-", "::"}
	rlModuli     = []string{"0", "1", "7", "1000000007", "18446744073709551615"}
	rlActions    = []string{"replace", "keep", "drop", "keepequal", "dropequal", "hashmod", "labelmap",
		"labeldrop", "labelkeep", "lowercase", "uppercase", "Replace", "LabelMap", "KEEP"}
)

// yq quotes a string for YAML.
func yq(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"' || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r == '\n':
			b.WriteString(`\n`)
		case r < 0x20:
			fmt.Fprintf(&b, `\x%02x`, r)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}

func randomRelabelCase(rng *rand.Rand) string {
	pick := func(xs []string) string { return xs[rng.Intn(len(xs))] }
	var b strings.Builder
	if rng.Intn(5) == 0 {
		b.WriteString("scheme: legacy\n")
	}
	b.WriteString("labels: {")
	present := rlNames[:len(rlNames)-1] // "missing" never is
	order := rng.Perm(len(present))[:1+rng.Intn(5)]
	for i, k := range order {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%s: %s", yq(present[k]), yq(pick(rlValues)))
	}
	b.WriteString("}\nconfigs:\n")
	rules := 1 + rng.Intn(4)
	for i := 0; i < rules; i++ {
		b.WriteString("  -")
		fields := 0
		field := func(key, value string) {
			if fields > 0 {
				b.WriteString("   ")
			}
			fmt.Fprintf(&b, " %s: %s\n", key, value)
			fields++
		}
		// Each field absent, null (rarely) or given.
		maybe := func(key string, value func() string) {
			switch r := rng.Intn(20); {
			case r == 0:
				field(key, "")
			case r < 9:
				field(key, value())
			}
		}
		sources := func() string {
			k := rng.Intn(4)
			names := make([]string, k)
			for j := range names {
				names[j] = yq(pick(rlNames))
			}
			return "[" + strings.Join(names, ", ") + "]"
		}
		regex := func() string {
			if rng.Intn(40) == 0 {
				return yq("(") // does not compile
			}
			return yq(pick(rlRegexes))
		}
		modulus := func() string {
			if rng.Intn(40) == 0 {
				return "-1" // not a uint64
			}
			return pick(rlModuli)
		}
		template := func() string { return yq(pick(rlTemplates)) }
		if rng.Intn(4) > 0 {
			// Well formed for its action, mostly: the fields it takes.
			action := pick(rlActions)
			field("action", action)
			switch strings.ToLower(action) {
			case "replace":
				field("source_labels", sources())
				maybe("regex", regex)
				field("target_label", template())
				maybe("replacement", template)
			case "keep", "drop":
				field("source_labels", sources())
				field("regex", regex())
				maybe("separator", func() string { return yq(pick(rlSeparators)) })
			case "keepequal", "dropequal", "lowercase", "uppercase":
				field("source_labels", sources())
				field("target_label", yq(pick(rlNames)))
			case "hashmod":
				field("source_labels", sources())
				field("target_label", yq(pick(rlNames)))
				field("modulus", modulus())
			case "labelmap":
				field("regex", regex())
				maybe("replacement", template)
			default:
				field("regex", regex())
			}
		} else {
			maybe("action", func() string { return pick(rlActions) })
			maybe("source_labels", sources)
			maybe("separator", func() string { return yq(pick(rlSeparators)) })
			maybe("regex", regex)
			maybe("modulus", modulus)
			maybe("target_label", template)
			maybe("replacement", template)
		}
		if fields == 0 {
			field("action", pick(rlActions))
		}
	}
	return b.String()
}
