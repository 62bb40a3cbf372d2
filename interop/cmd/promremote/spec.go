package main

import (
	"encoding/hex"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/gogo/protobuf/proto"
	"github.com/golang/snappy"
	"github.com/prometheus/common/model"

	"github.com/prometheus/prometheus/prompb"
	writev2 "github.com/prometheus/prometheus/prompb/io/prometheus/write/v2"
)

// Spec is one request. Series build the message with Prometheus' types;
// ProtoHex replaces the message bytes, BodyHex the whole (compressed) body.
type Spec struct {
	Name            string       `json:"name"`
	Version         int          `json:"version"`
	ContentType     *string      `json:"content_type,omitempty"`
	ContentEncoding *string      `json:"content_encoding,omitempty"`
	Series          []SeriesSpec `json:"series,omitempty"`
	Metadata        []MetaSpec   `json:"metadata,omitempty"`
	Symbols         []string     `json:"symbols,omitempty"`
	ProtoHex        string       `json:"proto_hex,omitempty"`
	BodyHex         string       `json:"body_hex,omitempty"`
}

type SeriesSpec struct {
	Labels     [][2]string    `json:"labels,omitempty"`
	Refs       []uint32       `json:"refs,omitempty"`
	Samples    []SampleSpec   `json:"samples,omitempty"`
	Exemplars  []ExemplarSpec `json:"exemplars,omitempty"`
	Histograms []int64        `json:"histograms,omitempty"`
	Meta       *MetaSpec      `json:"meta,omitempty"`
}

// SampleSpec: V, or VBits (hex float64 bits) for NaNs.
type SampleSpec struct {
	T     int64   `json:"t"`
	V     float64 `json:"v"`
	VBits string  `json:"v_bits,omitempty"`
	ST    int64   `json:"st,omitempty"`
}

type ExemplarSpec struct {
	Labels [][2]string `json:"labels,omitempty"`
	Refs   []uint32    `json:"refs,omitempty"`
	T      int64       `json:"t"`
	V      float64     `json:"v"`
}

type MetaSpec struct {
	Family  string  `json:"family,omitempty"`
	Type    string  `json:"type,omitempty"`
	Help    string  `json:"help,omitempty"`
	Unit    string  `json:"unit,omitempty"`
	HelpRef *uint32 `json:"help_ref,omitempty"`
	UnitRef *uint32 `json:"unit_ref,omitempty"`
}

func (s SampleSpec) value() (float64, error) {
	if s.VBits == "" {
		return s.V, nil
	}
	b, err := strconv.ParseUint(strings.TrimPrefix(s.VBits, "0x"), 16, 64)
	return math.Float64frombits(b), err
}

// Body is the request body: the marshalled message, snappy block encoded.
func (s Spec) Body() ([]byte, error) {
	if s.BodyHex != "" {
		return hex.DecodeString(s.BodyHex)
	}
	var raw []byte
	var err error
	switch {
	case s.ProtoHex != "":
		raw, err = hex.DecodeString(s.ProtoHex)
	case s.Version == 1:
		raw, err = s.v1()
	case s.Version == 2:
		raw, err = s.v2()
	default:
		err = fmt.Errorf("version must be 1 or 2")
	}
	if err != nil {
		return nil, err
	}
	return snappy.Encode(nil, raw), nil
}

