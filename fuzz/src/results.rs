//! Result files from other tools and from warpt itself, as `results
//! import` and `linpack_external` read them.

use warpt_import::read_any;

use crate::scratch;

/// Any file `results import` takes (hyperfine, Google Benchmark,
/// pytest-benchmark JSON, warpt's own export), recognised from its content
/// or read as the format the selector byte forces. Property: an imported
/// run holds only finite figures (a stored run must stay readable).
pub fn import_file(data: &[u8]) {
    let Some((&which, rest)) = data.split_first() else {
        return;
    };
    let forced = [
        None,
        Some("warpt"),
        Some("hyperfine"),
        Some("gbench"),
        Some("pytest-benchmark"),
    ];
    let path = scratch::file("results.json", rest);
    if let Ok((_, run)) = read_any(&path, forced[usize::from(which) % forced.len()]) {
        assert!(run.non_finite().is_none(), "{:?}", run.non_finite());
        // What `results import` does next: the run as JSON, read back.
        let text = serde_json::to_string(&run).expect("a run serialises");
        warpt_model::load_suite_run(&text).expect("an imported run reads back");
    }
}

/// A criterion directory: `benchmark.json`, `estimates.json` and
/// `sample.json` of one benchmark, separated by NUL bytes.
pub fn import_criterion(data: &[u8]) {
    let (bench, rest) = crate::split_nul(data);
    let (estimates, sample) = crate::split_nul(rest);
    scratch::file("criterion/group/case/new/benchmark.json", bench);
    scratch::file("criterion/group/case/new/estimates.json", estimates);
    scratch::file("criterion/group/case/new/sample.json", sample);
    let dir = scratch::dir().join("criterion");
    if let Ok((_, run)) = read_any(&dir, None) {
        assert!(run.non_finite().is_none(), "{:?}", run.non_finite());
    }
}

/// HPL's output (xhpl's stdout, hpcc's `hpccoutf.txt`), expecting as many
/// results as the first byte says. Property: a parse holds exactly that
/// many results, each with finite figures.
pub fn hpl_output(data: &[u8]) {
    let Some((&expected, rest)) = data.split_first() else {
        return;
    };
    let expected = usize::from(expected % 8);
    let text = String::from_utf8_lossy(rest);
    if let Ok(results) = warpt_linpack::hpl_io::parse(&text, expected) {
        assert_eq!(results.len(), expected);
        for r in &results {
            assert!(
                r.time_s.is_finite() && r.gflops.is_finite() && r.residual.is_finite(),
                "{r:?}"
            );
        }
    }
    let _ = warpt_linpack::hpl_io::versions(&text);
}
