-- utilization_svg() (issue 11, item 5): the chart of utilization(), read
-- back with PostgreSQL's XML functions and compared with utilization().
-- The history is written directly, at known times (as in utilization.sql),
-- and so is the configuration's, as it was on 2026-01-01:
--   environment us_env: 4 gpu and 8 cpu; shares A (LEND_AND_BORROW, 2 gpu,
--   team A's) and B (LEND, 2 gpu and 4 cpu, team B's); at 02:10 A's own
--   capacity is lowered to 1 gpu.
--   9101 (A, 1 gpu): dispatched 00:30, succeeds 02:15.
--   9102 (A, 2 gpu): dispatched 01:00 (borrowing 1 of B's), preempted at
--     01:30 for 9103, dispatched again 02:00, fails 02:30.
--   9103 (B, 1 gpu): dispatched 01:30, succeeds 02:45.
--   9104 (B, 3 cpu): dispatched 00:15, succeeds 01:45.
-- The chart runs from 00:00 to 02:40 in buckets of an hour: the last
-- bucket is 40 minutes long, and its averages are over those 40 minutes.
SET TimeZone = 'UTC';
\i test/regress/include/helpers.sql
CREATE ROLE regress_us_team_a NOLOGIN;
CREATE ROLE regress_us_team_b NOLOGIN;
CREATE ROLE regress_us_ann NOLOGIN IN ROLE quota_sched_user, regress_us_team_a;
CREATE ROLE regress_us_out NOLOGIN IN ROLE quota_sched_user;
INSERT INTO quota_sched.service_environment (name, capacity_limits)
VALUES ('us_env', '{"gpu": 4, "cpu": 8}');
INSERT INTO quota_sched.job_queue (name, service_environment) VALUES ('us_queue', 'us_env');
INSERT INTO quota_sched.quota_share (job_queue, name, capacity_limits, strategy, submit_role)
VALUES ('us_queue', 'A', '{"gpu": 2}', 'LEND_AND_BORROW', 'regress_us_team_a'),
	   ('us_queue', 'B', '{"gpu": 2, "cpu": 4}', 'LEND', 'regress_us_team_b');
INSERT INTO quota_sched.config_event (at, actor, object, job_queue, name, action, old, new) VALUES
 ('2026-01-01 00:00+00', 'x', 'service_environment', NULL, 'us_env', 'INSERT', NULL,
  '{"capacity_limits": {"gpu": 4, "cpu": 8}}'),
 ('2026-01-01 00:00+00', 'x', 'quota_share', 'us_queue', 'A', 'INSERT', NULL, '{"capacity_limits": {"gpu": 2}}'),
 ('2026-01-01 00:00+00', 'x', 'quota_share', 'us_queue', 'B', 'INSERT', NULL,
  '{"capacity_limits": {"gpu": 2, "cpu": 4}}'),
 ('2026-01-01 02:10+00', 'x', 'quota_share', 'us_queue', 'A', 'UPDATE', '{"capacity_limits": {"gpu": 2}}',
  '{"capacity_limits": {"gpu": 1}}');
CREATE FUNCTION pg_temp.ev(job bigint, share text, unit text, n int, t text, f text, s text,
						   pf bigint DEFAULT NULL)
RETURNS void LANGUAGE sql AS $$
	INSERT INTO quota_sched.job_event (job_id, at, from_state, to_state, actor, kind, job_queue,
									   quota_share, capacity_unit, instance_count, attempt,
									   priority, preempted_for)
	VALUES (job, ('2026-01-01 ' || t || '+00')::timestamptz, f, s, 'x', 'STATE', 'us_queue', share,
			unit, n, 1, 0, pf)
$$;
SELECT count(*) AS events FROM (VALUES
	(pg_temp.ev(9101, 'A', 'gpu', 1, '00:00', NULL, 'RUNNABLE')),
	(pg_temp.ev(9101, 'A', 'gpu', 1, '00:30', 'RUNNABLE', 'SCHEDULED')),
	(pg_temp.ev(9101, 'A', 'gpu', 1, '02:15', 'SCHEDULED', 'SUCCEEDED')),
	(pg_temp.ev(9102, 'A', 'gpu', 2, '00:00', NULL, 'RUNNABLE')),
	(pg_temp.ev(9102, 'A', 'gpu', 2, '01:00', 'RUNNABLE', 'SCHEDULED')),
	(pg_temp.ev(9102, 'A', 'gpu', 2, '01:30', 'SCHEDULED', 'RUNNABLE', 9103)),
	(pg_temp.ev(9102, 'A', 'gpu', 2, '02:00', 'RUNNABLE', 'SCHEDULED')),
	(pg_temp.ev(9102, 'A', 'gpu', 2, '02:30', 'SCHEDULED', 'FAILED')),
	(pg_temp.ev(9103, 'B', 'gpu', 1, '01:20', NULL, 'RUNNABLE')),
	(pg_temp.ev(9103, 'B', 'gpu', 1, '01:30', 'RUNNABLE', 'SCHEDULED')),
	(pg_temp.ev(9103, 'B', 'gpu', 1, '02:45', 'SCHEDULED', 'SUCCEEDED')),
	(pg_temp.ev(9104, 'B', 'cpu', 3, '00:00', NULL, 'RUNNABLE')),
	(pg_temp.ev(9104, 'B', 'cpu', 3, '00:15', 'RUNNABLE', 'SCHEDULED')),
	(pg_temp.ev(9104, 'B', 'cpu', 3, '01:45', 'SCHEDULED', 'SUCCEEDED'))) AS e(v);

-- The chart, as the superuser (who sees every share), and the figures it
-- draws: utilization()'s, averaged over each bucket's length.
CREATE TEMP TABLE chart AS
SELECT quota_sched.utilization_svg('us_queue', '2026-01-01 00:00+00', '2026-01-01 02:40+00') AS svg;
CREATE TEMP TABLE figures AS
SELECT u.*, extract(epoch FROM least(u.bucket_start + interval '1 hour', '2026-01-01 02:40+00')
								- u.bucket_start)::double precision AS secs
  FROM quota_sched.utilization('us_queue', '2026-01-01 00:00+00', '2026-01-01 02:40+00') u;

-- pg_temp.bars(svg): the chart's bars; pg_temp.lines(svg): its lines.
CREATE FUNCTION pg_temp.bars(svg text)
RETURNS TABLE (part text, share text, unit text, bucket timestamptz, instances numeric)
LANGUAGE sql ROWS 20 AS $$
	SELECT x.* FROM XMLTABLE(XMLNAMESPACES('http://www.w3.org/2000/svg' AS s),
							 '//s:rect[@class="own" or @class="borrowed"]' PASSING (svg::xml)
							 COLUMNS part text PATH '@class', share text PATH '@data-share',
									 unit text PATH '@data-unit', bucket timestamptz PATH '@data-bucket',
									 instances numeric PATH '@data-instances') x
$$;
CREATE FUNCTION pg_temp.lines(svg text)
RETURNS TABLE (class text, share text, unit text, capacity text, d text)
LANGUAGE sql ROWS 20 AS $$
	SELECT x.* FROM XMLTABLE(XMLNAMESPACES('http://www.w3.org/2000/svg' AS s),
							 '//s:path[@class="capacity" or @class="env-capacity"]' PASSING (svg::xml)
							 COLUMNS class text PATH '@class', share text PATH '@data-share',
									 unit text PATH '@data-unit', capacity text PATH '@data-capacity',
									 d text PATH '@d') x
$$;

-- A well-formed SVG document: its root, its title, a panel a unit, and the
-- time axis's labels (every half hour, the date under the first).
SELECT xml_is_well_formed_document(svg) AS well_formed,
	   (xpath('local-name(/*)', svg::xml))[1]::text AS root,
	   (xpath('namespace-uri(/*)', svg::xml))[1]::text AS namespace,
	   (xpath('//s:text[@class="title"]/text()', svg::xml,
			  ARRAY[ARRAY['s', 'http://www.w3.org/2000/svg']]))[1]::text AS title,
	   (xpath('//s:text[@class="subtitle"]/text()', svg::xml,
			  ARRAY[ARRAY['s', 'http://www.w3.org/2000/svg']]))[1]::text AS subtitle
  FROM chart;
SELECT (xpath('/*/@data-unit', g))[1]::text AS panel,
	   array_to_string(xpath('.//s:text[@class="tick" or @class="tick-day"]/text()', g,
							 ARRAY[ARRAY['s', 'http://www.w3.org/2000/svg']])::text[], ' ') AS time_labels,
	   array_to_string(xpath('/*/s:text[@text-anchor="end"]/text()', g,
							 ARRAY[ARRAY['s', 'http://www.w3.org/2000/svg']])::text[], ' ') AS y_labels
  FROM chart, unnest(xpath('//s:g[@class="panel"]', svg::xml,
						   ARRAY[ARRAY['s', 'http://www.w3.org/2000/svg']])) AS g;

-- The bars against utilization(): one bar per share, bucket and part with
-- instance-seconds, of their average over the bucket (3 decimals).  By
-- hand: A's gpu in hour 1, 5400 own and 1800 borrowed: 1.5 and 0.5; in
-- the last bucket (02:00 to 02:40, 2400 s), own 2 x 600 + 1 x 300 + 1 x 900
-- = 2400 and borrowed 1 x 600 + 2 x 300 + 1 x 900 = 2100: 1 and 0.875.
SELECT coalesce(b.unit, f.unit) AS unit, coalesce(b.share, f.share) AS share,
	   to_char(coalesce(b.bucket, f.bucket), 'HH24:MI') AS bucket, coalesce(b.part, f.part) AS part,
	   f.instances AS utilization, b.instances AS chart, f.instances IS NOT DISTINCT FROM b.instances AS same
  FROM pg_temp.bars((SELECT svg FROM chart)) b
  FULL JOIN (SELECT f.capacity_unit AS unit, f.quota_share AS share, f.bucket_start AS bucket, p.part,
					round((p.isecs / f.secs)::numeric, 3) AS instances
			   FROM figures f
			  CROSS JOIN LATERAL (VALUES ('own', f.own_instance_seconds),
										 ('borrowed', f.borrowed_instance_seconds)) AS p(part, isecs)
			  WHERE f.quota_share IS NOT NULL AND p.isecs > 0) f
	ON f.unit = b.unit AND f.share = b.share AND f.bucket = b.bucket AND f.part = b.part
 ORDER BY 1, 2, 3, 4 DESC;

-- The bars of a bucket stand on one another: in the gpu panel's last
-- bucket, A's own, A's borrowed, B's own, from the axis up, each bar's
-- height in proportion to its instances.
SELECT (xpath('/*/@class', r))[1]::text AS part, (xpath('/*/@data-share', r))[1]::text AS share,
	   (xpath('/*/@data-instances', r))[1]::text AS instances, (xpath('/*/@y', r))[1]::text AS y,
	   (xpath('/*/@height', r))[1]::text AS height,
	   round((xpath('/*/@height', r))[1]::text::numeric
			 / (xpath('/*/@data-instances', r))[1]::text::numeric, 1) AS pixels_per_instance
  FROM chart, unnest(xpath('//s:g[@data-unit="gpu"]//s:rect[@data-bucket="2026-01-01T02:00:00Z"]',
						   svg::xml, ARRAY[ARRAY['s', 'http://www.w3.org/2000/svg']])) AS r;

-- The lines: a step line of own capacity for each share of each unit, and
-- the environment's, with the capacity of each bucket, against
-- utilization()'s.  A's gpu is 2, then 1 from 02:10 (1 x 600 + ... over
-- 40 minutes: 1.25).
SELECT l.class, l.unit, l.share, l.capacity AS chart, f.capacity AS utilization,
	   l.capacity IS NOT DISTINCT FROM f.capacity AS same, l.d
  FROM pg_temp.lines((SELECT svg FROM chart)) l
  FULL JOIN (SELECT f.capacity_unit AS unit, f.quota_share AS share,
					string_agg(quota_sched.svg_number(f.capacity, 3), ' ' ORDER BY f.bucket_start) AS capacity
			   FROM figures f GROUP BY 1, 2) f
	ON f.unit = l.unit AND f.share IS NOT DISTINCT FROM l.share
 ORDER BY 2, 3 NULLS FIRST;

-- The legend names each share once.
SELECT array_agg(x.share ORDER BY x.share) AS legend
  FROM chart, XMLTABLE(XMLNAMESPACES('http://www.w3.org/2000/svg' AS s),
					   '//s:g[@class="legend"]/s:rect[@class="legend-share"]' PASSING (svg::xml)
					   COLUMNS share text PATH '@data-share') x;

-- A member of team A, and a member of no team, see every share, as
-- everyone sees every share's figures (reference.md, "What a team sees of
-- another"; 0.2 showed them only their teams' shares).
SET ROLE regress_us_ann;
SELECT 'bars' AS what, count(*), string_agg(DISTINCT b.share, ' ') AS shares
  FROM pg_temp.bars(quota_sched.utilization_svg('us_queue', '2026-01-01 00:00+00', '2026-01-01 02:40+00')) b
UNION ALL
SELECT 'lines', count(*), string_agg(DISTINCT l.unit || ':' || coalesce(l.share, 'environment'), ' ')
  FROM pg_temp.lines(quota_sched.utilization_svg('us_queue', '2026-01-01 00:00+00', '2026-01-01 02:40+00')) l;
RESET ROLE;
SET ROLE regress_us_out;
SELECT 'bars' AS what, count(*), string_agg(DISTINCT b.share, ' ') AS shares
  FROM pg_temp.bars(quota_sched.utilization_svg('us_queue', '2026-01-01 00:00+00', '2026-01-01 02:40+00')) b
UNION ALL
SELECT 'lines', count(*), string_agg(DISTINCT l.unit || ':' || coalesce(l.share, 'environment'), ' ')
  FROM pg_temp.lines(quota_sched.utilization_svg('us_queue', '2026-01-01 00:00+00', '2026-01-01 02:40+00')) l;
RESET ROLE;

-- No rows (before the configuration's history): a valid SVG that says so.
SELECT xml_is_well_formed_document(s.svg) AS well_formed,
	   (xpath('//s:text[@class="no-usage"]/text()', s.svg::xml,
			  ARRAY[ARRAY['s', 'http://www.w3.org/2000/svg']]))[1]::text AS says
  FROM (SELECT quota_sched.utilization_svg('us_queue', '2025-06-01 00:00+00', '2025-06-02 00:00+00') AS svg) s;

-- Buckets of a second, of a day: the time axis's labels follow the range
-- (times of day with seconds; dates).
SELECT r.bucket, array_to_string(xpath('//s:g[@class="panel"][1]//s:text[@class="tick" or @class="tick-day"]/text()',
									   quota_sched.utilization_svg('us_queue', r.t0, r.t1, r.bucket)::xml,
									   ARRAY[ARRAY['s', 'http://www.w3.org/2000/svg']])::text[], ' ') AS time_labels
  FROM (VALUES (interval '1 second', timestamptz '2026-01-01 00:29:55+00', timestamptz '2026-01-01 00:30:05+00'),
			   (interval '1 day', '2026-01-01 00:00+00', '2026-01-31 00:00+00')) AS r(bucket, t0, t1);

-- Text from data is escaped for XML.  Names of queues, shares and units
-- cannot hold & < > " ' (src/checks.c), so the escaping is tried on its
-- own: it gives the text back through an attribute and an element, and
-- drops what XML does not allow.
SELECT quota_sched.xml_escape(v.t) AS escaped,
	   xml_is_well_formed_document('<t a="' || quota_sched.xml_escape(v.t) || '">'
								   || quota_sched.xml_escape(v.t) || '</t>') AS well_formed,
	   x.a = replace(v.t, chr(1), '') AS attribute_back, x.e = replace(v.t, chr(1), '') AS element_back
  FROM (VALUES ('Q&A <"team''s"> ' || chr(1) || 'x')) AS v(t),
	   XMLTABLE('/t' PASSING (('<t a="' || quota_sched.xml_escape(v.t) || '">'
							   || quota_sched.xml_escape(v.t) || '</t>')::xml)
				COLUMNS a text PATH '@a', e text PATH 'text()') x;
SELECT xml_is_well_formed_document('<t a="' || $$Q&A <"team's">$$ || '"/>') AS unescaped_well_formed;

-- Bad arguments: 22023, utilization()'s, and beyond 2,000 buckets the
-- chart's own.
SELECT pg_temp.refused($$SELECT quota_sched.utilization_svg('no_such_queue', '2026-01-01', '2026-01-02')$$);
SELECT pg_temp.refused($$SELECT quota_sched.utilization_svg('us_queue', '2026-01-02', '2026-01-01')$$);
SELECT pg_temp.refused($$SELECT quota_sched.utilization_svg('us_queue', '2026-01-01', '2026-01-02', '500 milliseconds')$$);
SELECT pg_temp.refused($$SELECT quota_sched.utilization_svg('us_queue', '2026-01-01', '2026-03-01', '1 month')$$);
SELECT pg_temp.refused($$SELECT quota_sched.utilization_svg('us_queue', NULL, '2026-03-01')$$);
SELECT pg_temp.refused($$SELECT quota_sched.utilization_svg('us_queue', '2026-01-01', '2026-01-03', '1 minute')$$);
SELECT pg_temp.refused($$SELECT quota_sched.utilization_svg('us_queue', '2026-01-01', '2026-01-02 09:20', '1 minute')$$) AS two_thousand;
-- utilization()'s bounds (issue 20, item 2): infinite ranges are 22023;
-- 50 years in one bucket cost a bucket, not 438,000 hours (20 MB of
-- temporary files at most).
SELECT pg_temp.refused($$SELECT quota_sched.utilization_svg('us_queue', '2026-01-01', 'infinity', '100000 days')$$);
SELECT pg_temp.refused($$SELECT quota_sched.utilization_svg('us_queue', '1970-01-01', '294276-12-31', '100000 days')$$);
SET temp_file_limit = '20MB';
SELECT (xpath('count(//*[local-name()="rect"][@class="own" or @class="borrowed"])',
			  quota_sched.utilization_svg('us_queue', '2026-01-01 00:00+00', '2026-01-01 00:00+00'::timestamptz + interval '18262 days',
										  '18262 days')::xml))[1]::text AS bars_of_50_years;
RESET temp_file_limit;

-- Clean up.
DELETE FROM quota_sched.job_event WHERE job_queue = 'us_queue';
DELETE FROM quota_sched.job_queue WHERE name = 'us_queue';
DELETE FROM quota_sched.service_environment WHERE name = 'us_env';
DROP ROLE regress_us_ann, regress_us_out, regress_us_team_a, regress_us_team_b;
