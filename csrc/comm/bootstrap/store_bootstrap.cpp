#include "comm/bootstrap/store_bootstrap.h"

#include <unistd.h>
#include <torch/csrc/distributed/c10d/Store.hpp>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <thread>

#include "comm/bootstrap/private_dir.h"
#include "core/host.h"
#include "core/interrupt.h"
#include "core/layout.h"
#include "core/status.h"

namespace atb_ops {
namespace {

using Clock = std::chrono::steady_clock;

// What the root puts before the payload, so every reader can compare the root's view with its own.
struct RootView {
  int32_t rankSize;
  int32_t rankRoot;
  int64_t pid;
  uint64_t nonce;          // tells this record from the root's earlier ones at the same key
  uint32_t settingsBytes;  // protocolSettings text, between this view and the payload
  uint32_t reserved;
};

class StoreBootstrap final : public Bootstrap {
 public:
  StoreBootstrap(const CommConfig& c, c10::intrusive_ptr<c10d::Store> store, const std::string& key,
                 std::string settings)
      : rank_(c.rank),
        size_(c.rankSize),
        root_(c.rankRoot),
        domain_(c.commDomain),
        timeout_(c.options.timeout),
        store_(std::move(store)),
        key_("atb_ops/" + key),
        acks_(key_ + "/read"),
        conflict_(key_ + "/conflict"),
        failed_(key_ + "/failed"),
        settings_(std::move(settings)),
        options_(c.options),
        what_("torch.distributed store key '" + key_ + "'") {}

  std::string describe() const override { return what_; }

  std::string broadcast(const std::string& payload) override { return rank_ == root_ ? publish(payload) : fetch(); }

  void fail(const std::string& why) override {
    if (rank_ != root_) return;
    try {
      store_->set(failed_, std::vector<uint8_t>(why.begin(), why.end()));
    } catch (const std::exception&) {
      // The others then time out naming the root.
    }
  }

 private:
  std::string publish(const std::string& payload) {
    uint64_t nonce = 0;
    const std::string token = randomToken();
    std::memcpy(&nonce, token.data(), sizeof(nonce));
    nonce_ = nonce;
    const RootView mine{size_, root_, static_cast<int64_t>(::getpid()), nonce, static_cast<uint32_t>(settings_.size()),
                        0};
    std::vector<uint8_t> bytes(sizeof(RootView) + settings_.size() + payload.size());
    std::memcpy(bytes.data(), &mine, sizeof(RootView));
    std::memcpy(bytes.data() + sizeof(RootView), settings_.data(), settings_.size());
    std::memcpy(bytes.data() + sizeof(RootView) + settings_.size(), payload.data(), payload.size());
    std::vector<uint8_t> current;
    try {
      store_->deleteKey(failed_);  // an earlier attempt's failure: this one may succeed
      // compareSet, not set: a second root (ranks that disagree on rankRoot) must not overwrite the first.
      current = store_->compareSet(key_, {}, bytes);
    } catch (const std::exception& e) {
      ATB_FAIL(ERROR_COMM_EMPTY, what_, ": root rank ", rank_, " could not publish: ", e.what());
    }
    if (current != bytes) {
      const RootView other = viewOf(current);
      const std::string why =
          other.rankSize != size_ || other.rankRoot != root_
              ? creationMismatch(domain_, other.rankRoot, other.pid, other.rankSize, rank_, mine.pid, size_, root_)
              : c10::str("rank ", root_, " of the communicator of commDomain '", domain_, "' is claimed by pid ",
                         other.pid, " and by pid ", mine.pid, ": is rankRoot given to two ranks?");
      reportConflict(why);
      ATB_FAIL(ERROR_INVALID_PARAM, what_, ": ", why);
    }
    const auto deadline = Clock::now() + timeout_.value;
    int64_t read = 0;
    int attempt = 0;
    while ((read = store_->add(acks_, 0)) < size_ - 1) {
      if (store_->check({conflict_})) {
        const std::vector<uint8_t> why = store_->get(conflict_);
        forget();
        // The ranks that read the record before the conflict wait for each other's hosts: tell them, under this
        // record's nonce (a later creation has another, so the note is never taken for its failure).
        try {
          store_->set(failedKey(nonce_), why);
        } catch (const std::exception&) {
          // They then time out, or lose the store with this process.
        }
        ATB_FAIL(ERROR_INVALID_PARAM, what_, ": ", std::string(why.begin(), why.end()));
      }
      if (Clock::now() >= deadline) {
        std::vector<int64_t> missing;
        for (int32_t r = 0; r < size_; ++r) {
          if (r != rank_ && !store_->check({readMark(r)})) missing.push_back(r);
        }
        forget();
        ATB_FAIL(ERROR_COMM_TIMEOUT, what_, ": root rank ", rank_, " published, but rank(s) ", formatRanks(missing),
                 " did not join (", read, " of ", size_ - 1, " other ranks read it) within ", timeout_.describe());
      }
      pause(attempt);
    }
    forget();
    return payload;
  }

