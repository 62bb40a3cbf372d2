//! Prometheus' HTTP self-metrics, per handler: how many requests each
//! route answered with which status code
//! (`prometheus_http_requests_total{code,handler}`), how long they took
//! (`prometheus_http_request_duration_seconds{handler}`) and how many bytes
//! the responses had (`prometheus_http_response_size_bytes{handler}`).
//!
//! As in Prometheus:
//!
//! - the `handler` label is the route as registered, in httprouter's
//!   spelling (`/api/v1/label/:name/values`, not axum's
//!   `/api/v1/label/{name}/values`) and without `--web.route-prefix`
//!   (Prometheus names its API routes `/api/v1` plus the path, whatever the
//!   prefix);
//! - every route's counter exists from the start with `code="200"` at 0,
//!   its histograms only from its first request;
//! - only routed requests count: a path no route matches (404), and a
//!   method the route does not serve (405 from the router), are not
//!   metered, as Prometheus' router answers them outside its instrumented
//!   handlers.
//!
//! A request is timed from when its route takes it to when its response
//! is complete, and its body size is the bytes of the response body: the
//! body's exact size when it has one (every fully built response), or, for
//! a streamed body, the bytes of its chunks counted as they are handed to
//! the connection, the request then recorded when the stream ends (or is
//! dropped, the client gone); the stream is passed on as its data chunks
//! (trailers, which no Ferrite route sends, would not be). A `HEAD`
//! response has no body: 0 bytes.
//!
//! Routes are metered through [`MeteredRoutes`], which gives each route
//! its own [`HandlerStats`]: a request finds its counters without a lookup
//! or an allocation (beyond the router's own boxed futures, and one box to
//! count a streamed body through).

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::body::{Body, HttpBody};
use axum::extract::{Request, State};
use axum::http::Method;
use axum::middleware::Next;
use axum::response::Response;
use axum::routing::MethodRouter;
use axum::Router;
use ferrite_model::selfmetrics::histogram::Histogram;
use ferrite_model::selfmetrics::{Family, Sample};
use futures_util::StreamExt;

/// `prometheus_http_request_duration_seconds`' classic buckets, as
/// Prometheus sets them.
pub const REQUEST_DURATION_BUCKETS: &[f64] = &[0.1, 0.2, 0.4, 1.0, 3.0, 8.0, 20.0, 60.0, 120.0];

/// `prometheus_http_response_size_bytes`' buckets: 100 bytes and then
/// every power of ten up to 1e9 (Go's `ExponentialBuckets(100, 10, 8)`).
pub const RESPONSE_SIZE_BUCKETS: &[f64] = &[100.0, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9];

const REQUESTS_TOTAL: &str = "prometheus_http_requests_total";
const REQUESTS_TOTAL_HELP: &str = "Counter of HTTP requests.";
const REQUEST_DURATION: &str = "prometheus_http_request_duration_seconds";
const REQUEST_DURATION_HELP: &str = "Histogram of latencies for HTTP requests.";
const RESPONSE_SIZE: &str = "prometheus_http_response_size_bytes";
const RESPONSE_SIZE_HELP: &str = "Histogram of response size for HTTP requests.";

/// The status code every route's counter shows from the start.
const PRESET_CODE: u16 = 200;

/// One route's requests: per status code, their durations and their
/// response sizes.
#[derive(Debug)]
pub struct HandlerStats {
    /// The `handler` label: the route in Prometheus' spelling.
    handler: String,
    /// Requests per status code, in the order the codes first came.
    codes: Mutex<Vec<(u16, u64)>>,
    duration: Histogram,
    size: Histogram,
}

impl HandlerStats {
    fn new(handler: String) -> Self {
        let mut codes = Vec::with_capacity(4);
        codes.push((PRESET_CODE, 0));
        HandlerStats {
            handler,
            codes: Mutex::new(codes),
            duration: Histogram::new(REQUEST_DURATION_BUCKETS),
            size: Histogram::new(RESPONSE_SIZE_BUCKETS),
        }
    }

