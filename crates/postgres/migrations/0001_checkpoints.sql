-- One row per invocation, upserted on every save: the latest record wins
-- (pipeline-utilities §10.3.1). The record is the JSON text the crate wrote,
-- kept byte for byte (key order included).
CREATE TABLE {schema}.openarmature_checkpoints (
    invocation_id        TEXT PRIMARY KEY,
    correlation_id       TEXT NOT NULL,
    last_saved_at_ns     BIGINT NOT NULL,
    completed_node_count BIGINT NOT NULL,
    record               TEXT NOT NULL
);
CREATE INDEX openarmature_checkpoints_saved_idx
    ON {schema}.openarmature_checkpoints (last_saved_at_ns);
CREATE INDEX openarmature_checkpoints_correlation_idx
    ON {schema}.openarmature_checkpoints (correlation_id, last_saved_at_ns);
