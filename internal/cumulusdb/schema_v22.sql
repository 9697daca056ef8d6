-- Cumulus v22.3 PostgreSQL schema (partitioned tables), as the knex migrations of
-- nasa/cumulus leave it after a fresh v22.3 deploy. Used by tests and local dev
-- databases only. Written by hand from the migrations in
-- packages/db/src/migrations/ of nasa/cumulus (see docs/cumulus-v22-sources.md):
--   010_async_operations.ts ............ 4ada7d4e6711d8c91839cd3e4c546206f4598f3a
--   020_collections.ts ................. e7cbe65f5bfd9f68049b2e1b367a8ba79f99e0a8 (cmr_provider NOT NULL)
--   20260527_add_collection_mission.ts . 09e04d5ad991aee53aa9b77ac53b1f218f932644 (adds metrics_provider; v22.2)
--   025_executions_global_unique.ts .... a6eb62e0c78737e465b04f586dd3c8e22f178fe6
--   030_executions.ts .................. 38da712a34cc702ebb08be2ffedbdc8374b74d9b
--   040_providers.ts ................... 4ada7d4e6711d8c91839cd3e4c546206f4598f3a
--   060_pdrs.ts ........................ 28d5bacb33afce7acc0b56bd772ea671218af054 (FK ON UPDATE CASCADE; 54d587a9 has no ON UPDATE)
--   065_granules_global_unique.ts ...... a6eb62e0c78737e465b04f586dd3c8e22f178fe6
--   070_granules.ts .................... 38da712a34cc702ebb08be2ffedbdc8374b74d9b (GRANULES_PARTITION_COUNT default 8)
--   075_files_global_unique.ts ......... 0ca65379b968f5146d118d1a21444ecd6c9ab81f
--   080_files.ts ....................... 38da712a34cc702ebb08be2ffedbdc8374b74d9b (FILES_PARTITION_COUNT default 8)
--   090_granules_executions.ts ......... 38da712a34cc702ebb08be2ffedbdc8374b74d9b
--   130_files_triggers.ts .............. a6eb62e0c78737e465b04f586dd3c8e22f178fe6
--   20260529151018_update_granules_uniqueness_trigger.ts ...... 0ca65379b968f5146d118d1a21444ecd6c9ab81f (v22.2)
--   20260615213244_add_procedures_to_manage_executions_partitions.ts 26756de66d4a3462428f9facf0ed10b92c4fdd36 (v22.3)
--   20260616143759_update_executions_uniqueness_triggers.ts ... 66e422b33737def0286c74f6c8eb1ed6ded5d39a (v22.3)
--   20260625141202_partition_granules_global_unique.ts ........ 2f1e1c314d422e052b01c578623f8c35be683f12 (v22.3)
--   20260625161818_partition_files_global_unique.ts ........... 13b18c16c3581dee9c7a5a30f016985531ae7228 (v22.3)
-- Ignored (abandoned designs): *_lookup.ts, 120_executions_triggers.ts, 130_granules_triggers.ts.
-- Not created here: rules, reconciliation_reports, knex_migrations (a real deploy has them).
--
-- Constraint names are the ones the migrations produce (knex naming: <table>_<cols>_foreign,
-- <table>_<cols>_unique). Two knex FK names on granules_executions exceed 63 bytes; PostgreSQL
-- truncates them exactly as it does on a real deploy (NOTICE "identifier ... will be truncated").
--
-- Placeholders for Go code (each marker appears exactly once below, as a whole line):
--   the EXECUTIONS_PARTITIONS marker line: replace with the quarterly partitions, e.g.
--     CREATE TABLE executions_2026_q1 PARTITION OF executions FOR VALUES FROM ('2026-01-01') TO ('2026-04-01');
--   the lines from BEGIN GUARDS v22.3 to END GUARDS v22.3 (inclusive): the guard tables (partitioned
--     ones are v22.3-only) and the guard triggers; schema_v22_guards_v22_0.sql holds the v22.0-v22.1
--     replacement for that block.

