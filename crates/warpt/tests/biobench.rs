//! The biobench suite through the CLI: each benchmark on a tiny
//! configuration with its validation, a wrong answer caught, the user's
//! own files, and bad input refused.

#![allow(clippy::unwrap_used)] // tests: a panic is the failure report

use serde_json::Value;

mod common;
use common::{first_result, metric, succeeded, warpt};

/// Runs one biobench benchmark; the exit status, its result and stderr.
fn run(bench: &str, params: &[&str]) -> (Option<i32>, Value, String) {
    first_result(
        &[
            "--suite",
            "biobench",
            "--benchmark",
            bench,
            "--duration",
            "0.3",
            "--burnin-seconds",
            "0.05",
        ],
        params,
    )
}

/// `--param param` makes `bench` exit 2 at plan time, saying `want`.
fn refused(bench: &str, param: &str, want: &str) {
    let out = warpt()
        .args([
            "benchmark",
            "run",
            "--suite",
            "biobench",
            "--benchmark",
            bench,
        ])
        .args(["--no-store", "--param", param])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{param}");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains(want), "{param}: {err}");
}

fn detail(result: &Value, name: &str) -> Value {
    result["details"][name].clone()
}

#[test]
fn sw_align_checks_every_score_on_each_kernel_isa_and_alphabet() {
    for kernel in ["inter", "striped"] {
        for isa in ["auto", "avx512bw", "avx2", "scalar"] {
            if isa.starts_with("avx") && !has(isa) {
                // The plan refuses an ISA this CPU lacks (its own test).
                eprintln!(
                    "not run here: sw_align kernel={kernel} isa={isa}: this CPU has no {isa}"
                );
                continue;
            }
            for alphabet in ["protein", "dna"] {
                let params = [
                    &format!("kernel={kernel}") as &str,
                    &format!("isa={isa}"),
                    &format!("alphabet={alphabet}"),
                    "query_count=2",
                    "query_length=120",
                    "target_count=60",
                    "homolog_pct=30",
                ];
                let (code, r, err) = run("sw_align", &params);
                assert_eq!(code, Some(0), "{kernel} {isa} {alphabet}: {err}");
                assert_eq!(detail(&r, "kernel"), kernel);
                assert_eq!(r["validation"]["passed"], true, "{r}");
                let msg = r["validation"]["message"].as_str().unwrap();
                assert!(msg.contains("120 of 120 pairs (all)"), "{msg}");
                assert!(metric(&r, "gcups") > 0.0);
                let cells = detail(&r, "cells_per_pass").as_i64().unwrap();
                assert!(cells > 2 * 60 * 60 * 60, "{cells}");
            }
        }
    }
}

/// Whether this CPU has `feature` (`avx2` or `avx512bw`), as sw_align's
/// kernels need it.
fn has(feature: &str) -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        match feature {
            "avx2" => std::arch::is_x86_feature_detected!("avx2"),
            "avx512bw" => std::arch::is_x86_feature_detected!("avx512bw"),
            _ => false,
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        let _ = feature;
        false
    }
}

#[test]
fn sw_align_when_opening_a_gap_is_cheaper_than_extending() {
    // The striped kernel's lazy-F pass would be inexact: the scalar
    // reference aligns, and the result says so. The inter-sequence kernel
    // has no such pass and stays on SIMD.
    for (kernel, simd) in [("striped", false), ("inter", true)] {
        let (code, r, err) = run(
            "sw_align",
            &[
                &format!("kernel={kernel}") as &str,
                "gap_open=1",
                "gap_extend=3",
                "query_count=1",
                "target_count=40",
            ],
        );
        assert_eq!(code, Some(0), "{err}");
        assert_eq!(r["validation"]["passed"], true, "{r}");
        assert_eq!(
            detail(&r, "isa") != "scalar",
            simd && has("avx2"),
            "{kernel}: {r}"
        );
    }
}

#[test]
fn sw_align_catches_a_wrong_score() {
    let (code, r, _) = run(
        "sw_align",
        &["query_count=1", "target_count=20", "inject_error=1"],
    );
    assert_ne!(code, Some(0));
    assert_eq!(r["validation"]["passed"], false, "{r}");
    let msg = r["validation"]["message"].as_str().unwrap();
    assert!(
        msg.contains("1 of 20 checked scores differ from the scalar reference"),
        "{msg}"
    );
}

