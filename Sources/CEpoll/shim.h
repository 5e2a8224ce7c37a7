#ifndef NIMBUS_CEPOLL_SHIM_H
#define NIMBUS_CEPOLL_SHIM_H

// Linux event notification headers that the toolchain's Glibc module does not export.
#include <sys/epoll.h>
#include <sys/eventfd.h>

#endif