CREATE TABLE async_operations (
  cumulus_id serial CONSTRAINT async_operations_pkey PRIMARY KEY,
  id uuid NOT NULL CONSTRAINT async_operations_id_unique UNIQUE,
  description text NOT NULL,
  operation_type text NOT NULL,
  output jsonb,
  status text NOT NULL,
  task_arn text,
  created_at timestamptz(3) DEFAULT CURRENT_TIMESTAMP(3),
  updated_at timestamptz(3) DEFAULT CURRENT_TIMESTAMP(3)
);
CREATE INDEX async_operations_status_operation_type_cumulus_id_index ON async_operations (status, operation_type, cumulus_id);
CREATE INDEX async_operations_updated_at_index ON async_operations (updated_at);
ALTER TABLE async_operations ADD CONSTRAINT async_operations_operation_type_check
  CHECK (operation_type = ANY (ARRAY['Bulk Execution Archive', 'Bulk Execution Delete', 'Bulk Granules',
    'Bulk Granule Archive', 'Bulk Granule Delete', 'Bulk Granule Reingest', 'Data Migration',
    'Dead-Letter Processing', 'DLA Migration', 'ES Index', 'Kinesis Replay', 'Migration Count Report',
    'Reconciliation Report', 'SQS Replay']));
ALTER TABLE async_operations ADD CONSTRAINT async_operations_status_check
  CHECK (status = ANY (ARRAY['RUNNING', 'SUCCEEDED', 'RUNNER_FAILED', 'TASK_FAILED']));

CREATE TABLE collections (
  cumulus_id serial CONSTRAINT collections_pkey PRIMARY KEY,
  name text NOT NULL,
  version text NOT NULL,
  sample_file_name text NOT NULL,
  granule_id_validation_regex text NOT NULL,
  granule_id_extraction_regex text NOT NULL,
  files jsonb NOT NULL,
  process text,
  url_path text,
  duplicate_handling text,
  report_to_ems boolean,
  ignore_files_config_for_discovery boolean,
  meta jsonb,
  tags jsonb,
  created_at timestamptz(3) DEFAULT CURRENT_TIMESTAMP(3),
  updated_at timestamptz(3) DEFAULT CURRENT_TIMESTAMP(3),
  cmr_provider text NOT NULL,                       -- v22.0: NOT NULL (CUMULUS-4534)
  CONSTRAINT collections_name_version_unique UNIQUE (name, version)
);
CREATE INDEX collection_cmr_provider_index ON collections (cmr_provider);
CREATE INDEX collections_updated_at_index ON collections (updated_at);
ALTER TABLE collections ADD CONSTRAINT collections_duplicate_handling_check
  CHECK (duplicate_handling = ANY (ARRAY['error', 'replace', 'skip', 'version']));
-- v22.2.0 (20260527_add_collection_mission.ts, despite its name): metrics_provider
ALTER TABLE collections ADD COLUMN metrics_provider text NOT NULL;
CREATE INDEX collection_metrics_provider_index ON collections (metrics_provider);

CREATE TABLE providers (
  cumulus_id serial CONSTRAINT providers_pkey PRIMARY KEY,
  name text NOT NULL,
  protocol text NOT NULL DEFAULT 'http',
  host text NOT NULL,
  port integer,
  username text,
  password text,
  global_connection_limit integer,
  private_key text,
  cm_key_id text,
  certificate_uri text,
  created_at timestamptz(3) DEFAULT CURRENT_TIMESTAMP(3),
  updated_at timestamptz(3) DEFAULT CURRENT_TIMESTAMP(3),
  allowed_redirects text[],
  max_download_time integer,
  CONSTRAINT providers_name_unique UNIQUE (name)
);
CREATE INDEX providers_updated_at_index ON providers (updated_at);
ALTER TABLE providers ADD CONSTRAINT providers_protocol_check
  CHECK (protocol = ANY (ARRAY['http', 'https', 'ftp', 'sftp', 's3']));

