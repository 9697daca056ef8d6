-- Cumulus v22.0.x-v22.1.x replacement for the block between the BEGIN GUARDS v22.3 and
-- END GUARDS v22.3 marker lines (inclusive) in schema_v22.sql.
-- Differences from v22.3:
--   * guard tables are plain (not partitioned): a duplicate reports constraint
--     granules_global_unique_pkey / files_global_unique_pkey / executions_global_unique_pkey
--     (or executions_global_unique_url_unique);
--   * executions and granules each have ONE combined guard trigger (BEFORE INSERT OR UPDATE OF ... OR DELETE)
--     instead of the split _insert/_update/_delete triggers; the granules one has no
--     cumulus.allow_collection_update handling.
-- Sources (nasa/cumulus, packages/db/src/migrations/):
--   025_executions_global_unique.ts, 065_granules_global_unique.ts @ a6eb62e0c78737e465b04f586dd3c8e22f178fe6
--   075_files_global_unique.ts @ 0ca65379b968f5146d118d1a21444ecd6c9ab81f
--   110_executions_triggers.ts, 130_files_triggers.ts @ a6eb62e0c78737e465b04f586dd3c8e22f178fe6
--   120_granules_triggers.ts: the stored version whose trigger is named
--     granules_enforce_unique_granule_id_trigger (the name the v22.2 migration
--     20260529151018_update_granules_uniqueness_trigger.ts drops); its commit id is not shown by the store.
-- v22.2.x = this file's guard TABLES + this file's executions trigger + the files trigger, but the
--   v22.2 granules triggers (the three granules_enforce_unique_granule_id_trigger_{delete,insert,update}
--   in schema_v22.sql). See docs/cumulus-v22-sources.md.

-- @@BEGIN GUARDS v22.0@@
CREATE TABLE executions_global_unique (
  arn text CONSTRAINT executions_global_unique_pkey PRIMARY KEY,
  url text CONSTRAINT executions_global_unique_url_unique UNIQUE
);

CREATE TABLE granules_global_unique (
  granule_id text CONSTRAINT granules_global_unique_pkey PRIMARY KEY
);

CREATE TABLE files_global_unique (
  bucket text NOT NULL,
  key text NOT NULL,
  CONSTRAINT files_global_unique_pkey PRIMARY KEY (bucket, key)
);

-- @@BEGIN EXECUTIONS TRIGGERS v22.0@@
CREATE OR REPLACE FUNCTION executions_enforce_global_uniqueness()
RETURNS trigger AS $$
DECLARE
  rows smallint;
BEGIN
  IF (TG_OP IN ('DELETE', 'UPDATE')) THEN
    DELETE FROM executions_global_unique
    WHERE arn = OLD.arn;

  -- Don't block delete if guard row missing
    IF TG_OP = 'DELETE' THEN
      RETURN OLD;
    END IF;
  END IF;

  IF (TG_OP IN ('INSERT', 'UPDATE')) THEN
    INSERT INTO executions_global_unique (arn, url)
    VALUES (NEW.arn, NEW.url);
  END IF;

  GET DIAGNOSTICS rows = ROW_COUNT;

  IF rows != 1 THEN
    RAISE EXCEPTION '% affected % rows (expected: 1)', TG_OP, rows;
  END IF;

  RETURN NEW;
END;
$$ LANGUAGE plpgsql;

CREATE TRIGGER executions_enforce_unique_arn_url_trigger
BEFORE INSERT OR UPDATE OF arn, url OR DELETE
ON executions
FOR EACH ROW
EXECUTE FUNCTION executions_enforce_global_uniqueness();
-- @@END EXECUTIONS TRIGGERS v22.0@@

-- @@BEGIN GRANULES TRIGGERS v22.0@@
CREATE OR REPLACE FUNCTION granules_enforce_global_uniqueness()
RETURNS trigger AS $$
DECLARE
  rows smallint;
BEGIN
  IF (TG_OP IN ('DELETE', 'UPDATE')) THEN
    DELETE FROM granules_global_unique
    WHERE granule_id = OLD.granule_id;

    -- Don't block delete if guard row missing
    IF TG_OP = 'DELETE' THEN
      RETURN OLD;
    END IF;
  END IF;

  IF (TG_OP IN ('INSERT', 'UPDATE')) THEN
    INSERT INTO granules_global_unique (granule_id)
    VALUES (NEW.granule_id);
  END IF;

  GET DIAGNOSTICS rows = ROW_COUNT;

  IF rows != 1 THEN
    RAISE EXCEPTION '% affected % rows (expected: 1)', TG_OP, rows;
  END IF;

  RETURN NEW;
END;
$$ LANGUAGE plpgsql;

CREATE TRIGGER granules_enforce_unique_granule_id_trigger
BEFORE INSERT OR UPDATE OF granule_id OR DELETE
ON granules
FOR EACH ROW
EXECUTE FUNCTION granules_enforce_global_uniqueness();
-- @@END GRANULES TRIGGERS v22.0@@

CREATE OR REPLACE FUNCTION files_enforce_global_uniqueness()
RETURNS trigger AS $$
DECLARE
  rows smallint;
BEGIN
  IF (TG_OP IN ('DELETE', 'UPDATE')) THEN
    DELETE FROM files_global_unique
    WHERE bucket = OLD.bucket
    AND key = OLD.key;

  -- Don't block delete if guard row missing
    IF TG_OP = 'DELETE' THEN
      RETURN OLD;
    END IF;
  END IF;

  IF (TG_OP IN ('INSERT', 'UPDATE')) THEN
    INSERT INTO files_global_unique (bucket, key)
    VALUES (NEW.bucket, NEW.key);
  END IF;

  GET DIAGNOSTICS rows = ROW_COUNT;

  IF rows != 1 THEN
    RAISE EXCEPTION '% affected % rows (expected: 1)', TG_OP, rows;
  END IF;

  RETURN NEW;
END;
$$ LANGUAGE plpgsql;

CREATE TRIGGER files_enforce_unique_bucket_key_trigger
BEFORE INSERT OR UPDATE OF bucket, key OR DELETE
ON files
FOR EACH ROW
EXECUTE FUNCTION files_enforce_global_uniqueness();
-- @@END GUARDS v22.0@@
