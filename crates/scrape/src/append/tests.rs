use super::*;
use ferrite_config::relabel::parse_rules;
use ferrite_model::histogram_record::{float_record, int_record};

/// The `io.prometheus.client` messages, to write protobuf bodies.
#[path = "../../../textparse/src/protobuf/client_model.rs"]
mod client_model;
use client_model as pb;

/// An in-memory storage: series by labels, samples per series (floats as
/// their text or "stale", histograms as their record). A series' handle
/// holds its labels.
#[derive(Default)]
struct Memory {
    samples: Vec<(Labels, i64, String)>,
    /// Appends that came with a handle (the cache at work).
    by_ref: usize,
}

struct MemoryAppender<'m> {
    mem: &'m mut Memory,
    pending: Vec<(Labels, i64, String)>,
}

impl MemoryAppender<'_> {
    fn put(&mut self, labels: &Labels, t: i64, v: String) -> Result<(), AppendFailure> {
        if labels.get("fail") == "yes" {
            return Err(AppendFailure::Other("refused".into()));
        }
        let last = self
            .mem
            .samples
            .iter()
            .chain(&self.pending)
            .filter(|(l, _, _)| l == labels)
            .map(|s| s.1)
            .max();
        match last {
            Some(lt) if lt > t => return Err(AppendFailure::OutOfOrder),
            Some(lt) if lt == t => return Err(AppendFailure::Duplicate),
            _ => {}
        }
        self.pending.push((labels.clone(), t, v));
        Ok(())
    }

    /// A handle's labels.
    fn labels_of(&mut self, series: &SeriesHandle) -> Labels {
        self.mem.by_ref += 1;
        series
            .with(|l: &std::sync::Arc<Labels>| (**l).clone())
            .expect("a handle this storage gave")
    }
}

fn float_text(v: f64) -> String {
    if ferrite_model::is_stale_nan(v) {
        "stale".to_string()
    } else {
        v.to_string()
    }
}

/// A lent histogram taken as the head takes it.
fn histogram_text(h: HistogramSample<'_>) -> String {
    match h {
        HistogramSample::Int(h) => int_record(&std::mem::take(h)),
        HistogramSample::Float(h) => float_record(&std::mem::take(h)),
    }
}

impl ScrapeAppender for MemoryAppender<'_> {
    fn append(&mut self, series: &SeriesHandle, t: i64, v: f64) -> Result<(), AppendFailure> {
        let labels = self.labels_of(series);
        self.put(&labels, t, float_text(v))
    }
    fn append_new(
        &mut self,
        labels: &Labels,
        t: i64,
        v: f64,
    ) -> Result<SeriesHandle, AppendFailure> {
        self.put(labels, t, float_text(v))?;
        Ok(SeriesHandle::new(std::sync::Arc::new(labels.clone())))
    }
    fn append_histogram(
        &mut self,
        series: &SeriesHandle,
        t: i64,
        h: HistogramSample<'_>,
    ) -> Result<(), AppendFailure> {
        let labels = self.labels_of(series);
        self.put(&labels, t, histogram_text(h))
    }
    fn append_histogram_new(
        &mut self,
        labels: &Labels,
        t: i64,
        h: HistogramSample<'_>,
    ) -> Result<SeriesHandle, AppendFailure> {
        self.put(labels, t, histogram_text(h))?;
        Ok(SeriesHandle::new(std::sync::Arc::new(labels.clone())))
    }
    fn commit(self: Box<Self>) -> Result<(), String> {
        self.mem.samples.extend(self.pending);
        Ok(())
    }
    fn rollback(self: Box<Self>) {}
}

struct Target {
    cache: ScrapeCache,
    settings: AppendSettings,
    mem: Memory,
}

impl Target {
    fn new(settings: AppendSettings) -> Self {
        Target {
            cache: ScrapeCache::new(),
            settings,
            mem: Memory::default(),
        }
    }

    /// One scrape as the loop runs it: on an error, roll back and append
    /// the empty body.
    fn scrape(&mut self, body: &str, ts: i64) -> Result<AppendCounts, BodyError> {
        self.scrape_as(body, "text/plain; version=0.0.4", ts, false)
    }

    /// An OpenMetrics scrape.
    fn scrape_om(&mut self, body: &str, ts: i64) -> Result<AppendCounts, BodyError> {
        self.scrape_as(
            body,
            "application/openmetrics-text; version=1.0.0; charset=utf-8",
            ts,
            false,
        )
    }

    /// A scrape of a body of `content_type`; `nhcb`: the job's
    /// `convert_classic_histograms_to_nhcb`.
    fn scrape_as(
        &mut self,
        body: &str,
        content_type: &str,
        ts: i64,
        nhcb: bool,
    ) -> Result<AppendCounts, BodyError> {
        self.settings.convert_classic_histograms_to_nhcb = nhcb;
        self.scrape_bytes(body.as_bytes(), content_type, ts)
    }

    /// The samples of the series `selector`, as (t, value or "stale").
    fn series(&self, selector: &str) -> Vec<(i64, String)> {
        self.mem
            .samples
            .iter()
            .filter(|(l, _, _)| l.to_string() == selector)
            .map(|(_, t, v)| (*t, v.clone()))
            .collect()
    }

    /// A protobuf scrape.
    fn scrape_pb(
        &mut self,
        families: &[pb::MetricFamily],
        ts: i64,
    ) -> Result<AppendCounts, BodyError> {
        let body = pb::delimited(families);
        self.scrape_bytes(&body, PROTO, ts)
    }

