package interop_test

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
)

// TestPromtoolUnittest: `ferrite test rules` prints what `promtool test
// rules` (v3.16.0, built from the module this suite pins) prints, on the
// same streams, with the same exit code:
//   - for every unit-test file of promtool's own testdata (copied with the
//     rule files into a temp dir from the module cache), one at a time,
//     all together, by relative and absolute path, with --run and
//     --ignore-unknown-fields as promtool's own tests use them;
//   - for the hand-made files of testdata/unittest: alerts with `for` and
//     `keep_firing_for`, templates in annotations, recording rules,
//     histograms, start timestamps, wrong expectations, bad input, --run;
//   - with --diff, --debug and --junit (the JUnit files compared too).
//
// Temp-dir paths are replaced before comparing, the program's name in
// usage errors, --debug's durations and JUnit time stamps. Skipped when
// FERRITE_BIN is not set.
func TestPromtoolUnittest(t *testing.T) {
	if os.Getenv("FERRITE_BIN") == "" {
		t.Skip("FERRITE_BIN is not set")
	}
	fer := ferriteBin(t)
	pt := promtoolBin(t)

	t.Run("PromtoolTestdata", func(t *testing.T) {
		src := promtoolTestdataDir(t)
		dir := t.TempDir()
		ymls, err := filepath.Glob(filepath.Join(src, "*.yml"))
		if err != nil {
			t.Fatal(err)
		}
		var tests []string
		for _, f := range ymls {
			text, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, filepath.Base(f)), text, 0o644); err != nil {
				t.Fatal(err)
			}
			if unitTestFile.Match(text) {
				tests = append(tests, filepath.Base(f))
			}
		}
		sort.Strings(tests)
		if len(tests) < 10 {
			t.Fatalf("found only %d unit-test files in %s: %v", len(tests), src, tests)
		}
		var cases [][]string
		for _, f := range tests {
			cases = append(cases, []string{f}, []string{filepath.Join(dir, f)})
		}
		cases = append(cases,
			tests,
			[]string{"--run", "correct", "rules_run.yml"},
			[]string{"--run", "wrong", "rules_run.yml"},
			[]string{"--run", "correct", "--run", "wrong", "rules_run.yml"},
			[]string{"--run", "nothing", "rules_run.yml", "failing.yml"},
			[]string{"--ignore-unknown-fields", "rules_run_extrafields.yml"},
			[]string{"missing.yml"},
			[]string{"--diff", "failing.yml"},
			[]string{"--debug", "unittest.yml", "failing.yml", "start-time-test.yml", "bad-rules-error-test.yml"},
			append([]string{"--junit"}, tests...),
		)
		compareUnittest(t, fer, pt, dir, cases)
	})

	t.Run("HandMade", func(t *testing.T) {
		dir := t.TempDir()
		files, err := filepath.Glob(filepath.Join("testdata", "unittest", "*.yml"))
		if err != nil {
			t.Fatal(err)
		}
		var tests []string
		for _, f := range files {
			text, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, filepath.Base(f)), text, 0o644); err != nil {
				t.Fatal(err)
			}
			if unitTestFile.Match(text) {
				tests = append(tests, filepath.Base(f))
			}
		}
		sort.Strings(tests)
		var cases [][]string
		for _, f := range tests {
			cases = append(cases, []string{f}, []string{filepath.Join(dir, f)})
		}
		cases = append(cases,
			tests,
			[]string{"--run", "alpha", "run.yml"},
			[]string{"--run", "^beta", "run.yml"},
			[]string{"--run", "alpha", "--run", "beta", "run.yml"},
			[]string{"--run", "^$", "run.yml"},
			[]string{"--run", "a.*s", "run.yml", "pass.yml", "fail.yml"},
			[]string{"pass.yml", "missing.yml"},
			[]string{"--diff", "diff.yml", "fail.yml", "pass.yml"},
			[]string{"--debug", "pass.yml", "fail.yml", "run.yml"},
			append([]string{"--junit"}, tests...),
			[]string{"--junit", "--run", "alpha", "run.yml", "bad-field.yml"},
		)
		compareUnittest(t, fer, pt, dir, cases)
	})
}

// unitTestFile tells a unit-test file from a rule or configuration file.
var unitTestFile = regexp.MustCompile(`(?m)^tests:`)

// promtoolTestdataDir is cmd/promtool/testdata of the pinned Prometheus
// module.
func promtoolTestdataDir(t *testing.T) string {
	t.Helper()
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "github.com/prometheus/prometheus").Output()
	if err != nil {
		t.Fatalf("go list -m github.com/prometheus/prometheus: %v", err)
	}
	return filepath.Join(strings.TrimSpace(string(out)), "cmd", "promtool", "testdata")
}

// compareUnittest runs `test rules <args>` in dir through both tools;
// with --junit first in args, `test --junit <file> rules <rest>`, and the
// JUnit files must match too.
func compareUnittest(t *testing.T, fer, pt, dir string, cases [][]string) {
	t.Helper()
	norm := func(s string) string {
		s = strings.ReplaceAll(s, dir, "<dir>")
		s = strings.ReplaceAll(s, "promtool: error:", "ferrite: error:")
		s = debugTook.ReplaceAllString(s, "took <d>")
		return junitStamp.ReplaceAllString(s, `timestamp="<t>"`)
	}
	for _, args := range cases {
		full := func(junit string) []string {
			if len(args) > 0 && args[0] == "--junit" {
				return append([]string{"test", "--junit", junit, "rules"}, args[1:]...)
			}
			return append([]string{"test", "rules"}, args...)
		}
		pJunit := filepath.Join(t.TempDir(), "promtool.xml")
		fJunit := filepath.Join(t.TempDir(), "ferrite.xml")
		p := runIn(dir, pt, full(pJunit)...)
		f := runIn(dir, fer, full(fJunit)...)
		pOut, pErr := norm(p.stdout), norm(p.stderr)
		fOut, fErr := norm(f.stdout), norm(f.stderr)
		if pOut != fOut || pErr != fErr || exitCode(p.err) != exitCode(f.err) {
			t.Errorf("test rules %v:\npromtool (exit %d):\n%s\n%s\nferrite (exit %d):\n%s\n%s\nstdout: %s\nstderr: %s",
				args, exitCode(p.err), pOut, pErr, exitCode(f.err), fOut, fErr,
				lineDiff(pOut, fOut), lineDiff(pErr, fErr))
		}
		if len(args) > 0 && args[0] == "--junit" {
			px, err := os.ReadFile(pJunit)
			if err != nil {
				t.Fatal(err)
			}
			fx, err := os.ReadFile(fJunit)
			if err != nil {
				t.Fatalf("ferrite wrote no JUnit file: %v", err)
			}
			if norm(string(px)) != norm(string(fx)) {
				t.Errorf("test --junit rules %v: JUnit files differ:\npromtool: %s\nferrite:  %s", args[1:], px, fx)
			}
		}
	}
}

var (
	// debugTook is the duration --debug prints for each test.
	debugTook = regexp.MustCompile(`took [0-9.]+[a-zµ]+`)
	// junitStamp is a JUnit suite's time stamp.
	junitStamp = regexp.MustCompile(`timestamp="[0-9T:-]+"`)
)

// runIn runs bin with args in dir.
func runIn(dir, bin string, args ...string) cmdResult {
	cmd := exec.Command(bin, args...)
	cmd.Dir = dir
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	return cmdResult{out.String(), errb.String(), err}
}