-- executions: PARTITION BY RANGE (created_at); quarterly partitions + default partition.
CREATE TABLE executions (
  cumulus_id bigserial,
  arn text NOT NULL,
  async_operation_cumulus_id integer,
  collection_cumulus_id integer,
  parent_cumulus_id bigint,
  parent_created_at timestamptz(3),
  cumulus_version text,
  url text,
  status text NOT NULL,
  tasks jsonb,
  error jsonb,
  workflow_name text,
  duration real,
  original_payload jsonb,
  final_payload jsonb,
  "timestamp" timestamptz(3),
  created_at timestamptz(3) DEFAULT CURRENT_TIMESTAMP NOT NULL,
  updated_at timestamptz(3) DEFAULT CURRENT_TIMESTAMP NOT NULL,
  archived boolean DEFAULT false NOT NULL,
  CONSTRAINT executions_pkey PRIMARY KEY (cumulus_id, created_at),
  CONSTRAINT executions_arn_unique UNIQUE (arn, created_at),
  CONSTRAINT executions_url_unique UNIQUE (url, created_at)
) PARTITION BY RANGE (created_at);

CREATE TABLE executions_default PARTITION OF executions DEFAULT;
-- @@EXECUTIONS_PARTITIONS@@

CREATE INDEX executions_archived_index ON executions (archived);
CREATE INDEX executions_collection_cumulus_id_index ON executions (collection_cumulus_id);
CREATE INDEX executions_parent_cumulus_id_index ON executions (parent_cumulus_id, parent_created_at);
CREATE INDEX executions_status_collection_cumulus_id_index ON executions (status, collection_cumulus_id, cumulus_id);
CREATE INDEX executions_updated_at_index ON executions (updated_at);
ALTER TABLE executions ADD CONSTRAINT executions_async_operation_cumulus_id_foreign
  FOREIGN KEY (async_operation_cumulus_id) REFERENCES async_operations (cumulus_id);
ALTER TABLE executions ADD CONSTRAINT executions_collection_cumulus_id_foreign
  FOREIGN KEY (collection_cumulus_id) REFERENCES collections (cumulus_id);
ALTER TABLE executions ADD CONSTRAINT executions_parent_cumulus_id_foreign
  FOREIGN KEY (parent_cumulus_id, parent_created_at) REFERENCES executions (cumulus_id, created_at)
  ON DELETE SET NULL;
ALTER TABLE executions ADD CONSTRAINT executions_status_check
  CHECK (status = ANY (ARRAY['running', 'completed', 'failed', 'unknown']));

-- pdrs: not partitioned; still UNIQUE (name); references executions by (cumulus_id, created_at).
CREATE TABLE pdrs (
  cumulus_id serial CONSTRAINT pdrs_pkey PRIMARY KEY,
  collection_cumulus_id integer NOT NULL CONSTRAINT pdrs_collection_cumulus_id_foreign
    REFERENCES collections (cumulus_id),
  provider_cumulus_id integer NOT NULL CONSTRAINT pdrs_provider_cumulus_id_foreign
    REFERENCES providers (cumulus_id),
  execution_cumulus_id bigint,
  execution_created_at timestamptz(3),
  status text NOT NULL,
  name text NOT NULL,
  progress real,
  pan_sent boolean,
  pan_message text,
  stats jsonb,
  address text,
  original_url text,
  duration real,
  "timestamp" timestamptz,
  created_at timestamptz NOT NULL DEFAULT CURRENT_TIMESTAMP,   -- knex table.timestamps(false, true)
  updated_at timestamptz NOT NULL DEFAULT CURRENT_TIMESTAMP,
  CONSTRAINT pdrs_execution_cumulus_id_execution_created_at_foreign
    FOREIGN KEY (execution_cumulus_id, execution_created_at) REFERENCES executions (cumulus_id, created_at)
    ON DELETE SET NULL ON UPDATE CASCADE,
  CONSTRAINT pdrs_name_unique UNIQUE (name)
);
CREATE INDEX pdrs_coll_status_cumulus_id_index ON pdrs (collection_cumulus_id, status, cumulus_id);
CREATE INDEX pdrs_execution_cumulus_id_index ON pdrs (execution_cumulus_id);
CREATE INDEX pdrs_provider_collection_cumulus_id_name_index ON pdrs (provider_cumulus_id, collection_cumulus_id, name);
CREATE INDEX pdrs_status_provider_collection_cumulus_id_index ON pdrs (status, provider_cumulus_id, collection_cumulus_id, cumulus_id);
CREATE INDEX pdrs_updated_at_index ON pdrs (updated_at);
ALTER TABLE pdrs ADD CONSTRAINT pdrs_status_check CHECK (status = ANY (ARRAY['running', 'failed', 'completed']));

