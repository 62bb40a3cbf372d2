// Package dumpfmt holds what the Prometheus sides of the cross-checks
// (interop/cmd/prom*) share with their Ferrite counterparts
// (crates/*/examples/*dump.rs): the byte escaping of label names and
// values, and the one-dump-per-file command line.
package dumpfmt

import (
	"bytes"
	"fmt"
	"os"
	"strings"
)

// Escape writes bytes outside `!`..`~`, and `\ " = , { }`, as `\xHH`, so
// a label prints on one line and splits unambiguously.
func Escape(s string) string {
	var b strings.Builder
	WriteEscaped(&b, s)
	return b.String()
}

// WriteEscaped is Escape into a builder.
func WriteEscaped(w *strings.Builder, s string) {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= '!' && c <= '~' && strings.IndexByte(`\"=,{}`, c) < 0 {
			w.WriteByte(c)
		} else {
			fmt.Fprintf(w, `\x%02x`, c)
		}
	}
}

// EachFile is a command's main: for every file named on the command line,
// `== FILE` and then what dump writes for it; usage (exit 2) without files.
func EachFile(name string, dump func(file string, out *bytes.Buffer)) {
	files := os.Args[1:]
	if len(files) == 0 {
		fmt.Fprintf(os.Stderr, "usage: %s FILE...\n", name)
		os.Exit(2)
	}
	var out bytes.Buffer
	for _, f := range files {
		fmt.Fprintf(&out, "== %s\n", f)
		dump(f, &out)
	}
	os.Stdout.Write(out.Bytes())
}
