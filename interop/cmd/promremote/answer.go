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
	"github.com/prometheus/prometheus/model/metadata"
	"github.com/prometheus/prometheus/storage"
)

// Answer runs Prometheus' remote write receiver on one request and dumps
// its answer and the appends it committed.
func Answer(body []byte, ct, ce *string) string {
	rec := &recorder{}
	h := remoteapi.NewWriteHandler(&store{app: rec}, remoteapi.MessageTypes{remoteapi.WriteV1MessageType, remoteapi.WriteV2MessageType},
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

// recorder is a storage that keeps what was committed, as text. Labels
// lose their empty values, as the head's appender does.
type recorder struct{ committed []string }

func (r *recorder) Appender(context.Context) storage.Appender { return &app{r: r} }

type app struct {
	r       *recorder
	pending []string
	st      int64
}

func (a *app) Append(_ storage.SeriesRef, l labels.Labels, t int64, v float64) (storage.SeriesRef, error) {
	a.pending = append(a.pending, fmt.Sprintf("sample %s t=%d v=0x%016x st=%d", l.WithoutEmpty(), t, math.Float64bits(v), a.st))
	a.st = 0
	return 1, nil
}

func (a *app) AppendSTZeroSample(_ storage.SeriesRef, _ labels.Labels, _, st int64) (storage.SeriesRef, error) {
	a.st = st
	return 1, nil
}

func (a *app) AppendExemplar(_ storage.SeriesRef, l labels.Labels, e exemplar.Exemplar) (storage.SeriesRef, error) {
	a.pending = append(a.pending, fmt.Sprintf("exemplar %s %s t=%d v=0x%016x", l.WithoutEmpty(), e.Labels.WithoutEmpty(), e.Ts, math.Float64bits(e.Value)))
	return 1, nil
}

func (a *app) AppendHistogram(_ storage.SeriesRef, l labels.Labels, t int64, _ *histogram.Histogram, _ *histogram.FloatHistogram) (storage.SeriesRef, error) {
	a.pending = append(a.pending, fmt.Sprintf("histogram %s t=%d", l.WithoutEmpty(), t))
	return 1, nil
}

func (a *app) AppendHistogramSTZeroSample(storage.SeriesRef, labels.Labels, int64, int64, *histogram.Histogram, *histogram.FloatHistogram) (storage.SeriesRef, error) {
	return 1, nil
}

func (a *app) UpdateMetadata(_ storage.SeriesRef, l labels.Labels, m metadata.Metadata) (storage.SeriesRef, error) {
	a.pending = append(a.pending, fmt.Sprintf("metadata %s type=%s help=%q unit=%q", l.WithoutEmpty(), m.Type, m.Help, m.Unit))
	return 1, nil
}

func (a *app) SetOptions(*storage.AppendOptions) {}

func (a *app) Commit() error {
	a.r.committed = append(a.r.committed, a.pending...)
	a.pending = nil
	return nil
}

func (a *app) Rollback() error {
	a.pending = nil
	return nil
}
