// Name parsing for match_aten: run once per kernel, so it may allocate.
#include <array>
#include <string>

#include "decode/aten_internal.hpp"

namespace nanscope::decode::aten {

namespace {

constexpr std::string_view kAnon = "(anonymous namespace)::";

std::string_view trim(std::string_view s) {
  while (!s.empty() && s.front() == ' ') s.remove_prefix(1);
  while (!s.empty() && s.back() == ' ') s.remove_suffix(1);
  return s;
}

bool opens(char c) { return c == '<' || c == '(' || c == '{' || c == '['; }
bool closes(char c) { return c == '>' || c == ')' || c == '}' || c == ']'; }

// Integer and boolean scalars: outputs of these types hold no NaN.
constexpr std::array<std::string_view, 14> kIntegerTypes{
    "bool", "signed char", "unsigned char", "char", "short", "unsigned short", "int",
    "unsigned int", "long", "unsigned long", "long long", "unsigned long long",
    "c10::quint8", "c10::qint8"};

// Ops whose lambdas take floats but return bool (comparisons, predicates): the lambda's
// parameter type is then not the output type. Matched as a name component ("::le_kernel"), so
// that angle_kernel_cuda or masked_scale_kernel (dropout) are not taken for comparisons.
constexpr std::array<std::string_view, 15> kPredicateOps{
    "::eq_kernel", "::ne_kernel", "::lt_kernel", "::le_kernel", "::gt_kernel", "::ge_kernel",
    "::compare_", "::logical_", "::isnan", "::isinf", "::isposinf", "::isneginf", "::isfinite",
    "::signbit", "::isclose"};

// Copies that convert: their lambdas take the source type and return the destination's, which
// the function names (Copy.cu). DType::none: the name does not tell which type
// (_fft_conjugate_copy is complex): the kernel is refused. float8_copy_kernel_cuda: below.
struct ConvertingOp {
  std::string_view name;
  DType out;
};
constexpr std::array<ConvertingOp, 3> kConvertingOps{
    ConvertingOp{"::float16_copy_kernel_cuda", DType::f16},
    ConvertingOp{"::bfloat16_copy_kernel_cuda", DType::bf16},
    ConvertingOp{"::_fft_conjugate_copy_kernel", DType::none},
};

// float8_copy_kernel_cuda (Copy.cu, torch 2.11) converts float, Half and BFloat16 with one
// lambda per destination format, in the order of its if/else chain: {lambda(float)#1} returns
// Float8_e4m3fn, #2 Float8_e5m2, #3 e4m3fnuz, #4 e5m2fnuz, #5 e8m0fnu (the table's rows have #1-#5
// for each source type). The fnuz and e8m0 formats are no DType: refused. Its copy of an fp8
// tensor into the same format, {lambda(c10::Float8_e4m3fn)#1}, returns its parameter.
constexpr std::string_view kFloat8Copy = "::float8_copy_kernel_cuda(";
constexpr std::array<DType, 2> kFloat8CopyResults{DType::f8e4m3, DType::f8e5m2};

bool float8_copy_result(std::string_view functor, OutType& cls, DType& dt) {
  const std::size_t at = functor.rfind("{lambda(");
  if (at == std::string_view::npos) return false;
  std::string_view lambda = functor.substr(at), params;
  uint32_t number = 0;
  if (!take_lambda(lambda, params, number)) return false;
  DType in = DType::none;
  bool skip = false;
  input_type(params, in, skip);
  if (in == DType::f32 || in == DType::f16 || in == DType::bf16) {
    if (number < 1 || number > kFloat8CopyResults.size()) return false;
    dt = kFloat8CopyResults[number - 1];
  } else if (in == DType::f8e4m3 || in == DType::f8e5m2) {
    dt = in;
  } else {
    return false;
  }
  cls = OutType::static_dtype;
  return true;
}

// Ops whose lambda returns one of its parameters (the others are conditions): the result type
// is parameter `param`'s, e.g. where's (bool cond, T self, T other) -> T (TensorCompare.cu),
// masked_fill's (T src, bool mask) -> T returning src or its captured value_ (Indexing.cu).
struct SelectingOp {
  std::string_view name;
  uint32_t param;
};
constexpr std::array<SelectingOp, 2> kSelectingOps{SelectingOp{"::where_kernel_impl", 1},
                                                   SelectingOp{"::masked_fill_kernel(", 0}};

// Named functors whose result type is template argument `index` (0-based) and whose
// operator() takes `inputs` tensor arguments of template arguments in[0..inputs-1]:
// BinaryFunctor<a1, a2, r, F>::operator()(a1, a2); AUnaryFunctor<a1, a2, r, F> holds the scalar
// a1 and takes (a2); BUnaryFunctor holds b and takes (a1) (Loops.cuh). The ufunc functors
// (UfuncCUDA_add.cu, generated) take (T, T) or (T); FillFunctor::operator()() takes nothing.
// kBoolResult: the functor returns bool whatever its arguments (CompareFunctor<T>, the
// comparison kernels of CompareKernels.cu, operator()(T, T) -> bool).
constexpr uint32_t kBoolResult = 0xffffffffu;
struct NamedFunctor {
  std::string_view name;
  uint32_t index;
  uint8_t inputs;
  uint8_t in[2];
};
constexpr std::array<NamedFunctor, 9> kNamedFunctors{
    NamedFunctor{"at::native::BinaryFunctor<", 2, 2, {0, 1}},
    NamedFunctor{"at::native::AUnaryFunctor<", 2, 1, {1, 0}},
    NamedFunctor{"at::native::BUnaryFunctor<", 2, 1, {0, 0}},
    NamedFunctor{"at::native::CUDAFunctor_add<", 0, 2, {0, 0}},
    NamedFunctor{"at::native::CUDAFunctorOnSelf_add<", 0, 1, {0, 0}},
    NamedFunctor{"at::native::CUDAFunctorOnOther_add<", 0, 1, {0, 0}},
    NamedFunctor{"at::native::FillFunctor<", 0, 0, {0, 0}},
    NamedFunctor{"at::native::AbsFunctor<", 0, 1, {0, 0}},
    NamedFunctor{"at::native::(anonymous namespace)::CompareFunctor<", kBoolResult, 2, {0, 0}},
};

const NamedFunctor* named_functor(std::string_view functor) {
  for (const auto& f : kNamedFunctors)
    if (functor.substr(0, f.name.size()) == f.name) return &f;
  return nullptr;
}

// The text inside the parentheses of the last "{lambda(" in s; npos-free: empty view + false.
bool last_lambda_params(std::string_view s, std::string_view& params) {
  const std::size_t at = s.rfind("{lambda(");
  if (at == std::string_view::npos) return false;
  const std::size_t open = at + 7;
  int depth = 0;
  for (std::size_t i = open; i < s.size(); ++i) {
    if (opens(s[i])) ++depth;
    if (closes(s[i]) && --depth == 0) {
      params = s.substr(open + 1, i - open - 1);
      return true;
    }
  }
  return false;
}

std::vector<std::string_view> split_top(std::string_view list) {
  std::vector<std::string_view> out;
  int depth = 0;
  std::size_t start = 0;
  for (std::size_t i = 0; i < list.size(); ++i) {
    if (opens(list[i])) ++depth;
    if (closes(list[i])) --depth;
    if (list[i] == ',' && depth == 0) {
      out.push_back(trim(list.substr(start, i - start)));
      start = i + 1;
    }
  }
  if (!trim(list.substr(start)).empty()) out.push_back(trim(list.substr(start)));
  return out;
}

// A lambda's result: its parameter type when all parameters share one scalar type and the op
// is not a predicate (the notes' rule; TensorIterator lambdas return their input type).
bool lambda_result(std::string_view functor, OutType& cls, DType& dt) {
  std::string_view params;
  if (!last_lambda_params(functor, params)) return false;
  if (functor.find(kFloat8Copy) != std::string_view::npos) return float8_copy_result(functor, cls, dt);
  for (const ConvertingOp& op : kConvertingOps)
    if (functor.find(op.name) != std::string_view::npos) {
      if (op.out == DType::none) return false;
      cls = OutType::static_dtype;
      dt = op.out;
      return true;
    }
  for (auto op : kPredicateOps)
    if (functor.find(op) != std::string_view::npos) {
      cls = OutType::not_float;
      return true;
    }
  const auto types = split_top(params);
  for (const SelectingOp& op : kSelectingOps)
    if (functor.find(op.name) != std::string_view::npos)
      return types.size() > op.param && classify_type(types[op.param], cls, dt);
  if (types.empty()) return false;  // nullary: the result type is not in the name
  for (auto t : types)
    if (t != types.front()) return false;
  // Complex lambdas often return the real type (abs, angle, real, imag): not knowable.
  if (types.front().substr(0, 13) == "c10::complex<") return false;
  return classify_type(types.front(), cls, dt);
}

}  // namespace

std::string qualified_name(std::string_view demangled) {
  std::string_view s = demangled;
  if (s.substr(0, 5) == "void ") s.remove_prefix(5);
  std::string out;
  while (!s.empty()) {
    if (s.substr(0, kAnon.size()) == kAnon) {
      s.remove_prefix(kAnon.size());
      continue;
    }
    if (s.front() == '<' || s.front() == '(') break;
    out.push_back(s.front());
    s.remove_prefix(1);
  }
  return out;
}

std::vector<std::string_view> template_args(std::string_view text, std::size_t from) {
  const std::size_t open = text.find('<', from);
  if (open == std::string_view::npos) return {};
  int depth = 0;
  for (std::size_t i = open; i < text.size(); ++i) {
    if (opens(text[i])) ++depth;
    if (closes(text[i]) && --depth == 0) return split_top(text.substr(open + 1, i - open - 1));
  }
  return {};
}

bool classify_type(std::string_view type, OutType& cls, DType& dt) {
  type = trim(type);
  if (const DType d = scalar_dtype(type); d != DType::none) {
    cls = OutType::static_dtype;
    dt = d;
    return true;
  }
  // Complex outputs can hold NaN but DType has no complex type: reported as no float output.
  bool integer = type.substr(0, 13) == "c10::complex<";
  for (auto t : kIntegerTypes) integer = integer || type == t;
  if (!integer) return false;
  cls = OutType::not_float;
  dt = DType::none;
  return true;
}

bool functor_result(std::string_view functor, OutType& cls, DType& dt) {
  functor = trim(functor);
  if (const NamedFunctor* f = named_functor(functor)) {
    if (f->index == kBoolResult) {
      cls = OutType::not_float;
      return true;
    }
    const auto args = template_args(functor);
    return args.size() > f->index && classify_type(args[f->index], cls, dt);
  }
  return lambda_result(functor, cls, dt);
}

void input_type(std::string_view type, DType& dt, bool& skip) {
  type = trim(type);
  dt = scalar_dtype(type);
  skip = false;
  if (dt != DType::none) return;
  // Complex holds NaN but is no DType: a read of unknown type. Integers and bool hold none.
  for (auto t : kIntegerTypes) skip = skip || type == t;
}

bool functor_inputs(std::string_view functor, FamilyMatch& m) {
  functor = trim(functor);
  std::vector<std::string_view> types;
  if (const NamedFunctor* f = named_functor(functor)) {
    const auto args = template_args(functor);
    for (uint32_t i = 0; i < f->inputs; ++i) {
      if (args.size() <= f->in[i]) return false;
      types.push_back(args[f->in[i]]);
    }
  } else {
    std::string_view params;
    if (!last_lambda_params(functor, params)) return false;
    types = split_top(params);
  }
  if (types.size() > kMaxReads) return false;
  m.in_skip = 0;
  for (std::size_t i = 0; i < types.size(); ++i) {
    bool skip = false;
    input_type(types[i], m.in[i], skip);
    if (skip) m.in_skip = static_cast<uint8_t>(m.in_skip | (1u << i));
  }
  m.in_count = static_cast<uint8_t>(types.size());
  m.in_known = true;
  return true;
}

int lambda_arity(std::string_view functor) {
  std::string_view params;
  if (!last_lambda_params(functor, params)) return -1;
  return static_cast<int>(split_top(params).size());
}

bool take_lambda(std::string_view& s, std::string_view& params, uint32_t& number) {
  constexpr std::string_view kOpen = "{lambda(";
  const std::size_t close = s.find(")#"), end = s.find('}');
  if (s.substr(0, kOpen.size()) != kOpen || close == std::string_view::npos || end == std::string_view::npos ||
      end < close + 3 || end - close > 8)
    return false;
  uint32_t n = 0;
  for (std::size_t i = close + 2; i < end; ++i) {
    if (s[i] < '0' || s[i] > '9') return false;
    n = n * 10 + static_cast<uint32_t>(s[i] - '0');
  }
  params = s.substr(kOpen.size(), close - kOpen.size());
  number = n;
  s.remove_prefix(end + 1);
  return true;
}

int char_array_size(std::string_view text) {
  constexpr std::string_view kArr = "std::array<char*, ";
  const std::size_t at = text.find(kArr);
  if (at == std::string_view::npos) return 0;
  int n = 0;
  for (std::size_t i = at + kArr.size(); i < text.size() && text[i] >= '0' && text[i] <= '9'; ++i)
    n = n * 10 + (text[i] - '0');
  return n;
}

}  // namespace nanscope::decode::aten
