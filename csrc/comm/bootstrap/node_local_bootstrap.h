// The node-local bootstrap: rankRoot writes a record file rdv.<hash of the key> in the private folder
// (private_dir.h) holding its bytes and one "read" flag per rank; the others map it, copy the bytes and
// set their flag; the root removes the file once every flag is set, or when it gives up. A record whose
// root is dead (a crashed run) is ignored and replaced; anything else at the name fails every rank at once.
#pragma once

#include <memory>
#include <string>

#include "comm/bootstrap/bootstrap.h"

namespace atb_ops {

std::unique_ptr<Bootstrap> makeNodeLocalBootstrap(const CommConfig& config, const std::string& key,
                                                  Generation generation);

// The record file's path for a key (tests and doctor).
std::string rendezvousPath(const Options& options, const std::string& key);

// "atb_ops-rdv-v2": the first bytes of every record; doctor recognises records by it.
constexpr uint64_t kRendezvousMagic = 0x32762d7664722d61ULL;

}  // namespace atb_ops
