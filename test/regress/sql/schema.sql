-- The data model of scheduling.md 1, 2 and 4: every table and column, keys and the
-- partial indexes a pass reads; roles; nothing granted to PUBLIC.
SELECT table_name, column_name, data_type, is_nullable, column_default
  FROM information_schema.columns
 WHERE table_schema = 'quota_sched'
 ORDER BY table_name, ordinal_position;

-- (Ordered by name: a fresh install and an updated database create them in
-- other orders.)
SELECT conrelid::regclass AS table_name, conname, pg_get_constraintdef(oid) AS definition
  FROM pg_constraint
 WHERE connamespace = 'quota_sched'::regnamespace AND contype IN ('p', 'u', 'f')
 ORDER BY conrelid::regclass::text COLLATE "C", conname COLLATE "C";

SELECT indexrelid::regclass AS index_name, pg_get_indexdef(indexrelid) AS definition
  FROM pg_index
 WHERE indrelid::regclass::text LIKE 'quota_sched.%' AND NOT indisprimary
 ORDER BY indexrelid::regclass::text COLLATE "C";

-- Roles exist and cannot log in.
SELECT rolname, rolcanlogin FROM pg_roles WHERE rolname LIKE 'quota_sched_%' ORDER BY 1;

-- Every table and sequence that holds user data is dumped.
SELECT c.relname, c.relkind
  FROM pg_extension e, unnest(e.extconfig) AS cfg(oid) JOIN pg_class c ON c.oid = cfg.oid
 WHERE e.extname = 'quota_sched'
 ORDER BY 1;

-- Nothing is granted to PUBLIC: no table, sequence, function or the schema.
SELECT c.relname FROM pg_class c
 WHERE c.relnamespace = 'quota_sched'::regnamespace
   AND EXISTS (SELECT 1 FROM aclexplode(coalesce(c.relacl, acldefault('r', c.relowner))) a
               WHERE a.grantee = 0);
SELECT p.proname FROM pg_proc p
 WHERE p.pronamespace = 'quota_sched'::regnamespace
   AND EXISTS (SELECT 1 FROM aclexplode(coalesce(p.proacl, acldefault('f', p.proowner))) a
               WHERE a.grantee = 0);
SELECT has_schema_privilege('public', 'quota_sched', 'USAGE') AS public_usage;

-- Row-level security is on where users share a table.
SELECT relname, relrowsecurity FROM pg_class
 WHERE relnamespace = 'quota_sched'::regnamespace AND relkind = 'r' ORDER BY 1;

-- No jobs here, but whatever earlier files left: the counters of held capacity
-- must match the jobs, no drift rows.
SELECT * FROM quota_sched.held_capacity_drift();
