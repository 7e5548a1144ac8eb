/*-------------------------------------------------------------------------
 *
 * jobs.c
 *		quota-sched jobs, show, explain and logs: reads of quota_sched.job,
 *		explain() and the view job_attempts, through the caller's own
 *		row-level security (a user sees their own jobs and their teams').
 *
 *-------------------------------------------------------------------------
 */
#include "cli.h"
#include "options.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* the columns jobs shows, and show (the same and more) */
#define JOB_COLUMNS \
	"id, name, owner, job_queue AS queue, quota_share AS share, state, status_reason AS reason, " \
	"priority AS pri, capacity_unit AS unit, instance_count AS n, submitted_at AS submitted, agent"

static const char *const jobs_help =
"quota-sched jobs: list jobs, newest first.\n\n"
"Usage: quota-sched jobs [OPTIONS]\n\n"
"By default your own jobs that have not ended (RUNNABLE, SCHEDULED, STARTING, RUNNING).\n"
"  -T, --team             every job of your teams' shares (and yours)\n"
"  -A, --all              every job you may see (admins: every job)\n"
"  -S, --state=STATE[,..] these states only, in any case (\"all\": any state, ended too)\n"
"  -s, --share=SHARE      this quota share only\n"
"  -q, --queue=QUEUE      this job queue only\n"
"  -l, --limit=N          at most N jobs (default 100, at most 10000)\n"
COMMON_HELP;

static const struct option jobs_options[] = {
	{"team", no_argument, NULL, 'T'}, {"all", no_argument, NULL, 'A'},
	{"state", required_argument, NULL, 'S'}, {"share", required_argument, NULL, 's'},
	{"queue", required_argument, NULL, 'q'}, {"limit", required_argument, NULL, 'l'},
	COMMON_OPTIONS
};

/*
 * The jobs' query: $1 who (mine, team, all), $2 the states (a text[]; null:
 * not ended), $3 the share, $4 the queue, $5 the limit
 */
static const char *const jobs_sql =
"SELECT " JOB_COLUMNS " FROM quota_sched.job "
" WHERE CASE $1 WHEN 'mine' THEN owner = current_user "
"               WHEN 'team' THEN owner = current_user OR (job_queue, quota_share) IN "
"                    (SELECT job_queue, quota_share FROM quota_sched.team_shares()) "
"               ELSE true END "
"   AND CASE WHEN $2::text[] IS NULL THEN state NOT IN ('SUCCEEDED', 'FAILED') "
"            WHEN 'ALL' = ANY ($2::text[]) THEN true ELSE state = ANY ($2::text[]) END "
"   AND ($3::text IS NULL OR quota_share = $3) AND ($4::text IS NULL OR job_queue = $4) "
" ORDER BY id DESC LIMIT $5::int";

int
cmd_jobs(CliContext *ctx, int argc, char **argv)
{
	const char *params[5] = {"mine", NULL, NULL, NULL, "100"};
	char		states[512];
	long		limit;
	int			c,
				status;

	optind = 0;
	while ((c = getopt_long(argc, argv, "TAS:s:q:l:d:h", jobs_options, NULL)) != -1)
	{
		if (cli_common_option(ctx, c, optarg))
			continue;
		switch (c)
		{
			case 'T': params[0] = "team"; break;
			case 'A': params[0] = "all"; break;
			case 'S':
				snprintf(states, sizeof states, "{%s}", optarg);
				for (char *p = states; *p; p++)
					*p = (*p >= 'a' && *p <= 'z') ? *p - 'a' + 'A' : *p;
				params[1] = states;
				break;
			case 's': params[2] = optarg; break;
			case 'q': params[3] = optarg; break;
			case 'l':
				if (!parse_count(optarg, 1, 10000, &limit))
					return cli_usage_error("jobs", "--limit: \"%s\" is not a number from 1 to 10000", optarg);
				params[4] = optarg;
				break;
			case 'h': fputs(jobs_help, stdout); return EXIT_OK;
			default: return cli_usage_error("jobs", NULL);
		}
	}
	if (optind < argc)
		return cli_usage_error("jobs", "unexpected argument \"%s\"", argv[optind]);
	if ((status = cli_connect(ctx)) != EXIT_OK)
		return status;
	if (ctx->json)
		return cli_show_json(ctx, jobs_sql, 5, params, false);
	return cli_show(ctx, jobs_sql, 5, params, false);
}

/*
 * one_id: the one argument of show, explain, logs (a job id), after their
 * options; help: the subcommand's --help
 */
static int
one_id(CliContext *ctx, const char *cmd, int argc, char **argv, const char *help, const char **id)
{
	static const struct option opts[] = {COMMON_OPTIONS};
	int			c;
	long		n;

	optind = 0;
	while ((c = getopt_long(argc, argv, "d:h", opts, NULL)) != -1)
	{
		if (cli_common_option(ctx, c, optarg))
			continue;
		if (c == 'h')
		{
			fputs(help, stdout);
			exit(EXIT_OK);
		}
		return cli_usage_error(cmd, NULL);
	}
	if (optind != argc - 1)
		return cli_usage_error(cmd, "give one job id");
	if (!cli_parse_id(argv[optind], &n))
		return cli_usage_error(cmd, "\"%s\" is not a job id (a whole number from 1)", argv[optind]);
	*id = argv[optind];
	return cli_connect(ctx);
}

