// LD_PRELOAD shim for tests: every c10::Error whose message says "Operation timed out!" (torch's Work::wait when a
// wait of limited length ran out) sleeps LATE_TIMEOUT_MS (default 100) before it is thrown. It changes no logic; it
// widens, on purpose, the moment a loaded machine leaves by chance between a waited-for collective's time running
// out and the waiter looking at it again, in which gloo's thread may finish the collective.
#include <dlfcn.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <exception>
#include <typeinfo>

extern "C" {

using ThrowFn = void (*)(void*, std::type_info*, void (*)(void*));

[[noreturn]] void __cxa_throw(void* object, std::type_info* type, void (*destroy)(void*)) {
  static const auto real = reinterpret_cast<ThrowFn>(dlsym(RTLD_NEXT, "__cxa_throw"));
  if (type != nullptr && std::strcmp(type->name(), "N3c105ErrorE") == 0) {
    const char* what = static_cast<std::exception*>(object)->what();
    if (what != nullptr && std::strstr(what, "Operation timed out!") != nullptr) {
      const char* ms = std::getenv("LATE_TIMEOUT_MS");
      ::usleep(static_cast<useconds_t>((ms != nullptr ? std::atoi(ms) : 100) * 1000));
    }
  }
  real(object, type, destroy);
  __builtin_unreachable();
}

}  // extern "C"
