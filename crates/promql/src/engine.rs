//! Query parsing and the evaluator core: selectors, subqueries, literals.
//!
//! Every expression is evaluated for all steps at once ([`Ev`]): a scalar is a
//! value per step, an instant vector a vector per step, a range vector a set
//! of series plus the window each step sees ([`RangeData`]). A selector is
//! selected once, over the union of its steps' windows; steps then only
//! binary-search that sample list.
//!
//! Operations that change what a series measures mark its samples with
//! `drop_name`. With delayed name removal (Prometheus'
//! `EnableDelayedNameRemoval`, which its test engine uses) the name goes
//! away when the query's result is built, so that e.g. `label_replace` can
//! still read `__name__` of a `rate()`; without it (Prometheus' default)
//! `Evaluator::settle_names` drops it right after the operation and
//! refuses series that collapse to one label set.

use std::collections::HashMap;
use std::ops::ControlFlow;
use std::sync::Arc;
use std::time::Instant;

use crate::parser::{self, AtModifier, Duration, DurationContext, Expr, ValueType, VectorSelector};

use crate::annotations::Annotations;
use crate::extended::{Extended, Extension};
use crate::functions::RangeSink;
use crate::parsed::{parse, ParsedExpr};
use crate::stack::with_stack_for;
use crate::stats::{QueryStats, SampleStats};
use crate::storage::{is_stale_nan, Labels, LazySeries, Matcher, Querier, Queryable, SelectHints};
use crate::tracker::{LoggedQuery, QueryOrigin, QueryTracker};
use crate::value::{Sample, SeriesResult, Value};
use crate::{eval_err, Error, Result};
use ferrite_model::FloatHistogram;
use rayon::prelude::*;

/// A histogram sample's value, shared between the steps and series that
/// hold it.
pub(crate) type Hist = Arc<FloatHistogram>;

/// Engine limits and defaults.
#[derive(Clone, Debug)]
pub struct EngineOptions {
    /// How far back an instant selector looks for a sample (default 5m).
    pub lookback_delta_ms: i64,
    /// The most samples a query may hold at once (Prometheus' `--query.max-samples`).
    pub max_samples: usize,
    /// Wall-clock limit of one query.
    pub timeout: std::time::Duration,
    /// Step of subqueries written without one (`x[5m:]`); Prometheus uses
    /// the global evaluation interval, the test runner 1m.
    pub default_subquery_step_ms: i64,
    /// Prometheus' `promql-delayed-name-removal` feature (off by default in
    /// Prometheus, on in its test engine): the metric name goes away only
    /// when the query's result is built. Off, operations that change what a
    /// series measures drop it at once, and a vector in which series then
    /// collapse to the same label set is an error ("vector cannot contain
    /// metrics with the same labelset"), where Prometheus checks it.
    pub delayed_name_removal: bool,
}

impl Default for EngineOptions {
    fn default() -> Self {
        EngineOptions {
            lookback_delta_ms: 5 * 60 * 1000,
            max_samples: 50_000_000,
            timeout: std::time::Duration::from_secs(120),
            default_subquery_step_ms: 60 * 1000,
            delayed_name_removal: false,
        }
    }
}

/// A query's value and its annotations.
#[derive(Clone, Debug)]
pub struct QueryResult {
    pub value: Value,
    /// "PromQL warning: ..." annotations.
    pub warnings: Vec<String>,
    /// "PromQL info: ..." annotations.
    pub infos: Vec<String>,
    /// What the query cost (timings and samples).
    pub stats: QueryStats,
}

/// The PromQL engine: its options and, in a server, the tracker its
/// queries go through.
#[derive(Clone, Debug, Default)]
pub struct Engine {
    pub opts: EngineOptions,
    /// The server's query slots, metrics and log (none: queries run at
    /// once and are recorded nowhere).
    pub tracker: Option<Arc<QueryTracker>>,
    /// Who asks this engine's queries, for the query log.
    pub origin: QueryOrigin,
}

pub(crate) type Lbl = Arc<Labels>;

/// Prometheus' error for two series with the same labels in one vector.
pub(crate) const DUPLICATE_LABELSET: &str = "vector cannot contain metrics with the same labelset";

/// A sample of an intermediate instant vector (time is the step's).
#[derive(Clone, Debug)]
pub(crate) struct Samp {
    pub labels: Lbl,
    /// The value of a float sample (0 for a histogram).
    pub f: f64,
    /// The value of a native histogram sample.
    pub h: Option<Hist>,
    /// The metric name is to be removed from the result.
    pub drop_name: bool,
}

impl Samp {
    /// A float sample.
    pub fn float(labels: Lbl, f: f64, drop_name: bool) -> Samp {
        Samp {
            labels,
            f,
            h: None,
            drop_name,
        }
    }
}

/// One series of a range vector.
#[derive(Clone, Debug)]
pub(crate) struct RangeSeries {
    pub labels: Lbl,
    /// Float samples, time-ordered, without staleness markers.
    pub samples: Vec<(i64, f64)>,
    /// Histogram samples, time-ordered, without staleness markers.
    pub hists: Vec<(i64, Hist)>,
    pub drop_name: bool,
}

/// A series' samples as read from storage, in buffers reused from series
/// to series.
#[derive(Default)]
pub(crate) struct ReadBuf {
    pub floats: Vec<(i64, f64)>,
    pub hists: Vec<(i64, Hist)>,
    raw: Vec<(i64, FloatHistogram)>,
}

impl ReadBuf {
    /// Reads a series' floats and histograms (staleness markers included).
    pub fn read(&mut self, s: &LazySeries<'_>) -> Result<()> {
        s.source.read_into(&mut self.floats)?;
        s.source.read_histograms_into(&mut self.raw)?;
        self.hists.clear();
        self.hists
            .extend(self.raw.drain(..).map(|(t, h)| (t, Arc::new(h))));
        Ok(())
    }

    /// How many samples were read.
    pub fn len(&self) -> usize {
        self.floats.len() + self.hists.len()
    }
}

/// One series' results at the steps that have one: floats and histograms
/// (a step has at most one of them), and annotations about the series.
#[derive(Default)]
pub(crate) struct StepValues {
    pub floats: Vec<(usize, f64)>,
    pub hists: Vec<(usize, Hist)>,
    pub notes: Vec<crate::annotations::Note>,
    /// Samples the series' windows held, summed over the steps (a range
    /// function's; see [`crate::stats`]).
    pub used: i64,
    /// ... each sample counted at the first step whose window holds it.
    pub fresh: i64,
}

impl StepValues {
    /// A range function's value at a step, if it has one.
    pub fn push_result(&mut self, step: usize, result: Option<crate::histfn::Out>) {
        match result {
            Some(crate::histfn::Out::F(f)) => self.floats.push((step, f)),
            Some(crate::histfn::Out::H(h)) => self.hists.push((step, crate::histfn::shared(h))),
            None => {}
        }
    }

    pub fn clear(&mut self) {
        self.floats.clear();
        self.hists.clear();
        self.notes.clear();
        self.used = 0;
        self.fresh = 0;
    }

    pub fn len(&self) -> usize {
        self.floats.len() + self.hists.len()
    }

    /// Counts a step's window (see [`crate::stats`]): whole in `used`, and
    /// in `fresh` the samples after `after` (the step before's end; all
    /// samples at the first step).
    pub fn count_window(&mut self, w: &[(i64, f64)], wh: &[(i64, Hist)], after: Option<i64>) {
        let weigh = |w: &[(i64, f64)], wh: &[(i64, Hist)]| {
            crate::stats::weight_of(w.len(), wh.iter().map(|(_, h)| &**h))
        };
        self.used += weigh(w, wh);
        self.fresh += match after {
            None => weigh(w, wh),
            Some(a) => weigh(
                &w[w.partition_point(|&(t, _)| t <= a)..],
                &wh[wh.partition_point(|(t, _)| *t <= a)..],
            ),
        };
    }

    /// Adds a note once.
    pub fn note(&mut self, n: crate::annotations::Note) {
        if !self.notes.contains(&n) {
            self.notes.push(n);
        }
    }
}

/// A range vector for all steps: series plus how a step finds its window.
/// An instant vector selector's sample at each step: the newest at or before
/// the step's evaluation time within the lookback, unless a staleness
/// marker.
struct StepPicker<'a> {
    /// Evaluation time of each step (after `@` and `offset`).
    etimes: &'a [i64],
    /// Whether `etimes` never decrease (they do not in range queries).
    ascending: bool,
    lookback: i64,
    want_ts: bool,
    /// `x smoothed`: values interpolated at each step (see `extended`).
    smoothed: bool,
    /// Histogram hints derived as read for count and sum only.
    stats_hints: bool,
}