func (s Spec) v1() ([]byte, error) {
	var req prompb.WriteRequest
	for _, ss := range s.Series {
		ts := prompb.TimeSeries{}
		for _, l := range ss.Labels {
			ts.Labels = append(ts.Labels, prompb.Label{Name: l[0], Value: l[1]})
		}
		for _, x := range ss.Samples {
			v, err := x.value()
			if err != nil {
				return nil, err
			}
			ts.Samples = append(ts.Samples, prompb.Sample{Timestamp: x.T, Value: v})
		}
		for _, e := range ss.Exemplars {
			ex := prompb.Exemplar{Timestamp: e.T, Value: e.V}
			for _, l := range e.Labels {
				ex.Labels = append(ex.Labels, prompb.Label{Name: l[0], Value: l[1]})
			}
			ts.Exemplars = append(ts.Exemplars, ex)
		}
		for _, t := range ss.Histograms {
			ts.Histograms = append(ts.Histograms, prompb.Histogram{
				Count:         &prompb.Histogram_CountInt{CountInt: 1},
				Sum:           0.5,
				ZeroThreshold: 1e-3,
				ZeroCount:     &prompb.Histogram_ZeroCountInt{ZeroCountInt: 1},
				Timestamp:     t,
			})
		}
		req.Timeseries = append(req.Timeseries, ts)
	}
	for _, m := range s.Metadata {
		req.Metadata = append(req.Metadata, prompb.MetricMetadata{
			Type:             prompb.FromMetadataType(model.MetricType(m.Type)),
			MetricFamilyName: m.Family,
			Help:             m.Help,
			Unit:             m.Unit,
		})
	}
	return proto.Marshal(&req)
}

func (s Spec) v2() ([]byte, error) {
	st := writev2.NewSymbolTable()
	explicit := len(s.Symbols) > 0
	sym := func(str string) uint32 { return st.Symbolize(str) }
	refs := func(given []uint32, ls [][2]string) []uint32 {
		if given != nil || explicit {
			return given
		}
		var out []uint32
		for _, l := range ls {
			out = append(out, sym(l[0]), sym(l[1]))
		}
		return out
	}
	var req writev2.Request
	for _, ss := range s.Series {
		ts := writev2.TimeSeries{LabelsRefs: refs(ss.Refs, ss.Labels)}
		for _, x := range ss.Samples {
			v, err := x.value()
			if err != nil {
				return nil, err
			}
			ts.Samples = append(ts.Samples, writev2.Sample{Timestamp: x.T, Value: v, StartTimestamp: x.ST})
		}
		for _, e := range ss.Exemplars {
			ts.Exemplars = append(ts.Exemplars, writev2.Exemplar{LabelsRefs: refs(e.Refs, e.Labels), Timestamp: e.T, Value: e.V})
		}
		for _, t := range ss.Histograms {
			ts.Histograms = append(ts.Histograms, writev2.Histogram{
				Count:         &writev2.Histogram_CountInt{CountInt: 1},
				Sum:           0.5,
				ZeroThreshold: 1e-3,
				ZeroCount:     &writev2.Histogram_ZeroCountInt{ZeroCountInt: 1},
				Timestamp:     t,
			})
		}
		if m := ss.Meta; m != nil {
			ts.Metadata.Type = writev2.FromMetadataType(model.MetricType(m.Type))
			if m.HelpRef != nil {
				ts.Metadata.HelpRef = *m.HelpRef
			} else if !explicit {
				ts.Metadata.HelpRef = sym(m.Help)
			}
			if m.UnitRef != nil {
				ts.Metadata.UnitRef = *m.UnitRef
			} else if !explicit {
				ts.Metadata.UnitRef = sym(m.Unit)
			}
		}
		req.Timeseries = append(req.Timeseries, ts)
	}
	if explicit {
		req.Symbols = s.Symbols
	} else {
		req.Symbols = st.Symbols()
	}
	return proto.Marshal(&req)
}

// FormatHeaders is the .headers file for the given (possibly absent) headers.
func FormatHeaders(ct, ce *string) string {
	var b strings.Builder
	if ct != nil {
		fmt.Fprintf(&b, "content-type: %s\n", *ct)
	}
	if ce != nil {
		fmt.Fprintf(&b, "content-encoding: %s\n", *ce)
	}
	return b.String()
}

// ParseHeaders reads a .headers file.
func ParseHeaders(s string) (ct, ce *string, err error) {
	for _, line := range strings.Split(s, "\n") {
		if line == "" {
			continue
		}
		k, v, ok := strings.Cut(line, ": ")
		if !ok {
			k, v, ok = strings.Cut(line, ":")
		}
		v2 := v
		switch {
		case ok && k == "content-type":
			ct = &v2
		case ok && k == "content-encoding":
			ce = &v2
		default:
			return nil, nil, fmt.Errorf("bad header line %q", line)
		}
	}
	return ct, ce, nil
}
