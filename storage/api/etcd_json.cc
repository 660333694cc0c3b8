#include "storage/api/etcd_json.h"

#include <google/protobuf/util/json_util.h>
#include <rapidjson/document.h>

#include <cstdio>

namespace kplane::etcdapi {
namespace {

bool HasPrefix(std::string_view s, std::string_view p) {
  return s.substr(0, p.size()) == p;
}

}  // namespace

Status ParseJson(std::string_view json, google::protobuf::Message* msg) {
  size_t i = 0;
  while (i < json.size() && (json[i] == ' ' || json[i] == '\n' ||
                             json[i] == '\r' || json[i] == '\t')) {
    ++i;
  }
  if (i == json.size()) {
    msg->Clear();
    return Status::Ok();
  }
  google::protobuf::util::JsonParseOptions opts;
  opts.ignore_unknown_fields = true;
  auto st = google::protobuf::util::JsonStringToMessage(
      google::protobuf::StringPiece(json.data(), json.size()), msg, opts);
  if (!st.ok()) {
    return InvalidArgumentError(std::string(st.message()));
  }
  return Status::Ok();
}

std::string ToJson(const google::protobuf::Message& msg) {
  google::protobuf::util::JsonPrintOptions opts;
  opts.preserve_proto_field_names = true;
  std::string out;
  (void)google::protobuf::util::MessageToJsonString(msg, &out, opts);
  return out;
}

void AppendStreamResult(const google::protobuf::Message& msg,
                        std::string* out) {
  out->append("{\"result\":");
  out->append(ToJson(msg));
  out->append("}\n");
}

std::string HttpError::Body() const {
  // Escape the message as a JSON string by hand: it is short.
  std::string esc;
  for (char c : message) {
    switch (c) {
      case '"':
        esc += "\\\"";
        break;
      case '\\':
        esc += "\\\\";
        break;
      case '\n':
        esc += "\\n";
        break;
      case '\t':
        esc += "\\t";
        break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          char b[8];
          std::snprintf(b, sizeof(b), "\\u%04x", c);
          esc += b;
        } else {
          esc += c;
        }
    }
  }
  return "{\"error\":\"" + esc + "\",\"message\":\"" + esc +
         "\",\"code\":" + std::to_string(grpc_code) + "}";
}

int HttpStatusForGrpcCode(int code) {
  switch (code) {
    case kGrpcOk:
      return 200;
    case kGrpcCanceled:
      return 408;
    case kGrpcUnknown:
      return 500;
    case kGrpcInvalidArgument:
      return 400;
    case kGrpcDeadlineExceeded:
      return 504;
    case kGrpcNotFound:
      return 404;
    case kGrpcAlreadyExists:
      return 409;
    case kGrpcPermissionDenied:
      return 403;
    case kGrpcResourceExhausted:
      return 429;
    case kGrpcFailedPrecondition:
      return 412;
    case kGrpcAborted:
      return 409;
    case kGrpcOutOfRange:
      return 400;
    case kGrpcUnimplemented:
      return 501;
    case kGrpcInternal:
      return 500;
    case kGrpcUnavailable:
      return 503;
    case kGrpcDataLoss:
      return 500;
    case kGrpcUnauthenticated:
      return 401;
  }
  return 500;
}

HttpError StatusToError(const Status& s) {
  int code;
  switch (s.code()) {
    case StatusCode::kOk:
      code = kGrpcOk;
      break;
    case StatusCode::kCancelled:
      code = kGrpcCanceled;
      break;
    case StatusCode::kInvalidArgument:
      code = kGrpcInvalidArgument;
      break;
    case StatusCode::kDeadlineExceeded:
      code = kGrpcDeadlineExceeded;
      break;
    case StatusCode::kNotFound:
      code = kGrpcNotFound;
      break;
    case StatusCode::kAlreadyExists:
      code = kGrpcAlreadyExists;
      break;
    case StatusCode::kPermissionDenied:
      code = kGrpcPermissionDenied;
      break;
    case StatusCode::kResourceExhausted:
      code = kGrpcResourceExhausted;
      break;
    case StatusCode::kFailedPrecondition:
      code = kGrpcFailedPrecondition;
      break;
    case StatusCode::kAborted:
      code = kGrpcAborted;
      break;
    case StatusCode::kOutOfRange:
      code = kGrpcOutOfRange;
      break;
    case StatusCode::kUnimplemented:
      code = kGrpcUnimplemented;
      break;
    case StatusCode::kInternal:
      code = kGrpcInternal;
      break;
    case StatusCode::kUnavailable:
      code = kGrpcUnavailable;
      break;
    case StatusCode::kDataLoss:
      code = kGrpcDataLoss;
      break;
    case StatusCode::kUnauthenticated:
      code = kGrpcUnauthenticated;
      break;
    case StatusCode::kConflict:
      code = kGrpcFailedPrecondition;
      break;
    case StatusCode::kCompacted:
      code = kGrpcOutOfRange;
      break;
    case StatusCode::kFutureRevision:
      code = kGrpcOutOfRange;
      break;
    case StatusCode::kNotLeader:
      code = kGrpcUnavailable;
      break;
    case StatusCode::kNoSpace:
      code = kGrpcResourceExhausted;
      break;
    case StatusCode::kTooLarge:
      code = kGrpcInvalidArgument;
      break;
    case StatusCode::kExpired:
      code = kGrpcOutOfRange;
      break;
    case StatusCode::kCorruption:
      code = kGrpcDataLoss;
      break;
    case StatusCode::kIOError:
      code = kGrpcInternal;
      break;
    case StatusCode::kTimeout:
      code = kGrpcUnavailable;
      break;
    default:
      code = kGrpcUnknown;
      break;
  }
  std::string msg = s.message();
  if (!HasPrefix(msg, "etcdserver: ") && !HasPrefix(msg, "grpc: ")) {
    msg = "etcdserver: " + msg;
  }
  return HttpError{HttpStatusForGrpcCode(code), code, msg};
}

