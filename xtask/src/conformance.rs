//! `cargo xtask conformance`: run every fixture case, deferred ones included.
//!
//! Spec: conformance-adapter §3–§9 (the adapter's `suite` lists, runs and judges the
//! cases, the same code the `cargo test` binary runs; this is the report).

use std::collections::BTreeMap;
use std::ffi::OsStr;
use std::path::Path;
use std::process::ExitCode;
use std::time::Instant;

use openarmature_conformance::deferrals::{Deferrals, CONFIG_FILE};
use openarmature_conformance::discovery::{discover, workspace_root, Discovery, SPEC_DIR_ENV};
use openarmature_conformance::suite::{
    deferred_pass_hint, list_jobs, run_jobs, stale_entries, tally, workers, Counts, Job, Verdict,
};
use openarmature_conformance::{CaseId, Failure};

/// Lines of a failure message printed without `--verbose`.
const MAX_LINES: usize = 12;
/// Characters of a failure message printed without `--verbose`.
const MAX_CHARS: usize = 1500;

/// Parsed command line of `cargo xtask conformance`.
#[derive(Debug, Default)]
pub struct Options {
    capability: Option<String>,
    list: bool,
    verbose: bool,
    markdown: bool,
    jobs: Option<usize>,
}

impl Options {
    /// Parses the arguments after `conformance`.
    pub fn parse(args: &[String]) -> Result<Options, String> {
        let mut options = Options::default();
        let mut args = args.iter();
        while let Some(arg) = args.next() {
            match arg.as_str() {
                "--list" => options.list = true,
                "-v" | "--verbose" => options.verbose = true,
                "--markdown" => options.markdown = true,
                "-j" | "--jobs" => {
                    let value = args.next().ok_or("`--jobs` needs a number")?;
                    options.jobs = Some(parse_jobs(value)?);
                }
                other if other.starts_with("--jobs=") => {
                    options.jobs = Some(parse_jobs(&other["--jobs=".len()..])?);
                }
                other if other.starts_with('-') => {
                    return Err(format!("unknown option `{other}` for `conformance`"));
                }
                other => {
                    if let Some(first) = &options.capability {
                        return Err(format!(
                            "one capability at a time (got `{first}` and `{other}`)"
                        ));
                    }
                    options.capability = Some(other.to_owned());
                }
            }
        }
        Ok(options)
    }
}

fn parse_jobs(value: &str) -> Result<usize, String> {
    match value.parse::<usize>() {
        Ok(n) if n > 0 => Ok(n),
        _ => Err(format!("`--jobs` needs a positive number, got `{value}`")),
    }
}

/// The loaded `conformance.toml`, the fixtures found and the worker count.
pub(crate) struct Suite {
    pub(crate) deferrals: Deferrals,
    pub(crate) found: Discovery,
    pub(crate) workers: usize,
}

/// Loads `conformance.toml` and discovers the fixtures (of `capability`, or all),
/// printing discovery warnings. `Err` carries the exit code of a misconfiguration.
pub(crate) fn prepare(capability: Option<&str>, jobs: Option<usize>) -> Result<Suite, ExitCode> {
    let root = workspace_root();
    let config_path = root.join(CONFIG_FILE);
    let deferrals = match Deferrals::load(&config_path) {
        Ok(deferrals) => deferrals,
        Err(err) => {
            eprintln!("error: cannot load {CONFIG_FILE}: {err}");
            return Err(ExitCode::FAILURE);
        }
    };
    let found = discover(&root, capability);
    for warning in &found.warnings {
        eprintln!("warning: {warning}");
    }
    if found.upstream.is_misconfigured() {
        eprintln!("error: {SPEC_DIR_ENV} must name an openarmature-spec checkout");
        return Err(ExitCode::FAILURE);
    }
    if found.upstream_path().is_none() && in_ci() {
        eprintln!(
            "error: upstream conformance fixtures are required in CI ($CI is set); set \
             {SPEC_DIR_ENV} or provide ../shared/openarmature-spec"
        );
        return Err(ExitCode::FAILURE);
    }
    if let Some(cap) = capability {
        if found.files.is_empty() && !deferrals.capabilities.contains_key(cap) {
            let known: Vec<&str> = deferrals.capabilities.keys().map(String::as_str).collect();
            eprintln!(
                "error: unknown capability `{cap}` (known: {})",
                known.join(", ")
            );
            return Err(ExitCode::from(2));
        }
    }
    Ok(Suite {
        deferrals,
        found,
        workers: workers(jobs),
    })
}

