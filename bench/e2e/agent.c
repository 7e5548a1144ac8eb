/*
 * bench/e2e/agent.c: a launcher agent for the end-to-end benchmark, on libpq.
 *
 * It runs the agent loop of scheduling.md 5 for trivial jobs: LISTEN
 * quota_sched_dispatch; claim up to K jobs; for each, report RUNNING (unless
 * -R) and then SUCCEEDED at once; when a claim returns nothing, wait on the
 * connection's socket for a notification or a short timeout, then claim
 * again.  Every statement is prepared once and runs in its own transaction
 * (autocommit), as a real agent's would.
 *
 * Usage: agent -d CONNINFO -a AGENT -q QUEUE [-k K] [-R] [-t WAIT_MS]
 *              [-l PICKUP_LOG] [-T SECONDS]
 *
 * It prints "ready" on stdout once it listens, and runs until SIGTERM or
 * SIGINT (or -T seconds), then prints one line of counts and its own CPU
 * time.  With -l it writes "job_id pickup_us" for every job it claimed, where
 * pickup_us is the wall clock (CLOCK_REALTIME, microseconds since the epoch)
 * right after the claim that returned the job.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include <libpq-fe.h>

static volatile sig_atomic_t stop_requested = 0;

static void
on_signal(int sig)
{
	(void) sig;
	stop_requested = 1;
}

static int64_t
now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t) ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

static void
die(PGconn *conn, const char *what)
{
	fprintf(stderr, "agent: %s: %s", what, conn ? PQerrorMessage(conn) : "\n");
	exit(1);
}

static void
usage(void)
{
	fprintf(stderr,
			"usage: agent -d CONNINFO -a AGENT -q QUEUE [-k MAX_JOBS] [-R | -S] [-t WAIT_MS]\n"
			"             [-l PICKUP_LOG] [-T SECONDS]\n"
			"  -k  jobs per claim (max_jobs; default 1)\n"
			"  -R  skip the RUNNING report (STARTING -> SUCCEEDED)\n"
			"  -S  claim with start => true (RUNNING at once) and skip the RUNNING report\n"
			"  -t  longest wait for a notification when a claim found nothing (default 100 ms)\n"
			"  -l  write \"job_id pickup_us\" for every claimed job to this file at exit\n"
			"  -T  stop after this many seconds (default: run until SIGTERM)\n");
	exit(2);
}

static void
prepare(PGconn *conn, const char *name, const char *sql)
{
	PGresult   *res = PQprepare(conn, name, sql, 0, NULL);

	if (PQresultStatus(res) != PGRES_COMMAND_OK)
		die(conn, name);
	PQclear(res);
}

/* Pickup log: (job id, time) pairs kept in memory, written at exit. */
typedef struct Pickup
{
	int64_t		job_id;
	int64_t		at_us;
} Pickup;

static Pickup *pickups = NULL;
static size_t npickups = 0;
static size_t maxpickups = 0;

static void
log_pickup(int64_t job_id, int64_t at_us)
{
	if (npickups == maxpickups)
	{
		maxpickups = maxpickups ? 2 * maxpickups : 4096;
		pickups = realloc(pickups, maxpickups * sizeof(Pickup));
		if (pickups == NULL)
		{
			fprintf(stderr, "agent: out of memory\n");
			exit(1);
		}
	}
	pickups[npickups].job_id = job_id;
	pickups[npickups].at_us = at_us;
	npickups++;
}

/* Drops every notification libpq has received; returns how many. */
static int
drain_notifies(PGconn *conn)
{
	PGnotify   *n;
	int			count = 0;

	while ((n = PQnotifies(conn)) != NULL)
	{
		PQfreemem(n);
		count++;
	}
	return count;
}

