/* querydb_load.c — load generator for querydb: -connections C threads, each
 * on its own connection, send "GET k<i>\n" and read the answer, one request
 * at a time, for -seconds S; prints the transactions per second:
 *   querydb_load: 123456 transactions in 5.0 s, 24691.2 tps
 * Exit status 1 if a connection fails or an answer is wrong.
 *
 * usage: querydb_load -port P [-connections C] [-seconds S]
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static unsigned port;
static double seconds = 5;

typedef struct {
    long done;
    int failed;
} result;

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static void *run(void *arg)
{
    result *r = arg;
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof a) != 0) {
        r->failed = 1;
        return NULL;
    }
    double end = now_s() + seconds;
    char req[64], ans[256];
    for (long i = 0; now_s() < end; i++) {
        int n = snprintf(req, sizeof req, "GET k%ld\n", i % 4096);
        if (write(fd, req, (size_t)n) != n) {
            r->failed = 1;
            break;
        }
        size_t have = 0;
        while (have == 0 || ans[have - 1] != '\n') {
            ssize_t got = read(fd, ans + have, sizeof ans - have);
            if (got <= 0 || (have += (size_t)got) == sizeof ans) {
                r->failed = 1;
                close(fd);
                return NULL;
            }
        }
        if (strncmp(ans, req + 4, (size_t)n - 5) != 0 || ans[n - 5] != '=') {
            r->failed = 1;
            break;
        }
        r->done++;
    }
    close(fd);
    return NULL;
}

int main(int argc, char **argv)
{
    int conns = 2;
    for (int i = 1; i + 1 < argc; i += 2) {
        const char *a = argv[i][1] == '-' ? argv[i] + 1 : argv[i];
        if (strcmp(a, "-port") == 0)
            port = (unsigned)atoi(argv[i + 1]);
        else if (strcmp(a, "-connections") == 0)
            conns = atoi(argv[i + 1]);
        else if (strcmp(a, "-seconds") == 0)
            seconds = atof(argv[i + 1]);
        else
            port = 0;
    }
    if (!port || conns < 1 || conns > 256 || seconds <= 0) {
        fprintf(stderr, "usage: querydb_load -port P [-connections C] [-seconds S]\n");
        return 2;
    }
    pthread_t t[256];
    result r[256];
    memset(r, 0, sizeof r);
    double t0 = now_s();
    for (int i = 0; i < conns; i++)
        pthread_create(&t[i], NULL, run, &r[i]);
    long total = 0;
    int failed = 0;
    for (int i = 0; i < conns; i++) {
        pthread_join(t[i], NULL);
        total += r[i].done;
        failed |= r[i].failed;
    }
    double dt = now_s() - t0;
    printf("querydb_load: %ld transactions in %.1f s, %.1f tps\n", total, dt, total / dt);
    if (failed)
        fprintf(stderr, "querydb_load: a connection failed or got a wrong answer\n");
    return failed;
}
