//! `cargo xtask spec-status`: per capability, the crate implementing it, the release it
//! targets, its fixture counts (passed / failed / deferred) and its deferrals with their
//! reasons — the table the README shows (`--markdown`).
//!
//! Spec: conformance-adapter §8.5 (version pinning); the counts come from the
//! conformance runner ([`crate::conformance`]), run exactly as `cargo xtask conformance`
//! runs it.

use std::collections::BTreeMap;
use std::process::ExitCode;

use openarmature_conformance::deferrals::Deferrals;
use openarmature_conformance::CaseOutcome;

use openarmature_conformance::suite::{list_jobs, run_jobs, tally, Counts, Job, Verdict};

use crate::conformance::prepare;

/// Parsed command line of `cargo xtask spec-status`.
#[derive(Debug, Default)]
pub struct Options {
    capability: Option<String>,
    markdown: bool,
    jobs: Option<usize>,
}

impl Options {
    /// Parses the arguments after `spec-status`.
    pub fn parse(args: &[String]) -> Result<Options, String> {
        let mut options = Options::default();
        let mut args = args.iter();
        while let Some(arg) = args.next() {
            match arg.as_str() {
                "--markdown" => options.markdown = true,
                "-j" | "--jobs" => {
                    let value = args.next().ok_or("`--jobs` needs a number")?;
                    match value.parse::<usize>() {
                        Ok(n) if n > 0 => options.jobs = Some(n),
                        _ => {
                            return Err(format!("`--jobs` needs a positive number, got `{value}`"))
                        }
                    }
                }
                other if other.starts_with('-') => {
                    return Err(format!("unknown option `{other}` for `spec-status`"));
                }
                other if options.capability.is_some() => {
                    return Err(format!("one capability at a time (got `{other}` too)"));
                }
                other => options.capability = Some(other.to_owned()),
            }
        }
        Ok(options)
    }
}

/// A set of deferred cases sharing one reason.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Deferral {
    /// The `conformance.toml` entries (`capability/fixture[/case]`); empty when the
    /// whole capability is deferred.
    pub(crate) entries: Vec<String>,
    /// How many cases it covers.
    pub(crate) cases: usize,
    pub(crate) reason: String,
}

/// One capability's line of the status.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Row {
    pub(crate) capability: String,
    pub(crate) crate_name: String,
    pub(crate) release: String,
    pub(crate) counts: Counts,
    pub(crate) deferrals: Vec<Deferral>,
}

/// The status rows of every capability in `per_capability`.
pub(crate) fn rows(
    deferrals: &Deferrals,
    per_capability: &BTreeMap<String, Counts>,
    jobs: &[Job],
    outcomes: &[CaseOutcome],
) -> Vec<Row> {
    per_capability
        .iter()
        .map(|(name, counts)| {
            let declared = deferrals.capabilities.get(name);
            let mut groups: Vec<Deferral> = Vec::new();
            for (job, outcome) in jobs.iter().zip(outcomes) {
                if job.id.capability != *name {
                    continue;
                }
                let Some(reason) = deferrals.reason_for(&job.id) else {
                    continue;
                };
                if Verdict::of(outcome, Some(reason)) != Verdict::Skipped {
                    continue; // a deferred case that passes is counted as failed
                }
                let entry = deferrals.entry_for(&job.id).map(|e| e.fixture.clone());
                let group = match groups.iter_mut().find(|g| g.reason == reason) {
                    Some(g) => g,
                    None => {
                        groups.push(Deferral {
                            entries: Vec::new(),
                            cases: 0,
                            reason: reason.to_owned(),
                        });
                        let last = groups.len() - 1;
                        &mut groups[last]
                    }
                };
                group.cases += 1;
                if let Some(e) = entry.filter(|e| !group.entries.contains(e)) {
                    group.entries.push(e);
                }
            }
            Row {
                capability: name.clone(),
                crate_name: declared
                    .map_or_else(|| "(undeclared)".into(), |c| c.crate_name.clone()),
                release: declared
                    .and_then(|c| c.release.clone())
                    .unwrap_or_else(|| deferrals.spec.release.clone()),
                counts: counts.clone(),
                deferrals: groups,
            }
        })
        .collect()
}

