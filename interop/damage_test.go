package interop_test

import (
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"ferrite.dev/interop/internal/promtsdb"
)

// damage applies one seeded random damage to a copy of a WAL segment's bytes
// and says what it did.
func damage(rng *rand.Rand, kind string, data []byte) ([]byte, string) {
	switch kind {
	case "flip":
		n := 1 + rng.Intn(4)
		var at []int
		for k := 0; k < n; k++ {
			i := rng.Intn(len(data))
			data[i] ^= byte(1 + rng.Intn(255))
			at = append(at, i)
		}
		return data, fmt.Sprintf("flipped bytes at %v", at)
	case "truncate":
		n := rng.Intn(len(data))
		return data[:n], fmt.Sprintf("truncated %d -> %d bytes", len(data), n)
	case "zero-page":
		const page = 32 << 10
		p := rng.Intn((len(data) + page - 1) / page)
		end := min((p+1)*page, len(data))
		clear(data[p*page : end])
		return data, fmt.Sprintf("zeroed page %d (bytes %d..%d)", p, p*page, end)
	case "garbage":
		g := make([]byte, 1+rng.Intn(40000))
		rng.Read(g)
		return append(data, g...), fmt.Sprintf("appended %d random bytes", len(g))
	}
	panic(kind)
}

// TestWalDamage: a Prometheus-written WAL (no chunks_head, several snappy
// segments) damaged at seeded random places. On each damaged copy Ferrite's
// open must succeed (exit 0, no panic) and keep at least the series and
// samples that Prometheus' own repair (promdigest --repair, the server's
// startup) keeps on an identical copy; its repair must be stable (a reopen
// reads the same), and Prometheus must still start on the dir Ferrite left.
// INTEROP_DAMAGE_TRIALS sets the number of trials (default 12).
func TestWalDamage(t *testing.T) {
	ferriteBin(t)
	trials := 12
	if s := os.Getenv("INTEROP_DAMAGE_TRIALS"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			t.Fatalf("INTEROP_DAMAGE_TRIALS=%q: want a positive number", s)
		}
		trials = n
	}
	base := t.TempDir()
	src := filepath.Join(base, "src")
	model := generate(t, promtsdb.GenOptions{Dir: src, Series: 300, Samples: 400, Compression: "snappy",
		SegmentSize: 128 << 10, NoChunksHead: true})
	segs := walSegments(t, src)
	if len(segs) < 3 {
		t.Fatalf("want several WAL segments, have %v", segs)
	}
	sameDigest(t, "undamaged, prometheus", promDigest(t, src), model)

	kinds := []string{"flip", "truncate", "zero-page", "garbage"}
	rng := rand.New(rand.NewSource(7))
	for trial := 0; trial < trials; trial++ {
		kind := kinds[trial%len(kinds)]
		seg := segs[rng.Intn(len(segs))]
		data, err := os.ReadFile(seg)
		if err != nil {
			t.Fatal(err)
		}
		data, what := damage(rng, kind, data)
		rel, _ := filepath.Rel(src, seg)

		t.Run(fmt.Sprintf("%02d-%s", trial, kind), func(t *testing.T) {
			promCopy := filepath.Join(base, fmt.Sprintf("prom-%d", trial))
			ferCopy := filepath.Join(base, fmt.Sprintf("ferrite-%d", trial))
			for _, d := range []string{promCopy, ferCopy} {
				copyDir(t, src, d)
				if err := os.WriteFile(filepath.Join(d, rel), data, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			defer os.RemoveAll(promCopy)
			defer os.RemoveAll(ferCopy)

			prom, perr := promRepair(promCopy)
			fer := ferriteDigest(t, ferCopy)
			if perr != nil {
				t.Logf("%s: %s: prometheus failed to open (%v); ferrite kept series=%d samples=%d",
					rel, what, perr, fer.Series, fer.Samples)
			} else {
				t.Logf("%s: %s: prometheus kept series=%d samples=%d, ferrite series=%d samples=%d (of %d, %d)",
					rel, what, prom.Series, prom.Samples, fer.Series, fer.Samples, model.Series, model.Samples)
				if fer.Series < prom.Series || fer.Samples < prom.Samples {
					t.Errorf("ferrite kept less than prometheus' repair: ferrite series=%d samples=%d, prometheus series=%d samples=%d",
						fer.Series, fer.Samples, prom.Series, prom.Samples)
				}
			}
			if fer.Series > model.Series || fer.Samples > model.Samples {
				t.Errorf("ferrite reads more than was written: series=%d samples=%d, written %d, %d",
					fer.Series, fer.Samples, model.Series, model.Samples)
			}
			sameDigest(t, "ferrite reopening its repaired dir", ferriteDigest(t, ferCopy), fer)
			if after, err := promRepair(ferCopy); err != nil {
				t.Errorf("prometheus cannot start on the dir ferrite repaired: %v", err)
			} else {
				t.Logf("prometheus on ferrite's repaired dir: series=%d samples=%d", after.Series, after.Samples)
			}
		})
	}
}
