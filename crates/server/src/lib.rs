//! The Ferrite server: the storage engine behind Prometheus' HTTP surface.
//!
//! This crate wires things and owns nothing of their logic: the storage is
//! `ferrite-tsdb`, request decoding is `ferrite-remote`, and query
//! evaluation is `ferrite-promql`. What lives here is the process around
//! them as a Prometheus user expects it: the flags' meanings, the endpoints
//! and their status codes, the compaction loop, and a clean shutdown (stop
//! accepting, finish in-flight requests, close the WAL).
//!
//! - [`write`]: `POST /api/v1/write` (remote write 1.0 and 2.0);
//! - [`read`]: `POST /api/v1/read` (remote read, samples or streamed chunks);
//! - [`query`]: `/api/v1/query`, `query_range`, `series`, `labels`,
//!   `label/<name>/values` over `ferrite-promql`;
//! - [`status`]: `/-/healthy`, `/-/ready`, `/api/v1/status/*`;
//! - [`admin`]: `/api/v1/admin/tsdb/*` (`--web.enable-admin-api`);
//! - [`lifecycle`]: `/-/quit`, `/-/reload` (`--web.enable-lifecycle`);
//! - [`config`]: the configuration file's storage settings and its reload
//!   (`/-/reload`, SIGHUP), `/api/v1/status/config`;
//! - [`scrape`]: scraping (`ferrite-scrape`) wired to the database: started
//!   with the configuration, re-applied on reload, stopped before the
//!   database closes;
//! - [`rules`]: recording and alerting rules (`ferrite-rules`) wired to
//!   the database, and `/api/v1/rules`;
//! - [`alerts`]: `/api/v1/alerts`, the alerting rules in `/api/v1/rules`,
//!   and the rules' alerts handed to the notifier;
//! - [`alertmanagers`]: the notifier (`ferrite-notifier`) started with
//!   the configuration, re-applied on reload, drained at shutdown, and
//!   `/api/v1/alertmanagers`;
//! - [`targets`]: `/api/v1/targets`, `/api/v1/scrape_pools`,
//!   `/api/v1/targets/metadata`, `/api/v1/metadata`;
//! - [`unconfigured`]: exemplars, of which Ferrite keeps none
//!   (answered as a Prometheus without exemplar storage answers);
//! - [`metrics`]: `/metrics` (Ferrite's own metrics);
//! - [`http_metrics`]: every route's requests, durations and response
//!   sizes (`prometheus_http_*`);
//! - [`web`]: connection cap and request read timeout (`--web.*`).

pub mod admin;
pub mod alertmanagers;
pub mod alerts;
pub mod config;
pub mod http_metrics;
pub mod lifecycle;
pub mod metrics;
pub mod query;
pub mod query_log;
mod query_stats;
pub mod read;
pub mod rules;
pub mod scrape;
pub mod selector;
pub mod status;
pub mod targets;
pub mod unconfigured;
pub mod web;
pub mod write;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::routing::{get, post, MethodRouter};
use axum::Router;
use ferrite_tsdb::{Db, DbOptions};
use tokio::sync::{watch, Notify, Semaphore};
use tracing::{error, info};

/// The notifier's settings (`--alertmanager.*`), for [`ServerOptions`].
pub use ferrite_notifier::Options as NotifierOptions;

/// How long shutdown waits for requests still running to let go of the
/// database before closing it under them.
pub const SHUTDOWN_GRACE: Duration = Duration::from_secs(30);

/// How often the compaction loop runs (Prometheus' block reload interval).
pub const COMPACTION_INTERVAL: Duration = Duration::from_secs(60);

