/*-------------------------------------------------------------------------
 *
 * shim.c
 *		The per-job shim of local jobs: a child of quota-sched-agent that
 *		runs one job's command and makes sure that every process the job
 *		started, in whatever session or process group, ends with it.
 *
 * The agent forks the shim (run_shim), which is the child subreaper of the
 * job (Linux's PR_SET_CHILD_SUBREAPER: what the job's processes leave
 * behind as orphans become the shim's children, not init's), forks the
 * command in a process group of its own and waits.  When the command's
 * first process has ended, or the agent asks for a stop (SIGTERM to the
 * shim), the shim sends SIGTERM to every process that descends from it
 * (found in /proc), SIGKILL after --grace (at once on SIGUSR1, which the
 * agent sends after its own grace, and which the shim gets too if the agent
 * dies: PR_SET_PDEATHSIG), reaps them until none is left, and exits as the
 * command did (its exit code, or the same signal), so that the agent
 * reports what the command did.
 *
 * The shim reads the job's output from a pipe and writes it to the
 * attempt's file and tail (output.c, on its own copy of the job), and keeps
 * the part's lease: the agent writes each renewal to the state directory
 * (state.c), and when the lease's end comes within the lead (--grace, at
 * most half of what a heartbeat leaves) without one, the shim kills the
 * job on its own, SIGKILL by the lease's end, even while the agent is
 * stopped or hung (issue 40).  SIGUSR2 tells it to outlive the agent (the
 * agent exits keeping its jobs: no death signal any more); as it exits it
 * writes its end (wait status, a fenced lease, the output's tail) to the
 * state directory, where an agent that did not fork it (one started again,
 * which adopted it) reads it.
 *
 * The shim is a copy of the agent without exec: it inherits the agent's
 * not-dumpable mark (no job of the agent's user can read its memory) and
 * closes every descriptor but its standard ones (the agent's, for its own
 * log lines), the attempt's file and the output's pipe, whose write end
 * becomes the command's stdout and stderr.  With --run-as, the shim
 * stays root and the command alone becomes the user, so the job cannot
 * signal the shim.  The agent itself is a child subreaper too (local
 * launcher only), and kills any process it adopts that is not a shim of
 * its own (kill_strays): what a job leaves if its shim is killed.
 *
 *-------------------------------------------------------------------------
 */
#include "db.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#ifdef __linux__
#include <sys/prctl.h>
#endif

/* after SIGKILL, how long the shim waits for the processes to go, at most */
#define KILL_WAIT_SECONDS 5.0

static bool agent_is_subreaper = false;

/*
 * The host's processes, as (pid, ppid) pairs read from /proc: the job's
 * processes are those that descend from its shim.
 */
typedef struct ProcTable
{
	long	   *pids;
	long	   *ppids;
	int			n;
} ProcTable;

/* read_ppid: the parent of the process /proc/NAME, or -1 */
static long
read_ppid(const char *name)
{
	char		path[64];
	char		text[1024];
	long		ppid = -1;
	ssize_t		n;
	int			fd;

	snprintf(path, sizeof(path), "/proc/%s/stat", name);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	n = read(fd, text, sizeof(text) - 1);
	close(fd);
	if (n <= 0)
		return -1;
	text[n] = '\0';
	if (!parse_proc_stat(text, &ppid))
		return -1;
	return ppid;
}

/* free_proc_table frees what read_proc_table filled */
static void
free_proc_table(ProcTable *t)
{
	free(t->pids);
	free(t->ppids);
	t->pids = t->ppids = NULL;
}

/*
 * read_proc_table fills t with the host's processes; false (nothing to
 * free) if it could not
 */
static bool
read_proc_table(ProcTable *t)
{
	DIR		   *dir = opendir("/proc");
	struct dirent *de;
	int			cap = 1024;

	t->n = 0;
	t->pids = malloc(cap * sizeof(long));
	t->ppids = malloc(cap * sizeof(long));
	if (dir == NULL || t->pids == NULL || t->ppids == NULL)
	{
		if (dir)
			closedir(dir);
		free_proc_table(t);
		return false;
	}
	while ((de = readdir(dir)) != NULL)
	{
		long		ppid;

		if (de->d_name[0] < '0' || de->d_name[0] > '9' || (ppid = read_ppid(de->d_name)) < 0)
			continue;
		if (t->n == cap)
		{
			long	   *p1 = realloc(t->pids, 2 * cap * sizeof(long));
			long	   *p2 = p1 ? realloc(t->ppids, 2 * cap * sizeof(long)) : NULL;

			if (p1)
				t->pids = p1;
			if (p2 == NULL)
				break;
			t->ppids = p2;
			cap *= 2;
		}
		t->pids[t->n] = atol(de->d_name);
		t->ppids[t->n++] = ppid;
	}
	closedir(dir);
	return true;
}