/// Runs the command; the exit code says whether the suite is green.
pub fn run(options: &Options) -> ExitCode {
    let capability = options.capability.as_deref();
    let suite = match prepare(capability, options.jobs) {
        Ok(suite) => suite,
        Err(code) => return code,
    };
    let (deferrals, found, workers) = (&suite.deferrals, &suite.found, suite.workers);

    let jobs = list_jobs(&found.files, workers);
    if options.list {
        return print_list(&jobs, deferrals);
    }

    let upstream = found
        .upstream_path()
        .map_or_else(|| "not found".to_owned(), |p| p.display().to_string());
    println!(
        "conformance: spec release {}, upstream fixtures: {upstream}",
        deferrals.spec.release
    );
    println!(
        "running {} cases from {} fixture files on {workers} worker(s)",
        jobs.len(),
        found.files.len()
    );

    let started = Instant::now();
    let outcomes = run_jobs(&jobs, workers);
    let elapsed = started.elapsed();

    let per_capability = tally(deferrals, capability, &jobs, &outcomes);
    let mut dishonest = 0usize;
    let mut failures = 0usize;

    for (job, outcome) in jobs.iter().zip(&outcomes) {
        match Verdict::of(outcome, deferrals.reason_for(&job.id)) {
            Verdict::Passed | Verdict::Skipped => {}
            Verdict::Failed(message) => {
                failures += 1;
                print_failure(&job.id, &job.path, message, options.verbose);
            }
            Verdict::DeferredPasses(reason) => {
                dishonest += 1;
                println!("\nFAILED {}", job.id);
                println!(
                    "    {}; deferral reason was: {reason}",
                    deferred_pass_hint(deferrals, &job.id)
                );
            }
        }
    }

    let stale = stale_entries(
        found.upstream_path().is_some(),
        &found.files,
        &jobs,
        deferrals,
        capability,
    );
    for entry in &stale {
        println!(
            "\nerror: {CONFIG_FILE}: [[deferred]] fixture = \"{}\" matches no fixture case; \
             remove or fix it",
            entry
        );
    }

    println!();
    if options.markdown {
        print_markdown_table(&per_capability);
    } else {
        print_table(&per_capability);
    }

    let mut total = Counts::default();
    for counts in per_capability.values() {
        total.add(counts);
    }
    println!(
        "ran in {:.1}s; {failures} failing case(s), {dishonest} deferred case(s) now passing, {} \
         stale deferral(s)",
        elapsed.as_secs_f64(),
        stale.len()
    );
    println!(
        "{} passed, {} failed, {} skipped",
        total.passed, total.failed, total.skipped
    );

    if total.failed > 0 || !stale.is_empty() {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}

/// `--list`: case ids on stdout, listing errors on stderr.
fn print_list(jobs: &[Job], deferrals: &Deferrals) -> ExitCode {
    let mut errors = 0usize;
    for job in jobs {
        match (&job.listing_error, deferrals.reason_for(&job.id)) {
            (Some(error), _) => {
                errors += 1;
                eprintln!("error: {error}");
            }
            (None, Some(_)) => println!("{}  (deferred)", job.id),
            (None, None) => println!("{}", job.id),
        }
    }
    if errors > 0 {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}

/// A failed case: its id, its file and why (`<kind>: <message>`, truncated
/// unless `verbose`).
fn print_failure(id: &CaseId, path: &Path, failure: &Failure, verbose: bool) {
    println!("\nFAILED {id} ({})", failure.kind());
    println!("    file: {}", path.display());
    let message = failure.to_string();
    let text = if verbose {
        message
    } else {
        truncate(&message, MAX_LINES, MAX_CHARS)
    };
    for line in text.lines() {
        println!("    {line}");
    }
}

/// Keeps at most `max_lines` lines and `max_chars` characters, saying what was cut.
fn truncate(message: &str, max_lines: usize, max_chars: usize) -> String {
    let total_lines = message.lines().count();
    let mut out = String::new();
    let mut chars = 0usize;
    let mut lines = 0usize;
    for line in message.lines() {
        if lines == max_lines || chars >= max_chars {
            break;
        }
        let room = max_chars - chars;
        let kept: String = line.chars().take(room).collect();
        chars += kept.chars().count();
        if lines > 0 {
            out.push('\n');
        }
        out.push_str(&kept);
        lines += 1;
        if kept.len() < line.len() {
            out.push_str(" …");
            break;
        }
    }
    if lines < total_lines {
        out.push_str(&format!(
            "\n… {} more line(s); rerun with --verbose for the full message",
            total_lines - lines
        ));
    } else if out.ends_with(" …") {
        out.push_str("\n… truncated; rerun with --verbose for the full message");
    }
    out
}

fn print_table(per_capability: &BTreeMap<String, Counts>) {
    let headers = [
        "capability",
        "passed",
        "failed",
        "skipped (deferred)",
        "total",
    ];
    let mut rows: Vec<[String; 5]> = per_capability
        .iter()
        .map(|(name, c)| row(name, c))
        .collect();
    let mut total = Counts::default();
    for counts in per_capability.values() {
        total.add(counts);
    }
    rows.push(row("total", &total));

    let mut widths = headers.map(str::len);
    for r in &rows {
        for (w, cell) in widths.iter_mut().zip(r) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let line = |cells: [&str; 5]| {
        let mut out = format!("{:<w$}", cells[0], w = widths[0]);
        for (cell, w) in cells.iter().zip(widths).skip(1) {
            out.push_str(&format!(" | {cell:>w$}"));
        }
        out
    };
    println!("{}", line(headers));
    let rule: Vec<String> = widths.iter().map(|w| "-".repeat(*w)).collect();
    println!("{}", rule.join("-+-"));
    let last = rows.len().saturating_sub(1);
    for (i, r) in rows.iter().enumerate() {
        if i == last {
            println!("{}", rule.join("-+-"));
        }
        println!(
            "{}",
            line([&r[0], &r[1], &r[2], &r[3], &r[4]].map(String::as_str))
        );
    }
}

/// `--markdown`: the same table as a GitHub-flavoured Markdown table (for the README).
fn print_markdown_table(per_capability: &BTreeMap<String, Counts>) {
    println!("| capability | passed | failed | skipped (deferred) | total cases |");
    println!("|---|---|---|---|---|");
    for (name, c) in per_capability {
        let [name, passed, failed, skipped, total] = row(name, c);
        println!("| {name} | {passed} | {failed} | {skipped} | {total} |");
    }
}

fn row(name: &str, c: &Counts) -> [String; 5] {
    [
        name.to_owned(),
        c.passed.to_string(),
        c.failed.to_string(),
        c.skipped.to_string(),
        c.total().to_string(),
    ]
}

/// True when `$CI` is set to something other than empty, `0` or `false`.
pub(crate) fn in_ci() -> bool {
    std::env::var_os("CI")
        .is_some_and(|v| !(v.is_empty() || v == OsStr::new("0") || v.eq_ignore_ascii_case("false")))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strings(args: &[&str]) -> Vec<String> {
        args.iter().map(|s| (*s).to_owned()).collect()
    }

    #[test]
    fn parses_options() -> Result<(), String> {
        let o = Options::parse(&strings(&["graph-engine", "--list", "-j", "3", "-v"]))?;
        assert_eq!(o.capability.as_deref(), Some("graph-engine"));
        assert!(o.list && o.verbose && !o.markdown);
        assert!(Options::parse(&strings(&["--markdown"]))?.markdown);
        assert_eq!(o.jobs, Some(3));
        assert_eq!(Options::parse(&strings(&["--jobs=2"]))?.jobs, Some(2));
        assert!(Options::parse(&strings(&["--nope"])).is_err());
        assert!(Options::parse(&strings(&["a", "b"])).is_err());
        assert!(Options::parse(&strings(&["-j", "0"])).is_err());
        assert!(Options::parse(&strings(&["-j"])).is_err());
        Ok(())
    }

    #[test]
    fn truncates_long_messages() {
        let long: String = (0..40).map(|i| format!("line {i}\n")).collect();
        let t = truncate(&long, 3, 1000);
        assert!(
            t.starts_with("line 0\nline 1\nline 2\n… 37 more line(s)"),
            "{t}"
        );
        let wide = "x".repeat(50);
        let t = truncate(&wide, 3, 10);
        assert!(t.starts_with("xxxxxxxxxx …\n… truncated"), "{t}");
        assert_eq!(truncate("short", 3, 10), "short");
    }
}
