//! Hostile requests to a server on loopback: bodies built to recurse deep,
//! to allocate much from little, to take long, or that are simply broken,
//! sent to `/api/v1/write` (1.0 and 2.0) and `/api/v1/read`. Each gets an
//! answer — the status Prometheus gives (400 for what cannot be decoded,
//! 204 for what it accepts; Ferrite's own limits answer 400 as Prometheus'
//! decoded-size limit does) — within a memory ceiling, the server stays
//! up, and a sample written first is still read back afterwards. The
//! admin API's forms are checked too (its limit is Go's form limit).
//!
//! The test runs on a single-threaded runtime, client and server alike, so
//! a handler that did heavy work on the async thread instead of a blocking
//! one would stall everything (checked with a slow remote read).
//!
//! Memory is measured by a counting allocator: for each request, the most
//! the process held above what it held before sending it.

use std::alloc::{GlobalAlloc, Layout, System};
use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use ferrite_remote::proto::read::{LabelMatcher, Query, ReadRequest, ReadResponse};
use ferrite_remote::proto::{v1, v2};
use ferrite_server::{start, ServerOptions};
use prost::Message;

struct Counting;

static LIVE: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

fn grew(n: usize) {
    let now = LIVE.fetch_add(n, Ordering::Relaxed) + n;
    PEAK.fetch_max(now, Ordering::Relaxed);
}

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let p = System.alloc(layout);
        if !p.is_null() {
            grew(layout.size());
        }
        p
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        let p = System.alloc_zeroed(layout);
        if !p.is_null() {
            grew(layout.size());
        }
        p
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        System.dealloc(ptr, layout);
        LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let p = System.realloc(ptr, layout, new_size);
        if !p.is_null() {
            if new_size >= layout.size() {
                grew(new_size - layout.size());
            } else {
                LIVE.fetch_sub(layout.size() - new_size, Ordering::Relaxed);
            }
        }
        p
    }
}

#[global_allocator]
static ALLOC: Counting = Counting;

/// The most any one request may make the process hold above what it held
/// before (the client's copies of the body included). The hostile bodies
/// below would take from 100 MB to many GB without the server's limits.
const CEILING: usize = 64 << 20;

/// No request may take longer (in a debug build, on a loaded machine).
const TIMEOUT: Duration = Duration::from_secs(60);

const T0: i64 = 1_700_000_000_000;

const V1: &str = "application/x-protobuf";
const V2: &str = "application/x-protobuf;proto=io.prometheus.write.v2.Request";
const FORM: &str = "application/x-www-form-urlencoded";

fn snappy(raw: &[u8]) -> Vec<u8> {
    snap::raw::Encoder::new().compress_vec(raw).unwrap()
}

/// A length-delimited field `key` holding `inner`.
fn field(key: u8, inner: &[u8]) -> Vec<u8> {
    let mut out = vec![key];
    prost::encoding::encode_varint(inner.len() as u64, &mut out);
    out.extend_from_slice(inner);
    out
}

/// `depth` levels of field `key` inside each other, built from the inside
/// out (so in linear time).
fn nested(key: u8, depth: usize) -> Vec<u8> {
    let mut headers: Vec<Vec<u8>> = Vec::with_capacity(depth);
    let mut len = 0usize;
    for _ in 0..depth {
        let mut h = vec![key];
        prost::encoding::encode_varint(len as u64, &mut h);
        len += h.len();
        headers.push(h);
    }
    headers.into_iter().rev().flatten().collect()
}

/// `depth` nested groups of unknown field 9.
fn groups(depth: usize) -> Vec<u8> {
    let mut g = vec![0x4b; depth];
    g.extend(std::iter::repeat_n(0x4c, depth));
    g
}

fn v1_series(labels: &[(&[u8], &[u8])], value: f64) -> v1::TimeSeries {
    v1::TimeSeries {
        labels: labels
            .iter()
            .map(|(n, v)| v1::Label {
                name: n.to_vec(),
                value: v.to_vec(),
            })
            .collect(),
        samples: vec![v1::Sample {
            value,
            timestamp: T0,
        }],
        ..Default::default()
    }
}

