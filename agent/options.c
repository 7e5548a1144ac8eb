/*-------------------------------------------------------------------------
 *
 * options.c
 *		parse_options() and usage(): quota-sched-agent's command line, from
 *		one table of its options (name, argument, handler and target, help),
 *		into opts (agent.h).
 *
 * A bad option is told on stderr, and the agent exits 2 before it does
 * anything else; --help and --version exit 0.
 *
 *-------------------------------------------------------------------------
 */
#include "agent.h"

#include <errno.h>
#include <getopt.h>
#include <grp.h>
#include <pwd.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

AgentOptions opts = {
	.conninfo = "",
	.instances = 0,				/* 0: not given (1, or the number of --devices) */
	.device_node_pattern = "/dev/nvidia%d",
	.labels = "{}",
	.lease = 60,
	.heartbeat = 0,				/* 0: lease / 3 */
	.grace = 30,
	.listen = true,
	.wake_wait = true,
	.status_interval = 0,		/* 0: the heartbeat interval */
	.cmd_timeout = 30,
	.log_max_bytes = 4 * 1024 * 1024,
};

typedef struct OptionDef OptionDef;

/* stores the option's argument (NULL if it has none) */
typedef void (*OptionHandler) (const OptionDef *opt, const char *arg);

/* One option; an entry without a name is a heading of usage(). */
struct OptionDef
{
	const char *name;			/* --NAME */
	char		letter;			/* -L, or 0 */
	const char *arg;			/* the argument's name in usage(); NULL: none */
	OptionHandler handler;
	void	   *target;			/* where the handler stores it */
	long		min;			/* for a count: its range */
	long		max;
	const char *help;			/* its lines in usage() */
};

/* usage() prints an option's help from this column on */
#define HELP_COLUMN 27
/* getopt_long's code of an option without a letter: this + its index */
#define LONG_ONLY 1000

static void usage(FILE *f);

static const char *checkpoint_root_arg = NULL;	/* --checkpoint-root */
static const char *log_dir_arg = NULL;	/* --log-dir */
static const char *state_dir_arg = NULL;	/* --state-dir */

/* bad_usage tells what is wrong with the command line, and exits 2 */
static void bad_usage(const char *fmt,...) PRINTF_LIKE(1, 2);

static void
bad_usage(const char *fmt,...)
{
	va_list		ap;

	fprintf(stderr, "quota-sched-agent: ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\n");
	exit(2);
}

/* opt_string: the argument itself, into a const char * */
static void
opt_string(const OptionDef *opt, const char *arg)
{
	*(const char **) opt->target = arg;
}

/*
 * opt_conninfo: --dbname.  A connection string with a password in it is
 * copied, and its argument overwritten, so that the password is no longer
 * in /proc/PID/cmdline (ps), which any process of the host may read.
 */
static void
opt_conninfo(const OptionDef *opt, const char *arg)
{
	(void) opt;
	opts.conninfo = strdup(arg);
	if (opts.conninfo == NULL)
		bad_usage("out of memory");
	if (conninfo_has_password(arg))
		memset((char *) arg, '*', strlen(arg));
}

/* opt_agent_name: --agent, 1 to 128 bytes (the server's limit, octet_length) */
static void
opt_agent_name(const OptionDef *opt, const char *arg)
{
	(void) opt;
	if (strlen(arg) < 1 || strlen(arg) > 128)
		bad_usage("--agent must have 1 to 128 bytes");
	snprintf(opts.agent, sizeof(opts.agent), "%s", arg);
}

/*
 * opt_labels: --labels KEY=VALUE,..., made the JSON object agent_ready
 * takes, by the rules the database checks (labels_json)
 */
static void
opt_labels(const OptionDef *opt, const char *arg)
{
	size_t		cap = labels_json_size(arg);
	char	   *json = malloc(cap);
	char		err[512];

	(void) opt;
	if (json == NULL)
		bad_usage("out of memory");
	if (!labels_json(arg, json, cap, err, sizeof(err)))
		bad_usage("%s (--labels takes KEY=VALUE,KEY=VALUE; see --help)", err);
	opts.labels = json;
}

