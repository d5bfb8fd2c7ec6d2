// The element types the collectives accept, and the traits that map each C++ type to one. A collective call
// carries a span of one of these types, so its count is always in elements, never in bytes.
#pragma once
#include <concepts>
#include <cstdint>
#include <type_traits>

namespace sb {

enum class ElementType { Char, UInt8, Int32, Int64, UInt64, Float32, Float64 };

template <typename T>
struct ElementTraits;  // no primary definition: an unsupported type fails to compile
template <> struct ElementTraits<char> { static constexpr ElementType type = ElementType::Char; };
template <> struct ElementTraits<uint8_t> { static constexpr ElementType type = ElementType::UInt8; };
template <> struct ElementTraits<int32_t> { static constexpr ElementType type = ElementType::Int32; };
template <> struct ElementTraits<int64_t> { static constexpr ElementType type = ElementType::Int64; };
template <> struct ElementTraits<uint64_t> { static constexpr ElementType type = ElementType::UInt64; };
template <> struct ElementTraits<float> { static constexpr ElementType type = ElementType::Float32; };
template <> struct ElementTraits<double> { static constexpr ElementType type = ElementType::Float64; };

// Any supported type (const allowed: sends take spans of const data).
template <typename T>
concept CommElement = requires { ElementTraits<std::remove_cv_t<T>>::type; };

// Types that reductions accept. char is text: MPI defines no arithmetic on MPI_CHAR.
template <typename T>
concept ReducibleElement = CommElement<T> && !std::same_as<std::remove_cv_t<T>, char>;

// Averages are only meaningful where division does not truncate.
template <typename T>
concept AveragedElement = ReducibleElement<T> && std::floating_point<std::remove_cv_t<T>>;

template <typename T>
inline constexpr ElementType element_type_of = ElementTraits<std::remove_cv_t<T>>::type;

}  // namespace sb
