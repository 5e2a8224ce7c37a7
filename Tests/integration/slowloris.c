/*
 * slowloris: slow-header connections against a server on 127.0.0.1, measuring how long the server
 * lets each one live (Tests/integration/scenarios/81-slowloris.sh, bench/slowloris.sh; compiled at
 * run time with cc or clang).
 *
 *   slowloris PORT COUNT SECONDS INTERVAL_MS [SILENT_MS]
 *
 * Opens COUNT connections. Each sends "GET /healthz HTTP/1.1\r\nHost: x\r\n" at once (every other
 * one first stays silent for SILENT_MS, default 0, to check that waiting before the first byte
 * buys no extra time), then one more header line every INTERVAL_MS, never the blank line that ends
 * the head. Whatever the server sends is read; a connection counts as closed by the server when a
 * read returns end-of-file or an error. Runs until every connection is closed or SECONDS pass, then
 * prints one line:
 *   opened N failed F closed C answered408 A open O max_ms X p50_ms Y p99_ms Z
 * where the times are each connection's lifetime from connect to the server's close.
 * Loopback only; bounded in count (at most 20000) and time.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static long long now_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (long long)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

static int compare(const void *a, const void *b) {
    long long x = *(const long long *)a, y = *(const long long *)b;
    return x < y ? -1 : x > y;
}

struct conn {
    int fd;
    long long opened, closed, next_send;
    int started, got408, header;
    char first[16];
    int first_len;
};

int main(int argc, char **argv) {
    if (argc < 5) {
        fprintf(stderr, "usage: slowloris PORT COUNT SECONDS INTERVAL_MS [SILENT_MS]\n");
        return 2;
    }
    int port = atoi(argv[1]), count = atoi(argv[2]), seconds = atoi(argv[3]), interval = atoi(argv[4]);
    int silent = argc > 5 ? atoi(argv[5]) : 0;
    if (count < 1 || count > 20000 || seconds < 1 || seconds > 600 || interval < 1) {
        fprintf(stderr, "slowloris: out of range\n");
        return 2;
    }
    signal(SIGPIPE, SIG_IGN);
    struct rlimit limit;
    if (getrlimit(RLIMIT_NOFILE, &limit) == 0 && limit.rlim_cur < (rlim_t)count + 64) {
        limit.rlim_cur = limit.rlim_max < (rlim_t)count + 64 ? limit.rlim_max : (rlim_t)count + 64;
        setrlimit(RLIMIT_NOFILE, &limit);
    }
    struct conn *conns = calloc(count, sizeof *conns);
    struct pollfd *fds = calloc(count, sizeof *fds);
    int *index = calloc(count, sizeof *index);
    struct sockaddr_in address = {.sin_family = AF_INET, .sin_port = htons(port)};
    inet_pton(AF_INET, "127.0.0.1", &address.sin_addr);
    int opened = 0, failed = 0;
    for (int i = 0; i < count; i++) {
        conns[i].fd = -1;
        int fd = socket(AF_INET, SOCK_STREAM, 0);
        if (fd < 0 || connect(fd, (struct sockaddr *)&address, sizeof address) != 0) {
            if (failed++ == 0) perror("slowloris: connect");
            if (fd >= 0) close(fd);
            continue;
        }
        conns[i].fd = fd;
        conns[i].opened = now_ms();
        conns[i].next_send = conns[i].opened + ((silent > 0 && i % 2 == 1) ? silent : 0);
        opened++;
    }
    const char *request = "GET /healthz HTTP/1.1\r\nHost: x\r\n";
    long long deadline = now_ms() + (long long)seconds * 1000;
    int open = opened;
    while (open > 0 && now_ms() < deadline) {
        long long now = now_ms();
        int n = 0;
        for (int i = 0; i < count; i++) {
            struct conn *c = &conns[i];
            if (c->fd < 0 || c->closed) continue;
            if (now >= c->next_send) {
                char line[64];
                int length;
                if (!c->started) {
                    length = snprintf(line, sizeof line, "%s", request);
                    c->started = 1;
                } else {
                    length = snprintf(line, sizeof line, "X-Slow-%d: %d\r\n", c->header++, i);
                }
                if (send(c->fd, line, length, MSG_NOSIGNAL) < 0 && errno != EAGAIN) {
                    /* The server closed; the read below sees it. */
                }
                c->next_send = now + interval;
            }
            fds[n].fd = c->fd;
            fds[n].events = POLLIN;
            fds[n].revents = 0;
            index[n] = i;
            n++;
        }
        if (poll(fds, n, 20) < 0 && errno != EINTR) break;
        for (int k = 0; k < n; k++) {
            if (!fds[k].revents) continue;
            struct conn *c = &conns[index[k]];
            char buffer[4096];
            ssize_t got = recv(c->fd, buffer, sizeof buffer, MSG_DONTWAIT);
            if (got > 0) {
                int copy = got < (ssize_t)(sizeof c->first - 1 - c->first_len) ? (int)got : (int)(sizeof c->first - 1 - c->first_len);
                memcpy(c->first + c->first_len, buffer, copy);
                c->first_len += copy;
                if (c->first_len >= 12 && strncmp(c->first, "HTTP/1.1 408", 12) == 0) c->got408 = 1;
                continue;
            }
            if (got < 0 && (errno == EAGAIN || errno == EINTR)) continue;
            c->closed = now_ms();
            open--;
        }
    }
    long long *lifetimes = calloc(count, sizeof *lifetimes);
    int closed = 0, answered = 0;
    for (int i = 0; i < count; i++) {
        if (conns[i].fd < 0) continue;
        if (conns[i].closed) lifetimes[closed++] = conns[i].closed - conns[i].opened;
        if (conns[i].got408) answered++;
        close(conns[i].fd);
    }
    qsort(lifetimes, closed, sizeof *lifetimes, compare);
    printf("opened %d failed %d closed %d answered408 %d open %d max_ms %lld p50_ms %lld p99_ms %lld\n",
           opened, failed, closed, answered, opened - closed,
           closed ? lifetimes[closed - 1] : -1LL, closed ? lifetimes[closed / 2] : -1LL,
           closed ? lifetimes[(closed * 99) / 100 < closed ? (closed * 99) / 100 : closed - 1] : -1LL);
    return 0;
}