    /// The `handler` label of this route.
    pub fn handler(&self) -> &str {
        &self.handler
    }

    /// Records one answered request.
    fn observe(&self, code: u16, elapsed: Duration, bytes: u64) {
        {
            let mut codes = self.codes.lock().unwrap_or_else(|p| p.into_inner());
            match codes.iter_mut().find(|(c, _)| *c == code) {
                Some((_, n)) => *n += 1,
                None => codes.push((code, 1)),
            }
        }
        self.duration.observe(elapsed.as_secs_f64());
        self.size.observe(bytes as f64);
    }

    /// The requests per status code, as they stand.
    fn codes(&self) -> Vec<(u16, u64)> {
        self.codes.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }
}

/// The HTTP metrics of every metered route; clones share them.
#[derive(Debug, Clone, Default)]
pub struct HttpMetrics {
    handlers: Arc<Mutex<Vec<Arc<HandlerStats>>>>,
}

impl HttpMetrics {
    /// The stats of the route registered as `pattern` (axum's spelling,
    /// without the route prefix), made on its first registration.
    pub fn handler(&self, pattern: &str) -> Arc<HandlerStats> {
        let name = prometheus_handler_name(pattern);
        let mut handlers = self.handlers.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(known) = handlers.iter().find(|h| h.handler == name) {
            return known.clone();
        }
        let stats = Arc::new(HandlerStats::new(name));
        handlers.push(stats.clone());
        stats
    }

    /// The three families in name order, series in the order Go's client
    /// sorts them (by `code`, then `handler`; histograms by `handler`). A
    /// histogram family with no series yet is empty.
    pub fn families(&self) -> Vec<Family> {
        let mut handlers: Vec<Arc<HandlerStats>> = self
            .handlers
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone();
        handlers.sort_by(|a, b| a.handler.cmp(&b.handler));

        let mut counts: Vec<(u16, &str, u64)> = Vec::new();
        for h in &handlers {
            counts.extend(h.codes().into_iter().map(|(c, n)| (c, h.handler(), n)));
        }
        counts.sort_unstable();
        let requests = counts
            .into_iter()
            .map(|(code, handler, n)| Sample {
                name: REQUESTS_TOTAL.to_string(),
                labels: vec![("code", code.to_string()), ("handler", handler.to_string())],
                value: n as f64,
            })
            .collect();

        let histogram =
            |name: &'static str, help: &'static str, of: fn(&HandlerStats) -> &Histogram| {
                let mut samples = Vec::new();
                for h in &handlers {
                    let histogram = of(h);
                    if histogram.count() > 0 {
                        histogram.samples(name, &[("handler", h.handler.clone())], &mut samples);
                    }
                }
                Family {
                    name,
                    kind: "histogram",
                    help,
                    samples,
                }
            };
        vec![
            histogram(REQUEST_DURATION, REQUEST_DURATION_HELP, |h| &h.duration),
            Family {
                name: REQUESTS_TOTAL,
                kind: "counter",
                help: REQUESTS_TOTAL_HELP,
                samples: requests,
            },
            histogram(RESPONSE_SIZE, RESPONSE_SIZE_HELP, |h| &h.size),
        ]
    }
}

/// An axum route pattern in httprouter's spelling, as Prometheus names its
/// handlers: `{name}` becomes `:name`, `{*rest}` becomes `*rest`.
pub fn prometheus_handler_name(pattern: &str) -> String {
    let mut name = String::with_capacity(pattern.len());
    let mut rest = pattern;
    while let Some(open) = rest.find('{') {
        name.push_str(&rest[..open]);
        let after = &rest[open + 1..];
        let Some(close) = after.find('}') else {
            // Not a parameter (axum refuses such a route anyway).
            name.push_str(&rest[open..]);
            return name;
        };
        let param = &after[..close];
        match param.strip_prefix('*') {
            Some(wildcard) => {
                name.push('*');
                name.push_str(wildcard);
            }
            None => {
                name.push(':');
                name.push_str(param);
            }
        }
        rest = &after[close + 1..];
    }
    name.push_str(rest);
    name
}

