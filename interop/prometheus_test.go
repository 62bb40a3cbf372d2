package interop_test

import (
	"fmt"
	"path/filepath"
	"testing"

	"ferrite.dev/interop/internal/promtsdb"
)

// TestPromgenMatchesModel needs no ferrite: Prometheus writes the synth model
// (promgen) and reads it back (promdigest, read-only and server-style) with
// the model's totals, without compacting and without modifying the dir when
// read-only.
func TestPromgenMatchesModel(t *testing.T) {
	cases := []struct {
		series, samples int64
		comp            string
	}{
		{200, 300, "snappy"},
		{20, 2000, "zstd"}, // 8.3 h: the head is compactable, nothing may compact it
		{500, 60, "none"},
	}
	for _, c := range cases {
		t.Run(fmt.Sprintf("%dx%d/%s", c.series, c.samples, c.comp), func(t *testing.T) {
			base := t.TempDir()
			dir := filepath.Join(base, "prom")
			model := generate(t, promtsdb.GenOptions{Dir: dir, Series: c.series, Samples: c.samples, Compression: c.comp, SegmentSize: 128 << 10})
			sameDigest(t, "promgen's totals vs the Go model", model, modelDigest(c.series, c.samples))
			if len(walSegments(t, dir)) < 2 {
				t.Errorf("want several WAL segments, have %v", walSegments(t, dir))
			}
			if c.samples > 240 && len(chunkFiles(dir)) == 0 {
				t.Error("prometheus wrote no chunks_head files")
			}

			before := dirState(t, dir)
			sameDigest(t, "prometheus read-only digest", promDigest(t, dir), model)
			if after := dirState(t, dir); after != before {
				t.Errorf("the read-only digest changed the dir:\nbefore:\n%s\nafter:\n%s", before, after)
			}

			walOnly := filepath.Join(base, "wal-only")
			copyWithoutChunksHead(t, dir, walOnly)
			sameDigest(t, "prometheus read-only digest, WAL only", promDigest(t, walOnly), model)

			d, err := promRepair(walOnly)
			if err != nil {
				t.Fatalf("promdigest --repair: %v", err)
			}
			sameDigest(t, "prometheus server-style open (promdigest --repair)", d, model)
			if b := blockDirs(walOnly); len(b) > 0 {
				t.Errorf("promdigest --repair compacted into blocks %v", b)
			}
			// What the server-style open left still reads the same.
			sameDigest(t, "prometheus read-only after the server-style open", promDigest(t, walOnly), model)
		})
	}
	t.Run("checkpoint", func(t *testing.T) {
		dir := filepath.Join(t.TempDir(), "prom")
		model := generate(t, promtsdb.GenOptions{Dir: dir, Series: 300, Samples: 400, SegmentSize: 128 << 10, Checkpoint: true, NoChunksHead: true})
		cps, _ := filepath.Glob(filepath.Join(dir, "wal", "checkpoint.*"))
		if len(cps) != 1 {
			t.Fatalf("want one checkpoint, have %v", cps)
		}
		if segs, _ := filepath.Glob(filepath.Join(dir, "wal", "00000000")); len(segs) != 0 {
			t.Errorf("segment 0 was not truncated away")
		}
		d := promDigest(t, dir)
		t.Logf("model %d samples; after the checkpoint prometheus reads %d series, %d samples", model.Samples, d.Series, d.Samples)
		if d.Series != model.Series || d.Samples >= model.Samples || d.Samples < model.Samples/3 {
			t.Errorf("checkpointed dir digests to series=%d samples=%d; want all %d series and between a third and all of %d samples",
				d.Series, d.Samples, model.Series, model.Samples)
		}
	})
}

type shape struct{ series, samples int64 }

func (s shape) String() string { return fmt.Sprintf("%dx%d", s.series, s.samples) }

