#include "comm/element_type.h"

namespace sb {

const char* element_type_name(ElementType type) {
  switch (type) {
    case ElementType::Char: return "char";
    case ElementType::UInt8: return "uint8";
    case ElementType::Int32: return "int32";
    case ElementType::Int64: return "int64";
    case ElementType::UInt64: return "uint64";
    case ElementType::Float32: return "float32";
    case ElementType::Float64: return "float64";
  }
  return "?";
}

}  // namespace sb
