//! Spec: conformance-adapter §4 (fixture shapes), §4.4 (version pinning), §8.
//!
//! Parses one fixture file, lists its cases, and runs a case on a fresh
//! current-thread runtime with a paused clock (timers advance virtually, so drain
//! timeouts and slow observers are deterministic and fast).

use std::path::Path;

use serde_norway::Value;

use crate::yaml::Y;
use crate::{AdapterError, CaseId, CaseOutcome, Check, Failure, FailureKind, CONFORMANCE_VERSION};

fn load(path: &Path) -> Result<Value, AdapterError> {
    let text = std::fs::read_to_string(path).map_err(|source| AdapterError::Io {
        file: path.to_path_buf(),
        source,
    })?;
    parse(path, &text)
}

/// Parses a fixture's text (`path` names it in errors) and checks its version pin.
fn parse(path: &Path, text: &str) -> Result<Value, AdapterError> {
    let doc: Value = serde_norway::from_str(text).map_err(|e| AdapterError::SchemaInvalid {
        file: path.to_path_buf(),
        location: "document".into(),
        message: format!("invalid YAML: {e}"),
    })?;
    if !doc.is_mapping() {
        return Err(AdapterError::SchemaInvalid {
            file: path.to_path_buf(),
            location: "document".into(),
            message: "a fixture is a YAML mapping".into(),
        });
    }
    check_version(&Y::root(&doc, path))?;
    Ok(doc)
}

fn parse_version(v: &str) -> Option<(u64, u64, u64)> {
    let parts: Vec<u64> = v
        .trim()
        .trim_start_matches('v')
        .split('.')
        .map(|p| p.parse::<u64>().ok())
        .collect::<Option<_>>()?;
    match parts.as_slice() {
        [major] => Some((*major, 0, 0)),
        [major, minor] => Some((*major, *minor, 0)),
        [major, minor, patch] => Some((*major, *minor, *patch)),
        _ => None,
    }
}

/// §4.4: a fixture pinned to a newer conformance-adapter version is rejected.
fn check_version(root: &Y<'_>) -> Result<(), AdapterError> {
    let Some(v) = root.get("conformance_version") else {
        return Ok(());
    };
    let declared = match v.value {
        Value::String(s) => s.clone(),
        Value::Number(n) => n.to_string(),
        _ => return Err(v.invalid("conformance_version must be a version string")),
    };
    let want = parse_version(&declared)
        .ok_or_else(|| v.invalid(format!("unparseable version `{declared}`")))?;
    let have = parse_version(CONFORMANCE_VERSION).unwrap_or((0, 0, 0));
    if want > have {
        return Err(AdapterError::VersionUnsupported {
            file: root.file.to_path_buf(),
            declared,
            supported: CONFORMANCE_VERSION.to_owned(),
        });
    }
    Ok(())
}

fn case_names(root: &Y<'_>) -> Result<Option<Vec<String>>, AdapterError> {
    let Some(cases) = root.get("cases") else {
        return Ok(None);
    };
    let list = cases.seq()?;
    if list.is_empty() {
        // A fixture that lists no case would pass while checking nothing.
        return Err(cases.invalid("`cases` lists no case (a fixture must run at least one)"));
    }
    let mut names = Vec::new();
    for (i, case) in list.iter().enumerate() {
        let name = match case.get("name") {
            Some(n) => n.str()?.to_owned(),
            None => format!("case-{}", i + 1),
        };
        if names.contains(&name) {
            return Err(case.invalid(format!("duplicate case name `{name}`")));
        }
        names.push(name);
    }
    Ok(Some(names))
}

/// Lists the runnable cases of one fixture file.
///
/// # Errors
/// Returns an [`AdapterError`] when the file cannot be read or parsed.
pub fn list_cases(capability: &str, path: &Path) -> Result<Vec<CaseId>, AdapterError> {
    let text = std::fs::read_to_string(path).map_err(|source| AdapterError::Io {
        file: path.to_path_buf(),
        source,
    })?;
    list_cases_in(capability, path, &text)
}

/// [`list_cases`] over a fixture's text already read (`path` names the fixture and
/// appears in errors; it is not read). Never panics on bad input: anything that is
/// not a fixture is a typed [`AdapterError`].
///
/// # Errors
/// Returns an [`AdapterError`] when the text is not a valid fixture document (YAML,
/// a mapping, a supported `conformance_version`, well-formed `cases`).
pub fn list_cases_in(
    capability: &str,
    path: &Path,
    text: &str,
) -> Result<Vec<CaseId>, AdapterError> {
    let doc = parse(path, text)?;
    let fixture = path
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    let id = |case: Option<String>| CaseId {
        capability: capability.to_owned(),
        fixture: fixture.clone(),
        case,
    };
    Ok(match case_names(&Y::root(&doc, path))? {
        Some(names) => names.into_iter().map(|n| id(Some(n))).collect(),
        None => vec![id(None)],
    })
}

/// Runs one case and reports its outcome. Never panics on bad fixture input.
pub fn run_case(path: &Path, id: &CaseId) -> CaseOutcome {
    match load(path) {
        Ok(doc) => run_loaded(&doc, path, id),
        Err(e) => CaseOutcome::Failed(e.into()),
    }
}

/// [`run_case`] over a fixture's text already read (`path` names the fixture; it
/// is not read). Never panics on bad fixture input.
pub fn run_case_in(path: &Path, text: &str, id: &CaseId) -> CaseOutcome {
    match parse(path, text) {
        Ok(doc) => run_loaded(&doc, path, id),
        Err(e) => CaseOutcome::Failed(e.into()),
    }
}

fn run_loaded(doc: &Value, path: &Path, id: &CaseId) -> CaseOutcome {
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .start_paused(true)
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            return CaseOutcome::Failed(Failure::new(
                FailureKind::Harness,
                format!("cannot start a runtime: {e}"),
            ))
        }
    };
    let result = runtime.block_on(run(doc, path, id));
    match result {
        Ok(()) => CaseOutcome::Passed,
        Err(failure) => CaseOutcome::Failed(failure),
    }
}

async fn run(doc: &Value, path: &Path, id: &CaseId) -> Check {
    let root = Y::root(doc, path);
    let case = match &id.case {
        None => root.clone(),
        Some(name) => {
            let names = case_names(&root)?.unwrap_or_default();
            let index = names
                .iter()
                .position(|n| n == name)
                .ok_or_else(|| format!("no case named `{name}`"))?;
            root.req("cases").and_then(|c| c.seq())?.swap_remove(index)
        }
    };
    match id.capability.as_str() {
        "graph-engine" | "pipeline-utilities" => crate::ge::run_case(&root, &case).await,
        "llm-provider" => crate::llm::run_case(path, &root, &case).await,
        "observability" => crate::obs::run_case(&root, &case).await,
        "prompt-management" => crate::prompt::run_case(&root, &case).await,
        "retrieval-provider" => crate::retrieval::run_case(path, doc, id.case.as_deref()).await,
        "sessions" => crate::sessions::run_case(&root, &case).await,
        "suspension" => crate::suspension::run_case(&root, &case).await,
        "harness" => crate::harness::run_case(&root, &case).await,
        "harness-chat" => crate::chat::run_case(&root, &case).await,
        other => Err(Failure::unsupported(format!(
            "harness_primitive_missing: {}: no runner for capability `{other}` yet",
            path.display()
        ))),
    }
}
