/*
 * dayload: the load generator of bench/day.sh, "a day in the life" (issue #18, item 4); compiled at
 * run time with cc or clang. One thread, epoll, HTTP/1.1 keep-alive connections to 127.0.0.1.
 *
 *   dayload zones HOST PORT CONTAINER USERS_FILE N
 *       For each of the first N users (line u of USERS_FILE: `MAC_TOKEN PHONE_TOKEN`), one
 *       zones/modify with the Mac's token creating zones `events` (the Mac's events, the phone
 *       waits on it) and `commands` (the phone's remote commands, the Mac waits on it); 64 in
 *       flight. Prints `zones ok N errors E ms T`.
 *
 *   dayload run HOST PORT CONTAINER USERS_FILE PHOTOS_FILE N SECONDS RATE ACTIVE MIX MAC_WAITERS
 *       1. sync: every phone fetches records/changes of `events` from no token (resultsLimit 400,
 *          following moreComing) and every Mac those of `commands`: their current syncTokens.
 *          Prints `synced N errors E ms T`, then waits for a line on standard input.
 *       2. park: one connection per device, each a records/changes with its token and wait 55
 *          (phone: events, Mac: commands), parked once the chunked 200 head arrives: the N phones
 *          and the Macs of the first MAC_WAITERS users (N + MAC_WAITERS connections; all 2N
 *          unless the file-descriptor limit is lower). A command to a user whose Mac holds no
 *          long-poll is written all the same but has no wake to measure. The first park of each
 *          device waits a random 1-55 s, so that the fleet's timeouts do not all fall in the same
 *          few seconds 55 s later, as they would not in a fleet that did not start at one
 *          instant; with DAYLOAD_SYNC_PARK set in the environment it waits 55 s (a restart).
 *          Prints `parked P failed F lost L ms T` and `ready`, then waits for a line on standard
 *          input.
 *       3. measure: SECONDS of an open-loop Poisson schedule of RATE operations/s (total) over the
 *          first ceil(N * ACTIVE) users of a fixed shuffle (the active users), each operation for a
 *          random active user, drawn by MIX ("create burst changes query photo command", weights):
 *            create   Mac: records/modify, 1 BlockedAppEvent create into events
 *            burst    Mac: records/modify, 50 BlockedAppEvent creates into events (a queue flushed)
 *            changes  phone: records/changes of events from its latest token, no wait (foreground)
 *            query    phone: records/query BlockedAppEvent of events, sortBy timestamp desc, 100
 *            photo    phone: GET downloadURL of a FailedAuthEvent's photo (PHOTOS_FILE lines
 *                     `USER_INDEX PATH`; a random one of them, with that user's phone token)
 *            command  phone: records/modify, 1 RemoteCommand create into commands (wakes the Mac)
 *          Operations go out on a pool of keep-alive connections (opened as needed, at most 512;
 *          beyond that they queue, and the queueing counts in their latency: latency runs from the
 *          scheduled time, not the send). Every answered waiter parks again at once with the
 *          answer's syncToken: that request is the operation `park` (latency to its head).
 *          Wake latency: from just before a write is sent to the moment the waiter of the other
 *          device of that user has an answer naming the written record (the first record of a
 *          burst); a write not seen by its waiter within 15 s is a missed wake.
 *          Prints `window-end secs S` when the window ends, waits for a line on standard input
 *          (the script reads its CPU counters meanwhile; answers are still taken), then drains
 *          (in-flight operations and pending wakes, at most 15 s) and prints the figures:
 *            op NAME n N p50 X p99 X max X non2xx A item_errors B sockerr C   (ms)
 *            wake phone|mac n N p50 X p99 X max X missed M                    (ms)
 *            waiters timeouts T prune_wakes P other O lost L parked_at_end K
 *            load scheduled S sent S late10 L max_queue Q connections C records R cpu_s X
 *            tl SECOND ops N max X parks N park_max X answers N timeouts N prune N   (one per second)
 *            done
 *
 * Only loopback; every phase is bounded in time; errors (the first few) go to stderr.
 * HTTP: bench/httpclient.h (connect, request heads, response parsing).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <math.h>
#include <signal.h>
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

enum { IDLE, SENT, PARKED, DEAD };
enum { K_ACTIVE, K_PHONE, K_MAC };
enum { OP_CREATE, OP_BURST, OP_CHANGES, OP_QUERY, OP_PHOTO, OP_COMMAND, OP_PARK, OP_SYNC, OP_ZONES, NOPS };
static const char *op_names[NOPS] = {"create", "burst", "changes", "query", "photo", "command", "park", "sync", "zones"};
#define NMIX 6
#define BURST 50
#define MAX_ACTIVE 512
#define NPEND 8

struct conn {
    int fd, state, kind, user, op;
    char *buf;
    size_t len, cap, body_start;
    int status, chunked, head_seen;
    long content_length;
    double t_sched, t_sent;
    char name[64];  /* the record a write names first (wake matching) */
    int sync_phase; /* sync: 0 phone, 1 Mac */
};

struct pending { char name[64]; double t; };
struct user {
    char *mac_token, *phone_token, *phone_sync, *mac_sync;
    struct pending phone[NPEND], mac[NPEND];  /* writes the phone / the Mac has not seen yet */
    int nphone, nmac;
    long seq;
};

static const char *host;
static int port;
static char path_modify[512], path_changes[512], path_query[512], path_zones[512];
static struct user *users;
static int nusers;
static char **photo_paths;
static int *photo_users, nphotos;
static int epfd;
static int reported;

