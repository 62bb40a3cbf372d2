// Command promconfig is the Prometheus side of Ferrite's configuration
// cross-check (crates/config/examples/configdump.rs): it loads each file
// with Prometheus' own config.LoadFile (every service discovery registered,
// as in the server) and prints the settings Ferrite models so far (the
// `global:` section, `rule_files`, `scrape_config_files`, each scrape job
// with its HTTP client but discoveries other than `static_configs`, and
// the `alerting:` section with each Alertmanager set), one
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
// Secrets print as the first 8 hex digits of their MD5 sum ("" when
// empty), proxy URLs as scheme, user and host.
package main

import (
	"bytes"
	"crypto/md5"
	"encoding/hex"
	"fmt"
	"log/slog"
	"sort"
	"strings"
	"time"

	"ferrite.dev/interop/internal/dumpfmt"
	config_util "github.com/prometheus/common/config"
	"github.com/prometheus/common/model"

	"github.com/prometheus/prometheus/config"
	"github.com/prometheus/prometheus/discovery"
	"github.com/prometheus/prometheus/discovery/dns"
	"github.com/prometheus/prometheus/discovery/file"
	"github.com/prometheus/prometheus/discovery/http"
	"github.com/prometheus/prometheus/model/labels"
	_ "github.com/prometheus/prometheus/plugins" // every service discovery, as in the server
)