// TestPrometheusDirsDigestEqual: data dirs written by Prometheus digest the
// same in Ferrite, with chunks_head (normal restart) and without it (full WAL
// replay), for every WAL compression, and with a checkpoint; and Prometheus
// still reads what Ferrite's open left behind.
func TestPrometheusDirsDigestEqual(t *testing.T) {
	ferriteBin(t)
	shapes := []shape{{300, 1000}, {3000, 120}, {20, 10000}}
	for _, sh := range shapes {
		for _, comp := range []string{"none", "snappy", "zstd"} {
			t.Run(fmt.Sprintf("%s/%s", sh, comp), func(t *testing.T) {
				base := t.TempDir()
				src := filepath.Join(base, "prom")
				model := generate(t, promtsdb.GenOptions{Dir: src, Series: sh.series, Samples: sh.samples, Compression: comp, SegmentSize: 1 << 20})
				want := promDigest(t, src)
				sameDigest(t, "prometheus vs the model", want, model)

				withChunks := filepath.Join(base, "with-chunks-head")
				copyDir(t, src, withChunks)
				sameDigest(t, "ferrite, chunks_head + WAL", ferriteDigest(t, withChunks), want)
				sameDigest(t, "prometheus after ferrite opened the dir", promDigest(t, withChunks), want)

				walOnly := filepath.Join(base, "wal-only")
				copyWithoutChunksHead(t, src, walOnly)
				sameDigest(t, "prometheus, WAL only", promDigest(t, walOnly), want)
				sameDigest(t, "ferrite, WAL only (full replay)", ferriteDigest(t, walOnly), want)
				sameDigest(t, "ferrite reopening what its replay left", ferriteDigest(t, walOnly), want)
				sameDigest(t, "prometheus after ferrite's replay", promDigest(t, walOnly), want)
			})
		}
	}
	for _, c := range []struct {
		comp         string
		noChunksHead bool
	}{{"snappy", false}, {"snappy", true}, {"zstd", true}} {
		t.Run(fmt.Sprintf("checkpoint/%s/no-chunks-head=%v", c.comp, c.noChunksHead), func(t *testing.T) {
			base := t.TempDir()
			src := filepath.Join(base, "prom")
			model := generate(t, promtsdb.GenOptions{Dir: src, Series: 500, Samples: 600, Compression: c.comp,
				SegmentSize: 256 << 10, Checkpoint: true, NoChunksHead: c.noChunksHead})
			if cps, _ := filepath.Glob(filepath.Join(src, "wal", "checkpoint.*")); len(cps) != 1 {
				t.Fatalf("want one checkpoint, have %v", cps)
			}
			// What a Prometheus v3.16 server serves from this dir: its open
			// applies the checkpoint's min_valid_time record (head chunks and
			// WAL samples older than it are dropped), which the read-only
			// open does not.
			want := promServe(t, src, filepath.Join(base, "prom-server"))
			t.Logf("model %d samples, prometheus reads %d read-only, serves %d",
				model.Samples, promDigest(t, src).Samples, want.Samples)
			if want.Samples == 0 {
				t.Fatal("prometheus digest is empty")
			}
			dir := filepath.Join(base, "ferrite")
			copyDir(t, src, dir)
			sameDigest(t, "ferrite with a checkpoint", ferriteDigest(t, dir), want)
			sameDigest(t, "ferrite reopen", ferriteDigest(t, dir), want)
			sameDigest(t, "prometheus serving after ferrite", promServe(t, dir, filepath.Join(base, "prom-after")), want)
		})
	}
}

// promServe is what a Prometheus server serves from dir: its writable open
// (promRepair) of a copy at work, so dir is left unchanged.
func promServe(t *testing.T, dir, work string) promtsdb.Digest {
	t.Helper()
	copyDir(t, dir, work)
	d, err := promRepair(work)
	if err != nil {
		t.Fatalf("prometheus cannot open %s: %v", work, err)
	}
	return d
}