impl StepPicker<'_> {
    /// Histogram `i` as read at evaluation time `e`: with its hint derived
    /// from the one before (if read too: within the lookback) when read for
    /// count and sum only.
    fn hist_as_read(&self, hists: &[(i64, Hist)], i: usize, e: i64) -> Hist {
        let h = &hists[i].1;
        if !self.stats_hints {
            return h.clone();
        }
        let prev = i
            .checked_sub(1)
            .map(|j| &hists[j])
            .filter(|(t, _)| *t > e - self.lookback)
            .map(|(_, p)| p);
        crate::stats_hints::derived(h, prev).unwrap_or_else(|| h.clone())
    }

    /// (step, value) of the steps that have a sample, in step order.
    fn pick(&self, buf: &ReadBuf, out: &mut StepValues) {
        out.clear();
        let (samples, hists) = (&buf.floats, &buf.hists);
        if self.smoothed {
            return crate::extended::pick_smoothed(self.etimes, self.lookback, samples, hists, out);
        }
        // While evaluation times do not decrease, one cursor walks the samples.
        let (mut idx, mut hidx) = (0, 0);
        for (step, &e) in self.etimes.iter().enumerate() {
            if self.ascending {
                while idx < samples.len() && samples[idx].0 <= e {
                    idx += 1;
                }
                while hidx < hists.len() && hists[hidx].0 <= e {
                    hidx += 1;
                }
            } else {
                idx = samples.partition_point(|&(t, _)| t <= e);
                hidx = hists.partition_point(|(t, _)| *t <= e);
            }
            let ft = idx.checked_sub(1).map(|i| samples[i].0);
            let ht = hidx.checked_sub(1).map(|i| hists[i].0);
            // The newer of the two kinds is the series' sample.
            if ht.is_some_and(|ht| ft.is_none_or(|ft| ht > ft)) {
                let (st, h) = &hists[hidx - 1];
                if *st > e - self.lookback && !h.is_stale() {
                    if self.want_ts {
                        out.floats.push((step, *st as f64 / 1000.0));
                    } else {
                        out.hists
                            .push((step, self.hist_as_read(hists, hidx - 1, e)));
                    }
                }
                continue;
            }
            if idx == 0 {
                continue;
            }
            let (st, v) = samples[idx - 1];
            if st > e - self.lookback && !is_stale_nan(v) {
                out.floats
                    .push((step, if self.want_ts { st as f64 / 1000.0 } else { v }));
            }
        }
    }
}

/// Selections of at least this many series are read (and their steps
/// evaluated) on every core, in batches of [`PARALLEL_BATCH`] series:
/// reading, chunk decoding, is most of their cost. Results reach their sink
/// in series order all the same, so aggregations add them up in the same
/// order, and the results are those of one thread bit for bit.
const PARALLEL_MIN_SERIES: usize = 64;
const PARALLEL_BATCH: usize = 64;

/// Whether to read `series` on every core: enough of them, more than one
/// core, and samples still to decode (not in memory already).
fn worth_parallel(series: &[LazySeries<'_>]) -> bool {
    series.len() >= PARALLEL_MIN_SERIES
        && rayon::current_num_threads() > 1
        && !series.first().is_some_and(|s| s.source.in_memory())
}

/// A series' sample count and its (step, value) results.
type SeriesValues = (usize, StepValues);

/// Evaluates selected series one by one: `eval` reads a series (into a
/// reused sample buffer), writes its (step, value) results and returns its
/// sample count; `emit` then takes them, with the series, in selection
/// order, and says whether to go on (a sink may want no more: see
/// [`crate::functions::RangeSink::abandoned`]). When [`worth_parallel`],
/// `eval` runs on every core, a batch of
/// [`PARALLEL_BATCH`] series at a time, reading `state` shared; `emit`
/// stays on this thread, in order, with `state` to itself. A batch holds
/// the values of all its series at once, so with `steps` steps it has at
/// most as many series as keep it within the max-samples limit.
pub(crate) fn eval_series<'q, S: Sync>(
    ev: &mut Evaluator,
    steps: usize,
    series: Vec<LazySeries<'q>>,
    state: &mut S,
    eval: impl Fn(&S, &LazySeries<'q>, &mut ReadBuf, &mut StepValues) -> Result<usize> + Sync,
    mut emit: impl FnMut(
        &mut Evaluator,
        &mut S,
        usize,
        LazySeries<'q>,
        usize,
        &StepValues,
    ) -> Result<ControlFlow<()>>,
) -> Result<()> {
    if !worth_parallel(&series) {
        let (mut buf, mut values) = (ReadBuf::default(), StepValues::default());
        for (i, s) in series.into_iter().enumerate() {
            ev.check_deadline()?;
            let n = eval(state, &s, &mut buf, &mut values)?;
            if emit(ev, state, i, s, n, &values)?.is_break() {
                return Ok(());
            }
        }
        return Ok(());
    }
    let batch_len = PARALLEL_BATCH.min((ev.max_samples / steps.max(1)).max(1));
    let mut series = series.into_iter().enumerate();
    loop {
        let batch: Vec<_> = series.by_ref().take(batch_len).collect();
        if batch.is_empty() {
            return Ok(());
        }
        ev.check_deadline()?;
        let shared = &*state;
        let results: Vec<Result<SeriesValues>> = batch
            .par_iter()
            .map_init(ReadBuf::default, |buf, (_, s)| {
                let mut values = StepValues::default();
                let n = eval(shared, s, buf, &mut values)?;
                Ok((n, values))
            })
            .collect();
        for ((i, s), r) in batch.into_iter().zip(results) {
            let (n, values) = r?;
            if emit(ev, state, i, s, n, &values)?.is_break() {
                return Ok(());
            }
        }
    }
}

/// Whether an evaluation into `sink` goes on with the next series.
pub(crate) fn go_on(sink: &dyn RangeSink) -> ControlFlow<()> {
    if sink.abandoned() {
        ControlFlow::Break(())
    } else {
        ControlFlow::Continue(())
    }
}

/// Reads a selected series' samples into `buf` without staleness markers
/// (range vectors never hold them).
pub(crate) fn read_series_samples(s: &LazySeries<'_>, buf: &mut ReadBuf) -> Result<()> {
    buf.read(s)?;
    buf.floats.retain(|&(_, v)| !is_stale_nan(v));
    buf.hists.retain(|(_, h)| !h.is_stale());
    Ok(())
}

#[derive(Clone, Debug)]
pub(crate) struct RangeData {
    pub series: Vec<RangeSeries>,
    pub range: i64,
    pub offset: i64,
    pub at: Option<i64>,
    /// Anchored or smoothed windows (selectors only).
    pub extended: Option<Extended>,
    /// Histogram hints derived as read for count and sum only (see
    /// `stats_hints`; selectors only).
    pub stats_hints: bool,
}

impl RangeData {
    /// The time a step evaluates at (after `@` and `offset`).
    pub fn eval_time(&self, step_t: i64) -> i64 {
        self.at.unwrap_or(step_t) - self.offset
    }

    /// The float samples of series `i` in the window (t - range, t] of a step.
    pub fn window(&self, i: usize, step_t: i64) -> &[(i64, f64)] {
        let t = self.eval_time(step_t);
        let s = &self.series[i].samples;
        let a = s.partition_point(|&(st, _)| st <= t - self.range);
        let b = s.partition_point(|&(st, _)| st <= t);
        &s[a..b.max(a)]
    }

    /// The histogram samples of series `i` in the window of a step.
    pub fn hist_window(&self, i: usize, step_t: i64) -> &[(i64, Hist)] {
        let t = self.eval_time(step_t);
        let s = &self.series[i].hists;
        let a = s.partition_point(|(st, _)| *st <= t - self.range);
        let b = s.partition_point(|(st, _)| *st <= t);
        &s[a..b.max(a)]
    }

    /// [`Self::window`] for steps taken in increasing time: `cursor` holds
    /// the previous window's bounds and moves forward, so a range query
    /// walks each series once instead of binary-searching it at every step
    /// (which misses the cache on long series). Falls back to a search
    /// when time goes backwards.
    #[cfg(test)]
    pub fn window_at(&self, i: usize, step_t: i64, cursor: &mut (usize, usize)) -> &[(i64, f64)] {
        window_in(
            &self.series[i].samples,
            self.eval_time(step_t),
            self.range,
            cursor,
        )
    }
}

/// The samples of `s` in the window (t - range, t], found from `cursor` (the
/// previous window's bounds, moved forward) when time goes forward, by
/// binary search when it goes backwards. See [`RangeData::window_at`].
pub(crate) fn window_in<'s, T>(
    s: &'s [(i64, T)],
    t: i64,
    range: i64,
    cursor: &mut (usize, usize),
) -> &'s [(i64, T)] {
    let (mut a, mut b) = *cursor;
    let behind = |k: usize, limit: i64| k > 0 && s.get(k - 1).is_some_and(|(st, _)| *st > limit);
    if a > s.len() || b > s.len() || behind(a, t - range) || behind(b, t) {
        a = s.partition_point(|(st, _)| *st <= t - range);
        b = s.partition_point(|(st, _)| *st <= t);
    } else {
        while s.get(a).is_some_and(|(st, _)| *st <= t - range) {
            a += 1;
        }
        b = b.max(a);
        while s.get(b).is_some_and(|(st, _)| *st <= t) {
            b += 1;
        }
    }
    *cursor = (a, b);
    &s[a..b.max(a)]
}

