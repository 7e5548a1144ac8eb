/*-------------------------------------------------------------------------
 *
 * cli.h
 *		quota-sched, the command line for people: what its files share.
 *
 * Every subcommand is a few statements of the extension's own functions,
 * tables and views (doc/cli.md): the command adds no rule of its own.
 * db.c runs them and prints their answers, a table for a person or the
 * server's JSON for a script; script.c (pure, no libpq) reads a script's
 * "#QS" header lines.
 *
 *-------------------------------------------------------------------------
 */
#ifndef QS_CLI_H
#define QS_CLI_H

#include "util.h"

#include <libpq-fe.h>

/* the exit codes (doc/cli.md, "Exit codes") */
#define EXIT_OK			0
#define EXIT_NO			1		/* a job FAILED; no such job, or not yours */
#define EXIT_USAGE		2		/* a bad flag or argument: nothing was asked */
#define EXIT_DB			3		/* no connection, or the server refused */
#define EXIT_TIMEOUT	4		/* wait --timeout ran out */

/* the most ids one wait or cancel takes */
#define MAX_IDS			1000

/* what every subcommand is given: the connection's options, --json */
typedef struct CliContext
{
	const char *dbname;			/* -d/--dbname: a connection string; NULL: PG* */
	bool		json;			/* --json */
	PGconn	   *conn;			/* once connected */
} CliContext;

/* a subcommand: its name, its function, a line for the list */
typedef struct CliCommand
{
	const char *name;
	int			(*run) (CliContext *ctx, int argc, char **argv);
	const char *summary;
} CliCommand;

/* db.c */
extern int	cli_connect(CliContext *ctx);
extern PGresult *cli_query(CliContext *ctx, const char *sql, int nparams,
						   const char *const *params, int *status);
extern int	cli_error_status(const PGresult *res);
extern void cli_print_error(const PGresult *res);
extern int	cli_show(CliContext *ctx, const char *sql, int nparams,
					 const char *const *params, bool vertical);
extern int	cli_show_json(CliContext *ctx, const char *sql, int nparams,
						  const char *const *params, bool one);
extern void cli_print_table(const PGresult *res, int first_col);
extern void cli_print_vertical(const PGresult *res);
extern int	cli_print_first(CliContext *ctx, const char *sql, int nparams,
							const char *const *params);
extern int	cli_job_refusal(CliContext *ctx, const char *id);
extern int	cli_job_visible(CliContext *ctx, const char *id);

/* options.c: what the subcommands' parsers share */
extern int	cli_usage_error(const char *cmd, const char *fmt,...) PRINTF_LIKE(2, 3);
extern bool cli_parse_id(const char *s, long *id);
extern bool cli_common_option(CliContext *ctx, int c, const char *arg);
extern int	cli_ids_array(const char *cmd, int argc, char **argv, char *buf, size_t cap);

/* the subcommands */
extern int	cmd_submit(CliContext *ctx, int argc, char **argv);
extern int	cmd_jobs(CliContext *ctx, int argc, char **argv);
extern int	cmd_show(CliContext *ctx, int argc, char **argv);
extern int	cmd_explain(CliContext *ctx, int argc, char **argv);
extern int	cmd_logs(CliContext *ctx, int argc, char **argv);
extern int	cmd_wait(CliContext *ctx, int argc, char **argv);
extern int	cmd_cancel(CliContext *ctx, int argc, char **argv);
extern int	cmd_priority(CliContext *ctx, int argc, char **argv);
extern int	cmd_usage(CliContext *ctx, int argc, char **argv);
extern int	cmd_hosts(CliContext *ctx, int argc, char **argv);
extern int	cmd_drain(CliContext *ctx, int argc, char **argv);

#endif							/* QS_CLI_H */