#[test]
fn sw_align_aligns_the_users_fasta_files() {
    let queries = ">q1\nMKTAYIAKQRQISFVKSHFSRQLEERLGLIEVQ\n>q2\nACDEFGHIKLMNPQRSTVWY\n";
    let (dir, q) = common::file_in("q.fa", queries);
    let t = dir.path().join("t.fa");
    std::fs::write(
        &t,
        ">t1 planted\nGGGGMKTAYIAKQRQISFVKSHFSRQGGGG\n>t2\nWWWWWWWW\n>t3\nACDEFGHIKLMNPQ\n",
    )
    .unwrap();
    let (code, r, err) = run(
        "sw_align",
        &[
            &format!("queries={}", q.display()),
            &format!("targets={}", t.display()),
        ],
    );
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(detail(&r, "queries"), 2);
    assert_eq!(detail(&r, "targets"), 3);
    // 6 pairs, all checked; cells = (33 + 20) x (30 + 8 + 14).
    assert_eq!(detail(&r, "cells_per_pass"), 53 * 52);
    assert!(
        r["validation"]["message"]
            .as_str()
            .unwrap()
            .contains("6 of 6 pairs (all)")
    );
}

#[test]
fn sw_align_refuses_bad_input() {
    let (_dir, bad) = common::file_in("bad.fa", ">q\nMKT\nAC1GT\n");
    let (code, r, _) = run("sw_align", &[&format!("queries={}", bad.display())]);
    assert_ne!(code, Some(0));
    let reason = r["error"].as_str().unwrap_or_default().to_string() + &r.to_string();
    assert!(
        reason.contains("bad.fa:3: '1' is not a residue letter"),
        "{r}"
    );

    for (param, want) in [
        ("alphabet=rna", "'rna' is not one of protein, dna"),
        ("gap_open=200", "gap_open' must be from 0 to 127"),
        ("targets=/nonexistent/t.fa", "parameter 'targets'"),
    ] {
        refused("sw_align", param, want);
    }
}

/// Whether a bioinformatics tool is on PATH; scripts/test installs them,
/// so only a bare `cargo test` elsewhere skips the comparison with it.
fn have(tool: &str) -> bool {
    let found = std::process::Command::new(tool)
        .arg("--version")
        .output()
        .is_ok();
    if !found {
        eprintln!("{tool} is not installed (scripts/test installs it): comparison skipped");
    }
    found
}

/// The tiny data every pipeline test uses: a 40 kb genome at 6x.
const TINY: [&str; 2] = ["genome_kb=40", "coverage=6"];

/// Runs `bench` on the tiny data, exported to `data`, its output file
/// `key` at `out`; it must pass its validation: its result.
fn tiny_pipeline(bench: &str, data: &std::path::Path, key: &str, out: &std::path::Path) -> Value {
    let export = format!("export={}", data.display());
    let output = format!("{key}={}", out.display());
    let (code, r, err) = run(bench, &[TINY[0], TINY[1], &export, &output]);
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(r["validation"]["passed"], true, "{r}");
    r
}

#[test]
fn kmer_count_counts_what_jellyfish_counts() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let histo = dir.path().join("warpt.histo");
    let r = tiny_pipeline("kmer_count", &data, "histo", &histo);
    assert!(metric(&r, "mbases_per_s") > 0.0);
    // 40 kb at 6x in 150 bp reads: 1600 reads of 120 31-mers each (the
    // simulator writes no N into a generated genome).
    assert_eq!(detail(&r, "reads"), 1600);
    assert_eq!(detail(&r, "kmers"), 1600 * 120);
    // Every genome k-mer is seen at 6x (bar a few in repeats), and errors
    // add new ones: more distinct k-mers than the genome has, fewer
    // than the reads hold.
    let distinct = metric(&r, "distinct_kmers");
    assert!((38_000.0..1600.0 * 120.0).contains(&distinct), "{distinct}");
    if !have("jellyfish") {
        return;
    }
    let table = dir.path().join("jf.jf");
    let status = std::process::Command::new("jellyfish")
        .args(["count", "-m", "31", "-C", "-s", "1M", "-o"])
        .arg(&table)
        .arg(data.join("reads_1.fq"))
        .arg(data.join("reads_2.fq"))
        .status()
        .unwrap();
    assert!(status.success());
    let theirs = std::process::Command::new("jellyfish")
        .arg("histo")
        .arg(&table)
        .output()
        .unwrap();
    assert_eq!(
        String::from_utf8_lossy(&theirs.stdout),
        std::fs::read_to_string(&histo).unwrap()
    );
}

