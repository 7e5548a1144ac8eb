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

/* What may wake an agent (the order of agent_wait's names). */
#define QS_WAKE_DISPATCH 0x1
#define QS_WAKE_STOP 0x2
#define QS_WAKE_PEERS 0x4

extern void QsAgentWaitRegister(void);
extern void QsWakeAgent(const char *agent, uint32 what);
extern void QsWakeForJob(const char *queue, const char *unit, int64 instances);
extern void QsNoteClaim(const char *agent, const char *queue, const char *unit,
						int max_instances, int64 taken);
extern void QsNoteFreed(const char *agent, int64 instances);
extern void QsAgentWaitXactEvent(XactEvent event);

#endif							/* QS_AGENT_WAIT_H */