  std::string fetch() {
    try {
      return fetchRecord();
    } catch (const c10::DistNetworkError& e) {
      lostStore("it waited for the root's record", e);
    }
  }

  // The store lives in a rank's process (HCCL's root info: the root's): it went away with that process.
  [[noreturn]] void lostStore(const char* during, const c10::DistNetworkError& e) const {
    ATB_FAIL(ERROR_COMM_PEER_DIED, what_, ": rank ", rank_, " lost the store while ", during,
             " (the process serving it, the root rank ", root_, "'s where HCCL's root info made it, exited or failed ",
             "its creation): ", e.what_without_backtrace());
  }

  std::string fetchRecord() {
    const auto deadline = Clock::now() + timeout_.value;
    int attempt = 0;
    // Polled rather than store->wait(): the wait stays interruptible (Ctrl-C) and bounded by ATB_OPS_TIMEOUT.
    // A record this rank already read is an earlier creation's, still there while slower ranks read it.
    std::vector<uint8_t> bytes;
    while (!store_->check({key_}) || alreadyRead(bytes = store_->get(key_))) {
      if (store_->check({failed_})) {
        const std::vector<uint8_t> why = store_->get(failed_);
        ATB_FAIL(ERROR_RT_FAIL, what_, ": root rank ", root_,
                 " could not create the communicator: ", std::string(why.begin(), why.end()));
      }
      ATB_CHECK(Clock::now() < deadline, ERROR_COMM_TIMEOUT, what_, ": rank ", rank_, " waited ", timeout_.seconds(),
                " s (", timeout_.name(), ") for root rank ", root_, " to publish");
      pause(attempt);
    }
    const RootView root = viewOf(bytes);
    if (root.rankSize != size_ || root.rankRoot != root_) {
      const std::string why = creationMismatch(domain_, root.rankRoot, root.pid, root.rankSize, rank_,
                                               static_cast<int64_t>(::getpid()), size_, root_);
      reportConflict(why);
      ATB_FAIL(ERROR_INVALID_PARAM, what_, ": ", why);
    }
    ATB_CHECK(bytes.size() >= sizeof(RootView) + root.settingsBytes, ERROR_RT_FAIL, what_, " holds ", bytes.size(),
              " bytes, not an atb_ops bootstrap record");
    const std::string rootSettings(bytes.begin() + sizeof(RootView),
                                   bytes.begin() + sizeof(RootView) + root.settingsBytes);
    if (std::string why = settingsMismatch(domain_, root.rankRoot, root.pid, rootSettings, rank_,
                                           static_cast<int64_t>(::getpid()), settings_);
        !why.empty()) {
      reportConflict(why);
      ATB_FAIL(ERROR_INVALID_PARAM, what_, ": ", why);
    }
    nonce_ = root.nonce;
    store_->set(readMark(rank_), nonceBytes(root.nonce));
    store_->add(acks_, 1);
    return std::string(bytes.begin() + sizeof(RootView) + root.settingsBytes, bytes.end());
  }

