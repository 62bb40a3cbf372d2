// Command promconfig is the Prometheus side of Ferrite's configuration
// cross-check (crates/config/examples/configdump.rs): it loads each file
// with Prometheus' own config.LoadFile (every service discovery registered,
// as in the server) and prints the settings Ferrite models so far (the
// `global:` section, `rule_files`, `scrape_config_files`, each scrape job
// but its HTTP client and discoveries other than `static_configs`), one
// per line, after `== FILE`:
//
//	ok
//	global.scrape_interval_ms=60000
//	...
//
// or `error <message>`. Values: durations in milliseconds, sizes in bytes,
// lists comma-separated (`nil` for none), label sets as `name=value`
// pairs joined by commas, with bytes outside `!`..`~`, and
// `\ " = , { }`, written `\xHH`. External labels whose value expands to
// nothing are left out (Ferrite's label sets hold no empty values).
package main

import (
	"bytes"
	"fmt"
	"log/slog"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/prometheus/common/model"

	"github.com/prometheus/prometheus/config"
	"github.com/prometheus/prometheus/discovery"
	"github.com/prometheus/prometheus/model/labels"
	_ "github.com/prometheus/prometheus/plugins" // every service discovery, as in the server
)

func main() {
	files := os.Args[1:]
	if len(files) == 0 {
		fmt.Fprintln(os.Stderr, "usage: promconfig FILE...")
		os.Exit(2)
	}
	logger := slog.New(slog.NewTextHandler(bytes.NewBuffer(nil), nil))
	var out bytes.Buffer
	for _, f := range files {
		fmt.Fprintf(&out, "== %s\n", f)
		cfg, err := config.LoadFile(f, false, logger)
		if err != nil {
			fmt.Fprintf(&out, "error %s\n", strings.ReplaceAll(err.Error(), "\n", "\\n"))
			continue
		}
		out.WriteString("ok\n")
		dumpGlobal(&out, cfg.GlobalConfig)
		dumpFiles(&out, cfg)
		for _, sc := range cfg.ScrapeConfigs {
			dumpScrape(&out, sc)
		}
	}
	os.Stdout.Write(out.Bytes())
}

func ms(d model.Duration) int64 { return int64(time.Duration(d) / time.Millisecond) }

func dumpGlobal(out *bytes.Buffer, g config.GlobalConfig) {
	p := func(k string, v any) { fmt.Fprintf(out, "global.%s=%v\n", k, v) }
	p("scrape_interval_ms", ms(g.ScrapeInterval))
	p("scrape_timeout_ms", ms(g.ScrapeTimeout))
	protocols := "nil"
	if g.ScrapeProtocols != nil {
		var names []string
		for _, sp := range g.ScrapeProtocols {
			names = append(names, string(sp))
		}
		protocols = strings.Join(names, ",")
	}
	p("scrape_protocols", protocols)
	p("evaluation_interval_ms", ms(g.EvaluationInterval))
	p("rule_query_offset_ms", ms(g.RuleQueryOffset))
	p("query_log_file", escape(g.QueryLogFile))
	p("query_max_series", g.QueryMaxSeries)
	p("query_max_samples_read", g.QueryMaxSamplesRead)
	p("query_max_duration_ms", ms(g.QueryMaxDuration))
	p("scrape_failure_log_file", escape(g.ScrapeFailureLogFile))
	var ls []string
	g.ExternalLabels.Range(func(l labels.Label) {
		if l.Value != "" {
			ls = append(ls, escape(l.Name)+"="+escape(l.Value))
		}
	})
	p("external_labels", strings.Join(ls, ","))
	p("body_size_limit", int64(g.BodySizeLimit))
	p("sample_limit", g.SampleLimit)
	p("target_limit", g.TargetLimit)
	p("label_limit", g.LabelLimit)
	p("label_name_length_limit", g.LabelNameLengthLimit)
	p("label_value_length_limit", g.LabelValueLengthLimit)
	p("keep_dropped_targets", g.KeepDroppedTargets)
	p("metric_name_validation_scheme", g.MetricNameValidationScheme.String())
	p("metric_name_escaping_scheme", escape(g.MetricNameEscapingScheme))
	p("scrape_native_histograms", g.ScrapeNativeHistograms != nil && *g.ScrapeNativeHistograms)
	p("convert_classic_histograms_to_nhcb", g.ConvertClassicHistogramsToNHCB)
	p("always_scrape_classic_histograms", g.AlwaysScrapeClassicHistograms)
	p("extra_scrape_metrics", g.ExtraScrapeMetrics != nil && *g.ExtraScrapeMetrics)
}

