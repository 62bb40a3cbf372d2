// Command prompromtext is the Prometheus side of Ferrite's text format
// (0.0.4) parser cross-check (crates/textparse/examples/promtextdump.rs): it
// reads each file with Prometheus' own textparse.NewPromParser, as the
// scrape loop does for a text/plain body, and prints every entry the
// parser hands out, one line each, after `== FILE`:
//
//	HELP <metric> <text>                   text unescaped as Help() gives it
//	TYPE <metric> <type>                   counter, gauge, histogram, summary or unknown
//	COMMENT <text>                         the whole `#` line
//	SERIES <series> {<name>=<value>,...} <value bits, 16 hex digits> <timestamp ms or ->
//	ERR <message>                          the first error; nothing follows it
//	PANIC <message>                        the parser panicked
//
// <series> is Series()' raw bytes; the labels are Labels()', sorted by name
// and then value (Prometheus sorts by name only, leaving the order of a
// repeated name open). Bytes of names, values, text and series outside
// `!`..`~`, and `\ " = , { }`, are written `\xHH`; a message has its
// newlines written `\n`.
package main

import (
	"bytes"
	"strings"

	"ferrite.dev/interop/internal/dumpfmt"
	"ferrite.dev/interop/internal/entrydump"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/textparse"
)

func main() {
	entrydump.EachInput("prompromtext", func(b []byte, out *bytes.Buffer) {
		out.WriteString(Dump(b))
	})
}

// Dump is the text described in the package doc for one input.
func Dump(b []byte) string {
	var lset labels.Labels
	open := func() (textparse.Parser, error) {
		return textparse.NewPromParser(b, labels.NewSymbolTable(), false), nil
	}
	return entrydump.Walk(entrydump.OneLine, open, func(w *strings.Builder, p textparse.Parser, e textparse.Entry) bool {
		switch e {
		case textparse.EntryComment:
			w.WriteString("COMMENT " + dumpfmt.Escape(string(p.Comment())) + "\n")
		case textparse.EntrySeries:
			series, ts, v := p.Series()
			p.Labels(&lset)
			entrydump.WriteSeriesHead(w, "SERIES", series, lset)
			w.WriteString(entrydump.Value(v, ts))
		default:
			return false
		}
		return true
	})
}