-- granules: PARTITION BY HASH (collection_cumulus_id), 8 partitions (GRANULES_PARTITION_COUNT default).
CREATE TABLE granules (
  cumulus_id bigserial,
  granule_id text NOT NULL,
  status text NOT NULL,
  collection_cumulus_id integer NOT NULL,
  created_at timestamptz(3) DEFAULT CURRENT_TIMESTAMP NOT NULL,
  updated_at timestamptz(3) DEFAULT CURRENT_TIMESTAMP NOT NULL,
  published boolean,
  duration real,
  time_to_archive real,
  time_to_process real,
  product_volume bigint,
  error jsonb,
  cmr_link text,
  pdr_cumulus_id integer,
  provider_cumulus_id integer,
  beginning_date_time timestamptz,
  ending_date_time timestamptz,
  last_update_date_time timestamptz,
  processing_end_date_time timestamptz,
  processing_start_date_time timestamptz,
  production_date_time timestamptz,
  query_fields jsonb,
  "timestamp" timestamptz(3),
  producer_granule_id text NOT NULL,
  archived boolean DEFAULT false NOT NULL,
  CONSTRAINT granules_pkey PRIMARY KEY (cumulus_id, collection_cumulus_id),
  CONSTRAINT granules_granule_id_unique UNIQUE (granule_id, collection_cumulus_id)
) PARTITION BY HASH (collection_cumulus_id);
CREATE TABLE granules_p0 PARTITION OF granules FOR VALUES WITH (MODULUS 8, REMAINDER 0);
CREATE TABLE granules_p1 PARTITION OF granules FOR VALUES WITH (MODULUS 8, REMAINDER 1);
CREATE TABLE granules_p2 PARTITION OF granules FOR VALUES WITH (MODULUS 8, REMAINDER 2);
CREATE TABLE granules_p3 PARTITION OF granules FOR VALUES WITH (MODULUS 8, REMAINDER 3);
CREATE TABLE granules_p4 PARTITION OF granules FOR VALUES WITH (MODULUS 8, REMAINDER 4);
CREATE TABLE granules_p5 PARTITION OF granules FOR VALUES WITH (MODULUS 8, REMAINDER 5);
CREATE TABLE granules_p6 PARTITION OF granules FOR VALUES WITH (MODULUS 8, REMAINDER 6);
CREATE TABLE granules_p7 PARTITION OF granules FOR VALUES WITH (MODULUS 8, REMAINDER 7);
CREATE INDEX granules_archived_index ON granules (archived);
CREATE INDEX granules_coll_status_processendtime_cumulus_id_index ON granules (collection_cumulus_id, status, processing_end_date_time, cumulus_id);
CREATE INDEX granules_collection_updated_idx ON granules (collection_cumulus_id, updated_at);
CREATE INDEX granules_producer_granule_id_index ON granules (producer_granule_id);
CREATE INDEX granules_provider_collection_cumulus_id_granule_id_index ON granules (provider_cumulus_id, collection_cumulus_id, granule_id);
CREATE INDEX granules_status_provider_collection_cumulus_id_index ON granules (status, provider_cumulus_id, collection_cumulus_id, cumulus_id);
CREATE INDEX granules_updated_at_index ON granules (updated_at);
ALTER TABLE granules ADD CONSTRAINT granules_status_check
  CHECK (status = ANY (ARRAY['running', 'completed', 'failed', 'queued']));
