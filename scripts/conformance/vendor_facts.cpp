// Prints the facts of a set of vendor API headers that a program compiled against them depends on: every
// function's type (its pointer type, with parameter and return types by name), every constant's and
// enumerator's value, every struct's size and alignment, every field's type, offset and default value, and the
// vtable slot of every virtual method. scripts/compile_check_vendor_headers.sh compiles this file twice, once
// against the vendor's headers and once against atb_ops' own (include/), runs both and compares the tables
// line by line, so a difference names the declaration and both values.
//
// A name listed here that one set lacks, or an overload that one set declares differently, is a compile error.
// Nothing is called or linked: types are taken in unevaluated contexts (decltype), except the member-function
// pointers of pure virtual methods, whose value is their vtable offset (Itanium C++ ABI), not a symbol.
//
//   -DFACTS_C_APIS  HCCL (hccl/hccl.h, hccl/hccl_types.h) and the ACL runtime subset (acl/acl.h)
//   -DFACTS_ATB     ATB's C++ API (atb/atb_infer.h: types, context, operation, svector, utils, infer params)
#include <cxxabi.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <memory>
#include <string>
#include <type_traits>
#include <typeinfo>
#include <vector>

#ifdef FACTS_C_APIS
#include <acl/acl.h>
#include <hccl/hccl.h>
#endif
#ifdef FACTS_ATB
#include <atb/atb_infer.h>
#endif

namespace {

std::string demangle(const char* mangled) {
  int status = 0;
  std::unique_ptr<char, void (*)(void*)> name(abi::__cxa_demangle(mangled, nullptr, nullptr, &status), std::free);
  return status == 0 && name ? std::string(name.get()) : std::string(mangled);
}

template <typename T>
std::string typeName() {
  return demangle(typeid(T).name());
}

template <typename T, typename = void>
struct IsRange : std::false_type {};
template <typename T>
struct IsRange<T, std::void_t<decltype(std::declval<const T&>().size()), decltype(std::declval<const T&>().at(0))>>
    : std::true_type {};

// A default value as text: numbers and enumerators by value, strings quoted, pointers null or not, ranges and
// arrays element by element; a nested struct is listed by its own fields.
template <typename T>
std::string show(const T& v) {
  if constexpr (std::is_same_v<T, bool>) {
    return v ? "true" : "false";
  } else if constexpr (std::is_enum_v<T>) {
    return std::to_string(static_cast<long long>(v));
  } else if constexpr (std::is_floating_point_v<T>) {
    return std::to_string(v);
  } else if constexpr (std::is_integral_v<T>) {
    return std::to_string(static_cast<long long>(v));
  } else if constexpr (std::is_pointer_v<T>) {
    return v == nullptr ? "null" : "non-null";
  } else if constexpr (std::is_same_v<T, std::string>) {
    return "\"" + v + "\"";
  } else if constexpr (std::is_array_v<T>) {
    std::string out = "[";
    for (size_t i = 0; i < std::extent_v<T>; ++i) out += (i ? "," : "") + show(v[i]);
    return out + "]";
  } else if constexpr (IsRange<T>::value) {
    std::string out = "[";
    for (size_t i = 0; i < v.size(); ++i) out += (i ? "," : "") + show(v.at(i));
    return out + "]";
  } else {
    return "{struct}";
  }
}

void fact(const char* kind, const std::string& name, const std::string& value) {
  std::printf("%s %s = %s\n", kind, name.c_str(), value.c_str());
}

template <typename S, typename F>
void field(const char* name, F S::* member) {
  const S object{};
  const auto offset = reinterpret_cast<const char*>(&(object.*member)) - reinterpret_cast<const char*>(&object);
  fact("field", name, typeName<F>() + " @" + std::to_string(offset) + " default " + show(object.*member));
}

// The vtable offset of a virtual method, from its member-function pointer's first word (Itanium: 1 + offset).
template <typename P>
std::string vtableOffset(P pointer) {
  static_assert(sizeof(P) == 2 * sizeof(std::uintptr_t), "not an Itanium member-function pointer");
  std::uintptr_t word = 0;
  std::memcpy(&word, &pointer, sizeof(word));
  return (word & 1) ? "virtual @" + std::to_string(word - 1) : "not virtual";
}

}  // namespace

#define FUNCTION(f) fact("function", #f, typeName<decltype(&f)>())
#define OVERLOAD(f, Sig) fact("function", #f " as " #Sig, typeName<decltype(static_cast<Sig>(&f))>())
#define CONSTANT(c) fact("constant", #c, typeName<std::decay_t<decltype(c)>>() + " " + std::to_string((long long)(c)))
#define ENUM(E) fact("enum", #E, typeName<std::underlying_type_t<E>>())
#define VALUE(v) fact("value", #v, std::to_string(static_cast<long long>(v)))
#define STRUCT(S) fact("struct", #S, std::to_string(sizeof(S)) + " bytes, align " + std::to_string(alignof(S)))
#define FIELD(S, f) field(#S "::" #f, &S::f)
#define METHOD(C, m) fact("method", #C "::" #m, typeName<decltype(&C::m)>())
#define METHOD_AS(C, m, Sig) fact("method", #C "::" #m " as " #Sig, typeName<decltype(static_cast<Sig>(&C::m))>())
#define VIRTUAL(C, m) fact("method", #C "::" #m, typeName<decltype(&C::m)>() + " " + vtableOffset(&C::m))

