// Command promdigest is the Prometheus side of `ferrite tsdb digest`: it opens
// a data dir with the real Prometheus TSDB (v3.16.0), reads every sample back
// and prints `open_s=.. series=.. samples=.. sum=..` as its last line.
//
//	promdigest DIR [--open-only] [--repair]
//
// Without --repair the dir is opened read-only and left unchanged; with
// --repair it is opened as a Prometheus server opens it, so Prometheus' own
// WAL repair runs (and may modify the dir).
package main

import (
	"os"

	"ferrite.dev/interop/internal/promtsdb"
)

func main() {
	os.Exit(promtsdb.DigestMain(os.Args[1:], os.Stdout, os.Stderr))
}