/*
 * signal_tree sends sig to every process that descends from root (SIGCONT
 * after a SIGTERM, for one that was stopped); how many there were.
 * *denied counts those that could not be signalled (another user's).
 */
static int
signal_tree(pid_t root, int sig, int *denied)
{
	ProcTable	t;
	long	   *tree;
	int			n = 0,
				i;

	if (!read_proc_table(&t))
		return 0;
	tree = malloc((t.n + 1) * sizeof(long));
	if (tree)
		n = descendants_of(root, t.pids, t.ppids, t.n, tree);
	for (i = 0; i < n; i++)
	{
		if (kill((pid_t) tree[i], sig) != 0 && errno == EPERM && denied)
			(*denied)++;
		if (sig == SIGTERM)
			kill((pid_t) tree[i], SIGCONT);
	}
	free(tree);
	free_proc_table(&t);
	return n;
}

/* What the shim knows of its job. */
typedef struct Shim
{
	Job		   *job;			/* its copy of the agent's */
	pid_t		cmd;			/* the command's first process */
	bool		cmd_done;		/* it has ended (cmd_status) */
	int			cmd_status;
	double		term_at;		/* SIGTERM sent to the job's processes; 0: not yet */
	double		kill_due;		/* when SIGKILL is to follow */
	double		kill_at;		/* SIGKILL sent; 0: not yet */
	int			outfd;			/* the read end of the output's pipe; -1: closed */
	int			sigfd;			/* signalfd of SIGCHLD, SIGTERM, SIGUSR1, SIGUSR2 */
	double		deadline;		/* the part's lease, as the agent last wrote it */
	double		lead;			/* the kill begins this long before it */
	bool		fenced;			/* killed for a lease that was not renewed */
} Shim;

/*
 * shim_term: SIGTERM to the job's processes: its process group (all there
 * is to find where /proc is not Linux's), and all that descend from the
 * shim; SIGKILL is due after the grace
 */
static void
shim_term(Shim *sh, const char *why)
{
	int			n;

	if (sh->term_at > 0)
		return;
	sh->term_at = now_mono();
	sh->kill_due = sh->term_at + opts.grace;
	kill(-sh->cmd, SIGTERM);
	n = signal_tree(getpid(), SIGTERM, NULL);
	if (sh->cmd_done && n > 0)
		log_event("info", "job_leftovers", sh->job,
				  "%s: SIGTERM to the %d process(es) the job left, SIGKILL in %g s", why, n, opts.grace);
}

/*
 * shim_kill: SIGKILL to the job's processes, again at each call (those
 * forked meanwhile); how many there were, and (denied) how many of them
 * could not be signalled.
 */
static int
shim_kill(Shim *sh, int *denied)
{
	if (sh->kill_at == 0)
		sh->kill_at = now_mono();
	kill(-sh->cmd, SIGKILL);
	return signal_tree(getpid(), SIGKILL, denied);
}

/* shim_reap reaps what ended; false when the shim has no child left */
static bool
shim_reap(Shim *sh)
{
	int			status;
	pid_t		pid;

	while ((pid = waitpid(-1, &status, WNOHANG)) > 0)
		if (pid == sh->cmd)
		{
			sh->cmd_done = true;
			sh->cmd_status = status;
		}
	return !(pid < 0 && errno == ECHILD);
}

/*
 * shim_output reads what the job wrote to its pipe, as much as there is
 * now, into the attempt's file and tail (output.c, on the shim's copy of
 * the job); at the pipe's end, or at the shim's (last: 8 MiB at most, a
 * process left behind may write on), it is closed.
 */
static void
shim_output(Shim *sh, bool last)
{
	char		chunk[8192];
	ssize_t		n;
	int			reads = 0;

	while (sh->outfd >= 0)
	{
		n = read(sh->outfd, chunk, sizeof(chunk));
		if (n < 0 && errno == EINTR)
			continue;
		if (n > 0 && !(last && ++reads > 1024))
		{
			attempt_output(sh->job, chunk, (size_t) n);
			continue;
		}
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) && !last)
			return;
		close(sh->outfd);
		sh->outfd = -1;
	}
}

