// A torch.distributed TCPStore for ranks that have nothing else to meet on across hosts: HCCL's root info names
// one that its maker serves, a rank table one that its first server's first rank serves. torch's own store: no
// transport of atb_ops' own.
#pragma once

#include <c10/util/intrusive_ptr.h>

#include <chrono>
#include <cstdint>
#include <string>

#include "core/options.h"

namespace c10d {
class Store;
}

namespace atb_ops {

// Serves a TCPStore on `port` of every interface of this host (0: the system picks one; the one it got is put
// in `*chosen`). Raises ERROR_RT_FAIL naming the port when it cannot (in use, ...).
c10::intrusive_ptr<c10d::Store> serveStore(uint16_t port, std::chrono::milliseconds timeout, uint16_t* chosen);
// The TCPStore this process serves for ranks that meet on it under a token of their own (HCCL root infos, gloo groups
// that meet node-locally): one per process, made on first use on a port the system picks (put in `*port`), so that no
// creation leaves a server thread and a port behind, and the joiners keep one connection to it (joinStore). Its
// timeout is set to `timeout`, as a new store's would be. A child made by fork() serves its own.
c10::intrusive_ptr<c10d::Store> processStore(std::chrono::milliseconds timeout, uint16_t* port);
// This process's connection to the TCPStore at host:port: made once (retrying until `timeout`; raises
// ERROR_COMM_TIMEOUT naming the address) and reused while the store answers, since torch's server looks up the name
// of every client that connects (reverse DNS, on the thread serving them all: where DNS is slow, a stall for all).
c10::intrusive_ptr<c10d::Store> joinStore(const std::string& host, uint16_t port, const Timeout& timeout);

// The address ranks on other hosts reach this one at, as HCCL chooses it: HCCL_IF_IP; else the IPv4 address of
// the first interface HCCL_SOCKET_IFNAME names ("eth0", "eth0,ib0", "=eth0"); else this host name's address when
// it is not a loopback one; else the first non-loopback IPv4 interface address; else 127.0.0.1.
std::string reachableAddress();

}  // namespace atb_ops
