/*-------------------------------------------------------------------------
 *
 * main.c
 *		quota-sched-agent, the launcher agent of quota_sched (issue 12), on
 *		libpq: its signals and its loop.
 *
 * It runs the agent loop of doc/agents.md ("The agent protocol") for one job
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
 * retried with exponential backoff (1 s doubling to 5 s) while the jobs go
 * on running; what could not be told to the database meanwhile (a job's end)
 * is told after the reconnection, and the first heartbeat reconciles.  A job
 * whose lease ran out while the database could not be reached is killed
 * (another agent may run it by now).  SIGTERM or SIGINT: stop the children
 * (SIGTERM, grace, SIGKILL), release their jobs (no attempt is counted) and
 * exit 0; a second one kills the children at once.  With --drain, the first
 * only drains: nothing more is claimed, the jobs run to their end and are
 * reported, then the agent exits 0; the second stops and releases, the
 * third kills.  After every connection it tells the database what it can
 * run (agent_ready: queue, unit, --instances; no bound with --start-cmd).
 *
 * External launchers (--start-cmd, --status-cmd, --stop-cmd, remote.c):
 * instead of a local child (local.c), a job runs on another system (a cloud
 * training service, a batch system), started, watched and stopped there by
 * the launcher's commands, which are children of the agent too.
 *
 * The parts: options.c (the command line), log.c, db.c (the connection and
 * the statements), protocol.c (claim, heartbeat, reports), jobs.c (the job
 * table), local.c and remote.c (the two ways to run a job), util.c (pure
 * helpers).  See --help for the options, and doc/agents.md ("The launcher
 * agent").
 *
 *-------------------------------------------------------------------------
 */
#include "db.h"
#include "wake.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#ifdef __linux__
#include <sys/prctl.h>
#endif

pid_t		agent_pid;			/* this process: its children check they outlive it */
bool		shutting_down = false;	/* SIGTERM or SIGINT came: stop, release, exit */
bool		draining = false;	/* --drain and SIGTERM: no claim, exit when idle */
bool		want_claim = false;
bool		want_ready = false;
bool		want_heartbeat = false;

static int	self_pipe[2] = {-1, -1};
static volatile sig_atomic_t got_child = 0;
static volatile sig_atomic_t got_keep = 0;	/* SIGUSR2: exit keeping the jobs */
volatile sig_atomic_t got_term = 0;

/* wake_self, in a signal handler: a byte to the self-pipe wakes the loop's poll() */
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

/* on_sigchld: a child ended: the loop reaps it */
static void
on_sigchld(int sig)
{
	(void) sig;
	got_child = 1;
	wake_self();
}

/* on_sigterm: SIGTERM or SIGINT: the loop shuts down (a second: kill at once) */
static void
on_sigterm(int sig)
{
	(void) sig;
	got_term++;
	wake_self();
}

/* on_sigusr2: SIGUSR2: the agent exits leaving its jobs running (a restart) */
static void
on_sigusr2(int sig)
{
	(void) sig;
	got_keep = 1;
	wake_self();
}

/*
 * setup_signals: the handlers only set a flag and write to the self-pipe
 * (non-blocking, close-on-exec); SIGPIPE and SIGHUP are ignored.
 */
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
	sa.sa_handler = on_sigusr2;
	sigaction(SIGUSR2, &sa, NULL);
	sa.sa_handler = SIG_IGN;
	sigaction(SIGPIPE, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
}

/* drain_self_pipe empties the self-pipe before the loop looks at the flags */
static void
drain_self_pipe(void)
{
	char		buf[64];

	while (read(self_pipe[0], buf, sizeof(buf)) > 0)
		;
}

/* reap_children: each child that ended, to its job (a job's command, or a launcher's) */
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
			if (jobs[i]->ops->reaped(jobs[i], pid, status))
				break;
		/* a process adopted as a subreaper ended: what it started is the agent's now */
		if (i == njobs && launcher == &local_launch_ops)
			sweep_strays();
	}
}

/* begin_shutdown: SIGTERM or SIGINT: stop every job, to release it */
static void
begin_shutdown(void)
{
	int			i;

	shutting_down = true;
	db_stop_taking();
	log_event("info", "agent_stopping", NULL,
			  "stopping %d job(s) and releasing them", alive_children());
	for (i = 0; i < njobs; i++)
		begin_stop(jobs[i], STOP_SHUTDOWN, "the agent shuts down");
}

