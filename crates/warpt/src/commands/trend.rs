//! `warpt results trend`: a metric's history on one machine with its
//! change points, for trend tracking and nightly regression alerts.

use anyhow::Result;
use warpt_report::history as history_view;
use warpt_report::trend;

use crate::Outcome;
use crate::cli::ResultsTrendArgs;
use warpt_report::terminal as output;

/// Prints the series and its change points; `Failures` (exit 1) when the
/// last step is in the bad direction.
pub fn run(args: &ResultsTrendArgs) -> Result<Outcome> {
    let rows = crate::stored::series(
        args.store.store.as_deref(),
        &crate::stored::SeriesRequest {
            benchmark: &args.benchmark,
            metric: &args.metric,
            suite: args.suite.as_deref(),
            tags: &args.tags,
            machine: args.machine.as_deref(),
        },
    )?;
    let values: Vec<f64> = rows.iter().map(|r| r.value).collect();
    let steps = trend::change_points(&values);
    let first = &rows[0];
    let latest_regressed =
        history_view::latest_regression(&steps, first.higher_is_better, 0.0).is_some();
    if args.json {
        let json = history_view::trend_json(&rows, &steps, &args.benchmark, &args.metric);
        println!("{}", serde_json::to_string_pretty(&json)?);
    } else {
        let mut t = output::table(&["run", "started", "value", "step"]);
        for row in history_view::trend_rows(&rows, &steps) {
            t.add_row(row.to_vec());
        }
        println!("{t}");
        println!(
            "{}/{} {} [{}] on {}: {} run(s), {} change point(s); {}",
            first.suite,
            args.benchmark,
            args.metric,
            warpt_model::tag_label(&first.tags),
            first.hostname,
            rows.len(),
            steps.len(),
            trend::METHOD
        );
        if latest_regressed {
            println!("the latest run sits after a regression");
        }
    }
    Ok(Outcome::success_if(!latest_regressed))
}
