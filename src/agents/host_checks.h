/*-------------------------------------------------------------------------
 *
 * host_checks.h
 *		The checks of an agent's labels and address (doc/agents.md,
 *		"Labels and address"), by the rules of src/core/host_labels.h: for
 *		agent_ready (22023) and for the CHECKs of quota_sched.agent (23514),
 *		one home for both.
 *
 *-------------------------------------------------------------------------
 */
#ifndef QS_HOST_CHECKS_H
#define QS_HOST_CHECKS_H

#include "utils/jsonb.h"

extern void QsCheckAgentLabels(Jsonb *labels, int sqlerrcode, const char *agent);
extern void QsCheckAgentAddress(const char *address, int sqlerrcode, const char *agent);

#endif							/* QS_HOST_CHECKS_H */
