#include "apiserver/list_stream.h"

#include <google/protobuf/descriptor.h>
#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>

#include <cstring>
#include <utility>
#include <vector>

#include "base/logging.h"
#include "base/mutex.h"
#include "objects/codec.h"
#include "objects/envelope.h"
#include "objects/meta.h"
#include "objects/types.h"
#include "objects/unstructured.h"

namespace kplane::apiserver {

namespace {

using google::protobuf::FieldDescriptor;
using google::protobuf::Message;

// {"kind":"PodList","apiVersion":"v1","metadata":{…},"items":[ … ]}
// Byte for byte what encoding.cc's whole-body JSON list writes.
class JsonListEncoder : public ListEncoder {
 public:
  JsonListEncoder(const RenderOptions& o, ListResult list)
      : opts_(o),
        list_(std::move(list)),
        // A plain list item is objects::EncodeJson(item): what the watch
        // cache keeps. PartialObjectMetadata items are another form.
        use_cached_(opts_.negotiated.shape == ResponseShape::kObject &&
                    list_.item_json.size() == list_.items.size()) {}

  bool Next(size_t min_bytes, std::string* out) override {
    const size_t start = out->size();
    if (!head_done_) {
      const bool partial = opts_.negotiated.shape == ResponseShape::kMetadata;
      out->append("{\"kind\":\"");
      out->append(partial ? "PartialObjectMetadataList"
                          : opts_.resource->list_kind->kind);
      out->append("\",\"apiVersion\":\"");
      out->append(partial ? "meta.k8s.io/" + opts_.negotiated.meta_version
                          : opts_.resource->list_kind->gv.ApiVersion());
      out->append("\",\"metadata\":");
      out->append(objects::EncodeJson(ListMetaOf(list_)));
      out->append(",\"items\":[");
      head_done_ = true;
    }
    // Items go through one buffer kept for the whole stream (no
    // allocation per item), copied out once per piece.
    buf_.Clear();
    while (next_ < list_.items.size() &&
           out->size() - start + buf_.GetSize() < min_bytes) {
      if (next_ > 0) buf_.Put(',');
      const std::string* cached =
          use_cached_ ? list_.item_json[next_].get() : nullptr;
      if (cached != nullptr) {
        std::memcpy(buf_.Push(cached->size()), cached->data(), cached->size());
        list_.item_json[next_].reset();
      } else {
        writer_.Reset(buf_);
        WriteListItemJson(opts_, *list_.items[next_], &writer_);
      }
      // The item is encoded: the stream no longer needs it.
      list_.items[next_].reset();
      ++next_;
    }
    out->append(buf_.GetString(), buf_.GetSize());
    if (next_ < list_.items.size()) return false;
    out->append("]}");
    return true;
  }