#ifdef FACTS_C_APIS
static void cApis() {
  // --- hccl_types.h ---
  ENUM(HcclResult);
  VALUE(HCCL_SUCCESS), VALUE(HCCL_E_PARA), VALUE(HCCL_E_PTR), VALUE(HCCL_E_MEMORY), VALUE(HCCL_E_INTERNAL);
  VALUE(HCCL_E_NOT_SUPPORT), VALUE(HCCL_E_NOT_FOUND), VALUE(HCCL_E_UNAVAIL), VALUE(HCCL_E_SYSCALL);
  VALUE(HCCL_E_TIMEOUT), VALUE(HCCL_E_OPEN_FILE_FAILURE), VALUE(HCCL_E_TCP_CONNECT), VALUE(HCCL_E_ROCE_CONNECT);
  VALUE(HCCL_E_TCP_TRANSFER), VALUE(HCCL_E_ROCE_TRANSFER), VALUE(HCCL_E_RUNTIME), VALUE(HCCL_E_DRV);
  VALUE(HCCL_E_PROFILING), VALUE(HCCL_E_CCE), VALUE(HCCL_E_NETWORK), VALUE(HCCL_E_AGAIN), VALUE(HCCL_E_REMOTE);
  VALUE(HCCL_E_SUSPENDING), VALUE(HCCL_E_OPRETRY_FAIL), VALUE(HCCL_E_OOM), VALUE(HCCL_E_RESERVED);
  fact("type", "HcclComm", typeName<HcclComm>());
  ENUM(HcclReduceOp);
  VALUE(HCCL_REDUCE_SUM), VALUE(HCCL_REDUCE_PROD), VALUE(HCCL_REDUCE_MAX), VALUE(HCCL_REDUCE_MIN);
  VALUE(HCCL_REDUCE_RESERVED);
  ENUM(HcclDataType);
  VALUE(HCCL_DATA_TYPE_INT8), VALUE(HCCL_DATA_TYPE_INT16), VALUE(HCCL_DATA_TYPE_INT32), VALUE(HCCL_DATA_TYPE_FP16);
  VALUE(HCCL_DATA_TYPE_FP32), VALUE(HCCL_DATA_TYPE_INT64), VALUE(HCCL_DATA_TYPE_UINT64), VALUE(HCCL_DATA_TYPE_UINT8);
  VALUE(HCCL_DATA_TYPE_UINT16), VALUE(HCCL_DATA_TYPE_UINT32), VALUE(HCCL_DATA_TYPE_FP64);
  VALUE(HCCL_DATA_TYPE_BFP16), VALUE(HCCL_DATA_TYPE_INT128), VALUE(HCCL_DATA_TYPE_HIF8);
  VALUE(HCCL_DATA_TYPE_FP8E4M3), VALUE(HCCL_DATA_TYPE_FP8E5M2), VALUE(HCCL_DATA_TYPE_FP8E8M0);
  VALUE(HCCL_DATA_TYPE_RESERVED);
  ENUM(HcclSendRecvType);
  VALUE(HCCL_SEND), VALUE(HCCL_RECV), VALUE(HCCL_SEND_RECV_RESERVED);
  CONSTANT(HCCL_ROOT_INFO_BYTES), CONSTANT(BUFFER_NAME_MAX_LENGTH), CONSTANT(COMM_NAME_MAX_LENGTH);
  CONSTANT(UDI_MAX_LENGTH), CONSTANT(HCCL_COMM_ALGO_MAX_LENGTH), CONSTANT(HCCL_COMM_RETRY_ENABLE_MAX_LENGTH);
  CONSTANT(HCCL_COMM_RETRY_PARAMS_MAX_LENGTH), CONSTANT(HCCL_COMM_CONFIG_INFO_BYTES);
  CONSTANT(HCCL_COMM_CONFIG_MAGIC_WORD), CONSTANT(HCCL_COMM_CONFIG_VERSION), CONSTANT(HCCL_COMM_DEFAULT_BUFFSIZE);
  CONSTANT(HCCL_COMM_BUFFSIZE_CONFIG_NOT_SET), CONSTANT(HCCL_COMM_DEFAULT_DETERMINISTIC);
  CONSTANT(HCCL_COMM_DETERMINISTIC_CONFIG_NOT_SET), CONSTANT(HCCL_COMM_DEFAULT_OP_EXPANSION_MODE);
  CONSTANT(HCCL_COMM_TRAFFIC_CLASS_CONFIG_NOT_SET), CONSTANT(HCCL_COMM_SERVICE_LEVEL_CONFIG_NOT_SET);
  CONSTANT(HCCL_COMM_EXECTIMEOUT_CONFIG_NOT_SET), CONSTANT(HCCL_COMM_QOS_CONFIG_NOT_SET);
  CONSTANT(HCCL_DEFAULT_SYMMETRIC_MEMORY_STRIDE);
  STRUCT(HcclRootInfo), FIELD(HcclRootInfo, internal);
  STRUCT(HcclCommConfig);
  FIELD(HcclCommConfig, reserved), FIELD(HcclCommConfig, hcclBufferSize), FIELD(HcclCommConfig, hcclDeterministic);
  FIELD(HcclCommConfig, hcclCommName), FIELD(HcclCommConfig, hcclUdi), FIELD(HcclCommConfig, hcclOpExpansionMode);
  FIELD(HcclCommConfig, hcclRdmaTrafficClass), FIELD(HcclCommConfig, hcclRdmaServiceLevel);
  FIELD(HcclCommConfig, hcclWorldRankID), FIELD(HcclCommConfig, hcclJobID);
  FIELD(HcclCommConfig, aclGraphZeroCopyEnable), FIELD(HcclCommConfig, hcclExecTimeOut);
  FIELD(HcclCommConfig, hcclAlgo), FIELD(HcclCommConfig, hcclRetryEnable), FIELD(HcclCommConfig, hcclRetryParams);
  FIELD(HcclCommConfig, hcclBufferName), FIELD(HcclCommConfig, hcclQos);
  FIELD(HcclCommConfig, hcclSymWinMaxMemSizePerRank);
  STRUCT(HcclSendRecvItem);
  FIELD(HcclSendRecvItem, sendRecvType), FIELD(HcclSendRecvItem, buf), FIELD(HcclSendRecvItem, count);
  FIELD(HcclSendRecvItem, dataType), FIELD(HcclSendRecvItem, remoteRank);
  {
    // HcclCommConfigInit is inline in both: what it writes is compared byte by byte (as hex).
    HcclCommConfig config;
    std::memset(&config, 0xA5, sizeof(config));
    HcclCommConfigInit(&config);
    const auto* bytes = reinterpret_cast<const unsigned char*>(&config);
    std::string hex;
    for (size_t i = 0; i < sizeof(config); ++i) {
      char two[3];
      std::snprintf(two, sizeof(two), "%02x", bytes[i]);
      hex += two;
    }
    fact("bytes", "HcclCommConfigInit(all 0xa5)", hex);
  }

  // --- hccl.h ---
  FUNCTION(HcclGetRootInfo), FUNCTION(HcclCommInitRootInfo), FUNCTION(HcclCommInitRootInfoConfig);
  FUNCTION(HcclCommInitClusterInfo), FUNCTION(HcclCommInitClusterInfoConfig), FUNCTION(HcclCommInitAll);
  FUNCTION(HcclCommDestroy), FUNCTION(HcclGetRankSize), FUNCTION(HcclGetRankId), FUNCTION(HcclGetCommName);
  FUNCTION(HcclGetCommAsyncError), FUNCTION(HcclGetErrorString), FUNCTION(HcclCommConfigInit);
  FUNCTION(HcclAllReduce), FUNCTION(HcclBroadcast), FUNCTION(HcclReduceScatter), FUNCTION(HcclReduceScatterV);
  FUNCTION(HcclScatter), FUNCTION(HcclAllGather), FUNCTION(HcclAllGatherV), FUNCTION(HcclAlltoAllV),
      FUNCTION(HcclAlltoAllVC);
  FUNCTION(HcclAlltoAll), FUNCTION(HcclReduce), FUNCTION(HcclBarrier), FUNCTION(HcclSend), FUNCTION(HcclRecv);
  FUNCTION(HcclBatchSendRecv);

  // --- acl_base.h ---
  fact("type", "aclrtStream", typeName<aclrtStream>());
  fact("type", "aclrtEvent", typeName<aclrtEvent>());
  fact("type", "aclrtContext", typeName<aclrtContext>());
  fact("type", "aclError", typeName<aclError>());
  fact("type", "aclFloat16", typeName<aclFloat16>());
  CONSTANT(ACL_ERROR_NONE), CONSTANT(ACL_SUCCESS);
  CONSTANT(ACL_ERROR_INVALID_PARAM), CONSTANT(ACL_ERROR_UNINITIALIZE), CONSTANT(ACL_ERROR_REPEAT_INITIALIZE);
  CONSTANT(ACL_ERROR_INVALID_FILE), CONSTANT(ACL_ERROR_WRITE_FILE), CONSTANT(ACL_ERROR_INVALID_FILE_SIZE);
  CONSTANT(ACL_ERROR_PARSE_FILE), CONSTANT(ACL_ERROR_FILE_MISSING_ATTR), CONSTANT(ACL_ERROR_FILE_ATTR_INVALID);
  CONSTANT(ACL_ERROR_INVALID_DUMP_CONFIG), CONSTANT(ACL_ERROR_INVALID_PROFILING_CONFIG);
  CONSTANT(ACL_ERROR_INVALID_MODEL_ID), CONSTANT(ACL_ERROR_DESERIALIZE_MODEL), CONSTANT(ACL_ERROR_PARSE_MODEL);
  CONSTANT(ACL_ERROR_READ_MODEL_FAILURE), CONSTANT(ACL_ERROR_MODEL_SIZE_INVALID);
  CONSTANT(ACL_ERROR_MODEL_MISSING_ATTR), CONSTANT(ACL_ERROR_MODEL_INPUT_NOT_MATCH);
  CONSTANT(ACL_ERROR_MODEL_OUTPUT_NOT_MATCH), CONSTANT(ACL_ERROR_MODEL_NOT_DYNAMIC);
  CONSTANT(ACL_ERROR_OP_TYPE_NOT_MATCH), CONSTANT(ACL_ERROR_OP_INPUT_NOT_MATCH);
  CONSTANT(ACL_ERROR_OP_OUTPUT_NOT_MATCH), CONSTANT(ACL_ERROR_OP_ATTR_NOT_MATCH), CONSTANT(ACL_ERROR_OP_NOT_FOUND);
  CONSTANT(ACL_ERROR_OP_LOAD_FAILED), CONSTANT(ACL_ERROR_UNSUPPORTED_DATA_TYPE), CONSTANT(ACL_ERROR_FORMAT_NOT_MATCH);
  CONSTANT(ACL_ERROR_BIN_SELECTOR_NOT_REGISTERED), CONSTANT(ACL_ERROR_KERNEL_NOT_FOUND);
  CONSTANT(ACL_ERROR_BIN_SELECTOR_ALREADY_REGISTERED), CONSTANT(ACL_ERROR_KERNEL_ALREADY_REGISTERED);
  CONSTANT(ACL_ERROR_INVALID_QUEUE_ID), CONSTANT(ACL_ERROR_REPEAT_SUBSCRIBE);
  CONSTANT(ACL_ERROR_STREAM_NOT_SUBSCRIBE), CONSTANT(ACL_ERROR_THREAD_NOT_SUBSCRIBE);
  CONSTANT(ACL_ERROR_WAIT_CALLBACK_TIMEOUT), CONSTANT(ACL_ERROR_REPEAT_FINALIZE), CONSTANT(ACL_ERROR_NOT_STATIC_AIPP);
  CONSTANT(ACL_ERROR_COMPILING_STUB_MODE), CONSTANT(ACL_ERROR_GROUP_NOT_SET), CONSTANT(ACL_ERROR_GROUP_NOT_CREATE);
  CONSTANT(ACL_ERROR_PROF_ALREADY_RUN), CONSTANT(ACL_ERROR_PROF_NOT_RUN), CONSTANT(ACL_ERROR_DUMP_ALREADY_RUN);
  CONSTANT(ACL_ERROR_DUMP_NOT_RUN), CONSTANT(ACL_ERROR_PROF_REPEAT_SUBSCRIBE), CONSTANT(ACL_ERROR_PROF_API_CONFLICT);
  CONSTANT(ACL_ERROR_INVALID_MAX_OPQUEUE_NUM_CONFIG), CONSTANT(ACL_ERROR_INVALID_OPP_PATH);
  CONSTANT(ACL_ERROR_OP_UNSUPPORTED_DYNAMIC), CONSTANT(ACL_ERROR_RELATIVE_RESOURCE_NOT_CLEARED);
  CONSTANT(ACL_ERROR_UNSUPPORTED_JPEG), CONSTANT(ACL_ERROR_INVALID_BUNDLE_MODEL_ID);
  CONSTANT(ACL_ERROR_BAD_ALLOC), CONSTANT(ACL_ERROR_API_NOT_SUPPORT), CONSTANT(ACL_ERROR_INVALID_DEVICE);
  CONSTANT(ACL_ERROR_MEMORY_ADDRESS_UNALIGNED), CONSTANT(ACL_ERROR_RESOURCE_NOT_MATCH);
  CONSTANT(ACL_ERROR_INVALID_RESOURCE_HANDLE), CONSTANT(ACL_ERROR_FEATURE_UNSUPPORTED);
  CONSTANT(ACL_ERROR_PROF_MODULES_UNSUPPORTED), CONSTANT(ACL_ERROR_STORAGE_OVER_LIMIT);
  CONSTANT(ACL_ERROR_INTERNAL_ERROR), CONSTANT(ACL_ERROR_FAILURE), CONSTANT(ACL_ERROR_GE_FAILURE);
  CONSTANT(ACL_ERROR_RT_FAILURE), CONSTANT(ACL_ERROR_DRV_FAILURE), CONSTANT(ACL_ERROR_PROFILING_FAILURE);
  CONSTANT(ACL_ERROR_RT_PARAM_INVALID), CONSTANT(ACL_ERROR_RT_INVALID_DEVICEID), CONSTANT(ACL_ERROR_RT_CONTEXT_NULL);
  CONSTANT(ACL_ERROR_RT_STREAM_CONTEXT), CONSTANT(ACL_ERROR_RT_INVALID_HANDLE);
  CONSTANT(ACL_ERROR_RT_FEATURE_NOT_SUPPORT), CONSTANT(ACL_ERROR_RT_MEMORY_ALLOCATION);
  ENUM(aclDataType);
  VALUE(ACL_DT_UNDEFINED), VALUE(ACL_FLOAT), VALUE(ACL_FLOAT16), VALUE(ACL_INT8), VALUE(ACL_INT32), VALUE(ACL_UINT8);
  VALUE(ACL_INT16), VALUE(ACL_UINT16), VALUE(ACL_UINT32), VALUE(ACL_INT64), VALUE(ACL_UINT64), VALUE(ACL_DOUBLE);
  VALUE(ACL_BOOL), VALUE(ACL_STRING), VALUE(ACL_COMPLEX64), VALUE(ACL_COMPLEX128), VALUE(ACL_BF16), VALUE(ACL_INT4);
  VALUE(ACL_UINT1), VALUE(ACL_COMPLEX32), VALUE(ACL_HIFLOAT8), VALUE(ACL_FLOAT8_E5M2), VALUE(ACL_FLOAT8_E4M3FN);
  VALUE(ACL_FLOAT8_E8M0), VALUE(ACL_FLOAT6_E3M2), VALUE(ACL_FLOAT6_E2M3), VALUE(ACL_FLOAT4_E2M1);
  VALUE(ACL_FLOAT4_E1M2);
  ENUM(aclFormat);
  VALUE(ACL_FORMAT_UNDEFINED), VALUE(ACL_FORMAT_NCHW), VALUE(ACL_FORMAT_NHWC), VALUE(ACL_FORMAT_ND);
  VALUE(ACL_FORMAT_NC1HWC0), VALUE(ACL_FORMAT_FRACTAL_Z), VALUE(ACL_FORMAT_NC1HWC0_C04), VALUE(ACL_FORMAT_HWCN);
  VALUE(ACL_FORMAT_NDHWC), VALUE(ACL_FORMAT_FRACTAL_NZ), VALUE(ACL_FORMAT_NCDHW), VALUE(ACL_FORMAT_NDC1HWC0);
  VALUE(ACL_FRACTAL_Z_3D), VALUE(ACL_FORMAT_NC), VALUE(ACL_FORMAT_NCL), VALUE(ACL_FORMAT_FRACTAL_NZ_C0_16);
  VALUE(ACL_FORMAT_FRACTAL_NZ_C0_32), VALUE(ACL_FORMAT_FRACTAL_NZ_C0_2), VALUE(ACL_FORMAT_FRACTAL_NZ_C0_4);
  VALUE(ACL_FORMAT_FRACTAL_NZ_C0_8);
  FUNCTION(aclDataTypeSize), FUNCTION(aclrtGetSocName);

  // --- acl_rt.h ---
  CONSTANT(ACL_EVENT_SYNC), CONSTANT(ACL_EVENT_CAPTURE_STREAM_PROGRESS), CONSTANT(ACL_EVENT_TIME_LINE);
  ENUM(aclrtRunMode), VALUE(ACL_DEVICE), VALUE(ACL_HOST);
  ENUM(aclrtMemcpyKind);
  VALUE(ACL_MEMCPY_HOST_TO_HOST), VALUE(ACL_MEMCPY_HOST_TO_DEVICE), VALUE(ACL_MEMCPY_DEVICE_TO_HOST);
  VALUE(ACL_MEMCPY_DEVICE_TO_DEVICE), VALUE(ACL_MEMCPY_DEFAULT), VALUE(ACL_MEMCPY_HOST_TO_BUF_TO_DEVICE);
  VALUE(ACL_MEMCPY_INNER_DEVICE_TO_DEVICE), VALUE(ACL_MEMCPY_INTER_DEVICE_TO_DEVICE);
  ENUM(aclrtMemMallocPolicy);
  VALUE(ACL_MEM_MALLOC_HUGE_FIRST), VALUE(ACL_MEM_MALLOC_HUGE_ONLY), VALUE(ACL_MEM_MALLOC_NORMAL_ONLY);
  VALUE(ACL_MEM_MALLOC_HUGE_FIRST_P2P), VALUE(ACL_MEM_MALLOC_HUGE_ONLY_P2P), VALUE(ACL_MEM_MALLOC_NORMAL_ONLY_P2P);
  VALUE(ACL_MEM_MALLOC_HUGE1G_ONLY), VALUE(ACL_MEM_MALLOC_HUGE1G_ONLY_P2P), VALUE(ACL_MEM_TYPE_LOW_BAND_WIDTH);
  VALUE(ACL_MEM_TYPE_HIGH_BAND_WIDTH), VALUE(ACL_MEM_ACCESS_USER_SPACE_READONLY);
  ENUM(aclrtEventRecordedStatus);
  VALUE(ACL_EVENT_RECORDED_STATUS_NOT_READY), VALUE(ACL_EVENT_RECORDED_STATUS_COMPLETE);
  FUNCTION(aclInit), FUNCTION(aclFinalize), FUNCTION(aclGetRecentErrMsg);
  FUNCTION(aclrtSetDevice), FUNCTION(aclrtResetDevice), FUNCTION(aclrtGetDevice), FUNCTION(aclrtGetDeviceCount);
  FUNCTION(aclrtGetRunMode), FUNCTION(aclrtSynchronizeDevice);
  FUNCTION(aclrtCreateContext), FUNCTION(aclrtDestroyContext), FUNCTION(aclrtSetCurrentContext);
  FUNCTION(aclrtGetCurrentContext);
  FUNCTION(aclrtMalloc), FUNCTION(aclrtMallocHost), FUNCTION(aclrtFree), FUNCTION(aclrtFreeHost);
  FUNCTION(aclrtMemcpy), FUNCTION(aclrtMemcpyAsync), FUNCTION(aclrtMemset), FUNCTION(aclrtMemsetAsync);
  FUNCTION(aclrtCreateStream), FUNCTION(aclrtDestroyStream), FUNCTION(aclrtSynchronizeStream);
  FUNCTION(aclrtCreateEvent), FUNCTION(aclrtCreateEventWithFlag), FUNCTION(aclrtDestroyEvent);
  FUNCTION(aclrtRecordEvent), FUNCTION(aclrtQueryEventStatus), FUNCTION(aclrtSynchronizeEvent);
  FUNCTION(aclrtStreamWaitEvent);
}
#endif  // FACTS_C_APIS

