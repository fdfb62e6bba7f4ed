//! `warpt net-server`: the peer of the network benchmarks, also started on
//! 127.0.0.1 inside the benchmark when no host is given.

use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use super::protocol::{HELLO_LEN, Mode, OK};

/// Bounds on what one client may ask of the server.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// A session ends after this long.
    pub session_time: Duration,
    /// A session ends after this many bytes received.
    pub session_bytes: u64,
    /// A session that sends nothing for this long is dropped.
    pub idle: Duration,
    /// Sessions served at once; more are refused.
    pub concurrent: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            session_time: Duration::from_secs(600),
            session_bytes: 1 << 40,
            idle: Duration::from_secs(30),
            concurrent: 64,
        }
    }
}

/// A running server.
pub struct Server {
    addr: SocketAddr,
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Server {
    /// Serves on `listener` in a background thread, reporting refusals and
    /// session ends to `log`; stops after `max_sessions` sessions if given.
    pub fn start(
        listener: TcpListener,
        limits: Limits,
        max_sessions: Option<usize>,
        log: impl Fn(&str) + Send + Sync + 'static,
    ) -> io::Result<Server> {
        let addr = listener.local_addr()?;
        let stop = Arc::new(AtomicBool::new(false));
        let flag = Arc::clone(&stop);
        let thread = std::thread::spawn(move || {
            accept_loop(listener, limits, max_sessions, flag, Arc::new(log))
        });
        Ok(Server {
            addr,
            stop,
            thread: Some(thread),
        })
    }

    /// The address it listens on.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Waits until the server stops by itself (after `max_sessions`).
    pub fn wait(mut self) {
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        if let Some(t) = self.thread.take() {
            self.stop.store(true, Ordering::Relaxed);
            // Wake the blocking accept.
            let _ = TcpStream::connect_timeout(&self.addr, Duration::from_millis(200));
            let _ = t.join();
        }
    }
}

fn accept_loop(
    listener: TcpListener,
    limits: Limits,
    max_sessions: Option<usize>,
    stop: Arc<AtomicBool>,
    log: Arc<dyn Fn(&str) + Send + Sync>,
) {
    let active = Arc::new(AtomicUsize::new(0));
    let mut sessions = Vec::new();
    let mut served = 0usize;
    for conn in listener.incoming() {
        if stop.load(Ordering::Relaxed) {
            break;
        }
        let Ok(stream) = conn else { continue };
        let peer = stream.peer_addr().map_or("?".into(), |a| a.to_string());
        if active.load(Ordering::Relaxed) >= limits.concurrent {
            log(&format!(
                "refused {peer}: {} sessions already running",
                limits.concurrent
            ));
            continue;
        }
        active.fetch_add(1, Ordering::Relaxed);
        let (active2, log2) = (Arc::clone(&active), Arc::clone(&log));
        sessions.push(std::thread::spawn(move || {
            match session(stream, limits) {
                Ok(bytes) => log2(&format!("session from {peer} ended after {bytes} bytes")),
                Err(e) => log2(&format!("session from {peer} refused or dropped: {e}")),
            }
            active2.fetch_sub(1, Ordering::Relaxed);
        }));
        served += 1;
        if max_sessions.is_some_and(|m| served >= m) {
            break;
        }
    }
    for s in sessions {
        let _ = s.join();
    }
}

/// Serves one session; returns the bytes received.
fn session(mut stream: TcpStream, limits: Limits) -> io::Result<u64> {
    stream.set_read_timeout(Some(limits.idle))?;
    stream.set_write_timeout(Some(limits.idle))?;
    stream.set_nodelay(true)?;
    let mut hello = [0u8; HELLO_LEN];
    stream.read_exact(&mut hello)?;
    let mode = Mode::parse(&hello).map_err(io::Error::other)?;
    stream.write_all(OK)?;
    let start = Instant::now();
    let within = |bytes: u64| start.elapsed() < limits.session_time && bytes < limits.session_bytes;
    let mut received = 0u64;
    match mode {
        Mode::Sink { round } => {
            let round = round as u64;
            let mut buf = vec![0u8; super::protocol::BLOCK];
            let mut next_ack = round;
            while within(received) {
                let n = stream.read(&mut buf)?;
                if n == 0 {
                    break;
                }
                received += n as u64;
                while received >= next_ack {
                    stream.write_all(&next_ack.to_le_bytes())?;
                    next_ack += round;
                }
            }
        }
        Mode::Echo { message } => {
            let mut buf = vec![0u8; message as usize];
            while within(received) {
                match stream.read_exact(&mut buf) {
                    Ok(()) => {}
                    Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => break,
                    Err(e) => return Err(e),
                }
                received += buf.len() as u64;
                stream.write_all(&buf)?;
            }
        }
    }
    Ok(received)
}
