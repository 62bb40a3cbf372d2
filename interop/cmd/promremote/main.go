// Command promremote is the Prometheus side of Ferrite's remote write
// cross-checks. It builds remote write 1.0 and 2.0 request bodies with
// Prometheus' own protobuf types (prompb, prompb/io/prometheus/write/v2),
// snappy-compresses them, and answers them as Prometheus v3.16.0's receiver
// does (storage/remote.NewWriteHandler, both messages accepted, metadata
// appends on; its storage side restated in store.go) over a recording
// storage, printing the answer and the appends in the dump format of
// crates/remote/src/text.rs.
//
//	promremote gen SPEC.json OUTDIR        # OUTDIR/NAME.bin, NAME.headers, NAME.prom.txt
//	promremote random SEED COUNT OUTDIR    # the same for COUNT random requests
//	promremote answer BODY HEADERS         # the dump of Prometheus' answer
//
// SPEC.json is a list of requests; see crates/remote/testdata/README.md.
// HEADERS files hold two lines, "content-type: V" and "content-encoding: V",
// either omitted when the header is absent.
package main

import (
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "promremote:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	if len(args) == 3 && args[0] == "gen" {
		return gen(args[1], args[2])
	}
	if len(args) == 4 && args[0] == "random" {
		seed, err1 := strconv.ParseInt(args[1], 10, 64)
		n, err2 := strconv.Atoi(args[2])
		if err1 != nil || err2 != nil {
			return fmt.Errorf("random: bad SEED or COUNT")
		}
		return write(randomSpecs(seed, n), args[3], false)
	}
	if len(args) == 3 && args[0] == "answer" {
		body, err := os.ReadFile(args[1])
		if err != nil {
			return err
		}
		hb, err := os.ReadFile(args[2])
		if err != nil {
			return err
		}
		ct, ce, err := ParseHeaders(string(hb))
		if err != nil {
			return err
		}
		fmt.Print(Answer(body, ct, ce))
		return nil
	}
	return fmt.Errorf("usage: promremote gen SPEC.json OUTDIR | promremote answer BODY HEADERS")
}

func gen(specPath, outDir string) error {
	data, err := os.ReadFile(specPath)
	if err != nil {
		return err
	}
	var specs []Spec
	if err := json.Unmarshal(data, &specs); err != nil {
		return fmt.Errorf("%s: %w", specPath, err)
	}
	return write(specs, outDir, true)
}

func write(specs []Spec, outDir string, verbose bool) error {
	if err := os.MkdirAll(outDir, 0o755); err != nil {
		return err
	}
	for _, s := range specs {
		body, err := s.Body()
		if err != nil {
			return fmt.Errorf("%s: %w", s.Name, err)
		}
		headers := FormatHeaders(s.ContentType, s.ContentEncoding)
		base := filepath.Join(outDir, s.Name)
		if err := os.WriteFile(base+".bin", body, 0o644); err != nil {
			return err
		}
		if err := os.WriteFile(base+".headers", []byte(headers), 0o644); err != nil {
			return err
		}
		ans := Answer(body, s.ContentType, s.ContentEncoding)
		if err := os.WriteFile(base+".prom.txt", []byte(ans), 0o644); err != nil {
			return err
		}
		if verbose {
			fmt.Printf("%s: %d bytes (%s)\n", s.Name, len(body), hex.EncodeToString(body[:min(len(body), 8)]))
		}
	}
	return nil
}
