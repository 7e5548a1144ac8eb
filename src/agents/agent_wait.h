/*-------------------------------------------------------------------------
 *
 * agent_wait.h
 *		agent_wait(): agents woken by the commits that concern them,
 *		without LISTEN (agent_wait.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef QS_AGENT_WAIT_H
#define QS_AGENT_WAIT_H

#include "access/xact.h"

#include "constants.h"

/* What may wake an agent (the order of agent_wait's names). */
#define QS_WAKE_DISPATCH 0x1
#define QS_WAKE_STOP 0x2
#define QS_WAKE_PEERS 0x4

#define QS_MAX_GIVEN 32			/* jobs given to a session, not yet claimed */

/* Whom a pass gives a job at its dispatch (QsGiveJob). */
typedef struct QsGiveTo
{
	int			slot;			/* the waiting session's, for grouping */
	char		agent[QS_MAX_NAME_LEN + 1];
	char		role[NAMEDATALEN];
	int64		lease_usecs;
} QsGiveTo;

extern void QsAgentWaitRegister(void);
extern bool QsGiveJob(const char *queue, const char *unit, const char *agent, int64 instances,
					  int64 job_id, QsGiveTo *to);
extern int	QsTakeGiven(const char *agent, const char *queue, int64 *ids);
extern void QsWakeAgent(const char *agent, uint32 what);
extern void QsWakeForJob(const char *queue, const char *unit, int64 instances);
extern void QsNoteClaim(const char *agent, const char *queue, const char *unit,
						int max_instances, int64 taken);
extern void QsNoteFreed(const char *agent, int64 instances);
extern void QsAgentWaitXactEvent(XactEvent event);
extern void QsAgentWaitSubXactEvent(SubXactEvent event);

#endif							/* QS_AGENT_WAIT_H */
