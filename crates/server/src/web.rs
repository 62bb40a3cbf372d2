//! HTTP limits of Prometheus' `--web.*` flags: a connection cap
//! (`--web.max-connections`, as Go's `netutil.LimitListener`: connections
//! beyond it wait to be accepted) and a time limit on reading a request
//! body (`--web.read-timeout`).

use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::StatusCode;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// Largest body the read-timeout layer buffers; larger requests get 413.
pub const MAX_BUFFERED_BODY: usize = 64 * 1024 * 1024;

/// A TCP listener that holds at most `max` connections open at once.
pub struct LimitedListener {
    inner: TcpListener,
    slots: Option<Arc<Semaphore>>,
}

impl LimitedListener {
    /// `max == 0` means no limit.
    pub fn new(inner: TcpListener, max: usize) -> Self {
        let slots = (max > 0).then(|| Arc::new(Semaphore::new(max)));
        LimitedListener { inner, slots }
    }
}

/// A connection; its slot frees when it is dropped.
pub struct LimitedStream {
    io: TcpStream,
    _slot: Option<OwnedSemaphorePermit>,
}

impl axum::serve::Listener for LimitedListener {
    type Io = LimitedStream;
    type Addr = SocketAddr;

    async fn accept(&mut self) -> (Self::Io, Self::Addr) {
        let slot = match &self.slots {
            // The semaphore is never closed, so this only fails if it were.
            Some(s) => s.clone().acquire_owned().await.ok(),
            None => None,
        };
        let (io, addr) = axum::serve::Listener::accept(&mut self.inner).await;
        (LimitedStream { io, _slot: slot }, addr)
    }

    fn local_addr(&self) -> io::Result<SocketAddr> {
        self.inner.local_addr()
    }
}

/// The address a connection came from (`ConnectInfo<ClientAddr>` in a
/// handler; the query log records it).
#[derive(Clone, Copy, Debug)]
pub struct ClientAddr(pub SocketAddr);

impl axum::extract::connect_info::Connected<axum::serve::IncomingStream<'_, LimitedListener>>
    for ClientAddr
{
    fn connect_info(stream: axum::serve::IncomingStream<'_, LimitedListener>) -> Self {
        ClientAddr(*stream.remote_addr())
    }
}

impl AsyncRead for LimitedStream {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_read(cx, buf)
    }
}

impl AsyncWrite for LimitedStream {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.io).poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_shutdown(cx)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.io).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.io.is_write_vectored()
    }
}

/// Middleware: reads the whole request body within `limit` (408 if the
/// client is slower), then runs the handler on it.
pub async fn read_body_within(State(limit): State<Duration>, req: Request, next: Next) -> Response {
    let (parts, body) = req.into_parts();
    match tokio::time::timeout(limit, axum::body::to_bytes(body, MAX_BUFFERED_BODY)).await {
        Ok(Ok(bytes)) => {
            next.run(Request::from_parts(parts, Body::from(bytes)))
                .await
        }
        Ok(Err(e)) => (
            StatusCode::PAYLOAD_TOO_LARGE,
            format!("reading the request body: {e}\n"),
        )
            .into_response(),
        Err(_) => (
            StatusCode::REQUEST_TIMEOUT,
            "timed out reading the request body\n",
        )
            .into_response(),
    }
}
