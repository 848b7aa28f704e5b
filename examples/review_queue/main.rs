//! Human review with suspension: an extraction pipeline pauses on a low-confidence
//! result, the process exits, and a later process — sharing only the SQLite file —
//! resumes it with the reviewer's answer.
//!
//! ```text
//! cargo run --example review_queue -- start  --db /tmp/review.db
//! cargo run --example review_queue -- resume --db /tmp/review.db --label receipt
//! ```
//!
//! `start` runs `extract` (one LLM call to an embedded OpenAI-compatible server),
//! then `gate` suspends awaiting the signal `review:doc-1`; the paused record lands in
//! the SQLite database. `resume` finds the paused invocation by its signal id,
//! resumes it with `{"reviewed_label": ...}` and runs `publish`: `extract` does not
//! run again, so the second process sends no LLM request (each run prints how many
//! its server received).

mod mock;
mod pipeline;

use openarmature::graph::BoxError;

fn arg(args: &[String], name: &str) -> Option<String> {
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1))
        .cloned()
}

#[tokio::main]
async fn main() -> Result<(), BoxError> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let command = args.first().cloned().unwrap_or_else(|| "start".into());
    let db = arg(&args, "--db").unwrap_or_else(|| {
        std::env::temp_dir()
            .join("openarmature-review.db")
            .display()
            .to_string()
    });
    let label = arg(&args, "--label").unwrap_or_else(|| "invoice".into());
    let report = pipeline::run(&command, &db, &label).await?;
    for line in &report.lines {
        println!("{line}");
    }
    if let Some(label) = &report.published {
        println!("published: {label}");
    }
    println!("llm requests: {}", report.llm_requests);
    Ok(())
}
