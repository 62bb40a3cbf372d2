// Command promindexgen is the Prometheus side of `ferrite debug index`.
//
//	promindexgen write SPEC OUT   writes OUT with Prometheus' index.NewWriter
//	promindexgen dump FILE        prints FILE as read by Prometheus' index reader
//
// The spec and dump formats are described in package indexgen and match
// crates/index/src/text.rs.
package main

import (
	"fmt"
	"os"

	"ferrite.dev/interop/cmd/promindexgen/indexgen"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "promindexgen:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	switch {
	case len(args) == 3 && args[0] == "write":
		text, err := os.ReadFile(args[1])
		if err != nil {
			return err
		}
		spec, err := indexgen.ParseSpec(string(text))
		if err != nil {
			return err
		}
		return spec.Write(args[2])
	case len(args) == 2 && args[0] == "dump":
		out, err := indexgen.Dump(args[1])
		if err != nil {
			return err
		}
		_, err = os.Stdout.WriteString(out)
		return err
	default:
		return fmt.Errorf("usage: promindexgen write SPEC OUT | promindexgen dump FILE")
	}
}
