//! The load: when requests are sent, and the drivers that send them.
//! Closed loop: `concurrency` clients, each sending its next request when
//! the last one ends. Open loop: requests sent at scheduled times (Poisson,
//! constant or gamma gaps at a mean rate) whether or not earlier ones have
//! ended, so a slow server meets its backlog instead of a politely waiting
//! client. Replay: at the times a trace recorded. Multi-turn
//! conversations: the load paces whole conversations, whose turns follow
//! one another.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use rand_core::SeedableRng;
use rand_distr::{Distribution, Exp, Gamma};
use rand_xoshiro::Xoshiro256PlusPlus;

use crate::endpoint::Endpoint;
use crate::error::Error;
use crate::request::{Exchange, Outcome, RequestSpec, send};
use crate::transport::HttpClient;

/// How open-loop gaps are drawn.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Arrival {
    /// Exponential gaps: independent arrivals.
    Poisson,
    /// Equal gaps.
    Constant,
    /// Gamma gaps of shape `burstiness` (1: Poisson; below 1 burstier,
    /// above 1 more even), as vLLM's benchmark draws them.
    Gamma(f64),
}

impl Arrival {
    /// The arrival process `name` (poisson, constant, gamma) with
    /// `burstiness` for gamma.
    pub fn parse(name: &str, burstiness: f64) -> Result<Self, String> {
        match name {
            "poisson" => Ok(Arrival::Poisson),
            "constant" => Ok(Arrival::Constant),
            "gamma" if burstiness > 0.0 && burstiness.is_finite() => Ok(Arrival::Gamma(burstiness)),
            "gamma" => Err(format!(
                "parameter 'burstiness' must be above 0 for gamma arrivals, not {burstiness}"
            )),
            other => Err(format!(
                "parameter 'arrival': '{other}' is not one of poisson, constant, gamma"
            )),
        }
    }
}

/// `n` send times (seconds from the start, the first at 0) at a mean
/// `rate` per second, from `seed`.
pub fn schedule(rate: f64, arrival: Arrival, n: usize, seed: u64) -> Vec<f64> {
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed ^ 0x6172_7269_7661_6c73);
    let mean = 1.0 / rate;
    let mut gap: Box<dyn FnMut() -> f64> = match arrival {
        Arrival::Constant => Box::new(move || mean),
        Arrival::Poisson => match Exp::new(rate) {
            Ok(d) => Box::new(move || d.sample(&mut rng)),
            Err(_) => Box::new(move || mean),
        },
        Arrival::Gamma(shape) => match Gamma::new(shape, mean / shape) {
            Ok(d) => Box::new(move || d.sample(&mut rng)),
            Err(_) => Box::new(move || mean),
        },
    };
    let mut t = 0.0;
    (0..n)
        .map(|i| {
            if i > 0 {
                t += gap();
            }
            t
        })
        .collect()
}

/// How requests are sent.
#[derive(Debug, Clone, PartialEq)]
pub enum Load {
    /// `concurrency` clients, each waiting for its response.
    Closed {
        /// Clients.
        concurrency: usize,
    },
    /// Sent at scheduled times.
    Open {
        /// Mean requests (conversations, with turns) per second.
        rate: f64,
        /// The gaps' distribution.
        arrival: Arrival,
    },
    /// Sent at recorded times: seconds from the start, one per request
    /// (conversation, with turns), in order.
    Replay {
        /// The send times.
        times: Vec<f64>,
    },
}

/// What a run sends, and how.
#[derive(Debug, Clone)]
pub struct Plan {
    /// When requests are sent.
    pub load: Load,
    /// Every request. With `turns` above 1, each `turns` consecutive ones
    /// are a conversation: a turn is sent when the one before it ended,
    /// carrying every earlier turn and its answer; the load paces whole
    /// conversations.
    pub specs: Vec<RequestSpec>,
    /// Turns per conversation (1: independent requests).
    pub turns: usize,
    /// Seeds the open loop's arrivals.
    pub seed: u64,
    /// One-token requests sent all at once before measuring, to open that
    /// many connections (kept for the run), so the first requests measured
    /// do not pay for connecting.
    pub warmup: usize,
}

