// Package entrydump holds what the Prometheus sides of the scrape parser
// cross-checks (interop/cmd/prompromtext, promomtext, promproto) share:
// the walk over a textparse.Parser's entries and the pieces of the lines
// they print, in the form of crates/textparse/examples/dump_entries.
package entrydump

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

// EachInput is a command's main: for every file named on the command
// line, `== FILE` and then what dump writes for its bytes; exit 2 where one
// cannot be read.
func EachInput(name string, dump func(b []byte, out *bytes.Buffer)) {
	dumpfmt.EachFile(name, func(f string, out *bytes.Buffer) {
		b, err := os.ReadFile(f)
		if err != nil {
			fmt.Fprintf(os.Stderr, "%s: %v\n", name, err)
			os.Exit(2)
		}
		dump(b, out)
	})
}

// Walk is the dump of the parser open makes (`ERR textparse.New:
// <message>` where it fails): its entries until the end of the input or
// the first error (`ERR <message>`, the message written by msg), HELP,
// TYPE and UNIT lines by Walk itself, the others by entry, which reports
// whether it knows the entry (`ENTRY <n>` where not). A panic ends the
// dump with `PANIC <message>`.
func Walk(msg func(string) string, open func() (textparse.Parser, error),
	entry func(w *strings.Builder, p textparse.Parser, et textparse.Entry) bool,
) (res string) {
	var w strings.Builder
	defer func() {
		if r := recover(); r != nil {
			res = w.String() + "PANIC " + msg(fmt.Sprint(r)) + "\n"
		}
	}()
	p, err := open()
	if err != nil {
		return "ERR textparse.New: " + msg(err.Error()) + "\n"
	}
	for {
		et, err := p.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			w.WriteString("ERR " + msg(err.Error()) + "\n")
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
		default:
			if !entry(&w, p, et) {
				w.WriteString(fmt.Sprintf("ENTRY %d\n", et))
			}
		}
	}
	return w.String()
}

// WriteSeriesHead writes `<tag> <series> {<name>=<value>,...}`: the series
// escaped, the labels sorted.
func WriteSeriesHead(w *strings.Builder, tag string, series []byte, lset labels.Labels) {
	w.WriteString(tag + " " + dumpfmt.Escape(string(series)) + " ")
	WriteLabels(w, lset)
}

// WriteLabels writes `{n=v,...}`, sorted by name and then value
// (Prometheus sorts by name only, leaving the order of a repeated name
// open).
func WriteLabels(w *strings.Builder, lset labels.Labels) {
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

// Value is ` <value bits, 16 hex digits> <timestamp ms or ->` and a newline.
func Value(v float64, ts *int64) string {
	return fmt.Sprintf(" %016x %s\n", math.Float64bits(v), Timestamp(ts))
}

// Timestamp is a timestamp in milliseconds, or `-` for none.
func Timestamp(ts *int64) string {
	if ts == nil {
		return "-"
	}
	return fmt.Sprint(*ts)
}

// OneLine is s with its newlines written `\n`.
func OneLine(s string) string {
	return strings.ReplaceAll(s, "\n", `\n`)
}
