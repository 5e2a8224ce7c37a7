/*
 * lpwait: long-poll load helper for bench/longpoll.sh (compiled at run time with cc or clang).
 * One thread, epoll, HTTP/1.1 keep-alive connections to 127.0.0.1.
 *
 *   lpwait park HOST PORT FILE CHANGES_PATH
 *       One connection per line of FILE (`WAITER_TOKEN WRITER_TOKEN ZONE`), each sending one
 *       records/changes POST {"zoneID":{"zoneName":ZONE},"wait":55} with its waiter token, then
 *       waiting for the answer's headers (200, chunked: the request is parked). Prints
 *           parked N failed F non200 X ms T
 *           ready
 *       then holds every connection until a line arrives on standard input (or it closes), and
 *       prints
 *           held H answered A closed C
 *       (answered: a complete answer came during the hold; closed: the server closed it).
 *
 *   lpwait wake WAIT_HOST WAIT_PORT WRITE_HOST WRITE_PORT FILE CHANGES_PATH MODIFY_PATH MODE COUNT
 *       Parks one waiter per line of FILE on WAIT_HOST:WAIT_PORT (as `park`), then writes through
 *       WRITE_HOST:WRITE_PORT on one keep-alive connection, with the line's writer token:
 *         single  COUNT writes, one at a time: write k creates record w-k in the zone of waiter
 *                 k % N, then waits for that waiter's answer (which must carry w-k), re-parks it
 *                 with the answer's syncToken, and goes on with the next write;
 *         fanout  COUNT rounds: every line names the same zone; one write per round must answer
 *                 all N waiters (each with the record); all re-park before the next round.
 *       For every woken waiter two samples: send→answer (from just before the write request is
 *       sent until the waiter's answer is complete) and ack→answer (from when the write's own
 *       answer was complete; the commit happens between the two, so the truth lies between).
 *       Prints
 *           parked N failed F non200 X ms T
 *           samples S wrong W other O timeouts Q errors E ms T
 *           send p50 X p90 X p99 X max X
 *           ack p50 X p90 X p99 X max X
 *       in milliseconds; wrong: an answer without the written record; other: a waiter answered
 *       with records that no write of the moment concerned; timeouts: empty answers (wait over).
 *
 * Loopback benchmarking only; bounded in count and time. Errors (first of each kind) go to stderr.
 * HTTP: bench/httpclient.h (connections, request heads, response parsing; the reading is epoll's).
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "httpclient.h"

enum { NEW, SENT, PARKED, ANSWERED, DEAD };

struct conn {
    int fd;
    int state;
    int index;        /* line number, or -1 for the writer */
    char *buf;
    size_t len, cap;
    size_t body_start; /* 0 until the headers are complete */
    int status;
    int chunked;
    long content_length;
    char *token;      /* the waiter's current syncToken (malloc), NULL before the first answer */
    double answered_at;
};

static struct {
    char **waiter_token, **writer_token, **zone;
    int n;
} lines;

static const char *changes_path, *modify_path;
static const char *host_name;  /* the Host header of the requests sent next: host_name:host_port */
static int host_port;
static int epfd;
static struct conn *waiters;
static struct conn writer;
static int errors_reported;

static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static void complain(const char *fmt, ...) {
    if (errors_reported >= 8) return;
    errors_reported++;
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "lpwait: ");
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\n");
    va_end(ap);
}

static void raise_nofile(long want) {
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) != 0) return;
    if ((long)rl.rlim_cur >= want) return;
    if ((long)rl.rlim_max < want) {
        rl.rlim_max = want; /* only works as root */
        rl.rlim_cur = want;
        if (setrlimit(RLIMIT_NOFILE, &rl) == 0) return;
        getrlimit(RLIMIT_NOFILE, &rl);
    }
    rl.rlim_cur = rl.rlim_max;
    setrlimit(RLIMIT_NOFILE, &rl);
}

