// Package e2e holds the plumbing of the end-to-end test (interop/e2e_test.go):
// server processes that are started, waited for and stopped, free loopback
// ports, and the comparison of promtool's JSON query output.
package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"os"
	"os/exec"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// FreePort returns a loopback TCP port that was free a moment ago.
func FreePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// Proc is a server process whose output goes to a log file.
type Proc struct {
	Name    string
	LogPath string
	cmd     *exec.Cmd
	log     *os.File
	done    chan struct{}
	mu      sync.Mutex
	waitErr error
}

// Start runs bin with args in dir, stdout and stderr appended to logPath.
func Start(name, bin, dir, logPath string, args ...string) (*Proc, error) {
	f, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(f, "=== %s %s\n", bin, strings.Join(args, " "))
	cmd := exec.Command(bin, args...)
	cmd.Dir = dir
	cmd.Stdout = f
	cmd.Stderr = f
	if err := cmd.Start(); err != nil {
		f.Close()
		return nil, fmt.Errorf("starting %s: %w", name, err)
	}
	p := &Proc{Name: name, LogPath: logPath, cmd: cmd, log: f, done: make(chan struct{})}
	go func() {
		err := cmd.Wait()
		p.mu.Lock()
		p.waitErr = err
		p.mu.Unlock()
		f.Close()
		close(p.done)
	}()
	return p, nil
}

// Exited reports whether the process has ended, and how.
func (p *Proc) Exited() (bool, error) {
	select {
	case <-p.done:
		p.mu.Lock()
		defer p.mu.Unlock()
		return true, p.waitErr
	default:
		return false, nil
	}
}

// Stop sends SIGTERM and waits up to timeout for the exit, whose error (nil
// for exit status 0) it returns; past the timeout it kills the process and
// says so.
func (p *Proc) Stop(timeout time.Duration) error {
	if ok, err := p.Exited(); ok {
		return fmt.Errorf("%s had already exited: %v", p.Name, err)
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
		_, err := p.Exited()
		return err
	case <-time.After(timeout):
		p.Kill()
		return fmt.Errorf("%s did not exit within %v of SIGTERM (killed)", p.Name, timeout)
	}
}

// Kill ends the process with SIGKILL (if it still runs) and waits for it.
func (p *Proc) Kill() {
	if ok, _ := p.Exited(); ok {
		return
	}
	_ = p.cmd.Process.Kill()
	select {
	case <-p.done:
	case <-time.After(10 * time.Second):
	}
}

// LogTail is the last n lines of the process' log.
func (p *Proc) LogTail(n int) string {
	b, err := os.ReadFile(p.LogPath)
	if err != nil {
		return fmt.Sprintf("(no log: %v)", err)
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = append([]string{"..."}, lines[len(lines)-n:]...)
	}
	return strings.Join(lines, "\n")
}

// Log is the whole log of the process.
func (p *Proc) Log() string {
	b, _ := os.ReadFile(p.LogPath)
	return string(b)
}

var client = &http.Client{Timeout: 5 * time.Second}

// Get fetches url and returns the status code and body.
func Get(url string) (int, []byte, error) {
	resp, err := client.Get(url)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, b, err
}