#[test]
fn kmer_count_reads_the_users_fastq_at_any_width() {
    // ACGT repeated: 4 distinct canonical 1-mers collapse to 2 (A/T, C/G);
    // a palindrome-rich read checks the canonical rule at odd and wide k.
    let (_dir, fq) = common::file_in(
        "r.fq",
        "@r1\nACGTACGTACGTNACGTTTT\n+\nIIIIIIIIIIIIIIIIIIII\n@r2\nGGGGGGGGGGGGGGGGGGGGGGGGGGGGGGGGGGGGGGGGGGGGGGGGGGGGGGGGGGGGGGGGGGGG\n+\nIIIIIIIIIIIIIIIIIIIIIIIIIIIIIIIIIIIIIIIIIIIIIIIIIIIIIIIIIIIIIIIIIIII\n",
    );
    for (k, kmers, distinct) in [(1, 87, 2), (5, 75, 6), (63, 6, 1)] {
        let (code, r, err) = run(
            "kmer_count",
            &[&format!("reads={}", fq.display()), &format!("k={k}")],
        );
        assert_eq!(code, Some(0), "k={k}: {err}");
        assert_eq!(r["validation"]["passed"], true, "{r}");
        assert_eq!(detail(&r, "kmers"), kmers, "k={k}");
        assert_eq!(metric(&r, "distinct_kmers"), distinct as f64, "k={k}");
    }
}

#[test]
fn kmer_count_catches_a_wrong_count() {
    let (code, r, _) = run("kmer_count", &[TINY[0], TINY[1], "inject_error=1"]);
    assert_ne!(code, Some(0));
    let msg = r["validation"]["message"].as_str().unwrap();
    assert!(
        msg.contains("1 of 4096 sampled k-mer counts differ from a HashMap recount")
            && msg.contains("the histogram sums to 192001 k-mers, the reads hold 192000"),
        "{msg}"
    );
}

#[test]
fn pipeline_input_errors_name_the_file_line_and_reason() {
    let (dir, bad) = common::file_in("bad.fq", "@r1\nACGT\n+\nIIII\nr2\nACGT\n+\nIIII\n");
    let (code, r, _) = run("kmer_count", &[&format!("reads={}", bad.display())]);
    assert_ne!(code, Some(0));
    assert!(
        r["error_message"].as_str().unwrap().contains("bad.fq:5"),
        "{r}"
    );

    let one = dir.path().join("one.fq");
    let two = dir.path().join("two.fq");
    std::fs::write(&one, "@a/1\nACGT\n+\nIIII\n@b/1\nACGT\n+\nIIII\n").unwrap();
    std::fs::write(&two, "@a/2\nACGT\n+\nIIII\n").unwrap();
    let (code, r, _) = run(
        "kmer_count",
        &[
            &format!("reads={}", one.display()),
            &format!("reads2={}", two.display()),
        ],
    );
    assert_ne!(code, Some(0));
    let msg = r["error_message"].as_str().unwrap();
    assert!(
        msg.contains("one.fq has 2 reads but") && msg.contains("two.fq has 1"),
        "{msg}"
    );

    let lone_mates = format!("reads2={}", two.display());
    for (param, want) in [
        ("k=64", "'k' must be from 1 to 63"),
        ("k=0", "'k' must be from 1 to 63"),
        (lone_mates.as_str(), "second mates need reads="),
        ("reads=/nonexistent/r.fq", "parameter 'reads'"),
        ("insert_size=100", "must be at least read_length"),
    ] {
        refused("kmer_count", param, want);
    }
}

