-- One row per session (sessions §5); `version` is the §8.2 optimistic
-- concurrency counter: 1 after the first save, +1 per save.
CREATE TABLE {schema}.openarmature_sessions (
    session_id     TEXT PRIMARY KEY,
    schema_version TEXT NOT NULL,
    version        BIGINT NOT NULL CHECK (version > 0),
    created_at_ns  BIGINT NOT NULL,
    updated_at_ns  BIGINT NOT NULL,
    state          TEXT NOT NULL
);
CREATE INDEX openarmature_sessions_updated_idx
    ON {schema}.openarmature_sessions (updated_at_ns, session_id);