 private:
  const RenderOptions opts_;
  ListResult list_;
  const bool use_cached_;
  rapidjson::StringBuffer buf_;
  rapidjson::Writer<rapidjson::StringBuffer> writer_{buf_};
  bool head_done_ = false;
  size_t next_ = 0;
};

void AppendVarint(uint64_t v, std::string* out) {
  while (v >= 0x80) {
    out->push_back(static_cast<char>((v & 0x7f) | 0x80));
    v >>= 7;
  }
  out->push_back(static_cast<char>(v));
}

size_t VarintSize(uint64_t v) {
  return google::protobuf::io::CodedOutputStream::VarintSize64(v);
}

// "k8s\0" + runtime.Unknown{typeMeta, raw: <the list message>,
// contentEncoding: "", contentType: ""}: the bytes EncodeEnvelope writes for
// the whole list message. Fields are serialized in field-number order, so
// the list message is its fields before `items` (metadata), then one
// length-delimited `items` entry per object; the lengths are known before
// the first byte from each object's ByteSizeLong.
class ProtoListEncoder : public ListEncoder {
 public:
  // nullptr when the list kind's `items` is not its highest-numbered set
  // field (the concatenation would not be the message's serialization).
  static std::unique_ptr<ListEncoder> Create(const RenderOptions& o,
                                             ListResult* list_in) {
    const ListResult& list = *list_in;
    // A PartialObjectMetadataList's item is {metadata: the object's
    // ObjectMeta}: written as that field's tag, length and the ObjectMeta's
    // bytes, with no PartialObjectMetadata copy made.
    const bool metadata = o.negotiated.shape == ResponseShape::kMetadata;
    const objects::KindInfo* kind =
        metadata ? objects::Scheme::Default().FindKind(
                       "meta.k8s.io/" + o.negotiated.meta_version,
                       "PartialObjectMetadataList")
                 : o.resource->list_kind;
    if (kind == nullptr) return nullptr;
    std::unique_ptr<Message> prefix_msg = kind->New();
    const FieldDescriptor* items =
        prefix_msg->GetDescriptor()->FindFieldByName("items");
    if (items == nullptr || !items->is_repeated() ||
        items->type() != FieldDescriptor::TYPE_MESSAGE) {
      return nullptr;
    }
    for (const ObjectPtr& item : list.items) {
      if (metadata ? objects::GetObjectMeta(*item) == nullptr
                   : item->GetDescriptor() != items->message_type()) {
        return nullptr;
      }
    }
    *objects::MutableListMeta(prefix_msg.get()) = ListMetaOf(list);
    std::vector<const FieldDescriptor*> set;
    prefix_msg->GetReflection()->ListFields(*prefix_msg, &set);
    for (const FieldDescriptor* f : set) {
      if (f->number() >= items->number()) return nullptr;
    }
    auto enc = std::unique_ptr<ProtoListEncoder>(new ProtoListEncoder);
    const std::string list_prefix =
        objects::SerializeDeterministic(*prefix_msg);
    enc->metadata_ = metadata;
    enc->item_tag_ = (static_cast<uint32_t>(items->number()) << 3) | 2;
    uint64_t raw_size = list_prefix.size();
    enc->sizes_.reserve(list.items.size());
    for (const ObjectPtr& item : list.items) {
      const size_t n = metadata ? PartialSize(*item) : item->ByteSizeLong();
      enc->sizes_.push_back(n);
      raw_size += VarintSize(enc->item_tag_) + VarintSize(n) + n;
    }
    objects::runtimepb::Unknown head;
    const objects::TypeMeta tm = kind->type_meta();
    head.mutable_typemeta()->set_apiversion(tm.api_version);
    head.mutable_typemeta()->set_kind(tm.kind);
    enc->head_.assign(objects::kEnvelopeMagic);
    head.AppendToString(&enc->head_);
    AppendVarint((2 << 3) | 2, &enc->head_);  // Unknown.raw
    AppendVarint(raw_size, &enc->head_);
    enc->head_.append(list_prefix);
    objects::runtimepb::Unknown tail;
    tail.set_contentencoding("");
    tail.set_contenttype("");
    tail.AppendToString(&enc->tail_);
    enc->list_ = std::move(*list_in);
    return enc;
  }

  bool Next(size_t min_bytes, std::string* out) override {
    const size_t start = out->size();
    if (!head_.empty()) {
      out->append(head_);
      head_.clear();
      head_.shrink_to_fit();
    }
    while (next_ < list_.items.size() && out->size() - start < min_bytes) {
      AppendVarint(item_tag_, out);
      AppendVarint(sizes_[next_], out);
      const size_t before = out->size();
      {
        google::protobuf::io::StringOutputStream stream(out);
        google::protobuf::io::CodedOutputStream coded(&stream);
        coded.SetSerializationDeterministic(true);
        if (metadata_) {
          const objects::metav1::ObjectMeta& meta =
              *objects::GetObjectMeta(*list_.items[next_]);
          coded.WriteTag(kPartialMetadataTag);
          coded.WriteVarint64(meta.ByteSizeLong());
          meta.SerializeToCodedStream(&coded);
        } else {
          list_.items[next_]->SerializeToCodedStream(&coded);
        }
      }
      // Immutable objects serialize to the size they reported; anything
      // else would corrupt the framing already sent, so it is fatal.
      CHECK_EQ(out->size() - before, sizes_[next_])
          << "object changed while a list was streamed";
      list_.items[next_].reset();
      ++next_;
    }
    if (next_ < list_.items.size()) return false;
    out->append(tail_);
    return true;
  }

 private:
  ProtoListEncoder() = default;

  // PartialObjectMetadata.metadata: field 1, length-delimited.
  static constexpr uint32_t kPartialMetadataTag = (1 << 3) | 2;
  // The serialized size of `item`'s PartialObjectMetadata.
  static size_t PartialSize(const Message& item) {
    const size_t m = objects::GetObjectMeta(item)->ByteSizeLong();
    return VarintSize(kPartialMetadataTag) + VarintSize(m) + m;
  }

