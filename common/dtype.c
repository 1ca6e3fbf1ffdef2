/* dtype.c — names of the logical column types (dtype.h). */
#include "common/dtype.h"

const char *zx_dtype_name(zx_dtype t)
{
    static const char *const names[ZX_DT__COUNT] = {
        "text", "int64", "double", "bool", "timestamp", "date", "decimal", "json", "bytes",
    };
    if ((unsigned)t >= ZX_DT__COUNT)
        return "unknown";
    return names[t];
}
