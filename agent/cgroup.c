/*-------------------------------------------------------------------------
 *
 * cgroup.c
 *		--cgroup: each part of a job in a cgroup of its own, with its
 *		limits: memory (--memory-per-instance times its instances, no
 *		swap), CPU (--cpus-per-instance times its instances, a CFS quota)
 *		and, with --devices, its devices only (its own nodes, the
 *		nvidiactl and nvidia-uvm nodes, and the usual null, zero, full,
 *		random, urandom, tty, ptmx and pts).
 *
 * On cgroup v1 (the controllers memory, cpu, devices and pids each
 * mounted under /sys/fs/cgroup) a part's cgroup is
 * /sys/fs/cgroup/CONTROLLER/quota_sched/AGENT/JOB.ATTEMPT.SHIM in each,
 * its device rules devices.deny and devices.allow; on v2 (a unified
 * /sys/fs/cgroup with the controllers memory and cpu) it is
 * /sys/fs/cgroup/quota_sched/AGENT/JOB.ATTEMPT.SHIM, its device rules a
 * BPF program (devprog.c).  AGENT is the agent's name with every byte
 * but a letter, a digit, '-' or '.' made '_'; SHIM the pid of the part's
 * shim, which makes the cgroup (cgroup_create) before it forks the
 * command; the command's process joins it (cgroup_enter) before it
 * execs, so no process of the part ever runs outside.  The shim stays
 * outside: a part killed for its memory is reported by its shim.  Once
 * the shim has been reaped (every process of the part gone) the agent
 * reads whether the kernel's OOM killer killed in it and removes it
 * (cgroup_finish).
 *
 *-------------------------------------------------------------------------
 */
#include "agent.h"
#include "devprog.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>

#define CGROUP_ROOT "/sys/fs/cgroup"
/* the CFS period, microseconds */
#define CPU_PERIOD_US 100000

typedef enum CgroupMode
{
	CG_V1,
	CG_V2
} CgroupMode;

static CgroupMode mode = CG_V1;

/* the v1 controllers a part joins; on v2, one directory ("") */
static const char *const v1_controllers[] = {"memory", "cpu", "devices", "pids"};
#define NUM_V1 ((int) (sizeof(v1_controllers) / sizeof(v1_controllers[0])))

/* the device nodes every process needs: (major, minor; -1: any) */
static const DeviceRule usual_devices[] = {
	{1, 3}, {1, 5}, {1, 7}, {1, 8}, {1, 9},	/* null, zero, full, random, urandom */
	{5, 0}, {5, 2}, {136, -1}	/* tty, ptmx, pts */
};

/* the nodes of the driver that every part with devices needs */
static const char *const control_nodes[] = {"nvidiactl", "nvidia-uvm", "nvidia-uvm-tools"};

/* ncontrollers: the directories a part has, one per v1 controller or one (v2) */
static int
ncontrollers(void)
{
	return mode == CG_V1 ? NUM_V1 : 1;
}

/*
 * agent_dir: the agent's cgroup under controller c (its index; v2: the
 * one), quota_sched/AGENT (see the file's comment)
 */
static void
agent_dir(int c, char *buf, size_t cap)
{
	char		name[sizeof(opts.agent)];
	size_t		i;

	snprintf(name, sizeof(name), "%s", opts.agent);
	for (i = 0; name[i]; i++)
		if (!((name[i] >= 'a' && name[i] <= 'z') || (name[i] >= 'A' && name[i] <= 'Z') ||
			  (name[i] >= '0' && name[i] <= '9') || name[i] == '-' || (name[i] == '.' && i > 0)))
			name[i] = '_';
	if (mode == CG_V1)
		snprintf(buf, cap, "%s/%s/quota_sched/%s", CGROUP_ROOT, v1_controllers[c], name);
	else
		snprintf(buf, cap, "%s/quota_sched/%s", CGROUP_ROOT, name);
}

/* part_dir: the part's cgroup under controller c */
static void
part_dir(int c, const Job *job, pid_t shim, char *buf, size_t cap)
{
	char		base[PATH_MAX];

	agent_dir(c, base, sizeof(base));
	snprintf(buf, cap, "%s/%s.%s.%d", base, job->id_text, job->attempt_text, (int) shim);
}

/*
 * write_file writes value to DIR/FILE (a cgroup's control file); false
 * (errno) if it could not.
 */
static bool
write_file(const char *dir, const char *file, const char *value)
{
	char		path[PATH_MAX];
	ssize_t		n;
	int			fd,
				e;

	snprintf(path, sizeof(path), "%s/%s", dir, file);
	fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	n = write(fd, value, strlen(value));
	e = errno;
	close(fd);
	errno = e;
	return n == (ssize_t) strlen(value);
}