static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}
static long long real_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}
static void complain(const char *fmt, ...) {
    if (reported >= 20) return;
    reported++;
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "dayload: ");
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\n");
    va_end(ap);
}
static unsigned long long rng = 0x9E3779B97F4A7C15ULL;
static unsigned long long xrand(void) {
    rng ^= rng >> 12; rng ^= rng << 25; rng ^= rng >> 27;
    return rng * 2685821657736338717ULL;
}
static double urand(void) { return ((xrand() >> 11) + 0.5) / 9007199254740992.0; }

static void raise_nofile(long want) {
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) != 0 || (long)rl.rlim_cur >= want) return;
    if ((long)rl.rlim_max < want) { rl.rlim_max = want; rl.rlim_cur = want; if (setrlimit(RLIMIT_NOFILE, &rl) == 0) return; getrlimit(RLIMIT_NOFILE, &rl); }
    rl.rlim_cur = rl.rlim_max;
    setrlimit(RLIMIT_NOFILE, &rl);
}

static void read_users(const char *file, int n) {
    FILE *f = fopen(file, "r");
    if (!f) { perror(file); exit(2); }
    users = calloc((size_t)n, sizeof *users);
    char a[512], b[512];
    while (nusers < n && fscanf(f, "%511s %511s", a, b) == 2) {
        users[nusers].mac_token = strdup(a);
        users[nusers].phone_token = strdup(b);
        nusers++;
    }
    fclose(f);
    if (nusers < n) { fprintf(stderr, "dayload: %s has %d users, %d wanted\n", file, nusers, n); exit(2); }
}

static void read_photos(const char *file) {
    FILE *f = fopen(file, "r");
    if (!f) return;
    char p[2048];
    int u, cap = 0;
    while (fscanf(f, "%d %2047s", &u, p) == 2) {
        if (u < 0 || u >= nusers) continue;
        if (nphotos == cap) {
            cap = cap ? cap * 2 : 64;
            photo_paths = realloc(photo_paths, (size_t)cap * sizeof *photo_paths);
            photo_users = realloc(photo_users, (size_t)cap * sizeof *photo_users);
        }
        photo_paths[nphotos] = strdup(p);
        photo_users[nphotos++] = u;
    }
    fclose(f);
}

/* ---------------------------------------------------------------- latencies */
struct series { float *v; size_t n, cap; long non2xx, item_errors, sockerr; };
static struct series stats[NOPS], wake_phone, wake_mac;
static void add(struct series *s, double ms) {
    if (s->n == s->cap) { s->cap = s->cap ? s->cap * 2 : 4096; s->v = realloc(s->v, s->cap * sizeof(float)); }
    s->v[s->n++] = (float)ms;
}
static int cmp_float(const void *a, const void *b) { float x = *(const float *)a, y = *(const float *)b; return x < y ? -1 : x > y; }
static double pct(struct series *s, double p) {
    if (!s->n) return 0;
    size_t k = (size_t)ceil(p / 100.0 * (double)s->n);
    if (k < 1) k = 1;
    if (k > s->n) k = s->n;
    return s->v[k - 1];
}
static void print_series(const char *prefix, const char *name, struct series *s, long missed) {
    qsort(s->v, s->n, sizeof(float), cmp_float);
    printf("%s %s n %zu p50 %.2f p99 %.2f max %.2f", prefix, name, s->n, pct(s, 50), pct(s, 99), s->n ? s->v[s->n - 1] : 0.0f);
    if (missed >= 0) printf(" missed %ld\n", missed);
    else printf(" non2xx %ld item_errors %ld sockerr %ld\n", s->non2xx, s->item_errors, s->sockerr);
}

/* ---------------------------------------------------------------- connections */
static void reset_parse(struct conn *c) {
    c->len = 0; c->body_start = 0; c->status = 0; c->chunked = 0; c->content_length = -1; c->head_seen = 0;
}
static int open_conn(struct conn *c) {
    c->fd = http_connect(host, port, 10);  /* blocking sends (bounded by SO_SNDTIMEO); reads are MSG_DONTWAIT */
    if (c->fd < 0) return -1;
    struct epoll_event ev = {.events = EPOLLIN | EPOLLRDHUP, .data.ptr = c};
    epoll_ctl(epfd, EPOLL_CTL_ADD, c->fd, &ev);
    c->state = IDLE;
    return 0;
}
static void close_conn(struct conn *c) {
    if (c->fd >= 0) { epoll_ctl(epfd, EPOLL_CTL_DEL, c->fd, NULL); close(c->fd); }
    c->fd = -1;
    c->state = DEAD;
}

static char *reqbuf;
static size_t reqcap;
static int send_request(struct conn *c, const char *method, const char *path, const char *token, const char *body, size_t blen) {
    size_t need = blen + 1024 + strlen(path) + strlen(token);
    if (need > reqcap) { reqcap = need * 2; reqbuf = realloc(reqbuf, reqcap); }
    int h;
    if (strcmp(method, "GET") == 0)
        h = snprintf(reqbuf, reqcap, "GET %s HTTP/1.1\r\nHost: %s:%d\r\nAuthorization: Bearer %s\r\n\r\n", path, host, port, token);
    else
        h = http_post_head(reqbuf, reqcap, path, host, port, token, blen);
    if (h <= 0 || (size_t)h + blen >= reqcap) return -1;
    if (blen) memcpy(reqbuf + h, body, blen);
    reset_parse(c);
    c->state = SENT;
    c->t_sent = now_ms();
    return http_send_all(c->fd, reqbuf, (size_t)h + blen);
}

