// Interoperability tests: the same data dirs through the real Prometheus
// TSDB (v3.9.1, as a library) and through the `ferrite` binary (FERRITE_BIN).
package interop_test

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"math"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/prometheus/prometheus/tsdb/chunkenc"

	"ferrite.dev/interop/internal/promtsdb"
	"ferrite.dev/interop/internal/synth"
)

func ferriteBin(t *testing.T) string {
	t.Helper()
	bin := os.Getenv("FERRITE_BIN")
	if bin == "" {
		bin = "../target/release/ferrite"
	}
	abs, err := filepath.Abs(bin)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(abs); err != nil {
		t.Fatalf("ferrite binary not found at %s (set FERRITE_BIN or run `cargo build --release -p ferrite`): %v", abs, err)
	}
	return abs
}

// runFerrite runs the binary and returns stdout; it fails on a panic or a non-zero exit.
func runFerrite(t *testing.T, args ...string) string {
	t.Helper()
	cmd := exec.Command(ferriteBin(t), args...)
	var out, errb bytes.Buffer
	cmd.Stdout = &out
	cmd.Stderr = &errb
	err := cmd.Run()
	if strings.Contains(errb.String(), "panicked") {
		t.Fatalf("ferrite %v panicked:\n%s", args, errb.String())
	}
	if err != nil {
		t.Fatalf("ferrite %v: %v\nstderr:\n%s", args, err, errb.String())
	}
	return out.String()
}

// parseDigest reads the last line `open_s=.. series=.. samples=.. sum=..`.
func parseDigest(t *testing.T, out string) promtsdb.Digest {
	t.Helper()
	lines := strings.Split(strings.TrimSpace(out), "\n")
	last := lines[len(lines)-1]
	var d promtsdb.Digest
	for _, f := range strings.Fields(last) {
		k, v, ok := strings.Cut(f, "=")
		if !ok {
			t.Fatalf("bad digest line %q", last)
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
		}
		if err != nil {
			t.Fatalf("bad digest line %q: %v", last, err)
		}
	}
	return d
}

func ferriteDigest(t *testing.T, dir string) promtsdb.Digest {
	t.Helper()
	return parseDigest(t, runFerrite(t, "tsdb", "digest", dir))
}

func sameDigest(t *testing.T, what string, got, want promtsdb.Digest) {
	t.Helper()
	if got.Series != want.Series || got.Samples != want.Samples || !closeRel(got.Sum, want.Sum, 1e-9) {
		t.Errorf("%s: got series=%d samples=%d sum=%.12e, want series=%d samples=%d sum=%.12e",
			what, got.Series, got.Samples, got.Sum, want.Series, want.Samples, want.Sum)
	}
}

func closeRel(a, b, tol float64) bool {
	if a == b {
		return true
	}
	return math.Abs(a-b) <= tol*math.Max(math.Abs(a), math.Abs(b))
}

