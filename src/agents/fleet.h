/*-------------------------------------------------------------------------
 *
 * fleet.h
 *		The agents the scheduler knows (scheduling.md 3.10, doc/agents.md): the rows
 *		of quota_sched.agent, written by agent_ready, claim, heartbeat,
 *		drain_agent and forget_agent (src/agent_api.c) through these
 *		functions only, and which queues a login may serve (agent_access).
 *
 * Callers are connected to SPI and run as the extension's owner
 * (QsBeginSystemWrite).
 *
 *-------------------------------------------------------------------------
 */
#ifndef QS_FLEET_H
#define QS_FLEET_H

#include "datatype/timestamp.h"
#include "utils/jsonb.h"

extern int	QsMaxAgentLeaseSeconds;

/* What an agent says it can run (agent_ready), checked by the caller. */
typedef struct QsAgentOffer
{
	const char *queue;
	const char *unit;
	const int32 *instances;		/* NULL: no bound */
	Jsonb	   *labels;			/* a flat object of strings (host_checks.c) */
	const char *address;		/* NULL: the agent's name */
} QsAgentOffer;

extern void QsDefineFleetSettings(void);
extern Datum QsAgentReady(const char *agent, const char *login, bool admin,
						  const QsAgentOffer *offer);
extern bool QsAgentSeen(const char *agent, const char *login, Interval *lease);
extern bool QsAgentDraining(const char *agent);
extern Datum QsDrainAgent(const char *agent, bool draining);
extern Datum QsForgetAgent(const char *agent);
extern void QsRequireAgentAccess(Oid caller, const char *queue);

#endif							/* QS_FLEET_H */