    /// A scrape of a body that need not be text.
    fn scrape_bytes(
        &mut self,
        body: &[u8],
        content_type: &str,
        ts: i64,
    ) -> Result<AppendCounts, BodyError> {
        let mut b = BodyAppender::new(&mut self.cache, &self.settings);
        let mut app = Box::new(MemoryAppender {
            mem: &mut self.mem,
            pending: Vec::new(),
        });
        match append_body(&mut b, &mut *app, body, content_type, ts, ts) {
            Ok(c) => {
                app.commit().expect("commit");
                Ok(c)
            }
            Err(e) => {
                app.rollback();
                let mut app = Box::new(MemoryAppender {
                    mem: &mut self.mem,
                    pending: Vec::new(),
                });
                append_body(&mut b, &mut *app, b"", "", ts, ts).expect("stale markers");
                app.commit().expect("commit");
                Err(e)
            }
        }
    }
}

fn settings() -> AppendSettings {
    AppendSettings {
        target_labels: Labels::new([("instance", "h:1"), ("job", "j")]),
        honor_timestamps: true,
        ..AppendSettings::default()
    }
}

#[test]
fn known_series_go_by_ref_and_vanished_ones_go_stale() {
    let mut t = Target::new(settings());
    let c = t.scrape("a 1\nb{x=\"1\"} 2\n", 1000).expect("ok");
    assert_eq!((c.total, c.added, c.series_added), (2, 2, 2));
    let c = t.scrape("a 3\n", 2000).expect("ok");
    assert_eq!((c.total, c.added, c.series_added), (1, 1, 0));
    assert_eq!(t.mem.by_ref, 2, "`a` and b's stale marker went by ref");
    assert_eq!(
        t.series("{__name__=\"b\", instance=\"h:1\", job=\"j\", x=\"1\"}"),
        vec![(1000, "2".into()), (2000, "stale".into())]
    );
    // A failed scrape marks everything stale.
    t.scrape("a{ 1\n", 3000).expect_err("parse error");
    assert_eq!(
        t.series("{__name__=\"a\", instance=\"h:1\", job=\"j\"}"),
        vec![
            (1000, "1".into()),
            (2000, "3".into()),
            (3000, "stale".into())
        ]
    );
    // And the next one starts over: no marker for what it lacks.
    t.scrape("c 1\n", 4000).expect("ok");
    assert_eq!(
        t.series("{__name__=\"a\", instance=\"h:1\", job=\"j\"}")
            .len(),
        3
    );
}

#[test]
fn repeated_lines_are_taken_as_known_and_changes_are_read() {
    let mut t = Target::new(settings());
    let body = "# HELP a An a.\n# TYPE a counter\na 1\nb{x=\"} 1\"} 2\nc{x=\"y\"} 3 500\n";
    t.scrape(body, 1000).expect("ok");
    let c = t.scrape(body, 2000).expect("ok");
    assert_eq!((c.total, c.added, c.series_added), (3, 3, 0));
    assert_eq!(t.mem.by_ref, 3, "every series by its handle");
    // A repeated line is a duplicate, known or not; a changed help and
    // type are kept; a timestamp is honoured on the known path too.
    let changed = "# HELP a Changed.\n# TYPE a gauge\na 5\na 6\nc{x=\"y\"} 7 2500\n";
    let c = t.scrape(changed, 3000).expect("ok");
    assert_eq!((c.total, c.added, c.series_added), (3, 3, 0));
    let a = "{__name__=\"a\", instance=\"h:1\", job=\"j\"}";
    assert_eq!(
        t.series(a),
        vec![(1000, "1".into()), (2000, "1".into()), (3000, "5".into())]
    );
    assert_eq!(
        t.series("{__name__=\"c\", instance=\"h:1\", job=\"j\", x=\"y\"}"),
        vec![(500, "3".into()), (2500, "7".into())]
    );
    let metadata = t.cache.metadata.lock().expect("metadata").list();
    assert_eq!(metadata.len(), 1);
    assert_eq!(metadata[0].help, "Changed.");
    assert_eq!(metadata[0].kind, MetricType::Gauge);
}

#[test]
fn explicit_timestamps_are_not_tracked_unless_asked() {
    let mut t = Target::new(settings());
    t.scrape("a 1 500\n", 1000).expect("ok");
    t.scrape("b 1\n", 2000).expect("ok");
    assert_eq!(
        t.series("{__name__=\"a\", instance=\"h:1\", job=\"j\"}"),
        vec![(500, "1".into())]
    );
    let mut t = Target::new(AppendSettings {
        track_timestamps_staleness: true,
        ..settings()
    });
    t.scrape("a 1 500\n", 1000).expect("ok");
    t.scrape("b 1\n", 2000).expect("ok");
    assert_eq!(
        t.series("{__name__=\"a\", instance=\"h:1\", job=\"j\"}")
            .len(),
        2
    );
    // honor_timestamps: false puts the scrape's time on them.
    let mut t = Target::new(AppendSettings {
        honor_timestamps: false,
        ..settings()
    });
    t.scrape("a 1 500\n", 1000).expect("ok");
    assert_eq!(
        t.series("{__name__=\"a\", instance=\"h:1\", job=\"j\"}"),
        vec![(1000, "1".into())]
    );
}