#[test]
fn read_map_places_reads_at_their_origin_and_samtools_reads_its_sam() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let sam = dir.path().join("out.sam");
    let r = tiny_pipeline("read_map", &data, "sam", &sam);
    assert!(metric(&r, "reads_per_s") > 0.0);
    // minimap2 -ax sr places 100% of the default data (1 Mb, 20x) within
    // 10 bp; on 40 kb warpt does too bar a read or two, and what it
    // places with MAPQ >= 30 is right. The bounds leave room for a read
    // in a repeat copy, not for a mapper that loses a strand or a mate.
    let correct = metric(&r, "mapped_correct_pct");
    assert!(correct >= 99.0, "{correct}");
    let precise = detail(&r, "precision_mapq30").as_f64().unwrap();
    assert!(precise >= 99.9, "{precise}");
    assert!(detail(&r, "proper_pair_pct").as_f64().unwrap() >= 98.0);
    let text = std::fs::read_to_string(&sam).unwrap();
    assert!(text.starts_with("@HD\tVN:1.6"), "{}", &text[..80]);
    assert!(text.contains("@SQ\tSN:sim\tLN:40000\n"), "{}", &text[..200]);
    assert_eq!(text.lines().filter(|l| !l.starts_with('@')).count(), 1600);
    if have("samtools") {
        // samtools parses every record, and counts what warpt says.
        let out = succeeded(
            std::process::Command::new("samtools")
                .args(["flagstat", "-O", "json"])
                .arg(&sam),
        );
        let stats: Value = serde_json::from_slice(&out.stdout).unwrap();
        let passed = &stats["QC-passed reads"];
        assert_eq!(passed["total"], 1600, "{stats}");
        assert_eq!(passed["read1"], 800);
        let mapped = passed["mapped"].as_f64().unwrap();
        let want = detail(&r, "mapped_pct").as_f64().unwrap() * 16.0;
        assert!((mapped - want).abs() < 0.5, "{mapped} vs {want}");
        // And sorts and indexes it, which checks positions against the
        // @SQ lengths.
        let bam = dir.path().join("out.bam");
        succeeded(
            std::process::Command::new("samtools")
                .args(["sort", "-o"])
                .arg(&bam)
                .arg(&sam),
        );
        succeeded(
            std::process::Command::new("samtools")
                .arg("index")
                .arg(&bam),
        );
    }

    // The same data as the user's files: no truth, so no accuracy.
    let (code, r, err) = run(
        "read_map",
        &[
            &format!("reference={}", data.join("reference.fa").display()),
            &format!("reads={}", data.join("reads_1.fq").display()),
            &format!("reads2={}", data.join("reads_2.fq").display()),
        ],
    );
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(r["validation"]["passed"], true, "{r}");
    assert!(
        detail(&r, "mapped_correct_pct")
            .as_str()
            .unwrap()
            .starts_with("unavailable")
    );
    assert!(detail(&r, "mapped_pct").as_f64().unwrap() >= 99.0);
}

#[test]
fn read_map_catches_a_misplaced_alignment() {
    let (code, r, _) = run("read_map", &[TINY[0], TINY[1], "inject_error=1"]);
    assert_ne!(code, Some(0));
    let msg = r["validation"]["message"].as_str().unwrap();
    assert!(
        msg.contains("1 of ") && msg.contains("alignments do not match the reference"),
        "{msg}"
    );
}

#[test]
fn read_map_needs_a_reference_for_the_users_reads() {
    let (_dir, fq) = common::file_in("r.fq", "@r1\nACGTACGTAC\n+\nIIIIIIIIII\n");
    let (code, r, err) = run("read_map", &[&format!("reads={}", fq.display())]);
    assert_ne!(code, Some(0));
    let all = format!("{r}{err}");
    assert!(all.contains("reference"), "{all}");
}

#[test]
fn variant_call_finds_the_planted_variants_and_bcftools_reads_its_vcf() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let vcf = dir.path().join("calls.vcf");
    let (code, r, err) = run(
        "variant_call",
        &[
            "genome_kb=100",
            "coverage=20",
            &format!("export={}", data.display()),
            &format!("vcf={}", vcf.display()),
        ],
    );
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(r["validation"]["passed"], true, "{r}");
    assert!(metric(&r, "variants_per_s") > 0.0);
    // On the default data (1 Mb, 20x) warpt's F1 is 99.4% (precision
    // 100%) and bcftools mpileup + call's 99.6% on the same alignments;
    // on 100 kb one missed variant of the ~120 planted costs 0.4 points,
    // so 95 leaves room for a few, not for a caller that loses indels
    // (a sixth of the truth) or calls sequencing errors.
    let (precision, recall, f1) = (
        metric(&r, "precision"),
        metric(&r, "recall"),
        metric(&r, "f1"),
    );
    assert!(f1 >= 95.0 && precision >= 97.0, "{precision} {recall} {f1}");
    assert!(detail(&r, "indels").as_i64().unwrap() >= 5, "{r}");
    let calls = detail(&r, "calls").as_i64().unwrap();
    let text = std::fs::read_to_string(&vcf).unwrap();
    assert_eq!(
        text.lines().filter(|l| !l.starts_with('#')).count() as i64,
        calls
    );
    if have("bcftools") {
        // bcftools parses it, and every REF matches the reference (-c e
        // makes a mismatch an error).
        let out = succeeded(
            std::process::Command::new("bcftools")
                .args(["norm", "-c", "e", "-f"])
                .arg(data.join("reference.fa"))
                .arg(&vcf),
        );
        let normalised = String::from_utf8_lossy(&out.stdout);
        assert_eq!(
            normalised.lines().filter(|l| !l.starts_with('#')).count() as i64,
            calls
        );
    }
}

#[test]
fn variant_call_catches_a_wrong_pileup_column() {
    let (code, r, _) = run(
        "variant_call",
        &["genome_kb=100", "coverage=10", "inject_error=1"],
    );
    assert_ne!(code, Some(0));
    let msg = r["validation"]["message"].as_str().unwrap();
    assert!(
        msg.contains("1 of ") && msg.contains("sampled pileup columns differ from a recount"),
        "{msg}"
    );
}

