/*
 * httpclient.h: the small HTTP/1.1 client shared by the load programs (bench/recload.c,
 * bench/pruneload.c, bench/lpwait.c, bench/holdconn.c, Tests/soak/nmcheck.c).
 *
 * Header-only (static inline), so that every program still compiles on its own, as the scripts
 * do it: `cc -O2 [-pthread] -o PROGRAM PROGRAM.c`. Define _GNU_SOURCE before the first #include
 * (memmem). Loopback benchmarking only: plain TCP, responses framed by Content-Length or chunked
 * (no trailers), no redirects, no TLS.
 *
 *   http_connect(host, port, timeout_s)   TCP connection (TCP_NODELAY, SO_RCVTIMEO/SO_SNDTIMEO set
 *                                         before connect, so connect is bounded too); -1 and errno
 *   http_send_all(fd, data, n)            0, or -1 and errno (EINTR is retried)
 *   http_post_head(out, cap, path, host, port, token, n)
 *                                         the head of a POST with an n-byte JSON body and a bearer
 *                                         token; returns its length (snprintf's: >= cap = cut)
 *   http_parse_head(buf, len, &head)      1 when buf holds a whole response head (status, framing,
 *                                         Connection: close), 0 not yet, -1 not an HTTP/1.x answer
 *   http_chunked_end(buf, len, start, &end)  1 when the chunked body from start is complete (end:
 *                                         just past it), else 0
 *   http_dechunk(buf, len, start, out)    copies the data of the complete chunks; returns its size
 *   http_read_response(conn, &status, &close)   blocking: one whole response into conn->body
 *   http_exchange(conn, request, n)       send + read on conn->fd; the status, or -1 after closing
 *                                         the connection (socket fault); closes it after
 *                                         Connection: close too (conn->fd is then -1)
 */
#ifndef NIMBUS_BENCH_HTTPCLIENT_H
#define NIMBUS_BENCH_HTTPCLIENT_H

#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/types.h>
#include <unistd.h>

static inline int http_connect(const char *host, int port, int timeout_seconds) {
    struct addrinfo hints = {0}, *res = NULL;
    char portstr[16];
    snprintf(portstr, sizeof portstr, "%d", port);
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    if (getaddrinfo(host, portstr, &hints, &res) != 0 || !res) return -1;
    int fd = socket(res->ai_family, SOCK_STREAM, 0);
    if (fd < 0) { freeaddrinfo(res); return -1; }
    struct timeval tv = {.tv_sec = timeout_seconds, .tv_usec = 0};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    if (connect(fd, res->ai_addr, res->ai_addrlen) != 0) {
        int saved = errno;
        close(fd);
        freeaddrinfo(res);
        errno = saved;
        return -1;
    }
    freeaddrinfo(res);
    return fd;
}