/*
 * shim_check_lease: once the part's lease is within its lead of its end,
 * the deadline the agent last wrote (state.c) is read again; if it was not
 * renewed, the shim kills the job on its own (the agent is stopped, hung,
 * cut off or gone): SIGTERM now, SIGKILL by the lease's end, so that the
 * job is gone before the pass may run it elsewhere (fence_grace).
 */
static void
shim_check_lease(Shim *sh, double now)
{
	double		renewed;

	if (sh->fenced || sh->deadline <= 0 || now < sh->deadline - sh->lead)
		return;
	renewed = state_read_lease(getpid());
	if (renewed > sh->deadline)
	{
		sh->deadline = renewed;
		if (now < sh->deadline - sh->lead)
			return;
	}
	sh->fenced = true;
	state_mark(getpid(), "fenced");
	log_event("warning", "lease_fenced", sh->job,
			  "the part's lease ends in %.1f s and was not renewed: SIGTERM to its processes, SIGKILL by the lease's end",
			  sh->deadline - now);
	shim_term(sh, "its lease ran out");
	if (sh->kill_due > sh->deadline)
		sh->kill_due = sh->deadline;
}

/*
 * shim_kill_due: SIGKILL once it is due, again every turn after; true when
 * the shim gives up, KILL_WAIT_SECONDS after it (what is left is logged).
 */
static bool
shim_kill_due(Shim *sh, double now)
{
	int			denied = 0;
	int			left;

	if (sh->term_at == 0 || (sh->kill_at == 0 && now < sh->kill_due))
		return false;
	if (sh->kill_at > 0 && now >= sh->kill_at + KILL_WAIT_SECONDS)
	{
		left = shim_kill(sh, &denied);
		log_event("warning", "job_leftovers", sh->job,
				  "%d process(es) of the job still there %g s after SIGKILL (%d of another user): left behind",
				  left, KILL_WAIT_SECONDS, denied);
		return true;
	}
	shim_kill(sh, &denied);
	return false;
}

/*
 * shim_signal: what a signal asks: SIGTERM a stop, SIGUSR1 a kill (the
 * agent's after its grace, or its death), SIGUSR2 to outlive the agent
 * (it exits keeping its jobs: no death signal any more, and PID.kept tells
 * it the shim heard); SIGCHLD only wakes.
 */
static void
shim_signal(Shim *sh, int sig)
{
	if (sig == SIGTERM)
		shim_term(sh, "stop");
	else if (sig == SIGUSR1)
	{
		shim_term(sh, "killed");
		shim_kill(sh, NULL);
	}
#ifdef __linux__
	else if (sig == SIGUSR2)
	{
		prctl(PR_SET_PDEATHSIG, 0);
		state_mark(getpid(), "kept");
		log_event("info", "job_kept", sh->job, "the shim outlives its agent");
	}
#endif
}

/* shim_next: how long the shim may sleep, in ms */
static int
shim_next(const Shim *sh, double now)
{
	double		wake = 60;

	if (sh->kill_at > 0)
		wake = 0.05;
	else if (sh->term_at > 0 && sh->kill_due - now < wake)
		wake = sh->kill_due - now;
	if (!sh->fenced && sh->deadline > 0 && sh->deadline - sh->lead - now < wake)
		wake = sh->deadline - sh->lead - now;
	return wake < 0.001 ? 1 : (int) (wake * 1000) + 1;
}

/*
 * shim_wait waits for the command, then for every process the job left
 * (SIGTERM, SIGKILL after the grace), taking the job's output, the
 * agent's signals and the part's lease meanwhile.  It returns once none
 * is left, or KILL_WAIT_SECONDS after SIGKILL.
 */
static void
shim_wait(Shim *sh)
{
	for (;;)
	{
		struct pollfd fds[2] = {{.fd = sh->sigfd, .events = POLLIN},
		{.fd = sh->outfd, .events = POLLIN}};
		double		now;

		if (!shim_reap(sh))
			return;
		now = now_mono();
		if (sh->cmd_done && sh->term_at == 0)
			shim_term(sh, "the job's first process ended");
		shim_check_lease(sh, now);
		if (shim_kill_due(sh, now))
			return;
		if (poll(fds, 2, shim_next(sh, now)) < 0 && errno != EINTR)
			return;
		if (fds[1].revents)
			shim_output(sh, false);
		if (fds[0].revents & POLLIN)
		{
			struct signalfd_siginfo si;

			while (read(sh->sigfd, &si, sizeof(si)) == sizeof(si))
				shim_signal(sh, (int) si.ssi_signo);
		}
	}
}

