#include "comm/bootstrap/tcp_store.h"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <map>
#include <sstream>
#include <thread>
#include <vector>

#include "core/host.h"
#include "core/interrupt.h"
#include "core/per_process.h"
#include "core/status.h"

namespace atb_ops {
namespace {

using Clock = std::chrono::steady_clock;

std::string text(const sockaddr* a) {
  char buf[INET_ADDRSTRLEN] = {0};
  ::inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in*>(a)->sin_addr, buf, sizeof(buf));
  return buf;
}

bool loopback(const sockaddr* a) {
  return (ntohl(reinterpret_cast<const sockaddr_in*>(a)->sin_addr.s_addr) >> 24) == 127;
}

// The first IPv4 address of an interface named in `names` (HCCL_SOCKET_IFNAME: comma-separated, '=' for an exact
// match; a name without '=' also matches as a prefix), or of any non-loopback interface when `names` is empty.
std::string interfaceAddress(const std::string& names) {
  std::vector<std::pair<std::string, bool>> wanted;  // name, exact
  std::stringstream list(names);
  for (std::string item; std::getline(list, item, ',');) {
    if (item.empty() || item[0] == '^') continue;  // exclusions: any other interface will do
    const bool exact = item[0] == '=';
    wanted.emplace_back(exact ? item.substr(1) : item, exact);
  }
  ifaddrs* all = nullptr;
  if (::getifaddrs(&all) != 0) return "";
  std::string found;
  for (const ifaddrs* i = all; i != nullptr && found.empty(); i = i->ifa_next) {
    if (i->ifa_addr == nullptr || i->ifa_addr->sa_family != AF_INET || (i->ifa_flags & IFF_UP) == 0) continue;
    const std::string name = i->ifa_name;
    bool match = wanted.empty() && !loopback(i->ifa_addr);
    for (const auto& [w, exact] : wanted) match = match || (exact ? name == w : name.rfind(w, 0) == 0);
    if (match) found = text(i->ifa_addr);
  }
  ::freeifaddrs(all);
  return found;
}

std::string hostNameAddress() {
  addrinfo hints{};
  hints.ai_family = AF_INET;
  addrinfo* res = nullptr;
  if (::getaddrinfo(hostName().c_str(), nullptr, &hints, &res) != 0) return "";
  std::string found;
  for (const addrinfo* a = res; a != nullptr && found.empty(); a = a->ai_next) {
    if (!loopback(a->ai_addr)) found = text(a->ai_addr);
  }
  ::freeaddrinfo(res);
  return found;
}

}  // namespace

std::string reachableAddress() {
  if (const char* ip = std::getenv("HCCL_IF_IP"); ip != nullptr && *ip != '\0') return ip;
  if (const char* names = std::getenv("HCCL_SOCKET_IFNAME"); names != nullptr && *names != '\0') {
    const std::string found = interfaceAddress(names);
    ATB_CHECK(!found.empty(), ERROR_INVALID_PARAM, "HCCL_SOCKET_IFNAME='", names,
              "' names no interface of this host that is up with an IPv4 address");
    return found;
  }
  if (std::string byName = hostNameAddress(); !byName.empty()) return byName;
  if (std::string any = interfaceAddress(""); !any.empty()) return any;
  return "127.0.0.1";
}

namespace {

// torch's errors carry C++ frames in what(): a user reads the reason only.
std::string reasonOf(const std::exception& e) {
  const auto* error = dynamic_cast<const c10::Error*>(&e);
  return error != nullptr ? error->what_without_backtrace() : e.what();
}

}  // namespace

c10::intrusive_ptr<c10d::Store> serveStore(uint16_t port, std::chrono::milliseconds timeout, uint16_t* chosen) {
  c10d::TCPStoreOptions opts;
  opts.port = port;
  opts.isServer = true;
  opts.waitWorkers = false;
  opts.timeout = timeout;
  try {
    auto store = c10::make_intrusive<c10d::TCPStore>("127.0.0.1", opts);
    if (chosen != nullptr) *chosen = store->getPort();
    return store;
  } catch (const std::exception& e) {
    ATB_FAIL(ERROR_RT_FAIL, "cannot serve a TCPStore on port ", port, " of this host: ", reasonOf(e));
  }
}