/*
 * read_key: the number after KEY in DIR/FILE, a file of "KEY N" lines
 * (memory.events, memory.oom_control); -1 if there is none
 */
static long
read_key(const char *dir, const char *file, const char *key)
{
	char		path[PATH_MAX];
	char		line[256];
	size_t		klen = strlen(key);
	long		v = -1;
	FILE	   *f;

	snprintf(path, sizeof(path), "%s/%s", dir, file);
	if ((f = fopen(path, "re")) == NULL)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (strncmp(line, key, klen) == 0 && line[klen] == ' ')
			v = atol(line + klen + 1);
	fclose(f);
	return v;
}

/* exists: whether DIR/FILE is there */
static bool
exists(const char *dir, const char *file)
{
	char		path[PATH_MAX];

	snprintf(path, sizeof(path), "%s/%s", dir, file);
	return access(path, F_OK) == 0;
}

/* add_node: a rule for the char device at path, if it is one (else nothing) */
static void
add_node(const char *path, DeviceRule *rules, int *n)
{
	struct stat st;

	if (*n < MAX_DEVICE_RULES && stat(path, &st) == 0 && S_ISCHR(st.st_mode))
	{
		rules[*n].major = (int32_t) major(st.st_rdev);
		rules[(*n)++].minor = (int32_t) minor(st.st_rdev);
	}
}

/*
 * part_device_rules: what the job's part may open: the usual nodes, its
 * own devices' nodes, and the driver's control nodes that exist; how many
 */
static int
part_device_rules(const Job *job, DeviceRule *rules)
{
	char		path[PATH_MAX];
	int			n = 0,
				i;

	for (i = 0; i < (int) (sizeof(usual_devices) / sizeof(usual_devices[0])); i++)
		rules[n++] = usual_devices[i];
	for (i = 0; i < opts.devices.n; i++)
		if ((job->device_mask & ((uint64_t) 1 << i)) && opts.devices.index[i] >= 0)
		{
			device_node_path(opts.device_node_pattern, opts.devices.index[i], path, sizeof(path));
			add_node(path, rules, &n);
		}
	for (i = 0; i < (int) (sizeof(control_nodes) / sizeof(control_nodes[0])); i++)
	{
		control_node_path(opts.device_node_pattern, control_nodes[i], path, sizeof(path));
		add_node(path, rules, &n);
	}
	return n;
}

/* v1_devices: the part's device rules, in its v1 devices cgroup dir */
static bool
v1_devices(const Job *job, const char *dir, const char **what)
{
	DeviceRule	rules[MAX_DEVICE_RULES];
	int			n = part_device_rules(job, rules),
				i;

	*what = "cgroup devices.deny";
	if (!write_file(dir, "devices.deny", "a"))
		return false;
	*what = "cgroup devices.allow";
	for (i = 0; i < n; i++)
	{
		char		rule[64];

		if (rules[i].minor < 0)
			snprintf(rule, sizeof(rule), "c %d:* rwm", rules[i].major);
		else
			snprintf(rule, sizeof(rule), "c %d:%d rwm", rules[i].major, rules[i].minor);
		if (!write_file(dir, "devices.allow", rule))
			return false;
	}
	return true;
}

/* v2_devices: the part's device rules, a BPF program attached to its cgroup */
static bool
v2_devices(const Job *job, const char *dir, const char **what)
{
	DeviceRule	rules[MAX_DEVICE_RULES];
	int			n = part_device_rules(job, rules);
	int			fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	bool		ok;
	int			e;

	*what = "open of the part's cgroup";
	if (fd < 0)
		return false;
	ok = attach_device_program(fd, rules, n, what, NULL, 0);
	e = errno;
	close(fd);
	errno = e;
	return ok;
}

/*
 * set_limits: the part's limits in its cgroup dir of controller c (v1) or
 * its one dir (v2): memory, CPU, devices (each only if asked for).
 */
