// Command promconfig is the Prometheus side of Ferrite's configuration
// cross-check (crates/config/examples/configdump.rs): it loads each file
// with Prometheus' own config.LoadFile and prints the settings Ferrite
// models so far, one per line, after `== FILE`:
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
	"strings"
	"time"

	"github.com/prometheus/common/model"

	"github.com/prometheus/prometheus/config"
	"github.com/prometheus/prometheus/model/labels"
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