/* 0 incomplete, 1 head complete, 2 whole response, -1 malformed */
static int parse(struct conn *c) {
    if (!c->body_start) {
        http_head h;
        int r = http_parse_head(c->buf, c->len, &h);
        if (r <= 0) return r;
        c->body_start = h.head_len; c->status = h.status; c->content_length = h.content_length; c->chunked = h.chunked;
    }
    size_t end;
    if (c->chunked) return http_chunked_end(c->buf, c->len, c->body_start, &end) ? 2 : 1;
    if (c->content_length >= 0) return c->len >= c->body_start + (size_t)c->content_length ? 2 : 1;
    return 1;
}
static int pump(struct conn *c) {
    int got = http_recv_available(c->fd, &c->buf, &c->len, &c->cap);
    if (got < 0) return -1;
    if (got == 1) return parse(c) == 2 ? 2 : -1;
    return parse(c);
}
/* The body, de-chunked and NUL-terminated, in place of the buffer (valid until the next reset). */
static char *body_of(struct conn *c, size_t *n) {
    if (c->chunked) {
        char *out = malloc(c->len + 1);
        *n = http_dechunk(c->buf, c->len, c->body_start, out);
        memcpy(c->buf, out, *n);
        free(out);
    } else {
        *n = c->len - c->body_start;
        memmove(c->buf, c->buf + c->body_start, *n);
    }
    c->buf[*n] = 0;
    c->len = *n;  /* parse state is no longer valid; callers reset before reuse */
    return c->buf;
}
static char *json_str(const char *body, const char *key) {  /* the last "key":"value" (malloc) */
    char needle[64];
    snprintf(needle, sizeof needle, "\"%s\":\"", key);
    const char *p = body, *found = NULL;
    while ((p = strstr(p, needle))) { found = p; p += strlen(needle); }
    if (!found) return NULL;
    found += strlen(needle);
    const char *e = strchr(found, '"');
    return e ? strndup(found, (size_t)(e - found)) : NULL;
}

/* ---------------------------------------------------------------- request bodies */
static char *bodybuf;
static size_t bodycap;
static size_t body_printf(size_t at, const char *fmt, ...) {
    for (;;) {
        va_list ap;
        va_start(ap, fmt);
        int n = vsnprintf(bodybuf + at, bodycap - at, fmt, ap);
        va_end(ap);
        if (n >= 0 && at + (size_t)n < bodycap) return at + (size_t)n;
        bodycap = bodycap * 2 + (size_t)n + 1024;
        bodybuf = realloc(bodybuf, bodycap);
    }
}
static size_t changes_body(const char *zone, const char *token, int wait, int limit) {
    size_t n = body_printf(0, "{\"zoneID\":{\"zoneName\":\"%s\"}", zone);
    if (token) n = body_printf(n, ",\"syncToken\":\"%s\"", token);
    if (wait) n = body_printf(n, ",\"wait\":%d", wait);
    if (limit) n = body_printf(n, ",\"resultsLimit\":%d", limit);
    return body_printf(n, "}");
}
static const char *apps[] = {"Safari", "Messages", "Mail", "Photos", "Notes", "Slack", "Discord", "Steam"};
static const char *bundles[] = {"com.apple.Safari", "com.apple.MobileSMS", "com.apple.mail", "com.apple.Photos",
                                "com.apple.Notes", "com.tinyspeck.slackmacgap", "com.hnc.Discord", "com.valvesoftware.steam"};
static size_t events_body(int u, int count, char *first_name) {
    struct user *us = &users[u];
    size_t n = body_printf(0, "{\"zoneID\":{\"zoneName\":\"events\"},\"operations\":[");
    long long ts = real_ms();
    for (int i = 0; i < count; i++) {
        int a = (int)(xrand() % 8);
        char name[64];
        snprintf(name, sizeof name, "ev-%d-%ld-%08llx", u, us->seq++, xrand() & 0xffffffffULL);
        if (i == 0) strcpy(first_name, name);
        n = body_printf(n, "%s{\"operationType\":\"create\",\"record\":{\"recordName\":\"%s\",\"zoneID\":{\"zoneName\":\"events\"},"
                        "\"recordType\":\"BlockedAppEvent\",\"fields\":{"
                        "\"appName\":{\"value\":\"%s\"},\"bundleID\":{\"value\":\"%s\"},\"deviceName\":{\"value\":\"mac-%d\"},"
                        "\"timestamp\":{\"value\":%lld,\"type\":\"TIMESTAMP\"}}}}",
                        i ? "," : "", name, apps[a], bundles[a], u, ts - (count - 1 - i));
    }
    return body_printf(n, "]}");
}
static size_t command_body(int u, char *name) {
    snprintf(name, 64, "cmd-%d-%ld-%08llx", u, users[u].seq++, xrand() & 0xffffffffULL);
    return body_printf(0, "{\"zoneID\":{\"zoneName\":\"commands\"},\"operations\":[{\"operationType\":\"create\",\"record\":{"
                       "\"recordName\":\"%s\",\"zoneID\":{\"zoneName\":\"commands\"},\"recordType\":\"RemoteCommand\",\"fields\":{\"action\":{\"value\":\"lockAll\"},"
                       "\"bundleID\":{\"value\":\"\"},\"sourceDevice\":{\"value\":\"iphone-%d\"},"
                       "\"hmac\":{\"value\":\"%016llx%016llx%016llx%016llx\"},\"timestamp\":{\"value\":%lld,\"type\":\"TIMESTAMP\"}}}}]}",
                       name, u, xrand(), xrand(), xrand(), xrand(), real_ms());
}
static size_t query_body(void) {
    return body_printf(0, "{\"zoneID\":{\"zoneName\":\"events\"},\"query\":{\"recordType\":\"BlockedAppEvent\","
                          "\"sortBy\":[{\"fieldName\":\"timestamp\",\"ascending\":false}]},\"resultsLimit\":100}");
}

