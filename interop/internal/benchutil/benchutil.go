// Package benchutil holds what the side-by-side benchmark drivers
// (cmd/replaybench, cmd/blockbench) share: page-cache warming, machine
// facts, small formatting helpers and fatal errors.
package benchutil

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// Name prefixes fatal messages.
var Name = "bench"

// Ratio formats a/b as "2.5x", "-" when b is 0.
func Ratio(a, b float64) string {
	if b == 0 {
		return "-"
	}
	return fmt.Sprintf("%.1fx", a/b)
}

// Warm reads every file of dir once, so runs start from a warm page cache.
func Warm(dir string) {
	filepath.Walk(dir, func(p string, info os.FileInfo, err error) error {
		if err == nil && info.Mode().IsRegular() {
			if f, err := os.Open(p); err == nil {
				io.Copy(io.Discard, f)
				f.Close()
			}
		}
		return nil
	})
}

// MemTotal is the machine's RAM as "24 GiB RAM".
func MemTotal() string {
	b, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return "? GiB"
	}
	for _, l := range strings.Split(string(b), "\n") {
		f := strings.Fields(l)
		if len(f) >= 2 && f[0] == "MemTotal:" {
			kb, _ := strconv.ParseFloat(f[1], 64)
			return fmt.Sprintf("%.0f GiB RAM", kb/(1<<20))
		}
	}
	return "? GiB"
}

// ContainsField reports whether the comma-separated list holds name.
func ContainsField(list, name string) bool {
	for _, f := range strings.Split(list, ",") {
		if strings.TrimSpace(f) == name {
			return true
		}
	}
	return false
}

// Abs is filepath.Abs, fatal on error.
func Abs(p string) string {
	a, err := filepath.Abs(p)
	Must(err)
	return a
}

// LastLines keeps the last n lines of s.
func LastLines(s string, n int) string {
	l := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(l) > n {
		l = l[len(l)-n:]
	}
	return strings.Join(l, "\n")
}

// Must exits on a non-nil error.
func Must(err error) {
	if err != nil {
		Fatalf("%v", err)
	}
}

// Fatalf prints "<Name>: message" and exits 1.
func Fatalf(format string, a ...any) {
	fmt.Fprintf(os.Stderr, Name+": "+format+"\n", a...)
	os.Exit(1)
}
