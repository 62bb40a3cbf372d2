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
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"sort"
	"strings"

	"ferrite.dev/interop/internal/dumpfmt"
	"github.com/prometheus/prometheus/model/exemplar"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/textparse"
)

func main() {
	dumpfmt.EachFile("promomtext", func(f string, out *bytes.Buffer) {
		b, err := os.ReadFile(f)
		if err != nil {
			fmt.Fprintf(os.Stderr, "promomtext: %v\n", err)
			os.Exit(2)
		}
		out.WriteString(Dump(b))
	})
}

// Dump is the text described in the package doc for one input.
func Dump(b []byte) (res string) {
	var w strings.Builder
	defer func() {
		if r := recover(); r != nil {
			res = w.String() + "PANIC " + oneLine(fmt.Sprint(r)) + "\n"
		}
	}()
	// The scrape loop's defaults (scrape/scrape.go, scrapeLoopAppender.append).
	p, err := textparse.New(b, "application/openmetrics-text;version=1.0.0", labels.NewSymbolTable(), textparse.ParserOptions{
		IgnoreNativeHistograms: true,
	})
	if err != nil {
		return "ERR textparse.New: " + oneLine(err.Error()) + "\n"
	}
	var lset labels.Labels
	var e exemplar.Exemplar
	for {
		et, err := p.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			w.WriteString("ERR " + oneLine(err.Error()) + "\n")
			break
		}
		switch et {
		case textparse.EntryHelp:
			m, text := p.Help()
			w.WriteString("HELP " + dumpfmt.Escape(string(m)) + " " + dumpfmt.Escape(string(text)) + "\n")
		case textparse.EntryType:
			m, typ := p.Type()
			w.WriteString("TYPE " + dumpfmt.Escape(string(m)) + " " + string(typ) + "\n")
		case textparse.EntryUnit:
			m, unit := p.Unit()
			w.WriteString("UNIT " + dumpfmt.Escape(string(m)) + " " + dumpfmt.Escape(string(unit)) + "\n")
		case textparse.EntrySeries:
			series, ts, v := p.Series()
			p.Labels(&lset)
			w.WriteString("SERIES " + dumpfmt.Escape(string(series)) + " ")
			writeLabels(&w, lset)
			fmt.Fprintf(&w, " %016x %s\n", math.Float64bits(v), timestamp(ts != nil, ts))
			for p.Exemplar(&e) {
				w.WriteString("EXEMPLAR ")
				writeLabels(&w, e.Labels)
				fmt.Fprintf(&w, " %016x %s\n", math.Float64bits(e.Value), timestamp(e.HasTs, &e.Ts))
				e = exemplar.Exemplar{}
			}
		default:
			w.WriteString(fmt.Sprintf("ENTRY %d\n", et))
		}
	}
	return w.String()
}

// writeLabels writes `{n=v,...}`, sorted by name and then value.
func writeLabels(w *strings.Builder, lset labels.Labels) {
	var ls []labels.Label
	lset.Range(func(l labels.Label) { ls = append(ls, l) })
	sort.SliceStable(ls, func(i, j int) bool {
		if ls[i].Name != ls[j].Name {
			return ls[i].Name < ls[j].Name
		}
		return ls[i].Value < ls[j].Value
	})
	w.WriteByte('{')
	for i, l := range ls {
		if i > 0 {
			w.WriteByte(',')
		}
		dumpfmt.WriteEscaped(w, l.Name)
		w.WriteByte('=')
		dumpfmt.WriteEscaped(w, l.Value)
	}
	w.WriteByte('}')
}

func timestamp(has bool, ts *int64) string {
	if !has {
		return "-"
	}
	return fmt.Sprint(*ts)
}

func oneLine(s string) string {
	return strings.ReplaceAll(s, "\n", `\n`)
}
