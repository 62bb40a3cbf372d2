// Command promplan asks Prometheus' own TSDB code (v3.16.0) which blocks of a
// data dir it would compact next and which a reload would delete, in the
// output forms of `ferrite debug plan`:
//
//	promplan compact DIR [--ranges MS,MS,...] [--no-overlapping]
//	promplan retention DIR [--time-ms N] [--size-bytes N]
//
// `compact` runs tsdb.LeveledCompactor.Plan(DIR) (block dirs need only a
// meta.json) and prints the planned block dir names, one per line.
// `retention` opens DIR with tsdb.Open (so DIR is modified: retention
// deletes blocks, and a WAL is created) with those limits and prints the
// ULIDs of the block dirs that are gone afterwards, sorted. See package
// promplan.
package main

import (
	"os"

	"ferrite.dev/interop/cmd/promplan/promplan"
)

func main() {
	os.Exit(promplan.Main(os.Args[1:], os.Stdout, os.Stderr))
}