#[test]
fn target_labels_win_or_are_honored() {
    let mut t = Target::new(settings());
    t.scrape("a{job=\"x\",exported_job=\"y\"} 1\n", 1000)
        .expect("ok");
    assert_eq!(
        t.series("{__name__=\"a\", exported_exported_job=\"x\", exported_job=\"y\", instance=\"h:1\", job=\"j\"}").len(),
        1
    );
    let mut t = Target::new(AppendSettings {
        honor_labels: true,
        ..settings()
    });
    t.scrape("a{job=\"x\"} 1\n", 1000).expect("ok");
    assert_eq!(
        t.series("{__name__=\"a\", instance=\"h:1\", job=\"x\"}")
            .len(),
        1
    );
}

#[test]
fn metric_relabeling_drops_and_is_cached() {
    let rules = parse_rules("- source_labels: [__name__]\n  regex: drop_me\n  action: drop\n")
        .expect("rules");
    let mut t = Target::new(AppendSettings {
        metric_relabel_configs: rules,
        ..settings()
    });
    let c = t.scrape("drop_me 1\nkeep 2\n", 1000).expect("ok");
    assert_eq!((c.total, c.added), (2, 1));
    let c = t.scrape("drop_me 1\nkeep 2\n", 2000).expect("ok");
    assert_eq!((c.total, c.added), (2, 1));
    assert_eq!(t.cache.len(), 2, "one series, one dropped line");
}

#[test]
fn limits_fail_the_scrape() {
    let mut t = Target::new(AppendSettings {
        sample_limit: 2,
        ..settings()
    });
    t.scrape("a 1\n", 1000).expect("ok");
    let e = t
        .scrape("a 1\nb 2\nc 3\n", 2000)
        .expect_err("over the limit");
    assert_eq!(e, BodyError::SampleLimit);
    assert_eq!(e.to_string(), "sample limit exceeded");
    // `a` was reached before the limit: Prometheus counts it as this
    // scrape's, so it gets no stale marker, and nothing was committed.
    assert_eq!(
        t.series("{__name__=\"a\", instance=\"h:1\", job=\"j\"}"),
        vec![(1000, "1".into())]
    );

    let mut t = Target::new(AppendSettings {
        label_limit: 3,
        ..settings()
    });
    let e = t.scrape("a{x=\"1\"} 1\n", 1000).expect_err("4 labels");
    assert_eq!(
        e.to_string(),
        "label_limit exceeded (metric: a, number of labels: 4, limit: 3)"
    );
    let mut t = Target::new(AppendSettings {
        validation: ValidationScheme::Legacy,
        ..settings()
    });
    let e = t.scrape("{\"a.b\"} 1\n", 1000).expect_err("legacy names");
    assert_eq!(
        e.to_string(),
        "invalid metric name or label names: {__name__=\"a.b\", instance=\"h:1\", job=\"j\"}"
    );
    // A storage error other than order, duplicate or bounds fails it too.
    let mut t = Target::new(settings());
    assert!(t.scrape("a{fail=\"yes\"} 1\n", 1000).is_err());
}

#[test]
fn skipped_samples_are_counted_not_fatal() {
    let mut t = Target::new(settings());
    // A repeated line without timestamp is a duplicate; one too far ahead
    // is out of bounds; both still count as added.
    let c = t
        .scrape(
            &format!("a 1\na 2\nb 1 {}\n", 1000 + MAX_AHEAD_MS + 1),
            1000,
        )
        .expect("ok");
    assert_eq!((c.total, c.added, c.series_added), (3, 3, 1));
    assert_eq!(
        t.series("{__name__=\"a\", instance=\"h:1\", job=\"j\"}"),
        vec![(1000, "1".into())]
    );
}

#[test]
fn content_types() {
    let s = settings();
    let mut cache = ScrapeCache::new();
    let mut mem = Memory::default();
    let mut app = MemoryAppender {
        mem: &mut mem,
        pending: Vec::new(),
    };
    let mut b = BodyAppender::new(&mut cache, &s);
    let e = append_body(&mut b, &mut app, b"a 1\n", "", 1, 1).expect_err("blank");
    assert!(e
        .to_string()
        .starts_with("non-compliant scrape target sending blank Content-Type"));
    let e = append_body(&mut b, &mut app, b"a 1\n", "text/html", 1, 1).expect_err("html");
    assert_eq!(
        e.to_string(),
        "received unsupported Content-Type \"text/html\" and no fallback_scrape_protocol specified for target"
    );
    let s = AppendSettings {
        fallback_media_type: Some("text/plain"),
        ..settings()
    };
    let mut b = BodyAppender::new(&mut cache, &s);
    assert!(append_body(&mut b, &mut app, b"a 1\n", "text/html", 1, 1).is_ok());
    // OpenMetrics bodies go to the OpenMetrics parser, a fallback too.
    let om = b"a 1\n# EOF\n";
    assert!(append_body(&mut b, &mut app, om, "application/openmetrics-text", 2, 2).is_ok());
    let s = AppendSettings {
        fallback_media_type: Some("application/openmetrics-text"),
        ..settings()
    };
    let mut b = BodyAppender::new(&mut cache, &s);
    assert!(append_body(&mut b, &mut app, om, "", 3, 3).is_ok());
    let e = append_body(&mut b, &mut app, b"a 1\n", "", 4, 4).expect_err("not OpenMetrics");
    assert_eq!(e.to_string(), "data does not end with # EOF");
}

