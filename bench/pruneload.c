/*
 * pruneload: write load for bench/prune.sh (compiled at run time with cc or clang).
 * CLIENTS threads, one keep-alive connection each (reconnects if the server closes it), each
 * sending records/modify requests with ONE `create` of a BlockedAppEvent (timestamp = now, so
 * never expired) named PREFIX-<client>-<random hex> into ZONE, back to back.
 *
 *   pruneload HOST PORT PATH TOKEN CLIENTS MAX_SECONDS ZONE PREFIX SAMPLES_FILE
 *
 * Runs until SIGTERM, SIGINT or SIGUSR1 (or MAX_SECONDS), then writes one line per completed
 * request to SAMPLES_FILE:  <start, ms since the epoch (CLOCK_REALTIME)> <latency ms> <HTTP
 * status> <item errors>  so that the caller can cut the run into windows by wall-clock time,
 * and prints `requests=N ok=N item_errors=N non200=N sockerr=N secs=S` on stdout.
 * Loopback benchmarking only; bounded in time.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

static const char *host, *path, *token, *zone, *prefix;
static int port, nclients;
static double max_seconds;
static volatile sig_atomic_t stop_requested;
static atomic_int reported;

static double mono_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

static long long real_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

typedef struct { long long start_ms; float latency_ms; short status; short item_errors; } sample_t;

typedef struct {
    int id;
    unsigned long long rng;
    long requests, ok, item_errors, non200, sockerr;
    sample_t *samples; size_t nsamples, capsamples;
    int fd;
    char *buf; size_t bufcap, buflen;
    char *body; size_t bodycap, bodylen;
    char req[4096];
} client_t;

static unsigned long long xrand(client_t *c) {  /* xorshift64* */
    c->rng ^= c->rng >> 12; c->rng ^= c->rng << 25; c->rng ^= c->rng >> 27;
    return c->rng * 2685821657736338717ULL;
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

static ssize_t fill(client_t *c) {
    grow(&c->buf, &c->bufcap, c->buflen + 65536);
    for (;;) {
        ssize_t r = recv(c->fd, c->buf + c->buflen, c->bufcap - c->buflen, 0);
        if (r < 0 && errno == EINTR) continue;
        if (r > 0) c->buflen += (size_t)r;
        return r;
    }
}

/* One response with Content-Length (Nimbus answers records/modify that way); the body goes to
 * c->body. Returns 0, or -1 on a socket fault or a framing it does not handle. */
static int read_response(client_t *c, int *status, int *close_after) {
    char *end;
    for (;;) {
        end = c->buflen ? memmem(c->buf, c->buflen, "\r\n\r\n", 4) : NULL;
        if (end) break;
        if (fill(c) <= 0) return -1;
    }
    size_t hlen = (size_t)(end - c->buf) + 4;
    if (c->buflen < 12 || memcmp(c->buf, "HTTP/1.", 7) != 0) return -1;
    *status = atoi(c->buf + 9);
    long clen = -1;
    *close_after = 0;
    for (char *line = c->buf; line < end;) {
        char *eol = memmem(line, (size_t)(end + 2 - line), "\r\n", 2);
        if (!eol) break;
        if (strncasecmp(line, "content-length:", 15) == 0) clen = atol(line + 15);
        else if (strncasecmp(line, "transfer-encoding:", 18) == 0) return -1;
        else if (strncasecmp(line, "connection:", 11) == 0 && memmem(line, (size_t)(eol - line), "close", 5)) *close_after = 1;
        line = eol + 2;
    }
    if (clen < 0) clen = 0;
    while (c->buflen - hlen < (size_t)clen) { if (fill(c) <= 0) return -1; }
    grow(&c->body, &c->bodycap, (size_t)clen + 1);
    memcpy(c->body, c->buf + hlen, (size_t)clen);
    c->bodylen = (size_t)clen;
    c->body[c->bodylen] = 0;
    memmove(c->buf, c->buf + hlen + clen, c->buflen - hlen - (size_t)clen);
    c->buflen -= hlen + (size_t)clen;
    return 0;
}

static size_t build_request(client_t *c) {
    char body[1024];
    int n = snprintf(body, sizeof body,
        "{\"zoneID\":{\"zoneName\":\"%s\"},\"operations\":[{\"operationType\":\"create\",\"record\":{"
        "\"recordName\":\"%s-%d-%016llX\",\"recordType\":\"BlockedAppEvent\",\"fields\":{"
        "\"appName\":{\"value\":\"Safari\"},\"bundleID\":{\"value\":\"com.apple.mobilesafari\"},"
        "\"deviceName\":{\"value\":\"Alice's iPhone 15 Pro\"},\"timestamp\":{\"value\":%lld,\"type\":\"TIMESTAMP\"}}}}]}",
        zone, prefix, c->id, xrand(c), real_ms());
    int h = snprintf(c->req, sizeof c->req,
        "POST %s HTTP/1.1\r\nHost: %s:%d\r\nAuthorization: Bearer %s\r\nContent-Type: application/json\r\n"
        "Content-Length: %d\r\n\r\n%s", path, host, port, token, n, body);
    return (size_t)h;
}

