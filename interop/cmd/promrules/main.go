// Command promrules is the Prometheus side of Ferrite's rule file
// cross-check (crates/rules/examples/rulesdump.rs): it reads each file
// with Prometheus' own rulefmt.ParseFile (strict, UTF-8 name validation,
// the PromQL parser with Prometheus' default options, as the server and
// promtool read rule files) and prints, after `== FILE`, either
//
//	ok
//	group <name> interval_ms=<n> query_offset_ms=<n|nil> limit=<n> labels=<k=v,...>
//	rule record=<name> alert=<name> for_ms=<n> keep_firing_for_ms=<n> labels=<...> annotations=<...>
//	expr <the expression as written>
//	printed <the expression as Prometheus prints it>
//	...
//
// or one line per error, in Prometheus' order:
//
//	error <message>
//
// Strings are escaped as dumpfmt.Escape escapes them; label sets are
// sorted `name=value` pairs joined by commas.
package main

import (
	"bytes"
	"fmt"
	"log/slog"
	"sort"
	"time"

	"ferrite.dev/interop/internal/dumpfmt"
	"github.com/prometheus/common/model"

	"github.com/prometheus/prometheus/model/rulefmt"
	"github.com/prometheus/prometheus/promql/parser"
)

func main() {
	logger := slog.New(slog.NewTextHandler(bytes.NewBuffer(nil), nil))
	p := parser.NewParser(parser.Options{})
	dumpfmt.EachFile("promrules", func(f string, out *bytes.Buffer) {
		rgs, errs := rulefmt.ParseFile(f, false, model.UTF8Validation, p, logger)
		if len(errs) > 0 {
			for _, e := range errs {
				fmt.Fprintf(out, "error %s\n", dumpfmt.Escape(e.Error()))
			}
			return
		}
		out.WriteString("ok\n")
		for _, g := range rgs.Groups {
			offset := "nil"
			if g.QueryOffset != nil {
				offset = fmt.Sprint(ms(*g.QueryOffset))
			}
			fmt.Fprintf(out, "group %s interval_ms=%d query_offset_ms=%s limit=%d labels=%s\n",
				dumpfmt.Escape(g.Name), ms(g.Interval), offset, g.Limit, pairs(g.Labels))
			for _, r := range g.Rules {
				fmt.Fprintf(out, "rule record=%s alert=%s for_ms=%d keep_firing_for_ms=%d labels=%s annotations=%s\n",
					dumpfmt.Escape(r.Record), dumpfmt.Escape(r.Alert), ms(r.For), ms(r.KeepFiringFor),
					pairs(r.Labels), pairs(r.Annotations))
				fmt.Fprintf(out, "expr %s\n", dumpfmt.Escape(r.Expr))
				expr, err := p.ParseExpr(r.Expr)
				if err != nil {
					fmt.Fprintf(out, "printed error %s\n", dumpfmt.Escape(err.Error()))
				} else {
					fmt.Fprintf(out, "printed %s\n", dumpfmt.Escape(expr.String()))
				}
			}
		}
	})
}

func ms(d model.Duration) int64 { return int64(time.Duration(d) / time.Millisecond) }

// pairs prints a map as sorted name=value pairs, "" values included.
func pairs(m map[string]string) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b bytes.Buffer
	for i, k := range keys {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, "%s=%s", dumpfmt.Escape(k), dumpfmt.Escape(m[k]))
	}
	return b.String()
}