/// What the server was started with; names follow Prometheus' flags.
#[derive(Clone, Debug)]
pub struct ServerOptions {
    /// `--storage.tsdb.path`
    pub data_dir: PathBuf,
    /// `--web.listen-address`
    pub listen: SocketAddr,
    pub db: DbOptions,
    /// `--web.enable-remote-write-receiver` (on by default in Ferrite).
    pub remote_write_receiver: bool,
    /// `--web.enable-admin-api`
    pub admin_api: bool,
    /// `--web.enable-lifecycle`: `/-/quit` and `/-/reload`.
    pub lifecycle_api: bool,
    /// Lookback delta, timeout and max samples of PromQL queries
    /// (`--query.*`).
    pub engine: ferrite_promql::EngineOptions,
    /// Every flag as given or defaulted, for `/api/v1/status/flags`.
    pub flags: Vec<(String, String)>,
    /// HTTP limits and layout.
    pub web: WebOptions,
    /// `--storage.remote.read-*` limits.
    pub remote_read: read::RemoteReadOptions,
    /// The configuration file as loaded at start (`--config.file`, or the
    /// embedded default, which scrapes the server itself).
    pub config: ferrite_config::Config,
    /// `--alertmanager.*`: the notifier's queue capacity, batch size and
    /// drain on shutdown.
    pub notifier: ferrite_notifier::Options,
    /// `--rules.alert.*`: resend delay, `for` grace period and outage
    /// tolerance.
    pub alert_rules: AlertRuleOptions,
}

/// How alerting rules resend and restore alerts (`--rules.alert.*`).
#[derive(Debug, Clone)]
pub struct AlertRuleOptions {
    /// `--rules.alert.resend-delay` (default 1m).
    pub resend_delay: Duration,
    /// `--rules.alert.for-grace-period` (default 10m).
    pub for_grace_period: Duration,
    /// `--rules.alert.for-outage-tolerance` (default 1h).
    pub outage_tolerance: Duration,
}

impl Default for AlertRuleOptions {
    fn default() -> Self {
        AlertRuleOptions {
            resend_delay: Duration::from_secs(60),
            for_grace_period: Duration::from_secs(600),
            outage_tolerance: Duration::from_secs(3600),
        }
    }
}

impl ServerOptions {
    /// Serves `data_dir` on `listen` with everything else as `ferrite`
    /// without flags has it: Prometheus' defaults, the remote write receiver
    /// on, the admin and lifecycle APIs off, no flags to list; but with no
    /// configuration file (nothing scraped), where the binary would use its
    /// embedded default.
    pub fn new(data_dir: PathBuf, listen: SocketAddr) -> Self {
        ServerOptions {
            data_dir,
            listen,
            db: DbOptions::default(),
            remote_write_receiver: true,
            admin_api: false,
            lifecycle_api: false,
            engine: ferrite_promql::EngineOptions::default(),
            flags: Vec::new(),
            web: WebOptions::default(),
            remote_read: read::RemoteReadOptions::default(),
            config: ferrite_config::Config::empty(),
            notifier: ferrite_notifier::Options::default(),
            alert_rules: AlertRuleOptions::default(),
        }
    }
}

/// HTTP limits and layout (`--web.*`, `--query.max-concurrency`).
#[derive(Clone, Debug)]
pub struct WebOptions {
    /// `--web.route-prefix`: `/`, or a path without a trailing slash under
    /// which every endpoint is served.
    pub route_prefix: String,
    /// `--web.max-connections`: connections beyond it wait to be accepted;
    /// 0 means no limit.
    pub max_connections: usize,
    /// `--web.read-timeout`: the longest reading a request body may take;
    /// zero means no limit.
    pub read_timeout: Duration,
    /// `--query.max-concurrency`: queries beyond it wait for a slot.
    pub max_concurrent_queries: usize,
    /// `--web.external-url` as given ("" when not).
    pub external_url: String,
}

impl Default for WebOptions {
    /// Prometheus' defaults.
    fn default() -> Self {
        WebOptions {
            route_prefix: "/".into(),
            max_connections: 512,
            read_timeout: Duration::from_secs(300),
            max_concurrent_queries: 20,
            external_url: String::new(),
        }
    }
}

