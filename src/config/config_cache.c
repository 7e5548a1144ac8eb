/*-------------------------------------------------------------------------
 *
 * config_cache.c
 *		A backend-local cache of what a submission is checked against: the
 *		queue, the share and the environment's capacity map, by (queue,
 *		share).  It saves the submit path a query per INSERT.
 *
 * Statement triggers on the three configuration tables send a relcache
 * invalidation of the changed table at commit (pg_cron does the same); the
 * callback registered here empties the cache when it sees one, in every
 * backend, and in the changing backend at the end of the statement.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/namespace.h"
#include "commands/trigger.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/datum.h"
#include "utils/hsearch.h"
#include "utils/inval.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"

#include "config_cache.h"
#include "config_store.h"
#include "identity.h"
#include "launcher.h"
#include "query.h"
#include "constants.h"

PG_FUNCTION_INFO_V1(qs_config_changed);

/* room for a valid name and its terminator (longer ones are not cached) */
#define QS_NAME_BUF (QS_MAX_NAME_LEN + 1)

typedef struct SubmitTargetKey
{
	char		queue[QS_NAME_BUF];
	char		share[QS_NAME_BUF];
} SubmitTargetKey;

typedef struct SubmitTargetEntry
{
	SubmitTargetKey	key;
	QsSubmitTarget target;
} SubmitTargetEntry;

static HTAB *targets = NULL;

/* How many invalidations of the configuration this backend has seen. */
static uint64 config_generation = 0;
static MemoryContext cache_cxt = NULL;

/*
 * ConfigInvalidate empties the cache, and counts a new configuration
 * generation, on any relcache invalidation of a quota_sched configuration
 * table (or of all relations).  No catalog access here: the callback may
 * run at any time, so it drops everything.
 */
static void
ConfigInvalidate(Datum arg, Oid relid)
{
	if (OidIsValid(relid) && !QsIsConfigTable(relid))
		return;
	config_generation++;
	if (targets == NULL)
		return;
	hash_destroy(targets);
	targets = NULL;
	MemoryContextReset(cache_cxt);
}

static Oid	config_relids[3];


/*
 * QsConfigGeneration changes whenever this backend sees an invalidation of
 * a configuration table (once QsRememberConfigTables has run): the worker
 * lists the queues again only then.
 */
uint64
QsConfigGeneration(void)
{
	return config_generation;
}

/*
 * QsIsConfigTable tells whether a relation is one of the configuration
 * tables, as last seen by QsLookupSubmitTarget.
 */
bool
QsIsConfigTable(Oid relid)
{
	for (int i = 0; i < 3; i++)
		if (config_relids[i] == relid)
			return true;
	return false;
}

/*
 * QsRegisterConfigCache registers the invalidation callback (at load).
 */
void
QsRegisterConfigCache(void)
{
	CacheRegisterRelcacheCallback(ConfigInvalidate, (Datum) 0);
}

/*
 * QsRememberConfigTables looks up the configuration tables, so that their
 * invalidations are recognised.  The caller is in a transaction.
 */
void
QsRememberConfigTables(void)
{
	Oid			nsp = get_namespace_oid(QS_SCHEMA, false);

	config_relids[0] = get_relname_relid("service_environment", nsp);
	config_relids[1] = get_relname_relid("job_queue", nsp);
	config_relids[2] = get_relname_relid("quota_share", nsp);
}

/*
 * LoadTarget reads the configuration of (queue, share) from the
 * configuration store, in the active snapshot, into the current memory
 * context.  Returns false when the queue does not exist.
 */
static bool
LoadTarget(const char *queue, const char *share, QsSubmitTarget *target)
{
	QsConfigRead how = {NULL, true};
	QsQueueConfig config;
	QsEnvironmentConfig environment;
	QsShareConfig share_config;

	if (!QsReadSubmitConfig(queue, share, how, &config, &environment, &share_config,
							&target->share_found))
		return false;
	target->queue_enabled = config.enabled;
	target->share_enabled = target->share_found && share_config.policy.enabled;
	target->submit_role = target->share_found ? share_config.submit_role : NULL;
	target->env_limits = environment.capacity_limits;
	target->remembers_borrowing = config.fair_half_life != NULL;
	return true;
}

