package interop_test

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/prometheus/common/promslog"
	"github.com/prometheus/prometheus/config"
)

// The configuration file, as far as Ferrite models it (the top level and
// the storage section): `ferrite check config --syntax-only` accepts what
// Prometheus v3.16.0's config.LoadFile accepts, and refuses the rest with
// Prometheus' error text.
func TestConfigFilesCheckedAsPrometheusLoadsThem(t *testing.T) {
	bin := ferriteBin(t)
	cases := map[string]string{
		"empty":            "",
		"shipped-example":  exampleConfig,
		"storage-all":      "storage:\n  tsdb:\n    out_of_order_time_window: 30m\n    chunk_encoding:\n      floats: xor2\n    retention:\n      time: 90d\n      size: 512MB\n      percentage: 12.5\n    stale_series_compaction_threshold: 0.5\n  exemplars:\n    max_exemplars: 7\n",
		"floats-xor":       "storage:\n  tsdb:\n    chunk_encoding:\n      floats: xor\n",
		"floats-bad":       "storage:\n  tsdb:\n    chunk_encoding:\n      floats: gorilla\n",
		"percentage-bad":   "storage:\n  tsdb:\n    retention:\n      percentage: 101\n",
		"duration-no-unit": "storage:\n  tsdb:\n    out_of_order_time_window: 30\n",
		"duration-bad":     "storage:\n  tsdb:\n    out_of_order_time_window: 1h1h\n",
		"unknown-top":      "global: {}\nscrape_confgs: []\n",
		"unknown-tsdb":     "storage:\n  tsdb:\n    out_of_order_window: 30m\n",
		"unknown-encoding": "storage:\n  tsdb:\n    chunk_encoding:\n      histograms: x\n",
		"unknown-storage":  "storage:\n  wal: {}\n",
		"unknown-exemplar": "storage:\n  exemplars:\n    max: 1\n",
		"unknown-retain":   "storage:\n  tsdb:\n    retention:\n      days: 1\n",
	}
	dir := t.TempDir()
	for name, text := range cases {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(dir, name+".yml")
			if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
				t.Fatal(err)
			}
			_, promErr := config.LoadFile(path, false, promslog.NewNopLogger())
			cmd := exec.Command(bin, "check", "config", "--syntax-only", path)
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			runErr := cmd.Run()
			if promErr == nil {
				if runErr != nil {
					t.Fatalf("Prometheus accepts it, Ferrite does not: %v\n%s", runErr, stderr.String())
				}
				want := "Checking " + path + "\n SUCCESS: " + path + " is valid prometheus config file syntax\n\n"
				if stdout.String() != want {
					t.Fatalf("stdout %q, want %q", stdout.String(), want)
				}
				return
			}
			if runErr == nil {
				t.Fatalf("Prometheus refuses it (%v), Ferrite accepts it", promErr)
			}
			got := strings.TrimSuffix(stderr.String(), "\n")
			if want := "  FAILED: " + promErr.Error(); got != want {
				t.Fatalf("error text differs\nFerrite:    %q\nPrometheus: %q", got, want)
			}
		})
	}
}

// Prometheus' documentation/examples/prometheus.yml, v3.16.0 (Ferrite's
// embedded default).
const exampleConfig = `global:
  scrape_interval: 15s
  evaluation_interval: 15s
alerting:
  alertmanagers:
    - static_configs:
        - targets:
rule_files:
scrape_configs:
  - job_name: "prometheus"
    static_configs:
      - targets: ["localhost:9090"]
        labels:
          app: "prometheus"
    scrape_native_histograms: true
`