/// State shared by the handlers.
pub struct AppState {
    pub db: Arc<Db>,
    pub engine: ferrite_promql::EngineOptions,
    pub opts: ServerOptions,
    pub started: Instant,
    pub start_time: std::time::SystemTime,
    /// Every query's `--query.max-concurrency` slot, the engine's metrics
    /// and the query log (shared with the rule groups).
    pub queries: Arc<ferrite_promql::QueryTracker>,
    /// Wakes the compaction loop before its interval: appends signal it
    /// once the head is compactable, as Prometheus' appender does.
    pub compact_now: Arc<Notify>,
    /// Set to stop the server (`/-/quit`); the server task shuts down
    /// when it changes.
    pub quit: watch::Sender<bool>,
    /// `--storage.remote.read-concurrent-limit` slots (`None`: no limit).
    pub read_slots: Option<Arc<Semaphore>>,
    /// The outcome of the last configuration (re)load.
    pub reload: ReloadStatus,
    /// The configuration in force (the last one that loaded).
    pub config: std::sync::RwLock<ferrite_config::Config>,
    /// The scrape pools.
    pub scrape: Arc<ferrite_scrape::manager::ScrapeManager>,
    /// The rule groups.
    pub rules: Arc<ferrite_rules::manager::RuleManager>,
    /// Sends alerts to the configured Alertmanagers:
    /// `state.notifier.send(alerts)` (see [`alertmanagers`]).
    pub notifier: Arc<ferrite_notifier::Notifier>,
    /// The runtime the server runs on (reloads from blocking threads
    /// apply the scrape configuration through it).
    pub runtime: tokio::runtime::Handle,
    /// How targets on this host are reached from elsewhere (`globalUrl`).
    pub global_url: targets::GlobalUrl,
    /// Every route's requests (`prometheus_http_*`), filled as
    /// [`router`] registers the routes.
    pub http: http_metrics::HttpMetrics,
}

/// How the rule manager sends and restores alerts: through `notifier`,
/// with the external URL Prometheus derives (`--web.external-url`, or
/// this host and `port`) and the `--rules.alert.*` flags.
fn alert_rule_options(
    opts: &ServerOptions,
    port: u16,
    notifier: Arc<ferrite_notifier::Notifier>,
) -> ferrite_rules::manager::AlertingOptions {
    let external_url = alerts::external_url(&opts.web.external_url, port);
    let bridge = alerts::NotifierBridge {
        notifier,
        external_url: external_url.clone(),
    };
    let mut o = ferrite_rules::manager::AlertingOptions::new(Arc::new(bridge), external_url);
    o.resend_delay = opts.alert_rules.resend_delay;
    o.for_grace_period = opts.alert_rules.for_grace_period;
    o.outage_tolerance = opts.alert_rules.outage_tolerance;
    o
}

/// The outcome of the last configuration (re)load, for `/metrics` and
/// `/api/v1/status/runtimeinfo`.
pub struct ReloadStatus {
    /// Whether the last (re)load succeeded.
    pub successful: std::sync::atomic::AtomicBool,
    /// When the configuration last loaded successfully (Unix seconds).
    pub last_success_unix: std::sync::atomic::AtomicI64,
}

impl ReloadStatus {
    fn new() -> Self {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs() as i64);
        ReloadStatus {
            successful: true.into(),
            last_success_unix: now.into(),
        }
    }
}

impl AppState {
    /// Reloads the configuration file (`/-/reload`, SIGHUP) and records the
    /// outcome; the error is Prometheus' text.
    /// Runs on a blocking thread (it waits for the scrape pools).
    pub fn reload_config(&self) -> Result<(), String> {
        use std::sync::atomic::Ordering::Relaxed;
        let current = self.current_config();
        let applied = config::reload(&current).and_then(|fresh| {
            // First, so that a set that cannot be built fails the reload
            // before anything else changed.
            self.runtime
                .block_on(self.notifier.apply_config(&fresh))
                .map_err(|e| e.to_string())?;
            config::apply_on_reload(&fresh, &self.db)?;
            // As Prometheus: a scrape failure log that cannot be opened
            // keeps the previous scrape configuration and fails the reload,
            // as a rule file that fails keeps the previous rules; the rest
            // still applies.
            let scrape = self
                .runtime
                .block_on(self.scrape.apply_config(&fresh))
                .inspect_err(|e| error!(err = %e, "Failed to apply configuration"));
            let rules = self.runtime.block_on(self.rules.apply_config(&fresh));
            // Opened again on every reload, as Prometheus does.
            let query_log = query_log::apply(&self.queries, &fresh.global.query_log_file)
                .inspect_err(|e| error!(err = %e, "Failed to apply configuration"));
            let file = fresh.path.clone();
            *self.config.write().unwrap_or_else(|p| p.into_inner()) = fresh;
            scrape
                .map_err(|_| ())
                .and(rules.map_err(|_| ()))
                .and(query_log.map_err(|_| ()))
                .map_err(|()| rules::apply_error(file.as_deref()))
        });
        match applied {
            Ok(()) => {
                self.reload.successful.store(true, Relaxed);
                let now = std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .map_or(0, |d| d.as_secs() as i64);
                self.reload.last_success_unix.store(now, Relaxed);
                info!("completed loading of configuration file");
                Ok(())
            }
            Err(e) => {
                self.reload.successful.store(false, Relaxed);
                error!(err = %e, "error reloading config");
                Err(e)
            }
        }
    }
}

