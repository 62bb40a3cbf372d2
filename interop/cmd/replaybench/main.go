// Command replaybench compares what a restart costs in Prometheus v3.16.0 and
// in Ferrite on the same Prometheus-written data dirs: `promdigest DIR
// --open-only` against `ferrite tsdb digest DIR --open-only`, in two
// scenarios per shape:
//
//   - full WAL replay: chunks_head/ removed, the whole WAL is replayed;
//   - normal restart: chunks_head/ as a clean shutdown left it, plus the WAL.
//
// Shapes: (a) 10,000 float series x 1,000 samples, (b) 200,000 float series
// x 120 samples (the default set), and (h) the histogram-heavy shape, only
// when asked for (-shapes h or a,b,h): 20,000 integer counter native
// histogram series (exponential schema 3, 16 buckets in 2 spans) and 1,000
// float gauge histogram series x 240 samples (-hist-series,
// -gauge-hist-series, -hist-samples size it). Shape h is not in the default
// set so that the default command and its output stay the ones
// docs/benchmarks.md quotes for the float shapes.
//
// The data dirs are generated once with promgen (snappy WAL, Prometheus'
// default) under -data and reused. Every run is measured by runstat (wall
// time and peak RSS from wait4); open_s is what each tool reports for its own
// open. Prometheus reads the prepared scenario dir read-only; Ferrite, which
// may repair or write chunk files when it opens a dir, gets a fresh copy per
// run. Before each run the page cache is warmed with the run's files, so both
// tools start from the same cache state. Runs alternate Prometheus/Ferrite.
//
// It prints a markdown table (median open_s over the runs, max peak RSS over
// the runs), the raw runs, and the command line. It exits non-zero when a
// tool fails or when the series counts differ.
package main

import (
	"bytes"
	"encoding/json"
	"ferrite.dev/interop/internal/benchutil"
	"ferrite.dev/interop/internal/promtsdb"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"
)

type shape = benchutil.Shape

// run is one measured open.
type run struct {
	OpenS    float64
	Series   int64
	WallS    float64 `json:"wall_s"`
	MaxRSSMB float64 `json:"max_rss_mb"`
	UserS    float64 `json:"user_s"`
	SysS     float64 `json:"sys_s"`
	Exit     int     `json:"exit"`
}

type tool struct {
	name string
	bin  string
	args []string // before DIR
	copy bool     // needs a fresh copy per run
}

var (
	flagFerrite    = flag.String("ferrite", "target/release/ferrite", "ferrite binary")
	flagPromdigest = flag.String("promdigest", "", "promdigest binary (interop/cmd/promdigest)")
	flagPromgen    = flag.String("promgen", "", "promgen binary (interop/cmd/promgen)")
	flagRunstat    = flag.String("runstat", "", "runstat binary (interop/cmd/runstat)")
	flagData       = flag.String("data", "bench-data", "directory of the generated data dirs (reused when present) and scratch copies")
	flagRuns       = flag.Int("runs", 3, "runs per tool and scenario")
	flagShapes     = flag.String("shapes", "a,b", "shapes to run: a = 10000 series x 1000 samples, b = 200000 series x 120 samples, h = histogram-heavy (not in the default set)")
	flagHistSer    = flag.Int64("hist-series", 20000, "shape h: integer counter native histogram series")
	flagGaugeSer   = flag.Int64("gauge-hist-series", 1000, "shape h: float gauge native histogram series")
	flagHistSam    = flag.Int64("hist-samples", 240, "shape h: samples per series (15 s apart)")
	flagPromOnly   = flag.Bool("prom-only", false, "measure Prometheus only (no ferrite binary needed)")
	flagCmdline    = flag.String("cmdline", "", "command line to print with the results (default: this one)")
)