/* opt_address: --address, by the rule the database checks (address_problem) */
static void
opt_address(const OptionDef *opt, const char *arg)
{
	const char *problem = address_problem(arg);

	(void) opt;
	if (problem != NULL)
		bad_usage("--address \"%s\": %s (a host name or an IP address that other hosts reach this "
				  "one by)", arg, problem);
	opts.address = arg;
}

/* opt_devices: --devices, the host's devices (part_limits.c's rules) */
static void
opt_devices(const OptionDef *opt, const char *arg)
{
	char		err[256];

	(void) opt;
	if (!parse_device_list(arg, &opts.devices, err, sizeof(err)))
		bad_usage("--devices: %s (it takes indexes such as 0,1,2,3 or UUIDs such as "
				  "GPU-8d3f...,GPU-1c2a... or GPU-8d3f...=0,GPU-1c2a...=1)", err);
}

/* opt_node_pattern: --device-node-pattern, an absolute path with one %d */
static void
opt_node_pattern(const OptionDef *opt, const char *arg)
{
	const char *problem = node_pattern_problem(arg);

	(void) opt;
	if (problem)
		bad_usage("--device-node-pattern \"%s\": %s", arg, problem);
	opts.device_node_pattern = arg;
}

/* opt_bytes: a size (4M, 2G, ...: parse_bytes), at least 4 MiB, into a long long */
static void
opt_bytes(const OptionDef *opt, const char *arg)
{
	if (!parse_bytes(arg, 4 * 1024 * 1024, (long long *) opt->target))
		bad_usage("--%s must be a size of at least 4 MiB such as 512M or 16G (K, M, G, T: KiB ...), "
				  "not \"%s\"", opt->name, arg);
}

/* opt_cpus: a number of CPUs, 0.01 to 4096, into a double */
static void
opt_cpus(const OptionDef *opt, const char *arg)
{
	if (!parse_cpus(arg, (double *) opt->target))
		bad_usage("--%s must be a number of CPUs from 0.01 to 4096, such as 0.5 or 4, not \"%s\"",
				  opt->name, arg);
}

/* opt_count: an integer from opt->min to opt->max, into a long */
static void
opt_count(const OptionDef *opt, const char *arg)
{
	if (!parse_count(arg, opt->min, opt->max, (long *) opt->target))
		bad_usage("--%s must be an integer from %ld to %ld, not \"%s\"",
				  opt->name, opt->min, opt->max, arg);
}

/* opt_seconds: a positive number of seconds, into a double */
static void
opt_seconds(const OptionDef *opt, const char *arg)
{
	if (!parse_seconds(arg, false, (double *) opt->target))
		bad_usage("--%s must be a positive number of seconds, not \"%s\"", opt->name, arg);
}

/* opt_seconds_or_zero: a non-negative number of seconds, into a double */
static void
opt_seconds_or_zero(const OptionDef *opt, const char *arg)
{
	if (!parse_seconds(arg, true, (double *) opt->target))
		bad_usage("--%s must be a non-negative number of seconds, not \"%s\"", opt->name, arg);
}

/* opt_true: a flag that sets its bool */
static void
opt_true(const OptionDef *opt, const char *arg)
{
	(void) arg;
	*(bool *) opt->target = true;
}

/* opt_false: a flag that clears its bool (--no-listen) */
static void
opt_false(const OptionDef *opt, const char *arg)
{
	(void) arg;
	*(bool *) opt->target = false;
}

/* opt_log_format: --log-format=plain or json */
static void
opt_log_format(const OptionDef *opt, const char *arg)
{
	(void) opt;
	if (strcmp(arg, "json") == 0)
		opts.json = true;
	else if (strcmp(arg, "plain") == 0)
		opts.json = false;
	else
		bad_usage("--log-format must be plain or json");
}

