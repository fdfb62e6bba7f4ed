//! warpt-userbench as a library: the tree of benchmarks shipped in
//! `examples/harness` as discovery reads it (what `warpt harness` would
//! run there).

#![allow(clippy::unwrap_used)] // tests: a panic is the failure report

use std::path::Path;

use warpt_userbench::discover::discover;

#[test]
fn the_example_tree_is_three_chapters_of_pairs_and_a_kernel() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/harness");
    let m = discover(&root, &[]).unwrap();
    let chapters: Vec<&str> = m.chapters.iter().map(|c| c.name.as_str()).collect();
    for want in ["ch1_loops", "ch2_containers", "ch3_numpy"] {
        assert!(chapters.contains(&want), "{chapters:?}");
    }
    let loops = m.chapters.iter().find(|c| c.name == "ch1_loops").unwrap();
    let sum = loops.pairs.iter().find(|p| p.example == "sum").unwrap();
    assert!(sum.baseline.ends_with("baseline_sum.py"));
    let variants: Vec<_> = sum
        .optimized
        .iter()
        .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
        .collect();
    assert_eq!(variants, ["optimized_sum.py", "optimized_sum_formula.py"]);
    for p in m.chapters.iter().flat_map(|c| &c.pairs) {
        assert!(p.baseline.is_file() && !p.optimized.is_empty(), "{p:?}");
    }
    assert!(
        m.kernels.iter().any(|k| k.name == "prefix_sum"),
        "{:?}",
        m.kernels
    );
    assert_eq!(
        m.pair_count(),
        m.chapters.iter().map(|c| c.pairs.len()).sum::<usize>()
    );
    let text = m.describe(false);
    assert!(
        text.contains("chapters") && text.contains("kernel"),
        "{text}"
    );
}
