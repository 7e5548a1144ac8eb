/*-------------------------------------------------------------------------
 *
 * submit.c
 *		quota-sched submit: one INSERT into quota_sched.job, of the
 *		columns the flags (and a script's #QS lines) give; the server
 *		checks every value.  With --token, a retried submit inserts
 *		nothing (ON CONFLICT DO NOTHING) and looks the job up by its token,
 *		so it prints the same ids.
 *
 *-------------------------------------------------------------------------
 */
#include "cli.h"
#include "options.h"
#include "script.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* the columns the flags set, in the INSERT's order */
enum
{
	F_NAME, F_QUEUE, F_SHARE, F_UNIT, F_INSTANCES, F_PER_HOST, F_SAME_LABEL, F_PRIORITY,
	F_TIMEOUT, F_ATTEMPTS, F_ARRAY, F_DEPENDS, F_TOKEN, F_TAGS, F_PAYLOAD, F_COUNT
};

/* each column, and the cast of its text parameter */
static const struct
{
	const char *column;
	const char *cast;
}			columns[F_COUNT] = {
	{"name", "text"}, {"job_queue", "text"}, {"quota_share", "text"}, {"capacity_unit", "text"},
	{"instance_count", "integer"}, {"instances_per_host", "integer"}, {"same_label", "text"},
	{"priority", "integer"}, {"timeout", "interval"}, {"max_attempts", "integer"},
	{"array_size", "integer"}, {"depends_on", "bigint[]"}, {"client_token", "text"},
	{"tags", "jsonb"}, {"payload", "jsonb"}
};

/* what the flags gave: a text per column (NULL: not given), and the depends_on literal */
typedef struct SubmitFlags
{
	const char *value[F_COUNT];
	char	   *owned[F_COUNT];	/* values this file made (freed at the end) */
} SubmitFlags;

static const char *const submit_help =
"quota-sched submit: submit a job (or an array of jobs) and print its id.\n\n"
"Usage: quota-sched submit [OPTIONS] SCRIPT [ARGS...]\n"
"       quota-sched submit [OPTIONS] -- COMMAND [ARGS...]\n\n"
"A SCRIPT runs as /bin/sh -c TEXT (its name as $0), or, when its first line is \"#!\",\n"
"by the interpreter that line names; at most 64 KiB.  Its leading comment lines\n"
"\"#QS --flag value ...\" give flags, as #SBATCH lines do; the command line's win.\n"
"A COMMAND after \"--\" runs as it is (the payload's command, a JSON argv).\n\n"
"Options (each is the column of quota_sched.job named; the server checks them):\n"
"  -q, --queue=QUEUE         job_queue (required)\n"
"  -s, --share=SHARE         quota_share (required)\n"
"  -u, --unit=UNIT           capacity_unit (required)\n"
"  -n, --instances=N         instance_count (default 1)\n"
"      --instances-per-host=N instances_per_host\n"
"      --same-label=LABEL    same_label\n"
"  -p, --priority=N          priority (default 0)\n"
"  -t, --timeout=INTERVAL    timeout, e.g. \"2 hours\"\n"
"      --attempts=N          max_attempts (default 1)\n"
"  -a, --array=N             array_size: N jobs, indexes 0 to N-1 (2 to 10000)\n"
"  -d, --depends-on=ID[,ID]  depends_on: run once these jobs SUCCEEDED (an array's id: all its jobs)\n"
"  -J, --name=NAME           name (default: the script's or command's file name)\n"
"      --token=TOKEN         client_token: a retried submit with it prints the same ids\n"
"      --tags=JSON           tags, a JSON object\n"
"      --dbname=CONNSTR      the database, as a libpq connection string\n"
"      --json                print {\"id\", \"array_id\", \"ids\", \"submitted\"}\n"
"  -h, --help                this help\n\n"
"It prints the job's id; for an array, the ids of its jobs one per line in index\n"
"order, the first (index 0's) being the array's id.\n";