#[test]
fn openmetrics_scrapes_like_prometheus() {
    let mut t = Target::new(settings());
    let body = "# HELP req Requests.\n# TYPE req counter\n# UNIT req_seconds seconds\n\
        req_total{code=\"200\"} 3 # {trace_id=\"abc\"} 1 1.5\n\
        req_created{code=\"200\"} 1700000000\n\
        up 1\n# EOF\n";
    let c = t.scrape_om(body, 1000).expect("ok");
    // _created is an ordinary series, as in Prometheus by default.
    assert_eq!((c.total, c.added, c.series_added), (3, 3, 3));
    assert_eq!(
        t.series("{__name__=\"req_total\", code=\"200\", instance=\"h:1\", job=\"j\"}"),
        vec![(1000, "3".into())]
    );
    assert_eq!(
        t.series("{__name__=\"req_created\", code=\"200\", instance=\"h:1\", job=\"j\"}"),
        vec![(1000, "1700000000".into())]
    );
    // The exemplar was read and dropped: only the three series are stored.
    assert_eq!(t.mem.samples.len(), 3);
    // HELP, TYPE and UNIT are the target's metadata.
    let meta = lock(&t.cache.metadata).list();
    let names: Vec<(&str, &str, &str, &str)> = meta
        .iter()
        .map(|m| {
            (
                m.metric.as_str(),
                m.kind.as_str(),
                m.help.as_str(),
                m.unit.as_str(),
            )
        })
        .collect();
    assert_eq!(
        names,
        vec![
            ("req", "counter", "Requests.", ""),
            ("req_seconds", "unknown", "", "seconds")
        ]
    );

    // The second scrape finds every series in the cache: appends by ref.
    let c = t
        .scrape_om(body.replace(" 3 #", " 4 #").as_str(), 2000)
        .expect("ok");
    assert_eq!((c.total, c.added, c.series_added), (3, 3, 0));
    assert_eq!(t.mem.by_ref, 3, "all three went by ref");

    // A series that goes away gets a stale marker.
    t.scrape_om("up 1\n# EOF\n", 3000).expect("ok");
    assert_eq!(
        t.series("{__name__=\"req_total\", code=\"200\", instance=\"h:1\", job=\"j\"}"),
        vec![
            (1000, "3".into()),
            (2000, "4".into()),
            (3000, "stale".into())
        ]
    );

    // Explicit timestamps are seconds.
    t.scrape_om("up 1\nlate 1 3.5\n# EOF\n", 4000).expect("ok");
    assert_eq!(
        t.series("{__name__=\"late\", instance=\"h:1\", job=\"j\"}"),
        vec![(3500, "1".into())]
    );
}

#[test]
fn openmetrics_errors_fail_the_scrape() {
    let mut t = Target::new(settings());
    t.scrape_om("a 1\n# EOF\n", 1000).expect("ok");
    // A bad exemplar fails the scrape as in Prometheus (and a failed
    // scrape marks everything stale).
    let e = t
        .scrape_om("a 1 # {\"x\"} 1\n# EOF\n", 2000)
        .expect_err("bad exemplar");
    assert_eq!(
        e.to_string(),
        "expected label name, got \"} \" (\"BCLOSE\") while parsing: \"a 1 # {\\\"x\\\"} \""
    );
    assert_eq!(
        t.series("{__name__=\"a\", instance=\"h:1\", job=\"j\"}"),
        vec![(1000, "1".into()), (2000, "stale".into())]
    );
    let e = t.scrape_om("a 1\n", 3000).expect_err("no # EOF");
    assert_eq!(e.to_string(), "data does not end with # EOF");
    let e = t
        .scrape_om("a 1\n# EOF\nb 1\n", 4000)
        .expect_err("data after # EOF");
    assert_eq!(e.to_string(), "unexpected data after # EOF");
    // The text format is not OpenMetrics: without `# EOF` it fails.
    assert!(t.scrape_om("# TYPE a untyped\na 1\n", 5000).is_err());
    // OpenMetrics 2.0 is refused, as Prometheus refuses it without its
    // feature flag.
    let e = t
        .scrape_as(
            "a 1\n# EOF\n",
            "application/openmetrics-text; version=2.0.0",
            6000,
            false,
        )
        .expect_err("OpenMetrics 2.0");
    assert!(e
        .to_string()
        .starts_with("received OpenMetrics 2.0 Content-Type"));
}

/// The settings of a job converting classic histograms to NHCB;
/// `keep`: `always_scrape_classic_histograms`.
fn nhcb_settings(keep: bool) -> AppendSettings {
    AppendSettings {
        convert_classic_histograms_to_nhcb: true,
        histograms: HistogramSettings {
            always_scrape_classic: keep,
            ..HistogramSettings::default()
        },
        ..settings()
    }
}

/// The record of an integer NHCB: count, sum, spans, deltas, bounds
/// (`histogram_record`'s layout).
fn nhcb_record(count: u64, sum: f64, spans: &str, deltas: &str, bounds: &[f64]) -> String {
    let bounds: Vec<String> = bounds
        .iter()
        .map(|b| format!("{:016x}", b.to_bits()))
        .collect();
    let bounds = if bounds.is_empty() {
        "-".to_string()
    } else {
        bounds.join(",")
    };
    format!(
        "H 0 -53 0000000000000000 {count} 0 {:016x} {spans} - {deltas} - {bounds}",
        sum.to_bits()
    )
}

const OM: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";
const TEXT: &str = "text/plain; version=0.0.4";