namespace {

// Whether a TCP connection to host:port opens before `deadline`, retried while it is refused (the server not up yet)
// or times out; `*why` says what the last try met. torch's client, given a server that never answers, retries a
// connect that used its whole timeout once more after a back-off, logging C++ frames each time (a rank table whose
// first server serves no store, ATB_OPS_TIMEOUT=6: 14 s): it is given the port only once this has reached it.
bool portOpens(const std::string& host, uint16_t port, std::chrono::steady_clock::time_point deadline,
               std::string* why) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  while (true) {
    throwIfInterrupted("connecting to a TCPStore");
    addrinfo* res = nullptr;
    const int rc = ::getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &res);
    if (rc != 0) {
      *why = std::string("cannot resolve the host: ") + ::gai_strerror(rc);
    }
    for (const addrinfo* a = res; a != nullptr; a = a->ai_next) {
      const int fd = ::socket(a->ai_family, a->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, a->ai_protocol);
      if (fd < 0) continue;
      int error = ::connect(fd, a->ai_addr, a->ai_addrlen) == 0 ? 0 : errno;
      if (error == EINPROGRESS) {
        const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
        pollfd p{fd, POLLOUT, 0};
        // In slices, so that Ctrl-C is seen between them.
        const int ready = ::poll(&p, 1, static_cast<int>(std::clamp<int64_t>(left.count(), 0, 500)));
        socklen_t len = sizeof(error);
        if (ready <= 0 || ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &len) != 0) error = ETIMEDOUT;
      }
      ::close(fd);
      if (error == 0) {
        ::freeaddrinfo(res);
        return true;
      }
      *why = std::strerror(error);
    }
    if (res != nullptr) ::freeaddrinfo(res);
    if (Clock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::min<Clock::duration>(std::chrono::milliseconds(100), deadline - Clock::now()));
  }
}

c10::intrusive_ptr<c10d::Store> connectStore(const std::string& host, uint16_t port, const Timeout& timeout) {
  std::string why = "no answer";
  ATB_CHECK(portOpens(host, port, Clock::now() + timeout.value, &why), ERROR_COMM_TIMEOUT,
            "cannot reach the TCPStore at ", host, ":", port, " within ", timeout.describe(), ": ", why);
  c10d::TCPStoreOptions opts;
  opts.port = port;
  opts.isServer = false;
  opts.timeout = timeout.value;
  try {
    return c10::make_intrusive<c10d::TCPStore>(host, opts);
  } catch (const std::exception& e) {
    ATB_FAIL(ERROR_COMM_TIMEOUT, "cannot reach the TCPStore at ", host, ":", port, " within ", timeout.describe(), ": ",
             reasonOf(e));
  }
}

struct Served {
  c10::intrusive_ptr<c10d::Store> store;
  uint16_t port = 0;
};

PerProcess<Served>& served() {
  static auto* s = new PerProcess<Served>();
  return *s;
}

// This process's connections, by "host:port" (a child made by fork() starts with none).
using Joined = std::map<std::string, c10::intrusive_ptr<c10d::Store>>;

PerProcess<Joined>& joined() {
  static auto* j = new PerProcess<Joined>();
  return *j;
}

}  // namespace

c10::intrusive_ptr<c10d::Store> processStore(std::chrono::milliseconds timeout, uint16_t* port) {
  c10::intrusive_ptr<c10d::Store> store = served().with([&](Served& s) {
    if (!s.store) s.store = serveStore(0, timeout, &s.port);
    *port = s.port;
    return s.store;
  });
  store->setTimeout(timeout);
  return store;
}

c10::intrusive_ptr<c10d::Store> joinStore(const std::string& host, uint16_t port, const Timeout& timeout) {
  const std::string where = host + ":" + std::to_string(port);
  c10::intrusive_ptr<c10d::Store> store = joined().with([&](Joined& stores) {
    auto it = stores.find(where);
    return it == stores.end() ? c10::intrusive_ptr<c10d::Store>() : it->second;
  });
  if (store) {
    try {
      store->check({"atb_ops/alive"});   // a server that went (or a new one on its port) fails this
      store->setTimeout(timeout.value);  // as a new connection would have it (gloo's rendezvous waits on it)
      return store;
    } catch (const std::exception&) {
      store.reset();
    }
  }
  store = connectStore(host, port, timeout);
  joined().with([&](Joined& stores) { stores[where] = store; });
  return store;
}

}  // namespace atb_ops
