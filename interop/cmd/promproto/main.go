// Command promproto is the Prometheus side of Ferrite's protobuf scrape
// parser cross-check (crates/textparse/examples/protodump.rs): it reads
// each file as the scrape loop reads an
// application/vnd.google.protobuf body, with Prometheus' own
// textparse.New (textparse.NewProtobufParser: no type and unit labels),
// once per option set of the scrape loop, and prints every entry the
// parser hands out, one line each, after `== FILE`:
//
//	-- classic                  IgnoreNativeHistograms
//	-- native                   native histograms scraped
//	-- native+classic           and KeepClassicOnClassicAndNativeHistograms
//	-- classic nhcb             the three again, with
//	-- native nhcb              ConvertClassicHistogramsToNHCB
//	-- native+classic nhcb
//	HELP <metric> <text>
//	UNIT <metric> <unit>
//	TYPE <metric> <type>
//	SERIES <series> {<name>=<value>,...} <value bits, 16 hex digits> <timestamp ms or ->
//	HISTOGRAM <series> {<name>=<value>,...} <timestamp ms or -> <histogram record>
//	ERR <message>                          the first error; nothing follows it
//	PANIC <message>                        the parser panicked
//
// <series> is what Series() or Histogram() hands out (the scrape cache's
// key); the labels are Labels()', sorted by name and then value; the
// histogram record is internal/histrecord's. After each sample the
// exemplars are read as the scrape loop reads them (and not printed:
// Ferrite drops them). Names, values, text and series have bytes outside
// `!`..`~`, and `\ " = , { }`, written `\xHH`; a message has bytes
// outside ` `..`~` and `\` written so.
package main

import (
	"bytes"
	"fmt"
	"strings"

	"ferrite.dev/interop/internal/entrydump"
	"ferrite.dev/interop/internal/histrecord"
	"github.com/prometheus/prometheus/model/exemplar"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/textparse"
)

const contentType = "application/vnd.google.protobuf; proto=io.prometheus.client.MetricFamily; encoding=delimited"

// modes are the option sets, in the order both sides print them.
var modes = []struct {
	name string
	opts textparse.ParserOptions
}{
	{"classic", textparse.ParserOptions{IgnoreNativeHistograms: true}},
	{"native", textparse.ParserOptions{}},
	{"native+classic", textparse.ParserOptions{KeepClassicOnClassicAndNativeHistograms: true}},
	{"classic nhcb", textparse.ParserOptions{IgnoreNativeHistograms: true, ConvertClassicHistogramsToNHCB: true}},
	{"native nhcb", textparse.ParserOptions{ConvertClassicHistogramsToNHCB: true}},
	{"native+classic nhcb", textparse.ParserOptions{KeepClassicOnClassicAndNativeHistograms: true, ConvertClassicHistogramsToNHCB: true}},
}

func main() {
	entrydump.EachInput("promproto", func(b []byte, out *bytes.Buffer) {
		for _, m := range modes {
			out.WriteString("-- " + m.name + "\n")
			out.WriteString(Dump(b, m.opts))
		}
	})
}

// Dump is the text described in the package doc for one input and one
// option set.
func Dump(b []byte, opts textparse.ParserOptions) string {
	open := func() (textparse.Parser, error) {
		return textparse.New(b, contentType, labels.NewSymbolTable(), opts)
	}
	var lset labels.Labels
	var e exemplar.Exemplar
	return entrydump.Walk(message, open, func(w *strings.Builder, p textparse.Parser, et textparse.Entry) bool {
		switch et {
		case textparse.EntrySeries:
			series, ts, v := p.Series()
			p.Labels(&lset)
			entrydump.WriteSeriesHead(w, "SERIES", series, lset)
			w.WriteString(entrydump.Value(v, ts))
		case textparse.EntryHistogram:
			series, ts, h, fh := p.Histogram()
			p.Labels(&lset)
			entrydump.WriteSeriesHead(w, "HISTOGRAM", series, lset)
			w.WriteString(" " + entrydump.Timestamp(ts) + " ")
			switch {
			case h != nil:
				w.WriteString(histrecord.Int(h))
			case fh != nil:
				w.WriteString(histrecord.Float(fh))
			default:
				w.WriteString("nil")
			}
			w.WriteString("\n")
		default:
			return false
		}
		// The scrape loop reads the exemplars of every sample.
		for p.Exemplar(&e) {
			e = exemplar.Exemplar{}
		}
		return true
	})
}

// message writes bytes outside ` `..`~`, and `\`, as `\xHH`.
func message(s string) string {
	var w strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= ' ' && c <= '~' && c != '\\' {
			w.WriteByte(c)
		} else {
			fmt.Fprintf(&w, `\x%02x`, c)
		}
	}
	return w.String()
}