/* opt_wake: --wake=wait or listen */
static void
opt_wake(const OptionDef *opt, const char *arg)
{
	(void) opt;
	if (strcmp(arg, "wait") == 0)
		opts.wake_wait = true;
	else if (strcmp(arg, "listen") == 0)
		opts.wake_wait = false;
	else
		bad_usage("--wake must be wait or listen");
}

/* opt_pickup_log: --pickup-log, opened now (close-on-exec: not into the jobs) */
static void
opt_pickup_log(const OptionDef *opt, const char *arg)
{
	(void) opt;
	opts.pickup_log = fopen(arg, "we");
	if (opts.pickup_log == NULL)
		bad_usage("--pickup-log: %s: %s", arg, strerror(errno));
}

/* opt_command: a launcher's command, which must not be blank */
static void
opt_command(const OptionDef *opt, const char *arg)
{
	if (arg[strspn(arg, " \t\n")] == '\0')
		bad_usage("--%s must not be empty", opt->name);
	*(const char **) opt->target = arg;
}

/* opt_run_as: --run-as, a user of the host (its ids and home, taken now) */
static void
opt_run_as(const OptionDef *opt, const char *arg)
{
	struct passwd *pw = getpwnam(arg);

	(void) opt;
	if (pw == NULL)
		bad_usage("--run-as: there is no user \"%s\" on this host", arg);
	if (pw->pw_uid == 0)
		bad_usage("--run-as: \"%s\" is root; name the unprivileged user the jobs are to run as", arg);
	opts.run_as = strdup(pw->pw_name);
	opts.run_as_uid = pw->pw_uid;
	opts.run_as_gid = pw->pw_gid;
	opts.run_as_home = strdup(pw->pw_dir ? pw->pw_dir : "/");
	if (opts.run_as == NULL || opts.run_as_home == NULL)
		bad_usage("out of memory");
}

/* opt_help: --help, on stdout, and exit 0 */
static void
opt_help(const OptionDef *opt, const char *arg)
{
	(void) opt;
	(void) arg;
	usage(stdout);
	exit(0);
}

/* opt_version: --version, and exit 0 */
static void
opt_version(const OptionDef *opt, const char *arg)
{
	(void) opt;
	(void) arg;
	printf("quota-sched-agent %s\n", AGENT_VERSION);
	exit(0);
}

