/*-------------------------------------------------------------------------
 *
 * options.h
 *		quota-sched: the long options every subcommand takes, for the
 *		subcommands' getopt_long tables.
 *
 *-------------------------------------------------------------------------
 */
#ifndef QS_CLI_OPTIONS_H
#define QS_CLI_OPTIONS_H

#include <getopt.h>

/* codes of the long options without a short form */
enum
{
	OPT_DBNAME = 1000,
	OPT_JSON,
	OPT_OWN					/* a subcommand's own options from here on */
};

/* the options every subcommand takes (the last entries of its table) */
#define COMMON_OPTIONS \
	{"dbname", required_argument, NULL, OPT_DBNAME}, \
	{"json", no_argument, NULL, OPT_JSON}, \
	{"help", no_argument, NULL, 'h'}, \
	{NULL, 0, NULL, 0}

/* the lines of every subcommand's --help about them */
#define COMMON_HELP \
	"  -d, --dbname=CONNSTR   the database, as a libpq connection string (default: the PG* variables)\n" \
	"      --json             print JSON for a script, not a table\n" \
	"  -h, --help             this help\n"

#endif							/* QS_CLI_OPTIONS_H */