static inline int http_send_all(int fd, const void *data, size_t n) {
    const char *p = data;
    while (n > 0) {
        ssize_t w = send(fd, p, n, MSG_NOSIGNAL);
        if (w < 0) { if (errno == EINTR) continue; return -1; }
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

static inline int http_post_head(char *out, size_t cap, const char *path, const char *host, int port, const char *token,
                                 size_t length) {
    return snprintf(out, cap,
                    "POST %s HTTP/1.1\r\nHost: %s:%d\r\nAuthorization: Bearer %s\r\nContent-Type: application/json\r\n"
                    "Content-Length: %zu\r\n\r\n",
                    path, host, port, token, length);
}

/* ------------------------------------------------------------------ parsing */

typedef struct {
    size_t head_len;      /* bytes up to and including the blank line */
    int status;
    long content_length;  /* -1 when absent */
    int chunked;          /* Transfer-Encoding: chunked */
    int close;            /* Connection: close */
} http_head;

static inline int http_parse_head(const char *buf, size_t len, http_head *h) {
    const char *end = len ? memmem(buf, len, "\r\n\r\n", 4) : NULL;
    if (!end) return 0;
    if (len < 12 || memcmp(buf, "HTTP/1.", 7) != 0) return -1;
    h->head_len = (size_t)(end - buf) + 4;
    h->status = atoi(buf + 9);
    h->content_length = -1;
    h->chunked = 0;
    h->close = 0;
    /* The header lines (the status line matches none of the names), case-insensitively. */
    for (const char *line = buf; line < end;) {
        const char *eol = memmem(line, (size_t)(end + 2 - line), "\r\n", 2);
        if (!eol) break;
        size_t n = (size_t)(eol - line);
        if (n > 15 && strncasecmp(line, "content-length:", 15) == 0) h->content_length = strtol(line + 15, NULL, 10);
        else if (n > 18 && strncasecmp(line, "transfer-encoding:", 18) == 0 && memmem(line, n, "chunked", 7)) h->chunked = 1;
        else if (n > 11 && strncasecmp(line, "connection:", 11) == 0 && memmem(line, n, "close", 5)) h->close = 1;
        line = eol + 2;
    }
    return 1;
}

/* The size on the chunk-size line [p, eol) (hex digits; an extension after ';' is ignored). */
static inline size_t http_chunk_size(const char *p, const char *eol) {
    size_t size = 0;
    for (; p < eol; p++) {
        int c = *p, d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
        if (d < 0) break;
        size = size * 16 + (size_t)d;
    }
    return size;
}

static inline int http_chunked_end(const char *buf, size_t len, size_t start, size_t *end) {
    size_t p = start;
    for (;;) {
        const char *eol = p < len ? memmem(buf + p, len - p, "\r\n", 2) : NULL;
        if (!eol) return 0;
        size_t size = http_chunk_size(buf + p, eol);
        size_t data = (size_t)(eol - buf) + 2;
        if (size == 0) {
            if (len < data + 2) return 0;
            *end = data + 2;
            return 1;
        }
        if (len < data + size + 2) return 0;
        p = data + size + 2;
    }
}

static inline size_t http_dechunk(const char *buf, size_t len, size_t start, char *out) {
    size_t p = start, n = 0;
    for (;;) {
        const char *eol = p < len ? memmem(buf + p, len - p, "\r\n", 2) : NULL;
        if (!eol) break;
        size_t size = http_chunk_size(buf + p, eol);
        size_t data = (size_t)(eol - buf) + 2;
        if (size == 0 || data + size > len) break;
        memcpy(out + n, buf + data, size);
        n += size;
        p = data + size + 2;
    }
    return n;
}

/* ------------------------------------------------------------------ blocking connection */

typedef struct {
    int fd;                               /* -1 when not connected */
    char *buf; size_t bufcap, buflen;     /* bytes read and not consumed yet */
    char *body; size_t bodycap, bodylen;  /* the last response's body, de-chunked, NUL-terminated */
    long long bytes_in;                   /* bytes received, all responses */
    const char *error;                    /* why the last http_read_response failed */
} http_conn;

static inline void http_grow(char **p, size_t *cap, size_t need) {
    if (need <= *cap) return;
    size_t n = *cap ? *cap : 4096;
    while (n < need) n *= 2;
    *p = realloc(*p, n);
    if (!*p) { perror("realloc"); exit(2); }
    *cap = n;
}

/* Reads everything a non-blocking socket has now into a growing buffer (room for a NUL kept):
 * 0 when nothing more is there yet, 1 when the peer closed, -1 on an error (epoll-driven readers). */
static inline int http_recv_available(int fd, char **buf, size_t *len, size_t *cap) {
    for (;;) {
        http_grow(buf, cap, *len + 4096);
        ssize_t r = recv(fd, *buf + *len, *cap - *len - 1, MSG_DONTWAIT);
        if (r > 0) { *len += (size_t)r; continue; }
        if (r == 0) return 1;
        if (errno == EINTR) continue;
        if (errno == EAGAIN || errno == EWOULDBLOCK) return 0;
        return -1;
    }
}

/* Reads more bytes into c->buf; returns bytes read, 0 on EOF, -1 on error (c->error says which). */
static inline ssize_t http_fill(http_conn *c) {
    http_grow(&c->buf, &c->bufcap, c->buflen + 65536);
    for (;;) {
        ssize_t r = recv(c->fd, c->buf + c->buflen, c->bufcap - c->buflen, 0);
        if (r < 0 && errno == EINTR) continue;
        if (r > 0) { c->buflen += (size_t)r; c->bytes_in += r; }
        else if (r == 0) c->error = "closed by server before a full response";
        else c->error = errno == EAGAIN || errno == EWOULDBLOCK ? "timed out waiting for the response" : strerror(errno);
        return r;
    }
}

/* One whole response: *status, *close_after (Connection: close) and the body in c->body; the bytes
 * after it stay in c->buf. Returns 0, or -1 on a socket fault or an answer that is not HTTP/1.x. */
static inline int http_read_response(http_conn *c, int *status, int *close_after) {
    http_head h;
    int r;
    while ((r = http_parse_head(c->buf, c->buflen, &h)) == 0) {
        if (http_fill(c) <= 0) return -1;
    }
    if (r < 0) { c->error = "bad status line"; return -1; }
    *status = h.status;
    *close_after = h.close;
    size_t end;
    if (h.chunked) {
        while (!http_chunked_end(c->buf, c->buflen, h.head_len, &end)) {
            if (http_fill(c) <= 0) return -1;
        }
        http_grow(&c->body, &c->bodycap, end - h.head_len + 1);
        c->bodylen = http_dechunk(c->buf, end, h.head_len, c->body);
    } else {
        size_t n = h.content_length > 0 ? (size_t)h.content_length : 0;
        while (c->buflen - h.head_len < n) {
            if (http_fill(c) <= 0) return -1;
        }
        http_grow(&c->body, &c->bodycap, n + 1);
        memcpy(c->body, c->buf + h.head_len, n);
        c->bodylen = n;
        end = h.head_len + n;
    }
    c->body[c->bodylen] = 0;
    memmove(c->buf, c->buf + end, c->buflen - end);
    c->buflen -= end;
    return 0;
}

static inline void http_close(http_conn *c) {
    int saved = errno;
    if (c->fd >= 0) close(c->fd);
    c->fd = -1;
    c->buflen = 0;
    errno = saved;
}

static inline int http_exchange(http_conn *c, const char *request, size_t n) {
    int status = 0, close_after = 0;
    errno = 0;
    if (http_send_all(c->fd, request, n) != 0 || http_read_response(c, &status, &close_after) != 0) {
        http_close(c);
        return -1;
    }
    if (close_after) http_close(c);
    return status;
}

#endif
