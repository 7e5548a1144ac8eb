/*
 * agent/quota_sched_agent.c: quota-sched-agent, the launcher agent of
 * quota_sched (issue 12), on libpq.
 *
 * It runs the agent loop of the README's "Launcher agents" for one job
 * queue: it LISTENs on quota_sched_dispatch and quota_sched_stop, claims up
 * to its free instances on a notification and at each heartbeat (a
 * notification is a wake-up only: what it does always comes from claim and
 * heartbeat), runs each claimed job's payload->'command' (a JSON array of
 * strings, an argv) as a child process in a process group of its own, and
 * reports how it ended.  A stop (heartbeat's stop_reason) sends SIGTERM to
 * the job's process group, SIGKILL after the grace period, and reports
 * STOPPED.  The heartbeat also reconciles: a job the agent runs that the
 * database no longer gives it is killed, a job the database gives it that
 * it does not run is released.
 *
 * One thread: poll() on the connection's socket and on a self-pipe written
 * by the handlers of SIGCHLD, SIGTERM and SIGINT.  A lost connection is
 * retried with exponential backoff (1 s doubling to 30 s) while the jobs go
 * on running; what could not be told to the database meanwhile (a job's end)
 * is told after the reconnection, and the first heartbeat reconciles.  A job
 * whose lease ran out while the database could not be reached is killed
 * (another agent may run it by now).  SIGTERM or SIGINT: stop the children
 * (SIGTERM, grace, SIGKILL), release their jobs (no attempt is counted) and
 * exit 0; a second one kills the children at once.
 *
 * External launchers (--start-cmd, --status-cmd, --stop-cmd): instead of a
 * local child, a job runs on another system (a cloud training service, a
 * batch system).  The start command (run with /bin/sh -c, the job's facts
 * and payload in its environment, never substituted into the command line)
 * starts it there and prints a handle; the status command, run every
 * --status-interval with that handle, says RUNNING, SUCCEEDED, FAILED or
 * STOPPED; the stop command asks the other system to stop it, after which
 * the status is polled until it has stopped or the grace period has passed.
 * These commands are child processes too, one at a time per job, watched
 * by the same loop and killed after --cmd-timeout: a command that hangs
 * stalls nothing.  The handle lives in the agent's memory only.
 *
 * See --help for the options, and the README's "The launcher agent".
 */
#include "db.h"

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#ifdef __linux__
#include <sys/prctl.h>
#endif

pid_t		agent_pid;		/* this process: its children check they outlive it */

/* ------------------------------------------------------------------------
 * State of the loop
 * ---------------------------------------------------------------------- */
static double next_heartbeat = 0;
bool		want_claim = false;
bool		want_heartbeat = false;
static bool shutting_down = false;

static int	self_pipe[2] = {-1, -1};
static volatile sig_atomic_t got_child = 0;
volatile sig_atomic_t got_term = 0;

/* ------------------------------------------------------------------------
 * Signals: the handlers only set a flag and write to the self-pipe.
 * ---------------------------------------------------------------------- */
static void
wake_self(void)
{
	int			saved = errno;
	char		c = 0;

	if (write(self_pipe[1], &c, 1) < 0)
	{
		/* full: the loop wakes anyway */
	}
	errno = saved;
}

static void
on_sigchld(int sig)
{
	(void) sig;
	got_child = 1;
	wake_self();
}

static void
on_sigterm(int sig)
{
	(void) sig;
	got_term++;
	wake_self();
}

