#include "trace/flight_recorder/pickle_flat.h"

#include <cstring>
#include <string>
#include <utility>

namespace ncclscope::flight_recorder::flat {

PickleValue FlatPickle::Materialize(const Val& v) const {
  switch (v.kind) {
    case Kind::kNone:
      return PickleValue::None();
    case Kind::kBool:
      return PickleValue(v.bits != 0);
    case Kind::kInt:
      return PickleValue(static_cast<int64_t>(v.bits));
    case Kind::kFloat: {
      double d;
      std::memcpy(&d, &v.bits, sizeof(d));
      return PickleValue(d);
    }
    case Kind::kStr:
      return PickleValue(std::string(Str(v)));
    case Kind::kBytes:
      return PickleValue(PickleBytes{std::string(Str(v))});
    case Kind::kList:
    case Kind::kTuple: {
      std::vector<PickleValue> values;
      values.reserve(NodeOf(v).count);
      for (const Val& child : Items(v)) values.push_back(Materialize(child));
      if (v.kind == Kind::kList) return PickleList{std::move(values)};
      return PickleTuple{std::move(values)};
    }
    case Kind::kDict: {
      const std::span<const Val> items = Items(v);
      PickleDict dict;
      dict.items.reserve(items.size() / 2);
      for (size_t i = 0; i + 1 < items.size(); i += 2) {
        PickleKey key;
        if (items[i].kind == Kind::kStr) {
          key = std::string(Str(items[i]));
        } else {
          key = static_cast<int64_t>(items[i].bits);
        }
        dict.items.emplace_back(std::move(key), Materialize(items[i + 1]));
      }
      return dict;
    }
  }
  return PickleValue::None();
}

namespace {

class Flattener {
 public:
  explicit Flattener(FlatPickle* out) : out_(out) {}

  Val Add(const PickleValue& value) {
    switch (value.kind()) {
      case Kind::kNone:
        return Val{};
      case Kind::kBool:
        return Val{Kind::kBool, 0, *value.AsBool() ? 1u : 0u};
      case Kind::kInt:
        return Val{Kind::kInt, 0, static_cast<uint64_t>(*value.AsInt())};
      case Kind::kFloat: {
        Val v{Kind::kFloat, 0, 0};
        std::memcpy(&v.bits, value.AsFloat(), sizeof(v.bits));
        return v;
      }
      case Kind::kStr:
        return Text(Kind::kStr, *value.AsStr());
      case Kind::kBytes:
        return Text(Kind::kBytes, value.AsBytes()->data);
      case Kind::kList:
        return Container(Kind::kList, value.AsList()->items);
      case Kind::kTuple:
        return Container(Kind::kTuple, value.AsTuple()->items);
      case Kind::kDict: {
        std::vector<Val> items;
        items.reserve(2 * value.AsDict()->items.size());
        for (const auto& [key, child] : value.AsDict()->items) {
          if (const std::string* s = std::get_if<std::string>(&key)) {
            items.push_back(Text(Kind::kStr, *s));
          } else {
            items.push_back(Val{Kind::kInt, 0, static_cast<uint64_t>(std::get<int64_t>(key))});
          }
          items.push_back(Add(child));
        }
        return MakeNode(Kind::kDict, items);
      }
    }
    return Val{};
  }

 private:
  Val Text(Kind kind, const std::string& text) {
    const Val v{kind, static_cast<uint32_t>(text.size()), out_->owned_text.size()};
    out_->owned_text.insert(out_->owned_text.end(), text.begin(), text.end());
    return v;
  }
  Val Container(Kind kind, const std::vector<PickleValue>& values) {
    std::vector<Val> items;
    items.reserve(values.size());
    for (const PickleValue& child : values) items.push_back(Add(child));
    return MakeNode(kind, items);
  }
  // The children are added first, so that the container's own items lie together.
  Val MakeNode(Kind kind, const std::vector<Val>& items) {
    flat::Node& n = out_->nodes.emplace_back();
    n.kind = kind;
    n.begin = out_->items.size();
    n.count = items.size();
    n.capacity = items.size();
    out_->items.insert(out_->items.end(), items.begin(), items.end());
    return Val{kind, 0, out_->nodes.size() - 1};
  }

  FlatPickle* out_;
};

}  // namespace

void FlattenPickleValue(const PickleValue& value, FlatPickle* out) {
  out->nodes.clear();
  out->items.clear();
  out->owned_text.clear();
  out->root = Flattener(out).Add(value);
  out->data = reinterpret_cast<const uint8_t*>(out->owned_text.data());
}

}  // namespace ncclscope::flight_recorder::flat
