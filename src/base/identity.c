/*-------------------------------------------------------------------------
 *
 * identity.c
 *		Whom the extension's code acts as (identity.h): the per-transaction
 *		write context, the switch to the extension's owner with a pinned
 *		search_path and back, the admin test, and the installed version of
 *		the extension checked against the library's.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/htup_details.h"
#include "access/table.h"
#include "catalog/namespace.h"
#include "catalog/pg_class.h"
#include "catalog/pg_extension.h"
#include "commands/extension.h"
#include "miscadmin.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/inval.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/syscache.h"

#include "identity.h"
#include "version.h"
#include "constants.h"

QsWriteContext QsWrite;

/*
 * QsResetWriteContext clears the write context: nothing is a system write
 * until the extension's own code says so again.
 */
void
QsResetWriteContext(void)
{
	QsWrite.system_write = false;
	QsWrite.pass_id = 0;
	QsWrite.actor = NULL;
	QsWrite.pass = false;
	QsWrite.has_exit_code = false;
	QsWrite.exit_code = 0;
}

/*
 * QsExtensionOwner returns the owner of the extension's tables (that of
 * quota_sched.job), as whom the extension writes.
 */
Oid
QsExtensionOwner(void)
{
	Oid			relid = get_relname_relid("job", get_namespace_oid(QS_SCHEMA, false));
	HeapTuple	tup;
	Oid			owner;

	if (!OidIsValid(relid))
		elog(ERROR, "quota_sched: table quota_sched.job is missing");
	tup = SearchSysCache1(RELOID, ObjectIdGetDatum(relid));
	if (!HeapTupleIsValid(tup))
		elog(ERROR, "quota_sched: cache lookup failed for relation %u", relid);
	owner = ((Form_pg_class) GETSTRUCT(tup))->relowner;
	ReleaseSysCache(tup);
	return owner;
}

/*
 * QsInstalledVersion returns the version of the extension installed in this
 * database (palloc'd), or NULL when it is not installed.
 */
char *
QsInstalledVersion(void)
{
	Oid			ext = get_extension_oid("quota_sched", true);
	Relation	rel;
	SysScanDesc scan;
	ScanKeyData key;
	HeapTuple	tup;
	char	   *version = NULL;

	if (!OidIsValid(ext))
		return NULL;
	rel = table_open(ExtensionRelationId, AccessShareLock);
	ScanKeyInit(&key, Anum_pg_extension_oid, BTEqualStrategyNumber, F_OIDEQ,
				ObjectIdGetDatum(ext));
	scan = systable_beginscan(rel, ExtensionOidIndexId, true, NULL, 1, &key);
	if (HeapTupleIsValid(tup = systable_getnext(scan)))
	{
		bool		isnull;
		Datum		v = heap_getattr(tup, Anum_pg_extension_extversion,
									 RelationGetDescr(rel), &isnull);

		if (!isnull)
			version = TextDatumGetCString(v);
	}
	systable_endscan(scan);
	table_close(rel, AccessShareLock);
	return version;
}

/*
 * One library serves one schema (doc/releasing.md): the version installed
 * in this database must be the library's.  Once found so, a backend keeps
 * that answer (schema_is_own) until pg_extension changes (an ALTER
 * EXTENSION, a DROP and CREATE), whose invalidation clears it: the check at
 * every call of the library is then one test of a flag.
 */
static bool schema_is_own = false;
static bool schema_callback_set = false;

static void
ForgetSchemaVersion(Datum arg, int cacheid, uint32 hashvalue)
{
	schema_is_own = false;
}

/*
 * QsInstalledSchema tells whether quota_sched is installed in this
 * database (QS_SCHEMA_NONE), in the library's version (QS_SCHEMA_OWN) or
 * in another (QS_SCHEMA_OTHER, *version set to it, palloc'd).
 */