static void read_lines(const char *path) {
    FILE *f = fopen(path, "r");
    if (!f) { perror(path); exit(2); }
    char line[4096];
    int cap = 1024;
    lines.waiter_token = malloc(cap * sizeof(char *));
    lines.writer_token = malloc(cap * sizeof(char *));
    lines.zone = malloc(cap * sizeof(char *));
    while (fgets(line, sizeof line, f)) {
        char a[1024], b[1024], c[1024];
        if (sscanf(line, "%1023s %1023s %1023s", a, b, c) != 3) continue;
        if (lines.n == cap) {
            cap *= 2;
            lines.waiter_token = realloc(lines.waiter_token, cap * sizeof(char *));
            lines.writer_token = realloc(lines.writer_token, cap * sizeof(char *));
            lines.zone = realloc(lines.zone, cap * sizeof(char *));
        }
        lines.waiter_token[lines.n] = strdup(a);
        lines.writer_token[lines.n] = strdup(b);
        lines.zone[lines.n] = strdup(c);
        lines.n++;
    }
    fclose(f);
    if (lines.n == 0) { fprintf(stderr, "lpwait: no lines in %s\n", path); exit(2); }
}

static int connect_to(const char *host, int port) {
    struct in_addr a;
    if (inet_pton(AF_INET, host, &a) != 1) { fprintf(stderr, "lpwait: bad host %s\n", host); exit(2); }
    return http_connect(host, port, 5); /* bounds connect(); reads here never block (MSG_DONTWAIT) */
}

static int parked_count, failed_count, non200_count, in_flight;

/* Moves a waiter to a state, keeping the counts of parked and in-flight waiters. */
static void set_state(struct conn *c, int state) {
    if (c->state == SENT) in_flight--;
    if (c->state == PARKED) parked_count--;
    c->state = state;
    if (state == SENT) in_flight++;
    if (state == PARKED) parked_count++;
}

static void drop(struct conn *c) {
    set_state(c, DEAD);
    epoll_ctl(epfd, EPOLL_CTL_DEL, c->fd, NULL);
    close(c->fd);
}

static void reset(struct conn *c) {
    c->len = 0;
    c->body_start = 0;
    c->status = 0;
    c->chunked = 0;
    c->content_length = -1;
}

static int send_post(struct conn *c, const char *path, const char *token, const char *body) {
    char request[8192];
    int h = http_post_head(request, sizeof request, path, host_name, host_port, token, strlen(body));
    if (h <= 0 || (size_t)h >= sizeof request) return -1;
    int n = h + snprintf(request + h, sizeof request - (size_t)h, "%s", body);
    if ((size_t)n >= sizeof request) return -1;
    reset(c);
    return http_send_all(c->fd, request, (size_t)n);
}

/* A waiter's records/changes request (with its token once it has one). */
static int send_wait(struct conn *c) {
    char body[4096];
    const char *zone = lines.zone[c->index];
    if (c->token)
        snprintf(body, sizeof body, "{\"zoneID\":{\"zoneName\":\"%s\"},\"syncToken\":\"%s\",\"wait\":55}", zone, c->token);
    else
        snprintf(body, sizeof body, "{\"zoneID\":{\"zoneName\":\"%s\"},\"wait\":55}", zone);
    set_state(c, SENT);
    return send_post(c, changes_path, lines.waiter_token[c->index], body);
}

/* Parses what has arrived: 0 incomplete, 1 headers complete, 2 whole response, -1 malformed. */
static int parse(struct conn *c) {
    if (!c->body_start) {
        http_head h;
        int r = http_parse_head(c->buf, c->len, &h);
        if (r <= 0) return r;
        c->body_start = h.head_len;
        c->status = h.status;
        c->content_length = h.content_length;
        c->chunked = h.chunked;
    }
    size_t end;
    if (c->chunked) return http_chunked_end(c->buf, c->len, c->body_start, &end) ? 2 : 1;
    if (c->content_length >= 0) return c->len >= c->body_start + (size_t)c->content_length ? 2 : 1;
    return 1;
}

/* The body of a complete response, de-chunked, NUL-terminated (malloc). */
static char *body_of(struct conn *c) {
    char *out = malloc(c->len + 1);
    size_t n = 0;
    if (c->chunked) {
        n = http_dechunk(c->buf, c->len, c->body_start, out);
    } else {
        n = c->len - c->body_start;
        memcpy(out, c->buf + c->body_start, n);
    }
    out[n] = 0;
    return out;
}

