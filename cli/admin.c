/*-------------------------------------------------------------------------
 *
 * admin.c
 *		quota-sched usage (utilization(), lending(), the view preemptions,
 *		share_budget: a share's or a team's figures over a period), hosts
 *		(the view agents) and drain (drain_agent()).
 *
 *-------------------------------------------------------------------------
 */
#include "cli.h"
#include "options.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const usage_help =
"quota-sched usage: what shares had and used over a period, who lent to whom,\n"
"who preempted whom, and their budgets, from utilization(), lending(), the view\n"
"preemptions and the view share_budget (every role sees every share's figures).\n\n"
"Usage: quota-sched usage [OPTIONS]\n\n"
"  -s, --share=SHARE[,..] these shares (default: your teams' shares, team_shares())\n"
"  -q, --queue=QUEUE      of this job queue only\n"
"      --since=TIME       from TIME (a timestamp; default: 7 days ago)\n"
"      --until=TIME       to TIME (default: now)\n"
COMMON_HELP
"Hours are instance-hours: quota is the share's own capacity over the period (what it\n"
"used of it and what it left idle), used what its jobs held, borrowed the part beyond\n"
"its own capacity.\n";

/* the shares ($1 queue, $2 shares) and the period ($3 since, $4 until) */
#define USAGE_WITH \
"WITH s AS (SELECT t.job_queue, t.quota_share FROM quota_sched.team_shares() t " \
"            WHERE $2::text[] IS NULL AND ($1::text IS NULL OR t.job_queue = $1) " \
"           UNION SELECT q.job_queue, q.name FROM quota_sched.quota_share q " \
"            WHERE q.name = ANY ($2::text[]) AND ($1::text IS NULL OR q.job_queue = $1)), " \
"     p AS (SELECT coalesce($3::timestamptz, date_trunc('second', now()) - interval '7 days') AS since, " \
"                  coalesce($4::timestamptz, date_trunc('second', now())) AS until), " \
"     q AS (SELECT DISTINCT job_queue FROM s) "

static const char *const usage_sections[4][2] = {
	{"utilization",
		"SELECT q.job_queue AS queue, u.quota_share AS share, u.capacity_unit AS unit, "
		"round(((u.own_instance_seconds + u.idle_instance_seconds) / 3600)::numeric, 2) AS quota_h, "
		"round((u.used_instance_seconds / 3600)::numeric, 2) AS used_h, "
		"round((u.borrowed_instance_seconds / 3600)::numeric, 2) AS borrowed_h, "
		"round((u.idle_instance_seconds / 3600)::numeric, 2) AS idle_h, "
		"u.dispatched, u.succeeded, u.failed, u.terminated, u.preempted, u.preempting, "
		"round(u.wait_p50_seconds) AS wait_p50_s "
		"FROM q, p, LATERAL quota_sched.utilization(q.job_queue, p.since, p.until, p.until - p.since) u "
		"WHERE (q.job_queue, u.quota_share) IN (SELECT * FROM s) ORDER BY 1, 2, 3"},
	{"lending",
		"SELECT q.job_queue AS queue, l.capacity_unit AS unit, l.lender_share AS lender, "
		"l.borrower_share AS borrower, round((sum(l.instance_seconds) / 3600)::numeric, 2) AS hours "
		"FROM q, p, LATERAL quota_sched.lending(q.job_queue, p.since, p.until, p.until - p.since) l "
		"WHERE (q.job_queue, l.lender_share) IN (SELECT * FROM s) "
		"   OR (q.job_queue, l.borrower_share) IN (SELECT * FROM s) "
		"GROUP BY 1, 2, 3, 4 ORDER BY 1, 2, 3, 4"},
	{"preemptions",
		"SELECT e.job_queue AS queue, e.victim_share, e.preemptor_share, e.reason, "
		"count(*) AS preemptions, round(extract(epoch FROM min(e.victim_ran))) AS shortest_run_s "
		"FROM quota_sched.preemptions e, p WHERE e.at >= p.since AND e.at < p.until "
		"AND ((e.job_queue, e.victim_share) IN (SELECT * FROM s) "
		"  OR (e.job_queue, e.preemptor_share) IN (SELECT * FROM s)) "
		"GROUP BY 1, 2, 3, 4 ORDER BY 1, 2, 3, 4"},
	{"budgets",
		"SELECT b.job_queue AS queue, b.quota_share AS share, b.capacity_unit AS unit, b.budget_hours, "
		"round(b.spent_hours::numeric, 2) AS spent_hours, b.period_end, b.exhausted "
		"FROM quota_sched.share_budget b WHERE (b.job_queue, b.quota_share) IN (SELECT * FROM s) "
		"ORDER BY 1, 2, 3"}
};