#[test]
fn classic_histograms_convert_to_nhcb_in_the_text_formats() {
    let h = sel("h", "");
    // Buckets out of order, no +Inf bucket, _count and _sum after: one
    // histogram of the family's name, the classic series gone.
    let body = "# TYPE h histogram\nh_bucket{le=\"2\"} 3\nh_bucket{le=\"0.5\"} 1\nh_count 4\nh_sum 5\n# TYPE g gauge\ng 1\n";
    let want = nhcb_record(4, 5.0, "0:3", "1,1,-1", &[0.5, 2.0]);
    for ct in [TEXT, OM] {
        let mut t = Target::new(nhcb_settings(false));
        let body = if ct == OM {
            format!("{body}# EOF\n")
        } else {
            body.to_string()
        };
        let c = t.scrape_as(&body, ct, 1000, true).expect("ok");
        assert_eq!((c.total, c.added, c.series_added), (2, 2, 2), "{ct}");
        assert_eq!(t.series(&h), vec![(1000, want.clone())], "{ct}");
        assert_eq!(t.mem.samples.len(), 2, "h and g only: {ct}");
        // The next scrape finds it in the cache.
        let c = t.scrape_as(&body, ct, 2000, true).expect("ok");
        assert_eq!((c.total, c.series_added), (2, 0), "{ct}");
        assert_eq!(t.series(&h).len(), 2);
    }
    // The classic series kept too, before the histogram.
    let mut t = Target::new(nhcb_settings(true));
    let c = t.scrape_as(body, TEXT, 1000, true).expect("ok");
    assert_eq!((c.total, c.added), (6, 6));
    assert_eq!(t.series(&sel("h_count", "")), vec![(1000, "4".into())]);
    assert_eq!(t.series(&h), vec![(1000, want)]);
}

#[test]
fn nhcb_labels_timestamps_and_boundaries() {
    // Two label sets: two histograms; `le` dropped, other labels kept;
    // the timestamp is the last series line's when handed out (the one
    // that ended it: a HELP line ends the second one after its own).
    let body = "# TYPE h histogram\n\
                h_bucket{a=\"1\",le=\"1\"} 1 500\n\
                h_bucket{a=\"1\",le=\"+Inf\"} 2 600\n\
                h_bucket{a=\"2\",le=\"+Inf\"} 3 700\n\
                h_count{a=\"2\"} 3 800\n\
                # HELP x An x.\n\
                x 1\n";
    let mut t = Target::new(nhcb_settings(false));
    let c = t.scrape_as(body, TEXT, 1000, true).expect("ok");
    assert_eq!((c.total, c.added), (3, 3));
    assert_eq!(
        t.series(&sel("h", "a=\"1\", ")),
        vec![(700, nhcb_record(2, 0.0, "0:2", "1,0", &[1.0]))]
    );
    assert_eq!(
        t.series(&sel("h", "a=\"2\", ")),
        vec![(800, nhcb_record(3, 0.0, "0:1", "3", &[]))]
    );
    // Not honoured: the scrape's time.
    let mut t = Target::new(AppendSettings {
        honor_timestamps: false,
        ..nhcb_settings(false)
    });
    t.scrape_as(body, TEXT, 1000, true).expect("ok");
    assert_eq!(t.series(&sel("h", "a=\"1\", "))[0].0, 1000);

    // Not a histogram's series: another TYPE, `gaugehistogram`, a name
    // other than the family's, an `le` that is no number: kept as they
    // are, and they end the histogram before them.
    let om = "# TYPE g gaugehistogram\ng_bucket{le=\"1\"} 1\ng_gcount 1\n\
              # TYPE h histogram\nh_bucket{le=\"1\"} 1\nother 5\nh_bucket{le=\"x\"} 2\nh_count 1\n# EOF\n";
    let mut t = Target::new(nhcb_settings(false));
    let c = t.scrape_as(om, OM, 1000, true).expect("ok");
    // g_bucket, g_gcount, h (from h_bucket 1), other, h_bucket{le="x"},
    // h (from h_count: a duplicate of the first).
    assert_eq!((c.total, c.added), (6, 6));
    assert_eq!(
        t.series("{__name__=\"g_bucket\", instance=\"h:1\", job=\"j\", le=\"1\"}"),
        vec![(1000, "1".into())]
    );
    assert_eq!(t.series(&sel("other", "")), vec![(1000, "5".into())]);
    assert_eq!(
        t.series("{__name__=\"h_bucket\", instance=\"h:1\", job=\"j\", le=\"x\"}"),
        vec![(1000, "2".into())]
    );
    assert_eq!(
        t.series(&sel("h", "")),
        vec![(1000, nhcb_record(1, 0.0, "0:1", "1", &[1.0]))]
    );
}

#[test]
fn nhcb_that_cannot_be_converted_is_lost_silently() {
    // Not cumulative, and a +Inf bucket other than the count.
    let body = "# TYPE h histogram\nh_bucket{le=\"1\"} 5\nh_bucket{le=\"2\"} 3\nh_count 5\n\
                # TYPE i histogram\ni_bucket{le=\"+Inf\"} 2\ni_count 3\nok 1\n";
    let mut t = Target::new(nhcb_settings(false));
    let c = t.scrape_as(body, TEXT, 1000, true).expect("not an error");
    assert_eq!((c.total, c.added), (1, 1), "only `ok`");
    assert_eq!(t.mem.samples.len(), 1);
    // Kept as classic series when they are kept.
    let mut t = Target::new(nhcb_settings(true));
    let c = t.scrape_as(body, TEXT, 1000, true).expect("ok");
    assert_eq!((c.total, c.added), (6, 6));
    assert!(t.series(&sel("h", "")).is_empty());
}

