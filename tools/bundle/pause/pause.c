/*
 * pause: the process that holds a pod's namespaces open (the sandbox container of every pod).
 *
 * It sleeps until SIGINT or SIGTERM, exits 0 then, and reaps orphaned children when it runs as
 * PID 1 of a pod that shares its PID namespace. `pause -v` prints the version. Built by the
 * slipway.cluster bundle builder with `gcc -Os -static`; PAUSE_VERSION comes from the pause
 * image tag kubeadm expects.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#ifndef PAUSE_VERSION
#define PAUSE_VERSION "unknown"
#endif

static void on_stop(int signo) {
    (void)signo;
    _exit(0);
}

static void on_child(int signo) {
    (void)signo;
    while (waitpid(-1, NULL, WNOHANG) > 0) {
    }
}

int main(int argc, char **argv) {
    struct sigaction action;

    if (argc == 2 && strcmp(argv[1], "-v") == 0) {
        printf("pause.c %s (slipway.cluster)\n", PAUSE_VERSION);
        return 0;
    }
    if (getpid() != 1) {
        fprintf(stderr, "Warning: pause should be the first process\n");
    }

    memset(&action, 0, sizeof(action));
    action.sa_handler = on_stop;
    if (sigaction(SIGINT, &action, NULL) < 0 || sigaction(SIGTERM, &action, NULL) < 0) {
        perror("sigaction");
        return 1;
    }
    memset(&action, 0, sizeof(action));
    action.sa_handler = on_child;
    action.sa_flags = SA_NOCLDSTOP;
    if (sigaction(SIGCHLD, &action, NULL) < 0) {
        perror("sigaction");
        return 2;
    }

    for (;;) {
        pause();
    }
    fprintf(stderr, "Error: infinite loop terminated\n");
    return 42;
}
