// What an HcclComm is in atb_ops' CPU implementation of HCCL's C API: a communicator of CPU ranks (shared memory
// within a host, gloo between hosts: comm/host_span.h), its rank and size, and the last fault it hit.
#pragma once

#include <c10/util/intrusive_ptr.h>

#include <cstdint>
#include <memory>
#include <string>

#include "comm/communicator.h"

namespace c10d {
class Store;
}

namespace atb_ops::hccl_cpu {

struct CpuComm {
  std::shared_ptr<Communicator> comm;
  uint32_t rank = 0;
  uint32_t size = 0;
  std::string name;  // HcclGetCommName
};

// HcclRootInfo's content here: "atb_ops-hccl-cpu-v2|<128 random bits, hex>|<address>|<port>", NUL-terminated: the
// token names the communicator (a nonce: it alone proves who belongs), the address and port are a TCPStore that
// the maker of the root info serves, so ranks on any host can join (HCCL passes its root info the same way).
constexpr char kRootInfoMagic[] = "atb_ops-hccl-cpu-v2";

struct RootInfo {
  std::string token;
  std::string address;
  uint16_t port = 0;
};

// Makes a root info: a fresh token, and a TCPStore served by this process on reachableAddress() (kept while the
// process lives). Returns its text (at most `capacity` - 1 bytes).
std::string makeRootInfo(size_t capacity);
// The root info in `bytes`; a token-less RootInfo when they are not one made by makeRootInfo.
RootInfo parseRootInfo(const char* bytes, size_t size);

// The ranks of a root info meet on its store: shared memory when they share a host, else gloo.
std::unique_ptr<CpuComm> joinRootInfo(const RootInfo& info, uint32_t rank, uint32_t size);
// The ranks of a rank table: node-locally (scoped by the job, job_scope.h) for a one-server table, else on the
// table's store (comm/bootstrap/rank_table.h). Raises ERROR_INVALID_PARAM naming the file's faults.
std::unique_ptr<CpuComm> joinRankTable(const std::string& path, uint32_t rank);
// Threads of this process (HcclCommInitAll): `domain` names them.
std::unique_ptr<CpuComm> joinThreads(const std::string& domain, uint32_t rank, uint32_t size);

std::string newRootToken();

}  // namespace atb_ops::hccl_cpu
