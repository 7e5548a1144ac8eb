/*
 * bench/e2e/hosts.c: the idle hosts of the fleet benchmark (bench/e2e/run,
 * BENCH_FLEET), on libpq.
 *
 * It opens -n connections as an agent login.  On each it registers an agent
 * of one instance of unit -u in queue -q (agent_ready, named PREFIX-00000 and
 * on), and, with -m listen, LISTENs on the channels an agent listens on.  It
 * prints
 * "registered N" and then claims, on each connection, the job the pass
 * places on that host (start => true, lease 1 hour), again every 50 ms until
 * every host holds one: the caller submits the N jobs meanwhile.  So each
 * host is live and full, as a busy host whose agent waits.  It prints
 * "holding N".  Then, until SIGTERM or SIGINT, each host waits as the
 * agent does (-m): with -m listen it reads the notifications that come;
 * with -m wait (the default) it keeps a CALL of agent_wait running (60 s
 * at most), and calls again when one returns.  Then it prints
 * "notifications K" (all hosts together: the notifications read, or the
 * waits that returned something) and exits 0.  Errors go to stderr,
 * exit 1.
 *
 * Usage: hosts -d CONNINFO -n N -q QUEUE -u UNIT [-p PREFIX] [-W TIMEOUT_S]
 *              [-m wait|listen]
 */
#include <errno.h>
#include <stdbool.h>
#include <getopt.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include <libpq-fe.h>

static volatile sig_atomic_t stopping = 0;

static void
on_signal(int sig)
{
	(void) sig;
	stopping = 1;
}

static void
die(PGconn *conn, const char *what)
{
	fprintf(stderr, "hosts: %s: %s", what, conn ? PQerrorMessage(conn) : "\n");
	exit(1);
}

/* run runs SQL with params on conn; the number of rows it returned */
static int
run(PGconn *conn, const char *sql, int nparams, const char *const *params)
{
	PGresult   *res = PQexecParams(conn, sql, nparams, NULL, params, NULL, NULL, 0);
	int			rows;

	if (PQresultStatus(res) != PGRES_TUPLES_OK && PQresultStatus(res) != PGRES_COMMAND_OK)
	{
		fprintf(stderr, "hosts: %s: %s", sql, PQresultErrorMessage(res));
		exit(1);
	}
	rows = PQntuples(res);
	PQclear(res);
	return rows;
}

/* open_files: as many descriptors as the hard limit allows */
static void
open_files(int n)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max)
	{
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < (rlim_t) n + 16)
	{
		fprintf(stderr, "hosts: %d connections need more open files than the limit (%lu)\n",
				n, (unsigned long) rl.rlim_cur);
		exit(1);
	}
}

/* hold claims, every 50 ms, until each host holds its job; false on timeout */
static int
hold(PGconn **conns, char **names, int n, const char *queue, const char *unit, int timeout_s)
{
	char	   *holding = calloc(n, 1);
	int			held = 0;
	time_t		deadline = time(NULL) + timeout_s;
	struct timespec pause = {0, 50 * 1000 * 1000};

	while (held < n && time(NULL) < deadline && !stopping)
	{
		for (int i = 0; i < n; i++)
		{
			const char *params[3] = {names[i], queue, unit};

			if (holding[i])
				continue;
			if (run(conns[i], "SELECT 1 FROM quota_sched.claim($1, $2, $3, max_jobs => 1,"
					" lease => '1 hour', start => true)", 3, params) > 0)
			{
				holding[i] = 1;
				held++;
			}
		}
		if (held < n)
			nanosleep(&pause, NULL);
	}
	free(holding);
	return held == n;
}

static const char wait_sql[] = "CALL quota_sched.agent_wait($1, $2, 60000)";

/* send_wait sends host i's CALL of agent_wait, not waiting for it */
static void
send_wait(PGconn *conn, const char *name, const char *queue)
{
	const char *params[2] = {name, queue};

	if (!PQsendQueryParams(conn, wait_sql, 2, NULL, params, NULL, NULL, 0))
		die(conn, "sending agent_wait failed");
}

/* wait_ended: 1 if host i's wait returned something, 0 if nothing, -1 if it runs */
static int
wait_ended(PGconn *conn)
{
	PGresult   *res;
	int			woke = 0;

	if (PQisBusy(conn))
		return -1;
	while ((res = PQgetResult(conn)) != NULL)
	{
		if (PQresultStatus(res) != PGRES_TUPLES_OK)
			die(conn, "agent_wait failed");
		woke = strcmp(PQgetvalue(res, 0, 0), "{}") != 0;
		PQclear(res);
	}
	return woke;
}