#[test]
fn assembly_rebuilds_the_genome_without_misjoins() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let contigs = dir.path().join("contigs.fa");
    let (code, r, err) = run(
        "assembly",
        &[
            "genome_kb=40",
            "coverage=20",
            &format!("export={}", data.display()),
            &format!("contigs={}", contigs.display()),
        ],
    );
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(r["validation"]["passed"], true, "{r}");
    assert!(metric(&r, "mbases_per_s") > 0.0);
    // The pairs carry walks across repeats: this 40 kb genome comes out
    // in one contig of 39.8 kb with no misjoin (22 contigs, N50 4.7 kb,
    // from the same reads without their pairs, below).
    let fraction = metric(&r, "genome_fraction_pct");
    assert!(fraction >= 95.0, "{fraction}");
    assert_eq!(metric(&r, "misassemblies"), 0.0, "{r}");
    let n50 = metric(&r, "n50");
    assert!(n50 >= 20_000.0, "{n50}");
    let insert = detail(&r, "insert_median").as_i64().unwrap();
    assert!(
        (360..=440).contains(&insert),
        "insert {insert} of 400 simulated"
    );
    assert!(detail(&r, "branches_by_pairs").as_i64().unwrap() > 0, "{r}");
    let text = std::fs::read_to_string(&contigs).unwrap();
    assert_eq!(
        text.matches('>').count() as i64,
        detail(&r, "contigs").as_i64().unwrap()
    );

    // The user's reads alone: no reference, no genome fraction.
    let (code, r, err) = run(
        "assembly",
        &[
            &format!("reads={}", data.join("reads_1.fq").display()),
            &format!("reads2={}", data.join("reads_2.fq").display()),
        ],
    );
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(detail(&r, "n50").as_f64().unwrap(), n50);
    assert!(
        detail(&r, "genome_fraction_pct")
            .as_str()
            .unwrap()
            .starts_with("unavailable")
    );

    // First mates and second mates in one file, as single-end reads: the
    // same bases, no insert, no walk across a repeat.
    let single_end = dir.path().join("single.fq");
    let both = [
        std::fs::read(data.join("reads_1.fq")).unwrap(),
        std::fs::read(data.join("reads_2.fq")).unwrap(),
    ]
    .concat();
    std::fs::write(&single_end, both).unwrap();
    let (code, r, err) = run(
        "assembly",
        &[
            &format!("reads={}", single_end.display()),
            &format!("reference={}", data.join("reference.fa").display()),
        ],
    );
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(detail(&r, "insert_median").as_i64(), Some(0));
    let single = metric(&r, "n50");
    assert!(single * 3.0 < n50, "single-end N50 {single} against {n50}");
}

#[test]
fn assembly_catches_a_contig_the_reads_do_not_support() {
    let (code, r, _) = run(
        "assembly",
        &["genome_kb=20", "coverage=15", "inject_error=1"],
    );
    assert_ne!(code, Some(0));
    let msg = r["validation"]["message"].as_str().unwrap();
    assert!(
        msg.contains("sampled contig k-mers are not solid in the reads"),
        "{msg}"
    );
}

#[test]
fn assembly_refuses_an_even_or_long_k() {
    for (param, want) in [
        ("k=30", "'k' must be odd"),
        ("k=33", "'k' must be from 15 to 31"),
        ("min_count=0", "'min_count' must be from 1"),
    ] {
        refused("assembly", param, want);
    }
}

#[test]
fn a_bad_reference_or_one_too_large_fails_with_the_reason() {
    let dir = tempfile::tempdir().unwrap();
    let fa = dir.path().join("ref.fa");
    let fq = dir.path().join("r.fq");
    std::fs::write(&fa, ">chr\nACGTACGT\nACG7T\n").unwrap();
    std::fs::write(&fq, "@r1\nACGTACGTAC\n+\nIIIIIIIIII\n").unwrap();
    let (code, r, _) = run(
        "read_map",
        &[
            &format!("reference={}", fa.display()),
            &format!("reads={}", fq.display()),
        ],
    );
    assert_ne!(code, Some(0));
    let msg = r["error_message"].as_str().unwrap();
    assert!(msg.contains("ref.fa:3"), "{msg}");

    // 4 Gb would need 160 GB: refused before anything is generated.
    let (code, r, _) = run("kmer_count", &["genome_kb=4000000"]);
    assert_ne!(code, Some(0));
    let msg = r["error_message"].as_str().unwrap();
    assert!(msg.contains("memory"), "{msg}");
}