#ifdef FACTS_ATB
// The fields every communication param has, in ATB's names.
#define COMM_FIELDS(P)                                                                                               \
  FIELD(P, rank), FIELD(P, rankSize), FIELD(P, rankRoot), FIELD(P, backend), FIELD(P, hcclComm), FIELD(P, commMode), \
      FIELD(P, rankTableFile), FIELD(P, commDomain), FIELD(P, rsv);                                                  \
  fact("function", "atb::CreateOperation<" #P ">", typeName<decltype(&atb::CreateOperation<P>)>());                  \
  fact("function", "atb::CloneOperationParam<" #P ">", typeName<decltype(&atb::CloneOperationParam<P>)>());          \
  fact("function", "atb::UpdateOperationParam<" #P ">", typeName<decltype(&atb::UpdateOperationParam<P>)>())

static void atbApi() {
  using namespace atb;  // NOLINT: the names below read as in ATB's headers
  using namespace atb::infer;

  // --- types.h ---
  fact("type", "atb::Status", typeName<Status>());
  CONSTANT(atb::MAX_DIM);
  ENUM(atb::ErrorType);
  VALUE(NO_ERROR), VALUE(ERROR_INVALID_PARAM), VALUE(ERROR_INVALID_GRAPH), VALUE(ERROR_INTERNAL_ERROR);
  VALUE(ERROR_RT_FAIL), VALUE(ERROR_INVALID_IN_TENSOR_NUM), VALUE(ERROR_INVALID_TENSOR_DTYPE);
  VALUE(ERROR_INVALID_TENSOR_FORMAT), VALUE(ERROR_INVALID_TENSOR_DIM), VALUE(ERROR_INVALID_TENSOR_SIZE);
  VALUE(ERROR_OPERATION_NULL_RUNNER), VALUE(ERROR_GRAPH_INFERSHAPE_FUNC_FAIL), VALUE(ERROR_CANN_ERROR);
  VALUE(ERROR_INVALID_TENSOR_INI_MATCH), VALUE(ERROR_INVALID_TENSOR_ADDR), VALUE(ERROR_INVALID_TENSOR_NUM);
  VALUE(ERROR_INVALID_TENSOR_DIM_NUM), VALUE(ERROR_INVALID_SINGLE_OPERATION_PARAM);
  VALUE(ERROR_GRAPH_NODE_RESHAPE_FUNC_FAIL), VALUE(ERROR_INVALID_GRAPH_NODE_CHUNK), VALUE(ERROR_INVALID_CONTEXT_ADDR);
  VALUE(ERROR_INVALID_STREAM), VALUE(ERROR_INVALID_WORKSPACE_SIZE), VALUE(ERROR_INVALID_WORKSPACE_ADDR);
  VALUE(ERROR_INVALID_OPERATION_ADDR), VALUE(ERROR_HCCL_FAIL), VALUE(ERROR_OUT_OF_DEVICE_MEMORY);
  VALUE(ERROR_OUT_OF_HOST_MEMORY), VALUE(ERROR_COMM_EMPTY), VALUE(ERROR_COPY_HOST_MEMORY_FAIL);
  ENUM(atb::LogLevel);
  VALUE(LogLevel::DEBUG), VALUE(LogLevel::INFO), VALUE(LogLevel::WARN), VALUE(LogLevel::ERROR), VALUE(LogLevel::NONE);
  STRUCT(Dims), FIELD(Dims, dims), FIELD(Dims, dimNum);
  STRUCT(TensorDesc), FIELD(TensorDesc, dtype), FIELD(TensorDesc, format), FIELD(TensorDesc, shape);
  STRUCT(Tensor), FIELD(Tensor, desc), FIELD(Tensor, deviceData), FIELD(Tensor, hostData), FIELD(Tensor, dataSize);
  STRUCT(VariantPack), FIELD(VariantPack, inTensors), FIELD(VariantPack, outTensors);

  // --- svector.h ---
  CONSTANT(atb::MAX_SVECTOR_SIZE), CONSTANT(atb::DEFAULT_SVECTOR_SIZE), CONSTANT(atb::CHECK_BOUND);
  STRUCT(SVector<int64_t>), STRUCT(SVector<Tensor>), STRUCT(SVector<TensorDesc>);
  fact("type", "atb::MaxSizeExceeded base",
       std::is_base_of_v<std::exception, MaxSizeExceeded> ? "std::exception" : "?");
  using IntVector = SVector<int>;
  METHOD(IntVector, push_back), METHOD(IntVector, size), METHOD(IntVector, insert), METHOD(IntVector, empty);
  METHOD(IntVector, clear), METHOD(IntVector, resize), METHOD(IntVector, reserve);
  METHOD(IntVector, operator==), METHOD(IntVector, operator!=), METHOD(IntVector, operator<);
  METHOD_AS(IntVector, begin, int* (IntVector::*)() noexcept);
  METHOD_AS(IntVector, begin, const int* (IntVector::*)() const noexcept);
  METHOD_AS(IntVector, end, int* (IntVector::*)() noexcept);
  METHOD_AS(IntVector, end, const int* (IntVector::*)() const noexcept);
  METHOD_AS(IntVector, data, int* (IntVector::*)() noexcept);
  METHOD_AS(IntVector, data, const int* (IntVector::*)() const noexcept);
  METHOD_AS(IntVector, operator[], int& (IntVector::*)(std::size_t));
  METHOD_AS(IntVector, operator[], const int& (IntVector::*)(std::size_t) const);
  METHOD_AS(IntVector, at, int& (IntVector::*)(std::size_t));
  METHOD_AS(IntVector, at, const int& (IntVector::*)(std::size_t) const);
  METHOD_AS(IntVector, operator=, IntVector & (IntVector::*)(std::initializer_list<int>));
  METHOD_AS(IntVector, operator=, IntVector & (IntVector::*)(const IntVector&));
  fact("constructible", "SVector<int>(initializer_list), (size_t, const int&), (const SVector&)",
       std::is_constructible_v<IntVector, std::initializer_list<int>> &&
               std::is_constructible_v<IntVector, std::size_t, const int&> && std::is_copy_constructible_v<IntVector> &&
               !std::is_convertible_v<std::size_t, IntVector>
           ? "yes"
           : "no");
  {
    const SVector<int> filled(3, 7);
    const SVector<int> listed = {1, 2, 3};
    fact("behaviour", "SVector<int>(3, 7); {1,2,3}; {1,2,3} < SVector<int>(3, 7)",
         show(filled) + "; " + show(listed) + "; " + show(listed < filled));
  }

  // --- context.h ---
  ENUM(atb::ExecuteType), VALUE(EXECUTE_NORMAL), VALUE(EXECUTE_PRELAUNCH), VALUE(EXECUTE_LAUNCH);
  ENUM(atb::LaunchMode), VALUE(KERNEL_LAUNCH_MODE), VALUE(GRAPH_LAUNCH_MODE);
  fact("type", "atb::Context is abstract, virtual destructor",
       std::is_abstract_v<Context> && std::has_virtual_destructor_v<Context> ? "yes" : "no");
  VIRTUAL(Context, SetExecuteStream), VIRTUAL(Context, GetExecuteStream), VIRTUAL(Context, SetAsyncTilingCopyStatus);
  VIRTUAL(Context, GetAsyncTilingCopyStatus), VIRTUAL(Context, SetExecuteStreams), VIRTUAL(Context, GetExecuteStreams);
  VIRTUAL(Context, SetExecuteType), VIRTUAL(Context, GetExecuteType), VIRTUAL(Context, SetLaunchMode);
  VIRTUAL(Context, GetLaunchMode);
  OVERLOAD(atb::CreateContext, Status (*)(Context**));
  OVERLOAD(atb::CreateContext,
           Status (*)(Context**, const std::function<void*(size_t)>&, const std::function<void(void*)>&));
  OVERLOAD(atb::CreateContext, Status (*)(Context**, uint32_t, uint32_t));
  FUNCTION(atb::DestroyContext);

  // --- operation.h ---
  fact("type", "atb::Operation is abstract, virtual destructor",
       std::is_abstract_v<Operation> && std::has_virtual_destructor_v<Operation> ? "yes" : "no");
  VIRTUAL(Operation, GetName), VIRTUAL(Operation, InferShape), VIRTUAL(Operation, GetInputNum);
  VIRTUAL(Operation, GetOutputNum), VIRTUAL(Operation, Setup), VIRTUAL(Operation, Execute);
  FUNCTION(atb::DestroyOperation), FUNCTION(atb::SetExecuteStreamId), FUNCTION(atb::GetExecuteStreamId);

  // --- utils.h ---
  FUNCTION(atb::Utils::GetAtbVersion);
  OVERLOAD(atb::Utils::GetTensorSize, uint64_t (*)(const Tensor&));
  OVERLOAD(atb::Utils::GetTensorSize, uint64_t (*)(const TensorDesc&));
  OVERLOAD(atb::Utils::GetTensorNumel, uint64_t (*)(const Tensor&));
  OVERLOAD(atb::Utils::GetTensorNumel, uint64_t (*)(const TensorDesc&));
  FUNCTION(atb::Utils::QuantParamConvert), FUNCTION(atb::Utils::SetLogLevel), FUNCTION(atb::Utils::ResetLogLevel);

  // --- infer_op_params.h ---
  ENUM(atb::infer::CommMode), VALUE(COMM_UNDEFINED), VALUE(COMM_MULTI_PROCESS), VALUE(COMM_MULTI_THREAD);
  STRUCT(AllGatherParam), COMM_FIELDS(AllGatherParam);
  STRUCT(AllGatherVParam), COMM_FIELDS(AllGatherVParam);
  STRUCT(AllReduceParam), COMM_FIELDS(AllReduceParam);
  FIELD(AllReduceParam, allReduceType), FIELD(AllReduceParam, quantType), FIELD(AllReduceParam, outDataType);
  ENUM(AllReduceParam::QuantType), VALUE(AllReduceParam::QUANT_TYPE_UNQUANT);
  VALUE(AllReduceParam::QUANT_TYPE_UNDEFINED), VALUE(AllReduceParam::QUANT_TYPE_PER_TENSOR);
  VALUE(AllReduceParam::QUANT_TYPE_PER_CHANNEL), VALUE(AllReduceParam::QUANT_TYPE_MAX);
  STRUCT(BroadcastParam), COMM_FIELDS(BroadcastParam);
  STRUCT(ReduceScatterParam), COMM_FIELDS(ReduceScatterParam), FIELD(ReduceScatterParam, reduceType);
  STRUCT(ReduceScatterVParam), COMM_FIELDS(ReduceScatterVParam);
  FIELD(ReduceScatterVParam, sendCounts), FIELD(ReduceScatterVParam, sdispls), FIELD(ReduceScatterVParam, recvCount);
  FIELD(ReduceScatterVParam, reduceType);
  STRUCT(SendParam), COMM_FIELDS(SendParam), FIELD(SendParam, destRank);
  STRUCT(RecvParam), COMM_FIELDS(RecvParam), FIELD(RecvParam, srcRank);
  STRUCT(AllToAllParam), COMM_FIELDS(AllToAllParam), FIELD(AllToAllParam, transpose);
  STRUCT(AllToAllVParam), COMM_FIELDS(AllToAllVParam);
  FIELD(AllToAllVParam, sendCounts), FIELD(AllToAllVParam, sdispls), FIELD(AllToAllVParam, recvCounts);
  FIELD(AllToAllVParam, rdispls);
  STRUCT(AllToAllVV2Param), COMM_FIELDS(AllToAllVV2Param);
  fact("function", "operator==(AllGatherVParam)",
       typeName<decltype(static_cast<bool (*)(const AllGatherVParam&, const AllGatherVParam&)>(
           &atb::infer::operator==))>());
  fact("function", "operator==(ReduceScatterVParam)",
       typeName<decltype(static_cast<bool (*)(const ReduceScatterVParam&, const ReduceScatterVParam&)>(
           &atb::infer::operator==))>());
  fact("function", "operator==(AllToAllVV2Param)",
       typeName<decltype(static_cast<bool (*)(const AllToAllVV2Param&, const AllToAllVV2Param&)>(
           &atb::infer::operator==))>());

  STRUCT(LinearParallelParam), COMM_FIELDS(LinearParallelParam);
  FIELD(LinearParallelParam, transWeight), FIELD(LinearParallelParam, hasResidual), FIELD(LinearParallelParam, type);
  FIELD(LinearParallelParam, keepIntermediate), FIELD(LinearParallelParam, quantType);
  FIELD(LinearParallelParam, quantGroupSize), FIELD(LinearParallelParam, outDataType);
  FIELD(LinearParallelParam, twoDimTPInfo), FIELD(LinearParallelParam, moeInfo);
  ENUM(LinearParallelParam::ParallelType);
  VALUE(LinearParallelParam::UNDEFINED), VALUE(LinearParallelParam::LINEAR_ALL_REDUCE);
  VALUE(LinearParallelParam::LINEAR_REDUCE_SCATTER), VALUE(LinearParallelParam::ALL_GATHER_LINEAR);
  VALUE(LinearParallelParam::PURE_LINEAR), VALUE(LinearParallelParam::ALL_GATHER_LINEAR_REDUCE_SCATTER);
  VALUE(LinearParallelParam::ALLTOALLVC_ALL_GATHER_GMM), VALUE(LinearParallelParam::GMM_REDUCE_SCATTER_ALLTOALLVC);
  VALUE(LinearParallelParam::MAX);
  ENUM(LinearParallelParam::QuantType);
  VALUE(LinearParallelParam::QUANT_TYPE_UNDEFINED), VALUE(LinearParallelParam::QUANT_TYPE_UNQUANT);
  VALUE(LinearParallelParam::QUANT_TYPE_PER_TENSOR), VALUE(LinearParallelParam::QUANT_TYPE_PER_CHANNEL);
  VALUE(LinearParallelParam::QUANT_TYPE_PER_GROUP), VALUE(LinearParallelParam::QUANT_TYPE_PER_TOKEN);
  VALUE(LinearParallelParam::QUANT_TYPE_MAX);
  using TwoDim = LinearParallelParam::TwoDimTPInfo;
  STRUCT(TwoDim), FIELD(TwoDim, agDim), FIELD(TwoDim, rsDim), FIELD(TwoDim, innerDimIsAg), FIELD(TwoDim, rsv);
  using Moe = LinearParallelParam::MoeInfo;
  STRUCT(Moe), FIELD(Moe, localExpertNums), FIELD(Moe, epSize), FIELD(Moe, tpSize);

  STRUCT(ElewiseParam);
  FIELD(ElewiseParam, elewiseType), FIELD(ElewiseParam, quantParam), FIELD(ElewiseParam, mulsParam);
  FIELD(ElewiseParam, outTensorType), FIELD(ElewiseParam, rsv);
  ENUM(ElewiseParam::ElewiseType);
  VALUE(ElewiseParam::ELEWISE_UNDEFINED), VALUE(ElewiseParam::ELEWISE_CAST), VALUE(ElewiseParam::ELEWISE_MULS);
  VALUE(ElewiseParam::ELEWISE_COS), VALUE(ElewiseParam::ELEWISE_SIN), VALUE(ElewiseParam::ELEWISE_NEG);
  VALUE(ElewiseParam::ELEWISE_QUANT), VALUE(ElewiseParam::ELEWISE_LOGICAL_NOT), VALUE(ElewiseParam::ELEWISE_ADD);
  VALUE(ElewiseParam::ELEWISE_MUL), VALUE(ElewiseParam::ELEWISE_REALDIV), VALUE(ElewiseParam::ELEWISE_LOGICAL_AND);
  VALUE(ElewiseParam::ELEWISE_LOGICAL_OR), VALUE(ElewiseParam::ELEWISE_LESS), VALUE(ElewiseParam::ELEWISE_GREATER);
  VALUE(ElewiseParam::ELEWISE_SUB), VALUE(ElewiseParam::ELEWISE_EQUAL);
  VALUE(ElewiseParam::ELEWISE_QUANT_PER_CHANNEL), VALUE(ElewiseParam::ELEWISE_DEQUANT_PER_CHANNEL);
  VALUE(ElewiseParam::ELEWISE_DYNAMIC_QUANT), VALUE(ElewiseParam::ELEWISE_TANH), VALUE(ElewiseParam::ELEWISE_TYPE_MAX);
  using Quant = ElewiseParam::QuantParam;
  STRUCT(Quant), FIELD(Quant, inputScale), FIELD(Quant, asymmetric), FIELD(Quant, inputOffset), FIELD(Quant, rsv);
  using Muls = ElewiseParam::MulsParam;
  STRUCT(Muls), FIELD(Muls, varAttr), FIELD(Muls, rsv);
  fact("function", "atb::CreateOperation<ElewiseParam>", typeName<decltype(&atb::CreateOperation<ElewiseParam>)>());

  STRUCT(TransdataParam);
  FIELD(TransdataParam, transdataType), FIELD(TransdataParam, outCrops), FIELD(TransdataParam, rsv);
  ENUM(TransdataParam::TransdataType);
  VALUE(TransdataParam::UNDEFINED), VALUE(TransdataParam::FRACTAL_NZ_TO_ND), VALUE(TransdataParam::ND_TO_FRACTAL_NZ);
  fact("function", "atb::CreateOperation<TransdataParam>", typeName<decltype(&atb::CreateOperation<TransdataParam>)>());
}
#endif  // FACTS_ATB

int main() {
#ifdef FACTS_C_APIS
  cApis();
#endif
#ifdef FACTS_ATB
  atbApi();
#endif
  return 0;
}