fn v1_body(series: Vec<v1::TimeSeries>) -> Vec<u8> {
    v1::WriteRequest {
        timeseries: series,
        metadata: vec![],
    }
    .encode_to_vec()
}

/// A 2.0 request of one series with these labels (symbols in order).
fn v2_body(labels: &[(&[u8], &[u8])]) -> Vec<u8> {
    let mut symbols = vec![Vec::new()];
    let mut refs = Vec::new();
    for (n, v) in labels {
        for s in [n, v] {
            refs.push(symbols.len() as u32);
            symbols.push(s.to_vec());
        }
    }
    v2::Request {
        symbols,
        timeseries: vec![v2::TimeSeries {
            labels_refs: refs,
            samples: vec![v2::Sample {
                value: 1.0,
                timestamp: T0,
                start_timestamp: 0,
            }],
            ..Default::default()
        }],
    }
    .encode_to_vec()
}

fn read_body(queries: Vec<Vec<LabelMatcher>>) -> Vec<u8> {
    ReadRequest {
        queries: queries
            .into_iter()
            .map(|matchers| Query {
                start_timestamp_ms: T0 - 60_000,
                end_timestamp_ms: T0 + 60_000,
                matchers,
            })
            .collect(),
        accepted_response_types: vec![0],
    }
    .encode_to_vec()
}

fn matcher(kind: i32, name: &str, value: &str) -> LabelMatcher {
    LabelMatcher {
        r#type: kind,
        name: name.as_bytes().to_vec(),
        value: value.as_bytes().to_vec(),
    }
}

/// Pseudo-random lowercase letters: snappy finds almost nothing to
/// compress in them.
fn letters(n: usize) -> Vec<u8> {
    let mut x = 0x2545_f491_4f6c_dd1du64;
    (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            b'a' + (x % 26) as u8
        })
        .collect()
}

struct Client {
    http: reqwest::Client,
    addr: SocketAddr,
}

impl Client {
    /// Posts `body` (already compressed, or not, as the case needs) and
    /// returns the status and body, checking the memory it took.
    async fn post(
        &self,
        what: &str,
        path: &str,
        ct: &str,
        body: Vec<u8>,
        ceiling: usize,
    ) -> (u16, Vec<u8>) {
        let before = LIVE.load(Ordering::Relaxed);
        PEAK.store(before, Ordering::Relaxed);
        let start = Instant::now();
        let resp = self
            .http
            .post(format!("http://{}{path}", self.addr))
            .header("Content-Type", ct)
            .header("Content-Encoding", "snappy")
            .header("X-Prometheus-Remote-Write-Version", "0.1.0")
            .body(body)
            .send()
            .await
            .unwrap_or_else(|e| panic!("{what}: {e}"));
        let status = resp.status().as_u16();
        let text = resp.bytes().await.unwrap().to_vec();
        let took = PEAK.load(Ordering::Relaxed).saturating_sub(before);
        eprintln!(
            "{what}: {status} in {:?}, {} KiB",
            start.elapsed(),
            took >> 10
        );
        assert!(
            took < ceiling,
            "{what}: the request took {took} bytes of memory"
        );
        (status, text)
    }

    async fn write(&self, what: &str, ct: &str, body: Vec<u8>, want: u16) {
        let (status, text) = self.post(what, "/api/v1/write", ct, body, CEILING).await;
        let text = String::from_utf8_lossy(&text[..text.len().min(300)]).into_owned();
        assert_eq!(status, want, "{what}: {text}");
        self.healthy(what).await;
    }

    async fn read(&self, what: &str, body: Vec<u8>, want: u16) -> Vec<u8> {
        let (status, body) = self.post(what, "/api/v1/read", V1, body, CEILING).await;
        let text = String::from_utf8_lossy(&body[..body.len().min(300)]).into_owned();
        assert_eq!(status, want, "{what}: {text}");
        self.healthy(what).await;
        body
    }

    /// Posts to `/api/v1/admin/tsdb/{path}`: the status and body text.
    async fn admin(&self, what: &str, path: &str, ct: &str, body: Vec<u8>) -> (u16, String) {
        let path = format!("/api/v1/admin/tsdb/{path}");
        let (status, text) = self.post(what, &path, ct, body, CEILING).await;
        self.healthy(what).await;
        (status, String::from_utf8_lossy(&text).into_owned())
    }

