package interop_test

import (
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"ferrite.dev/interop/internal/e2e"
)

// selfMetricsLeftOut are Prometheus' scrape and discovery series Ferrite
// does not show: the metrics of discovery mechanisms Ferrite refuses by
// name, the pool's symbol table (a Go implementation detail) and exemplar
// counts (Ferrite keeps no exemplars), and compactions skipped because
// auto compaction is off (Ferrite's cannot be turned off).
var selfMetricsLeftOut = regexp.MustCompile(`^prometheus_(sd_(azure|consul|kubernetes|kuma|linode|nomad)_|target_scrape_pool_symboltable_items|target_scrapes_exemplar_out_of_order_total|tsdb_compactions_skipped_total)`)

// selfMetricsExact are the series whose values both servers must agree on
// when they scrape the same targets (the rest count time or scrapes).
var selfMetricsExact = regexp.MustCompile(`^prometheus_(target_(scrape_pool_targets|scrape_pool_target_limit|sync_failed_total|scrape_pools_total|scrape_pools_failed_total|metadata_cache_entries|metadata_cache_bytes)|sd_(discovered_targets|failed_configs)|engine_(queries_concurrent_max|query_log_enabled|query_log_failures_total))\b`)

// selfSeries is every series of base's /metrics whose name starts with
// one of prefixes, by name and labels, with its value.
func selfSeries(t *testing.T, base string, prefixes ...string) map[string]string {
	t.Helper()
	status, body, err := e2e.Get(base + "/metrics")
	if err != nil || status != 200 {
		t.Fatalf("%s/metrics: %d %v", base, status, err)
	}
	out := map[string]string{}
	for _, line := range strings.Split(string(body), "\n") {
		if strings.HasPrefix(line, "#") {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		if i < 0 {
			continue
		}
		for _, p := range prefixes {
			if strings.HasPrefix(line, p) {
				out[line[:i]] = line[i+1:]
				break
			}
		}
	}
	return out
}

// compareScrapeMetrics checks that Ferrite's /metrics has the
// prometheus_target_*, prometheus_sd_*, prometheus_rule_* and
// prometheus_notifications_* series Prometheus' has, and its head GC and
// WAL timing summaries (names and labels, summary quantiles and histogram
// buckets included), and no others, with the same values where both must agree. Scrapes and syncs
// go on while the two are read, so a few attempts are allowed.
func compareScrapeMetrics(t *testing.T, ferURL, promURL string) {
	t.Helper()
	var problems []string
	for attempt := 0; attempt < 10; attempt++ {
		problems = selfMetricsDiff(t, ferURL, promURL)
		if len(problems) == 0 {
			return
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Errorf("self-metrics differ from Prometheus':\n%s", strings.Join(problems, "\n"))
}

func selfMetricsDiff(t *testing.T, ferURL, promURL string) []string {
	prefixes := []string{"prometheus_target_", "prometheus_sd_", "prometheus_rule_", "prometheus_notifications_",
		"prometheus_tsdb_head_gc_duration_seconds", "prometheus_tsdb_wal_fsync_duration_seconds",
		"prometheus_tsdb_wal_truncate_duration_seconds", "prometheus_engine_", "prometheus_tsdb_compactions_"}
	fer, prom := selfSeries(t, ferURL, prefixes...), selfSeries(t, promURL, prefixes...)
	var problems []string
	for series, pv := range prom {
		if selfMetricsLeftOut.MatchString(series) {
			continue
		}
		fv, ok := fer[series]
		switch {
		case !ok:
			problems = append(problems, "Ferrite has no "+series+" (prometheus "+pv+")")
		case selfMetricsExact.MatchString(series) && fv != pv:
			problems = append(problems, series+": prometheus "+pv+", ferrite "+fv)
		}
	}
	for series, fv := range fer {
		if _, ok := prom[series]; !ok {
			problems = append(problems, "Prometheus has no "+series+" (ferrite "+fv+")")
		}
	}
	sort.Strings(problems)
	return problems
}