/*
 * drain reads what comes on every connection until a signal: notifications
 * (listen), or the ends of the waits, each followed by another (wait); the
 * count of notifications, or of waits that returned something
 */
static long
drain(PGconn **conns, char **names, int n, const char *queue, bool wait)
{
	struct pollfd *fds = calloc(n, sizeof(struct pollfd));
	long		count = 0;

	for (int i = 0; i < n; i++)
	{
		fds[i].fd = PQsocket(conns[i]);
		fds[i].events = POLLIN;
	}
	while (!stopping)
	{
		int			ready = poll(fds, n, 1000);

		if (ready < 0 && errno != EINTR)
			die(NULL, "poll failed");
		for (int i = 0; i < n && ready > 0; i++)
		{
			PGnotify   *note;

			if (!(fds[i].revents & POLLIN))
				continue;
			if (!PQconsumeInput(conns[i]))
				die(conns[i], "a connection was lost");
			if (wait)
			{
				int			ended = wait_ended(conns[i]);

				if (ended >= 0)
				{
					count += ended;
					send_wait(conns[i], names[i], queue);
				}
				continue;
			}
			while ((note = PQnotifies(conns[i])) != NULL)
			{
				count++;
				PQfreemem(note);
			}
		}
	}
	free(fds);
	return count;
}

int
main(int argc, char **argv)
{
	const char *conninfo = NULL, *queue = NULL, *unit = NULL, *prefix = "idle";
	int			n = 0, timeout_s = 120, c;
	bool		wait = true;
	PGconn	  **conns;
	char	  **names;
	long		notes;

	while ((c = getopt(argc, argv, "d:n:q:u:p:W:m:")) != -1)
	{
		switch (c)
		{
			case 'd': conninfo = optarg; break;
			case 'n': n = atoi(optarg); break;
			case 'q': queue = optarg; break;
			case 'u': unit = optarg; break;
			case 'p': prefix = optarg; break;
			case 'W': timeout_s = atoi(optarg); break;
			case 'm': wait = strcmp(optarg, "listen") != 0; break;
			default: die(NULL, "usage: hosts -d CONNINFO -n N -q QUEUE -u UNIT [-p PREFIX] [-W TIMEOUT_S] [-m wait|listen]");
		}
	}
	if (conninfo == NULL || queue == NULL || unit == NULL || n < 1 || timeout_s < 1)
		die(NULL, "usage: hosts -d CONNINFO -n N -q QUEUE -u UNIT [-p PREFIX] [-W TIMEOUT_S] [-m wait|listen]");
	signal(SIGTERM, on_signal);
	signal(SIGINT, on_signal);
	open_files(n);
	conns = calloc(n, sizeof(PGconn *));
	names = calloc(n, sizeof(char *));
	for (int i = 0; i < n; i++)
	{
		const char *params[3];

		conns[i] = PQconnectdb(conninfo);
		if (PQstatus(conns[i]) != CONNECTION_OK)
			die(conns[i], "connecting failed");
		names[i] = malloc(strlen(prefix) + 16);
		sprintf(names[i], "%s-%05d", prefix, i);
		params[0] = names[i];
		params[1] = queue;
		params[2] = unit;
		run(conns[i], "SELECT 1 FROM quota_sched.agent_ready($1, $2, $3, 1)", 3, params);
		if (!wait)
		{
			run(conns[i], "LISTEN quota_sched_dispatch", 0, NULL);
			run(conns[i], "LISTEN quota_sched_stop", 0, NULL);
			run(conns[i], "LISTEN quota_sched_peers", 0, NULL);
		}
	}
	printf("registered %d\n", n);
	fflush(stdout);
	if (!hold(conns, names, n, queue, unit, timeout_s))
		die(NULL, stopping ? "stopped before every host held a job" :
			"not every host was given a job in time");
	for (int i = 0; i < n; i++)	/* what came while the hosts claimed is not counted */
	{
		PGnotify   *note;

		PQconsumeInput(conns[i]);
		while ((note = PQnotifies(conns[i])) != NULL)
			PQfreemem(note);
	}
	for (int i = 0; i < n && wait; i++)	/* the first wait takes what came before */
	{
		const char *params[2] = {names[i], queue};

		run(conns[i], "CALL quota_sched.agent_wait($1, $2, 0)", 2, params);
		send_wait(conns[i], names[i], queue);
	}
	printf("holding %d\n", n);
	fflush(stdout);
	notes = drain(conns, names, n, queue, wait);
	printf("notifications %ld\n", notes);
	for (int i = 0; i < n; i++)
		PQfinish(conns[i]);
	return 0;
}
