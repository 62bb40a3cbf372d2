// Interoperability tests: the same data dirs through the real Prometheus TSDB
// (v3.16.0, used as a Go library) and through the `ferrite` binary.
//
// The ferrite binary comes from FERRITE_BIN (default ../target/release/ferrite,
// relative to this directory). Tests that need it fail, with a message saying
// so, when it is missing; TestPromgenMatchesModel and the synth package tests
// need only Prometheus.
package interop_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"ferrite.dev/interop/internal/promtsdb"
	"ferrite.dev/interop/internal/synth"
)

// TestMain doubles as promdigest: with INTEROP_EXEC=promdigest the test
// binary runs promdigest's command line instead of the tests, so the tests can
// run Prometheus' writable open (and its WAL repair) in a separate process
// without building the command first.
func TestMain(m *testing.M) {
	if os.Getenv("INTEROP_EXEC") == "promdigest" {
		os.Exit(promtsdb.DigestMain(os.Args[1:], os.Stdout, os.Stderr))
	}
	os.Exit(m.Run())
}

const commandTimeout = 5 * time.Minute

func ferriteBin(t testing.TB) string {
	t.Helper()
	bin := os.Getenv("FERRITE_BIN")
	if bin == "" {
		bin = filepath.Join("..", "target", "release", "ferrite")
	}
	abs, err := filepath.Abs(bin)
	if err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(abs)
	if err != nil || st.IsDir() {
		t.Fatalf("this test needs the ferrite binary, and there is none at %s (FERRITE_BIN=%q): "+
			"build it with `cargo build --release -p ferrite` in the repo root, or point FERRITE_BIN at it (%v)",
			abs, os.Getenv("FERRITE_BIN"), err)
	}
	return abs
}

// exampleBin is the Ferrite example binary a cross-check runs, from the
// environment variable env (scripts/test builds it and sets env), made
// absolute; the test fails saying how to build it when it is missing.
func exampleBin(t testing.TB, env, pkg, example string) string {
	t.Helper()
	bin := os.Getenv(env)
	if bin == "" {
		t.Fatalf("this test needs Ferrite's %s example: build it with "+
			"`cargo build --release -p %s --example %s` and set "+
			"%s=$PWD/target/release/examples/%s", example, pkg, example, env, example)
	}
	abs, err := filepath.Abs(bin)
	if err != nil {
		t.Fatal(err)
	}
	if st, err := os.Stat(abs); err != nil || st.IsDir() {
		t.Fatalf("%s=%q: no such binary (%v)", env, bin, err)
	}
	return abs
}

// goCmdBin builds ./cmd/<name> (a Prometheus side of a cross-check) into
// the test's temp dir.
func goCmdBin(t *testing.T, name string) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), name)
	out, err := exec.Command("go", "build", "-o", bin, "./cmd/"+name).CombinedOutput()
	if err != nil {
		t.Fatalf("go build ./cmd/%s: %v\n%s", name, err, out)
	}
	return bin
}

// dumpResults runs a cross-check tool over the files in one process and
// returns each file's dump (what follows its `== FILE` line; `== ` counts
// only at the start of a line, a dump may hold it elsewhere).
func dumpResults(t *testing.T, bin string, env []string, files []string) []string {
	t.Helper()
	r := run(bin, env, files...)
	if r.err != nil {
		t.Fatalf("%s: %v\nstderr:\n%s", bin, r.err, tail(r.stderr, 20))
	}
	parts := strings.Split("\n"+r.stdout, "\n== ")[1:]
	if len(parts) != len(files) {
		t.Fatalf("%s: %d results for %d files", bin, len(parts), len(files))
	}
	res := make([]string, len(files))
	for i, p := range parts {
		if i < len(parts)-1 {
			p += "\n" // the newline the split took
		}
		header, body, _ := strings.Cut(p, "\n")
		if header != files[i] {
			t.Fatalf("%s: result %d is for %q, want %q", bin, i, header, files[i])
		}
		res[i] = body
	}
	return res
}