static const struct option submit_options[] = {
	{"queue", required_argument, NULL, 'q'}, {"share", required_argument, NULL, 's'},
	{"unit", required_argument, NULL, 'u'}, {"instances", required_argument, NULL, 'n'},
	{"instances-per-host", required_argument, NULL, OPT_OWN + F_PER_HOST},
	{"same-label", required_argument, NULL, OPT_OWN + F_SAME_LABEL},
	{"priority", required_argument, NULL, 'p'}, {"timeout", required_argument, NULL, 't'},
	{"attempts", required_argument, NULL, OPT_OWN + F_ATTEMPTS},
	{"array", required_argument, NULL, 'a'}, {"depends-on", required_argument, NULL, 'd'},
	{"name", required_argument, NULL, 'J'}, {"token", required_argument, NULL, OPT_OWN + F_TOKEN},
	{"tags", required_argument, NULL, OPT_OWN + F_TAGS},
	COMMON_OPTIONS
};

/* field_of: the column a flag's code sets, or -1 */
static int
field_of(int c)
{
	switch (c)
	{
		case 'q': return F_QUEUE;
		case 's': return F_SHARE;
		case 'u': return F_UNIT;
		case 'n': return F_INSTANCES;
		case 'p': return F_PRIORITY;
		case 't': return F_TIMEOUT;
		case 'a': return F_ARRAY;
		case 'd': return F_DEPENDS;
		case 'J': return F_NAME;
		default:
			return (c >= OPT_OWN && c < OPT_OWN + F_COUNT) ? c - OPT_OWN : -1;
	}
}

/*
 * parse_flags reads argv's flags into f (a later flag wins over an
 * earlier); *rest: the index of the first argument that is no flag.
 * header: the words of #QS lines, which take the job's flags only.
 */
static int
parse_flags(CliContext *ctx, int argc, char **argv, SubmitFlags *f, int *rest, bool header)
{
	int			c;

	optind = 0;
	while ((c = getopt_long(argc, argv, "+q:s:u:n:p:t:a:d:J:h", submit_options, NULL)) != -1)
	{
		int			field = field_of(c);

		if (field >= 0)
			f->value[field] = optarg;
		else if (c == 'h' && !header)
		{
			fputs(submit_help, stdout);
			exit(EXIT_OK);
		}
		else if (!header && cli_common_option(ctx, c, optarg))
			continue;
		else if (header)
			return cli_usage_error("submit", "the #QS lines take the job's flags only, not \"%s\"",
								   argv[optind - 1]);
		else
			return cli_usage_error("submit", NULL);
	}
	*rest = optind;
	return EXIT_OK;
}

/*
 * read_script reads a script file (at most QS_SCRIPT_MAX_BYTES, checked
 * by script_problem) into *text; a usage error says why not
 */
static int
read_script(const char *path, char **text)
{
	FILE	   *fp = strcmp(path, "-") == 0 ? stdin : fopen(path, "rb");
	size_t		len;
	const char *problem;

	if (fp == NULL)
		return cli_usage_error("submit", "could not open script \"%s\": %s", path, strerror(errno));
	*text = malloc(QS_SCRIPT_MAX_BYTES + 2);
	if (*text == NULL)
		return EXIT_DB;
	len = fread(*text, 1, QS_SCRIPT_MAX_BYTES + 1, fp);
	if (ferror(fp))
		problem = strerror(errno);
	else
		problem = script_problem(*text, len);
	if (fp != stdin)
		fclose(fp);
	(*text)[len] = '\0';
	if (problem)
		return cli_usage_error("submit", "script \"%s\": %s", path, problem);
	return EXIT_OK;
}

/* base_name: the last part of a path, for a job's default name */
static const char *
base_name(const char *path)
{
	const char *slash = strrchr(path, '/');

	return (slash && slash[1]) ? slash + 1 : path;
}

/*
 * from_script: the script's #QS lines (flags not given on the command
 * line) and its payload
 */
