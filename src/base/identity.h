/*-------------------------------------------------------------------------
 *
 * identity.h
 *		Whom the extension's code acts as, and for whom: the write context
 *		of the current transaction, the switch to the extension's owner and
 *		back, the admin test, and the version installed in this database
 *		(identity.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef QS_IDENTITY_H
#define QS_IDENTITY_H

/*
 * Write context of the current transaction.  Only the extension's own C code
 * sets these, around its own writes; they are reset at transaction end, so an
 * error cannot leave them set.  A user cannot forge them: they are not GUCs.
 */
typedef struct QsWriteContext
{
	bool		system_write;	/* the job trigger lets system columns change */
	int64		pass_id;		/* job_event.pass_id, 0 for none */
	const char *actor;			/* job_event.actor, NULL for the caller's role */
	bool		pass;			/* a pass writes (its own stripe of counters) */
	bool		has_exit_code;	/* job_event.exit_code of an attempt's end */
	int32		exit_code;
} QsWriteContext;

extern QsWriteContext QsWrite;

/* The caller's identity, saved while the extension writes as its owner. */
typedef struct QsSavedUser
{
	Oid			user;
	int			sec_context;
	int			guc_level;		/* of the pinned search_path */
} QsSavedUser;

extern void QsResetWriteContext(void);
extern Oid	QsExtensionOwner(void);
/* The version of the extension installed in this database (identity.c). */
typedef enum QsSchemaState
{
	QS_SCHEMA_NONE,				/* not installed */
	QS_SCHEMA_OWN,				/* the library's version */
	QS_SCHEMA_OTHER				/* another version */
} QsSchemaState;

/*
 * What QsCheckSchemaVersion raises: the library and the schema installed
 * are of different versions.  Of class 55 (object not in prerequisite
 * state), but not 55000, which the agents' protocol gives a meaning of its
 * own (the job is not this agent's: it forgets the job, doc/agents.md):
 * an agent, of any release, tries its call again after this one.
 */
#define ERRCODE_QS_SCHEMA_VERSION MAKE_SQLSTATE('5','5','Q','S','0')

extern char *QsInstalledVersion(void);
extern QsSchemaState QsInstalledSchema(char **version);
extern void QsCheckSchemaVersion(void);
extern void QsBeginSystemWrite(const char *actor, QsSavedUser *saved);
extern void QsEndSystemWrite(const QsSavedUser *saved);
extern bool QsIsAdmin(Oid role);
extern void QsBecomeOwner(Oid owner, QsSavedUser *saved);
extern void QsRestoreUser(const QsSavedUser *saved);

#endif							/* QS_IDENTITY_H */
