#ifndef CENOPENSSL_SHIM_H
#define CENOPENSSL_SHIM_H
/* SHA256_Transform (deprecated in 3.0, still supported) is the compression function that
   HKDF is built on in ENCore: it lets pads be computed once and reused. */
#define OPENSSL_SUPPRESS_DEPRECATED
#include <openssl/crypto.h>
#include <openssl/core_names.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/params.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/rand.h>
#include <openssl/sha.h>

/* OSSL_PARAM names are macros, which Swift does not import. */
static const char *const CENOPENSSL_PARAM_DIGEST = OSSL_MAC_PARAM_DIGEST;
#endif
