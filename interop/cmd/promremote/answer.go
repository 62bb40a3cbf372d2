package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"

	remoteapi "github.com/prometheus/client_golang/exp/api/remote"

	"github.com/prometheus/prometheus/model/exemplar"
	"github.com/prometheus/prometheus/model/histogram"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/storage"
)

// Answer runs Prometheus' remote write receiver on one request and dumps
// its answer and the appends it committed.
func Answer(body []byte, ct, ce *string) string {
	rec := &recorder{}
	h := remoteapi.NewWriteHandler(&store{rec: rec}, remoteapi.MessageTypes{remoteapi.WriteV1MessageType, remoteapi.WriteV2MessageType},
		remoteapi.WithWriteHandlerLogger(slog.New(slog.NewTextHandler(io.Discard, nil))))
	req := httptest.NewRequest(http.MethodPost, "/api/v1/write", bytes.NewReader(body))
	if ct != nil {
		req.Header.Set("Content-Type", *ct)
	}
	if ce != nil {
		req.Header.Set("Content-Encoding", *ce)
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, req)

	var b strings.Builder
	fmt.Fprintf(&b, "status %d\n", w.Code)
	if msg := strings.TrimSuffix(w.Body.String(), "\n"); msg != "" {
		for _, l := range strings.Split(msg, "\n") {
			fmt.Fprintf(&b, "body %s\n", l)
		}
	}
	if s := w.Header().Get("X-Prometheus-Remote-Write-Samples-Written"); s != "" {
		fmt.Fprintf(&b, "header samples=%s histograms=%s exemplars=%s\n", s,
			w.Header().Get("X-Prometheus-Remote-Write-Histograms-Written"),
			w.Header().Get("X-Prometheus-Remote-Write-Exemplars-Written"))
	}
	for _, l := range rec.committed {
		b.WriteString(l)
		b.WriteByte('\n')
	}
	return b.String()
}

// recorder is a storage (storage.AppendableV2) that keeps what was
// committed, as text. Labels lose their empty values, as the head's
// appender does.
type recorder struct{ committed []string }

func (r *recorder) AppenderV2(context.Context) storage.AppenderV2 { return &app{r: r} }

var (
	_ storage.AppendableV2       = (*recorder)(nil)
	_ storage.ExemplarAppenderV2 = (*app)(nil)
)

// app records each append as a dump line: a sample with the start
// timestamp it was handed, a histogram, each exemplar in the order given.
// The metadata attached to a series' appends (storage.AOptions.Metadata;
// empty means none, as for the head) is printed once, after the series'
// exemplars, when the receiver is done with the series (endSeries).
type app struct {
	r       *recorder
	pending []string
	meta    string // the metadata line of the current series, if any
}

func (a *app) Append(_ storage.SeriesRef, l labels.Labels, st, t int64, v float64, h *histogram.Histogram, fh *histogram.FloatHistogram, opts storage.AOptions) (storage.SeriesRef, error) {
	if h != nil || fh != nil {
		a.pending = append(a.pending, fmt.Sprintf("histogram %s t=%d", l.WithoutEmpty(), t))
	} else {
		a.pending = append(a.pending, fmt.Sprintf("sample %s t=%d v=0x%016x st=%d", l.WithoutEmpty(), t, math.Float64bits(v), st))
	}
	for _, e := range opts.Exemplars {
		a.exemplar(l, e)
	}
	if m := opts.Metadata; !m.IsEmpty() {
		a.meta = fmt.Sprintf("metadata %s type=%s help=%q unit=%q", l.WithoutEmpty(), m.Type, m.Help, m.Unit)
	}
	return 1, nil
}

func (a *app) AppendExemplars(_ storage.SeriesRef, l labels.Labels, es []exemplar.Exemplar) (storage.SeriesRef, error) {
	for _, e := range es {
		a.exemplar(l, e)
	}
	return 1, nil
}

func (a *app) exemplar(l labels.Labels, e exemplar.Exemplar) {
	a.pending = append(a.pending, fmt.Sprintf("exemplar %s %s t=%d v=0x%016x", l.WithoutEmpty(), e.Labels.WithoutEmpty(), e.Ts, math.Float64bits(e.Value)))
}

// endSeries ends the receiver's appends of one series of the request.
func (a *app) endSeries() {
	if a.meta != "" {
		a.pending = append(a.pending, a.meta)
		a.meta = ""
	}
}

func (a *app) Commit() error {
	a.endSeries()
	a.r.committed = append(a.r.committed, a.pending...)
	a.pending = nil
	return nil
}

func (a *app) Rollback() error {
	a.pending = nil
	a.meta = ""
	return nil
}
