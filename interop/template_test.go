package interop_test

// TestTemplateExpansionMatchesPrometheus: Ferrite's template engine
// (crates/template, through its templatedump example) expands the same
// cases as Prometheus' template.NewTemplateExpander(...).Expand(), with the
// same data and a query function serving the same canned table, and must
// give the same output or the same error text: hand-made cases covering
// text/template's syntax, built-ins and printing and each Prometheus
// function on edge values, then generated ones.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand"
	"net/url"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/histogram"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql"
	"github.com/prometheus/prometheus/template"
)

type tmplHistogram struct {
	Schema          int32      `json:"schema"`
	ZeroThreshold   float64    `json:"zero_threshold"`
	ZeroCount       float64    `json:"zero_count"`
	Count           float64    `json:"count"`
	Sum             float64    `json:"sum"`
	PositiveSpans   [][2]int64 `json:"positive_spans,omitempty"`
	PositiveBuckets []float64  `json:"positive_buckets,omitempty"`
	NegativeSpans   [][2]int64 `json:"negative_spans,omitempty"`
	NegativeBuckets []float64  `json:"negative_buckets,omitempty"`
}

func (h *tmplHistogram) model() *histogram.FloatHistogram {
	if h == nil {
		return nil
	}
	spans := func(v [][2]int64) []histogram.Span {
		var out []histogram.Span
		for _, s := range v {
			out = append(out, histogram.Span{Offset: int32(s[0]), Length: uint32(s[1])})
		}
		return out
	}
	return &histogram.FloatHistogram{
		Schema:          h.Schema,
		ZeroThreshold:   h.ZeroThreshold,
		ZeroCount:       h.ZeroCount,
		Count:           h.Count,
		Sum:             h.Sum,
		PositiveSpans:   spans(h.PositiveSpans),
		PositiveBuckets: h.PositiveBuckets,
		NegativeSpans:   spans(h.NegativeSpans),
		NegativeBuckets: h.NegativeBuckets,
	}
}

type tmplSample struct {
	Labels    map[string]string `json:"labels"`
	Value     string            `json:"value"`
	Histogram *tmplHistogram    `json:"histogram,omitempty"`
}

type tmplResult struct {
	Samples []tmplSample `json:"samples,omitempty"`
	Error   string       `json:"error,omitempty"`
}

type tmplCase struct {
	Name           string                `json:"name,omitempty"`
	Text           string                `json:"text"`
	Prefix         bool                  `json:"prefix,omitempty"`
	Labels         map[string]string     `json:"labels"`
	ExternalLabels map[string]string     `json:"external_labels"`
	ExternalURL    string                `json:"external_url"`
	Value          string                `json:"value"`
	Histogram      *tmplHistogram        `json:"histogram,omitempty"`
	TMs            int64                 `json:"t_ms"`
	Queries        map[string]tmplResult `json:"queries"`
}

type tmplOutcome struct {
	Out *string `json:"out,omitempty"`
	Err *string `json:"err,omitempty"`
}

// tmplAddress is a pointer as fmt prints it (`%v`; `%x` without 0x in a
// slice; `%d` in decimal: 12 to 15 digits): no two runs agree on these.
var tmplAddress = regexp.MustCompile(`0x[0-9a-f]{8,}|\b[0-9a-f]{10,12}\b|\b[0-9]{12,15}\b`)

func (o tmplOutcome) String() string {
	if o.Err != nil {
		return "ERR " + strconv.Quote(tmplAddress.ReplaceAllString(*o.Err, "0xADDR"))
	}
	if o.Out != nil {
		return "OUT " + strconv.Quote(tmplAddress.ReplaceAllString(*o.Out, "0xADDR"))
	}
	return "NOTHING"
}

const tmplDefs = "{{$labels := .Labels}}{{$externalLabels := .ExternalLabels}}{{$externalURL := .ExternalURL}}{{$value := .Value}}"

// prometheusExpand runs a case through Prometheus' own template code.
func prometheusExpand(c tmplCase) (out tmplOutcome) {
	defer func() {
		if r := recover(); r != nil {
			s := fmt.Sprintf("PANIC %v", r)
			out = tmplOutcome{Err: &s}
		}
	}()
	parse := func(s string) float64 {
		f, _ := strconv.ParseFloat(s, 64)
		return f
	}
	text := c.Text
	if c.Prefix {
		text = tmplDefs + text
	}
	name := c.Name
	if name == "" {
		name = "__alert_A"
	}
	qf := func(_ context.Context, q string, ts time.Time) (promql.Vector, error) {
		r, ok := c.Queries[q]
		if !ok {
			return nil, fmt.Errorf("no canned result for %q", q)
		}
		if r.Error != "" {
			return nil, errors.New(r.Error)
		}
		var v promql.Vector
		for _, s := range r.Samples {
			v = append(v, promql.Sample{Metric: labels.FromMap(s.Labels), T: ts.UnixMilli(), F: parse(s.Value), H: s.Histogram.model()})
		}
		return v, nil
	}
	u, err := url.Parse(c.ExternalURL)
	if err != nil {
		s := "bad external URL"
		return tmplOutcome{Err: &s}
	}
	data := template.AlertTemplateData(c.Labels, c.ExternalLabels, c.ExternalURL,
		promql.Sample{F: parse(c.Value), H: c.Histogram.model()})
	e := template.NewTemplateExpander(context.Background(), text, name, data, model.Time(c.TMs), qf, u, nil)
	res, err := e.Expand()
	if err != nil {
		s := err.Error()
		return tmplOutcome{Err: &s}
	}
	return tmplOutcome{Out: &res}
}

// tmplQueries is the canned table every case gets.
func tmplQueries() map[string]tmplResult {
	return map[string]tmplResult{
		"up": {Samples: []tmplSample{
			{Labels: map[string]string{"__name__": "up", "job": "node", "instance": "b.example.com:9100"}, Value: "1"},
			{Labels: map[string]string{"__name__": "up", "job": "api", "instance": "a.example.com:8080"}, Value: "0"},
			{Labels: map[string]string{"__name__": "up", "job": "db", "instance": "10.0.0.1:5432"}, Value: "1"},
		}},
		"empty": {},
		"fails": {Error: "query timed out in expression evaluation"},
		"edge": {Samples: []tmplSample{
			{Labels: map[string]string{"k": "nan"}, Value: "NaN"},
			{Labels: map[string]string{"k": "inf"}, Value: "+Inf"},
			{Labels: map[string]string{"k": "tiny", "__value__": "str"}, Value: "1e-300"},
			{Labels: map[string]string{"k": "huge"}, Value: "-1.5e300"},
		}},
		"hist": {Samples: []tmplSample{
			{Labels: map[string]string{"__name__": "h"}, Histogram: &tmplHistogram{
				Schema: 0, ZeroThreshold: 0.001, ZeroCount: 1, Count: 6, Sum: 12.5,
				PositiveSpans: [][2]int64{{0, 2}, {1, 1}}, PositiveBuckets: []float64{1, 2, 1},
				NegativeSpans: [][2]int64{{0, 1}}, NegativeBuckets: []float64{1},
			}},
		}},
		"sum(rate(http_requests_total[5m]))": {Samples: []tmplSample{{Labels: map[string]string{}, Value: "1234.5678"}}},
	}
}

