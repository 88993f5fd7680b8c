// HCCL's rank table (JSON: server_count, server_list[].server_id / host_ip, device[].rank_id), read once and checked
// at once, and the store that ranks of a table listing several servers meet on: a TCPStore served by the first
// rank of the first server on that server's host_ip (or server_id) and ATB_OPS_RANK_TABLE_PORT.
#pragma once

#include <c10/util/intrusive_ptr.h>

#include <cstdint>
#include <string>
#include <vector>

#include "core/options.h"

namespace c10d {
class Store;
}

namespace atb_ops {

struct RankTable {
  struct Server {
    std::string address;  // host_ip, else server_id
    std::vector<uint32_t> ranks;
  };
  std::string path;
  std::string hash;  // of the path and content: names the communicator
  uint32_t size = 0;
  std::vector<Server> servers;
};

// Reads and checks the table: a server_list array, server_count (when given) equal to its length, every device's
// rank_id an integer, no rank_id twice, ranks 0..n-1 all present. Raises ERROR_INVALID_PARAM naming the file and
// each fault (the duplicate id and its servers, the missing ranks, both counts).
RankTable readRankTable(const std::string& path);

// The store of a table that lists several servers, for `rank`: served here when `rank` is the first rank of the
// first server, else joined (retrying until the timeout). Null for a one-server table (node-local ranks).
c10::intrusive_ptr<c10d::Store> rankTableStore(const RankTable& table, uint32_t rank, const Options& options);

}  // namespace atb_ops
