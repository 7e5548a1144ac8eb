/*-------------------------------------------------------------------------
 *
 * agent.h
 *		What the files of quota-sched-agent share: its options (one
 *		AgentOptions, filled by options.c), the jobs it holds, and the
 *		functions one file calls in another.
 *
 * The agent is one thread and one loop (main.c); these are its parts.
 *
 *-------------------------------------------------------------------------
 */
#ifndef QS_AGENT_H
#define QS_AGENT_H

#include <stdbool.h>
#include <stdio.h>

#define AGENT_VERSION "0.2"

/* The agent's options (see usage()), as parse_options() leaves them. */
typedef struct AgentOptions
{
	const char *conninfo;		/* --dbname: libpq connection string or URI */
	char		agent[129];		/* --agent, by default HOST/QUEUE */
	const char *queue;			/* --queue */
	const char *unit;			/* --capacity-unit, NULL: any */
	int			instances;		/* --instances */
	double		lease;			/* --lease, seconds */
	double		heartbeat;		/* --heartbeat, seconds (default: lease / 3) */
	double		grace;			/* --grace, seconds */
	bool		json;			/* --log-format=json */
	char	   *checkpoint_root;	/* --checkpoint-root, made absolute */
	bool		keep_checkpoints;	/* --keep-checkpoints */
	long		exit_after;		/* --exit-after, 0: never */
	bool		noop;			/* --noop */
	bool		listen;			/* false with --no-listen */
	FILE	   *pickup_log;		/* --pickup-log: "job_id microseconds" a claim */
	const char *start_cmd;		/* external launcher: all three, or none */
	const char *status_cmd;
	const char *stop_cmd;
	double		status_interval;	/* --status-interval (default: heartbeat) */
	double		cmd_timeout;	/* --cmd-timeout, seconds */
} AgentOptions;

extern AgentOptions opts;

#endif							/* QS_AGENT_H */