// tmplBase is the default data of a case.
func tmplBase(text string) tmplCase {
	return tmplCase{
		Text:           text,
		Prefix:         true,
		Labels:         map[string]string{"__name__": "up", "job": "node", "instance": "host-1.example.com:9100", "severity": "page", "path": "/a b?c=d&e"},
		ExternalLabels: map[string]string{"cluster": "eu-1", "replica": "r0"},
		ExternalURL:    "http://prom.example.com:9090/prometheus",
		Value:          "1234.5678",
		TMs:            1700000000123,
		Queries:        tmplQueries(),
	}
}

var tmplValues = []string{"0", "-0", "1", "-1", "0.1", "1e-10", "1.5e-7", "123456789", "1e21", "1e300",
	"-2.5e-300", "5e-324", "1.7976931348623157e308", "NaN", "+Inf", "-Inf", "999.95", "1023.9", "1024", "86400.5",
	"0.0005", "-3600", "1700000000.123", "9.3e9", "12345678901234567890"}

func tmplHandCases() []tmplCase {
	texts := []string{
		"", "plain text", "{{ $value }}", "{{ .Value }}", "{{ $labels }}", "{{ .Labels }}", "{{ $labels.job }}",
		"{{ $labels.missing }}|", "{{ .Labels.missing }}|", "{{ $externalLabels.cluster }}", "{{ $externalURL }}", "{{ . }}",
		"{{ .ExternalLabels }}", "{{ .Nope }}", "{{ .Labels.job.x }}", "{{ $value.x }}", "{{ $labels.job 1 }}",
		"{{ humanize $value }}", "{{ humanize1024 $value }}", "{{ humanizeDuration $value }}", "{{ humanizePercentage $value }}",
		"{{ humanizeTimestamp $value }}", "{{ $value | humanize }}", "{{ humanize \"1.5e3\" }}", "{{ humanize \"abc\" }}",
		"{{ humanize \"1e400\" }}", "{{ humanize 12 }}", "{{ humanize true }}", "{{ humanize nil }}", "{{ humanize $labels }}",
		"{{ humanize (safeHtml \"1\") }}", "{{ humanizeDuration \"90061\" }}", "{{ humanizeDuration 0.000123 }}",
		"{{ humanizeDuration -0.5 }}", "{{ humanizeTimestamp 0 }}", "{{ humanizeTimestamp -1.5 }}", "{{ humanizeTimestamp 1e20 }}",
		"{{ humanizeTimestamp \"NaN\" }}", "{{ toTime 1.5 }}", "{{ toTime \"NaN\" }}", "{{ toTime 1e11 }}", "{{ (toTime 1700000000).Unix }}",
		"{{ toDuration 90.5 }}", "{{ toDuration 0.000001 }}", "{{ toDuration -3600 }}", "{{ toDuration \"x\" }}", "{{ (toDuration 2).Seconds }}",
		"{{ now }}", "{{ now | humanizeTimestamp }}", "{{ pathPrefix }}", "{{ externalURL }}", "{{ parseDuration \"1h30m\" }}",
		"{{ parseDuration \"-5m\" }}", "{{ parseDuration \"\" }}", "{{ parseDuration \"5x\" }}", "{{ parseDuration \"1.5h\" }}",
		"{{ parseDuration \"0\" }}", "{{ urlQueryEscape $labels.path }}", "{{ graphLink \"rate(x[5m]) > 1\" }}", "{{ tableLink \"up\" }}",
		"{{ stripPort $labels.instance }}", "{{ stripPort \"[::1]:80\" }}", "{{ stripPort \"::1\" }}", "{{ stripPort \"host\" }}",
		"{{ stripDomain $labels.instance }}", "{{ stripDomain \"10.0.0.1:80\" }}", "{{ stripDomain \"a.b.c\" }}", "{{ stripDomain \"[fe80::1%eth0]:80\" }}",
		"{{ stripDomain \"[::1]:9090\" }}", "{{ stripDomain \"\" }}", "{{ toUpper \"abc é ß\" }}", "{{ toLower \"ÀBC\" }}",
		"{{ title \"hello world foo-bar foo_bar don't\" }}", "{{ title \"HELLO\" }}", "{{ safeHtml \"<b>\" }}", "{{ html \"<b>&'\\\"\" }}",
		"{{ js \"a'b\\\"c<d>=&\\n\" }}", "{{ urlquery \"a b/c\" }}", "{{ html 1 2 }}", "{{ html nil }}", "{{ js $labels }}",
		"{{ reReplaceAll \"(\\\\w+)-(\\\\d+)\" \"$2:$1\" \"ab-12 cd-34\" }}", "{{ reReplaceAll \"x*\" \"-\" \"abc\" }}",
		"{{ reReplaceAll \"(\" \"\" \"x\" }}", "{{ reReplaceAll \"a(?P<n>b)\" \"${n}$n$1x\" \"abab\" }}", "{{ reReplaceAll \":.*\" \"\" $labels.instance }}",
		"{{ match \"^node$\" $labels.job }}", "{{ match \"(\" \"x\" }}", "{{ match \"\\\\d+\" \"١٢\" }}",
		"{{ args 1 \"x\" 2.5 }}", "{{ (args 1 \"x\").arg1 }}", "{{ (args 1).arg5 }}", "{{ args }}", "{{ with args 1 }}{{ .arg0 }}{{ end }}",
		"{{ query \"up\" | len }}", "{{ range query \"up\" }}{{ .Labels.job }}={{ .Value }};{{ end }}",
		"{{ range query \"up\" | sortByLabel \"job\" }}{{ .Labels.instance }} {{ end }}",
		"{{ range $i, $s := query \"up\" }}{{ $i }}:{{ label \"job\" $s }} {{ end }}",
		"{{ with query \"up\" }}{{ . | first | value | humanize }}{{ end }}", "{{ query \"up\" | first | label \"job\" }}",
		"{{ query \"empty\" | first }}", "{{ query \"fails\" }}", "{{ query \"unknown\" }}", "{{ with query \"empty\" }}x{{ else }}none{{ end }}",
		"{{ range query \"edge\" }}{{ .Labels.k }}={{ .Value }}/{{ humanize .Value }}/{{ humanize1024 .Value }}/{{ humanizeDuration .Value }};{{ end }}",
		"{{ range query \"edge\" }}{{ strvalue . }},{{ end }}", "{{ query \"hist\" | first | value }}", "{{ range query \"hist\" }}{{ . }}{{ end }}",
		"{{ (query \"hist\" | first).Value }}", "{{ humanize (query \"hist\" | first | value) }}",
		"{{ query \"sum(rate(http_requests_total[5m]))\" | first | value | humanize }}", "{{ first (query \"up\") }}",
		"{{ label \"job\" nil }}", "{{ value nil }}", "{{ label \"job\" 1 }}", "{{ label 1 (query \"up\" | first) }}", "{{ first 1 }}",
		"{{ sortByLabel \"x\" nil | len }}", "{{ index (query \"up\") 1 | label \"job\" }}", "{{ index (query \"up\") 3 }}", "{{ index (query \"up\") 5 }}",
		"{{ index $labels \"job\" }}", "{{ index $labels \"nope\" }}|", "{{ index $labels 1 }}", "{{ index \"abc\" 1 }}", "{{ index nil 1 }}",
		"{{ index 1 1 }}", "{{ index $labels }}", "{{ slice \"abcdef\" 1 3 }}", "{{ slice \"abc\" 2 1 }}", "{{ slice \"abc\" 1 2 3 }}",
		"{{ slice (query \"up\") 1 | len }}", "{{ slice 1 }}", "{{ len \"héllo\" }}", "{{ len $labels }}", "{{ len 1 }}", "{{ len nil }}",
		"{{ len $value }}", "{{ not 0 }}", "{{ not \"\" }}", "{{ not $labels }}", "{{ and 1 0 2 }}", "{{ and 1 2 }}", "{{ or 0 \"\" }}",
		"{{ or 0 \"x\" }}", "{{ and }}", "{{ 0 | and 1 }}", "{{ eq 1 1 }}", "{{ eq 1 2 3 1 }}", "{{ eq 1 1.0 }}", "{{ eq \"a\" \"a\" }}",
		"{{ eq $value 1234.5678 }}", "{{ eq $value 1 }}", "{{ eq nil nil }}", "{{ eq $labels $labels }}", "{{ eq 1 }}", "{{ ne 1 2 }}",
		"{{ lt 1 2 }}", "{{ lt 1.5 2 }}", "{{ lt \"a\" \"b\" }}", "{{ lt true false }}", "{{ le 2 2 }}", "{{ gt $value 1000.0 }}",
		"{{ gt $value 1000 }}", "{{ ge 1 2 }}", "{{ lt nil 1 }}", "{{ eq (safeHtml \"a\") \"a\" }}", "{{ lt $labels.job \"z\" }}",
		"{{ print 1 2 \"a\" 3 \"b\" \"c\" }}", "{{ println 1 \"a\" }}", "{{ print nil }}", "{{ print $labels }}", "{{ print (query \"up\" | first) }}",
		"{{ printf \"%.2f\" $value }}", "{{ printf \"%d\" 42 }}", "{{ printf \"%5d|%-5d|%05d|%+d\" 1 2 -3 4 }}", "{{ printf \"%s\" $labels.job }}",
		"{{ printf \"%q\" \"a\\\"b\" }}", "{{ printf \"%v %v %v\" 1 1.5 \"x\" }}", "{{ printf \"%d\" \"x\" }}", "{{ printf \"%s\" 1.5 }}",
		"{{ printf \"%d %d\" 1 }}", "{{ printf \"%d\" 1 2 }}", "{{ printf \"%e\" 1234.5678 }}", "{{ printf \"%g\" 1e21 }}", "{{ printf \"%G\" 1e-7 }}",
		"{{ printf \"%x %X %o %b\" 255 255 8 5 }}", "{{ printf \"%x\" \"hi\" }}", "{{ printf \"%t\" true }}", "{{ printf \"%t\" 1 }}", "{{ printf \"%%\" }}",
		"{{ printf \"%\" }}", "{{ printf \"%z\" 1 }}", "{{ printf \"%c\" 65 }}", "{{ printf \"%q\" 65 }}", "{{ printf \"%U\" 65 }}",
		"{{ printf \"%8.3f|%-8.2e|\" 3.14159 1234.5 }}", "{{ printf \"%v\" $labels }}", "{{ printf \"%s\" $labels }}", "{{ printf \"%d\" $labels }}",
		"{{ printf \"%v\" nil }}", "{{ printf \"%d\" nil }}", "{{ printf \"%T %T %T %T\" 1 1.5 \"x\" nil }}", "{{ printf \"%f %f\" $value 1 }}",
		"{{ printf \"%.3g\" 1234567.0 }}", "{{ printf \"%6.2f%%\" 99.5 }}", "{{ printf \"%*d\" 5 1 }}", "{{ printf \"%.*f\" 2 3.14159 }}",
		"{{ printf \"%s\" (toTime 0) }}", "{{ printf \"%v\" (toDuration 1.5) }}", "{{ printf 1 }}", "{{ printf }}", "{{ printf \"%v\" (args 1 nil) }}",
		"{{ printf \"%f\" \"+Inf\" }}", "{{ printf \"%.1f\" 0.05 }}", "{{ printf \"%.0f\" 2.5 }}", "{{ printf \"%5.1s|\" \"abc\" }}",
		"{{ if $value }}yes{{ end }}", "{{ if gt $value 1.0 }}big{{ else if lt $value 0.5 }}small{{ else }}mid{{ end }}",
		"{{ if eq $labels.severity \"page\" }}PAGE{{ else }}no{{ end }}", "{{ if and $labels.job (eq $labels.job \"node\") }}ok{{ end }}",
		"{{ with $labels.nope }}x{{ else }}empty{{ end }}", "{{ with $labels.job }}{{ . }}{{ end }}", "{{ with $x := 5 }}{{ $x }}{{ end }}",
		"{{ with 0 }}a{{ else with 1 }}b{{ end }}", "{{ range $k, $v := $labels }}{{ $k }}={{ $v }} {{ end }}", "{{ range $labels }}{{ . }},{{ end }}",
		"{{ range $k, $v := .ExternalLabels }}{{ $k }}{{ end }}", "{{ range $x := $labels }}{{ $x }}{{ end }}", "{{ range 3 }}{{ . }}{{ end }}",
		"{{ range $i := 3 }}{{ $i }}{{ end }}", "{{ range $i, $j := 3 }}{{ end }}", "{{ range 0 }}x{{ else }}none{{ end }}", "{{ range $value }}{{ end }}",
		"{{ range \"abc\" }}{{ . }}{{ end }}", "{{ range nil }}x{{ else }}nil{{ end }}", "{{ range $labels }}{{ if eq . \"node\" }}{{ break }}{{ end }}{{ . }};{{ end }}",
		"{{ range $labels }}{{ if eq . \"node\" }}{{ continue }}{{ end }}{{ . }};{{ end }}", "{{ range query \"up\" | first }}{{ end }}",
		"{{ $x := 1 }}{{ $x = 2 }}{{ $x }}", "{{ $x := 1 }}{{ if true }}{{ $x = 3 }}{{ $y := 4 }}{{ end }}{{ $x }}", "{{ $ }}", "{{ $.Labels.job }}",
		"{{ range $labels }}{{ $.ExternalURL }}{{ end }}", "{{ $x := \"a\" }}{{ range $labels }}{{ $x = . }}{{ end }}{{ $x }}",
		"{{ define \"t\" }}[{{ . }}]{{ end }}{{ template \"t\" $labels.job }}", "{{ template \"nope\" }}", "{{ block \"b\" 5 }}<{{ . }}>{{ end }}",
		"{{ define \"r\" }}{{ if lt . 5 }}{{ . }}{{ template \"r\" (len (printf \"%*s\" (len (printf \"%d.\" .)) \"\")) }}{{ end }}{{ end }}{{ template \"r\" 1 }}",
		"{{ define \"loop\" }}{{ template \"loop\" }}{{ end }}{{ template \"loop\" }}", "{{ define \"e\" }}{{ .X }}{{ end }}{{ template \"e\" 1 }}",
		"{{ define \"__alert_A\" }}x{{ end }}", "a {{- \" b \" -}} c", "a\n{{- /* comment */ -}}\nb", "{{ \"x\" }}{{/* c */}}{{ 'a' }}",
		"{{ 1 }} {{ 1.0 }} {{ 1e3 }} {{ 0x10 }} {{ -0x1e3 }} {{ 0o17 }} {{ 0b101 }} {{ 1_000 }} {{ 'x' }} {{ -2 }} {{ +3 }}",
		"{{ 9223372036854775807 }}", "{{ 9223372036854775808 }}", "{{ 1e400 }}", "{{ true }} {{ false }}", "{{ nil }}", "{{ . | print }}",
		"{{ \"a\" | printf \"%s-%s\" \"b\" }}", "{{ 1 | printf \"%d\" }}", "{{ $value | printf \"%.1f\" }}", "{{ (1) }} {{ (print 1 2) }}",
		"{{ (1) 2 }}", "{{ $value 1 }}", "{{ 1 2 }}", "{{ \"x\" | len }}", "{{ len | print }}", "{{ humanize }}", "{{ humanize 1 2 }}",
		"{{ now 1 }}", "{{ 1 | now }}", "{{ $labels.job | toUpper }}", "{{ toUpper 1 }}", "{{ toUpper nil }}", "{{ toUpper $value }}",
		"{{ toUpper . }}", "{{ toUpper (safeHtml \"x\") }}", "{{ call 1 }}", "{{ call nil }}", "{{ (query \"up\").x }}", "{{ (query \"up\" | first).Labels.job }}",
		"{{ (query \"up\" | first).Nope }}", "{{ (args 1).arg0.x }}", "{{ $value.Count }}", "{{ (toTime 1).Nope }}",
		"{{ if }}", "{{ bogus }}", "{{ $nope }}", "{{ end }}", "{{ range }}{{ end }}", "{{ else }}", "{{", "{{ .Labels", "{{ \"unterminated }}",
		"line1\nline2 {{ bogus }}", "a\n{{ humanize \"x\" }}", "a\nb {{ $labels.job | printf \"%d\" | len | humanize }}", "{{ 3 | humanize | 4 }}",
		"{{ $x := 1 }}{{ $x.y }}", "{{ (1).x }}", "{{ nil.x }}", "{{ with $v := 1 }}{{ $v }}{{ end }}{{ $v }}", "{{ range $i, $v, $w := 1 }}{{ end }}",
		"{{ $labels.instance | reReplaceAll \"(.*):.*\" \"$1\" }}", "{{ \"x\" | reReplaceAll \"x\" \"y\" }}",
		"{{ toTime 1e9 }} {{ toTime -1e9 }} {{ toTime 253402300800 }}", "{{ humanizeTimestamp 1e10 }}", "{{ humanizeTimestamp 9.3e9 }}",
		"{{ toDuration 1e10 }}", "{{ toDuration \"NaN\" }}", "{{ humanizeDuration 1e19 }}", "{{ humanizeDuration \"-Inf\" }}",
		"{{ define \"t\" }}\n  {{ humanize . }}{{ end }}{{ template \"t\" \"bad\" }}", "{{ define \"t\" }}{{ $ }}|{{ . }}{{ end }}{{ template \"t\" $labels.job }}",
		"{{ define \"t\" }}{{ $labels }}{{ end }}", "{{ define \"a\" }}A{{ template \"b\" . }}{{ end }}{{ define \"b\" }}B{{ . }}{{ end }}{{ template \"a\" 7 }}",
		"{{ block \"b\" . }}{{ .ExternalURL }}{{ end }}{{ define \"b\" }}redefined{{ end }}", "{{ define \"x\" }}{{ end }}{{ define \"x\" }}y{{ end }}{{ template \"x\" }}",
		"{{ define \"x\" }}a{{ end }}{{ define \"x\" }}b{{ end }}", "{{ and false (humanize \"x\") }}", "{{ or 1 (humanize \"x\") }}", "{{ and 1 (humanize \"x\") }}",
		"{{ or 0 nil }}", "{{ not nil }}", "{{ and $labels.missing \"x\" }}|", "{{ if and (query \"up\") (gt (len (query \"up\")) 2) }}3+{{ end }}",
		"{{ range $i, $s := query \"up\" }}{{ if $i }}, {{ end }}{{ $s.Labels.instance }}{{ end }}", "{{ range $k, $v := $labels }}{{ if eq $k \"job\" }}{{ continue }}{{ end }}{{ $k }} {{ end }}",
		"{{ range $a := $labels }}{{ range $b := $externalLabels }}{{ if eq $b \"r0\" }}{{ break }}{{ end }}{{ $b }}{{ end }};{{ end }}",
		"{{ $k := \"\" }}{{ $v := \"\" }}{{ range $k, $v = $labels }}{{ end }}{{ $k }}={{ $v }}", "{{ range $i, $e := query \"empty\" }}x{{ else }}{{ $i }}{{ end }}",
		"{{ with $x := $labels.job }}{{ $x }}{{ else with $y := 1 }}{{ $y }}{{ end }}", "{{ with $labels.nope }}a{{ else with $labels.nope2 }}b{{ else }}c{{ end }}",
		"{{ if 0 }}a{{ else if \"\" }}b{{ else if $labels.job }}c{{ end }}", "a\n  {{- $value -}}  \nb", "{{- 1 -}}\n\n{{- 2 }}", "x{{ /* c */ -}}  y",
		"{{ printf \"%#v\" \"x\" }}", "{{ printf \"%#v\" $labels }}", "{{ printf \"%#v\" 1.0 }}", "{{ printf \"%#v\" (args 1 \"a\") }}", "{{ printf \"%#x\" 255 }}",
		"{{ printf \"%#q\" \"a`b\" }}", "{{ printf \"%#q\" \"ab\" }}", "{{ printf \"% d|% x\" 5 \"ab\" }}", "{{ printf \"%-10s|%10.3s|\" \"ab\" \"abcdef\" }}",
		"{{ printf \"%+.2e|%08.3f|%-8.2f|\" 12345.678 -3.14159 2.5 }}", "{{ printf \"%x|%X|%.3x\" 1.5 -2.75 3.1 }}", "{{ printf \"%c%c\" 0x4e16 0x754c }}",
		"{{ printf \"%q\" 0x1F600 }}", "{{ printf \"%U\" 0x1F600 }}", "{{ printf \"%v\" (query \"hist\" | first | value) }}", "{{ printf \"%s\" (query \"hist\" | first | value) }}",
		"{{ printf \"%5t|%-6v|\" true false }}", "{{ printf \"%3c|\" 65 }}", "{{ printf \"%o %O %b\" 64 64 5 }}", "{{ printf \"%.0f %.0f %.0f\" 0.5 1.5 -0.5 }}",
		"{{ printf \"%.3s\" \"héllo\" }}", "{{ printf \"%5.2q\" \"abc\" }}", "{{ printf \"%!\" }}", "{{ printf \"%d%%\" 50 }}", "{{ printf \"%[1]d\" 1 }}",
		"{{ print 1.0 2 \"x\" nil true }}", "{{ println }}", "{{ print }}", "{{ html }}", "{{ urlquery \"a\" \"b\" 1 }}", "{{ js 1.5 \"\\u2028\" }}",
		"{{ len (args) }}", "{{ index (args 1 2) \"arg1\" }}", "{{ index (args 1) \"nope\" }}", "{{ index $labels nil }}", "{{ index (query \"up\") nil }}",
		"{{ index (query \"up\") -1 }}", "{{ index (query \"up\") 1.0 }}", "{{ slice \"abc\" }}", "{{ slice \"abc\" 1 }}", "{{ slice \"abc\" 4 }}", "{{ slice nil }}",
		"{{ eq 1 nil }}", "{{ eq nil 1 }}", "{{ eq (query \"up\" | first) (query \"up\" | first) }}", "{{ $s := query \"up\" | first }}{{ eq $s $s }}",
		"{{ ne \"a\" \"b\" }}", "{{ lt 1 }}", "{{ eq }}", "{{ le 1.5 1.5 }}", "{{ ge \"b\" \"a\" }}", "{{ gt nil nil }}", "{{ lt $labels $labels }}",
		"{{ humanize \"0x10\" }}", "{{ humanize \" 1\" }}", "{{ humanize \"1_000\" }}", "{{ humanize \"inf\" }}", "{{ humanize \"-Infinity\" }}", "{{ humanize \"nan\" }}",
		"{{ humanize 1e-30 }}", "{{ humanize -0.000001234 }}", "{{ humanize 999999 }}", "{{ humanize 1e27 }}", "{{ humanize1024 -2048 }}", "{{ humanize1024 1e30 }}",
		"{{ humanizePercentage \"x\" }}", "{{ humanizePercentage 0.12345 }}", "{{ humanizeDuration 59.999 }}", "{{ humanizeDuration 3599.5 }}", "{{ humanizeDuration 1e-25 }}",
		"{{ humanizeTimestamp 1.5e9 }}", "{{ humanizeTimestamp -62135596800 }}", "{{ humanizeTimestamp 253402300799.999 }}", "{{ humanizeTimestamp 9.3e12 }}",
		"{{ toTime 0.0005 }}", "{{ toTime -0.0005 }}", "{{ toTime 1.9999 }}", "{{ toDuration 1e-10 }}", "{{ toDuration 3661.25 }}", "{{ toDuration 1e20 }}",
		"{{ parseDuration \"1y2w3d4h5m6s7ms\" }}", "{{ parseDuration \"-\" }}", "{{ parseDuration \"1h1h\" }}", "{{ parseDuration \"1s1h\" }}", "{{ parseDuration \"300000y\" }}",
		"{{ stripPort \"a:b:c\" }}", "{{ stripPort \"[::1]\" }}", "{{ stripPort \"[a]b:1\" }}", "{{ stripPort \":80\" }}", "{{ stripDomain \"a.b:80\" }}", "{{ stripDomain \"::1\" }}",
		"{{ stripDomain \"[a.b]:80\" }}", "{{ stripDomain \"01.2.3.4\" }}", "{{ stripDomain \"1.2.3.4\" }}", "{{ stripDomain \"fe80::1%eth0\" }}", "{{ stripDomain \"host.\" }}",
		"{{ title \"ab-cd ef_gh ij.kl 3rd o'neil x:y a..b\" }}", "{{ title \"élan ÉCOLE ǆ\" }}", "{{ toUpper \"ǆ ﬁ\" }}", "{{ toLower \"İ Σ\" }}",
		"{{ reReplaceAll \"\\\\s+\" \" \" \"a \\t\\n b\" }}", "{{ reReplaceAll \"(?i)NODE\" \"x\" $labels.job }}", "{{ reReplaceAll \"^\" \">\" \"ab\" }}",
		"{{ reReplaceAll \"b*\" \"-\" \"abba\" }}", "{{ reReplaceAll \"[\" \"\" \"x\" }}", "{{ reReplaceAll \"a)\" \"\" \"x\" }}", "{{ reReplaceAll \"(a)|b\" \"[$1]\" \"ab\" }}",
		"{{ match \"^\\\\w+$\" \"ñ\" }}", "{{ match \"\\\\bx\\\\b\" \"é x é\" }}", "{{ match \".\" \"\\n\" }}", "{{ match \"a{2,3}\" \"aaa\" }}",
		"{{ graphLink \"sum by (job) (rate(x{a=\\\"b\\\"}[5m]))\" }}", "{{ urlQueryEscape \"a+b c%/é~\" }}", "{{ safeHtml 1 }}", "{{ safeHtml \"<x>\" | html }}",
		"{{ label \"job\" (index (query \"up\") 2) }}|{{ label \"none\" (index (query \"up\") 2) }}|", "{{ strvalue (query \"up\" | first) }}|",
		"{{ (query \"up\" | first).Labels }}", "{{ (index (query \"edge\") 1).Value }}", "{{ with index (query \"edge\") 2 }}{{ .Labels.__value__ }}{{ end }}",
		"{{ match \"[a\" \"aa.b\\nb Aa{,2}\" }}", "{{ reReplaceAll \"[a\" \"<$0>\" \"aa.b\\nb Aa{,2}\" }}", "{{ match \"x[a-\" \"aa.b\\nb Aa{,2}\" }}", "{{ reReplaceAll \"x[a-\" \"<$0>\" \"aa.b\\nb Aa{,2}\" }}", "{{ match \"[z-a]\" \"aa.b\\nb Aa{,2}\" }}", "{{ reReplaceAll \"[z-a]\" \"<$0>\" \"aa.b\\nb Aa{,2}\" }}", "{{ match \"\\q\" \"aa.b\\nb Aa{,2}\" }}", "{{ reReplaceAll \"\\q\" \"<$0>\" \"aa.b\\nb Aa{,2}\" }}", "{{ match \"*\" \"aa.b\\nb Aa{,2}\" }}", "{{ reReplaceAll \"*\" \"<$0>\" \"aa.b\\nb Aa{,2}\" }}", "{{ match \"a{2,1}\" \"aa.b\\nb Aa{,2}\" }}", "{{ reReplaceAll \"a{2,1}\" \"<$0>\" \"aa.b\\nb Aa{,2}\" }}", "{{ match \"a{1001}\" \"aa.b\\nb Aa{,2}\" }}", "{{ reReplaceAll \"a{1001}\" \"<$0>\" \"aa.b\\nb Aa{,2}\" }}", "{{ match \"(?<x\" \"aa.b\\nb Aa{,2}\" }}", "{{ reReplaceAll \"(?<x\" \"<$0>\" \"aa.b\\nb Aa{,2}\" }}", "{{ match \"(?x)a\" \"aa.b\\nb Aa{,2}\" }}", "{{ reReplaceAll \"(?x)a\" \"<$0>\" \"aa.b\\nb Aa{,2}\" }}", "{{ match \"(?P<>a)\" \"aa.b\\nb Aa{,2}\" }}", "{{ reReplaceAll \"(?P<>a)\" \"<$0>\" \"aa.b\\nb Aa{,2}\" }}", "{{ match \"a|*\" \"aa.b\\nb Aa{,2}\" }}", "{{ reReplaceAll \"a|*\" \"<$0>\" \"aa.b\\nb Aa{,2}\" }}", "{{ match \"[[:foo:]]\" \"aa.b\\nb Aa{,2}\" }}", "{{ reReplaceAll \"[[:foo:]]\" \"<$0>\" \"aa.b\\nb Aa{,2}\" }}", "{{ match \"\\8\" \"aa.b\\nb Aa{,2}\" }}", "{{ reReplaceAll \"\\8\" \"<$0>\" \"aa.b\\nb Aa{,2}\" }}", "{{ match \"x{2}{3}\" \"aa.b\\nb Aa{,2}\" }}", "{{ reReplaceAll \"x{2}{3}\" \"<$0>\" \"aa.b\\nb Aa{,2}\" }}", "{{ match \"(?i\" \"aa.b\\nb Aa{,2}\" }}", "{{ reReplaceAll \"(?i\" \"<$0>\" \"aa.b\\nb Aa{,2}\" }}", "{{ match \"\\pX\" \"aa.b\\nb Aa{,2}\" }}", "{{ reReplaceAll \"\\pX\" \"<$0>\" \"aa.b\\nb Aa{,2}\" }}", "{{ match \"a++\" \"aa.b\\nb Aa{,2}\" }}", "{{ reReplaceAll \"a++\" \"<$0>\" \"aa.b\\nb Aa{,2}\" }}", "{{ match \"a**\" \"aa.b\\nb Aa{,2}\" }}", "{{ reReplaceAll \"a**\" \"<$0>\" \"aa.b\\nb Aa{,2}\" }}", "{{ match \"a*?*\" \"aa.b\\nb Aa{,2}\" }}", "{{ reReplaceAll \"a*?*\" \"<$0>\" \"aa.b\\nb Aa{,2}\" }}", "{{ match \"a*?\" \"aa.b\\nb Aa{,2}\" }}", "{{ reReplaceAll \"a*?\" \"<$0>\" \"aa.b\\nb Aa{,2}\" }}", "{{ match \"x{\" \"aa.b\\nb Aa{,2}\" }}", "{{ reReplaceAll \"x{\" \"<$0>\" \"aa.b\\nb Aa{,2}\" }}", "{{ match \"a{,2}\" \"aa.b\\nb Aa{,2}\" }}", "{{ reReplaceAll \"a{,2}\" \"<$0>\" \"aa.b\\nb Aa{,2}\" }}", "{{ match \"[]a]\" \"aa.b\\nb Aa{,2}\" }}", "{{ reReplaceAll \"[]a]\" \"<$0>\" \"aa.b\\nb Aa{,2}\" }}", "{{ match \"[^]a]+\" \"aa.b\\nb Aa{,2}\" }}", "{{ reReplaceAll \"[^]a]+\" \"<$0>\" \"aa.b\\nb Aa{,2}\" }}", "{{ match \"\\d{2}\\.\\d\" \"aa.b\\nb Aa{,2}\" }}", "{{ reReplaceAll \"\\d{2}\\.\\d\" \"<$0>\" \"aa.b\\nb Aa{,2}\" }}", "{{ match \"(?i)A|b\" \"aa.b\\nb Aa{,2}\" }}", "{{ reReplaceAll \"(?i)A|b\" \"<$0>\" \"aa.b\\nb Aa{,2}\" }}", "{{ match \"[[:alpha:]]+\" \"aa.b\\nb Aa{,2}\" }}", "{{ reReplaceAll \"[[:alpha:]]+\" \"<$0>\" \"aa.b\\nb Aa{,2}\" }}", "{{ match \"\\Qa.b\\E\" \"aa.b\\nb Aa{,2}\" }}", "{{ reReplaceAll \"\\Qa.b\\E\" \"<$0>\" \"aa.b\\nb Aa{,2}\" }}", "{{ match \"(?s).\" \"aa.b\\nb Aa{,2}\" }}", "{{ reReplaceAll \"(?s).\" \"<$0>\" \"aa.b\\nb Aa{,2}\" }}", "{{ match \"a{2}?\" \"aa.b\\nb Aa{,2}\" }}", "{{ reReplaceAll \"a{2}?\" \"<$0>\" \"aa.b\\nb Aa{,2}\" }}", "{{ match \"(?U)a+\" \"aa.b\\nb Aa{,2}\" }}", "{{ reReplaceAll \"(?U)a+\" \"<$0>\" \"aa.b\\nb Aa{,2}\" }}", "{{ match \"(?m)^b$\" \"aa.b\\nb Aa{,2}\" }}", "{{ reReplaceAll \"(?m)^b$\" \"<$0>\" \"aa.b\\nb Aa{,2}\" }}", "{{ match \"\\z\" \"aa.b\\nb Aa{,2}\" }}", "{{ reReplaceAll \"\\z\" \"<$0>\" \"aa.b\\nb Aa{,2}\" }}", "{{ match \"\\A\" \"aa.b\\nb Aa{,2}\" }}", "{{ reReplaceAll \"\\A\" \"<$0>\" \"aa.b\\nb Aa{,2}\" }}", "{{ match \"(?:a)\" \"aa.b\\nb Aa{,2}\" }}", "{{ reReplaceAll \"(?:a)\" \"<$0>\" \"aa.b\\nb Aa{,2}\" }}", "{{ match \"\\x{41}\" \"aa.b\\nb Aa{,2}\" }}", "{{ reReplaceAll \"\\x{41}\" \"<$0>\" \"aa.b\\nb Aa{,2}\" }}", "{{ match \"\\p{Greek}\" \"aa.b\\nb Aa{,2}\" }}", "{{ reReplaceAll \"\\p{Greek}\" \"<$0>\" \"aa.b\\nb Aa{,2}\" }}",
		"{{ len (query \"fails\") }}", "{{ query \"up\" | sortByLabel \"instance\" | first | label \"instance\" }}", "{{ sortByLabel \"job\" (query \"empty\") }}",
	}
	var cases []tmplCase
	for _, t := range texts {
		cases = append(cases, tmplBase(t))
	}
	// The numeric helpers on every edge value, through $value, strings and query results.
	for _, v := range tmplValues {
		c := tmplBase("{{ $value }}|{{ humanize $value }}|{{ humanize1024 $value }}|{{ humanizeDuration $value }}|{{ humanizePercentage $value }}|{{ humanizeTimestamp $value }}|{{ printf \"%.2f %e %g %v\" $value $value $value $value }}")
		c.Value = v
		cases = append(cases, c)
		c2 := tmplBase(fmt.Sprintf("{{ humanize %q }}|{{ humanizeDuration %q }}|{{ humanize1024 %q }}|{{ toTime %q }}|{{ toDuration %q }}", v, v, v, v, v))
		cases = append(cases, c2)
		c3 := tmplBase("{{ with query \"v\" }}{{ range . }}{{ .Value }} {{ humanize .Value }} {{ humanizePercentage .Value }}{{ end }}{{ end }}")
		c3.Queries = map[string]tmplResult{"v": {Samples: []tmplSample{{Labels: map[string]string{"a": "b"}, Value: v}}}}
		cases = append(cases, c3)
	}
	// A histogram as the alert's value.
	h := tmplBase("{{ $value }}|{{ .Value }}|{{ printf \"%v\" $value }}|{{ humanize $value }}")
	h.Histogram = &tmplHistogram{Schema: 1, ZeroThreshold: 0.01, ZeroCount: 2, Count: 10, Sum: -3.5,
		PositiveSpans: [][2]int64{{-1, 2}}, PositiveBuckets: []float64{3, 4}, NegativeSpans: [][2]int64{{1, 1}}, NegativeBuckets: []float64{1}}
	cases = append(cases, h)
	h2 := tmplBase("{{ if $value }}t{{ end }}{{ $value.Count }} {{ $value.Sum }}")
	h2.Histogram = &tmplHistogram{Schema: 0, Count: 0}
	cases = append(cases, h2)
	// Other data: no labels, an external URL with a path and query, a name with odd characters.
	e := tmplBase("{{ $labels }}|{{ $labels.x }}|{{ pathPrefix }}|{{ externalURL }}|{{ $externalURL }}")
	e.Labels = map[string]string{}
	e.ExternalURL = "https://example.com/a/b?x=1"
	cases = append(cases, e)
	n := tmplBase("{{ bogus }}")
	n.Name = "__alert_High Latency"
	cases = append(cases, n)
	n2 := tmplBase("{{ .Nope }}")
	n2.Name = "__alert_X"
	n2.Prefix = false
	cases = append(cases, n2)
	return cases
}

