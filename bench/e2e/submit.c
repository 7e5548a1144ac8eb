/*
 * bench/e2e/submit.c: the job submitter of the end-to-end benchmark, the same
 * for both systems, on libpq.
 *
 * It prepares one statement (-s), which submits a batch of jobs in one
 * transaction (one job or many, as the SQL says), and runs it -n times in
 * autocommit: as fast as it can, or at -r transactions per second (at fixed
 * intervals from the start; a late transaction is not made up by a burst).
 * Then, with -w, it polls a condition on the same connection every -i ms
 * until it returns true (all jobs done), for at most -W seconds after the
 * last submission; then, with -c, it runs a query that counts the jobs left.
 * It prints
 *
 *   start_us S submitted_us U done_us D txns N rows R timed_out T left L
 *
 * (wall clock, CLOCK_REALTIME, microseconds since the epoch): S just before
 * the first statement is sent, U after the last one returned, D after the
 * poll that saw the condition true, or the last poll when it timed out (U
 * again without -w); T is 1 when it timed out, and L is the count -c gave
 * then (else 0).  With -l it writes
 * "job_id commit_us" for every row the statement returned (its first
 * column), commit_us being the time its transaction's result came back: the
 * client saw the commit.
 *
 * Usage: submit -d CONNINFO -s SQL -n TXNS [-r RATE] [-l COMMIT_LOG]
 *               [-S SETUP_SQL] [-w DONE_SQL] [-i POLL_MS] [-W TIMEOUT_S]
 *               [-c LEFT_SQL]
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <libpq-fe.h>

static int64_t
now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t) ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

static void
sleep_until_us(int64_t t)
{
	struct timespec ts = {.tv_sec = t / 1000000,.tv_nsec = (t % 1000000) * 1000};

	while (clock_nanosleep(CLOCK_REALTIME, TIMER_ABSTIME, &ts, NULL) == EINTR)
		;
}

static void
die(PGconn *conn, const char *what)
{
	fprintf(stderr, "submit: %s: %s", what, conn ? PQerrorMessage(conn) : "\n");
	exit(1);
}

static void
usage(void)
{
	fprintf(stderr,
			"usage: submit -d CONNINFO -s SQL -n TXNS [-r RATE] [-l COMMIT_LOG]\n"
			"              [-S SETUP_SQL] [-w DONE_SQL] [-i POLL_MS] [-W TIMEOUT_S]\n"
			"              [-c LEFT_SQL]\n");
	exit(2);
}

int
main(int argc, char **argv)
{
	const char *conninfo = NULL;
	const char *sql = NULL;
	const char *setup_sql = NULL;
	const char *done_sql = NULL;
	const char *left_sql = NULL;
	const char *commit_log = NULL;
	long		txns = -1;
	double		rate = 0;
	int			poll_ms = 5;
	double		timeout_s = 600;
	int			opt;
	PGconn	   *conn;
	PGresult   *res;
	FILE	   *log = NULL;
	int64_t		start_us,
				submitted_us,
				done_us;
	long		rows = 0;
	int			timed_out = 0;
	long		left = 0;

	while ((opt = getopt(argc, argv, "d:s:n:r:l:S:w:i:W:c:h")) != -1)
	{
		switch (opt)
		{
			case 'd':
				conninfo = optarg;
				break;
			case 's':
				sql = optarg;
				break;
			case 'n':
				txns = atol(optarg);
				break;
			case 'r':
				rate = atof(optarg);
				break;
			case 'l':
				commit_log = optarg;
				break;
			case 'S':
				setup_sql = optarg;
				break;
			case 'w':
				done_sql = optarg;
				break;
			case 'i':
				poll_ms = atoi(optarg);
				break;
			case 'W':
				timeout_s = atof(optarg);
				break;
			case 'c':
				left_sql = optarg;
				break;
			default:
				usage();
		}
	}
	if (conninfo == NULL || sql == NULL || txns < 0 || rate < 0 || poll_ms < 1 ||
		optind != argc)
		usage();

	conn = PQconnectdb(conninfo);
	if (PQstatus(conn) != CONNECTION_OK)
		die(conn, "connection failed");
	if (setup_sql)
	{
		res = PQexec(conn, setup_sql);
		if (PQresultStatus(res) != PGRES_COMMAND_OK && PQresultStatus(res) != PGRES_TUPLES_OK)
			die(conn, "setup");
		PQclear(res);
	}
	res = PQprepare(conn, "submit", sql, 0, NULL);
	if (PQresultStatus(res) != PGRES_COMMAND_OK)
		die(conn, "prepare submit");
	PQclear(res);
	if (done_sql)
	{
		res = PQprepare(conn, "done", done_sql, 0, NULL);
		if (PQresultStatus(res) != PGRES_COMMAND_OK)
			die(conn, "prepare done");
		PQclear(res);
	}
	if (commit_log && (log = fopen(commit_log, "w")) == NULL)
	{
		perror(commit_log);
		exit(1);
	}

	start_us = now_us();
	for (long t = 0; t < txns; t++)
	{
		int64_t		ack_us;

		if (rate > 0)
			sleep_until_us(start_us + (int64_t) (t * 1e6 / rate));
		res = PQexecPrepared(conn, "submit", 0, NULL, NULL, NULL, 0);
		ack_us = now_us();
		if (PQresultStatus(res) != PGRES_TUPLES_OK && PQresultStatus(res) != PGRES_COMMAND_OK)
			die(conn, "submit");
		if (PQresultStatus(res) == PGRES_TUPLES_OK)
		{
			rows += PQntuples(res);
			if (log)
				for (int i = 0; i < PQntuples(res); i++)
					fprintf(log, "%s %" PRId64 "\n", PQgetvalue(res, i, 0), ack_us);
		}
		else
			rows += atol(PQcmdTuples(res));
		PQclear(res);
	}
	submitted_us = now_us();
	done_us = submitted_us;

	if (done_sql)
	{
		int64_t		deadline = submitted_us + (int64_t) (timeout_s * 1e6);

		for (;;)
		{
			int			done;

			res = PQexecPrepared(conn, "done", 0, NULL, NULL, NULL, 0);
			done_us = now_us();
			if (PQresultStatus(res) != PGRES_TUPLES_OK || PQntuples(res) != 1)
				die(conn, "done condition");
			done = strcmp(PQgetvalue(res, 0, 0), "t") == 0;
			PQclear(res);
			if (done)
				break;
			if (done_us > deadline)
			{
				timed_out = 1;
				break;
			}
			sleep_until_us(done_us + poll_ms * 1000);
		}
	}
	if (timed_out && left_sql)
	{
		res = PQexec(conn, left_sql);
		if (PQresultStatus(res) != PGRES_TUPLES_OK || PQntuples(res) != 1)
			die(conn, "count of the jobs left");
		left = atol(PQgetvalue(res, 0, 0));
		PQclear(res);
	}
	if (log && fclose(log) != 0)
	{
		perror(commit_log);
		exit(1);
	}
	PQfinish(conn);
	printf("start_us %" PRId64 " submitted_us %" PRId64 " done_us %" PRId64
		   " txns %ld rows %ld timed_out %d left %ld\n",
		   start_us, submitted_us, done_us, txns, rows, timed_out, left);
	return 0;
}
