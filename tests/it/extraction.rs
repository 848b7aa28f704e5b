//! The `resilient_extraction` example's modules, loaded once for the tests that run its
//! pipeline (`report_browser`, `soak`): the example's files are siblings that refer to
//! each other through `super::`.

#[path = "../../examples/resilient_extraction/http.rs"]
#[allow(dead_code)]
pub mod http;
#[path = "../../examples/resilient_extraction/pipeline.rs"]
#[allow(dead_code)]
pub mod pipeline;
#[path = "../../examples/resilient_extraction/server.rs"]
#[allow(dead_code)]
pub mod server;
#[path = "../../examples/resilient_extraction/soak.rs"]
#[allow(dead_code)]
pub mod soak;