// tmplRandom generates templates from pieces that exercise pipelines,
// functions and values together.
func tmplRandom(rng *rand.Rand, n int) []tmplCase {
	vals := []string{"$value", ".Value", "$labels.job", "$labels.instance", "$labels.missing", ".Labels.severity", "$externalLabels.cluster",
		"$externalURL", "1", "0", "-1", "1.5", "1e3", "0x10", "'a'", "\"abc\"", "\"1.5\"", "\"-3\"", "\"\"", "\"NaN\"", "true", "false",
		"(query \"up\" | first | value)", "(query \"edge\" | first | value)", "(now)", "(len $labels)", "$labels", "(args 1 \"x\")",
		"(query \"up\")", "(query \"up\" | first)", "(toTime 1)", "(toDuration 60)", "(safeHtml \"<x>\")", "nil", "."}
	unary := []string{"humanize", "humanize1024", "humanizeDuration", "humanizePercentage", "humanizeTimestamp", "toUpper", "toLower",
		"title", "len", "not", "html", "js", "urlquery", "print", "first", "value", "toTime", "toDuration", "stripPort", "stripDomain",
		"safeHtml", "urlQueryEscape", "parseDuration", "graphLink", "tableLink", "strvalue", "println"}
	binary := []string{"eq", "ne", "lt", "le", "gt", "ge", "and", "or", "index", "label", "match", "sortByLabel", "print", "slice"}
	formats := []string{"\"%v\"", "\"%d\"", "\"%s\"", "\"%.2f\"", "\"%q\"", "\"%5.1f|%v\"", "\"%x\"", "\"%t\"", "\"%e\"", "\"%g %g\""}
	var expr func(depth int) string
	expr = func(depth int) string {
		if depth > 2 {
			return vals[rng.Intn(len(vals))]
		}
		switch rng.Intn(6) {
		case 0:
			return vals[rng.Intn(len(vals))]
		case 1:
			return "(" + unary[rng.Intn(len(unary))] + " " + expr(depth+1) + ")"
		case 2:
			return "(" + binary[rng.Intn(len(binary))] + " " + expr(depth+1) + " " + expr(depth+1) + ")"
		case 3:
			return "(" + expr(depth+1) + " | " + unary[rng.Intn(len(unary))] + ")"
		case 4:
			return "(printf " + formats[rng.Intn(len(formats))] + " " + expr(depth+1) + ")"
		default:
			return "(" + binary[rng.Intn(len(binary))] + " " + expr(depth+1) + " " + expr(depth+1) + " " + expr(depth+1) + ")"
		}
	}
	action := func() string {
		e := expr(0)
		switch rng.Intn(7) {
		case 0:
			return "{{ if " + e + " }}T{{ else }}F{{ end }}"
		case 1:
			return "{{ range $i, $v := " + e + " }}{{ $i }}={{ $v }};{{ else }}E{{ end }}"
		case 2:
			return "{{ with " + e + " }}<{{ . }}>{{ end }}"
		case 3:
			return "{{ $x := " + e + " }}{{ $x }}"
		default:
			return "{{ " + e + " }}"
		}
	}
	var cases []tmplCase
	for i := 0; i < n; i++ {
		var sb strings.Builder
		for k := 0; k < 1+rng.Intn(3); k++ {
			if rng.Intn(3) == 0 {
				sb.WriteString(" text\n ")
			}
			sb.WriteString(action())
		}
		c := tmplBase(sb.String())
		c.Value = tmplValues[rng.Intn(len(tmplValues))]
		cases = append(cases, c)
	}
	return cases
}

