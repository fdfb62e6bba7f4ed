//! The targets without libFuzzer, for `cargo test`: every committed
//! corpus input, then seeded mutations of them (bytes flipped, inserted,
//! deleted, cut, spliced from another input). No coverage guidance: that
//! is `scripts/fuzz`; this keeps every target building and its corpus and
//! its regressions passing on every change.

#![allow(clippy::unwrap_used)] // tests: a panic is the failure report

use std::path::PathBuf;

/// The committed inputs of `target`, sorted by name.
fn inputs(target: &str) -> Vec<(String, Vec<u8>)> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("corpus")
        .join(target);
    let mut out: Vec<(String, Vec<u8>)> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| {
            let p = e.unwrap().path();
            let name = p.file_name().unwrap().to_string_lossy().into_owned();
            (name, std::fs::read(&p).unwrap())
        })
        .collect();
    out.sort();
    assert!(!out.is_empty(), "{}: no corpus", dir.display());
    out
}

/// splitmix64: the mutations' random numbers, fixed by the seed.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

/// Bytes a parser is likely to trip on.
const INTERESTING: &[&[u8]] = &[
    b"\0",
    b"\xff",
    b"\n",
    b"\r\n",
    b"\"",
    b"{",
    b"}",
    b"[",
    b"]",
    b":",
    b",",
    b"=",
    b"-1",
    b"0",
    b"1e308",
    b"NaN",
    b"inf",
    b"4294967295",
    b"18446744073709551615",
    b"\xff\xff\xff\xff\xff\xff\xff\x7f",
    b"\x00\x00\x00\x00",
    b"data: ",
    b"[DONE]",
];

fn mutate(rng: &mut Rng, input: &[u8], other: &[u8]) -> Vec<u8> {
    let mut b = input.to_vec();
    for _ in 0..=rng.below(4) {
        let at = rng.below(b.len() + 1);
        match rng.below(6) {
            0 if !b.is_empty() => {
                let i = rng.below(b.len());
                b[i] ^= 1 << rng.below(8);
            }
            1 => {
                let piece = INTERESTING[rng.below(INTERESTING.len())];
                b.splice(at..at, piece.iter().copied());
            }
            2 if at < b.len() => {
                let end = (at + 1 + rng.below(16)).min(b.len());
                b.drain(at..end);
            }
            3 => b.truncate(at),
            4 if !other.is_empty() => {
                let from = rng.below(other.len());
                let end = (from + 1 + rng.below(64)).min(other.len());
                b.splice(at..at, other[from..end].iter().copied());
            }
            _ if !b.is_empty() => {
                let i = rng.below(b.len());
                b[i] = rng.next() as u8;
            }
            _ => {}
        }
    }
    b
}

/// Runs `target` on its corpus and on `mutations` mutations of it.
fn run(target: &str, mutations: usize) {
    let body = crate::TARGETS
        .iter()
        .find(|(name, _)| *name == target)
        .map(|(_, f)| *f)
        .unwrap();
    let corpus = inputs(target);
    for (name, data) in &corpus {
        eprintln!("{target}: {name}");
        body(data);
    }
    let mut rng = Rng(0x0077_6172_7074 ^ target.len() as u64);
    for i in 0..mutations {
        let (_, a) = &corpus[rng.below(corpus.len())];
        let (_, b) = &corpus[rng.below(corpus.len())];
        let data = mutate(&mut rng, a, b);
        let shown = String::from_utf8_lossy(&data[..data.len().min(200)]).into_owned();
        // Named before it runs: a panic's report follows the input.
        if std::panic::catch_unwind(|| body(&data)).is_err() {
            panic!(
                "{target}: mutation {i} panicked on {} bytes: {shown:?}",
                data.len()
            );
        }
    }
}

/// Every target has a fuzz_targets/ file and a corpus, and no file there
/// is a target this table lacks.
#[test]
fn every_target_is_wired() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let mut files: Vec<String> = std::fs::read_dir(root.join("fuzz_targets"))
        .unwrap()
        .map(|e| {
            let p = e.unwrap().path();
            p.file_stem().unwrap().to_string_lossy().into_owned()
        })
        .collect();
    files.sort();
    let mut names: Vec<String> = crate::TARGETS.iter().map(|(n, _)| n.to_string()).collect();
    names.sort();
    assert_eq!(files, names);
    for name in &names {
        assert!(!inputs(name).is_empty());
    }
}

macro_rules! targets {
    ($($name:ident: $mutations:expr,)*) => {
        $(
            #[test]
            fn $name() {
                run(stringify!($name), $mutations);
            }
        )*
    };
}

// Mutations per target: a few seconds each in a debug test build (the
// model targets load and run a model per input).
targets! {
    gguf_file: 300,
    model_dir: 300,
    hf_config: 3000,
    tokenizer_json: 1000,
    sse_stream: 5000,
    serving_inputs: 3000,
    import_file: 3000,
    import_criterion: 2000,
    hpl_output: 1000,
    warpt_toml: 1000,
    bench_config: 3000,
    fasta: 3000,
    fastq: 3000,
    protocol_reply: 5000,
    run_body: 1000,
    net_hello: 5000,
}
