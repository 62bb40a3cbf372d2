// Command runstat runs a command and reports its wall time and peak resident
// set size (ru_maxrss of wait4) as one JSON line:
//
//	runstat [-o FILE] CMD [ARGS...]
//	{"cmd":[...],"exit":0,"wall_s":1.234,"max_rss_kb":153600,"max_rss_mb":150.0}
//
// The command's stdout and stderr pass through; the JSON goes to FILE, or is
// the last line on stderr. runstat itself stays tiny on purpose: on Linux a
// child's ru_maxrss starts from the RSS of the process that started it (the
// exec'ing copy shares its parent's memory until exec), so measure from a
// small parent.
package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"syscall"
	"time"
)

type report struct {
	Cmd      []string `json:"cmd"`
	Exit     int      `json:"exit"`
	Signal   string   `json:"signal,omitempty"`
	WallS    float64  `json:"wall_s"`
	MaxRSSKB int64    `json:"max_rss_kb"`
	MaxRSSMB float64  `json:"max_rss_mb"`
	UserS    float64  `json:"user_s"`
	SysS     float64  `json:"sys_s"`
}

func main() {
	args := os.Args[1:]
	out := ""
	if len(args) >= 2 && args[0] == "-o" {
		out, args = args[1], args[2:]
	}
	if len(args) > 0 && args[0] == "--" {
		args = args[1:]
	}
	if len(args) == 0 {
		fmt.Fprintln(os.Stderr, "usage: runstat [-o FILE] CMD [ARGS...]")
		os.Exit(2)
	}
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Stdin = os.Stdin
	cmd.Stdout = os.Stdout // *os.File: inherited, no copying goroutines
	cmd.Stderr = os.Stderr
	signal.Ignore(syscall.SIGINT, syscall.SIGQUIT) // the child gets them from the terminal
	start := time.Now()
	if err := cmd.Start(); err != nil {
		fmt.Fprintln(os.Stderr, "runstat:", err)
		os.Exit(127)
	}
	var ws syscall.WaitStatus
	var ru syscall.Rusage
	for {
		_, err := syscall.Wait4(cmd.Process.Pid, &ws, 0, &ru)
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "runstat: wait4:", err)
			os.Exit(127)
		}
		break
	}
	r := report{
		Cmd:      args,
		WallS:    time.Since(start).Seconds(),
		MaxRSSKB: ru.Maxrss, // kilobytes on Linux
		MaxRSSMB: float64(ru.Maxrss) / 1024,
		UserS:    time.Duration(ru.Utime.Nano()).Seconds(),
		SysS:     time.Duration(ru.Stime.Nano()).Seconds(),
	}
	switch {
	case ws.Exited():
		r.Exit = ws.ExitStatus()
	case ws.Signaled():
		r.Exit = 128 + int(ws.Signal())
		r.Signal = ws.Signal().String()
	}
	b, _ := json.Marshal(r)
	if out != "" {
		if err := os.WriteFile(out, append(b, '\n'), 0o644); err != nil {
			fmt.Fprintln(os.Stderr, "runstat:", err)
			os.Exit(127)
		}
	} else {
		fmt.Fprintln(os.Stderr, string(b))
	}
	os.Exit(r.Exit)
}