/*
 * exit_keeping_jobs: SIGUSR2, or SIGTERM with --keep-jobs (local launcher):
 * the agent exits for a restart or an upgrade and leaves its parts running
 * under their shims, which outlive it (keep_parts) and fence their leases
 * on their own; what it has to tell is told first.  An agent started again
 * with the same --agent and --state-dir adopts them (adopt_parts).
 */
static void
exit_keeping_jobs(void)
{
	int			n;

	if (conn)
		flush_actions();
	n = keep_parts();
	log_event("info", "agent_exit", NULL,
			  "exiting, keeping %d part(s) running under their shims (state in %s): an agent started again as %s adopts them within their leases",
			  n, opts.state_dir, opts.agent);
	PQfinish(conn);
	exit(0);
}

/*
 * begin_drain: SIGTERM or SIGINT with --drain: claim nothing more; the
 * jobs run to their end and are reported, then the agent exits.
 */
static void
begin_drain(void)
{
	draining = true;
	db_stop_taking();
	log_event("info", "agent_draining", NULL,
			  "draining: claiming nothing more, %d job(s) run to their end", njobs);
}

/*
 * kill_at_once tells whether the signals received ask for the children to
 * be killed without their grace period: the second SIGTERM or SIGINT (the
 * third with --drain, whose first only drains).
 */
bool
kill_at_once(void)
{
	return got_term > (opts.drain ? 2 : 1);
}

/*
 * next_wake: when the loop must wake at the latest: the next heartbeat (or
 * reconnection), the end of a job's grace period or lease, a launcher's
 * next command, a report to try again.
 */
static double
next_wake(void)
{
	double		wake = conn ? next_heartbeat : reconnect_at;
	int			i;

	for (i = 0; i < njobs; i++)
	{
		Job		   *job = jobs[i];
		double		launcher_wake = job->ops->wake(job);

		if (launcher_wake < wake)
			wake = launcher_wake;
		if (rendezvous_wake(job) < wake)
			wake = rendezvous_wake(job);
		if (job->alive && job->stop != STOP_LOST && job->lease_deadline < wake)
			wake = job->lease_deadline;
		if (job->action != ACT_NONE && job->retry_at > 0 && job->retry_at < wake)
			wake = job->retry_at;
	}
	return wake;
}

/*
 * wait_for_events sleeps until a notification or the end of agent_wait, a
 * signal, what a launcher's command writes, or the next deadline
 * (next_wake); then takes what the connection and the commands sent.
 */
static void
wait_for_events(void)
{
	double		now = now_mono();
	double		wake = next_wake();
	struct pollfd *fds;
	int			nfds;
	int			timeout_ms;
	int			i;

	/* at most a minute (a lease of months must not overflow the int) */
	timeout_ms = wake <= now ? 0 : wake - now >= 60 ? 60000 : (int) ((wake - now) * 1000) + 1;
	/* where the server has agent_wait, a call runs while the loop sleeps (wake.c) */
	if (conn && !wake_start(conn, timeout_ms, statement_timeout_ms))
		lose_connection(PQerrorMessage(conn));
	fds = calloc(2 + LAUNCH_MAX_FDS * njobs, sizeof(struct pollfd));
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
		fds[1].fd = -1;			/* poll() skips it */
	nfds = 2;
	/* what the launcher's commands write is read as it comes */
	for (i = 0; i < njobs; i++)
		nfds += jobs[i]->ops->poll_fds(jobs[i], fds + nfds);
	if (poll(fds, nfds, timeout_ms) < 0 && errno != EINTR)
		fatal("poll: %s", strerror(errno));
	if (conn && (fds[1].revents & (POLLIN | POLLERR | POLLHUP)))
	{
		if (!PQconsumeInput(conn))
			lose_connection(PQerrorMessage(conn));
		else if (!wake_input(conn) && PQstatus(conn) == CONNECTION_OK)
			listen_setup();
		else
			collect_notifies();
	}
	if (nfds > 2)
		for (i = 0; i < njobs; i++)
			jobs[i]->ops->input(jobs[i]);
	free(fds);
}

/*
 * loop_step: one turn of the loop: reap children, connect if need be, tell
 * the database what ended, heartbeat and claim when due, enforce the
 * deadlines; then sleep, unless a notification that came with a result
 * asks to act at once.  False when the agent is to exit: it shuts down and
 * holds no job, or its --exit-after jobs are done, or it shuts down and
 * the database cannot be reached to release what it holds.
 */
