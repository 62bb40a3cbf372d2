package interop_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/prometheus/prompb"

	"ferrite.dev/interop/internal/e2e"
)

// TestDeepQueriesAgainstPrometheus: a real Prometheus (v3.16.0) and Ferrite
// get the same sample by remote write, then the same deeply nested queries,
// POSTed as `curl --data-urlencode` sends them. Up to Ferrite's documented
// nesting limit (5,000 levels) both answer 200 with the same result; past
// it Prometheus still answers and Ferrite refuses with a 400 bad_data that
// names the limit. Neither server goes down, and the sample is still there.
func TestDeepQueriesAgainstPrometheus(t *testing.T) {
	fer := ferriteBin(t)
	prom, _ := e2eBinaries(t)
	tmp := t.TempDir()
	ferURL, promURL := startPair(t, fer, prom, tmp)

	at := time.Now().Add(-time.Minute).Truncate(time.Second)
	for _, base := range []string{ferURL, promURL} {
		remoteWriteOne(t, base, "up", map[string]string{"job": "a"}, at, 1)
	}

	wrap := func(open, inner, close string, n int) string {
		return strings.Repeat(open, n) + inner + strings.Repeat(close, n)
	}
	cases := []struct {
		name  string
		query string
		// Past Ferrite's nesting limit: refused by Ferrite only.
		pastLimit bool
	}{
		{"the issue's query: sum( 1,000 deep", wrap("sum(", "up", ")", 1000), false},
		{"sum( 3,000 deep", wrap("sum(", "up", ")", 3000), false},
		{"abs( 4,000 deep", wrap("abs(", "up", ")", 4000), false},
		{"parentheses 4,999 deep", wrap("(", "up", ")", 4999), false},
		{"unary minus 1,000 deep", strings.Repeat("-", 1000) + "up", false},
		{"* chain of 4,000", "up" + strings.Repeat(" * up", 4000), false},
		{"or chain of 4,000", "up" + strings.Repeat(" or up", 4000), false},
		{"subqueries 1,000 deep", wrap("max_over_time(", "up", "[1m:10s])", 1000), false},
		{"subqueries with @ and offset 500 deep",
			wrap("max_over_time(", "up", fmt.Sprintf("[1m:10s] @ %d offset 10s)", at.Unix()+10), 500), false},
		{"sum( 5,000 deep", wrap("sum(", "up", ")", 5000), true},
		{"sum( 20,000 deep", wrap("sum(", "up", ")", 20000), true},
		{"abs( 20,000 deep", wrap("abs(", "up", ")", 20000), true},
	}
	evalAt := fmt.Sprint(at.Unix() + 30)
	for _, c := range cases {
		promStatus, promAns := postQuery(t, promURL, c.query, evalAt)
		ferStatus, ferAns := postQuery(t, ferURL, c.query, evalAt)
		if promStatus != 200 {
			t.Errorf("%s: Prometheus answered %d: %.300s", c.name, promStatus, promAns)
			continue
		}
		if c.pastLimit {
			if ferStatus != 400 || ferAns.ErrorType != "bad_data" || !strings.Contains(ferAns.Error, "the limit is") {
				t.Errorf("%s: Ferrite answered %d %q %.300q, want a 400 bad_data naming the limit", c.name, ferStatus, ferAns.ErrorType, ferAns.Error)
			}
			continue
		}
		if ferStatus != 200 {
			t.Errorf("%s: Ferrite answered %d: %.300s (Prometheus 200)", c.name, ferStatus, ferAns.Error)
			continue
		}
		var promData, ferData any
		if json.Unmarshal(promAns.Data, &promData) != nil || json.Unmarshal(ferAns.Data, &ferData) != nil ||
			!reflect.DeepEqual(promData, ferData) {
			t.Errorf("%s: answers differ:\nprometheus %.500s\nferrite    %.500s", c.name, promAns.Data, ferAns.Data)
		}
	}
	for _, base := range []string{ferURL, promURL} {
		status, ans := postQuery(t, base, "up", evalAt)
		if status != 200 || !strings.Contains(string(ans.Data), `"job":"a"`) {
			t.Errorf("%s after the deep queries: %d %s", base, status, ans.Data)
		}
	}
}

// apiAnswer is the envelope of the query API's answers.
type apiAnswer struct {
	Status    string          `json:"status"`
	Data      json.RawMessage `json:"data"`
	ErrorType string          `json:"errorType"`
	Error     string          `json:"error"`
}

func postQuery(t *testing.T, base, query, at string) (int, apiAnswer) {
	t.Helper()
	form := url.Values{"query": {query}, "time": {at}}
	resp, err := http.PostForm(base+"/api/v1/query", form)
	if err != nil {
		t.Fatalf("%s: %v", base, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s: %v", base, err)
	}
	var ans apiAnswer
	if err := json.Unmarshal(body, &ans); err != nil {
		t.Fatalf("%s answered %d with no JSON: %.300s", base, resp.StatusCode, body)
	}
	return resp.StatusCode, ans
}

// startPair starts Ferrite and a Prometheus that scrapes nothing, both
// receiving remote write, and returns their base URLs.
func startPair(t *testing.T, fer, prom, tmp string) (ferURL, promURL string) {
	t.Helper()
	ferPort, err := e2e.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	promPort, err := e2e.FreePort()
	for err == nil && promPort == ferPort {
		promPort, err = e2e.FreePort()
	}
	if err != nil {
		t.Fatal(err)
	}
	ferURL = fmt.Sprintf("http://127.0.0.1:%d", ferPort)
	promURL = fmt.Sprintf("http://127.0.0.1:%d", promPort)
	cfg := filepath.Join(tmp, "prometheus.yml")
	e2eWriteFile(t, cfg, "global:\n  scrape_interval: 1m\n")
	ferProc, err := e2e.Start("ferrite", fer, tmp, filepath.Join(tmp, "ferrite.log"),
		"--storage.tsdb.path", filepath.Join(tmp, "ferrite-data"),
		"--web.listen-address", fmt.Sprintf("127.0.0.1:%d", ferPort), noScrapeConfig(t, tmp))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(ferProc.Kill)
	promProc, err := e2e.Start("prometheus", prom, tmp, filepath.Join(tmp, "prometheus.log"),
		"--config.file="+cfg, "--storage.tsdb.path="+filepath.Join(tmp, "prom-data"),
		"--web.enable-remote-write-receiver",
		fmt.Sprintf("--web.listen-address=127.0.0.1:%d", promPort))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(promProc.Kill)
	if err := ferProc.WaitReady(ferURL+"/-/ready", 30*time.Second); err != nil {
		t.Fatal(err)
	}
	if err := promProc.WaitReady(promURL+"/-/ready", 30*time.Second); err != nil {
		t.Fatal(err)
	}
	return ferURL, promURL
}

// remoteWriteOne sends one sample by remote write 1.0.
func remoteWriteOne(t *testing.T, base, name string, labels map[string]string, at time.Time, v float64) {
	t.Helper()
	ls := []prompb.Label{{Name: "__name__", Value: name}}
	for n, lv := range labels {
		ls = append(ls, prompb.Label{Name: n, Value: lv})
	}
	req := &prompb.WriteRequest{Timeseries: []prompb.TimeSeries{{
		Labels:  ls,
		Samples: []prompb.Sample{{Value: v, Timestamp: at.UnixMilli()}},
	}}}
	mustWrite(t, base, req)
}