#[test]
fn nhcb_goes_through_relabeling_and_limits() {
    let body = "# TYPE h histogram\nh_bucket{le=\"1\"} 1\nh_bucket{le=\"2\"} 2\nh_bucket{le=\"+Inf\"} 3\nh_count 3\nh_sum 1\nx 1\n";
    // Relabeling sees the converted series' labels.
    let rules = parse_rules(
        "- source_labels: [__name__]\n  regex: h\n  target_label: seen\n  replacement: yes\n",
    )
    .expect("rules");
    let mut t = Target::new(AppendSettings {
        metric_relabel_configs: rules,
        ..nhcb_settings(false)
    });
    t.scrape_as(body, TEXT, 1000, true).expect("ok");
    let seen = "{__name__=\"h\", instance=\"h:1\", job=\"j\", seen=\"yes\"}";
    assert_eq!(t.series(seen).len(), 1);
    // One sample against sample_limit.
    let mut t = Target::new(AppendSettings {
        sample_limit: 2,
        ..nhcb_settings(false)
    });
    assert_eq!(t.scrape_as(body, TEXT, 1000, true).expect("ok").total, 2);
    // Three buckets over a limit of two: refused, not reduced.
    let mut t = Target::new(AppendSettings {
        histograms: HistogramSettings {
            bucket_limit: 2,
            ..HistogramSettings::default()
        },
        ..nhcb_settings(false)
    });
    let e = t.scrape_as(body, TEXT, 1000, true).expect_err("limit");
    assert!(matches!(e, BodyError::BucketLimit), "{e}");
}

#[test]
fn nhcb_off_leaves_classic_histograms_alone() {
    let body = "# TYPE h histogram\nh_bucket{le=\"1\"} 1\nh_bucket{le=\"+Inf\"} 2\nh_count 2\nh_sum 3\n# EOF\n";
    let mut t = Target::new(settings());
    assert_eq!(t.scrape_om(body, 1000).expect("ok").added, 4);
    assert!(t.series(&sel("h", "")).is_empty());
}

const PROTO: &str =
    "application/vnd.google.protobuf; proto=io.prometheus.client.MetricFamily; encoding=delimited";

fn native_settings() -> AppendSettings {
    AppendSettings {
        histograms: HistogramSettings {
            scrape_native: true,
            ..HistogramSettings::default()
        },
        ..settings()
    }
}

fn metric(labels: &[(&str, &str)]) -> pb::Metric {
    pb::Metric {
        label: pb::labels(labels),
        ..pb::Metric::default()
    }
}

fn classic_bucket(upper: f64, count: u64) -> pb::Bucket {
    pb::Bucket {
        upper_bound: Some(upper),
        cumulative_count: Some(count),
        ..pb::Bucket::default()
    }
}

/// A native integer histogram of `schema`: zero count 1, the positive
/// buckets' absolute counts from index 0, and classic buckets.
fn native(schema: i32, counts: &[i64], classic: Vec<pb::Bucket>) -> pb::Histogram {
    let mut deltas = Vec::new();
    let mut prev = 0;
    for &c in counts {
        deltas.push(c - prev);
        prev = c;
    }
    pb::Histogram {
        sample_count: Some(1 + counts.iter().sum::<i64>() as u64),
        sample_sum: Some(2.5),
        schema: Some(schema),
        zero_threshold: Some(0.001),
        zero_count: Some(1),
        positive_span: vec![pb::span(0, counts.len() as u32)],
        positive_delta: deltas,
        bucket: classic,
        ..pb::Histogram::default()
    }
}

/// A counter, a gauge, a classic histogram, a summary and a native
/// histogram (with its classic buckets, which only
/// `always_scrape_classic_histograms` takes).
fn every_type(with_native: bool) -> Vec<pb::MetricFamily> {
    let mut families = vec![
        pb::MetricFamily {
            unit: Some("requests".into()),
            ..pb::family(
                "req_total",
                pb::COUNTER,
                vec![pb::Metric {
                    counter: Some(pb::Counter {
                        value: Some(3.0),
                        exemplar: Some(pb::Exemplar {
                            label: pb::labels(&[("trace_id", "abc")]),
                            value: Some(1.0),
                            timestamp: None,
                        }),
                        start_timestamp: Some(pb::Timestamp {
                            seconds: Some(1),
                            nanos: None,
                        }),
                    }),
                    ..metric(&[("code", "200")])
                }],
            )
        },
        pb::family(
            "temp",
            pb::GAUGE,
            vec![pb::Metric {
                gauge: Some(pb::Gauge { value: Some(21.5) }),
                ..metric(&[])
            }],
        ),
        pb::family(
            "lat",
            pb::HISTOGRAM,
            vec![pb::Metric {
                histogram: Some(pb::Histogram {
                    sample_count: Some(4),
                    sample_sum: Some(2.0),
                    bucket: vec![classic_bucket(0.1, 1), classic_bucket(1.0, 3)],
                    ..pb::Histogram::default()
                }),
                ..metric(&[])
            }],
        ),
        pb::family(
            "rpc",
            pb::SUMMARY,
            vec![pb::Metric {
                summary: Some(pb::Summary {
                    sample_count: Some(2),
                    sample_sum: Some(1.0),
                    quantile: vec![pb::Quantile {
                        quantile: Some(0.5),
                        value: Some(0.25),
                    }],
                    ..pb::Summary::default()
                }),
                ..metric(&[])
            }],
        ),
    ];
    if with_native {
        families.push(pb::family(
            "nat",
            pb::HISTOGRAM,
            vec![pb::Metric {
                histogram: Some(native(3, &[2, 4], vec![classic_bucket(1.0, 7)])),
                ..metric(&[("path", "/")])
            }],
        ));
    }
    families
}

