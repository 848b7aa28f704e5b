//! Spec: graph-engine §6 (the typed embedding and rerank events share one shape:
//! the calling node, the request summary, the outcome or the failure, the latency
//! and the end time).
//!
//! [`retrieval_event_pair!`] writes a protocol's success and failure event types
//! and their stamping constructors once; [`prompt_context_accessors!`] writes the
//! `active_prompt` / `active_prompt_group` readers of a request summary that holds
//! a `prompt_context`.

/// Writes `$ok` (site, request, outcome, latency, end time) and `$failed` (site,
/// request, failure, latency, end time) with `new` constructors stamped now; `$call`
/// names the operation in the docs (e.g. `"embed()"`).
macro_rules! retrieval_event_pair {
    ($ok:ident, $failed:ident, $request:ty, $outcome:ty, $call:literal) => {
        #[doc = concat!("Typed ", stringify!($ok), " (graph-engine §6): one per successful `", $call, "` call.")]
        #[derive(Debug, Clone, PartialEq)]
        #[non_exhaustive]
        pub struct $ok {
            /// The calling node.
            pub site: openarmature_core::CallSite,
            /// The request.
            pub request: $request,
            /// The response side.
            pub outcome: $outcome,
            /// Wall-clock latency of the call, in milliseconds.
            pub latency_ms: Option<f64>,
            /// When the call ended (span builders stamp the span from this).
            pub at: std::time::SystemTime,
        }

        impl $ok {
            /// A success event, stamped now.
            pub fn new(
                site: openarmature_core::CallSite,
                request: $request,
                outcome: $outcome,
                latency_ms: Option<f64>,
            ) -> Self {
                $ok {
                    site,
                    request,
                    outcome,
                    latency_ms,
                    at: std::time::SystemTime::now(),
                }
            }
        }

        #[doc = concat!("Typed ", stringify!($failed), " (graph-engine §6): one per `", $call, "` call that raised.")]
        #[derive(Debug, Clone, PartialEq)]
        #[non_exhaustive]
        pub struct $failed {
            /// The calling node.
            pub site: openarmature_core::CallSite,
            /// The request.
            pub request: $request,
            /// The raised error's category, type and message.
            pub failure: openarmature_core::vocab::llm::LlmFailure,
            #[doc = concat!("Latency from `", $call, "` entry to the failure, in milliseconds.")]
            pub latency_ms: Option<f64>,
            /// When the call failed.
            pub at: std::time::SystemTime,
        }

        impl $failed {
            /// A failure event, stamped now.
            pub fn new(
                site: openarmature_core::CallSite,
                request: $request,
                failure: openarmature_core::vocab::llm::LlmFailure,
                latency_ms: Option<f64>,
            ) -> Self {
                $failed {
                    site,
                    request,
                    failure,
                    latency_ms,
                    at: std::time::SystemTime::now(),
                }
            }
        }
    };
}
pub(crate) use retrieval_event_pair;

/// The `active_prompt()` / `active_prompt_group()` readers of a type with a
/// `prompt_context: PromptContext` field (written inside its `impl` block).
macro_rules! prompt_context_accessors {
    () => {
        /// The active prompt's identity at call time (`active_prompt`).
        pub fn active_prompt(&self) -> Option<&openarmature_core::vocab::prompt::PromptIdentity> {
            self.prompt_context.prompt()
        }

        /// The active prompt group's identity at call time (`active_prompt_group`).
        pub fn active_prompt_group(
            &self,
        ) -> Option<&openarmature_core::vocab::prompt::PromptGroupIdentity> {
            self.prompt_context.group()
        }
    };
}
pub(crate) use prompt_context_accessors;
