#ifndef NIMBUS_CLIBPQ_SHIM_H
#define NIMBUS_CLIBPQ_SHIM_H

// Debian's libpq-dev puts the header in /usr/include/postgresql; naming it by that path lets the
// build work without pkg-config (absent on a fresh machine). pkg-config, when present, adds the
// same directory.
#if __has_include(<libpq-fe.h>)
#include <libpq-fe.h>
#else
#include <postgresql/libpq-fe.h>
#endif

// PG_DIAG_* are character-literal macros, which Swift does not import; export the ones we use.
static const int nimbus_PG_DIAG_SQLSTATE = PG_DIAG_SQLSTATE;
static const int nimbus_PG_DIAG_MESSAGE_PRIMARY = PG_DIAG_MESSAGE_PRIMARY;
static const int nimbus_PG_DIAG_MESSAGE_DETAIL = PG_DIAG_MESSAGE_DETAIL;

#endif
