//! Suspension §1's load-bearing case: suspend in one OS process, resume in another,
//! sharing nothing but the SQLite file. The test re-runs its own binary as the two
//! child processes (each runs the `review_queue` example's pipeline with its own
//! embedded LLM server, counting the requests it receives).

#[path = "../../examples/review_queue/mock.rs"]
#[allow(dead_code)]
mod mock;
#[path = "../../examples/review_queue/pipeline.rs"]
mod pipeline;

const ROLE: &str = "OPENARMATURE_REVIEW_CHILD";
const DB: &str = "OPENARMATURE_REVIEW_DB";

/// The child side: runs one command and prints its report. A no-op in the parent.
#[tokio::test]
async fn review_child() {
    let (Ok(command), Ok(db)) = (std::env::var(ROLE), std::env::var(DB)) else {
        return;
    };
    let report = pipeline::run(&command, &db, "receipt")
        .await
        .expect("child run");
    println!(
        "CHILD published={} llm_requests={} ({} lines)",
        report.published.unwrap_or_default(),
        report.llm_requests,
        report.lines.len()
    );
}

fn child(command: &str, db: &std::path::Path) -> (String, usize) {
    let out = crate::rerun("suspend_across_processes::review_child")
        .env(ROLE, command)
        .env(DB, db)
        .output()
        .expect("spawn child");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "child {command} failed: {stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let line = stdout
        .lines()
        .find(|l| l.starts_with("CHILD "))
        .unwrap_or_else(|| panic!("no report from child {command}: {stdout}"));
    let field = |name: &str| {
        line.split_whitespace()
            .find_map(|kv| kv.strip_prefix(name))
            .unwrap_or_default()
            .to_owned()
    };
    (
        field("published="),
        field("llm_requests=").parse().expect("count"),
    )
}

#[test]
fn a_run_suspended_in_one_process_resumes_in_another() {
    let dir = std::env::temp_dir().join(format!("oa-review-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let db = dir.join("review.db");
    let _ = std::fs::remove_file(&db);

    let (published, first_requests) = child("start", &db);
    assert_eq!(
        published, "",
        "the first process suspends before publishing"
    );
    assert_eq!(first_requests, 1, "extract calls the model once");

    let (published, second_requests) = child("resume", &db);
    assert_eq!(
        published, "receipt",
        "the reviewer's label is merged and published"
    );
    assert_eq!(
        second_requests, 0,
        "the completed extract node did not run again"
    );

    // The record is spent: a second signal finds nothing to resume.
    let (published, third_requests) = child("resume", &db);
    assert_eq!((published.as_str(), third_requests), ("", 0));
    let _ = std::fs::remove_dir_all(&dir);
}
