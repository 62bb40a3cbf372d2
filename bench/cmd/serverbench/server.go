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

// tool is one server under test.
type tool struct {
	name    string // prometheus, ferrite, victoriametrics
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

func freePort() string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	must(err)
	defer l.Close()
	return l.Addr().String()
}

// start runs the tool on a fresh data dir under scratch and waits until it is ready.
func start(t *tool, scratch string) *server {
	dir := filepath.Join(scratch, t.name+"-data")
	must(os.RemoveAll(dir))
	must(os.MkdirAll(dir, 0o755))
	s := &server{tool: t, dir: dir, addr: freePort(), log: filepath.Join(scratch, t.name+".log"), exit: make(chan error, 1)}
	var args []string
	// No scrape jobs: the server holds exactly what the load sends (and
	// Ferrite, without a file, would scrape itself).
	cfg := filepath.Join(scratch, "prometheus.yml")
	must(os.WriteFile(cfg, []byte("global:\n  scrape_interval: 15s\n"), 0o644))
	switch t.name {
	case "prometheus":
		args = []string{"--config.file=" + cfg, "--storage.tsdb.path=" + dir, "--web.listen-address=" + s.addr,
			"--web.enable-remote-write-receiver", "--query.max-samples=2000000000", "--query.timeout=10m"}
	case "ferrite":
		args = []string{"--config.file=" + cfg, "--storage.tsdb.path", dir, "--web.listen-address", s.addr,
			"--web.enable-remote-write-receiver", "--query.max-samples", "2000000000", "--query.timeout", "10m"}
	case "victoriametrics":
		// Result cache off (every query is computed), query limits raised so
		// the verification queries over all series and samples can run.
		args = []string{"-storageDataPath=" + dir, "-httpListenAddr=" + s.addr, "-retentionPeriod=100y",
			"-search.disableCache", "-search.maxUniqueTimeseries=100000000", "-search.maxSamplesPerQuery=2000000000",
			"-search.maxQueryDuration=10m", "-search.maxPointsPerTimeseries=1000000", "-search.maxSamplesPerSeries=100000000"}
	default:
		fatalf("unknown tool %s", t.name)
	}
	lf, err := os.Create(s.log)
	must(err)
	s.cmd = exec.Command(t.bin, args...)
	s.cmd.Dir = scratch
	s.cmd.Stdout = lf
	s.cmd.Stderr = lf
	must(s.cmd.Start())
	go func() { s.exit <- s.cmd.Wait(); lf.Close() }()
	ready := "/-/ready"
	if t.name == "victoriametrics" {
		ready = "/health"
	}
	deadline := time.Now().Add(2 * time.Minute)
	for {
		select {
		case err := <-s.exit:
			fatalf("%s exited while starting (%v); log %s:\n%s", t.name, err, s.log, lastLines(readFile(s.log), 20))
		default:
		}
		resp, err := http.Get("http://" + s.addr + ready)
		if err == nil {
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return s
			}
		}
		if time.Now().After(deadline) {
			s.stop()
			fatalf("%s not ready after 2 minutes; log %s", t.name, s.log)
		}
		time.Sleep(100 * time.Millisecond)
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
func (s *server) memMB() (rss, hwm float64) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", s.cmd.Process.Pid))
	must(err)
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
	return
}

// cpuS is the server process' user+system CPU seconds so far.
func (s *server) cpuS() float64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", s.cmd.Process.Pid))
	must(err)
	str := string(b)
	f := strings.Fields(str[strings.LastIndexByte(str, ')')+2:])
	// fields after the command: state(0) ... utime(11) stime(12), in clock ticks (100/s on Linux)
	u, _ := strconv.ParseFloat(f[11], 64)
	st, _ := strconv.ParseFloat(f[12], 64)
	return (u + st) / 100
}

// flush makes buffered samples searchable (VictoriaMetrics only).
func (s *server) flush() {
	if s.tool.name == "victoriametrics" {
		resp, err := http.Get("http://" + s.addr + "/internal/force_flush")
		if err == nil {
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
	}
}

// waitIdle waits until the server used less than 5% of a CPU for 2 seconds in
// a row (background compaction/merges done), at most max. Returns the wait.
func (s *server) waitIdle(maxWait time.Duration) time.Duration {
	t0 := time.Now()
	last := s.cpuS()
	quiet := 0
	for time.Since(t0) < maxWait {
		time.Sleep(time.Second)
		c := s.cpuS()
		if c-last < 0.05 {
			quiet++
			if quiet >= 2 {
				break
			}
		} else {
			quiet = 0
		}
		last = c
	}
	return time.Since(t0)
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

// query runs a PromQL query: instant when step == 0, else a range query.
// It returns the decoded answer, the wall time, and the body size.
func (s *server) query(q string, at, start, end, step float64) (apiResult, time.Duration, int, error) {
	v := url.Values{"query": {q}}
	path := "/api/v1/query"
	if step > 0 {
		path = "/api/v1/query_range"
		v.Set("start", ftoa(start))
		v.Set("end", ftoa(end))
		v.Set("step", ftoa(step))
	} else {
		v.Set("time", ftoa(at))
	}
	t0 := time.Now()
	resp, err := http.Post("http://"+s.addr+path, "application/x-www-form-urlencoded", strings.NewReader(v.Encode()))
	var r apiResult
	if err != nil {
		return r, 0, 0, err
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	el := time.Since(t0)
	if err != nil {
		return r, el, 0, err
	}
	if err := json.Unmarshal(body, &r); err != nil {
		return r, el, len(body), fmt.Errorf("HTTP %d, bad JSON: %.200s", resp.StatusCode, body)
	}
	if r.Status != "success" {
		return r, el, len(body), fmt.Errorf("HTTP %d: %s: %s", resp.StatusCode, r.ErrorType, r.Error)
	}
	return r, el, len(body), nil
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

// points counts the samples/points in an answer.
func points(r apiResult) int {
	n := 0
	for _, x := range r.Data.Result {
		if len(x.Value) > 0 {
			n++
		}
		n += len(x.Values)
	}
	return n
}

func ftoa(f float64) string { return strconv.FormatFloat(f, 'f', 3, 64) }
