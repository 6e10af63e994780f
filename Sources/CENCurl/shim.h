#ifndef CENCURL_SHIM_H
#define CENCURL_SHIM_H
/* The type checks are GCC macros over curl_easy_setopt that a variable option defeats. */
#define CURL_DISABLE_TYPECHECK
#include <curl/curl.h>

/* Macros Swift does not import. */
static const long CENCURL_GLOBAL_DEFAULT = CURL_GLOBAL_DEFAULT;
static const CURLversion CENCURL_VERSION_NOW = CURLVERSION_NOW;

/* curl_easy_setopt and curl_easy_getinfo are variadic, which Swift cannot call: one typed
   function per argument type. */

typedef size_t (*cen_curl_write_callback)(char *data, size_t size, size_t count, void *context);

static inline CURLcode cen_curl_set_long(CURL *handle, CURLoption option, long value) {
    return curl_easy_setopt(handle, option, value);
}
static inline CURLcode cen_curl_set_size(CURL *handle, CURLoption option, curl_off_t value) {
    return curl_easy_setopt(handle, option, value);
}
static inline CURLcode cen_curl_set_string(CURL *handle, CURLoption option, const char *value) {
    return curl_easy_setopt(handle, option, value);
}
static inline CURLcode cen_curl_set_pointer(CURL *handle, CURLoption option, void *value) {
    return curl_easy_setopt(handle, option, value);
}
static inline CURLcode cen_curl_set_write_callback(CURL *handle, cen_curl_write_callback callback) {
    return curl_easy_setopt(handle, CURLOPT_WRITEFUNCTION, callback);
}
static inline CURLcode cen_curl_get_long(CURL *handle, CURLINFO info, long *value) {
    return curl_easy_getinfo(handle, info, value);
}
#endif