/// The value of an expression over all steps.
#[derive(Debug)]
pub(crate) enum Ev {
    Scalar(Vec<f64>),
    Str(String),
    Vector(Vec<Vec<Samp>>),
    Matrix(RangeData),
}

impl Ev {
    pub fn type_name(&self) -> &'static str {
        match self {
            Ev::Scalar(_) => "scalar",
            Ev::Str(_) => "string",
            Ev::Vector(_) => "instant vector",
            Ev::Matrix(_) => "range vector",
        }
    }
}

/// Evaluation state of one query.
pub(crate) struct Evaluator<'q> {
    querier: &'q dyn Querier,
    pub lookback: i64,
    /// The query's own start and end, for `@ start()` / `@ end()`.
    pub query_start: i64,
    pub query_end: i64,
    deadline: Instant,
    max_samples: usize,
    /// Steps of the step arrays being evaluated (the query's and its
    /// subqueries'): the engine holds at least one entry per step, so they
    /// count toward `max_samples` together.
    steps_held: usize,
    default_subquery_step: i64,
    /// See [`EngineOptions::delayed_name_removal`].
    pub delayed_name_removal: bool,
    pub annos: Annotations,
    /// What `step()` and `range()` are in duration expressions.
    pub durations: DurationContext,
    /// The selectors read for histogram count and sum only (see
    /// `stats_hints`).
    stats_reads: std::collections::HashSet<usize>,
    /// The query's sample counts so far (the peak is kept in `peak`).
    pub(crate) stats: crate::stats::SampleStats,
    /// The most samples counted toward `max_samples` at once.
    peak: std::cell::Cell<usize>,
}

/// A range or step in milliseconds. (Durations that do not resolve were
/// refused before evaluation, by [`check_durations`].)
pub(crate) fn range_ms(d: &Duration, ctx: &DurationContext) -> i64 {
    d.resolve(ctx, false).unwrap_or(0)
}

/// An offset in milliseconds (0 without one).
pub(crate) fn offset_ms(o: &Option<Duration>, ctx: &DurationContext) -> i64 {
    o.as_ref().map_or(0, |d| d.resolve(ctx, true).unwrap_or(0))
}

/// Computes every duration expression of a query for its step and range,
/// as Prometheus does before evaluating: one that is not a valid duration
/// is the query's error.
fn check_durations(expr: &Expr, ctx: &DurationContext) -> Result<()> {
    let check = |d: &Duration, negative_ok: bool| d.resolve(ctx, negative_ok).map(drop);
    for node in crate::parsed::nodes_of(expr) {
        let checked = match node {
            Expr::VectorSelector(vs) => vs.offset.as_ref().map_or(Ok(()), |o| check(o, true)),
            Expr::MatrixSelector(ms) => check(&ms.range, false)
                .and_then(|()| ms.vs.offset.as_ref().map_or(Ok(()), |o| check(o, true))),
            Expr::Subquery(sq) => check(&sq.range, false)
                .and_then(|()| sq.step.as_ref().map_or(Ok(()), |s| check(s, false)))
                .and_then(|()| sq.offset.as_ref().map_or(Ok(()), |o| check(o, true))),
            _ => Ok(()),
        };
        checked.map_err(Error::Eval)?;
    }
    Ok(())
}

impl Engine {
    pub fn new(opts: EngineOptions) -> Self {
        Engine {
            opts,
            tracker: None,
            origin: QueryOrigin::Unknown,
        }
    }

    /// The engine with its queries going through `tracker`, logged as
    /// coming from `origin`.
    pub fn tracked(self, tracker: Arc<QueryTracker>, origin: QueryOrigin) -> Self {
        Engine {
            tracker: Some(tracker),
            origin,
            ..self
        }
    }

    /// Evaluates `query` at `t` (ms).
    pub fn instant_query(&self, db: &dyn Queryable, query: &str, t: i64) -> Result<QueryResult> {
        let expr = parse(query)?;
        self.instant_query_parsed(db, query, &expr, t)
    }

    /// [`Engine::instant_query`] of a query already parsed from `query`.
    pub fn instant_query_parsed(
        &self,
        db: &dyn Queryable,
        query: &str,
        expr: &ParsedExpr,
        t: i64,
    ) -> Result<QueryResult> {
        with_stack_for(expr.depth(), || self.exec(db, query, expr, t, t, 0))
    }

    /// Evaluates `query` at every `step` from `start` to `end` (ms, inclusive).
    pub fn range_query(
        &self,
        db: &dyn Queryable,
        query: &str,
        start: i64,
        end: i64,
        step: i64,
    ) -> Result<QueryResult> {
        let expr = parse(query)?;
        self.range_query_parsed(db, query, &expr, start, end, step)
    }

    /// [`Engine::range_query`] of a query already parsed from `query`.
    pub fn range_query_parsed(
        &self,
        db: &dyn Queryable,
        query: &str,
        expr: &ParsedExpr,
        start: i64,
        end: i64,
        step: i64,
    ) -> Result<QueryResult> {
        if step <= 0 {
            return eval_err("zero or negative query resolution step widths are not accepted. Try a positive integer");
        }
        if end < start {
            return eval_err("end timestamp must not be before start time");
        }
        with_stack_for(expr.depth(), || {
            check_range_query_type(expr)?;
            self.exec(db, query, expr, start, end, step)
        })
    }

    /// Runs a query: in a query slot and recorded by the tracker, if the
    /// engine has one; its result carries what it cost.
    fn exec(
        &self,
        db: &dyn Queryable,
        query: &str,
        expr: &Expr,
        start: i64,
        end: i64,
        step: i64,
    ) -> Result<QueryResult> {
        let began = Instant::now();
        // The wait for a slot counts against the timeout, as in Prometheus.
        let deadline = began + self.opts.timeout;
        let span = QuerySpan { start, end, step };
        let mut stats = QueryStats::default();
        let res = match &self.tracker {
            None => {
                let res = self.evaluate(db, query, expr, span, deadline, &mut stats);
                stats.timings.exec_total = began.elapsed();
                res
            }
            Some(tracker) => {
                let _active = tracker.begin();
                let slot = tracker.acquire(deadline);
                stats.timings.exec_queue = began.elapsed();
                let res = match slot {
                    Some(_slot) => self.evaluate(db, query, expr, span, deadline, &mut stats),
                    None => Err(Error::Timeout("query queue")),
                };
                stats.timings.exec_total = began.elapsed();
                tracker.finish(&LoggedQuery {
                    query,
                    start_ms: start,
                    end_ms: end,
                    step_ms: step,
                    error: res.as_ref().err(),
                    stats: &stats,
                    origin: &self.origin,
                });
                res
            }
        };
        res.map(|mut r| {
            r.stats = stats;
            r
        })
    }

    /// Prepares, evaluates and builds a query's result, timing each part
    /// into `stats` (and its samples, also when it fails).
    fn evaluate(
        &self,
        db: &dyn Queryable,
        query: &str,
        expr: &Expr,
        span: QuerySpan,
        deadline: Instant,
        stats: &mut QueryStats,
    ) -> Result<QueryResult> {
        let QuerySpan { start, end, step } = span;
        let began = Instant::now();
        let durations = DurationContext {
            step_ms: step,
            range_ms: end - start,
        };
        check_durations(expr, &durations)?;
        let (mint, maxt) = SpanWalk {
            query_start: start,
            query_end: end,
            lookback: self.opts.lookback_delta_ms,
            default_subquery_step: self.opts.default_subquery_step_ms,
            durations,
        }
        .time_span(expr);
        let querier = db.querier(mint, maxt)?;
        stats.timings.query_preparation = began.elapsed();
        let mut ev = Evaluator {
            querier: querier.as_ref(),
            lookback: self.opts.lookback_delta_ms,
            query_start: start,
            query_end: end,
            deadline,
            max_samples: self.opts.max_samples,
            steps_held: 0,
            default_subquery_step: self.opts.default_subquery_step_ms,
            delayed_name_removal: self.opts.delayed_name_removal,
            annos: Annotations::default(),
            durations,
            stats_reads: crate::stats_hints::stats_selectors(expr),
            stats: SampleStats::default(),
            peak: std::cell::Cell::new(0),
        };
        let inner_began = Instant::now();
        let evaluated = ev
            .hold_steps(start, end, step.max(1))
            .and_then(|ts| ev.eval(expr, &ts).map(|res| (ts, res)));
        stats.timings.inner_eval = inner_began.elapsed();
        stats.samples = SampleStats {
            peak: ev.peak.get() as i64,
            ..ev.stats
        };
        let (ts, res) = evaluated?;
        let sort_began = Instant::now();
        let value = if step == 0 {
            instant_value(res, start)
        } else {
            range_value(res, &ts)
        };
        stats.timings.result_sort = sort_began.elapsed();
        stats.timings.eval_total = began.elapsed();
        let value = value?;
        let (warnings, infos) = ev.annos.render(query);
        Ok(QueryResult {
            value,
            warnings,
            infos,
            stats: QueryStats::default(),
        })
    }
}