  bool metadata_ = false;
  ListResult list_;
  std::vector<size_t> sizes_;
  uint32_t item_tag_ = 0;
  std::string head_;
  std::string tail_;
  size_t next_ = 0;
};

// One streamed list on one connection. Alive while a pump runs or an
// OnDrained callback waits (the callback holds it); the OnClose callback
// holds it only weakly and frees the encoder at once.
class ListStream : public std::enable_shared_from_this<ListStream> {
 public:
  ListStream(std::shared_ptr<net::Responder> responder,
             std::unique_ptr<ListEncoder> encoder,
             const ListStreamOptions& options)
      : responder_(std::move(responder)),
        options_(options),
        encoder_(std::move(encoder)) {
    if (options_.open_streams != nullptr) options_.open_streams->Inc();
  }
  ~ListStream() {
    if (options_.open_streams != nullptr) options_.open_streams->Dec();
  }

  // Writes chunks while the backlog is under high water, then waits for
  // the client to read half of it.
  void Pump() {
    MutexLock l(&mu_);
    if (encoder_ == nullptr) return;
    while (responder_->BufferedBytes() < options_.high_water) {
      chunk_.clear();  // keeps its capacity: one allocation per stream
      const bool done = encoder_->Next(options_.chunk_bytes, &chunk_);
      if (!responder_->Write(chunk_)) {  // client gone or server stopping
        encoder_.reset();
        return;
      }
      if (done) {
        encoder_.reset();
        responder_->Finish();
        return;
      }
    }
    responder_->OnDrained(options_.high_water / 2,
                          [self = shared_from_this()] { self->Pump(); });
  }

  // The exchange is over (the client went away): free the snapshot now.
  void Release() {
    MutexLock l(&mu_);
    encoder_.reset();
  }

 private:
  const std::shared_ptr<net::Responder> responder_;
  const ListStreamOptions options_;
  Mutex mu_;
  std::unique_ptr<ListEncoder> encoder_ GUARDED_BY(mu_);
  std::string chunk_ GUARDED_BY(mu_);
};

}  // namespace

std::unique_ptr<ListEncoder> NewListEncoder(const RenderOptions& opts,
                                            ListResult* list) {
  if (opts.resource == nullptr || opts.resource->list_kind == nullptr) {
    return nullptr;
  }
  const Negotiated& n = opts.negotiated;
  // The same choice as encoding.cc's ListBody.
  if (n.shape == ResponseShape::kTable) return nullptr;
  switch (n.media) {
    case objects::MediaType::kJson:
      return std::make_unique<JsonListEncoder>(opts, std::move(*list));
    case objects::MediaType::kProtobuf:
      // Custom resources' lists are built whole; their PartialObjectMetadata
      // (every kind has an ObjectMeta) is streamed.
      if (n.shape != ResponseShape::kMetadata) {
        for (const ObjectPtr& item : list->items) {
          if (objects::IsUnstructured(*item)) return nullptr;
        }
      }
      return ProtoListEncoder::Create(opts, list);
    case objects::MediaType::kYaml:
      return nullptr;
  }
  return nullptr;
}

void StreamList(std::shared_ptr<net::Responder> responder,
                net::HttpHeaders headers, std::unique_ptr<ListEncoder> encoder,
                const ListStreamOptions& options,
                const std::function<void()>& on_started) {
  std::string first;
  if (encoder->Next(options.chunk_bytes, &first)) {
    // Small enough for one piece: a whole response, as before.
    on_started();
    responder->Respond(200, std::move(headers), std::move(first));
    return;
  }
  auto stream =
      std::make_shared<ListStream>(responder, std::move(encoder), options);
  responder->OnClose([weak = std::weak_ptr<ListStream>(stream)] {
    if (std::shared_ptr<ListStream> s = weak.lock()) s->Release();
  });
  on_started();
  responder->SetResponseDeadline(options.deadline);
  if (!responder->StartStream(200, std::move(headers)) ||
      !responder->Write(first)) {
    return;  // closed: `stream` and its snapshot go with this frame
  }
  first = std::string();
  stream->Pump();
}

}  // namespace kplane::apiserver
