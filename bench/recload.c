/*
 * recload: HTTP load generator for bench/records.sh (compiled at run time with cc or clang).
 * One thread per client, one keep-alive connection each (reconnects if the server closes it).
 *
 *   recload modify  HOST PORT PATH TOKEN CLIENTS SECONDS BATCH ZONES NAMEPREFIX [TOTAL]
 *       POST PATH (records/modify) with BATCH `create` operations of ~300-byte AppEvent records
 *       (record type from RECLOAD_RECORD_TYPE when set)
 *       with unique names NAMEPREFIX-<client>-<n>-<i>. ZONES is a comma-separated list of zone
 *       names; each request picks one at random (as pgbench's `random(1, :nzones)`).
 *       With TOTAL > 0 the run ends when TOTAL records were sent (SECONDS is then a time limit).
 *
 *   recload changes HOST PORT PATH TOKEN CLIENTS SECONDS ZONE LIMIT
 *       POST PATH (records/changes): each client starts from no token, follows `syncToken` while
 *       `moreComing`, then starts again from no token; counts pages and records.
 *
 * Prints one line of key=value pairs on stdout:
 *   requests ok_requests records item_errors non200 status_4xx status_5xx sockerr secs
 *   req_per_s records_per_s p50_ms p90_ms p99_ms p999_ms max_ms cpu_s [pages restarts bytes_in]
 * and, on stderr, the first few non-200 answers and socket errors.
 * Only requests completed before the deadline are counted; the rate uses the elapsed time of
 * the counted window. Loopback benchmarking only; bounded in time.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* ------------------------------------------------------------------ configuration */
static const char *host, *path, *token, *prefix, *zone;
static int port, nclients, batch = 1, limit = 200, modify_mode;
static double seconds;
static long total;            /* modify: stop after this many records (0: run for SECONDS) */
static char **zones;
static int nzones;
static atomic_long sent_records; /* records handed out in TOTAL mode */
static double t_start, t_deadline;
static atomic_int reported;     /* errors printed so far */

typedef struct {
    int id;
    long requests, ok, records, item_errors, non200, s4xx, s5xx, sockerr, pages, restarts;
    long long bytes_in;
    double last_done;
    double *lat; size_t nlat, caplat;
    unsigned long long rng;
    /* connection and buffers */
    int fd;
    char *req; size_t reqcap;
    char *buf; size_t bufcap, buflen;  /* raw bytes read */
    char *body; size_t bodycap, bodylen;
} client_t;

static unsigned long long xrand(client_t *c) {  /* xorshift64* */
    c->rng ^= c->rng >> 12; c->rng ^= c->rng << 25; c->rng ^= c->rng >> 27;
    return c->rng * 2685821657736338717ULL;
}

static void report(const char *fmt, const char *a, long b) {
    if (atomic_fetch_add(&reported, 1) < 8) { fprintf(stderr, fmt, a, b); }
}

static void grow(char **p, size_t *cap, size_t need) {
    if (need <= *cap) return;
    size_t n = *cap ? *cap : 4096;
    while (n < need) n *= 2;
    *p = realloc(*p, n);
    if (!*p) { perror("realloc"); exit(2); }
    *cap = n;
}

static int connect_to(void) {
    struct addrinfo hints = {0}, *res = NULL;
    char portstr[16];
    snprintf(portstr, sizeof portstr, "%d", port);
    hints.ai_family = AF_UNSPEC; hints.ai_socktype = SOCK_STREAM;
    if (getaddrinfo(host, portstr, &hints, &res) != 0 || !res) return -1;
    int fd = socket(res->ai_family, SOCK_STREAM, 0);
    if (fd < 0) { freeaddrinfo(res); return -1; }
    if (connect(fd, res->ai_addr, res->ai_addrlen) != 0) { close(fd); freeaddrinfo(res); return -1; }
    freeaddrinfo(res);
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    struct timeval tv = {60, 0};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    return fd;
}