/// One request of a run.
#[derive(Debug, Clone)]
pub struct Sent {
    /// Its index in the request list.
    pub index: usize,
    /// Its turn in its conversation, from 0.
    pub turn: usize,
    /// When it was due (open loop and replay: a conversation's first
    /// turn), seconds from the start; otherwise when it was sent.
    pub due_s: f64,
    /// What happened.
    pub outcome: Outcome,
}

/// A finished run.
#[derive(Debug, Clone)]
pub struct Run {
    /// When the first request was due.
    pub started: Instant,
    /// Every request, in index order.
    pub requests: Vec<Sent>,
    /// Start to the last response's end, seconds.
    pub wall_s: f64,
}

impl Run {
    /// Seconds from the start at which `s` was sent.
    pub fn sent_s(&self, s: &Sent) -> f64 {
        s.outcome
            .sent
            .saturating_duration_since(self.started)
            .as_secs_f64()
    }
}

/// Sends `plan` to `endpoint` on a runtime of `threads` worker threads,
/// and waits for every response.
pub fn drive(endpoint: &Endpoint, plan: &Plan, threads: usize) -> Result<Run, Error> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(threads.max(1))
        .enable_all()
        .build()
        .map_err(|e| Error::Http(format!("starting the client runtime: {e}")))?;
    runtime.block_on(drive_async(endpoint, plan))
}

/// Sends one conversation's turns, each when the one before it ended;
/// the first is due at `due_s` (`None`: when it is sent).
async fn converse(
    client: HttpClient,
    endpoint: Arc<Endpoint>,
    specs: Arc<Vec<RequestSpec>>,
    first: usize,
    turns: usize,
    started: Instant,
    due_s: Option<f64>,
) -> Vec<Sent> {
    let end = (first + turns).min(specs.len());
    let mut history: Vec<Exchange> = Vec::new();
    let mut out = Vec::with_capacity(end - first);
    for (turn, spec) in specs[first..end].iter().enumerate() {
        let outcome = if history.is_empty() {
            send(&client, &endpoint, spec).await
        } else {
            let spec = RequestSpec {
                history: spec.history.iter().chain(&history).cloned().collect(),
                ..spec.clone()
            };
            send(&client, &endpoint, &spec).await
        };
        let sent_s = outcome
            .sent
            .saturating_duration_since(started)
            .as_secs_f64();
        if turn + 1 < end - first {
            history.push(Exchange {
                user: spec.prompt.clone(),
                assistant: outcome.text(),
            });
        }
        out.push(Sent {
            index: first + turn,
            turn,
            due_s: due_s.filter(|_| turn == 0).unwrap_or(sent_s),
            outcome,
        });
    }
    out
}