    async fn healthy(&self, after: &str) {
        let r = self
            .http
            .get(format!("http://{}/-/healthy", self.addr))
            .send()
            .await
            .unwrap_or_else(|e| panic!("health after {after}: {e}"));
        assert_eq!(r.status().as_u16(), 200, "health after {after}");
    }
}

#[tokio::test(flavor = "current_thread")]
async fn hostile_requests_get_answers_and_the_server_stays_up() {
    let tmp = tempfile::tempdir().unwrap();
    let opts = ServerOptions {
        admin_api: true,
        ..ServerOptions::new(
            tmp.path().to_owned(),
            "127.0.0.1:0".parse::<SocketAddr>().unwrap(),
        )
    };
    let server = start(opts).await.unwrap();
    let c = Client {
        http: reqwest::Client::builder().timeout(TIMEOUT).build().unwrap(),
        addr: server.addr,
    };
    let started = Instant::now();

    // The sample that must survive everything below.
    let canary = v1_body(vec![v1_series(
        &[(b"__name__", b"hostile_canary"), (b"job", b"x")],
        42.0,
    )]);
    c.write("canary", V1, snappy(&canary), 204).await;

    // A slow remote read (400 regular expressions of 1,000 bytes: over half
    // a second to compile in a debug build) is decoded off the async
    // thread: meanwhile this single-threaded runtime keeps its timers.
    let slow: Vec<LabelMatcher> = (0..400)
        .map(|i| {
            let alts: Vec<String> = (0..200).map(|j| format!("{i}_{j}")).collect();
            let mut re = alts.join("|");
            re.truncate(1000);
            matcher(2, "__name__", &re)
        })
        .collect();
    let slow = snappy(&read_body(vec![slow]));
    let read = {
        let http = c.http.clone();
        let url = format!("http://{}/api/v1/read", c.addr);
        tokio::spawn(async move { http.post(url).body(slow).send().await.map(|r| r.status()) })
    };
    let nap = Instant::now();
    tokio::time::sleep(Duration::from_millis(100)).await;
    let late = nap.elapsed();
    c.healthy("a slow read").await;
    let status = read.await.unwrap().unwrap();
    eprintln!(
        "a slow read: {status} in {:?}; a 100 ms sleep meanwhile: {late:?}",
        nap.elapsed()
    );
    assert_eq!(status.as_u16(), 200);
    assert!(
        late < Duration::from_millis(350),
        "a 100 ms sleep took {late:?} while a read was being decoded"
    );

    for (v, ct) in [("1.0", V1), ("2.0", V2)] {
        let series_key = if ct == V1 { 0x0a } else { 0x2a };
        // 100,000 nested groups inside a series: prost's recursion limit.
        c.write(
            &format!("{v}: 100,000 nested groups"),
            ct,
            snappy(&field(series_key, &groups(100_000))),
            400,
        )
        .await;
        // 100,000 nested length-delimited fields: bytes to the decoders
        // (a label name in 1.0, invalid and dropped silently; label refs
        // in 2.0, out of range: a partial write's 400).
        let body = if ct == V1 {
            nested(0x0a, 100_000)
        } else {
            field(0x2a, &nested(0x0a, 100_000))
        };
        let want = if ct == V1 { 204 } else { 400 };
        c.write(
            &format!("{v}: 100,000 nested length-delimited fields"),
            ct,
            snappy(&body),
            want,
        )
        .await;
    }

    // A label set of 100,000 labels (stored, as Prometheus does).
    let names: Vec<String> = (0..100_000).map(|i| format!("l{i:06}")).collect();
    let mut many: Vec<(&[u8], &[u8])> = vec![(b"__name__", b"many_labels_v1")];
    many.extend(names.iter().map(|n| (n.as_bytes(), &b"v"[..])));
    c.write(
        "1.0: 100,000 labels",
        V1,
        snappy(&v1_body(vec![v1_series(&many, 1.0)])),
        204,
    )
    .await;
    many[0].1 = b"many_labels_v2";
    c.write("2.0: 100,000 labels", V2, snappy(&v2_body(&many)), 204)
        .await;
    // 100,000 labels of one name: a duplicate, the series refused (1.0
    // drops it silently, 2.0 answers 400).
    let dup: Vec<(&[u8], &[u8])> = std::iter::once((&b"__name__"[..], &b"dup"[..]))
        .chain(std::iter::repeat_n((&b"a"[..], &b"v"[..]), 100_000))
        .collect();
    c.write(
        "1.0: 100,000 labels of one name",
        V1,
        snappy(&v1_body(vec![v1_series(&dup, 1.0)])),
        204,
    )
    .await;
    c.write(
        "2.0: 100,000 labels of one name",
        V2,
        snappy(&v2_body(&dup)),
        400,
    )
    .await;

    // A single label of 4 MB (stored, as Prometheus does), in a body over
    // 2 MiB even compressed.
    let big = letters(4 << 20);
    let body = snappy(&v1_body(vec![v1_series(
        &[(b"__name__", b"big_label_v1"), (b"big", &big)],
        1.0,
    )]));
    assert!(body.len() > 3 << 20);
    c.write("1.0: a 4 MB label", V1, body, 204).await;
    let body = snappy(&v2_body(&[(b"__name__", b"big_label_v2"), (b"big", &big)]));
    c.write("2.0: a 4 MB label", V2, body, 204).await;
    // Over the 32 MiB body limit: 413. (The read-timeout layer has read
    // it all by then: the client's copy and the server's, allowed here.)
    let (status, _) = c
        .post(
            "a 33 MiB body",
            "/api/v1/write",
            V1,
            letters(1 << 20).repeat(33),
            CEILING + (80 << 20),
        )
        .await;
    assert_eq!(status, 413);
    c.healthy("a 33 MiB body").await;

    // Snappy headers claiming what they do not hold.
    let mut claims_4g = Vec::new();
    prost::encoding::encode_varint(u64::from(u32::MAX), &mut claims_4g);
    let mut claims_30m = Vec::new();
    prost::encoding::encode_varint(30 << 20, &mut claims_30m);
    claims_30m.extend_from_slice(&[0x00, 0x01]);
    // Truncated and garbage bodies.
    let whole = snappy(&canary);
    let truncated_snappy = whole[..whole.len() / 2].to_vec();
    let truncated_proto = snappy(&canary[..canary.len() / 2]);
    let garbage = letters(10_000);
    for (v, ct) in [("1.0", V1), ("2.0", V2)] {
        for (what, body) in [
            ("a header claiming 4 GiB", claims_4g.clone()),
            ("a header claiming 30 MiB", claims_30m.clone()),
            ("a truncated snappy body", truncated_snappy.clone()),
            ("a truncated protobuf", truncated_proto.clone()),
            ("garbage", garbage.clone()),
            ("snappy garbage", snappy(&garbage)),
            ("an empty body", Vec::new()),
        ] {
            c.write(&format!("{v}: {what}"), ct, body, 400).await;
        }
    }

    // Bodies small on the wire that decode to much: 4,000,000 empty
    // histograms (8 MB, as prost's structs about 900 MB) ...
    let histograms = field(0x0a, &[0x22, 0x00].repeat(4_000_000));
    c.write(
        "1.0: 4,000,000 empty histograms",
        V1,
        snappy(&histograms),
        400,
    )
    .await;
    // ... a 1 MiB symbol named by 1,000 series (1 GB of copies) ...
    let amplified = v2::Request {
        symbols: vec![Vec::new(), b"__name__".to_vec(), vec![b'x'; 1 << 20]],
        timeseries: vec![
            v2::TimeSeries {
                labels_refs: vec![1, 2],
                samples: vec![v2::Sample {
                    value: 1.0,
                    timestamp: T0,
                    start_timestamp: 0,
                }],
                ..Default::default()
            };
            1_000
        ],
    };
    c.write(
        "2.0: a 1 MiB symbol named by 1,000 series",
        V2,
        snappy(&amplified.encode_to_vec()),
        400,
    )
    .await;
    // ... and 3,000,000 empty series (6 MB), all invalid.
    c.write(
        "1.0: 3,000,000 empty series",
        V1,
        snappy(&[0x0a, 0x00].repeat(3_000_000)),
        204,
    )
    .await;

    // Remote read.
    let many: Vec<LabelMatcher> = (0..100_000)
        .map(|i| matcher(0, "__name__", &format!("m{i}")))
        .collect();
    c.read(
        "read: 100,000 matchers",
        snappy(&read_body(vec![many])),
        400,
    )
    .await;
    let empty_matchers = field(0x0a, &[0x1a, 0x00].repeat(1_000_000));
    c.read(
        "read: 1,000,000 empty matchers",
        snappy(&empty_matchers),
        400,
    )
    .await;
    let re = "a".repeat(600 << 10);
    c.read(
        "read: 1.2 MiB of regular expressions",
        snappy(&read_body(vec![vec![
            matcher(2, "__name__", &re),
            matcher(3, "job", &re),
        ]])),
        400,
    )
    .await;
    c.read(
        "read: 100,000 nested groups",
        snappy(&field(0x0a, &groups(100_000))),
        400,
    )
    .await;
    c.read(
        "read: 100,000 nested length-delimited fields",
        snappy(&nested(0x0a, 100_000)),
        400,
    )
    .await;
    let read = read_body(vec![vec![matcher(0, "__name__", "hostile_canary")]]);
    let whole = snappy(&read);
    for (what, body) in [
        ("a header claiming 4 GiB", claims_4g.clone()),
        ("a header claiming 30 MiB", claims_30m.clone()),
        ("a truncated snappy body", whole[..whole.len() / 2].to_vec()),
        ("a truncated protobuf", snappy(&read[..read.len() / 2])),
        ("garbage", garbage.clone()),
        ("snappy garbage", snappy(&garbage)),
        ("an empty body", Vec::new()),
    ] {
        c.read(&format!("read: {what}"), body, 400).await;
    }
    // A query without matchers selects nothing (as in Prometheus), not
    // every series (among them the large ones written above).
    let body = c
        .read(
            "read: a query without matchers",
            snappy(&read_body(vec![vec![]])),
            200,
        )
        .await;
    let resp = ReadResponse::decode(
        snap::raw::Decoder::new()
            .decompress_vec(&body)
            .unwrap()
            .as_slice(),
    )
    .unwrap();
    assert_eq!(resp.results.len(), 1);
    assert!(resp.results[0].timeseries.is_empty());

    // Admin forms: read up to Go's 10 MB form limit (a 3 MiB selector is
    // a selector), refused past it with Prometheus' error; a body that is
    // not a form is not read at all, and `snapshot` ignores a form error.
    let form = format!("match[]=no_such_series{{a=\"{}\"}}", "x".repeat(3 << 20));
    let (status, text) = c
        .admin(
            "delete_series: a 3 MiB form",
            "delete_series",
            FORM,
            form.into_bytes(),
        )
        .await;
    assert_eq!(status, 204, "{text}");
    let (status, text) = c
        .admin(
            "delete_series: an 11 MiB form",
            "delete_series",
            FORM,
            vec![b'x'; 11 << 20],
        )
        .await;
    assert_eq!(status, 400, "{text}");
    assert!(
        text.contains("error parsing form values: http: POST too large"),
        "{text}"
    );
    for ct in [FORM, "application/json"] {
        let (status, text) = c
            .admin(
                &format!("snapshot: an 11 MiB {ct} body"),
                "snapshot?skip_head=true",
                ct,
                vec![b'x'; 11 << 20],
            )
            .await;
        assert_eq!(status, 200, "{text}");
    }

    // Still up, and the canary is still there: through remote read ...
    let body = c.read("read: the canary", whole, 200).await;
    let resp = ReadResponse::decode(
        snap::raw::Decoder::new()
            .decompress_vec(&body)
            .unwrap()
            .as_slice(),
    )
    .unwrap();
    assert_eq!(resp.results[0].timeseries.len(), 1);
    assert_eq!(resp.results[0].timeseries[0].samples[0].value, 42.0);
    // ... and PromQL.
    let v: serde_json::Value = c
        .http
        .get(format!(
            "http://{}/api/v1/query?query=hostile_canary&time={}",
            c.addr,
            T0 / 1000
        ))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(v["status"], "success", "{v}");
    assert_eq!(v["data"]["result"][0]["value"][1], "42", "{v}");
    eprintln!("all requests: {:?}", started.elapsed());
    server.shutdown().await.unwrap();
}