/// A query's evaluation times: `start` to `end` (ms) every `step` (0: an
/// instant query).
#[derive(Clone, Copy, Debug)]
struct QuerySpan {
    start: i64,
    end: i64,
    step: i64,
}

/// A range query must be a scalar or an instant vector. (`value_type`
/// recurses over the tree: called on the query's stack.)
fn check_range_query_type(expr: &Expr) -> Result<()> {
    match expr.value_type() {
        ValueType::Scalar | ValueType::Vector => Ok(()),
        other => eval_err(format!(
            "invalid expression type \"{}\" for range query, must be Scalar or instant Vector",
            other.documented()
        )),
    }
}

/// Whether a label set has labels that dropping the metric name removes.
fn has_metadata(l: &Labels) -> bool {
    l.iter().any(|l| ferrite_model::is_metadata_label(&l.name))
}

/// Refuses a step in which two samples have the same labels (compared by
/// pointer: callers share one `Arc` per distinct label set).
fn check_step_duplicates(steps: &[Vec<Samp>]) -> Result<()> {
    let mut seen: std::collections::HashSet<*const Labels> = std::collections::HashSet::new();
    for vec in steps {
        seen.clear();
        for s in vec {
            if !seen.insert(Arc::as_ptr(&s.labels)) {
                return eval_err(DUPLICATE_LABELSET);
            }
        }
    }
    Ok(())
}

fn final_labels(s: &Samp) -> Labels {
    let mut l = (*s.labels).clone();
    if s.drop_name {
        l.drop_metric_name();
    }
    l
}

/// [`final_labels`] taking the sample: no copy when it holds the only
/// reference to its labels (a selector's result, typically).
fn into_final_labels(s: Samp) -> Labels {
    let mut l = Arc::unwrap_or_clone(s.labels);
    if s.drop_name {
        l.drop_metric_name();
    }
    l
}

/// A hash set with a fast hasher (label sets from storage, not attackers'
/// keys: a collision flood would only slow one query down).
fn fast_set<T>() -> std::collections::HashSet<T, foldhash::fast::RandomState> {
    std::collections::HashSet::with_hasher(foldhash::fast::RandomState::default())
}

fn instant_value(res: Ev, t: i64) -> Result<Value> {
    Ok(match res {
        Ev::Scalar(v) => Value::Scalar { t, v: v[0] },
        Ev::Str(s) => Value::String { t, v: s },
        Ev::Vector(mut steps) => {
            let vec = steps.pop().unwrap_or_default();
            // Only dropping names here can make two label sets equal (as
            // in Prometheus, which checks at this point only then): every
            // operation that can merge series has checked its own output.
            let renamed = vec.iter().any(|s| s.drop_name);
            let out: Vec<Sample> = vec
                .into_iter()
                .map(|mut s| Sample {
                    f: s.f,
                    h: s.h.take().map(Arc::unwrap_or_clone),
                    labels: into_final_labels(s),
                    t,
                })
                .collect();
            if renamed {
                let mut seen = fast_set();
                for s in &out {
                    if !seen.insert(&s.labels) {
                        return eval_err(DUPLICATE_LABELSET);
                    }
                }
            }
            Value::Vector(out)
        }
        Ev::Matrix(mut rd) => {
            let mut out = Vec::new();
            for i in 0..rd.series.len() {
                let w = rd.window(i, t);
                let histograms: Vec<(i64, FloatHistogram)> = rd
                    .hist_window(i, t)
                    .iter()
                    .map(|(t, h)| (*t, (**h).clone()))
                    .collect();
                if w.is_empty() && histograms.is_empty() {
                    continue;
                }
                // The window's bounds in the series, to move its samples
                // out rather than copy them.
                let a = w.as_ptr() as usize - rd.series[i].samples.as_ptr() as usize;
                let a = a / std::mem::size_of::<(i64, f64)>();
                let b = a + w.len();
                let mut labels = (*rd.series[i].labels).clone();
                if rd.series[i].drop_name {
                    labels.drop_metric_name();
                }
                let mut points = std::mem::take(&mut rd.series[i].samples);
                points.truncate(b);
                points.drain(..a);
                out.push(SeriesResult {
                    labels,
                    points,
                    histograms,
                });
            }
            out.sort_by(|a, b| a.labels.cmp(&b.labels));
            for w in out.windows(2) {
                if w[0].labels == w[1].labels {
                    return eval_err(DUPLICATE_LABELSET);
                }
            }
            Value::Matrix(out)
        }
    })
}

fn range_value(res: Ev, ts: &[i64]) -> Result<Value> {
    match res {
        Ev::Scalar(v) => Ok(Value::Matrix(vec![SeriesResult {
            labels: Labels::empty(),
            points: ts.iter().copied().zip(v).collect(),
            histograms: Vec::new(),
        }])),
        Ev::Vector(steps) => {
            let mut index: HashMap<Labels, usize> = HashMap::new();
            let mut out: Vec<SeriesResult> = Vec::new();
            for (i, vec) in steps.iter().enumerate() {
                for s in vec {
                    let labels = final_labels(s);
                    let idx = match index.get(&labels) {
                        Some(&idx) => idx,
                        None => {
                            index.insert(labels.clone(), out.len());
                            out.push(SeriesResult {
                                labels,
                                points: Vec::new(),
                                histograms: Vec::new(),
                            });
                            out.len() - 1
                        }
                    };
                    let r = &mut out[idx];
                    if r.points.last().is_some_and(|&(t, _)| t == ts[i])
                        || r.histograms.last().is_some_and(|(t, _)| *t == ts[i])
                    {
                        return eval_err(DUPLICATE_LABELSET);
                    }
                    match &s.h {
                        Some(h) => r.histograms.push((ts[i], (**h).clone())),
                        None => r.points.push((ts[i], s.f)),
                    }
                }
            }
            out.sort_by(|a, b| a.labels.cmp(&b.labels));
            Ok(Value::Matrix(out))
        }
        other => eval_err(format!(
            "invalid expression type \"{}\" for range query, must be Scalar or instant Vector",
            other.type_name()
        )),
    }
}

/// What the time span a query reads depends on.
struct SpanWalk {
    query_start: i64,
    query_end: i64,
    lookback: i64,
    default_subquery_step: i64,
    durations: DurationContext,
}

impl SpanWalk {
    /// The [mint, maxt] a query reads, for opening the querier.
    fn time_span(&self, expr: &Expr) -> (i64, i64) {
        let mut span = (i64::MAX, i64::MIN);
        self.walk(expr, self.query_start, self.query_end, &mut span);
        if span.0 > span.1 {
            (self.query_start, self.query_end)
        } else {
            span
        }
    }

    fn at_of(&self, at: &Option<AtModifier>) -> Option<i64> {
        match at {
            None => None,
            Some(AtModifier::Start) => Some(self.query_start),
            Some(AtModifier::End) => Some(self.query_end),
            Some(AtModifier::At(t)) => Some(*t),
        }
    }

    /// The steps' evaluation times [s, en] shifted by an `@` and offset.
    fn shifted(&self, s: i64, en: i64, at: &Option<AtModifier>, off: i64) -> (i64, i64) {
        match self.at_of(at) {
            Some(t) => (t - off, t - off),
            None => (s - off, en - off),
        }
    }

    fn selector(&self, vs: &VectorSelector, range: i64, s: i64, en: i64, span: &mut (i64, i64)) {
        let off = offset_ms(&vs.offset, &self.durations);
        let (a, b) = self.shifted(s, en, &vs.at, off);
        let back = if range > 0 { range } else { self.lookback };
        // Anchored windows reach back one lookback further, for the sample
        // before their start.
        let back = if vs.anchored || vs.smoothed {
            back + self.lookback
        } else {
            back
        };
        span.0 = span.0.min(a - back);
        span.1 = span.1.max(if vs.smoothed { b + self.lookback } else { b });
    }

    fn walk(&self, e: &Expr, s: i64, en: i64, span: &mut (i64, i64)) {
        let ctx = &self.durations;
        match e {
            Expr::VectorSelector(vs) => self.selector(vs, 0, s, en, span),
            Expr::MatrixSelector(ms) => {
                self.selector(&ms.vs, range_ms(&ms.range, ctx), s, en, span)
            }
            Expr::Subquery(sq) => {
                let off = offset_ms(&sq.offset, ctx);
                let (a, b) = self.shifted(s, en, &sq.at, off);
                let step = sq
                    .step
                    .as_ref()
                    .map_or(self.default_subquery_step, |d| range_ms(d, ctx));
                let range = range_ms(&sq.range, ctx);
                self.walk(&sq.expr, a - range - step, b, span);
            }
            other => {
                for child in crate::parsed::children(other) {
                    self.walk(child, s, en, span);
                }
            }
        }
    }
}

impl<'q> Evaluator<'q> {
    pub fn check_deadline(&self) -> Result<()> {
        if Instant::now() > self.deadline {
            return Err(Error::Timeout("expression evaluation"));
        }
        Ok(())
    }