/* The value of the last "syncToken" in a body (malloc), or NULL. */
static char *last_token(const char *body) {
    const char *key = "\"syncToken\":\"", *p = body, *found = NULL;
    while ((p = strstr(p, key))) { found = p; p += strlen(key); }
    if (!found) return NULL;
    found += strlen(key);
    const char *end = strchr(found, '"');
    return end ? strndup(found, (size_t)(end - found)) : NULL;
}

/* Reads what is available; returns parse() or -1 when the connection ended. */
static int pump(struct conn *c) {
    int got = http_recv_available(c->fd, &c->buf, &c->len, &c->cap);
    if (got < 0) return -1;
    if (got == 1) return parse(c) == 2 ? 2 : -1;
    return parse(c);
}

/* Handles the events of one epoll_wait; returns the number of events. */
static int events(int timeout_ms, void (*on_answer)(struct conn *)) {
    struct epoll_event ev[512];
    int n = epoll_wait(epfd, ev, 512, timeout_ms);
    for (int i = 0; i < n; i++) {
        struct conn *c = ev[i].data.ptr;
        if (c->state == DEAD) continue;
        int r = pump(c);
        if (c == &writer) {
            if (r < 0) {
                complain("the writing connection ended");
                drop(c);
            } else if (r == 2) {
                writer.answered_at = now_ms();
                if (on_answer) on_answer(c);
            }
            continue;
        }
        if (r < 0) {
            if (c->state == SENT) failed_count++;
            complain("connection %d ended (state %d, %zu bytes buffered)", c->index, c->state, c->len);
            drop(c);
            continue;
        }
        if (c->state == SENT && r >= 1 && c->status != 200) {
            if (r < 2) continue;
            /* Refused (429 over a cap, ...). */
            non200_count++;
            char *b = body_of(c);
            complain("waiter %d: status %d: %.200s", c->index, c->status, b);
            free(b);
            drop(c);
            continue;
        }
        if (c->state == SENT && r == 1 && c->chunked) set_state(c, PARKED);
        if ((c->state == SENT || c->state == PARKED) && r == 2) {
            /* Woken, timed out, or answered at once (changes were already there). */
            set_state(c, ANSWERED);
            c->answered_at = now_ms();
            if (on_answer) on_answer(c);
        }
    }
    return n;
}

static void add_to_epoll(struct conn *c) {
    struct epoll_event ev = {.events = EPOLLIN | EPOLLRDHUP, .data.ptr = c};
    epoll_ctl(epfd, EPOLL_CTL_ADD, c->fd, &ev);
}