/// A router whose every route is metered under its own [`HandlerStats`]
/// in an [`HttpMetrics`]. `inner` wraps each route's methods inside the
/// metering: what it adds (reading the body within `--web.read-timeout`)
/// is timed and counted as the handler's, as Go's handlers read their own
/// bodies. The metering wraps only the methods a route serves, not its
/// fallback: a method it does not serve is not counted.
pub struct MeteredRoutes<S, F> {
    router: Router<S>,
    metrics: HttpMetrics,
    inner: F,
}

impl<S, F> MeteredRoutes<S, F>
where
    S: Clone + Send + Sync + 'static,
    F: Fn(MethodRouter<S>) -> MethodRouter<S>,
{
    /// No routes yet; they will count into `metrics`.
    pub fn new(metrics: &HttpMetrics, inner: F) -> Self {
        MeteredRoutes {
            router: Router::new(),
            metrics: metrics.clone(),
            inner,
        }
    }

    /// Adds `methods` at `pattern` (as [`Router::route`]), metered as
    /// [`prometheus_handler_name`]`(pattern)`.
    pub fn route(mut self, pattern: &str, methods: MethodRouter<S>) -> Self {
        let stats = self.metrics.handler(pattern);
        let methods =
            (self.inner)(methods).route_layer(axum::middleware::from_fn_with_state(stats, meter));
        self.router = self.router.route(pattern, methods);
        self
    }

    /// The routes over `state` (as [`Router::with_state`]).
    pub fn with_state<S2>(self, state: S) -> Router<S2> {
        self.router.with_state(state)
    }
}

/// A request being answered: recorded when dropped, that is when its
/// response is complete.
struct Exchange {
    stats: Arc<HandlerStats>,
    code: u16,
    started: Instant,
    body_bytes: u64,
}

impl Exchange {
    /// Counts a chunk of a streamed body. (A method, so that a closure
    /// calling it takes the whole exchange, not a copy of the count.)
    fn count_chunk(&mut self, bytes: usize) {
        self.body_bytes += bytes as u64;
    }
}

impl Drop for Exchange {
    fn drop(&mut self) {
        self.stats
            .observe(self.code, self.started.elapsed(), self.body_bytes);
    }
}