func main() {
	benchutil.Name = "replaybench"
	flag.Parse()
	if *flagPromdigest == "" || *flagPromgen == "" || *flagRunstat == "" {
		benchutil.Fatalf("-promdigest, -promgen and -runstat are required (scripts/bench-replay builds and passes them)")
	}
	if *flagRuns < 1 {
		benchutil.Fatalf("-runs must be at least 1")
	}
	tools := []tool{{name: "prometheus", bin: benchutil.Abs(*flagPromdigest), args: []string{"--open-only"}}}
	if !*flagPromOnly {
		fb := benchutil.Abs(*flagFerrite)
		if _, err := os.Stat(fb); err != nil {
			benchutil.Fatalf("no ferrite binary at %s (build it: cargo build --release -p ferrite; or use -prom-only)", fb)
		}
		tools = append(tools, tool{name: "ferrite", bin: fb, args: []string{"tsdb", "digest", "--open-only"}, copy: true})
	}
	cmdline := *flagCmdline
	if cmdline == "" {
		cmdline = strings.Join(os.Args, " ")
	}
	if err := os.MkdirAll(*flagData, 0o755); err != nil {
		benchutil.Fatalf("%v", err)
	}

	type row struct {
		shape    shape
		scenario string
		res      map[string][]run
	}
	var rows []row
	failed := false
	shapes := []shape{{Name: "a", Series: 10000, Samples: 1000}, {Name: "b", Series: 200000, Samples: 120},
		benchutil.HistShape(*flagHistSer, *flagGaugeSer, *flagHistSam)}
	for _, sh := range shapes {
		if !benchutil.ContainsField(*flagShapes, sh.Name) {
			continue
		}
		src := ensureData(sh)
		for _, scen := range []string{"full WAL replay", "normal restart"} {
			prepared := filepath.Join(*flagData, "scratch", sh.Name+"-"+strings.ReplaceAll(scen, " ", "-"))
			os.RemoveAll(prepared)
			benchutil.Must(promtsdb.CopyDir(src, prepared))
			if scen == "full WAL replay" {
				benchutil.Must(os.RemoveAll(filepath.Join(prepared, "chunks_head")))
			}
			r := row{shape: sh, scenario: scen, res: map[string][]run{}}
			for i := 0; i < *flagRuns; i++ {
				for _, tl := range tools {
					res := measure(tl, prepared)
					fmt.Fprintf(os.Stderr, "(%s) %s, %s, run %d: open_s=%.3f series=%d wall_s=%.3f user_s=%.2f sys_s=%.2f peak_rss_mb=%.0f\n",
						sh.Name, scen, tl.name, i+1, res.OpenS, res.Series, res.WallS, res.UserS, res.SysS, res.MaxRSSMB)
					if res.Series != sh.TotalSeries() {
						fmt.Fprintf(os.Stderr, "ERROR: %s read %d series, the dir holds %d\n", tl.name, res.Series, sh.TotalSeries())
						failed = true
					}
					r.res[tl.name] = append(r.res[tl.name], res)
				}
			}
			rows = append(rows, r)
			os.RemoveAll(prepared)
		}
	}
	os.RemoveAll(filepath.Join(*flagData, "scratch"))

	fmt.Println()
	fmt.Println("| shape | scenario | Prometheus open s | Ferrite open s | speedup | Prometheus peak RSS MB | Ferrite peak RSS MB | RSS ratio |")
	fmt.Println("|---|---|---:|---:|---:|---:|---:|---:|")
	for _, r := range rows {
		p := summarize(r.res["prometheus"])
		line := fmt.Sprintf("| %s | %s | %.3f |", r.shape.Label(), r.scenario, p.OpenS)
		if f, ok := r.res["ferrite"]; ok {
			fs := summarize(f)
			line += fmt.Sprintf(" %.3f | %s | %.0f | %.0f | %s |", fs.OpenS, benchutil.Ratio(p.OpenS, fs.OpenS), p.MaxRSSMB, fs.MaxRSSMB, benchutil.Ratio(p.MaxRSSMB, fs.MaxRSSMB))
		} else {
			line += fmt.Sprintf(" - | - | %.0f | - | - |", p.MaxRSSMB)
		}
		fmt.Println(line)
	}
	fmt.Println()
	fmt.Println("Runs (open s / wall s / user+sys CPU s / peak RSS MB):")
	fmt.Println()
	for _, r := range rows {
		for _, tl := range tools {
			var parts []string
			for _, x := range r.res[tl.name] {
				parts = append(parts, fmt.Sprintf("%.3f/%.3f/%.2f/%.0f", x.OpenS, x.WallS, x.UserS+x.SysS, x.MaxRSSMB))
			}
			fmt.Printf("- (%s) %s, %s: %s\n", r.shape.Name, r.scenario, tl.name, strings.Join(parts, ", "))
		}
	}
	fmt.Println()
	fmt.Printf("open s: median of %d runs, as each tool reports its own open (Prometheus: tsdb.OpenDBReadOnly + head load, GOGC=75 as the server; Ferrite: Db::open). "+
		"Peak RSS: max ru_maxrss over the runs. Speedup = Prometheus / Ferrite open s; RSS ratio = Prometheus / Ferrite peak RSS. "+
		"Snappy WAL, 15 s interval, warm page cache.\n", *flagRuns)
	fmt.Printf("Machine: %d CPUs (GOMAXPROCS %d), %s, %s/%s, %s.\n", runtime.NumCPU(), runtime.GOMAXPROCS(0), benchutil.MemTotal(), runtime.GOOS, runtime.GOARCH, time.Now().UTC().Format("2006-01-02"))
	fmt.Printf("Command: `%s`\n", cmdline)
	if failed {
		benchutil.Fatalf("series counts differ from the data (see ERROR lines above)")
	}
}