static const OptionDef options[] = {
	{"dbname", 'd', "CONNINFO", opt_conninfo, NULL, 0, 0,
	"libpq connection string or URI (default: libpq's\n"
	"environment, PGHOST etc.).  Several hosts with\n"
	"target_session_attrs=read-write follow a failover.\n"
	"The login must have the role quota_sched_agent.\n"
	"One with a password is hidden from ps once read."},
	{"agent", 'a', "NAME", opt_agent_name, NULL, 0, 0,
	"agent name, 1 to 128 bytes (default: HOST/QUEUE,\n"
	"the host's name and the queue's); unique among\n"
	"running agents"},
	{"queue", 'q', "QUEUE", opt_string, &opts.queue, 0, 0,
	"job queue to claim from (required)"},
	{"capacity-unit", 'u', "UNIT", opt_string, &opts.unit, 0, 0,
	"claim only jobs of this capacity unit (default: any)"},
	{"instances", 'n', "N", opt_count, &opts.instances, 1, 100000,
	"instances this host can run at once (default 1, or\n"
	"the number of --devices): it claims while the jobs it\n"
	"runs hold fewer"},
	{"devices", 0, "LIST", opt_devices, NULL, 0, 0,
	"this host's devices (GPUs) of the unit, by index\n"
	"(0,1,2,3) or UUID (GPU-...; GPU-...=INDEX names its\n"
	"node): a part of k instances gets k that no other\n"
	"part of the agent has, in CUDA_VISIBLE_DEVICES and\n"
	"NVIDIA_VISIBLE_DEVICES"},
	{"device-node-pattern", 0, "PATTERN", opt_node_pattern, NULL, 0, 0,
	"the node of device INDEX, with %d for it (default\n"
	"/dev/nvidia%d); nvidiactl and nvidia-uvm are in its\n"
	"directory (for --cgroup's device rules)"},
	{"cgroup", 0, NULL, opt_true, &opts.cgroup, 0, 0,
	"run each part in a cgroup of its own (v1 or v2; the\n"
	"agent runs as root): the limits below and, with\n"
	"--devices, access to its own devices' nodes only"},
	{"memory-per-instance", 0, "SIZE", opt_bytes, &opts.memory_per_instance, 0, 0,
	"with --cgroup, a part's memory limit per instance\n"
	"(512M, 16G, ...; no swap): over it, the kernel\n"
	"kills it and it FAILs with OUT_OF_MEMORY"},
	{"cpus-per-instance", 0, "N", opt_cpus, &opts.cpus_per_instance, 0, 0,
	"with --cgroup, a part's CPU time per instance, in\n"
	"CPUs (0.5, 4, ...; a CFS quota)"},
	{"labels", 0, "K=V,...", opt_labels, NULL, 0, 0,
	"this host's labels, such as rack=r12,nvlink=nvl3, told\n"
	"the database with what it can run (at most 16; keys\n"
	"of a-z, 0-9, _ . -; values of 1 to 128 characters, no\n"
	"comma; needs --capacity-unit)"},
	{"address", 0, "ADDR", opt_address, NULL, 0, 0,
	"how other hosts reach this one, a host name or an IP\n"
	"address, told the database with what it can run\n"
	"(default: the agent's name; needs --capacity-unit)"},
	{"lease", 'l', "SECONDS", opt_seconds, &opts.lease, 0, 0,
	"lease of each claim and heartbeat (default 60)"},
	{"heartbeat", 'b', "SECONDS", opt_seconds, &opts.heartbeat, 0, 0,
	"time between heartbeats, below the lease (default: a\n"
	"third of the lease); it also claims at each one"},
	{"grace", 'g', "SECONDS", opt_seconds_or_zero, &opts.grace, 0, 0,
	"after SIGTERM to a job being stopped, time before\n"
	"SIGKILL (default 30; keep it below the server's\n"
	"quota_sched.stop_timeout)"},
	{"checkpoint-root", 'c', "DIR", opt_string, &checkpoint_root_arg, 0, 0,
	"each job gets DIR/job-ID (mode 0700, kept across\n"
	"its attempts, removed when it ends for good) as\n"
	"QUOTA_SCHED_CHECKPOINT_DIR (default:\n"
	"$STATE_DIRECTORY/checkpoints under systemd, else\n"
	"./quota-sched-checkpoints)"},
	{"log-dir", 0, "DIR", opt_string, &log_dir_arg, 0, 0,
	"each attempt's stdout and stderr go to\n"
	"DIR/JOB_ID/attempt-N.log (mode 0640; DIR and DIR/JOB_ID\n"
	"0750, the agent's), and their last 4 KiB to the\n"
	"database at its end (default: $STATE_DIRECTORY/logs\n"
	"under systemd, else quota-sched-logs beside the\n"
	"checkpoint root)"},
	{"state-dir", 0, "DIR", opt_string, &state_dir_arg, 0, 0,
	"where each running part's shim and the agent keep\n"
	"its record, lease and end (mode 0700), so that the\n"
	"shim kills a part whose lease was not renewed, and an\n"
	"agent started again adopts the parts left running\n"
	"(default: $STATE_DIRECTORY/parts under systemd, else\n"
	"quota-sched-state beside the checkpoint root)"},
	{"log-max-bytes", 0, "N", opt_count, &opts.log_max_bytes, 4096, LONG_MAX,
	"keep the first N bytes of an attempt's output in its\n"
	"file, and say how many more were left out (default\n"
	"4194304, 4 MiB)"},
	{"keep-checkpoints", 0, NULL, opt_true, &opts.keep_checkpoints, 0, 0,
	"never remove a job's checkpoint directory"},
	{"run-as", 0, "USER", opt_run_as, NULL, 0, 0,
	"run the jobs as this OS user (the agent runs as\n"
	"root); a job's checkpoint directory is the user's\n"
	"while it runs, the agent's (closed) while it does not"},
	{"same-user", 0, NULL, opt_true, &opts.same_user, 0, 0,
	"run the jobs as the agent's own user.  Unsafe: any\n"
	"job can then stop or signal the agent, and so make\n"
	"every other job of the host lose its lease.  Local\n"
	"jobs need this or --run-as"},
	{"log-format", 0, "FORMAT", opt_log_format, NULL, 0, 0,
	"plain (default) or json: one JSON object a line"},
	{"exit-after", 0, "N", opt_count, &opts.exit_after, 1, LONG_MAX,
	"exit once N jobs have ended and none runs"},
	{"drain", 0, NULL, opt_true, &opts.drain, 0, 0,
	"on SIGTERM or SIGINT, claim nothing more, let the\n"
	"jobs run to their end, report them, then exit (a\n"
	"second signal: stop and release them, a third: kill)"},
	{"keep-jobs", 0, NULL, opt_true, &opts.keep_jobs, 0, 0,
	"on SIGTERM, exit leaving the running parts to their\n"
	"shims, for an agent started again with the same\n"
	"--agent and --state-dir to adopt (as SIGUSR2 always\n"
	"does; local jobs)"},
	{"wake", 0, "MODE", opt_wake, NULL, 0, 0,
	"how it learns of its work between statements: wait\n"
	"(default: a call of agent_wait, which wakes this agent\n"
	"alone; LISTEN where the server has none) or listen"},
	{"no-listen", 0, NULL, opt_false, &opts.listen, 0, 0,
	"no LISTEN nor agent_wait (for a transaction-mode\n"
	"pooler): dispatches"
	"and stops are then seen at the heartbeats only"},
	{"noop", 0, NULL, opt_true, &opts.noop, 0, 0,
	"run nothing: report each claimed job SUCCEEDED\n"
	"(for benchmarks)"},
	{"pickup-log", 0, "FILE", opt_pickup_log, NULL, 0, 0,
	"write \"JOB_ID MICROSECONDS\" (since the epoch) to FILE\n"
	"as each job is claimed (for benchmarks)"},
	{"help", 'h', NULL, opt_help, NULL, 0, 0, "this help"},
	{"version", 'V', NULL, opt_version, NULL, 0, 0, "the version"},
	{NULL, 0, NULL, NULL, NULL, 0, 0,
	"\nExternal launchers (a job runs on another system; the three go together):"},
	{"start-cmd", 0, "CMD", opt_command, &opts.start_cmd, 0, 0,
	"starts a claimed job there instead of its command;\n"
	"its stdout's first line is the job's handle there;\n"
	"a non-zero exit FAILs the job"},
	{"status-cmd", 0, "CMD", opt_command, &opts.status_cmd, 0, 0,
	"prints RUNNING, SUCCEEDED, FAILED [CODE [REASON]] or\n"
	"STOPPED for the handle; run every --status-interval"},
	{"stop-cmd", 0, "CMD", opt_command, &opts.stop_cmd, 0, 0,
	"asks the other system to stop it (a stop, a lost\n"
	"lease, the agent's shutdown); the status is then\n"
	"polled until it stopped or --grace has passed"},
	{"status-interval", 0, "SECONDS", opt_seconds, &opts.status_interval, 0, 0,
	"(default: the heartbeat interval)"},
	{"cmd-timeout", 0, "SECONDS", opt_seconds, &opts.cmd_timeout, 0, 0,
	"a command still running then is killed (default 30)"},
};

