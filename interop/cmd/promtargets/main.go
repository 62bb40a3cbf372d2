// Command promtargets is the Prometheus side of Ferrite's scrape target
// cross-check (crates/scrape/examples/targetsdump.rs): it loads each
// prometheus.yml with config.LoadFile and, for every job's static targets
// in order, prints what scrape.PopulateLabels makes of them, one line
// each, after `== FILE`:
//
//	target <name>=<value>,...   the target's labels, sorted
//	dropped                     relabeling dropped it
//	error <message>             it cannot be scraped
//
// or `config error` when the file does not load. Label bytes outside
// `!`..`~`, and `\ " = , { }`, are written `\xHH`.
package main

import (
	"bytes"
	"fmt"
	"log/slog"
	"os"
	"strings"

	"github.com/prometheus/prometheus/config"
	"github.com/prometheus/prometheus/discovery"
	"github.com/prometheus/prometheus/model/labels"
	_ "github.com/prometheus/prometheus/plugins" // every service discovery, as in the server
	"github.com/prometheus/prometheus/scrape"
)

func main() {
	files := os.Args[1:]
	if len(files) == 0 {
		fmt.Fprintln(os.Stderr, "usage: promtargets FILE...")
		os.Exit(2)
	}
	logger := slog.New(slog.NewTextHandler(bytes.NewBuffer(nil), nil))
	var out bytes.Buffer
	for _, f := range files {
		fmt.Fprintf(&out, "== %s\n", f)
		cfg, err := config.LoadFile(f, false, logger)
		if err != nil {
			out.WriteString("config error\n")
			continue
		}
		lb := labels.NewBuilder(labels.EmptyLabels())
		for _, sc := range cfg.ScrapeConfigs {
			for _, sd := range sc.ServiceDiscoveryConfigs {
				static, ok := sd.(discovery.StaticConfig)
				if !ok {
					continue
				}
				for _, g := range static {
					for _, t := range g.Targets {
						ls, err := scrape.PopulateLabels(lb, sc, t, g.Labels)
						switch {
						case err != nil:
							fmt.Fprintf(&out, "error %s\n", err)
						case ls.IsEmpty():
							out.WriteString("dropped\n")
						default:
							var parts []string
							ls.Range(func(l labels.Label) {
								parts = append(parts, escape(l.Name)+"="+escape(l.Value))
							})
							fmt.Fprintf(&out, "target %s\n", strings.Join(parts, ","))
						}
					}
				}
			}
		}
	}
	os.Stdout.Write(out.Bytes())
}

func escape(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < '!' || c > '~' || strings.IndexByte("\\\"=,{}", c) >= 0 {
			fmt.Fprintf(&b, "\\x%02x", c)
		} else {
			b.WriteByte(c)
		}
	}
	return b.String()
}
