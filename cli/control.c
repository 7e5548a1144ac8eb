/*-------------------------------------------------------------------------
 *
 * control.c
 *		quota-sched wait, cancel and priority: the end-of-job notification
 *		(LISTEN quota_sched_job_end), terminate() and set_priority().
 *
 *-------------------------------------------------------------------------
 */
#include "cli.h"
#include "options.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/select.h>
#include <time.h>

/* how often wait reads the jobs again without a notification, in seconds */
#define WAIT_RECHECK_SECONDS 60

static const char *const wait_help =
"quota-sched wait: wait until every job given has ended (SUCCEEDED or FAILED).\n\n"
"Usage: quota-sched wait [OPTIONS] ID...\n\n"
"It listens on quota_sched_job_end, then reads the jobs' states (so a job that ended\n"
"before it listened is seen), and reads them again at each notification.\n"
"  -t, --timeout=SECONDS  give up after SECONDS (exit 4)\n"
COMMON_HELP
"Exit status: 0 every job SUCCEEDED; 1 a job FAILED, or is not found or not yours;\n"
"3 a database error; 4 the timeout ran out.  At most 1000 ids.\n";

/* the jobs' states: $1 the ids (bigint[]) */
static const char *const wait_sql =
"SELECT id, state, status_reason AS reason FROM quota_sched.job "
" WHERE id = ANY ($1::bigint[]) ORDER BY id";

/*
 * wait_state reads the jobs: EXIT_OK (every one ended, *failed if any
 * FAILED), -1 (some have not), or an error's exit code (a job missing:
 * not found, or another team's)
 */
static int
wait_state(CliContext *ctx, const char *ids, bool *failed)
{
	int			status,
				ended = 0;
	PGresult   *res = cli_query(ctx,
								"SELECT i, j.state FROM unnest($1::bigint[]) i "
								"LEFT JOIN quota_sched.job j ON j.id = i",
								1, &ids, &status);

	if (res == NULL)
		return status;
	*failed = false;
	for (int r = 0; r < PQntuples(res); r++)
	{
		const char *state = PQgetvalue(res, r, 1);

		if (PQgetisnull(res, r, 1))
		{
			char		missing[32];

			snprintf(missing, sizeof missing, "%s", PQgetvalue(res, r, 0));
			PQclear(res);
			return cli_job_refusal(ctx, missing);
		}
		ended += strcmp(state, "SUCCEEDED") == 0 || strcmp(state, "FAILED") == 0;
		*failed |= strcmp(state, "FAILED") == 0;
	}
	status = ended == PQntuples(res) ? EXIT_OK : -1;
	PQclear(res);
	return status;
}

/*
 * wait_notice waits for a notification (any: wait_state reads the jobs
 * again) or until *left seconds pass (negative: no timeout): EXIT_OK, or
 * EXIT_DB when the connection fails
 */
static int
wait_notice(CliContext *ctx, double timeout, time_t start)
{
	int			sock = PQsocket(ctx->conn);
	fd_set		fds;
	struct timeval tv = {WAIT_RECHECK_SECONDS, 0};
	PGnotify   *n;

	if (timeout >= 0)
	{
		double		left = timeout - difftime(time(NULL), start);

		if (left < 0)
			left = 0;
		if (left < WAIT_RECHECK_SECONDS)
		{
			tv.tv_sec = (long) left;
			tv.tv_usec = (long) ((left - (long) left) * 1e6);
		}
	}
	FD_ZERO(&fds);
	FD_SET(sock, &fds);
	if (select(sock + 1, &fds, NULL, NULL, &tv) < 0 && errno != EINTR)
		return EXIT_DB;
	if (!PQconsumeInput(ctx->conn))
	{
		fprintf(stderr, "quota-sched wait: the connection failed: %s", PQerrorMessage(ctx->conn));
		return EXIT_DB;
	}
	while ((n = PQnotifies(ctx->conn)) != NULL)
		PQfreemem(n);
	return EXIT_OK;
}

/* wait_args reads wait's options and ids (into ids, a bigint[] literal) */
static int
wait_args(CliContext *ctx, int argc, char **argv, char *ids, size_t cap, double *timeout)
{
	static const struct option opts[] = {{"timeout", required_argument, NULL, 't'}, COMMON_OPTIONS};
	int			c;

	optind = 0;
	while ((c = getopt_long(argc, argv, "t:d:h", opts, NULL)) != -1)
	{
		if (cli_common_option(ctx, c, optarg))
			continue;
		if (c == 't' && parse_seconds(optarg, true, timeout))
			continue;
		if (c == 't')
			return cli_usage_error("wait", "--timeout: \"%s\" is not a number of seconds", optarg);
		if (c == 'h')
		{
			fputs(wait_help, stdout);
			exit(EXIT_OK);
		}
		return cli_usage_error("wait", NULL);
	}
	return cli_ids_array("wait", argc - optind, argv + optind, ids, cap);
}

