//! The conformance fixture loader (conformance-adapter §4, §8.2): a fixture's YAML
//! text parsed, version-checked and its cases listed
//! ([`openarmature_conformance::runner::list_cases_in`]), then its first case run
//! ([`openarmature_conformance::runner::run_case_in`]: the directive parsers of the
//! capability, on a paused clock).
//!
//! Input: a capability selector byte, then the fixture text (UTF-8; other bytes are
//! what reading the file already refuses). Properties: a refused fixture has a §9
//! category; listed cases are distinct (`cases: []` lists none); running a case never panics.
#![no_main]

use std::collections::HashSet;
use std::path::Path;

use libfuzzer_sys::fuzz_target;
use openarmature_conformance::runner::{list_cases_in, run_case_in};
use openarmature_fuzz::selector;

const CAPABILITIES: [&str; 10] = [
    "graph-engine",
    "pipeline-utilities",
    "llm-provider",
    "observability",
    "prompt-management",
    "retrieval-provider",
    "sessions",
    "suspension",
    "harness",
    "harness-chat",
];

fuzz_target!(|data: &[u8]| {
    let (pick, text) = selector(data);
    let Ok(text) = std::str::from_utf8(text) else {
        return;
    };
    let capability = CAPABILITIES[usize::from(pick) % CAPABILITIES.len()];
    let path = Path::new("fuzz/001-input.yaml");
    match list_cases_in(capability, path, text) {
        Err(e) => {
            assert!(
                matches!(
                    e.category(),
                    "fixture_directive_unknown"
                        | "fixture_schema_invalid"
                        | "fixture_version_unsupported"
                ),
                "{e}"
            );
            let _ = e.to_string();
        }
        Ok(cases) => {
            let keys: HashSet<String> = cases.iter().map(|c| c.to_string()).collect();
            assert_eq!(keys.len(), cases.len(), "case ids are distinct");
            if pick >= 128 && !cases.is_empty() {
                let _ = run_case_in(path, text, &cases[0]);
            }
        }
    }
});