Status ErrorToStatus(int http_status, std::string_view body) {
  rapidjson::Document d;
  d.Parse(body.data(), body.size());
  std::string msg;
  int code = -1;
  if (!d.HasParseError() && d.IsObject()) {
    if (d.HasMember("message") && d["message"].IsString()) {
      msg = d["message"].GetString();
    } else if (d.HasMember("error") && d["error"].IsString()) {
      msg = d["error"].GetString();
    }
    if (d.HasMember("code") && d["code"].IsInt()) code = d["code"].GetInt();
  }
  if (code < 0) {
    std::string b(body.substr(0, 200));
    while (!b.empty() && (b.back() == '\n' || b.back() == ' ')) b.pop_back();
    return Status(
        http_status == 404   ? StatusCode::kNotFound
        : http_status >= 500 ? StatusCode::kUnavailable
                             : StatusCode::kInvalidArgument,
        "HTTP " + std::to_string(http_status) + (b.empty() ? "" : ": " + b));
  }
  // Domain codes come back from etcd's texts.
  if (msg.find("required revision has been compacted") != std::string::npos) {
    return Status(StatusCode::kCompacted, msg);
  }
  if (msg.find("required revision is a future revision") != std::string::npos) {
    return Status(StatusCode::kFutureRevision, msg);
  }
  if (msg.find("database space exceeded") != std::string::npos) {
    return Status(StatusCode::kNoSpace, msg);
  }
  if (msg.find("request is too large") != std::string::npos) {
    return Status(StatusCode::kTooLarge, msg);
  }
  if (msg.find("no leader") != std::string::npos ||
      msg.find("not leader") != std::string::npos ||
      msg.find("leader changed") != std::string::npos) {
    return Status(StatusCode::kNotLeader, msg);
  }
  if (msg.find("request timed out") != std::string::npos) {
    return Status(StatusCode::kTimeout, msg);
  }
  switch (code) {
    case kGrpcCanceled:
      return Status(StatusCode::kCancelled, msg);
    case kGrpcInvalidArgument:
      return Status(StatusCode::kInvalidArgument, msg);
    case kGrpcDeadlineExceeded:
      return Status(StatusCode::kDeadlineExceeded, msg);
    case kGrpcNotFound:
      return Status(StatusCode::kNotFound, msg);
    case kGrpcAlreadyExists:
      return Status(StatusCode::kAlreadyExists, msg);
    case kGrpcPermissionDenied:
      return Status(StatusCode::kPermissionDenied, msg);
    case kGrpcResourceExhausted:
      return Status(StatusCode::kResourceExhausted, msg);
    case kGrpcFailedPrecondition:
      return Status(StatusCode::kFailedPrecondition, msg);
    case kGrpcAborted:
      return Status(StatusCode::kAborted, msg);
    case kGrpcOutOfRange:
      return Status(StatusCode::kOutOfRange, msg);
    case kGrpcUnimplemented:
      return Status(StatusCode::kUnimplemented, msg);
    case kGrpcUnavailable:
      return Status(StatusCode::kUnavailable, msg);
    case kGrpcDataLoss:
      return Status(StatusCode::kDataLoss, msg);
    case kGrpcUnauthenticated:
      return Status(StatusCode::kUnauthenticated, msg);
    default:
      return Status(StatusCode::kUnknown, msg);
  }
}

std::string PrefixRangeEnd(std::string_view prefix) {
  std::string end(prefix);
  while (!end.empty()) {
    unsigned char c = static_cast<unsigned char>(end.back());
    if (c < 0xff) {
      end.back() = static_cast<char>(c + 1);
      return end;
    }
    end.pop_back();
  }
  return std::string(1, '\0');
}

}  // namespace kplane::etcdapi
