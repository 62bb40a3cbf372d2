package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// The servers under test, as cmd/serverbench runs them (a copy of its
// server.go, cut down to what scraping needs).

// tool is one server under test.
type tool struct {
	name    string // prometheus, ferrite
	title   string
	bin     string
	version string
}

// server is a running server process.
type server struct {
	tool *tool
	cmd  *exec.Cmd
	dir  string // fresh data dir
	addr string // 127.0.0.1:port
	log  string // stdout+stderr file
	exit chan error
}

var apiClient = &http.Client{Timeout: 5 * time.Minute}

func freePort() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return l.Addr().String(), nil
}

// start runs the tool with the configuration file cfg on a fresh data dir
// under scratch and waits until it is ready.
func start(t *tool, scratch, cfg string) (*server, error) {
	dir := filepath.Join(scratch, t.name+"-data")
	if err := os.RemoveAll(dir); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	addr, err := freePort()
	if err != nil {
		return nil, err
	}
	s := &server{tool: t, dir: dir, addr: addr, log: filepath.Join(scratch, t.name+".log"), exit: make(chan error, 1)}
	var args []string
	switch t.name {
	case "prometheus", "ferrite":
		args = []string{"--config.file=" + cfg, "--storage.tsdb.path=" + dir, "--web.listen-address=" + s.addr}
	default:
		return nil, fmt.Errorf("unknown tool %s", t.name)
	}
	lf, err := os.Create(s.log)
	if err != nil {
		return nil, err
	}
	s.cmd = exec.Command(t.bin, args...)
	s.cmd.Dir = scratch
	s.cmd.Stdout = lf
	s.cmd.Stderr = lf
	if err := s.cmd.Start(); err != nil {
		lf.Close()
		return nil, fmt.Errorf("starting %s: %w", t.name, err)
	}
	go func() { s.exit <- s.cmd.Wait(); lf.Close() }()
	deadline := time.Now().Add(2 * time.Minute)
	for {
		if err := s.exited(); err != nil {
			return nil, err
		}
		resp, err := http.Get("http://" + s.addr + "/-/ready")
		if err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return s, nil
			}
		}
		if time.Now().After(deadline) {
			s.stop()
			return nil, fmt.Errorf("%s not ready after 2 minutes; log %s", t.name, s.log)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// exited is an error once the process has exited (nil while it runs).
func (s *server) exited() error {
	select {
	case err := <-s.exit:
		s.exit <- err // keep it for stop
		return fmt.Errorf("%s exited (%v); log %s:\n%s", s.tool.name, err, s.log, lastLines(readFile(s.log), 20))
	default:
		return nil
	}
}

// stop sends SIGTERM, waits up to 2 minutes, then kills.
func (s *server) stop() {
	if s.cmd.Process == nil {
		return
	}
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-s.exit:
	case <-time.After(2 * time.Minute):
		_ = s.cmd.Process.Kill()
		<-s.exit
	}
}

// memMB reads VmRSS and VmHWM of the server process, in MB (2^20 bytes).
func (s *server) memMB() (rss, hwm float64, err error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", s.cmd.Process.Pid))
	if err != nil {
		return 0, 0, err
	}
	for _, l := range strings.Split(string(b), "\n") {
		f := strings.Fields(l)
		if len(f) >= 2 {
			kb, _ := strconv.ParseFloat(f[1], 64)
			switch f[0] {
			case "VmRSS:":
				rss = kb / 1024
			case "VmHWM:":
				hwm = kb / 1024
			}
		}
	}
	return rss, hwm, nil
}

// cpuS is the server process' user+system CPU seconds so far.
func (s *server) cpuS() (float64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", s.cmd.Process.Pid))
	if err != nil {
		return 0, err
	}
	str := string(b)
	i := strings.LastIndexByte(str, ')')
	if i < 0 || i+2 > len(str) {
		return 0, fmt.Errorf("unexpected /proc/%d/stat: %.100q", s.cmd.Process.Pid, str)
	}
	f := strings.Fields(str[i+2:])
	// fields after the command: state(0) ... utime(11) stime(12), in clock ticks (100/s on Linux)
	if len(f) < 13 {
		return 0, fmt.Errorf("unexpected /proc/%d/stat: %.100q", s.cmd.Process.Pid, str)
	}
	u, err1 := strconv.ParseFloat(f[11], 64)
	st, err2 := strconv.ParseFloat(f[12], 64)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("unexpected /proc/%d/stat: %.100q", s.cmd.Process.Pid, str)
	}
	return (u + st) / 100, nil
}

// apiResult is the Prometheus query API response.
type apiResult struct {
	Status    string `json:"status"`
	Error     string `json:"error"`
	ErrorType string `json:"errorType"`
	Data      struct {
		ResultType string `json:"resultType"`
		Result     []struct {
			Metric map[string]string `json:"metric"`
			Value  []any             `json:"value"`
			Values [][]any           `json:"values"`
		} `json:"result"`
	} `json:"data"`
}

// query runs an instant PromQL query at time at.
func (s *server) query(q string, at time.Time) (apiResult, error) {
	v := url.Values{"query": {q}, "time": {ftoa(float64(at.UnixMilli()) / 1000)}}
	var r apiResult
	resp, err := apiClient.Post("http://"+s.addr+"/api/v1/query", "application/x-www-form-urlencoded", strings.NewReader(v.Encode()))
	if err != nil {
		return r, err
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		return r, err
	}
	if err := json.Unmarshal(body, &r); err != nil {
		return r, fmt.Errorf("%s: HTTP %d, bad JSON: %.200s", q, resp.StatusCode, body)
	}
	if r.Status != "success" {
		return r, fmt.Errorf("%s: HTTP %d: %s: %s", q, resp.StatusCode, r.ErrorType, r.Error)
	}
	return r, nil
}

// scalarOf is the value of a one-element vector answer (0 for an empty one).
func scalarOf(r apiResult) float64 {
	if len(r.Data.Result) == 0 || len(r.Data.Result[0].Value) < 2 {
		return 0
	}
	str, _ := r.Data.Result[0].Value[1].(string)
	f, _ := strconv.ParseFloat(str, 64)
	return f
}

// sampleOf reads one [timestamp, "value"] pair of a matrix answer.
func sampleOf(p []any) (tsMs int64, v float64, err error) {
	if len(p) != 2 {
		return 0, 0, fmt.Errorf("sample %v: want [time, value]", p)
	}
	t, ok := p[0].(float64)
	str, ok2 := p[1].(string)
	if !ok || !ok2 {
		return 0, 0, fmt.Errorf("sample %v: want [number, string]", p)
	}
	v, err = strconv.ParseFloat(str, 64)
	if err != nil {
		return 0, 0, fmt.Errorf("sample %v: %w", p, err)
	}
	return int64(t*1000 + 0.5), v, nil
}

func ftoa(f float64) string { return strconv.FormatFloat(f, 'f', 3, 64) }

func readFile(p string) string {
	b, _ := os.ReadFile(p)
	return string(b)
}

func lastLines(s string, n int) string {
	l := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(l) > n {
		l = l[len(l)-n:]
	}
	return strings.Join(l, "\n")
}