static bool
set_limits(const Job *job, int c, const char *dir, const char **what)
{
	const char *ctl = mode == CG_V1 ? v1_controllers[c] : "";
	bool		v1 = mode == CG_V1;
	char		value[64];

	if (opts.memory_per_instance > 0 && (!v1 || strcmp(ctl, "memory") == 0))
	{
		snprintf(value, sizeof(value), "%lld", opts.memory_per_instance * job->instances);
		*what = v1 ? "cgroup memory.limit_in_bytes" : "cgroup memory.max";
		if (!write_file(dir, v1 ? "memory.limit_in_bytes" : "memory.max", value))
			return false;
		*what = v1 ? "cgroup memory.memsw.limit_in_bytes" : "cgroup memory.swap.max";
		if (exists(dir, v1 ? "memory.memsw.limit_in_bytes" : "memory.swap.max") &&
			!write_file(dir, v1 ? "memory.memsw.limit_in_bytes" : "memory.swap.max",
						v1 ? value : "0"))
			return false;
	}
	if (opts.cpus_per_instance > 0 && (!v1 || strcmp(ctl, "cpu") == 0))
	{
		long		quota = (long) (opts.cpus_per_instance * job->instances * CPU_PERIOD_US);

		quota = quota < 1000 ? 1000 : quota;
		*what = v1 ? "cgroup cpu.cfs_quota_us" : "cgroup cpu.max";
		snprintf(value, sizeof(value), v1 ? "%ld" : "%ld %d", quota, CPU_PERIOD_US);
		if ((v1 && !write_file(dir, "cpu.cfs_period_us", "100000")) ||
			!write_file(dir, v1 ? "cpu.cfs_quota_us" : "cpu.max", value))
			return false;
	}
	if (opts.devices.n > 0 && v1 && strcmp(ctl, "devices") == 0)
		return v1_devices(job, dir, what);
	if (opts.devices.n > 0 && !v1)
		return v2_devices(job, dir, what);
	return true;
}

/* remove_part: rmdir of the part's cgroups (those there are); false if one stays */
static bool
remove_part(const Job *job, pid_t shim)
{
	bool		all = true;
	int			c;

	for (c = 0; c < ncontrollers(); c++)
	{
		char		dir[PATH_MAX];
		int			tries = 0;

		part_dir(c, job, shim, dir, sizeof(dir));
		while (rmdir(dir) != 0 && errno == EBUSY && ++tries < 20)
		{
			struct timespec ts = {0, 10 * 1000 * 1000};

			nanosleep(&ts, NULL);
		}
		if (access(dir, F_OK) == 0)
			all = false;
	}
	return all;
}

/*
 * cgroup_create, in the part's shim (shim: its pid) before it forks the
 * command: the part's cgroups with their limits.  False (errno, *what: the
 * step that failed) if they could not be had; none is left then.
 */
bool
cgroup_create(const Job *job, pid_t shim, const char **what)
{
	int			c;

	if (!opts.cgroup)
		return true;
	for (c = 0; c < ncontrollers(); c++)
	{
		char		dir[PATH_MAX];

		part_dir(c, job, shim, dir, sizeof(dir));
		*what = "mkdir of the part's cgroup";
		if (mkdir(dir, 0755) != 0 || !set_limits(job, c, dir, what))
		{
			int			e = errno;

			remove_part(job, shim);
			errno = e;
			return false;
		}
	}
	return true;
}

/*
 * cgroup_enter, in the command's process before it execs (shim: its
 * shim's pid): into the part's cgroups.  False (errno, *what) if not.
 */
bool
cgroup_enter(const Job *job, pid_t shim, const char **what)
{
	int			c;

	if (!opts.cgroup)
		return true;
	*what = "joining the part's cgroup";
	for (c = 0; c < ncontrollers(); c++)
	{
		char		dir[PATH_MAX];

		part_dir(c, job, shim, dir, sizeof(dir));
		if (!write_file(dir, "cgroup.procs", "0"))
			return false;
	}
	return true;
}

/*
 * cgroup_finish, once the part's shim (pid shim) has been reaped: how many
 * of its processes the kernel's OOM killer killed (0: none or no
 * --cgroup; -1: not known), and its cgroups removed.
 */
long
cgroup_finish(const Job *job, pid_t shim)
{
	char		dir[PATH_MAX];
	long		kills;
	int			c;

	if (!opts.cgroup)
		return 0;
	for (c = 0; c < ncontrollers() && mode == CG_V1 && strcmp(v1_controllers[c], "memory"); c++)
		;
	part_dir(c, job, shim, dir, sizeof(dir));
	kills = read_key(dir, mode == CG_V1 ? "memory.oom_control" : "memory.events", "oom_kill");
	if (!remove_part(job, shim))
		log_event("warning", "cgroup_left", job,
				  "the part's cgroup %s could not be removed: a process is still in it", dir);
	return kills;
}

/* has_word: whether the file DIR/FILE (a line of words) holds word */
static bool
has_word(const char *dir, const char *file, const char *word)
{
	char		path[PATH_MAX];
	char		line[1024];
	char	   *tok,
			   *save;
	bool		found = false;
	FILE	   *f;

	snprintf(path, sizeof(path), "%s/%s", dir, file);
	if ((f = fopen(path, "re")) == NULL)
		return false;
	if (fgets(line, sizeof(line), f))
		for (tok = strtok_r(line, " \n", &save); tok && !found; tok = strtok_r(NULL, " \n", &save))
			found = strcmp(tok, word) == 0;
	fclose(f);
	return found;
}

