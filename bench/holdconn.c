/*
 * holdconn: a tiny helper for bench/http.sh (compiled at run time with cc or clang).
 *
 *   holdconn freeport
 *       Prints a TCP port on 127.0.0.1 that was free a moment ago.
 *
 *   holdconn hold HOST PORT COUNT HOLD_SECONDS [PATH]
 *       Opens COUNT connections one after another; on each sends one
 *       "GET PATH HTTP/1.1" (keep-alive) and reads the whole response, so the
 *       server holds COUNT idle keep-alive connections. Prints
 *           opened N failed F non200 B ms T
 *           ready
 *       then sleeps HOLD_SECONDS, checks which connections the server closed,
 *       prints "alive A closed C" and exits (closing everything).
 *       Errors (first of each kind) go to stderr.
 *
 * Loopback benchmarking only; bounded in count and time. HTTP: bench/httpclient.h.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "httpclient.h"

static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static int free_port(void) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {0};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = 0;
    socklen_t len = sizeof a;
    if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof a) != 0 || getsockname(fd, (struct sockaddr *)&a, &len) != 0) {
        perror("holdconn freeport");
        return 1;
    }
    printf("%d\n", ntohs(a.sin_port));
    close(fd);
    return 0;
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

static int hold(const char *host, int port, int count, int hold_seconds, const char *path) {
    raise_nofile(count + 64);
    int *fds = calloc((size_t)count, sizeof *fds);
    if (!fds) return 1;
    struct in_addr a;
    if (inet_pton(AF_INET, host, &a) != 1) { fprintf(stderr, "holdconn: bad host %s\n", host); return 2; }

    char request[512];
    int request_len = snprintf(request, sizeof request, "GET %s HTTP/1.1\r\nHost: %s:%d\r\nUser-Agent: holdconn\r\nAccept: */*\r\n\r\n",
                               path, host, port);
    http_conn conn = {.fd = -1};  /* one connection at a time; its fd is kept in fds once answered */
    int opened = 0, failed = 0, non200 = 0;
    char last_error[256] = "";
    int reported = 0;
    double start = now_ms();
    for (int i = 0; i < count; i++) {
        const char *why = NULL;
        int status = 0, close_after = 0;
        int fd = conn.fd = http_connect(host, port, 5); /* 5 s timeouts, connect() included */
        conn.buflen = 0;
        if (fd < 0) { why = strerror(errno); goto fail; }
        if (http_send_all(fd, request, (size_t)request_len) != 0) { why = "send failed"; goto fail; }
        if (http_read_response(&conn, &status, &close_after) != 0) { why = conn.error; goto fail; }
        if (status != 200) non200++;
        fds[opened++] = fd;
        continue;
    fail:
        failed++;
        if (fd >= 0) close(fd);
        if (strcmp(last_error, why) != 0 && reported < 5) {
            fprintf(stderr, "holdconn: connection #%d (%d already open): %s\n", i + 1, opened, why);
            snprintf(last_error, sizeof last_error, "%s", why);
            reported++;
        }
    }
    printf("opened %d failed %d non200 %d ms %.0f\nready\n", opened, failed, non200, now_ms() - start);
    fflush(stdout);

    sleep((unsigned)hold_seconds);

    int alive = 0, closed = 0;
    for (int i = 0; i < opened; i++) {
        struct pollfd p = {.fd = fds[i], .events = POLLIN | POLLRDHUP};
        int r = poll(&p, 1, 0);
        if (r == 0) { alive++; continue; }
        char c;
        if ((p.revents & (POLLERR | POLLHUP | POLLRDHUP)) || recv(fds[i], &c, 1, MSG_PEEK | MSG_DONTWAIT) <= 0) closed++;
        else alive++; /* unexpected bytes, but still open */
    }
    printf("alive %d closed %d\n", alive, closed);
    fflush(stdout);
    for (int i = 0; i < opened; i++) close(fds[i]);
    free(fds);
    return failed ? 3 : 0;
}

int main(int argc, char **argv) {
    if (argc >= 2 && strcmp(argv[1], "freeport") == 0) return free_port();
    if (argc >= 6 && strcmp(argv[1], "hold") == 0) {
        int count = atoi(argv[4]), secs = atoi(argv[5]);
        if (count < 1 || count > 60000 || secs < 0 || secs > 300) { fprintf(stderr, "holdconn: bad COUNT or HOLD_SECONDS\n"); return 2; }
        return hold(argv[2], atoi(argv[3]), count, secs, argc >= 7 ? argv[6] : "/limits");
    }
    fprintf(stderr, "usage: holdconn freeport | holdconn hold HOST PORT COUNT HOLD_SECONDS [PATH]\n");
    return 2;
}
