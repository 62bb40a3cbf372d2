// Command promtextparse is the Prometheus side of Ferrite's OpenMetrics
// parser cross-check (crates/textparse/examples/omdump.rs): it reads each
// file as `promtool tsdb create-blocks-from openmetrics` does, with
// Prometheus' own textparse.NewOpenMetricsParser, and prints what promtool
// would append, or where it would stop:
//
//	promtextparse FILE...
//
//	ok <samples>
//	<timestamp ms> <value bits, 16 hex digits> {name=value,...}   (file order)
//
// or `error line=<n> <reason>`. Label bytes outside `!`..`~`, and
// `\ " = , { }`, are written `\xHH`. With several files each dump follows
// `== FILE`.
//
// promtool's rules, mirrored: pass 1 parses everything and stops at a parse
// error or a sample without a timestamp; pass 2 takes each sample's labels
// as the TSDB appender does (labels.Builder drops empty values; an empty
// set and a duplicate name are errors). promtool meets pass-2 errors block
// range by block range; this reports the first in file order.
//
// Prometheus' errors carry no line number. The line is derived from the
// parser's position (read with reflect from its unexported fields: the
// start of the last token, or of the entry for whole-sample errors); for an
// error at the end of the input, the last line. A parser panic is reported
// as `error line=0 panic: ...`.
package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"reflect"
	"strconv"
	"strings"

	"ferrite.dev/interop/internal/dumpfmt"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/textparse"
)

func main() {
	files := os.Args[1:]
	if len(files) == 0 {
		fmt.Fprintln(os.Stderr, "usage: promtextparse FILE...")
		os.Exit(2)
	}
	var out bytes.Buffer
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			fmt.Fprintf(os.Stderr, "promtextparse: %v\n", err)
			os.Exit(2)
		}
		if len(files) > 1 {
			fmt.Fprintf(&out, "== %s\n", f)
		}
		out.WriteString(Dump(b))
	}
	os.Stdout.Write(out.Bytes())
}

// Dump is the text described in the package doc for one input.
func Dump(b []byte) (res string) {
	defer func() {
		if r := recover(); r != nil {
			res = fmt.Sprintf("error line=0 panic: %s\n", oneLine(fmt.Sprint(r)))
		}
	}()
	// Pass 1: getMinAndMaxTimestamps.
	p := textparse.NewOpenMetricsParser(b, nil)
	for {
		e, err := p.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return fmt.Sprintf("error line=%d %s\n", errLine(p, b, err), oneLine(err.Error()))
		}
		if e != textparse.EntrySeries {
			continue
		}
		if _, ts, _ := p.Series(); ts == nil {
			return fmt.Sprintf("error line=%d expected timestamp for series got none\n", entryLine(p, b))
		}
	}
	// Pass 2: createBlocks' appends.
	var body strings.Builder
	n := 0
	p = textparse.NewOpenMetricsParser(b, labels.NewSymbolTable())
	lb := labels.NewBuilder(labels.EmptyLabels())
	for {
		e, err := p.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return fmt.Sprintf("error line=%d pass 2: %s\n", errLine(p, b, err), oneLine(err.Error()))
		}
		if e != textparse.EntrySeries {
			continue
		}
		_, ts, v := p.Series()
		var l labels.Labels
		p.Labels(&l)
		lb.Reset(l)
		lset := lb.Labels().WithoutEmpty()
		if lset.IsEmpty() {
			return fmt.Sprintf("error line=%d empty labelset\n", entryLine(p, b))
		}
		if name, dup := lset.HasDuplicateLabelNames(); dup {
			return fmt.Sprintf("error line=%d label name %q is not unique\n", entryLine(p, b), name)
		}
		fmt.Fprintf(&body, "%d %016x {", *ts, math.Float64bits(v))
		i := 0
		lset.Range(func(l labels.Label) {
			if i > 0 {
				body.WriteByte(',')
			}
			i++
			dumpfmt.WriteEscaped(&body, l.Name)
			body.WriteByte('=')
			dumpfmt.WriteEscaped(&body, l.Value)
		})
		body.WriteString("}\n")
		n++
	}
	return fmt.Sprintf("ok %d\n", n) + body.String()
}

func oneLine(s string) string {
	q := strconv.Quote(s)
	return q[1 : len(q)-1]
}

// parserField reads an int field of the OpenMetrics parser (path "start")
// or of its lexer (path "l.start", "l.i").
func parserField(p textparse.Parser, path ...string) int {
	v := reflect.ValueOf(p).Elem()
	for i, name := range path {
		v = v.FieldByName(name)
		if i < len(path)-1 {
			v = v.Elem()
		}
	}
	return int(v.Int())
}

func lineOf(b []byte, off int) int {
	if off > len(b) {
		off = len(b)
	}
	if off < 0 {
		off = 0
	}
	return 1 + bytes.Count(b[:off], []byte{'\n'})
}

// entryLine is the line the current entry starts on.
func entryLine(p textparse.Parser, b []byte) int {
	return lineOf(b, parserField(p, "start"))
}

// errLine places a parse error: at the end of the input when the lexer ran
// out of it (its token start is stale then), else at the last token's start.
func errLine(p textparse.Parser, b []byte, err error) int {
	msg := err.Error()
	atEnd := parserField(p, "l", "i") >= len(b)
	switch {
	case strings.Contains(msg, "data does not end with # EOF"),
		strings.Contains(msg, `("EOF")`),
		strings.HasPrefix(msg, "expected text in") && atEnd:
		return lineOf(b, len(b))
	}
	return lineOf(b, parserField(p, "l", "start"))
}
