/*-------------------------------------------------------------------------
 *
 * main.c
 *		quota-sched, the command line for the people who submit the work
 *		(doc/cli.md): the options before the subcommand, and the
 *		subcommand's run.
 *
 *-------------------------------------------------------------------------
 */
#include "cli.h"
#include "options.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const CliCommand commands[] = {
	{"submit", cmd_submit, "submit a job, or an array, from flags or a script with #QS lines"},
	{"jobs", cmd_jobs, "list jobs: yours not ended, or your team's, by state, share, queue"},
	{"show", cmd_show, "one job's columns"},
	{"explain", cmd_explain, "why a job waits: the sentence and the figures"},
	{"logs", cmd_logs, "a job's output per attempt and part, and where the full log is"},
	{"wait", cmd_wait, "wait until jobs end: exit 0 if all SUCCEEDED, 1 if any FAILED"},
	{"cancel", cmd_cancel, "terminate jobs (--array: every job of an array)"},
	{"priority", cmd_priority, "change a job's priority"},
	{"usage", cmd_usage, "a share's or team's use, lending, preemptions and budgets over a period"},
	{"hosts", cmd_hosts, "the agents and their hosts (admins)"},
	{"drain", cmd_drain, "take a host out of service, or back (admins)"},
	{NULL, NULL, NULL}
};

static void
help(void)
{
	printf("quota-sched: submit jobs to quota_sched and follow them.\n\n"
		   "Usage: quota-sched [-d CONNSTR] [--json] COMMAND [OPTIONS] [ARGS]\n\n"
		   "Commands:\n");
	for (const CliCommand *c = commands; c->name; c++)
		printf("  %-9s %s\n", c->name, c->summary);
	printf("\nOptions before the command (each command takes them too):\n"
		   COMMON_HELP
		   "  -V, --version          the version\n\n"
		   "It connects as libpq does: the PG* variables (PGHOST, PGDATABASE, PGUSER, PGSERVICE...),\n"
		   "a service file, or a connection string (-d).  \"quota-sched COMMAND --help\" tells more.\n\n"
		   "Exit status: 0 ok; 1 a job FAILED (wait), or no such job, or not yours; 2 a usage\n"
		   "error; 3 no connection, or the server refused (its message and SQLSTATE);\n"
		   "4 wait's --timeout ran out.  doc/cli.md has the rest.\n");
}

/* global_options reads the options before the command; *first: the command's index */
static int
global_options(CliContext *ctx, int argc, char **argv, int *first)
{
	int			i = 1;

	for (; i < argc && argv[i][0] == '-'; i++)
	{
		const char *a = argv[i];

		if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0)
		{
			help();
			exit(EXIT_OK);
		}
		else if (strcmp(a, "-V") == 0 || strcmp(a, "--version") == 0)
		{
			printf("quota-sched %s\n", QS_VERSION_STRING);
			exit(EXIT_OK);
		}
		else if (strcmp(a, "--json") == 0)
			ctx->json = true;
		else if ((strcmp(a, "-d") == 0 || strcmp(a, "--dbname") == 0) && i + 1 < argc)
			ctx->dbname = argv[++i];
		else if (strncmp(a, "--dbname=", 9) == 0)
			ctx->dbname = a + 9;
		else
		{
			fprintf(stderr, "quota-sched: unknown option \"%s\"\nTry \"quota-sched --help\".\n", a);
			return EXIT_USAGE;
		}
	}
	*first = i;
	return EXIT_OK;
}

int
main(int argc, char **argv)
{
	CliContext	ctx = {NULL, false, NULL};
	int			first,
				status;
	char		prog[64];

	if ((status = global_options(&ctx, argc, argv, &first)) != EXIT_OK)
		return status;
	if (first >= argc)
	{
		fprintf(stderr, "quota-sched: no command given\nTry \"quota-sched --help\".\n");
		return EXIT_USAGE;
	}
	if (strcmp(argv[first], "help") == 0)
	{
		help();
		return EXIT_OK;
	}
	for (const CliCommand *c = commands; c->name; c++)
	{
		if (strcmp(c->name, argv[first]) != 0)
			continue;
		snprintf(prog, sizeof prog, "quota-sched %s", c->name);
		argv[first] = prog;		/* what getopt's messages name */
		status = c->run(&ctx, argc - first, argv + first);
		if (ctx.conn)
			PQfinish(ctx.conn);
		fflush(stdout);
		return status;
	}
	fprintf(stderr, "quota-sched: unknown command \"%s\"\nTry \"quota-sched --help\".\n", argv[first]);
	return EXIT_USAGE;
}
