// Command blockbench compares Prometheus v3.16.0 and Ferrite on blocks, side by
// side on the same data, normally run by scripts/bench-blocks:
//
//  1. head compaction: each tool opens a copy of a Prometheus-written data
//     dir (WAL + chunks_head, no blocks) and persists the whole head into
//     blocks, one per aligned 2 h range (`promcompact DIR`: db.CompactHead of
//     a RangeHead per range; `ferrite debug bench-compact DIR`:
//     Db::compact_head_fully). Shapes: (a) 10,000 series x 1,000 samples and
//     (b) 200,000 series x 120 samples (the replay benchmark's dirs, reused),
//     (n) a node_exporter-like data set (promcompact gen-node), and, not in
//     the default set, (h) the replay benchmark's histogram-heavy shape. Each tool
//     reports its compaction seconds (the open excluded), its RSS after the
//     open, its peak RSS during the compaction (VmHWM reset after the open)
//     and its whole-process peak;
//  2. opening N blocks: a dir of N consecutive 2 h blocks written by
//     Prometheus' block writer (promcompact gen-blocks), opened as the server
//     does (`promcompact open`: tsdb.Open; `ferrite debug bench-open`:
//     Db::open): open seconds and resident memory per block, i.e. (RSS after
//     opening the N blocks - RSS after opening an empty dir) / N;
//  3. a single series read across all blocks (same dir, same process): one
//     series selected by {__name__, instance} over all time, all samples
//     read, a new querier each time; median of -read-runs reads;
//  4. disk bytes per sample: the blocks each tool wrote in 1., du (allocated
//     bytes) and apparent size, divided by the samples (sum of the blocks'
//     meta.json numSamples). For shape h (histogram-heavy: the replay
//     benchmark's shape h, only when asked for with -shapes h) also the
//     bytes per histogram sample: the apparent size of the blocks' chunks/
//     files over the samples, all of them histogram samples, and the number
//     of chunks written (meta.json numChunks).
//
// Every run gets a fresh copy of the data (both tools write into the dir they
// open), the page cache is warmed with it first, and runs alternate
// Prometheus/Ferrite. It prints markdown tables (medians over the runs, max
// RSS over the runs, ratios), the raw runs, and the command line. It exits
// non-zero if the tools disagree on samples written, blocks or samples read.
package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"ferrite.dev/interop/internal/benchutil"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"ferrite.dev/interop/internal/promtsdb"
)

var (
	flagFerrite     = flag.String("ferrite", "target/release/ferrite", "ferrite binary")
	flagPromcompact = flag.String("promcompact", "", "promcompact binary (interop/cmd/promcompact)")
	flagPromgen     = flag.String("promgen", "", "promgen binary (interop/cmd/promgen), to generate shapes a and b when missing")
	flagData        = flag.String("data", "bench-data", "directory of the generated data (reused when present) and scratch copies")
	flagRuns        = flag.Int("runs", 3, "runs per tool and case")
	flagParts       = flag.String("parts", "compact,blocks,merge", "parts to run: compact (head compaction + disk bytes per sample), blocks (opening N blocks + single series read), merge (leveled compaction of the N blocks)")
	flagShapes      = flag.String("shapes", "a,b,n", "compaction shapes: a = 10000 series x 1000 samples, b = 200000 series x 120 samples, n = node_exporter-like, h = histogram-heavy (the replay benchmark's shape h; not in the default set)")
	flagHistSer     = flag.Int64("hist-series", 20000, "shape h: integer counter native histogram series")
	flagGaugeSer    = flag.Int64("gauge-hist-series", 1000, "shape h: float gauge native histogram series")
	flagHistSam     = flag.Int64("hist-samples", 240, "shape h: samples per series (15 s apart)")
	flagNodeTargets = flag.Int("node-targets", 100, "shape n: node_exporter targets (~320 series each)")
	flagNodeHours   = flag.Float64("node-hours", 4, "shape n: hours of 15 s scrapes")
	flagBlocks      = flag.Int("blocks", 144, "blocks part: number of 2 h blocks")
	flagBlkTargets  = flag.Int("blocks-targets", 4, "blocks part: node_exporter targets in each block (~320 series each)")
	flagBlkInterval = flag.Int64("blocks-interval-ms", 60000, "blocks part: scrape interval (must divide 2 h)")
	flagReadRuns    = flag.Int("read-runs", 7, "single series read: reads per process (the median is reported)")
	flagPromOnly    = flag.Bool("prom-only", false, "measure Prometheus only (no ferrite binary needed)")
	flagCmdline     = flag.String("cmdline", "", "command line to print with the results (default: this one)")
)