/// [`drive`] inside a runtime.
pub async fn drive_async(endpoint: &Endpoint, plan: &Plan) -> Result<Run, Error> {
    let client = endpoint.client();
    let endpoint = Arc::new(endpoint.clone());
    if let Some(first) = plan.specs.first() {
        let one = Arc::new(RequestSpec::new(first.prompt.clone(), 1, first.ignore_eos));
        let warm: Vec<_> = (0..plan.warmup)
            .map(|_| {
                let (client, endpoint, one) = (client.clone(), endpoint.clone(), one.clone());
                tokio::spawn(async move { send(&client, &endpoint, &one).await })
            })
            .collect();
        for w in warm {
            w.await
                .map_err(|e| Error::Http(format!("a warm-up request failed: {e}")))?;
        }
    }
    let specs = Arc::new(plan.specs.clone());
    let n = specs.len();
    let turns = plan.turns.max(1);
    let conversations = n.div_ceil(turns);
    let started = Instant::now();
    let mut tasks = Vec::with_capacity(conversations);
    let at_times = |times: Vec<f64>| times.into_iter().take(conversations).enumerate();
    let times = match &plan.load {
        Load::Closed { concurrency } => {
            let next = Arc::new(AtomicUsize::new(0));
            for _ in 0..(*concurrency).max(1).min(conversations.max(1)) {
                let (client, endpoint, specs, next) = (
                    client.clone(),
                    endpoint.clone(),
                    specs.clone(),
                    next.clone(),
                );
                tasks.push(tokio::spawn(async move {
                    let mut done = Vec::new();
                    loop {
                        let c = next.fetch_add(1, Ordering::Relaxed);
                        if c * turns >= specs.len() {
                            break;
                        }
                        let (client, endpoint, specs) =
                            (client.clone(), endpoint.clone(), specs.clone());
                        done.extend(
                            converse(client, endpoint, specs, c * turns, turns, started, None)
                                .await,
                        );
                    }
                    done
                }));
            }
            None
        }
        Load::Open { rate, arrival } => Some(schedule(*rate, *arrival, conversations, plan.seed)),
        Load::Replay { times } => {
            if times.len() < conversations {
                return Err(Error::Http(format!(
                    "the replay has {} send times for {conversations} requests",
                    times.len()
                )));
            }
            Some(times.clone())
        }
    };
    for (c, due_s) in times.map(at_times).into_iter().flatten() {
        tokio::time::sleep_until((started + Duration::from_secs_f64(due_s)).into()).await;
        let (client, endpoint, specs) = (client.clone(), endpoint.clone(), specs.clone());
        tasks.push(tokio::spawn(converse(
            client,
            endpoint,
            specs,
            c * turns,
            turns,
            started,
            Some(due_s),
        )));
    }
    let mut requests = Vec::with_capacity(n);
    for t in tasks {
        requests.extend(
            t.await
                .map_err(|e| Error::Http(format!("a client task failed: {e}")))?,
        );
    }
    requests.sort_by_key(|s| s.index);
    let last = requests
        .iter()
        .map(|s| s.outcome.done)
        .max()
        .unwrap_or(started);
    Ok(Run {
        started,
        requests,
        wall_s: last.saturating_duration_since(started).as_secs_f64(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn schedules_keep_their_mean_rate_and_shape() {
        let n = 20_000;
        for arrival in [
            Arrival::Poisson,
            Arrival::Constant,
            Arrival::Gamma(0.5),
            Arrival::Gamma(4.0),
        ] {
            let t = schedule(100.0, arrival, n, 7);
            assert_eq!(t[0], 0.0);
            assert!(t.windows(2).all(|w| w[1] >= w[0]));
            let rate = (n - 1) as f64 / t[n - 1];
            assert!((rate - 100.0).abs() < 3.0, "{arrival:?}: {rate}");
            // The gaps' coefficient of variation: 1 for Poisson, 0 for
            // constant, 1/sqrt(shape) for gamma.
            let gaps: Vec<f64> = t.windows(2).map(|w| w[1] - w[0]).collect();
            let mean = gaps.iter().sum::<f64>() / gaps.len() as f64;
            let sd =
                (gaps.iter().map(|g| (g - mean).powi(2)).sum::<f64>() / gaps.len() as f64).sqrt();
            let cv = sd / mean;
            let want = match arrival {
                Arrival::Poisson => 1.0,
                Arrival::Constant => 0.0,
                Arrival::Gamma(k) => 1.0 / k.sqrt(),
            };
            assert!((cv - want).abs() < 0.05, "{arrival:?}: cv {cv}");
        }
        assert_eq!(
            schedule(10.0, Arrival::Poisson, 50, 1),
            schedule(10.0, Arrival::Poisson, 50, 1)
        );
        assert!(Arrival::parse("gamma", 0.0).is_err());
        assert!(Arrival::parse("uniform", 1.0).is_err());
    }
}