int
cmd_wait(CliContext *ctx, int argc, char **argv)
{
	char		ids[MAX_IDS * 21 + 3];
	double		timeout = -1;
	int			status = wait_args(ctx, argc, argv, ids, sizeof ids, &timeout);
	time_t		start = time(NULL);
	bool		failed = false;
	PGresult   *res;
	const char *params[1] = {ids};

	if (status != EXIT_OK || (status = cli_connect(ctx)) != EXIT_OK)
		return status;
	if ((res = cli_query(ctx, "LISTEN quota_sched_job_end", 0, NULL, &status)) == NULL)
		return status;
	PQclear(res);
	while ((status = wait_state(ctx, ids, &failed)) == -1)
	{
		if (timeout >= 0 && difftime(time(NULL), start) >= timeout)
		{
			fprintf(stderr, "quota-sched wait: not every job has ended after %g s\n", timeout);
			status = EXIT_TIMEOUT;
			break;
		}
		if ((status = wait_notice(ctx, timeout, start)) != EXIT_OK)
			return status;
	}
	if (status != EXIT_OK && status != EXIT_TIMEOUT)
		return status;
	if (ctx->json)
		cli_show_json(ctx, wait_sql, 1, params, false);
	else
		cli_show(ctx, wait_sql, 1, params, false);
	return status == EXIT_TIMEOUT ? EXIT_TIMEOUT : (failed ? EXIT_NO : EXIT_OK);
}

static const char *const cancel_help =
"quota-sched cancel: terminate jobs, with quota_sched.terminate().\n\n"
"Usage: quota-sched cancel [OPTIONS] ID...\n\n"
"A job waiting ends FAILED at once; a running one is stopped by its agent and ends FAILED.\n"
"  -a, --array            each ID is an array's (its index 0's): every job of it not ended\n"
"  -r, --reason=TEXT      the reason kept as status_reason (default \"Terminated by user\")\n"
COMMON_HELP
"At most 1000 ids; each is tried on its own: the exit status is the worst.\n";

/* cancel_one terminates one job (of an array: all), printing its row's line */
static int
cancel_one(CliContext *ctx, const char *id, const char *reason, bool array, bool *first)
{
	const char *params[3] = {id, array ? "true" : "false", reason};
	int			status;
	PGresult   *res = cli_query(ctx,
								reason ? "SELECT to_jsonb(t), id, state, status_reason FROM quota_sched.terminate($1::bigint, $3, \"array\" => $2::boolean) t"
								: "SELECT to_jsonb(t), id, state, status_reason FROM quota_sched.terminate($1::bigint, \"array\" => $2::boolean) t",
								reason ? 3 : 2, params, &status);

	if (res == NULL)
		return status;
	if (ctx->json)
		printf("%s%s", *first ? "" : ", ", PQgetvalue(res, 0, 0));
	else
		printf("job %s%s: %s%s (%s)\n", PQgetvalue(res, 0, 1), array ? " and its array" : "",
			   PQgetvalue(res, 0, 2),
			   strcmp(PQgetvalue(res, 0, 2), "FAILED") == 0 ? "" : ", stop requested",
			   PQgetvalue(res, 0, 3));
	*first = false;
	PQclear(res);
	return EXIT_OK;
}

int
cmd_cancel(CliContext *ctx, int argc, char **argv)
{
	static const struct option opts[] = {{"array", no_argument, NULL, 'a'},
	{"reason", required_argument, NULL, 'r'}, COMMON_OPTIONS};
	char		ids[MAX_IDS * 21 + 3];
	const char *reason = NULL;
	bool		array = false,
				first = true;
	int			c,
				status = EXIT_OK;

	optind = 0;
	while ((c = getopt_long(argc, argv, "ar:d:h", opts, NULL)) != -1)
	{
		if (cli_common_option(ctx, c, optarg))
			continue;
		if (c == 'a' || c == 'r')
		{
			array |= c == 'a';
			reason = c == 'r' ? optarg : reason;
			continue;
		}
		if (c == 'h')
			return fputs(cancel_help, stdout), EXIT_OK;
		return cli_usage_error("cancel", NULL);
	}
	if ((status = cli_ids_array("cancel", argc - optind, argv + optind, ids, sizeof ids)) != EXIT_OK ||
		(status = cli_connect(ctx)) != EXIT_OK)
		return status;
	if (ctx->json)
		printf("[");
	for (int i = optind; i < argc; i++)
	{
		int			one = cancel_one(ctx, argv[i], reason, array, &first);

		status = one > status ? one : status;
	}
	if (ctx->json)
		printf("]\n");
	return status;
}

static const char *const priority_help =
"quota-sched priority: change a job's priority, with quota_sched.set_priority().\n\n"
"Usage: quota-sched priority [OPTIONS] ID PRIORITY\n"
COMMON_HELP;

int
cmd_priority(CliContext *ctx, int argc, char **argv)
{
	static const struct option opts[] = {COMMON_OPTIONS};
	int			c,
				status;
	long		id;
	PGresult   *res;

	optind = 0;
	while ((c = getopt_long(argc, argv, "+d:h", opts, NULL)) != -1)
	{
		if (cli_common_option(ctx, c, optarg))
			continue;
		if (c == 'h')
			return fputs(priority_help, stdout), EXIT_OK;
		return cli_usage_error("priority", NULL);
	}
	if (argc - optind != 2)
		return cli_usage_error("priority", "give a job id and a priority");
	if (!cli_parse_id(argv[optind], &id))
		return cli_usage_error("priority", "\"%s\" is not a job id (a whole number from 1)", argv[optind]);
	if ((status = cli_connect(ctx)) != EXIT_OK)
		return status;
	res = cli_query(ctx, "SELECT p.old, jsonb_build_object('id', $1::bigint, 'old_priority', p.old, 'priority', $2::int) "
					"FROM quota_sched.set_priority($1::bigint, $2::int) p(old)",
					2, (const char *const *) argv + optind, &status);
	if (res == NULL)
		return status;
	if (ctx->json)
		printf("%s\n", PQgetvalue(res, 0, 1));
	else
		printf("job %s: priority %s -> %s\n", argv[optind], PQgetvalue(res, 0, 0), argv[optind + 1]);
	PQclear(res);
	return EXIT_OK;
}
