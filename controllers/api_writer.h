// ApiWriter: the API calls controllers make (everything except reading,
// which they do from informer caches). RestApiWriter sends them through
// the shared RestClient; FakeApiWriter records them for table-driven unit
// tests ("given objects -> Sync(key) -> expected actions"), client-go's
// fake clientset in miniature.
//
//   FakeApiWriter fake;
//   ReplicaSetController rs({.api = &fake, ...});
//   rs.Sync("default/web");
//   EXPECT_THAT(fake.Actions(), ElementsAre("create pods default/web-",
//                                           "update-status replicasets
//                                           default/web"));
//
// Action strings: "<verb> <resource>[/<sub>] <namespace>/<name>" with verb
// create | update | update-status | delete | bind (bind appends " -> node")
// | finalize | patch, and "deletecollection <resource> <namespace>".
// A created object with only generateName is recorded under its
// generateName and returned with a made-up name (generateName + counter).
// Reads are not recorded, but FailNext also fails GetMetadata, as
// "get-metadata <resource> <namespace>/<name>".
//
// Thread-safety: all methods may be called concurrently. Errors: as the
// RestClient (api_errors.h); FakeApiWriter returns what FailNext queued.
#ifndef KPLANE_CONTROLLERS_API_WRITER_H_
#define KPLANE_CONTROLLERS_API_WRITER_H_

#include <deque>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "base/mutex.h"
#include "controllers/util.h"
#include "informer/indexer.h"
#include "informer/rest_client.h"
#include "informer/watch.h"

namespace kplane::controllers {

using informer::ObjectPtr;

class ApiWriter {
 public:
  virtual ~ApiWriter() = default;
  virtual StatusOr<ObjectPtr> Create(const objects::ResourceInfo& resource,
                                     const google::protobuf::Message& obj) = 0;
  // PUT with the object's resourceVersion (409 when stale).
  virtual StatusOr<ObjectPtr> Update(const objects::ResourceInfo& resource,
                                     const google::protobuf::Message& obj) = 0;
  virtual StatusOr<ObjectPtr> UpdateStatus(
      const objects::ResourceInfo& resource,
      const google::protobuf::Message& obj) = 0;
  virtual Status Delete(const objects::ResourceInfo& resource,
                        std::string_view ns, std::string_view name,
                        const metav1::DeleteOptions& options = {}) = 0;
  // POST pods/<name>/binding.
  virtual Status Bind(std::string_view ns, std::string_view pod,
                      std::string_view pod_uid, std::string_view node) = 0;
  // PATCH of `patch` (of `type`) to the object; the garbage collector
  // edits custom resources, which it holds only as JSON, with it.
  virtual Status Patch(const objects::ResourceInfo& resource,
                       std::string_view ns, std::string_view name,
                       informer::PatchType type, std::string_view patch) = 0;
  // A live read.
  virtual StatusOr<ObjectPtr> Get(const objects::ResourceInfo& resource,
                                  std::string_view ns,
                                  std::string_view name) = 0;
  // A live read of the object's metadata only, a
  // metav1::PartialObjectMetadata (client-go's metadata client): the
  // garbage collector confirms an owner's absence, or reads its deletion
  // state, with it, for any kind, without the object's body.
  virtual StatusOr<ObjectPtr> GetMetadata(const objects::ResourceInfo& resource,
                                          std::string_view ns,
                                          std::string_view name) = 0;
  // A live LIST of `resource` in `ns` (the namespace controller reads what
  // is left in a namespace with it: it keeps no cache of every resource).
  virtual StatusOr<std::vector<ObjectPtr>> List(
      const objects::ResourceInfo& resource, std::string_view ns) = 0;
  // DELETE of the collection: every object of `resource` in `ns`.
  virtual Status DeleteCollection(const objects::ResourceInfo& resource,
                                  std::string_view ns,
                                  const metav1::DeleteOptions& options) = 0;
  // PUT namespaces/<name>/finalize: sets the namespace's spec.finalizers
  // (with its resourceVersion: 409 when stale).
  virtual StatusOr<ObjectPtr> Finalize(const corev1::Namespace& ns) = 0;
};

// Whether `create` (a create's result in namespace `ns`) is the 403 an API
// server answers while `ns` is being deleted: nothing to do then, the
// namespace controller is emptying it. Kube checks the Status cause
// NamespaceTerminating, which does not survive into a kplane Status, so the
// namespace is read live through `api` (gone counts as ending). Any other
// 403 (RBAC, an admission webhook) is an error to retry.
bool CreateRefusedInEndingNamespace(ApiWriter* api, const Status& create,
                                    std::string_view ns);

class RestApiWriter : public ApiWriter {
 public:
  explicit RestApiWriter(informer::RestClient* client) : client_(client) {}
  StatusOr<ObjectPtr> Create(const objects::ResourceInfo& resource,
                             const google::protobuf::Message& obj) override;
  StatusOr<ObjectPtr> Update(const objects::ResourceInfo& resource,
                             const google::protobuf::Message& obj) override;
  StatusOr<ObjectPtr> UpdateStatus(
      const objects::ResourceInfo& resource,
      const google::protobuf::Message& obj) override;
  Status Delete(const objects::ResourceInfo& resource, std::string_view ns,
                std::string_view name,
                const metav1::DeleteOptions& options) override;
  Status Bind(std::string_view ns, std::string_view pod,
              std::string_view pod_uid, std::string_view node) override;
  Status Patch(const objects::ResourceInfo& resource, std::string_view ns,
               std::string_view name, informer::PatchType type,
               std::string_view patch) override;
  StatusOr<ObjectPtr> Get(const objects::ResourceInfo& resource,
                          std::string_view ns, std::string_view name) override;
  StatusOr<ObjectPtr> GetMetadata(const objects::ResourceInfo& resource,
                                  std::string_view ns,
                                  std::string_view name) override;
  StatusOr<std::vector<ObjectPtr>> List(const objects::ResourceInfo& resource,
                                        std::string_view ns) override;
  Status DeleteCollection(const objects::ResourceInfo& resource,
                          std::string_view ns,
                          const metav1::DeleteOptions& options) override;
  StatusOr<ObjectPtr> Finalize(const corev1::Namespace& ns) override;