// cmdResult is what a finished command left.
type cmdResult struct {
	stdout, stderr string
	err            error
}

func run(bin string, env []string, args ...string) cmdResult {
	ctx, cancel := context.WithTimeout(context.Background(), commandTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = append(os.Environ(), env...)
	var out, errb bytes.Buffer
	cmd.Stdout = &out
	cmd.Stderr = &errb
	err := cmd.Run()
	if ctx.Err() != nil {
		err = fmt.Errorf("timed out after %v: %w", commandTimeout, err)
	}
	return cmdResult{out.String(), errb.String(), err}
}

func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = append([]string{"..."}, lines[len(lines)-n:]...)
	}
	return strings.Join(lines, "\n")
}

// noScrapeConfig writes a configuration file without scrape jobs into dir
// and returns its `--config.file` flag: a Ferrite server started without
// a file scrapes itself (its embedded default), which would add series to
// the data a test compares.
func noScrapeConfig(t testing.TB, dir string) string {
	t.Helper()
	path := filepath.Join(dir, "ferrite-no-scrape.yml")
	if err := os.WriteFile(path, []byte("# no scrape jobs\nglobal: {}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return "--config.file=" + path
}

// runFerrite runs `ferrite ARGS...` and returns its stdout; a panic, a
// non-zero exit or a timeout fails the test.
func runFerrite(t testing.TB, args ...string) string {
	t.Helper()
	r := run(ferriteBin(t), nil, args...)
	if strings.Contains(r.stderr, "panicked at") {
		t.Fatalf("ferrite %s panicked:\n%s", strings.Join(args, " "), tail(r.stderr, 30))
	}
	if r.err != nil {
		t.Fatalf("ferrite %s: %v\nstderr:\n%s", strings.Join(args, " "), r.err, tail(r.stderr, 30))
	}
	return r.stdout
}

// parseDigest reads the last stdout line, `open_s=.. series=.. samples=.. sum=..`
// (also promgen's and ferrite synth's `series=.. samples=.. sum=..`).
func parseDigest(t testing.TB, out string) promtsdb.Digest {
	t.Helper()
	d, err := parseDigestLine(out)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func parseDigestLine(out string) (promtsdb.Digest, error) {
	lines := strings.Split(strings.TrimSpace(out), "\n")
	last := lines[len(lines)-1]
	var d promtsdb.Digest
	seen := map[string]bool{}
	for _, f := range strings.Fields(last) {
		k, v, ok := strings.Cut(f, "=")
		if !ok {
			return d, fmt.Errorf("bad digest line %q", last)
		}
		var err error
		switch k {
		case "open_s":
			d.OpenS, err = strconv.ParseFloat(v, 64)
		case "series":
			d.Series, err = strconv.ParseInt(v, 10, 64)
		case "samples":
			d.Samples, err = strconv.ParseInt(v, 10, 64)
		case "sum":
			d.Sum, err = strconv.ParseFloat(v, 64)
		default:
			continue
		}
		if err != nil {
			return d, fmt.Errorf("bad digest line %q: %v", last, err)
		}
		seen[k] = true
	}
	if !seen["series"] || !seen["samples"] || !seen["sum"] {
		return d, fmt.Errorf("digest line %q lacks series=, samples= or sum=", last)
	}
	return d, nil
}

func ferriteDigest(t testing.TB, dir string) promtsdb.Digest {
	t.Helper()
	return parseDigest(t, runFerrite(t, "tsdb", "digest", dir))
}

// promDigest is Prometheus' read-only open of dir (dir is left unchanged).
func promDigest(t testing.TB, dir string) promtsdb.Digest {
	t.Helper()
	d, err := promtsdb.DigestReadOnly(dir, false)
	if err != nil {
		t.Fatalf("prometheus (read-only) cannot read %s: %v", dir, err)
	}
	return d
}

// promRepair runs `promdigest DIR --repair` (this test binary as promdigest):
// Prometheus' writable open as the server does it, WAL repair included. A
// failure to open, or a crash, is returned as the error.
func promRepair(dir string) (promtsdb.Digest, error) {
	r := run(os.Args[0], []string{"INTEROP_EXEC=promdigest"}, dir, "--repair")
	if r.err != nil {
		return promtsdb.Digest{}, fmt.Errorf("%v: %s", r.err, tail(r.stderr, 5))
	}
	return parseDigestLine(r.stdout)
}

func modelDigest(series, samples int64) promtsdb.Digest {
	e := synth.Expected(series, samples)
	return promtsdb.Digest{Series: e.Series, Samples: e.Samples, Sum: e.Sum}
}

// sameDigest checks series and samples exactly and the sum to 1e-9 relative.
func sameDigest(t testing.TB, what string, got, want promtsdb.Digest) bool {
	t.Helper()
	if got.Series != want.Series || got.Samples != want.Samples || !closeRel(got.Sum, want.Sum, 1e-9) {
		t.Errorf("%s: got series=%d samples=%d sum=%.12e, want series=%d samples=%d sum=%.12e",
			what, got.Series, got.Samples, got.Sum, want.Series, want.Samples, want.Sum)
		return false
	}
	return true
}

func closeRel(a, b, tol float64) bool {
	if a == b {
		return true
	}
	return math.Abs(a-b) <= tol*math.Max(math.Abs(a), math.Abs(b))
}

// generate writes a Prometheus data dir of the synth model.
func generate(t testing.TB, o promtsdb.GenOptions) promtsdb.Digest {
	t.Helper()
	tot, err := promtsdb.Generate(o)
	if err != nil {
		t.Fatalf("promgen %+v: %v", o, err)
	}
	return promtsdb.Digest{Series: tot.Series, Samples: tot.Samples, Sum: tot.Sum}
}

// copyDir copies a data dir, leaving out the lock file.
func copyDir(t testing.TB, src, dst string) {
	t.Helper()
	if err := promtsdb.CopyDir(src, dst); err != nil {
		t.Fatal(err)
	}
}

// copyWithoutChunksHead copies src to dst and removes dst/chunks_head.
func copyWithoutChunksHead(t testing.TB, src, dst string) {
	t.Helper()
	copyDir(t, src, dst)
	if err := os.RemoveAll(filepath.Join(dst, "chunks_head")); err != nil {
		t.Fatal(err)
	}
}

// dirState lists every file of dir with its size and content hash.
func dirState(t testing.TB, dir string) string {
	t.Helper()
	var lines []string
	err := filepath.Walk(dir, func(p string, info os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		if info.IsDir() {
			lines = append(lines, rel+"/")
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		h := sha256.Sum256(b)
		lines = append(lines, fmt.Sprintf("%s %d %s", rel, len(b), hex.EncodeToString(h[:8])))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(lines)
	return strings.Join(lines, "\n")
}

// walSegments lists the non-empty WAL segment files of dir.
func walSegments(t testing.TB, dir string) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "wal", "[0-9]*"))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, f := range files {
		if st, err := os.Stat(f); err == nil && st.Size() > 0 && !st.IsDir() {
			out = append(out, f)
		}
	}
	return out
}

// chunkFiles lists the non-empty chunks_head files of dir.
func chunkFiles(dir string) []string {
	files, _ := filepath.Glob(filepath.Join(dir, "chunks_head", "[0-9]*"))
	var out []string
	for _, f := range files {
		if st, err := os.Stat(f); err == nil && st.Size() > 8 {
			out = append(out, f)
		}
	}
	return out
}

// blockDirs lists block directories (ULIDs) in dir.
func blockDirs(dir string) []string {
	entries, _ := os.ReadDir(dir)
	var out []string
	for _, e := range entries {
		if e.IsDir() && len(e.Name()) == 26 && strings.Trim(e.Name(), "0123456789ABCDEFGHJKMNPQRSTVWXYZ") == "" {
			out = append(out, e.Name())
		}
	}
	return out
}
