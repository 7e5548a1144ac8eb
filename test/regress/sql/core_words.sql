-- One home per word (issue 38, item 1): every enumerated word is defined
-- once in the policy core (src/core/words.h, shown to SQL by
-- quota_sched.core_words()), and each kind of word that columns hold once
-- in SQL, as a DOMAIN of the kind's name (sql/words.sql), which every
-- column of the kind is checked against.  Here the two are compared
-- through the catalog, kind by kind: a word added on one side only shows
-- as a row below, and fails the test.  Then a value that is none of its
-- kind's words is refused by the domains, and read by the C code it is an
-- error (never a default: an unknown strategy is not RESERVE).
\i test/regress/include/helpers.sql

-- The core's kinds, in its order, how many words each has, and whether a
-- domain holds them (the kinds that no column holds have none).
SELECT k.kind, count(*) AS words,
	   EXISTS (SELECT FROM pg_type t
				WHERE t.typnamespace = 'quota_sched'::regnamespace AND t.typtype = 'd'
				  AND t.typname = k.kind) AS domain
  FROM quota_sched.core_words() WITH ORDINALITY AS k(kind, word, n)
 GROUP BY k.kind ORDER BY min(k.n);

-- The domains of the schema and their words, read from their CHECK as the
-- catalog has it (VALUE = ANY (ARRAY['A'::text, ...])), against the core's
-- words of the kind of the same name, in order: no row but the header.
CREATE TEMP VIEW sql_words AS
SELECT t.typname::text AS kind, m.n, m.word[1] AS word
  FROM pg_type t
  JOIN pg_constraint c ON c.contypid = t.oid AND c.contype = 'c',
	   regexp_matches(pg_get_constraintdef(c.oid), '''([^'']*)''::text', 'g')
		 WITH ORDINALITY AS m(word, n)
 WHERE t.typnamespace = 'quota_sched'::regnamespace AND t.typtype = 'd';
CREATE TEMP VIEW core_words AS
SELECT k.kind, row_number() OVER (PARTITION BY k.kind ORDER BY k.n) AS n, k.word
  FROM quota_sched.core_words() WITH ORDINALITY AS k(kind, word, n)
 WHERE k.kind IN (SELECT kind FROM sql_words);
SELECT coalesce(s.kind, c.kind) AS kind, coalesce(s.n, c.n) AS n,
	   s.word AS in_sql, c.word AS in_core
  FROM sql_words s FULL JOIN core_words c ON c.kind = s.kind AND c.n = s.n
 WHERE s.word IS DISTINCT FROM c.word
 ORDER BY 1, 2;
-- Each domain has one CHECK, which lists its words (the comparison above
-- reads the whole list).
SELECT t.typname AS domain, count(c.oid) AS checks,
	   bool_and(pg_get_constraintdef(c.oid) ~ '^CHECK \(\(VALUE = ANY \(ARRAY\[') AS a_list
  FROM pg_type t LEFT JOIN pg_constraint c ON c.contypid = t.oid
 WHERE t.typnamespace = 'quota_sched'::regnamespace AND t.typtype = 'd'
 GROUP BY t.typname ORDER BY 1;

-- Every word of the core casts to its domain; a word in the wrong case, an
-- empty one and a word of another kind do not.
CREATE FUNCTION pg_temp.cast_to(word text, kind text) RETURNS text LANGUAGE plpgsql AS $$
BEGIN
	EXECUTE format('SELECT %L::quota_sched.%I', word, kind);
	RETURN 'ok';
EXCEPTION WHEN check_violation THEN
	RETURN SQLSTATE;
END
$$;
SELECT kind, count(*) AS words, count(*) FILTER (WHERE pg_temp.cast_to(word, kind) = 'ok') AS cast
  FROM core_words GROUP BY kind ORDER BY kind;
SELECT kind, pg_temp.cast_to(lower(min(word)), kind) AS lower_case,
	   pg_temp.cast_to('', kind) AS empty,
	   pg_temp.cast_to(CASE kind WHEN 'job_state' THEN 'STOPPED' ELSE 'RUNNABLE' END, kind)
		 AS other_kind
  FROM core_words GROUP BY kind ORDER BY kind;
SELECT pg_temp.refused($$SELECT 'BORROW'::quota_sched.strategy$$);

-- The columns of each kind: every one has a CHECK named TABLE_word_COLUMN
-- that casts it to its domain, and no column of the schema is checked
-- against a domain otherwise.
SELECT c.conrelid::regclass::text AS "table", c.conname,
	   substring(pg_get_constraintdef(c.oid) from '::quota_sched\.(\w+)') AS domain
  FROM pg_constraint c
 WHERE c.connamespace = 'quota_sched'::regnamespace AND c.contype = 'c'
   AND pg_get_constraintdef(c.oid) ~ '::quota_sched\.'
 ORDER BY 1, 2;

-- The tables refuse a word of no kind, as the domains do; the
-- configuration's own CHECKs speak first, naming the row.
INSERT INTO quota_sched.service_environment (name, capacity_limits) VALUES ('cw_env', '{"gpu": 4}');
INSERT INTO quota_sched.job_queue (name, service_environment) VALUES ('cw_queue', 'cw_env');
INSERT INTO quota_sched.quota_share (job_queue, name, capacity_limits, strategy)
VALUES ('cw_queue', 'cw_a', '{"gpu": 2}', 'LEND'), ('cw_queue', 'cw_b', '{"gpu": 2}', 'RESERVE');
SELECT pg_temp.refused($$UPDATE quota_sched.quota_share SET strategy = 'BORROW' WHERE name = 'cw_a'$$);
SELECT pg_temp.refused($$UPDATE quota_sched.job_queue SET borrow_order = 'RANDOM' WHERE name = 'cw_queue'$$);
SELECT pg_temp.refused($$INSERT INTO quota_sched.agent (name, login, job_queue, capacity_unit,
	state, registered_at, last_seen) VALUES ('cw_agent', 'postgres', 'cw_queue', 'gpu',
	'PAUSED', now(), now())$$);
SELECT pg_temp.refused($$INSERT INTO quota_sched.job_event (id, job_id, at, to_state, actor, kind)
	VALUES (-1, -1, now(), 'RUNNABLE', 'cw', 'RESUMED')$$);

-- Read by the C code, a word of no kind is an error, never a default.
-- With the CHECKs of the strategy dropped (in a transaction rolled back),
-- a share whose strategy is none of the words stops the pass (22P02),
-- where an unknown strategy used to be read as RESERVE.
BEGIN;
ALTER TABLE quota_sched.quota_share DROP CONSTRAINT quota_share_check2,
	DROP CONSTRAINT quota_share_check6, DROP CONSTRAINT quota_share_word_strategy;
UPDATE quota_sched.quota_share SET strategy = 'BORROW' WHERE name = 'cw_a';
SELECT pg_temp.refused($$SELECT * FROM quota_sched.run_pass('cw_queue', dry_run => true)$$);
ROLLBACK;
-- The submitters read the configuration through the same store: a queue
-- whose state is none of the words takes no job (22P02), where the old
-- query took any state but ENABLED for DISABLED.
BEGIN;
ALTER TABLE quota_sched.job_queue DROP CONSTRAINT job_queue_check,
	DROP CONSTRAINT job_queue_word_state;
UPDATE quota_sched.job_queue SET state = 'PAUSED' WHERE name = 'cw_queue';
SELECT pg_temp.refused($$INSERT INTO quota_sched.job (name, job_queue, quota_share, capacity_unit)
	VALUES ('cw_paused', 'cw_queue', 'cw_a', 'gpu')$$);
ROLLBACK;
-- A stop_reason of no kind (a later version's, say) is not read as "no
-- stop": the history of the UPDATE refuses it.
SET ROLE quota_sched_user;
INSERT INTO quota_sched.job (name, job_queue, quota_share, capacity_unit)
VALUES ('cw_job', 'cw_queue', 'cw_a', 'gpu');
RESET ROLE;
SELECT action, quota_share FROM quota_sched.run_pass('cw_queue');
BEGIN;
ALTER TABLE quota_sched.job DROP CONSTRAINT job_word_stop_reason;
ALTER TABLE quota_sched.job DISABLE TRIGGER job_before_update;
SELECT pg_temp.refused($$UPDATE quota_sched.job SET stop_reason = 'EVICTED' WHERE name = 'cw_job'$$);
ALTER TABLE quota_sched.job DISABLE TRIGGER job_history_update;
UPDATE quota_sched.job SET stop_reason = 'EVICTED' WHERE name = 'cw_job';
SELECT pg_temp.refused($$SELECT quota_sched.explain(id) FROM quota_sched.job WHERE name = 'cw_job'$$);
ROLLBACK;
SELECT name, state, stop_reason FROM quota_sched.job WHERE name = 'cw_job';

-- Clean up.
DELETE FROM quota_sched.job WHERE job_queue = 'cw_queue';
DELETE FROM quota_sched.job_queue WHERE name = 'cw_queue';
DELETE FROM quota_sched.service_environment WHERE name = 'cw_env';
SELECT * FROM quota_sched.held_capacity_drift();
