\set ECHO none
-- test/regress/include/helpers.sql: the helpers that many pg_regress tests use alike,
-- defined once here (temporary functions, gone with the test's session).
-- A test reads it with
--     \i test/regress/include/helpers.sql
-- (pg_regress feeds the test to psql on standard input from the top
-- folder, so the path is from there).  psql echoes every line of a test
-- into its output: this file turns the echo off first and on again last,
-- so that an expected output shows only the \i line and the \set ECHO none
-- below it, whatever the helpers are.  It is in a subfolder so that the
-- Makefile's REGRESS (sql/*.sql) does not take it for a test.  Helpers
-- particular to one scenario stay in that test.
--
-- pg_temp.refused(stmt): runs a statement and returns 'accepted', or the
-- SQLSTATE and message of its error, with the numbers that depend on the
-- order the tests run in, or on the clock, masked: job ids ('job N') and a
-- time in parentheses ('(until ...)').
--
-- pg_temp.pass(q): runs the pass of job queue q and returns its decisions
-- in order: n, the job's name, the action, the share and the reason.

CREATE FUNCTION pg_temp.refused(stmt text) RETURNS text LANGUAGE plpgsql AS $$
BEGIN
	EXECUTE stmt;
	RETURN 'accepted';
EXCEPTION WHEN OTHERS THEN
	RETURN SQLSTATE || ': ' || regexp_replace(regexp_replace(SQLERRM, 'job \d+', 'job N'),
											  '\(until [^)]*\)', '(until ...)');
END
$$;

CREATE FUNCTION pg_temp.pass(q text)
RETURNS TABLE (n bigint, name text, action text, quota_share text, reason text)
LANGUAGE sql AS $$
	SELECT p.n, j.name, p.action, p.quota_share, p.reason
	  FROM quota_sched.run_pass(q) WITH ORDINALITY AS p(job_id, action, quota_share, reason, n)
	  JOIN quota_sched.job j ON j.id = p.job_id ORDER BY p.n
$$;
\set ECHO all