// tmplTyped generates mostly well-typed templates: numbers into the
// numeric helpers and comparisons, strings into the string functions, so
// that most cases expand rather than fail.
func tmplTyped(rng *rand.Rand, n int) []tmplCase {
	pick := func(v []string) string { return v[rng.Intn(len(v))] }
	nums := []string{"$value", ".Value", "1", "0", "-1", "2.5", "1e3", "-0.001", "1e-9", "86400", "\"1.5\"", "\"-7\"", "\"1e6\"",
		"\"NaN\"", "\"+Inf\"", "\"0x1p-2\"", "(query \"up\" | first | value)", "(query \"edge\" | first | value)",
		"(now)", "(parseDuration \"1h30m\")", "(parseDuration \"-90s\")", "(index (query \"edge\") 2 | value)", "(index (query \"edge\") 3 | value)"}
	floats := []string{"$value", "2.5", "-0.001", "1e3", "(query \"up\" | first | value)", "(now)", "(parseDuration \"1h\")", "(query \"edge\" | first | value)"}
	strs := []string{"$labels.job", "$labels.instance", "$labels.path", "$labels.missing", "$externalLabels.cluster", "$externalURL",
		"\"abc\"", "\"Hello World\"", "\"a.b.c:80\"", "\"[::1]:9090\"", "\"ünïcode straße\"", "\"x y/z?&=\"", "\"\""}
	numFns := []string{"humanize", "humanize1024", "humanizeDuration", "humanizePercentage", "humanizeTimestamp", "toTime", "toDuration"}
	strFns := []string{"toUpper", "toLower", "title", "stripPort", "stripDomain", "urlQueryEscape", "graphLink", "tableLink", "html", "js",
		"urlquery", "safeHtml", "len", "print"}
	fmts := []string{"%v", "%s", "%d", "%.2f", "%8.3f", "%-6.1f|", "%e", "%.3e", "%g", "%.4g", "%q", "%x", "%5s|", "%-5s|", "%+d", "%05.1f", "%t", "%T"}
	cmps := []string{"eq", "ne", "lt", "le", "gt", "ge"}
	var str func(d int) string
	var num func(d int) string
	num = func(d int) string {
		if d > 1 || rng.Intn(2) == 0 {
			return pick(nums)
		}
		switch rng.Intn(3) {
		case 0:
			return "(len " + str(d+1) + ")"
		case 1:
			return "(index (query \"up\") " + strconv.Itoa(rng.Intn(3)) + " | value)"
		default:
			return pick(floats)
		}
	}
	str = func(d int) string {
		if d > 1 || rng.Intn(2) == 0 {
			return pick(strs)
		}
		switch rng.Intn(6) {
		case 0:
			return "(" + pick(numFns) + " " + num(d+1) + ")"
		case 1:
			return "(printf \"" + pick(fmts) + "\" " + num(d+1) + ")"
		case 2:
			return "(" + str(d+1) + " | " + pick(strFns[:8]) + ")"
		case 3:
			return "(reReplaceAll \"" + pick([]string{"(\\\\w+)", "[aeiou]", "^(.*?):(\\\\d+)$", "\\\\.", "(?i)A", "x*"}) + "\" \"" + pick([]string{"<$1>", "$2", "_", "${1}z", "$$"}) + "\" " + str(d+1) + ")"
		case 4:
			return "(label \"" + pick([]string{"job", "instance", "nope", "__name__"}) + "\" (index (query \"up\") " + strconv.Itoa(rng.Intn(3)) + "))"
		default:
			return "(printf \"" + pick(fmts) + " " + pick(fmts) + "\" " + str(d+1) + " " + num(d+1) + ")"
		}
	}
	action := func() string {
		switch rng.Intn(8) {
		case 0:
			return "{{ if " + pick(cmps) + " " + pick(floats) + " " + pick(floats) + " }}T{{ else }}F{{ end }}"
		case 1:
			return "{{ if " + pick(cmps) + " " + str(1) + " " + str(1) + " }}T{{ else if not " + str(1) + " }}E{{ else }}F{{ end }}"
		case 2:
			return "{{ range query \"" + pick([]string{"up", "edge", "empty"}) + "\" | sortByLabel \"" + pick([]string{"job", "instance", "k", "x"}) + "\" }}{{ .Labels." + pick([]string{"job", "k", "instance"}) + " }}:{{ " + pick(numFns[:5]) + " .Value }} {{ else }}none{{ end }}"
		case 3:
			return "{{ " + pick(numFns) + " " + num(0) + " }}"
		case 4:
			return "{{ with " + str(0) + " }}<{{ . }}>{{ else }}empty{{ end }}"
		case 5:
			return "{{ $x := " + num(0) + " }}{{ printf \"" + pick(fmts) + "\" $x }}"
		default:
			return "{{ " + str(0) + " }}"
		}
	}
	var cases []tmplCase
	for i := 0; i < n; i++ {
		var sb strings.Builder
		for k := 0; k < 1+rng.Intn(3); k++ {
			if k > 0 {
				sb.WriteString(pick([]string{" ", "\n", " - ", "{{- \" \" -}}"}))
			}
			sb.WriteString(action())
		}
		c := tmplBase(sb.String())
		c.Value = tmplValues[rng.Intn(len(tmplValues))]
		cases = append(cases, c)
	}
	return cases
}