/* ---------------------------------------------------------------- waiters */
static struct conn *waiters;  /* 2 per user: [2u] phone on events, [2u+1] Mac on commands */
/* The timeline: per second of the window (by scheduled time for operations, by arrival for
 * long-poll answers) the operations, their worst latency, and the long-poll answers by kind. */
#define TL_MAX 4000
static double tl_start;
static int tl_secs;
static struct { int ops, answers, timeouts, prune, parks; float max, park_max; } *tl;
static int tl_index(double t) {
    if (!tl) return -1;
    int i = (int)((t - tl_start) / 1000);
    return i >= 0 && i < TL_MAX ? i : -1;
}
static int mac_waiters;  /* the Macs of users below this hold a long-poll */
static int parked_count, in_flight_waiters, lost_waiters, measuring;
static long timeouts, prune_wakes, other_wakes, missed_phone, missed_mac;

/* The first park of each device waits a random 1-55 s, so that the fleet's 55-s timeouts are spread
 * as in a fleet that was not started at one instant; every later park waits 55 s. */
static int first_park;
static int send_wait(struct conn *c) {
    struct user *us = &users[c->user];
    int wait = first_park && !getenv("DAYLOAD_SYNC_PARK") ? 1 + (int)(xrand() % 55) : 55;
    size_t n = c->kind == K_PHONE ? changes_body("events", us->phone_sync, wait, 0) : changes_body("commands", us->mac_sync, wait, 0);
    in_flight_waiters++;
    if (send_request(c, "POST", path_changes, c->kind == K_PHONE ? us->phone_token : us->mac_token, bodybuf, n) != 0) {
        in_flight_waiters--;
        complain("send of a %s waiter (user %d) failed: %s", c->kind == K_PHONE ? "phone" : "Mac", c->user, strerror(errno));
        return -1;
    }
    return 0;
}

static void waiter_answer(struct conn *c, double t) {
    struct user *us = &users[c->user];
    size_t n;
    char *b = body_of(c, &n);
    char *tok = json_str(b, "syncToken");
    if (tok) {
        if (c->kind == K_PHONE) { free(us->phone_sync); us->phone_sync = tok; }
        else { free(us->mac_sync); us->mac_sync = tok; }
    }
    struct pending *p = c->kind == K_PHONE ? us->phone : us->mac;
    int *np = c->kind == K_PHONE ? &us->nphone : &us->nmac;
    int matched = 0;
    for (int i = 0; i < *np;) {
        char needle[96];
        snprintf(needle, sizeof needle, "\"recordName\":\"%s\"", p[i].name);
        if (strstr(b, needle)) {
            add(c->kind == K_PHONE ? &wake_phone : &wake_mac, t - p[i].t);
            p[i] = p[--*np];
            matched++;
        } else i++;
    }
    int k = tl_index(t);
    if (k >= 0 && measuring) tl[k].answers++;
    if (!matched && measuring) {
        if (strstr(b, "\"records\":[]")) { timeouts++; if (k >= 0) tl[k].timeouts++; }
        else if (strstr(b, "\"deleted\":true")) { prune_wakes++; if (k >= 0) tl[k].prune++; }
        else other_wakes++;
    }
}

/* ---------------------------------------------------------------- active operations */
static struct conn active[MAX_ACTIVE];
static int nactive;
struct queued { int op, user; double t; };
static struct queued *queue;
static size_t qhead, qtail, qcap, max_queue;
static long scheduled, sent_ops, late10, records_written, in_flight_ops;

static void remove_pending(int u, int to_phone, const char *name) {
    struct user *us = &users[u];
    struct pending *p = to_phone ? us->phone : us->mac;
    int *np = to_phone ? &us->nphone : &us->nmac;
    for (int i = 0; i < *np; i++) if (strcmp(p[i].name, name) == 0) { p[i] = p[--*np]; return; }
}
static void add_pending(int u, int to_phone, const char *name, double t) {
    struct user *us = &users[u];
    struct pending *p = to_phone ? us->phone : us->mac;
    int *np = to_phone ? &us->nphone : &us->nmac;
    if (*np == NPEND) { if (to_phone) missed_phone++; else missed_mac++; complain("user %d: more than %d writes unseen", u, NPEND); p[0] = p[--*np]; }
    snprintf(p[*np].name, sizeof p[*np].name, "%s", name);
    p[*np].t = t;
    (*np)++;
}

static struct conn *free_active(void) {
    for (int i = 0; i < nactive; i++) if (active[i].state == IDLE && active[i].fd >= 0) return &active[i];
    for (int i = 0; i < nactive; i++) if (active[i].fd < 0) { if (open_conn(&active[i]) == 0) return &active[i]; return NULL; }
    if (nactive < MAX_ACTIVE) {
        struct conn *c = &active[nactive];
        memset(c, 0, sizeof *c);
        c->kind = K_ACTIVE;
        c->fd = -1;
        if (open_conn(c) != 0) { complain("connect: %s", strerror(errno)); return NULL; }
        nactive++;
        return c;
    }
    return NULL;
}

