//! Integration tests of `openarmature-postgres`. The cases that need a server read
//! `OPENARMATURE_TEST_POSTGRES_URL` (see `.ci/services.sh`) and skip without it.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod backend_suite;
mod errors;
mod migrations;

use openarmature_testkit::services::{url, Service};

/// The test server's URL, or `None` (skip notice printed).
pub fn server(test: &str) -> Option<String> {
    url(Service::Postgres, test)
}