/// Runs the command: exits non-zero when a case fails (or a deferred one passes).
pub fn run(options: &Options) -> ExitCode {
    let capability = options.capability.as_deref();
    let suite = match prepare(capability, options.jobs) {
        Ok(suite) => suite,
        Err(code) => return code,
    };
    let jobs = list_jobs(&suite.found.files, suite.workers);
    let outcomes = run_jobs(&jobs, suite.workers);
    let per_capability = tally(&suite.deferrals, capability, &jobs, &outcomes);
    let rows = rows(&suite.deferrals, &per_capability, &jobs, &outcomes);
    if options.markdown {
        print!("{}", markdown(&rows));
    } else {
        print!("{}", text(&rows, &suite.deferrals.spec.release));
    }
    if rows.iter().any(|r| r.counts.failed > 0) {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}

fn cells(r: &Row) -> [String; 7] {
    [
        r.capability.clone(),
        r.crate_name.clone(),
        r.release.clone(),
        r.counts.passed.to_string(),
        r.counts.failed.to_string(),
        r.counts.skipped.to_string(),
        r.counts.total().to_string(),
    ]
}

const HEADERS: [&str; 7] = [
    "capability",
    "crate",
    "release",
    "passed",
    "failed",
    "deferred",
    "total",
];

/// What a deferral covers, for humans.
fn scope(d: &Deferral) -> String {
    let plural = if d.cases == 1 { "case" } else { "cases" };
    if d.entries.is_empty() {
        format!("{} {plural}, whole capability deferred", d.cases)
    } else {
        format!("{} {plural}", d.cases)
    }
}

/// The plain-text table and the deferral list.
pub(crate) fn text(rows: &[Row], pinned: &str) -> String {
    let mut out = format!("spec-status: pinned release {pinned}\n\n");
    let table: Vec<[String; 7]> = rows.iter().map(cells).collect();
    let mut widths = HEADERS.map(str::len);
    for r in &table {
        for (w, cell) in widths.iter_mut().zip(r) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let line = |cells: [&str; 7]| {
        let mut s = String::new();
        for (i, (cell, w)) in cells.iter().zip(widths).enumerate() {
            match i {
                0 => s.push_str(&format!("{cell:<w$}")),
                1 | 2 => s.push_str(&format!(" | {cell:<w$}")),
                _ => s.push_str(&format!(" | {cell:>w$}")),
            }
        }
        s.trim_end().to_owned() + "\n"
    };
    out.push_str(&line(HEADERS));
    let rule: Vec<String> = widths.iter().map(|w| "-".repeat(*w)).collect();
    out.push_str(&(rule.join("-+-") + "\n"));
    for r in &table {
        out.push_str(&line(
            [&r[0], &r[1], &r[2], &r[3], &r[4], &r[5], &r[6]].map(String::as_str),
        ));
    }
    let deferred: Vec<&Row> = rows.iter().filter(|r| !r.deferrals.is_empty()).collect();
    if !deferred.is_empty() {
        out.push_str("\ndeferrals:\n");
    }
    for r in deferred {
        for d in &r.deferrals {
            out.push_str(&format!(
                "  {} ({}): {}\n",
                r.capability,
                scope(d),
                d.reason
            ));
            for e in &d.entries {
                out.push_str(&format!("      {e}\n"));
            }
        }
    }
    out
}

/// `--markdown`: the README table, then the deferrals as a list.
pub(crate) fn markdown(rows: &[Row]) -> String {
    let mut out = String::from(
        "| capability | crate | spec release | passed | failed | deferred | total cases |\n\
         |---|---|---|---|---|---|---|\n",
    );
    for r in rows {
        let [cap, krate, release, passed, failed, skipped, total] = cells(r);
        out.push_str(&format!(
            "| {cap} | `{krate}` | {release} | {passed} | {failed} | {skipped} | {total} |\n"
        ));
    }
    let deferred: Vec<&Row> = rows.iter().filter(|r| !r.deferrals.is_empty()).collect();
    if !deferred.is_empty() {
        out.push_str("\nDeferred cases and their reasons:\n\n");
    }
    for r in deferred {
        for d in &r.deferrals {
            let entries = if d.entries.is_empty() {
                String::new()
            } else {
                let fixtures: Vec<String> = d.entries.iter().map(|e| format!("`{e}`")).collect();
                format!(" ({})", fixtures.join(", "))
            };
            out.push_str(&format!(
                "- **{}**, {}{entries}: {}\n",
                r.capability,
                scope(d),
                d.reason
            ));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use openarmature_conformance::CaseId;

    fn strings(args: &[&str]) -> Vec<String> {
        args.iter().map(|s| (*s).to_owned()).collect()
    }

    fn job(capability: &str, fixture: &str, case: Option<&str>) -> Job {
        Job {
            id: CaseId {
                capability: capability.into(),
                fixture: fixture.into(),
                case: case.map(str::to_owned),
            },
            path: "unused.yaml".into(),
            listing_error: None,
        }
    }

    #[test]
    fn parses_options() -> Result<(), String> {
        let o = Options::parse(&strings(&["--markdown", "sessions", "-j", "2"]))?;
        assert!(o.markdown);
        assert_eq!(o.capability.as_deref(), Some("sessions"));
        assert_eq!(o.jobs, Some(2));
        assert!(Options::parse(&strings(&["--bogus"])).is_err());
        assert!(Options::parse(&strings(&["a", "b"])).is_err());
        Ok(())
    }

    #[test]
    fn rows_group_deferrals_by_reason_and_count_cases() -> Result<(), String> {
        let config = r#"
[spec]
release = "1.2.0"
[capabilities.alpha]
crate = "crate-alpha"
release = "1.1.0"
[capabilities.beta]
crate = "crate-beta"
deferred = "not implemented (issue 9)"
[[deferred]]
fixture = "alpha/002-two/x"
reason = "fixture/prose conflict"
[[deferred]]
fixture = "alpha/002-two/y"
reason = "fixture/prose conflict"
"#;
        let deferrals =
            Deferrals::parse(config, "conformance.toml".as_ref()).map_err(|e| e.to_string())?;
        let jobs = vec![
            job("alpha", "001-one", None),
            job("alpha", "002-two", Some("x")),
            job("alpha", "002-two", Some("y")),
            job("beta", "001-b", None),
        ];
        let failed = || CaseOutcome::Failed("boom".into());
        let outcomes = vec![CaseOutcome::Passed, failed(), failed(), failed()];
        let mut per: BTreeMap<String, Counts> = BTreeMap::new();
        for (j, o) in jobs.iter().zip(&outcomes) {
            per.entry(j.id.capability.clone())
                .or_default()
                .record(&Verdict::of(o, deferrals.reason_for(&j.id)));
        }
        let rows = rows(&deferrals, &per, &jobs, &outcomes);
        assert_eq!(rows.len(), 2);
        assert_eq!(
            (rows[0].crate_name.as_str(), rows[0].release.as_str()),
            ("crate-alpha", "1.1.0")
        );
        assert_eq!(
            rows[0].counts,
            Counts {
                passed: 1,
                failed: 0,
                skipped: 2
            }
        );
        assert_eq!(
            rows[0].deferrals,
            [Deferral {
                entries: vec!["alpha/002-two/x".into(), "alpha/002-two/y".into()],
                cases: 2,
                reason: "fixture/prose conflict".into(),
            }]
        );
        assert_eq!(rows[1].release, "1.2.0");
        assert!(rows[1].deferrals[0].entries.is_empty());
        let md = markdown(&rows);
        assert!(
            md.contains("| alpha | `crate-alpha` | 1.1.0 | 1 | 0 | 2 | 3 |"),
            "{md}"
        );
        assert!(
            md.contains("- **beta**, 1 case, whole capability deferred: not implemented (issue 9)"),
            "{md}"
        );
        let txt = text(&rows, "1.2.0");
        assert!(
            txt.contains("alpha (2 cases): fixture/prose conflict"),
            "{txt}"
        );
        Ok(())
    }

    #[test]
    fn a_deferred_case_that_passes_is_not_listed_as_deferred() -> Result<(), String> {
        let config = "[spec]\nrelease = \"1.0.0\"\n[capabilities.a]\ncrate = \"c\"\n\
                      [[deferred]]\nfixture = \"a/001-x\"\nreason = \"r\"\n";
        let deferrals =
            Deferrals::parse(config, "conformance.toml".as_ref()).map_err(|e| e.to_string())?;
        let jobs = vec![job("a", "001-x", None)];
        let outcomes = vec![CaseOutcome::Passed];
        let mut per = BTreeMap::new();
        per.insert(
            "a".to_owned(),
            Counts {
                passed: 0,
                failed: 1,
                skipped: 0,
            },
        );
        let rows = rows(&deferrals, &per, &jobs, &outcomes);
        assert!(rows[0].deferrals.is_empty());
        Ok(())
    }
}
