-- The growing parts of a checkpoint record in rows of their own, so a save writes
-- only what changed since the previous save (pipeline-utilities §10.3.1 records
-- are still full snapshots: `load` reassembles them). The record row then holds
-- no completed positions and fan-out entries without their instances. Rows saved
-- before this migration keep everything inline and are read as before.

-- completed_positions, one row each, in completion order (`seq` from 0).
CREATE TABLE {schema}.openarmature_checkpoint_positions (
    invocation_id TEXT NOT NULL,
    seq           BIGINT NOT NULL,
    position      TEXT NOT NULL,
    PRIMARY KEY (invocation_id, seq)
);
-- One row per fan-out in the latest record: the version of its instances stored.
CREATE TABLE {schema}.openarmature_checkpoint_fan_outs (
    invocation_id TEXT NOT NULL,
    fan_out_key   TEXT NOT NULL,
    version_id    BIGINT NOT NULL,
    version_seq   BIGINT NOT NULL,
    PRIMARY KEY (invocation_id, fan_out_key)
);
-- One row per fan-out instance that is not `not_started`.
CREATE TABLE {schema}.openarmature_checkpoint_instances (
    invocation_id TEXT NOT NULL,
    fan_out_key   TEXT NOT NULL,
    idx           BIGINT NOT NULL,
    progress      TEXT NOT NULL,
    PRIMARY KEY (invocation_id, fan_out_key, idx)
);