static int start_op(struct conn *c, int op, int u, double t_sched) {
    struct user *us = &users[u];
    c->op = op; c->user = u; c->t_sched = t_sched; c->name[0] = 0;
    size_t n;
    int r;
    double t = now_ms();
    if (t - t_sched > 10) late10++;
    switch (op) {
    case OP_CREATE:
    case OP_BURST:
        n = events_body(u, op == OP_BURST ? BURST : 1, c->name);
        add_pending(u, 1, c->name, t);
        r = send_request(c, "POST", path_modify, us->mac_token, bodybuf, n);
        break;
    case OP_COMMAND:
        n = command_body(u, c->name);
        if (u < mac_waiters) add_pending(u, 0, c->name, t);
        r = send_request(c, "POST", path_modify, us->phone_token, bodybuf, n);
        break;
    case OP_CHANGES:
        n = changes_body("events", us->phone_sync, 0, 200);
        r = send_request(c, "POST", path_changes, us->phone_token, bodybuf, n);
        break;
    case OP_QUERY:
        n = query_body();
        r = send_request(c, "POST", path_query, us->phone_token, bodybuf, n);
        break;
    case OP_PHOTO: {
        int k = (int)(xrand() % (unsigned)nphotos);
        c->user = photo_users[k];
        r = send_request(c, "GET", photo_paths[k], users[c->user].phone_token, "", 0);
        break;
    }
    default:
        return -1;
    }
    sent_ops++;
    in_flight_ops++;
    if (r != 0) {
        stats[op].sockerr++;
        complain("%s: send failed: %s", op_names[op], strerror(errno));
        if (c->name[0]) remove_pending(c->user, op != OP_COMMAND, c->name);
        in_flight_ops--;
        close_conn(c);
        return -1;
    }
    return 0;
}

static void dispatch(int op, int u, double t_sched) {
    struct conn *c = free_active();
    if (!c) {
        if (qtail - qhead == qcap) {
            size_t live = qtail - qhead;
            struct queued *nq = malloc((qcap ? qcap * 2 : 1024) * sizeof *nq);
            for (size_t i = 0; i < live; i++) nq[i] = queue[(qhead + i) % (qcap ? qcap : 1)];
            free(queue);
            queue = nq; qcap = qcap ? qcap * 2 : 1024; qhead = 0; qtail = live;
        }
        queue[qtail % qcap] = (struct queued){op, u, t_sched};
        qtail++;
        if (qtail - qhead > max_queue) max_queue = qtail - qhead;
        return;
    }
    start_op(c, op, u, t_sched);
}

static void active_done(struct conn *c, int r, double t) {
    struct series *s = &stats[c->op];
    in_flight_ops--;
    if (r < 0) {
        s->sockerr++;
        complain("%s (user %d): connection ended before the answer", op_names[c->op], c->user);
        if (c->name[0]) remove_pending(c->user, c->op != OP_COMMAND, c->name);
        close_conn(c);
        return;
    }
    add(s, t - c->t_sched);
    int k = tl_index(c->t_sched);
    if (k >= 0) { tl[k].ops++; if (t - c->t_sched > tl[k].max) tl[k].max = (float)(t - c->t_sched); }
    size_t n;
    char *b = body_of(c, &n);
    if (c->status < 200 || c->status > 299) {
        s->non2xx++;
        complain("%s (user %d): HTTP %d: %.300s", op_names[c->op], c->user, c->status, c->op == OP_PHOTO ? "" : b);
        if (c->name[0]) remove_pending(c->user, c->op != OP_COMMAND, c->name);
    } else if (c->op != OP_PHOTO && strstr(b, "\"serverErrorCode\"")) {
        s->item_errors++;
        complain("%s (user %d): item error: %.300s", op_names[c->op], c->user, b);
        if (c->name[0]) remove_pending(c->user, c->op != OP_COMMAND, c->name);
    } else if (c->op == OP_CREATE) records_written++;
    else if (c->op == OP_BURST) records_written += BURST;
    else if (c->op == OP_COMMAND) records_written++;
    else if (c->op == OP_PHOTO && n < 1000) {
        s->item_errors++;
        complain("photo (user %d): only %zu bytes", c->user, n);
    }
    c->state = IDLE;
    reset_parse(c);
    if (qtail > qhead) {
        struct queued q = queue[qhead % qcap];
        qhead++;
        start_op(c, q.op, q.user, q.t);
    }
}