/* usage_json: one object: the period and each section's rows */
static int
usage_json(CliContext *ctx, const char *const *params)
{
	size_t		cap = 8192,
				len = 0;
	char	   *sql = malloc(cap);
	int			status;

	if (sql == NULL)
		return EXIT_DB;
	sql[0] = '\0';
	append(sql, cap, &len, USAGE_WITH "SELECT jsonb_build_object('since', (SELECT since FROM p), "
		   "'until', (SELECT until FROM p), 'shares', (SELECT jsonb_agg(to_jsonb(s)) FROM s)");
	for (int i = 0; i < 4; i++)
		append(sql, cap, &len, ", '%s', (SELECT coalesce(jsonb_agg(to_jsonb(x)), '[]') FROM (%s) x)",
			   usage_sections[i][0], usage_sections[i][1]);
	append(sql, cap, &len, ")");
	status = cli_print_first(ctx, sql, 4, params);
	free(sql);
	return status;
}

/* usage_tables: the period, then each section as a table */
static int
usage_tables(CliContext *ctx, const char *const *params)
{
	char		sql[4096];
	int			status;
	PGresult   *res;

	snprintf(sql, sizeof sql, USAGE_WITH "SELECT since, until FROM p");
	if ((res = cli_query(ctx, sql, 4, params, &status)) == NULL)
		return status;
	printf("From %s to %s (hours: instance-hours)\n", PQgetvalue(res, 0, 0), PQgetvalue(res, 0, 1));
	PQclear(res);
	for (int i = 0; i < 4; i++)
	{
		snprintf(sql, sizeof sql, USAGE_WITH "%s", usage_sections[i][1]);
		if ((res = cli_query(ctx, sql, 4, params, &status)) == NULL)
			return status;
		printf("\n%s%s\n", usage_sections[i][0], PQntuples(res) ? "" : ": none");
		if (PQntuples(res))
			cli_print_table(res, 0);
		PQclear(res);
	}
	return EXIT_OK;
}

/* usage_shares: whether the options name any share (else a usage error) */
static int
usage_shares(CliContext *ctx, const char *const *params)
{
	int			status;
	PGresult   *res = cli_query(ctx, USAGE_WITH "SELECT count(*) FROM s, p", 4, params, &status);

	if (res == NULL)
		return status;
	status = strcmp(PQgetvalue(res, 0, 0), "0") == 0 ? EXIT_USAGE : EXIT_OK;
	PQclear(res);
	if (status != EXIT_OK)
		return cli_usage_error("usage", params[1] ? "no such share%s%s" :
							   "you are in no team's share%s%s: give --share", params[0] ? " in queue " : "",
							   params[0] ? params[0] : "");
	return EXIT_OK;
}

