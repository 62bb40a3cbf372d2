package promtsdb

import (
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"strings"
)

// ServerGC sets the garbage collector as a Prometheus v3 server runs it:
// GOGC=75 (config.DefaultGoGCPercentage) unless the GOGC environment variable
// says otherwise. The server applies it before it opens the TSDB.
func ServerGC() {
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(75)
	}
}

const digestUsage = `usage: promdigest DIR [--open-only] [--repair]

Opens DIR with the Prometheus v3.16.0 TSDB, reads every sample back and prints
  open_s=<s> series=<n> samples=<n> sum=<sum of the float values, Go %%.12e>
as its last line (with --open-only: open_s=<s> series=<n>).
Default: read-only (tsdb.OpenDBReadOnly), DIR is not modified.
--repair: open writable as the server does on startup, so Prometheus' own WAL
repair runs (DIR is modified); compactions are disabled.
`

// DigestMain is promdigest's command line; flags may come before or after DIR.
func DigestMain(args []string, stdout, stderr io.Writer) int {
	var dir string
	var openOnly, repair bool
	for _, a := range args {
		switch strings.TrimLeft(a, "-") {
		case "open-only":
			openOnly = true
			continue
		case "repair":
			repair = true
			continue
		case "h", "help":
			fmt.Fprintf(stdout, digestUsage)
			return 0
		}
		if strings.HasPrefix(a, "-") || dir != "" {
			fmt.Fprintf(stderr, digestUsage)
			return 2
		}
		dir = a
	}
	if dir == "" {
		fmt.Fprintf(stderr, digestUsage)
		return 2
	}
	ServerGC()
	var (
		d   Digest
		err error
	)
	if repair {
		d, err = DigestRepair(dir, openOnly)
	} else {
		d, err = DigestReadOnly(dir, openOnly)
	}
	if err != nil {
		fmt.Fprintln(stderr, "promdigest:", err)
		return 1
	}
	fmt.Fprintln(stdout, d.Line(openOnly))
	return 0
}