static void add_sample(client_t *c, long long start_ms, double ms, int status, int item_errors) {
    if (c->nsamples == c->capsamples) {
        c->capsamples = c->capsamples ? c->capsamples * 2 : 65536;
        c->samples = realloc(c->samples, c->capsamples * sizeof(sample_t));
        if (!c->samples) { perror("realloc"); exit(2); }
    }
    c->samples[c->nsamples++] = (sample_t){start_ms, (float)ms, (short)status, (short)item_errors};
}

static double t_deadline;

static void *run_client(void *arg) {
    client_t *c = arg;
    c->fd = -1;
    while (!stop_requested && mono_s() < t_deadline) {
        if (c->fd < 0) {
            c->fd = connect_to();
            c->buflen = 0;
            if (c->fd < 0) {
                c->sockerr++;
                if (atomic_fetch_add(&reported, 1) < 8) fprintf(stderr, "pruneload: connect failed: %s\n", strerror(errno));
                usleep(100000);
                continue;
            }
        }
        size_t len = build_request(c);
        long long start_ms = real_ms();
        double t0 = mono_s();
        int status = 0, close_after = 0;
        if (send_all(c->fd, c->req, len) != 0 || read_response(c, &status, &close_after) != 0) {
            c->sockerr++;
            if (atomic_fetch_add(&reported, 1) < 8) fprintf(stderr, "pruneload: socket error: %s\n", errno ? strerror(errno) : "closed");
            close(c->fd); c->fd = -1;
            continue;
        }
        double ms = (mono_s() - t0) * 1e3;
        if (close_after) { close(c->fd); c->fd = -1; }
        int errs = 0;
        if (status == 200 && memmem(c->body, c->bodylen, "\"serverErrorCode\"", 17)) errs = 1;
        if ((status != 200 || errs) && atomic_fetch_add(&reported, 1) < 8)
            fprintf(stderr, "pruneload: HTTP %d: %.300s\n", status, c->body);
        c->requests++;
        if (status == 200 && !errs) c->ok++;
        if (status != 200) c->non200++;
        c->item_errors += errs;
        add_sample(c, start_ms, ms, status, errs);
    }
    if (c->fd >= 0) close(c->fd);
    return NULL;
}

static void on_signal(int sig) { (void)sig; stop_requested = 1; }

int main(int argc, char **argv) {
    if (argc != 10) {
        fprintf(stderr, "usage: pruneload HOST PORT PATH TOKEN CLIENTS MAX_SECONDS ZONE PREFIX SAMPLES_FILE\n");
        return 64;
    }
    host = argv[1]; port = atoi(argv[2]); path = argv[3]; token = argv[4];
    nclients = atoi(argv[5]); max_seconds = atof(argv[6]); zone = argv[7]; prefix = argv[8];
    const char *samples_file = argv[9];
    if (nclients < 1 || max_seconds <= 0) { fprintf(stderr, "pruneload: bad clients or seconds\n"); return 64; }
    struct sigaction sa = {0};
    sa.sa_handler = on_signal;  /* no SA_RESTART: a blocked recv returns EINTR and is retried */
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGUSR1, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);

    client_t *clients = calloc((size_t)nclients, sizeof(client_t));
    pthread_t *threads = calloc((size_t)nclients, sizeof(pthread_t));
    double t_start = mono_s();
    t_deadline = t_start + max_seconds;
    /* Worker threads do not take the signals: the main thread does, and they see the flag. */
    sigset_t block, old;
    sigemptyset(&block);
    sigaddset(&block, SIGTERM); sigaddset(&block, SIGINT); sigaddset(&block, SIGUSR1);
    pthread_sigmask(SIG_BLOCK, &block, &old);
    for (int i = 0; i < nclients; i++) {
        clients[i].id = i;
        clients[i].rng = 0x9E3779B97F4A7C15ULL ^ ((unsigned long long)getpid() << 20) ^ (unsigned long long)(i + 1) * 0xBF58476D1CE4E5B9ULL;
        pthread_create(&threads[i], NULL, run_client, &clients[i]);
    }
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    while (!stop_requested && mono_s() < t_deadline) usleep(20000);
    stop_requested = 1;
    for (int i = 0; i < nclients; i++) pthread_join(threads[i], NULL);
    double secs = mono_s() - t_start;

    FILE *out = fopen(samples_file, "w");
    if (!out) { perror(samples_file); return 1; }
    long requests = 0, ok = 0, item_errors = 0, non200 = 0, sockerr = 0;
    for (int i = 0; i < nclients; i++) {
        client_t *c = &clients[i];
        for (size_t k = 0; k < c->nsamples; k++)
            fprintf(out, "%lld %.3f %d %d\n", c->samples[k].start_ms, c->samples[k].latency_ms, c->samples[k].status, c->samples[k].item_errors);
        requests += c->requests; ok += c->ok; item_errors += c->item_errors; non200 += c->non200; sockerr += c->sockerr;
    }
    fclose(out);
    printf("requests=%ld ok=%ld item_errors=%ld non200=%ld sockerr=%ld secs=%.2f\n", requests, ok, item_errors, non200, sockerr, secs);
    return 0;
}