impl AppState {
    /// The configuration in force.
    pub fn current_config(&self) -> ferrite_config::Config {
        self.config
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }
}

/// A server that is listening; [`RunningServer::shutdown`] stops it cleanly.
pub struct RunningServer {
    pub addr: SocketAddr,
    /// The state the endpoints share (for reloads outside HTTP); weak, so
    /// that shutdown can close the database it holds.
    pub state: std::sync::Weak<AppState>,
    stop: watch::Sender<bool>,
    task: tokio::task::JoinHandle<anyhow::Result<()>>,
}

impl RunningServer {
    /// Stops accepting, lets in-flight requests finish, stops the compaction
    /// loop and closes the database (WAL flushed and closed).
    pub async fn shutdown(self) -> anyhow::Result<()> {
        let _ = self.stop.send(true);
        self.task.await?
    }

    /// Runs until the task ends by itself (it does not, short of an error).
    pub async fn wait(self) -> anyhow::Result<()> {
        self.task.await?
    }
}

/// The routes, over a shared state, under `--web.route-prefix`.
pub fn router(state: Arc<AppState>) -> Router {
    let prefix = match state.opts.web.route_prefix.trim_matches('/') {
        "" => String::new(),
        p => format!("/{p}"),
    };
    let routes = routes(state);
    if prefix.is_empty() {
        routes
    } else {
        Router::new().nest(&prefix, routes)
    }
}

/// Every route, metered (see [`http_metrics`]); a request body is read
/// within `--web.read-timeout` inside the metering, as Prometheus' handlers
/// read theirs.
fn routes(state: Arc<AppState>) -> Router {
    let read_timeout = state.opts.web.read_timeout;
    let within_read_timeout = move |methods: MethodRouter<Arc<AppState>>| {
        if read_timeout.is_zero() {
            return methods;
        }
        methods.route_layer(axum::middleware::from_fn_with_state(
            read_timeout,
            web::read_body_within,
        ))
    };
    http_metrics::MeteredRoutes::new(&state.http, within_read_timeout)
        .route("/-/healthy", get(status::healthy).head(status::healthy))
        .route("/-/ready", get(status::ready).head(status::ready))
        .route(
            "/-/quit",
            post(lifecycle::quit)
                .put(lifecycle::quit)
                .get(lifecycle::wrong_method)
                .fallback(lifecycle::wrong_method),
        )
        .route(
            "/-/reload",
            post(lifecycle::reload)
                .put(lifecycle::reload)
                .get(lifecycle::wrong_method)
                .fallback(lifecycle::wrong_method),
        )
        .route("/api/v1/status/buildinfo", get(status::buildinfo))
        .route("/api/v1/status/runtimeinfo", get(status::runtimeinfo))
        .route("/api/v1/status/flags", get(status::flags))
        .route("/api/v1/status/tsdb", get(status::tsdb))
        .route("/api/v1/status/tsdb/blocks", get(status::tsdb_blocks))
        .route("/api/v1/status/config", get(status::config))
        .route("/api/v1/rules", get(rules::rules))
        .route("/api/v1/alerts", get(alerts::alerts))
        .route("/api/v1/alertmanagers", get(alertmanagers::alertmanagers))
        .route("/api/v1/targets", get(targets::targets))
        .route("/api/v1/scrape_pools", get(targets::scrape_pools))
        .route("/api/v1/targets/relabel_steps", get(targets::relabel_steps))
        .route(
            "/api/v1/targets/metadata",
            get(targets::target_metadata).post(targets::target_metadata),
        )
        .route(
            "/api/v1/query_exemplars",
            get(unconfigured::query_exemplars).post(unconfigured::query_exemplars),
        )
        .route("/api/v1/write", post(write::remote_write))
        .route(
            "/api/v1/read",
            post(read::remote_read).layer(axum::extract::DefaultBodyLimit::max(
                ferrite_remote::read::MAX_READ_REQUEST,
            )),
        )
        .route(
            "/api/v1/query",
            get(query::instant_query).post(query::instant_query),
        )
        .route(
            "/api/v1/query_range",
            get(query::range_query).post(query::range_query),
        )
        .route("/api/v1/series", get(query::series).post(query::series))
        .route("/api/v1/labels", get(query::labels).post(query::labels))
        .route("/api/v1/label/{name}/values", get(query::label_values))
        .route(
            "/api/v1/metadata",
            get(targets::metric_metadata).post(targets::metric_metadata),
        )
        .route("/metrics", get(metrics::metrics))
        .route(
            "/api/v1/admin/tsdb/snapshot",
            post(admin::snapshot).put(admin::snapshot),
        )
        .route(
            "/api/v1/admin/tsdb/delete_series",
            post(admin::delete_series).put(admin::delete_series),
        )
        .route(
            "/api/v1/admin/tsdb/clean_tombstones",
            post(admin::clean_tombstones).put(admin::clean_tombstones),
        )
        .with_state(state)
}

