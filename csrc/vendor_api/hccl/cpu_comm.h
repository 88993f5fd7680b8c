// What an HcclComm is in atb_ops' CPU implementation of HCCL's C API: a communicator of the shm transport
// (CPU ranks on one host), its rank and size, and the last fault it hit.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "comm/communicator.h"

namespace atb_ops::hccl_cpu {

struct CpuComm {
  std::shared_ptr<Communicator> comm;
  uint32_t rank = 0;
  uint32_t size = 0;
  std::string name;  // HcclGetCommName
};

// HcclRootInfo's content here: a magic word and 128 random bits that name the communicator's rendezvous.
constexpr char kRootInfoMagic[] = "atb_ops-hccl-cpu-v1";
std::string newRootToken();
// The token of a root info made by newRootToken's HcclGetRootInfo; empty when the bytes are not one.
std::string tokenOf(const char* rootInfo, size_t bytes);

// Joins the ranks that share `domain` (a root token, a rank table's hash): rank 0 creates the shm segment,
// the others attach, through the node-local rendezvous of this user (ATB_OPS_TIMEOUT bounds the wait).
// `threads`: the ranks are threads of this process (HcclCommInitAll).
std::unique_ptr<CpuComm> joinComm(const std::string& domain, uint32_t rank, uint32_t size, bool threads);

// The ranks a rank table file describes (HCCL's JSON format: server_list[].device[].rank_id); raises
// ERROR_INVALID_PARAM naming the file and what is wrong. `hash` identifies the table's content.
uint32_t rankTableSize(const std::string& path, std::string* hash);

}  // namespace atb_ops::hccl_cpu