func copyDir(t *testing.T, src, dst string) {
	t.Helper()
	err := filepath.Walk(src, func(p string, info os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		target := filepath.Join(dst, rel)
		if info.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		if info.Name() == "lock" {
			return nil
		}
		in, err := os.Open(p)
		if err != nil {
			return err
		}
		defer in.Close()
		out, err := os.Create(target)
		if err != nil {
			return err
		}
		defer out.Close()
		_, err = io.Copy(out, in)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}

func promDigest(t *testing.T, dir string) promtsdb.Digest {
	t.Helper()
	d, err := promtsdb.DigestReadOnly(dir, false)
	if err != nil {
		t.Fatalf("prometheus digest of %s: %v", dir, err)
	}
	return d
}

func expected(series, samples int64) promtsdb.Digest {
	e := synth.Expected(series, samples)
	return promtsdb.Digest{Series: e.Series, Samples: e.Samples, Sum: e.Sum}
}

func TestPromgenMatchesModel(t *testing.T) {
	dir := t.TempDir()
	if err := promtsdb.Generate(promtsdb.GenOptions{Dir: dir, Series: 200, Samples: 300}); err != nil {
		t.Fatal(err)
	}
	sameDigest(t, "prometheus digest vs model", promDigest(t, dir), expected(200, 300))
}

type shape struct{ series, samples int64 }

func TestPrometheusDirsDigestEqual(t *testing.T) {
	shapes := []shape{{300, 1000}, {3000, 120}, {20, 10000}}
	for _, sh := range shapes {
		for _, comp := range []string{"none", "snappy", "zstd"} {
			sh, comp := sh, comp
			t.Run(fmt.Sprintf("%dx%d/%s", sh.series, sh.samples, comp), func(t *testing.T) {
				base := t.TempDir()
				src := filepath.Join(base, "prom")
				if err := promtsdb.Generate(promtsdb.GenOptions{Dir: src, Series: sh.series, Samples: sh.samples, Compression: comp, SegmentSize: 1 << 20}); err != nil {
					t.Fatal(err)
				}
				want := promDigest(t, src)
				sameDigest(t, "prometheus vs model", want, expected(sh.series, sh.samples))

				withChunks := filepath.Join(base, "with-chunks-head")
				copyDir(t, src, withChunks)
				sameDigest(t, "ferrite (chunks_head + WAL)", ferriteDigest(t, withChunks), want)

				noChunks := filepath.Join(base, "wal-only")
				copyDir(t, src, noChunks)
				if err := os.RemoveAll(filepath.Join(noChunks, "chunks_head")); err != nil {
					t.Fatal(err)
				}
				sameDigest(t, "prometheus (WAL only)", promDigest(t, noChunks), want)
				sameDigest(t, "ferrite (WAL only)", ferriteDigest(t, noChunks), want)
				// Reopening what Ferrite left (its own chunks_head from the replay) gives the same.
				sameDigest(t, "ferrite reopen", ferriteDigest(t, noChunks), want)
			})
		}
	}
	for _, noChunks := range []bool{false, true} {
		noChunks := noChunks
		t.Run(fmt.Sprintf("checkpoint/no-chunks-head=%v", noChunks), func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "prom")
			if err := promtsdb.Generate(promtsdb.GenOptions{Dir: dir, Series: 500, Samples: 600, SegmentSize: 256 << 10, Checkpoint: true, NoChunksHead: noChunks}); err != nil {
				t.Fatal(err)
			}
			cps, _ := filepath.Glob(filepath.Join(dir, "wal", "checkpoint.*"))
			if len(cps) != 1 {
				t.Fatalf("want one checkpoint, have %v", cps)
			}
			want := promDigest(t, dir)
			if want.Samples == 0 {
				t.Fatal("prometheus digest is empty")
			}
			sameDigest(t, "ferrite with checkpoint", ferriteDigest(t, dir), want)
		})
	}
}

func TestFerriteDirOpensInPrometheus(t *testing.T) {
	cases := []struct {
		sh   shape
		comp string
	}{{shape{500, 700}, "snappy"}, {shape{2000, 120}, "zstd"}, {shape{30, 3000}, "none"}}
	for _, c := range cases {
		c := c
		t.Run(fmt.Sprintf("%dx%d/%s", c.sh.series, c.sh.samples, c.comp), func(t *testing.T) {
			base := t.TempDir()
			dir := filepath.Join(base, "ferrite")
			runFerrite(t, "tsdb", "synth", dir,
				"--series", fmt.Sprint(c.sh.series), "--samples", fmt.Sprint(c.sh.samples),
				"--wal-compression", c.comp, "--wal-segment-size", fmt.Sprint(512<<10))
			want := expected(c.sh.series, c.sh.samples)
			if segs, _ := filepath.Glob(filepath.Join(dir, "wal", "0*")); len(segs) < 2 {
				t.Errorf("want several WAL segments, have %d", len(segs))
			}
			if files, _ := filepath.Glob(filepath.Join(dir, "chunks_head", "0*")); len(files) == 0 {
				t.Error("ferrite wrote no chunks_head files")
			}
			sameDigest(t, "prometheus reads ferrite's dir", promDigest(t, dir), want)

			walOnly := filepath.Join(base, "wal-only")
			copyDir(t, dir, walOnly)
			if err := os.RemoveAll(filepath.Join(walOnly, "chunks_head")); err != nil {
				t.Fatal(err)
			}
			sameDigest(t, "prometheus reads ferrite's WAL alone", promDigest(t, walOnly), want)
			sameDigest(t, "ferrite reads its own dir", ferriteDigest(t, dir), want)
		})
	}
}

