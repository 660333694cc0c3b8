// The glue between typed objects and objects/patch, which works on JSON DOMs:
// PATCH bodies applied to a stored object, server-side apply, and the
// managedFields bookkeeping of ordinary writes.
//
//   current (typed) --ToJsonValue--> DOM --patch--> DOM --DecodeJsonValue-->
//   new object (typed; unknown fields reported, rejected under Strict)
//
// Errors (ApiError, Kubernetes' codes): a malformed patch or body is 400
// BadRequest; a JSON patch operation that does not apply (missing path,
// failed test) is 422 Invalid; a patch that changes apiVersion or kind is
// 400; a server-side apply conflict is 409 Conflict with one cause of type
// FieldManagerConflict per field.
//
// Limits (patch::PatchLimits; docs/limits.md): bodies nest at most 10,000
// levels (400 "exceeded max depth of 10000"); a JSON patch has at most
// 10,000 operations (413) and its copies add at most max_bytes (422); the
// patched or applied object is at most max_bytes (413) and 10,000 levels
// (400). Inputs deeper than base/deep_stack.h's kInlineDepth are patched on
// a deep stack.
//
// Thread-safety: all functions may be called concurrently; they share
// nothing but TrackOwnedValueChanges' cache of parsed fieldsV1 (below).
#ifndef KPLANE_APISERVER_PATCHING_H_
#define KPLANE_APISERVER_PATCHING_H_

#include <google/protobuf/message.h>

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "apiserver/errors.h"
#include "apiserver/negotiation.h"
#include "apiserver/query_params.h"
#include "objects/patch/apply.h"
#include "objects/patch/json_value.h"
#include "objects/scheme.h"

namespace kplane::apiserver {

using MutableMessage = std::unique_ptr<google::protobuf::Message>;

// Applies a JSON, merge or strategic merge patch to `current`, an object of
// `kind`. Unknown fields in the result are warnings (appended to
// `warnings`) or, under Strict, a 400; so are, listed first, members given
// twice in the body (of which the last counts, as Go decodes maps) and, in
// a JSON patch operation, members other than op, path, from and value.
ApiResult<MutableMessage> ApplyPatch(const google::protobuf::Message& current,
                                     const objects::KindInfo& kind,
                                     PatchType type, std::string_view patch,
                                     FieldValidation validation,
                                     std::vector<std::string>* warnings,
                                     const patch::PatchLimits& limits = {});

struct ApplyParams {
  std::string manager;
  bool force = false;
  std::string time;  // RFC 3339 for the managedFields entry
  // Fields the apply never owns here (e.g. {"f:status"} on the main
  // resource of a kind with a status subresource).
  std::vector<std::vector<std::string>> ignored;
  FieldValidation validation = FieldValidation::kWarn;
  // The subresource applied through ("status"; "" for the main resource):
  // recorded in the manager's entry, which is apart from its entries through
  // other subresources (kube's manager identifier).
  std::string subresource;
};

// Server-side apply of `body` (YAML or JSON) to `live` (null: the object
// does not exist and is created from the applied configuration).
ApiResult<MutableMessage> ServerSideApplyObject(
    const google::protobuf::Message* live, const objects::KindInfo& kind,
    std::string_view body, const ApplyParams& params,
    std::vector<std::string>* warnings, const patch::PatchLimits& limits = {});

// managedFields for a non-apply write of `obj` over `old` (null on create):
// the changed fields become owned by `manager` with operation Update. When
// `obj` carries managedFields of its own that differ from `old`'s, they are
// the starting point (a client editing managedFields directly, as kubectl's
// CSA-to-SSA migration does). A write through `subresource` ("status",
// "scale") is recorded in the manager's Update entry for that subresource,
// apart from its entry for the main resource ("").
// A write that changes no tracked value moves no entry, as kube's
// managedFieldsUpdater stamps the time only when the update set something:
// no time, no version, no new entry (the store then finds the stored bytes
// and writes nothing).
Status TrackManagedFields(const google::protobuf::Message* old,
                          google::protobuf::Message* obj,
                          const objects::KindInfo& kind,
                          const std::string& manager, const std::string& time,
                          const std::vector<std::vector<std::string>>& ignored,
                          const std::string& subresource = "");

// TrackManagedFields without trying TrackOwnedValueChanges first: the
// general path through JSON (field sets of both objects). For tests that
// compare the two.
Status TrackManagedFieldsThroughJson(
    const google::protobuf::Message* old, google::protobuf::Message* obj,
    const objects::KindInfo& kind, const std::string& manager,
    const std::string& time,
    const std::vector<std::vector<std::string>>& ignored,
    const std::string& subresource = "");

// TrackManagedFields' common case without the JSON round trip (a node's
// Lease renewal: the kubelet changes renewTime, which it already owns):
// `obj` has the same members, lists and maps as `old`, only leaf values
// differ, the writer's Update entry (its entry through `subresource`) owns
// every changed leaf and no other entry owns any. Then only that entry's time
// and apiVersion change, which it writes into `obj` and returns true; when no
// leaf changed, whoever the writer, no entry changes. Otherwise false, `obj`
// untouched. The result is the one TrackManagedFields' general path computes.
bool TrackOwnedValueChanges(
    const google::protobuf::Message* old, google::protobuf::Message* obj,
    const objects::KindInfo& kind, const std::string& manager,
    const std::string& time,
    const std::vector<std::vector<std::string>>& ignored,
    const std::string& subresource = "");

// The field set of fieldsV1 bytes exactly as the general path writes them
// (no whitespace, keys sorted and unique, "." first and only next to other
// keys, `\"` and `\\` the only escapes, ASCII), in one pass; nullopt for
// any other bytes (the general path then rewrites them). What
// TrackOwnedValueChanges reads each entry with: a renewal's entry names its
// own owner uid, so a cache keyed by the bytes holds as many entries as there
// are nodes. Depth is bounded (nullopt past 64 levels).
std::optional<patch::FieldSet> ParseCanonicalFieldsV1(std::string_view raw);

// TrackManagedFields' case of a writer without a manager (a client that
// sends no fieldManager and no User-Agent, e.g. a bare HTTP client or kpctl
// bench) of a body without managedFields over an object without them (or a
// create): the general path tracks nothing and leaves `obj` as it is, so
// this returns true without its two JSON conversions; otherwise false.
// `obj` is never changed.
bool TrackWithoutManager(const google::protobuf::Message* old,
                         const google::protobuf::Message* obj,
                         const std::string& manager);

}  // namespace kplane::apiserver

#endif  // KPLANE_APISERVER_PATCHING_H_
