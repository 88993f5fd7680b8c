// Which host this process runs on, as ranks compare it to learn who can share memory with whom: the one
// definition C++ (the gloo backend's peer table, the shm backend's across-host refusal) and Python
// (atb_ops._host, the groups' plans, the c10d backend) use.
#pragma once

#include <string>

#include "core/options.h"

namespace atb_ops {

// "<hostname>/<boot id>/<device of ATB_OPS_SHM_DIR>/<pid namespace>": equal exactly when two processes share a
// kernel, the shared-memory folder and the process ids (so /dev/shm files and process_vm_readv reach across).
// Containers or network-namespace hosts on one kernel differ by their /dev/shm or pid namespace; two machines by
// their boot id. A part that cannot be read is left empty.
std::string hostIdentity(const Options& options);

// The parts of a hostIdentity: its host name, and its boot id ("" where unknown): processes whose boot ids are
// equal share one kernel and its cores, though each container or network namespace is a host of its own.
std::string hostNameOf(const std::string& identity);
std::string bootIdOf(const std::string& identity);

// This host's name (gethostname), for messages.
std::string hostName();

}  // namespace atb_ops