const NAT: &str = "{__name__=\"nat\", instance=\"h:1\", job=\"j\", path=\"/\"}";
/// `nat` as stored: schema 3, zero threshold 0.001, count 7, zero count
/// 1, sum 2.5, buckets 2 and 4 at indexes 0 and 1.
const NAT_RECORD: &str = "H 0 3 3f50624dd2f1a9fc 7 1 4004000000000000 0:2 - 2,2 - -";

fn sel(name: &str, extra: &str) -> String {
    format!("{{__name__=\"{name}\", {extra}instance=\"h:1\", job=\"j\"}}")
}

#[test]
fn protobuf_scrapes_every_type_like_prometheus() {
    let mut t = Target::new(native_settings());
    let c = t.scrape_pb(&every_type(true), 1000).expect("ok");
    // 1 counter, 1 gauge, 5 classic histogram series, 3 summary series,
    // 1 native histogram; the exemplar and start timestamp are dropped.
    assert_eq!((c.total, c.added, c.series_added), (11, 11, 11));
    assert_eq!(t.mem.samples.len(), 11);
    assert_eq!(
        t.series(&sel("req_total", "code=\"200\", ")),
        vec![(1000, "3".into())]
    );
    assert_eq!(t.series(&sel("temp", "")), vec![(1000, "21.5".into())]);
    assert_eq!(t.series(&sel("lat_count", "")), vec![(1000, "4".into())]);
    assert_eq!(t.series(&sel("lat_sum", "")), vec![(1000, "2".into())]);
    for (le, count) in [("0.1", "1"), ("1.0", "3"), ("+Inf", "4")] {
        assert_eq!(
            t.series(&format!(
                "{{__name__=\"lat_bucket\", instance=\"h:1\", job=\"j\", le=\"{le}\"}}"
            )),
            vec![(1000, count.into())],
            "{le}"
        );
    }
    assert_eq!(t.series(&sel("rpc_count", "")), vec![(1000, "2".into())]);
    assert_eq!(
        t.series("{__name__=\"rpc\", instance=\"h:1\", job=\"j\", quantile=\"0.5\"}"),
        vec![(1000, "0.25".into())]
    );
    assert_eq!(t.series(NAT), vec![(1000, NAT_RECORD.into())]);
    // HELP, TYPE and UNIT are the target's metadata.
    let meta = lock(&t.cache.metadata).list();
    let got: Vec<(&str, &str, &str)> = meta
        .iter()
        .map(|m| (m.metric.as_str(), m.kind.as_str(), m.unit.as_str()))
        .collect();
    assert_eq!(
        got,
        vec![
            ("lat", "histogram", ""),
            ("nat", "histogram", ""),
            ("req_total", "counter", "requests"),
            ("rpc", "summary", ""),
            ("temp", "gauge", ""),
        ]
    );
    assert!(meta.iter().all(|m| m.help == format!("{} help", m.metric)));

    // The second scrape finds every series in the cache.
    let c = t.scrape_pb(&every_type(true), 2000).expect("ok");
    assert_eq!((c.total, c.added, c.series_added), (11, 11, 0));
    assert_eq!(t.mem.by_ref, 11, "all went by ref");
    assert_eq!(t.series(NAT).len(), 2);

    // The native histogram goes away: a float stale marker, as Prometheus
    // writes it.
    let c = t.scrape_pb(&every_type(false), 3000).expect("ok");
    assert_eq!((c.total, c.series_added), (10, 0));
    assert_eq!(
        t.series(NAT),
        vec![
            (1000, NAT_RECORD.into()),
            (2000, NAT_RECORD.into()),
            (3000, "stale".into())
        ]
    );
    // A failed scrape marks the rest stale too.
    t.scrape_bytes(b"\x05\x0a", PROTO, 4000)
        .expect_err("cut body");
    assert_eq!(
        t.series(&sel("temp", "")).last(),
        Some(&(4000, "stale".into()))
    );
}

#[test]
fn protobuf_native_parts_follow_the_job() {
    // Native histograms not scraped: the classic buckets only.
    let mut t = Target::new(settings());
    let c = t.scrape_pb(&every_type(true), 1000).expect("ok");
    assert_eq!(c.total, 10 + 4, "nat_count, nat_sum, two nat_bucket");
    assert!(t.series(NAT).is_empty());
    assert_eq!(
        t.series("{__name__=\"nat_bucket\", instance=\"h:1\", job=\"j\", le=\"1.0\", path=\"/\"}"),
        vec![(1000, "7".into())]
    );
    // Scraped, and the classic buckets kept too.
    let mut t = Target::new(AppendSettings {
        histograms: HistogramSettings {
            scrape_native: true,
            always_scrape_classic: true,
            ..HistogramSettings::default()
        },
        ..settings()
    });
    let c = t.scrape_pb(&every_type(true), 1000).expect("ok");
    assert_eq!(
        c.total,
        10 + 1 + 4,
        "nat, nat_count, nat_sum, two nat_bucket"
    );
    assert_eq!(t.series(NAT), vec![(1000, NAT_RECORD.into())]);
    // Classic histograms converted; a native one is not.
    let mut t = Target::new(AppendSettings {
        convert_classic_histograms_to_nhcb: true,
        ..native_settings()
    });
    let c = t.scrape_pb(&every_type(true), 1000).expect("ok");
    assert_eq!(c.total, 11 - 5 + 1, "lat instead of its five series");
    assert_eq!(
        t.series(&sel("lat", "")),
        vec![(1000, nhcb_record(4, 2.0, "0:3", "1,1,-1", &[0.1, 1.0]))]
    );
    assert_eq!(t.series(NAT), vec![(1000, NAT_RECORD.into())]);
    // Not cumulative: the scrape fails with Prometheus' message.
    let mut bad = every_type(false);
    bad[2].metric[0].histogram.as_mut().expect("lat").bucket[1].cumulative_count = Some(0);
    let e = t.scrape_pb(&bad, 2000).expect_err("not cumulative");
    assert_eq!(e.to_string(), "count is not cumulative: 0 < 1");
}

