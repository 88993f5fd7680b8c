/* HCCL's C API from a plain C program, built against the installed headers as a user builds it:
 *   eval "$(python -m atb_ops env)"
 *   cc hccl_allreduce_alltoallv.c -I$ASCEND_HOME_PATH/include -L$ASCEND_HOME_PATH/lib64 -lhccl -o prog
 *   ./prog 0 2 /tmp/root_info & ./prog 1 2 /tmp/root_info; wait
 * Rank 0 writes the root info to a file, the others read it; every rank checks an AllReduce and an AlltoAllV
 * against values computed here, then that a second HcclCommDestroy and a call on the destroyed communicator
 * return HCCL_E_PARA. Exit 0 and "rank R: ok" when every check holds. */
#include <hccl/hccl.h>

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#define CHECK(cond, ...)                          \
  do {                                            \
    if (!(cond)) {                                \
      fprintf(stderr, "rank %u: FAILED: ", rank); \
      fprintf(stderr, __VA_ARGS__);               \
      fprintf(stderr, " [line %d]\n", __LINE__);  \
      return 1;                                   \
    }                                             \
  } while (0)

static int shareRootInfo(uint32_t rank, const char* path, HcclRootInfo* info) {
  char tmp[4096];
  FILE* f;
  int tries;
  if (rank == 0) {
    if (HcclGetRootInfo(info) != HCCL_SUCCESS) return 0;
    snprintf(tmp, sizeof(tmp), "%s.tmp", path);
    f = fopen(tmp, "wb");
    if (f == NULL || fwrite(info->internal, 1, HCCL_ROOT_INFO_BYTES, f) != HCCL_ROOT_INFO_BYTES) return 0;
    return fclose(f) == 0 && rename(tmp, path) == 0;
  }
  for (tries = 0; tries < 6000; ++tries, usleep(10000)) { /* up to 60 s */
    size_t got;
    f = fopen(path, "rb");
    if (f == NULL) continue;
    got = fread(info->internal, 1, HCCL_ROOT_INFO_BYTES, f);
    fclose(f);
    return got == HCCL_ROOT_INFO_BYTES;
  }
  return 0;
}

int main(int argc, char** argv) {
  uint32_t rank = argc > 1 ? (uint32_t)atoi(argv[1]) : 0, n = argc > 2 ? (uint32_t)atoi(argv[2]) : 1, i;
  HcclRootInfo info;
  HcclComm comm;
  uint32_t size = 0;
  float x[4], sum[4];
  int32_t send[16], recv[16];
  uint64_t sendCounts[8], sdispls[8], recvCounts[8], rdispls[8], offset = 0;
  CHECK(argc == 4 && n >= 1 && n <= 8 && rank < n, "usage: %s RANK NRANKS ROOT_INFO_FILE (1-8 ranks)", argv[0]);
  CHECK(shareRootInfo(rank, argv[3], &info), "no root info at %s", argv[3]);
  CHECK(HcclCommInitRootInfo(n, &info, rank, &comm) == HCCL_SUCCESS, "HcclCommInitRootInfo");
  CHECK(HcclGetRankSize(comm, &size) == HCCL_SUCCESS && size == n, "HcclGetRankSize gave %u", size);

  /* AllReduce: rank r contributes (r + 1) * (i + 1); the sum is (i + 1) * n (n + 1) / 2. */
  for (i = 0; i < 4; ++i) x[i] = (float)((rank + 1) * (i + 1));
  CHECK(HcclAllReduce(x, sum, 4, HCCL_DATA_TYPE_FP32, HCCL_REDUCE_SUM, comm, NULL) == HCCL_SUCCESS, "HcclAllReduce");
  for (i = 0; i < 4; ++i) CHECK(sum[i] == (float)((i + 1) * n * (n + 1) / 2), "sum[%u] = %g", i, sum[i]);

  /* AlltoAllV: rank r sends j + 1 elements to rank j, each 100 * r + j; it receives r + 1 from every rank. */
  for (i = 0; i < n; ++i) {
    sendCounts[i] = i + 1, sdispls[i] = offset, offset += i + 1;
    recvCounts[i] = rank + 1, rdispls[i] = i * (rank + 1);
  }
  for (i = 0; i < offset; ++i) send[i] = -1;
  for (i = 0; i < n; ++i) {
    uint64_t k;
    for (k = 0; k < sendCounts[i]; ++k) send[sdispls[i] + k] = (int32_t)(100 * rank + i);
  }
  CHECK(HcclAlltoAllV(send, sendCounts, sdispls, HCCL_DATA_TYPE_INT32, recv, recvCounts, rdispls, HCCL_DATA_TYPE_INT32,
                      comm, NULL) == HCCL_SUCCESS,
        "HcclAlltoAllV");
  for (i = 0; i < n * (rank + 1); ++i) {
    CHECK(recv[i] == (int32_t)(100 * (i / (rank + 1)) + rank), "recv[%u] = %d", i, recv[i]);
  }

  CHECK(HcclCommDestroy(comm) == HCCL_SUCCESS, "HcclCommDestroy");
  CHECK(HcclCommDestroy(comm) == HCCL_E_PARA, "a second HcclCommDestroy did not return HCCL_E_PARA");
  CHECK(HcclGetRankSize(comm, &size) == HCCL_E_PARA, "HcclGetRankSize on a destroyed comm");
  CHECK(HcclAllReduce(x, sum, 4, HCCL_DATA_TYPE_FP32, HCCL_REDUCE_SUM, comm, NULL) == HCCL_E_PARA,
        "HcclAllReduce on a destroyed comm");
  printf("rank %u: ok\n", rank);
  return 0;
}