static bool
loop_step(void)
{
	double		now;

	drain_self_pipe();
	if (got_child)
		reap_children();
	if ((got_keep || (got_term && opts.keep_jobs)) && launcher == &local_launch_ops)
		exit_keeping_jobs();
	if (got_term > (opts.drain ? 1 : 0) && !shutting_down)
		begin_shutdown();
	else if (got_term && opts.drain && !draining)
		begin_drain();
	now = now_mono();
	if (conn == NULL && shutting_down && alive_children() == 0 && njobs > 0)
	{
		/* its children are gone: one last try to tell the database */
		try_connect();
		if (conn == NULL)
			return false;
	}
	else if (conn == NULL && now >= reconnect_at)
		try_connect();
	/* a report the claim below takes with it (do_claim) waits for it */
	if (conn)
		flush_or_claim();
	if (conn && want_ready)
		do_ready();
	/*
	 * A heartbeat ends the wait first, and claims what it was given
	 * (wake.c): the heartbeat would return such a job, not yet known here,
	 * and the agent would release it.
	 */
	if (conn && (want_heartbeat || now_mono() >= next_heartbeat))
	{
		db_end_wait();
		if (conn && want_claim && wake_waits())
			do_claim();
		if (conn)
			do_heartbeat();
	}
	if (conn && want_claim)
		do_claim();
	do_rendezvous();
	enforce_deadlines(now_mono());
	if (conn)
		flush_actions();

	if (njobs == 0 && (shutting_down || draining ||
					   (opts.exit_after > 0 && jobs_done >= opts.exit_after)))
		return false;
	/* a notification that came with a result: act on it now */
	if (!(conn && (want_claim || want_heartbeat)))
		wait_for_events();
	return true;
}

/*
 * guard_secrets keeps the agent's secrets from its jobs, which may run as
 * its own OS user: on Linux the agent is made not dumpable (no ptrace, no
 * /proc/PID/environ or /proc/PID/mem for a process of the same user; the
 * shims it forks inherit it), and PGPASSWORD leaves its environment for a
 * private copy (hide_password).  A job's own exec makes the job dumpable
 * again, and gives it none of the agent's memory.
 */
static void
guard_secrets(void)
{
#ifdef __linux__
	if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) != 0)
		fatal("prctl(PR_SET_DUMPABLE): %s", strerror(errno));
#endif
	hide_password();
}

/* log_limits: the devices and the parts' limits, if any */
static void
log_limits(void)
{
	char		names[4096];

	if (opts.devices.n == 0 && !opts.cgroup)
		return;
	device_names(&opts.devices, ~(uint64_t) 0, ",", names, sizeof(names));
	log_event("info", "agent_limits", NULL,
			  "devices %s, a cgroup per part %s, memory per instance %lld bytes, cpus per instance %g",
			  names[0] ? names : "(none)", opts.cgroup ? "yes" : "no", opts.memory_per_instance,
			  opts.cpus_per_instance);
}

/*
 * main: the options, the signals, the loop.  Exits 0 when done (no job
 * held), 1 when it had to leave jobs unreleased (their leases run out) or
 * on a fatal error, 2 on a bad command line.
 */
int
main(int argc, char **argv)
{
	agent_pid = getpid();
	srand48((long) agent_pid ^ (long) now_mono());	/* the reconnection's jitter */
	guard_secrets();
	parse_options(argc, argv);
	launcher = opts.start_cmd ? &remote_launch_ops : &local_launch_ops;
	if (launcher == &local_launch_ops)
		become_subreaper();
	setup_signals();
	log_event("info", "agent_started", NULL,
			  "queue %s, unit %s, %ld instance(s), lease %g s, heartbeat %g s, grace %g s, "
			  "checkpoints in %s%s%s%s%s",
			  opts.queue, opts.unit ? opts.unit : "(any)", opts.instances, opts.lease,
			  opts.heartbeat, opts.grace, opts.checkpoint_root, opts.noop ? ", noop" : "",
			  opts.start_cmd ? ", jobs run by the external launcher (--start-cmd)" : "",
			  opts.run_as ? ", jobs run as " :
			  opts.same_user ? ", jobs run as the agent's own user (--same-user)" : "",
			  opts.run_as ? opts.run_as : "");
	log_limits();
	if (launcher == &local_launch_ops)
		adopt_parts();		/* before the sweep: an adopted part's cgroup stays */
	cgroup_sweep();

	while (loop_step())
		;
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