func dumpFiles(out *bytes.Buffer, cfg *config.Config) {
	var rf, sf []string
	for _, f := range cfg.RuleFiles {
		rf = append(rf, escape(f))
	}
	for _, f := range cfg.ScrapeConfigFiles {
		sf = append(sf, escape(f))
	}
	fmt.Fprintf(out, "rule_files=%s\nscrape_config_files=%s\n", strings.Join(rf, ","), strings.Join(sf, ","))
}

func dumpScrape(out *bytes.Buffer, c *config.ScrapeConfig) {
	p := func(k string, v any) { fmt.Fprintf(out, "job.%s=%v\n", k, v) }
	p("job_name", escape(c.JobName))
	p("honor_labels", c.HonorLabels)
	p("honor_timestamps", c.HonorTimestamps)
	p("track_timestamps_staleness", c.TrackTimestampsStaleness)
	var params []string
	for _, k := range sortedKeys(c.Params) {
		var vs []string
		for _, v := range c.Params[k] {
			vs = append(vs, escape(v))
		}
		params = append(params, escape(k)+"="+strings.Join(vs, "|"))
	}
	p("params", strings.Join(params, ","))
	p("scrape_interval_ms", ms(c.ScrapeInterval))
	p("scrape_timeout_ms", ms(c.ScrapeTimeout))
	var protocols []string
	for _, sp := range c.ScrapeProtocols {
		protocols = append(protocols, string(sp))
	}
	p("scrape_protocols", strings.Join(protocols, ","))
	p("fallback_scrape_protocol", string(c.ScrapeFallbackProtocol))
	p("scrape_native_histograms", c.ScrapeNativeHistogramsEnabled())
	p("always_scrape_classic_histograms", c.AlwaysScrapeClassicHistogramsEnabled())
	p("convert_classic_histograms_to_nhcb", c.ConvertClassicHistogramsToNHCBEnabled())
	p("extra_scrape_metrics", c.ExtraScrapeMetricsEnabled())
	p("scrape_failure_log_file", escape(c.ScrapeFailureLogFile))
	p("metrics_path", escape(c.MetricsPath))
	p("scheme", escape(c.Scheme))
	p("enable_compression", c.EnableCompression)
	p("body_size_limit", int64(c.BodySizeLimit))
	p("sample_limit", c.SampleLimit)
	p("target_limit", c.TargetLimit)
	p("label_limit", c.LabelLimit)
	p("label_name_length_limit", c.LabelNameLengthLimit)
	p("label_value_length_limit", c.LabelValueLengthLimit)
	p("native_histogram_bucket_limit", c.NativeHistogramBucketLimit)
	p("native_histogram_min_bucket_factor", c.NativeHistogramMinBucketFactor)
	p("keep_dropped_targets", c.KeepDroppedTargets)
	p("metric_name_validation_scheme", c.MetricNameValidationScheme.String())
	p("metric_name_escaping_scheme", c.MetricNameEscapingScheme)
	p("relabel_configs", len(c.RelabelConfigs))
	p("metric_relabel_configs", len(c.MetricRelabelConfigs))
	for _, sd := range c.ServiceDiscoveryConfigs {
		static, ok := sd.(discovery.StaticConfig)
		if !ok {
			continue
		}
		for _, g := range static {
			var targets []string
			for _, t := range g.Targets {
				targets = append(targets, escape(string(t["__address__"])))
			}
			var ls []string
			for _, k := range sortedKeys(g.Labels) {
				if g.Labels[k] != "" { // an empty label is no label
					ls = append(ls, escape(string(k))+"="+escape(string(g.Labels[k])))
				}
			}
			p("static", strings.Join(targets, ",")+" {"+strings.Join(ls, ",")+"}")
		}
	}
}

func sortedKeys[K ~string, V any](m map[K]V) []K {
	keys := make([]K, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return keys[i] < keys[j] })
	return keys
}

func escape(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < '!' || c > '~' || strings.IndexByte("\\\"=,{}", c) >= 0 {
			fmt.Fprintf(&b, "\\x%02x", c)
		} else {
			b.WriteByte(c)
		}
	}
	return b.String()
}