/*
 * give_controllers, on v2: the controllers memory and cpu (and pids, if
 * the host has it) to the cgroups below dir; false if memory or cpu could
 * not be given
 */
static bool
give_controllers(const char *dir)
{
	write_file(dir, "cgroup.subtree_control", "+pids");
	return write_file(dir, "cgroup.subtree_control", "+memory") &&
		write_file(dir, "cgroup.subtree_control", "+cpu");
}

/*
 * make_agent_dirs makes the agent's cgroup under each controller (on v2
 * with memory, cpu and pids given to the cgroups below each level); the
 * problem, or NULL
 */
static const char *
make_agent_dirs(void)
{
	static char problem[PATH_MAX + 100];
	int			c;

	for (c = 0; c < ncontrollers(); c++)
	{
		char		dir[PATH_MAX];
		char	   *slash;

		agent_dir(c, dir, sizeof(dir));
		slash = strrchr(dir, '/');
		*slash = '\0';			/* .../quota_sched */
		if (mode == CG_V2)
			give_controllers(CGROUP_ROOT);
		if ((mkdir(dir, 0755) != 0 && errno != EEXIST) || (mode == CG_V2 && !give_controllers(dir)))
			break;
		*slash = '/';
		if ((mkdir(dir, 0755) != 0 && errno != EEXIST) || (mode == CG_V2 && !give_controllers(dir)))
			break;
	}
	if (c == ncontrollers())
		return NULL;
	snprintf(problem, sizeof(problem), "--cgroup: the agent's cgroups could not be made: %s",
			 strerror(errno));
	return problem;
}

/*
 * cgroups_problem, at the start: what is wrong with --cgroup and its
 * limits, or NULL; with --cgroup, which version the host has (v2: a
 * unified /sys/fs/cgroup with memory and cpu; v1: memory, cpu, devices
 * and pids under /sys/fs/cgroup) and the agent's cgroups made.
 */
const char *
cgroups_problem(void)
{
	static char problem[256];

	if (!opts.cgroup)
		return (opts.memory_per_instance || opts.cpus_per_instance) ?
			"--memory-per-instance and --cpus-per-instance are limits of a part's cgroup: they need --cgroup" :
			NULL;
	if (geteuid() != 0)
	{
		snprintf(problem, sizeof(problem),
				 "--cgroup needs the agent to run as root, to make the parts' cgroups (it runs as uid %d)",
				 (int) geteuid());
		return problem;
	}
	if (opts.start_cmd)
		return "--cgroup is for local jobs: it goes with no --start-cmd";
	if (exists(CGROUP_ROOT, "cgroup.controllers"))
	{
		mode = CG_V2;
		if (!has_word(CGROUP_ROOT, "cgroup.controllers", "memory") ||
			!has_word(CGROUP_ROOT, "cgroup.controllers", "cpu"))
			return "--cgroup: the cgroup v2 hierarchy " CGROUP_ROOT " has not the controllers memory and cpu";
	}
	else if (!exists(CGROUP_ROOT "/memory", "memory.limit_in_bytes") ||
			 !exists(CGROUP_ROOT "/cpu", "cpu.cfs_quota_us") ||
			 !exists(CGROUP_ROOT "/devices", "devices.allow") ||
			 !exists(CGROUP_ROOT "/pids", "cgroup.procs"))
		return "--cgroup: this host has neither cgroup v2 (" CGROUP_ROOT "/cgroup.controllers) nor the "
			"cgroup v1 controllers memory, cpu, devices and pids under " CGROUP_ROOT;
	return make_agent_dirs();
}

/*
 * cgroup_sweep, at the start: the parts' cgroups an earlier run of the
 * agent left (it was killed) are removed, those with no process in them:
 * a part that still runs (adopted) keeps its own.
 */
void
cgroup_sweep(void)
{
	int			c;

	for (c = 0; opts.cgroup && c < ncontrollers(); c++)
	{
		char		dir[PATH_MAX];
		char		sub[PATH_MAX + 256];
		struct dirent *de;
		DIR		   *d;

		agent_dir(c, dir, sizeof(dir));
		if ((d = opendir(dir)) == NULL)
			continue;
		while ((de = readdir(d)) != NULL)
			if (de->d_type == DT_DIR && de->d_name[0] != '.')
			{
				snprintf(sub, sizeof(sub), "%s/%s", dir, de->d_name);
				if (rmdir(sub) == 0)
					log_event("info", "cgroup_removed", NULL, "removed %s, left by an earlier run", sub);
			}
		closedir(d);
	}
}
