package interop_test

// What the scrape parser cross-checks (promtext_test.go, omtext_test.go,
// protobuf_test.go) share: running both sides over the cases, reporting
// mismatches, and the checks and counts over the dumps.

import (
	"fmt"
	"math"
	"math/rand"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// ptCase is an input and, for hand-made ones, text Prometheus' dump must
// contain (so that the case still shows the quirk it is named after).
type ptCase struct {
	name  string
	input string
	want  string
}

// withKnownDifferences is hand, then known (named `known difference #n`),
// then random.
func withKnownDifferences(hand []ptCase, known []string, random []ptCase) []ptCase {
	var all []ptCase
	all = append(all, hand...)
	for i, in := range known {
		all = append(all, ptCase{name: fmt.Sprintf("known difference #%d", i), input: in})
	}
	return append(all, random...)
}

// parserCheck is one cross-check's cases and both sides' dumps of them.
type parserCheck struct {
	t         *testing.T
	all       []ptCase
	prom, fer []string
	// limit is how many mismatches are reported in full; bad counts them.
	limit, bad int
}

// runParserCheck writes every case to a file of its own (`case%05d.<ext>`)
// and dumps them with the Go command promCmd and with ferBin.
func runParserCheck(t *testing.T, ferBin, promCmd, ext string, all []ptCase, limit int) *parserCheck {
	dir := t.TempDir()
	files := make([]string, len(all))
	for i, c := range all {
		files[i] = filepath.Join(dir, fmt.Sprintf("case%05d.%s", i, ext))
		if err := os.WriteFile(files[i], []byte(c.input), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	prom := dumpResults(t, goCmdBin(t, promCmd), nil, files)
	fer := dumpResults(t, ferBin, nil, files)
	return &parserCheck{t: t, all: all, prom: prom, fer: fer, limit: limit}
}

// fail reports case i as a mismatch, why.
func (pc *parserCheck) fail(i int, why string) {
	pc.bad++
	if pc.bad <= pc.limit {
		c := pc.all[i]
		pc.t.Errorf("%s: %s\ninput: %q\nprometheus:\n%sferrite:\n%s", c.name, why, c.input, pc.prom[i], pc.fer[i])
	}
}

// finish reports how many mismatches there were where not all were
// reported in full.
func (pc *parserCheck) finish() {
	if pc.bad > pc.limit {
		pc.t.Errorf("... %d mismatches in all", pc.bad)
	}
}

// wantOK is whether Prometheus' dump of case i has the text the case
// wants (fails it where not).
func (pc *parserCheck) wantOK(i int) bool {
	c := pc.all[i]
	if c.want != "" && !strings.Contains(pc.prom[i], c.want) {
		pc.fail(i, fmt.Sprintf("Prometheus' dump lacks %q: the case no longer shows what it is named after", c.want))
		return false
	}
	return true
}

// handOK checks hand-made case i: the text it wants there, no panic, equal
// dumps; false where one of the first two fails.
func (pc *parserCheck) handOK(i int) bool {
	if !pc.wantOK(i) {
		return false
	}
	if strings.Contains(pc.prom[i], "PANIC ") {
		pc.fail(i, "Prometheus panics")
		return false
	}
	if pc.prom[i] != pc.fer[i] {
		pc.fail(i, "different dumps")
	}
	return true
}

// knownDifferences checks that the n cases from off on still differ, and
// only by names that are not UTF-8 (explainedByNames).
func (pc *parserCheck) knownDifferences(off, n int) {
	for k := off; k < off+n; k++ {
		if pc.prom[k] == pc.fer[k] {
			pc.fail(k, "a known difference is gone: update the crate docs and this test")
			continue
		}
		if m, ok := explainedByNames(pc.prom[k], pc.fer[k]); !ok || m == 0 {
			pc.fail(k, "not the known difference")
		}
	}
}

// random checks the random cases from off on, after count has seen
// Prometheus' dump of each: no panic, and equal dumps or ones that differ
// only by names that are not UTF-8 (deviations). acceptedValid is how many
// `valid#` cases Prometheus read without an error.
func (pc *parserCheck) random(off int, count func(dump string)) (deviations, acceptedValid int) {
	for k := off; k < len(pc.all); k++ {
		c := pc.all[k]
		count(pc.prom[k])
		if strings.HasPrefix(c.name, "valid#") && !strings.Contains(pc.prom[k], "ERR ") {
			acceptedValid++
		}
		if strings.Contains(pc.prom[k], "PANIC ") {
			pc.fail(k, "Prometheus panics")
			continue
		}
		if pc.prom[k] == pc.fer[k] {
			continue
		}
		if n, ok := explainedByNames(pc.prom[k], pc.fer[k]); ok && n > 0 {
			deviations++
			continue
		}
		pc.fail(k, "different dumps")
	}
	return deviations, acceptedValid
}

// countLines counts a dump's lines by their first word into lines, and
// hands each to each where that is not nil.
func countLines(lines map[string]int, dump string, each func(line string)) {
	for _, l := range strings.Split(strings.TrimSuffix(dump, "\n"), "\n") {
		if l == "" {
			continue
		}
		kind, _, _ := strings.Cut(l, " ")
		lines[kind]++
		if each != nil {
			each(l)
		}
	}
}

// checkLineKinds fails t where lines has fewer than min of a kind.
func checkLineKinds(t *testing.T, lines map[string]int, kinds []string, min int, where string) {
	for _, kind := range kinds {
		if lines[kind] < min {
			t.Errorf("only %d %s lines%s", lines[kind], kind, where)
		}
	}
}

// checkHandErrors fails t for every one of errs the hand-made cases did
// not get (seen).
func checkHandErrors(t *testing.T, errs []string, seen map[string]int) {
	for _, e := range errs {
		if seen[e] == 0 {
			t.Errorf("no hand-made case gets Prometheus' error %q", e)
		}
	}
}

// logRandomErrors logs every one of errs the random cases did not get.
func logRandomErrors(t *testing.T, errs []string, seen map[string]int) {
	for _, e := range errs {
		if seen[e] == 0 {
			t.Logf("no random case gets error %q (the hand-made cases do)", e)
		}
	}
}

// errorCounts is `kind: n` for every error kind, sorted, `; ` between.
func errorCounts(errs map[string]int) string {
	kinds := make([]string, 0, len(errs))
	for e, n := range errs {
		kinds = append(kinds, fmt.Sprintf("%s: %d", e, n))
	}
	sort.Strings(kinds)
	return strings.Join(kinds, "; ")
}

// genPlainName is a random name: a byte of first, then up to 7 of rest.
func genPlainName(rng *rand.Rand, first, rest string) string {
	var b strings.Builder
	b.WriteByte(first[rng.Intn(len(first))])
	for i := rng.Intn(8); i > 0; i-- {
		b.WriteByte(rest[rng.Intn(len(rest))])
	}
	return b.String()
}

// genFloat is a random number as the text formats write values: integers,
// decimals, exponents, NaN and infinities in their spellings, edge cases,
// random bit patterns, and (in one round of 12, with chance invalidP) one
// of invalid.
func genFloat(rng *rand.Rand, invalidP float64, invalid ...string) string {
	pick := func(s ...string) string { return s[rng.Intn(len(s))] }
	switch rng.Intn(12) {
	case 0:
		return strconv.Itoa(rng.Intn(2000) - 1000)
	case 1:
		return strconv.FormatFloat(rng.NormFloat64()*1e3, 'g', -1, 64)
	case 2:
		return strconv.FormatFloat(rng.ExpFloat64()*math.Pow(10, float64(rng.Intn(600)-300)), 'e', rng.Intn(20)-1, 64)
	case 3:
		return strconv.FormatFloat(rng.Float64(), 'f', rng.Intn(25), 64)
	case 4:
		return pick("NaN", "nan", "NAN", "+Inf", "-Inf", "inf", "Infinity", "-infinity", "+INF")
	case 5:
		return pick("-0", "0", ".5", "5.", "1E5", "+1e-5", "0001.000", "1e-400", "1.7976931348623157e308", "4.9e-324")
	case 6:
		if rng.Float64() < invalidP {
			return pick(invalid...)
		}
		return "1"
	case 7:
		return strconv.FormatFloat(math.Float64frombits(rng.Uint64()), pick("g", "e", "f")[0], -1, 64)
	default:
		return strconv.FormatFloat(rng.Float64()*100, 'f', -1, 64)
	}
}
