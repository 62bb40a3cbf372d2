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
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"sort"
	"strings"

	"ferrite.dev/interop/internal/dumpfmt"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/textparse"
)

func main() {
	dumpfmt.EachFile("prompromtext", func(f string, out *bytes.Buffer) {
		b, err := os.ReadFile(f)
		if err != nil {
			fmt.Fprintf(os.Stderr, "prompromtext: %v\n", err)
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
	p := textparse.NewPromParser(b, labels.NewSymbolTable(), false)
	var lset labels.Labels
	for {
		e, err := p.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			w.WriteString("ERR " + oneLine(err.Error()) + "\n")
			break
		}
		switch e {
		case textparse.EntryHelp:
			m, text := p.Help()
			w.WriteString("HELP " + dumpfmt.Escape(string(m)) + " " + dumpfmt.Escape(string(text)) + "\n")
		case textparse.EntryType:
			m, typ := p.Type()
			w.WriteString("TYPE " + dumpfmt.Escape(string(m)) + " " + string(typ) + "\n")
		case textparse.EntryComment:
			w.WriteString("COMMENT " + dumpfmt.Escape(string(p.Comment())) + "\n")
		case textparse.EntrySeries:
			series, ts, v := p.Series()
			p.Labels(&lset)
			w.WriteString("SERIES " + dumpfmt.Escape(string(series)) + " {")
			var ls []labels.Label
			lset.Range(func(l labels.Label) { ls = append(ls, l) })
			sort.SliceStable(ls, func(i, j int) bool {
				if ls[i].Name != ls[j].Name {
					return ls[i].Name < ls[j].Name
				}
				return ls[i].Value < ls[j].Value
			})
			for i, l := range ls {
				if i > 0 {
					w.WriteByte(',')
				}
				dumpfmt.WriteEscaped(&w, l.Name)
				w.WriteByte('=')
				dumpfmt.WriteEscaped(&w, l.Value)
			}
			fmt.Fprintf(&w, "} %016x ", math.Float64bits(v))
			if ts != nil {
				fmt.Fprintf(&w, "%d\n", *ts)
			} else {
				w.WriteString("-\n")
			}
		default:
			w.WriteString(fmt.Sprintf("ENTRY %d\n", e))
		}
	}
	return w.String()
}

func oneLine(s string) string {
	return strings.ReplaceAll(s, "\n", `\n`)
}
