/*-------------------------------------------------------------------------
 *
 * jsonb_util.h
 *		Small jsonb helpers shared by the validation, the submit trigger
 *		and the snapshot loader.
 *
 *-------------------------------------------------------------------------
 */
#ifndef QS_JSONB_UTIL_H
#define QS_JSONB_UTIL_H

#include "utils/jsonb.h"

extern JsonbValue *QsJsonbField(JsonbContainer *container, const char *key);

#endif							/* QS_JSONB_UTIL_H */
