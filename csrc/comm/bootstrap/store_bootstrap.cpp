#include "comm/bootstrap/store_bootstrap.h"

#include <torch/csrc/distributed/c10d/Store.hpp>

#include <chrono>
#include <thread>

#include "core/status.h"

namespace atb_ops {
namespace {

using Clock = std::chrono::steady_clock;

class StoreBootstrap final : public Bootstrap {
 public:
  StoreBootstrap(const CommConfig& c, c10::intrusive_ptr<c10d::Store> store, const std::string& key)
      : rank_(c.rank),
        size_(c.rankSize),
        root_(c.rankRoot),
        timeout_(c.options.timeout),
        store_(std::move(store)),
        key_("atb_ops/" + key),
        acks_(key_ + "/read"),
        what_("torch.distributed store key '" + key_ + "'") {}

  std::string describe() const override { return what_; }

  std::string broadcast(const std::string& payload) override {
    const double seconds = std::chrono::duration<double>(timeout_).count();
    if (rank_ == root_) {
      try {
        store_->set(key_, std::vector<uint8_t>(payload.begin(), payload.end()));
      } catch (const std::exception& e) {
        ATB_FAIL(ERROR_COMM_EMPTY, what_, ": root rank ", rank_, " could not publish: ", e.what());
      }
      const auto deadline = Clock::now() + timeout_;
      int64_t read = 0;
      int attempt = 0;
      while ((read = store_->add(acks_, 0)) < size_ - 1) {
        if (Clock::now() >= deadline) {
          forget();
          ATB_FAIL(ERROR_COMM_TIMEOUT, what_, ": root rank ", rank_, " published, but only ", read, " of ", size_ - 1,
                   " other ranks read it within ATB_OPS_TIMEOUT=", seconds, " s");
        }
        std::this_thread::sleep_for(std::chrono::microseconds(attempt++ < 50 ? 500 : 5000));
      }
      forget();
      return payload;
    }
    std::vector<uint8_t> bytes;
    try {
      store_->wait({key_}, timeout_);
      bytes = store_->get(key_);
      store_->add(acks_, 1);
    } catch (const std::exception& e) {
      ATB_FAIL(ERROR_COMM_TIMEOUT, what_, ": rank ", rank_, " waited ", seconds, " s (ATB_OPS_TIMEOUT) for root rank ",
               root_, " to publish: ", e.what());
    }
    return std::string(bytes.begin(), bytes.end());
  }

 private:
  // Keys outlive communicators in a store: the root removes its own once everyone has read them.
  void forget() {
    try {
      store_->deleteKey(key_);
      store_->deleteKey(acks_);
    } catch (const std::exception&) {
      // Stores without deleteKey keep them; the generation in the key keeps them from being misread.
    }
  }

  int32_t rank_;
  int32_t size_;
  int32_t root_;
  std::chrono::milliseconds timeout_;
  c10::intrusive_ptr<c10d::Store> store_;
  std::string key_;
  std::string acks_;
  std::string what_;
};

}  // namespace

std::unique_ptr<Bootstrap> makeStoreBootstrap(const CommConfig& config, c10::intrusive_ptr<c10d::Store> store,
                                              const std::string& key) {
  return std::make_unique<StoreBootstrap>(config, std::move(store), key);
}

}  // namespace atb_ops