/* ---------------------------------------------------------------- the event loop */
static void on_event(struct conn *c) {
    if (c->fd < 0) return;
    int r = pump(c);
    double t = now_ms();
    if (c->kind == K_ACTIVE) {
        if (c->state == SENT) {
            if (r == 2 || r < 0) active_done(c, r, t);
        } else if (r < 0 || c->len == 0) {
            close_conn(c);  /* an idle keep-alive connection the server closed */
        }
        return;
    }
    /* a waiter */
    if (r < 0) {
        if (c->state == SENT) { in_flight_waiters--; if (measuring) stats[OP_PARK].sockerr++; }
        if (c->state == PARKED) parked_count--;
        lost_waiters++;
        complain("%s waiter of user %d: connection ended (state %d)", c->kind == K_PHONE ? "phone" : "Mac", c->user, c->state);
        close_conn(c);
        return;
    }
    if (r >= 1 && !c->head_seen) {
        c->head_seen = 1;
        if (c->state == SENT) in_flight_waiters--;
        if (measuring) {
            add(&stats[OP_PARK], t - c->t_sent);
            int k = tl_index(c->t_sent);
            if (k >= 0) { tl[k].parks++; if (t - c->t_sent > tl[k].park_max) tl[k].park_max = (float)(t - c->t_sent); }
        }
        if (c->status == 200) { c->state = PARKED; parked_count++; } else c->state = IDLE;
    }
    if (c->head_seen && c->status != 200) {  /* refused: its body completes later */
        if (r < 2) return;
        if (measuring) stats[OP_PARK].non2xx++;
        size_t n;
        complain("waiter of user %d: HTTP %d: %.300s", c->user, c->status, body_of(c, &n));
        lost_waiters++;
        close_conn(c);
        return;
    }
    if (r == 2) {
        parked_count--;
        waiter_answer(c, t);
        if (send_wait(c) != 0) { lost_waiters++; close_conn(c); }
    }
}
static void on_stdin(void);
static struct conn stdin_marker;
static void loop_once(int timeout_ms) {
    struct epoll_event ev[1024];
    int n = epoll_wait(epfd, ev, 1024, timeout_ms);
    for (int i = 0; i < n; i++) {
        if (ev[i].data.ptr == &stdin_marker) on_stdin();
        else on_event(ev[i].data.ptr);
    }
}

/* ---------------------------------------------------------------- phases */
/* Standard input is in the epoll set (run mode, after the sync): a line, or its end, is the
 * go-ahead the script gives between phases; the waiters keep being served meanwhile. */
static int stdin_lines;
static int wait_stdin(int seconds) {
    int want = stdin_lines + 1;
    double deadline = now_ms() + seconds * 1000.0;
    while (stdin_lines < want && now_ms() < deadline) loop_once(100);
    return stdin_lines >= want ? 0 : -1;
}
static void on_stdin(void) {
    char buf[256];
    ssize_t r = read(0, buf, sizeof buf);
    if (r <= 0) { epoll_ctl(epfd, EPOLL_CTL_DEL, 0, NULL); stdin_lines += 1000; return; }  /* closed: go on */
    for (ssize_t i = 0; i < r; i++) if (buf[i] == '\n') stdin_lines++;
}

/* sync: per user the phone's events token, then the Mac's commands token; 64 requests in flight. */
static int sync_errors;
static int sync_all(void) {
    int next = 0, done = 0, inflight = 0;
    struct conn *pool = calloc(64, sizeof *pool);
    for (int i = 0; i < 64; i++) { pool[i].kind = K_ACTIVE; pool[i].fd = -1; pool[i].state = DEAD; }
    double deadline = now_ms() + 600000;
    while (done < nusers && now_ms() < deadline) {
        for (int i = 0; i < 64 && next < nusers; i++) {
            struct conn *c = &pool[i];
            if (c->state == SENT) continue;
            if (c->fd < 0 && open_conn(c) != 0) { complain("connect: %s", strerror(errno)); continue; }
            c->user = next++; c->sync_phase = 0; c->op = OP_SYNC;
            size_t n = changes_body("events", NULL, 0, 400);
            if (send_request(c, "POST", path_changes, users[c->user].phone_token, bodybuf, n) != 0) { sync_errors++; done++; close_conn(c); continue; }
            inflight++;
        }
        struct epoll_event ev[256];
        int n = epoll_wait(epfd, ev, 256, 100);
        for (int k = 0; k < n; k++) {
            struct conn *c = ev[k].data.ptr;
            if (c->state != SENT) { if (pump(c) < 0) close_conn(c); continue; }
            int r = pump(c);
            if (r == 0 || r == 1) continue;
            struct user *us = &users[c->user];
            size_t blen;
            char *b = r == 2 ? body_of(c, &blen) : NULL;
            if (r < 0 || c->status != 200) {
                sync_errors++;
                complain("sync of user %d: %s %.200s", c->user, r < 0 ? "connection ended" : "HTTP error", b ? b : "");
                inflight--; done++;
                close_conn(c);
                continue;
            }
            char *tok = json_str(b, "syncToken");
            int more = strstr(b, "\"moreComing\":true") != NULL;
            if (c->sync_phase == 0) { free(us->phone_sync); us->phone_sync = tok; }
            else { free(us->mac_sync); us->mac_sync = tok; }
            c->state = IDLE;
            size_t bn;
            if (more) bn = changes_body(c->sync_phase ? "commands" : "events", tok, 0, 400);
            else if (c->sync_phase == 0) { c->sync_phase = 1; bn = changes_body("commands", NULL, 0, 400); }
            else { inflight--; done++; continue; }
            if (send_request(c, "POST", path_changes, c->sync_phase ? us->mac_token : us->phone_token, bodybuf, bn) != 0) {
                sync_errors++; inflight--; done++; close_conn(c);
            }
        }
    }
    for (int i = 0; i < 64; i++) if (pool[i].fd >= 0) close_conn(&pool[i]);
    if (done < nusers) { complain("sync: %d of %d users done within 600 s", done, nusers); sync_errors += nusers - done; }
    return sync_errors;
}