static int send_all(int fd, const char *p, size_t n) {
    while (n > 0) {
        ssize_t w = send(fd, p, n, MSG_NOSIGNAL);
        if (w < 0) { if (errno == EINTR) continue; return -1; }
        p += w; n -= (size_t)w;
    }
    return 0;
}

/* Reads more bytes into c->buf; returns bytes read, 0 on EOF, -1 on error. */
static ssize_t fill(client_t *c) {
    grow(&c->buf, &c->bufcap, c->buflen + 65536);
    for (;;) {
        ssize_t r = recv(c->fd, c->buf + c->buflen, c->bufcap - c->buflen, 0);
        if (r < 0 && errno == EINTR) continue;
        if (r > 0) { c->buflen += (size_t)r; c->bytes_in += r; }
        return r;
    }
}

static char *memfind(char *hay, size_t n, const char *needle) {
    return memmem(hay, n, needle, strlen(needle));
}

/* Reads one response; sets *status and the body in c->body. Returns 0, or -1 on a socket fault. */
static int read_response(client_t *c, int *status, int *close_after) {
    char *end;
    for (;;) {
        end = c->buflen ? memfind(c->buf, c->buflen, "\r\n\r\n") : NULL;
        if (end) break;
        if (fill(c) <= 0) return -1;
    }
    size_t hlen = (size_t)(end - c->buf) + 4;
    if (c->buflen < 12 || memcmp(c->buf, "HTTP/1.", 7) != 0) return -1;
    *status = atoi(c->buf + 9);
    long clen = -1; int chunked = 0;
    *close_after = 0;
    /* headers, case-insensitively */
    for (char *line = c->buf; line < end;) {
        char *eol = memfind(line, (size_t)(end + 2 - line), "\r\n");
        if (!eol) break;
        if (strncasecmp(line, "content-length:", 15) == 0) clen = atol(line + 15);
        else if (strncasecmp(line, "transfer-encoding:", 18) == 0 && memfind(line, (size_t)(eol - line), "chunked")) chunked = 1;
        else if (strncasecmp(line, "connection:", 11) == 0 && memfind(line, (size_t)(eol - line), "close")) *close_after = 1;
        line = eol + 2;
    }
    c->bodylen = 0;
    size_t pos = hlen;
    if (chunked) {
        for (;;) {
            char *crlf;
            while (!(crlf = memfind(c->buf + pos, c->buflen - pos, "\r\n"))) { if (fill(c) <= 0) return -1; }
            long size = strtol(c->buf + pos, NULL, 16);
            pos = (size_t)(crlf - c->buf) + 2;
            while (c->buflen - pos < (size_t)size + 2) { if (fill(c) <= 0) return -1; }
            if (size == 0) { pos += 2; break; }
            grow(&c->body, &c->bodycap, c->bodylen + (size_t)size + 1);
            memcpy(c->body + c->bodylen, c->buf + pos, (size_t)size);
            c->bodylen += (size_t)size;
            pos += (size_t)size + 2;
        }
    } else {
        if (clen < 0) clen = 0;
        while (c->buflen - pos < (size_t)clen) { if (fill(c) <= 0) return -1; }
        grow(&c->body, &c->bodycap, (size_t)clen + 1);
        memcpy(c->body, c->buf + pos, (size_t)clen);
        c->bodylen = (size_t)clen;
        pos += (size_t)clen;
    }
    c->body[c->bodylen] = 0;
    memmove(c->buf, c->buf + pos, c->buflen - pos);
    c->buflen -= pos;
    return 0;
}

static long count_occurrences(const char *hay, size_t n, const char *needle) {
    long k = 0; size_t m = strlen(needle);
    const char *p = hay, *e = hay + n;
    while ((p = memmem(p, (size_t)(e - p), needle, m))) { k++; p += m; }
    return k;
}

