//! The load's other shapes against the scripted server: multi-turn
//! conversations (each turn sent after the one before it ended, carrying
//! the earlier turns and the server's answers) and a recorded trace
//! replayed at its own times.

#![allow(clippy::unwrap_used)] // tests: a panic is the failure report

use std::time::Duration;

use warpt_serving::load::{Load, Plan, drive};
use warpt_serving::request::{RequestSpec, Status};
use warpt_serving::scripted::{Script, Scripted};
use warpt_serving::{Api, Endpoint};

fn server() -> Scripted {
    Scripted::start(Script::steady(
        Duration::from_millis(5),
        Duration::from_millis(1),
    ))
    .unwrap()
}

#[test]
fn later_turns_carry_the_conversation_and_wait_for_the_answer() {
    let server = server();
    for api in [Api::Chat, Api::Completions] {
        let endpoint = Endpoint::new(&server.url, api, "m", "", Duration::from_secs(10)).unwrap();
        // Two conversations of three turns, two clients; a last, short one.
        let specs: Vec<RequestSpec> = (0..7)
            .map(|i| RequestSpec::new(format!("question{i}"), 3, true))
            .collect();
        server.take_truths();
        let plan = Plan {
            load: Load::Closed { concurrency: 2 },
            specs,
            turns: 3,
            seed: 1,
            warmup: 0,
        };
        let run = drive(&endpoint, &plan, 2).unwrap();
        assert_eq!(run.requests.len(), 7);
        let turns: Vec<usize> = run.requests.iter().map(|s| s.turn).collect();
        assert_eq!(turns, [0, 1, 2, 0, 1, 2, 0]);
        for pair in run.requests.windows(2) {
            let (a, b) = (&pair[0], &pair[1]);
            assert_eq!(b.outcome.status, Status::Ok);
            if b.turn > 0 {
                assert!(b.outcome.sent >= a.outcome.done, "{api:?}: turn sent early");
                assert_eq!(a.outcome.text(), " tok tok tok");
            }
        }
        // What the server was sent: each turn after the first carries the
        // earlier questions and answers, in order.
        let mut bodies: Vec<serde_json::Value> = server
            .take_truths()
            .iter()
            .map(|t| serde_json::from_str(&t.body).unwrap())
            .collect();
        assert_eq!(bodies.len(), 7);
        let last_of = |b: &serde_json::Value| match api {
            Api::Chat => b["messages"].as_array().unwrap().last().unwrap()["content"]
                .as_str()
                .unwrap()
                .to_string(),
            Api::Completions => b["prompt"].as_str().unwrap().to_string(),
        };
        bodies.retain(|b| last_of(b).ends_with("question2"));
        assert_eq!(bodies.len(), 1);
        match api {
            Api::Chat => {
                let m = bodies[0]["messages"].as_array().unwrap();
                let roles: Vec<&str> = m.iter().map(|m| m["role"].as_str().unwrap()).collect();
                assert_eq!(roles, ["user", "assistant", "user", "assistant", "user"]);
                assert_eq!(m[0]["content"], "question0");
                assert_eq!(m[1]["content"], " tok tok tok");
                assert_eq!(m[2]["content"], "question1");
            }
            Api::Completions => assert_eq!(
                bodies[0]["prompt"],
                "question0\n\n tok tok tok\n\nquestion1\n\n tok tok tok\n\nquestion2"
            ),
        }
    }
}

#[test]
fn a_replay_sends_at_the_recorded_times() {
    let server = server();
    let endpoint = Endpoint::new(
        &server.url,
        Api::Completions,
        "m",
        "",
        Duration::from_secs(10),
    )
    .unwrap();
    let times = vec![0.0, 0.05, 0.05, 0.2, 0.35];
    let plan = Plan {
        load: Load::Replay {
            times: times.clone(),
        },
        specs: (0..5)
            .map(|i| RequestSpec::new(format!("r{i}"), 2, true))
            .collect(),
        turns: 1,
        seed: 1,
        warmup: 2,
    };
    let run = drive(&endpoint, &plan, 2).unwrap();
    for (s, due) in run.requests.iter().zip(&times) {
        assert_eq!(s.outcome.status, Status::Ok);
        assert_eq!(s.due_s, *due);
        let lag = run.sent_s(s) - due;
        assert!(
            (0.0..0.05).contains(&lag),
            "request {}: {lag} s late",
            s.index
        );
    }
    // Fewer times than requests: refused, not guessed.
    let short = Plan {
        load: Load::Replay { times: vec![0.0] },
        ..plan
    };
    assert!(drive(&endpoint, &short, 1).is_err());
}