QsSchemaState
QsInstalledSchema(char **version)
{
	char	   *installed;

	*version = NULL;
	if (likely(schema_is_own))
		return QS_SCHEMA_OWN;
	if (!schema_callback_set)
	{
		/* before the catalog is read: a change after it then clears the flag */
		CacheRegisterSyscacheCallback(EXTENSIONOID, ForgetSchemaVersion, (Datum) 0);
		schema_callback_set = true;
	}
	installed = QsInstalledVersion();
	if (installed == NULL)
		return QS_SCHEMA_NONE;
	if (strcmp(installed, QS_LIBRARY_VERSION) == 0)
	{
		schema_is_own = true;
		return QS_SCHEMA_OWN;
	}
	*version = installed;
	return QS_SCHEMA_OTHER;
}

/*
 * QsCheckSchemaVersion is the check every SQL-callable function and
 * trigger of the library makes first: it refuses (55QS0) to run on a
 * schema of another version than the library's, saying what to do.  With
 * the library preloaded, a new build takes effect at the restart, and
 * until ALTER EXTENSION quota_sched UPDATE the database still has the old
 * schema: nothing of the library runs there, but the update itself (the
 * extension's scripts call its functions, and fire its triggers).
 */
void
QsCheckSchemaVersion(void)
{
	char	   *version;

	if (likely(QsInstalledSchema(&version) != QS_SCHEMA_OTHER))
		return;
	if (creating_extension && CurrentExtensionObject == get_extension_oid("quota_sched", true))
		return;
	ereport(ERROR,
			(errcode(ERRCODE_QS_SCHEMA_VERSION),
			 errmsg("quota_sched %s is installed in this database, but its library is version %s",
					version, QS_LIBRARY_VERSION),
			 errdetail("The library of quota_sched runs only on the schema of its own version."),
			 QsCompareVersions(version, QS_LIBRARY_VERSION) < 0 ?
			 errhint("Run ALTER EXTENSION quota_sched UPDATE.") :
			 errhint("Install the library of quota_sched %s and restart the server.", version)));
}

/*
 * QsBecomeOwner saves the caller's identity and becomes the given owner of
 * the extension's tables, with search_path pinned to pg_catalog, pg_temp
 * for as long: what runs as the owner must never resolve a name, type or
 * operator through a path the caller chose.
 */
void
QsBecomeOwner(Oid owner, QsSavedUser *saved)
{
	GetUserIdAndSecContext(&saved->user, &saved->sec_context);
	SetUserIdAndSecContext(owner, saved->sec_context | SECURITY_LOCAL_USERID_CHANGE);
	saved->guc_level = NewGUCNestLevel();
	(void) set_config_option("search_path", "pg_catalog, pg_temp", PGC_USERSET,
							 PGC_S_SESSION, GUC_ACTION_SAVE, true, 0, false);
}

/*
 * QsRestoreUser undoes QsBecomeOwner.  (An error instead rolls both back
 * with the (sub)transaction.)
 */
void
QsRestoreUser(const QsSavedUser *saved)
{
	AtEOXact_GUC(true, saved->guc_level);
	SetUserIdAndSecContext(saved->user, saved->sec_context);
}

/*
 * QsBeginSystemWrite becomes the extension's owner (QsBecomeOwner) and
 * marks the writes that follow as the system's, with the actor job_event
 * records.  The caller must take whatever it needs of its own identity
 * (GetUserId()) before.
 */
void
QsBeginSystemWrite(const char *actor, QsSavedUser *saved)
{
	QsBecomeOwner(QsExtensionOwner(), saved);
	QsWrite.system_write = true;
	QsWrite.actor = actor;
}

/*
 * QsEndSystemWrite undoes QsBeginSystemWrite.
 */
void
QsEndSystemWrite(const QsSavedUser *saved)
{
	QsResetWriteContext();
	QsRestoreUser(saved);
}

/*
 * QsIsAdmin tells whether a role is a superuser or has the privileges of
 * quota_sched_admin.
 */
bool
QsIsAdmin(Oid role)
{
	Oid			admin = get_role_oid("quota_sched_admin", true);

	return superuser_arg(role) || (OidIsValid(admin) && has_privs_of_role(role, admin));
}
