//! `cargo xtask conformance`: run every fixture case, deferred ones included.
//!
//! Spec: conformance-adapter §3–§9 (the adapter does the work; this is the report).

use std::collections::{BTreeMap, BTreeSet};
use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::thread;
use std::time::Instant;

use openarmature_conformance::deferrals::{Deferrals, CONFIG_FILE};
use openarmature_conformance::discovery::{
    discover, workspace_root, Discovery, FixtureFile, SPEC_DIR_ENV,
};
use openarmature_conformance::{runner, CaseId, CaseOutcome};

use crate::par::par_map;

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

/// One case to run (or a fixture whose cases could not be listed).
pub(crate) struct Job {
    pub(crate) id: CaseId,
    pub(crate) path: PathBuf,
    /// Set when `list_cases` failed: the job is the fixture and it fails with this.
    pub(crate) listing_error: Option<String>,
}

/// Per-capability counts.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub(crate) struct Counts {
    pub(crate) passed: usize,
    pub(crate) failed: usize,
    pub(crate) skipped: usize,
}

impl Counts {
    pub(crate) fn total(&self) -> usize {
        self.passed + self.failed + self.skipped
    }

    pub(crate) fn add(&mut self, other: &Counts) {
        self.passed += other.passed;
        self.failed += other.failed;
        self.skipped += other.skipped;
    }

    /// Counts one case: a deferred case that passes counts as failed.
    pub(crate) fn record(&mut self, verdict: &Verdict<'_>) {
        match verdict {
            Verdict::Passed => self.passed += 1,
            Verdict::Skipped => self.skipped += 1,
            Verdict::Failed(_) | Verdict::DeferredPasses(_) => self.failed += 1,
        }
    }
}

/// What one case's outcome means given its deferral.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Verdict<'a> {
    /// Passed and not deferred.
    Passed,
    /// Failed and not deferred (the message).
    Failed(&'a str),
    /// Failed and deferred.
    Skipped,
    /// Passed although deferred (the deferral's reason): the list is stale.
    DeferredPasses(&'a str),
}

impl<'a> Verdict<'a> {
    pub(crate) fn of(outcome: &'a CaseOutcome, reason: Option<&'a str>) -> Verdict<'a> {
        match (outcome, reason) {
            (CaseOutcome::Passed, None) => Verdict::Passed,
            (CaseOutcome::Failed(_), Some(_)) => Verdict::Skipped,
            (CaseOutcome::Failed(message), None) => Verdict::Failed(message),
            (CaseOutcome::Passed, Some(reason)) => Verdict::DeferredPasses(reason),
        }
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

/// `--jobs`, else the available parallelism.
pub(crate) fn workers(jobs: Option<usize>) -> usize {
    jobs.unwrap_or_else(|| thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get))
}

/// Runs every job on `workers` threads; a panic is a failure.
pub(crate) fn run_jobs(jobs: &[Job], workers: usize) -> Vec<CaseOutcome> {
    par_map(jobs, workers, |job| match &job.listing_error {
        Some(error) => CaseOutcome::Failed(error.clone()),
        None => runner::run_case(&job.path, &job.id),
    })
    .into_iter()
    .map(|result| {
        result.unwrap_or_else(|panic| CaseOutcome::Failed(format!("the runner panicked: {panic}")))
    })
    .collect()
}

/// Per-capability counts of the declared capabilities in scope (even those without
/// fixtures) and of any capability a job belongs to.
pub(crate) fn tally(
    suite: &Suite,
    capability: Option<&str>,
    jobs: &[Job],
    outcomes: &[CaseOutcome],
) -> BTreeMap<String, Counts> {
    let mut per_capability: BTreeMap<String, Counts> = suite
        .deferrals
        .capabilities
        .keys()
        .filter(|c| capability.is_none_or(|f| f == c.as_str()))
        .map(|c| (c.clone(), Counts::default()))
        .collect();
    for (job, outcome) in jobs.iter().zip(outcomes) {
        let verdict = Verdict::of(outcome, suite.deferrals.reason_for(&job.id));
        per_capability
            .entry(job.id.capability.clone())
            .or_default()
            .record(&verdict);
    }
    per_capability
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

    let per_capability = tally(&suite, capability, &jobs, &outcomes);
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
                let hint = match deferrals.entry_for(&job.id) {
                    Some(entry) if entry.fixture == job.id.to_string() => {
                        format!("remove `fixture = \"{}\"`", entry.fixture)
                    }
                    Some(entry) => format!(
                        "remove `fixture = \"{}\"` or narrow it to the cases that still fail \
                         (`{}/<case>`)",
                        entry.fixture, entry.fixture
                    ),
                    None => format!(
                        "the whole capability `{}` is deferred: replace that with [[deferred]] \
                         entries for the fixtures that still fail",
                        job.id.capability
                    ),
                };
                println!("\nFAILED {}", job.id);
                println!(
                    "    deferred fixture now passes: remove it from {CONFIG_FILE} ({hint}); \
                     deferral reason was: {reason}"
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

/// Lists the cases of every file (in parallel); a file that cannot be listed
/// becomes one job that fails with the listing error.
pub(crate) fn list_jobs(files: &[FixtureFile], workers: usize) -> Vec<Job> {
    let listed = par_map(files, workers, |file| {
        runner::list_cases(&file.capability, &file.path)
    });
    let mut jobs = Vec::new();
    for (file, result) in files.iter().zip(listed) {
        let result = match result {
            Ok(Ok(cases)) => Ok(cases),
            Ok(Err(error)) => Err(error.to_string()),
            Err(panic) => Err(format!("the runner panicked while listing cases: {panic}")),
        };
        match result {
            Ok(cases) => jobs.extend(cases.into_iter().map(|id| Job {
                id,
                path: file.path.clone(),
                listing_error: None,
            })),
            Err(error) => jobs.push(Job {
                id: CaseId {
                    capability: file.capability.clone(),
                    fixture: file.fixture.clone(),
                    case: None,
                },
                path: file.path.clone(),
                listing_error: Some(error),
            }),
        }
    }
    jobs
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

/// `[[deferred]]` entries in scope that match no discovered fixture or case.
///
/// Only checked when the upstream fixtures are present (without them every
/// upstream entry would look stale). A case-level entry under a fixture whose
/// cases could not be listed is not reported.
pub(crate) fn stale_entries(
    upstream_present: bool,
    files: &[FixtureFile],
    jobs: &[Job],
    deferrals: &Deferrals,
    capability: Option<&str>,
) -> Vec<String> {
    if !upstream_present {
        return Vec::new();
    }
    let fixtures: BTreeSet<String> = files.iter().map(FixtureFile::key).collect();
    let cases: BTreeSet<String> = jobs.iter().map(|j| j.id.to_string()).collect();
    let unlisted: BTreeSet<String> = jobs
        .iter()
        .filter(|j| j.listing_error.is_some())
        .map(|j| j.id.fixture_key())
        .collect();
    deferrals
        .stale_entries(&fixtures, &cases, |c| capability.is_none_or(|f| f == c))
        .into_iter()
        .filter(|e| !(e.is_case() && unlisted.contains(e.fixture_key())))
        .map(|e| e.fixture.clone())
        .collect()
}

fn print_failure(id: &CaseId, path: &Path, message: &str, verbose: bool) {
    println!("\nFAILED {id}");
    println!("    file: {}", path.display());
    let text = if verbose {
        message.to_owned()
    } else {
        truncate(message, MAX_LINES, MAX_CHARS)
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
