// A program that uses HCCL's C API the way HCCL's published samples do: rank 0 makes the root info, the
// others receive it (here through a file), every rank initialises its communicator from it, runs the
// collectives and destroys the communicator. Linked against libhccl.so (atb_ops' HCCL API on CPU ranks),
// it proves our implementation with real data, from plain C++ with nothing but hccl.h in sight.
//
//   hccl_cpu_sample <rank> <nranks> <root-info-file>
//
// Every result is checked against values computed here; exit 0 prints "rank R: N checks passed".
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include <hccl/hccl.h>

extern "C" const char* atbOpsHcclCpuLastError();  // not HCCL's: the full text of this thread's last failure

namespace {

int checks = 0;
uint32_t myRank = 0;

[[noreturn]] void die(const std::string& what) {
  std::fprintf(stderr, "rank %u: FAILED: %s\n", myRank, what.c_str());
  std::exit(1);
}

void expectOk(HcclResult r, const char* call) {
  if (r != HCCL_SUCCESS) {
    die(std::string(call) + " returned " + std::to_string(r) + " (" + HcclGetErrorString(r) +
        "): " + atbOpsHcclCpuLastError());
  }
  ++checks;
}

void expectCode(HcclResult got, HcclResult want, const char* call) {
  if (got != want) die(std::string(call) + " returned " + std::to_string(got) + ", expected " + std::to_string(want));
  ++checks;
}

template <typename T>
void expectEqual(const std::vector<T>& got, const std::vector<T>& want, const char* what) {
  if (got.size() != want.size()) die(std::string(what) + ": size " + std::to_string(got.size()));
  for (size_t i = 0; i < got.size(); ++i) {
    if (got[i] != want[i]) {
      die(std::string(what) + ": element " + std::to_string(i) + " is " + std::to_string(got[i]) + ", expected " +
          std::to_string(want[i]));
    }
  }
  ++checks;
}

// The sample's out-of-band channel: rank 0 writes the root info to a file (atomically, by rename), the
// others wait for it. HCCL's samples use MPI_Bcast or a shared file the same way.
HcclRootInfo shareRootInfo(uint32_t rank, const std::string& path) {
  HcclRootInfo info{};
  if (rank == 0) {
    expectOk(HcclGetRootInfo(&info), "HcclGetRootInfo");
    const std::string tmp = path + ".tmp";
    std::ofstream(tmp, std::ios::binary).write(info.internal, HCCL_ROOT_INFO_BYTES);
    if (std::rename(tmp.c_str(), path.c_str()) != 0) die("cannot publish the root info at " + path);
    return info;
  }
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (std::chrono::steady_clock::now() < deadline) {
    std::ifstream in(path, std::ios::binary);
    if (in.read(info.internal, HCCL_ROOT_INFO_BYTES)) return info;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  die("no root info at " + path + " after 60 s");
}

void allReduce(HcclComm comm, uint32_t rank, uint32_t n) {
  std::vector<float> send(1000), recv(1000, -1.0f), want(1000, 0.0f);
  for (size_t i = 0; i < send.size(); ++i) send[i] = static_cast<float>(rank * 1000 + i);
  for (uint32_t r = 0; r < n; ++r) {
    for (size_t i = 0; i < want.size(); ++i) want[i] += static_cast<float>(r * 1000 + i);
  }
  expectOk(HcclAllReduce(send.data(), recv.data(), send.size(), HCCL_DATA_TYPE_FP32, HCCL_REDUCE_SUM, comm, nullptr),
           "HcclAllReduce(sum)");
  expectEqual(recv, want, "HcclAllReduce(sum) result");

  std::vector<int32_t> mine = {static_cast<int32_t>(rank), -static_cast<int32_t>(rank), 7};
  std::vector<int32_t> maxed(3, 0);
  expectOk(HcclAllReduce(mine.data(), maxed.data(), 3, HCCL_DATA_TYPE_INT32, HCCL_REDUCE_MAX, comm, nullptr),
           "HcclAllReduce(max)");
  expectEqual(maxed, {static_cast<int32_t>(n - 1), 0, 7}, "HcclAllReduce(max) result");
}

void allGather(HcclComm comm, uint32_t rank, uint32_t n) {
  std::vector<int64_t> send = {rank * 10LL, rank * 10LL + 1, rank * 10LL + 2};
  std::vector<int64_t> recv(3 * n, -1), want;
  for (uint32_t r = 0; r < n; ++r) {
    for (int64_t k = 0; k < 3; ++k) want.push_back(r * 10LL + k);
  }
  expectOk(HcclAllGather(send.data(), recv.data(), 3, HCCL_DATA_TYPE_INT64, comm, nullptr), "HcclAllGather");
  expectEqual(recv, want, "HcclAllGather result");
}

void broadcast(HcclComm comm, uint32_t rank, uint32_t n) {
  const uint32_t root = n - 1;
  std::vector<int32_t> buf(5, -1), want = {5, 4, 3, 2, 1};
  if (rank == root) buf = want;
  expectOk(HcclBroadcast(buf.data(), buf.size(), HCCL_DATA_TYPE_INT32, root, comm, nullptr), "HcclBroadcast");
  expectEqual(buf, want, "HcclBroadcast result");
}

void reduceScatter(HcclComm comm, uint32_t rank, uint32_t n) {
  const uint64_t count = 4;
  std::vector<double> send(count * n), recv(count, -1.0), want(count, 0.0);
  for (size_t i = 0; i < send.size(); ++i) send[i] = rank + 0.5 * i;
  for (uint32_t r = 0; r < n; ++r) {
    for (uint64_t k = 0; k < count; ++k) want[k] += r + 0.5 * (rank * count + k);
  }
  expectOk(HcclReduceScatter(send.data(), recv.data(), count, HCCL_DATA_TYPE_FP64, HCCL_REDUCE_SUM, comm, nullptr),
           "HcclReduceScatter");
  expectEqual(recv, want, "HcclReduceScatter result");
}

// Uneven: rank r sends j + 1 elements (value r * 100 + j) to rank j, packed in rank order.
void allToAllV(HcclComm comm, uint32_t rank, uint32_t n) {
  std::vector<uint64_t> sendCounts(n), sdispls(n), recvCounts(n), rdispls(n);
  std::vector<int32_t> send, want;
  for (uint32_t j = 0; j < n; ++j) {
    sendCounts[j] = j + 1;
    sdispls[j] = send.size();
    send.insert(send.end(), j + 1, static_cast<int32_t>(rank * 100 + j));
  }
  for (uint32_t j = 0; j < n; ++j) {
    recvCounts[j] = rank + 1;
    rdispls[j] = want.size();
    want.insert(want.end(), rank + 1, static_cast<int32_t>(j * 100 + rank));
  }
  std::vector<int32_t> recv(want.size(), -1);
  expectOk(HcclAlltoAllV(send.data(), sendCounts.data(), sdispls.data(), HCCL_DATA_TYPE_INT32, recv.data(),
                         recvCounts.data(), rdispls.data(), HCCL_DATA_TYPE_INT32, comm, nullptr),
           "HcclAlltoAllV");
  expectEqual(recv, want, "HcclAlltoAllV result");

  std::vector<int16_t> even(2 * n), got(2 * n, -1), evenWant(2 * n);
  for (uint32_t j = 0; j < n; ++j) {
    even[2 * j] = even[2 * j + 1] = static_cast<int16_t>(rank * 10 + j);
    evenWant[2 * j] = evenWant[2 * j + 1] = static_cast<int16_t>(j * 10 + rank);
  }
  expectOk(HcclAlltoAll(even.data(), 2, HCCL_DATA_TYPE_INT16, got.data(), 2, HCCL_DATA_TYPE_INT16, comm, nullptr),
           "HcclAlltoAll");
  expectEqual(got, evenWant, "HcclAlltoAll result");

  // The count matrix form: rank i sends (i + 2 * j) % 3 elements (value i * 100 + j * 10 + index) to rank j; some
  // pairs send nothing.
  std::vector<uint64_t> matrix(static_cast<size_t>(n) * n);
  for (uint32_t i = 0; i < n; ++i) {
    for (uint32_t j = 0; j < n; ++j) matrix[i * n + j] = (i + 2 * j) % 3;
  }
  std::vector<float> vcSend, vcWant;
  for (uint32_t j = 0; j < n; ++j) {
    for (uint64_t k = 0; k < matrix[rank * n + j]; ++k) vcSend.push_back(static_cast<float>(rank * 100 + j * 10 + k));
  }
  for (uint32_t i = 0; i < n; ++i) {
    for (uint64_t k = 0; k < matrix[i * n + rank]; ++k) vcWant.push_back(static_cast<float>(i * 100 + rank * 10 + k));
  }
  vcSend.push_back(-7.0f);  // never sent: not in the matrix
  std::vector<float> vcRecv(vcWant.size() + 1, -1.0f);
  expectOk(HcclAlltoAllVC(vcSend.data(), matrix.data(), HCCL_DATA_TYPE_FP32, vcRecv.data(), HCCL_DATA_TYPE_FP32, comm,
                          nullptr),
           "HcclAlltoAllVC");
  vcWant.push_back(-1.0f);  // the element past the received ones stays as it was
  expectEqual(vcRecv, vcWant, "HcclAlltoAllVC result");
}

void pointToPoint(HcclComm comm, uint32_t rank, uint32_t n) {
  // Plain Send/Recv between ranks 0 and 1, each way.
  if (n >= 2 && rank < 2) {
    std::vector<uint8_t> out(33, static_cast<uint8_t>(rank + 1)), in(33, 0);
    const uint32_t peer = 1 - rank;
    if (rank == 0) {
      expectOk(HcclSend(out.data(), out.size(), HCCL_DATA_TYPE_UINT8, peer, comm, nullptr), "HcclSend");
      expectOk(HcclRecv(in.data(), in.size(), HCCL_DATA_TYPE_UINT8, peer, comm, nullptr), "HcclRecv");
    } else {
      expectOk(HcclRecv(in.data(), in.size(), HCCL_DATA_TYPE_UINT8, peer, comm, nullptr), "HcclRecv");
      expectOk(HcclSend(out.data(), out.size(), HCCL_DATA_TYPE_UINT8, peer, comm, nullptr), "HcclSend");
    }
    expectEqual(in, std::vector<uint8_t>(33, static_cast<uint8_t>(peer + 1)), "HcclSend/HcclRecv result");
  }
  // A ring through one HcclBatchSendRecv: send to the next rank, receive from the previous one.
  if (n > 1) {
    std::vector<float> out(17, static_cast<float>(rank)), in(17, -1.0f);
    HcclSendRecvItem items[2];
    items[0] = HcclSendRecvItem{HCCL_SEND, out.data(), out.size(), HCCL_DATA_TYPE_FP32, (rank + 1) % n};
    items[1] = HcclSendRecvItem{HCCL_RECV, in.data(), in.size(), HCCL_DATA_TYPE_FP32, (rank + n - 1) % n};
    expectOk(HcclBatchSendRecv(items, 2, comm, nullptr), "HcclBatchSendRecv");
    expectEqual(in, std::vector<float>(17, static_cast<float>((rank + n - 1) % n)), "HcclBatchSendRecv result");
  }
}

// HCCL's own codes for bad arguments, returned before anything is communicated.
void badArguments(HcclComm comm, uint32_t n) {
  float x = 0;
  expectCode(HcclAllReduce(&x, &x, 1, static_cast<HcclDataType>(255), HCCL_REDUCE_SUM, comm, nullptr),
             HCCL_E_NOT_SUPPORT, "HcclAllReduce with dataType 255");
  expectCode(HcclAllReduce(&x, &x, 1, HCCL_DATA_TYPE_FP32, static_cast<HcclReduceOp>(9), comm, nullptr),
             HCCL_E_NOT_SUPPORT, "HcclAllReduce with op 9");
  expectCode(HcclAllReduce(nullptr, &x, 1, HCCL_DATA_TYPE_FP32, HCCL_REDUCE_SUM, comm, nullptr), HCCL_E_PTR,
             "HcclAllReduce with a null sendBuf");
  expectCode(HcclSend(&x, 1, HCCL_DATA_TYPE_FP32, n, comm, nullptr), HCCL_E_PARA, "HcclSend to rank nRanks");
  expectCode(HcclAllReduce(&x, &x, 1, HCCL_DATA_TYPE_FP32, HCCL_REDUCE_SUM, nullptr, nullptr), HCCL_E_PTR,
             "HcclAllReduce on a null comm");
  HcclRootInfo info{};
  HcclComm none = nullptr;
  expectCode(HcclCommInitRootInfo(n, &info, n, &none), HCCL_E_PARA, "HcclCommInitRootInfo with rank == nRanks");
  expectCode(HcclCommInitRootInfo(n, &info, 0, &none), HCCL_E_PARA, "HcclCommInitRootInfo with blank root info");
  if (std::strlen(HcclGetErrorString(HCCL_E_PARA)) == 0) die("HcclGetErrorString(HCCL_E_PARA) is empty");
  ++checks;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 4) {
    std::fprintf(stderr, "usage: %s <rank> <nranks> <root-info-file>\n", argv[0]);
    return 2;
  }
  const uint32_t rank = static_cast<uint32_t>(std::strtoul(argv[1], nullptr, 10));
  const uint32_t n = static_cast<uint32_t>(std::strtoul(argv[2], nullptr, 10));
  myRank = rank;
  const HcclRootInfo info = shareRootInfo(rank, argv[3]);

  HcclComm comm = nullptr;
  expectOk(HcclCommInitRootInfo(n, &info, rank, &comm), "HcclCommInitRootInfo");
  uint32_t gotRank = 99, gotSize = 99;
  expectOk(HcclGetRankId(comm, &gotRank), "HcclGetRankId");
  expectOk(HcclGetRankSize(comm, &gotSize), "HcclGetRankSize");
  if (gotRank != rank || gotSize != n) die("rank/size " + std::to_string(gotRank) + "/" + std::to_string(gotSize));

  allReduce(comm, rank, n);
  allGather(comm, rank, n);
  broadcast(comm, rank, n);
  reduceScatter(comm, rank, n);
  allToAllV(comm, rank, n);
  pointToPoint(comm, rank, n);
  badArguments(comm, n);
  expectOk(HcclBarrier(comm, nullptr), "HcclBarrier");

  HcclResult async = HCCL_E_INTERNAL;
  expectOk(HcclGetCommAsyncError(comm, &async), "HcclGetCommAsyncError");
  expectCode(async, HCCL_SUCCESS, "the communicator's async error");
  expectOk(HcclCommDestroy(comm), "HcclCommDestroy");
  std::printf("rank %u: %d checks passed\n", rank, checks);
  return 0;
}