type tool struct {
	name string
	// argv before DIR for head compaction, leveled compaction and opening.
	compact, merge, open []string
}

// res is one tool's printed key=value line, plus what the driver measured.
type res struct {
	kv     map[string]string
	wallS  float64
	cpuS   float64
	du     int64 // blocks written: allocated bytes
	app    int64 // apparent bytes
	index  int64 // apparent bytes of the index files
	chunks int64 // apparent bytes of chunks/
	metaN  int64 // sum of meta.json numSamples
	metaC  int64 // sum of meta.json numChunks
}

func (r res) f(k string) float64 {
	v, err := strconv.ParseFloat(r.kv[k], 64)
	if err != nil {
		benchutil.Fatalf("no number %s in the tool's output %v", k, r.kv)
	}
	return v
}

var failed bool

func errorf(format string, a ...any) {
	fmt.Fprintf(os.Stderr, "ERROR: "+format+"\n", a...)
	failed = true
}

func main() {
	benchutil.Name = "blockbench"
	flag.Parse()
	if *flagPromcompact == "" {
		benchutil.Fatalf("-promcompact is required (scripts/bench-blocks builds and passes it)")
	}
	if *flagRuns < 1 || *flagReadRuns < 1 {
		benchutil.Fatalf("-runs and -read-runs must be at least 1")
	}
	pc := benchutil.Abs(*flagPromcompact)
	tools := []tool{{name: "prometheus", compact: []string{pc, "compact"}, merge: []string{pc, "merge"}, open: []string{pc, "open"}}}
	if !*flagPromOnly {
		fb := benchutil.Abs(*flagFerrite)
		if _, err := os.Stat(fb); err != nil {
			benchutil.Fatalf("no ferrite binary at %s (build it: cargo build --release -p ferrite; or use -prom-only)", fb)
		}
		tools = append(tools, tool{name: "ferrite", compact: []string{fb, "debug", "bench-compact"}, merge: []string{fb, "debug", "bench-merge"}, open: []string{fb, "debug", "bench-open"}})
	}
	cmdline := *flagCmdline
	if cmdline == "" {
		cmdline = strings.Join(os.Args, " ")
	}
	benchutil.Must(os.MkdirAll(*flagData, 0o755))
	scratch := filepath.Join(*flagData, "scratch-blocks")
	os.RemoveAll(scratch)
	benchutil.Must(os.MkdirAll(scratch, 0o755))
	load := loadAvg()

	type compRow struct {
		shape    string
		label    string
		expected int64
		res      map[string][]res
	}
	var comp []compRow
	if benchutil.ContainsField(*flagParts, "compact") {
		for _, sh := range strings.Split(*flagShapes, ",") {
			sh = strings.TrimSpace(sh)
			var src, label string
			var expected int64
			switch sh {
			case "a", "b", "h":
				shp := benchutil.Shape{Name: "a", Series: 10000, Samples: 1000}
				switch sh {
				case "b":
					shp = benchutil.Shape{Name: "b", Series: 200000, Samples: 120}
				case "h":
					shp = benchutil.HistShape(*flagHistSer, *flagGaugeSer, *flagHistSam)
				}
				src, expected, label = ensureSynth(shp), shp.TotalSamples(), shp.Label()
			case "n":
				var series int64
				src, series, expected = ensureNode()
				label = fmt.Sprintf("(n) node_exporter-like, %d targets x %gh: %d series", *flagNodeTargets, *flagNodeHours, series)
			default:
				benchutil.Fatalf("unknown shape %q (want a, b, n, h)", sh)
			}
			row := compRow{shape: sh, label: label, expected: expected, res: map[string][]res{}}
			for i := 0; i < *flagRuns; i++ {
				for _, tl := range tools {
					r := compactRun(tl.compact, src, filepath.Join(scratch, sh+"-"+tl.name))
					fmt.Fprintf(os.Stderr, "compact (%s) %s run %d: %s wall_s=%.3f cpu_s=%.2f blocks_du=%d\n",
						sh, tl.name, i+1, kvString(r.kv), r.wallS, r.cpuS, r.du)
					if n := int64(r.f("samples")); n != expected || r.metaN != expected {
						errorf("(%s) %s: wrote %d samples (meta.json: %d), the head holds %d", sh, tl.name, n, r.metaN, expected)
					}
					row.res[tl.name] = append(row.res[tl.name], r)
				}
			}
			if p, f := row.res["prometheus"], row.res["ferrite"]; len(f) > 0 && p[0].kv["blocks"] != f[0].kv["blocks"] {
				errorf("(%s) Prometheus wrote %s blocks, Ferrite %s", sh, p[0].kv["blocks"], f[0].kv["blocks"])
			}
			comp = append(comp, row)
		}
	}

	var blkRes, emptyRes map[string][]res
	var blkSeries, blkSamples int64
	readName, readInstance := "node_load1", "host-0000:9100"
	if benchutil.ContainsField(*flagParts, "blocks") {
		src, series, perSeries := ensureBlocks()
		blkSeries, blkSamples = series, perSeries
		blkRes, emptyRes = map[string][]res{}, map[string][]res{}
		for i := 0; i < *flagRuns; i++ {
			for _, tl := range tools {
				e := openRun(tl, "", filepath.Join(scratch, "empty-"+tl.name), nil)
				emptyRes[tl.name] = append(emptyRes[tl.name], e)
				r := openRun(tl, src, filepath.Join(scratch, "blocks-"+tl.name),
					[]string{"--name", readName, "--instance", readInstance, "--read-runs", fmt.Sprint(*flagReadRuns)})
				blkRes[tl.name] = append(blkRes[tl.name], r)
				fmt.Fprintf(os.Stderr, "blocks %s run %d: empty dir: %s; %d blocks: %s wall_s=%.3f cpu_s=%.2f\n",
					tl.name, i+1, kvString(e.kv), *flagBlocks, kvString(r.kv), r.wallS, r.cpuS)
				if int(r.f("blocks")) != *flagBlocks {
					errorf("%s opened %s blocks, the dir holds %d", tl.name, r.kv["blocks"], *flagBlocks)
				}
				if int64(r.f("read_series")) != 1 || int64(r.f("read_samples")) != perSeries {
					errorf("%s read %s series with %s samples, want 1 series with %d", tl.name, r.kv["read_series"], r.kv["read_samples"], perSeries)
				}
			}
		}
	}
	var mergeRes map[string][]res
	var mergeSamples int64
	if benchutil.ContainsField(*flagParts, "merge") {
		src, series, perSeries := ensureBlocks()
		mergeSamples = series * perSeries
		mergeRes = map[string][]res{}
		for i := 0; i < *flagRuns; i++ {
			for _, tl := range tools {
				r := compactRun(tl.merge, src, filepath.Join(scratch, "merge-"+tl.name))
				mergeRes[tl.name] = append(mergeRes[tl.name], r)
				fmt.Fprintf(os.Stderr, "merge %s run %d: %s wall_s=%.3f cpu_s=%.2f blocks_du=%d\n",
					tl.name, i+1, kvString(r.kv), r.wallS, r.cpuS, r.du)
				if int(r.f("blocks_before")) != *flagBlocks {
					errorf("%s opened %s blocks, the dir holds %d", tl.name, r.kv["blocks_before"], *flagBlocks)
				}
				if n := int64(r.f("samples")); n != mergeSamples || r.metaN != mergeSamples {
					errorf("merge: %s holds %d samples after compacting (meta.json: %d), the blocks held %d", tl.name, n, r.metaN, mergeSamples)
				}
			}
		}
		if p, f := mergeRes["prometheus"], mergeRes["ferrite"]; len(f) > 0 && p[0].kv["blocks"] != f[0].kv["blocks"] {
			errorf("merge: Prometheus left %s blocks, Ferrite %s", p[0].kv["blocks"], f[0].kv["blocks"])
		}
	}
	os.RemoveAll(scratch)

	// Tables.
	has := func(m map[string][]res, name string) bool { return len(m[name]) > 0 }
	fmt.Println()
	if len(comp) > 0 {
		fmt.Println("### Head compaction (whole head into 2 h blocks)")
		fmt.Println()
		fmt.Println("| shape | samples | blocks | Prometheus compact s | Ferrite compact s | speedup | Prometheus open + compact s | Ferrite | speedup | Prometheus peak RSS during compaction MB | Ferrite | ratio | Prometheus RSS after open MB | Ferrite | Prometheus whole-process peak MB | Ferrite | ratio |")
		fmt.Println("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
		for _, r := range comp {
			p := r.res["prometheus"]
			line := fmt.Sprintf("| %s | %d | %s | %.3f |", r.label, r.expected, p[0].kv["blocks"], med(p, "compact_s"))
			if has(r.res, "ferrite") {
				f := r.res["ferrite"]
				line += fmt.Sprintf(" %.3f | %s | %.3f | %.3f | %s | %.0f | %.0f | %s | %.0f | %.0f | %.0f | %.0f | %s |",
					med(f, "compact_s"), benchutil.Ratio(med(p, "compact_s"), med(f, "compact_s")),
					medOpenCompact(p), medOpenCompact(f), benchutil.Ratio(medOpenCompact(p), medOpenCompact(f)),
					maxOf(p, "peak_compact_mb"), maxOf(f, "peak_compact_mb"), benchutil.Ratio(maxOf(p, "peak_compact_mb"), maxOf(f, "peak_compact_mb")),
					med(p, "rss_open_mb"), med(f, "rss_open_mb"),
					maxOf(p, "peak_mb"), maxOf(f, "peak_mb"), benchutil.Ratio(maxOf(p, "peak_mb"), maxOf(f, "peak_mb")))
			} else {
				line += fmt.Sprintf(" - | - | %.3f | - | - | %.0f | - | - | %.0f | - | %.0f | - | - |", medOpenCompact(p), maxOf(p, "peak_compact_mb"), med(p, "rss_open_mb"), maxOf(p, "peak_mb"))
			}
			fmt.Println(line)
		}
		fmt.Println()
		fmt.Println("### Disk bytes per sample (the blocks written above)")
		fmt.Println()
		fmt.Println("| shape | samples | Prometheus blocks du bytes | Ferrite | Prometheus bytes/sample (du) | Ferrite | ratio | Prometheus bytes/sample (apparent: chunks + index) | Ferrite |")
		fmt.Println("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
		for _, r := range comp {
			p := r.res["prometheus"][0]
			n := float64(r.expected)
			bps := func(x res) string {
				return fmt.Sprintf("%.3f (%.3f + %.3f)", float64(x.app)/n, float64(x.chunks)/n, float64(x.index)/n)
			}
			line := fmt.Sprintf("| %s | %d | %d |", r.label, r.expected, p.du)
			if has(r.res, "ferrite") {
				f := r.res["ferrite"][0]
				line += fmt.Sprintf(" %d | %.3f | %.3f | %s | %s | %s |", f.du, float64(p.du)/n, float64(f.du)/n,
					benchutil.Ratio(float64(p.du), float64(f.du)), bps(p), bps(f))
			} else {
				line += fmt.Sprintf(" - | %.3f | - | - | %s | - |", float64(p.du)/n, bps(p))
			}
			fmt.Println(line)
		}
		fmt.Println()
		for _, r := range comp {
			if r.shape != "h" {
				continue
			}
			// Shape h holds histogram samples only: chunks/ bytes over
			// samples is the bytes per histogram sample.
			fmt.Println("### Bytes per histogram sample (shape h: chunks/ files of the blocks written above)")
			fmt.Println()
			fmt.Println("| shape | histogram samples | Prometheus chunks | Ferrite chunks | Prometheus chunks/ bytes | Ferrite | Prometheus bytes/histogram sample | Ferrite | Ferrite / Prometheus |")
			fmt.Println("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
			p := r.res["prometheus"][0]
			n := float64(r.expected)
			line := fmt.Sprintf("| %s | %d | %d |", r.label, r.expected, p.metaC)
			if has(r.res, "ferrite") {
				f := r.res["ferrite"][0]
				line += fmt.Sprintf(" %d | %d | %d | %.3f | %.3f | %.3f |", f.metaC, p.chunks, f.chunks, float64(p.chunks)/n, float64(f.chunks)/n, float64(f.chunks)/float64(p.chunks))
			} else {
				line += fmt.Sprintf(" - | %d | - | %.3f | - | - |", p.chunks, float64(p.chunks)/n)
			}
			fmt.Println(line)
			fmt.Println()
		}
	}
	if blkRes != nil {
		n := float64(*flagBlocks)
		perBlock := func(name string) float64 {
			return (med(blkRes[name], "rss_open_mb") - med(emptyRes[name], "rss_open_mb")) * 1024 / n
		}
		fmt.Printf("### Opening %d blocks (%d series each, %d samples per series in all)\n", *flagBlocks, blkSeries, blkSamples)
		fmt.Println()
		fmt.Println("| | Prometheus | Ferrite | ratio |")
		fmt.Println("|---|---:|---:|---:|")
		row := func(what string, k string, m map[string][]res, digits int) {
			p := med(m["prometheus"], k)
			if has(m, "ferrite") {
				f := med(m["ferrite"], k)
				fmt.Printf("| %s | %.*f | %.*f | %s |\n", what, digits, p, digits, f, benchutil.Ratio(p, f))
			} else {
				fmt.Printf("| %s | %.*f | - | - |\n", what, digits, p)
			}
		}
		row("open s", "open_s", blkRes, 3)
		row("RSS after open MB", "rss_open_mb", blkRes, 1)
		row("RSS after opening an empty dir MB", "rss_open_mb", emptyRes, 1)
		if has(blkRes, "ferrite") {
			fmt.Printf("| resident KB per block | %.1f | %.1f | %s |\n", perBlock("prometheus"), perBlock("ferrite"), benchutil.Ratio(perBlock("prometheus"), perBlock("ferrite")))
		} else {
			fmt.Printf("| resident KB per block | %.1f | - | - |\n", perBlock("prometheus"))
		}
		fmt.Println()
		fmt.Printf("### Single series read across the %d blocks\n", *flagBlocks)
		fmt.Println()
		fmt.Printf("`{__name__=%q, instance=%q}` over all time: 1 series, %d samples.\n\n", readName, readInstance, blkSamples)
		fmt.Println("| | Prometheus | Ferrite | speedup |")
		fmt.Println("|---|---:|---:|---:|")
		p := med(blkRes["prometheus"], "read_s") * 1e3
		if has(blkRes, "ferrite") {
			f := med(blkRes["ferrite"], "read_s") * 1e3
			fmt.Printf("| select + read ms | %.3f | %.3f | %s |\n", p, f, benchutil.Ratio(p, f))
		} else {
			fmt.Printf("| select + read ms | %.3f | - | - |\n", p)
		}
		fmt.Println()
	}

	if mergeRes != nil {
		p := mergeRes["prometheus"]
		fmt.Printf("### Leveled compaction of %d 2 h blocks (ranges 2 h, 6 h, 18 h; %d samples)\n", *flagBlocks, mergeSamples)
		fmt.Println()
		fmt.Println("| blocks after | Prometheus compact s | Ferrite compact s | speedup | Prometheus open + compact s | Ferrite | speedup | Prometheus peak RSS during compaction MB | Ferrite | ratio | Prometheus whole-process peak MB | Ferrite | ratio |")
		fmt.Println("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
		line := fmt.Sprintf("| %s | %.3f |", p[0].kv["blocks"], med(p, "compact_s"))
		if has(mergeRes, "ferrite") {
			f := mergeRes["ferrite"]
			line += fmt.Sprintf(" %.3f | %s | %.3f | %.3f | %s | %.0f | %.0f | %s | %.0f | %.0f | %s |",
				med(f, "compact_s"), benchutil.Ratio(med(p, "compact_s"), med(f, "compact_s")),
				medOpenCompact(p), medOpenCompact(f), benchutil.Ratio(medOpenCompact(p), medOpenCompact(f)),
				maxOf(p, "peak_compact_mb"), maxOf(f, "peak_compact_mb"), benchutil.Ratio(maxOf(p, "peak_compact_mb"), maxOf(f, "peak_compact_mb")),
				maxOf(p, "peak_mb"), maxOf(f, "peak_mb"), benchutil.Ratio(maxOf(p, "peak_mb"), maxOf(f, "peak_mb")))
		} else {
			line += fmt.Sprintf(" - | - | %.3f | - | - | %.0f | - | - | %.0f | - | - |", medOpenCompact(p), maxOf(p, "peak_compact_mb"), maxOf(p, "peak_mb"))
		}
		fmt.Println(line)
		fmt.Println()
	}

	fmt.Println("Runs:")
	fmt.Println()
	for _, r := range comp {
		for _, tl := range tools {
			var parts []string
			for _, x := range r.res[tl.name] {
				parts = append(parts, fmt.Sprintf("%s/%s/%s/%s/%s/%.3f/%.2f",
					x.kv["open_s"], x.kv["compact_s"], x.kv["rss_open_mb"], x.kv["peak_compact_mb"], x.kv["peak_mb"], x.wallS, x.cpuS))
			}
			fmt.Printf("- compaction %s, %s (open s / compact s / RSS after open MB / peak during compaction MB / whole peak MB / wall s / user+sys CPU s): %s\n",
				r.label, tl.name, strings.Join(parts, ", "))
		}
	}
	if blkRes != nil {
		for _, tl := range tools {
			var parts []string
			for i, x := range blkRes[tl.name] {
				parts = append(parts, fmt.Sprintf("%s/%s/%s/%.3f/%.3f/%.2f",
					x.kv["open_s"], x.kv["rss_open_mb"], emptyRes[tl.name][i].kv["rss_open_mb"], x.f("read_s")*1e3, x.wallS, x.cpuS))
			}
			fmt.Printf("- %d blocks, %s (open s / RSS after open MB / empty-dir RSS MB / median read ms / wall s / user+sys CPU s): %s\n",
				*flagBlocks, tl.name, strings.Join(parts, ", "))
			for i, x := range blkRes[tl.name] {
				fmt.Printf("  - run %d reads s: %s\n", i+1, x.kv["read_runs"])
			}
		}
	}
	for _, tl := range tools {
		if mergeRes == nil {
			break
		}
		var parts []string
		for _, x := range mergeRes[tl.name] {
			parts = append(parts, fmt.Sprintf("%s/%s/%s/%s/%s/%.3f/%.2f",
				x.kv["open_s"], x.kv["compact_s"], x.kv["rss_open_mb"], x.kv["peak_compact_mb"], x.kv["peak_mb"], x.wallS, x.cpuS))
		}
		fmt.Printf("- leveled compaction of %d blocks, %s (open s / compact s / RSS after open MB / peak during compaction MB / whole peak MB / wall s / user+sys CPU s): %s\n",
			*flagBlocks, tl.name, strings.Join(parts, ", "))
	}
	fmt.Println()
	fmt.Printf("Medians of %d runs (RSS: the max over the runs for peaks, the median for RSS after open). "+
		"Each tool measures itself in-process: compaction s excludes the open; RSS after open is VmRSS right after it; "+
		"the peak during compaction is VmHWM after the compaction, reset (5 > /proc/self/clear_refs) after the open; "+
		"the whole-process peak is max(VmHWM after the open, that). Prometheus: tsdb.Open (compactions disabled, GOGC=75 as the server), "+
		"db.CompactHead(NewRangeHead(head, lo, hi-1)) per aligned 2 h range; Ferrite: Db::open, Db::compact_head_fully. "+
		"Leveled compaction: both open the many-block dir with block ranges 2 h, 6 h, 18 h (a tenth of the default 15 d retention) and compact until nothing is planned "+
		"(Prometheus: DB.Compact with retention off; Ferrite: Db::compact keeping expired blocks). "+
		"Resident KB per block = (RSS after opening the blocks - RSS after opening an empty dir) / blocks. "+
		"Read: a new querier, select by {__name__, instance} over all time, iterate all samples; median of %d reads in one process. "+
		"Disk: du (allocated) and apparent bytes of the block dirs written by the compaction / samples (sum of meta.json numSamples); "+
		"bytes per histogram sample: apparent bytes of the blocks' chunks/ segment files (headers and per-chunk length, encoding and CRC included) / samples, chunks = sum of meta.json numChunks. "+
		"Fresh copy of the data per run, warm page cache.\n", *flagRuns, *flagReadRuns)
	fmt.Printf("Machine: %d CPUs (GOMAXPROCS %d), %s, %s/%s, load average at start %s, %s.\n",
		runtime.NumCPU(), runtime.GOMAXPROCS(0), benchutil.MemTotal(), runtime.GOOS, runtime.GOARCH, load, time.Now().UTC().Format("2006-01-02"))
	fmt.Printf("Command: `%s`\n", cmdline)
	if failed {
		benchutil.Fatalf("the tools disagree or miss data (see ERROR lines above)")
	}
}

// compactRun copies src to dir, runs argv (a compaction) on it and measures
// the blocks the dir holds after it.
func compactRun(argv []string, src, dir string) res {
	os.RemoveAll(dir)
	benchutil.Must(promtsdb.CopyDir(src, dir))
	defer os.RemoveAll(dir)
	r := runTool(append(append([]string(nil), argv...), dir))
	entries, err := os.ReadDir(dir)
	benchutil.Must(err)
	for _, e := range entries {
		if !e.IsDir() || !isULID(e.Name()) {
			continue
		}
		b := filepath.Join(dir, e.Name())
		filepath.Walk(b, func(p string, info os.FileInfo, err error) error {
			if err != nil || !info.Mode().IsRegular() {
				return nil
			}
			r.app += info.Size()
			if st, ok := info.Sys().(*syscall.Stat_t); ok {
				r.du += st.Blocks * 512
			}
			rel, _ := filepath.Rel(b, p)
			switch {
			case rel == "index":
				r.index += info.Size()
			case strings.HasPrefix(rel, "chunks"+string(filepath.Separator)):
				r.chunks += info.Size()
			}
			return nil
		})
		var meta struct {
			Stats struct {
				NumSamples int64 `json:"numSamples"`
				NumChunks  int64 `json:"numChunks"`
			} `json:"stats"`
		}
		mb, err := os.ReadFile(filepath.Join(b, "meta.json"))
		benchutil.Must(err)
		benchutil.Must(json.Unmarshal(mb, &meta))
		r.metaN += meta.Stats.NumSamples
		r.metaC += meta.Stats.NumChunks
	}
	return r
}

// openRun copies src (or makes an empty dir if src is "") to dir and runs one
// open.
func openRun(tl tool, src, dir string, extra []string) res {
	os.RemoveAll(dir)
	if src == "" {
		benchutil.Must(os.MkdirAll(dir, 0o755))
	} else {
		benchutil.Must(promtsdb.CopyDir(src, dir))
	}
	defer os.RemoveAll(dir)
	argv := append(append([]string(nil), tl.open...), dir)
	return runTool(append(argv, extra...))
}

// runTool syncs, warms the page cache with the dir (the last argument that
// is a directory) and runs argv, parsing its last stdout line.
func runTool(argv []string) res {
	for _, a := range argv[1:] {
		if fi, err := os.Stat(a); err == nil && fi.IsDir() {
			syscall.Sync()
			benchutil.Warm(a)
		}
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = append(os.Environ(), "FERRITE_LOG=warn")
	var stdout, stderr bytes.Buffer
	cmd.Stdout = &stdout
	cmd.Stderr = &stderr
	start := time.Now()
	err := cmd.Run()
	wall := time.Since(start).Seconds()
	if err != nil {
		benchutil.Fatalf("%s: %v\nstderr:\n%s", strings.Join(argv, " "), err, benchutil.LastLines(stderr.String(), 20))
	}
	r := res{kv: map[string]string{}, wallS: wall}
	if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		r.cpuS = time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds()
	}
	lines := strings.Split(strings.TrimSpace(stdout.String()), "\n")
	for _, f := range strings.Fields(lines[len(lines)-1]) {
		if k, v, ok := strings.Cut(f, "="); ok {
			r.kv[k] = v
		}
	}
	return r
}

// ensureSynth returns the replay benchmark's data dir of a shape, generating
// it with promgen (as scripts/bench-replay does) when missing.
func ensureSynth(sh benchutil.Shape) string {
	dir := sh.Dir(*flagData)
	if _, err := os.Stat(filepath.Join(dir, "wal")); err == nil {
		fmt.Fprintf(os.Stderr, "reusing %s\n", dir)
		return dir
	}
	if *flagPromgen == "" {
		benchutil.Fatalf("%s is missing and no -promgen was given to generate it", dir)
	}
	generate(dir, benchutil.Abs(*flagPromgen), sh.PromgenArgs()...)
	return dir
}

// ensureNode returns the node_exporter-like data dir, its series and samples.
func ensureNode() (string, int64, int64) {
	dir := filepath.Join(*flagData, fmt.Sprintf("node-%dt-%gh-snappy", *flagNodeTargets, *flagNodeHours))
	if !exists(dir) || !exists(dir+".txt") {
		generate(dir, benchutil.Abs(*flagPromcompact), "gen-node", "--targets", fmt.Sprint(*flagNodeTargets), "--hours", fmt.Sprint(*flagNodeHours))
	} else {
		fmt.Fprintf(os.Stderr, "reusing %s\n", dir)
	}
	kv := readKV(dir + ".txt")
	return dir, kv["series"], kv["samples"]
}

// ensureBlocks returns the many-blocks dir, its series per block and the
// samples per series over all blocks.
func ensureBlocks() (string, int64, int64) {
	dir := filepath.Join(*flagData, fmt.Sprintf("blocks-%dx2h-%dt-%dms", *flagBlocks, *flagBlkTargets, *flagBlkInterval))
	if !exists(dir) || !exists(dir+".txt") {
		generate(dir, benchutil.Abs(*flagPromcompact), "gen-blocks", "--blocks", fmt.Sprint(*flagBlocks), "--targets", fmt.Sprint(*flagBlkTargets),
			"--interval-ms", fmt.Sprint(*flagBlkInterval))
	} else {
		fmt.Fprintf(os.Stderr, "reusing %s\n", dir)
	}
	kv := readKV(dir + ".txt")
	return dir, kv["series"], kv["samples_per_series"]
}

// generate runs a generator into dir.tmp, renames it to dir and keeps its
// output line in dir.txt (promgen's output is not kept: the shape is the name).
func generate(dir, bin string, args ...string) {
	tmp := dir + ".tmp"
	os.RemoveAll(tmp)
	os.RemoveAll(dir)
	fmt.Fprintf(os.Stderr, "generating %s with Prometheus (%s)...\n", dir, filepath.Base(bin))
	var argv []string
	if filepath.Base(bin) == "promgen" {
		argv = append([]string{"--dir", tmp}, args...)
	} else {
		argv = append([]string{args[0], "--dir", tmp}, args[1:]...)
	}
	var out bytes.Buffer
	gen := exec.Command(bin, argv...)
	gen.Stdout = io.MultiWriter(&out, os.Stderr)
	gen.Stderr = os.Stderr
	if err := gen.Run(); err != nil {
		benchutil.Fatalf("%s: %v", filepath.Base(bin), err)
	}
	benchutil.Must(os.Rename(tmp, dir))
	if filepath.Base(bin) != "promgen" {
		benchutil.Must(os.WriteFile(dir+".txt", out.Bytes(), 0o644))
	}
}

func exists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

func readKV(path string) map[string]int64 {
	f, err := os.Open(path)
	benchutil.Must(err)
	defer f.Close()
	kv := map[string]int64{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		for _, fl := range strings.Fields(sc.Text()) {
			if k, v, ok := strings.Cut(fl, "="); ok {
				if n, err := strconv.ParseInt(v, 10, 64); err == nil {
					kv[k] = n
				}
			}
		}
	}
	return kv
}

func isULID(s string) bool {
	if len(s) != 26 {
		return false
	}
	for _, c := range s {
		if !strings.ContainsRune("0123456789ABCDEFGHJKMNPQRSTVWXYZ", c) {
			return false
		}
	}
	return true
}

func med(rs []res, k string) float64 {
	return medOf(rs, func(r res) float64 { return r.f(k) })
}

// medOpenCompact is the median over runs of open s + compact s: opening a
// head-only dir and persisting its whole head, as one process does.
func medOpenCompact(rs []res) float64 {
	return medOf(rs, func(r res) float64 { return r.f("open_s") + r.f("compact_s") })
}

// medOf is the median of value over the runs (0 for none).
func medOf(rs []res, value func(res) float64) float64 {
	var v []float64
	for _, r := range rs {
		v = append(v, value(r))
	}
	sort.Float64s(v)
	n := len(v)
	if n == 0 {
		return 0
	}
	if n%2 == 1 {
		return v[n/2]
	}
	return (v[n/2-1] + v[n/2]) / 2
}

func maxOf(rs []res, k string) float64 {
	m := 0.0
	for _, r := range rs {
		m = max(m, r.f(k))
	}
	return m
}

func kvString(kv map[string]string) string {
	var keys []string
	for k := range kv {
		if k != "read_runs" {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	var parts []string
	for _, k := range keys {
		parts = append(parts, k+"="+kv[k])
	}
	return strings.Join(parts, " ")
}

func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "?"
	}
	return strings.Join(f[:3], " ")
}