ALTER TABLE granules ADD CONSTRAINT granules_collection_cumulus_id_foreign
  FOREIGN KEY (collection_cumulus_id) REFERENCES collections (cumulus_id);
ALTER TABLE granules ADD CONSTRAINT granules_pdr_cumulus_id_foreign
  FOREIGN KEY (pdr_cumulus_id) REFERENCES pdrs (cumulus_id);
ALTER TABLE granules ADD CONSTRAINT granules_provider_cumulus_id_foreign
  FOREIGN KEY (provider_cumulus_id) REFERENCES providers (cumulus_id);

-- files: PARTITION BY HASH (granule_cumulus_id), 8 partitions (FILES_PARTITION_COUNT default).
CREATE TABLE files (
  cumulus_id bigserial,
  granule_cumulus_id bigint NOT NULL,
  collection_cumulus_id integer NOT NULL,
  created_at timestamptz(3) DEFAULT CURRENT_TIMESTAMP NOT NULL,
  updated_at timestamptz(3) DEFAULT CURRENT_TIMESTAMP NOT NULL,
  file_size bigint,
  bucket text NOT NULL,
  checksum_type text,
  checksum_value text,
  file_name text,
  key text NOT NULL,
  path text,
  source text,
  type text,
  CONSTRAINT files_pkey PRIMARY KEY (cumulus_id, granule_cumulus_id),
  CONSTRAINT files_bucket_key_unique UNIQUE (bucket, key, granule_cumulus_id)
) PARTITION BY HASH (granule_cumulus_id);
CREATE TABLE files_p0 PARTITION OF files FOR VALUES WITH (MODULUS 8, REMAINDER 0);
CREATE TABLE files_p1 PARTITION OF files FOR VALUES WITH (MODULUS 8, REMAINDER 1);
CREATE TABLE files_p2 PARTITION OF files FOR VALUES WITH (MODULUS 8, REMAINDER 2);
CREATE TABLE files_p3 PARTITION OF files FOR VALUES WITH (MODULUS 8, REMAINDER 3);
CREATE TABLE files_p4 PARTITION OF files FOR VALUES WITH (MODULUS 8, REMAINDER 4);
CREATE TABLE files_p5 PARTITION OF files FOR VALUES WITH (MODULUS 8, REMAINDER 5);
CREATE TABLE files_p6 PARTITION OF files FOR VALUES WITH (MODULUS 8, REMAINDER 6);
CREATE TABLE files_p7 PARTITION OF files FOR VALUES WITH (MODULUS 8, REMAINDER 7);
CREATE INDEX files_granule_cumulus_id_index ON files (granule_cumulus_id);
CREATE INDEX files_updated_at_index ON files (updated_at);
ALTER TABLE files ADD CONSTRAINT files_granule_cumulus_id_foreign
  FOREIGN KEY (granule_cumulus_id, collection_cumulus_id) REFERENCES granules (cumulus_id, collection_cumulus_id)
  ON DELETE CASCADE ON UPDATE CASCADE;

-- granules_executions: not partitioned; carries both partition keys (NOT NULL).
CREATE TABLE granules_executions (
  granule_cumulus_id bigint NOT NULL,
  collection_cumulus_id bigint NOT NULL,
  execution_cumulus_id bigint NOT NULL,
  execution_created_at timestamptz(3) NOT NULL,
  -- knex name granules_executions_granule_cumulus_id_collection_cumulus_id_foreign (truncated to 63 bytes)
  CONSTRAINT granules_executions_granule_cumulus_id_collection_cumulus_id_foreign
    FOREIGN KEY (granule_cumulus_id, collection_cumulus_id) REFERENCES granules (cumulus_id, collection_cumulus_id)
    ON DELETE CASCADE ON UPDATE CASCADE,
  -- knex name granules_executions_execution_cumulus_id_execution_created_at_foreign (truncated to 63 bytes)
  CONSTRAINT granules_executions_execution_cumulus_id_execution_created_at_foreign
    FOREIGN KEY (execution_cumulus_id, execution_created_at) REFERENCES executions (cumulus_id, created_at)
    ON DELETE CASCADE ON UPDATE CASCADE,
  CONSTRAINT granules_executions_pkey PRIMARY KEY (granule_cumulus_id, execution_cumulus_id)
);
CREATE INDEX granules_executions_executions_fkey_idx ON granules_executions (execution_cumulus_id, execution_created_at);

