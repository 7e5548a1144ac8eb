/*
 * chart.sql
 *		utilization_svg(): the utilization report drawn as an SVG chart.
 *
 * A function source: the install script and every update script run it
 * (CREATE OR REPLACE), so this is the one text of these functions.
 */

/* ---------------------------------------------------------------------
 * The chart.  utilization_svg() draws what
 * utilization() returns as one SVG document, one panel a capacity unit:
 * the instances each share used on average in each bucket, stacked by
 * share (own capacity solid, borrowed hatched), each share's own capacity
 * as a dashed step line and the environment's as a solid one.  It calls
 * utilization() with the caller's rights, so a user's chart has the
 * shares they may see, and its errors (22023) are utilization()'s.
 * Every bar and line carries its figures in data-* attributes, so that a
 * test (test/regress/sql/utilization_svg.sql) reads the chart back with xpath() and
 * compares it with utilization().
 *
 * utilization_svg() reads the figures; svg_chart() draws them, piece by
 * piece (svg_x_axis, svg_panel with svg_y_axis, svg_bars and svg_lines,
 * svg_legend), in the layout of svg_layout() and the frame of
 * svg_frame().  The pieces are svg_chart()'s own (no grant): it runs with
 * its owner's rights, and reads no table.
 * ------------------------------------------------------------------- */

/*
 * Text for XML content and attribute values: & < > " ' escaped, and the
 * C0 controls XML 1.0 does not allow (all but tab, newline and carriage
 * return) dropped.  Names of queues, shares and units cannot hold any of
 * these (src/config/checks.c), but a chart stays a well-formed document whatever
 * names may become.  (A body in SQL: resolved when created, whatever the
 * caller's search_path.)
 */
