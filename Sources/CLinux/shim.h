#ifndef NIMBUS_CLINUX_SHIM_H
#define NIMBUS_CLINUX_SHIM_H

// Linux and glibc headers that the toolchain's Glibc module does not export: event
// notification (epoll, eventfd) and the allocator's tuning (mallopt).
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <malloc.h>

#endif