  std::vector<std::string> rankHosts() override {
    ATB_CHECK(nonce_ != 0, ERROR_INTERNAL_ERROR, what_, ": rankHosts before broadcast");
    const std::string prefix = recordKey(nonce_, "host/");
    const std::string done = recordKey(nonce_, "hosts-read");
    const std::string failed = failedKey(nonce_);
    const std::string mine = hostIdentity(options_);
    std::vector<std::string> hosts(static_cast<size_t>(size_));
    try {
      store_->set(prefix + std::to_string(rank_), std::vector<uint8_t>(mine.begin(), mine.end()));
      const auto deadline = Clock::now() + timeout_.value;
      int attempt = 0;
      for (int32_t r = 0; r < size_; ++r) {
        while (!store_->check({prefix + std::to_string(r)})) {
          if (rank_ != root_ && store_->check({failed})) {
            // A rank that read the record before another found the ranks disagree: the root says why.
            const std::vector<uint8_t> why = store_->get(failed);
            ATB_FAIL(ERROR_INVALID_PARAM, what_, ": root rank ", root_,
                     " could not create the communicator: ", std::string(why.begin(), why.end()));
          }
          ATB_CHECK(Clock::now() < deadline, ERROR_COMM_TIMEOUT, what_, ": rank ", rank_, " waited ",
                    timeout_.seconds(), " s (", timeout_.name(), ") for rank ", r, " to say which host it is on");
          pause(attempt);
        }
        const std::vector<uint8_t> bytes = store_->get(prefix + std::to_string(r));
        hosts[r].assign(bytes.begin(), bytes.end());
      }
      // The root removes the keys once every rank has read them all.
      store_->add(done, 1);
      if (rank_ != root_) return hosts;
      while (store_->add(done, 0) < size_) {
        ATB_CHECK(Clock::now() < deadline, ERROR_COMM_TIMEOUT, what_, ": root rank ", rank_,
                  " waited for every rank to read the others' hosts");
        pause(attempt);
      }
      for (int32_t r = 0; r < size_; ++r) store_->deleteKey(prefix + std::to_string(r));
      store_->deleteKey(done);
    } catch (const StatusError&) {
      throw;
    } catch (const c10::DistNetworkError& e) {
      lostStore("the ranks exchanged their hosts", e);
    } catch (const std::exception& e) {
      ATB_FAIL(ERROR_COMM_EMPTY, what_, ": the store failed while the ranks exchanged their hosts: ", e.what());
    }
    return hosts;
  }

  std::string readMark(int32_t rank) const { return key_ + "/read/" + std::to_string(rank); }

  // A key of one record (one creation), named by its nonce.
  std::string recordKey(uint64_t nonce, const std::string& name) const {
    char hex[17];
    std::snprintf(hex, sizeof(hex), "%016llx", static_cast<unsigned long long>(nonce));
    return key_ + "/" + hex + "/" + name;
  }
  std::string failedKey(uint64_t nonce) const { return recordKey(nonce, "failed"); }

  static std::vector<uint8_t> nonceBytes(uint64_t nonce) {
    std::vector<uint8_t> b(sizeof(nonce));
    std::memcpy(b.data(), &nonce, sizeof(nonce));
    return b;
  }

  bool alreadyRead(const std::vector<uint8_t>& record) const {
    if (record.size() < sizeof(RootView) || !store_->check({readMark(rank_)})) return false;
    return store_->get(readMark(rank_)) == nonceBytes(viewOf(record).nonce);
  }

  RootView viewOf(const std::vector<uint8_t>& bytes) const {
    ATB_CHECK(bytes.size() >= sizeof(RootView), ERROR_RT_FAIL, what_, " holds ", bytes.size(),
              " bytes, not an atb_ops bootstrap record");
    RootView v{};
    std::memcpy(&v, bytes.data(), sizeof(RootView));
    return v;
  }

  void reportConflict(const std::string& why) {
    try {
      store_->compareSet(conflict_, {}, std::vector<uint8_t>(why.begin(), why.end()));
    } catch (const std::exception&) {
      // The root then times out instead of failing at once; this rank's own error says why.
    }
  }

  void pause(int& attempt) const {
    throwIfInterrupted(what_.c_str());
    std::this_thread::sleep_for(std::chrono::microseconds(attempt++ < 50 ? 500 : 5000));
  }

  // Keys outlive communicators in a store: the root removes its own once everyone has read them.
  void forget() {
    try {
      store_->deleteKey(key_);
      store_->deleteKey(acks_);
      store_->deleteKey(conflict_);
      for (int32_t r = 0; r < size_; ++r) store_->deleteKey(readMark(r));
    } catch (const std::exception&) {
      // Stores without deleteKey keep them; the next root's compareSet then names the stale record.
    }
  }

  int32_t rank_;
  int32_t size_;
  int32_t root_;
  std::string domain_;
  Timeout timeout_;
  c10::intrusive_ptr<c10d::Store> store_;
  std::string key_;
  std::string acks_;
  std::string conflict_;
  std::string failed_;
  std::string settings_;
  Options options_;
  uint64_t nonce_ = 0;  // this creation's record, once broadcast() ran
  std::string what_;
};

}  // namespace

std::unique_ptr<Bootstrap> makeStoreBootstrap(const CommConfig& config, c10::intrusive_ptr<c10d::Store> store,
                                              const std::string& key, const std::string& settings) {
  return std::make_unique<StoreBootstrap>(config, std::move(store), key, settings);
}

}  // namespace atb_ops