#define NUM_OPTIONS ((int) (sizeof(options) / sizeof(options[0])))

static const char usage_intro[] =
"quota-sched-agent: the launcher agent of quota_sched.  It claims the jobs the\n"
"scheduling passes dispatch to its queue, runs each job's payload->'command' (a\n"
"JSON array of strings) as a child process, and reports how it ended.\n"
"\n"
"Usage: quota-sched-agent --queue=QUEUE --run-as=USER | --same-user [OPTION]...\n"
"       quota-sched-agent --queue=QUEUE --start-cmd=CMD --status-cmd=CMD\n"
"                         --stop-cmd=CMD [OPTION]...\n"
"\n";

static const char usage_end[] =
"\n"
"A job's command runs as the user of --run-as, or with --same-user as the\n"
"agent's own user (a job can then stop or signal the agent: for a host whose\n"
"jobs are all one person's), under a shim of its own, in a process group of\n"
"its own, with stdin from /dev/null, stdout and stderr to its attempt's file\n"
"under --log-dir (read by the agent, which keeps their last 4 KiB), and in its\n"
"environment QUOTA_SCHED_JOB_ID, QUOTA_SCHED_ATTEMPT (1 + failed attempts +\n"
"preemptions), QUOTA_SCHED_INSTANCE_COUNT, QUOTA_SCHED_CHECKPOINT_DIR and\n"
"QUOTA_SCHED_AGENT, not the agent's PGPASSWORD, for a job of an array its\n"
"index in QUOTA_SCHED_ARRAY_INDEX and AWS_BATCH_JOB_ARRAY_INDEX, and the\n"
"variables of its place among the job's hosts: QUOTA_SCHED_NUM_HOSTS,\n"
"QUOTA_SCHED_HOST_RANK, QUOTA_SCHED_HOSTS, QUOTA_SCHED_INSTANCES_ON_HOST,\n"
"MASTER_ADDR, MASTER_PORT, NNODES, NODE_RANK, WORLD_SIZE, RANK, the PET_* of\n"
"torchrun and SM_HOSTS, SM_CURRENT_HOST, SM_NUM_GPUS; with --devices its own\n"
"devices in CUDA_VISIBLE_DEVICES and NVIDIA_VISIBLE_DEVICES.  A part of a job\n"
"on several hosts starts once every part is claimed and rank 0's agent gave\n"
"the rendezvous port (a free port of its host); it waits meanwhile.  Exit code\n"
"0: SUCCEEDED; any other, or a signal: FAILED.  A job without a runnable\n"
"command, or with an\n"
"argument over 131072 bytes, FAILs.  A stop (preemption, terminate) sends\n"
"SIGTERM to every process of the job, SIGKILL after the grace, and reports\n"
"STOPPED; what a job leaves running, in any session, ends the same way when\n"
"its first process ends, and at once if the agent dies.  SIGTERM or SIGINT to\n"
"the agent stops its jobs and releases them (no attempt counted), then it\n"
"exits 0.  On Linux the agent is not dumpable: its jobs cannot read its\n"
"memory or environment.\n"
"\n"
"The launcher's commands run with /bin/sh -c and the same environment; the\n"
"start command gets the job's payload (JSON) on stdin and in the file\n"
"QUOTA_SCHED_PAYLOAD_FILE (removed once it has ended), and in\n"
"QUOTA_SCHED_PAYLOAD when under 128 KiB; the status and stop commands get\n"
"QUOTA_SCHED_HANDLE.  Nothing is substituted into CMD.  What they print goes\n"
"to the attempt's file under --log-dir, and their stderr to the agent's log\n"
"too.  The database is told each attempt's host, file and handle\n"
"(quota_sched.job_attempts); the agent itself keeps the handles in memory\n"
"only: a restarted agent releases the jobs it held without stopping them\n"
"where they ran.\n";