-- v22.3 (20260615213244_add_procedures_to_manage_executions_partitions.ts @ 26756de6):
-- procedures that keep the quarterly executions partitions.
CREATE OR REPLACE PROCEDURE create_future_executions_partitions(
  p_total_years_ahead INT
)
LANGUAGE plpgsql
AS $$
DECLARE
  v_current_year INT := EXTRACT(YEAR FROM CURRENT_DATE);
  v_target_year  INT;
  v_quarter      INT;
  v_partition    TEXT;
  v_start_date   DATE;
BEGIN
  FOR v_target_year IN v_current_year..(v_current_year + p_total_years_ahead - 1) LOOP
    FOR v_quarter IN 1..4 LOOP
      v_partition  := format('executions_%s_q%s', v_target_year, v_quarter);
      v_start_date := make_date(v_target_year, ((v_quarter - 1) * 3) + 1, 1);

      EXECUTE format(
        'CREATE TABLE IF NOT EXISTS %I PARTITION OF executions
         FOR VALUES FROM (%L) TO (%L);',
        v_partition,
        v_start_date,
        v_start_date + INTERVAL '3 months'
      );
    END LOOP;
  END LOOP;
END $$;
COMMENT ON PROCEDURE create_future_executions_partitions(INT) IS
'procedure to provision future quarterly partitions for the executions table.';

CREATE OR REPLACE PROCEDURE delete_expired_executions_partitions(
  p_retention_years_past INT,
  p_batch_size INT DEFAULT 10000
)
LANGUAGE plpgsql
AS $$
DECLARE
  v_drop_record   RECORD;
  v_range_expr    TEXT;
  v_part_end_str  TEXT;
  v_part_end_date DATE;
  v_cutoff_date   DATE;
  v_rows_deleted  INT;
BEGIN
  IF p_retention_years_past IS NULL OR p_retention_years_past <= 0 THEN
    RAISE NOTICE 'Retention tracking disabled (value is NULL or <= 0). Skipping partition deletion phase.';
    RETURN;
  END IF;

  v_cutoff_date := CURRENT_DATE - (p_retention_years_past || ' years')::INTERVAL;

  FOR v_drop_record IN
    SELECT
      c.oid,
      c.relname AS tablename,
      c.relpartbound
    FROM pg_inherits i
    JOIN pg_class AS p ON i.inhparent = p.oid
    JOIN pg_class AS c ON i.inhrelid = c.oid
    WHERE p.relname = 'executions'
  LOOP
    v_range_expr := pg_get_expr(v_drop_record.relpartbound, v_drop_record.oid);
    v_part_end_str := substring(v_range_expr from 'TO .''([0-9]{4}-[0-9]{2}-[0-9]{2})');

    IF v_part_end_str IS NULL THEN
      CONTINUE;
    END IF;

    v_part_end_date := v_part_end_str::DATE;

    RAISE NOTICE 'Evaluating partition: %, Range End: %, Cutoff Date: %',
      v_drop_record.tablename,
      v_part_end_date,
      v_cutoff_date;

    IF v_part_end_date <= v_cutoff_date THEN
      RAISE NOTICE 'Processing expired partition for safe batch cleanup: %', v_drop_record.tablename;

      LOOP
        EXECUTE format('
          WITH batch AS (
            SELECT cumulus_id FROM %I LIMIT %L
          )
          DELETE FROM granules_executions ge
          USING batch b
          WHERE ge.execution_cumulus_id = b.cumulus_id;',
          v_drop_record.tablename, p_batch_size
        );
        GET DIAGNOSTICS v_rows_deleted = ROW_COUNT;
        COMMIT;
        EXIT WHEN v_rows_deleted = 0;
      END LOOP;

      LOOP
        EXECUTE format('
          WITH batch AS (
            SELECT cumulus_id FROM %I LIMIT %L
          )
          DELETE FROM pdrs p
          USING batch b
          WHERE p.execution_cumulus_id = b.cumulus_id;',
          v_drop_record.tablename, p_batch_size
        );
        GET DIAGNOSTICS v_rows_deleted = ROW_COUNT;
        COMMIT;
        EXIT WHEN v_rows_deleted = 0;
      END LOOP;

      LOOP
        EXECUTE format('
          WITH batch AS (
            SELECT arn FROM %I LIMIT %L
          )
          DELETE FROM executions_global_unique gu
          USING batch b
          WHERE gu.arn = b.arn;',
          v_drop_record.tablename, p_batch_size
        );
        GET DIAGNOSTICS v_rows_deleted = ROW_COUNT;
        COMMIT;
        EXIT WHEN v_rows_deleted = 0;
      END LOOP;

      RAISE NOTICE 'Dropping expired partition: %', v_drop_record.tablename;
      EXECUTE format('DROP TABLE IF EXISTS %I CASCADE;', v_drop_record.tablename);
    END IF;
  END LOOP;
