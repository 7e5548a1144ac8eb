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
 * The shim is a copy of the agent without exec: it inherits the agent's
 * not-dumpable mark (no job of the agent's user can read its memory) and
 * closes every descriptor but its standard ones (the agent's, for its own
 * log lines) and the pipe of the job's output, which becomes the
 * command's stdout and stderr (the shim keeps no end of it).  With --run-as, the shim
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
#include <sys/resource.h>
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
	const Job  *job;
	pid_t		cmd;			/* the command's first process */
	bool		cmd_done;		/* it has ended (cmd_status) */
	int			cmd_status;
	double		term_at;		/* SIGTERM sent to the job's processes; 0: not yet */
	double		kill_at;		/* SIGKILL sent; 0: not yet */
} Shim;

/*
 * shim_term: SIGTERM to the job's processes: its process group (all there
 * is to find where /proc is not Linux's), and all that descend from the
 * shim
 */
static void
shim_term(Shim *sh, const char *why)
{
	int			n;

	if (sh->term_at > 0)
		return;
	sh->term_at = now_mono();
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
 * shim_wait waits for the command, then for every process the job left
 * (SIGTERM, SIGKILL after the grace), taking the agent's SIGTERM (stop)
 * and SIGUSR1 (kill now; also the agent's death) meanwhile.  It returns
 * once none is left, or KILL_WAIT_SECONDS after SIGKILL.
 */
static void
shim_wait(Shim *sh, const sigset_t *set)
{
	for (;;)
	{
		double		now,
					wake;
		struct timespec ts;
		int			sig;

		if (!shim_reap(sh))
			return;
		now = now_mono();
		if (sh->cmd_done && sh->term_at == 0)
			shim_term(sh, "the job's first process ended");
		if (sh->term_at > 0 && (sh->kill_at > 0 || now >= sh->term_at + opts.grace))
		{
			int			denied = 0;
			int			left;

			if (sh->kill_at > 0 && now >= sh->kill_at + KILL_WAIT_SECONDS)
			{
				left = shim_kill(sh, &denied);
				log_event("warning", "job_leftovers", sh->job,
						  "%d process(es) of the job still there %g s after SIGKILL (%d of another user): left behind",
						  left, KILL_WAIT_SECONDS, denied);
				return;
			}
			shim_kill(sh, &denied);
		}
		wake = sh->kill_at > 0 ? 0.05 : sh->term_at > 0 ? sh->term_at + opts.grace - now : 60;
		if (wake > 60)
			wake = 60;
		if (wake < 0.001)
			wake = 0.001;
		ts.tv_sec = (time_t) wake;
		ts.tv_nsec = (long) ((wake - ts.tv_sec) * 1e9);
		sig = sigtimedwait(set, NULL, &ts);
		if (sig == SIGTERM)
			shim_term(sh, "stop");
		else if (sig == SIGUSR1)
		{
			shim_term(sh, "killed");
			shim_kill(sh, NULL);
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
 * stderr, keep and keep2: the agent's connection, its pipes and files are
 * none of the job's business (most are close-on-exec already; the shim
 * execs nothing).
 */
static void
close_other_fds(int keep, int keep2)
{
	int			fds[1024];
	int			n = 0,
				i;
	DIR		   *dir = opendir("/proc/self/fd");
	struct dirent *de;

	if (dir == NULL)
	{
		for (i = 3; i < 1024; i++)
			if (i != keep && i != keep2)
				close(i);
		return;
	}
	while ((de = readdir(dir)) != NULL && n < 1024)
		if (de->d_name[0] >= '0' && de->d_name[0] <= '9')
			fds[n++] = atoi(de->d_name);
	for (i = 0; i < n; i++)
		if (fds[i] > 2 && fds[i] != keep && fds[i] != keep2 && fds[i] != dirfd(dir))
			close(fds[i]);
	closedir(dir);
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
 * run_shim, in the child the agent forked for a job: the job's subreaper,
 * dying (SIGUSR1, which kills the job) with the agent, its signals taken
 * by sigtimedwait; forks the command (its output to outfd), waits for it
 * and for all it started, and exits as the command did.  Never returns.
 */
void
run_shim(const Job *job, char **argv, int errfd, int outfd)
{
	Shim		sh = {.job = job};
	sigset_t	set;
	const char *what = "";

	setpgid(0, 0);
	sigemptyset(&set);
	sigaddset(&set, SIGCHLD);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGUSR1);
	sigprocmask(SIG_BLOCK, &set, NULL);
#ifdef __linux__
	prctl(PR_SET_CHILD_SUBREAPER, 1);
	prctl(PR_SET_PDEATHSIG, SIGUSR1);
#endif
	if (getppid() != agent_pid)
		_exit(127);
	forget_password();
	close_other_fds(errfd, outfd);
	if (!cgroup_create(job, getpid(), &what))
	{
		tell_failure(errfd, true, what);
		_exit(127);
	}
	sh.cmd = fork();
	if (sh.cmd < 0)
	{
		tell_failure(errfd, true, "fork");
		_exit(127);
	}
	if (sh.cmd == 0)
		exec_job_command(job, argv, errfd, outfd, getppid());
	setpgid(sh.cmd, sh.cmd);	/* both sides, whichever runs first */
	close(errfd);
	if (outfd >= 0)
		close(outfd);
	shim_wait(&sh, &set);
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