static const char *const show_help =
"quota-sched show: one job's columns (quota_sched.job), as \"column  value\" lines.\n\n"
"Usage: quota-sched show [OPTIONS] ID\n\n"
"A job you may not see (another team's) is refused as explain() refuses it (exit 1).\n"
COMMON_HELP;

static const char *const show_sql =
"SELECT " JOB_COLUMNS ", tags, payload, max_attempts, failed_attempts, preemption_count, "
"       timeout, array_id, array_index, array_size, instances_per_host, same_label, "
"       client_token, queued_at, scheduled_at, started_at, stopped_at, stop_reason "
"  FROM quota_sched.job WHERE id = $1::bigint";

int
cmd_show(CliContext *ctx, int argc, char **argv)
{
	const char *id;
	int			status = one_id(ctx, "show", argc, argv, show_help, &id);

	if (status == EXIT_OK)
		status = cli_job_visible(ctx, id);
	if (status != EXIT_OK)
		return status;
	if (ctx->json)
		return cli_show_json(ctx, show_sql, 1, &id, true);
	return cli_show(ctx, show_sql, 1, &id, true);
}

static const char *const explain_help =
"quota-sched explain: why a job is not running, from quota_sched.explain(ID):\n"
"its state and code (blocked_by), the sentence (detail), then the figures.\n\n"
"Usage: quota-sched explain [OPTIONS] ID\n\n"
"--json prints explain()'s object as it is.\n"
COMMON_HELP;

/* the figures: explain's keys but the three printed above them, nested ones as JSON */
static const char *const explain_sql =
"SELECT e->>'state', coalesce(e->>'blocked_by', '-'), e->>'detail', k.key, "
"       CASE jsonb_typeof(k.value) WHEN 'string' THEN k.value #>> '{}' ELSE k.value::text END "
"  FROM quota_sched.explain($1::bigint) e "
"  LEFT JOIN LATERAL jsonb_each(e - '{state,blocked_by,detail,job_id}'::text[]) k ON true "
" ORDER BY k.key";

int
cmd_explain(CliContext *ctx, int argc, char **argv)
{
	const char *id;
	int			status = one_id(ctx, "explain", argc, argv, explain_help, &id),
				width = 0;
	PGresult   *res;

	if (status != EXIT_OK)
		return status;
	if (ctx->json)
		return cli_print_first(ctx, "SELECT quota_sched.explain($1::bigint)", 1, &id);
	res = cli_query(ctx, explain_sql, 1, &id, &status);
	if (res == NULL)
		return status;
	printf("job %s: %s, blocked by %s\n%s\n\n", id, PQgetvalue(res, 0, 0), PQgetvalue(res, 0, 1),
		   PQgetvalue(res, 0, 2));
	for (int r = 0; r < PQntuples(res); r++)
		if ((int) strlen(PQgetvalue(res, r, 3)) > width)
			width = strlen(PQgetvalue(res, r, 3));
	for (int r = 0; r < PQntuples(res); r++)
		if (!PQgetisnull(res, r, 3))
			printf("  %-*s  %s\n", width, PQgetvalue(res, r, 3), PQgetvalue(res, r, 4));
	PQclear(res);
	return EXIT_OK;
}

static const char *const logs_help =
"quota-sched logs: a job's output, attempt by attempt and part by part, from the view\n"
"quota_sched.job_attempts: the last 4096 bytes the agent kept, the exit code, and where\n"
"the whole log is (host and file).\n\n"
"Usage: quota-sched logs [OPTIONS] ID\n"
COMMON_HELP;

static const char *const logs_sql =
"SELECT attempt, rank, agent, host, log_path, exit_code, started_at, ended_at, output "
"  FROM quota_sched.job_attempts WHERE job_id = $1::bigint ORDER BY attempt, rank";

/* print_attempts prints each attempt's heading and its output */
static void
print_attempts(const PGresult *res)
{
	for (int r = 0; r < PQntuples(res); r++)
	{
		const char *out = PQgetvalue(res, r, 8);
		size_t		len = strlen(out);

		printf("==> attempt %s, part %s, on %s (agent %s): %s%s; whole log: %s:%s\n",
			   PQgetvalue(res, r, 0), PQgetvalue(res, r, 1),
			   PQgetisnull(res, r, 3) ? "?" : PQgetvalue(res, r, 3), PQgetvalue(res, r, 2),
			   PQgetisnull(res, r, 7) ? "running" : "exit code ",
			   PQgetisnull(res, r, 7) ? "" : (PQgetisnull(res, r, 5) ? "none (stopped)" : PQgetvalue(res, r, 5)),
			   PQgetisnull(res, r, 3) ? "?" : PQgetvalue(res, r, 3),
			   PQgetisnull(res, r, 4) ? "?" : PQgetvalue(res, r, 4));
		fputs(out, stdout);
		if (len > 0 && out[len - 1] != '\n')
			putchar('\n');
	}
}

int
cmd_logs(CliContext *ctx, int argc, char **argv)
{
	const char *id;
	int			status = one_id(ctx, "logs", argc, argv, logs_help, &id);
	PGresult   *res;

	if (status == EXIT_OK)
		status = cli_job_visible(ctx, id);
	if (status != EXIT_OK)
		return status;
	if (ctx->json)
		return cli_show_json(ctx, logs_sql, 1, &id, false);
	res = cli_query(ctx, logs_sql, 1, &id, &status);
	if (res == NULL)
		return status;
	if (PQntuples(res) == 0)
		fprintf(stderr, "quota-sched logs: job %s has not started an attempt yet\n", id);
	print_attempts(res);
	PQclear(res);
	return EXIT_OK;
}
