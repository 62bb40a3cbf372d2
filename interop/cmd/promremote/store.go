package main

// store is the storage side of Prometheus v3.16.0's receiver
// (storage/remote.writeHandler.Store with write and writeV2/appendV2),
// restated here because importing storage/remote would pull the OTLP and
// OpenTelemetry collector modules into interop/go.mod. Everything that
// decides an outcome is Prometheus' own: gogo unmarshalling, ToLabels /
// desymbolization and their errors, labels.IsValid(model.UTF8Validation),
// HasDuplicateLabelNames, ToMetadata and its errors, ToExemplar,
// exemplar.Compare; the negotiation, snappy limit and headers come from
// client_golang's real handler. What is restated is the control flow and
// the message formats of the 400 answers (metadata appends enabled;
// type-and-unit labels off), over storage.AppenderV2 /
// storage.ExemplarAppenderV2 appends that always succeed. Since v3.16 the
// receiver hands every sample its start timestamp as it came (the storage
// decides what to do with it), attaches the series' metadata to each
// sample append, and appends a series' exemplars in one call, sorted by
// exemplar.Compare, after its samples and histograms.

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"

	"github.com/gogo/protobuf/proto"
	remoteapi "github.com/prometheus/client_golang/exp/api/remote"
	"github.com/prometheus/common/model"

	"github.com/prometheus/prometheus/model/exemplar"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/prompb"
	writev2 "github.com/prometheus/prometheus/prompb/io/prometheus/write/v2"
	"github.com/prometheus/prometheus/storage"
)

type store struct{ rec *recorder }

func (s *store) Store(r *http.Request, msgType remoteapi.WriteMessageType) (*remoteapi.WriteResponse, error) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return nil, err
	}
	wr := remoteapi.NewWriteResponse()
	app := s.rec.AppenderV2(r.Context()).(*app)
	if msgType == remoteapi.WriteV1MessageType {
		var req prompb.WriteRequest
		if err := proto.Unmarshal(body, &req); err != nil {
			wr.SetStatusCode(http.StatusBadRequest)
			return wr, err
		}
		b := labels.NewScratchBuilder(0)
		var exemplars []exemplar.Exemplar
		for _, ts := range req.Timeseries {
			ls := ts.ToLabels(&b, nil)
			if !ls.Has(labels.MetricName) || !ls.IsValid(model.UTF8Validation) {
				continue
			} else if _, dup := ls.HasDuplicateLabelNames(); dup {
				continue
			}
			for _, x := range ts.Samples {
				_, _ = app.Append(0, ls, 0, x.Timestamp, x.Value, nil, nil, storage.AOptions{})
			}
			for _, hp := range ts.Histograms {
				if hp.IsFloatHistogram() {
					_, _ = app.Append(0, ls, 0, hp.Timestamp, 0, nil, hp.ToFloatHistogram(), storage.AOptions{})
				} else {
					_, _ = app.Append(0, ls, 0, hp.Timestamp, 0, hp.ToIntHistogram(), nil, storage.AOptions{})
				}
			}
			if len(ts.Exemplars) > 0 {
				exemplars = exemplars[:0]
				for _, ep := range ts.Exemplars {
					exemplars = append(exemplars, ep.ToExemplar(&b, nil))
				}
				slices.SortFunc(exemplars, exemplar.Compare)
				_, _ = app.AppendExemplars(0, ls, exemplars)
			}
			app.endSeries()
		}
		return wr, app.Commit()
	}

	var req writev2.Request
	if err := proto.Unmarshal(body, &req); err != nil {
		wr.SetStatusCode(http.StatusBadRequest)
		return wr, err
	}
	var (
		errs      []error
		stats     remoteapi.WriteResponseStats
		b         = labels.NewScratchBuilder(0)
		exemplars []exemplar.Exemplar
	)
	for _, ts := range req.Timeseries {
		ls, err := ts.ToLabels(&b, req.Symbols)
		if err != nil {
			errs = append(errs, fmt.Errorf("parsing labels for series %v: %w", ts.LabelsRefs, err))
			continue
		}
		m, err := ts.ToMetadata(req.Symbols)
		if err != nil {
			errs = append(errs, fmt.Errorf("parsing metadata for series %v: %w", ts.LabelsRefs, err))
			continue
		}
		if !ls.Has(labels.MetricName) || !ls.IsValid(model.UTF8Validation) {
			errs = append(errs, fmt.Errorf("invalid metric name or labels, got %v", ls.String()))
			continue
		} else if dupName, dup := ls.HasDuplicateLabelNames(); dup {
			errs = append(errs, fmt.Errorf("invalid labels for series, labels %v, duplicated label %s", ls.String(), dupName))
			continue
		}
		if len(ts.Samples) == 0 && len(ts.Histograms) == 0 {
			errs = append(errs, fmt.Errorf("TimeSeries must contain at least one sample or histogram for series %v", ls.String()))
			continue
		}
		opts := storage.AOptions{Metadata: m}
		for _, x := range ts.Samples {
			_, _ = app.Append(0, ls, x.StartTimestamp, x.Timestamp, x.Value, nil, nil, opts)
			stats.Samples++
		}
		for _, hp := range ts.Histograms {
			if hp.IsFloatHistogram() {
				_, _ = app.Append(0, ls, hp.StartTimestamp, hp.Timestamp, 0, nil, hp.ToFloatHistogram(), opts)
			} else {
				_, _ = app.Append(0, ls, hp.StartTimestamp, hp.Timestamp, 0, hp.ToIntHistogram(), nil, opts)
			}
			stats.Histograms++
		}
		if len(ts.Exemplars) > 0 {
			exemplars = exemplars[:0]
			for _, ep := range ts.Exemplars {
				e, err := ep.ToExemplar(&b, req.Symbols)
				if err != nil {
					errs = append(errs, fmt.Errorf("parsing exemplar for series %v: %w", ls.String(), err))
					continue
				}
				exemplars = append(exemplars, e)
			}
			if len(exemplars) > 0 {
				slices.SortFunc(exemplars, exemplar.Compare)
				_, _ = app.AppendExemplars(0, ls, exemplars)
				stats.Exemplars += len(exemplars)
			}
		}
		app.endSeries()
	}
	wr.Add(stats)
	if err := app.Commit(); err != nil {
		return nil, err
	}
	if len(errs) > 0 {
		wr.SetStatusCode(http.StatusBadRequest)
		return wr, errors.Join(errs...)
	}
	return wr, nil
}