/* ------------------------------------------------------------------ request bodies */
static size_t build_modify(client_t *c, long seqno, int nrec) {
    const char *z = zones[nzones > 1 ? xrand(c) % (unsigned)nzones : 0];
    const char *rtype = getenv("RECLOAD_RECORD_TYPE") ? getenv("RECLOAD_RECORD_TYPE") : "AppEvent";
    size_t need = 256 + (size_t)nrec * 900 + strlen(z);
    char *body = malloc(need);
    size_t n = (size_t)snprintf(body, need, "{\"zoneID\":{\"zoneName\":\"%s\"},\"operations\":[", z);
    for (int i = 0; i < nrec; i++) {
        unsigned long long r = xrand(c);
        long long ts = 1732185600000LL + (long long)(xrand(c) % 31536000000ULL);
        n += (size_t)snprintf(body + n, need - n,
            "%s{\"operationType\":\"create\",\"record\":{\"recordName\":\"%s-%d-%ld-%d\",\"recordType\":\"%s\",\"fields\":{"
            "\"appName\":{\"value\":\"Safari\",\"type\":\"STRING\"},"
            "\"bundleID\":{\"value\":\"com.apple.mobilesafari\",\"type\":\"STRING\"},"
            "\"deviceName\":{\"value\":\"Alice's iPhone 15 Pro\",\"type\":\"STRING\"},"
            "\"timestamp\":{\"value\":%lld,\"type\":\"TIMESTAMP\"},"
            "\"duration\":{\"value\":123.4,\"type\":\"DOUBLE\"},"
            "\"category\":{\"value\":\"productivity\",\"type\":\"STRING\"},"
            "\"osVersion\":{\"value\":\"17.5.1\",\"type\":\"STRING\"},"
            "\"sessionID\":{\"value\":\"%016llx%016llx\",\"type\":\"STRING\"},"
            "\"note\":{\"value\":\"opened from home screen; focus mode off; battery 81%%; network wifi\",\"type\":\"STRING\"}}}}",
            i ? "," : "", prefix, c->id, seqno, i, rtype, ts, r, xrand(c));
    }
    n += (size_t)snprintf(body + n, need - n, "]}");
    grow(&c->req, &c->reqcap, n + 1024);
    size_t h = (size_t)snprintf(c->req, c->reqcap,
        "POST %s HTTP/1.1\r\nHost: %s:%d\r\nAuthorization: Bearer %s\r\nContent-Type: application/json\r\n"
        "Content-Length: %zu\r\n\r\n", path, host, port, token, n);
    memcpy(c->req + h, body, n);
    free(body);
    return h + n;
}

static size_t build_changes(client_t *c, const char *sync_token) {
    char body[2048];
    int n;
    if (sync_token && *sync_token)
        n = snprintf(body, sizeof body, "{\"zoneID\":{\"zoneName\":\"%s\"},\"resultsLimit\":%d,\"syncToken\":\"%s\"}", zone, limit, sync_token);
    else
        n = snprintf(body, sizeof body, "{\"zoneID\":{\"zoneName\":\"%s\"},\"resultsLimit\":%d}", zone, limit);
    grow(&c->req, &c->reqcap, (size_t)n + 1024);
    size_t h = (size_t)snprintf(c->req, c->reqcap,
        "POST %s HTTP/1.1\r\nHost: %s:%d\r\nAuthorization: Bearer %s\r\nContent-Type: application/json\r\n"
        "Content-Length: %d\r\n\r\n", path, host, port, token, n);
    memcpy(c->req + h, body, (size_t)n);
    return h + (size_t)n;
}

/* Extracts "key":"value" (string) from JSON text into out; returns 1 if found. */
static int json_string(const char *text, size_t n, const char *key, char *out, size_t cap) {
    char needle[64];
    snprintf(needle, sizeof needle, "\"%s\":", key);
    char *p = memmem(text, n, needle, strlen(needle));
    if (!p) return 0;
    p += strlen(needle);
    while (*p == ' ') p++;
    if (*p != '"') return 0;
    p++;
    size_t k = 0;
    while (*p && *p != '"' && k + 1 < cap) out[k++] = *p++;
    out[k] = 0;
    return 1;
}

/* ------------------------------------------------------------------ client thread */
static pthread_barrier_t barrier;

