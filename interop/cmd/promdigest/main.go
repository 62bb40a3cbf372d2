// Command promdigest is the Prometheus side of `ferrite tsdb digest`: it opens
// a data dir with the real Prometheus TSDB, reads every sample back and prints
// `open_s=.. series=.. samples=.. sum=..` as its last line.
//
// Without -repair the dir is opened read-only and left unchanged; with
// -repair it is opened as a Prometheus server opens it, so Prometheus' own WAL
// repair runs (and may modify the dir).
package main

import (
	"flag"
	"fmt"
	"os"

	"ferrite.dev/interop/internal/promtsdb"
)

func main() {
	openOnly := flag.Bool("open-only", false, "only open: print open_s and series")
	repair := flag.Bool("repair", false, "open writable, as the server does (runs WAL repair)")
	flag.Parse()
	if flag.NArg() != 1 {
		fmt.Fprintln(os.Stderr, "usage: promdigest [-open-only] [-repair] DIR")
		os.Exit(2)
	}
	dir := flag.Arg(0)
	var (
		d   promtsdb.Digest
		err error
	)
	if *repair {
		d, err = promtsdb.DigestRepair(dir)
	} else {
		d, err = promtsdb.DigestReadOnly(dir, *openOnly)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "promdigest:", err)
		os.Exit(1)
	}
	fmt.Println(d.String(*openOnly))
}