// ensureData generates the shape's data dir with promgen unless it exists.
func ensureData(sh shape) string {
	dir := sh.Dir(*flagData)
	if _, err := os.Stat(filepath.Join(dir, "wal")); err == nil {
		fmt.Fprintf(os.Stderr, "reusing %s\n", dir)
		return dir
	}
	tmp := dir + ".tmp"
	os.RemoveAll(tmp)
	fmt.Fprintf(os.Stderr, "generating %s with Prometheus (promgen)...\n", dir)
	gen := exec.Command(benchutil.Abs(*flagPromgen), append([]string{"--dir", tmp}, sh.PromgenArgs()...)...)
	gen.Stdout = os.Stderr
	gen.Stderr = os.Stderr
	if err := gen.Run(); err != nil {
		benchutil.Fatalf("promgen: %v", err)
	}
	benchutil.Must(os.Rename(tmp, dir))
	return dir
}

// measure runs one tool on the prepared scenario dir under runstat.
func measure(tl tool, prepared string) run {
	dir := prepared
	if tl.copy {
		dir = prepared + "-" + tl.name
		os.RemoveAll(dir)
		benchutil.Must(promtsdb.CopyDir(prepared, dir))
		defer os.RemoveAll(dir)
	}
	syscall.Sync()
	benchutil.Warm(dir)
	statFile := filepath.Join(*flagData, "scratch", "runstat.json")
	args := append([]string{"-o", statFile, tl.bin}, tl.args...)
	args = append(args, dir)
	cmd := exec.Command(benchutil.Abs(*flagRunstat), args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout = &stdout
	cmd.Stderr = &stderr
	err := cmd.Run()
	if err != nil {
		benchutil.Fatalf("%s %s: %v\nstderr:\n%s", tl.bin, strings.Join(tl.args, " "), err, benchutil.LastLines(stderr.String(), 20))
	}
	var r run
	b, err := os.ReadFile(statFile)
	benchutil.Must(err)
	benchutil.Must(json.Unmarshal(b, &r))
	lines := strings.Split(strings.TrimSpace(stdout.String()), "\n")
	for _, f := range strings.Fields(lines[len(lines)-1]) {
		k, v, _ := strings.Cut(f, "=")
		switch k {
		case "open_s":
			r.OpenS, err = strconv.ParseFloat(v, 64)
		case "series":
			r.Series, err = strconv.ParseInt(v, 10, 64)
		}
		if err != nil {
			benchutil.Fatalf("%s: bad output line %q", tl.name, lines[len(lines)-1])
		}
	}
	return r
}

// summarize: median open_s, max peak RSS.
func summarize(rs []run) run {
	s := append([]run(nil), rs...)
	sort.Slice(s, func(i, j int) bool { return s[i].OpenS < s[j].OpenS })
	out := s[len(s)/2]
	if len(s)%2 == 0 {
		out.OpenS = (s[len(s)/2-1].OpenS + s[len(s)/2].OpenS) / 2
	}
	for _, r := range s {
		out.MaxRSSMB = max(out.MaxRSSMB, r.MaxRSSMB)
	}
	return out
}
