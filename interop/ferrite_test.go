package interop_test

import (
	"fmt"
	"path/filepath"
	"testing"
)

// TestFerriteDirOpensInPrometheus: data dirs written by `ferrite tsdb synth`
// (WAL + chunks_head, several segments) open in Prometheus with exactly the
// synth model's content, read-only and server-style, with and without
// chunks_head; and Ferrite reads its own dirs the same.
func TestFerriteDirOpensInPrometheus(t *testing.T) {
	ferriteBin(t)
	cases := []struct {
		sh   shape
		comp string
		enc  string // float chunk encoding
	}{
		{shape{500, 700}, "snappy", "xor"}, {shape{2000, 120}, "zstd", "xor"}, {shape{30, 3000}, "none", "xor"},
		// storage.tsdb.chunk_encoding.floats: xor2.
		{shape{500, 700}, "snappy", "xor2"}, {shape{30, 3000}, "none", "xor2"},
	}
	for _, c := range cases {
		t.Run(fmt.Sprintf("%s/%s/%s", c.sh, c.comp, c.enc), func(t *testing.T) {
			base := t.TempDir()
			dir := filepath.Join(base, "ferrite")
			out := runFerrite(t, "tsdb", "synth", dir,
				"--series", fmt.Sprint(c.sh.series), "--samples", fmt.Sprint(c.sh.samples),
				"--wal-compression", c.comp, "--wal-segment-size", fmt.Sprint(128<<10),
				"--float-encoding", c.enc)
			want := modelDigest(c.sh.series, c.sh.samples)
			sameDigest(t, "ferrite synth's totals vs the Go model", parseDigest(t, out), want)
			if segs := walSegments(t, dir); len(segs) < 2 {
				t.Errorf("want several non-empty WAL segments, have %v", segs)
			}
			if c.sh.samples > 240 && len(chunkFiles(dir)) == 0 {
				t.Error("ferrite wrote no chunks_head files (full head chunks are m-mapped at the latest on close)")
			}

			sameDigest(t, "prometheus (read-only) reads ferrite's dir", promDigest(t, dir), want)

			walOnly := filepath.Join(base, "wal-only")
			copyWithoutChunksHead(t, dir, walOnly)
			sameDigest(t, "prometheus (read-only) reads ferrite's WAL alone", promDigest(t, walOnly), want)

			server := filepath.Join(base, "server")
			copyDir(t, dir, server)
			d, err := promRepair(server)
			if err != nil {
				t.Fatalf("prometheus server-style open of ferrite's dir: %v", err)
			}
			sameDigest(t, "prometheus server-style open of ferrite's dir", d, want)

			sameDigest(t, "ferrite reads its own dir", ferriteDigest(t, dir), want)

			if c.enc == "xor2" {
				// Ferrite's XOR2 head chunks, persisted into blocks as
				// they are.
				compacted := filepath.Join(base, "compacted")
				copyDir(t, dir, compacted)
				runFerrite(t, "tsdb", "compact", compacted)
				sameDigest(t, "prometheus (read-only) reads ferrite's XOR2 blocks", promDigest(t, compacted), want)
			}
		})
	}
}
