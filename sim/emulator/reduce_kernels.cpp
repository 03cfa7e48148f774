#include "sim/emulator/reduce_kernels.h"

#include <cstring>
#include <type_traits>

#include "sim/emulator/float_formats.h"

namespace ncclsim {

namespace {

// Integer element: arithmetic in the unsigned type of the same width, so overflow wraps as on the
// GPU instead of being undefined behaviour.
template <class T>
struct IntCodec {
  using Value = T;
  static T load(const void* p, size_t i) {
    T v;
    std::memcpy(&v, static_cast<const char*>(p) + i * sizeof(T), sizeof(T));
    return v;
  }
  static void store(void* p, size_t i, T v) {
    std::memcpy(static_cast<char*>(p) + i * sizeof(T), &v, sizeof(T));
  }
  using U = std::make_unsigned_t<T>;
  static T add(T a, T b) { return T(U(a) + U(b)); }
  static T mul(T a, T b) { return T(U(a) * U(b)); }
  static T div(T a, int d) { return T(a / T(d)); }
};

// Float element stored as `Bits`, computed in double and rounded back with `Enc`.
template <class Bits, double (*Dec)(Bits), Bits (*Enc)(double)>
struct FloatCodec {
  using Value = double;
  static double load(const void* p, size_t i) {
    Bits b;
    std::memcpy(&b, static_cast<const char*>(p) + i * sizeof(Bits), sizeof(Bits));
    return Dec(b);
  }
  static void store(void* p, size_t i, double v) {
    Bits b = Enc(v);
    std::memcpy(static_cast<char*>(p) + i * sizeof(Bits), &b, sizeof(Bits));
  }
  static double add(double a, double b) { return a + b; }
  static double mul(double a, double b) { return a * b; }
  static double div(double a, int d) { return a / d; }
};

double f32Dec(uint32_t b) {
  float f;
  std::memcpy(&f, &b, 4);
  return f;
}
uint32_t f32Enc(double v) {
  float f = float(v);
  uint32_t b;
  std::memcpy(&b, &f, 4);
  return b;
}
double f64Dec(uint64_t b) {
  double d;
  std::memcpy(&d, &b, 8);
  return d;
}
uint64_t f64Enc(double v) {
  uint64_t b;
  std::memcpy(&b, &v, 8);
  return b;
}

template <class C>
void foldT(void* dst, const void* src, size_t n, RedKind kind) {
  for (size_t i = 0; i < n; ++i) {
    auto a = C::load(dst, i);
    auto b = C::load(src, i);
    typename C::Value r;
    switch (kind) {
      case RedKind::kProd:
        r = C::mul(a, b);
        break;
      case RedKind::kMax:
        r = b > a ? b : a;
        break;
      case RedKind::kMin:
        r = b < a ? b : a;
        break;
      default:
        r = C::add(a, b);
        break;
    }
    C::store(dst, i, r);
  }
}

template <class C>
void scaleT(void* dst, const void* src, size_t n, const void* scalar) {
  auto s = C::load(scalar, 0);
  for (size_t i = 0; i < n; ++i) C::store(dst, i, C::mul(C::load(src, i), s));
}

template <class C>
void divT(void* dst, size_t n, int d) {
  for (size_t i = 0; i < n; ++i) C::store(dst, i, C::div(C::load(dst, i), d));
}

template <class C>
double loadT(const void* buf, size_t i) {
  return double(C::load(buf, i));
}

template <class C>
void storeT(void* buf, size_t i, double v) {
  C::store(buf, i, typename C::Value(v));
}

// Calls f.template operator()<Codec>() for the codec of dt.
template <class F>
void dispatch(ncclDataType_t dt, F&& f) {
  switch (dt) {
    case ncclInt8:
      f.template operator()<IntCodec<int8_t>>();
      break;
    case ncclUint8:
      f.template operator()<IntCodec<uint8_t>>();
      break;
    case ncclInt32:
      f.template operator()<IntCodec<int32_t>>();
      break;
    case ncclUint32:
      f.template operator()<IntCodec<uint32_t>>();
      break;
    case ncclInt64:
      f.template operator()<IntCodec<int64_t>>();
      break;
    case ncclUint64:
      f.template operator()<IntCodec<uint64_t>>();
      break;
    case ncclFloat16:
      f.template operator()<FloatCodec<uint16_t, halfToDouble, doubleToHalf>>();
      break;
    case ncclFloat32:
      f.template operator()<FloatCodec<uint32_t, f32Dec, f32Enc>>();
      break;
    case ncclFloat64:
      f.template operator()<FloatCodec<uint64_t, f64Dec, f64Enc>>();
      break;
    case ncclBfloat16:
      f.template operator()<FloatCodec<uint16_t, bf16ToDouble, doubleToBf16>>();
      break;
    case ncclFloat8e4m3:
      f.template operator()<FloatCodec<uint8_t, e4m3ToDouble, doubleToE4m3>>();
      break;
    case ncclFloat8e5m2:
      f.template operator()<FloatCodec<uint8_t, e5m2ToDouble, doubleToE5m2>>();
      break;
    default:
      break;
  }
}

}  // namespace

size_t dtypeSize(int dtype) {
  switch (dtype) {
    case ncclInt8:
    case ncclUint8:
    case ncclFloat8e4m3:
    case ncclFloat8e5m2:
      return 1;
    case ncclFloat16:
    case ncclBfloat16:
      return 2;
    case ncclInt32:
    case ncclUint32:
    case ncclFloat32:
      return 4;
    case ncclInt64:
    case ncclUint64:
    case ncclFloat64:
      return 8;
    default:
      return 0;
  }
}

void foldInto(void* dst, const void* src, size_t n, ncclDataType_t dt, RedKind kind) {
  dispatch(dt, [&]<class C>() { foldT<C>(dst, src, n, kind); });
}

void scaleCopy(void* dst, const void* src, size_t n, ncclDataType_t dt, const void* scalar) {
  dispatch(dt, [&]<class C>() { scaleT<C>(dst, src, n, scalar); });
}

void divideBy(void* dst, size_t n, ncclDataType_t dt, int divisor) {
  dispatch(dt, [&]<class C>() { divT<C>(dst, n, divisor); });
}

double loadAsDouble(const void* buf, size_t i, ncclDataType_t dt) {
  double v = 0;
  dispatch(dt, [&]<class C>() { v = loadT<C>(buf, i); });
  return v;
}

void storeFromDouble(void* buf, size_t i, ncclDataType_t dt, double v) {
  dispatch(dt, [&]<class C>() { storeT<C>(buf, i, v); });
}

}  // namespace ncclsim