/*
 * exit_as ends the shim as the command ended: its exit code, or the
 * signal that killed it (raised on the shim, with no core dump).
 */
static void
exit_as(int status)
{
	struct rlimit no_core = {0, 0};
	sigset_t	one;
	int			sig;

	if (WIFEXITED(status))
		_exit(WEXITSTATUS(status));
	sig = WIFSIGNALED(status) ? WTERMSIG(status) : SIGKILL;
	setrlimit(RLIMIT_CORE, &no_core);
	signal(sig, SIG_DFL);
	sigemptyset(&one);
	sigaddset(&one, sig);
	sigprocmask(SIG_UNBLOCK, &one, NULL);
	kill(getpid(), sig);
	_exit(128 + sig);
}

/*
 * tell_failure, in the shim or its command's child: why the command could
 * not be run, to the agent through the pipe (agent_side: the agent's fault,
 * not the job's: the job is to be released).
 */
static void
tell_failure(int errfd, bool agent_side, const char *what)
{
	ShimFailure f;

	memset(&f, 0, sizeof(f));
	f.agent_side = agent_side;
	f.err = errno;
	snprintf(f.what, sizeof(f.what), "%s", what);
	if (write(errfd, &f, sizeof(f)) < 0)
		_exit(127);
}

/*
 * close_other_fds closes every descriptor of the shim but stdin, stdout,
 * stderr and the nkeep of keep: the agent's connection, its pipes and
 * files are none of the job's business (most are close-on-exec already;
 * the shim execs nothing).
 */
static void
close_other_fds(const int *keep, int nkeep)
{
	int			fds[1024];
	int			n = 0,
				i,
				k;
	DIR		   *dir = opendir("/proc/self/fd");
	struct dirent *de;

	if (dir != NULL)
	{
		while ((de = readdir(dir)) != NULL && n < 1024)
			if (de->d_name[0] >= '0' && de->d_name[0] <= '9' && atoi(de->d_name) != dirfd(dir))
				fds[n++] = atoi(de->d_name);
		closedir(dir);
	}
	else
		for (i = 3; i < 1024; i++)
			fds[n++] = i;
	for (i = 0; i < n; i++)
	{
		for (k = 0; k < nkeep && keep[k] != fds[i]; k++)
			;
		if (fds[i] > 2 && k == nkeep)
			close(fds[i]);
	}
}

/*
 * drop_privileges, in the command's child with --run-as: the run-as
 * user's groups and ids (the shim stays root).  False if one of them could
 * not be had (errno, what).
 */
static bool
drop_privileges(const char **what)
{
	if (!opts.run_as)
		return true;
	*what = "initgroups";
	if (initgroups(opts.run_as, opts.run_as_gid) != 0)
		return false;
	*what = "setgid";
	if (setgid(opts.run_as_gid) != 0)
		return false;
	*what = "setuid";
	if (setuid(opts.run_as_uid) != 0)
		return false;
	*what = "setuid (the user could become root again)";
	if (setuid(0) == 0)
	{
		errno = EPERM;
		return false;
	}
	setenv("HOME", opts.run_as_home, 1);
	setenv("USER", opts.run_as, 1);
	setenv("LOGNAME", opts.run_as, 1);
	return true;
}

/*
 * exec_job_command, in the command's child: a process group of its own,
 * stdout and stderr to outfd (the pipe of the job's output), the run-as
 * user (if any), dying with the shim, default signals, the job's
 * environment without the agent's credentials, then the command.  What
 * fails goes to errfd (tell_failure).
 */
static void
exec_job_command(const Job *job, char **argv, int errfd, int outfd, pid_t shim)
{
	const char *what = "";

	setpgid(0, 0);
	if (outfd >= 0)
	{
		dup2(outfd, STDOUT_FILENO);
		dup2(outfd, STDERR_FILENO);
		if (outfd > STDERR_FILENO)
			close(outfd);
	}
	if (!cgroup_enter(job, shim, &what) || !drop_privileges(&what))
	{
		tell_failure(errfd, true, what);
		_exit(127);
	}
#ifdef __linux__
	/* after setuid, which clears it */
	prctl(PR_SET_PDEATHSIG, SIGKILL);
#endif
	if (getppid() != shim)
		_exit(127);
	reset_child(job);
	devices_setenv(job);
	/* a user's job gets none of the agent's own database credentials */
	unsetenv("PGPASSWORD");
	unsetenv("PGPASSFILE");
	unsetenv("PGSERVICE");
	unsetenv("PGSERVICEFILE");
	unsetenv("PGSSLKEY");
	execvp(argv[0], argv);
	tell_failure(errfd, false, "exec");
	_exit(127);
}

