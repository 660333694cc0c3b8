#include "storage/etcdjson/json_stream.h"

#include <rapidjson/document.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include "base/json.h"
#include "storage/etcdjson/etcd_json.h"
#include "storage/etcdjson/etcd_json_value.h"
#include "storage/etcdjson/go_json_syntax.h"

namespace kplane::etcdjson {

void JsonObjectSplitter::Feed(std::string_view data) {
  if (failed()) return;
  // Drop what has been handed out already, so the buffer does not grow
  // with the length of a long-lived stream.
  if (start_ > 0 && start_ >= buf_.size() / 2) {
    buf_.erase(0, start_);
    scan_ -= start_;
    start_ = 0;
  }
  buf_.append(data);
}

bool JsonObjectSplitter::Next(std::string* object, Status* error) {
  *error = failure_;
  if (failed()) return false;
  while (scan_ < buf_.size()) {
    if (max_object_bytes_ != 0 && depth_ > 0 &&
        scan_ - start_ >= max_object_bytes_) {
      // gRPC's words for a message over the server's receive limit.
      failure_ =
          ResourceExhaustedError("grpc: received message larger than max (" +
                                 std::to_string(scan_ - start_ + 1) + "+ vs. " +
                                 std::to_string(max_object_bytes_) + ")");
      std::string().swap(buf_);
      start_ = scan_ = 0;
      *error = failure_;
      return false;
    }
    char c = buf_[scan_];
    if (depth_ == 0) {
      // Between objects: skip whitespace; anything else must open one.
      if (IsGoJsonSpace(c)) {
        ++scan_;
        start_ = scan_;
        continue;
      }
      if (c != '{') {
        *error =
            InvalidArgumentError("stream is not a sequence of JSON objects: " +
                                 buf_.substr(scan_, 200));
        return false;
      }
      start_ = scan_;
      depth_ = 1;
      ++scan_;
      continue;
    }
    ++scan_;
    if (in_string_) {
      if (escaped_) {
        escaped_ = false;
      } else if (c == '\\') {
        escaped_ = true;
      } else if (c == '"') {
        in_string_ = false;
      }
      continue;
    }
    if (c == '"') {
      in_string_ = true;
    } else if (c == '{' || c == '[') {
      ++depth_;
    } else if (c == '}' || c == ']') {
      if (--depth_ == 0) {
        object->assign(buf_, start_, scan_ - start_);
        start_ = scan_;
        return true;
      }
    }
  }
  return false;
}

namespace {

std::string Serialize(const rapidjson::Value& v) {
  rapidjson::StringBuffer sb;
  rapidjson::Writer<rapidjson::StringBuffer> w(sb);
  json::Accept(v, w);
  return std::string(sb.GetString(), sb.GetSize());
}

}  // namespace

Status ParseStreamMessage(std::string_view object,
                          google::protobuf::Message* msg) {
  rapidjson::Document d;
  if (!json::ParseDom(object, &d).ok() || !d.IsObject()) {
    return InvalidArgumentError("undecodable stream message: " +
                                std::string(object.substr(0, 200)));
  }
  // Const iterators: clang rejects comparing rapidjson's mutable member
  // iterators under C++20 (-Wambiguous-reversed-operator).
  const rapidjson::Document& doc = d;
  auto result = doc.FindMember("result");
  if (result != doc.MemberEnd()) {
    return ParseJsonValue(result->value, msg);
  }
  auto err = doc.FindMember("error");
  if (err != doc.MemberEnd()) {
    if (err->value.IsObject()) {
      // grpc-gateway's stream error: {"grpc_code":N,"http_code":H,
      // "message":M,"http_status":S}. Rebuild etcd's unary error shape and
      // map it through the one table.
      const rapidjson::Value& e = err->value;
      int code = 2;
      int http = 500;
      std::string message = "stream error";
      if (e.HasMember("grpc_code") && e["grpc_code"].IsInt()) {
        code = e["grpc_code"].GetInt();
      }
      if (e.HasMember("http_code") && e["http_code"].IsInt()) {
        http = e["http_code"].GetInt();
      }
      if (e.HasMember("message") && e["message"].IsString()) {
        message = e["message"].GetString();
      }
      rapidjson::Document body(rapidjson::kObjectType);
      auto& a = body.GetAllocator();
      body.AddMember("error", rapidjson::Value(message.c_str(), a), a);
      body.AddMember("message", rapidjson::Value(message.c_str(), a), a);
      body.AddMember("code", code, a);
      return ErrorToStatus(http, Serialize(body));
    }
    // A unary-style error body ({"error":M,"message":M,"code":N}).
    return ErrorToStatus(500, object);
  }
  return InvalidArgumentError("stream message has neither result nor error: " +
                              std::string(object.substr(0, 200)));
}

}  // namespace kplane::etcdjson