static int park_all(int *failed) {
    first_park = 1;
    waiters = calloc((size_t)nusers * 2, sizeof *waiters);
    for (int i = 0; i < nusers * 2; i++) {
        struct conn *c = &waiters[i];
        c->user = i / 2;
        c->kind = i % 2 ? K_MAC : K_PHONE;
        c->fd = -1;
        c->state = DEAD;
        if (c->kind == K_MAC && c->user >= mac_waiters) continue;
        while (in_flight_waiters >= 256) loop_once(100);
        if (open_conn(c) != 0) { (*failed)++; complain("connect of waiter %d: %s", i, strerror(errno)); c->state = DEAD; continue; }
        if (send_wait(c) != 0) { (*failed)++; close_conn(c); continue; }
        if (i % 64 == 0) loop_once(0);
    }
    first_park = 0;
    double deadline = now_ms() + 120000;
    while (in_flight_waiters > 0 && now_ms() < deadline) loop_once(100);
    return parked_count;
}

static void expire_pending(double t, double older_than) {
    for (int u = 0; u < nusers; u++) {
        struct user *us = &users[u];
        for (int i = 0; i < us->nphone;) {
            if (t - us->phone[i].t > older_than) { missed_phone++; complain("phone of user %d did not see %s within %.0f s", u, us->phone[i].name, older_than / 1000); us->phone[i] = us->phone[--us->nphone]; }
            else i++;
        }
        for (int i = 0; i < us->nmac;) {
            if (t - us->mac[i].t > older_than) { missed_mac++; complain("Mac of user %d did not see %s within %.0f s", u, us->mac[i].name, older_than / 1000); us->mac[i] = us->mac[--us->nmac]; }
            else i++;
        }
    }
}
static long pending_total(void) {
    long n = 0;
    for (int u = 0; u < nusers; u++) n += users[u].nphone + users[u].nmac;
    return n;
}

static void paths(const char *container) {
    snprintf(path_modify, sizeof path_modify, "/database/1/%s/development/private/records/modify", container);
    snprintf(path_changes, sizeof path_changes, "/database/1/%s/development/private/records/changes", container);
    snprintf(path_query, sizeof path_query, "/database/1/%s/development/private/records/query", container);
    snprintf(path_zones, sizeof path_zones, "/database/1/%s/development/private/zones/modify", container);
}

static int zones_mode(char **argv) {
    host = argv[2]; port = atoi(argv[3]); paths(argv[4]);
    int n = atoi(argv[6]);
    read_users(argv[5], n);
    epfd = epoll_create1(0);
    struct conn *pool = calloc(64, sizeof *pool);
    for (int i = 0; i < 64; i++) { pool[i].fd = -1; pool[i].state = DEAD; }
    int next = 0, done = 0, errors = 0;
    double start = now_ms(), deadline = start + 600000;
    const char *body = "{\"operations\":[{\"operationType\":\"create\",\"zone\":{\"zoneID\":{\"zoneName\":\"events\"}}},"
                       "{\"operationType\":\"create\",\"zone\":{\"zoneID\":{\"zoneName\":\"commands\"}}}]}";
    while (done < n && now_ms() < deadline) {
        for (int i = 0; i < 64 && next < n; i++) {
            struct conn *c = &pool[i];
            if (c->state == SENT) continue;
            if (c->fd < 0 && open_conn(c) != 0) { complain("connect: %s", strerror(errno)); continue; }
            c->user = next++;
            if (send_request(c, "POST", path_zones, users[c->user].mac_token, body, strlen(body)) != 0) { errors++; done++; close_conn(c); }
        }
        struct epoll_event ev[64];
        int k = epoll_wait(epfd, ev, 64, 100);
        for (int j = 0; j < k; j++) {
            struct conn *c = ev[j].data.ptr;
            int r = pump(c);
            if (c->state != SENT) { if (r < 0) close_conn(c); continue; }
            if (r == 0 || r == 1) continue;
            size_t bl;
            char *b = r == 2 ? body_of(c, &bl) : "";
            if (r < 0 || c->status != 200 || strstr(b, "serverErrorCode")) {
                errors++;
                complain("zones of user %d: HTTP %d %.200s", c->user, c->status, b);
                close_conn(c);
            } else c->state = IDLE;
            done++;
        }
    }
    printf("zones ok %d errors %d ms %.0f\n", done - errors, errors + (n - done), now_ms() - start);
    return errors || done < n ? 1 : 0;
}