int
cmd_usage(CliContext *ctx, int argc, char **argv)
{
	static const struct option opts[] = {{"share", required_argument, NULL, 's'},
		{"queue", required_argument, NULL, 'q'}, {"since", required_argument, NULL, OPT_OWN},
	{"until", required_argument, NULL, OPT_OWN + 1}, COMMON_OPTIONS};
	const char *params[4] = {NULL, NULL, NULL, NULL};
	char		shares[1024];
	int			c,
				status;

	optind = 0;
	while ((c = getopt_long(argc, argv, "s:q:d:h", opts, NULL)) != -1)
	{
		if (cli_common_option(ctx, c, optarg))
			continue;
		if (c == 's')
			params[1] = (snprintf(shares, sizeof shares, "{%s}", optarg), shares);
		else if (c == 'q' || c == OPT_OWN || c == OPT_OWN + 1)
			params[c == 'q' ? 0 : c - OPT_OWN + 2] = optarg;
		else if (c == 'h')
			return fputs(usage_help, stdout), EXIT_OK;
		else
			return cli_usage_error("usage", NULL);
	}
	if (optind < argc)
		return cli_usage_error("usage", "unexpected argument \"%s\"", argv[optind]);
	if ((status = cli_connect(ctx)) != EXIT_OK || (status = usage_shares(ctx, params)) != EXIT_OK)
		return status;
	return ctx->json ? usage_json(ctx, params) : usage_tables(ctx, params);
}

static const char *const hosts_help =
"quota-sched hosts: the registered agents, from the view quota_sched.agents (admins).\n\n"
"Usage: quota-sched hosts [OPTIONS]\n\n"
"  -q, --queue=QUEUE      the agents of this job queue only\n"
COMMON_HELP;

static const char *const hosts_sql =
"SELECT agent, job_queue AS queue, capacity_unit AS unit, state, live, instances, "
"held_instances AS held, free_instances AS free, held_jobs AS jobs, last_seen, address, labels "
"FROM quota_sched.agents WHERE $1::text IS NULL OR job_queue = $1 ORDER BY agent";

int
cmd_hosts(CliContext *ctx, int argc, char **argv)
{
	static const struct option opts[] = {{"queue", required_argument, NULL, 'q'}, COMMON_OPTIONS};
	const char *queue = NULL;
	int			c,
				status;

	optind = 0;
	while ((c = getopt_long(argc, argv, "q:d:h", opts, NULL)) != -1)
	{
		if (cli_common_option(ctx, c, optarg))
			continue;
		if (c == 'q')
			queue = optarg;
		else if (c == 'h')
			return fputs(hosts_help, stdout), EXIT_OK;
		else
			return cli_usage_error("hosts", NULL);
	}
	if (optind < argc)
		return cli_usage_error("hosts", "unexpected argument \"%s\"", argv[optind]);
	if ((status = cli_connect(ctx)) != EXIT_OK)
		return status;
	return ctx->json ? cli_show_json(ctx, hosts_sql, 1, &queue, false)
		: cli_show(ctx, hosts_sql, 1, &queue, false);
}

static const char *const drain_help =
"quota-sched drain: set an agent DRAINING (it claims no more jobs; those it runs go on),\n"
"or ACTIVE again with --undo, with quota_sched.drain_agent() (admins).\n\n"
"Usage: quota-sched drain [OPTIONS] AGENT\n\n"
"      --undo             set it ACTIVE again\n"
COMMON_HELP;

int
cmd_drain(CliContext *ctx, int argc, char **argv)
{
	static const struct option opts[] = {{"undo", no_argument, NULL, OPT_OWN}, COMMON_OPTIONS};
	const char *params[2] = {NULL, "true"};
	const char *sql = "SELECT name AS agent, state, state_changed_at FROM quota_sched.drain_agent($1, $2::boolean)";
	int			c,
				status;

	optind = 0;
	while ((c = getopt_long(argc, argv, "d:h", opts, NULL)) != -1)
	{
		if (cli_common_option(ctx, c, optarg))
			continue;
		if (c == OPT_OWN)
			params[1] = "false";
		else if (c == 'h')
			return fputs(drain_help, stdout), EXIT_OK;
		else
			return cli_usage_error("drain", NULL);
	}
	if (argc - optind != 1)
		return cli_usage_error("drain", "give one agent's name");
	params[0] = argv[optind];
	if ((status = cli_connect(ctx)) != EXIT_OK)
		return status;
	return ctx->json ? cli_show_json(ctx, sql, 2, params, true) : cli_show(ctx, sql, 2, params, false);
}
