//! Bounded connections: the accept loop both listeners share, with deadlines on every
//! connection and a cap per listener.
//!
//! Invariants, per connection: the request headers must arrive within
//! [`ConnectionLimits::header_read_timeout`] (hyper's own timer); a request body must arrive
//! within [`ConnectionLimits::body_timeout`] of the request's start, else reading it fails; a
//! connection with no request in flight for [`ConnectionLimits::idle_timeout`] (including one
//! that never sends anything) is closed. Per listener: at most
//! [`ConnectionLimits::max_connections`] connections are open; a new connection over the cap
//! closes the listener's longest-idle connection, or, when every connection has a request in
//! flight, is itself closed at once. Each listener has its own pool, so a flood on the TCP
//! listener never takes the local socket's room. Every request carries its connection's [`Peer`]
//! as `ConnectInfo`, as `auth.rs` expects.

use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use axum::Router;
use axum::extract::ConnectInfo;
use hyper::body::{Bytes, Frame, Incoming, SizeHint};
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::io::{AsyncRead, AsyncWrite};
use tower::ServiceExt as _;

use crate::peer::Peer;

/// Deadlines and the connection cap of one listener.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ConnectionLimits {
    /// Longest time to receive a request's headers.
    pub header_read_timeout: Duration,
    /// Longest time to receive a request's body, from the request's start.
    pub body_timeout: Duration,
    /// Longest time a connection may stay open with no request in flight.
    pub idle_timeout: Duration,
    /// Most connections open at once on this listener.
    pub max_connections: usize,
}

impl Default for ConnectionLimits {
    fn default() -> Self {
        ConnectionLimits {
            header_read_timeout: Duration::from_secs(10),
            body_timeout: Duration::from_secs(30),
            idle_timeout: Duration::from_secs(30),
            max_connections: 256,
        }
    }
}

/// Raises this process's soft open-file limit to its hard limit (connections, the journal,
/// frames and session files all need descriptors) and returns the new soft limit.
pub fn raise_open_file_limit() -> std::io::Result<u64> {
    use nix::sys::resource::{Resource, getrlimit, setrlimit};
    let (soft, hard) = getrlimit(Resource::RLIMIT_NOFILE).map_err(std::io::Error::from)?;
    if soft < hard {
        setrlimit(Resource::RLIMIT_NOFILE, hard, hard).map_err(std::io::Error::from)?;
    }
    Ok(hard.max(soft))
}

struct Tracker {
    id: u64,
    in_flight: AtomicUsize,
    last_active: Mutex<Instant>,
    evict: tokio::sync::Notify,
}

impl Tracker {
    fn touch(&self) {
        *self
            .last_active
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = Instant::now();
    }

    /// How long the connection has had no request in flight (zero while one is).
    fn idle_for(&self) -> Duration {
        if self.in_flight.load(Ordering::SeqCst) > 0 {
            return Duration::ZERO;
        }
        self.last_active
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .elapsed()
    }
}

/// Marks a request in flight on its connection until dropped.
struct InFlight(Arc<Tracker>);

impl InFlight {
    fn begin(tracker: Arc<Tracker>) -> InFlight {
        tracker.in_flight.fetch_add(1, Ordering::SeqCst);
        tracker.touch();
        InFlight(tracker)
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        self.0.touch();
        self.0.in_flight.fetch_sub(1, Ordering::SeqCst);
    }
}

/// The open connections of one listener.
#[derive(Default)]
struct Registry {
    connections: Mutex<HashMap<u64, Arc<Tracker>>>,
    next_id: AtomicU64,
}

impl Registry {
    /// Registers a new connection, evicting the longest-idle one when the listener is full;
    /// `None` when it is full of busy connections.
    fn admit(&self, max_connections: usize) -> Option<Arc<Tracker>> {
        let mut connections = self
            .connections
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if connections.len() >= max_connections {
            let victim = connections
                .values()
                .filter(|tracker| tracker.in_flight.load(Ordering::SeqCst) == 0)
                .max_by_key(|tracker| tracker.idle_for())
                .map(|tracker| tracker.id)?;
            if let Some(tracker) = connections.remove(&victim) {
                tracker.evict.notify_one();
            }
        }
        let tracker = Arc::new(Tracker {
            id: self.next_id.fetch_add(1, Ordering::SeqCst),
            in_flight: AtomicUsize::new(0),
            last_active: Mutex::new(Instant::now()),
            evict: tokio::sync::Notify::new(),
        });
        connections.insert(tracker.id, Arc::clone(&tracker));
        Some(tracker)
    }

