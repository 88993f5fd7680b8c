// Helpers of the ATB C++ API test programs (tests/atb_cpp/test_atb_cpp_api.py builds them against the installed headers
// with ATB's own build line). Nothing here comes from atb_ops: values are encoded to and decoded from each dtype's
// bytes on the host, so every golden is computed independently of the library under test.
#ifndef ATB_OPS_TESTS_ATB_TEST_UTIL_H
#define ATB_OPS_TESTS_ATB_TEST_UTIL_H

#include <acl/acl.h>
#include <atb/atb_infer.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

namespace atbtest {

// A failed check: the program prints it and exits 1 (a thread's failure is reported by the main thread).
struct CheckFailed : std::runtime_error {
  using std::runtime_error::runtime_error;
};

inline std::string where(const char* file, int line) {
  const char* slash = std::strrchr(file, '/');
  return std::string(slash ? slash + 1 : file) + ":" + std::to_string(line);
}

// The checks that passed on this thread (a rank is a process or a thread).
inline int& checkCount() {
  thread_local int count = 0;
  return count;
}
inline void passed() {
  ++checkCount();
}

}  // namespace atbtest

// `expr` (an ATB or ACL call) must return 0.
#define EXPECT_OK(expr)                                                                             \
  do {                                                                                              \
    const long _st = static_cast<long>(expr);                                                       \
    if (_st != 0) {                                                                                 \
      throw atbtest::CheckFailed(atbtest::where(__FILE__, __LINE__) + ": " + #expr + " returned " + \
                                 std::to_string(_st));                                              \
    }                                                                                               \
    atbtest::passed();                                                                              \
  } while (0)

// `expr` must return ATB's `code`.
#define EXPECT_STATUS(expr, code)                                                                   \
  do {                                                                                              \
    const long _st = static_cast<long>(expr);                                                       \
    if (_st != static_cast<long>(code)) {                                                           \
      throw atbtest::CheckFailed(atbtest::where(__FILE__, __LINE__) + ": " + #expr + " returned " + \
                                 std::to_string(_st) + ", expected " + #code + " (" +               \
                                 std::to_string(static_cast<long>(code)) + ")");                    \
    }                                                                                               \
    atbtest::passed();                                                                              \
  } while (0)