END $$;
COMMENT ON PROCEDURE delete_expired_executions_partitions(INT, INT) IS
'procedure to delete expired executions partitions.';

-- @@BEGIN GUARDS v22.3@@
-- Guard tables: global uniqueness of executions.arn/url, granules.granule_id and files (bucket, key).
-- executions_global_unique is never partitioned (025_executions_global_unique.ts).
CREATE TABLE executions_global_unique (
  arn text CONSTRAINT executions_global_unique_pkey PRIMARY KEY,
  url text CONSTRAINT executions_global_unique_url_unique UNIQUE
);

-- v22.3 ONLY: hash-partitioned guard tables (20260625141202_partition_granules_global_unique.ts,
-- GRANULES_GLOBAL_UNIQUE_PARTITION_COUNT default 2; 20260625161818_partition_files_global_unique.ts,
-- FILES_GLOBAL_UNIQUE_PARTITION_COUNT default 4). A duplicate is reported by PostgreSQL with the
-- leaf index name, e.g. granules_global_unique_p1_pkey / files_global_unique_p3_pkey.
CREATE TABLE granules_global_unique (
  granule_id text NOT NULL,
  CONSTRAINT granules_global_unique_pkey PRIMARY KEY (granule_id)
) PARTITION BY HASH (granule_id);
CREATE TABLE granules_global_unique_p0 PARTITION OF granules_global_unique FOR VALUES WITH (MODULUS 2, REMAINDER 0);
CREATE TABLE granules_global_unique_p1 PARTITION OF granules_global_unique FOR VALUES WITH (MODULUS 2, REMAINDER 1);

CREATE TABLE files_global_unique (
  bucket text NOT NULL,
  key text NOT NULL,
  CONSTRAINT files_global_unique_pkey PRIMARY KEY (bucket, key)
) PARTITION BY HASH (bucket, key);
CREATE TABLE files_global_unique_p0 PARTITION OF files_global_unique FOR VALUES WITH (MODULUS 4, REMAINDER 0);
CREATE TABLE files_global_unique_p1 PARTITION OF files_global_unique FOR VALUES WITH (MODULUS 4, REMAINDER 1);
CREATE TABLE files_global_unique_p2 PARTITION OF files_global_unique FOR VALUES WITH (MODULUS 4, REMAINDER 2);
CREATE TABLE files_global_unique_p3 PARTITION OF files_global_unique FOR VALUES WITH (MODULUS 4, REMAINDER 3);

-- executions guard triggers, v22.3 (20260616143759_update_executions_uniqueness_triggers.ts @ 66e422b3).
CREATE OR REPLACE FUNCTION executions_enforce_global_uniqueness_delete() RETURNS trigger AS $$
BEGIN
  DELETE FROM executions_global_unique WHERE arn = OLD.arn;
  RETURN OLD;
END;
$$ LANGUAGE plpgsql;