CREATE OR REPLACE FUNCTION quota_sched.xml_escape(value text) RETURNS text
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
RETURN pg_catalog.replace(pg_catalog.replace(pg_catalog.replace(pg_catalog.replace(pg_catalog.replace(
		pg_catalog.regexp_replace(value, '[\x01-\x08\x0B\x0C\x0E-\x1F]', '', 'g'),
		'&', '&amp;'), '<', '&lt;'), '>', '&gt;'), '"', '&quot;'), '''', '&apos;');

/* A number as a chart writes it: rounded to digits, no trailing zeros. */
CREATE OR REPLACE FUNCTION quota_sched.svg_number(value double precision, digits integer) RETURNS text
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
RETURN pg_catalog.trim_scale(pg_catalog.round(value::numeric, digits))::text;

/*
 * The layout, in pixels: the left margin (y labels), the plot's height,
 * the plot's top in its panel, a panel's height (its title, plot and time
 * axis) and where the panels start.  (A SELECT, not a RETURN of a row: a
 * record variable assigned from it keeps the names of its columns.)
 */
CREATE OR REPLACE FUNCTION quota_sched.svg_layout(OUT lm integer, OUT ph integer, OUT pt integer,
												  OUT panel_h integer, OUT top_y integer)
LANGUAGE sql IMMUTABLE PARALLEL SAFE
BEGIN ATOMIC
	SELECT 64, 220, 28, 304, 56;
END;

/*
 * svg_frame(from, to, bucket): the chart's frame: the plot's width pw (960
 * pixels, or a pixel a bucket beyond 960 buckets, so that every bucket
 * stays visible) and the range's length in seconds; null for a range that
 * is not sound, which utilization() judges (a bucket below a second
 * included; it allows 100,000 buckets and finite ranges; to - from is not
 * taken: it fails on infinity and wraps around beyond 292,000 years).
 * Beyond 2,000 buckets, the chart's own bound, 22023: the document grows
 * with buckets x shares x units (some 250 bytes a bar with its tooltip, 30
 * a step of a share's line with its halo), so that 2,000 buckets of ten
 * busy shares make some 6 MB a unit, which a browser still opens.
 */
CREATE OR REPLACE FUNCTION quota_sched.svg_frame("from" timestamptz, "to" timestamptz, bucket interval,
												 OUT pw integer, OUT span double precision)
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	wsecs numeric := extract(epoch FROM bucket);
BEGIN
	IF NOT coalesce(isfinite("from") AND isfinite("to") AND "from" < "to" AND wsecs >= 1, false) THEN
		RETURN;
	END IF;
	IF (extract(epoch FROM "to") - extract(epoch FROM "from")) / wsecs > 2000 THEN
		RAISE EXCEPTION 'too many buckets for a chart: from % to % in buckets of %', "from", "to", bucket
			USING ERRCODE = 'invalid_parameter_value',
				  DETAIL = 'A chart has at most 2,000 buckets.',
				  HINT = 'Use larger buckets, or utilization() for the figures.';
	END IF;
	span := extract(epoch FROM "to" - "from");
	pw := greatest(960, ceil(span / wsecs)::integer);
END
$$;

/*
 * The chart's title and subtitle (its range and buckets, in UTC), and the
 * subtitle alone (for the document's description).
 */
CREATE OR REPLACE FUNCTION quota_sched.svg_head(job_queue text, "from" timestamptz, "to" timestamptz,
												bucket interval, OUT subtitle text, OUT head text)
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
SET TimeZone = 'UTC'
AS $$
DECLARE
	wsecs numeric := extract(epoch FROM bucket);
BEGIN
	subtitle := format('from %s to %s UTC, buckets of %s',
					   to_char("from", 'YYYY-MM-DD HH24:MI:SS'), to_char("to", 'YYYY-MM-DD HH24:MI:SS'),
					   CASE WHEN wsecs % 86400 = 0 THEN trim_scale(wsecs / 86400) || ' day'
							WHEN wsecs % 3600 = 0 THEN trim_scale(wsecs / 3600) || ' hour'
							WHEN wsecs % 60 = 0 THEN trim_scale(wsecs / 60) || ' minute'
							ELSE trim_scale(wsecs) || ' second' END
					   || CASE WHEN wsecs IN (1, 60, 3600, 86400) THEN '' ELSE 's' END);
	head := format('<text class="title" x="16" y="24" font-size="16" font-weight="bold">'
				   'Utilization of job queue %s</text>' || E'\n'
				   '<text class="subtitle" x="16" y="44" fill="#444">%s</text>' || E'\n',
				   quota_sched.xml_escape(job_queue), subtitle);
END
$$;

/* The chart of a range without rows: it says "no usage". */
CREATE OR REPLACE FUNCTION quota_sched.svg_no_usage(job_queue text, head text) RETURNS text
LANGUAGE sql IMMUTABLE
RETURN format('<svg xmlns="http://www.w3.org/2000/svg" width="640" height="100" '
			  'viewBox="0 0 640 100" font-family="sans-serif" font-size="12">' || E'\n'
			  '<title>Utilization of job queue %s</title>' || E'\n'
			  '<rect width="100%%" height="100%%" fill="white"/>' || E'\n'
			  '%s<text class="no-usage" x="16" y="76">no usage: no history of jobs or '
			  'capacity in this range</text>' || E'\n</svg>\n',
			  quota_sched.xml_escape(job_queue), head);

/*
 * The shares of the chart's rows in the order of their names, each with
 * its colour in every panel: ten distinct ones, then hues a golden angle
 * apart; and the hatch patterns of their borrowed instances (grey in the
 * legend).
 */
CREATE OR REPLACE FUNCTION quota_sched.svg_shares(row_shares text[], OUT shares text[], OUT colours text[],
												  OUT defs text)
LANGUAGE plpgsql IMMUTABLE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
	SELECT array_agg(s.sh ORDER BY s.sh COLLATE "C"),
		   array_agg(CASE WHEN s.k < 10
						  THEN (ARRAY['#4e79a7', '#f28e2b', '#e15759', '#76b7b2', '#59a14f',
									  '#edc948', '#b07aa1', '#ff9da7', '#9c755f', '#bab0ac'])[s.k + 1]
						  ELSE format('hsl(%s,55%%,45%%)', (s.k * 137) % 360) END
					 ORDER BY s.sh COLLATE "C")
	  INTO shares, colours
	  FROM (SELECT d.sh, (row_number() OVER (ORDER BY d.sh COLLATE "C") - 1)::integer AS k
			  FROM (SELECT DISTINCT x.sh FROM unnest(row_shares) AS x(sh) WHERE x.sh IS NOT NULL) d) s;
	SELECT string_agg(format('<pattern id="hatch-%s" patternUnits="userSpaceOnUse" width="6" height="6" '
							 'patternTransform="rotate(45)"><rect width="6" height="6" fill="%s" '
							 'fill-opacity="0.3"/><rect width="3" height="6" fill="%s"/></pattern>',
							 s.id, s.colour, s.colour), E'\n' ORDER BY s.k)
	  INTO defs
	  FROM (SELECT c.k, (c.k - 1)::text AS id, c.colour FROM unnest(colours) WITH ORDINALITY AS c(colour, k)
			UNION ALL
			SELECT 0, 'legend', '#777777') s;
END
$$;

/*
 * The time axis, the same in every panel: ticks at round UTC times, the
 * fewest that leave about 100 pixels between labels (at most pw / 100 + 1
 * of them).
 */
CREATE OR REPLACE FUNCTION quota_sched.svg_tick(span double precision, pw integer) RETURNS interval
LANGUAGE sql IMMUTABLE
BEGIN ATOMIC
	SELECT c.iv
	  FROM unnest(ARRAY['1 second', '2 seconds', '5 seconds', '10 seconds', '15 seconds',
						'30 seconds', '1 minute', '2 minutes', '5 minutes', '10 minutes',
						'15 minutes', '30 minutes', '1 hour', '2 hours', '3 hours', '6 hours',
						'12 hours', '1 day', '2 days', '7 days', '1 month', '3 months', '6 months',
						'1 year', '2 years', '5 years', '10 years', '20 years', '50 years',
						'100 years', '200 years', '500 years', '1000 years']::interval[])
		   WITH ORDINALITY AS c(iv, n)
	 WHERE span / extract(epoch FROM c.iv) <= greatest(2, pw / 100)
	 ORDER BY c.n LIMIT 1;
END;

CREATE OR REPLACE FUNCTION quota_sched.svg_x_axis("from" timestamptz, "to" timestamptz, pw integer,
												  span double precision)
RETURNS text
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
SET TimeZone = 'UTC'
AS $$
DECLARE
	g record := quota_sched.svg_layout();
	t0 timestamptz := "from";
	t1 timestamptz := "to";
	tick interval := quota_sched.svg_tick(span, pw);
	label_fmt text := CASE WHEN tick < interval '1 minute' THEN 'HH24:MI:SS'
						   WHEN tick < interval '1 day' THEN 'HH24:MI'
						   WHEN tick < interval '1 month' THEN 'YYYY-MM-DD'
						   WHEN tick < interval '1 year' THEN 'YYYY-MM'
						   ELSE 'YYYY' END;
BEGIN
	RETURN (
	WITH ticks AS (
		SELECT g2.t
		  FROM generate_series(
				CASE WHEN tick < interval '1 month'
					 -- weeks start on Monday (2000-01-03)
					 THEN date_bin(tick, t0, timestamptz '2000-01-03 00:00+00')
					 ELSE make_timestamptz((floor(extract(year FROM t0)
												  / greatest(1, extract(year FROM tick)))
											* greatest(1, extract(year FROM tick)))::integer,
										   1, 1, 0, 0, 0, 'UTC') END,
				t1, tick) AS g2(t)
		 WHERE tick IS NOT NULL AND g2.t >= t0),
	labelled AS (
		SELECT tk.t, g.lm + pw * extract(epoch FROM tk.t - t0) / span AS x,
			   to_char(tk.t, label_fmt) AS label,
			   -- under times of day, the date where it changes
			   CASE WHEN tick < interval '1 day'
					 AND to_char(tk.t, 'YYYY-MM-DD') IS DISTINCT FROM
						 lag(to_char(tk.t, 'YYYY-MM-DD')) OVER (ORDER BY tk.t)
					THEN to_char(tk.t, 'YYYY-MM-DD') END AS day
		  FROM ticks tk)
	SELECT format('<g class="x-axis" font-size="11" fill="#333">' || E'\n'
				  '<line x1="%s" y1="%s" x2="%s" y2="%s" stroke="#333"/>' || E'\n',
				  g.lm, g.pt + g.ph, g.lm + pw, g.pt + g.ph)
		   || coalesce(string_agg(
				format('<line x1="%s" y1="%s" x2="%s" y2="%s" stroke="#333"/>'
					   '<text class="tick" x="%s" y="%s" text-anchor="middle">%s</text>',
					   quota_sched.svg_number(l.x, 2), g.pt + g.ph, quota_sched.svg_number(l.x, 2),
					   g.pt + g.ph + 5, quota_sched.svg_number(l.x, 2), g.pt + g.ph + 17, l.label)
				|| CASE WHEN l.day IS NULL THEN ''
						ELSE format('<text class="tick-day" x="%s" y="%s" text-anchor="middle">%s</text>',
									quota_sched.svg_number(l.x, 2), g.pt + g.ph + 30, l.day) END,
				E'\n' ORDER BY l.t) || E'\n', '')
		   || format('<text x="%s" y="%s" text-anchor="end">time (UTC)</text>' || E'\n</g>\n',
					 g.lm + pw, g.pt + g.ph + 44)
	  FROM labelled l);
END
$$;

/*
 * The y axis of a panel: lines and labels at each step up to ytop.
 */
CREATE OR REPLACE FUNCTION quota_sched.svg_y_axis(pw integer, ystep numeric, ytop numeric) RETURNS text
LANGUAGE sql IMMUTABLE
BEGIN ATOMIC
	SELECT string_agg(format('<line x1="%s" y1="%s" x2="%s" y2="%s" stroke="#ddd"/>'
							 '<text x="%s" y="%s" text-anchor="end" font-size="11" fill="#333">%s</text>',
							 g.lm, quota_sched.svg_number(y.py, 2), g.lm + pw, quota_sched.svg_number(y.py, 2),
							 g.lm - 6, quota_sched.svg_number(y.py + 4, 2), trim_scale(y.v)),
					  E'\n' ORDER BY y.v)
	  FROM quota_sched.svg_layout() g,
		   LATERAL (SELECT s.i * ystep AS v, g.pt + g.ph - (s.i * ystep / ytop * g.ph)::double precision AS py
					  FROM generate_series(0, (ytop / ystep)::integer) AS s(i)) y;
END;

/*
 * The bars of a panel (unit cu): each share's own instances then its
 * borrowed ones, on top of the shares before it.
 */
CREATE OR REPLACE FUNCTION quota_sched.svg_bars(cu text, "from" timestamptz, "to" timestamptz,
												bucket interval, pw integer, span double precision,
												ytop numeric, ub timestamptz[], us text[], uu text[],
												uo double precision[], uw double precision[],
												shares text[], colours text[])
RETURNS text
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
SET TimeZone = 'UTC'
AS $$
DECLARE
	g record := quota_sched.svg_layout();
	t0 timestamptz := "from";
	t1 timestamptz := "to";
	width interval := bucket;
BEGIN
	RETURN (
	WITH bk AS (
		SELECT s.b, g.lm + pw * extract(epoch FROM s.b - t0) / span AS x0,
			   g.lm + pw * extract(epoch FROM least(s.b + width, t1) - t0) / span AS x1,
			   extract(epoch FROM least(s.b + width, t1) - s.b)::double precision AS secs,
			   replace(to_char(s.b, 'YYYY-MM-DD"T"HH24:MI:SS.US'), '.000000', '') || 'Z' AS iso
		  FROM generate_series(t0, t1, width) AS s(b) WHERE s.b < t1),
	seg AS (
		SELECT bk.*, x.sh, array_position(shares, x.sh) - 1 AS k, s.o, s.part,
			   s.isecs / bk.secs AS v
		  FROM unnest(ub, us, uu, uo, uw) AS x(b, sh, un, own, bor)
		  JOIN bk ON bk.b = x.b
		 CROSS JOIN LATERAL (VALUES (0, 'own', x.own), (1, 'borrowed', x.bor)) AS s(o, part, isecs)
		 WHERE x.un = cu AND x.sh IS NOT NULL AND s.isecs > 0),
	stack AS (
		SELECT seg.*, sum(seg.v) OVER (PARTITION BY seg.b ORDER BY seg.k, seg.o
									   ROWS UNBOUNDED PRECEDING) AS cum
		  FROM seg)
	SELECT string_agg(format('<rect class="%s" data-share="%s" data-unit="%s" data-bucket="%s" '
							 'data-instances="%s" x="%s" y="%s" width="%s" height="%s" fill="%s">'
							 '<title>%s, %s: %s instances from %s</title></rect>',
							 st.part, quota_sched.xml_escape(st.sh), quota_sched.xml_escape(cu),
							 st.iso, quota_sched.svg_number(st.v, 3),
							 quota_sched.svg_number(st.x0, 2),
							 quota_sched.svg_number(g.pt + g.ph - st.cum / ytop::double precision * g.ph, 2),
							 quota_sched.svg_number(st.x1 - st.x0, 2),
							 quota_sched.svg_number(st.v / ytop::double precision * g.ph, 2),
							 CASE st.o WHEN 0 THEN colours[st.k + 1]
									   ELSE format('url(#hatch-%s)', st.k) END,
							 quota_sched.xml_escape(st.sh), st.part,
							 quota_sched.svg_number(st.v, 3), st.iso),
					  E'\n' ORDER BY st.b, st.k, st.o)
	  FROM stack st);
END
$$;

/*
 * The capacities of a panel (unit cu), as step lines over every bucket (no
 * row: none): each share's own, dashed in its colour, then the
 * environment's.  Shares of equal capacities draw their lines on one
 * another: the dashes of up to four of them take turns.  (The shares'
 * lines have a white halo under them all, so that each shows over the
 * bars of its own colour.)
 */
CREATE OR REPLACE FUNCTION quota_sched.svg_lines(cu text, "from" timestamptz, "to" timestamptz,
												 bucket interval, pw integer, span double precision,
												 ytop numeric, ub timestamptz[], us text[], uu text[],
												 uc double precision[], shares text[], colours text[])
RETURNS text
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
SET TimeZone = 'UTC'
AS $$
DECLARE
	g record := quota_sched.svg_layout();
	dash_gap integer := greatest(3, 6 * (least(cardinality(shares), 4) - 1));
BEGIN
	RETURN (
	WITH bk AS (
		SELECT s.b, s.i,
			   g.lm + pw * extract(epoch FROM s.b - "from") / span AS x0,
			   g.lm + pw * extract(epoch FROM least(s.b + bucket, "to") - "from") / span AS x1
		  FROM generate_series("from", "to", bucket) WITH ORDINALITY AS s(b, i) WHERE s.b < "to"),
	caps AS (
		SELECT x.b, x.sh, x.cap FROM unnest(ub, us, uu, uc) AS x(b, sh, un, cap) WHERE x.un = cu),
	series AS (
		SELECT DISTINCT r.sh, CASE WHEN r.sh IS NULL THEN -1 ELSE array_position(shares, r.sh) - 1 END AS k
		  FROM caps r),
	points AS (
		SELECT s.sh, s.k, bk.i, bk.x0, bk.x1, coalesce(r.cap, 0) AS cap,
			   quota_sched.svg_number(g.pt + g.ph - coalesce(r.cap, 0) / ytop::double precision * g.ph, 2) AS py
		  FROM series s CROSS JOIN bk
		  LEFT JOIN caps r ON r.b = bk.b AND r.sh IS NOT DISTINCT FROM s.sh)
	SELECT coalesce(string_agg(format('<path class="halo" d="%s" fill="none" stroke="white" '
									  'stroke-width="4" stroke-opacity="0.8"/>', l.d),
							   E'\n' ORDER BY l.k DESC) FILTER (WHERE l.k >= 0) || E'\n', '')
		   || string_agg(format('<path class="%s"%s data-unit="%s" data-capacity="%s" d="%s" fill="none" %s/>',
								CASE WHEN l.k < 0 THEN 'env-capacity' ELSE 'capacity' END,
								CASE WHEN l.k < 0 THEN ''
									 ELSE format(' data-share="%s"', quota_sched.xml_escape(l.sh)) END,
								quota_sched.xml_escape(cu), l.caps, l.d,
								CASE WHEN l.k < 0 THEN 'stroke="#222" stroke-width="2"'
									 ELSE format('stroke="%s" stroke-width="2" stroke-dasharray="6 %s" '
												 'stroke-dashoffset="%s"', colours[l.k + 1], dash_gap,
												 6 * (l.k % 4)) END),
					  E'\n' ORDER BY l.k DESC)
	  FROM (SELECT pts.sh, pts.k,
				   string_agg(quota_sched.svg_number(pts.cap, 3), ' ' ORDER BY pts.i) AS caps,
				   string_agg(CASE WHEN pts.i = 1
								   THEN format('M%s %sH%s', quota_sched.svg_number(pts.x0, 2),
											   pts.py, quota_sched.svg_number(pts.x1, 2))
								   ELSE format('V%sH%s', pts.py, quota_sched.svg_number(pts.x1, 2)) END,
							  '' ORDER BY pts.i) AS d
			  FROM points pts GROUP BY pts.sh, pts.k) l);
END
$$;

/*
 * The panel of unit cu, the p-th (from 0): its title, its y axis, bars
 * and lines, and the time axis.  The y axis goes up to the round number
 * above the panel's highest point (a bucket's stack of bars, or a
 * capacity, and a tenth above it: lines at the top stay clear of the
 * frame), in steps of 1, 2 or 5 times a power of ten, about five of them.
 */
CREATE OR REPLACE FUNCTION quota_sched.svg_panel(cu text, p integer, "from" timestamptz, "to" timestamptz,
												 bucket interval, pw integer, span double precision,
												 ub timestamptz[], us text[], uu text[],
												 uc double precision[], uo double precision[],
												 uw double precision[], shares text[], colours text[],
												 xaxis text)
RETURNS text
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	g record := quota_sched.svg_layout();
	ymax numeric;
	mag numeric;
	ystep numeric;
	ytop numeric;
BEGIN
	SELECT max(greatest(r.cap, coalesce(r.own, 0) + coalesce(r.bor, 0)))::numeric
	  INTO ymax
	  FROM (SELECT x.b, x.sh, x.cap,
				   sum(x.own / extract(epoch FROM least(x.b + bucket, "to") - x.b)) OVER (PARTITION BY x.b) AS own,
				   sum(x.bor / extract(epoch FROM least(x.b + bucket, "to") - x.b)) OVER (PARTITION BY x.b) AS bor
			  FROM unnest(ub, us, uu, uc, uo, uw) AS x(b, sh, un, cap, own, bor)
			 WHERE x.un = cu) r;
	ymax := greatest(coalesce(ymax, 0), 0.9) * 1.1;
	mag := power(10::numeric, floor(log(ymax / 5)));
	ystep := CASE WHEN ymax / 5 <= mag THEN mag WHEN ymax / 5 <= 2 * mag THEN 2 * mag
				  WHEN ymax / 5 <= 5 * mag THEN 5 * mag ELSE 10 * mag END;
	ytop := ceil(ymax / ystep) * ystep;
	RETURN format('<g class="panel" data-unit="%s" transform="translate(0,%s)">' || E'\n'
				  '<text class="unit" x="%s" y="18" font-weight="bold">%s</text>' || E'\n'
				  '<text x="%s" y="%s" transform="rotate(-90 %s %s)" text-anchor="middle" '
				  'font-size="11" fill="#333">instances</text>' || E'\n',
				  quota_sched.xml_escape(cu), g.top_y + p * g.panel_h, g.lm,
				  quota_sched.xml_escape(cu), 14, g.pt + g.ph / 2, 14, g.pt + g.ph / 2)
		|| quota_sched.svg_y_axis(pw, ystep, ytop) || E'\n'
		|| '<g class="bars" shape-rendering="crispEdges">' || E'\n'
		|| coalesce(quota_sched.svg_bars(cu, "from", "to", bucket, pw, span, ytop, ub, us, uu, uo, uw,
										 shares, colours) || E'\n', '')
		|| '</g>' || E'\n'
		|| '<g class="lines">' || E'\n'
		|| coalesce(quota_sched.svg_lines(cu, "from", "to", bucket, pw, span, ytop, ub, us, uu, uc,
										  shares, colours) || E'\n', '')
		|| '</g>' || E'\n'
		|| xaxis || '</g>' || E'\n';
END
$$;

/*
 * The legend, right of the panels (pw: the plot's width): the shares'
 * colours, then what the bars and the lines are; and its width and height.
 */
CREATE OR REPLACE FUNCTION quota_sched.svg_legend(shares text[], colours text[], pw integer,
												  OUT legend text, OUT lw integer, OUT lh integer)
LANGUAGE plpgsql IMMUTABLE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	g record := quota_sched.svg_layout();
BEGIN
	lw := 48 + 7 * greatest(27, (SELECT max(length(s.sh)) FROM unnest(shares) AS s(sh)));
	SELECT format('<g class="legend" transform="translate(%s,%s)">' || E'\n'
				  '<text x="0" y="%s" font-weight="bold">shares</text>' || E'\n',
				  g.lm + pw + 24, g.top_y, 18)
		   || coalesce(string_agg(format('<rect class="legend-share" data-share="%s" x="0" y="%s" '
										 'width="14" height="14" fill="%s"/>'
										 '<text x="20" y="%s">%s</text>',
										 quota_sched.xml_escape(s.sh), 10 + 20 * s.k, colours[s.k],
										 21 + 20 * s.k, quota_sched.xml_escape(s.sh)),
								  E'\n' ORDER BY s.k) || E'\n', '')
	  INTO legend
	  FROM unnest(shares) WITH ORDINALITY AS s(sh, k);
	lh := 10 + 20 * (coalesce(cardinality(shares), 0) + 1);
	legend := legend || format(
		'<rect x="0" y="%s" width="14" height="14" fill="#777"/><text x="20" y="%s">own capacity used</text>' || E'\n'
		'<rect x="0" y="%s" width="14" height="14" fill="url(#hatch-legend)"/><text x="20" y="%s">borrowed</text>' || E'\n'
		'<line x1="0" y1="%s" x2="14" y2="%s" stroke="#777" stroke-width="2" stroke-dasharray="6 3"/>'
		'<text x="20" y="%s">a share''s own capacity</text>' || E'\n'
		'<line x1="0" y1="%s" x2="14" y2="%s" stroke="#222" stroke-width="2"/>'
		'<text x="20" y="%s">the environment''s capacity</text>' || E'\n</g>\n',
		lh, lh + 11, lh + 20, lh + 31, lh + 47, lh + 47, lh + 51, lh + 67, lh + 67, lh + 71);
	lh := lh + 80;
END
$$;

/*
 * svg_chart(job_queue, from, to, bucket, and utilization()'s rows, a
 * column an array): the chart of those rows, in UTC (a bucket of days is
 * 24 hours long wherever the caller is, as date_bin() counts it).  Empty
 * bars are not drawn; no rows (a range before any history of the
 * configuration) give a chart that says "no usage".  The document is built
 * by string_agg() over sets (no string grown in a loop but the panels',
 * one a unit).  It runs with its owner's rights, so that its pieces need
 * no grant, and reads nothing but its arguments; a range the chart does
 * not draw (svg_frame: not sound, or more than 2,000 buckets) is refused
 * (22023).  Plans are made for each call's figures: a generic plan, which
 * a session gets after five calls, joins the buckets with the rows in a
 * nested loop, some ten times slower at 2,000 buckets.
 */
CREATE OR REPLACE FUNCTION quota_sched.svg_chart(job_queue text, "from" timestamptz, "to" timestamptz,
												 bucket interval, bucket_starts timestamptz[],
												 row_shares text[], row_units text[],
												 row_capacity double precision[], row_own double precision[],
												 row_borrowed double precision[])
RETURNS text
LANGUAGE plpgsql STABLE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET TimeZone = 'UTC'
SET plan_cache_mode = force_custom_plan
AS $$
DECLARE
	g record := quota_sched.svg_layout();
	f record := quota_sched.svg_frame("from", "to", bucket);
	h record;
	sh record;
	l record;
	xaxis text;
	panels text := '';
	p integer := 0;
	cu text;
BEGIN
	IF f.pw IS NULL THEN
		RAISE EXCEPTION 'invalid range for a chart: from % to % in buckets of %', "from", "to", bucket
			USING ERRCODE = 'invalid_parameter_value',
				  DETAIL = 'from and to are finite, from comes before to, and a bucket is at least a second.';
	END IF;
	h := quota_sched.svg_head(job_queue, "from", "to", bucket);
	IF coalesce(cardinality(bucket_starts), 0) = 0 THEN
		RETURN quota_sched.svg_no_usage(job_queue, h.head);
	END IF;
	sh := quota_sched.svg_shares(row_shares);
	xaxis := quota_sched.svg_x_axis("from", "to", f.pw, f.span);
	FOREACH cu IN ARRAY ARRAY(SELECT DISTINCT x.un COLLATE "C" FROM unnest(row_units) AS x(un)
							   ORDER BY 1) LOOP
		panels := panels || quota_sched.svg_panel(cu, p, "from", "to", bucket, f.pw, f.span, bucket_starts,
												  row_shares, row_units, row_capacity, row_own,
												  row_borrowed, sh.shares, sh.colours, xaxis);
		p := p + 1;
	END LOOP;
	l := quota_sched.svg_legend(sh.shares, sh.colours, f.pw);
	RETURN format('<svg xmlns="http://www.w3.org/2000/svg" width="%s" height="%s" viewBox="0 0 %s %s" '
				  'font-family="sans-serif" font-size="12">' || E'\n'
				  '<title>Utilization of job queue %s</title>' || E'\n'
				  '<desc>Instances in use on average in each bucket, stacked by share: within the '
				  'share''s own capacity solid, borrowed hatched. Dashed lines: each share''s own '
				  'capacity; solid line: the environment''s capacity. %s.</desc>' || E'\n'
				  '<defs>' || E'\n' || '%s' || E'\n</defs>\n'
				  '<rect width="100%%" height="100%%" fill="white"/>' || E'\n',
				  g.lm + f.pw + 24 + l.lw, g.top_y + greatest(p * g.panel_h, l.lh) + 8,
				  g.lm + f.pw + 24 + l.lw, g.top_y + greatest(p * g.panel_h, l.lh) + 8,
				  quota_sched.xml_escape(job_queue), h.subtitle, sh.defs)
		   || h.head || panels || l.legend || '</svg>' || E'\n';
END
$$;

/*
 * utilization_svg(job_queue, from, to, bucket): the chart of
 * utilization(job_queue, from, to, bucket), in UTC (svg_chart).  At most
 * 2,000 buckets (22023 beyond, before utilization() does any work:
 * svg_frame).  TimeZone is UTC inside, for utilization() as well: buckets
 * of days are then 24 hours long wherever the caller is, as date_bin()
 * counts them.
 */
CREATE OR REPLACE FUNCTION quota_sched.utilization_svg(job_queue text, "from" timestamptz, "to" timestamptz,
											bucket interval DEFAULT '1 hour')
RETURNS text
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
SET TimeZone = 'UTC'
SET plan_cache_mode = force_custom_plan
AS $$
DECLARE
	-- utilization()'s rows, a column each
	ub timestamptz[];
	us text[];
	uu text[];
	uc double precision[];
	uo double precision[];
	uw double precision[];
BEGIN
	PERFORM quota_sched.svg_frame("from", "to", bucket);
	SELECT array_agg(r.bucket_start), array_agg(r.quota_share), array_agg(r.capacity_unit),
		   array_agg(r.capacity), array_agg(r.own_instance_seconds),
		   array_agg(r.borrowed_instance_seconds)
	  INTO ub, us, uu, uc, uo, uw
	  FROM quota_sched.utilization(utilization_svg.job_queue, "from", "to", bucket) r;
	RETURN quota_sched.svg_chart(utilization_svg.job_queue, "from", "to", bucket, ub, us, uu, uc, uo, uw);
END
$$;

REVOKE ALL ON FUNCTION quota_sched.xml_escape(text), quota_sched.svg_number(double precision, integer),
	quota_sched.svg_layout(), quota_sched.svg_frame(timestamptz, timestamptz, interval),
	quota_sched.svg_head(text, timestamptz, timestamptz, interval), quota_sched.svg_no_usage(text, text),
	quota_sched.svg_shares(text[]),
	quota_sched.svg_tick(double precision, integer),
	quota_sched.svg_x_axis(timestamptz, timestamptz, integer, double precision),
	quota_sched.svg_y_axis(integer, numeric, numeric),
	quota_sched.svg_bars(text, timestamptz, timestamptz, interval, integer, double precision, numeric,
						 timestamptz[], text[], text[], double precision[], double precision[], text[], text[]),
	quota_sched.svg_lines(text, timestamptz, timestamptz, interval, integer, double precision, numeric,
						  timestamptz[], text[], text[], double precision[], text[], text[]),
	quota_sched.svg_panel(text, integer, timestamptz, timestamptz, interval, integer, double precision,
						  timestamptz[], text[], text[], double precision[], double precision[],
						  double precision[], text[], text[], text),
	quota_sched.svg_legend(text[], text[], integer),
	quota_sched.svg_chart(text, timestamptz, timestamptz, interval, timestamptz[], text[], text[],
						  double precision[], double precision[], double precision[]),
	quota_sched.utilization_svg(text, timestamptz, timestamptz, interval) FROM PUBLIC;
-- utilization_svg() runs with the caller's rights: the callers of
-- utilization() call its helpers too (svg_chart's pieces run with its
-- owner's).
GRANT EXECUTE ON FUNCTION quota_sched.xml_escape(text), quota_sched.svg_number(double precision, integer),
	quota_sched.svg_frame(timestamptz, timestamptz, interval),
	quota_sched.svg_chart(text, timestamptz, timestamptz, interval, timestamptz[], text[], text[],
						  double precision[], double precision[], double precision[]),
	quota_sched.utilization_svg(text, timestamptz, timestamptz, interval)
	TO quota_sched_admin, quota_sched_agent, quota_sched_user;
