#ifndef NIMBUS_CCURL_SHIM_H
#define NIMBUS_CCURL_SHIM_H

// Debian's libcurl4-openssl-dev (libcurl built with OpenSSL and nghttp2): the header is found on the
// compiler's default path (multiarch include directory), with or without pkg-config.
#include <curl/curl.h>

// curl_easy_setopt, curl_multi_setopt and curl_easy_getinfo are variadic, which Swift cannot call;
// these wrappers fix the argument type per option kind (libcurl's option tables say which).
static inline CURLcode nimbus_curl_easy_setopt_long(CURL *handle, CURLoption option, long value) {
    return curl_easy_setopt(handle, option, value);
}
static inline CURLcode nimbus_curl_easy_setopt_offset(CURL *handle, CURLoption option, curl_off_t value) {
    return curl_easy_setopt(handle, option, value);
}
// For string options libcurl copies the string (except CURLOPT_POSTFIELDS, which is not used).
static inline CURLcode nimbus_curl_easy_setopt_string(CURL *handle, CURLoption option, const char *value) {
    return curl_easy_setopt(handle, option, value);
}
static inline CURLcode nimbus_curl_easy_setopt_pointer(CURL *handle, CURLoption option, void *value) {
    return curl_easy_setopt(handle, option, value);
}
static inline CURLcode nimbus_curl_easy_setopt_slist(CURL *handle, CURLoption option, struct curl_slist *value) {
    return curl_easy_setopt(handle, option, value);
}
static inline CURLcode nimbus_curl_easy_setopt_write_callback(CURL *handle, CURLoption option, curl_write_callback value) {
    return curl_easy_setopt(handle, option, value);
}
static inline CURLMcode nimbus_curl_multi_setopt_long(CURLM *multi, CURLMoption option, long value) {
    return curl_multi_setopt(multi, option, value);
}
static inline CURLcode nimbus_curl_easy_getinfo_long(CURL *handle, CURLINFO info, long *value) {
    return curl_easy_getinfo(handle, info, value);
}

// TCP_USER_TIMEOUT (tcp(7)) on each connection libcurl opens: the kernel drops a connection whose
// sent data (or keepalive probes) go unacknowledged this long, so a silently dead peer — a NAT that
// forgot the mapping, a black-holed route — fails its streams instead of stalling them for the
// kernel's ~15 minutes of retransmissions; libcurl then opens a new connection for the next request.
// The callback is C because libcurl calls it with the socket before connecting.
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdint.h>
#include <sys/socket.h>
#include <unistd.h>
static int nimbus_curl_sockopt_user_timeout(void *clientp, curl_socket_t fd, curlsocktype purpose) {
    unsigned int milliseconds = (unsigned int)(uintptr_t)clientp;
    if (purpose == CURLSOCKTYPE_IPCXN) {
        (void)setsockopt(fd, IPPROTO_TCP, TCP_USER_TIMEOUT, &milliseconds, sizeof milliseconds);
    }
    return CURL_SOCKOPT_OK;
}
static inline CURLcode nimbus_curl_easy_set_tcp_user_timeout(CURL *handle, unsigned int milliseconds) {
    CURLcode code = curl_easy_setopt(handle, CURLOPT_SOCKOPTFUNCTION, nimbus_curl_sockopt_user_timeout);
    if (code != CURLE_OK) return code;
    return curl_easy_setopt(handle, CURLOPT_SOCKOPTDATA, (void *)(uintptr_t)milliseconds);
}

// curl_multi_socket_action's bookkeeping (CurlDriver): the sockets libcurl asks to watch and its one
// timer, kept by libcurl's socket and timer callbacks (C: they run inside libcurl calls on the driver
// thread, which polls `fds`). With socket_action libcurl runs only the transfers of a ready socket and
// tells them it is ready, where curl_multi_perform has every running transfer poll its socket itself
// (a poll(2) per transfer per call: most of the client's CPU with 100 streams on one connection).
#include <poll.h>
#include <sys/eventfd.h>
#include <time.h>
#define NIMBUS_CURL_MAX_SOCKETS 256
typedef struct {
    // fds[0]: the driver's wake-up eventfd; fds[1...count]: libcurl's sockets.
    struct pollfd fds[NIMBUS_CURL_MAX_SOCKETS + 1];
    int count;
    // When libcurl's timer fires (CLOCK_MONOTONIC milliseconds), -1: no timer.
    long long deadline;
} nimbus_curl_watch;