/* Opens and parks one waiter per line. Returns the time it took (ms). */
static double park_all(const char *host, int port) {
    raise_nofile(lines.n + 256);
    waiters = calloc((size_t)lines.n, sizeof *waiters);
    double start = now_ms();
    for (int i = 0; i < lines.n; i++) {
        struct conn *c = &waiters[i];
        c->index = i;
        c->content_length = -1;
        /* At most 256 requests in flight, so that the server is not flooded. */
        while (in_flight >= 256) events(100, NULL);
        c->fd = connect_to(host, port);
        if (c->fd < 0) {
            complain("connect #%d: %s", i, strerror(errno));
            c->state = DEAD;
            failed_count++;
            continue;
        }
        add_to_epoll(c);
        if (send_wait(c) != 0) {
            complain("send #%d failed", i);
            failed_count++;
            drop(c);
            continue;
        }
        if (i % 64 == 0) events(0, NULL);
    }
    double deadline = now_ms() + 120000;
    while (in_flight > 0 && now_ms() < deadline) events(100, NULL);
    return now_ms() - start;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double pct(double *v, int n, double p) {
    if (n == 0) return 0;
    int k = (int)(p / 100.0 * n + 0.999999) - 1;
    if (k < 0) k = 0;
    if (k >= n) k = n - 1;
    return v[k];
}

/* ---------------------------------------------------------------- wake */

static int wrong_count, other_count, timeout_count, error_count;
static int expect_index = -1;  /* single: the waiter the current write concerns; -2: all (fanout) */
static char expect_record[64];
static int write_done, pending;

static void on_answer(struct conn *c) {
    if (c == &writer) {
        char *b = body_of(c);
        if (c->status != 200 || strstr(b, "serverErrorCode")) {
            error_count++;
            complain("write answered %d: %.300s", c->status, b);
        }
        free(b);
        write_done = 1;
        return;
    }
    char *b = body_of(c);
    char *t = last_token(b);
    if (t) { free(c->token); c->token = t; }
    int concerned = expect_index == -2 || c->index == expect_index;
    char needle[96];
    snprintf(needle, sizeof needle, "\"recordName\":\"%s\"", expect_record);
    if (concerned) {
        if (!strstr(b, needle)) {
            wrong_count++;
            complain("waiter %d: answer without %s: %.300s", c->index, expect_record, b);
        }
        pending--;
    } else if (strstr(b, "\"records\":[]")) {
        timeout_count++;
        c->answered_at = -1;
    } else {
        other_count++;
        c->answered_at = -1;
        complain("waiter %d answered without a write for it: %.200s", c->index, b);
    }
    free(b);
}

static int write_record(int index, int k, const char *name) {
    char body[2048];
    snprintf(body, sizeof body,
             "{\"zoneID\":{\"zoneName\":\"%s\"},\"operations\":[{\"operationType\":\"create\",\"record\":{\"recordName\":\"%s\","
             "\"recordType\":\"Note\",\"fields\":{\"n\":{\"value\":%d}}}}]}",
             lines.zone[index], name, k);
    return send_post(&writer, modify_path, lines.writer_token[index], body);
}

/* Re-parks every answered waiter and waits until they are parked again. */
static void repark(void) {
    for (int round = 0; round < 10; round++) {
        int sent = 0;
        for (int i = 0; i < lines.n; i++) {
            struct conn *c = &waiters[i];
            if (c->state != ANSWERED) continue;
            if (send_wait(c) != 0) { failed_count++; drop(c); continue; }
            sent++;
        }
        if (!sent) return;
        double deadline = now_ms() + 30000;
        expect_index = -1;
        while (in_flight > 0 && now_ms() < deadline) events(100, on_answer);
        if (in_flight > 0) { complain("%d waiters not parked again within 30 s", in_flight); error_count++; return; }
    }
}

static int wake(int argc, char **argv) {
    const char *wait_host = argv[2], *write_host = argv[4], *mode = argv[9];
    int wait_port = atoi(argv[3]), write_port = atoi(argv[5]), count = atoi(argv[10]);
    read_lines(argv[6]);
    changes_path = argv[7];
    modify_path = argv[8];
    int fanout = strcmp(mode, "fanout") == 0;
    if (!fanout && strcmp(mode, "single") != 0) { fprintf(stderr, "lpwait: MODE is single or fanout\n"); return 2; }
    if (count < 1 || count > 1000000) { fprintf(stderr, "lpwait: bad COUNT\n"); return 2; }
    (void)argc;
    epfd = epoll_create1(0);
    host_name = wait_host, host_port = wait_port;
    double park_ms = park_all(wait_host, wait_port);
    printf("parked %d failed %d non200 %d ms %.0f\n", parked_count, failed_count, non200_count, park_ms);
    fflush(stdout);
    /* Anything answered while parking (records were already there) parks again with its token. */
    repark();
    if (parked_count == 0) { fprintf(stderr, "lpwait: no waiter could be parked\n"); return 3; }

    writer.index = -1;
    writer.content_length = -1;
    writer.fd = connect_to(write_host, write_port);
    if (writer.fd < 0) { perror("lpwait: connect to the writing instance"); return 3; }
    add_to_epoll(&writer);
    host_name = write_host, host_port = write_port;

    int max_samples = fanout ? count * lines.n : count;
    double *send_s = malloc(sizeof(double) * (size_t)max_samples), *ack_s = malloc(sizeof(double) * (size_t)max_samples);
    int samples = 0;
    double start = now_ms();
    for (int k = 0; k < count; k++) {
        int index = fanout ? 0 : k % lines.n;
        if (!fanout && waiters[index].state != PARKED) continue;
        snprintf(expect_record, sizeof expect_record, "%s-%d", fanout ? "f" : "w", k);
        expect_index = fanout ? -2 : index;
        pending = 0;
        for (int i = 0; i < lines.n; i++) {
            if (waiters[i].state == PARKED && (fanout || i == index)) { pending++; waiters[i].answered_at = 0; }
        }
        write_done = 0;
        host_name = write_host, host_port = write_port;
        double sent = now_ms();
        if (write_record(index, k, expect_record) != 0) { complain("write send failed"); error_count++; break; }
        double deadline = sent + 30000;
        while ((!write_done || pending > 0) && now_ms() < deadline) events(1000, on_answer);
        if (!write_done || pending > 0) {
            complain("write %d: %s, %d waiters unanswered after 30 s", k, write_done ? "answered" : "unanswered", pending);
            error_count++;
            break;
        }
        double acked = writer.answered_at;
        reset(&writer);
        for (int i = 0; i < lines.n; i++) {
            struct conn *c = &waiters[i];
            if (c->state == ANSWERED && c->answered_at > 0 && (fanout || i == index)) {
                send_s[samples] = c->answered_at - sent;
                ack_s[samples] = c->answered_at - acked;
                samples++;
            }
        }
        host_name = wait_host, host_port = wait_port;
        repark();
    }
    double total = now_ms() - start;
    qsort(send_s, (size_t)samples, sizeof(double), cmp_double);
    qsort(ack_s, (size_t)samples, sizeof(double), cmp_double);
    printf("samples %d wrong %d other %d timeouts %d errors %d ms %.0f\n", samples, wrong_count, other_count, timeout_count,
           error_count, total);
    printf("send p50 %.3f p90 %.3f p99 %.3f max %.3f\n", pct(send_s, samples, 50), pct(send_s, samples, 90),
           pct(send_s, samples, 99), samples ? send_s[samples - 1] : 0);
    printf("ack p50 %.3f p90 %.3f p99 %.3f max %.3f\n", pct(ack_s, samples, 50), pct(ack_s, samples, 90),
           pct(ack_s, samples, 99), samples ? ack_s[samples - 1] : 0);
    fflush(stdout);
    return error_count || wrong_count ? 1 : 0;
}

/* ---------------------------------------------------------------- park */

static int park(int argc, char **argv) {
    (void)argc;
    read_lines(argv[4]);
    changes_path = argv[5];
    epfd = epoll_create1(0);
    host_name = argv[2], host_port = atoi(argv[3]);
    double ms = park_all(argv[2], atoi(argv[3]));
    printf("parked %d failed %d non200 %d ms %.0f\nready\n", parked_count, failed_count, non200_count, ms);
    fflush(stdout);
    char line[64];
    if (!fgets(line, sizeof line, stdin)) { /* stdin closed: same as a line */ }
    while (events(0, NULL) > 0) {}
    int held = 0, answered = 0, closed = 0;
    for (int i = 0; i < lines.n; i++) {
        held += waiters[i].state == PARKED;
        answered += waiters[i].state == ANSWERED;
        closed += waiters[i].state == DEAD;
    }
    printf("held %d answered %d closed %d\n", held, answered, closed - failed_count - non200_count);
    fflush(stdout);
    for (int i = 0; i < lines.n; i++) if (waiters[i].state != DEAD) close(waiters[i].fd);
    return 0;
}

int main(int argc, char **argv) {
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (argc == 6 && strcmp(argv[1], "park") == 0) return park(argc, argv);
    if (argc == 11 && strcmp(argv[1], "wake") == 0) return wake(argc, argv);
    fprintf(stderr, "usage: lpwait park HOST PORT FILE CHANGES_PATH\n"
                    "       lpwait wake WAIT_HOST WAIT_PORT WRITE_HOST WRITE_PORT FILE CHANGES_PATH MODIFY_PATH single|fanout COUNT\n");
    return 2;
}
