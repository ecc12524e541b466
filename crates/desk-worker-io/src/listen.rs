//! A worker's TCP listener with mutual TLS: `--listen tcp://HOST:PORT --cert PEM --key PEM
//! --client-ca PEM [--launch PROGRAM ARGS...]` ([`ListenArgs`]), and [`serve`], which serves one
//! client at a time on the calling thread.
//!
//! Handshakes run on threads of their own (at most [`MAX_HANDSHAKES`] at once, each bounded by
//! [`HANDSHAKE_TIMEOUT`]), so a client that connects and says nothing holds up no one. A client
//! whose handshake completed (it presented a certificate of the pinned client CA) **replaces**
//! the one being served: a broker that reconnects after a network failure must not wait behind
//! a half-open connection the worker cannot tell is dead. The replaced client's request in
//! progress still runs to its end, exactly once; its answer is lost with its connection.

use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc::{Receiver, Sender, channel};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rustls::{ServerConnection, StreamOwned};

use crate::serve::{Ended, Handler, Identity, serve_connection};
use crate::{WorkerIoError, tls};

/// How long a client may take to complete its TLS handshake.
pub const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);
/// Most handshakes in flight at once; further connections are closed at once.
pub const MAX_HANDSHAKES: usize = 8;
/// How long one write to a client may block (a frame is a few MB).
pub const WRITE_TIMEOUT: Duration = Duration::from_secs(60);

/// `tcp://HOST:PORT`: where a worker listens or a broker dials.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TcpEndpoint {
    /// A DNS name or an IP address (an IPv6 address without its brackets).
    pub host: String,
    /// The port; 0 only for a listener that takes any free port.
    pub port: u16,
}

impl TcpEndpoint {
    /// Parses `tcp://HOST:PORT` (`tcp://[::1]:PORT` for IPv6).
    pub fn parse(text: &str) -> Result<TcpEndpoint, WorkerIoError> {
        let usage = || {
            WorkerIoError::Usage(format!(
                "{text:?} is not a worker endpoint: expected tcp://HOST:PORT"
            ))
        };
        let rest = text.strip_prefix("tcp://").ok_or_else(usage)?;
        let (host, port) = rest.rsplit_once(':').ok_or_else(usage)?;
        let host = host
            .strip_prefix('[')
            .and_then(|inner| inner.strip_suffix(']'))
            .unwrap_or(host);
        if host.is_empty() || host.contains(['/', '[', ']']) {
            return Err(usage());
        }
        let port = port.parse::<u16>().map_err(|_| usage())?;
        Ok(TcpEndpoint {
            host: host.to_string(),
            port,
        })
    }

    /// `HOST:PORT` as the socket functions take it (brackets around an IPv6 address).
    pub fn authority(&self) -> String {
        if self.host.contains(':') {
            format!("[{}]:{}", self.host, self.port)
        } else {
            format!("{}:{}", self.host, self.port)
        }
    }
}

impl std::fmt::Display for TcpEndpoint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "tcp://{}", self.authority())
    }
}

/// A listening worker's command line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListenArgs {
    /// Where to listen.
    pub endpoint: TcpEndpoint,
    /// The worker's certificate chain (PEM).
    pub cert: PathBuf,
    /// The worker's private key (PEM).
    pub key: PathBuf,
    /// The CA (PEM) every client (broker) certificate must chain to.
    pub client_ca: PathBuf,
    /// The app to launch and bind (`--launch PROGRAM ARGS...`, always last); empty for none.
    pub launch: Vec<String>,
}

/// The usage line of the listening mode.
pub const USAGE: &str =
    "--listen tcp://HOST:PORT --cert PEM --key PEM --client-ca PEM [--launch PROGRAM [ARGS...]]";