func main() {
	logger := slog.New(slog.NewTextHandler(bytes.NewBuffer(nil), nil))
	dumpfmt.EachFile("promconfig", func(f string, out *bytes.Buffer) {
		cfg, err := config.LoadFile(f, false, logger)
		if err != nil {
			fmt.Fprintf(out, "error %s\n", strings.ReplaceAll(err.Error(), "\n", "\\n"))
			return
		}
		out.WriteString("ok\n")
		dumpGlobal(out, cfg.GlobalConfig)
		dumpFiles(out, cfg)
		for _, sc := range cfg.ScrapeConfigs {
			dumpScrape(out, sc)
		}
		dumpAlerting(out, cfg.AlertingConfig)
	})
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
	p("query_log_file", dumpfmt.Escape(g.QueryLogFile))
	p("query_max_series", g.QueryMaxSeries)
	p("query_max_samples_read", g.QueryMaxSamplesRead)
	p("query_max_duration_ms", ms(g.QueryMaxDuration))
	p("scrape_failure_log_file", dumpfmt.Escape(g.ScrapeFailureLogFile))
	var ls []string
	g.ExternalLabels.Range(func(l labels.Label) {
		if l.Value != "" {
			ls = append(ls, dumpfmt.Escape(l.Name)+"="+dumpfmt.Escape(l.Value))
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
	p("metric_name_escaping_scheme", dumpfmt.Escape(g.MetricNameEscapingScheme))
	p("scrape_native_histograms", g.ScrapeNativeHistograms != nil && *g.ScrapeNativeHistograms)
	p("convert_classic_histograms_to_nhcb", g.ConvertClassicHistogramsToNHCB)
	p("always_scrape_classic_histograms", g.AlwaysScrapeClassicHistograms)
	p("extra_scrape_metrics", g.ExtraScrapeMetrics != nil && *g.ExtraScrapeMetrics)
}

func dumpFiles(out *bytes.Buffer, cfg *config.Config) {
	var rf, sf []string
	for _, f := range cfg.RuleFiles {
		rf = append(rf, dumpfmt.Escape(f))
	}
	for _, f := range cfg.ScrapeConfigFiles {
		sf = append(sf, dumpfmt.Escape(f))
	}
	fmt.Fprintf(out, "rule_files=%s\nscrape_config_files=%s\n", strings.Join(rf, ","), strings.Join(sf, ","))
}

func dumpScrape(out *bytes.Buffer, c *config.ScrapeConfig) {
	p := func(k string, v any) { fmt.Fprintf(out, "job.%s=%v\n", k, v) }
	p("job_name", dumpfmt.Escape(c.JobName))
	p("honor_labels", c.HonorLabels)
	p("honor_timestamps", c.HonorTimestamps)
	p("track_timestamps_staleness", c.TrackTimestampsStaleness)
	var params []string
	for _, k := range sortedKeys(c.Params) {
		var vs []string
		for _, v := range c.Params[k] {
			vs = append(vs, dumpfmt.Escape(v))
		}
		params = append(params, dumpfmt.Escape(k)+"="+strings.Join(vs, "|"))
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
	p("scrape_failure_log_file", dumpfmt.Escape(c.ScrapeFailureLogFile))
	p("metrics_path", dumpfmt.Escape(c.MetricsPath))
	p("scheme", dumpfmt.Escape(c.Scheme))
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
	dumpDiscovery(p, c.ServiceDiscoveryConfigs)
	dumpHTTP(out, "job.http.", c.HTTPClientConfig)
}

// dumpAlerting prints the alerting section: the number of alert
// relabeling rules, then each Alertmanager set.
func dumpAlerting(out *bytes.Buffer, a config.AlertingConfig) {
	fmt.Fprintf(out, "alerting.alert_relabel_configs=%d\n", len(a.AlertRelabelConfigs))
	for _, am := range a.AlertmanagerConfigs {
		p := func(k string, v any) { fmt.Fprintf(out, "am.%s=%v\n", k, v) }
		p("api_version", dumpfmt.Escape(string(am.APIVersion)))
		p("path_prefix", dumpfmt.Escape(am.PathPrefix))
		p("scheme", dumpfmt.Escape(am.Scheme))
		p("timeout_ms", ms(am.Timeout))
		p("sigv4", am.SigV4Config != nil)
		p("relabel_configs", len(am.RelabelConfigs))
		p("alert_relabel_configs", len(am.AlertRelabelConfigs))
		dumpDiscovery(p, am.ServiceDiscoveryConfigs)
		dumpHTTP(out, "am.http.", am.HTTPClientConfig)
	}
}

// dumpDiscovery prints the DNS, file and HTTP discoveries, then the static
// target groups.
func dumpDiscovery(p func(string, any), sds discovery.Configs) {
	for _, sd := range sds {
		switch d := sd.(type) {
		case *dns.SDConfig:
			p("dns", fmt.Sprintf("%s %s %d %d", strings.Join(d.Names, ","), strings.ToUpper(d.Type), d.Port,
				time.Duration(d.RefreshInterval).Milliseconds()))
		case *file.SDConfig:
			p("file", fmt.Sprintf("%s %d", strings.Join(d.Files, ","), time.Duration(d.RefreshInterval).Milliseconds()))
		case *http.SDConfig:
			p("http", fmt.Sprintf("%s %d", dumpfmt.Escape(d.URL), time.Duration(d.RefreshInterval).Milliseconds()))
		}
	}
	for _, sd := range sds {
		static, ok := sd.(discovery.StaticConfig)
		if !ok {
			continue
		}
		for _, g := range static {
			var targets []string
			for _, t := range g.Targets {
				targets = append(targets, dumpfmt.Escape(string(t["__address__"])))
			}
			var ls []string
			for _, k := range sortedKeys(g.Labels) {
				if g.Labels[k] != "" { // an empty label is no label
					ls = append(ls, dumpfmt.Escape(string(k))+"="+dumpfmt.Escape(string(g.Labels[k])))
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

// secret is a secret's stand-in: the start of its MD5 sum.
func secret[S ~string](s S) string {
	if s == "" {
		return ""
	}
	sum := md5.Sum([]byte(s))
	return hex.EncodeToString(sum[:])[:8]
}

func dumpTLS(t config_util.TLSConfig) string {
	e := dumpfmt.Escape
	return fmt.Sprintf("ca=%s,ca_file=%s,ca_ref=%s,cert=%s,cert_file=%s,cert_ref=%s,key=%s,key_file=%s,key_ref=%s,server_name=%s,insecure_skip_verify=%v,min_version=%s,max_version=%s",
		secret(t.CA), e(t.CAFile), e(t.CARef), secret(t.Cert), e(t.CertFile), e(t.CertRef),
		secret(t.Key), e(t.KeyFile), e(t.KeyRef), e(t.ServerName), t.InsecureSkipVerify,
		t.MinVersion.String(), t.MaxVersion.String())
}

func dumpProxy(c config_util.ProxyConfig) string {
	u := "nil"
	if c.ProxyURL.URL != nil {
		u = "empty"
		if c.ProxyURL.String() != "" {
			u = dumpfmt.Escape(c.ProxyURL.Scheme) + "://"
			if c.ProxyURL.User != nil {
				u += dumpfmt.Escape(c.ProxyURL.User.Username())
				if pw, ok := c.ProxyURL.User.Password(); ok {
					u += ":" + secret(pw)
				}
				u += "@"
			}
			u += dumpfmt.Escape(c.ProxyURL.Host)
		}
	}
	var hs []string
	for _, k := range sortedKeys(c.ProxyConnectHeader) {
		var vs []string
		for _, v := range c.ProxyConnectHeader[k] {
			vs = append(vs, secret(v))
		}
		hs = append(hs, dumpfmt.Escape(k)+":"+strings.Join(vs, "|"))
	}
	return fmt.Sprintf("url=%s,no_proxy=%s,from_environment=%v,connect_header=%s",
		u, dumpfmt.Escape(c.NoProxy), c.ProxyFromEnvironment, strings.Join(hs, ";"))
}

func dumpHTTP(out *bytes.Buffer, prefix string, c config_util.HTTPClientConfig) {
	p := func(k string, v any) { fmt.Fprintf(out, "%s%s=%v\n", prefix, k, v) }
	e := dumpfmt.Escape
	if b := c.BasicAuth; b == nil {
		p("basic_auth", "nil")
	} else {
		p("basic_auth", fmt.Sprintf("username=%s,username_file=%s,username_ref=%s,password=%s,password_file=%s,password_ref=%s",
			e(b.Username), e(b.UsernameFile), e(b.UsernameRef), secret(b.Password), e(b.PasswordFile), e(b.PasswordRef)))
	}
	if a := c.Authorization; a == nil {
		p("authorization", "nil")
	} else {
		p("authorization", fmt.Sprintf("type=%s,credentials=%s,credentials_file=%s,credentials_ref=%s",
			e(a.Type), secret(a.Credentials), e(a.CredentialsFile), e(a.CredentialsRef)))
	}
	p("bearer_token", secret(c.BearerToken)+","+e(c.BearerTokenFile))
	if o := c.OAuth2; o == nil {
		p("oauth2", "nil")
	} else {
		var scopes, params []string
		for _, s := range o.Scopes {
			scopes = append(scopes, e(s))
		}
		for _, k := range sortedKeys(o.EndpointParams) {
			params = append(params, e(k)+":"+e(o.EndpointParams[k]))
		}
		p("oauth2", fmt.Sprintf("client_id=%s,client_secret=%s,client_secret_file=%s,client_secret_ref=%s,key_id=%s,key=%s,key_file=%s,key_ref=%s,grant_type=%s,signature_algorithm=%s,iss=%s,audience=%s,claims=%v,scopes=%s,token_url=%s,endpoint_params=%s",
			e(o.ClientID), secret(o.ClientSecret), e(o.ClientSecretFile), e(o.ClientSecretRef),
			e(o.ClientCertificateKeyID), secret(o.ClientCertificateKey), e(o.ClientCertificateKeyFile), e(o.ClientCertificateKeyRef),
			e(o.GrantType), e(o.SignatureAlgorithm), e(o.Iss), e(o.Audience), o.Claims != nil,
			strings.Join(scopes, "|"), e(o.TokenURL), strings.Join(params, "|")))
		p("oauth2.tls", dumpTLS(o.TLSConfig))
		p("oauth2.proxy", dumpProxy(o.ProxyConfig))
	}
	p("tls", dumpTLS(c.TLSConfig))
	p("follow_redirects", c.FollowRedirects)
	p("enable_http2", c.EnableHTTP2)
	p("proxy", dumpProxy(c.ProxyConfig))
	if c.HTTPHeaders == nil {
		p("headers", "nil")
	} else {
		var hs []string
		for _, k := range sortedKeys(c.HTTPHeaders.Headers) {
			h := c.HTTPHeaders.Headers[k]
			var vs, ss, fs []string
			for _, v := range h.Values {
				vs = append(vs, e(v))
			}
			for _, v := range h.Secrets {
				ss = append(ss, secret(v))
			}
			for _, v := range h.Files {
				fs = append(fs, e(v))
			}
			hs = append(hs, e(k)+":values="+strings.Join(vs, "|")+";secrets="+strings.Join(ss, "|")+";files="+strings.Join(fs, "|"))
		}
		p("headers", strings.Join(hs, ","))
	}
}