static inline long long nimbus_monotonic_milliseconds(void) {
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (long long)now.tv_sec * 1000 + now.tv_nsec / 1000000;
}
static int nimbus_curl_socket_callback(CURL *easy, curl_socket_t socket, int what, void *userp, void *socketp) {
    (void)easy; (void)socketp;
    nimbus_curl_watch *watch = userp;
    int i = 1;
    while (i <= watch->count && watch->fds[i].fd != socket) i++;
    if (what == CURL_POLL_REMOVE) {
        if (i <= watch->count) { watch->fds[i] = watch->fds[watch->count]; watch->count--; }
        return 0;
    }
    if (i > watch->count) {
        if (watch->count >= NIMBUS_CURL_MAX_SOCKETS) return -1;
        watch->count++;
        watch->fds[i].fd = socket;
    }
    watch->fds[i].events = (short)(((what & CURL_POLL_IN) ? POLLIN : 0) | ((what & CURL_POLL_OUT) ? POLLOUT : 0));
    watch->fds[i].revents = 0;
    return 0;
}
static int nimbus_curl_timer_callback(CURLM *multi, long timeout, void *userp) {
    (void)multi;
    nimbus_curl_watch *watch = userp;
    watch->deadline = timeout < 0 ? -1 : nimbus_monotonic_milliseconds() + timeout;
    return 0;
}
// Points libcurl's socket and timer callbacks at `watch`, whose fds[0] becomes a new eventfd (-1 on failure).
static inline CURLMcode nimbus_curl_multi_watch(CURLM *multi, nimbus_curl_watch *watch) {
    watch->count = 0;
    watch->deadline = -1;
    watch->fds[0].fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    watch->fds[0].events = POLLIN;
    if (watch->fds[0].fd < 0) return CURLM_OUT_OF_MEMORY;
    CURLMcode code = curl_multi_setopt(multi, CURLMOPT_SOCKETFUNCTION, nimbus_curl_socket_callback);
    if (code == CURLM_OK) code = curl_multi_setopt(multi, CURLMOPT_SOCKETDATA, (void *)watch);
    if (code == CURLM_OK) code = curl_multi_setopt(multi, CURLMOPT_TIMERFUNCTION, nimbus_curl_timer_callback);
    if (code == CURLM_OK) code = curl_multi_setopt(multi, CURLMOPT_TIMERDATA, (void *)watch);
    return code;
}
static inline struct pollfd *nimbus_curl_watch_fds(nimbus_curl_watch *watch) { return watch->fds; }
static inline void nimbus_wakeup_signal(int fd) {
    uint64_t one = 1;
    (void)!write(fd, &one, sizeof one);
}
static inline void nimbus_wakeup_drain(int fd) {
    uint64_t count;
    (void)!read(fd, &count, sizeof count);
}
static const int nimbus_CURL_SOCKET_TIMEOUT = CURL_SOCKET_TIMEOUT;
static const int nimbus_CURL_CSELECT_IN = CURL_CSELECT_IN;
static const int nimbus_CURL_CSELECT_OUT = CURL_CSELECT_OUT;
static const int nimbus_CURL_CSELECT_ERR = CURL_CSELECT_ERR;

// Macros Swift does not import (or imports with the wrong type).
static inline curl_version_info_data *nimbus_curl_version_info(void) { return curl_version_info(CURLVERSION_NOW); }
static const long nimbus_CURL_GLOBAL_DEFAULT = CURL_GLOBAL_DEFAULT;
static const long nimbus_CURLPIPE_MULTIPLEX = CURLPIPE_MULTIPLEX;
static const int nimbus_CURL_VERSION_HTTP2 = CURL_VERSION_HTTP2;
static const int nimbus_CURL_ERROR_SIZE = CURL_ERROR_SIZE;

#endif