    pub fn count_samples(&self, n: usize) -> Result<()> {
        if n > self.peak.get() {
            self.peak.set(n);
        }
        if n > self.max_samples {
            return Err(Error::TooManySamples("query execution"));
        }
        Ok(())
    }

    /// The step times from `first` to `last` (inclusive) every `step` ms,
    /// counted toward the max-samples limit with every other step array
    /// being evaluated until [`Evaluator::release_steps`]. A step array the
    /// limit would not allow is never allocated.
    fn hold_steps(&mut self, first: i64, last: i64, step: i64) -> Result<Vec<i64>> {
        let n = if first > last {
            0
        } else {
            let span = (i128::from(last) - i128::from(first)) / i128::from(step.max(1));
            usize::try_from(span + 1).unwrap_or(usize::MAX)
        };
        self.count_samples(self.steps_held.saturating_add(n))?;
        self.steps_held += n;
        Ok((0..n).map(|i| first + i as i64 * step).collect())
    }

    fn release_steps(&mut self, steps: &[i64]) {
        self.steps_held -= steps.len();
    }

    pub fn at_ms(&self, at: &Option<AtModifier>) -> Option<i64> {
        match at {
            None => None,
            Some(AtModifier::Start) => Some(self.query_start),
            Some(AtModifier::End) => Some(self.query_end),
            Some(AtModifier::At(t)) => Some(*t),
        }
    }

