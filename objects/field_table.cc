#include "objects/field_table.h"

#include <memory>

#include "base/logging.h"
#include "base/mutex.h"
#include "schemas/k8s/options.pb.h"

namespace kplane::objects::internal {
namespace {

using google::protobuf::Descriptor;
using google::protobuf::FieldDescriptor;

class TableCache {
 public:
  const MessageTable* Get(const Descriptor* d) {
    {
      ReaderLock lock(&mu_);
      auto it = tables_.find(d);
      if (it != tables_.end()) return it->second.get();
    }
    WriterLock lock(&mu_);
    return BuildLocked(d);
  }

 private:
  // Registers the table before filling it, so recursive message types
  // resolve to the (not yet complete) entry instead of recursing forever.
  const MessageTable* BuildLocked(const Descriptor* d) REQUIRES(mu_) {
    auto it = tables_.find(d);
    if (it != tables_.end()) return it->second.get();
    auto owned = std::make_unique<MessageTable>();
    MessageTable* t = owned.get();
    tables_.emplace(d, std::move(owned));
    t->descriptor = d;
    t->special = SpecialOf(d);
    t->type_meta = d->options().GetExtension(kplane::schema::type_meta);
    if (t->special != Special::kNone) {
      for (int n = 1; n <= 3; ++n)
        t->special_fields[n] = d->FindFieldByNumber(n);
      const int needed =
          t->special == Special::kIntOrString ? 3
          : t->special == Special::kTime || t->special == Special::kMicroTime
              ? 2
              : 1;
      for (int n = 1; n <= needed; ++n) {
        CHECK(t->special_fields[n] != nullptr)
            << d->full_name() << " lacks field " << n;
      }
    }
    if (t->special == Special::kRawJson) {
      t->raw_field = d->FindFieldByNumber(1);
      CHECK(t->raw_field != nullptr &&
            t->raw_field->type() == FieldDescriptor::TYPE_BYTES)
          << d->full_name() << ": raw JSON holder needs bytes field 1";
    }
    t->fields.reserve(static_cast<size_t>(d->field_count()));
    for (int i = 0; i < d->field_count(); ++i) {
      t->fields.push_back(MakeField(d->field(i)));
    }
    // Key lookup entries: own fields, inline members, then TypeMeta members.
    for (const FieldEntry& f : t->fields) {
      if (f.is_inline) {
        CHECK(f.table != nullptr) << f.field->full_name();
        for (const FieldEntry& inner : f.table->fields) {
          CHECK(!inner.is_inline)
              << f.field->full_name() << ": nested inline is not supported";
          t->keys.push_back(KeyEntry{inner.name, &inner, &f, 0});
        }
      } else {
        t->keys.push_back(KeyEntry{f.name, &f, nullptr, 0});
      }
    }
    if (t->type_meta) {
      t->keys.push_back(KeyEntry{"kind", nullptr, nullptr, 1});
      t->keys.push_back(KeyEntry{"apiVersion", nullptr, nullptr, 2});
    }
    for (size_t i = 0; i < t->keys.size(); ++i) {
      bool inserted =
          t->key_index.emplace(t->keys[i].name, static_cast<int>(i)).second;
      CHECK(inserted) << d->full_name() << ": JSON member \"" << t->keys[i].name
                      << "\" declared twice";
    }
    return t;
  }

  FieldEntry MakeField(const FieldDescriptor* fd) REQUIRES(mu_) {
    FieldEntry f;
    f.field = fd;
    f.name = fd->name();
    f.repeated = fd->is_repeated();
    f.is_map = fd->is_map();
    f.is_inline = fd->options().GetExtension(kplane::schema::json_inline);
    f.value = fd;
    if (f.is_map) {
      f.map_key = fd->message_type()->map_key();
      f.value = fd->message_type()->map_value();
      CHECK(f.map_key->cpp_type() == FieldDescriptor::CPPTYPE_STRING)
          << fd->full_name() << ": only string map keys have a JSON form";
    }
    if (f.value->cpp_type() == FieldDescriptor::CPPTYPE_MESSAGE) {
      const Descriptor* vd = f.value->message_type();
      f.special = SpecialOf(vd);
      f.table = BuildLocked(vd);
    }
    switch (fd->options().GetExtension(kplane::schema::json_emit)) {
      case kplane::schema::EMIT_NONZERO:
        f.emit = Emit::kNonZero;
        break;
      case kplane::schema::EMIT_IF_SET:
        f.emit = Emit::kIfSet;
        break;
      case kplane::schema::EMIT_ALWAYS:
        f.emit = Emit::kAlways;
        break;
      case kplane::schema::EMIT_DEFAULT:
        // Go: scalars, slices and maps are mostly omitempty values; singular
        // structs are mostly pointers.
        f.emit =
            !f.repeated && fd->cpp_type() == FieldDescriptor::CPPTYPE_MESSAGE
                ? Emit::kIfSet
                : Emit::kNonZero;
        break;
    }
    CHECK(!f.is_inline ||
          (!f.repeated && f.table != nullptr && f.special == Special::kNone))
        << fd->full_name() << ": only singular plain messages can be inlined";
    return f;
  }

  SharedMutex mu_;
  std::unordered_map<const Descriptor*, std::unique_ptr<MessageTable>> tables_
      GUARDED_BY(mu_);
};

TableCache& Cache() {
  static TableCache* cache = new TableCache();  // never destroyed
  return *cache;
}

}  // namespace

Special SpecialOf(const Descriptor* d) {
  const std::string& n = d->full_name();
  if (n == "k8s.io.apimachinery.pkg.apis.meta.v1.Time") return Special::kTime;
  if (n == "k8s.io.apimachinery.pkg.apis.meta.v1.MicroTime") {
    return Special::kMicroTime;
  }
  if (n == "k8s.io.apimachinery.pkg.apis.meta.v1.Duration") {
    return Special::kDuration;
  }
  if (n == "k8s.io.apimachinery.pkg.util.intstr.IntOrString") {
    return Special::kIntOrString;
  }
  if (n == "k8s.io.apimachinery.pkg.api.resource.Quantity") {
    return Special::kQuantity;
  }
  if (n == "k8s.io.apimachinery.pkg.runtime.RawExtension" ||
      n == "k8s.io.apimachinery.pkg.apis.meta.v1.FieldsV1") {
    return Special::kRawJson;
  }
  return Special::kNone;
}

const MessageTable* TableFor(const Descriptor* descriptor) {
  return Cache().Get(descriptor);
}

}  // namespace kplane::objects::internal
