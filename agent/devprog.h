/*-------------------------------------------------------------------------
 *
 * devprog.h
 *		A part's device rules on cgroup v2: a BPF device program
 *		(agent/devprog.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef QS_AGENT_DEVPROG_H
#define QS_AGENT_DEVPROG_H

#include "util.h"

#include <stdint.h>

/* at most this many rules in one program */
#define MAX_DEVICE_RULES 96

/* a character device allowed: read, write and mknod */
typedef struct DeviceRule
{
	int32_t		major;
	int32_t		minor;			/* -1: any */
} DeviceRule;

extern bool attach_device_program(int cgroup_fd, const DeviceRule *rules, int n,
								  const char **what, char *log, size_t logcap);

#endif							/* QS_AGENT_DEVPROG_H */