// tmplSoup strings template pieces together at random, valid or not: parse
// errors, and execution errors with their positions.
func tmplSoup(rng *rand.Rand, n int) []tmplCase {
	pieces := []string{"{{", "}}", "{{- ", " -}}", " ", "\n", "x", "$value", "$labels.job", ".Labels", ".Value", ".", "$", "$x", "$x :=",
		"$x =", "|", "(", ")", "\"s\"", "`r`", "'c'", "1", "1.5", "-2", "0x1F", "1e3", "nil", "true", "if", "else", "end", "range",
		"with", "break", "continue", "define \"t\"", "template \"t\"", "block \"b\" .", "humanize", "printf \"%d\"", "print", "len",
		"index", "eq", "lt", "and", "or", "not", "query \"up\"", "first", "value", "label \"job\"", "sortByLabel \"job\"", "toUpper",
		"reReplaceAll \"a\" \"b\"", "bogus", "/* c */", ",", "$i, $v :=", "\"unterminated", "#", "=", "{{ if 1 }}", "{{ end }}", "{{ else }}",
		"{{ range $labels }}", "{{ with $value }}", "{{ $x := 1 }}", "{{ . }}", "{{ $value }}", ".Nope", "$x.y", "(1)", "1.5.x"}
	var cases []tmplCase
	for i := 0; i < n; i++ {
		var sb strings.Builder
		for k := 0; k < rng.Intn(16); k++ {
			sb.WriteString(pieces[rng.Intn(len(pieces))])
		}
		c := tmplBase(sb.String())
		c.Value = tmplValues[rng.Intn(len(tmplValues))]
		cases = append(cases, c)
	}
	return cases
}

