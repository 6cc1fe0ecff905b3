// Initial values shared between imports of one model (InitialValueCache.h).
#include "importers/common/InitialValueCache.h"

#include <cstring>

#include "mlir/IR/DialectResourceBlobManager.h"

using namespace mlir;

namespace graphc {

DenseResourceElementsAttr InitialValueCache::get(RankedTensorType type, llvm::StringRef name,
                                                 llvm::ArrayRef<float> values) {
  if (context != type.getContext()) { // attributes of another context are no use here
    byName.clear();
    context = type.getContext();
  }
  if (auto it = byName.find(name); it != byName.end() && it->second.getType() == type) {
    AsmResourceBlob *blob = it->second.getRawHandle().getBlob();
    if (blob) {
      ArrayRef<char> bytes = blob->getData();
      if (bytes.size() == values.size() * sizeof(float) &&
          (values.empty() || std::memcmp(bytes.data(), values.data(), bytes.size()) == 0))
        return it->second;
    }
  }
  auto blob = HeapAsmResourceBlob::allocateAndCopyInferAlign<float>(values);
  auto attr = DenseResourceElementsAttr::get(type, name, std::move(blob));
  byName[name] = attr;
  return attr;
}

} // namespace graphc
