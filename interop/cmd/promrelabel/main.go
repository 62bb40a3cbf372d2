// Command promrelabel is the Prometheus side of Ferrite's relabeling
// cross-check (crates/config/examples/relabeldump.rs): it reads each case
// file with Prometheus' own model/relabel (go.yaml.in/yaml/v2, strict, as
// config files are read), validates the rules and runs them over the
// labels:
//
//	promrelabel FILE...
//
// A case file:
//
//	scheme: utf8            # or legacy: the name validation scheme
//	labels: {a: "1", b: x}  # the label set to relabel
//	configs: [...]          # relabel_configs
//
// Each file's result follows `== FILE`, on one line:
//
//	keep <name>=<value>,...   the relabeled labels, sorted
//	drop                      a rule dropped them
//	invalid <message>         a rule failed Validate (Prometheus' message)
//	unparsable                the YAML did not decode (messages differ)
//
// Label bytes outside `!`..`~`, and `\ " = , { }`, are written `\xHH`.
package main

import (
	"bytes"
	"fmt"
	"os"
	"strings"

	"ferrite.dev/interop/internal/dumpfmt"
	"github.com/prometheus/common/model"
	"go.yaml.in/yaml/v2"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/relabel"
)

type caseFile struct {
	Scheme  string            `yaml:"scheme"`
	Labels  map[string]string `yaml:"labels"`
	Configs []*relabel.Config `yaml:"configs"`
}

func main() {
	dumpfmt.EachFile("promrelabel", func(f string, out *bytes.Buffer) {
		fmt.Fprintf(out, "%s\n", result(f))
	})
}

func result(file string) string {
	text, err := os.ReadFile(file)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	var c caseFile
	if err := yaml.UnmarshalStrict(text, &c); err != nil {
		return "unparsable"
	}
	scheme := model.UTF8Validation
	if c.Scheme == "legacy" {
		scheme = model.LegacyValidation
	}
	for _, cfg := range c.Configs {
		if cfg == nil {
			return "invalid null rule"
		}
		if err := cfg.Validate(scheme); err != nil {
			return "invalid " + err.Error()
		}
	}
	lb := labels.NewBuilder(labels.FromMap(c.Labels))
	if !relabel.ProcessBuilder(lb, c.Configs...) {
		return "drop"
	}
	var parts []string
	lb.Labels().Range(func(l labels.Label) {
		parts = append(parts, dumpfmt.Escape(l.Name)+"="+dumpfmt.Escape(l.Value))
	})
	return "keep " + strings.Join(parts, ",")
}
