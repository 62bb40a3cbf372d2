package interop_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"testing"

	"github.com/prometheus/prometheus/tsdb"

	"ferrite.dev/interop/internal/promtsdb"
)

// TestPrometheusBlocksDigestEqual: data dirs where Prometheus compacted its
// head (blocks, a WAL checkpoint, truncated WAL, the rest in the head) give
// the same digest in Ferrite as in Prometheus, with and without chunks_head.
func TestPrometheusBlocksDigestEqual(t *testing.T) {
	ferriteBin(t)
	cases := []struct {
		sh   shape
		comp string
	}{
		{shape{300, 1000}, "snappy"}, // 4.2 h: one block and a head
		{shape{20, 4000}, "zstd"},    // 16.7 h: several blocks
		{shape{1000, 800}, "none"},   // 3.3 h
	}
	for _, c := range cases {
		t.Run(fmt.Sprintf("%s/%s", c.sh, c.comp), func(t *testing.T) {
			base := t.TempDir()
			dir := filepath.Join(base, "prom")
			model := generate(t, promtsdb.GenOptions{Dir: dir, Series: c.sh.series, Samples: c.sh.samples,
				Compression: c.comp, SegmentSize: 128 << 10, Compact: true})
			if len(blockDirs(dir)) == 0 {
				t.Fatal("prometheus wrote no block")
			}
			if cps, _ := filepath.Glob(filepath.Join(dir, "wal", "checkpoint.*")); len(cps) == 0 {
				t.Log("prometheus wrote no WAL checkpoint (too few segments)")
			}
			sameDigest(t, "prometheus reads its compacted dir", promDigest(t, dir), model)

			restart := filepath.Join(base, "restart")
			copyDir(t, dir, restart)
			sameDigest(t, "ferrite, normal restart", ferriteDigest(t, restart), model)
			sameDigest(t, "prometheus reads the dir after ferrite opened it", promDigest(t, restart), model)

			full := filepath.Join(base, "full")
			copyWithoutChunksHead(t, dir, full)
			sameDigest(t, "ferrite, full WAL replay", ferriteDigest(t, full), model)
		})
	}
}

// TestFerriteCompactOpensInPrometheus: `ferrite tsdb compact` turns a
// Ferrite data dir into blocks (head blocks, merged by Ferrite's leveled
// compaction where the planner says so) that Prometheus opens with exactly
// the same content (read-only and server-style), whose metas Prometheus
// accepts, and that Prometheus' own compactor can compact further.
func TestFerriteCompactOpensInPrometheus(t *testing.T) {
	ferriteBin(t)
	cases := []struct {
		sh   shape
		comp string
	}{{shape{300, 1000}, "snappy"}, {shape{20, 4000}, "zstd"}, {shape{2000, 120}, "none"}}
	for _, c := range cases {
		t.Run(fmt.Sprintf("%s/%s", c.sh, c.comp), func(t *testing.T) {
			base := t.TempDir()
			dir := filepath.Join(base, "ferrite")
			runFerrite(t, "tsdb", "synth", dir,
				"--series", fmt.Sprint(c.sh.series), "--samples", fmt.Sprint(c.sh.samples),
				"--wal-compression", c.comp, "--wal-segment-size", fmt.Sprint(128<<10))
			want := modelDigest(c.sh.series, c.sh.samples)
			runFerrite(t, "tsdb", "compact", dir)
			blocks := blockDirs(dir)
			if len(blocks) == 0 {
				t.Fatal("ferrite tsdb compact wrote no block")
			}
			sameDigest(t, "ferrite reads its compacted dir", ferriteDigest(t, dir), want)
			sameDigest(t, "prometheus (read-only) reads ferrite's blocks", promDigest(t, dir), want)

			metas := promBlockMetas(t, dir)
			if len(metas) != len(blocks) {
				t.Fatalf("prometheus sees %d blocks, the dir has %d", len(metas), len(blocks))
			}
			var samples uint64
			for i, m := range metas {
				samples += m.Stats.NumSamples
				switch {
				case m.Compaction.Level == 1 && (len(m.Compaction.Sources) != 1 || m.Compaction.Sources[0] != m.ULID):
					t.Errorf("block %s: compaction %+v, want itself as the source of a level-1 block", m.ULID, m.Compaction)
				case m.Compaction.Level > 1 && (len(m.Compaction.Parents) < 2 || len(m.Compaction.Sources) < 2):
					t.Errorf("block %s: compaction %+v, want parents and sources for a compacted block", m.ULID, m.Compaction)
				case m.Compaction.Level < 1:
					t.Errorf("block %s: level %d", m.ULID, m.Compaction.Level)
				}
				if i > 0 && m.MinTime < metas[i-1].MaxTime {
					t.Errorf("blocks %s and %s overlap", metas[i-1].ULID, m.ULID)
				}
			}
			if int64(samples) != want.Samples {
				t.Errorf("block metas count %d samples, want %d", samples, want.Samples)
			}

			server := filepath.Join(base, "server")
			copyDir(t, dir, server)
			d, err := promRepair(server)
			if err != nil {
				t.Fatalf("prometheus server-style open of ferrite's blocks: %v", err)
			}
			sameDigest(t, "prometheus server-style open of ferrite's blocks", d, want)

			// Prometheus' leveled compactor merges Ferrite's level-1 blocks.
			merged := filepath.Join(base, "merged")
			copyDir(t, dir, merged)
			if err := promCompactBlocks(merged); err != nil {
				t.Fatalf("prometheus cannot compact ferrite's blocks: %v", err)
			}
			sameDigest(t, "prometheus after compacting ferrite's blocks", promDigest(t, merged), want)
			sameDigest(t, "ferrite reads prometheus' compaction of its blocks", ferriteDigest(t, merged), want)
		})
	}
}

// promBlockMetas lists the blocks Prometheus finds in dir, by min time.
func promBlockMetas(t testing.TB, dir string) []tsdb.BlockMeta {
	t.Helper()
	sandbox := t.TempDir()
	db, err := tsdb.OpenDBReadOnly(dir, sandbox, promtsdb.Logger)
	if err != nil {
		t.Fatalf("prometheus cannot open %s: %v", dir, err)
	}
	defer db.Close()
	blocks, err := db.Blocks()
	if err != nil {
		t.Fatalf("prometheus cannot load the blocks of %s: %v", dir, err)
	}
	var metas []tsdb.BlockMeta
	for _, b := range blocks {
		metas = append(metas, b.Meta())
	}
	sort.Slice(metas, func(i, j int) bool { return metas[i].MinTime < metas[j].MinTime })
	return metas
}

// promCompactBlocks runs Prometheus' leveled compactor over all blocks of
// dir until nothing is left to plan, as the server does (ranges 2h, 6h, ...).
func promCompactBlocks(dir string) error {
	opts := tsdb.DefaultOptions()
	c, err := tsdb.NewLeveledCompactor(context.Background(), nil, promtsdb.Logger, tsdb.ExponentialBlockRanges(opts.MinBlockDuration, 10, 3), nil, nil)
	if err != nil {
		return err
	}
	for i := 0; i < 20; i++ {
		plan, err := c.Plan(dir)
		if err != nil {
			return err
		}
		if len(plan) == 0 {
			break
		}
		if _, err := c.Compact(dir, plan, nil); err != nil {
			return err
		}
		for _, p := range plan {
			if err := os.RemoveAll(p); err != nil {
				return err
			}
		}
	}
	return nil
}
