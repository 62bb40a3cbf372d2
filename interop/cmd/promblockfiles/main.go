// Command promblockfiles writes and dumps the block files other than the
// index — chunk segments, tombstones, meta.json — with Prometheus' own code
// (v3.16.0), in the text forms `ferrite debug block-files` uses:
//
//	promblockfiles dump-chunks DIR
//	promblockfiles write-chunks SPEC DIR
//	promblockfiles dump-tombstones FILE
//	promblockfiles write-tombstones SPEC FILE
//	promblockfiles dump-meta FILE
//	promblockfiles write-meta SPEC FILE
//
// The forms are described in package blockfiles and in
// crates/block/src/text.rs.
package main

import (
	"os"

	"ferrite.dev/interop/cmd/promblockfiles/blockfiles"
)

func main() {
	os.Exit(blockfiles.Main(os.Args[1:], os.Stdout, os.Stderr))
}
