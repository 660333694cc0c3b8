#include "apiserver/openapi/v2_proto.h"

#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include <string>
#include <string_view>

namespace kplane::openapi {

namespace {

using Value = rapidjson::Value;

std::string_view Sv(const Value& v) {
  return v.IsString() ? std::string_view(v.GetString(), v.GetStringLength())
                      : std::string_view();
}
std::string Text(const Value& obj, const char* key) {
  auto it = obj.FindMember(key);
  return it == obj.MemberEnd() ? std::string() : std::string(Sv(it->value));
}
bool Flag(const Value& obj, const char* key) {
  auto it = obj.FindMember(key);
  return it != obj.MemberEnd() && it->value.IsBool() && it->value.GetBool();
}
template <typename Repeated>
void Strings(const Value& obj, const char* key, Repeated* out) {
  auto it = obj.FindMember(key);
  if (it == obj.MemberEnd() || !it->value.IsArray()) return;
  for (const Value& s : it->value.GetArray()) out->Add(std::string(Sv(s)));
}
template <typename Repeated>
void Extensions(const Value& obj, Repeated* out) {
  for (const auto& m : obj.GetObject()) {
    std::string_view name = Sv(m.name);
    if (name.substr(0, 2) != "x-") continue;
    rapidjson::StringBuffer b;
    rapidjson::Writer<rapidjson::StringBuffer> w(b);
    m.value.Accept(w);
    v2::NamedAny* any = out->Add();
    any->set_name(std::string(name));
    any->mutable_value()->set_yaml(std::string(b.GetString(), b.GetSize()));
  }
}

void ToSchema(const Value& j, v2::Schema* s) {
  if (!j.IsObject()) return;
  s->set__ref(Text(j, "$ref"));
  s->set_format(Text(j, "format"));
  s->set_description(Text(j, "description"));
  Strings(j, "required", s->mutable_required());
  if (auto it = j.FindMember("type"); it != j.MemberEnd()) {
    s->mutable_type()->add_value(std::string(Sv(it->value)));
  }
  if (auto it = j.FindMember("items"); it != j.MemberEnd()) {
    ToSchema(it->value, s->mutable_items()->add_schema());
  }
  if (auto it = j.FindMember("additionalProperties"); it != j.MemberEnd()) {
    if (it->value.IsBool()) {
      s->mutable_additional_properties()->set_boolean(it->value.GetBool());
    } else {
      ToSchema(it->value, s->mutable_additional_properties()->mutable_schema());
    }
  }
  if (auto it = j.FindMember("allOf");
      it != j.MemberEnd() && it->value.IsArray()) {
    for (const Value& sub : it->value.GetArray())
      ToSchema(sub, s->add_all_of());
  }
  if (auto it = j.FindMember("properties");
      it != j.MemberEnd() && it->value.IsObject()) {
    for (const auto& p : it->value.GetObject()) {
      v2::NamedSchema* named =
          s->mutable_properties()->add_additional_properties();
      named->set_name(std::string(Sv(p.name)));
      ToSchema(p.value, named->mutable_value());
    }
  }
  Extensions(j, s->mutable_vendor_extension());
}

void ToParameter(const Value& j, v2::ParametersItem* item) {
  v2::Parameter* p = item->mutable_parameter();
  const std::string in = Text(j, "in");
  if (in == "body") {
    v2::BodyParameter* b = p->mutable_body_parameter();
    b->set_description(Text(j, "description"));
    b->set_name(Text(j, "name"));
    b->set_in(in);
    b->set_required(Flag(j, "required"));
    if (auto it = j.FindMember("schema"); it != j.MemberEnd()) {
      ToSchema(it->value, b->mutable_schema());
    }
    return;
  }
  if (in == "path") {
    v2::PathParameterSubSchema* q =
        p->mutable_non_body_parameter()->mutable_path_parameter_sub_schema();
    q->set_required(Flag(j, "required"));
    q->set_in(in);
    q->set_description(Text(j, "description"));
    q->set_name(Text(j, "name"));
    q->set_type(Text(j, "type"));
    q->set_format(Text(j, "format"));
    q->set_unique_items(Flag(j, "uniqueItems"));
    return;
  }
  v2::QueryParameterSubSchema* q =
      p->mutable_non_body_parameter()->mutable_query_parameter_sub_schema();
  q->set_required(Flag(j, "required"));
  q->set_in(in);
  q->set_description(Text(j, "description"));
  q->set_name(Text(j, "name"));
  q->set_type(Text(j, "type"));
  q->set_format(Text(j, "format"));
  q->set_unique_items(Flag(j, "uniqueItems"));
}

template <typename Repeated>
void Parameters(const Value& j, Repeated* out) {
  auto it = j.FindMember("parameters");
  if (it == j.MemberEnd() || !it->value.IsArray()) return;
  for (const Value& p : it->value.GetArray()) ToParameter(p, out->Add());
}

void ToOperation(const Value& j, v2::Operation* op) {
  Strings(j, "tags", op->mutable_tags());
  op->set_description(Text(j, "description"));
  op->set_operation_id(Text(j, "operationId"));
  Strings(j, "produces", op->mutable_produces());
  Strings(j, "consumes", op->mutable_consumes());
  Parameters(j, op->mutable_parameters());
  if (auto it = j.FindMember("responses");
      it != j.MemberEnd() && it->value.IsObject()) {
    for (const auto& r : it->value.GetObject()) {
      v2::NamedResponseValue* named =
          op->mutable_responses()->add_response_code();
      named->set_name(std::string(Sv(r.name)));
      v2::Response* resp = named->mutable_value()->mutable_response();
      resp->set_description(Text(r.value, "description"));
      if (auto s = r.value.FindMember("schema"); s != r.value.MemberEnd()) {
        ToSchema(s->value, resp->mutable_schema()->mutable_schema());
      }
    }
  }
  Strings(j, "schemes", op->mutable_schemes());
  Extensions(j, op->mutable_vendor_extension());
}

}  // namespace

v2::Document SwaggerJsonToProto(const rapidjson::Value& doc) {
  v2::Document out;
  if (!doc.IsObject()) return out;
  out.set_swagger(Text(doc, "swagger"));
  if (auto it = doc.FindMember("info"); it != doc.MemberEnd()) {
    out.mutable_info()->set_title(Text(it->value, "title"));
    out.mutable_info()->set_version(Text(it->value, "version"));
  }
  if (auto it = doc.FindMember("paths");
      it != doc.MemberEnd() && it->value.IsObject()) {
    for (const auto& p : it->value.GetObject()) {
      v2::NamedPathItem* named = out.mutable_paths()->add_path();
      named->set_name(std::string(Sv(p.name)));
      v2::PathItem* item = named->mutable_value();
      for (const auto& m : p.value.GetObject()) {
        std::string_view method = Sv(m.name);
        v2::Operation* op = method == "get"      ? item->mutable_get()
                            : method == "put"    ? item->mutable_put()
                            : method == "post"   ? item->mutable_post()
                            : method == "delete" ? item->mutable_delete_()
                            : method == "patch"  ? item->mutable_patch()
                                                 : nullptr;
        if (op != nullptr) ToOperation(m.value, op);
      }
      Parameters(p.value, item->mutable_parameters());
    }
  }
  if (auto it = doc.FindMember("definitions");
      it != doc.MemberEnd() && it->value.IsObject()) {
    for (const auto& d : it->value.GetObject()) {
      v2::NamedSchema* named =
          out.mutable_definitions()->add_additional_properties();
      named->set_name(std::string(Sv(d.name)));
      ToSchema(d.value, named->mutable_value());
    }
  }
  Extensions(doc, out.mutable_vendor_extension());
  return out;
}

}  // namespace kplane::openapi