#define EXPECT_TRUE(cond, message)                                                                                 \
  do {                                                                                                             \
    if (!(cond)) throw atbtest::CheckFailed(atbtest::where(__FILE__, __LINE__) + ": " + #cond + ": " + (message)); \
    atbtest::passed();                                                                                             \
  } while (0)

namespace atbtest {

// IEEE half from a float (round to nearest even; the test values are exact anyway).
inline uint16_t toHalf(float value) {
  uint32_t f = 0;
  std::memcpy(&f, &value, 4);
  const uint32_t sign = (f >> 16) & 0x8000u;
  const int exponent = static_cast<int>((f >> 23) & 0xff) - 127 + 15;
  uint32_t mantissa = f & 0x7fffffu;
  if (((f >> 23) & 0xff) == 0) return static_cast<uint16_t>(sign);  // zero (float subnormals flush)
  if (exponent >= 31) return static_cast<uint16_t>(sign | 0x7c00u);
  if (exponent <= 0) {  // a half subnormal
    if (exponent < -10) return static_cast<uint16_t>(sign);
    mantissa |= 0x800000u;
    const int shift = 14 - exponent;
    uint32_t half = mantissa >> shift;
    const uint32_t rest = mantissa & ((1u << shift) - 1);
    const uint32_t halfway = 1u << (shift - 1);
    if (rest > halfway || (rest == halfway && (half & 1))) ++half;
    return static_cast<uint16_t>(sign | half);
  }
  uint32_t half = sign | (static_cast<uint32_t>(exponent) << 10) | (mantissa >> 13);
  const uint32_t rest = mantissa & 0x1fffu;
  if (rest > 0x1000u || (rest == 0x1000u && (half & 1))) ++half;
  return static_cast<uint16_t>(half);
}

inline float fromHalf(uint16_t h) {
  const uint32_t sign = (h & 0x8000u) << 16;
  const uint32_t exponent = (h >> 10) & 0x1f;
  const uint32_t mantissa = h & 0x3ffu;
  float magnitude = 0.0f;
  if (exponent == 0) {
    magnitude = std::ldexp(static_cast<float>(mantissa), -24);
  } else if (exponent == 31) {
    magnitude = mantissa ? NAN : INFINITY;
  } else {
    magnitude = std::ldexp(static_cast<float>(mantissa | 0x400u), static_cast<int>(exponent) - 25);
  }
  return sign ? -magnitude : magnitude;
}

// bfloat16: the top half of a float, rounded to nearest even (NaN stays NaN).
inline uint16_t toBf16(float value) {
  uint32_t f = 0;
  std::memcpy(&f, &value, 4);
  if (std::isnan(value)) return static_cast<uint16_t>((f >> 16) | 0x40u);
  const uint32_t rounding = 0x7fffu + ((f >> 16) & 1u);
  return static_cast<uint16_t>((f + rounding) >> 16);
}

inline float fromBf16(uint16_t b) {
  const uint32_t f = static_cast<uint32_t>(b) << 16;
  float value = 0;
  std::memcpy(&value, &f, 4);
  return value;
}

inline size_t itemBytes(aclDataType dtype) {
  switch (dtype) {
    case ACL_FLOAT:
    case ACL_INT32: return 4;
    case ACL_FLOAT16:
    case ACL_BF16:
    case ACL_INT16: return 2;
    case ACL_INT8:
    case ACL_UINT8:
    case ACL_BOOL: return 1;
    case ACL_INT64:
    case ACL_DOUBLE: return 8;
    default: throw CheckFailed("itemBytes: dtype " + std::to_string(dtype) + " is not used by these tests");
  }
}

// Values as doubles, encoded to / decoded from `dtype`'s bytes.
inline std::vector<uint8_t> encode(const std::vector<double>& values, aclDataType dtype) {
  const size_t w = itemBytes(dtype);
  std::vector<uint8_t> bytes(values.size() * w);
  for (size_t i = 0; i < values.size(); ++i) {
    uint8_t* p = bytes.data() + i * w;
    const double v = values[i];
    switch (dtype) {
      case ACL_FLOAT: {
        const float x = static_cast<float>(v);
        std::memcpy(p, &x, 4);
        break;
      }
      case ACL_DOUBLE: std::memcpy(p, &v, 8); break;
      case ACL_FLOAT16: {
        const uint16_t x = toHalf(static_cast<float>(v));
        std::memcpy(p, &x, 2);
        break;
      }
      case ACL_BF16: {
        const uint16_t x = toBf16(static_cast<float>(v));
        std::memcpy(p, &x, 2);
        break;
      }
      case ACL_INT8: {
        const int8_t x = static_cast<int8_t>(v);
        std::memcpy(p, &x, 1);
        break;
      }
      case ACL_UINT8: {
        const uint8_t x = static_cast<uint8_t>(v);
        std::memcpy(p, &x, 1);
        break;
      }
      case ACL_BOOL: {
        const uint8_t x = v != 0 ? 1 : 0;
        std::memcpy(p, &x, 1);
        break;
      }
      case ACL_INT16: {
        const int16_t x = static_cast<int16_t>(v);
        std::memcpy(p, &x, 2);
        break;
      }
      case ACL_INT32: {
        const int32_t x = static_cast<int32_t>(v);
        std::memcpy(p, &x, 4);
        break;
      }
      case ACL_INT64: {
        const int64_t x = static_cast<int64_t>(v);
        std::memcpy(p, &x, 8);
        break;
      }
      default: throw CheckFailed("encode: dtype " + std::to_string(dtype));
    }
  }
  return bytes;
}

inline std::vector<double> decode(const std::vector<uint8_t>& bytes, aclDataType dtype) {
  const size_t w = itemBytes(dtype);
  std::vector<double> values(bytes.size() / w);
  for (size_t i = 0; i < values.size(); ++i) {
    const uint8_t* p = bytes.data() + i * w;
    switch (dtype) {
      case ACL_FLOAT: {
        float x;
        std::memcpy(&x, p, 4);
        values[i] = x;
        break;
      }
      case ACL_DOUBLE: {
        double x;
        std::memcpy(&x, p, 8);
        values[i] = x;
        break;
      }
      case ACL_FLOAT16: {
        uint16_t x;
        std::memcpy(&x, p, 2);
        values[i] = fromHalf(x);
        break;
      }
      case ACL_BF16: {
        uint16_t x;
        std::memcpy(&x, p, 2);
        values[i] = fromBf16(x);
        break;
      }
      case ACL_INT8: {
        int8_t x;
        std::memcpy(&x, p, 1);
        values[i] = x;
        break;
      }
      case ACL_UINT8:
      case ACL_BOOL: {
        uint8_t x;
        std::memcpy(&x, p, 1);
        values[i] = x;
        break;
      }
      case ACL_INT16: {
        int16_t x;
        std::memcpy(&x, p, 2);
        values[i] = x;
        break;
      }
      case ACL_INT32: {
        int32_t x;
        std::memcpy(&x, p, 4);
        values[i] = x;
        break;
      }
      case ACL_INT64: {
        int64_t x;
        std::memcpy(&x, p, 8);
        values[i] = static_cast<double>(x);
        break;
      }
      default: throw CheckFailed("decode: dtype " + std::to_string(dtype));
    }
  }
  return values;
}

inline atb::TensorDesc desc(aclDataType dtype, const std::vector<int64_t>& shape) {
  atb::TensorDesc d;
  d.dtype = dtype;
  d.format = ACL_FORMAT_ND;
  d.shape.dimNum = shape.size();
  for (size_t i = 0; i < shape.size(); ++i) d.shape.dims[i] = shape[i];
  return d;
}

inline size_t numel(const std::vector<int64_t>& shape) {
  size_t n = 1;
  for (int64_t d : shape) n *= static_cast<size_t>(d);
  return n;
}

// A tensor in device memory (aclrtMalloc), freed with the object.
class DeviceTensor {
 public:
  DeviceTensor(aclDataType dtype, const std::vector<int64_t>& shape) {
    tensor.desc = desc(dtype, shape);
    tensor.dataSize = atb::Utils::GetTensorSize(tensor);
    if (tensor.dataSize > 0) EXPECT_OK(aclrtMalloc(&tensor.deviceData, tensor.dataSize, ACL_MEM_MALLOC_HUGE_FIRST));
  }
  DeviceTensor(aclDataType dtype, const std::vector<int64_t>& shape, const std::vector<double>& values)
      : DeviceTensor(dtype, shape) {
    upload(values);
  }
  DeviceTensor(const DeviceTensor&) = delete;
  DeviceTensor& operator=(const DeviceTensor&) = delete;
  ~DeviceTensor() {
    if (tensor.deviceData != nullptr) aclrtFree(tensor.deviceData);
  }

  void upload(const std::vector<double>& values) {
    const std::vector<uint8_t> bytes = encode(values, tensor.desc.dtype);
    EXPECT_TRUE(bytes.size() == tensor.dataSize,
                "upload of " + std::to_string(bytes.size()) + " bytes into " + std::to_string(tensor.dataSize));
    if (!bytes.empty()) {
      EXPECT_OK(aclrtMemcpy(tensor.deviceData, tensor.dataSize, bytes.data(), bytes.size(), ACL_MEMCPY_HOST_TO_DEVICE));
    }
  }

  std::vector<double> download() const {
    std::vector<uint8_t> bytes(tensor.dataSize);
    if (!bytes.empty()) {
      EXPECT_OK(aclrtMemcpy(bytes.data(), bytes.size(), tensor.deviceData, tensor.dataSize, ACL_MEMCPY_DEVICE_TO_HOST));
    }
    return decode(bytes, tensor.desc.dtype);
  }

  atb::Tensor tensor;
};

// An int64 count tensor as ATB's V operators take it: its values on the host (hostData), a device copy beside.
class CountTensor {
 public:
  explicit CountTensor(const std::vector<int64_t>& values) : host(values) {
    const std::vector<double> asDouble(values.begin(), values.end());
    device = new DeviceTensor(ACL_INT64, {static_cast<int64_t>(values.size())}, asDouble);
    tensor = device->tensor;
    tensor.hostData = host.data();
  }
  CountTensor(const CountTensor&) = delete;
  CountTensor& operator=(const CountTensor&) = delete;
  ~CountTensor() { delete device; }

  std::vector<int64_t> host;
  DeviceTensor* device = nullptr;
  atb::Tensor tensor;
};

// Element-wise equality with the golden; names the first differences.
inline void expectValues(const std::vector<double>& got, const std::vector<double>& want, const std::string& what) {
  if (got.size() != want.size()) {
    throw CheckFailed(what + ": " + std::to_string(got.size()) + " elements, expected " + std::to_string(want.size()));
  }
  std::string bad;
  int count = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    if (got[i] != want[i] && !(std::isnan(got[i]) && std::isnan(want[i]))) {
      if (count++ < 5)
        bad += " [" + std::to_string(i) + "] " + std::to_string(got[i]) + " != " + std::to_string(want[i]);
    }
  }
  if (count > 0) throw CheckFailed(what + ": " + std::to_string(count) + " wrong element(s):" + bad);
  passed();
}

// Setup (workspace 0 expected here), Execute, and a stream synchronisation, as ATB's demos run an operation.
inline void runOperation(atb::Operation* op, const atb::VariantPack& pack, atb::Context* context, aclrtStream stream) {
  uint64_t workspaceSize = 123;
  EXPECT_OK(op->Setup(pack, workspaceSize, context));
  EXPECT_TRUE(workspaceSize == 0, op->GetName() + " asked for a workspace of " + std::to_string(workspaceSize));
  EXPECT_OK(op->Execute(pack, nullptr, 0, context));
  EXPECT_OK(aclrtSynchronizeStream(stream));
}

}  // namespace atbtest

#endif  // ATB_OPS_TESTS_ATB_TEST_UTIL_H
