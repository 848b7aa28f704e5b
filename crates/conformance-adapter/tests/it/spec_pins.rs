//! Each crate's `SPEC_CAPABILITY` / `SPEC_VERSION` against `conformance.toml`.
//!
//! Spec: conformance-adapter §8.5 (version pinning). A crate (or, for a capability a
//! crate implements besides its own, a module) declares which capability it
//! implements and which release it targets; `conformance.toml` must name that crate
//! for the capability and pin the same release (`[capabilities.<name>].release`,
//! defaulting to `[spec].release`). Every declared capability that is not deferred
//! as a whole must be claimed by one of these constant pairs.

use openarmature_conformance::deferrals::{Deferrals, CONFIG_FILE};
use openarmature_conformance::discovery::workspace_root;

/// `(capability, release, package)` as the code declares them.
struct Pin {
    capability: &'static str,
    release: &'static str,
    package: String,
}

/// The constants of `path` (a crate, or a module of one), with the package of the
/// crate it belongs to (the crate name with `-` for `_`).
macro_rules! pin {
    ($($path:ident)::+) => {{
        let path = stringify!($($path)::+);
        let krate = path.split("::").next().unwrap_or(path);
        Pin {
            capability: $($path)::+::SPEC_CAPABILITY,
            release: $($path)::+::SPEC_VERSION,
            package: krate.trim().replace('_', "-"),
        }
    }};
}

fn pins() -> Vec<Pin> {
    vec![
        pin!(openarmature_graph),
        pin!(openarmature_graph::session),
        pin!(openarmature_graph::suspension),
        pin!(openarmature_pipeline),
        pin!(openarmature_llm),
        pin!(openarmature_observability),
        pin!(openarmature_prompt),
        pin!(openarmature_retrieval),
        pin!(openarmature_harness),
        pin!(openarmature_harness_chat),
        pin!(openarmature_conformance),
    ]
}

#[allow(clippy::panic)] // a test: an unreadable conformance.toml fails it
fn config() -> Deferrals {
    let path = workspace_root().join(CONFIG_FILE);
    match Deferrals::load(&path) {
        Ok(d) => d,
        Err(e) => panic!("cannot load {CONFIG_FILE}: {e}"),
    }
}

#[test]
fn every_crate_pin_matches_conformance_toml() {
    let config = config();
    let mut problems = Vec::new();
    for pin in pins() {
        let Some(cap) = config.capabilities.get(pin.capability) else {
            problems.push(format!(
                "{}: SPEC_CAPABILITY `{}` is not declared under [capabilities]",
                pin.package, pin.capability
            ));
            continue;
        };
        if cap.crate_name != pin.package {
            problems.push(format!(
                "[capabilities.{}] crate = {:?}, but {} declares SPEC_CAPABILITY = {:?}",
                pin.capability, cap.crate_name, pin.package, pin.capability
            ));
        }
        let release = cap.release.as_deref().unwrap_or(&config.spec.release);
        if release != pin.release {
            problems.push(format!(
                "{}: SPEC_VERSION {} but conformance.toml targets {release} for {}",
                pin.package, pin.release, pin.capability
            ));
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn every_implemented_capability_is_claimed_by_a_crate() {
    let config = config();
    let pins = pins();
    let unclaimed: Vec<&String> = config
        .capabilities
        .iter()
        .filter(|(_, cap)| cap.deferred.is_none())
        .map(|(name, _)| name)
        .filter(|name| !pins.iter().any(|p| p.capability == name.as_str()))
        .collect();
    assert!(
        unclaimed.is_empty(),
        "capabilities without SPEC_CAPABILITY / SPEC_VERSION constants: {unclaimed:?}"
    );
}

#[test]
fn a_pin_names_its_package() {
    let p = pin!(openarmature_graph::session);
    assert_eq!(
        (p.capability, p.package.as_str()),
        ("sessions", "openarmature-graph")
    );
}