static int
from_script(CliContext *ctx, const char *path, int nargs, char **args, SubmitFlags *f)
{
	char	   *text = NULL,
				err[256];
	char	  **words;
	int			status = read_script(path, &text),
				n,
				rest;
	SubmitFlags header;

	memset(&header, 0, sizeof header);
	if (status != EXIT_OK)
		return status;
	if ((n = script_header_words(text, &words, err, sizeof err)) < 0)
		return cli_usage_error("submit", "script \"%s\", %s", path, err);
	memmove(words + 1, words, n * sizeof(char *));
	words[0] = "#QS";
	if ((status = parse_flags(ctx, n + 1, words, &header, &rest, true)) != EXIT_OK)
		return status;
	if (rest < n + 1)
		return cli_usage_error("submit", "script \"%s\": a #QS line has \"%s\", which is no flag",
							   path, words[rest]);
	for (int i = 0; i < F_COUNT; i++)
		if (f->value[i] == NULL)
			f->value[i] = header.value[i];
	if (f->value[F_NAME] == NULL)
		f->value[F_NAME] = strcmp(path, "-") == 0 ? "stdin" : base_name(path);
	f->value[F_PAYLOAD] = f->owned[F_PAYLOAD] =
		script_payload(text, f->value[F_NAME], (const char *const *) args, nargs);
	return EXIT_OK;
}

/* depends_literal: "1,2, 3" as the bigint[] literal "{1,2, 3}" (the server checks the ids) */
static void
depends_literal(SubmitFlags *f)
{
	const char *v = f->value[F_DEPENDS];
	size_t		cap,
				len = 0;

	if (v == NULL || v[0] == '{')
		return;
	cap = strlen(v) + 3;
	f->owned[F_DEPENDS] = malloc(cap);
	if (f->owned[F_DEPENDS] == NULL)
		return;
	f->owned[F_DEPENDS][0] = '\0';
	append(f->owned[F_DEPENDS], cap, &len, "{%s}", v);
	f->value[F_DEPENDS] = f->owned[F_DEPENDS];
}

/*
 * insert_sql: the INSERT of the columns given ($1... their values, params
 * filled), RETURNING id (ON CONFLICT DO NOTHING with a token)
 */
static char *
insert_sql(const SubmitFlags *f, const char **params, int *nparams)
{
	size_t		cap = 2048,
				len = 0,
				vlen = 0;
	char	   *sql = malloc(cap),
				values[1024];

	if (sql == NULL)
		return NULL;
	sql[0] = values[0] = '\0';
	*nparams = 0;
	append(sql, cap, &len, "INSERT INTO quota_sched.job (");
	for (int i = 0; i < F_COUNT; i++)
	{
		if (f->value[i] == NULL)
			continue;
		params[*nparams] = f->value[i];
		(*nparams)++;
		append(sql, cap, &len, "%s%s", *nparams > 1 ? ", " : "", columns[i].column);
		append(values, sizeof values, &vlen, "%s$%d::%s", *nparams > 1 ? ", " : "", *nparams,
			   columns[i].cast);
	}
	append(sql, cap, &len, ") VALUES (%s)%s RETURNING id", values,
		   f->value[F_TOKEN] ? " ON CONFLICT (client_token) DO NOTHING" : "");
	return sql;
}

/* print_ids prints the job's id, or its array's ids, as a table or JSON */
static int
print_ids(CliContext *ctx, const char *id, bool submitted)
{
	const char *params[1] = {id};
	int			status;
	PGresult   *res = cli_query(ctx,
								"SELECT id, array_id FROM quota_sched.job WHERE id = $1::bigint "
								"UNION ALL SELECT id, array_id FROM quota_sched.job "
								"WHERE array_id = $1::bigint AND id <> $1::bigint ORDER BY 1",
								1, params, &status);

	if (res == NULL)
		return status;
	if (ctx->json)
	{
		printf("{\"id\": %s, \"array_id\": %s, \"submitted\": %s, \"ids\": [", id,
			   PQgetisnull(res, 0, 1) ? "null" : PQgetvalue(res, 0, 1), submitted ? "true" : "false");
		for (int i = 0; i < PQntuples(res); i++)
			printf("%s%s", i ? ", " : "", PQgetvalue(res, i, 0));
		printf("]}\n");
	}
	else
		for (int i = 0; i < PQntuples(res); i++)
			printf("%s\n", PQgetvalue(res, i, 0));
	PQclear(res);
	return EXIT_OK;
}