CREATE TRIGGER executions_enforce_unique_arn_url_trigger_delete
BEFORE DELETE ON executions
FOR EACH ROW
EXECUTE FUNCTION executions_enforce_global_uniqueness_delete();

CREATE OR REPLACE FUNCTION executions_enforce_global_uniqueness_insert() RETURNS trigger AS $$
BEGIN
  INSERT INTO executions_global_unique (arn, url)
  VALUES (NEW.arn, NEW.url);

  RETURN NEW;
END;
$$ LANGUAGE plpgsql;

CREATE TRIGGER executions_enforce_unique_arn_url_trigger_insert
BEFORE INSERT ON executions
FOR EACH ROW
EXECUTE FUNCTION executions_enforce_global_uniqueness_insert();

CREATE OR REPLACE FUNCTION executions_enforce_global_uniqueness_update() RETURNS trigger AS $$
BEGIN
  DELETE FROM executions_global_unique WHERE arn = OLD.arn;

  INSERT INTO executions_global_unique (arn, url)
  VALUES (NEW.arn, NEW.url);

  RETURN NEW;
END;
$$ LANGUAGE plpgsql;

CREATE TRIGGER executions_enforce_unique_arn_url_trigger_update
BEFORE UPDATE OF arn, url ON executions
FOR EACH ROW
EXECUTE FUNCTION executions_enforce_global_uniqueness_update();

-- granules guard triggers, v22.2+ (20260529151018_update_granules_uniqueness_trigger.ts @ 0ca65379).
CREATE OR REPLACE FUNCTION granules_enforce_global_uniqueness_delete() RETURNS trigger AS $$
BEGIN
  DELETE FROM granules_global_unique WHERE granule_id = OLD.granule_id;
  RETURN OLD;
END;
$$ LANGUAGE plpgsql;

CREATE TRIGGER granules_enforce_unique_granule_id_trigger_delete
BEFORE DELETE ON granules
FOR EACH ROW
EXECUTE FUNCTION granules_enforce_global_uniqueness_delete();

CREATE OR REPLACE FUNCTION granules_enforce_global_uniqueness_insert() RETURNS trigger AS $$
BEGIN
  INSERT INTO granules_global_unique (granule_id)
  VALUES (NEW.granule_id);
  RETURN NEW;
END;
$$ LANGUAGE plpgsql;

CREATE TRIGGER granules_enforce_unique_granule_id_trigger_insert
BEFORE INSERT ON granules
FOR EACH ROW
EXECUTE FUNCTION granules_enforce_global_uniqueness_insert();

CREATE OR REPLACE FUNCTION granules_enforce_global_uniqueness_update() RETURNS trigger AS $$
BEGIN
  -- If granule_id changed, remove tracking row for the old ID to prevent orphaned records
  IF (OLD.granule_id IS DISTINCT FROM NEW.granule_id) THEN
    DELETE FROM granules_global_unique WHERE granule_id = OLD.granule_id;
  END IF;

  -- Allow update if granule_id is unchanged and collection matches
  IF OLD.granule_id = NEW.granule_id AND OLD.collection_cumulus_id = NEW.collection_cumulus_id THEN
    RETURN NEW;

  -- Allow update if granule_id is unchanged and allow_collection_update is set to true
  ELSIF OLD.granule_id = NEW.granule_id
    -- Fetch run-time configuration; missing_ok is true, returns NULL if missing
    AND current_setting('cumulus.allow_collection_update', true) = 'true'
  THEN
    RETURN NEW;
  END IF;

  INSERT INTO granules_global_unique (granule_id)
  VALUES (NEW.granule_id);

  RETURN NEW;
END;
$$ LANGUAGE plpgsql;

CREATE TRIGGER granules_enforce_unique_granule_id_trigger_update
BEFORE UPDATE OF granule_id, collection_cumulus_id ON granules
FOR EACH ROW
EXECUTE FUNCTION granules_enforce_global_uniqueness_update();

-- files guard trigger, unchanged since v22.0 (130_files_triggers.ts @ a6eb62e0).
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
-- @@END GUARDS v22.3@@