    fn remove(&self, id: u64) {
        self.connections
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(&id);
    }
}

/// A request body that fails once its deadline passes.
struct DeadlineBody {
    inner: Incoming,
    deadline: Pin<Box<tokio::time::Sleep>>,
    timeout: Duration,
}

impl hyper::body::Body for DeadlineBody {
    type Data = Bytes;
    type Error = axum::BoxError;

    fn poll_frame(
        self: Pin<&mut Self>,
        context: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, axum::BoxError>>> {
        let this = self.get_mut();
        if this.deadline.as_mut().poll(context).is_ready() {
            let message = format!("request body not received within {:?}", this.timeout);
            return Poll::Ready(Some(Err(message.into())));
        }
        Pin::new(&mut this.inner)
            .poll_frame(context)
            .map_err(axum::BoxError::from)
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

/// Accepts connections from `listener` and serves `router` on each, within `limits`, until
/// `shutdown` resolves; then lets every connection finish its request in flight and returns.
pub(crate) async fn serve_bounded<L>(
    mut listener: L,
    router: Router,
    limits: ConnectionLimits,
    peer_of: fn(&L::Io, &L::Addr) -> Peer,
    shutdown: impl Future<Output = ()> + Send + 'static,
) where
    L: axum::serve::Listener,
    L::Io: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let registry = Arc::new(Registry::default());
    let (stop, stopped) = tokio::sync::watch::channel(false);
    let mut connections = tokio::task::JoinSet::new();
    let shutdown = std::pin::pin!(shutdown);
    let mut shutdown = shutdown;
    loop {
        let (io, addr) = tokio::select! {
            accepted = listener.accept() => accepted,
            () = &mut shutdown => break,
        };
        while connections.try_join_next().is_some() {}
        let peer = peer_of(&io, &addr);
        let Some(tracker) = registry.admit(limits.max_connections) else {
            tracing::warn!(
                max_connections = limits.max_connections,
                "connection refused: every connection of this listener has a request in flight"
            );
            continue;
        };
        connections.spawn(serve_connection(
            io,
            peer,
            router.clone(),
            limits,
            tracker,
            Arc::clone(&registry),
            stopped.clone(),
        ));
    }
    let _ = stop.send(true);
    while connections.join_next().await.is_some() {}
}

async fn serve_connection<I>(
    io: I,
    peer: Peer,
    router: Router,
    limits: ConnectionLimits,
    tracker: Arc<Tracker>,
    registry: Arc<Registry>,
    mut stopped: tokio::sync::watch::Receiver<bool>,
) where
    I: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let service_tracker = Arc::clone(&tracker);
    let service = hyper::service::service_fn(move |request: hyper::Request<Incoming>| {
        let in_flight = InFlight::begin(Arc::clone(&service_tracker));
        let mut request = request.map(|body| {
            axum::body::Body::new(DeadlineBody {
                inner: body,
                deadline: Box::pin(tokio::time::sleep(limits.body_timeout)),
                timeout: limits.body_timeout,
            })
        });
        request.extensions_mut().insert(ConnectInfo(peer.clone()));
        let router = router.clone();
        async move {
            let response = router.oneshot(request).await;
            drop(in_flight);
            response
        }
    });
    let mut builder = hyper::server::conn::http1::Builder::new();
    builder
        .timer(TokioTimer::new())
        .header_read_timeout(limits.header_read_timeout);
    let connection = builder.serve_connection(TokioIo::new(io), service);
    let mut connection = std::pin::pin!(connection);
    let check_every = (limits.idle_timeout / 4).max(Duration::from_millis(20));
    let mut idle_check = tokio::time::interval(check_every);
    let mut stopping = false;
    loop {
        tokio::select! {
            served = connection.as_mut() => {
                if let Err(error) = served {
                    tracing::debug!(error = %error, "connection ended with an error");
                }
                break;
            }
            () = tracker.evict.notified() => {
                tracing::info!("closed the longest-idle connection to admit a new one");
                break;
            }
            _ = stopped.changed(), if !stopping => {
                stopping = true;
                connection.as_mut().graceful_shutdown();
            }
            _ = idle_check.tick() => {
                if tracker.idle_for() >= limits.idle_timeout {
                    tracing::debug!("closed an idle connection");
                    break;
                }
            }
        }
    }
    registry.remove(tracker.id);
}
