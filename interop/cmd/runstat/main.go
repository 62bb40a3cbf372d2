// Command runstat runs a command and prints its wall time and peak RSS as
// JSON on stderr's last line; the command's stdout passes through.
package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"syscall"
	"time"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: runstat CMD [ARGS...]")
		os.Exit(2)
	}
	cmd := exec.Command(os.Args[1], os.Args[2:]...)
	cmd.Stdout = os.Stdout
	cmd.Stderr = os.Stderr
	start := time.Now()
	err := cmd.Run()
	wall := time.Since(start).Seconds()
	code := 0
	if err != nil {
		code = 1
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		}
	}
	var maxRSSKB int64
	if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok && ru != nil {
		maxRSSKB = ru.Maxrss
	}
	out, _ := json.Marshal(map[string]any{"wall_s": wall, "max_rss_kb": maxRSSKB, "exit": code})
	fmt.Fprintln(os.Stderr, string(out))
	os.Exit(code)
}