/*
 * print_option prints an option's lines of usage(): "  -L, --NAME=ARG" and
 * its help from HELP_COLUMN on (after two blanks when the left part is too
 * long), the help's further lines indented to HELP_COLUMN.
 */
static void
print_option(FILE *f, const OptionDef *opt)
{
	char		left[64];
	size_t		len = 0;
	const char *help = opt->help;

	if (opt->letter)
		append(left, sizeof(left), &len, "  -%c, --%s", opt->letter, opt->name);
	else
		append(left, sizeof(left), &len, "      --%s", opt->name);
	if (opt->arg)
		append(left, sizeof(left), &len, "=%s", opt->arg);
	fprintf(f, "%-*s", (int) len < HELP_COLUMN ? HELP_COLUMN : (int) len + 2, left);
	while (*help)
	{
		size_t		n = strcspn(help, "\n");

		fprintf(f, "%.*s\n", (int) n, help);
		help += n;
		if (*help)
		{
			help++;
			fprintf(f, "%*s", HELP_COLUMN, "");
		}
	}
}

/* usage prints --help: what the agent does, then each option of the table */
static void
usage(FILE *f)
{
	int			i;

	fputs(usage_intro, f);
	for (i = 0; i < NUM_OPTIONS; i++)
	{
		if (options[i].name)
			print_option(f, &options[i]);
		else
			fprintf(f, "%s\n", options[i].help);
	}
	fputs(usage_end, f);
}

