//! A scripted OpenAI-compatible server: streams `max_tokens` words on a
//! fixed schedule, so a client's figures can be held to the truth. The
//! first token comes `first` after the request arrives, then one every
//! `every`; every `bundle_every`-th chunk carries three tokens, sent when
//! the third is due (as servers that flush several tokens per chunk do).
//! `first` and `every` zero: everything at once, to measure how many
//! requests per second a client can send. With `slots`, only that many
//! completions stream at once and the rest queue, so the server has a
//! known capacity (what a maximum-throughput search must find).
//!
//! `GET /truth` answers what was streamed so far (TTFTs and inter-token
//! latencies, measured where the bytes were written) and forgets it: the
//! truth for a client measured from outside (`examples/scripted_server.rs`,
//! scripts/bench-serving). A thread per connection reads requests
//! (blocking I/O); one thread writes every stream, each chunk when due
//! ([`ticker`]), so 512 streams cost one wake-up per moment a chunk is due,
//! not 512; HTTP/1.1 keep-alive with chunked responses.
//!
//! - [`schedule`]: what a completion writes, and when;
//! - [`ticker`]: the thread that writes them.

mod schedule;
mod ticker;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::Sender;
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

/// The schedule a scripted server streams on.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Script {
    /// Arrival of the request to the first token.
    pub first: Duration,
    /// Between tokens.
    pub every: Duration,
    /// Every n-th chunk carries three tokens (0: never).
    pub bundle_every: usize,
    /// Completions streamed at once (0: any number): a request arriving
    /// when all are busy waits for one, and its wait is part of its TTFT,
    /// as on a server whose batch is full. The server then holds
    /// `slots / (first + every x (max_tokens - 1))` requests per second.
    pub slots: usize,
}

impl Script {
    /// A token `every` apart after the `first`, one per chunk, any number
    /// of completions at once.
    pub fn steady(first: Duration, every: Duration) -> Self {
        Script {
            first,
            every,
            bundle_every: 0,
            slots: 0,
        }
    }
}

/// Free completion slots, and the signal that one was freed.
#[derive(Default)]
struct Slots {
    busy: Mutex<usize>,
    freed: Condvar,
}

impl Slots {
    /// Waits for a free slot (any when `limit` is 0), and takes it.
    fn take(&self, limit: usize) {
        let Ok(mut busy) = self.busy.lock() else {
            return;
        };
        while limit > 0 && *busy >= limit {
            busy = match self.freed.wait(busy) {
                Ok(b) => b,
                Err(_) => return,
            };
        }
        *busy += 1;
    }

    fn give_back(&self) {
        if let Ok(mut busy) = self.busy.lock() {
            *busy = busy.saturating_sub(1);
        }
        self.freed.notify_one();
    }
}

/// What the server did for one completion: when the request had arrived,
/// and when each chunk was written with how many tokens. The truth a
/// client's figures are held to (on a busy machine the server itself may
/// fall behind its schedule).
#[derive(Debug, Clone)]
pub struct Truth {
    /// The request's headers and body were read.
    pub arrived: Instant,
    /// Each chunk: written at, tokens in it.
    pub writes: Vec<(Instant, usize)>,
    /// The request's body (JSON), as sent.
    pub body: String,
}

impl Truth {
    /// The request's TTFT (arrival to the first chunk) and every
    /// inter-token latency (a chunk of k tokens written g after the one
    /// before: k latencies of g / k), milliseconds; `None` without chunks.
    pub fn figures(&self) -> Option<(f64, Vec<f64>)> {
        let ms = |a: Instant, b: Instant| a.saturating_duration_since(b).as_secs_f64() * 1e3;
        let first = self.writes.first()?;
        let mut itl = Vec::new();
        for w in self.writes.windows(2) {
            let (gap, k) = (ms(w[1].0, w[0].0), w[1].1);
            itl.extend(std::iter::repeat_n(gap / k as f64, k));
        }
        Some((ms(first.0, self.arrived), itl))
    }
}

/// The truths as JSON: `{"requests": n, "ttft_ms": [...], "itl_ms": [...],
/// "arrived_s": [...]}`
/// (what `GET /truth` answers, for a client measured from outside).
pub fn truth_json(truths: &[Truth]) -> String {
    let (mut ttft, mut itl) = (Vec::new(), Vec::new());
    for (t, i) in truths.iter().filter_map(Truth::figures) {
        ttft.push(t);
        itl.extend(i);
    }
    // Arrivals in seconds from the first: the rate a client really sent at.
    let first = truths.iter().map(|t| t.arrived).min();
    let mut arrived: Vec<f64> = truths
        .iter()
        .filter_map(|t| Some(t.arrived.duration_since(first?).as_secs_f64()))
        .collect();
    arrived.sort_by(f64::total_cmp);
    serde_json::json!({"requests": truths.len(), "ttft_ms": ttft, "itl_ms": itl, "arrived_s": arrived})
        .to_string()
}

/// A running scripted server; stops when dropped.
pub struct Scripted {
    /// `http://127.0.0.1:PORT`.
    pub url: String,
    stop: Arc<AtomicBool>,
    requests: Arc<AtomicU64>,
    truths: Arc<Ledger>,
}

/// The truths recorded so far, and how many completions are still
/// streaming. A completion's truth is complete only after its last write,
/// which its client may read before the serving thread records it: asking
/// for the truths waits (a while) for those still in flight, so a client
/// that has read every response sees every truth.
#[derive(Default)]
struct Ledger {
    book: Mutex<(Vec<Truth>, usize)>,
    settled: Condvar,
}