func TestTemplateExpansionMatchesPrometheus(t *testing.T) {
	bin := os.Getenv("TEMPLATEDUMP_BIN")
	if bin == "" {
		t.Skip("TEMPLATEDUMP_BIN is not set (scripts/test builds crates/template's templatedump example)")
	}
	hand := tmplHandCases()
	rng := rand.New(rand.NewSource(20261128))
	all := append(hand, tmplTyped(rng, 3000)...)
	all = append(all, tmplRandom(rng, 2000)...)
	all = append(all, tmplSoup(rng, 2000)...)

	var in bytes.Buffer
	enc := json.NewEncoder(&in)
	enc.SetEscapeHTML(false)
	for _, c := range all {
		if err := enc.Encode(c); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command(bin)
	cmd.Stdin = &in
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s: %v\n%s", bin, err, stderr.String())
	}
	lines := strings.Split(strings.TrimRight(string(out), "\n"), "\n")
	if len(lines) != len(all) {
		t.Fatalf("%d results for %d cases", len(lines), len(all))
	}
	bad, errs := 0, 0
	for i, c := range all {
		var fer tmplOutcome
		if err := json.Unmarshal([]byte(lines[i]), &fer); err != nil {
			t.Fatalf("case %d: bad output %q: %v", i, lines[i], err)
		}
		prom := prometheusExpand(c)
		if prom.Err != nil {
			errs++
		}
		if prom.String() != fer.String() {
			bad++
			if bad <= 40 {
				kind := "hand"
				if i >= len(hand) {
					kind = "random"
				}
				t.Errorf("%s case %d: %q (value %s)\n prometheus: %s\n ferrite:    %s", kind, i, c.Text, c.Value, prom, fer)
			}
		}
	}
	t.Logf("%d cases (%d hand-made, %d generated), %d errors in Prometheus, %d mismatches", len(all), len(hand), len(all)-len(hand), errs, bad)
	if bad > 0 {
		t.Fatalf("%d of %d cases differ", bad, len(all))
	}
}
