/*-------------------------------------------------------------------------
 *
 * db.c
 *		quota-sched: the connection, the statements, and their answers
 *		printed: an aligned table for a person, the server's JSON for a
 *		script.
 *
 * Every statement is one of the extension's functions, tables or views,
 * with its arguments as parameters (text, cast by the statement), so a
 * user with psql sees the same.  An error prints the server's message, its
 * DETAIL and HINT, and its SQLSTATE; cli_error_status maps it to an exit
 * code (doc/cli.md, "Exit codes").
 *
 *-------------------------------------------------------------------------
 */
#include "cli.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* the type oids the table shortens (pg_type.dat) */
#define TIMESTAMPTZOID 1184

/*
 * cli_connect connects as libpq does: the connection string of
 * -d/--dbname, else the PG* variables and the service file; an error
 * says why (EXIT_DB)
 */
int
cli_connect(CliContext *ctx)
{
	const char *keys[] = {"dbname", "fallback_application_name", NULL};
	const char *values[] = {ctx->dbname, "quota-sched", NULL};

	ctx->conn = PQconnectdbParams(keys, values, 1);
	if (ctx->conn == NULL || PQstatus(ctx->conn) != CONNECTION_OK)
	{
		fprintf(stderr, "quota-sched: could not connect: %s",
				ctx->conn ? PQerrorMessage(ctx->conn) : "out of memory\n");
		return EXIT_DB;
	}
	return EXIT_OK;
}

/*
 * cli_error_status: the exit code of a failed statement: EXIT_NO for a job
 * that does not exist or is not the caller's (P0002, 42501), EXIT_DB
 * otherwise
 */
int
cli_error_status(const PGresult *res)
{
	const char *state = res ? PQresultErrorField(res, PG_DIAG_SQLSTATE) : NULL;

	if (state && (strcmp(state, "P0002") == 0 || strcmp(state, "42501") == 0))
		return EXIT_NO;
	return EXIT_DB;
}

/* cli_print_error prints a failed statement's message, detail, hint and SQLSTATE */
void
cli_print_error(const PGresult *res)
{
	const char *msg = PQresultErrorField(res, PG_DIAG_MESSAGE_PRIMARY),
			   *detail = PQresultErrorField(res, PG_DIAG_MESSAGE_DETAIL),
			   *hint = PQresultErrorField(res, PG_DIAG_MESSAGE_HINT),
			   *state = PQresultErrorField(res, PG_DIAG_SQLSTATE);

	if (msg == NULL)
	{
		fprintf(stderr, "quota-sched: %s", PQresultErrorMessage(res));
		return;
	}
	fprintf(stderr, "quota-sched: ERROR: %s (SQLSTATE %s)\n", msg, state ? state : "?");
	if (detail)
		fprintf(stderr, "DETAIL: %s\n", detail);
	if (hint)
		fprintf(stderr, "HINT: %s\n", hint);
}

/*
 * cli_query runs one statement with text parameters; on an error prints
 * it, sets *status and returns NULL; otherwise the result (the caller
 * clears it), *status EXIT_OK
 */
PGresult *
cli_query(CliContext *ctx, const char *sql, int nparams, const char *const *params, int *status)
{
	PGresult   *res = PQexecParams(ctx->conn, sql, nparams, NULL, params, NULL, NULL, 0);
	ExecStatusType st = res ? PQresultStatus(res) : PGRES_FATAL_ERROR;

	if (st == PGRES_TUPLES_OK || st == PGRES_COMMAND_OK)
	{
		*status = EXIT_OK;
		return res;
	}
	if (res == NULL || PQstatus(ctx->conn) != CONNECTION_OK)
	{
		fprintf(stderr, "quota-sched: the connection failed: %s", PQerrorMessage(ctx->conn));
		*status = EXIT_DB;
	}
	else
	{
		cli_print_error(res);
		*status = cli_error_status(res);
	}
	PQclear(res);
	return NULL;
}

/* shown: a value as the table shows it: timestamps to the second, null as "-" */
static const char *
shown(const PGresult *res, int row, int col, char *buf, size_t cap)
{
	const char *v = PQgetvalue(res, row, col);

	if (PQgetisnull(res, row, col))
		return "-";
	if (PQftype(res, col) == TIMESTAMPTZOID && strlen(v) > 19)
	{
		size_t		len = 0;
		const char *zone = v + 19;

		while (*zone == '.' || (*zone >= '0' && *zone <= '9'))
			zone++;
		buf[0] = '\0';
		append(buf, cap, &len, "%.19s%s", v, zone);
		return buf;
	}
	return v;
}

/* utf8_width: the characters of s (its width on a terminal, near enough) */
static int
utf8_width(const char *s)
{
	int			n = 0;

	for (; *s; s++)
		if (((unsigned char) *s & 0xC0) != 0x80)
			n++;
	return n;
}

/*
 * cli_print_table prints a result from its column first_col on as an
 * aligned table, a header of the columns' names in capitals, then a row
 * per row; no rows prints the header alone
 */