func TestXorChunksByteIdentical(t *testing.T) {
	rng := rand.New(rand.NewSource(42))
	var input strings.Builder
	var want []string
	stale := math.Float64frombits(0x7ff0000000000002)
	for c := 0; c < 300; c++ {
		n := 1 + rng.Intn(240)
		chunk := chunkenc.NewXORChunk()
		app, err := chunk.Appender()
		if err != nil {
			t.Fatal(err)
		}
		ts := rng.Int63n(1<<41) - (1 << 40)
		v := rng.Float64() * 1000
		for i := 0; i < n; i++ {
			switch rng.Intn(6) {
			case 0:
				ts += 15000
			case 1:
				ts += 1 + rng.Int63n(30)
			case 2:
				ts += rng.Int63n(1 << 20)
			case 3:
				ts += rng.Int63n(1 << 36)
			default:
				ts += 15000 + rng.Int63n(200) - 100
			}
			switch rng.Intn(7) {
			case 0:
				// unchanged
			case 1:
				v += 1
			case 2:
				v = math.Float64frombits(rng.Uint64())
			case 3:
				v = stale
			case 4:
				v = math.NaN()
			default:
				v = float64(rng.Intn(100000)) / 8
			}
			app.Append(ts, v)
			fmt.Fprintf(&input, "%d %016x\n", ts, math.Float64bits(v))
		}
		input.WriteString("\n")
		want = append(want, fmt.Sprintf("%x", chunk.Bytes()))
	}
	file := filepath.Join(t.TempDir(), "samples.txt")
	if err := os.WriteFile(file, []byte(input.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	out := runFerrite(t, "debug", "xor-encode", file)
	var got []string
	sc := bufio.NewScanner(strings.NewReader(out))
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		got = append(got, sc.Text())
	}
	if len(got) != len(want) {
		t.Fatalf("got %d chunks, want %d", len(got), len(want))
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("chunk %d differs:\n ferrite    %s\n prometheus %s", i, got[i], want[i])
		}
	}
}

func TestWalDamage(t *testing.T) {
	trials := 12
	if s := os.Getenv("INTEROP_DAMAGE_TRIALS"); s != "" {
		trials, _ = strconv.Atoi(s)
	}
	base := t.TempDir()
	src := filepath.Join(base, "src")
	if err := promtsdb.Generate(promtsdb.GenOptions{Dir: src, Series: 300, Samples: 400, SegmentSize: 256 << 10, NoChunksHead: true}); err != nil {
		t.Fatal(err)
	}
	segs, _ := filepath.Glob(filepath.Join(src, "wal", "0*"))
	if len(segs) < 3 {
		t.Fatalf("want several segments, have %d", len(segs))
	}
	rng := rand.New(rand.NewSource(7))
	for trial := 0; trial < trials; trial++ {
		seg := segs[rng.Intn(len(segs))]
		data, err := os.ReadFile(seg)
		if err != nil {
			t.Fatal(err)
		}
		if len(data) == 0 {
			continue
		}
		kind := []string{"flip", "truncate", "zero-page", "garbage"}[trial%4]
		switch kind {
		case "flip":
			for k := 0; k < 1+rng.Intn(4); k++ {
				data[rng.Intn(len(data))] ^= byte(1 + rng.Intn(255))
			}
		case "truncate":
			data = data[:rng.Intn(len(data))]
		case "zero-page":
			p := rng.Intn((len(data) + 32767) / 32768)
			end := (p + 1) * 32768
			if end > len(data) {
				end = len(data)
			}
			for i := p * 32768; i < end; i++ {
				data[i] = 0
			}
		case "garbage":
			g := make([]byte, 1+rng.Intn(5000))
			rng.Read(g)
			at := rng.Intn(len(data))
			data = append(data[:at], append(g, data[at:]...)...)
		}
		rel, _ := filepath.Rel(src, seg)
		promCopy := filepath.Join(base, fmt.Sprintf("prom-%d", trial))
		ferriteCopy := filepath.Join(base, fmt.Sprintf("ferrite-%d", trial))
		for _, d := range []string{promCopy, ferriteCopy} {
			copyDir(t, src, d)
			if err := os.WriteFile(filepath.Join(d, rel), data, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		prom, perr := promtsdb.DigestRepair(promCopy)
		fer := ferriteDigest(t, ferriteCopy)
		t.Logf("trial %d: %s in %s: prometheus series=%d samples=%d (err=%v), ferrite series=%d samples=%d",
			trial, kind, rel, prom.Series, prom.Samples, perr, fer.Series, fer.Samples)
		if perr != nil {
			continue // Prometheus could not open it; Ferrite did (runFerrite checked).
		}
		if fer.Series < prom.Series || fer.Samples < prom.Samples {
			t.Errorf("trial %d (%s in %s): ferrite kept series=%d samples=%d, prometheus kept series=%d samples=%d",
				trial, kind, rel, fer.Series, fer.Samples, prom.Series, prom.Samples)
		}
		// The repaired dir reopens with the same content.
		sameDigest(t, fmt.Sprintf("trial %d reopen", trial), ferriteDigest(t, ferriteCopy), fer)
	}
}