impl ListenArgs {
    /// Parses the flags of [`USAGE`], in any order but `--launch`, which takes the rest. Every
    /// one of `--listen`, `--cert`, `--key` and `--client-ca` is required: there is no
    /// plaintext and no unauthenticated mode.
    pub fn parse(args: &[String]) -> Result<ListenArgs, WorkerIoError> {
        let (mut endpoint, mut cert, mut key, mut client_ca) = (None, None, None, None);
        let mut launch = Vec::new();
        let mut rest = args;
        while let Some((flag, after)) = rest.split_first() {
            if flag == "--launch" {
                if after.is_empty() {
                    return Err(WorkerIoError::Usage(format!(
                        "--launch needs a program; {USAGE}"
                    )));
                }
                launch = after.to_vec();
                break;
            }
            let Some((value, after)) = after.split_first() else {
                return Err(WorkerIoError::Usage(format!(
                    "{flag} needs a value; {USAGE}"
                )));
            };
            let slot = match flag.as_str() {
                "--listen" => {
                    endpoint = Some(TcpEndpoint::parse(value)?);
                    None
                }
                "--cert" => Some(&mut cert),
                "--key" => Some(&mut key),
                "--client-ca" => Some(&mut client_ca),
                _ => {
                    return Err(WorkerIoError::Usage(format!(
                        "unknown flag {flag:?}; {USAGE}"
                    )));
                }
            };
            if let Some(slot) = slot {
                *slot = Some(PathBuf::from(value));
            }
            rest = after;
        }
        let missing = |name: &str| WorkerIoError::Usage(format!("{name} is required; {USAGE}"));
        Ok(ListenArgs {
            endpoint: endpoint.ok_or_else(|| missing("--listen"))?,
            cert: cert.ok_or_else(|| missing("--cert"))?,
            key: key.ok_or_else(|| missing("--key"))?,
            client_ca: client_ca.ok_or_else(|| missing("--client-ca"))?,
            launch,
        })
    }

    /// Reads the certificate files and binds the endpoint: everything that can fail before the
    /// worker serves anyone.
    pub fn bind(&self) -> Result<(TcpListener, Arc<rustls::ServerConfig>), WorkerIoError> {
        let config = tls::worker_config(&self.cert, &self.key, &self.client_ca)?;
        let listener = TcpListener::bind(self.endpoint.authority())?;
        Ok((listener, config))
    }
}

/// A client whose handshake completed.
struct Accepted {
    stream: StreamOwned<ServerConnection, TcpStream>,
    /// A second handle of the socket, to end the connection from another thread.
    control: TcpStream,
    peer: SocketAddr,
    client_fingerprint: String,
}

/// Serves `listener` on this thread, one client at a time, until a client sends `shutdown`.
/// The listening address is logged (`worker listening on ADDR`) and printed on stderr, so a
/// worker bound to port 0 can be found.
pub fn serve(
    listener: TcpListener,
    config: Arc<rustls::ServerConfig>,
    identity: &Identity,
    handler: &mut impl Handler,
) -> Result<(), WorkerIoError> {
    let local = listener.local_addr()?;
    tracing::info!(%local, instance_id = %identity.instance_id, "worker listening (mutual TLS)");
    eprintln!("worker listening on {local}");
    let current: Arc<Mutex<Option<TcpStream>>> = Arc::new(Mutex::new(None));
    let (sender, incoming) = channel();
    let acceptor_current = Arc::clone(&current);
    std::thread::Builder::new()
        .name("worker-accept".to_string())
        .spawn(move || accept_loop(&listener, &config, &sender, &acceptor_current))?;
    serve_clients(&incoming, &current, identity, handler)
}

