// The node-local bootstrap: rankRoot writes a record file rdv.<hash of the key> in the private folder
// (private_dir.h) holding its bytes and one "read" flag per rank; the others map it, copy the bytes and
// set their flag; the root removes the file once every flag is set, or when it gives up. A record whose
// root is dead (a crashed run) is ignored and replaced; anything else at the name fails every rank at once.
#pragma once

#include <memory>
#include <string>

#include "comm/bootstrap/bootstrap.h"

namespace atb_ops {

// `key` names the rendezvous (purpose | job | commDomain); `purpose` alone groups it with the same commDomain
// of other jobs, for messages.
// `settings`: protocolSettings, compared with the root's.
std::unique_ptr<Bootstrap> makeNodeLocalBootstrap(const CommConfig& config, const std::string& key,
                                                  const std::string& purpose, const std::string& settings);

// Removes records whose root is gone (a creation killed before it ended), keeping a dead root's failure for
// ATB_OPS_TIMEOUT after it was written. Returns how many went.
int sweepStaleRecords(const Options& options);

// The record file's path for a key (tests and doctor).
std::string rendezvousPath(const Options& options, const std::string& key);

// "atb_ops-rdv-v2": the first bytes of every record; doctor recognises records by it.
constexpr uint64_t kRendezvousMagic = 0x32762d7664722d61ULL;

}  // namespace atb_ops
