//! The one thread that writes every scripted stream: it sleeps until the
//! next write is due, makes every write then due, and sleeps again. One
//! wake-up serves every stream due at that moment, where a thread per
//! stream would wake 512 threads for 512 streams: on a 2-core machine
//! that is what kept the server from its own schedule.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::io::Write;
use std::net::TcpStream;
use std::sync::mpsc::{Receiver, RecvTimeoutError, Sender};
use std::time::{Duration, Instant};

use super::Truth;
use super::schedule::Planned;

/// A response to stream: where, what and when, the truth to record, and
/// whom to tell when it ended (whether it was written whole, and the
/// truth).
pub(super) struct Stream {
    pub(super) out: TcpStream,
    pub(super) writes: Vec<Planned>,
    pub(super) truth: Truth,
    pub(super) done: Sender<(bool, Truth)>,
}

/// A stream being written, and its next write.
struct Active {
    stream: Stream,
    next: usize,
}

/// Writes every stream `incoming` brings, each write when due, until no
/// sender is left and nothing is streaming.
pub(super) fn run(incoming: Receiver<Stream>) {
    let mut heap: BinaryHeap<Reverse<(Instant, usize)>> = BinaryHeap::new();
    let mut streams: Vec<Option<Active>> = Vec::new();
    let mut free: Vec<usize> = Vec::new();
    let mut open = true;
    loop {
        // Take in new streams; wait for one, or for the next write.
        let next_due = heap.peek().map(|Reverse((due, _))| *due);
        let got = match next_due {
            None if !open => return,
            None => incoming.recv().map_err(|_| RecvTimeoutError::Disconnected),
            Some(due) => {
                let wait = due.saturating_duration_since(Instant::now());
                if wait.is_zero() || !open {
                    incoming.try_recv().map_err(|_| RecvTimeoutError::Timeout)
                } else {
                    incoming.recv_timeout(wait)
                }
            }
        };
        match got {
            Ok(stream) => {
                let Some(due) = stream.writes.first().map(|w| w.due) else {
                    let _ = stream.done.send((true, stream.truth));
                    continue;
                };
                let active = Some(Active { stream, next: 0 });
                let at = match free.pop() {
                    Some(i) => {
                        streams[i] = active;
                        i
                    }
                    None => {
                        streams.push(active);
                        streams.len() - 1
                    }
                };
                heap.push(Reverse((due, at)));
            }
            Err(RecvTimeoutError::Disconnected) => open = false,
            Err(RecvTimeoutError::Timeout) => {}
        }
        // Every write now due.
        let now = Instant::now();
        while let Some(&Reverse((due, at))) = heap.peek() {
            if due > now {
                break;
            }
            heap.pop();
            let Some(active) = streams[at].as_mut() else {
                continue;
            };
            let ok = write_due(active, now);
            match active.stream.writes.get(active.next) {
                Some(w) if ok => heap.push(Reverse((w.due, at))),
                _ => {
                    if let Some(ended) = streams[at].take() {
                        let _ = ended.stream.done.send((ok, ended.stream.truth));
                    }
                    free.push(at);
                }
            }
        }
    }
}

/// Writes `active`'s writes due by `now`, recording when each token chunk
/// went; false when the connection failed.
fn write_due(active: &mut Active, now: Instant) -> bool {
    let s = &mut active.stream;
    while let Some(w) = s.writes.get(active.next) {
        if w.due > now {
            break;
        }
        if s.out.write_all(&w.bytes).is_err() {
            return false;
        }
        if w.tokens > 0 {
            s.truth.writes.push((Instant::now(), w.tokens));
        }
        active.next += 1;
    }
    true
}

/// How long a write may block before the stream is given up: a client
/// that stopped reading must not stall every other stream for long.
pub(super) const WRITE_TIMEOUT: Duration = Duration::from_secs(5);