// WaitReady polls url until it answers 200, the process exits, or timeout passes.
func (p *Proc) WaitReady(url string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	var last string
	for {
		if ok, err := p.Exited(); ok {
			return fmt.Errorf("%s exited while starting (%v); log:\n%s", p.Name, err, p.LogTail(30))
		}
		code, body, err := Get(url)
		if err == nil && code == http.StatusOK {
			return nil
		}
		if err != nil {
			last = err.Error()
		} else {
			last = fmt.Sprintf("HTTP %d: %s", code, bytes.TrimSpace(body))
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s not ready at %s after %v (last: %s); log:\n%s", p.Name, url, timeout, last, p.LogTail(30))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// QueryScalar runs an instant query through the HTTP API at time ts and
// returns the value of its single vector element (ok false if the result is
// empty).
func QueryScalar(base, expr string, ts time.Time) (v float64, ok bool, err error) {
	u := fmt.Sprintf("%s/api/v1/query?query=%s&time=%s", base, urlEscape(expr),
		strconv.FormatFloat(float64(ts.UnixMilli())/1000, 'f', 3, 64))
	code, body, err := Get(u)
	if err != nil {
		return 0, false, err
	}
	if code != http.StatusOK {
		return 0, false, fmt.Errorf("%s: HTTP %d: %s", u, code, bytes.TrimSpace(body))
	}
	var r struct {
		Status string
		Data   struct {
			ResultType string
			Result     []struct {
				Value [2]any
			}
		}
	}
	if err := json.Unmarshal(body, &r); err != nil {
		return 0, false, fmt.Errorf("%s: %v: %s", u, err, body)
	}
	if r.Status != "success" || r.Data.ResultType != "vector" || len(r.Data.Result) > 1 {
		return 0, false, fmt.Errorf("%s: unexpected answer %s", u, body)
	}
	if len(r.Data.Result) == 0 {
		return 0, false, nil
	}
	s, _ := r.Data.Result[0].Value[1].(string)
	v, err = strconv.ParseFloat(s, 64)
	return v, err == nil, err
}

func urlEscape(s string) string {
	var b strings.Builder
	for _, c := range []byte(s) {
		if ('a' <= c && c <= 'z') || ('A' <= c && c <= 'Z') || ('0' <= c && c <= '9') || c == '-' || c == '_' || c == '.' {
			b.WriteByte(c)
		} else {
			fmt.Fprintf(&b, "%%%02X", c)
		}
	}
	return b.String()
}

// Series is one series of a query result: its labels in canonical form and
// its points as (timestamp, value) strings as promtool printed them.
type Series struct {
	Labels string
	Points [][2]string
}

// Result is a query result normalized for comparison: the kind (vector,
// matrix, scalar, string) and the series sorted by labels.
type Result struct {
	Kind   string
	Series []Series
}

// Samples is the number of points in the result.
func (r Result) Samples() int {
	n := 0
	for _, s := range r.Series {
		n += len(s.Points)
	}
	return n
}

// ParseResult reads `promtool query ... -o json` output, a model.Value as
// JSON: a vector (objects with "value"), a matrix (objects with "values"),
// or a scalar or string ([t, "v"]).
func ParseResult(out string) (Result, error) {
	var raw []json.RawMessage
	if err := json.Unmarshal([]byte(out), &raw); err != nil {
		return Result{}, fmt.Errorf("not promtool JSON output: %v: %q", err, out)
	}
	if len(raw) == 0 {
		// An empty vector or matrix; both print [] and are the same answer.
		return Result{Kind: "empty"}, nil
	}
	if len(raw) == 2 && len(raw[0]) > 0 && raw[0][0] != '{' {
		var t json.Number
		var v string
		if err := json.Unmarshal(raw[0], &t); err != nil {
			return Result{}, fmt.Errorf("bad scalar %q: %v", out, err)
		}
		if err := json.Unmarshal(raw[1], &v); err != nil {
			return Result{}, fmt.Errorf("bad scalar %q: %v", out, err)
		}
		return Result{Kind: "scalar", Series: []Series{{Labels: "", Points: [][2]string{{t.String(), v}}}}}, nil
	}
	res := Result{}
	for _, m := range raw {
		var e struct {
			Metric map[string]string   `json:"metric"`
			Value  []json.RawMessage   `json:"value"`
			Values [][]json.RawMessage `json:"values"`
		}
		if err := json.Unmarshal(m, &e); err != nil {
			return Result{}, fmt.Errorf("bad result element %s: %v", m, err)
		}
		kind := "matrix"
		pts := e.Values
		if e.Value != nil {
			kind = "vector"
			pts = [][]json.RawMessage{e.Value}
		}
		if res.Kind != "" && res.Kind != kind {
			return Result{}, fmt.Errorf("mixed result %q", out)
		}
		res.Kind = kind
		s := Series{Labels: canonical(e.Metric)}
		for _, p := range pts {
			if len(p) != 2 {
				return Result{}, fmt.Errorf("bad point in %s", m)
			}
			var t json.Number
			var v string
			if err := json.Unmarshal(p[0], &t); err != nil {
				return Result{}, fmt.Errorf("bad point in %s: %v", m, err)
			}
			if err := json.Unmarshal(p[1], &v); err != nil {
				return Result{}, fmt.Errorf("bad point in %s: %v", m, err)
			}
			s.Points = append(s.Points, [2]string{t.String(), v})
		}
		res.Series = append(res.Series, s)
	}
	sort.Slice(res.Series, func(i, j int) bool { return res.Series[i].Labels < res.Series[j].Labels })
	return res, nil
}

func canonical(m map[string]string) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	b.WriteByte('{')
	for i, k := range keys {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%s=%q", k, m[k])
	}
	b.WriteByte('}')
	return b.String()
}

// Diff compares two results: the same kind, the same label sets, the same
// timestamps, and values equal as printed or within relTol (relative; NaN
// equals NaN). It returns a description of the first differences (empty
// when they agree) and the number of values that agreed only within the
// tolerance.
func Diff(want, got Result, relTol float64) (diff string, inexact int) {
	var out []string
	add := func(format string, args ...any) {
		if len(out) < 12 {
			out = append(out, fmt.Sprintf(format, args...))
		}
	}
	if want.Kind != got.Kind {
		add("result kind %s, want %s", got.Kind, want.Kind)
	}
	ws, gs := index(want), index(got)
	for _, s := range want.Series {
		g, ok := gs[s.Labels]
		if !ok {
			add("missing series %s (%d points)", s.Labels, len(s.Points))
			continue
		}
		if len(g.Points) != len(s.Points) {
			add("series %s: %d points, want %d (first %v, want first %v)", s.Labels, len(g.Points), len(s.Points),
				first(g.Points), first(s.Points))
			continue
		}
		for i := range s.Points {
			wp, gp := s.Points[i], g.Points[i]
			if wp[0] != gp[0] {
				add("series %s point %d: time %s, want %s", s.Labels, i, gp[0], wp[0])
				break
			}
			if wp[1] == gp[1] {
				continue
			}
			if sameValue(wp[1], gp[1], relTol) {
				inexact++
				continue
			}
			add("series %s at %s: value %s, want %s", s.Labels, wp[0], gp[1], wp[1])
		}
	}
	for _, s := range got.Series {
		if _, ok := ws[s.Labels]; !ok {
			add("extra series %s (%d points)", s.Labels, len(s.Points))
		}
	}
	return strings.Join(out, "\n"), inexact
}

func first(p [][2]string) any {
	if len(p) == 0 {
		return nil
	}
	return p[0]
}

func index(r Result) map[string]Series {
	m := make(map[string]Series, len(r.Series))
	for _, s := range r.Series {
		m[s.Labels] = s
	}
	return m
}

func sameValue(a, b string, relTol float64) bool {
	x, err1 := strconv.ParseFloat(a, 64)
	y, err2 := strconv.ParseFloat(b, 64)
	if err1 != nil || err2 != nil {
		return false
	}
	if math.IsNaN(x) || math.IsNaN(y) {
		return math.IsNaN(x) && math.IsNaN(y)
	}
	if math.IsInf(x, 0) || math.IsInf(y, 0) {
		return x == y
	}
	return math.Abs(x-y) <= relTol*math.Max(math.Abs(x), math.Abs(y))
}
