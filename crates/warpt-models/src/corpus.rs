//! A seeded English-like corpus: Zipf-distributed words from a fixed list,
//! sentences with capitals, commas, numbers and full stops. Enough texture
//! for a BPE tokenizer to learn merges and for a pipeline to parse, with
//! nothing to download and the same text for the same seed everywhere.

use rand_core::{RngCore, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;

const WORDS: &[&str] = &[
    "the",
    "of",
    "and",
    "to",
    "a",
    "in",
    "is",
    "that",
    "for",
    "it",
    "as",
    "was",
    "with",
    "be",
    "by",
    "on",
    "not",
    "he",
    "this",
    "are",
    "or",
    "his",
    "from",
    "at",
    "which",
    "but",
    "have",
    "an",
    "had",
    "they",
    "you",
    "were",
    "their",
    "one",
    "all",
    "we",
    "can",
    "her",
    "has",
    "there",
    "been",
    "if",
    "more",
    "when",
    "will",
    "would",
    "who",
    "so",
    "no",
    "time",
    "people",
    "year",
    "way",
    "day",
    "man",
    "thing",
    "woman",
    "life",
    "child",
    "world",
    "school",
    "state",
    "family",
    "student",
    "group",
    "country",
    "problem",
    "hand",
    "part",
    "place",
    "case",
    "week",
    "company",
    "system",
    "program",
    "question",
    "work",
    "government",
    "number",
    "night",
    "point",
    "home",
    "water",
    "room",
    "mother",
    "area",
    "money",
    "story",
    "fact",
    "month",
    "lot",
    "right",
    "study",
    "book",
    "eye",
    "job",
    "word",
    "business",
    "issue",
    "side",
    "kind",
    "head",
    "house",
    "service",
    "friend",
    "father",
    "power",
    "hour",
    "game",
    "line",
    "end",
    "member",
    "law",
    "car",
    "city",
    "community",
    "name",
    "president",
    "team",
    "minute",
    "idea",
    "kid",
    "body",
    "information",
    "back",
    "parent",
    "face",
    "others",
    "level",
    "office",
    "door",
    "health",
    "person",
    "art",
    "war",
    "history",
    "party",
    "result",
    "change",
    "morning",
    "reason",
    "research",
    "girl",
    "guy",
    "moment",
    "air",
    "teacher",
    "force",
    "education",
    "model",
    "benchmark",
    "memory",
    "network",
    "compute",
    "latency",
    "throughput",
    "kernel",
    "genome",
    "sequence",
    "protein",
    "cluster",
    "machine",
    "learning",
    "inference",
    "token",
    "quickly",
    "slowly",
    "carefully",
    "really",
    "always",
    "never",
    "often",
    "again",
    "still",
    "good",
    "new",
    "first",
    "last",
    "long",
    "great",
    "little",
    "own",
    "other",
    "old",
    "big",
    "high",
    "different",
    "small",
    "large",
    "next",
    "early",
    "young",
    "important",
    "few",
    "public",
    "bad",
    "same",
    "able",
    "run",
    "make",
    "measure",
    "read",
    "write",
    "find",
    "give",
    "tell",
    "call",
    "try",
    "ask",
    "need",
    "feel",
    "become",
    "leave",
    "put",
    "mean",
    "keep",
    "begin",
    "seem",
    "help",
    "talk",
    "turn",
    "start",
    "show",
    "hear",
    "play",
    "move",
    "live",
    "believe",
    "bring",
    "happen",
    "provide",
    "sit",
    "stand",
    "lose",
    "pay",
    "meet",
    "include",
];

/// `lines` lines of seeded text, each one to three sentences.
pub fn lines(seed: u64, lines: usize) -> Vec<String> {
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed ^ 0x636f_7270_7573);
    // Zipf weights 1/(rank+1): cumulative table, sampled by binary search.
    let mut cumulative = Vec::with_capacity(WORDS.len());
    let mut total = 0.0;
    for rank in 0..WORDS.len() {
        total += 1.0 / (rank as f64 + 1.0);
        cumulative.push(total);
    }
    let mut uniform = move || (rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64;
    (0..lines)
        .map(|_| {
            let mut line = String::new();
            let sentences = 1 + (uniform() * 3.0) as usize;
            for s in 0..sentences {
                if s > 0 {
                    line.push(' ');
                }
                let words = 4 + (uniform() * 14.0) as usize;
                for w in 0..words {
                    if w > 0 {
                        line.push(if uniform() < 0.08 { ',' } else { ' ' });
                        if line.ends_with(',') {
                            line.push(' ');
                        }
                    }
                    if uniform() < 0.03 {
                        line.push_str(&((uniform() * 10_000.0) as u32).to_string());
                        continue;
                    }
                    let x = uniform() * total;
                    let i = cumulative.partition_point(|&c| c < x).min(WORDS.len() - 1);
                    let word = WORDS[i];
                    if w == 0 {
                        let mut chars = word.chars();
                        if let Some(c) = chars.next() {
                            line.extend(c.to_uppercase());
                            line.push_str(chars.as_str());
                        }
                    } else {
                        line.push_str(word);
                    }
                }
                line.push(if uniform() < 0.1 { '?' } else { '.' });
            }
            line
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_same_seed_gives_the_same_text_and_words_follow_zipf() {
        let a = lines(7, 200);
        assert_eq!(a, lines(7, 200));
        assert_ne!(a, lines(8, 200));
        let text = a.join(" ");
        let the = text.matches(" the ").count();
        let include = text.matches(" include").count();
        assert!(the > 10 * include.max(1), "the={the} include={include}");
        assert!(a.iter().all(|l| l.ends_with('.') || l.ends_with('?')));
    }
}
