/*-------------------------------------------------------------------------
 *
 * config_cache.h
 *		The backend-local cache of the configuration a submission is
 *		checked against.
 *
 *-------------------------------------------------------------------------
 */
#ifndef QS_CONFIG_CACHE_H
#define QS_CONFIG_CACHE_H

#include "utils/jsonb.h"

typedef struct QsSubmitTarget
{
	bool		queue_enabled;
	bool		share_found;	/* the queue has a share of that name */
	bool		share_enabled;
	char	   *submit_role;	/* NULL: anyone with the user role */
	Jsonb	   *env_limits;		/* the environment's capacity map */
	bool		remembers_borrowing;	/* the queue has a fair_half_life */
} QsSubmitTarget;

extern void QsRegisterConfigCache(void);
extern bool QsIsConfigTable(Oid relid);
extern uint64 QsConfigGeneration(void);
extern void QsRememberConfigTables(void);
extern const QsSubmitTarget *QsFindSubmitTarget(const char *queue, const char *share);
extern const QsSubmitTarget *QsLookupSubmitTarget(const char *queue, const char *share);

#endif							/* QS_CONFIG_CACHE_H */