 private:
  informer::RestClient* const client_;
};

class FakeApiWriter : public ApiWriter {
 public:
  StatusOr<ObjectPtr> Create(const objects::ResourceInfo& resource,
                             const google::protobuf::Message& obj) override;
  StatusOr<ObjectPtr> Update(const objects::ResourceInfo& resource,
                             const google::protobuf::Message& obj) override;
  StatusOr<ObjectPtr> UpdateStatus(
      const objects::ResourceInfo& resource,
      const google::protobuf::Message& obj) override;
  Status Delete(const objects::ResourceInfo& resource, std::string_view ns,
                std::string_view name,
                const metav1::DeleteOptions& options) override;
  Status Bind(std::string_view ns, std::string_view pod,
              std::string_view pod_uid, std::string_view node) override;
  Status Patch(const objects::ResourceInfo& resource, std::string_view ns,
               std::string_view name, informer::PatchType type,
               std::string_view patch) override;
  StatusOr<ObjectPtr> Get(const objects::ResourceInfo& resource,
                          std::string_view ns, std::string_view name) override;
  StatusOr<ObjectPtr> GetMetadata(const objects::ResourceInfo& resource,
                                  std::string_view ns,
                                  std::string_view name) override;
  StatusOr<std::vector<ObjectPtr>> List(const objects::ResourceInfo& resource,
                                        std::string_view ns) override;
  Status DeleteCollection(const objects::ResourceInfo& resource,
                          std::string_view ns,
                          const metav1::DeleteOptions& options) override;
  StatusOr<ObjectPtr> Finalize(const corev1::Namespace& ns) override;

  // The actions so far, in order.
  std::vector<std::string> Actions() const;
  // The objects written (create/update/update-status), in order.
  std::vector<ObjectPtr> Written() const;
  // The bodies of the patches sent ("patch <resource> <ns>/<name>"
  // actions), in order.
  std::vector<std::string> Patches() const;
  void Clear();
  // The next action whose string starts with `prefix` fails with `error`.
  void FailNext(std::string prefix, Status error);
  // Updates (and status updates) of `resource` are also written into
  // `cache`, as if its informer had seen them at once.
  void ReflectUpdates(const objects::ResourceInfo& resource,
                      informer::Indexer* cache);
  // A Delete whose preconditions (uid, resourceVersion) do not match the
  // live object (SetLive, ServeLiveFrom) answers 409 Conflict and is
  // recorded as "delete-refused <resource> <ns>/<name>"; without a live
  // object preconditions are not checked.
  // What Get returns for "<resource> <ns>/<name>" (else NotFound; and
  // GetMetadata its metadata as a PartialObjectMetadata), and List for
  // "<resource> <ns>".
  void SetLive(const objects::ResourceInfo& resource, ObjectPtr obj);
  void RemoveLive(const objects::ResourceInfo& resource, std::string_view ns,
                  std::string_view name);
  // Get and GetMetadata of `resource` that SetLive does not answer read
  // `cache` (the server as the test's informer shows it), which must
  // outlive those reads.
  void ServeLiveFrom(const objects::ResourceInfo& resource,
                     const informer::Indexer* cache);

 private:
  // The live object Get and GetMetadata answer from (SetLive).
  StatusOr<ObjectPtr> FindLive(const objects::ResourceInfo& resource,
                               std::string_view ns, std::string_view name)
      EXCLUDES(mu_);
  // The error FailNext queued for `action`, taken off the queue.
  std::optional<Status> TakeFailureLocked(const std::string& action)
      REQUIRES(mu_);
  Status Record(std::string action, ObjectPtr written);
  void Reflect(const objects::ResourceInfo& resource,
               std::shared_ptr<google::protobuf::Message> obj);

  mutable Mutex mu_;
  std::vector<std::string> actions_ GUARDED_BY(mu_);
  std::vector<ObjectPtr> written_ GUARDED_BY(mu_);
  std::vector<std::string> patches_ GUARDED_BY(mu_);
  std::deque<std::pair<std::string, Status>> failures_ GUARDED_BY(mu_);
  std::map<std::string, ObjectPtr> live_ GUARDED_BY(mu_);
  // By GroupResource().
  std::map<std::string, const informer::Indexer*> live_from_ GUARDED_BY(mu_);
  std::map<const objects::ResourceInfo*, informer::Indexer*> reflect_
      GUARDED_BY(mu_);
  int generated_ GUARDED_BY(mu_) = 0;
  int64_t rv_ GUARDED_BY(mu_) = 1000;
};

}  // namespace kplane::controllers

#endif  // KPLANE_CONTROLLERS_API_WRITER_H_
