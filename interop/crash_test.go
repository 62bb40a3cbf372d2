package interop_test

import (
	"bytes"
	"fmt"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"ferrite.dev/interop/internal/promtsdb"
)

// TestCompactionSurvivesKill9: `ferrite tsdb compact` (head compaction:
// block writes, head truncation, WAL checkpoint and truncation; then leveled
// compaction merging those blocks and deleting their parents) killed with
// SIGKILL at random moments; every time, the dir reopens in Ferrite and in
// Prometheus with exactly the model's data, and a second compaction
// finishes the job with the same data. INTEROP_CRASH_TRIALS sets the number
// of trials (default 20, about a second each: 6 once let a kill window that
// lost samples in 2 of 20 trials pass; the bench suite runs 50).
func TestCompactionSurvivesKill9(t *testing.T) {
	bin := ferriteBin(t)
	trials := 20
	if v, err := strconv.Atoi(os.Getenv("INTEROP_CRASH_TRIALS")); err == nil && v > 0 {
		trials = v
	}
	base := t.TempDir()
	src := filepath.Join(base, "src")
	// 12.5 h: five head blocks, two merges into a level-3 block.
	const series, samples = 500, 3000
	runFerrite(t, "tsdb", "synth", src, "--series", fmt.Sprint(series), "--samples", fmt.Sprint(samples),
		"--wal-segment-size", fmt.Sprint(1<<20))
	want := modelDigest(series, samples)

	// How long an uninterrupted compaction takes, to aim the kills.
	probe := filepath.Join(base, "probe")
	copyDir(t, src, probe)
	start := time.Now()
	runFerrite(t, "tsdb", "compact", probe)
	full := time.Since(start)

	rng := rand.New(rand.NewSource(1))
	killedMidway := 0
	for i := 0; i < trials; i++ {
		dir := filepath.Join(base, fmt.Sprintf("trial-%d", i))
		copyDir(t, src, dir)
		delay := time.Duration(rng.Int63n(int64(full) + 1))
		_, err := runKilledAfter(t, delay, bin, "tsdb", "compact", dir)
		if err != nil {
			killedMidway++
		}
		t.Logf("trial %d: kill after %v (compaction takes %v): exited %v, blocks %d", i, delay, full, err, len(blockDirs(dir)))

		sameDigest(t, fmt.Sprintf("trial %d: prometheus reads the killed dir", i), promDigest(t, dir), want)
		sameDigest(t, fmt.Sprintf("trial %d: ferrite reopens the killed dir", i), ferriteDigest(t, dir), want)
		runFerrite(t, "tsdb", "compact", dir)
		sameDigest(t, fmt.Sprintf("trial %d: ferrite after a second compaction", i), ferriteDigest(t, dir), want)
		sameDigest(t, fmt.Sprintf("trial %d: prometheus after a second compaction", i), promDigest(t, dir), want)
	}
	if killedMidway == 0 {
		t.Errorf("no kill landed during a compaction in %d trials", trials)
	}
}

// TestOutOfOrderCompactionSurvivesKill9: `ferrite tsdb compact` of a
// Prometheus-written dir with out-of-order floats and histograms (an
// out-of-order block, the WBL, out-of-order head chunks; see
// TestPrometheusDirsOfEveryKind) killed with SIGKILL at random moments:
// head compaction, out-of-order compaction (blocks written, then head
// chunks and WBL segments dropped) and the vertical compaction of the
// overlapping blocks. Every time Prometheus' census of the killed dir
// (samples per kind, sums, hash of every sample) equals the dir as
// written, and again after a second, uninterrupted compaction.
func TestOutOfOrderCompactionSurvivesKill9(t *testing.T) {
	bin := ferriteBin(t)
	trials := 16
	if v, err := strconv.Atoi(os.Getenv("INTEROP_CRASH_TRIALS")); err == nil && v > 0 {
		trials = v
	}
	base := t.TempDir()
	u, err := promtsdb.GenerateUnsupported(promtsdb.UnsupportedOOO, filepath.Join(base, "src"))
	if err != nil {
		t.Fatalf("prometheus: %v", err)
	}
	want, err := promtsdb.CensusReadOnly(u.Dir)
	if err != nil {
		t.Fatal(err)
	}
	probe := filepath.Join(base, "probe")
	copyDir(t, u.Dir, probe)
	start := time.Now()
	runFerrite(t, "tsdb", "compact", probe)
	full := time.Since(start)

	check := func(what, dir string) {
		t.Helper()
		got, err := promtsdb.CensusReadOnly(dir)
		if err != nil {
			t.Fatalf("%s: prometheus cannot read the dir: %v", what, err)
		}
		if !got.Equal(want) || got.Hash != want.Hash {
			t.Errorf("%s: prometheus reads\n  %s\nwant (as written)\n  %s", what, got, want)
		}
	}
	rng := rand.New(rand.NewSource(2))
	killedMidway := 0
	for i := 0; i < trials; i++ {
		dir := filepath.Join(base, fmt.Sprintf("trial-%d", i))
		copyDir(t, u.Dir, dir)
		delay := time.Duration(rng.Int63n(int64(full) + 1))
		if _, err := runKilledAfter(t, delay, bin, "tsdb", "compact", dir); err != nil {
			killedMidway++
		}
		t.Logf("trial %d: kill after %v (compaction takes %v), blocks %d", i, delay, full, len(blockDirs(dir)))
		check(fmt.Sprintf("trial %d: killed", i), dir)
		runFerrite(t, "tsdb", "compact", dir)
		check(fmt.Sprintf("trial %d: after a second compaction", i), dir)
	}
	if killedMidway == 0 {
		t.Errorf("no kill landed during a compaction in %d trials", trials)
	}
}

// runKilledAfter runs bin with args and sends it SIGKILL after delay; it
// returns its stderr and how it ended (nil: it finished before the kill).
func runKilledAfter(t *testing.T, delay time.Duration, bin string, args ...string) (string, error) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(delay)
	_ = cmd.Process.Signal(syscall.SIGKILL)
	err := cmd.Wait()
	return stderr.String(), err
}