/// Opens the database and starts serving on `opts.listen`.
pub async fn start(opts: ServerOptions) -> anyhow::Result<RunningServer> {
    let dir = opts.data_dir.clone();
    let db_opts = opts.db.clone();
    let db = tokio::task::spawn_blocking(move || Db::open(&dir, db_opts)).await??;
    let db = Arc::new(db);
    let listener = tokio::net::TcpListener::bind(opts.listen).await?;
    let addr = listener.local_addr()?;
    let listener = web::LimitedListener::new(listener, opts.web.max_connections);
    let queries = Arc::new(ferrite_promql::QueryTracker::new(
        opts.web.max_concurrent_queries,
    ));
    query_log::apply(&queries, &opts.config.global.query_log_file)?;
    let (stop, mut stopped) = watch::channel(false);
    let read_slots = (opts.remote_read.concurrent_limit > 0)
        .then(|| Arc::new(Semaphore::new(opts.remote_read.concurrent_limit)));
    let compact_now = Arc::new(Notify::new());
    let runtime = tokio::runtime::Handle::current();
    let notifier = Arc::new(ferrite_notifier::Notifier::new(
        alertmanagers::notifier_options(&opts),
    ));
    notifier
        .apply_config(&opts.config)
        .await
        .map_err(|e| anyhow::anyhow!("error applying the alerting configuration: {e}"))?;
    let scrape = Arc::new(ferrite_scrape::manager::ScrapeManager::new(
        Arc::new(scrape::DbScrapeStorage {
            db: db.clone(),
            compact_now: compact_now.clone(),
        }),
        runtime.clone(),
    ));
    if let Err(e) = scrape.apply_config(&opts.config).await {
        notifier.stop().await;
        return Err(e.into());
    }
    let rules = Arc::new(ferrite_rules::manager::RuleManager::new(
        Arc::new(rules::DbRuleStorage::new(db.clone(), compact_now.clone())),
        opts.engine.clone(),
        queries.clone(),
        runtime.clone(),
        alert_rule_options(&opts, addr.port(), notifier.clone()),
    ));
    if let Err(e) = rules.apply_config(&opts.config).await {
        scrape.stop().await;
        notifier.stop().await;
        anyhow::bail!("{}", rules::load_error_text(&e));
    }
    let opts_config = opts.config.clone();
    let global_url = targets::GlobalUrl::new(&opts.web.external_url, addr.port());
    let state = Arc::new(AppState {
        db: db.clone(),
        engine: opts.engine.clone(),
        opts,
        started: Instant::now(),
        start_time: std::time::SystemTime::now(),
        queries,
        compact_now,
        quit: stop.clone(),
        read_slots,
        reload: ReloadStatus::new(),
        config: std::sync::RwLock::new(opts_config),
        scrape: scrape.clone(),
        rules: rules.clone(),
        notifier: notifier.clone(),
        runtime,
        global_url,
        http: http_metrics::HttpMetrics::default(),
    });
    let app = router(state.clone());
    let mut compaction_stop = stop.subscribe();
    let served = Arc::downgrade(&state);
    let task = tokio::spawn(async move {
        let compactor = tokio::spawn({
            let db = db.clone();
            let compact_now = state.compact_now.clone();
            async move {
                loop {
                    tokio::select! {
                        _ = tokio::time::sleep(COMPACTION_INTERVAL) => {}
                        _ = compact_now.notified() => {}
                        _ = compaction_stop.changed() => return,
                    }
                    let db = db.clone();
                    match tokio::task::spawn_blocking(move || db.compact()).await {
                        Ok(Ok(_)) => {}
                        Ok(Err(e)) => error!(error = %e, "compaction failed"),
                        Err(e) => error!(error = %e, "compaction task failed"),
                    }
                }
            }
        });
        info!(%addr, "listening");
        axum::serve(
            listener,
            app.into_make_service_with_connect_info::<web::ClientAddr>(),
        )
        .with_graceful_shutdown(async move {
            let _ = stopped.changed().await;
            // Scrapes end before requests drain: no stale markers, as
            // Prometheus writes none on shutdown.
            scrape.stop().await;
            rules.stop().await;
            // After the rules, whose last alerts it then sends.
            notifier.stop().await;
        })
        .await?;
        let _ = compactor.await;
        drop(state);
        // A request whose client went away may still run its blocking part
        // (an append, a query) holding the database: let it finish, then
        // close. If one does not finish in time, close the head (WAL and
        // head chunks flushed) through the shared reference anyway.
        let deadline = Instant::now() + SHUTDOWN_GRACE;
        let mut db = db;
        loop {
            match Arc::try_unwrap(db) {
                Ok(owned) => {
                    tokio::task::spawn_blocking(move || owned.close()).await??;
                    break;
                }
                Err(shared) if Instant::now() >= deadline => {
                    error!("requests still running at shutdown; closing the WAL under them");
                    tokio::task::spawn_blocking(move || shared.head().close()).await??;
                    break;
                }
                Err(shared) => {
                    db = shared;
                    tokio::time::sleep(Duration::from_millis(10)).await;
                }
            }
        }
        info!("database closed");
        Ok(())
    });
    Ok(RunningServer {
        addr,
        state: served,
        stop,
        task,
    })
}

