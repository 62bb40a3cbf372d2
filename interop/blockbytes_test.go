package interop_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"testing"

	"github.com/prometheus/prometheus/tsdb"

	"ferrite.dev/interop/internal/promtsdb"
)

// TestHeadBlocksByteIdentical: from the same Prometheus-written head, a
// block range persisted by Prometheus (`DB.CompactHead`) and by Ferrite
// (`ferrite debug bench-compact`: `Db::compact_head_fully`) hold the same
// series, chunks and samples, and their index and chunk segment files are
// byte-identical (the meta.json files differ only in ULID).
func TestHeadBlocksByteIdentical(t *testing.T) {
	ferriteBin(t)
	for _, c := range []struct {
		sh   shape
		comp string
	}{{shape{300, 1000}, "snappy"}, {shape{2000, 200}, "zstd"}} {
		t.Run(fmt.Sprintf("%s/%s", c.sh, c.comp), func(t *testing.T) {
			base := t.TempDir()
			src := filepath.Join(base, "src")
			generate(t, promtsdb.GenOptions{Dir: src, Series: c.sh.series, Samples: c.sh.samples,
				Compression: c.comp, SegmentSize: 1 << 20})
			prom := filepath.Join(base, "prom")
			copyDir(t, src, prom)
			if err := promPersistHead(prom); err != nil {
				t.Fatal(err)
			}
			fer := filepath.Join(base, "ferrite")
			copyDir(t, src, fer)
			runFerrite(t, "debug", "bench-compact", fer)

			pb, fb := sortedBlocks(t, prom), sortedBlocks(t, fer)
			if len(pb) == 0 || len(pb) != len(fb) {
				t.Fatalf("prometheus wrote %d blocks, ferrite %d", len(pb), len(fb))
			}
			for i := range pb {
				pm, fm := pb[i].meta, fb[i].meta
				if pm.MinTime != fm.MinTime || pm.MaxTime != fm.MaxTime || pm.Stats != fm.Stats {
					t.Errorf("block %d: prometheus %d..%d %+v, ferrite %d..%d %+v", i,
						pm.MinTime, pm.MaxTime, pm.Stats, fm.MinTime, fm.MaxTime, fm.Stats)
				}
				for _, f := range []string{"index", "chunks/000001", "tombstones"} {
					a, errA := os.ReadFile(filepath.Join(pb[i].dir, f))
					b, errB := os.ReadFile(filepath.Join(fb[i].dir, f))
					if errA != nil || errB != nil {
						t.Errorf("block %d %s: %v / %v", i, f, errA, errB)
						continue
					}
					if !bytes.Equal(a, b) {
						t.Errorf("block %d: %s differs (%d bytes from prometheus, %d from ferrite)", i, f, len(a), len(b))
					}
				}
			}
			want := modelDigest(c.sh.series, c.sh.samples)
			sameDigest(t, "prometheus reads ferrite's head blocks", promDigest(t, fer), want)
		})
	}
}

type blockDir struct {
	dir  string
	meta tsdb.BlockMeta
}

func sortedBlocks(t testing.TB, dir string) []blockDir {
	t.Helper()
	var out []blockDir
	for _, name := range blockDirs(dir) {
		b, err := os.ReadFile(filepath.Join(dir, name, "meta.json"))
		if err != nil {
			t.Fatal(err)
		}
		var m tsdb.BlockMeta
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatal(err)
		}
		out = append(out, blockDir{filepath.Join(dir, name), m})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].meta.MinTime < out[j].meta.MinTime })
	return out
}

// promPersistHead persists the whole head of dir into blocks with
// Prometheus, one per aligned 2 h range (the last ending after the newest
// sample), as `ferrite tsdb compact` does.
func promPersistHead(dir string) error {
	opts := tsdb.DefaultOptions()
	db, err := tsdb.Open(dir, promtsdb.Logger, nil, opts, nil)
	if err != nil {
		return err
	}
	defer db.Close()
	db.DisableCompactions()
	head := db.Head()
	mint, maxt := head.MinTime(), head.MaxTime()
	if mint == math.MaxInt64 {
		return nil
	}
	r := opts.MinBlockDuration
	for lo := mint; ; {
		hi := min((lo/r)*r+r, maxt+1)
		if err := db.CompactHead(tsdb.NewRangeHead(head, lo, hi-1)); err != nil {
			return err
		}
		if hi > maxt {
			return nil
		}
		lo = hi
	}
}