/*
 * default_agent_name: HOST/QUEUE.  Agents of one host for several queues
 * must have names of their own, or each would release the other's jobs as
 * unknown.
 */
static void
default_agent_name(void)
{
	char		host[256];

	if (gethostname(host, sizeof(host) - 1) != 0 || host[0] == '\0')
		snprintf(host, sizeof(host), "quota-sched-agent");
	host[sizeof(host) - 1] = '\0';
	snprintf(opts.agent, sizeof(opts.agent), "%.64s/%.63s", host, opts.queue);
}

/* check_options: what no option says alone; the defaults that follow others */
static void
check_options(void)
{
	const char *problem;

	if (opts.queue == NULL)
		bad_usage("--queue is required (see --help)");
	if (opts.agent[0] == '\0')
		default_agent_name();
	if (opts.unit == NULL && (strcmp(opts.labels, "{}") != 0 || opts.address != NULL))
		bad_usage("--labels and --address are told the database with what the agent can run, "
				  "which needs --capacity-unit");
	if (opts.heartbeat == 0)
		opts.heartbeat = opts.lease / 3;
	if (opts.heartbeat >= opts.lease)
		bad_usage("--heartbeat (%g s) must be below --lease (%g s)", opts.heartbeat, opts.lease);
	if ((opts.start_cmd || opts.status_cmd || opts.stop_cmd) &&
		!(opts.start_cmd && opts.status_cmd && opts.stop_cmd))
		bad_usage("--start-cmd, --status-cmd and --stop-cmd go together: give all three, or none");
	if (opts.start_cmd && opts.noop)
		bad_usage("--noop runs nothing: it goes with no --start-cmd");
	if (opts.keep_jobs && opts.drain)
		bad_usage("--keep-jobs and --drain each say what SIGTERM does: give one");
	if (opts.keep_jobs && opts.start_cmd)
		bad_usage("--keep-jobs keeps local jobs: it goes with no --start-cmd");
	if (opts.status_interval == 0)
		opts.status_interval = opts.heartbeat;
	if ((problem = jobs_user_problem(opts.start_cmd == NULL, opts.noop, opts.run_as != NULL,
									 opts.same_user)) != NULL)
		bad_usage("%s", problem);
	if (opts.run_as && geteuid() != 0)
		bad_usage("--run-as needs the agent to run as root, to set each job's user (it runs as uid %d)",
				  (int) geteuid());
	if (opts.instances == 0)
		opts.instances = opts.devices.n > 0 ? opts.devices.n : 1;
	if (opts.devices.n > 0 && opts.start_cmd)
		bad_usage("--devices is for local jobs: it goes with no --start-cmd");
	if ((problem = devices_problem()) != NULL || (problem = cgroups_problem()) != NULL)
		bad_usage("%s", problem);
	if (gethostname(opts.host, sizeof(opts.host) - 1) != 0)
		opts.host[0] = '\0';
	opts.host[sizeof(opts.host) - 1] = '\0';
}

