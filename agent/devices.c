/*-------------------------------------------------------------------------
 *
 * devices.c
 *		The host's devices (--devices) and the parts that hold them: a part
 *		of k instances gets the k lowest devices that no other running part
 *		of this agent holds, in CUDA_VISIBLE_DEVICES and
 *		NVIDIA_VISIBLE_DEVICES (and, with --cgroup, in its device rules:
 *		cgroup.c); the database is told them (attempt_started's devices).
 *
 * A part holds its devices from its start until its processes are gone
 * (its shim reaped), also while it is being killed as lost beside a newer
 * attempt of its job.  The database places k instances on an agent only
 * where k are free, so a part finds its devices; if it does not (the
 * agent's count and the database's disagree), the part is released.
 *
 *-------------------------------------------------------------------------
 */
#include "agent.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* devices_held: the devices that the agent's parts hold now */
static uint64_t
devices_held(const Job *except)
{
	uint64_t	held = 0;
	int			i;

	for (i = 0; i < njobs; i++)
		if (jobs[i] != except)
			held |= jobs[i]->device_mask;
	return held;
}

/*
 * devices_take gives the job's part (job->instances) its devices, the
 * lowest free ones, and their names in job->devices.  True if it has them
 * (or the agent has no --devices); false if too few are free, the job
 * released with the reason.
 */
bool
devices_take(Job *job)
{
	int			picked[MAX_DEVICES];
	int			k = job->instances;
	int			n,
				i;

	job->device_mask = 0;
	job->devices[0] = '\0';
	if (opts.devices.n == 0)
		return true;
	n = lowest_free_devices(devices_held(job), opts.devices.n, k > MAX_DEVICES ? MAX_DEVICES : k,
							picked);
	if (n < k)
	{
		log_event("error", "job_not_started", job,
				  "%d of the agent's %d devices are free, the part has %d instance(s)",
				  n, opts.devices.n, k);
		job->action = ACT_RELEASE;
		snprintf(job->reason, sizeof(job->reason),
				 "agent %s has %d of its %d devices free, fewer than the part's %d instances",
				 opts.agent, n, opts.devices.n, k);
		return false;
	}
	for (i = 0; i < n; i++)
		job->device_mask |= (uint64_t) 1 << picked[i];
	device_names(&opts.devices, job->device_mask, ",", job->devices, sizeof(job->devices));
	return true;
}

/*
 * devices_adopt: the job (a part the agent adopts, started by an earlier
 * run of the agent) holds the devices named in names, as job->devices had
 * them then (comma-separated).  False if one is not a device of
 * --devices, or another part holds it: the job then holds none.
 */
bool
devices_adopt(Job *job, const char *names)
{
	uint64_t	held = devices_held(job);
	const char *p = names;

	job->device_mask = 0;
	job->devices[0] = '\0';
	while (*p)
	{
		size_t		len = strcspn(p, ",");
		int			i;

		for (i = 0; i < opts.devices.n; i++)
			if (strlen(opts.devices.name[i]) == len && strncmp(opts.devices.name[i], p, len) == 0)
				break;
		if (i == opts.devices.n || (held & ((uint64_t) 1 << i)))
		{
			job->device_mask = 0;
			return false;
		}
		job->device_mask |= (uint64_t) 1 << i;
		p += len + (p[len] == ',');
	}
	device_names(&opts.devices, job->device_mask, ",", job->devices, sizeof(job->devices));
	return true;
}

/* devices_free: the job's processes are gone; its devices are free (their names stay) */
void
devices_free(Job *job)
{
	job->device_mask = 0;
}

/*
 * devices_setenv, in the child that execs the job's command: its devices
 * for CUDA (by PCI bus order, nvidia-smi's, for indexes) and for the
 * NVIDIA container runtime; nothing without --devices.
 */
void
devices_setenv(const Job *job)
{
	if (opts.devices.n == 0)
		return;
	setenv("CUDA_VISIBLE_DEVICES", job->devices, 1);
	setenv("NVIDIA_VISIBLE_DEVICES", job->devices, 1);
	if (!opts.devices.uuids)
		setenv("CUDA_DEVICE_ORDER", "PCI_BUS_ID", 1);
}

/*
 * devices_problem, at the start: what is wrong with --devices and the
 * options beside it, or NULL: --instances (by default the number of
 * devices) at most the devices; with --cgroup, each device's node (the
 * pattern's) a character device, and no UUID without its index.
 */
const char *
devices_problem(void)
{
	static char problem[PATH_MAX + 200];
	int			i;

	if (opts.devices.n == 0)
		return NULL;
	if (opts.instances > opts.devices.n)
		snprintf(problem, sizeof(problem),
				 "--instances %ld is more than the %d devices of --devices: each instance needs one of its own",
				 opts.instances, opts.devices.n);
	for (i = 0; i < opts.devices.n && opts.cgroup && opts.instances <= opts.devices.n; i++)
	{
		char		node[PATH_MAX];
		struct stat st;

		device_node_path(opts.device_node_pattern, opts.devices.index[i], node, sizeof(node));
		if (opts.devices.index[i] < 0)
			snprintf(problem, sizeof(problem),
					 "--cgroup fences each device by its node: give device \"%s\" as %s=INDEX",
					 opts.devices.name[i], opts.devices.name[i]);
		else if (stat(node, &st) != 0)
			snprintf(problem, sizeof(problem),
					 "--cgroup: the node of device %s, %s: %s (see --device-node-pattern)",
					 opts.devices.name[i], node, strerror(errno));
		else if (!S_ISCHR(st.st_mode))
			snprintf(problem, sizeof(problem),
					 "--cgroup: the node of device %s, %s, is no character device",
					 opts.devices.name[i], node);
		else
			continue;
		return problem;
	}
	return opts.instances > opts.devices.n ? problem : NULL;
}