/// Middleware: times the request, then records its status code and body
/// size (see the module's doc for when and how).
async fn meter(State(stats): State<Arc<HandlerStats>>, req: Request, next: Next) -> Response {
    let started = Instant::now();
    let head = req.method() == Method::HEAD;
    let response = next.run(req).await;
    let mut exchange = Exchange {
        stats,
        code: response.status().as_u16(),
        started,
        body_bytes: 0,
    };
    if head {
        return response;
    }
    if let Some(size) = response.body().size_hint().exact() {
        exchange.body_bytes = size;
        return response;
    }
    let (parts, body) = response.into_parts();
    let counted = body.into_data_stream().map(move |chunk| {
        if let Ok(bytes) = &chunk {
            exchange.count_chunk(bytes.len());
        }
        chunk
    });
    Response::from_parts(parts, Body::from_stream(counted))
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::routing::get;

    #[test]
    fn handler_names_in_httprouters_spelling() {
        for (axum, prometheus) in [
            ("/metrics", "/metrics"),
            ("/-/ready", "/-/ready"),
            ("/api/v1/label/{name}/values", "/api/v1/label/:name/values"),
            ("/static/{*filepath}", "/static/*filepath"),
            ("/{a}/{b}", "/:a/:b"),
            ("/broken/{name", "/broken/{name"),
        ] {
            assert_eq!(prometheus_handler_name(axum), prometheus, "{axum}");
        }
    }

    #[test]
    fn routes_start_with_a_zero_200_and_no_histograms() {
        let m = HttpMetrics::default();
        let a = m.handler("/b/{x}");
        let again = m.handler("/b/{x}");
        assert!(Arc::ptr_eq(&a, &again));
        m.handler("/a");
        let fams = m.families();
        let names: Vec<_> = fams
            .iter()
            .map(|f| (f.name, f.kind, f.samples.len()))
            .collect();
        assert_eq!(
            names,
            [
                (REQUEST_DURATION, "histogram", 0),
                (REQUESTS_TOTAL, "counter", 2),
                (RESPONSE_SIZE, "histogram", 0),
            ]
        );
        let labels: Vec<_> = fams[1]
            .samples
            .iter()
            .map(|s| (s.labels.clone(), s.value))
            .collect();
        assert_eq!(
            labels,
            [
                (
                    vec![("code", "200".to_string()), ("handler", "/a".to_string())],
                    0.0
                ),
                (
                    vec![
                        ("code", "200".to_string()),
                        ("handler", "/b/:x".to_string())
                    ],
                    0.0
                ),
            ]
        );
    }

    #[test]
    fn series_sort_by_code_then_handler() {
        let m = HttpMetrics::default();
        m.handler("/b").observe(400, Duration::from_millis(150), 10);
        m.handler("/a")
            .observe(503, Duration::from_secs(2), 2_000_000);
        let fams = m.families();
        let series: Vec<_> = fams[1]
            .samples
            .iter()
            .map(|s| format!("{}/{} {}", s.labels[0].1, s.labels[1].1, s.value))
            .collect();
        assert_eq!(series, ["200//a 0", "200//b 0", "400//b 1", "503//a 1"]);
        let count = |f: &Family, handler: &str| {
            f.samples
                .iter()
                .find(|s| s.name.ends_with("_count") && s.labels[0].1 == handler)
                .map(|s| s.value)
        };
        assert_eq!(count(&fams[0], "/a"), Some(1.0));
        assert_eq!(count(&fams[2], "/b"), Some(1.0));
        let bucket = |le: &str| {
            fams[2]
                .samples
                .iter()
                .find(|s| s.labels == [("handler", "/a".to_string()), ("le", le.to_string())])
                .map(|s| s.value)
        };
        assert_eq!(bucket("1e+06"), Some(0.0));
        assert_eq!(bucket("1e+07"), Some(1.0));
    }

    /// Serves `router` on a free port; the server runs until the test's
    /// runtime ends.
    async fn serve(router: Router) -> std::net::SocketAddr {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move { axum::serve(listener, router).await });
        addr
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_streamed_body_counts_its_chunks() {
        const CHUNKS: [&str; 3] = ["abc", "defgh", "ij"];
        let m = HttpMetrics::default();
        let streamed = || async {
            let chunks = futures_util::stream::iter(
                CHUNKS.map(|c| Ok::<_, std::convert::Infallible>(c.as_bytes())),
            );
            Body::from_stream(chunks)
        };
        let router = MeteredRoutes::new(&m, |methods| methods)
            .route("/stream/{name}", get(streamed))
            .with_state(());
        let addr = serve(router).await;
        let body = reqwest::get(format!("http://{addr}/stream/x"))
            .await
            .unwrap()
            .text()
            .await
            .unwrap();
        assert_eq!(body, CHUNKS.concat());
        // The exchange is recorded when the server drops the body, just
        // after the client has read it all.
        let stats = m.handler("/stream/{name}");
        for _ in 0..100 {
            if stats.size.count() > 0 {
                break;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        let fams = m.families();
        let value =
            |f: &Family, name: &str| f.samples.iter().find(|s| s.name == name).map(|s| s.value);
        assert_eq!(
            value(&fams[2], "prometheus_http_response_size_bytes_sum"),
            Some(10.0)
        );
        assert_eq!(
            value(&fams[2], "prometheus_http_response_size_bytes_count"),
            Some(1.0)
        );
        assert_eq!(fams[1].samples[0].labels[1].1, "/stream/:name");
        assert_eq!(fams[1].samples[0].value, 1.0);
    }
}