#[test]
fn bucket_limit_reduces_then_refuses() {
    let family = |name: &str, schema: i32, counts: &[i64]| {
        pb::family(
            name,
            pb::HISTOGRAM,
            vec![pb::Metric {
                histogram: Some(native(schema, counts, vec![])),
                ..metric(&[])
            }],
        )
    };
    let limited = |bucket_limit: u64, max_schema: i32, sample_limit: u64| {
        Target::new(AppendSettings {
            sample_limit,
            histograms: HistogramSettings {
                scrape_native: true,
                bucket_limit,
                max_schema,
                ..HistogramSettings::default()
            },
            ..settings()
        })
    };
    // Four buckets of schema 3 at 0..=3: schema 2 has them at 0, 1, 1, 2,
    // schema 1 at 0, 1, 1, 1.
    let mut t = limited(2, 8, 0);
    t.scrape_pb(&[family("h", 3, &[1, 1, 1, 1])], 1000)
        .expect("reduced");
    assert_eq!(
        t.series(&sel("h", "")),
        vec![(
            1000,
            "H 0 1 3f50624dd2f1a9fc 5 1 4004000000000000 0:2 - 1,2 - -".into()
        )]
    );
    // native_histogram_min_bucket_factor: reduced to its schema first.
    let mut t = limited(0, 2, 0);
    t.scrape_pb(&[family("h", 3, &[1, 1, 1, 1])], 1000)
        .expect("reduced");
    assert_eq!(
        t.series(&sel("h", "")),
        vec![(
            1000,
            "H 0 2 3f50624dd2f1a9fc 5 1 4004000000000000 0:3 - 1,1,-1 - -".into()
        )]
    );
    // At schema -4 nothing reduces: the body is read to its end, then the
    // scrape fails (and is rolled back).
    let mut t = limited(1, 8, 0);
    let body = [
        family("a", 0, &[1]),
        family("b", -4, &[1, 1]),
        family("c", 0, &[1]),
    ];
    let e = t.scrape_pb(&body, 1000).expect_err("over the limit");
    assert_eq!(e, BodyError::BucketLimit);
    assert_eq!(e.to_string(), "histogram bucket limit exceeded");
    assert!(t.series(&sel("a", "")).is_empty());
    // The sample limit, hit too, is the error; the bucket limit is noted.
    let mut t = limited(1, 8, 1);
    let mut b = BodyAppender::new(&mut t.cache, &t.settings);
    let mut app = MemoryAppender {
        mem: &mut t.mem,
        pending: Vec::new(),
    };
    let e = append_body(&mut b, &mut app, &pb::delimited(&body), PROTO, 1000, 1000)
        .expect_err("over both");
    assert_eq!(e, BodyError::SampleLimit);
    assert!(b.bucket_limit_exceeded);
}

#[test]
fn histogram_settings_come_from_the_job_and_the_target() {
    assert_eq!(pick_schema(0.0), 8);
    assert_eq!(pick_schema(1.0), 8);
    assert_eq!(pick_schema(1.1), 2);
    assert_eq!(pick_schema(2.0), 0);
    assert_eq!(pick_schema(65536.0), -4);
    assert_eq!(pick_schema(1e300), -4);
    let cfg = ferrite_config::Config::parse(
        "scrape_configs:\n- job_name: j\n  scrape_native_histograms: true\n  \
         native_histogram_bucket_limit: 10\n  native_histogram_min_bucket_factor: 1.1\n  \
         static_configs: [{targets: ['a:1']}]\n",
        "prometheus.yml",
    )
    .expect("config");
    let job = &cfg.scrape_configs[0];
    let s = HistogramSettings::from_job(job, &Labels::default());
    assert_eq!(
        s,
        HistogramSettings {
            scrape_native: true,
            always_scrape_classic: false,
            bucket_limit: 10,
            max_schema: 2,
        }
    );
    // The target's labels override the booleans where they parse.
    let labels = Labels::new([
        ("__scrape_native_histograms__", "f"),
        ("__always_scrape_classic_histograms__", "TRUE"),
    ]);
    let s = HistogramSettings::from_job(job, &labels);
    assert!(!s.scrape_native && s.always_scrape_classic);
    let s = HistogramSettings::from_job(job, &Labels::new([("__scrape_native_histograms__", "x")]));
    assert!(s.scrape_native);
    // So does `__convert_classic_histograms_to_nhcb__` the job's conversion.
    assert!(!converts_to_nhcb(job, &Labels::default()));
    let on = Labels::new([("__convert_classic_histograms_to_nhcb__", "1")]);
    assert!(converts_to_nhcb(job, &on));
    let mut converting = job.clone();
    converting.convert_classic_histograms_to_nhcb = true;
    let off = Labels::new([("__convert_classic_histograms_to_nhcb__", "false")]);
    assert!(!converts_to_nhcb(&converting, &off));
    let bad = Labels::new([("__convert_classic_histograms_to_nhcb__", "no")]);
    assert!(converts_to_nhcb(&converting, &bad));
}
