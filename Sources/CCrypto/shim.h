#ifndef NIMBUS_CCRYPTO_SHIM_H
#define NIMBUS_CCRYPTO_SHIM_H

// OpenSSL 3's libcrypto (Debian's libssl-dev): PEM/PKCS#8 key parsing, ECDSA P-256 with SHA-256 through
// the EVP interface, and the DER <-> (r, s) conversion of ECDSA signatures. No EC_KEY (deprecated in 3.0).
#include <openssl/bio.h>
#include <openssl/bn.h>
#include <openssl/ecdsa.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/obj_mac.h>
#include <openssl/pem.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>

// Macros Swift does not import.
static const int nimbus_EVP_PKEY_EC = EVP_PKEY_EC;
// AES-256-GCM through EVP (NimbusKit's end-to-end encryption on Linux).
static const int nimbus_EVP_CTRL_GCM_SET_IVLEN = EVP_CTRL_GCM_SET_IVLEN;
static const int nimbus_EVP_CTRL_GCM_GET_TAG = EVP_CTRL_GCM_GET_TAG;
static const int nimbus_EVP_CTRL_GCM_SET_TAG = EVP_CTRL_GCM_SET_TAG;

#endif
