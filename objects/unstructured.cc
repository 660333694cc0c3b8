#include "objects/unstructured.h"

#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include <string_view>

#include "base/json.h"

namespace kplane::objects {

bool IsUnstructured(const google::protobuf::Message& msg) {
  return msg.GetDescriptor() == Unstructured::descriptor();
}

rapidjson::Document ContentOf(const Unstructured& u) {
  rapidjson::Document doc;
  if (!u.content().empty()) {
    json::ParseDom<rapidjson::kParseFullPrecisionFlag>(u.content(), &doc);
  }
  if (!doc.IsObject()) doc.SetObject();
  return doc;
}

void SetContent(Unstructured* u, const rapidjson::Value& content) {
  rapidjson::StringBuffer buf;
  rapidjson::Writer<rapidjson::StringBuffer> w(buf);
  w.StartObject();
  rapidjson::SizeType n = 0;
  if (content.IsObject()) {
    for (const auto& m : content.GetObject()) {
      const std::string_view key(m.name.GetString(), m.name.GetStringLength());
      if (key == "apiVersion" || key == "kind" || key == "metadata") continue;
      w.Key(m.name.GetString(), m.name.GetStringLength());
      json::Accept(m.value, w);
      ++n;
    }
  }
  w.EndObject(n);
  u->set_content(std::string(buf.GetString(), buf.GetSize()));
}

}  // namespace kplane::objects
