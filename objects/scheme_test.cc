#include "objects/scheme.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <set>

#include "objects/apps_workloads_types.h"
#include "objects/endpoints_types.h"
#include "objects/field_table.h"
#include "objects/meta.h"
#include "objects/batch_types.h"
#include "objects/discovery_types.h"
#include "objects/events_types.h"
#include "objects/serviceaccount_types.h"
#include "objects/types.h"
#include "schemas/k8s/options.pb.h"

namespace kplane::objects {
namespace {

using ::testing::ElementsAre;

const Scheme& S() { return Scheme::Default(); }

TEST(Scheme, DeploymentsResource) {
  const ResourceInfo* r = S().FindResource("apps", "v1", "deployments");
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(r->singular, "deployment");
  EXPECT_TRUE(r->namespaced);
  EXPECT_EQ(r->kind->kind, "Deployment");
  EXPECT_EQ(r->kind->descriptor, appsv1::Deployment::descriptor());
  EXPECT_EQ(r->list_kind->kind, "DeploymentList");
  EXPECT_THAT(r->short_names, ElementsAre("deploy"));
  EXPECT_THAT(r->categories, ElementsAre("all"));
  EXPECT_THAT(r->verbs, ElementsAre("create", "delete", "deletecollection",
                                    "get", "list", "patch", "update", "watch"));
  EXPECT_EQ(r->GroupResource(), "deployments.apps");
  const SubresourceInfo* scale = r->FindSubresource("scale");
  ASSERT_NE(scale, nullptr);
  EXPECT_EQ(scale->kind->gv.ApiVersion(), "autoscaling/v1");
  EXPECT_EQ(scale->kind->kind, "Scale");
  EXPECT_EQ(scale->kind->descriptor, autoscalingv1::Scale::descriptor());
  EXPECT_THAT(scale->verbs, ElementsAre("get", "patch", "update"));
  EXPECT_EQ(r->FindSubresource("status")->kind, r->kind);
  EXPECT_EQ(r->FindSubresource("binding"), nullptr);
}

TEST(Scheme, CoreResources) {
  struct Want {
    const char* resource;
    const char* kind;
    bool namespaced;
    std::vector<std::string> short_names;
    std::vector<std::string> subresources;
  };
  const Want wants[] = {
      {"pods", "Pod", true, {"po"}, {"status", "binding", "eviction", "log", "exec"}},
      {"nodes", "Node", false, {"no"}, {"status"}},
      {"namespaces", "Namespace", false, {"ns"}, {"status", "finalize"}},
      {"configmaps", "ConfigMap", true, {"cm"}, {}},
      {"secrets", "Secret", true, {}, {}},
      {"services", "Service", true, {"svc"}, {"status"}},
      {"events", "Event", true, {"ev"}, {}},
      {"endpoints", "Endpoints", true, {"ep"}, {}},
      {"serviceaccounts", "ServiceAccount", true, {"sa"}, {"token"}},
  };
  for (const Want& w : wants) {
    const ResourceInfo* r = S().FindResource("", "v1", w.resource);
    ASSERT_NE(r, nullptr) << w.resource;
    EXPECT_EQ(r->kind->kind, w.kind);
    EXPECT_EQ(r->namespaced, w.namespaced) << w.resource;
    EXPECT_EQ(r->short_names, w.short_names) << w.resource;
    std::vector<std::string> subs;
    for (const SubresourceInfo& s : r->subresources) subs.push_back(s.name);
    EXPECT_EQ(subs, w.subresources) << w.resource;
    EXPECT_EQ(r->GroupResource(), w.resource);
  }
  const ResourceInfo* bindings = S().FindResource("", "v1", "bindings");
  ASSERT_NE(bindings, nullptr);
  EXPECT_EQ(bindings->list_kind, nullptr);
  EXPECT_THAT(bindings->verbs, ElementsAre("create"));
  EXPECT_EQ(
      S().FindResource("", "v1", "pods")->FindSubresource("binding")->kind,
      bindings->kind);
  const SubresourceInfo* token =
      S().FindResource("", "v1", "serviceaccounts")->FindSubresource("token");
  EXPECT_EQ(token->kind->gv.ApiVersion(), "authentication.k8s.io/v1");
  EXPECT_EQ(token->kind->kind, "TokenRequest");
  EXPECT_THAT(token->verbs, ElementsAre("create"));
  const ResourceInfo* leases =
      S().FindResource("coordination.k8s.io", "v1", "leases");
  ASSERT_NE(leases, nullptr);
  EXPECT_EQ(leases->GroupResource(), "leases.coordination.k8s.io");
  EXPECT_EQ(S().FindResource("apps", "v1", "pods"), nullptr);
}

TEST(Scheme, ResolvesKubectlWords) {
  struct Case {
    const char* word;
    const char* resource;
  };
  const Case cases[] = {
      {"po", "pods"},
      {"pod", "pods"},
      {"pods", "pods"},
      {"Pod", "pods"},
      {"PODS", "pods"},
      {"deploy", "deployments"},
      {"Deployment", "deployments"},
      {"deployments.apps", "deployments"},
      {"deploy.apps", "deployments"},
      {"deployments.v1.apps", "deployments"},
      {"rs", "replicasets"},
      {"sts", "statefulsets"},
      {"statefulset.apps", "statefulsets"},
      {"ds", "daemonsets"},
      {"DaemonSet", "daemonsets"},
      {"controllerrevision", "controllerrevisions"},
      {"ControllerRevision.apps", "controllerrevisions"},
      {"no", "nodes"},
      {"ns", "namespaces"},
      {"cm", "configmaps"},
      {"svc", "services"},
      {"ev", "events"},
      {"lease", "leases"},
      {"leases.coordination.k8s.io", "leases"},
      {"secret", "secrets"},
      {"sa", "serviceaccounts"},
      {"ep", "endpoints"},
      {"endpoints", "endpoints"},
      {"serviceaccount", "serviceaccounts"},
      {"binding", "bindings"},
  };
  for (const Case& c : cases) {
    const ResourceInfo* r = S().Resolve(c.word);
    ASSERT_NE(r, nullptr) << c.word;
    EXPECT_EQ(r->resource, c.resource) << c.word;
  }
  EXPECT_EQ(S().Resolve("deploy.core"), nullptr);
  EXPECT_EQ(S().Resolve("pods.apps"), nullptr);
  EXPECT_EQ(S().Resolve("widgets"), nullptr);
}

TEST(Scheme, KindsAndFactories) {
  const KindInfo* k = S().FindKind("apps/v1", "ReplicaSetList");
  ASSERT_NE(k, nullptr);
  auto msg = k->New();
  EXPECT_EQ(msg->GetDescriptor(), appsv1::ReplicaSetList::descriptor());
  EXPECT_EQ(S().KindFor(appsv1::ReplicaSetList::descriptor()), k);
  EXPECT_EQ(S().FindKind("v1", "Status")->descriptor,
            metav1::Status::descriptor());
  // DeleteOptions is accepted under both names; v1 is canonical.
  EXPECT_NE(S().FindKind("meta.k8s.io/v1", "DeleteOptions"), nullptr);
  EXPECT_EQ(S().KindFor(metav1::DeleteOptions::descriptor())->gv.ApiVersion(),
            "v1");
  EXPECT_EQ(S().FindKind("v1", "Deployment"), nullptr);
  EXPECT_EQ(S().FindKind("apps/v1", "Nope"), nullptr);
  EXPECT_EQ(GroupVersion::Parse("apps/v1"), (GroupVersion{"apps", "v1"}));
  EXPECT_EQ(GroupVersion::Parse("v1"), (GroupVersion{"", "v1"}));
  const KindInfo* pod = S().FindKind("v1", "Pod");
  EXPECT_EQ(S().ResourceForKind(*pod)->resource, "pods");
}

TEST(Scheme, GroupVersionsInOrder) {
  std::vector<std::string> gvs;
  for (const GroupVersion& gv : S().GroupVersions()) {
    gvs.push_back(gv.ApiVersion());
  }
  EXPECT_THAT(
      gvs, ElementsAre("v1", "apps/v1", "batch/v1", "coordination.k8s.io/v1",
                       "discovery.k8s.io/v1", "events.k8s.io/v1", "policy/v1",
                       "rbac.authorization.k8s.io/v1"));
}

// Invariants the apiserver and the codec rely on, checked for every
// registered type.
TEST(Scheme, EveryResourceIsWellFormed) {
  std::set<std::string> words;
  for (const auto& r : S().resources()) {
    const google::protobuf::Descriptor* d = r->kind->descriptor;
    EXPECT_TRUE(HasObjectMeta(d)) << d->full_name();
    EXPECT_TRUE(d->options().GetExtension(kplane::schema::type_meta))
        << d->full_name();
    if (r->list_kind != nullptr) {
      EXPECT_TRUE(IsList(r->list_kind->descriptor));
      EXPECT_EQ(ListItemType(r->list_kind->descriptor), d);
      EXPECT_TRUE(r->list_kind->descriptor->options().GetExtension(
          kplane::schema::type_meta));
    }
    EXPECT_EQ(r->kind->gv, r->gv);
    // kubectl must be able to tell resources apart by every short name.
    for (const std::string& s : r->short_names) {
      EXPECT_TRUE(words.insert(s).second) << "short name reused: " << s;
    }
  }
  for (const auto& k : S().kinds()) {
    EXPECT_TRUE(
        k->descriptor->options().GetExtension(kplane::schema::type_meta) ||
        k->kind == "WatchEvent")
        << k->kind;
  }
}

// Every message in schemas/k8s builds a codec table (no duplicate JSON
// names, inline fields only where supported), so a schema mistake fails
// here rather than in the apiserver.
TEST(Scheme, BatchJobs) {
  const ResourceInfo* r = S().FindResource("batch", "v1", "jobs");
  ASSERT_NE(r, nullptr);
  EXPECT_TRUE(r->namespaced);
  EXPECT_EQ(r->kind->kind, "Job");
  EXPECT_EQ(r->list_kind->kind, "JobList");
  EXPECT_NE(r->FindSubresource("status"), nullptr);
  EXPECT_EQ(S().Resolve("job"), r);
  EXPECT_EQ(S().Resolve("jobs.batch"), r);
  const ResourceInfo* cj = S().FindResource("batch", "v1", "cronjobs");
  ASSERT_NE(cj, nullptr);
  EXPECT_EQ(cj->kind->kind, "CronJob");
  EXPECT_NE(cj->FindSubresource("status"), nullptr);
  EXPECT_EQ(S().Resolve("cj"), cj);
}

TEST(Scheme, EndpointSlicesAndDisruptionBudgets) {
  const ResourceInfo* slices =
      S().FindResource("discovery.k8s.io", "v1", "endpointslices");
  ASSERT_NE(slices, nullptr);
  EXPECT_TRUE(slices->namespaced);
  EXPECT_EQ(S().Resolve("endpointslice"), slices);
  const ResourceInfo* pdbs =
      S().FindResource("policy", "v1", "poddisruptionbudgets");
  ASSERT_NE(pdbs, nullptr);
  EXPECT_EQ(S().Resolve("pdb"), pdbs);
  EXPECT_NE(pdbs->FindSubresource("status"), nullptr);
  const SubresourceInfo* eviction =
      S().FindResource("", "v1", "pods")->FindSubresource("eviction");
  ASSERT_NE(eviction, nullptr);
  EXPECT_EQ(eviction->kind->kind, "Eviction");
  EXPECT_EQ(eviction->kind->gv.ApiVersion(), "policy/v1");
}

// events.k8s.io/v1 events: the second form of core/v1's; kubectl's words
// without a group keep resolving to core/v1.
TEST(Scheme, EventsV1) {
  const ResourceInfo* r = S().FindResource("events.k8s.io", "v1", "events");
  ASSERT_NE(r, nullptr);
  EXPECT_TRUE(r->namespaced);
  EXPECT_EQ(r->kind->kind, "Event");
  EXPECT_EQ(r->kind->descriptor, eventsv1::Event::descriptor());
  EXPECT_EQ(r->list_kind->kind, "EventList");
  EXPECT_TRUE(r->short_names.empty());
  EXPECT_EQ(S().Resolve("events.events.k8s.io"), r);
  EXPECT_EQ(S().Resolve("events.v1.events.k8s.io"), r);
  const ResourceInfo* core = S().FindResource("", "v1", "events");
  EXPECT_EQ(S().Resolve("ev"), core);
  EXPECT_EQ(S().Resolve("events"), core);
  EXPECT_EQ(S().Resolve("Event"), core);
}

TEST(Scheme, EverySchemaMessageHasACodecTable) {
  const google::protobuf::FileDescriptor* files[] = {
      corev1::Pod::descriptor()->file(),
      appsv1::Deployment::descriptor()->file(),
      appsv1::StatefulSet::descriptor()->file(),
      coordinationv1::Lease::descriptor()->file(),
      autoscalingv1::Scale::descriptor()->file(),
      authenticationv1::TokenRequest::descriptor()->file(),
      batchv1::Job::descriptor()->file(),
      discoveryv1::EndpointSlice::descriptor()->file(),
      eventsv1::Event::descriptor()->file(),
      policyv1::PodDisruptionBudget::descriptor()->file(),
      corev1::Endpoints::descriptor()->file(),
      metav1::ObjectMeta::descriptor()->file(),
      runtimepb::Unknown::descriptor()->file(),
  };
  int count = 0;
  for (const auto* f : files) {
    for (int i = 0; i < f->message_type_count(); ++i) {
      const internal::MessageTable* t = internal::TableFor(f->message_type(i));
      ASSERT_NE(t, nullptr);
      EXPECT_EQ(t->fields.size(),
                static_cast<size_t>(f->message_type(i)->field_count()));
      ++count;
    }
  }
  EXPECT_GT(count, 150);
}

}  // namespace
}  // namespace kplane::objects
