/*-------------------------------------------------------------------------
 *
 * rendezvous.h
 *		A multi-host job's rendezvous: attempt_started's port and job_peers
 *		(rendezvous.c).
 *
 * Callers are connected to SPI and run as the extension's owner
 * (QsBeginSystemWrite).
 *
 *-------------------------------------------------------------------------
 */
#ifndef QS_RENDEZVOUS_H
#define QS_RENDEZVOUS_H

#include "fmgr.h"
#include "funcapi.h"

/* the channel that wakes the agents waiting for a job's peers (payload: its id) */
#define QS_PEERS_CHANNEL "quota_sched_peers"

extern int32 QsPortArg(FunctionCallInfo fcinfo, int argno);
extern void QsGivePort(int64 job_id, int32 attempt, int32 rank, bool placed,
					   const char *agent, int32 port);
extern void QsJobPeers(ReturnSetInfo *rsinfo, int64 job_id, const char *agent, Oid caller);
extern void QsNotifyPeers(int64 job_id);

#endif							/* QS_RENDEZVOUS_H */