int
main(int argc, char **argv)
{
	const char *conninfo = NULL;
	const char *agent = NULL;
	const char *queue = NULL;
	const char *pickup_log = NULL;
	int			max_jobs = 1;
	int			report_running = 1;
	int			claim_start = 0;
	int			wait_ms = 100;
	double		run_seconds = 0;
	char		max_jobs_text[16];
	int			opt;
	PGconn	   *conn;
	PGresult   *res;
	struct sigaction sa;
	int64_t		started_us;
	int64_t		deadline_us = 0;
	uint64_t	claims = 0,
				empty_claims = 0,
				claimed = 0,
				succeeded = 0,
				wakeups = 0,
				timeouts = 0;
	struct rusage ru;

	while ((opt = getopt(argc, argv, "d:a:q:k:RSt:l:T:h")) != -1)
	{
		switch (opt)
		{
			case 'd':
				conninfo = optarg;
				break;
			case 'a':
				agent = optarg;
				break;
			case 'q':
				queue = optarg;
				break;
			case 'k':
				max_jobs = atoi(optarg);
				break;
			case 'S':
				claim_start = 1;
				report_running = 0;
				break;
			case 'R':
				report_running = 0;
				break;
			case 't':
				wait_ms = atoi(optarg);
				break;
			case 'l':
				pickup_log = optarg;
				break;
			case 'T':
				run_seconds = atof(optarg);
				break;
			default:
				usage();
		}
	}
	if (conninfo == NULL || agent == NULL || queue == NULL || max_jobs < 1 || wait_ms < 1 ||
		optind != argc)
		usage();
	snprintf(max_jobs_text, sizeof(max_jobs_text), "%d", max_jobs);

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;	/* no SA_RESTART: poll() returns EINTR */
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);

	conn = PQconnectdb(conninfo);
	if (PQstatus(conn) != CONNECTION_OK)
		die(conn, "connection failed");
	res = PQexec(conn, "LISTEN quota_sched_dispatch");
	if (PQresultStatus(res) != PGRES_COMMAND_OK)
		die(conn, "LISTEN");
	PQclear(res);
	prepare(conn, "claim", claim_start ?
			"SELECT id FROM quota_sched.claim($1::text, $2::text, max_jobs => $3::integer,"
			" start => true)" :
			"SELECT id FROM quota_sched.claim($1::text, $2::text, max_jobs => $3::integer)");
	prepare(conn, "running",
			"SELECT state FROM quota_sched.report($1::bigint, $2::text, 'RUNNING')");
	prepare(conn, "succeeded",
			"SELECT state FROM quota_sched.report($1::bigint, $2::text, 'SUCCEEDED')");

	started_us = now_us();
	if (run_seconds > 0)
		deadline_us = started_us + (int64_t) (run_seconds * 1e6);
	printf("ready\n");
	fflush(stdout);

	while (!stop_requested)
	{
		const char *claim_args[3] = {agent, queue, max_jobs_text};
		int			n;
		int64_t		picked_us;

		if (deadline_us && now_us() >= deadline_us)
			break;
		res = PQexecPrepared(conn, "claim", 3, claim_args, NULL, NULL, 0);
		picked_us = now_us();
		if (PQresultStatus(res) != PGRES_TUPLES_OK)
			die(conn, "claim");
		claims++;
		n = PQntuples(res);
		for (int i = 0; i < n; i++)
		{
			const char *id = PQgetvalue(res, i, 0);
			const char *report_args[2] = {id, agent};
			PGresult   *r;

			claimed++;
			if (pickup_log)
				log_pickup(strtoll(id, NULL, 10), picked_us);
			if (report_running)
			{
				r = PQexecPrepared(conn, "running", 2, report_args, NULL, NULL, 0);
				if (PQresultStatus(r) != PGRES_TUPLES_OK)
					die(conn, "report RUNNING");
				PQclear(r);
			}
			r = PQexecPrepared(conn, "succeeded", 2, report_args, NULL, NULL, 0);
			if (PQresultStatus(r) != PGRES_TUPLES_OK)
				die(conn, "report SUCCEEDED");
			PQclear(r);
			succeeded++;
		}
		PQclear(res);
		if (n > 0)
			continue;			/* there may be more: claim again at once */
		empty_claims++;

		/*
		 * Nothing to claim.  A notification that came in with the claim's
		 * result may be for a job dispatched after the claim's snapshot:
		 * claim again.  Otherwise wait for one, or for the timeout.
		 */
		if (!PQconsumeInput(conn))
			die(conn, "reading from the server");
		if (drain_notifies(conn) > 0)
			continue;
		{
			struct pollfd pfd = {.fd = PQsocket(conn),.events = POLLIN};
			int			rc = poll(&pfd, 1, wait_ms);

			if (rc < 0 && errno != EINTR)
			{
				perror("agent: poll");
				exit(1);
			}
			if (rc == 0)
				timeouts++;
			if (rc > 0)
			{
				if (!PQconsumeInput(conn))
					die(conn, "reading from the server");
				if (drain_notifies(conn) > 0)
					wakeups++;
			}
		}
	}

	if (pickup_log)
	{
		FILE	   *f = fopen(pickup_log, "w");

		if (f == NULL)
		{
			perror(pickup_log);
			exit(1);
		}
		for (size_t i = 0; i < npickups; i++)
			fprintf(f, "%" PRId64 " %" PRId64 "\n", pickups[i].job_id, pickups[i].at_us);
		if (fclose(f) != 0)
		{
			perror(pickup_log);
			exit(1);
		}
	}
	PQfinish(conn);
	getrusage(RUSAGE_SELF, &ru);
	printf("agent %s: claims %" PRIu64 " (empty %" PRIu64 "), claimed %" PRIu64
		   ", succeeded %" PRIu64 ", woken by notification %" PRIu64 ", wait timeouts %" PRIu64
		   ", cpu_s %.3f\n",
		   agent, claims, empty_claims, claimed, succeeded, wakeups, timeouts,
		   ru.ru_utime.tv_sec + ru.ru_stime.tv_sec +
		   (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6);
	return 0;
}