/* CopyTarget copies a target into the cache's memory. */
static QsSubmitTarget
CopyTarget(const QsSubmitTarget *target)
{
	MemoryContext old = MemoryContextSwitchTo(cache_cxt);
	QsSubmitTarget copy = *target;

	copy.submit_role = target->submit_role ? pstrdup(target->submit_role) : NULL;
	copy.env_limits = (Jsonb *) datumCopy(JsonbPGetDatum(target->env_limits), false, -1);
	MemoryContextSwitchTo(old);
	return copy;
}

/*
 * MakeKey fills the cache key of (queue, share); false when a name is too
 * long to be valid (such lookups are never cached).
 */
static bool
MakeKey(const char *queue, const char *share, SubmitTargetKey *key)
{
	if (strlen(queue) >= QS_NAME_BUF || strlen(share) >= QS_NAME_BUF)
		return false;
	memset(key, 0, sizeof(*key));
	strlcpy(key->queue, queue, QS_NAME_BUF);
	strlcpy(key->share, share, QS_NAME_BUF);
	return true;
}

/*
 * QsFindSubmitTarget returns the cached configuration of (queue, share), or
 * NULL when it is not cached.  No catalog or table access.
 */
const QsSubmitTarget *
QsFindSubmitTarget(const char *queue, const char *share)
{
	SubmitTargetKey key;
	SubmitTargetEntry *entry;

	if (targets == NULL || !MakeKey(queue, share, &key))
		return NULL;
	entry = hash_search(targets, &key, HASH_FIND, NULL);
	return entry ? &entry->target : NULL;
}

/*
 * QsLookupSubmitTarget returns the configuration a job submitted to
 * (queue, share) is checked against, reading and caching it when needed, or
 * NULL when the queue does not exist.  The caller is connected to SPI, as a
 * role that may read the tables, with a pinned search_path.  Only existing
 * shares are cached, so that made-up names cannot grow the cache; the
 * answer about any other is in the current memory context.
 */
const QsSubmitTarget *
QsLookupSubmitTarget(const char *queue, const char *share)
{
	SubmitTargetKey key;
	SubmitTargetEntry *entry;
	const QsSubmitTarget *found;
	static QsSubmitTarget uncached;
	QsSubmitTarget target;
	bool		present;

	if ((found = QsFindSubmitTarget(queue, share)) != NULL)
		return found;
	if (cache_cxt == NULL)
		cache_cxt = AllocSetContextCreate(TopMemoryContext, "quota_sched config cache",
										  ALLOCSET_SMALL_SIZES);
	if (!LoadTarget(queue, share, &target))
		return NULL;
	if (!target.share_found || !MakeKey(queue, share, &key))
	{
		uncached = target;
		return &uncached;
	}
	if (targets == NULL)
	{
		HASHCTL		ctl;

		QsRememberConfigTables();
		ctl.keysize = sizeof(SubmitTargetKey);
		ctl.entrysize = sizeof(SubmitTargetEntry);
		ctl.hcxt = cache_cxt;
		targets = hash_create("quota_sched submit targets", 64, &ctl,
							  HASH_ELEM | HASH_BLOBS | HASH_CONTEXT);
	}
	entry = hash_search(targets, &key, HASH_ENTER, &present);
	entry->target = CopyTarget(&target);
	return &entry->target;
}

/*
 * qs_config_changed is the statement trigger of the configuration tables:
 * it sends, at commit, a relcache invalidation of the changed table, so
 * that every backend drops its cached configuration.
 */
Datum
qs_config_changed(PG_FUNCTION_ARGS)
{
	TriggerData *td = (TriggerData *) fcinfo->context;

	QsCheckSchemaVersion();
	if (!CALLED_AS_TRIGGER(fcinfo))
		elog(ERROR, "quota_sched: config_changed: not called as a trigger");
	CacheInvalidateRelcacheByRelid(RelationGetRelid(td->tg_relation));
	QsWakeWorkerAtCommit();
	return PointerGetDatum(NULL);
}
