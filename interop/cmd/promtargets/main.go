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
	"hash/fnv"
	"log/slog"
	"os"
	"strings"

	"ferrite.dev/interop/internal/dumpfmt"
	"github.com/prometheus/common/model"

	"github.com/prometheus/prometheus/config"
	"github.com/prometheus/prometheus/discovery"
	"github.com/prometheus/prometheus/model/labels"
	_ "github.com/prometheus/prometheus/plugins" // every service discovery, as in the server
	"github.com/prometheus/prometheus/scrape"
	"github.com/prometheus/prometheus/util/osutil"
)

func main() {
	if len(os.Args) == 2 && os.Args[1] == "--fqdn" {
		name, err := osutil.GetFQDN()
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		fmt.Println(name)
		return
	}
	logger := slog.New(slog.NewTextHandler(bytes.NewBuffer(nil), nil))
	dumpfmt.EachFile("promtargets", func(f string, out *bytes.Buffer) {
		cfg, err := config.LoadFile(f, false, logger)
		if err != nil {
			out.WriteString("config error\n")
			return
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
						out.WriteString(target(lb, sc, t, g.Labels) + "\n")
					}
				}
			}
		}
	})
}

// target is the line for one target.
func target(lb *labels.Builder, sc *config.ScrapeConfig, t, group model.LabelSet) string {
	ls, err := scrape.PopulateLabels(lb, sc, t, group)
	switch {
	case err != nil:
		return "error " + err.Error()
	case ls.IsEmpty():
		return "dropped"
	}
	var parts []string
	ls.Range(func(l labels.Label) {
		parts = append(parts, dumpfmt.Escape(l.Name)+"="+dumpfmt.Escape(l.Value))
	})
	// The scrape URL and the hash that places the target in its interval
	// (Target.hash, unexported: FNV-1a of the labels' hash and the URL).
	url := scrape.NewTarget(ls, sc, t, group).URL().String()
	h := fnv.New64a()
	fmt.Fprintf(h, "%016d", ls.Hash())
	h.Write([]byte(url))
	return fmt.Sprintf("target %s url=%s hash=%x", strings.Join(parts, ","), dumpfmt.Escape(url), h.Sum64())
}
