/*-------------------------------------------------------------------------
 *
 * options.c
 *		quota-sched: what the subcommands' option parsers share: the
 *		options every subcommand takes (--dbname, --json), usage errors
 *		(exit 2) and job ids.
 *
 *-------------------------------------------------------------------------
 */
#include "cli.h"
#include "options.h"

#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/*
 * cli_usage_error prints "quota-sched CMD: MESSAGE" (none with fmt NULL:
 * getopt said it) and where the help is; EXIT_USAGE
 */
int
cli_usage_error(const char *cmd, const char *fmt,...)
{
	if (fmt != NULL)
	{
		va_list		ap;

		fprintf(stderr, "quota-sched %s: ", cmd);
		va_start(ap, fmt);
		vfprintf(stderr, fmt, ap);
		va_end(ap);
		fputc('\n', stderr);
	}
	fprintf(stderr, "Try \"quota-sched %s --help\".\n", cmd);
	return EXIT_USAGE;
}

/* cli_parse_id: a job id, a whole number from 1 up */
bool
cli_parse_id(const char *s, long *id)
{
	return parse_count(s, 1, LONG_MAX, id);
}

/*
 * cli_common_option: -d/--dbname and --json, which every subcommand takes
 * (submit's -d is --depends-on: it reads its own first); false for another
 */
bool
cli_common_option(CliContext *ctx, int c, const char *arg)
{
	if (c == OPT_DBNAME || c == 'd')
		ctx->dbname = arg;
	else if (c == OPT_JSON)
		ctx->json = true;
	else
		return false;
	return true;
}

/*
 * cli_ids_array writes the ids of argv as a bigint[] literal into buf: a
 * usage error for none, more than MAX_IDS, or one that is not an id
 */
int
cli_ids_array(const char *cmd, int argc, char **argv, char *buf, size_t cap)
{
	size_t		len = 0;

	if (argc < 1)
		return cli_usage_error(cmd, "give at least one job id");
	if (argc > MAX_IDS)
		return cli_usage_error(cmd, "%d job ids: at most %d at once", argc, MAX_IDS);
	buf[0] = '\0';
	append(buf, cap, &len, "{");
	for (int i = 0; i < argc; i++)
	{
		long		id;

		if (!cli_parse_id(argv[i], &id))
			return cli_usage_error(cmd, "\"%s\" is not a job id (a whole number from 1)", argv[i]);
		append(buf, cap, &len, "%s%ld", i ? "," : "", id);
	}
	append(buf, cap, &len, "}");
	return EXIT_OK;
}