static void
setup_signals(void)
{
	struct sigaction sa;
	int			i;

	if (pipe(self_pipe) != 0)
		fatal("pipe: %s", strerror(errno));
	for (i = 0; i < 2; i++)
	{
		fcntl(self_pipe[i], F_SETFD, FD_CLOEXEC);
		fcntl(self_pipe[i], F_SETFL, fcntl(self_pipe[i], F_GETFL) | O_NONBLOCK);
	}
	memset(&sa, 0, sizeof(sa));
	sigemptyset(&sa.sa_mask);
	sa.sa_flags = SA_RESTART | SA_NOCLDSTOP;
	sa.sa_handler = on_sigchld;
	sigaction(SIGCHLD, &sa, NULL);
	sa.sa_flags = SA_RESTART;
	sa.sa_handler = on_sigterm;
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	sa.sa_handler = SIG_IGN;
	sigaction(SIGPIPE, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
}

static void
drain_self_pipe(void)
{
	char		buf[64];

	while (read(self_pipe[0], buf, sizeof(buf)) > 0)
		;
}

/* ------------------------------------------------------------------------
 * Children
 * ---------------------------------------------------------------------- */
/* stop a child: SIGTERM now, SIGKILL after the grace period */
static void
begin_stop(Job *job, StopKind kind, const char *why)
{
	if (!job->alive)
		return;
	if (job->stop == STOP_NONE || kind == STOP_LOST)
		job->stop = kind;
	if (job->term_at == 0 && job->remote)
	{
		job->term_at = now_mono();
		/* a status command that runs is moot: the stop command goes first */
		if (job->helper == HELPER_STATUS && job->helper_pid > 0)
		{
			job->helper_cancelled = true;
			kill_helper(job);
		}
		log_event("info", "job_stopping", job, "%s: the stop command for %s%s, then up to %g s for it to stop",
				  why, job->started ? job->handle : "the remote job",
				  job->started ? "" : " once the start command has ended", opts.grace);
	}
	else if (job->term_at == 0)
	{
		job->term_at = now_mono();
		signal_group(job, job->pid, SIGTERM);
		log_event("info", "job_stopping", job, "%s: SIGTERM to process group %d, SIGKILL in %g s",
				  why, (int) job->pid, opts.grace);
	}
}

static void
reap_children(void)
{
	int			status;
	pid_t		pid;

	got_child = 0;
	while ((pid = waitpid(-1, &status, WNOHANG)) > 0)
	{
		int			i;

		for (i = 0; i < njobs; i++)
		{
			if (jobs[i]->alive && jobs[i]->pid == pid)
			{
				child_ended(jobs[i], status);
				break;
			}
			if (jobs[i]->helper_pid == pid)
			{
				helper_ended(jobs[i], status);
				break;
			}
		}
	}
}

/* SIGKILL after the grace period; kill jobs whose lease surely ran out */
static void
enforce_deadlines(double now)
{
	int			i;

	for (i = 0; i < njobs; i++)
	{
		Job		   *job = jobs[i];

		if (!job->alive)
			continue;
		if (job->stop != STOP_LOST && now >= job->lease_deadline)
			begin_stop(job, STOP_LOST, "its lease ran out without a heartbeat");
		if (job->remote)
		{
			remote_tick(job, now);
			continue;
		}
		if (job->term_at > 0 && !job->killed && (now >= job->term_at + opts.grace || got_term > 1))
		{
			job->killed = true;
			signal_group(job, job->pid, SIGKILL);
			log_event("info", "job_killed", job, "SIGKILL to process group %d", (int) job->pid);
		}
	}
}

/* ------------------------------------------------------------------------
 * The agent's functions
 * ---------------------------------------------------------------------- */

/*
 * refused tells whether the database's error about a report or release
 * says the job is not this agent's to act on (any more): no such job,
 * another login's, not held by this agent, a bad argument.  Any other
 * error (a row locked by a user's transaction, a deadlock, a cancelled
 * statement, ...) may pass: the agent tries again.
 */
static bool
refused(const char *sqlstate)
{
	return strcmp(sqlstate, "02000") == 0 || strcmp(sqlstate, "42501") == 0 ||
		strcmp(sqlstate, "55000") == 0 || strcmp(sqlstate, "22023") == 0;
}

/* tells the database what became of the jobs whose children ended */
static void
flush_actions(void)
{
	int			i;

	for (i = 0; i < njobs && conn != NULL; i++)
	{
		Job		   *job = jobs[i];
		PGresult   *res = NULL;
		int			rc;
		char		code[16];

		if (job->action == ACT_NONE || job->retry_at > now_mono())
			continue;
		if (job->action == ACT_DROP)
		{
			log_event("info", "job_dropped", job, "no longer held by this agent; nothing reported");
			remove_job(job);
			i--;
			continue;
		}
		make_valid_utf8(job->reason);
		if (job->action == ACT_REPORT)
		{
			const char *params[6] = {job->id_text, opts.agent, job->state,
				job->reason[0] ? job->reason : NULL, job->attempt_text, NULL};

			if (job->has_exit_code)
			{
				snprintf(code, sizeof(code), "%d", job->exit_code);
				params[5] = code;
			}
			rc = db_exec(STMT_REPORT, params, &res, job);
		}
		else
		{
			const char *params[3] = {job->id_text, opts.agent, job->reason};

			rc = db_exec(STMT_RELEASE, params, &res, job);
		}
		if (rc == DB_LOST)
			return;				/* told after the reconnection */
		if (rc == DB_OK)
		{
			const char *state = PQntuples(res) > 0 ? PQgetvalue(res, 0, 0) : "";

			if (job->action == ACT_REPORT)
			{
				/*
				 * Its instances are free: claim now.  A job dispatched while
				 * they were busy had its notification then, and may send none
				 * again.
				 */
				want_claim = true;
				log_event("info", "job_reported", job, "reported %s%s%s; the job is now %s",
						  job->state, job->reason[0] ? ": " : "", job->reason, state);
				jobs_done++;
			}
			else
				log_event("info", "job_released", job, "released (%s); the job is now %s",
						  job->reason, state);
			if (strcmp(state, "SUCCEEDED") == 0 || strcmp(state, "FAILED") == 0)
				remove_checkpoint_dir(job);
			PQclear(res);
		}
		else if (!refused(last_sqlstate))
		{
			/*
			 * Not a refusal: keep the job (the heartbeat then neither
			 * releases it nor lets its lease run out) and try again, after
			 * 1, 2, ... up to 10 s; from the third try without its reason,
			 * in case the reason is what the server will not take.
			 */
			job->tries++;
			if (job->tries >= 3)
				job->reason[0] = '\0';
			job->retry_at = now_mono() + (job->tries < 10 ? job->tries : 10);
			log_event("warning", "job_retry", job, "the %s failed (SQLSTATE %s): trying again in %d s",
					  job->action == ACT_REPORT ? "report" : "release", last_sqlstate,
					  job->tries < 10 ? job->tries : 10);
			continue;
		}
		else
			log_event("warning", "job_forgotten", job,
					  "the database refused the %s: the job is no longer this agent's",
					  job->action == ACT_REPORT ? "report" : "release");
		remove_job(job);
		i--;
	}
}

static void
release_unknown(const char *id_text)
{
	const char *params[3] = {id_text, opts.agent, NULL};
	char		reason[200];
	PGresult   *res;

	snprintf(reason, sizeof(reason), "agent %s does not run it (restarted?)", opts.agent);
	params[2] = reason;
	if (db_exec(STMT_RELEASE, params, &res, NULL) == DB_OK)
	{
		log_event("info", "job_released", NULL,
				  "job %s: held by this agent in the database but not run here: released",
				  id_text);
		PQclear(res);
	}
}

static void
do_heartbeat(void)
{
	char		lease[32];
	const char *params[2] = {opts.agent, lease};
	PGresult   *res;
	double		t0 = now_mono();
	int			i,
				n;
	char	  **unknown;
	int			nunknown = 0;

	want_heartbeat = false;
	snprintf(lease, sizeof(lease), "%.3f seconds", opts.lease);
	if (db_exec(STMT_HEARTBEAT, params, &res, NULL) != DB_OK)
	{
		next_heartbeat = now_mono() + opts.heartbeat;
		return;
	}
	next_heartbeat = t0 + opts.heartbeat;
	for (i = 0; i < njobs; i++)
		jobs[i]->seen = false;
	n = PQntuples(res);
	unknown = calloc(n + 1, sizeof(char *));
	for (i = 0; i < n; i++)
	{
		int64_t		id = strtoll(PQgetvalue(res, i, 0), NULL, 10);
		bool		stop = !PQgetisnull(res, i, 1);
		Job		   *job = find_job(id);

		if (job == NULL)
		{
			/*
			 * Released only once no attempt of it runs here: one being
			 * killed (its lease ran out while the database could not be
			 * reached, and this heartbeat renewed it) must be gone before
			 * the job may run elsewhere.  A later heartbeat releases it.
			 */
			if (unknown && !still_running(id))
				unknown[nunknown++] = strdup(PQgetvalue(res, i, 0));
			continue;
		}
		job->seen = true;
		/*
		 * the lease the job has now, as the server counts it: a job whose
		 * row another transaction held was not renewed
		 */
		job->lease_deadline = PQgetisnull(res, i, 2) ? t0 + opts.lease
			: t0 + strtod(PQgetvalue(res, i, 2), NULL);
		if (stop && job->alive && job->stop == STOP_NONE)
		{
			char		why[300];

			snprintf(why, sizeof(why), "stop requested (%s)", PQgetvalue(res, i, 1));
			begin_stop(job, STOP_REQUESTED, why);
		}
	}
	PQclear(res);
	/* jobs it runs that the database no longer gives it */
	for (i = 0; i < njobs; i++)
		if (jobs[i]->alive && !jobs[i]->seen && jobs[i]->stop != STOP_LOST)
			begin_stop(jobs[i], STOP_LOST, "the database no longer gives this job to the agent");
	/* jobs the database gives it that it does not run */
	for (i = 0; i < nunknown; i++)
	{
		if (unknown[i] && conn)
			release_unknown(unknown[i]);
		free(unknown[i]);
	}
	free(unknown);
	want_claim = true;
}

static void
do_claim(void)
{
	char		lease[32];
	char		free_text[16];

	want_claim = false;
	snprintf(lease, sizeof(lease), "%.3f seconds", opts.lease);
	for (;;)
	{
		const char *params[5] = {opts.agent, opts.queue, opts.unit, free_text, lease};
		int			free_instances = (int) (opts.instances - busy_instances());
		PGresult   *res;
		int			i,
					n;
		double		t0 = now_mono();

		if (free_instances <= 0 || shutting_down ||
			(opts.exit_after > 0 && jobs_done + njobs >= opts.exit_after))
			return;
		snprintf(free_text, sizeof(free_text), "%d", free_instances);
		if (db_exec(STMT_CLAIM, params, &res, NULL) != DB_OK)
			return;
		n = PQntuples(res);
		for (i = 0; i < n; i++)
		{
			Job		   *old = find_job(strtoll(PQgetvalue(res, i, 0), NULL, 10));
			Job		   *job;

			/*
			 * Claimed again while an attempt of it is still here: that one
			 * was taken away (released by an admin, a lease that ran out)
			 * before a heartbeat said so.  It is killed and forgotten.
			 */
			if (old && old->alive)
				begin_stop(old, STOP_LOST, "claimed again: this attempt is no longer the agent's");
			else if (old)
				old->action = ACT_DROP;
			job = add_job(strtoll(PQgetvalue(res, i, 0), NULL, 10),
									  atoi(PQgetvalue(res, i, 2)),
									  atoi(PQgetvalue(res, i, 1)));

			job->lease_deadline = t0 + opts.lease;
			if (opts.pickup_log)
				fprintf(opts.pickup_log, "%" PRId64 " %lld\n", job->id, now_real_us());
			log_event("info", "job_claimed", job, "claimed %d instance(s)", job->instances);
			if (opts.noop)
				set_report(job, "SUCCEEDED", 0, true, NULL);
			else if (opts.start_cmd)
				start_remote(job, PQgetvalue(res, i, 5));
			else if (!PQgetisnull(res, i, 3))
			{
				log_event("info", "job_not_runnable", job, "%s", PQgetvalue(res, i, 3));
				set_report(job, "FAILED", 0, false, "%s", PQgetvalue(res, i, 3));
			}
			else
				start_job(job, PQgetvalue(res, i, 4));
		}
		PQclear(res);
		flush_actions();
		if (n == 0)
			return;
	}
}

static void
begin_shutdown(void)
{
	int			i;

	shutting_down = true;
	log_event("info", "agent_stopping", NULL,
			  "stopping %d job(s) and releasing them", alive_children());
	for (i = 0; i < njobs; i++)
		begin_stop(jobs[i], STOP_SHUTDOWN, "the agent shuts down");
}

/* ------------------------------------------------------------------------
 * The loop
 * ---------------------------------------------------------------------- */
int
main(int argc, char **argv)
{
	agent_pid = getpid();
	parse_options(argc, argv);
	setup_signals();
	log_event("info", "agent_started", NULL,
			  "queue %s, unit %s, %ld instance(s), lease %g s, heartbeat %g s, grace %g s, "
			  "checkpoints in %s%s%s",
			  opts.queue, opts.unit ? opts.unit : "(any)", opts.instances, opts.lease,
			  opts.heartbeat, opts.grace, opts.checkpoint_root, opts.noop ? ", noop" : "",
			  opts.start_cmd ? ", jobs run by the external launcher (--start-cmd)" : "");

	for (;;)
	{
		double		now;
		double		wake;
		struct pollfd *fds;
		int			nfds = 1;
		int			timeout_ms;
		int			i;

		drain_self_pipe();
		if (got_child)
			reap_children();
		if (got_term && !shutting_down)
			begin_shutdown();
		now = now_mono();
		if (conn == NULL && shutting_down && alive_children() == 0 && njobs > 0)
		{
			/* its children are gone: one last try to tell the database */
			try_connect();
			if (conn == NULL)
				break;
		}
		else if (conn == NULL && now >= reconnect_at)
			try_connect();
		if (conn)
			flush_actions();
		if (conn && (want_heartbeat || now_mono() >= next_heartbeat))
			do_heartbeat();
		if (conn && want_claim)
			do_claim();
		enforce_deadlines(now_mono());
		if (conn)
			flush_actions();

		if (njobs == 0 && (shutting_down || (opts.exit_after > 0 && jobs_done >= opts.exit_after)))
			break;
		/* a notification that came with a result: act on it now */
		if (conn && (want_claim || want_heartbeat))
			continue;

		/* sleep until a notification, a signal, or the next deadline */
		now = now_mono();
		wake = conn ? next_heartbeat : reconnect_at;
		for (i = 0; i < njobs; i++)
		{
			if (jobs[i]->alive && !jobs[i]->remote && jobs[i]->term_at > 0 && !jobs[i]->killed &&
				jobs[i]->term_at + opts.grace < wake)
				wake = jobs[i]->term_at + opts.grace;
			if (jobs[i]->alive && jobs[i]->stop != STOP_LOST && jobs[i]->lease_deadline < wake)
				wake = jobs[i]->lease_deadline;
			if (jobs[i]->remote && remote_wake(jobs[i]) < wake)
				wake = remote_wake(jobs[i]);
			if (jobs[i]->action != ACT_NONE && jobs[i]->retry_at > 0 && jobs[i]->retry_at < wake)
				wake = jobs[i]->retry_at;
		}
		/* at most a minute (a lease of months must not overflow the int) */
		timeout_ms = wake <= now ? 0 : wake - now >= 60 ? 60000 : (int) ((wake - now) * 1000) + 1;
		fds = calloc(2 + 2 * njobs, sizeof(struct pollfd));
		if (fds == NULL)
			fatal("out of memory");
		fds[0].fd = self_pipe[0];
		fds[0].events = POLLIN;
		if (conn)
		{
			fds[1].fd = PQsocket(conn);
			fds[1].events = POLLIN;
		}
		else
			fds[1].fd = -1;		/* poll() skips it */
		nfds = 2;
		/* what the launcher's commands write is read as it comes */
		for (i = 0; i < njobs; i++)
		{
			if (jobs[i]->out_fd >= 0)
			{
				fds[nfds].fd = jobs[i]->out_fd;
				fds[nfds++].events = POLLIN;
			}
			if (jobs[i]->err_fd >= 0)
			{
				fds[nfds].fd = jobs[i]->err_fd;
				fds[nfds++].events = POLLIN;
			}
		}
		if (poll(fds, nfds, timeout_ms) < 0 && errno != EINTR)
			fatal("poll: %s", strerror(errno));
		if (conn && (fds[1].revents & (POLLIN | POLLERR | POLLHUP)))
		{
			if (!PQconsumeInput(conn))
				lose_connection(PQerrorMessage(conn));
			else
				collect_notifies();
		}
		if (nfds > 2)
			for (i = 0; i < njobs; i++)
				if (jobs[i]->helper_pid > 0)
					read_helper_output(jobs[i]);
		free(fds);
	}
	if (njobs > 0)
	{
		log_event("warning", "agent_exit", NULL,
				  "the database cannot be reached: %d job(s) not released; their leases will run out",
				  njobs);
		PQfinish(conn);
		return 1;
	}
	if (opts.pickup_log)
		fclose(opts.pickup_log);
	log_event("info", "agent_exit", NULL, "exiting: %ld job(s) reported, cpu_s %.3f", jobs_done,
			  cpu_seconds());
	PQfinish(conn);
	return 0;
}
