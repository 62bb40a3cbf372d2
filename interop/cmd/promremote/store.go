package main

// store is the storage side of Prometheus v3.9.1's receiver
// (storage/remote.writeHandler.Store with write and appendV2), restated
// here because importing storage/remote would pull the OTLP and
// OpenTelemetry collector modules into interop/go.mod. Everything that
// decides an outcome is Prometheus' own: gogo unmarshalling, ToLabels /
// desymbolization and their errors, labels.IsValid(model.UTF8Validation),
// HasDuplicateLabelNames, ToMetadata, ToExemplar; the negotiation, snappy
// limit and headers come from client_golang's real handler. What is
// restated is the control flow and the message formats of the 400 answers
// (start-timestamp ingestion and metadata appends enabled; type-and-unit
// labels off), with appends that always succeed.

import (
	"errors"
	"fmt"
	"io"
	"net/http"

	"github.com/gogo/protobuf/proto"
	remoteapi "github.com/prometheus/client_golang/exp/api/remote"
	"github.com/prometheus/common/model"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/metadata"
	"github.com/prometheus/prometheus/prompb"
	writev2 "github.com/prometheus/prometheus/prompb/io/prometheus/write/v2"
	"github.com/prometheus/prometheus/storage"
)

type store struct{ app storage.Appendable }

func (s *store) Store(r *http.Request, msgType remoteapi.WriteMessageType) (*remoteapi.WriteResponse, error) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return nil, err
	}
	wr := remoteapi.NewWriteResponse()
	app := s.app.Appender(r.Context())
	if msgType == remoteapi.WriteV1MessageType {
		var req prompb.WriteRequest
		if err := proto.Unmarshal(body, &req); err != nil {
			wr.SetStatusCode(http.StatusBadRequest)
			return wr, err
		}
		b := labels.NewScratchBuilder(0)
		for _, ts := range req.Timeseries {
			ls := ts.ToLabels(&b, nil)
			if !ls.Has(labels.MetricName) || !ls.IsValid(model.UTF8Validation) {
				continue
			} else if _, dup := ls.HasDuplicateLabelNames(); dup {
				continue
			}
			for _, x := range ts.Samples {
				_, _ = app.Append(0, ls, x.Timestamp, x.Value)
			}
			for _, ep := range ts.Exemplars {
				_, _ = app.AppendExemplar(0, ls, ep.ToExemplar(&b, nil))
			}
			for _, hp := range ts.Histograms {
				_, _ = app.AppendHistogram(0, ls, hp.Timestamp, nil, nil)
			}
		}
		return wr, app.Commit()
	}

	var req writev2.Request
	if err := proto.Unmarshal(body, &req); err != nil {
		wr.SetStatusCode(http.StatusBadRequest)
		return wr, err
	}
	var (
		errs  []error
		stats remoteapi.WriteResponseStats
		b     = labels.NewScratchBuilder(0)
	)
	for _, ts := range req.Timeseries {
		ls, err := ts.ToLabels(&b, req.Symbols)
		if err != nil {
			errs = append(errs, fmt.Errorf("parsing labels for series %v: %w", ts.LabelsRefs, err))
			continue
		}
		m, err := toMetadata(ts, req.Symbols)
		if err != nil {
			// Prometheus panics here; Ferrite refuses the series.
			errs = append(errs, err)
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
		for _, x := range ts.Samples {
			if x.StartTimestamp != 0 && x.Timestamp != 0 {
				_, _ = app.AppendSTZeroSample(0, ls, x.Timestamp, x.StartTimestamp)
			}
			_, _ = app.Append(0, ls, x.Timestamp, x.Value)
			stats.Samples++
		}
		for _, hp := range ts.Histograms {
			_, _ = app.AppendHistogram(0, ls, hp.Timestamp, nil, nil)
			stats.Histograms++
		}
		for _, ep := range ts.Exemplars {
			e, err := ep.ToExemplar(&b, req.Symbols)
			if err != nil {
				errs = append(errs, fmt.Errorf("parsing exemplar for series %v: %w", ls.String(), err))
				continue
			}
			_, _ = app.AppendExemplar(0, ls, e)
			stats.Exemplars++
		}
		_, _ = app.UpdateMetadata(0, ls, m)
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

// toMetadata is ts.ToMetadata, turning its index-out-of-range panic into
// the error Ferrite reports.
func toMetadata(ts writev2.TimeSeries, symbols []string) (metadata.Metadata, error) {
	if int(ts.Metadata.HelpRef) >= len(symbols) || int(ts.Metadata.UnitRef) >= len(symbols) {
		return metadata.Metadata{}, fmt.Errorf("parsing metadata for series %v: help_ref %d or unit_ref %d outside of symbols table (size %d)",
			ts.LabelsRefs, ts.Metadata.HelpRef, ts.Metadata.UnitRef, len(symbols))
	}
	return ts.ToMetadata(symbols), nil
}
