/*-------------------------------------------------------------------------
 *
 * part_limits.h
 *		quota-sched-agent's pure helpers for a host's devices and a part's
 *		limits (agent/part_limits.c): --devices, --device-node-pattern,
 *		--memory-per-instance, --cpus-per-instance.
 *
 * No libpq, no global state, no option: test/agent's unit tests build
 * part_limits.c alone (with util.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef QS_AGENT_PART_LIMITS_H
#define QS_AGENT_PART_LIMITS_H

#include "util.h"

#include <stdint.h>

/* at most this many devices on one agent (a bit each in a uint64_t) */
#define MAX_DEVICES 64
/* a device's name: an index, or a UUID such as GPU-8d3f... or MIG-... */
#define MAX_DEVICE_NAME 96
/* the highest device index, and so minor number, taken */
#define MAX_DEVICE_INDEX 254

/* --devices, parsed */
typedef struct DeviceList
{
	int			n;
	bool		uuids;			/* the names are UUIDs (else indexes) */
	char		name[MAX_DEVICES][MAX_DEVICE_NAME];	/* as given, for CUDA_VISIBLE_DEVICES */
	int			index[MAX_DEVICES]; /* its node's number; -1: not known (a UUID alone) */
} DeviceList;

extern bool parse_device_list(const char *arg, DeviceList *out, char *err, size_t errcap);
extern const char *node_pattern_problem(const char *pattern);
extern void device_node_path(const char *pattern, int index, char *buf, size_t cap);
extern void control_node_path(const char *pattern, const char *name, char *buf, size_t cap);
extern int	lowest_free_devices(uint64_t held, int ndevices, int k, int *out);
extern void device_names(const DeviceList *list, uint64_t mask, const char *sep, char *buf,
						 size_t cap);
extern bool parse_bytes(const char *s, long long min, long long *bytes);
extern bool parse_cpus(const char *s, double *cpus);

#endif							/* QS_AGENT_PART_LIMITS_H */
