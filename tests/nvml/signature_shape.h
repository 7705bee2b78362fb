// A description of a C type by what the ABI sees of it — sizes, pointers, function shapes — so
// that a declaration of ours and NVIDIA's, compiled in different translation units, can be
// compared by value. Names do not matter to the ABI and are not described; signedness is left out
// because NVIDIA's enums and our integer typedefs of them differ in it without differing in size.
//
// Everything is in an unnamed namespace: both translation units instantiate these templates with
// types that share a name (`nvmlMemory_t`) but not a definition, and each must see its own.
#pragma once

#include <string>
#include <type_traits>

namespace {

template <typename T, typename = void>
struct IsComplete : std::false_type {};
template <typename T>
struct IsComplete<T, std::void_t<decltype(sizeof(T))>> : std::true_type {};

template <typename T>
struct Shape;

template <typename T>
std::string ShapeOf() {
  using U = std::remove_cv_t<T>;
  if constexpr (std::is_void_v<U>) {
    return "void";
  } else if constexpr (std::is_function_v<U>) {
    return Shape<U>::Describe();
  } else if constexpr (std::is_pointer_v<U>) {
    return "*" + ShapeOf<std::remove_pointer_t<U>>();
  } else if constexpr (std::is_floating_point_v<U>) {
    return "float" + std::to_string(sizeof(U) * 8);
  } else if constexpr (std::is_integral_v<U> || std::is_enum_v<U>) {
    return "int" + std::to_string(sizeof(U) * 8);
  } else if constexpr (!IsComplete<U>::value) {
    return "opaque";
  } else {
    return "struct" + std::to_string(sizeof(U));
  }
}

template <typename R, typename... Args>
struct Shape<R(Args...)> {
  static std::string Describe() {
    std::string out = ShapeOf<R>() + "(";
    bool first = true;
    ((out += (first ? "" : ","), out += ShapeOf<Args>(), first = false), ...);
    return out + ")";
  }
};

}  // namespace
