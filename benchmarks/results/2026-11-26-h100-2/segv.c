/* LD_PRELOAD'ed into a process that dies by SIGSEGV: prints the native stack (the functions of
   libllama and libggml by name) and the faulting address to stderr, then dies as before.
   gcc -shared -fPIC -o segv.so segv.c */
#define _GNU_SOURCE
#include <execinfo.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static void on_segv(int sig, siginfo_t *info, void *context) {
    (void)context;
    void *frames[64];
    char line[96];
    int n = backtrace(frames, 64);
    int length = snprintf(line, sizeof line, "native stack at SIGSEGV, address %p:\n", info->si_addr);
    write(2, line, (size_t)length);
    backtrace_symbols_fd(frames, n, 2);
    signal(sig, SIG_DFL);
    raise(sig);
}

__attribute__((constructor)) static void install(void) {
    struct sigaction action;
    memset(&action, 0, sizeof action);
    action.sa_sigaction = on_segv;
    action.sa_flags = SA_SIGINFO;
    sigaction(SIGSEGV, &action, NULL);
}
