package interop_test

// Ferrite's reading of prometheus.yml (crates/config) against Prometheus'
// own config.LoadFile: the same files through `configdump` (Rust, from
// CONFIGDUMP_BIN) and `promconfig` (Go, built here) must give the same
// settings for what Ferrite models (the `global:` section, `rule_files`,
// `scrape_config_files`, the scrape jobs with their HTTP client
// settings, but for discoveries other than `static_configs`, and the
// `alerting:` section with its Alertmanager sets), or both
// refuse the file. Messages are compared exactly, except where either is a
// YAML decoding message (`yaml: ...`: a value of the wrong type, a
// duplicate key): Ferrite's YAML reader words those otherwise, and yaml.v2
// reports them only after decoding the whole file, so a field's own error
// (an unknown unit, an unknown scheme) anywhere in it wins, where Ferrite
// reports the first fault in file order.

import (
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// scrapeCases is the number of random files with scrape jobs, the last of
// the cases.
const scrapeCases = 3000

func TestConfigMatchesPrometheus(t *testing.T) {
	cases := []string{
		"", "global:\n", "global: {}\n", "global: null\n",
		"global:\n  scrape_interval: 5s\n",
		"global:\n  scrape_interval: 10s\n  scrape_timeout: 20s\n",
		"global:\n  scrape_protocols: []\n",
		"global:\n  external_labels: {region: \"eu-${FERRITE_TEST_ENV}\", cost: \"$$5\", gone: \"${FERRITE_UNSET}\"}\n",
		"global:\n  query_log_file: logs/../q.log\n  scrape_failure_log_file: /var/log/s.log\n",
		"global:\n  scrape_intervall: 5s\n",
		// alerting: hand-made cases.
		"alerting:\n  alertmanagers:\n    - static_configs:\n        - targets:\n",
		"alerting:\n",
		"alerting: {}\n",
		"alerting:\n  alertmanagers: []\n  alert_relabel_configs: []\n",
		"alerting:\n  alertmanagers:\n    - api_version: v1\n",
		"alerting:\n  alertmanagers:\n    - api_version: v3\n",
		"alerting:\n  alertmanagers:\n    - api_version: \"\"\n",
		"alerting:\n  alertmanagers:\n    - {api_version: null, scheme: null, path_prefix: null, timeout: null}\n",
		"alerting:\n  alertmanagers:\n    - bogus: 1\n",
		"alerting:\n  bogus: 1\n",
		"alerting:\n  alertmanagers:\n    - timeout: 5\n",
		"alerting:\n  alertmanagers:\n    - static_configs: [{targets: ['http://am:9093']}]\n",
		"alerting:\n  alertmanagers:\n    - static_configs: [{targets: ['http://am:9093']}]\n      relabel_configs: [{target_label: x, replacement: y}]\n",
		"alerting:\n  alert_relabel_configs: [null]\n",
		"alerting:\n  alertmanagers:\n    - relabel_configs: [null]\n",
		"alerting:\n  alertmanagers:\n    - alert_relabel_configs: [null]\n",
		"alerting:\n  alertmanagers:\n    - dns_sd_configs: [null]\n",
		"alerting:\n  alertmanagers:\n    - basic_auth: {username: u, password: p}\n      sigv4: {region: us-east-1}\n",
		"alerting:\n  alertmanagers:\n    - sigv4: {region: us-east-1}\n",
		"alerting:\n  alertmanagers:\n    - kubernetes_sd_configs: [{role: pod}]\n",
		"global:\n  metric_name_validation_scheme: legacy\nalerting:\n  alert_relabel_configs: [{target_label: \"a-b\", replacement: x}]\n",
		"global:\n  metric_name_validation_scheme: legacy\nalerting:\n  alertmanagers:\n    - relabel_configs: [{target_label: \"a-b\", replacement: x}]\n",
		"alerting:\n  alert_relabel_configs:\n    - {source_labels: [a], regex: x, action: drop}\n  alertmanagers:\n" +
			"    - scheme: https\n      path_prefix: /am/\n      timeout: 3s\n      api_version: v2\n" +
			"      basic_auth: {username: u, password_file: pw}\n      tls_config: {ca_file: ca.pem, insecure_skip_verify: true}\n" +
			"      static_configs: [{targets: ['am1:9093', 'am2:9093'], labels: {dc: x}}]\n" +
			"      file_sd_configs: [{files: [ams/*.json], refresh_interval: 1m}]\n" +
			"      dns_sd_configs: [{names: [_am._tcp.example.org]}]\n" +
			"      relabel_configs: [{source_labels: [dc], target_label: __scheme__, replacement: http}]\n" +
			"      alert_relabel_configs: [{action: labeldrop, regex: tmp}]\n" +
			"    - authorization: {credentials_file: /etc/t}\n      static_configs: [{targets: [am3:9093]}]\n",
	}
	rng := rand.New(rand.NewSource(20261128))
	for i := 0; i < 2000; i++ {
		cases = append(cases, randomGlobalSection(rng))
	}
	for i := 0; i < scrapeCases; i++ {
		cases = append(cases, randomScrapeFile(rng))
	}
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	files := make([]string, len(cases))
	for i, c := range cases {
		// Half in a subdirectory, so relative log files resolve against it.
		name := fmt.Sprintf("case%05d.yml", i)
		if i%2 == 1 {
			name = filepath.Join("sub", name)
		}
		files[i] = filepath.Join(dir, name)
		if err := os.WriteFile(files[i], []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	env := []string{"FERRITE_TEST_ENV=xyz", "FERRITE_UNSET="}
	prom := dumpResults(t, goCmdBin(t, "promconfig"), env, files)
	fer := dumpResults(t, exampleBin(t, "CONFIGDUMP_BIN", "ferrite-config", "configdump"), env, files)
	oks, errs, bad := 0, 0, 0
	for i := range cases {
		p, f := prom[i], fer[i]
		if strings.HasPrefix(p, "ok") {
			oks++
		} else {
			errs++
		}
		same := p == f
		if !same && strings.HasPrefix(p, "error ") && strings.HasPrefix(f, "error ") {
			// Decoding messages: see the file's comment.
			same = strings.Contains(p, ": yaml: ") || strings.Contains(f, ": yaml: ")
		}
		if !same {
			bad++
			if bad <= 12 {
				t.Errorf("case %d:\n%s\nprometheus:\n%s\nferrite:\n%s", i, cases[i], p, f)
			}
		}
	}
	if bad > 12 {
		t.Errorf("... %d mismatches in all", bad)
	}
	t.Logf("%d files: %d load, %d refused", len(cases), oks, errs)
	scrapeOKs := 0
	for i := len(cases) - scrapeCases; i < len(cases); i++ {
		if strings.HasPrefix(prom[i], "ok") {
			scrapeOKs++
		}
	}
	t.Logf("of the %d scrape files, %d load", scrapeCases, scrapeOKs)
	alerting, alertingOKs := 0, 0
	for i, c := range cases {
		if strings.HasPrefix(c, "alerting:") || strings.Contains(c, "\nalerting:") {
			alerting++
			if strings.HasPrefix(prom[i], "ok") {
				alertingOKs++
			}
		}
	}
	t.Logf("of the %d files with an alerting section, %d load", alerting, alertingOKs)
	if scrapeOKs < scrapeCases/4 || scrapeOKs > scrapeCases*3/4 {
		t.Errorf("the random scrape files should both load and fail often: %d of %d load", scrapeOKs, scrapeCases)
	}
	if oks < 300 || errs < 300 {
		t.Errorf("the random files should both load and fail often: %d load, %d refused", oks, errs)
	}
}

func randomGlobalSection(rng *rand.Rand) string {
	pick := func(xs ...string) string { return xs[rng.Intn(len(xs))] }
	durations := []string{"15s", "1m", "0s", "10s", "5s", "1h", "0", "30s", "1m30s", "-1s", "abc", "5"}
	var b strings.Builder
	b.WriteString("global:\n")
	field := func(key, value string) {
		if rng.Intn(3) == 0 {
			fmt.Fprintf(&b, "  %s: %s\n", key, value)
		}
	}
	field("scrape_interval", pick(durations...))
	field("scrape_timeout", pick(durations...))
	field("evaluation_interval", pick(durations...))
	field("rule_query_offset", pick(durations...))
	field("query_max_duration", pick(durations...))
	protocols := []string{"PrometheusProto", "OpenMetricsText1.0.0", "OpenMetricsText0.0.1",
		"PrometheusText0.0.4", "PrometheusText1.0.0", "OpenMetricsText2.0.0", "prometheusproto", "Foo"}
	if rng.Intn(4) == 0 {
		n := rng.Intn(4)
		var ps []string
		for j := 0; j < n; j++ {
			ps = append(ps, pick(protocols...))
		}
		fmt.Fprintf(&b, "  scrape_protocols: [%s]\n", strings.Join(ps, ", "))
	}
	files := []string{"q.log", "/abs/q.log", "logs/../q.log", "./a/./b.log", `""`, "a//b/"}
	field("query_log_file", pick(files...))
	field("scrape_failure_log_file", pick(files...))
	counts := []string{"0", "100", "18446744073709551615", "-1", "5"}
	field("query_max_series", pick(counts...))
	field("query_max_samples_read", pick(counts...))
	if rng.Intn(3) == 0 {
		names := []string{"region", "a-b", `""`, "__name__", "é", "env", "x1"}
		values := []string{"eu", `"${FERRITE_TEST_ENV}/x"`, `"$$5"`, `"${"`, `"$1"`, `"${FERRITE_UNSET}"`,
			`"a$"`, `"$é"`, `""`, "plain value"}
		order := rng.Perm(len(names))[:rng.Intn(4)]
		var pairs []string
		for _, k := range order {
			pairs = append(pairs, names[k]+": "+pick(values...))
		}
		fmt.Fprintf(&b, "  external_labels: {%s}\n", strings.Join(pairs, ", "))
	}
	field("body_size_limit", pick("10MB", "1KB", "0", "512", "1GB", "abc", "-1"))
	for _, k := range []string{"sample_limit", "target_limit", "label_limit", "label_name_length_limit",
		"label_value_length_limit", "keep_dropped_targets"} {
		field(k, pick(counts...))
	}
	field("metric_name_validation_scheme", pick(`""`, "legacy", "utf8", "UTF8", "bogus"))
	field("metric_name_escaping_scheme", pick(`""`, "allow-utf-8", "underscores", "bogus"))
	bools := []string{"true", "false"}
	field("scrape_native_histograms", pick(bools...))
	field("convert_classic_histograms_to_nhcb", pick(bools...))
	field("always_scrape_classic_histograms", pick(bools...))
	field("extra_scrape_metrics", pick(bools...))
	if rng.Intn(30) == 0 {
		b.WriteString("  scrape_intervall: 5s\n")
	}
	return b.String()
}

func randomScrapeFile(rng *rand.Rand) string {
	pick := func(xs ...string) string { return xs[rng.Intn(len(xs))] }
	// Mostly valid values, an invalid one now and then: the files should
	// load as often as they fail.
	maybeBad := func(good []string, bad ...string) string {
		if rng.Intn(25) == 0 {
			return pick(bad...)
		}
		return pick(good...)
	}
	var b strings.Builder
	if rng.Intn(3) == 0 {
		b.WriteString(validishGlobal(rng))
	}
	if rng.Intn(4) == 0 {
		fmt.Fprintf(&b, "rule_files: [%s]\n", pick(`"a.yml"`, `"rules/*.yml"`, `"/etc/r/*.yml"`, `"a/*/b.yml"`, `"**.yml"`, `"r*.yml", "s.yml"`))
	}
	if rng.Intn(6) == 0 {
		fmt.Fprintf(&b, "scrape_config_files: [%s]\n", pick(`"jobs/*.yml"`, `"j*/x.yml"`, `"/abs/jobs.yml"`))
	}
	if rng.Intn(3) == 0 {
		b.WriteString(randomAlertingSection(rng))
	}
	b.WriteString("scrape_configs:\n")
	jobs := 1 + rng.Intn(3)
	durations := []string{"15s", "1m", "0s", "10s", "5s", "30s", "20s"}
	protocols := []string{"PrometheusProto", "OpenMetricsText1.0.0", "PrometheusText0.0.4", "PrometheusText1.0.0"}
	for j := 0; j < jobs; j++ {
		if rng.Intn(60) == 0 {
			b.WriteString("  - null\n")
			continue
		}
		fmt.Fprintf(&b, "  - job_name: %s\n", maybeBad([]string{fmt.Sprintf(`"job%d"`, j), `"node"`}, `""`))
		field := func(key, value string) {
			if rng.Intn(4) == 0 {
				fmt.Fprintf(&b, "    %s: %s\n", key, value)
			}
		}
		field("honor_labels", pick("true", "false"))
		field("honor_timestamps", pick("true", "false", ""))
		field("track_timestamps_staleness", pick("true", "false"))
		field("params", pick(`{module: [http_2xx]}`, `{a: [x, y], b: []}`, `{}`))
		field("scrape_interval", pick(durations...))
		field("scrape_timeout", pick(durations...))
		if rng.Intn(5) == 0 {
			n := rng.Intn(3)
			var ps []string
			for k := 0; k < n; k++ {
				ps = append(ps, maybeBad(protocols, "Foo", "prometheusproto"))
			}
			fmt.Fprintf(&b, "    scrape_protocols: [%s]\n", strings.Join(ps, ", "))
		}
		field("fallback_scrape_protocol", maybeBad([]string{"PrometheusText0.0.4", "OpenMetricsText1.0.0", `""`}, "Foo"))
		field("scrape_native_histograms", pick("true", "false"))
		field("always_scrape_classic_histograms", pick("true", "false"))
		field("convert_classic_histograms_to_nhcb", pick("true", "false"))
		field("extra_scrape_metrics", pick("true", "false"))
		field("scrape_failure_log_file", pick("f.log", "/var/f.log", `""`))
		field("metrics_path", pick("/metrics", "/probe", `""`, ""))
		field("scheme", pick("http", "https", "ftp", ""))
		field("enable_compression", pick("true", "false", ""))
		field("body_size_limit", maybeBad([]string{"10MB", "0", "1KiB"}, "512"))
		for _, k := range []string{"sample_limit", "target_limit", "label_limit", "label_name_length_limit",
			"label_value_length_limit", "native_histogram_bucket_limit", "keep_dropped_targets"} {
			field(k, pick("0", "5", "100"))
		}
		field("native_histogram_min_bucket_factor", pick("0", "1.1", "2"))
		field("metric_name_validation_scheme", maybeBad([]string{"legacy", "utf8", `""`}, "bogus"))
		field("metric_name_escaping_scheme", maybeBad([]string{"allow-utf-8", "underscores", "dots", "values", `""`}, "bogus"))
		if rng.Intn(2) == 0 {
			b.WriteString("    static_configs:\n")
			groups := 1 + rng.Intn(2)
			for g := 0; g < groups; g++ {
				var ts []string
				for k := rng.Intn(3); k >= 0; k-- {
					ts = append(ts, maybeBad([]string{`"host:9100"`, `"localhost:9090"`, `"10.0.0.1:80"`, `""`}, `"http://h:1/x"`))
				}
				fmt.Fprintf(&b, "      - targets: [%s]\n", strings.Join(ts, ", "))
				if rng.Intn(2) == 0 {
					fmt.Fprintf(&b, "        labels: {%s}\n", maybeBad([]string{`env: prod`, `env: prod, team: a`, `"a-b": "1"`, `e: ""`}, `"": x`))
				}
			}
		}
		if rng.Intn(3) == 0 {
			fmt.Fprintf(&b, "    relabel_configs:\n%s", maybeBad([]string{
				"      - {source_labels: [__address__], target_label: instance}\n",
				"      - {source_labels: [a], target_label: \"a-b\"}\n",
				"      - {action: drop, source_labels: [x], regex: y}\n",
			}, "      - null\n"))
		}
		if rng.Intn(3) == 0 {
			fmt.Fprintf(&b, "    metric_relabel_configs:\n%s", maybeBad([]string{
				"      - {action: labeldrop, regex: tmp_.*}\n",
				"      - {action: hashmod, target_label: s, source_labels: [a], modulus: 4}\n",
			}, "      - null\n", "      - {action: hashmod, target_label: s, source_labels: [a]}\n"))
		}
		if rng.Intn(10) == 0 {
			// The discoveries Ferrite runs, valid and not.
			b.WriteString(pick(
				"    file_sd_configs: [{files: [a.json, 'dir/*.yml']}]\n",
				"    file_sd_configs: [{files: [a.yaml], refresh_interval: 1m}]\n",
				"    file_sd_configs: [{files: []}]\n",
				"    file_sd_configs: [{files: [a.txt]}]\n",
				"    file_sd_configs: [{files: ['*/x.json']}]\n",
				"    file_sd_configs: [null]\n",
				"    file_sd_configs: [{files: [a.json], bogus: 1}]\n",
				"    dns_sd_configs: [{names: [_x._tcp.example.org]}]\n",
				"    dns_sd_configs: [{names: [a.example.org], type: A, port: 9100}]\n",
				"    dns_sd_configs: [{names: [a.example.org], type: aaaa}]\n",
				"    dns_sd_configs: [{names: []}]\n",
				"    dns_sd_configs: [{names: [x], type: TXT, port: 1}]\n",
				"    dns_sd_configs: [{names: [x], refresh_interval: 10s, port: 53, type: NS}]\n",
				"    dns_sd_configs: [null]\n",
				"    http_sd_configs: [{url: 'http://sd.example:8080/targets'}]\n",
				"    http_sd_configs: [{url: 'https://u:p@sd.example/t?x=1', refresh_interval: 15s, basic_auth: {username: a, password: b}}]\n",
				"    http_sd_configs: [{url: 'https://sd.example/', tls_config: {insecure_skip_verify: true}, authorization: {credentials: c}}]\n",
				"    http_sd_configs: [{url: ''}]\n",
				"    http_sd_configs: [{refresh_interval: 1m}]\n",
				"    http_sd_configs: [{url: 'ftp://sd.example/'}]\n",
				"    http_sd_configs: [{url: 'http:///path'}]\n",
				"    http_sd_configs: [{url: 'http://sd.example/%zz'}]\n",
				"    http_sd_configs: [{url: 'http://sd.example/', bearer_token: a, bearer_token_file: b}]\n",
				"    http_sd_configs: [{url: 'http://sd.example/', bogus: 1}]\n",
				"    http_sd_configs: [null]\n",
			))
		}
		if rng.Intn(3) == 0 {
			b.WriteString(randomHTTPClient(rng))
		} else if rng.Intn(8) == 0 {
			b.WriteString(maybeBad([]string{"    tls_config: {insecure_skip_verify: true}\n", "    file_sd_configs: [{files: [a.json]}]\n",
				"    basic_auth: {username: u, password: p}\n"}, "    unknown_field: 1\n"))
		}
	}
	return b.String()
}

// validishGlobal is a global section whose values are valid but for the
// odd one.
func validishGlobal(rng *rand.Rand) string {
	pick := func(xs ...string) string { return xs[rng.Intn(len(xs))] }
	var b strings.Builder
	b.WriteString("global:\n")
	if rng.Intn(2) == 0 {
		fmt.Fprintf(&b, "  scrape_interval: %s\n", pick("15s", "30s", "1m"))
	}
	if rng.Intn(3) == 0 {
		fmt.Fprintf(&b, "  scrape_timeout: %s\n", pick("5s", "10s"))
	}
	if rng.Intn(3) == 0 {
		fmt.Fprintf(&b, "  metric_name_validation_scheme: %s\n", pick("legacy", "utf8"))
	}
	if rng.Intn(3) == 0 {
		fmt.Fprintf(&b, "  metric_name_escaping_scheme: %s\n", pick("allow-utf-8", "underscores", "dots", "values", "bogus"))
	}
	if rng.Intn(3) == 0 {
		fmt.Fprintf(&b, "  scrape_protocols: [%s]\n", pick("PrometheusProto", "PrometheusText0.0.4, OpenMetricsText1.0.0"))
	}
	for _, k := range []string{"sample_limit", "target_limit", "label_limit", "keep_dropped_targets"} {
		if rng.Intn(4) == 0 {
			fmt.Fprintf(&b, "  %s: %s\n", k, pick("0", "7", "1000"))
		}
	}
	for _, k := range []string{"scrape_native_histograms", "convert_classic_histograms_to_nhcb",
		"always_scrape_classic_histograms", "extra_scrape_metrics"} {
		if rng.Intn(4) == 0 {
			fmt.Fprintf(&b, "  %s: %s\n", k, pick("true", "false"))
		}
	}
	if rng.Intn(4) == 0 {
		fmt.Fprintf(&b, "  body_size_limit: %s\n", pick("1MB", "0"))
	}
	if rng.Intn(4) == 0 {
		fmt.Fprintf(&b, "  scrape_failure_log_file: %s\n", pick("g.log", "/var/g.log"))
	}
	return b.String()
}

// randomHTTPClient is a job's HTTP client settings, each key now and then:
// mostly valid, with the conflicts and bad values Prometheus refuses
// (two sources of one secret, two kinds of authentication, a bad TLS
// version, proxy URL or header) once in a while. File names are relative
// half the time, to check they are made relative to the file.
func randomHTTPClient(rng *rand.Rand) string {
	pick := func(xs ...string) string { return xs[rng.Intn(len(xs))] }
	var b strings.Builder
	field := func(n int, key, value string) {
		if rng.Intn(n) == 0 {
			fmt.Fprintf(&b, "    %s: %s\n", key, value)
		}
	}
	// Inner keys of a mapping, each now and then.
	inner := func(n int, kvs ...string) string {
		var parts []string
		for i := 0; i+1 < len(kvs); i += 2 {
			if rng.Intn(n) == 0 {
				parts = append(parts, kvs[i]+": "+kvs[i+1])
			}
		}
		return "{" + strings.Join(parts, ", ") + "}"
	}
	file := func(name string) string { return pick(name, "/etc/secrets/"+name, "sub/../"+name, `""`) }
	// A mapping's keys without its braces.
	unwrap := func(s string) string { return strings.TrimSuffix(strings.TrimPrefix(s, "{"), "}") }
	auth := rng.Intn(8)
	switch auth {
	case 0:
		field(1, "basic_auth", pick("null", inner(2, "username", pick("u", "12", `""`), "username_file", file("user"),
			"password", pick("p", "3.0", `"s e c"`), "password_file", file("pw"), "username_ref", "r")))
	case 1:
		field(1, "authorization", pick("null", "{}", inner(2, "type", pick("Bearer", "Custom", `" basic "`, `""`, "Basic"),
			"credentials", pick("c", "123"), "credentials_file", file("token"))))
	case 2:
		field(1, "bearer_token", pick("t", `""`))
		field(3, "bearer_token_file", file("token"))
	case 3:
		required := pick("client_id: id, token_url: https://auth/token, ", "client_id: id, token_url: https://auth/token, ",
			"client_id: id, token_url: https://auth/token, ", "client_id: id, ", "token_url: t, ", "")
		field(1, "oauth2", pick("null", "{}", "{"+strings.TrimSuffix(required+unwrap(inner(2, "client_secret", "s", "client_secret_file", file("cs"),
			"scopes", pick("[a, b]", "[]", "[null]"),
			"endpoint_params", pick("{aud: x}", "{a: null}"), "grant_type", pick("client_credentials", "urn:ietf:params:oauth:grant-type:jwt-bearer"),
			"signature_algorithm", pick("RS256", "HS256"), "client_certificate_key_file", file("key.pem"), "claims", "{a: 1}",
			"tls_config", pick("{ca_file: ca.pem}", "{insecure_skip_verify: true}"),
			"proxy_url", pick("http://p:8080", `":bad"`), "proxy_from_environment", pick("true", "false"))), ", ")+"}"))
	}
	if rng.Intn(10) == 0 {
		// A second kind of authentication: mostly refused.
		second := []string{"basic_auth: {username: u}", "authorization: {credentials: c}",
			"bearer_token: t", "oauth2: {client_id: i, token_url: t}"}
		if k := rng.Intn(len(second)); k != auth {
			fmt.Fprintf(&b, "    %s\n", second[k])
		}
	}
	if rng.Intn(3) == 0 {
		versions := []string{"TLS12", "TLS13", "TLS10", "TLS11", `""`, "TLS14"}
		// A CA and a client certificate with its key, now and then
		// two of a kind or a certificate without its key.
		ca := pick("", "ca: CA", "ca_file: "+file("ca.pem"), "ca: CA, ca_file: ca.pem")
		pair := pick("", "", "cert: CERT, key: KEY", "cert_file: "+file("cert.pem")+", key_file: "+file("key.pem"),
			"cert: CERT", "key_file: k.pem", "cert: C, cert_file: c.pem, key: K")
		rest := inner(3, "server_name", pick("example.com", `""`), "insecure_skip_verify", pick("true", "false", "null"),
			"min_version", pick(versions...), "max_version", pick(versions...))
		var parts []string
		for _, p := range []string{ca, pair, unwrap(rest)} {
			if p != "" {
				parts = append(parts, p)
			}
		}
		fmt.Fprintf(&b, "    tls_config: %s\n", pick("null", "{"+strings.Join(parts, ", ")+"}"))
	}
	field(5, "follow_redirects", pick("true", "false", "null"))
	field(5, "enable_http2", pick("true", "false", "null"))
	if rng.Intn(4) == 0 {
		urls := []string{"http://proxy:3128", "https://u:p%40w@proxy:3128/", `""`, "null", "socks5://[::1]:1080",
			`"http://[::1"`, `":x"`, `"http://a b"`, "http://h:x", `"%zz"`, "5", "HTTP://Proxy"}
		field(1, "proxy_url", pick(urls...))
	}
	field(12, "no_proxy", pick("localhost,10.0.0.0/8", `""`))
	field(8, "proxy_from_environment", pick("true", "false"))
	field(20, "proxy_connect_header", pick("{X-A: [s]}", "{X-A: null}", "{}"))
	if rng.Intn(5) == 0 {
		names := []string{"X-Tenant", "x-scope-orgid", "authorization", "User-Agent", "X-Prometheus-Scrape-Timeout-Seconds", "Accept"}
		fmt.Fprintf(&b, "    http_headers: %s\n", pick("null", "{}", "{"+pick(names...)+": "+
			pick("null", inner(2, "values", "[a, b]", "secrets", "[s]", "files", "["+file("h")+"]"))+"}"))
	}
	return b.String()
}

// randomAlertingSection is an `alerting:` section: alert relabeling rules
// and up to two Alertmanager sets, each setting now and then, mostly
// valid (a refused API version, a URL as a target, a null rule, an
// unknown key now and then), with the HTTP client settings of
// randomHTTPClient.
func randomAlertingSection(rng *rand.Rand) string {
	pick := func(xs ...string) string { return xs[rng.Intn(len(xs))] }
	maybeBad := func(good []string, bad ...string) string {
		if rng.Intn(40) == 0 {
			return pick(bad...)
		}
		return pick(good...)
	}
	var b strings.Builder
	b.WriteString("alerting:\n")
	if rng.Intn(3) == 0 {
		fmt.Fprintf(&b, "  alert_relabel_configs:\n%s", maybeBad([]string{
			"    - {source_labels: [severity], regex: debug, action: drop}\n",
			"    - {target_label: team, replacement: sre}\n",
			"    - {action: labeldrop, regex: tmp_.*}\n",
			"    - {source_labels: [a], target_label: \"a-b\"}\n",
		}, "    - null\n", "    - {action: bogus}\n"))
	}
	if rng.Intn(8) == 0 {
		return b.String()
	}
	b.WriteString("  alertmanagers:\n")
	sets := 1 + rng.Intn(2)
	for i := 0; i < sets; i++ {
		var keys []string
		field := func(n int, key, value string) {
			if rng.Intn(n) == 0 {
				keys = append(keys, fmt.Sprintf("%s: %s", key, value))
			}
		}
		field(4, "api_version", maybeBad([]string{"v2"}, "v1", `""`, "v3"))
		field(4, "path_prefix", pick("/am", "am/", "/", `""`, "/a/../b"))
		field(4, "scheme", pick("http", "https", "ftp", `""`))
		field(4, "timeout", maybeBad([]string{"10s", "1m", "500ms", "0s"}, "5", "x"))
		if rng.Intn(2) == 0 {
			var ts []string
			for k := rng.Intn(3); k >= 0; k-- {
				ts = append(ts, maybeBad([]string{`"am:9093"`, `"10.0.0.1:9093"`, `"localhost:9093"`}, `"http://am:9093/x"`))
			}
			group := "{targets: [" + strings.Join(ts, ", ") + "]"
			if rng.Intn(3) == 0 {
				group += ", labels: {" + maybeBad([]string{"dc: a", `"x-y": "1"`}, `"": x`) + "}"
			}
			keys = append(keys, "static_configs: ["+group+"}]")
		}
		field(6, "file_sd_configs", maybeBad([]string{"[{files: [ams.json]}]", "[{files: ['d/*.yml'], refresh_interval: 30s}]"},
			"[{files: [a.txt]}]", "[null]"))
		field(8, "dns_sd_configs", maybeBad([]string{"[{names: [_am._tcp.example.org]}]", "[{names: [am.example.org], type: A, port: 9093}]"},
			"[{names: []}]", "[null]"))
		field(8, "http_sd_configs", maybeBad([]string{"[{url: 'http://sd.example/ams'}]", "[{url: 'https://sd.example/ams', refresh_interval: 5s}]"},
			"[{url: 'sd.example'}]", "[null]"))
		field(4, "relabel_configs", maybeBad([]string{"[{source_labels: [__address__], regex: 'skip.*', action: drop}]",
			"[{target_label: __alerts_path__, replacement: /x/api/v2/alerts}]"}, "[null]"))
		field(4, "alert_relabel_configs", maybeBad([]string{"[{target_label: via, replacement: x}]", "[{action: labeldrop, regex: tmp}]"},
			"[null]"))
		field(30, "sigv4", "{region: eu-west-1}")
		field(40, "bogus_key", "1")
		if len(keys) == 0 {
			keys = append(keys, "scheme: http")
		}
		fmt.Fprintf(&b, "    - %s\n", keys[0])
		for _, k := range keys[1:] {
			fmt.Fprintf(&b, "      %s\n", k)
		}
		if rng.Intn(4) == 0 {
			// The scrape jobs' HTTP client settings, indented for a set.
			for _, line := range strings.SplitAfter(randomHTTPClient(rng), "\n") {
				if line != "" {
					b.WriteString("  " + line)
				}
			}
		}
	}
	return b.String()
}
