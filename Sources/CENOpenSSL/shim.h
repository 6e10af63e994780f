#ifndef CENOPENSSL_SHIM_H
#define CENOPENSSL_SHIM_H
#include <openssl/crypto.h>
#include <openssl/core_names.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/params.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/rand.h>

/* OSSL_PARAM names are macros, which Swift does not import. */
static const char *const CENOPENSSL_PARAM_DIGEST = OSSL_MAC_PARAM_DIGEST;
#endif