    /// Selects a selector's series over [mint, maxt]; samples are read
    /// when needed.
    fn select(&mut self, vs: &VectorSelector, mint: i64, maxt: i64) -> Result<Vec<LazySeries<'q>>> {
        let matchers: &[Matcher] = &vs.matchers;
        let hints = SelectHints {
            start: mint,
            end: maxt,
        };
        let querier: &'q dyn Querier = self.querier;
        let series = querier.select_lazy(matchers, hints)?;
        self.stats.series_touched += series.len() as i64;
        Ok(series)
    }

    /// An instant vector selector for all steps; with `want_ts` the values
    /// are the samples' timestamps in seconds (for `timestamp()`).
    pub fn eval_vector_selector(
        &mut self,
        vs: &VectorSelector,
        ts: &[i64],
        want_ts: bool,
    ) -> Result<Vec<Vec<Samp>>> {
        let mut out: Vec<Vec<Samp>> = vec![Vec::new(); ts.len()];
        self.vector_selector_into(vs, ts, want_ts, &mut out)?;
        Ok(out)
    }

    /// Evaluates an instant vector selector at every step into `sink`:
    /// series by series, in selection order, each series' steps in order
    /// (on every core, in batches, for many series; the sink sees the same
    /// order). `want_ts` gives each sample's timestamp (s) as its value.
    pub(crate) fn vector_selector_into(
        &mut self,
        vs: &VectorSelector,
        ts: &[i64],
        want_ts: bool,
        sink: &mut dyn RangeSink,
    ) -> Result<()> {
        self.check_deadline()?;
        let off = offset_ms(&vs.offset, &self.durations);
        let at = self.at_ms(&vs.at);
        let etimes: Vec<i64> = ts.iter().map(|&t| at.unwrap_or(t) - off).collect();
        let lo = etimes.iter().copied().min().unwrap_or(0);
        let hi = etimes.iter().copied().max().unwrap_or(0);
        // Smoothed, a step also reads one lookback ahead.
        let ahead = if vs.smoothed { self.lookback } else { 0 };
        let series = self.select(vs, lo - self.lookback + 1, hi + ahead)?;
        let mut picker = StepPicker {
            etimes: &etimes,
            ascending: etimes.windows(2).all(|w| w[0] <= w[1]),
            lookback: self.lookback,
            want_ts,
            smoothed: vs.smoothed,
            stats_hints: self.stats_reads.contains(&crate::stats_hints::key(vs)),
        };
        // What the sink holds counts toward the max-samples limit as it
        // grows, before it can grow past it.
        let mut pushed = 0;
        eval_series(
            self,
            ts.len(),
            series,
            &mut picker,
            |picker, s, buf, values| {
                buf.read(s)?;
                picker.pick(buf, values);
                Ok(buf.len())
            },
            |ev, _, i, s, _, values| {
                for n in &values.notes {
                    ev.annos.note(*n, s.labels.metric_name(), Some(vs.pos));
                }
                let labels = Arc::new(s.labels);
                for &(step, f) in &values.floats {
                    sink.push(step, i, &labels, f, false);
                }
                for (step, h) in &values.hists {
                    sink.push_hist(*step, i, &labels, h.clone(), false);
                }
                pushed += values.len();
                ev.stats.add_read(crate::stats::weight_of(
                    values.floats.len(),
                    values.hists.iter().map(|(_, h)| &**h),
                ));
                ev.count_samples(sink.holds(pushed))?;
                Ok(go_on(sink))
            },
        )
    }

    /// A matrix selector's series (samples not read yet) and its window
    /// parameters (a [`RangeData`] without series).
    pub(crate) fn matrix_selection(
        &mut self,
        vs: &VectorSelector,
        range: i64,
        ts: &[i64],
    ) -> Result<(Vec<LazySeries<'q>>, RangeData)> {
        self.check_deadline()?;
        let off = offset_ms(&vs.offset, &self.durations);
        let at = self.at_ms(&vs.at);
        let extended = Extension::of(vs).map(|kind| Extended {
            kind,
            lookback: self.lookback,
        });
        let (before, after) = extended.map_or((0, 0), |x| x.reach());
        let lo = ts.iter().map(|&t| at.unwrap_or(t) - off).min().unwrap_or(0);
        let hi = ts.iter().map(|&t| at.unwrap_or(t) - off).max().unwrap_or(0);
        let series = self.select(vs, lo - range - before + 1, hi + after)?;
        Ok((
            series,
            RangeData {
                series: Vec::new(),
                range,
                offset: off,
                at,
                extended,
                stats_hints: self.stats_reads.contains(&crate::stats_hints::key(vs)),
            },
        ))
    }

    fn eval_matrix_selector(
        &mut self,
        vs: &VectorSelector,
        range: i64,
        ts: &[i64],
    ) -> Result<RangeData> {
        let (selected, mut rd) = self.matrix_selection(vs, range, ts)?;
        let mut total = 0;
        let mut buf = ReadBuf::default();
        let mut series = Vec::with_capacity(selected.len());
        for s in selected {
            read_series_samples(&s, &mut buf)?;
            if buf.len() == 0 {
                continue;
            }
            total += buf.len();
            self.count_samples(total)?;
            self.stats.add_read(crate::stats::weight_of(
                buf.floats.len(),
                buf.hists.iter().map(|(_, h)| &**h),
            ));
            let cap = buf.floats.len();
            series.push(RangeSeries {
                labels: Arc::new(s.labels),
                samples: std::mem::replace(&mut buf.floats, Vec::with_capacity(cap)),
                hists: std::mem::take(&mut buf.hists),
                drop_name: false,
            });
        }
        rd.series = series;
        Ok(rd)
    }

    fn eval_subquery(&mut self, sq: &parser::SubqueryExpr, ts: &[i64]) -> Result<RangeData> {
        let off = offset_ms(&sq.offset, &self.durations);
        let at = self.at_ms(&sq.at);
        let range = range_ms(&sq.range, &self.durations);
        let step = sq
            .step
            .as_ref()
            .map_or(self.default_subquery_step, |d| range_ms(d, &self.durations))
            .max(1);
        let lo = ts.iter().map(|&t| at.unwrap_or(t) - off).min().unwrap_or(0);
        let hi = ts.iter().map(|&t| at.unwrap_or(t) - off).max().unwrap_or(0);
        // The first multiple of the step after lo - range (Go's truncating division).
        let mut start = step * ((lo - range) / step);
        if start <= lo - range {
            start += step;
        }
        let inner_ts = self.hold_steps(start, hi, step)?;
        let series = self.subquery_series(&sq.expr, &inner_ts);
        self.release_steps(&inner_ts);
        Ok(RangeData {
            series: series?,
            range,
            offset: off,
            at,
            extended: None,
            stats_hints: false,
        })
    }

    /// A subquery's expression evaluated at `inner_ts`, as range series.
    fn subquery_series(&mut self, expr: &Expr, inner_ts: &[i64]) -> Result<Vec<RangeSeries>> {
        let mut series: Vec<RangeSeries> = Vec::new();
        if inner_ts.is_empty() {
            return Ok(series);
        }
        let inner = self.eval(expr, inner_ts)?;
        let Ev::Vector(steps) = inner else {
            return eval_err(format!(
                "subquery is only allowed on instant vector, got {} instead",
                inner.type_name()
            ));
        };
        let mut index: HashMap<Lbl, usize> = HashMap::new();
        let mut total = 0;
        for (i, vec) in steps.into_iter().enumerate() {
            for s in vec {
                total += 1;
                let idx = *index.entry(s.labels.clone()).or_insert_with(|| {
                    series.push(RangeSeries {
                        labels: s.labels.clone(),
                        samples: Vec::new(),
                        hists: Vec::new(),
                        drop_name: false,
                    });
                    series.len() - 1
                });
                series[idx].drop_name |= s.drop_name;
                match s.h {
                    // A subquery may skip samples or repeat them: the
                    // hints about the sample before are void (as in
                    // Prometheus, which makes them unknown).
                    Some(mut h) => {
                        use ferrite_model::CounterResetHint as C;
                        if matches!(h.counter_reset_hint, C::NotCounterReset | C::CounterReset) {
                            Arc::make_mut(&mut h).counter_reset_hint = C::Unknown;
                        }
                        series[idx].hists.push((inner_ts[i], h))
                    }
                    None => series[idx].samples.push((inner_ts[i], s.f)),
                }
            }
        }
        self.count_samples(total)?;
        series.sort_by(|a, b| a.labels.cmp(&b.labels));
        Ok(series)
    }

    /// Evaluates `expr` at each of the step times `ts`.
    pub fn eval(&mut self, expr: &Expr, ts: &[i64]) -> Result<Ev> {
        self.check_deadline()?;
        match expr {
            Expr::NumberLiteral(n) => Ok(Ev::Scalar(vec![n.val; ts.len()])),
            Expr::StringLiteral(s) => Ok(Ev::Str(s.val.clone())),
            Expr::Paren(p) => self.eval(&p.expr, ts),
            Expr::Unary(u) => match self.eval(&u.expr, ts)? {
                Ev::Scalar(v) => Ok(Ev::Scalar(v.into_iter().map(|x| -x).collect())),
                Ev::Vector(mut steps) => {
                    for vec in &mut steps {
                        for s in vec {
                            s.f = -s.f;
                            if let Some(h) = &mut s.h {
                                Arc::make_mut(h).mul(-1.0);
                            }
                            s.drop_name = true;
                        }
                    }
                    self.settle_names(Ev::Vector(steps))
                }
                other => eval_err(format!("unary expression only allowed on expressions of type scalar or instant vector, got \"{}\"", other.type_name())),
            },
            Expr::VectorSelector(vs) => Ok(Ev::Vector(self.eval_vector_selector(vs, ts, false)?)),
            Expr::MatrixSelector(ms) => {
                let range = range_ms(&ms.range, &self.durations);
                let rd = self.eval_matrix_selector(&ms.vs, range, ts)?;
                match rd.extended {
                    Some(ext) => Ok(Ev::Matrix(crate::extended::extend_matrix(rd, ext, ts)?)),
                    None => Ok(Ev::Matrix(rd)),
                }
            }
            Expr::Subquery(sq) => Ok(Ev::Matrix(self.eval_subquery(sq, ts)?)),
            Expr::Binary(b) => {
                let r = crate::binary::eval_binary(self, b, ts)?;
                self.settle_names(r)
            }
            Expr::Aggregate(a) => crate::aggregate::eval_aggregate(self, a, ts),
            Expr::Call(c) => {
                let r = crate::functions::eval_call(self, c, ts)?;
                match c.func.name {
                    // Prometheus merges their output series, refusing two
                    // with the same labels at one time.
                    "label_replace" | "label_join" => {
                        if let Ev::Vector(steps) = &r {
                            check_step_duplicates(steps)?;
                        }
                        Ok(r)
                    }
                    // Range functions settle names themselves, per series.
                    name if crate::functions::is_range_function(name) => Ok(r),
                    _ => self.settle_names(r),
                }
            }
        }
    }

    /// Without delayed name removal: drops the metric name of the samples
    /// marked to lose it, then refuses steps in which two samples ended up
    /// with the same labels (as Prometheus checks the output of functions,
    /// operators and unary minus). The check only runs when dropping names
    /// actually merged label sets, and compares shared label pointers, so
    /// it costs a pointer lookup per sample.
    pub fn settle_names(&self, ev: Ev) -> Result<Ev> {
        if self.delayed_name_removal {
            return Ok(ev);
        }
        let Ev::Vector(mut steps) = ev else {
            return Ok(ev);
        };
        if !steps.iter().flatten().any(|s| s.drop_name) {
            return Ok(Ev::Vector(steps));
        }
        // Input label set (by pointer, and whether its name goes) -> output;
        // outputs interned by value so equal sets share one pointer.
        let mut out_of: HashMap<(*const Labels, bool), Lbl> = HashMap::new();
        let mut interned: std::collections::HashSet<Lbl> = std::collections::HashSet::new();
        for s in steps.iter_mut().flatten() {
            let key = (Arc::as_ptr(&s.labels), s.drop_name);
            let new = match out_of.get(&key) {
                Some(l) => l.clone(),
                None => {
                    let l = if s.drop_name && has_metadata(&s.labels) {
                        let mut l = (*s.labels).clone();
                        l.drop_metric_name();
                        Arc::new(l)
                    } else {
                        s.labels.clone()
                    };
                    let l = match interned.get(&l) {
                        Some(k) => k.clone(),
                        None => {
                            interned.insert(l.clone());
                            l
                        }
                    };
                    out_of.insert(key, l.clone());
                    l
                }
            };
            s.labels = new;
            s.drop_name = false;
        }
        if interned.len() < out_of.len() {
            check_step_duplicates(&steps)?;
        }
        Ok(Ev::Vector(steps))
    }

    /// Evaluates an expression that must be a scalar (a function or
    /// aggregation parameter).
    pub fn eval_scalar(&mut self, expr: &Expr, ts: &[i64]) -> Result<Vec<f64>> {
        match self.eval(expr, ts)? {
            Ev::Scalar(v) => Ok(v),
            other => eval_err(format!("expected scalar, got {}", other.type_name())),
        }
    }

    pub fn eval_vector(&mut self, expr: &Expr, ts: &[i64]) -> Result<Vec<Vec<Samp>>> {
        match self.eval(expr, ts)? {
            Ev::Vector(v) => Ok(v),
            other => eval_err(format!(
                "expected instant vector, got {}",
                other.type_name()
            )),
        }
    }

    pub fn eval_matrix(&mut self, expr: &Expr, ts: &[i64]) -> Result<RangeData> {
        match self.eval(expr, ts)? {
            Ev::Matrix(v) => Ok(v),
            other => eval_err(format!("expected range vector, got {}", other.type_name())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::storage::{MemStorage, SampleSource, Series, StorageError, STALE_NAN};
    use proptest::prelude::*;

    fn db_with(samples: &[(i64, f64)]) -> MemStorage {
        let mut db = MemStorage::new();
        let l = Labels::from_pairs(&[("__name__", "m")]);
        for &(t, v) in samples {
            db.add(l.clone(), t, v);
        }
        db
    }

    fn instant(db: &MemStorage, q: &str, t: i64) -> Vec<Sample> {
        match Engine::default().instant_query(db, q, t).unwrap().value {
            Value::Vector(v) => v,
            other => panic!("not a vector: {other:?}"),
        }
    }

    /// A storage whose samples are not `in_memory` (as if decoded when
    /// read), so that the engine spreads reading them over threads.
    struct Decoding(MemStorage);
    struct DecodingQuerier<'a>(Box<dyn Querier + 'a>);
    struct Encoded(Vec<(i64, f64)>);

    impl SampleSource for Encoded {
        fn read_into(&self, out: &mut Vec<(i64, f64)>) -> std::result::Result<(), StorageError> {
            self.0.read_into(out)
        }
    }

    impl Queryable for Decoding {
        fn querier(
            &self,
            mint: i64,
            maxt: i64,
        ) -> std::result::Result<Box<dyn Querier + '_>, StorageError> {
            Ok(Box::new(DecodingQuerier(self.0.querier(mint, maxt)?)))
        }
    }

    impl Querier for DecodingQuerier<'_> {
        fn select(
            &self,
            matchers: &[Matcher],
            hints: SelectHints,
        ) -> std::result::Result<Vec<Series>, StorageError> {
            self.0.select(matchers, hints)
        }

        fn select_lazy(
            &self,
            matchers: &[Matcher],
            hints: SelectHints,
        ) -> std::result::Result<Vec<LazySeries<'_>>, StorageError> {
            Ok(self
                .0
                .select(matchers, hints)?
                .into_iter()
                .map(|s| LazySeries {
                    labels: s.labels,
                    source: Box::new(Encoded(s.samples)),
                })
                .collect())
        }

        fn label_names(
            &self,
            matchers: &[Matcher],
        ) -> std::result::Result<Vec<String>, StorageError> {
            self.0.label_names(matchers)
        }

        fn label_values(
            &self,
            name: &str,
            matchers: &[Matcher],
        ) -> std::result::Result<Vec<String>, StorageError> {
            self.0.label_values(name, matchers)
        }
    }

    /// Range functions over many series run on several threads; their
    /// results, aggregated or not, are bit for bit those of one thread
    /// (including errors: the duplicate label set after the name is dropped).
    #[test]
    fn parallel_range_functions_match_one_thread() {
        let mut db = MemStorage::new();
        let mut seed = 7u64;
        let mut rnd = || {
            seed = seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            seed >> 33
        };
        for i in 0..300 {
            let l = Labels::new([
                ("__name__".to_string(), "m".to_string()),
                ("i".to_string(), i.to_string()),
                ("g".to_string(), (i % 7).to_string()),
            ]);
            let mut v = 0.0;
            for k in 0..200i64 {
                if rnd() % 10 == 0 {
                    continue;
                }
                v += (rnd() % 1000) as f64 / 7.0;
                if rnd() % 50 == 0 {
                    v = 0.0;
                }
                db.add(l.clone(), k * 15_000 + (rnd() % 100) as i64, v);
            }
        }
        for name in ["n", "o"] {
            for k in 0..3 {
                db.add(
                    Labels::from_pairs(&[("__name__", name), ("i", "1")]),
                    k * 15_000,
                    1.0,
                );
            }
        }
        let decoding = Decoding(db.clone());
        let run = |threads: usize, q: &str| {
            let pool = rayon::ThreadPoolBuilder::new()
                .num_threads(threads)
                .build()
                .unwrap();
            pool.install(|| {
                let store: &dyn Queryable = if threads > 1 { &decoding } else { &db };
                Engine::default()
                    .range_query(store, q, 0, 3_000_000, 30_000)
                    .map(|r| format!("{:?} {:?}", r.value, r.warnings))
                    .map_err(|e| e.to_string())
            })
        };
        for q in [
            "sum by (g) (rate(m[1m]))",
            "avg(increase(m[2m]))",
            "max_over_time(m[5m])",
            "deriv(m[3m])",
            "rate({__name__=~\"m|n|o\"}[5m])",
            "m",
            "sum by (g) (m)",
            "stddev without (i) (m offset 1m)",
            "timestamp(m)",
            "quantile_over_time(0.9, m[2m])",
            "max(quantile_over_time(2, m[2m]))",
        ] {
            let one = run(1, q);
            assert!(run(4, q) == one, "{q}: the results differ");
            if q.contains("n|o") {
                assert!(one.is_err(), "{q}: no error");
            } else {
                assert!(one.as_ref().is_ok_and(|v| v.len() > 1000), "{q}");
            }
        }
    }

    #[test]
    fn histogram_samples_flow_through_selectors_functions_and_aggregations() {
        use ferrite_model::Span;
        let mut db = MemStorage::new();
        let l = Labels::from_pairs(&[("__name__", "h"), ("i", "1")]);
        for k in 0..5i64 {
            let c = (k * 10) as f64;
            db.add_histogram(
                l.clone(),
                k * 15_000,
                FloatHistogram {
                    count: c,
                    sum: c,
                    positive_spans: vec![Span {
                        offset: 0,
                        length: 1,
                    }],
                    positive_buckets: vec![c],
                    ..FloatHistogram::default()
                },
            );
        }
        // A float series of the same name: sum() mixes them, with a warning.
        db.add(
            Labels::from_pairs(&[("__name__", "h"), ("i", "2")]),
            60_000,
            1.0,
        );
        let v = instant(&db, "h{i=\"1\"}", 60_000);
        assert_eq!(v[0].h.as_ref().map(|h| h.count), Some(40.0));
        let v = instant(&db, "histogram_count(rate(h[1m]))", 60_000);
        assert!((v[0].f - 40.0 / 60.0).abs() < 1e-9, "{v:?}");
        let r = Engine::default()
            .instant_query(&db, "sum(h)", 60_000)
            .unwrap();
        assert_eq!(r.value, Value::Vector(vec![]));
        assert_eq!(
            r.warnings,
            vec![
                "PromQL warning: encountered a mix of histograms and floats for aggregation (1:5)"
            ]
        );
        let v = instant(&db, "h{i=\"1\"} * 2 + h{i=\"1\"}", 60_000);
        assert_eq!(v[0].h.as_ref().map(|h| h.sum), Some(120.0));
        // Range results keep histograms apart from floats.
        let r = Engine::default()
            .range_query(&db, "h", 30_000, 60_000, 30_000)
            .unwrap();
        let Value::Matrix(m) = r.value else { panic!() };
        assert_eq!(m[0].histograms.len(), 2);
        assert_eq!(m[1].points, vec![(60_000, 1.0)]);
    }

    #[test]
    fn lookback_is_left_open_five_minutes() {
        let db = db_with(&[(0, 1.0)]);
        assert_eq!(instant(&db, "m", 0).len(), 1);
        assert_eq!(instant(&db, "m", 299_999).len(), 1);
        // The sample at 0 is outside (300s - 5m, 300s].
        assert!(instant(&db, "m", 300_000).is_empty());
        assert!(instant(&db, "m", -1).is_empty());
    }

    #[test]
    fn stale_marker_ends_series() {
        let db = db_with(&[(0, 1.0), (10_000, STALE_NAN), (20_000, 3.0)]);
        assert_eq!(instant(&db, "m", 5_000)[0].f, 1.0);
        assert!(instant(&db, "m", 10_000).is_empty());
        assert!(instant(&db, "m", 15_000).is_empty());
        assert_eq!(instant(&db, "m", 20_000)[0].f, 3.0);
        // Range vectors drop the marker itself.
        assert_eq!(instant(&db, "count_over_time(m[1m])", 20_000)[0].f, 2.0);
    }

    #[test]
    fn offset_and_at() {
        let db = db_with(&[(0, 1.0), (60_000, 2.0), (120_000, 3.0)]);
        assert_eq!(instant(&db, "m offset 1m", 120_000)[0].f, 2.0);
        assert_eq!(instant(&db, "m @ 60", 0)[0].f, 2.0);
        let r = Engine::default()
            .range_query(&db, "m @ end()", 0, 120_000, 60_000)
            .unwrap();
        let Value::Matrix(m) = r.value else { panic!() };
        assert_eq!(m[0].points, vec![(0, 3.0), (60_000, 3.0), (120_000, 3.0)]);
    }

    #[test]
    fn rate_drops_name_range_query_matches_instant() {
        let samples: Vec<(i64, f64)> = (0..20).map(|i| (i * 15_000, (i * 15) as f64)).collect();
        let db = db_with(&samples);
        let v = instant(&db, "rate(m[1m])", 240_000);
        assert!(v[0].labels.is_empty());
        assert!((v[0].f - 1.0).abs() < 1e-9);
        let r = Engine::default()
            .range_query(&db, "rate(m[1m])", 60_000, 240_000, 60_000)
            .unwrap();
        let Value::Matrix(m) = r.value else { panic!() };
        assert_eq!(m[0].points.len(), 4);
        assert!(m[0].points.iter().all(|p| (p.1 - 1.0).abs() < 1e-9));
    }

    #[test]
    fn errors_have_prometheus_texts() {
        let db = db_with(&[(0, 1.0)]);
        let e = Engine::default()
            .range_query(&db, "m[5m]", 0, 10, 1)
            .unwrap_err();
        assert!(e
            .to_string()
            .starts_with("invalid expression type \"range vector\" for range query"));
        let eng = Engine::new(EngineOptions {
            max_samples: 0,
            ..Default::default()
        });
        let e = eng.instant_query(&db, "m", 0).unwrap_err();
        assert_eq!(
            e.to_string(),
            "query processing would load too many samples into memory in query execution"
        );
        let eng = Engine::new(EngineOptions {
            timeout: std::time::Duration::ZERO,
            ..Default::default()
        });
        let e = eng.instant_query(&db, "m", 0).unwrap_err();
        assert_eq!(e.to_string(), "query timed out in expression evaluation");
    }

    fn delayed() -> Engine {
        Engine::new(EngineOptions {
            delayed_name_removal: true,
            ..Default::default()
        })
    }

    /// `a{job="x"}` and `b{job="x"}` at 0 and 60s; `a{job="y"}` at 0 and
    /// `b{job="y"}` at 600s.
    fn two_names() -> MemStorage {
        let mut db = MemStorage::new();
        for name in ["a", "b"] {
            let l = Labels::from_pairs(&[("__name__", name), ("job", "x")]);
            db.add(l.clone(), 0, 1.0);
            db.add(l, 60_000, 2.0);
        }
        db.add(
            Labels::from_pairs(&[("__name__", "a"), ("job", "y")]),
            0,
            1.0,
        );
        db.add(
            Labels::from_pairs(&[("__name__", "b"), ("job", "y")]),
            600_000,
            1.0,
        );
        db
    }

    #[test]
    fn dropped_names_may_not_collide_without_delayed_removal() {
        let db = two_names();
        let eng = Engine::default();
        assert!(!eng.opts.delayed_name_removal);
        for q in [
            r#"count(count_over_time({__name__=~".+"}[1h]))"#,
            r#"rate({job="x"}[5m])"#,
            r#"abs({job="x"})"#,
            r#"-{job="x"}"#,
            r#"sum({job="x"} * 2)"#,
            r#"timestamp({job="x"})"#,
        ] {
            let e = eng.instant_query(&db, q, 60_000).unwrap_err();
            assert_eq!(e.to_string(), DUPLICATE_LABELSET, "{q}");
            let e = eng.range_query(&db, q, 0, 60_000, 30_000).unwrap_err();
            assert_eq!(e.to_string(), DUPLICATE_LABELSET, "{q} (range)");
        }
        // Functions that keep the name, comparisons and single series are fine.
        for q in [
            r#"count(last_over_time({job="x"}[1h]))"#,
            r#"count({job="x"} > 0)"#,
            r#"count(rate(a[5m]))"#,
            // One sample per series: rate has no output, nothing collides.
            r#"count(rate({job="y"}[5m])) or vector(0)"#,
        ] {
            eng.instant_query(&db, q, 60_000).unwrap();
        }
        // Names are gone right away: label_replace cannot read them.
        let v = instant_with(
            &eng,
            &db,
            r#"label_replace(rate(a{job="x"}[5m]), "n", "$1", "__name__", "(.*)")"#,
            60_000,
        );
        assert_eq!(v[0].labels.get("n"), "");
        let v = instant_with(
            &delayed(),
            &db,
            r#"label_replace(rate(a{job="x"}[5m]), "n", "$1", "__name__", "(.*)")"#,
            60_000,
        );
        assert_eq!(v[0].labels.get("n"), "a");
    }

    #[test]
    fn range_functions_check_whole_series_operators_each_step() {
        let db = two_names();
        let eng = Engine::default();
        // a{job="y"} has output at 0, b{job="y"} at 600s only: a range
        // function's result series still share a label set (Prometheus
        // checks them as a whole), an operator's never meet in one step.
        let e = eng
            .range_query(
                &db,
                r#"count_over_time({job="y"}[1m])"#,
                0,
                600_000,
                600_000,
            )
            .unwrap_err();
        assert_eq!(e.to_string(), DUPLICATE_LABELSET);
        let r = eng
            .range_query(&db, r#"abs({job="y"})"#, 0, 600_000, 600_000)
            .unwrap();
        let Value::Matrix(m) = r.value else { panic!() };
        assert_eq!(m.len(), 1);
        assert_eq!(m[0].points, vec![(0, 1.0), (600_000, 1.0)]);
    }

    #[test]
    fn delayed_removal_checks_only_the_result() {
        let db = two_names();
        let eng = delayed();
        let v = instant_with(
            &eng,
            &db,
            r#"count(count_over_time({__name__=~".+"}[1h]))"#,
            60_000,
        );
        // b{job="y"} (at 600s) is not in the window yet.
        assert_eq!(v[0].f, 3.0);
        let e = eng
            .instant_query(&db, r#"rate({job="x"}[5m])"#, 60_000)
            .unwrap_err();
        assert_eq!(e.to_string(), DUPLICATE_LABELSET);
    }

    #[test]
    fn label_replace_refuses_merged_series_in_both_modes() {
        let db = two_names();
        for eng in [Engine::default(), delayed()] {
            let q = r#"sum(label_replace({job="x"}, "__name__", "same", "", ""))"#;
            let e = eng.instant_query(&db, q, 60_000).unwrap_err();
            assert_eq!(e.to_string(), DUPLICATE_LABELSET);
        }
    }

    #[test]
    fn label_names_are_checked_as_prometheus_decodes_them() {
        let db = db_with(&[(0, 1.0)]);
        let eng = Engine::default();
        let e = eng
            .instant_query(&db, r#"label_replace(m, "\xff", "", "src", "(.*)")"#, 0)
            .unwrap_err();
        assert!(e
            .to_string()
            .starts_with("invalid destination label name in label_replace()"));
        let e = eng
            .instant_query(&db, r#"label_join(m, "dst", "", ("\377"))"#, 0)
            .unwrap_err();
        assert!(e
            .to_string()
            .starts_with("invalid source label name in label_join()"));
        // A character (not a lone byte) is a valid UTF-8 name.
        let v = instant_with(&eng, &db, r#"label_replace(m, "\u00ff", "v", "", "")"#, 0);
        assert_eq!(v[0].labels.get("ÿ"), "v");
    }

    fn instant_with(eng: &Engine, db: &MemStorage, q: &str, t: i64) -> Vec<Sample> {
        match eng.instant_query(db, q, t).unwrap().value {
            Value::Vector(v) => v,
            other => panic!("not a vector: {other:?}"),
        }
    }

    #[test]
    fn annotations_carry_positions() {
        let mut db = db_with(&[(0, 1.0), (60_000, 2.0)]);
        for (le, v) in [("0.1", 2.0), ("1", 1.0), ("10", 5.0), ("+Inf", 4.0)] {
            let l = Labels::from_pairs(&[("__name__", "h_bucket"), ("le", le)]);
            db.add(l.clone(), 0, v);
            db.add(l, 60_000, v);
        }
        let eng = delayed();
        let r = eng
            .range_query(&db, "sum(sort(m))", 0, 60_000, 60_000)
            .unwrap();
        assert_eq!(
            r.warnings,
            vec![format!("{} (1:5)", crate::annotations::SORT_WARNING)]
        );
        assert!(eng
            .instant_query(&db, "sort(m)", 0)
            .unwrap()
            .warnings
            .is_empty());
        let r = eng.instant_query(&db, "quantile(NaN, m)", 0).unwrap();
        assert_eq!(
            r.warnings,
            vec!["PromQL warning: quantile value should be between 0 and 1, got NaN (1:10)"]
        );
        let r = eng
            .instant_query(&db, "quantile_over_time(1.5, m[1m])", 60_000)
            .unwrap();
        assert_eq!(
            r.warnings,
            vec!["PromQL warning: quantile value should be between 0 and 1, got 1.5 (1:20)"]
        );
        let r = eng
            .range_query(&db, "histogram_quantile(0.5, h_bucket)", 0, 60_000, 60_000)
            .unwrap();
        assert_eq!(
            r.infos,
            vec![format!(
                "{} for metric name \"h_bucket\", from buckets 1 to +Inf, with a max diff of 1, over 2 samples from 1970-01-01T00:00:00Z to 1970-01-01T00:01:00Z (1:25)",
                crate::annotations::MONOTONICITY_INFO
            )]
        );
        let r = eng
            .instant_query(&db, "histogram_quantile(0.5, m)", 0)
            .unwrap();
        assert_eq!(
            r.warnings,
            vec!["PromQL warning: bucket label \"le\" is missing or has a malformed value of \"\" for metric name \"m\" (1:25)"]
        );
        // Without delayed name removal the name is gone already.
        let r = Engine::default()
            .instant_query(&db, "histogram_quantile(0.5, m)", 0)
            .unwrap();
        assert_eq!(
            r.warnings,
            vec!["PromQL warning: bucket label \"le\" is missing or has a malformed value of \"\" (1:25)"]
        );
    }

    proptest! {
        // Each step of a range query equals the instant query at that time.
        #[test]
        fn range_steps_equal_instant_queries(vals in proptest::collection::vec(-100.0f64..100.0, 1..30), step in 1i64..5) {
            let samples: Vec<(i64, f64)> = vals.iter().enumerate().map(|(i, &v)| (i as i64 * 20_000, v)).collect();
            let db = db_with(&samples);
            let eng = Engine::default();
            let end = samples.len() as i64 * 20_000;
            for q in ["m", "sum_over_time(m[1m])", "delta(m[90s])", "m * 2 > 0"] {
                let r = eng.range_query(&db, q, 0, end, step * 15_000).unwrap();
                let Value::Matrix(m) = r.value else { panic!() };
                let mut t = 0;
                while t <= end {
                    let inst = instant(&db, q, t);
                    let from_range: Vec<f64> = m.iter().filter_map(|s| s.points.iter().find(|p| p.0 == t).map(|p| p.1)).collect();
                    prop_assert_eq!(inst.iter().map(|s| s.f).collect::<Vec<_>>(), from_range);
                    t += step * 15_000;
                }
            }
        }
    }
}

#[cfg(test)]
mod window_tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn cursor_windows_equal_searched_windows(
            gaps in proptest::collection::vec(1i64..50, 0..200),
            steps in proptest::collection::vec(-100i64..3000, 1..60),
            range in 1i64..300,
            offset in -50i64..50,
        ) {
            let mut t = 0;
            let samples: Vec<(i64, f64)> = gaps.iter().map(|g| { t += g; (t, t as f64) }).collect();
            let rd = RangeData {
                series: vec![RangeSeries { labels: Arc::new(Labels::empty()), samples, hists: Vec::new(), drop_name: false }],
                range,
                offset,
                at: None,
                extended: None,
                stats_hints: false,
            };
            let mut cursor = (0, 0);
            // Mostly increasing, sometimes backwards.
            for &s in &steps {
                prop_assert_eq!(rd.window_at(0, s, &mut cursor), rd.window(0, s));
            }
            let mut sorted = steps.clone();
            sorted.sort();
            let mut cursor = (0, 0);
            for &s in &sorted {
                prop_assert_eq!(rd.window_at(0, s, &mut cursor), rd.window(0, s));
            }
        }
    }
}
