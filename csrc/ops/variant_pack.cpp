#include "ops/variant_pack.h"

#include "core/json_fields.h"

namespace atb_ops {

const std::vector<int64_t>* CountsPack::find(const std::string& name) const {
  const auto it = counts.find(name);
  return it == counts.end() ? nullptr : &it->second;
}

CountsPack parseCountsPack(const std::string& json, const std::string& what, std::initializer_list<const char*> arrays,
                           std::initializer_list<const char*> scalars) {
  const nlohmann::json obj = parseJsonObject(json, what);
  JsonFields fields(obj, what);
  CountsPack pack;
  for (const char* name : arrays) pack.counts[name] = fields.int64Array(name, {});
  for (const char* name : scalars) pack.counts[name] = {fields.int64(name, 0)};
  fields.checkUnknownKeys();
  return pack;
}

}  // namespace atb_ops
