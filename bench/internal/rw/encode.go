package rw

import (
	"github.com/golang/snappy"
	"github.com/prometheus/prometheus/prompb"
)

// request is one encoded remote write request: the snappy-compressed
// protobuf body, how many samples it carries and its newest timestamp.
type request struct {
	body    []byte
	samples int
	newest  int64
}

// shardEncoder builds the requests of one shard: its series (s with
// s%Concurrency == shard), one sample per series per round, BatchSize
// samples per request, each series' samples in time order.
type shardEncoder struct {
	cfg       *Config
	instances []string
	labelsFn  func([]prompb.Label, int, []string) []prompb.Label
	mine      []int     // the shard's series
	prev      []float64 // float series: the previous round's value
	pos       []int32   // index of series i in the pending request, -1: absent
	touched   []int     // series in the pending request
	lblBufs   [][]prompb.Label
	req       prompb.WriteRequest
	nSamples  int
	newest    int64 // newest timestamp in the pending request
	raw, comp []byte
}

func newShardEncoder(cfg *Config, shard int, instances []string) *shardEncoder {
	e := &shardEncoder{cfg: cfg, instances: instances, labelsFn: Labels}
	if cfg.Histograms {
		e.labelsFn = HistLabels
	}
	for s := shard; s < cfg.Series; s += cfg.Concurrency {
		e.mine = append(e.mine, s)
	}
	e.prev = make([]float64, len(e.mine))
	e.pos = make([]int32, len(e.mine))
	for i := range e.pos {
		e.pos[i] = -1
	}
	return e
}

// instancesFor are the instance label values of series' targets.
func instancesFor(series int) []string {
	instances := make([]string, series/SeriesPerTarget+1)
	for i := range instances {
		instances[i] = Instance(i)
	}
	return instances
}

// round adds round r's samples and hands every full request to emit (its
// body is valid until emit returns). A request may span rounds only while
// the shard has fewer series than a batch; last flushes whatever the round
// left. It returns false as soon as emit does.
func (e *shardEncoder) round(r int64, last bool, emit func(request) bool) bool {
	ts := e.cfg.StartMs + r*e.cfg.IntervalMs
	for i, s := range e.mine {
		t := e.series(i, s)
		if e.cfg.Histograms {
			k := len(t.Histograms)
			if k < cap(t.Histograms) {
				t.Histograms = t.Histograms[:k+1]
			} else {
				t.Histograms = append(t.Histograms, prompb.Histogram{})
			}
			FillHistogram(&t.Histograms[k], s, r, ts)
		} else {
			v := Value(s, r, e.prev[i])
			e.prev[i] = v
			t.Samples = append(t.Samples, prompb.Sample{Value: v, Timestamp: ts})
		}
		e.nSamples++
		e.newest = ts
		if e.nSamples >= e.cfg.BatchSize && !e.flush(emit) {
			return false
		}
	}
	if last || len(e.mine) >= e.cfg.BatchSize {
		return e.flush(emit)
	}
	return true
}

// series is the pending request's time series of the shard's series i
// (s), added with its labels when absent.
func (e *shardEncoder) series(i, s int) *prompb.TimeSeries {
	if e.pos[i] < 0 {
		k := len(e.req.Timeseries)
		if k < cap(e.req.Timeseries) {
			e.req.Timeseries = e.req.Timeseries[:k+1]
		} else {
			e.req.Timeseries = append(e.req.Timeseries, prompb.TimeSeries{})
		}
		if k >= len(e.lblBufs) {
			e.lblBufs = append(e.lblBufs, nil)
		}
		e.lblBufs[k] = e.labelsFn(e.lblBufs[k], s, e.instances)
		t := &e.req.Timeseries[k]
		t.Labels = e.lblBufs[k]
		t.Samples = t.Samples[:0]
		t.Histograms = t.Histograms[:0]
		e.pos[i] = int32(k)
		e.touched = append(e.touched, i)
	}
	return &e.req.Timeseries[e.pos[i]]
}

// flush encodes the pending request, if any, hands it to emit and starts
// the next one.
func (e *shardEncoder) flush(emit func(request) bool) bool {
	if e.nSamples == 0 {
		return true
	}
	size := e.req.Size()
	if cap(e.raw) < size {
		e.raw = make([]byte, size)
	}
	e.raw = e.raw[:size]
	n, err := e.req.MarshalToSizedBuffer(e.raw)
	if err != nil {
		panic(err) // a sized buffer of Size() bytes always fits
	}
	e.comp = snappy.Encode(e.comp[:cap(e.comp)], e.raw[size-n:])
	rq := request{body: e.comp, samples: e.nSamples, newest: e.newest}
	for _, i := range e.touched {
		e.pos[i] = -1
	}
	e.touched = e.touched[:0]
	e.req.Timeseries = e.req.Timeseries[:0]
	e.nSamples = 0
	return emit(rq)
}