/// Serves until SIGTERM, SIGINT or `/-/quit`, then shuts down cleanly.
pub async fn run_until_signal(opts: ServerOptions) -> anyhow::Result<()> {
    let server = start(opts).await?;
    let mut quit = server.stop.subscribe();
    let reloads = tokio::spawn(reload_on_hangup(server.state.clone()));
    tokio::select! {
        _ = shutdown_signal() => info!("received a termination signal, shutting down"),
        _ = quit.wait_for(|q| *q) => info!("shutting down"),
    }
    reloads.abort();
    server.shutdown().await
}

/// Reloads the configuration on every SIGHUP, as Prometheus does.
async fn reload_on_hangup(state: std::sync::Weak<AppState>) {
    #[cfg(unix)]
    {
        let Ok(mut hangups) =
            tokio::signal::unix::signal(tokio::signal::unix::SignalKind::hangup())
        else {
            return;
        };
        while hangups.recv().await.is_some() {
            info!("received SIGHUP, reloading the configuration");
            let Some(state) = state.upgrade() else {
                return;
            };
            // The outcome is logged and recorded by the reload itself.
            let _ = tokio::task::spawn_blocking(move || state.reload_config()).await;
        }
    }
    #[cfg(not(unix))]
    let _ = state;
}

async fn shutdown_signal() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let term = std::future::pending::<()>();
    tokio::select! {
        _ = ctrl_c => {}
        _ = term => {}
    }
}