impl Ledger {
    /// How long [`Ledger::take`] waits for completions still streaming.
    const SETTLE: Duration = Duration::from_secs(5);

    /// A completion has started streaming.
    fn open(&self) {
        if let Ok(mut b) = self.book.lock() {
            b.1 += 1;
        }
    }

    /// A completion has ended, with its truth when it streamed.
    fn close(&self, truth: Option<Truth>) {
        if let Ok(mut b) = self.book.lock() {
            b.1 = b.1.saturating_sub(1);
            b.0.extend(truth);
        }
        self.settled.notify_all();
    }

    /// Every truth so far, once no completion is streaming (or after
    /// [`Ledger::SETTLE`]), and forgets them.
    fn take(&self) -> Vec<Truth> {
        let Ok(book) = self.book.lock() else {
            return Vec::new();
        };
        self.settled
            .wait_timeout_while(book, Self::SETTLE, |b| b.1 > 0)
            .map(|(mut b, _)| std::mem::take(&mut b.0))
            .unwrap_or_default()
    }
}

impl Scripted {
    /// Starts one on a free local port.
    pub fn start(script: Script) -> std::io::Result<Self> {
        Self::start_on(0, script)
    }

    /// Starts one on local `port` (0: a free one).
    pub fn start_on(port: u16, script: Script) -> std::io::Result<Self> {
        let listener = TcpListener::bind(("127.0.0.1", port))?;
        let url = format!("http://{}", listener.local_addr()?);
        let stop = Arc::new(AtomicBool::new(false));
        let requests = Arc::new(AtomicU64::new(0));
        let truths = Arc::new(Ledger::default());
        let (s, r, t) = (stop.clone(), requests.clone(), truths.clone());
        let slots = Arc::new(Slots::default());
        let (writer, streams) = std::sync::mpsc::channel();
        std::thread::spawn(move || ticker::run(streams));
        std::thread::spawn(move || {
            for conn in listener.incoming() {
                if s.load(Ordering::Relaxed) {
                    break;
                }
                let Ok(conn) = conn else { continue };
                let (r, t, slots, writer) = (r.clone(), t.clone(), slots.clone(), writer.clone());
                std::thread::spawn(move || serve(conn, script, &r, &t, &slots, &writer));
            }
        });
        Ok(Scripted {
            url,
            stop,
            requests,
            truths,
        })
    }

    /// Requests answered so far.
    pub fn requests(&self) -> u64 {
        self.requests.load(Ordering::Relaxed)
    }

    /// What the server did for every completion so far, and forgets it;
    /// waits for completions still streaming (their last write may have
    /// reached the client before its truth was recorded).
    pub fn take_truths(&self) -> Vec<Truth> {
        self.truths.take()
    }
}

impl Drop for Scripted {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        // Wake the accept loop.
        let _ = TcpStream::connect(self.url.trim_start_matches("http://"));
    }
}

/// Answers one connection's requests until it closes.
fn serve(
    conn: TcpStream,
    script: Script,
    requests: &AtomicU64,
    truths: &Ledger,
    slots: &Slots,
    writer: &Sender<ticker::Stream>,
) {
    let _ = conn.set_nodelay(true);
    let _ = conn.set_write_timeout(Some(ticker::WRITE_TIMEOUT));
    let Ok(write_half) = conn.try_clone() else {
        return;
    };
    let mut out = write_half;
    let mut reader = BufReader::new(conn);
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).unwrap_or(0) == 0 {
            return;
        }
        let arrived = Instant::now();
        let get = line.starts_with("GET");
        let mut length = 0usize;
        loop {
            let mut h = String::new();
            if reader.read_line(&mut h).unwrap_or(0) == 0 {
                return;
            }
            let h = h.trim_end();
            if h.is_empty() {
                break;
            }
            if let Some((k, v)) = h.split_once(':')
                && k.eq_ignore_ascii_case("content-length")
            {
                length = v.trim().parse().unwrap_or(0);
            }
        }
        let mut body = vec![0u8; length];
        if reader.read_exact(&mut body).is_err() {
            return;
        }
        requests.fetch_add(1, Ordering::Relaxed);
        let ok = if get {
            // GET /truth: what was streamed since the last time asked;
            // any other GET: the model list.
            let json = if line.split_whitespace().nth(1) == Some("/truth") {
                truth_json(&truths.take())
            } else {
                r#"{"object":"list","data":[{"id":"scripted","object":"model"}]}"#.to_string()
            };
            write!(
                out,
                "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{json}",
                json.len()
            )
            .is_ok()
        } else {
            let truth = Truth {
                arrived,
                writes: Vec::new(),
                body: String::from_utf8_lossy(&body).into_owned(),
            };
            slots.take(script.slots);
            // The schedule starts when a slot was free.
            let start = if script.slots == 0 {
                arrived
            } else {
                Instant::now()
            };
            let (done, ended) = std::sync::mpsc::channel();
            truths.open();
            let handed = out.try_clone().ok().and_then(|out| {
                writer
                    .send(ticker::Stream {
                        out,
                        writes: schedule::plan(&body, script, start),
                        truth,
                        done,
                    })
                    .ok()
            });
            let ended = handed.and_then(|()| ended.recv().ok());
            slots.give_back();
            // None: the writer is gone (the server is stopping).
            let ok = ended.as_ref().is_some_and(|(ok, _)| *ok);
            truths.close(ended.map(|(_, truth)| truth));
            ok
        };
        if !ok {
            return;
        }
    }
}