void
cli_print_table(const PGresult *res, int first_col)
{
	int			ncols = PQnfields(res),
				nrows = PQntuples(res);
	int		   *width = calloc(ncols + 1, sizeof(int));
	char		buf[128];

	if (width == NULL)
		return;
	for (int c = first_col; c < ncols; c++)
	{
		width[c] = utf8_width(PQfname(res, c));
		for (int r = 0; r < nrows; r++)
		{
			int			w = utf8_width(shown(res, r, c, buf, sizeof buf));

			if (w > width[c])
				width[c] = w;
		}
	}
	for (int r = -1; r < nrows; r++)
	{
		for (int c = first_col; c < ncols; c++)
		{
			const char *v = r < 0 ? PQfname(res, c) : shown(res, r, c, buf, sizeof buf);
			bool		last = c == ncols - 1;

			for (const char *p = v; r < 0 && *p; p++)
				putchar(*p >= 'a' && *p <= 'z' ? *p - 'a' + 'A' : *p);
			if (r >= 0)
				fputs(v, stdout);
			if (!last)
				printf("%*s", width[c] - utf8_width(v) + 2, "");
		}
		putchar('\n');
	}
	free(width);
}

/* cli_print_vertical prints each row as "column: value" lines, a blank line between rows */
void
cli_print_vertical(const PGresult *res)
{
	int			ncols = PQnfields(res),
				w = 0;
	char		buf[128];

	for (int c = 0; c < ncols; c++)
		if ((int) strlen(PQfname(res, c)) > w)
			w = strlen(PQfname(res, c));
	for (int r = 0; r < PQntuples(res); r++)
	{
		if (r > 0)
			putchar('\n');
		for (int c = 0; c < ncols; c++)
			printf("%-*s  %s\n", w + 1, PQfname(res, c), shown(res, r, c, buf, sizeof buf));
	}
}

/* cli_show runs a statement and prints its rows as a table (or vertically) */
int
cli_show(CliContext *ctx, const char *sql, int nparams, const char *const *params, bool vertical)
{
	int			status;
	PGresult   *res = cli_query(ctx, sql, nparams, params, &status);

	if (res == NULL)
		return status;
	if (vertical)
		cli_print_vertical(res);
	else
		cli_print_table(res, 0);
	PQclear(res);
	return EXIT_OK;
}

/*
 * cli_show_json prints a statement's rows as the server makes them JSON:
 * an array of objects, one per row (one: the first row's object alone,
 * null without one); the server writes the JSON, so it is valid whatever
 * the values hold
 */
int
cli_show_json(CliContext *ctx, const char *sql, int nparams, const char *const *params, bool one)
{
	int			status;
	size_t		cap = strlen(sql) + 128,
				len = 0;
	char	   *wrapped = malloc(cap);
	PGresult   *res;

	if (wrapped == NULL)
		return EXIT_DB;
	wrapped[0] = '\0';
	if (one)
		append(wrapped, cap, &len, "SELECT (SELECT to_jsonb(r) FROM (%s) r LIMIT 1)", sql);
	else
		append(wrapped, cap, &len, "SELECT coalesce(jsonb_agg(to_jsonb(r)), '[]') FROM (%s) r", sql);
	res = cli_query(ctx, wrapped, nparams, params, &status);
	free(wrapped);
	if (res == NULL)
		return status;
	printf("%s\n", PQgetisnull(res, 0, 0) ? "null" : PQgetvalue(res, 0, 0));
	PQclear(res);
	return EXIT_OK;
}

/* cli_print_first prints the first value of a statement's first row (a JSON value: "null" for none) */
int
cli_print_first(CliContext *ctx, const char *sql, int nparams, const char *const *params)
{
	int			status;
	PGresult   *res = cli_query(ctx, sql, nparams, params, &status);

	if (res == NULL)
		return status;
	if (PQntuples(res) == 0 || PQgetisnull(res, 0, 0))
		printf("null\n");
	else
		printf("%s\n", PQgetvalue(res, 0, 0));
	PQclear(res);
	return EXIT_OK;
}

/*
 * cli_job_refusal: a job the caller does not see (no row through its
 * row-level security) may not exist, or be another team's: explain() says
 * which (P0002 or 42501), with the server's own words; EXIT_NO
 */
int
cli_job_refusal(CliContext *ctx, const char *id)
{
	const char *params[1] = {id};
	int			status;
	PGresult   *res = cli_query(ctx, "SELECT quota_sched.explain($1::bigint)", 1, params, &status);

	if (res != NULL)
	{
		fprintf(stderr, "quota-sched: job %s not found\n", id);
		PQclear(res);
		return EXIT_NO;
	}
	return status;
}

/*
 * cli_job_visible: EXIT_OK when the caller sees job id through its
 * row-level security; else what cli_job_refusal says of it
 */
int
cli_job_visible(CliContext *ctx, const char *id)
{
	int			status;
	PGresult   *res = cli_query(ctx, "SELECT 1 FROM quota_sched.job WHERE id = $1::bigint", 1,
								&id, &status);

	if (res == NULL)
		return status;
	status = PQntuples(res) == 0 ? cli_job_refusal(ctx, id) : EXIT_OK;
	PQclear(res);
	return status;
}
