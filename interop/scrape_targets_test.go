package interop_test

// Ferrite's scrape targets (crates/scrape: a job's static targets with its
// settings, through relabel_configs, checked and finished) against
// Prometheus' own scrape.PopulateLabels: the same prometheus.yml files
// through `targetsdump` (Rust, from TARGETSDUMP_BIN) and `promtargets`
// (Go, built here) must give the same target labels, drops and errors.
// Rules that map two discovered labels onto one name are left out: Go
// adds a target's labels from a map, in no fixed order, so Prometheus
// itself keeps either.

import (
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestScrapeTargetsMatchPrometheus(t *testing.T) {
	promBin := goCmdBin(t, "promtargets")
	rng := rand.New(rand.NewSource(20261129))
	var cases []string
	for i := 0; i < 2000; i++ {
		cases = append(cases, randomTargetsFile(rng))
	}
	dir := t.TempDir()
	files := make([]string, len(cases))
	for i, c := range cases {
		files[i] = filepath.Join(dir, fmt.Sprintf("case%05d.yml", i))
		if err := os.WriteFile(files[i], []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	prom := dumpResults(t, promBin, nil, files)
	fer := dumpResults(t, exampleBin(t, "TARGETSDUMP_BIN", "ferrite-scrape", "targetsdump"), nil, files)
	kinds := map[string]int{}
	bad := 0
	for i := range cases {
		for _, line := range strings.Split(strings.TrimSpace(prom[i]), "\n") {
			kind, _, _ := strings.Cut(line, " ")
			kinds[kind]++
		}
		if prom[i] != fer[i] {
			bad++
			if bad <= 10 {
				t.Errorf("case %d:\n%s\nprometheus:\n%s\nferrite:\n%s", i, cases[i], prom[i], fer[i])
			}
		}
	}
	if bad > 10 {
		t.Errorf("... %d mismatches in all", bad)
	}
	t.Logf("%d files: %v", len(cases), kinds)
	for _, k := range []string{"target", "dropped", "error"} {
		if kinds[k] < 100 {
			t.Errorf("only %d targets end %q", kinds[k], k)
		}
	}
	if kinds["config"] > len(cases)/10 {
		t.Errorf("%d of %d files do not load: the generator should make valid ones", kinds["config"], len(cases))
	}
}

func randomTargetsFile(rng *rand.Rand) string {
	pick := func(xs ...string) string { return xs[rng.Intn(len(xs))] }
	var b strings.Builder
	if rng.Intn(3) == 0 {
		fmt.Fprintf(&b, "global:\n  scrape_interval: %s\n", pick("15s", "1m", "30s"))
	}
	b.WriteString("scrape_configs:\n")
	for j := 0; j < 1+rng.Intn(2); j++ {
		fmt.Fprintf(&b, "  - job_name: job%d\n", j)
		if rng.Intn(3) == 0 {
			fmt.Fprintf(&b, "    scrape_interval: %s\n", pick("5s", "1m30s", "2h", "10s"))
		}
		if rng.Intn(4) == 0 {
			fmt.Fprintf(&b, "    scrape_timeout: %s\n", pick("5s", "1s"))
		}
		if rng.Intn(4) == 0 {
			fmt.Fprintf(&b, "    params: %s\n", pick(`{module: [http_2xx, b]}`, `{a: []}`, `{target: ["x y"]}`))
		}
		if rng.Intn(4) == 0 {
			fmt.Fprintf(&b, "    metrics_path: %s\n", pick("/probe", `""`, "/m?x=1"))
		}
		if rng.Intn(4) == 0 {
			fmt.Fprintf(&b, "    scheme: %s\n", pick("https", "ftp"))
		}
		for _, k := range []string{"scrape_native_histograms", "convert_classic_histograms_to_nhcb", "always_scrape_classic_histograms"} {
			if rng.Intn(5) == 0 {
				fmt.Fprintf(&b, "    %s: %s\n", k, pick("true", "false"))
			}
		}
		b.WriteString("    static_configs:\n")
		for g := 0; g < 1+rng.Intn(2); g++ {
			var ts []string
			for k := rng.Intn(3); k >= 0; k-- {
				ts = append(ts, pick(`"host:9100"`, `"10.0.0.1:80"`, `"drop-me:1"`, `"a.b.c:8080"`, `"[::1]:9090"`, `"noport"`))
			}
			fmt.Fprintf(&b, "      - targets: [%s]\n", strings.Join(ts, ", "))
			if rng.Intn(2) == 0 {
				fmt.Fprintf(&b, "        labels: {%s}\n", pick(
					`env: prod`, `__meta_zone: eu, env: dev`, `instance: fixed`, `job: other`,
					`__scheme__: https`, `__scrape_interval__: 7s`, `__address__: over:1`, `__meta_x_y: "1"`))
			}
		}
		// Relabeling: most jobs have some.
		if rng.Intn(4) > 0 {
			b.WriteString("    relabel_configs:\n")
			for r := 0; r < 1+rng.Intn(3); r++ {
				b.WriteString("      - " + pick(
					`{source_labels: [__address__], regex: 'drop-me:.*', action: drop}`,
					`{source_labels: [__address__], regex: '([^:]+):.*', target_label: instance, replacement: '$1'}`,
					`{source_labels: [__address__], target_label: __param_target}`,
					`{target_label: __address__, replacement: 'blackbox:9115'}`,
					`{target_label: __address__, replacement: ''}`,
					`{target_label: __address__, replacement: 'http://x/y'}`,
					`{target_label: __scrape_interval__, replacement: `+pick(`'0s'`, `'x'`, `'3s'`, `'1h'`)+`}`,
					`{target_label: __scrape_timeout__, replacement: `+pick(`'0'`, `'2m'`, `'500ms'`, `'y'`)+`}`,
					`{target_label: `+pick("__scrape_native_histograms__", "__convert_classic_histograms_to_nhcb__", "__always_scrape_classic_histograms__")+`, replacement: `+pick(`'T'`, `'yes'`, `'0'`, `'False'`, `'maybe'`)+`}`,
					`{regex: '__meta_(.+)', action: labelmap}`,
					`{source_labels: [__meta_zone], target_label: zone}`,
					`{regex: 'env', action: labeldrop}`,
					`{source_labels: [job], target_label: shard, modulus: 3, action: hashmod}`,
					`{source_labels: [__scheme__], regex: ftp, action: drop}`,
					`{source_labels: [env], regex: prod, action: keep}`,
					`{target_label: instance, replacement: ''}`,
				) + "\n")
			}
		}
	}
	return b.String()
}

// TestScrapeOffsetHostNameMatchesPrometheus: the host name in the offset
// seed that spreads scrapes over their interval (with the target hashes
// compared above, Ferrite and Prometheus on one host then scrape a target
// at the same moments).
func TestScrapeOffsetHostNameMatchesPrometheus(t *testing.T) {
	prom := run(goCmdBin(t, "promtargets"), nil, "--fqdn")
	fer := run(exampleBin(t, "TARGETSDUMP_BIN", "ferrite-scrape", "targetsdump"), nil, "--fqdn")
	if prom.err != nil || fer.err != nil {
		t.Fatalf("prometheus: %v %s; ferrite: %v %s", prom.err, prom.stderr, fer.err, fer.stderr)
	}
	if prom.stdout != fer.stdout {
		t.Errorf("host name: prometheus %q, ferrite %q", prom.stdout, fer.stdout)
	}
}
