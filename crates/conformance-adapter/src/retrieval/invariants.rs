//! Spec: retrieval-provider §3–§8 / §10 and conformance-adapter §5.15
//! (*Pre-send-reject invariants*) — the named `expected.invariants` of the
//! retrieval fixtures, as a table.
//!
//! Each name maps to the list of checks that make it hold: primitive checks on the
//! call's outcome and the wire ([`Rule`]) and the observations of
//! [`super::facts`]. A name the table does not hold is a `fixture_directive_unknown`
//! error; every invariant must be `true`.

use openarmature_retrieval::RetrievalCategory as Cat;
use serde_json::Value;

use super::exec::{Call, Run};
use super::facts::{self as f, Fact};
use super::providers::Kind;

/// A literal wire value.
#[derive(Debug, Clone, Copy)]
pub(super) enum Lit {
    Bool(bool),
    Str(&'static str),
    Strs(&'static [&'static str]),
}

impl Lit {
    fn json(self) -> Value {
        match self {
            Lit::Bool(b) => Value::Bool(b),
            Lit::Str(s) => Value::from(s),
            Lit::Strs(list) => Value::Array(list.iter().map(|s| Value::from(*s)).collect()),
        }
    }
}

/// One check an invariant is made of.
#[derive(Clone, Copy)]
pub(super) enum Rule {
    /// The call is of this protocol.
    Kind(Kind),
    /// Exactly this many requests reached the call's mock.
    Requests(usize),
    /// The call raised an error out of `embed()` / `rerank()`, and the invocation
    /// failed at the calling node carrying the same §7 category.
    RaisedOut,
    /// [`Rule::RaisedOut`] with this category.
    Raised(Cat),
    /// Raised `provider_invalid_request` before any request left (§5.15).
    PreSend,
    /// The call returned a response and the invocation completed.
    Ok,
    /// The call did not raise this category.
    NotRaised(Cat),
    /// The last request was answered with this status.
    Answered(u16),
    /// The call's `input_type` (`None`: absent).
    InputType(Option<&'static str>),
    /// The call's extras bag carries this key.
    ExtrasHas(&'static str),
    /// Every request body carries the key with the extras bag's value.
    WireMatchesExtras(&'static str),
    /// Every request body carries the key with this value.
    WireEq(&'static str, Lit),
    /// No request body carries the key (and at least one request was sent).
    WireAbsent(&'static str),
    /// Each raw request body names the key exactly once.
    WireKeyOnce(&'static str),
    /// The requests' lists have these sizes and are consecutive slices of the call's.
    Chunks(&'static [usize]),
    /// The response's vector `i` is the wire's vector for input `i`.
    VectorAt(usize),
    /// The one request's bytes equal the request of the same call with its knob
    /// (`input_type` / `return_documents`) removed.
    Probe,
    /// An observation.
    Fact(Fact),
}

use Lit::{Bool, Str, Strs};
use Rule::{
    Answered, Chunks, ExtrasHas, Fact as F, InputType, Kind as K, NotRaised, Ok, PreSend, Probe,
    Raised, RaisedOut, Requests, VectorAt, WireAbsent, WireEq, WireKeyOnce, WireMatchesExtras,
};

use crate::failure::{ensure, Check};
use crate::table::{invariant, lookup, names, Table};

const EMBED: Rule = K(Kind::Embed);
const RERANK: Rule = K(Kind::Rerank);
const FLOAT_ONLY: Rule = WireEq("embedding_types", Strs(&["float"]));

/// The invariant table.
#[rustfmt::skip]
pub(super) const TABLE: &Table<&[Rule]> = &[
    ("absent_echo_surfaced_as_null", &[Ok, F(f::omitted_echoes_null)]),
    ("all_vectors_same_dimensionality", &[Ok, F(f::same_dims)]),
    ("authorization_bearer_header_present", &[F(f::bearer)]),
    ("bare_400_maps_to_provider_invalid_request", &[Answered(400), Raised(Cat::InvalidRequest)]),
    ("bare_400_not_misclassified_as_unavailable", &[Answered(400), RaisedOut, NotRaised(Cat::Unavailable)]),
    ("base64_embedding_decoded_to_float_vector", &[Ok, F(f::served_base64), F(f::vectors_from_wire)]),
    ("billed_units_input_tokens_maps_to_input_tokens", &[Ok, F(f::usage_present), F(f::usage_from_wire)]),
    ("billed_units_input_tokens_summed_across_chunks", &[Ok, F(f::chunked), F(f::usage_present), F(f::usage_from_wire)]),
    ("both_chunk_requests_reached_wire_before_raise", &[Requests(2), RaisedOut]),
    ("both_chunk_responses_preserved_verbatim_on_raw_list", &[Ok, F(f::chunked), F(f::raw_list_of_objects), F(f::raw_verbatim)]),
    ("caller_supplied_float_not_duplicated", &[F(f::extras_types_name_float), F(f::float_once)]),
    ("chunk_inputs_sizes_2_2_1_consecutive_slices", &[Chunks(&[2, 2, 1])]),
    ("chunk_local_indices_rebased_to_absolute_positions", &[Ok, F(f::chunked), F(f::some_index_beyond_first_chunk), F(f::results_from_wire)]),
    ("chunk_requests_omit_dimensions_and_encoding_format", &[F(f::chunked), WireAbsent("dimensions"), WireAbsent("encoding_format")]),
    ("chunk_requests_omit_output_dimension", &[F(f::chunked), WireAbsent("output_dimension")]),
    ("chunk_requests_omit_prompt_name_and_dimensions", &[F(f::chunked), WireAbsent("prompt_name"), WireAbsent("dimensions")]),
    ("chunk_texts_sizes_4_4_1_consecutive_slices", &[Chunks(&[4, 4, 1])]),
    ("chunk_texts_sizes_96_4_consecutive_slices", &[Chunks(&[96, 4])]),
    ("chunked_by_count_into_sizes_2_1", &[Chunks(&[2, 1]), F(f::count_chunked)]),
    ("classification_not_rejected_pre_send", &[InputType(Some("classification")), Ok, Requests(1)]),
    ("clustering_not_rejected_pre_send", &[InputType(Some("clustering")), Ok, Requests(1)]),
    ("conflicting_managed_truncate_rejected_pre_send", &[ExtrasHas("truncate"), PreSend]),
    ("conflicting_managed_truncation_rejected_pre_send", &[ExtrasHas("truncation"), PreSend]),
    ("conflicting_value_not_forwarded_to_wire", &[Requests(0)]),
    ("conflicting_value_not_silently_dropped", &[Raised(Cat::InvalidRequest)]),
    ("declared_dimensions_conflict_rejected_pre_send", &[F(f::dimensions_conflict), PreSend]),
    ("decoded_vectors_in_input_order", &[Ok, F(f::vectors_from_wire)]),
    ("dimensions_field_matches_inner_vector_length", &[Ok, F(f::dims_field)]),
    ("document_null_when_provider_omits_echo", &[Ok, F(f::omitted_echoes_null)]),
    ("duplicate_index_detected", &[F(f::served_duplicate_index), Raised(Cat::InvalidResponse)]),
    ("each_index_valid_into_input_documents", &[Ok, F(f::indices_valid)]),
    ("echo_not_fabricated_from_input_documents", &[Ok, F(f::served_no_echo), F(f::all_documents_null)]),
    ("echoed_document_preserved_verbatim", &[Ok, F(f::some_string_echo)]),
    ("echoed_documents_preserved_verbatim", &[Ok, F(f::some_string_echo)]),
    ("echoed_text_preserved_verbatim_on_document", &[Ok, F(f::some_string_echo)]),
    ("embedding_event_response_id_null_mirrors_response", &[EMBED, Ok, F(f::event_response_id_null_mirrors)]),
    ("embedding_event_usage_null_mirrors_response", &[EMBED, Ok, F(f::event_usage_null_mirrors)]),
    ("embedding_event_usage_summed_record_mirrors_response", &[EMBED, Ok, F(f::chunked), F(f::event_usage_mirrors_present)]),
    ("empty_id_preserved_verbatim_on_raw", &[Ok, F(f::served_id_empty), F(f::raw_verbatim)]),
    ("empty_string_echo_present_surfaced_as_empty_string", &[Ok, F(f::empty_echo_kept)]),
    ("empty_string_response_id_nulled", &[Ok, F(f::served_id_empty), F(f::response_id_null)]),
    ("encoding_format_base64_forwarded_to_wire", &[WireEq("encoding_format", Str("base64")), WireMatchesExtras("encoding_format")]),
    ("every_document_null_when_cohere_omits_echo", &[Ok, F(f::served_no_echo), F(f::all_documents_null)]),
    ("exactly_one_embed_request_issued", &[EMBED, Requests(1)]),
    ("exactly_one_request_issued", &[Requests(1)]),
    ("exactly_one_rerank_request_issued", &[RERANK, Requests(1)]),
    ("exactly_three_embed_requests_issued", &[EMBED, Requests(3)]),
    ("exactly_three_rerank_requests_issued", &[RERANK, Requests(3)]),
    ("exactly_two_embed_requests_issued", &[EMBED, Requests(2)]),
    ("exception_raised_out_of_embed_call", &[EMBED, RaisedOut]),
    ("exception_raised_out_of_rerank_call", &[RERANK, RaisedOut]),
    ("extra_precision_preserved_on_raw", &[Ok, F(f::raw_verbatim), F(f::raw_has_extra_precisions)]),
    ("extras_dimensions_neither_dropped_nor_forwarded", &[ExtrasHas("dimensions"), PreSend]),
    ("extras_embedding_types_merged_not_replaced", &[F(f::embedding_types_merged)]),
    ("extras_task_neither_dropped_nor_forwarded", &[ExtrasHas("task"), PreSend]),
    ("extras_task_rides_untouched_to_wire", &[InputType(None), WireMatchesExtras("task")]),
    ("fails_loud_no_embedding_response_stored", &[EMBED, RaisedOut, F(f::nothing_stored)]),
    ("identical_per_call_params_across_chunks", &[F(f::chunked), F(f::identical_params)]),
    ("imagedoc_maps_document_to_null", &[Ok, F(f::served_textless_object_echo), F(f::echoes_from_wire)]),
    ("input_tokens_null_when_cohere_omits", &[Ok, F(f::rerank_input_tokens_null_unreported)]),
    ("input_tokens_summed_across_chunks", &[Ok, F(f::chunked), F(f::usage_present), F(f::usage_from_wire)]),
    ("input_type_absent_no_managed_task", &[InputType(None), ExtrasHas("task"), Ok]),
    ("input_type_in_embedding_event_request_params", &[EMBED, F(f::event_input_type)]),
    ("malformed_base64_not_truncated_or_padded", &[F(f::served_malformed_base64), RaisedOut, F(f::nothing_stored)]),
    ("malformed_base64_raises_provider_invalid_response", &[F(f::served_malformed_base64), Raised(Cat::InvalidResponse)]),
    ("malformed_chunk_input_tokens_collapses_stitched_usage_null", &[Ok, F(f::chunked), F(f::some_figure_malformed), F(f::usage_null)]),
    ("malformed_extras_embedding_types_treated_as_absent", &[F(f::extras_types_malformed), FLOAT_ONLY]),
    ("malformed_first_chunk_id_nulled", &[Ok, F(f::chunked), F(f::first_id_malformed), F(f::response_id_null)]),
    ("malformed_first_chunk_id_preserved_verbatim_on_raw", &[Ok, F(f::first_id_malformed), F(f::raw_verbatim)]),
    ("malformed_id_preserved_verbatim_on_raw", &[Ok, F(f::first_id_malformed), F(f::raw_verbatim)]),
    ("malformed_input_tokens_not_reported_usage_null", &[Ok, F(f::some_figure_malformed), F(f::usage_null)]),
    ("malformed_list_not_salvaged", &[F(f::extras_types_partly_valid), F(f::no_extras_precision_on_wire)]),
    ("malformed_response_id_nulled", &[Ok, F(f::first_id_malformed), F(f::response_id_null)]),
    ("malformed_search_units_not_reported_usage_null", &[RERANK, Ok, F(f::some_figure_malformed), F(f::usage_null)]),
    ("malformed_value_preserved_verbatim_on_raw", &[Ok, F(f::some_figure_or_id_malformed), F(f::raw_verbatim)]),
    ("managed_float_not_dropped_by_extras", &[F(f::extras_types_given), F(f::wire_has_float)]),
    ("mapping_does_not_error_on_input_type", &[F(f::input_type_set), Ok]),
    ("mapping_does_not_error_on_return_documents", &[F(f::return_documents_true), Ok]),
    ("matching_extras_dimensions_no_op", &[Ok, F(f::extras_dimensions_match), F(f::wire_dimensions_declared)]),
    ("matching_extras_truncate_is_noop", &[Ok, ExtrasHas("truncate"), F(f::truncate_noop)]),
    ("matching_extras_truncation_is_noop", &[Ok, ExtrasHas("truncation"), WireMatchesExtras("truncation")]),
    ("matching_value_omitted_body_stays_minimal", &[Ok, ExtrasHas("truncate"), WireAbsent("truncate"), F(f::tei_embed_body_minimal)]),
    ("model_is_bound_id", &[Ok, F(f::model_is_bound)]),
    ("model_is_bound_id_when_cohere_omits_echo", &[Ok, F(f::served_no_model), F(f::model_is_bound)]),
    ("model_is_bound_id_when_tei_omits_echo", &[Ok, F(f::served_no_model), F(f::model_is_bound)]),
    ("multi_input_chunk_sent_as_one_request_not_token_sub_chunked", &[Requests(1), F(f::one_request_all_inputs)]),
    ("no_duplicate_index_across_stitched_results", &[Ok, F(f::indices_distinct)]),
    ("no_embed_request_issued", &[EMBED, Requests(0)]),
    ("no_embedding_response_stored_on_failure", &[EMBED, RaisedOut, F(f::nothing_stored)]),
    ("no_error_raised_on_malformed_extras", &[F(f::extras_types_malformed), Ok]),
    ("no_fall_through_to_later_chunk_id", &[Ok, F(f::chunked), F(f::first_id_malformed), F(f::response_id_null)]),
    ("no_provider_invalid_response_raised", &[NotRaised(Cat::InvalidResponse), Ok]),
    ("no_rerank_request_issued", &[RERANK, Requests(0)]),
    ("no_retry_loop", &[RaisedOut, F(f::no_request_after_error)]),
    ("no_truncated_score_returned", &[RERANK, RaisedOut, F(f::nothing_stored)]),
    ("no_truncated_vector_returned", &[EMBED, RaisedOut, F(f::nothing_stored)]),
    ("non_conforming_embedding_shape_raises_provider_invalid_response", &[F(f::served_non_conforming_embedding), Raised(Cat::InvalidResponse)]),
    ("non_object_scalar_document_echo_detected", &[F(f::served_scalar_echo), Raised(Cat::InvalidResponse)]),
    ("not_silently_coerced_to_search_document_default", &[F(f::input_type_set), PreSend]),
    ("omitted_echo_left_null_not_autofilled", &[Ok, F(f::omitted_echoes_null)]),
    ("out_of_range_index_detected", &[F(f::served_out_of_range_index), Raised(Cat::InvalidResponse)]),
    ("over_cap_request_chunked_not_sent_whole", &[F(f::over_cap_chunked)]),
    ("over_token_400_maps_to_provider_invalid_request", &[Answered(400), Raised(Cat::InvalidRequest)]),
    ("over_token_chunk_not_sub_chunked_by_tokens", &[F(f::count_chunked)]),
    ("per_result_document_shape_variance_preserved", &[Ok, F(f::served_mixed_echo_shapes), F(f::echoes_from_wire)]),
    ("prompt_tokens_maps_to_input_tokens", &[Ok, F(f::usage_present), F(f::usage_from_wire)]),
    ("provider_invalid_response_raised", &[Raised(Cat::InvalidResponse)]),
    ("rate_limit_not_misclassified_as_unavailable", &[Answered(429), Raised(Cat::RateLimit)]),
    ("raw_is_list_of_per_chunk_response_objects", &[Ok, F(f::chunked), F(f::raw_list_of_objects), F(f::raw_verbatim)]),
    ("raw_is_single_verbatim_response_object_not_list", &[Ok, Requests(1), F(f::raw_is_object), F(f::raw_verbatim)]),
    ("raw_preserves_base64_strings_verbatim", &[Ok, F(f::served_base64), F(f::raw_verbatim)]),
    ("relied_upon_default_reject_no_wire_field_to_intercept", &[EMBED, ExtrasHas("truncate"), PreSend]),
    ("request_params_empty_when_input_type_absent", &[InputType(None), F(f::event_request_params_empty)]),
    ("rerank_event_usage_null_mirrors_response", &[RERANK, Ok, F(f::event_usage_null_mirrors)]),
    ("response_id_empty_string_not_surfaced", &[Ok, F(f::served_id_empty), F(f::response_id_null)]),
    ("response_id_from_first_chunk_id", &[Ok, F(f::chunked), F(f::response_id_from_first)]),
    ("response_id_from_top_level_id", &[Ok, F(f::response_id_from_first)]),
    ("response_id_not_coerced_to_string", &[Ok, F(f::first_id_malformed), F(f::response_id_null)]),
    ("response_id_null_openai_surfaces_none", &[Ok, F(f::served_no_id), F(f::response_id_null)]),
    ("response_id_null_tei_surfaces_none", &[Ok, F(f::served_no_id), F(f::response_id_null)]),
    ("response_id_null_when_jina_omits", &[Ok, F(f::served_no_id), F(f::response_id_null)]),
    ("response_id_null_when_openai_omits", &[Ok, F(f::served_no_id), F(f::response_id_null)]),
    ("result_count_at_most_document_count", &[Ok, F(f::count_le_documents)]),
    ("result_count_at_most_top_k", &[Ok, F(f::count_le_top_k)]),
    ("result_count_below_top_k_permitted", &[Ok, F(f::count_below_top_k)]),
    ("result_count_equals_top_k", &[Ok, F(f::count_eq_top_k)]),
    ("result_count_matches_response", &[Ok, F(f::count_matches_served)]),
    ("result_indices_are_absolute_into_original_document_list", &[Ok, F(f::indices_valid), F(f::results_from_wire)]),
    ("results_globally_sorted_by_score_descending_across_chunks", &[Ok, F(f::chunked), F(f::sorted), F(f::results_from_wire)]),
    ("results_sorted_by_relevance_descending", &[Ok, F(f::sorted)]),
    ("same_query_on_every_chunk_request", &[F(f::chunked), F(f::same_query)]),
    ("search_units_maps_to_search_units", &[Ok, F(f::search_units_from_wire)]),
    ("search_units_null_when_jina_omits", &[Ok, F(f::search_units_null_unreported)]),
    ("stitched_usage_is_sum_of_sound_chunk_figures", &[Ok, F(f::chunked), F(f::usage_present), F(f::usage_from_wire)]),
    ("stitched_usage_not_partial_sum_of_wellformed_chunks", &[Ok, F(f::chunked), F(f::some_figure_malformed), F(f::usage_null)]),
    ("task_managed_while_input_type_set_conflict_rejected_pre_send", &[F(f::input_type_set), ExtrasHas("task"), PreSend]),
    ("textdoc_object_unwrapped_to_text", &[Ok, F(f::served_textdoc_echo), F(f::echoes_from_wire)]),
    ("token_sub_chunker_would_issue_two_requests_and_fail", &[Requests(1), F(f::one_request_all_inputs), Raised(Cat::InvalidRequest)]),
    ("top_k_exceeding_document_count_permitted", &[Ok, F(f::top_k_exceeds_documents), F(f::count_le_documents)]),
    ("top_k_honored_after_global_sort", &[Ok, F(f::chunked), F(f::count_eq_top_k), F(f::results_from_wire)]),
    ("top_k_violation_detected", &[F(f::served_over_top_k), Raised(Cat::InvalidResponse)]),
    ("total_tokens_maps_to_input_tokens", &[Ok, F(f::rerank_input_tokens_from_wire)]),
    ("truncate_absent_from_wire", &[WireAbsent("truncate")]),
    ("unrecognized_input_type_rejected_pre_send", &[F(f::input_type_set), PreSend]),
    ("usage_not_clamped_or_fabricated", &[Ok, F(f::some_figure_malformed), F(f::usage_null)]),
    ("usage_not_coerced_or_fabricated", &[Ok, F(f::some_figure_malformed), F(f::usage_null)]),
    ("usage_unaffected_by_empty_response_id", &[Ok, F(f::usage_present), F(f::usage_from_wire)]),
    ("usage_unaffected_by_malformed_first_chunk_id", &[Ok, F(f::usage_present), F(f::usage_from_wire)]),
    ("usage_unaffected_by_malformed_response_id", &[Ok, F(f::usage_present), F(f::usage_from_wire)]),
    ("vector_at_index_one_matches_second_input", &[Ok, VectorAt(1)]),
    ("vector_at_index_two_matches_third_input", &[Ok, VectorAt(2)]),
    ("vector_at_index_zero_matches_first_input", &[Ok, VectorAt(0)]),
    ("vectors_assembled_from_embeddings_float_in_input_order", &[Ok, F(f::vectors_from_wire)]),
    ("vectors_concatenated_in_input_order", &[Ok, F(f::chunked), F(f::vectors_from_wire)]),
    ("vectors_in_input_order", &[Ok, F(f::vectors_from_wire)]),
    ("vectors_length_matches_input_length", &[Ok, F(f::one_vector_per_input)]),
    ("verbatim_imagedoc_object_on_raw", &[Ok, F(f::served_textless_object_echo), F(f::raw_verbatim)]),
    ("verbatim_mixed_shapes_on_raw", &[Ok, F(f::served_mixed_echo_shapes), F(f::raw_verbatim)]),
    ("verbatim_response_preserved_on_raw", &[Ok, F(f::raw_verbatim)]),
    ("verbatim_textdoc_object_on_raw", &[Ok, F(f::served_textdoc_echo), F(f::raw_verbatim)]),
    ("whole_call_fails_loud_no_partial_stitch", &[F(f::an_earlier_chunk_succeeded), RaisedOut, F(f::nothing_stored)]),
    ("wire_body_byte_identical_to_default_path", &[RERANK, Probe]),
    ("wire_body_byte_identical_to_symmetric_path", &[EMBED, Probe]),
    ("wire_dimensions_is_declared_value_once", &[F(f::wire_dimensions_declared), WireKeyOnce("dimensions")]),
    ("wire_mandatory_default_not_reflected_onto_event", &[InputType(None), WireEq("input_type", Str("search_document")), F(f::event_request_params_empty)]),
    ("wire_request_carries_dimensions_field", &[F(f::wire_dimensions_declared)]),
    ("wire_request_carries_input_type_classification", &[WireEq("input_type", Str("classification"))]),
    ("wire_request_carries_input_type_clustering", &[WireEq("input_type", Str("clustering"))]),
    ("wire_request_carries_input_type_search_document", &[WireEq("input_type", Str("search_document"))]),
    ("wire_request_carries_input_type_search_document_when_input_type_absent", &[InputType(None), WireEq("input_type", Str("search_document"))]),
    ("wire_request_carries_input_type_search_query", &[WireEq("input_type", Str("search_query"))]),
    ("wire_request_carries_model", &[F(f::wire_model_bound)]),
    ("wire_request_carries_output_dimension_field", &[F(f::wire_output_dimension_declared)]),
    ("wire_request_carries_prompt_name_passage", &[WireEq("prompt_name", Str("passage"))]),
    ("wire_request_carries_prompt_name_query", &[WireEq("prompt_name", Str("query"))]),
    ("wire_request_carries_task_retrieval_passage", &[WireEq("task", Str("retrieval.passage"))]),
    ("wire_request_carries_task_retrieval_query", &[WireEq("task", Str("retrieval.query"))]),
    ("wire_request_carries_task_text_matching", &[WireEq("task", Str("text-matching"))]),
    ("wire_request_carries_top_n_from_top_k", &[F(f::wire_top_n)]),
    ("wire_request_documents_match_in_order", &[RERANK, F(f::wire_inputs_verbatim)]),
    ("wire_request_documents_sent_as_string_array", &[RERANK, F(f::wire_documents_strings), F(f::wire_inputs_verbatim)]),
    ("wire_request_embedding_types_contains_all_extras_precisions", &[F(f::wire_has_extras_precisions)]),
    ("wire_request_embedding_types_contains_extras_precision", &[F(f::wire_has_extras_precisions)]),
    ("wire_request_embedding_types_contains_float", &[F(f::wire_has_float)]),
    ("wire_request_embedding_types_contains_float_exactly_once", &[F(f::float_once)]),
    ("wire_request_embedding_types_float", &[FLOAT_ONLY]),
    ("wire_request_embedding_types_is_float_only", &[FLOAT_ONLY]),
    ("wire_request_input_carries_document_prefix", &[InputType(Some("document")), F(f::wire_input_prefixed)]),
    ("wire_request_input_carries_query_prefix", &[InputType(Some("query")), F(f::wire_input_prefixed)]),
    ("wire_request_input_sent_verbatim", &[EMBED, F(f::wire_inputs_verbatim)]),
    ("wire_request_input_type_search_document_default", &[InputType(None), WireEq("input_type", Str("search_document"))]),
    ("wire_request_is_array_form", &[EMBED, F(f::wire_inputs_array)]),
    ("wire_request_omits_input_type_field", &[WireAbsent("input_type")]),
    ("wire_request_omits_output_dimension_when_dimensions_absent", &[F(f::no_dimensions), WireAbsent("output_dimension")]),
    ("wire_request_omits_prompt_name_when_input_type_absent", &[InputType(None), WireAbsent("prompt_name")]),
    ("wire_request_omits_return_documents", &[WireAbsent("return_documents")]),
    ("wire_request_omits_return_documents_field", &[WireAbsent("return_documents")]),
    ("wire_request_omits_task_when_input_type_absent", &[InputType(None), WireAbsent("task")]),
    ("wire_request_omits_top_n_when_top_k_absent", &[F(f::no_top_k), WireAbsent("top_n")]),
    ("wire_request_omits_truncation", &[WireAbsent("truncation")]),
    ("wire_request_overrides_jina_true_default", &[F(f::return_documents_unset), WireEq("return_documents", Bool(false))]),
    ("wire_request_return_documents_false", &[WireEq("return_documents", Bool(false))]),
    ("wire_request_return_documents_false_explicit", &[WireEq("return_documents", Bool(false))]),
    ("wire_request_return_documents_true", &[WireEq("return_documents", Bool(true))]),
    ("wire_request_return_text_false", &[WireEq("return_text", Bool(false))]),
    ("wire_request_return_text_true", &[WireEq("return_text", Bool(true))]),
    ("wire_request_routes_to_base_url", &[F(f::routes_to_base_url)]),
    ("wire_request_texts_match_documents_in_order", &[RERANK, F(f::wire_inputs_verbatim)]),
    ("wire_request_texts_match_in_order", &[EMBED, F(f::wire_inputs_verbatim)]),
    ("wire_request_truncate_false", &[WireEq("truncate", Bool(false))]),
    ("wire_request_truncate_none", &[WireEq("truncate", Str("NONE"))]),
    ("wire_request_truncation_false", &[WireEq("truncation", Bool(false))]),
    ("wire_truncate_is_managed_none_unduplicated", &[WireEq("truncate", Str("NONE")), WireKeyOnce("truncate")]),
    ("wire_truncation_is_managed_false_unduplicated", &[WireEq("truncation", Bool(false)), WireKeyOnce("truncation")]),
];

/// The names [`TABLE`] knows (for [`crate::table::registry`]).
pub(crate) const TABLE_NAMES: fn() -> Vec<&'static str> = || names(TABLE);

fn extras<'r>(run: &'r Run<'_>) -> &'r serde_json::Map<String, Value> {
    match run.call {
        Call::Embed(c) => &c.config.extras,
        Call::Rerank(c) => &c.config.extras,
    }
}

fn every_body(run: &Run<'_>, f: impl Fn(&Value) -> Check) -> Check {
    let bodies = run.bodies();
    ensure(!bodies.is_empty(), || "no request reached the wire".into())?;
    bodies.into_iter().try_for_each(f)
}

fn raised_out(run: &Run<'_>) -> Check<Cat> {
    let e = run.error().ok_or("the call did not raise")?;
    let failure = run
        .graph
        .as_ref()
        .err()
        .ok_or("the call raised, but the invocation completed")?;
    ensure(failure.node == run.node, || {
        format!(
            "the invocation failed at `{}`, not `{}`",
            failure.node, run.node
        )
    })?;
    ensure(
        failure.category.as_deref() == Some(e.category.as_str()),
        || {
            format!(
                "the invocation's cause carries {:?}, the call raised {}",
                failure.category, e.category
            )
        },
    )?;
    std::result::Result::Ok(e.category)
}

/// Evaluates one check.
fn check(c: Rule, run: &Run<'_>) -> Check {
    match c {
        Rule::Kind(k) => ensure(run.call.kind() == k, || {
            format!("the call is not a {k:?} call")
        }),
        Requests(n) => ensure(run.requests.len() == n, || {
            format!(
                "{} request(s) reached the wire, expected {n}",
                run.requests.len()
            )
        }),
        RaisedOut => raised_out(run).map(|_| ()),
        Raised(cat) => {
            let got = raised_out(run)?;
            ensure(got == cat, || {
                format!(
                    "the call raised {got} ({}), expected {cat}",
                    run.error().map_or("", |e| e.message.as_str())
                )
            })
        }
        PreSend => {
            check(Raised(Cat::InvalidRequest), run)?;
            check(Requests(0), run)
        }
        Ok => {
            ensure(run.record().is_some(), || {
                format!("the call did not return a response: {:?}", run.error())
            })?;
            ensure(run.graph.is_ok(), || "the invocation failed".into())
        }
        NotRaised(cat) => ensure(run.error().is_none_or(|e| e.category != cat), || {
            format!("the call raised {cat}")
        }),
        Answered(status) => {
            let last = run.requests.last().and_then(|r| r.status);
            ensure(last == Some(status), || {
                format!("the last request was answered {last:?}, expected {status}")
            })
        }
        InputType(want) => {
            let got = match run.call {
                Call::Embed(e) => e.config.input_type.as_deref(),
                Call::Rerank(_) => None,
            };
            ensure(got == want, || {
                format!("the call's input_type is {got:?}, expected {want:?}")
            })
        }
        ExtrasHas(key) => ensure(extras(run).contains_key(key), || {
            format!("the call's extras carry no `{key}`")
        }),
        WireMatchesExtras(key) => {
            let want = extras(run)
                .get(key)
                .ok_or_else(|| format!("the call's extras carry no `{key}`"))?;
            every_body(run, |b| {
                ensure(b.get(key) == Some(want), || {
                    format!("the body's `{key}` is not the extras' {want}: {b}")
                })
            })
        }
        WireEq(key, lit) => {
            let want = lit.json();
            every_body(run, |b| {
                ensure(b.get(key) == Some(&want), || {
                    format!("the body's `{key}` is not {want}: {b}")
                })
            })
        }
        WireAbsent(key) => every_body(run, |b| {
            ensure(b.get(key).is_none(), || {
                format!("the body carries `{key}`: {b}")
            })
        }),
        WireKeyOnce(key) => {
            ensure(!run.requests.is_empty(), || {
                "no request reached the wire".into()
            })?;
            let needle = format!("\"{key}\"");
            run.requests.iter().try_for_each(|r| {
                let text = String::from_utf8_lossy(&r.body);
                let n = text.matches(&needle).count();
                ensure(n == 1, || {
                    format!("the raw body names `{key}` {n} times: {text}")
                })
            })
        }
        Chunks(sizes) => {
            check(Requests(sizes.len()), run)?;
            let got: Vec<usize> = run
                .bodies()
                .iter()
                .map(|b| {
                    let key = super::oracle::list_key(run.bound.mapping, run.call.kind());
                    b.get(key).and_then(Value::as_array).map_or(0, Vec::len)
                })
                .collect();
            ensure(got == sizes, || {
                format!("chunk sizes {got:?}, expected {sizes:?}")
            })?;
            f::wire_inputs_verbatim(run)
        }
        VectorAt(i) => f::vector_at(run, i),
        Probe => {
            check(Requests(1), run)?;
            let probe = run
                .probe
                .as_ref()
                .ok_or("no probe ran")?
                .as_ref()
                .map_err(Clone::clone)?;
            let sent = &run.requests[0].body;
            ensure(sent == probe, || {
                format!(
                    "the body {} differs from the knob-free body {}",
                    String::from_utf8_lossy(sent),
                    String::from_utf8_lossy(probe)
                )
            })
        }
        Rule::Fact(fact) => fact(run),
    }
}

/// Whether any of the case's invariants needs the byte-identity probe.
pub(super) fn needs_probe<'n>(names: impl IntoIterator<Item = &'n String>) -> bool {
    names
        .into_iter()
        .filter_map(|n| lookup(TABLE, n))
        .any(|checks| checks.iter().any(|c| matches!(c, Probe)))
}

/// Evaluates every invariant of the case.
///
/// # Errors
/// The first invariant that does not hold, or an unknown name (as the error text of
/// a `fixture_directive_unknown`).
pub(super) fn all(run: &Run<'_>) -> Check {
    for (name, value) in &run.case.expected.invariants {
        let checks = invariant(TABLE, name)?;
        ensure(*value, || {
            format!("invariant `{name}`: only `true` is supported")
        })?;
        for c in checks {
            check(*c, run).map_err(|m| m.context(format!("invariant `{name}`: ")))?;
        }
    }
    std::result::Result::Ok(())
}
