#ifndef CENZLIB_SHIM_H
#define CENZLIB_SHIM_H
#include <zlib.h>

/* inflateInit2 is a macro; Swift calls inflateInit2_ with these. */
static const char *const CENZLIB_VERSION = ZLIB_VERSION;
static const int CENZLIB_STREAM_SIZE = (int)sizeof(z_stream);
#endif
