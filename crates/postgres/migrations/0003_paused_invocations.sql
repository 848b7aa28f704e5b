-- One row per suspended invocation (suspension §8.5, pipeline-utilities §10.15),
-- apart from the checkpoints so a checkpoint resume never loads one. `status` is
-- `suspended` until a resume claims the row (one conditional UPDATE: one claim
-- wins across processes), then `resumed` until the resumed run deletes it. The
-- record is the JSON text the crate wrote; its `status` field is superseded by
-- the column.
CREATE TABLE {schema}.openarmature_paused_invocations (
    invocation_id   TEXT PRIMARY KEY,
    signal_id       TEXT NOT NULL,
    status          TEXT NOT NULL CHECK (status IN ('suspended', 'resumed')),
    suspended_at_ns BIGINT NOT NULL,
    record          TEXT NOT NULL
);
CREATE INDEX openarmature_paused_signal_idx
    ON {schema}.openarmature_paused_invocations (signal_id, status, suspended_at_ns);
CREATE INDEX openarmature_paused_status_idx
    ON {schema}.openarmature_paused_invocations (status, suspended_at_ns);
