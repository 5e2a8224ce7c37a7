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

// Macros Swift does not import (or imports with the wrong type).
static inline curl_version_info_data *nimbus_curl_version_info(void) { return curl_version_info(CURLVERSION_NOW); }
static const long nimbus_CURL_GLOBAL_DEFAULT = CURL_GLOBAL_DEFAULT;
static const long nimbus_CURLPIPE_MULTIPLEX = CURLPIPE_MULTIPLEX;
static const int nimbus_CURL_VERSION_HTTP2 = CURL_VERSION_HTTP2;
static const int nimbus_CURL_ERROR_SIZE = CURL_ERROR_SIZE;

#endif