/*
 * submit_job runs the INSERT; with a token and no row (the job was
 * submitted before), looks it up by the token
 */
static int
submit_job(CliContext *ctx, const SubmitFlags *f)
{
	const char *params[F_COUNT];
	int			nparams,
				status;
	char	   *sql = insert_sql(f, params, &nparams);
	PGresult   *res;
	bool		submitted;

	if (sql == NULL || (status = cli_connect(ctx)) != EXIT_OK)
		return sql ? status : EXIT_DB;
	res = cli_query(ctx, sql, nparams, params, &status);
	free(sql);
	if (res == NULL)
		return status;
	submitted = PQntuples(res) > 0;
	if (!submitted)
	{
		PQclear(res);
		res = cli_query(ctx, "SELECT id FROM quota_sched.job WHERE client_token = $1", 1,
						&f->value[F_TOKEN], &status);
		if (res == NULL)
			return status;
		if (PQntuples(res) == 0)
		{
			fprintf(stderr, "quota-sched submit: the token \"%s\" is another's job, which you may not see: "
					"nothing was submitted\n", f->value[F_TOKEN]);
			PQclear(res);
			return EXIT_DB;
		}
	}
	status = print_ids(ctx, PQgetvalue(res, 0, 0), submitted);
	PQclear(res);
	return status;
}

/* required: a usage error naming the first required flag not given */
static int
required(const SubmitFlags *f)
{
	static const struct
	{
		int			field;
		const char *flag;
	}			req[] = {{F_QUEUE, "-q/--queue"}, {F_SHARE, "-s/--share"}, {F_UNIT, "-u/--unit"}};

	for (int i = 0; i < 3; i++)
		if (f->value[req[i].field] == NULL)
			return cli_usage_error("submit", "%s is required (on the command line or in a #QS line)",
								   req[i].flag);
	return EXIT_OK;
}

int
cmd_submit(CliContext *ctx, int argc, char **argv)
{
	SubmitFlags f;
	int			rest,
				status;
	bool		dashdash;

	memset(&f, 0, sizeof f);
	if ((status = parse_flags(ctx, argc, argv, &f, &rest, false)) != EXIT_OK)
		return status;
	dashdash = rest > 1 && strcmp(argv[rest - 1], "--") == 0;
	if (rest >= argc)
		return cli_usage_error("submit", "give a SCRIPT, or \"--\" and a COMMAND");
	if (dashdash)
	{
		if (argc - rest > QS_COMMAND_MAX_ARGS)
			return cli_usage_error("submit", "a command of more than %d arguments", QS_COMMAND_MAX_ARGS);
		if (f.value[F_NAME] == NULL)
			f.value[F_NAME] = base_name(argv[rest]);
		f.value[F_PAYLOAD] = f.owned[F_PAYLOAD] =
			command_payload((const char *const *) argv + rest, argc - rest);
	}
	else if ((status = from_script(ctx, argv[rest], argc - rest - 1, argv + rest + 1, &f)) != EXIT_OK)
		return status;
	if (f.value[F_INSTANCES] == NULL)
		f.value[F_INSTANCES] = "1";
	if ((status = required(&f)) != EXIT_OK)
		return status;
	depends_literal(&f);
	status = submit_job(ctx, &f);
	for (int i = 0; i < F_COUNT; i++)
		free(f.owned[i]);
	return status;
}
