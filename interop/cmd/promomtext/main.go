// Command promomtext is the Prometheus side of Ferrite's OpenMetrics scrape
// parser cross-check (crates/textparse/examples/omtextdump.rs): it reads
// each file as the scrape loop reads an application/openmetrics-text body,
// with Prometheus' own textparse.New and the scrape loop's default options
// (textparse.NewOpenMetricsParser: _created series kept, no type and unit
// labels, no NHCB conversion), and prints every entry the parser hands
// out, one line each, after `== FILE`:
//
//	HELP <metric> <text>                   text unescaped as Help() gives it
//	TYPE <metric> <type>
//	UNIT <metric> <unit>
//	SERIES <series> {<name>=<value>,...} <value bits, 16 hex digits> <timestamp ms or ->
//	EXEMPLAR {<name>=<value>,...} <value bits> <timestamp ms or ->   the series' exemplar
//	ERR <message>                          the first error; nothing follows it
//	PANIC <message>                        the parser panicked
//
// <series> is Series()' raw bytes; the labels are Labels()' (and the
// exemplar's Exemplar()'s), sorted by name and then value (Prometheus
// sorts by name only, leaving the order of a repeated name open). Bytes of
// names, values, text and series outside `!`..`~`, and `\ " = , { }`, are
// written `\xHH`; a message has its newlines written `\n`.
package main

import (
	"bytes"
	"strings"

	"ferrite.dev/interop/internal/entrydump"
	"github.com/prometheus/prometheus/model/exemplar"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/textparse"
)

func main() {
	entrydump.EachInput("promomtext", func(b []byte, out *bytes.Buffer) {
		out.WriteString(Dump(b))
	})
}

// Dump is the text described in the package doc for one input.
func Dump(b []byte) string {
	// The scrape loop's defaults (scrape/scrape.go, scrapeLoopAppender.append).
	open := func() (textparse.Parser, error) {
		return textparse.New(b, "application/openmetrics-text;version=1.0.0", labels.NewSymbolTable(), textparse.ParserOptions{
			IgnoreNativeHistograms: true,
		})
	}
	var lset labels.Labels
	var e exemplar.Exemplar
	return entrydump.Walk(entrydump.OneLine, open, func(w *strings.Builder, p textparse.Parser, et textparse.Entry) bool {
		if et != textparse.EntrySeries {
			return false
		}
		series, ts, v := p.Series()
		p.Labels(&lset)
		entrydump.WriteSeriesHead(w, "SERIES", series, lset)
		w.WriteString(entrydump.Value(v, ts))
		for p.Exemplar(&e) {
			w.WriteString("EXEMPLAR ")
			entrydump.WriteLabels(w, e.Labels)
			var ts *int64
			if e.HasTs {
				ts = &e.Ts
			}
			w.WriteString(entrydump.Value(e.Value, ts))
			e = exemplar.Exemplar{}
		}
		return true
	})
}