static void add_latency(client_t *c, double ms) {
    if (c->nlat == c->caplat) {
        c->caplat = c->caplat ? c->caplat * 2 : 65536;
        c->lat = realloc(c->lat, c->caplat * sizeof(double));
        if (!c->lat) { perror("realloc"); exit(2); }
    }
    c->lat[c->nlat++] = ms;
}

static void *run_client(void *arg) {
    client_t *c = arg;
    c->fd = -1;
    char sync_token[1024] = "";
    long seqno = 0;
    pthread_barrier_wait(&barrier);
    for (;;) {
        double t0 = now_s();
        if (t0 >= t_deadline) break;
        int nrec = batch;
        if (modify_mode && total > 0) {
            long got = atomic_fetch_add(&sent_records, batch);
            if (got >= total) break;
            if (got + batch > total) nrec = (int)(total - got);
        }
        if (c->fd < 0) {
            c->fd = connect_to();
            c->buflen = 0;
            if (c->fd < 0) { c->sockerr++; report("recload: connect failed (%s, client %ld)\n", strerror(errno), c->id); usleep(100000); continue; }
        }
        size_t len = modify_mode ? build_modify(c, seqno++, nrec) : build_changes(c, sync_token);
        int status = 0, close_after = 0;
        if (send_all(c->fd, c->req, len) != 0 || read_response(c, &status, &close_after) != 0) {
            c->sockerr++;
            report("recload: socket error (%s, client %ld)\n", errno ? strerror(errno) : "closed", c->id);
            close(c->fd); c->fd = -1;
            sync_token[0] = 0;
            continue;
        }
        if (close_after) { close(c->fd); c->fd = -1; }
        double t1 = now_s();
        if (t1 > t_deadline && total == 0) break;  /* finished after the window: not counted */
        c->requests++;
        c->last_done = t1;
        add_latency(c, (t1 - t0) * 1e3);
        if (status != 200) {
            c->non200++;
            if (status >= 500) c->s5xx++; else if (status >= 400) c->s4xx++;
            if (atomic_fetch_add(&reported, 1) < 8)
                fprintf(stderr, "recload: HTTP %d: %.300s\n", status, c->body);
            sync_token[0] = 0;
            continue;
        }
        c->ok++;
        if (modify_mode) {
            long errs = count_occurrences(c->body, c->bodylen, "\"serverErrorCode\"");
            if (errs && atomic_fetch_add(&reported, 1) < 8) fprintf(stderr, "recload: item errors: %.300s\n", c->body);
            c->item_errors += errs;
            c->records += nrec - errs;
        } else {
            c->pages++;
            c->records += count_occurrences(c->body, c->bodylen, "\"recordName\"");
            int more = memmem(c->body, c->bodylen, "\"moreComing\":true", 17) != NULL;
            if (more && json_string(c->body, c->bodylen, "syncToken", sync_token, sizeof sync_token)) {
            } else { sync_token[0] = 0; c->restarts++; }
        }
    }
    if (c->fd >= 0) close(c->fd);
    return NULL;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double pct(double *v, size_t n, double p) {
    if (!n) return 0;
    size_t i = (size_t)(p * (double)(n - 1) + 0.5);
    return v[i < n ? i : n - 1];
}

int main(int argc, char **argv) {
    if (argc < 10) {
        fprintf(stderr, "usage: recload modify HOST PORT PATH TOKEN CLIENTS SECONDS BATCH ZONES NAMEPREFIX [TOTAL]\n"
                        "       recload changes HOST PORT PATH TOKEN CLIENTS SECONDS ZONE LIMIT\n");
        return 64;
    }
    modify_mode = strcmp(argv[1], "modify") == 0;
    if (!modify_mode && strcmp(argv[1], "changes") != 0) { fprintf(stderr, "recload: unknown mode %s\n", argv[1]); return 64; }
    host = argv[2]; port = atoi(argv[3]); path = argv[4]; token = argv[5];
    nclients = atoi(argv[6]); seconds = atof(argv[7]);
    if (modify_mode) {
        if (argc < 11) { fprintf(stderr, "recload modify: missing NAMEPREFIX\n"); return 64; }
        batch = atoi(argv[8]);
        char *list = strdup(argv[9]);
        for (char *s = strtok(list, ","); s; s = strtok(NULL, ",")) {
            zones = realloc(zones, (size_t)(nzones + 1) * sizeof(char *));
            zones[nzones++] = s;
        }
        prefix = argv[10];
        total = argc > 11 ? atol(argv[11]) : 0;
        if (nzones == 0 || batch < 1) { fprintf(stderr, "recload: bad zones or batch\n"); return 64; }
    } else {
        zone = argv[8]; limit = atoi(argv[9]);
    }
    if (nclients < 1 || seconds <= 0) { fprintf(stderr, "recload: bad clients or seconds\n"); return 64; }

    client_t *cs = calloc((size_t)nclients, sizeof(client_t));
    pthread_t *th = calloc((size_t)nclients, sizeof(pthread_t));
    pthread_barrier_init(&barrier, NULL, (unsigned)nclients + 1);
    unsigned long long seed = (unsigned long long)time(NULL) ^ ((unsigned long long)getpid() << 32);
    for (int i = 0; i < nclients; i++) {
        cs[i].id = i;
        cs[i].rng = (seed + 0x9E3779B97F4A7C15ULL * (unsigned long long)(i + 1)) | 1;
        if (pthread_create(&th[i], NULL, run_client, &cs[i]) != 0) { perror("pthread_create"); return 2; }
    }
    t_start = now_s();
    t_deadline = t_start + seconds;
    pthread_barrier_wait(&barrier);
    for (int i = 0; i < nclients; i++) pthread_join(th[i], NULL);
    double t_end = now_s();

    long requests = 0, ok = 0, records = 0, item_errors = 0, non200 = 0, s4 = 0, s5 = 0, sockerr = 0, pages = 0, restarts = 0;
    long long bytes_in = 0;
    size_t nlat = 0;
    double last = t_start;
    for (int i = 0; i < nclients; i++) {
        requests += cs[i].requests; ok += cs[i].ok; records += cs[i].records; item_errors += cs[i].item_errors;
        non200 += cs[i].non200; s4 += cs[i].s4xx; s5 += cs[i].s5xx; sockerr += cs[i].sockerr;
        pages += cs[i].pages; restarts += cs[i].restarts; bytes_in += cs[i].bytes_in; nlat += cs[i].nlat;
        if (cs[i].last_done > last) last = cs[i].last_done;
    }
    double *all = malloc((nlat ? nlat : 1) * sizeof(double));
    size_t k = 0;
    for (int i = 0; i < nclients; i++) { memcpy(all + k, cs[i].lat, cs[i].nlat * sizeof(double)); k += cs[i].nlat; }
    qsort(all, nlat, sizeof(double), cmp_double);
    double secs = total > 0 ? last - t_start : (t_end < t_deadline ? t_end : t_deadline) - t_start;
    if (secs <= 0) secs = 1e-9;
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    double cpu = ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 + ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6;
    printf("requests=%ld ok_requests=%ld records=%ld item_errors=%ld non200=%ld status_4xx=%ld status_5xx=%ld sockerr=%ld "
           "secs=%.3f req_per_s=%.1f records_per_s=%.1f p50_ms=%.3f p90_ms=%.3f p99_ms=%.3f p999_ms=%.3f max_ms=%.3f cpu_s=%.3f "
           "pages=%ld restarts=%ld bytes_in=%lld\n",
           requests, ok, records, item_errors, non200, s4, s5, sockerr, secs, requests / secs, records / secs,
           pct(all, nlat, 0.50), pct(all, nlat, 0.90), pct(all, nlat, 0.99), pct(all, nlat, 0.999),
           nlat ? all[nlat - 1] : 0.0, cpu, pages, restarts, bytes_in);
    return 0;
}