fn serve_clients(
    incoming: &Receiver<Accepted>,
    current: &Mutex<Option<TcpStream>>,
    identity: &Identity,
    handler: &mut impl Handler,
) -> Result<(), WorkerIoError> {
    loop {
        let Ok(mut accepted) = incoming.recv() else {
            return Err(WorkerIoError::Io(std::io::Error::other(
                "the worker's listener stopped",
            )));
        };
        // A newer client replaces an older one still queued (dropping it closes it).
        while let Ok(newer) = incoming.try_recv() {
            accepted = newer;
        }
        if let Ok(mut slot) = current.lock() {
            *slot = accepted.control.try_clone().ok();
        }
        tracing::info!(peer = %accepted.peer, client = %accepted.client_fingerprint, "broker connected");
        let ended = serve_connection(&mut accepted.stream, handler, Some(identity));
        if let Ok(mut slot) = current.lock() {
            *slot = None;
        }
        match ended {
            Ok(Ended::Shutdown) => {
                accepted.stream.conn.send_close_notify();
                let _ = accepted.stream.conn.complete_io(&mut accepted.stream.sock);
                return Ok(());
            }
            Ok(Ended::Disconnected) => tracing::info!(peer = %accepted.peer, "broker disconnected"),
            Err(error) => tracing::info!(peer = %accepted.peer, %error, "broker connection ended"),
        }
        let _ = accepted.control.shutdown(Shutdown::Both);
        handler.disconnected();
    }
}

fn accept_loop(
    listener: &TcpListener,
    config: &Arc<rustls::ServerConfig>,
    sender: &Sender<Accepted>,
    current: &Arc<Mutex<Option<TcpStream>>>,
) {
    let in_flight = Arc::new(AtomicUsize::new(0));
    for connection in listener.incoming() {
        let tcp = match connection {
            Ok(tcp) => tcp,
            Err(error) => {
                tracing::warn!(%error, "failed to accept a TCP connection");
                std::thread::sleep(Duration::from_millis(50));
                continue;
            }
        };
        if in_flight.fetch_add(1, Ordering::SeqCst) >= MAX_HANDSHAKES {
            in_flight.fetch_sub(1, Ordering::SeqCst);
            tracing::warn!("too many TLS handshakes in flight; connection closed");
            continue;
        }
        let (config, sender, current, in_flight) = (
            Arc::clone(config),
            sender.clone(),
            Arc::clone(current),
            Arc::clone(&in_flight),
        );
        let spawned = std::thread::Builder::new()
            .name("worker-handshake".to_string())
            .spawn(move || {
                let result = handshake(tcp, config);
                in_flight.fetch_sub(1, Ordering::SeqCst);
                match result {
                    Ok(accepted) => {
                        if let Ok(slot) = current.lock()
                            && let Some(served) = slot.as_ref()
                        {
                            tracing::info!(peer = %accepted.peer, "a newer broker replaces the connected one");
                            let _ = served.shutdown(Shutdown::Both);
                        }
                        let _ = sender.send(accepted);
                    }
                    Err((peer, error)) => {
                        tracing::warn!(?peer, %error, "TLS handshake refused");
                    }
                }
            });
        if let Err(error) = spawned {
            tracing::warn!(%error, "failed to start a handshake thread");
        }
    }
}

fn handshake(
    mut tcp: TcpStream,
    config: Arc<rustls::ServerConfig>,
) -> Result<Accepted, (Option<SocketAddr>, std::io::Error)> {
    let peer = tcp.peer_addr().ok();
    let fail = |error: std::io::Error| (peer, error);
    tcp.set_read_timeout(Some(HANDSHAKE_TIMEOUT))
        .map_err(fail)?;
    tcp.set_write_timeout(Some(HANDSHAKE_TIMEOUT))
        .map_err(fail)?;
    tcp.set_nodelay(true).map_err(fail)?;
    let mut conn =
        ServerConnection::new(config).map_err(|error| fail(std::io::Error::other(error)))?;
    while conn.is_handshaking() {
        conn.complete_io(&mut tcp).map_err(fail)?;
    }
    let client_fingerprint = conn
        .peer_certificates()
        .and_then(|chain| chain.first())
        .map(tls::fingerprint)
        .ok_or_else(|| fail(std::io::Error::other("the client presented no certificate")))?;
    tcp.set_read_timeout(None).map_err(fail)?;
    tcp.set_write_timeout(Some(WRITE_TIMEOUT)).map_err(fail)?;
    let control = tcp.try_clone().map_err(fail)?;
    let peer = peer.unwrap_or_else(|| SocketAddr::from(([0, 0, 0, 0], 0)));
    Ok(Accepted {
        stream: StreamOwned::new(conn, tcp),
        control,
        peer,
        client_fingerprint,
    })
}