/*
 * check_run_as_reach: with --run-as, whether the run-as user can reach the
 * checkpoint root (each directory above it must let it pass): a child
 * becomes the user and tries.
 */
static void
check_run_as_reach(const char *root)
{
	int			status;
	pid_t		pid;

	if (!opts.run_as)
		return;
	pid = fork();
	if (pid == 0)
		_exit(initgroups(opts.run_as, opts.run_as_gid) == 0 && setgid(opts.run_as_gid) == 0 &&
			  setuid(opts.run_as_uid) == 0 && access(root, X_OK) == 0 ? 0 : 1);
	if (pid < 0 || waitpid(pid, &status, 0) != pid || !WIFEXITED(status) ||
		WEXITSTATUS(status) != 0)
		bad_usage("--run-as %s: the user cannot reach the checkpoint root \"%s\" (a directory above it is closed to it)",
				  opts.run_as, root);
}

/*
 * setup_checkpoint_root: the checkpoint root (--checkpoint-root, else
 * $STATE_DIRECTORY/checkpoints under systemd's StateDirectory=, else
 * ./quota-sched-checkpoints), created 0700 if missing, made absolute for
 * the jobs.
 */
static void
setup_checkpoint_root(void)
{
	const char *root = checkpoint_root_arg;
	char		err[PATH_MAX + 200];
	char		resolved[PATH_MAX];

	if (root == NULL)
	{
		const char *state = getenv("STATE_DIRECTORY");

		if (state && state[0] && strchr(state, ':') == NULL)
		{
			snprintf(err, sizeof(err), "%s/checkpoints", state);
			root = strdup(err);
		}
		else
			root = "quota-sched-checkpoints";
	}
	if (ensure_checkpoint_root(root, false, err, sizeof(err)) != 0)
		bad_usage("checkpoint root: %s", err);
	if (realpath(root, resolved) == NULL)
		bad_usage("checkpoint root \"%s\": %s", root, strerror(errno));
	opts.checkpoint_root = strdup(resolved);
	check_run_as_reach(opts.checkpoint_root);
}

/*
 * parse_options fills opts from the command line: getopt_long's tables
 * are made from options[], and each option found goes to its handler.
 */
void
parse_options(int argc, char **argv)
{
	struct option longopts[NUM_OPTIONS + 1];
	char		shortopts[2 * NUM_OPTIONS + 1];
	int			nlong = 0,
				nshort = 0;
	int			c,
				i;

	for (i = 0; i < NUM_OPTIONS; i++)
	{
		const OptionDef *opt = &options[i];

		if (opt->name == NULL)
			continue;
		longopts[nlong].name = opt->name;
		longopts[nlong].has_arg = opt->arg ? required_argument : no_argument;
		longopts[nlong].flag = NULL;
		longopts[nlong++].val = opt->letter ? opt->letter : LONG_ONLY + i;
		if (opt->letter)
		{
			shortopts[nshort++] = opt->letter;
			if (opt->arg)
				shortopts[nshort++] = ':';
		}
	}
	memset(&longopts[nlong], 0, sizeof(longopts[nlong]));
	shortopts[nshort] = '\0';

	opts.agent[0] = '\0';
	while ((c = getopt_long(argc, argv, shortopts, longopts, NULL)) != -1)
	{
		for (i = 0; i < NUM_OPTIONS; i++)
			if (options[i].name && (c == LONG_ONLY + i || (options[i].letter && c == options[i].letter)))
				break;
		if (i == NUM_OPTIONS)
		{
			fprintf(stderr, "Try \"quota-sched-agent --help\".\n");
			exit(2);
		}
		options[i].handler(&options[i], optarg);
	}
	if (optind < argc)
		bad_usage("unexpected argument \"%s\"", argv[optind]);
	check_options();
	setup_checkpoint_root();
	setup_log_dir(log_dir_arg);
	if (!opts.start_cmd)
		setup_state_dir(state_dir_arg);
}