/*
 * start_command, in the shim: forks the job's command (its output to the
 * pipe's write end, which the shim then closes); false if it could not
 * (told through errfd).
 */
static bool
start_command(Shim *sh, char **argv, int errfd, const int outpipe[2])
{
	sh->cmd = fork();
	if (sh->cmd < 0)
	{
		tell_failure(errfd, true, "fork");
		return false;
	}
	if (sh->cmd == 0)
		exec_job_command(sh->job, argv, errfd, outpipe[1], getppid());
	setpgid(sh->cmd, sh->cmd);	/* both sides, whichever runs first */
	close(errfd);
	close(outpipe[1]);
	return true;
}

/*
 * run_shim, in the child the agent forked for a job: the job's subreaper,
 * dying (SIGUSR1, which kills the job) with the agent unless told to
 * outlive it (SIGUSR2), its signals taken through a signalfd; forks the
 * command, writes its output (outpipe: the shim reads [0], the command
 * writes [1]) to the attempt's file, kills it on its own if the part's
 * lease is not renewed (the agent writes each renewal to the state
 * directory), waits for it and for all it started, writes its end to the
 * state directory, and exits as the command did.  Never returns.
 */
void
run_shim(Job *job, char **argv, int errfd, const int outpipe[2])
{
	Shim		sh = {.job = job, .outfd = outpipe[0], .deadline = job->lease_deadline};
	int			keep[4] = {errfd, outpipe[0], outpipe[1], job->log.fd};
	sigset_t	set;
	const char *what = "";

	setpgid(0, 0);
	sigemptyset(&set);
	sigaddset(&set, SIGCHLD);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGUSR1);
	sigaddset(&set, SIGUSR2);
	sigprocmask(SIG_BLOCK, &set, NULL);
#ifdef __linux__
	prctl(PR_SET_CHILD_SUBREAPER, 1);
	prctl(PR_SET_PDEATHSIG, SIGUSR1);
#endif
	if (getppid() != agent_pid)
		_exit(127);
	forget_password();
	close_other_fds(keep, 4);
	if (!cgroup_create(job, getpid(), &what))
	{
		tell_failure(errfd, true, what);
		_exit(127);
	}
	/* the kill's lead: --grace, but at most half the time a renewal leaves */
	sh.lead = (opts.lease - opts.heartbeat) / 2;
	if (opts.grace < sh.lead)
		sh.lead = opts.grace;
	if (!start_command(&sh, argv, errfd, outpipe))
		_exit(127);
	sh.sigfd = signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC);
	fcntl(sh.outfd, F_SETFL, fcntl(sh.outfd, F_GETFL) | O_NONBLOCK);
	shim_wait(&sh);
	shim_output(&sh, true);
	close_attempt_log(job);
	state_write_end(job, getpid(), sh.cmd_status, sh.fenced);
	exit_as(sh.cmd_status);
}

/*
 * become_subreaper makes the agent the child subreaper of what it starts
 * (local launcher, Linux): a process a job leaves when its shim is gone
 * (killed by the job, which runs as the agent's user) becomes the agent's,
 * to be killed by kill_strays.
 */
void
become_subreaper(void)
{
#ifdef __linux__
	agent_is_subreaper = prctl(PR_SET_CHILD_SUBREAPER, 1) == 0;
#endif
}

/*
 * kill_strays kills (SIGKILL, with all they started) the agent's children
 * that are not the shims of its jobs (keep, n of them): processes adopted
 * as a subreaper.  Called when a child that was no job's, or a shim, ended:
 * that is when the agent adopts.
 */
void
kill_strays(const pid_t *keep, int n)
{
	ProcTable	t;
	int			i,
				k;

	if (!agent_is_subreaper || !read_proc_table(&t))
		return;
	for (i = 0; i < t.n; i++)
	{
		pid_t		pid = (pid_t) t.pids[i];

		if (t.ppids[i] != agent_pid)
			continue;
		for (k = 0; k < n && keep[k] != pid; k++)
			;
		if (k < n)
			continue;
		kill(pid, SIGSTOP);		/* it forks no more while its tree is killed */
		signal_tree(pid, SIGKILL, NULL);
		kill(pid, SIGKILL);
		log_event("warning", "stray_killed", NULL,
				  "killed process %d and what it started: left by a job whose shim is gone", (int) pid);
	}
	free_proc_table(&t);
}