static int run_mode(char **argv) {
    host = argv[2]; port = atoi(argv[3]); paths(argv[4]);
    int n = atoi(argv[7]);
    mac_waiters = atoi(argv[12]);
    if (mac_waiters < 0 || mac_waiters > n) mac_waiters = n;
    double seconds = atof(argv[8]), rate = atof(argv[9]), active_fraction = atof(argv[10]);
    double mix[NMIX] = {0}, mix_total = 0;
    if (sscanf(argv[11], "%lf %lf %lf %lf %lf %lf", &mix[0], &mix[1], &mix[2], &mix[3], &mix[4], &mix[5]) != NMIX) {
        fprintf(stderr, "dayload: MIX is six weights: create burst changes query photo command\n");
        return 2;
    }
    read_users(argv[5], n);
    read_photos(argv[6]);
    if (nphotos == 0) mix[OP_PHOTO] = 0;
    for (int i = 0; i < NMIX; i++) mix_total += mix[i];
    if (n < 1 || seconds <= 0 || rate <= 0 || active_fraction <= 0 || active_fraction > 1 || mix_total <= 0) {
        fprintf(stderr, "dayload: bad N, SECONDS, RATE, ACTIVE or MIX\n");
        return 2;
    }
    raise_nofile((long)n + mac_waiters + MAX_ACTIVE + 256);
    rng ^= (unsigned long long)getpid() << 17;
    epfd = epoll_create1(0);
    bodycap = 65536; bodybuf = malloc(bodycap);

    double t0 = now_ms();
    int errs = sync_all();
    printf("synced %d errors %d ms %.0f\n", nusers, errs, now_ms() - t0);
    fflush(stdout);
    if (errs) return 1;
    struct epoll_event sev = {.events = EPOLLIN, .data.ptr = &stdin_marker};
    epoll_ctl(epfd, EPOLL_CTL_ADD, 0, &sev);
    if (wait_stdin(600) != 0) { fprintf(stderr, "dayload: no go-ahead to park within 600 s\n"); return 1; }

    int failed = 0;
    t0 = now_ms();
    int parked = park_all(&failed);
    printf("parked %d failed %d lost %d ms %.0f\nready\n", parked, failed, lost_waiters, now_ms() - t0);
    fflush(stdout);
    if (parked == 0) return 1;
    if (wait_stdin(600) != 0) { fprintf(stderr, "dayload: no go-ahead to measure within 600 s\n"); return 1; }

    /* the active users: the first ceil(n * fraction) of a fixed shuffle */
    int nact = (int)ceil(n * active_fraction);
    if (nact < 1) nact = 1;
    int *perm = malloc((size_t)n * sizeof *perm);
    for (int i = 0; i < n; i++) perm[i] = i;
    unsigned long long saved = rng;
    rng = 0x2545F4914F6CDD1DULL;
    for (int i = n - 1; i > 0; i--) { int j = (int)(xrand() % (unsigned)(i + 1)); int t = perm[i]; perm[i] = perm[j]; perm[j] = t; }
    rng = saved;

    tl = calloc(TL_MAX, sizeof *tl);
    tl_start = now_ms();
    tl_secs = (int)ceil(seconds) + 16;
    if (tl_secs > TL_MAX) tl_secs = TL_MAX;
    measuring = 1;
    double start = now_ms(), end = start + seconds * 1000, next = start, last_expire = start;
    while (now_ms() < end) {
        double t = now_ms();
        while (next <= t && next < end) {
            double pick = urand() * mix_total, acc = 0;
            int op = 0;
            for (; op < NMIX - 1; op++) { acc += mix[op]; if (pick < acc) break; }
            if (mix[op] == 0) for (op = 0; mix[op] == 0; op++) {}
            scheduled++;
            dispatch(op, perm[xrand() % (unsigned)nact], next);
            next += -log(urand()) * 1000.0 / rate;
        }
        if (t - last_expire > 1000) { expire_pending(t, 15000); last_expire = t; }
        double wait = next - now_ms();
        loop_once(wait <= 0 ? 0 : wait > 10 ? 10 : (int)wait);
    }
    double window = now_ms() - start;
    printf("window-end secs %.2f\n", window / 1000);
    fflush(stdout);
    /* the script reads the CPU counters now (this process among them), then says go on */
    if (wait_stdin(60) != 0) complain("no go-ahead after the window within 60 s");
    /* drain: the operations in flight or queued, and the wakes not seen yet */
    double drain_end = now_ms() + 15000;
    while ((in_flight_ops > 0 || qtail > qhead || pending_total() > 0) && now_ms() < drain_end) {
        loop_once(10);
        if (now_ms() - last_expire > 1000) { expire_pending(now_ms(), 15000); last_expire = now_ms(); }
    }
    measuring = 0;
    expire_pending(now_ms() + 1e9, 0);  /* whatever is left was missed */
    for (int op = 0; op <= OP_PARK; op++) print_series("op", op_names[op], &stats[op], -1);
    print_series("wake", "phone", &wake_phone, missed_phone);
    print_series("wake", "mac", &wake_mac, missed_mac);
    printf("waiters timeouts %ld prune_wakes %ld other %ld lost %d parked_at_end %d\n", timeouts, prune_wakes, other_wakes, lost_waiters, parked_count);
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    printf("load scheduled %ld sent %ld unfinished %ld late10 %ld max_queue %zu connections %d records %ld active_users %d cpu_s %.3f\n",
           scheduled, sent_ops, in_flight_ops + (long)(qtail - qhead), late10, max_queue, nactive, records_written, nact,
           ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 + ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6);
    for (int i = 0; i < tl_secs; i++)
        printf("tl %d ops %d max %.1f parks %d park_max %.1f answers %d timeouts %d prune %d\n", i, tl[i].ops, tl[i].max, tl[i].parks,
               tl[i].park_max, tl[i].answers, tl[i].timeouts, tl[i].prune);
    printf("done\n");
    fflush(stdout);
    return 0;
}

int main(int argc, char **argv) {
    setvbuf(stdout, NULL, _IOLBF, 0);
    signal(SIGPIPE, SIG_IGN);
    if (argc == 7 && strcmp(argv[1], "zones") == 0) return zones_mode(argv);
    if (argc == 13 && strcmp(argv[1], "run") == 0) return run_mode(argv);
    fprintf(stderr, "usage: dayload zones HOST PORT CONTAINER USERS_FILE N\n"
                    "       dayload run HOST PORT CONTAINER USERS_FILE PHOTOS_FILE N SECONDS RATE ACTIVE \"MIX\" MAC_WAITERS\n");
    return 2;
}
