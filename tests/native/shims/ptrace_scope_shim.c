// A stand-in for Yama's ptrace_scope, loaded with LD_PRELOAD into test ranks (the tests run as root, whom Yama
// never restricts). PTRACE_SHIM_MODE=yama: process_vm_readv/writev into a process fail with EPERM unless that
// process named the caller (or any process) its tracer with prctl(PR_SET_PTRACER), as Ubuntu's default
// ptrace_scope=1 behaves for siblings; PTRACE_SHIM_MODE=never: they always fail (ptrace_scope=3, or a security
// module). prctl(PR_SET_PTRACER) is recorded in PTRACE_SHIM_DIR/<pid> and succeeds, as it does under Yama.
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <unistd.h>

#ifndef PR_SET_PTRACER
#define PR_SET_PTRACER 0x59616d61
#endif

static const char* shim_dir(void) {
  return getenv("PTRACE_SHIM_DIR");
}

int prctl(int option, ...) {
  va_list ap;
  va_start(ap, option);
  unsigned long a2 = va_arg(ap, unsigned long);
  unsigned long a3 = va_arg(ap, unsigned long);
  unsigned long a4 = va_arg(ap, unsigned long);
  unsigned long a5 = va_arg(ap, unsigned long);
  va_end(ap);
  if (option == PR_SET_PTRACER && shim_dir() != NULL) {
    char path[512];
    snprintf(path, sizeof(path), "%s/%d", shim_dir(), (int)getpid());
    FILE* f = fopen(path, "w");
    if (f != NULL) {
      fprintf(f, "%lu\n", a2);
      fclose(f);
    }
    return 0;
  }
  int (*real)(int, ...) = (int (*)(int, ...))dlsym(RTLD_NEXT, "prctl");
  return real(option, a2, a3, a4, a5);
}

// Whether `target` let this process read it.
static int allowed(pid_t target) {
  const char* mode = getenv("PTRACE_SHIM_MODE");
  if (mode != NULL && strcmp(mode, "never") == 0) return 0;
  if (shim_dir() == NULL) return 1;
  char path[512];
  snprintf(path, sizeof(path), "%s/%d", shim_dir(), (int)target);
  FILE* f = fopen(path, "r");
  if (f == NULL) return 0;
  unsigned long tracer = 0;
  const int got = fscanf(f, "%lu", &tracer);
  fclose(f);
  return got == 1 && (tracer == (unsigned long)-1 || tracer == (unsigned long)getpid());
}

typedef ssize_t (*vm_fn)(pid_t, const struct iovec*, unsigned long, const struct iovec*, unsigned long, unsigned long);

static ssize_t forward(const char* name, pid_t pid, const struct iovec* local, unsigned long nlocal,
                       const struct iovec* remote, unsigned long nremote, unsigned long flags) {
  if (!allowed(pid)) {
    errno = EPERM;
    return -1;
  }
  vm_fn real = (vm_fn)dlsym(RTLD_NEXT, name);
  return real(pid, local, nlocal, remote, nremote, flags);
}

ssize_t process_vm_readv(pid_t pid, const struct iovec* local, unsigned long nlocal, const struct iovec* remote,
                         unsigned long nremote, unsigned long flags) {
  return forward("process_vm_readv", pid, local, nlocal, remote, nremote, flags);
}

ssize_t process_vm_writev(pid_t pid, const struct iovec* local, unsigned long nlocal, const struct iovec* remote,
                          unsigned long nremote, unsigned long flags) {
  return forward("process_vm_writev", pid, local, nlocal, remote, nremote, flags);
}
